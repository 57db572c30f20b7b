// Compiled (not run) by the workspace's tests/node.rs with `tsc --strict
// --noEmit`: the declarations in index.d.ts describe what index.js
// exports, and wrong uses are refused (each @ts-expect-error line must
// be an error, or tsc fails).
import { KeyObject, createHash } from 'node:crypto';
import * as pf from '..';

async function main(): Promise<void> {
  const ac = new AbortController();
  const key: pf.RsaKey = await pf.generateRsa({
    modulusLength: 3072,
    publicExponent: 65537,
    threads: 2,
    signal: ac.signal,
    onProgress: (p: pf.Progress) => console.log(p.candidates, p.primesFound, p.elapsedMs),
  });
  const pem: string = key.export();
  const der: Buffer = key.export({ format: 'der', type: 'pkcs1' });
  const enc: string = key.export({ cipher: 'aes-256-cbc', passphrase: 'pw', kdf: 'pbkdf2' });
  const spki: string = key.exportPublic();
  const spkiDer: Buffer = key.exportPublic({ format: 'der' });
  const ko: KeyObject = key.toKeyObject();
  const pub: KeyObject = key.toPublicKeyObject();
  const line: string = key.toOpenSSHPublicKey('me@host');
  const ssh: string = key.toOpenSSH({ comment: 'me@host', passphrase: Buffer.from('pw') });
  const report: pf.RsaCheck = key.check();
  const bits: number = key.modulusLength;
  const e: number | bigint = key.publicExponent;
  key.dispose();
  console.log(pem, der, enc, spki, spkiDer, ko, pub, line, ssh, report.problems.length, bits, e);

  const dh: pf.DhParams = await pf.generateDhParams({ primeLength: 2048, generator: 2, seed: new Uint8Array(32) });
  const dhPem: string = dh.export({ type: 'x942' });
  const dhDer: Buffer = dh.export({ format: 'der' });
  const node = dh.toDiffieHellman();
  node.generateKeys();
  const check: pf.DhCheck = pf.checkDhParams(dhPem);
  const isSafe: boolean = check.safePrime && (check.problems & pf.DH_CHECK.P_NOT_PRIME) === 0;
  const ff: pf.DhParams = pf.namedGroup('ffdhe3072');
  const names: readonly pf.NamedGroup[] = pf.NAMED_GROUPS;
  const fips = await pf.generateFips186Params({ primeLength: 2048, divisorLength: 256, hash: 'sha256', gindex: null });
  const seed: Buffer | undefined = fips.fips186?.seed;
  const imported: pf.RsaKey = pf.importRsaKey(pem, { passphrase: 'x' });
  const checked: pf.RsaCheck = pf.checkRsaKey(ko);
  console.log(dhDer, isSafe, ff.primeLength, names, seed, imported, checked, pf.version, pf.buildInfo,
    createHash('sha256').update(pf.importDhParams(dhDer).prime).digest('hex'));

  // @ts-expect-error modulusLength is required
  await pf.generateRsa({});
  // @ts-expect-error modulusLength is a number
  await pf.generateRsa({ modulusLength: '2048' });
  // @ts-expect-error no such export type
  key.export({ type: 'sec1' });
  // @ts-expect-error only AES-256-CBC encryption
  key.export({ cipher: 'des-ede3-cbc', passphrase: 'x' });
  // @ts-expect-error PEM exports are strings
  const notBuffer: Buffer = key.export({ format: 'pem' });
  // @ts-expect-error no such group
  pf.namedGroup('ffdhe1024');
  // @ts-expect-error primeLength is required
  await pf.generateDhParams({ generator: 2 });
  // @ts-expect-error not a hash FIPS 186-4 generation takes
  await pf.generateFips186Params({ primeLength: 2048, hash: 'md5' });
  // @ts-expect-error RsaKey objects are not constructed directly
  new pf.RsaKey();
  console.log(notBuffer);
}

main().catch((err: unknown) => {
  if (err instanceof Error && err.name === 'AbortError') return;
  throw err;
});
