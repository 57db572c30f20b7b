'use strict';
// Diffie-Hellman parameters through the Node package.

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const pf = require('..');

// Node's createDiffieHellman(p, g) runs OpenSSL's DH_check without q:
// FIPS 186-4 primes are not safe primes and say so (DH_CHECK_P_NOT_SAFE_PRIME).
const DH_CHECK_P_NOT_SAFE_PRIME = 0x02;

function agree(params, { safePrime = true } = {}) {
  const alice = params.toDiffieHellman();
  const bob = crypto.createDiffieHellman(params.prime, params.generator);
  const a = alice.generateKeys();
  const b = bob.generateKeys();
  const s1 = alice.computeSecret(b);
  const s2 = bob.computeSecret(a);
  assert.ok(s1.length > 0);
  assert.deepEqual(s1, s2);
  assert.equal(alice.verifyError, safePrime ? 0 : DH_CHECK_P_NOT_SAFE_PRIME,
    `Node's own check of p and g: ${alice.verifyError}`);
}

test('generated parameters: both sides of crypto.createDiffieHellman derive the same secret', async () => {
  const params = await pf.generateDhParams({ primeLength: 1024, threads: 2 });
  assert.ok(params instanceof pf.DhParams);
  assert.equal(params.primeLength, 1024);
  assert.deepEqual(params.generator, Buffer.from([2]));
  agree(params);
  const pem = params.export();
  assert.match(pem, /^-----BEGIN DH PARAMETERS-----\n/);
  const report = pf.checkDhParams(pem);
  assert.equal(report.problems, 0);
  assert.equal(report.safePrime, true);
  assert.equal(report.bits, 1024);
  assert.deepEqual(pf.importDhParams(params.export({ format: 'der' })).prime, params.prime);
  // q = (p - 1) / 2
  const p = BigInt('0x' + params.prime.toString('hex'));
  assert.equal(BigInt('0x' + params.subprime.toString('hex')), (p - 1n) / 2n);
});

test('X9.42 parameters carry q; the generator choice is honoured', async () => {
  const params = await pf.generateDhParams({ primeLength: 768, generator: 5, x942: true, seed: Buffer.alloc(32, 7) });
  assert.deepEqual(params.generator, Buffer.from([5]));
  const x942 = params.export({ type: 'x942' });
  assert.match(x942, /^-----BEGIN X9.42 DH PARAMETERS-----\n/);
  const report = pf.checkDhParams(x942);
  assert.equal(report.syntax, 'X9.42');
  assert.equal(report.problems, 0);
  agree(params);
  const again = await pf.generateDhParams({ primeLength: 768, generator: 5, x942: true, seed: Buffer.alloc(32, 7), threads: 1 });
  assert.deepEqual(again.prime, params.prime);
});

test('named groups are the published ones', () => {
  assert.ok(pf.NAMED_GROUPS.includes('ffdhe2048'));
  for (const name of pf.NAMED_GROUPS) {
    const g = pf.namedGroup(name);
    assert.ok(g.check().namedGroup, name);
    assert.equal(g.check().problems, 0);
  }
  // RFC 3526 group 14 is what Node calls modp14.
  assert.deepEqual(pf.namedGroup('modp_2048').prime, crypto.getDiffieHellman('modp14').getPrime());
  agree(pf.namedGroup('ffdhe2048'));
  assert.throws(() => pf.namedGroup('ffdhe1024'), { name: 'RangeError', code: 'PF_ERR_INVALID_ARGUMENT' });
  assert.throws(() => pf.namedGroup(2048), TypeError);
});

test('FIPS 186-4 parameters verify from their seed', async () => {
  const params = await pf.generateFips186Params({ primeLength: 2048, divisorLength: 256, threads: 2 });
  assert.equal(params.primeLength, 2048);
  assert.equal(params.subprime.length, 32);
  const info = params.fips186;
  assert.equal(info.seed.length, 32);
  assert.equal(info.gindex, 1);
  const report = pf.checkDhParams(params.export({ type: 'x942' }));
  assert.equal(report.problems, 0);
  assert.equal(report.qBits, 256);
  assert.equal(report.seed, 'verified');
  assert.equal(report.generator, 'canonical');
  assert.match(params.export({ type: 'dsa' }), /^-----BEGIN DSA PARAMETERS-----\n/);
  agree(params, { safePrime: false });
  // Same seed: same parameters at 1 and 2 threads.
  const seed = Buffer.alloc(32, 3);
  const one = await pf.generateFips186Params({ primeLength: 2048, divisorLength: 224, seed, threads: 1 });
  const two = await pf.generateFips186Params({ primeLength: 2048, divisorLength: 224, seed, threads: 2 });
  assert.deepEqual(one.prime, two.prime);
  assert.deepEqual(one.generator, two.generator);
  assert.equal(one.fips186.counter, two.fips186.counter);
  assert.throws(() => pf.generateFips186Params({ primeLength: 2048, divisorLength: 100 }), RangeError);
  assert.throws(() => pf.generateFips186Params({ primeLength: 2048, hash: 'md5' }), { name: 'RangeError', message: /hash/ });
});

test('damaged parameters are reported with their problem bits', async () => {
  const params = await pf.generateDhParams({ primeLength: 512, seed: Buffer.alloc(32, 9) });
  const der = params.export({ format: 'der' });
  const p = params.prime;
  const at = der.indexOf(p);
  assert.ok(at > 0);
  der[at + p.length - 1] ^= 0x04; // p + 4 or p - 4: odd, not prime
  const report = pf.checkDhParams(der);
  assert.ok(report.problems & pf.DH_CHECK.P_NOT_PRIME, JSON.stringify(report));
  assert.throws(() => pf.checkDhParams('nothing here'), (e) => /^PF_ERR_/.test(e.code));
  assert.throws(() => pf.importDhParams(Buffer.alloc(0)), Error);
});

test('bad DH arguments throw with the library\'s message', () => {
  assert.throws(() => pf.generateDhParams({}), TypeError);
  assert.throws(() => pf.generateDhParams({ primeLength: 100 }), { name: 'RangeError', message: /bits|256/ });
  assert.throws(() => pf.generateDhParams({ primeLength: 2048, generator: 1 }), { name: 'RangeError', message: /generator/ });
  assert.throws(() => pf.generateDhParams({ primeLength: 2048, generator: '2' }), TypeError);
  assert.throws(() => pf.generateDhParams({ primeLength: 2048, x942: 'yes' }), TypeError);
  assert.throws(() => pf.generateDhParams({ primeLength: 2048, progressInterval: 0 }), RangeError);
});
