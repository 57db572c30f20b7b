//! The Node.js package (`bindings/node`): installed with `npm install
//! ./bindings/node` into a project of its own (npm runs the package's
//! install script, which builds the Node-API addon from this workspace),
//! its `node --test` suite, its TypeScript declarations checked by `tsc
//! --strict`, and the tarball `npm pack` makes, installed where no Rust
//! workspace is. Node and npm, and TypeScript with Node's type
//! declarations (pinned, in a cache directory of their own), are installed
//! by `.ci/deps`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn package_dir() -> PathBuf {
    common::manifest_dir().join("bindings/node")
}

/// Builds the package's addon (`node build.js`, what npm's install script
/// runs) once per test run, for the tests that load the package from its
/// directory: they may run before the install test has built it.
fn built_package() -> PathBuf {
    static BUILT: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    let pkg = package_dir();
    BUILT.get_or_init(|| {
        run_in(&pkg, "node", &["build.js"]);
    });
    pkg
}

/// A fresh directory for one test's npm project.
fn project(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("node-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("package.json"),
        format!("{{\"name\": \"pf-node-{name}\", \"version\": \"1.0.0\", \"private\": true}}\n"),
    )
    .unwrap();
    dir
}

/// Runs `program ARGS` in `dir`; returns stdout and stderr, asserting
/// success.
fn run_in(dir: &Path, program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("npm_config_audit", "false")
        .env("npm_config_fund", "false")
        .env("npm_config_update_notifier", "false")
        .output()
        .unwrap_or_else(|e| panic!("{program} is needed ({e}); .ci/deps installs Node.js and npm"));
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{program} {args:?} in {}: {text}",
        dir.display()
    );
    text
}

/// What a program in the project prints after `require('primeforge')`
/// from its own node_modules: a key, its check, a DH agreement.
const SMOKE: &str = r#"
const pf = require('primeforge');
const crypto = require('node:crypto');
(async () => {
  const key = await pf.generateRsa({ modulusLength: 1024, threads: 2 });
  const data = Buffer.from('x');
  const sig = crypto.sign('sha256', data, key.toKeyObject());
  if (!crypto.verify('sha256', data, key.toPublicKeyObject(), sig)) throw new Error('verify');
  const dh = await pf.generateDhParams({ primeLength: 512 });
  const a = dh.toDiffieHellman(), b = dh.toDiffieHellman();
  a.generateKeys(); b.generateKeys();
  if (!a.computeSecret(b.getPublicKey()).equals(b.computeSecret(a.getPublicKey()))) throw new Error('dh');
  console.log(`node package ok ${pf.version} ${require.resolve('primeforge')}`);
})().catch((e) => { console.error(e); process.exit(1); });
"#;

#[test]
fn npm_install_builds_the_addon_and_the_package_tests_pass() {
    let dir = project("install");
    let pkg = package_dir();
    let before = std::time::SystemTime::now() - std::time::Duration::from_secs(2);
    let text = run_in(
        &dir,
        "npm",
        &["install", "--foreground-scripts", pkg.to_str().unwrap()],
    );
    // npm ran the install script, which (re)built and placed the addon.
    let placed = std::fs::metadata(pkg.join("primeforge.node"))
        .and_then(|m| m.modified())
        .unwrap_or_else(|e| panic!("the install script placed no addon ({e}): {text}"));
    assert!(
        placed >= before,
        "the addon was not placed by this install: {text}"
    );
    let text = run_in(&dir, "node", &["-e", SMOKE]);
    assert!(
        text.contains(&format!("node package ok {}", env!("CARGO_PKG_VERSION"))),
        "{text}"
    );

    // The package's own suite (node:test), from its directory.
    let text = run_in(&pkg, "node", &["--test", "test/"]);
    assert!(text.contains("# fail 0"), "{text}");
    for t in [
        "a 2048-bit key signs and verifies with crypto.sign through every form",
        "an encrypted private key opens in crypto.createPrivateKey with its passphrase only",
        "the same seed gives the same key at 1, 2 and 16 threads",
        "the event loop keeps ticking while a key is made",
        "an AbortSignal stops a generation promptly with an AbortError",
        "progress reports arrive on the JavaScript thread; a throwing callback ends the generation",
        "bad arguments throw TypeError or RangeError with the library's message",
        "existing keys are read, checked and converted",
        "OpenSSH keys: the public line and the private key read back",
        "the package loads and generates in a worker thread",
        "terminating a worker thread stops the generation it started",
        "generated parameters: both sides of crypto.createDiffieHellman derive the same secret",
        "X9.42 parameters carry q; the generator choice is honoured",
        "named groups are the published ones",
        "FIPS 186-4 parameters verify from their seed",
        "damaged parameters are reported with their problem bits",
        "bad DH arguments throw with the library's message",
    ] {
        assert!(
            text.lines()
                .any(|l| l.starts_with("ok ") && l.ends_with(&format!(" - {t}"))),
            "{t} did not pass: {text}"
        );
    }
}

/// Where `.ci/deps` installs TypeScript and @types/node.
fn node_dev_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("PRIMEFORGE_NODE_DEV") {
        return PathBuf::from(dir);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache"));
    cache.join("primeforge/node-dev")
}

#[test]
fn typescript_declarations_describe_the_package() {
    let dev = node_dev_dir();
    let tsc = dev.join("node_modules/.bin/tsc");
    assert!(
        tsc.exists(),
        "no TypeScript compiler at {} (.ci/deps installs it there; PRIMEFORGE_NODE_DEV overrides)",
        tsc.display()
    );
    let types = dev.join("node_modules/@types");
    let pkg = built_package();
    // types/check.ts uses every export as documented, and each misuse it
    // lists must be refused (an unused @ts-expect-error fails the build).
    run_in(
        &pkg,
        tsc.to_str().unwrap(),
        &[
            "--strict",
            "--noEmit",
            "--target",
            "es2022",
            "--module",
            "commonjs",
            "--moduleResolution",
            "node",
            "--types",
            "node",
            "--typeRoots",
            types.to_str().unwrap(),
            "types/check.ts",
        ],
    );
    // The declarations name every export of index.js, and nothing else.
    let declared = std::fs::read_to_string(pkg.join("index.d.ts")).unwrap();
    let exported = run_in(&pkg, "node", &["-p", "Object.keys(require('.')).join(' ')"]);
    for name in exported.split_whitespace() {
        assert!(
            declared.contains(&format!("export function {name}("))
                || declared.contains(&format!("export const {name}:"))
                || declared.contains(&format!("export declare class {name} ")),
            "index.d.ts does not declare {name}"
        );
    }
    let count = declared.matches("export function ").count()
        + declared.matches("export const ").count()
        + declared.matches("export declare class ").count();
    assert_eq!(count, exported.split_whitespace().count(), "{exported}");
}

#[test]
fn dh_check_bits_match_the_header() {
    let header =
        std::fs::read_to_string(common::manifest_dir().join("include/primeforge.h")).unwrap();
    let pkg = built_package();
    let text = run_in(
        &pkg,
        "node",
        &["-p", "JSON.stringify(require('.').DH_CHECK)"],
    );
    let bits: std::collections::BTreeMap<String, u64> = text
        .trim()
        .trim_matches(|c| c == '{' || c == '}')
        .split(',')
        .map(|kv| {
            let (k, v) = kv.split_once(':').unwrap();
            (k.trim_matches('"').to_string(), v.parse().unwrap())
        })
        .collect();
    let mut in_header = 0;
    for line in header.lines() {
        let line = line.trim();
        let Some(rest) = line.strip_prefix("#define PF_DH_CHECK_") else {
            continue;
        };
        let mut parts = rest.split_whitespace();
        let (name, value) = (parts.next().unwrap(), parts.next().unwrap());
        let value = value.trim_end_matches('u').trim_end_matches('U');
        let value = match value.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16).unwrap(),
            None => value.parse().unwrap(),
        };
        assert_eq!(bits.get(name), Some(&value), "PF_DH_CHECK_{name}: {text}");
        in_header += 1;
    }
    assert!(
        in_header >= 10,
        "{in_header} PF_DH_CHECK_ values in the header"
    );
    assert_eq!(bits.len(), in_header, "{text}");
}

#[test]
fn npm_pack_makes_a_tarball_that_installs_without_the_workspace() {
    let out = project("pack-out");
    let pkg = package_dir();
    let text = run_in(
        &pkg,
        "npm",
        &[
            "pack",
            "--foreground-scripts",
            "--pack-destination",
            out.to_str().unwrap(),
        ],
    );
    let tarball = out.join(format!("primeforge-{}.tgz", env!("CARGO_PKG_VERSION")));
    assert!(tarball.exists(), "{text}");
    let listing = Command::new("tar")
        .arg("tzf")
        .arg(&tarball)
        .output()
        .expect("tar");
    let listing = String::from_utf8_lossy(&listing.stdout).into_owned();
    for f in [
        "package/primeforge.node",
        "package/index.js",
        "package/index.d.ts",
        "package/README.md",
        "package/LICENSE-MIT",
        "package/LICENSE-APACHE",
        "package/COPYING",
        "package/COPYING.LESSER",
        "package/THIRD-PARTY.md",
    ] {
        assert!(
            listing.lines().any(|l| l == f),
            "{f} missing from the tarball:\n{listing}"
        );
    }
    for f in [
        "package/Cargo.toml",
        "package/src/lib.rs",
        "package/test/rsa.test.js",
    ] {
        assert!(
            !listing.lines().any(|l| l == f),
            "{f} in the tarball:\n{listing}"
        );
    }
    // The tarball's addon is its own: installed with no cargo to run
    // (build.js would fail if it tried), it loads and works.
    let dir = project("from-tarball");
    let out = Command::new("npm")
        .args(["install", "--foreground-scripts", tarball.to_str().unwrap()])
        .current_dir(&dir)
        .env("CARGO", "/nonexistent/cargo")
        .env("npm_config_audit", "false")
        .env("npm_config_fund", "false")
        .output()
        .expect("npm");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = run_in(&dir, "node", &["-e", SMOKE]);
    assert!(text.contains("node package ok"), "{text}");
    assert!(
        text.contains(&format!(
            "{}",
            dir.join("node_modules/primeforge").display()
        )),
        "{text}"
    );
}

/// The benchmark against crypto.generateKeyPair keeps running (a few
/// samples; no timing is judged here: figures come from full runs, in
/// docs/measurements).
#[test]
fn the_node_benchmark_runs() {
    built_package();
    let bench = common::manifest_dir().join("bench/node_peers.js");
    let text = run_in(
        &common::manifest_dir(),
        "node",
        &[bench.to_str().unwrap(), "rsa:512:3"],
    );
    for row in [
        "| primeforge, threads: 1 |",
        "| crypto.generateKeyPair, one call |",
        "| primeforge, threads: 2 (one key) |",
        "one thread: primeforge faster by ",
        "two threads: primeforge faster by ",
    ] {
        assert!(text.contains(row), "{row}: {text}");
    }
}
