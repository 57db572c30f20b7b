'use strict';
// primeforge for Node.js: RSA keys and Diffie-Hellman parameters on every
// core, off the event loop. See README.md and index.d.ts.
//
// This file is the public API: it checks arguments (TypeError for a wrong
// type, RangeError with the library's own message for a value out of
// range, both thrown synchronously as crypto.generateKeyPair throws them),
// wraps generations in Promises with AbortSignal support, and converts
// results to KeyObjects. primeforge.node (Node-API, built from the Rust
// workspace by build.js) does the work on the library's own threads.

const crypto = require('node:crypto');
const path = require('node:path');
const fs = require('node:fs');

function loadNative() {
  const candidates = [];
  if (process.env.PRIMEFORGE_NODE_ADDON) candidates.push(path.resolve(process.env.PRIMEFORGE_NODE_ADDON));
  candidates.push(path.join(__dirname, 'primeforge.node'));
  for (const file of candidates) {
    if (fs.existsSync(file)) return require(file);
  }
  const err = new Error(
    `primeforge: the native addon is missing (looked for ${candidates.join(', ')}); ` +
      'build it with `npm run build` in the package directory (needs cargo and m4), ' +
      'or reinstall the package');
  err.code = 'PF_ERR_ADDON_MISSING';
  throw err;
}

const native = loadNative();

const U32_MAX = 0xffffffff;

function typeError(name, expected, value) {
  const got = value === null ? 'null' : Array.isArray(value) ? 'an array' : `type ${typeof value}`;
  const err = new TypeError(`The "${name}" argument must be ${expected}. Received ${got}`);
  err.code = 'ERR_INVALID_ARG_TYPE';
  return err;
}

function rangeError(message) {
  const err = new RangeError(message);
  err.code = 'PF_ERR_INVALID_ARGUMENT';
  return err;
}

function checkOptions(options, name = 'options') {
  if (options === undefined) return {};
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw typeError(name, 'of type object', options);
  }
  return options;
}

// An integer for a uint32 parameter. Values outside 0 … 2^32 − 1 are
// passed on as 2^32 − 1, which every such parameter refuses, so that the
// RangeError carries the library's own message; fractions are refused here.
function u32(name, value, fallback) {
  if (value === undefined) {
    if (fallback === undefined) throw typeError(name, 'of type number', value);
    return fallback;
  }
  if (typeof value !== 'number' || Number.isNaN(value)) throw typeError(name, 'of type number', value);
  if (!Number.isInteger(value)) {
    throw rangeError(`invalid argument: ${name} must be an integer (received ${value})`);
  }
  return value < 0 || value > U32_MAX ? U32_MAX : value;
}

function bool(name, value, fallback = false) {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw typeError(name, 'of type boolean', value);
  return value;
}

function exponent(value) {
  if (value === undefined) return 65537n;
  if (typeof value === 'bigint') return value;
  if (typeof value !== 'number') throw typeError('publicExponent', 'of type number or bigint', value);
  if (!Number.isSafeInteger(value)) {
    throw rangeError(`invalid argument: publicExponent must be an integer (received ${value})`);
  }
  return BigInt(value);
}

function bytesView(name, value, { allowString = false } = {}) {
  if (Buffer.isBuffer(value)) return value;
  if (ArrayBuffer.isView(value)) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  if (value instanceof ArrayBuffer) return Buffer.from(value);
  if (allowString && typeof value === 'string') return Buffer.from(value, 'utf8');
  throw typeError(name, allowString ? 'a string, Buffer, TypedArray, DataView or ArrayBuffer'
    : 'a Buffer, TypedArray, DataView or ArrayBuffer', value);
}

function seedOf(value) {
  // undefined, not null: the native request objects take absent fields.
  if (value === undefined || value === null) return undefined;
  return bytesView('seed', value);
}

// A passphrase as a Buffer of our own (wiped after use): strings are
// UTF-8 encoded, bytes copied.
function passphraseOf(value) {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string') return Buffer.from(value, 'utf8');
  return Buffer.from(bytesView('passphrase', value));
}

function abortError(signal) {
  const err = new Error('The operation was aborted', { cause: signal.reason });
  err.name = 'AbortError';
  err.code = 'ABORT_ERR';
  return err;
}

function failureError(failure) {
  const err = new Error(failure.message);
  err.code = failure.code;
  return err;
}

function checkSignal(signal) {
  if (signal === undefined || signal === null) return null;
  if (typeof signal !== 'object' || typeof signal.aborted !== 'boolean' ||
      typeof signal.addEventListener !== 'function') {
    throw typeError('options.signal', 'an instance of AbortSignal', signal);
  }
  return signal;
}

function checkProgress(onProgress, interval) {
  if (onProgress !== undefined && onProgress !== null && typeof onProgress !== 'function') {
    throw typeError('options.onProgress', 'of type function', onProgress);
  }
  const ms = u32('options.progressInterval', interval, 100);
  if (ms < 1 || ms > 60000) {
    throw rangeError(`invalid argument: progressInterval must be from 1 to 60000 ms (received ${interval})`);
  }
  return [onProgress || null, ms];
}

function progressOf(p) {
  return {
    candidates: p.candidates,
    survivors: p.survivors,
    exponentiations: p.exponentiations,
    primesFound: p.primesFound,
    primesNeeded: p.primesNeeded,
    elapsedMs: p.elapsedMs,
  };
}

// Common options of every generation, checked before anything starts.
function runOptions(options) {
  const signal = checkSignal(options.signal);
  const [onProgress, interval] = checkProgress(options.onProgress, options.progressInterval);
  return {
    threads: u32('options.threads', options.threads, 0),
    seed: seedOf(options.seed),
    signal,
    onProgress,
    interval,
  };
}

// Starts a job (unless the signal has already fired) and settles the
// Promise when the job ends: with the result, with an AbortError when the
// caller's signal cancelled it, else with the library's error.
function run(opts, start, wrap) {
  const { signal } = opts;
  if (signal && signal.aborted) return Promise.reject(abortError(signal));
  const job = start();
  return new Promise((resolve, reject) => {
    let timer = null;
    let callbackError = null;
    const onAbort = () => job.cancel();
    if (signal) signal.addEventListener('abort', onAbort, { once: true });
    if (opts.onProgress) {
      timer = setInterval(() => {
        try {
          opts.onProgress(progressOf(job.progress()));
        } catch (e) {
          // A throwing callback ends the generation with its error.
          if (callbackError === null) callbackError = e;
          job.cancel();
        }
      }, opts.interval);
    }
    job.settle().then((result) => {
      if (timer !== null) clearInterval(timer);
      if (signal) signal.removeEventListener('abort', onAbort);
      if (result instanceof native.NativeRsaKey || result instanceof native.NativeDhParams) {
        if (opts.onProgress && callbackError === null) {
          try {
            opts.onProgress(progressOf(job.progress()));
          } catch (e) {
            callbackError = e;
          }
        }
        const value = wrap(result);
        if (callbackError !== null) {
          if (typeof value.dispose === 'function') value.dispose();
          reject(callbackError);
        } else {
          resolve(value);
        }
      } else if (callbackError !== null) {
        reject(callbackError);
      } else if (result.code === 'PF_ERR_CANCELLED' && signal && signal.aborted) {
        reject(abortError(signal));
      } else {
        reject(failureError(result));
      }
    }, reject);
  });
}

const RSA_PRIVATE = { pkcs8: 'pkcs8', pkcs1: 'pkcs1' };
const RSA_PUBLIC = { spki: 'spki', pkcs1: 'pkcs1-public' };

// One of `allowed` (strings), or `fallback` when undefined.
function choice(name, value, allowed, fallback) {
  if (value === undefined) return fallback;
  if (typeof value !== 'string') throw typeError(name, 'of type string', value);
  if (!allowed.includes(value)) {
    const list = allowed.map((a) => `"${a}"`).join(', ');
    throw rangeError(`invalid argument: ${name} must be one of ${list} (received "${value}")`);
  }
  return value;
}

function formatOf(name, value) {
  return choice(name, value, ['pem', 'der'], 'pem');
}

function wipe(buf) {
  if (buf) buf.fill(0);
}

// PEM as a string and DER as a Buffer, as KeyObject.export() returns
// them. The Buffer a PEM string is made from is wiped; the string itself
// cannot be (use DER to keep a private key in memory you can wipe).
function pemOrDer(format, buf) {
  if (format === 'der') return buf;
  try {
    return buf.toString('latin1');
  } finally {
    wipe(buf);
  }
}

/** An RSA private key held in primeforge's secure memory. */
class RsaKey {
  #native;

  constructor(nativeKey) {
    if (!(nativeKey instanceof native.NativeRsaKey)) {
      throw new TypeError('RsaKey objects come from generateRsa() or importRsaKey()');
    }
    this.#native = nativeKey;
  }

  /** Modulus size in bits. */
  get modulusLength() { return this.#native.bits; }

  /** The public exponent (a number; a bigint if above 2^53). */
  get publicExponent() {
    const e = this.#native.publicExponent;
    return e <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(e) : e;
  }

  /** Number of primes (2 unless multi-prime). */
  get primes() { return this.#native.primes; }

  /** The modulus, big-endian. */
  get modulus() { return this.#native.modulus(); }

  /** Whether dispose() was called. */
  get disposed() { return this.#native.disposed; }

  /**
   * Encodes the private key, in the options of KeyObject.export():
   * type 'pkcs8' (default) or 'pkcs1', format 'pem' (default) or 'der',
   * and for encrypted PKCS#8 cipher 'aes-256-cbc' with a passphrase
   * (PBES2; kdf 'scrypt', the default, or 'pbkdf2').
   */
  export(options) {
    options = checkOptions(options);
    const type = choice('options.type', options.type, Object.keys(RSA_PRIVATE), 'pkcs8');
    const format = formatOf('options.format', options.format);
    if (options.cipher === undefined && options.passphrase === undefined && options.kdf === undefined) {
      return pemOrDer(format, this.#native.export(`${RSA_PRIVATE[type]}-${format}`));
    }
    if (typeof options.cipher !== 'string') throw typeError('options.cipher', 'of type string', options.cipher);
    if (options.cipher.toLowerCase() !== 'aes-256-cbc') {
      throw rangeError(`invalid argument: options.cipher must be "aes-256-cbc" (PBES2; received "${options.cipher}")`);
    }
    if (type !== 'pkcs8') throw rangeError('invalid argument: encryption needs options.type "pkcs8"');
    if (options.passphrase === undefined || options.passphrase === null) {
      throw typeError('options.passphrase', 'a string or Buffer when options.cipher is given', options.passphrase);
    }
    const kdf = choice('options.kdf', options.kdf, ['scrypt', 'pbkdf2'], 'scrypt');
    const pass = passphraseOf(options.passphrase);
    try {
      return pemOrDer(format, this.#native.exportEncrypted(format === 'pem', pass, kdf));
    } finally {
      wipe(pass);
    }
  }

  /** Encodes the public key: type 'spki' (default) or 'pkcs1', format 'pem' or 'der'. */
  exportPublic(options) {
    options = checkOptions(options);
    const type = choice('options.type', options.type, Object.keys(RSA_PUBLIC), 'spki');
    const format = formatOf('options.format', options.format);
    return pemOrDer(format, this.#native.export(`${RSA_PUBLIC[type]}-${format}`));
  }

  /** The key as a crypto.KeyObject (private). */
  toKeyObject() {
    const der = this.#native.export('pkcs8-der');
    try {
      return crypto.createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
    } finally {
      wipe(der);
    }
  }

  /** The public key as a crypto.KeyObject. */
  toPublicKeyObject() {
    return crypto.createPublicKey({ key: this.#native.export('spki-der'), format: 'der', type: 'spki' });
  }

  /**
   * An "OPENSSH PRIVATE KEY" (string), as ssh-keygen writes it; encrypted
   * with bcrypt-pbkdf and aes256-ctr when a passphrase is given.
   */
  toOpenSSH(options) {
    options = checkOptions(options);
    const comment = options.comment === undefined ? '' : options.comment;
    if (typeof comment !== 'string') throw typeError('options.comment', 'of type string', comment);
    const pass = passphraseOf(options.passphrase);
    let out = null;
    try {
      out = this.#native.exportOpenssh(comment, pass);
      return out.toString('utf8');
    } finally {
      wipe(pass);
      wipe(out);
    }
  }

  /** The `ssh-rsa AAAA… comment` line for authorized_keys (no newline). */
  toOpenSSHPublicKey(comment = '') {
    if (typeof comment !== 'string') throw typeError('comment', 'of type string', comment);
    return this.#native.opensshPublic(comment).trimEnd();
  }

  /** Checks the key's numbers; returns { bits, primes, container, problems, fips }. */
  check() {
    return this.#native.check();
  }

  /** Wipes the key's secret parts now; the object is unusable afterwards. */
  dispose() {
    this.#native.dispose();
  }

  [Symbol.for('nodejs.util.inspect.custom')]() {
    return this.disposed ? 'RsaKey { disposed }'
      : `RsaKey { modulusLength: ${this.modulusLength}, publicExponent: ${this.publicExponent}, primes: ${this.primes} }`;
  }
}
if (typeof Symbol.dispose === 'symbol') {
  RsaKey.prototype[Symbol.dispose] = RsaKey.prototype.dispose;
}

const DH_TYPES = { pkcs3: 'pkcs3', x942: 'x942', dsa: 'dsa' };

/** Diffie-Hellman (or FIPS 186-4 domain) parameters; all public. */
class DhParams {
  #native;

  constructor(nativeParams) {
    if (!(nativeParams instanceof native.NativeDhParams)) {
      throw new TypeError('DhParams objects come from generateDhParams(), namedGroup() or importDhParams()');
    }
    this.#native = nativeParams;
  }

  /** Size of p in bits. */
  get primeLength() { return this.#native.bits; }

  /** p, big-endian. */
  get prime() { return this.#native.prime(); }

  /** g, big-endian. */
  get generator() { return this.#native.generator(); }

  /** q (the subgroup order; (p − 1)/2 for a safe prime), or null. */
  get subprime() { return this.#native.subprime(); }

  /**
   * For FIPS 186-4 parameters made here: { seed, counter, hash, gindex },
   * what A.1.1.3/A.2.4 verify them from; else null.
   */
  get fips186() { return this.#native.fips186(); }

  /**
   * Encodes the parameters: type 'pkcs3' ("DH PARAMETERS", default),
   * 'x942' ("X9.42 DH PARAMETERS") or 'dsa' ("DSA PARAMETERS"); format
   * 'pem' (default, a string) or 'der' (a Buffer).
   */
  export(options) {
    options = checkOptions(options);
    const type = choice('options.type', options.type, Object.keys(DH_TYPES), 'pkcs3');
    const format = formatOf('options.format', options.format);
    return pemOrDer(format, this.#native.export(`${DH_TYPES[type]}-${format}`));
  }

  /** A crypto.DiffieHellman over these parameters (a fresh key pair on generateKeys()). */
  toDiffieHellman() {
    return crypto.createDiffieHellman(this.prime, this.generator);
  }

  /** Checks the parameters; returns what checkDhParams() returns. */
  check() {
    return this.#native.check();
  }

  [Symbol.for('nodejs.util.inspect.custom')]() {
    return `DhParams { primeLength: ${this.primeLength}, generator: ${BigInt('0x' + this.generator.toString('hex'))} }`;
  }
}

/**
 * Generates an RSA private key on `threads` threads (0, the default: all
 * cores). Options as crypto.generateKeyPair('rsa'): modulusLength
 * (required), publicExponent (65537); and primes (2), threads, seed (32
 * bytes: the same key at any thread count), fips, provable, signal,
 * onProgress, progressInterval (ms, 100).
 */
function generateRsa(options) {
  options = checkOptions(options);
  const bits = u32('options.modulusLength', options.modulusLength);
  const e = exponent(options.publicExponent);
  const primes = u32('options.primes', options.primes, 2);
  const fips = bool('options.fips', options.fips);
  const provable = bool('options.provable', options.provable);
  const r = runOptions(options);
  return run(r, () => native.startRsa({ bits, publicExponent: e, primes, threads: r.threads, seed: r.seed, fips, provable }),
    (k) => new RsaKey(k));
}

/**
 * Generates Diffie-Hellman parameters (a safe prime p and generator g):
 * primeLength (required), generator (2), x942 (g in the subgroup of order
 * q, for X9.42 output), threads, seed, signal, onProgress, progressInterval.
 */
function generateDhParams(options) {
  options = checkOptions(options);
  const bits = u32('options.primeLength', options.primeLength);
  const g = u32('options.generator', options.generator, 2);
  const x942 = bool('options.x942', options.x942);
  const r = runOptions(options);
  return run(r, () => native.startDh({ bits, generator: g, x942, threads: r.threads, seed: r.seed }),
    (p) => new DhParams(p));
}

/**
 * Generates FIPS 186-4 domain parameters (X9.42 DHX / DSA; A.1.1.2, g by
 * A.2.3): primeLength (1024, 2048 or 3072), divisorLength (q's size: 160,
 * 224 or 256; default OpenSSL's for the size), hash ('sha256', …; default
 * the smallest SHA-2 of at least divisorLength bits), gindex (1; null for
 * A.2.1's unverifiable g), threads, seed, signal, onProgress.
 */
function generateFips186Params(options) {
  options = checkOptions(options);
  const bits = u32('options.primeLength', options.primeLength);
  const qbits = u32('options.divisorLength', options.divisorLength, 0);
  let hash;
  if (options.hash !== undefined && options.hash !== null) {
    if (typeof options.hash !== 'string') throw typeError('options.hash', 'of type string', options.hash);
    hash = options.hash;
  }
  let gindex = 1;
  if (options.gindex === null) {
    gindex = -1;
  } else if (options.gindex !== undefined) {
    gindex = u32('options.gindex', options.gindex);
    if (gindex > 255) throw rangeError('invalid argument: gindex must be from 0 to 255 (or null for an unverifiable g)');
  }
  const r = runOptions(options);
  return run(r, () => native.startFips186({ bits, qbits, hash, gindex, threads: r.threads, seed: r.seed }),
    (p) => new DhParams(p));
}

function keyInput(data, name = 'data') {
  if (data instanceof crypto.KeyObject) {
    if (data.type !== 'private' || data.asymmetricKeyType !== 'rsa') {
      throw typeError(name, 'a private RSA KeyObject', data);
    }
    return { bytes: data.export({ format: 'der', type: 'pkcs8' }), owned: true };
  }
  return { bytes: bytesView(name, data, { allowString: true }), owned: typeof data === 'string' };
}

/**
 * Reads an RSA private key: PEM or DER, PKCS#1, PKCS#8 (encrypted too),
 * OpenSSL's encrypted PEM, or OpenSSH; or a private RSA KeyObject.
 */
function importRsaKey(data, options) {
  options = checkOptions(options);
  const input = keyInput(data);
  const pass = passphraseOf(options.passphrase);
  try {
    return new RsaKey(native.importRsa(input.bytes, pass));
  } finally {
    wipe(pass);
    if (input.owned) wipe(input.bytes);
  }
}

/**
 * Reads an RSA private key and checks it (primality, consistency, what
 * FIPS 186-5 would refuse) without keeping it.
 */
function checkRsaKey(data, options) {
  options = checkOptions(options);
  const input = keyInput(data);
  const pass = passphraseOf(options.passphrase);
  try {
    return native.checkRsa(input.bytes, pass);
  } finally {
    wipe(pass);
    if (input.owned) wipe(input.bytes);
  }
}

/** Reads DH parameters (PEM or DER; PKCS#3, X9.42 or DSA). */
function importDhParams(data) {
  return new DhParams(native.importDh(bytesView('data', data, { allowString: true })));
}

/**
 * Reads DH parameters and checks them: { problems (0: none; DH_CHECK
 * bits), bits, qBits, syntax, safePrime, namedGroup, seed, generator }.
 */
function checkDhParams(data) {
  return native.checkDh(bytesView('data', data, { allowString: true }));
}

/** A published group: 'ffdhe2048' … 'ffdhe8192' (RFC 7919), 'modp_2048' … (RFC 3526). */
function namedGroup(name) {
  if (typeof name !== 'string') throw typeError('name', 'of type string', name);
  return new DhParams(native.namedGroup(name));
}

const NAMED_GROUPS = Object.freeze(native.namedGroups());
const DH_CHECK = Object.freeze(Object.fromEntries(native.dhCheckBits().map((b) => [b.name, b.value])));

module.exports = {
  generateRsa,
  generateDhParams,
  generateFips186Params,
  importRsaKey,
  checkRsaKey,
  importDhParams,
  checkDhParams,
  namedGroup,
  RsaKey,
  DhParams,
  NAMED_GROUPS,
  DH_CHECK,
  version: native.version(),
  buildInfo: native.buildInfo(),
};
