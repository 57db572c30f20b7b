'use strict';
// RSA through the Node package: run by `npm test` / `node --test test/`
// in bindings/node, and by the workspace's tests/node.rs.

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const pf = require('..');

const seed = Buffer.alloc(32, 0x5a);

function signsAndVerifies(privateKey, publicKey) {
  const data = Buffer.from('primeforge signs this');
  const sig = crypto.sign('sha256', data, privateKey);
  assert.ok(crypto.verify('sha256', data, publicKey, sig));
  assert.ok(!crypto.verify('sha256', Buffer.from('something else'), publicKey, sig));
}

test('a 2048-bit key signs and verifies with crypto.sign through every form', async () => {
  const key = await pf.generateRsa({ modulusLength: 2048 });
  assert.ok(key instanceof pf.RsaKey);
  assert.equal(key.modulusLength, 2048);
  assert.equal(key.publicExponent, 65537);
  assert.equal(key.primes, 2);
  const priv = key.toKeyObject();
  const pub = key.toPublicKeyObject();
  assert.equal(priv.type, 'private');
  assert.equal(priv.asymmetricKeyType, 'rsa');
  assert.equal(priv.asymmetricKeyDetails.modulusLength, 2048);
  assert.equal(priv.asymmetricKeyDetails.publicExponent, 65537n);
  signsAndVerifies(priv, pub);
  // PEM strings and DER Buffers, as KeyObject.export() gives them.
  const pem = key.export();
  assert.equal(typeof pem, 'string');
  assert.match(pem, /^-----BEGIN PRIVATE KEY-----\n/);
  signsAndVerifies(crypto.createPrivateKey(pem), crypto.createPublicKey(key.exportPublic()));
  const pkcs1 = key.export({ type: 'pkcs1', format: 'der' });
  assert.ok(Buffer.isBuffer(pkcs1));
  signsAndVerifies(crypto.createPrivateKey({ key: pkcs1, format: 'der', type: 'pkcs1' }),
    crypto.createPublicKey({ key: key.exportPublic({ type: 'pkcs1', format: 'der' }), format: 'der', type: 'pkcs1' }));
  assert.match(key.export({ type: 'pkcs1' }), /^-----BEGIN RSA PRIVATE KEY-----\n/);
  assert.match(key.exportPublic({ type: 'pkcs1' }), /^-----BEGIN RSA PUBLIC KEY-----\n/);
  // OpenSSL (in Node) writes the same PKCS#8 and SPKI from our key.
  assert.deepEqual(priv.export({ format: 'der', type: 'pkcs8' }), key.export({ format: 'der' }));
  assert.deepEqual(pub.export({ format: 'der', type: 'spki' }), key.exportPublic({ format: 'der' }));
  assert.deepEqual(key.modulus, Buffer.from(pub.export({ format: 'jwk' }).n, 'base64url'));
  assert.deepEqual(key.check().problems, []);
});

test('an encrypted private key opens in crypto.createPrivateKey with its passphrase only', () => {
  return pf.generateRsa({ modulusLength: 1024, seed }).then((key) => {
    for (const kdf of ['scrypt', 'pbkdf2']) {
      const enc = key.export({ format: 'pem', cipher: 'aes-256-cbc', passphrase: 'correct horse', kdf });
      assert.match(enc, /^-----BEGIN ENCRYPTED PRIVATE KEY-----\n/);
      const opened = crypto.createPrivateKey({ key: enc, passphrase: 'correct horse' });
      assert.deepEqual(opened.export({ format: 'der', type: 'pkcs8' }), key.export({ format: 'der' }));
      assert.throws(() => crypto.createPrivateKey({ key: enc, passphrase: 'wrong' }));
      const der = key.export({ format: 'der', cipher: 'aes-256-cbc', passphrase: Buffer.from('bytes pass') });
      const back = pf.importRsaKey(der, { passphrase: Buffer.from('bytes pass') });
      assert.deepEqual(back.modulus, key.modulus);
      assert.throws(() => pf.importRsaKey(der, { passphrase: 'nope' }), (e) => e.code === 'PF_ERR_PASSPHRASE');
    }
    assert.throws(() => key.export({ cipher: 'aes-128-cbc', passphrase: 'x' }), RangeError);
    assert.throws(() => key.export({ cipher: 'aes-256-cbc' }), TypeError);
    assert.throws(() => key.export({ type: 'pkcs1', cipher: 'aes-256-cbc', passphrase: 'x' }), RangeError);
  });
});

test('the same seed gives the same key at 1, 2 and 16 threads', async () => {
  const moduli = [];
  for (const threads of [1, 2, 16]) {
    const key = await pf.generateRsa({ modulusLength: 1024, seed, threads });
    moduli.push(key.modulus.toString('hex'));
  }
  assert.equal(moduli[0], moduli[1]);
  assert.equal(moduli[0], moduli[2]);
  const other = await pf.generateRsa({ modulusLength: 1024, seed: Buffer.alloc(32, 1), threads: 2 });
  assert.notEqual(other.modulus.toString('hex'), moduli[0]);
});

test('the event loop keeps ticking while a key is made', async () => {
  let ticks = 0;
  let last = performance.now();
  let longest = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
    ticks += 1;
  }, 2);
  const started = performance.now();
  const key = await pf.generateRsa({ modulusLength: 4096, threads: 2 });
  const took = performance.now() - started;
  clearInterval(timer);
  assert.equal(key.modulusLength, 4096);
  // A blocked loop would show one gap as long as the generation.
  assert.ok(ticks >= 5, `only ${ticks} ticks in ${took.toFixed(0)} ms`);
  assert.ok(longest < 200, `the loop stalled for ${longest.toFixed(0)} ms of ${took.toFixed(0)} ms`);
});

test('an AbortSignal stops a generation promptly with an AbortError', async () => {
  const ac = new AbortController();
  const started = performance.now();
  // Minutes of work on one thread: only the abort can end it soon.
  const pending = pf.generateDhParams({ primeLength: 6144, threads: 1, signal: ac.signal });
  await new Promise((r) => setTimeout(r, 150));
  const abortedAt = performance.now();
  ac.abort(new Error('enough'));
  await assert.rejects(pending, (e) => {
    assert.equal(e.name, 'AbortError');
    assert.equal(e.code, 'ABORT_ERR');
    assert.equal(e.cause.message, 'enough');
    return true;
  });
  const latency = performance.now() - abortedAt;
  assert.ok(latency < 100, `the rejection came ${latency.toFixed(1)} ms after abort()`);
  assert.ok(abortedAt - started < 1000);
  // Also through AbortSignal.timeout, and before anything starts.
  await assert.rejects(pf.generateRsa({ modulusLength: 8192, threads: 1, signal: AbortSignal.timeout(50) }),
    { name: 'AbortError' });
  const done = new AbortController();
  done.abort();
  await assert.rejects(pf.generateRsa({ modulusLength: 2048, signal: done.signal }), { name: 'AbortError' });
});

test('progress reports arrive on the JavaScript thread; a throwing callback ends the generation', async () => {
  const reports = [];
  const key = await pf.generateRsa({
    modulusLength: 3072, threads: 1, progressInterval: 5, onProgress: (p) => reports.push(p),
  });
  assert.ok(key);
  assert.ok(reports.length >= 1);
  const last = reports[reports.length - 1];
  assert.equal(last.primesFound, 2);
  assert.equal(last.primesNeeded, 2);
  assert.ok(last.candidates > 0 && last.exponentiations > 0);
  for (let i = 1; i < reports.length; i++) assert.ok(reports[i].candidates >= reports[i - 1].candidates);
  const boom = new Error('stop here');
  await assert.rejects(pf.generateDhParams({
    primeLength: 6144, threads: 1, progressInterval: 5, onProgress: () => { throw boom; },
  }), (e) => e === boom);
});

test('bad arguments throw TypeError or RangeError with the library\'s message', () => {
  assert.throws(() => pf.generateRsa(), TypeError);
  assert.throws(() => pf.generateRsa({ modulusLength: '2048' }), { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' });
  assert.throws(() => pf.generateRsa({ modulusLength: 100 }),
    { name: 'RangeError', code: 'PF_ERR_INVALID_ARGUMENT', message: /bits/ });
  assert.throws(() => pf.generateRsa({ modulusLength: 2 ** 32 + 2048 }), RangeError);
  assert.throws(() => pf.generateRsa({ modulusLength: 2048.5 }), RangeError);
  assert.throws(() => pf.generateRsa({ modulusLength: 2048, publicExponent: 4 }), { name: 'RangeError', message: /exponent/ });
  assert.throws(() => pf.generateRsa({ modulusLength: 2048, publicExponent: -3n }), RangeError);
  assert.throws(() => pf.generateRsa({ modulusLength: 2048, threads: 5000 }), { name: 'RangeError', message: /thread/ });
  assert.throws(() => pf.generateRsa({ modulusLength: 2048, threads: -1 }), RangeError);
  assert.throws(() => pf.generateRsa({ modulusLength: 2048, seed: Buffer.alloc(31) }),
    { name: 'RangeError', message: /seed must be 32 bytes/ });
  assert.throws(() => pf.generateRsa({ modulusLength: 2048, seed: 'x'.repeat(32) }), TypeError);
  assert.throws(() => pf.generateRsa({ modulusLength: 2048, signal: {} }), TypeError);
  assert.throws(() => pf.generateRsa({ modulusLength: 2048, onProgress: 5 }), TypeError);
  assert.throws(() => pf.generateRsa({ modulusLength: 1024, fips: true }), { name: 'RangeError', message: /FIPS|2048/ });
  assert.throws(() => pf.generateRsa(null), TypeError);
  assert.throws(() => pf.importRsaKey(42), TypeError);
  assert.throws(() => pf.importRsaKey('not a key'), (e) => e instanceof Error && /^PF_ERR_/.test(e.code) && e.message.length > 0);
});

test('existing keys are read, checked and converted', async () => {
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const fromKeyObject = pf.importRsaKey(privateKey);
  assert.equal(fromKeyObject.modulusLength, 2048);
  assert.deepEqual(fromKeyObject.check().problems, []);
  const pem = privateKey.export({ format: 'pem', type: 'pkcs1' });
  const fromPem = pf.importRsaKey(pem);
  assert.deepEqual(fromPem.modulus, fromKeyObject.modulus);
  const report = pf.checkRsaKey(pem);
  assert.equal(report.container, 'PKCS#1');
  assert.equal(report.bits, 2048);
  assert.deepEqual(report.problems, []);
  // A key whose prime is damaged is reported, not accepted silently.
  const der = privateKey.export({ format: 'der', type: 'pkcs1' });
  const jwk = privateKey.export({ format: 'jwk' });
  const p = Buffer.from(jwk.p, 'base64url');
  const at = der.indexOf(p);
  assert.ok(at > 0);
  der[at + p.length - 1] ^= 0x02;
  const bad = pf.checkRsaKey(der);
  assert.ok(bad.problems.length > 0, JSON.stringify(bad));
  // 1024 bits: fine as a key, refused by FIPS 186-5.
  const small = await pf.generateRsa({ modulusLength: 1024 });
  const smallReport = pf.checkRsaKey(small.export());
  assert.deepEqual(smallReport.problems, []);
  assert.ok(smallReport.fips.length > 0);
  // A public key is named as one, not read as a private key.
  const publicKey = crypto.createPublicKey(privateKey);
  assert.throws(() => pf.importRsaKey(publicKey.export({ format: 'pem', type: 'spki' })),
    { code: 'PF_ERR_DECODE', message: /public key/ });
  assert.throws(() => pf.importRsaKey(publicKey), TypeError);
});

test('OpenSSH keys: the public line and the private key read back', async () => {
  const key = await pf.generateRsa({ modulusLength: 2048, seed });
  const line = key.toOpenSSHPublicKey('node@test');
  assert.match(line, /^ssh-rsa AAAA[0-9A-Za-z+/=]+ node@test$/);
  const ssh = key.toOpenSSH({ comment: 'node@test', passphrase: 'pw' });
  assert.match(ssh, /^-----BEGIN OPENSSH PRIVATE KEY-----\n/);
  assert.deepEqual(pf.importRsaKey(ssh, { passphrase: 'pw' }).modulus, key.modulus);
  assert.deepEqual(pf.importRsaKey(key.toOpenSSH()).modulus, key.modulus);
});

test('dispose() wipes a key; later use throws', async () => {
  const key = await pf.generateRsa({ modulusLength: 1024 });
  key.dispose();
  assert.equal(key.disposed, true);
  assert.throws(() => key.export(), /disposed/);
  assert.throws(() => key.toKeyObject(), /disposed/);
  key.dispose();
  assert.throws(() => new pf.RsaKey({}), TypeError);
});

test('the package loads and generates in a worker thread', async () => {
  const { Worker } = require('node:worker_threads');
  const path = require('node:path');
  const code = `
    const { parentPort } = require('node:worker_threads');
    const pf = require(${JSON.stringify(path.resolve(__dirname, '..'))});
    pf.generateRsa({ modulusLength: 1024, seed: Buffer.alloc(32, 0x5a), threads: 2 })
      .then((k) => parentPort.postMessage(k.modulus.toString('hex')));`;
  const worker = new Worker(code, { eval: true });
  const hex = await new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  await worker.terminate();
  const here = await pf.generateRsa({ modulusLength: 1024, seed, threads: 1 });
  assert.equal(hex, here.modulus.toString('hex'));
});

test('terminating a worker thread stops the generation it started', async () => {
  const { Worker } = require('node:worker_threads');
  const path = require('node:path');
  const code = `
    const { parentPort } = require('node:worker_threads');
    const pf = require(${JSON.stringify(path.resolve(__dirname, '..'))});
    pf.generateDhParams({ primeLength: 8192, threads: 2 }).catch(() => {});
    setTimeout(() => parentPort.postMessage('running'), 100);`;
  const worker = new Worker(code, { eval: true });
  await new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  const busy = process.cpuUsage();
  await new Promise((r) => setTimeout(r, 100));
  const used = process.cpuUsage(busy);
  // The generation is running: two threads' worth of CPU.
  assert.ok(used.user + used.system > 50_000, `${JSON.stringify(used)} µs in 100 ms before terminate()`);
  await worker.terminate();
  await new Promise((r) => setTimeout(r, 150));
  const after = process.cpuUsage();
  await new Promise((r) => setTimeout(r, 400));
  const idle = process.cpuUsage(after);
  // A generation left running would burn about 800 ms of CPU here.
  assert.ok(idle.user + idle.system < 150_000, `${JSON.stringify(idle)} µs of CPU in 400 ms after terminate()`);
});
