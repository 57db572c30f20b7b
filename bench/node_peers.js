'use strict';
// primeforge's Node package against Node's own crypto.generateKeyPair('rsa')
// (OpenSSL 3 inside Node), in one process, samples interleaved:
//
//   node bench/node_peers.js [rsa:BITS:SAMPLES ...]     (default rsa:2048:200 rsa:3072:60)
//
// Per sample and size, in turn:
//   - one key on one thread: primeforge threads: 1, and Node (one key runs
//     on one libuv thread);
//   - two threads: primeforge threads: 2 (one key on two threads), and
//     Node with two generateKeyPair calls at once (two keys on two libuv
//     threads: its best use of two threads) — compared as time per key.
// Prints mean, median, standard deviation per configuration and the
// ratios of means ± SE (delta method) and of medians, with the CPU's name.
// PRIMEFORGE_NODE_PACKAGE points at the package (default bindings/node).

const path = require('node:path');
const fs = require('node:fs');
const crypto = require('node:crypto');
const { promisify } = require('node:util');

const pf = require(process.env.PRIMEFORGE_NODE_PACKAGE || path.join(__dirname, '..', 'bindings', 'node'));
const nodeKeyPair = promisify(crypto.generateKeyPair);

function cpuName() {
  try {
    const info = fs.readFileSync('/proc/cpuinfo', 'utf8');
    const field = (name) => (info.match(new RegExp(`^${name}\\s*:\\s*(.*)$`, 'm')) || [])[1];
    const ifma = / avx512ifma /.test(` ${field('flags') || ''} `) ? 'AVX-512 IFMA' : 'no AVX-512 IFMA';
    return `${field('model name')} (family ${field('cpu family')} model ${field('model')}, ${ifma})`;
  } catch {
    return 'unknown CPU';
  }
}

function stats(xs) {
  const n = xs.length;
  const mean = xs.reduce((a, b) => a + b, 0) / n;
  const sd = Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / Math.max(1, n - 1));
  const sorted = [...xs].sort((a, b) => a - b);
  const median = n % 2 ? sorted[(n - 1) / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  return { n, mean, sd, se: sd / Math.sqrt(n), median };
}

// peer / ours: how many times faster ours is, ± SE by the delta method.
function ratio(ours, peer) {
  const r = peer.mean / ours.mean;
  const se = r * Math.sqrt((peer.se / peer.mean) ** 2 + (ours.se / ours.mean) ** 2);
  return `${r.toFixed(2)} ± ${se.toFixed(2)}× (medians ${(peer.median / ours.median).toFixed(2)}×)`;
}

async function timed(fn) {
  const t0 = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t0) / 1e9;
}

async function main() {
  const specs = process.argv.slice(2).length ? process.argv.slice(2) : ['rsa:2048:200', 'rsa:3072:60'];
  console.log(`CPU: ${cpuName()}; ${require('node:os').availableParallelism?.() ?? require('node:os').cpus().length} logical CPUs`);
  console.log(`Node ${process.version} (OpenSSL ${process.versions.openssl}); ${pf.buildInfo}`);
  for (const spec of specs) {
    const [kind, bitsText, samplesText] = spec.split(':');
    if (kind !== 'rsa') throw new Error(`unknown spec ${spec} (rsa:BITS:SAMPLES)`);
    const bits = Number(bitsText);
    const samples = Number(samplesText);
    const t = { ours1: [], node1: [], ours2: [], node2: [] };
    // Warm-up: the pools, the addon, OpenSSL's tables.
    await pf.generateRsa({ modulusLength: bits, threads: 2 });
    await nodeKeyPair('rsa', { modulusLength: bits });
    for (let i = 0; i < samples; i++) {
      const order = i % 2 ? ['node', 'ours'] : ['ours', 'node'];
      for (const who of order) {
        if (who === 'ours') {
          t.ours1.push(await timed(() => pf.generateRsa({ modulusLength: bits, threads: 1 })));
          t.ours2.push(await timed(() => pf.generateRsa({ modulusLength: bits, threads: 2 })));
        } else {
          t.node1.push(await timed(() => nodeKeyPair('rsa', { modulusLength: bits })));
          // Two keys at once on two libuv threads: seconds per key.
          t.node2.push((await timed(() => Promise.all([
            nodeKeyPair('rsa', { modulusLength: bits }),
            nodeKeyPair('rsa', { modulusLength: bits }),
          ]))) / 2);
        }
      }
    }
    const s = Object.fromEntries(Object.entries(t).map(([k, v]) => [k, stats(v)]));
    console.log(`\nRSA-${bits}, ${samples} samples each (seconds per key)`);
    console.log('| configuration | mean | median | sd |');
    console.log('|---|---|---|---|');
    const label = {
      ours1: 'primeforge, threads: 1',
      node1: 'crypto.generateKeyPair, one call',
      ours2: 'primeforge, threads: 2 (one key)',
      node2: 'crypto.generateKeyPair, two calls at once (per key)',
    };
    for (const k of Object.keys(label)) {
      console.log(`| ${label[k]} | ${s[k].mean.toFixed(4)} | ${s[k].median.toFixed(4)} | ${s[k].sd.toFixed(4)} |`);
    }
    console.log(`one thread: primeforge faster by ${ratio(s.ours1, s.node1)}`);
    console.log(`two threads: primeforge faster by ${ratio(s.ours2, s.node2)}`);
    console.log(`primeforge 2 threads vs 1: ${ratio(s.ours2, s.ours1)}; Node two calls vs one: ${ratio(s.node2, s.node1)}`);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
