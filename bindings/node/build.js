'use strict';
// Builds primeforge.node, the package's Node-API addon, from the Rust
// workspace this package lives in (`cargo build --release -p
// primeforge-node`), and copies it next to index.js. Run by npm on
// `npm install ./bindings/node` (the "install" script) and `npm pack`
// ("prepack"), and by hand with `npm run build`.
//
// In a packed tarball (no workspace around it) the addon is already in
// the package, so the install script has nothing to do. Needs cargo and
// m4 (GMP's build); nothing is downloaded at run time.

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const here = __dirname;
const workspace = path.resolve(here, '..', '..');
const addon = path.join(here, 'primeforge.node');
const manifest = path.join(here, 'Cargo.toml');

function fail(message) {
  process.stderr.write(`primeforge: ${message}\n`);
  process.exit(1);
}

if (!fs.existsSync(manifest) || !fs.existsSync(path.join(workspace, 'Cargo.toml'))) {
  if (fs.existsSync(addon)) process.exit(0);
  fail(`no addon at ${addon} and no Rust workspace to build it from`);
}

const cargo = process.env.CARGO || 'cargo';
const args = ['build', '--release', '--manifest-path', manifest, '-p', 'primeforge-node',
  '--message-format=json-render-diagnostics'];
const r = spawnSync(cargo, args, { cwd: workspace, stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 28 });
if (r.error) fail(`could not run ${cargo} (${r.error.message}); the package builds its addon with Rust's cargo`);
if (r.status !== 0) fail(`${cargo} build failed (status ${r.status})`);

// The cdylib's path, from cargo's own report (CARGO_TARGET_DIR, profiles).
let built = null;
for (const line of r.stdout.toString('utf8').split('\n')) {
  if (!line.startsWith('{')) continue;
  const msg = JSON.parse(line);
  if (msg.reason === 'compiler-artifact' && msg.target && msg.target.name === 'primeforge_node') {
    built = msg.filenames.find((f) => f.endsWith('.so') || f.endsWith('.dylib') || f.endsWith('.dll')) || built;
  }
}
if (!built) fail('cargo did not report the primeforge_node library');

// Copied without debug information when objcopy is there (a fraction of
// the size); as built otherwise. Written next to the final name first, so
// that a process loading the addon never sees a half-written file.
const tmp = `${addon}.tmp-${process.pid}`;
const strip = spawnSync('objcopy', ['--strip-debug', built, tmp], { stdio: 'ignore' });
if (strip.error || strip.status !== 0) fs.copyFileSync(built, tmp);
fs.renameSync(tmp, addon);

// The licence files travel with the package (the addon links GMP, LGPL):
// copies of the workspace's own, made here because npm packs no links.
for (const name of ['LICENSE-MIT', 'LICENSE-APACHE', 'COPYING', 'COPYING.LESSER', 'THIRD-PARTY.md']) {
  fs.copyFileSync(path.join(workspace, name), path.join(here, name));
}
