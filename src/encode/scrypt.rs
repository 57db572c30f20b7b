//! scrypt (RFC 7914) with its working memory in secure buffers.
//!
//! The `scrypt` crate keeps B, V and its scratch block in ordinary `Vec`s
//! and frees them unwiped. The mixed B it ends with is the salt of the
//! last PBKDF2 step: whoever reads it in freed heap (a core dump, a heap
//! inspection) can test passphrases at the cost of one PBKDF2-HMAC-SHA256
//! iteration each, without scrypt's memory-hard mixing. Here the
//! composition is ours and every intermediate lives in a `SecureBuf`
//! (locked, out of core dumps and fork children, wiped when freed); the
//! primitives are RustCrypto's: PBKDF2-HMAC-SHA256 (`pbkdf2`, `sha2`) and
//! the Salsa20/8 core (`salsa20`). Its small working values (a 64-byte
//! block, the core's state) are on the stack of the caller's secret
//! section (`secure::fiber::run_secret`), wiped when it ends, and zeroized
//! here as well.

use salsa20::cipher::consts::U4;
use salsa20::cipher::StreamCipherCore;
use salsa20::SalsaCore;
use zeroize::Zeroize;

use crate::error::{Error, Result};
use crate::secure::SecureBuf;

/// scrypt(`pass`, `salt`, N = 2^`log_n`, `r`, `p`) into `out` (RFC 7914
/// §6). `NoMemory` when the working memory (128·r·N + 128·r·p + 256·r
/// bytes) cannot be had; `InvalidArgument` for r or p of 0, log_n of 0 or
/// above 63, N not below 2^(16·r), or sizes that overflow. Callers bound
/// the memory first.
pub(crate) fn scrypt(
    pass: &[u8],
    salt: &[u8],
    log_n: u8,
    r: u32,
    p: u32,
    out: &mut [u8],
) -> Result<()> {
    // RFC 7914 §2: N < 2^(128·r/8), as OpenSSL checks too.
    if r == 0 || p == 0 || log_n == 0 || log_n >= 64 || (r < 4 && u32::from(log_n) >= 16 * r) {
        return Err(Error::InvalidArgument("scrypt parameters out of range"));
    }
    let too_large = Error::InvalidArgument("scrypt parameters too large");
    let n = 1usize.checked_shl(u32::from(log_n)).ok_or(too_large)?;
    let block = 128usize.checked_mul(r as usize).ok_or(too_large)?;
    let v_len = block.checked_mul(n).ok_or(too_large)?;
    let b_len = block.checked_mul(p as usize).ok_or(too_large)?;
    let mut b = SecureBuf::new(b_len)?;
    pbkdf2::pbkdf2_hmac::<sha2::Sha256>(pass, salt, 1, b.as_mut_slice());
    let mut v = SecureBuf::new(v_len)?;
    let mut scratch = SecureBuf::new(2 * block)?;
    for chunk in b.as_mut_slice().chunks_exact_mut(block) {
        ro_mix(chunk, v.as_mut_slice(), scratch.as_mut_slice(), n);
    }
    pbkdf2::pbkdf2_hmac::<sha2::Sha256>(pass, b.as_slice(), 1, out);
    Ok(())
}

/// ROMix (RFC 7914 §5) on one 128·r-byte block `b`, in place: `v` holds
/// N blocks, `scratch` two.
fn ro_mix(b: &mut [u8], v: &mut [u8], scratch: &mut [u8], n: usize) {
    let len = b.len();
    let (mut x, mut t) = scratch.split_at_mut(len);
    x.copy_from_slice(b);
    for vi in v.chunks_exact_mut(len) {
        vi.copy_from_slice(x);
        block_mix(x, t);
        std::mem::swap(&mut x, &mut t);
    }
    for _ in 0..n {
        let j = integerify(x) & (n - 1);
        for (xi, vi) in x.iter_mut().zip(&v[j * len..(j + 1) * len]) {
            *xi ^= vi;
        }
        block_mix(x, t);
        std::mem::swap(&mut x, &mut t);
    }
    b.copy_from_slice(x);
}

/// Integerify: the last 64-byte block's first eight bytes, little-endian
/// (N ≤ 2^63; the caller keeps j mod N).
fn integerify(x: &[u8]) -> usize {
    let last = &x[x.len() - 64..];
    u64::from_le_bytes(last[..8].try_into().expect("eight bytes")) as usize
}

/// BlockMix with Salsa20/8 (RFC 7914 §4): `input` is 2r 64-byte blocks;
/// `output` receives Y_0, Y_2, …, Y_{2r−2}, Y_1, Y_3, …, Y_{2r−1}.
fn block_mix(input: &[u8], output: &mut [u8]) {
    let blocks = input.len() / 64;
    let half = blocks / 2;
    let mut x = [0u32; 16];
    for (w, c) in x.iter_mut().zip(input[(blocks - 1) * 64..].chunks_exact(4)) {
        *w = u32::from_le_bytes(c.try_into().expect("four bytes"));
    }
    let mut y = salsa20::cipher::Block::<SalsaCore<U4>>::default();
    for i in 0..blocks {
        for (w, c) in x
            .iter_mut()
            .zip(input[i * 64..(i + 1) * 64].chunks_exact(4))
        {
            *w ^= u32::from_le_bytes(c.try_into().expect("four bytes"));
        }
        // The Salsa20/8 core of x (its keystream block for state x).
        SalsaCore::<U4>::from_raw_state(x).write_keystream_block(&mut y);
        let at = if i % 2 == 0 { i / 2 } else { half + i / 2 };
        output[at * 64..(at + 1) * 64].copy_from_slice(&y);
        for (w, c) in x.iter_mut().zip(y.chunks_exact(4)) {
            *w = u32::from_le_bytes(c.try_into().expect("four bytes"));
        }
    }
    x.zeroize();
    y.as_mut_slice().zeroize();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// RFC 7914 §12's test vectors (the fourth, N = 2^20, takes 1 GiB and
    /// is left to the agreement test's smaller sizes).
    #[test]
    fn rfc_7914_vectors() {
        // (passphrase, salt, log2 N, r, p, the 64-byte output)
        type Case = (&'static [u8], &'static [u8], u8, u32, u32, &'static str);
        let cases: [Case; 3] = [
            (
                b"",
                b"",
                4,
                1,
                1,
                "77 d6 57 62 38 65 7b 20 3b 19 ca 42 c1 8a 04 97 f1 6b 48 44 e3 07 4a e8 df df fa 3f ed e2 14 42
                 fc d0 06 9d ed 09 48 f8 32 6a 75 3a 0f c8 1f 17 e8 d3 e0 fb 2e 0d 36 28 cf 35 e2 0c 38 d1 89 06",
            ),
            (
                b"password",
                b"NaCl",
                10,
                8,
                16,
                "fd ba be 1c 9d 34 72 00 78 56 e7 19 0d 01 e9 fe 7c 6a d7 cb c8 23 78 30 e7 73 76 63 4b 37 31 62
                 2e af 30 d9 2e 22 a3 88 6f f1 09 27 9d 98 30 da c7 27 af b9 4a 83 ee 6d 83 60 cb df a2 cc 06 40",
            ),
            (
                b"pleaseletmein",
                b"SodiumChloride",
                14,
                8,
                1,
                "70 23 bd cb 3a fd 73 48 46 1c 06 cd 81 fd 38 eb fd a8 fb ba 90 4f 8e 3e a9 b5 43 f6 54 5d a1 f2
                 d5 43 29 55 61 3f 0f cf 62 d4 97 05 24 2a 9a f9 e6 1e 85 dc 0d 65 1e 40 df cf 01 7b 45 57 58 87",
            ),
        ];
        for (pass, salt, log_n, r, p, want) in cases {
            let mut out = [0u8; 64];
            scrypt(pass, salt, log_n, r, p, &mut out).unwrap();
            assert_eq!(out.to_vec(), hex(want), "N = 2^{log_n}, r = {r}, p = {p}");
        }
    }

    /// The same output as the `scrypt` crate for a spread of parameters,
    /// passphrases, salts and output lengths.
    #[test]
    fn agrees_with_the_scrypt_crate() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for (log_n, r, p) in [
            (1, 1, 1),
            (2, 1, 3),
            (5, 2, 2),
            (8, 3, 1),
            (10, 1, 4),
            (12, 8, 1),
        ] {
            let pass: Vec<u8> = (0..next() % 40).map(|_| next() as u8).collect();
            let salt: Vec<u8> = (0..next() % 33).map(|_| next() as u8).collect();
            let len = 1 + (next() % 80) as usize;
            let mut ours = vec![0u8; len];
            scrypt(&pass, &salt, log_n, r, p, &mut ours).unwrap();
            let mut theirs = vec![0u8; len];
            let params = ::scrypt::Params::new(log_n, r, p).unwrap();
            ::scrypt::scrypt(&pass, &salt, &params, &mut theirs).unwrap();
            assert_eq!(ours, theirs, "N = 2^{log_n}, r = {r}, p = {p}, {len} bytes");
        }
    }

    #[test]
    fn bad_parameters_are_refused() {
        let mut out = [0u8; 16];
        for (log_n, r, p) in [
            (0, 1, 1),
            (64, 1, 1),
            (4, 0, 1),
            (4, 1, 0),
            (16, 1, 1),
            (32, 2, 1),
        ] {
            assert!(matches!(
                scrypt(b"x", b"y", log_n, r, p, &mut out),
                Err(Error::InvalidArgument(_))
            ));
        }
        assert_eq!(out, [0u8; 16]);
        // 128·r·N beyond the address space, and beyond what can be mapped.
        assert!(scrypt(b"x", b"y", 62, 1 << 20, 1, &mut out).is_err());
        assert_eq!(
            scrypt(b"x", b"y", 50, 8, 1, &mut out).unwrap_err(),
            Error::NoMemory
        );
    }

    use crate::secure::freed;

    /// scrypt's B after ROMix (N = 2^14, r = 8, p = 1): the salt of its
    /// last PBKDF2 step, from which a passphrase is tested with one
    /// PBKDF2-HMAC-SHA256 iteration.
    fn mixed_b(pass: &[u8], salt: &[u8]) -> Vec<u8> {
        let mut b = vec![0u8; 1024];
        pbkdf2::pbkdf2_hmac::<sha2::Sha256>(pass, salt, 1, &mut b);
        // Wiped, so that no freed block of this test holds B either.
        let mut v = zeroize::Zeroizing::new(vec![0u8; 1024 << 14]);
        let mut scratch = zeroize::Zeroizing::new(vec![0u8; 2048]);
        ro_mix(&mut b, &mut v, &mut scratch, 1 << 14);
        b
    }

    /// How many 8-byte windows of `secret` (each once) occur in `hay`.
    fn found(hay: &[u8], secret: &[u8]) -> usize {
        let windows: std::collections::HashSet<&[u8]> = secret.windows(8).collect();
        let seen: std::collections::HashSet<&[u8]> =
            hay.windows(8).filter(|w| windows.contains(w)).collect();
        seen.len()
    }

    /// The salt of our scrypt EncryptedPrivateKeyInfo: the 16-byte octet
    /// string of the parameters after the scrypt OID (1.3.6.1.4.1.11591.4.11).
    fn salt_of(der: &[u8]) -> Vec<u8> {
        let oid = [
            0x06, 0x09, 0x2b, 0x06, 0x01, 0x04, 0x01, 0xda, 0x47, 0x04, 0x0b,
        ];
        let at = der.windows(oid.len()).position(|w| w == oid).unwrap() + oid.len();
        assert_eq!(der[at], 0x30);
        assert_eq!(&der[at + 2..at + 4], &[0x04, 0x10]);
        der[at + 4..at + 20].to_vec()
    }

    /// Exporting and importing a key encrypted with scrypt frees no heap
    /// block that holds scrypt's mixed B (the value that lets a passphrase
    /// be tested with one PBKDF2 iteration instead of scrypt's memory-hard
    /// work): every block freed during each call is logged by a test
    /// allocator and searched for 8-byte windows of it. The control: the
    /// `scrypt` crate's own function, which the export and import used
    /// before, frees B with it (its `Vec`s are not wiped), and the search
    /// must find it there.
    #[test]
    fn scrypt_frees_no_heap_block_holding_its_mixed_block() {
        let pki = [
            0x30, 0x1a, 0x02, 0x01, 0x00, 0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7,
            0x0d, 0x01, 0x01, 0x01, 0x05, 0x00, 0x04, 0x06, 1, 2, 3, 4, 5, 6,
        ];
        let pass = b"correct horse battery staple";
        let (enc, freed) = freed::record(|| {
            crate::encode::pbes2::encrypt(&pki, pass, crate::encode::pbes2::Kdf::Scrypt).unwrap()
        });
        let salt = salt_of(enc.as_slice());
        let mixed = mixed_b(pass, &salt);
        assert_eq!(
            found(&freed, &mixed),
            0,
            "the export freed scrypt's mixed B"
        );
        let (dec, freed) =
            freed::record(|| crate::encode::decrypt::decrypt_pkcs8(enc.as_slice(), pass).unwrap());
        assert_eq!(dec.as_slice(), &pki);
        assert_eq!(
            found(&freed, &mixed),
            0,
            "the import freed scrypt's mixed B"
        );
        // The control.
        let (_, freed) = freed::record(|| {
            let params = ::scrypt::Params::new(14, 8, 1).unwrap();
            let mut key = [0u8; 32];
            ::scrypt::scrypt(pass, &salt, &params, &mut key).unwrap();
        });
        assert!(
            found(&freed, &mixed) > 1000,
            "the scrypt crate's freed B was not found: the search is broken"
        );
    }
}
