// Type declarations for primeforge's Node.js package (index.js).
/// <reference types="node" />

import type { DiffieHellman, KeyObject } from 'node:crypto';

/** Bytes accepted as input. */
export type BinaryLike = Buffer | NodeJS.TypedArray | DataView | ArrayBuffer;

/** A progress report, delivered on the JavaScript thread. */
export interface Progress {
  /** Candidates drawn so far. */
  candidates: number;
  /** Candidates that passed trial division. */
  survivors: number;
  /** Modular exponentiations started. */
  exponentiations: number;
  /** Primes found so far. */
  primesFound: number;
  /** Primes the generation needs. */
  primesNeeded: number;
  /** Milliseconds since the generation started. */
  elapsedMs: number;
}

/** Options every generation takes. */
export interface RunOptions {
  /** Worker threads: 0 (the default) = all cores; at most 1024. */
  threads?: number;
  /** 32 bytes: the same result at any thread count (tests, reproducible builds). */
  seed?: BinaryLike | null;
  /** Aborts the generation: the Promise rejects with an AbortError within tens of ms. */
  signal?: AbortSignal | null;
  /** Called every `progressInterval` ms and once at the end; throwing cancels with that error. */
  onProgress?: ((progress: Progress) => void) | null;
  /** Milliseconds between progress reports (1 … 60000, default 100). */
  progressInterval?: number;
}

export interface RsaOptions extends RunOptions {
  /** Modulus size in bits: even, 512 … 16384. */
  modulusLength: number;
  /** Default 65537; odd, at least 3. */
  publicExponent?: number | bigint;
  /** Number of primes (default 2; multi-prime up to the size's limit). */
  primes?: number;
  /** Refuse what FIPS 186-5 does not allow (size, exponent, primes). */
  fips?: boolean;
  /** Provable primes (FIPS 186-5 A.1.2). */
  provable?: boolean;
}

export interface DhOptions extends RunOptions {
  /** Size of the safe prime p in bits: 256 … 16384. */
  primeLength: number;
  /** Default 2. */
  generator?: number;
  /** g generates the subgroup of order q (as X9.42 output needs). */
  x942?: boolean;
}

export type Fips186Hash = 'sha224' | 'sha256' | 'sha384' | 'sha512' | 'sha512-224' | 'sha512-256';

export interface Fips186Options extends RunOptions {
  /** Size of p: 1024, 2048 or 3072. */
  primeLength: number;
  /** Size of q: 160, 224 or 256 (default OpenSSL's for the size). */
  divisorLength?: number;
  /** The hash of A.1.1.2 (default the smallest SHA-2 of at least divisorLength bits). */
  hash?: Fips186Hash | null;
  /** A.2.3's index (0 … 255, default 1); null for A.2.1's unverifiable g. */
  gindex?: number | null;
}

export interface RsaExportOptions {
  type?: 'pkcs8' | 'pkcs1';
  format?: 'pem' | 'der';
  /** Encrypted PKCS#8 (PBES2): 'aes-256-cbc', with a passphrase. */
  cipher?: 'aes-256-cbc';
  passphrase?: string | BinaryLike;
  /** The key derivation of PBES2 (default 'scrypt'). */
  kdf?: 'scrypt' | 'pbkdf2';
}

export interface RsaPublicExportOptions {
  type?: 'spki' | 'pkcs1';
  format?: 'pem' | 'der';
}

export interface RsaProblem {
  kind: string;
  text: string;
}

export interface RsaCheck {
  bits: number;
  primes: number;
  /** Where the key was read from: 'PKCS#1', 'PKCS#8', … */
  container: string;
  /** Problems that make the key unusable (empty: none). */
  problems: RsaProblem[];
  /** What FIPS 186-5 would refuse besides. */
  fips: RsaProblem[];
}

export interface DhCheck {
  /** Problem bits (0: none found); see DH_CHECK. */
  problems: number;
  bits: number;
  qBits?: number;
  syntax: 'PKCS#3' | 'X9.42' | 'DSA';
  safePrime: boolean;
  /** The published group with this p and g, e.g. 'RFC 7919 ffdhe2048'. */
  namedGroup?: string;
  /** FIPS 186-4 seed check, when the file carries a seed. */
  seed?: 'verified' | 'verified-fips186-2' | 'failed';
  /** Generator check for FIPS 186-4 sizes. */
  generator?: 'canonical' | 'order' | 'failed';
}

export interface Fips186Info {
  seed: Buffer;
  counter: number;
  hash?: string;
  gindex?: number;
}

/** An RSA private key held in primeforge's secure memory. */
export declare class RsaKey {
  private constructor();
  readonly modulusLength: number;
  readonly publicExponent: number | bigint;
  readonly primes: number;
  readonly modulus: Buffer;
  readonly disposed: boolean;
  export(options: RsaExportOptions & { format: 'der' }): Buffer;
  export(options?: RsaExportOptions & { format?: 'pem' }): string;
  exportPublic(options: RsaPublicExportOptions & { format: 'der' }): Buffer;
  exportPublic(options?: RsaPublicExportOptions & { format?: 'pem' }): string;
  toKeyObject(): KeyObject;
  toPublicKeyObject(): KeyObject;
  toOpenSSH(options?: { comment?: string; passphrase?: string | BinaryLike }): string;
  toOpenSSHPublicKey(comment?: string): string;
  check(): RsaCheck;
  dispose(): void;
}

/** Diffie-Hellman (or FIPS 186-4 domain) parameters. */
export declare class DhParams {
  private constructor();
  readonly primeLength: number;
  readonly prime: Buffer;
  readonly generator: Buffer;
  readonly subprime: Buffer | null;
  readonly fips186: Fips186Info | null;
  export(options: { type?: 'pkcs3' | 'x942' | 'dsa'; format: 'der' }): Buffer;
  export(options?: { type?: 'pkcs3' | 'x942' | 'dsa'; format?: 'pem' }): string;
  toDiffieHellman(): DiffieHellman;
  check(): DhCheck;
}

export function generateRsa(options: RsaOptions): Promise<RsaKey>;
export function generateDhParams(options: DhOptions): Promise<DhParams>;
export function generateFips186Params(options: Fips186Options): Promise<DhParams>;
export function importRsaKey(data: string | BinaryLike | KeyObject, options?: { passphrase?: string | BinaryLike }): RsaKey;
export function checkRsaKey(data: string | BinaryLike | KeyObject, options?: { passphrase?: string | BinaryLike }): RsaCheck;
export function importDhParams(data: string | BinaryLike): DhParams;
export function checkDhParams(data: string | BinaryLike): DhCheck;
export function namedGroup(name: NamedGroup): DhParams;

export type NamedGroup =
  | 'ffdhe2048' | 'ffdhe3072' | 'ffdhe4096' | 'ffdhe6144' | 'ffdhe8192'
  | 'modp_2048' | 'modp_3072' | 'modp_4096' | 'modp_6144' | 'modp_8192';

export const NAMED_GROUPS: readonly NamedGroup[];
export const DH_CHECK: Readonly<{
  P_NOT_PRIME: number;
  P_NOT_SAFE_PRIME: number;
  NOT_SUITABLE_GENERATOR: number;
  Q_NOT_PRIME: number;
  INVALID_Q: number;
  INVALID_J: number;
  MODULUS_TOO_SMALL: number;
  MODULUS_TOO_LARGE: number;
  Q_TOO_SMALL: number;
  SEED_INVALID: number;
}>;
/** The library's version, e.g. '0.2.0'. */
export const version: string;
/** Version, commit, GMP and the arithmetic this CPU takes. */
export const buildInfo: string;
