//! Password-protected private keys: PKCS#8 EncryptedPrivateKeyInfo with
//! PBES2 (RFC 8018) — scrypt or PBKDF2-HMAC-SHA256 and AES-CBC — through
//! RustCrypto's `pkcs5`, never hand-written cryptography.
//!
//! The plaintext PrivateKeyInfo is decrypted and encrypted in place inside
//! secure buffers, so it never sits in ordinary heap memory. Reading is
//! bounded like the rest of the checker: a file cannot ask for more than
//! [`MAX_PBKDF2_ITERATIONS`] PBKDF2 iterations or [`MAX_SCRYPT_MEMORY`]
//! bytes of scrypt memory (OpenSSL writes 2048 iterations or 16 MiB).

use der::asn1::OctetStringRef;
use der::Decode;
use pkcs8::pkcs5::pbes2;
use pkcs8::pkcs5::EncryptionScheme;
use pkcs8::EncryptedPrivateKeyInfoRef;

use super::der_to_secure;
use crate::error::{Error, Result};
use crate::secure::SecureBuf;

/// How a passphrase becomes a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Kdf {
    /// scrypt with N = 2^14, r = 8, p = 1 (16 MiB; OpenSSL 3's
    /// `openssl pkcs8 -scrypt` parameters) — the default.
    #[default]
    Scrypt,
    /// PBKDF2-HMAC-SHA256 with 600 000 iterations (OWASP 2023), for
    /// readers without scrypt (GnuTLS before 3.8, some Java).
    Pbkdf2Sha256,
}

/// Most PBKDF2 iterations a file may ask for (about 5 s here).
pub const MAX_PBKDF2_ITERATIONS: u32 = 10_000_000;
/// Most scrypt memory (128·r·N·p bytes) a file may ask for.
pub const MAX_SCRYPT_MEMORY: u64 = 256 << 20;

fn random<const N: usize>() -> Result<[u8; N]> {
    let mut b = [0u8; N];
    getrandom::fill(&mut b).map_err(|_| Error::Entropy)?;
    Ok(b)
}

/// Encrypts a PrivateKeyInfo (DER) under `passphrase` with AES-256-CBC and
/// `kdf` (fresh salt and IV from the OS); returns EncryptedPrivateKeyInfo
/// DER in secure memory.
pub fn encrypt(private_key_info: &[u8], passphrase: &[u8], kdf: Kdf) -> Result<SecureBuf> {
    let salt: [u8; 16] = random()?;
    let iv: [u8; 16] = random()?;
    let params = match kdf {
        Kdf::Scrypt => {
            let p = pkcs8::pkcs5::scrypt::Params::new(14, 8, 1).map_err(|_| Error::Internal)?;
            pbes2::Parameters::generate_scrypt_aes256cbc(p, &salt, iv)
        }
        Kdf::Pbkdf2Sha256 => {
            pbes2::Parameters::generate_pbkdf2_sha256_aes256cbc(600_000, &salt, iv)
        }
    }
    .map_err(|_| Error::Internal)?;
    // Plaintext plus one block of padding, encrypted in place.
    let len = private_key_info.len();
    let mut buf = SecureBuf::new(len + 16)?;
    buf.as_mut_slice()[..len].copy_from_slice(private_key_info);
    let ct_len = params
        .encrypt_in_place(passphrase, buf.as_mut_slice(), len)
        .map_err(|_| Error::Internal)?
        .len();
    let info = EncryptedPrivateKeyInfoRef {
        encryption_algorithm: EncryptionScheme::Pbes2(params),
        encrypted_data: OctetStringRef::new(&buf.as_slice()[..ct_len])
            .map_err(|_| Error::Internal)?,
    };
    der_to_secure(&info)
}

/// Whether `der` is an EncryptedPrivateKeyInfo (not decrypted).
pub fn is_encrypted_private_key_info(der: &[u8]) -> bool {
    EncryptedPrivateKeyInfoRef::from_der(der).is_ok()
}

/// Decrypts an EncryptedPrivateKeyInfo (DER) with `passphrase`; returns
/// the PrivateKeyInfo DER in secure memory. A wrong passphrase (or a
/// corrupted file) is [`Error::Passphrase`]; PBES1, an unknown cipher or
/// KDF, or a cost above the limits is [`Error::WrongKind`] naming it.
pub fn decrypt(encrypted: &[u8], passphrase: &[u8]) -> Result<SecureBuf> {
    let info = EncryptedPrivateKeyInfoRef::from_der(encrypted).map_err(|_| Error::Decode)?;
    let EncryptionScheme::Pbes2(params) = &info.encryption_algorithm else {
        return Err(Error::WrongKind(
            "a PBES1-encrypted key (DES/RC2, legacy): re-encrypt it, e.g. openssl pkcs8 -topk8 -v2 aes-256-cbc",
        ));
    };
    match &params.kdf {
        pbes2::Kdf::Pbkdf2(k) if k.iteration_count > MAX_PBKDF2_ITERATIONS => {
            return Err(Error::WrongKind(
                "an encrypted key asking for more than 10 000 000 PBKDF2 iterations",
            ))
        }
        pbes2::Kdf::Scrypt(s) => {
            let memory = 128u64
                .saturating_mul(u64::from(s.block_size))
                .saturating_mul(s.cost_parameter)
                .saturating_mul(u64::from(s.parallelization));
            if memory > MAX_SCRYPT_MEMORY {
                return Err(Error::WrongKind(
                    "an encrypted key asking for more than 256 MiB of scrypt memory",
                ));
            }
        }
        _ => {}
    }
    let data = info.encrypted_data.as_bytes();
    let mut buf = SecureBuf::from_slice(data)?;
    let plain = params
        .decrypt_in_place(passphrase, buf.as_mut_slice())
        .map_err(|e| match e {
            pkcs8::pkcs5::Error::UnsupportedAlgorithm { .. } => {
                Error::WrongKind("an encrypted key with a cipher or KDF primeforge does not read")
            }
            _ => Error::Passphrase,
        })?;
    let out = SecureBuf::from_slice(plain)?;
    // The right passphrase gives a PrivateKeyInfo; a wrong one that still
    // unpadded cleanly gives garbage.
    if pkcs8::PrivateKeyInfoRef::from_der(out.as_slice()).is_err() {
        return Err(Error::Passphrase);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_with_both_kdfs_and_a_wrong_passphrase() {
        // A PrivateKeyInfo-shaped DER (version 0, rsaEncryption, an octet
        // string): enough for the round trip.
        let pki = [
            0x30, 0x1a, 0x02, 0x01, 0x00, 0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7,
            0x0d, 0x01, 0x01, 0x01, 0x05, 0x00, 0x04, 0x06, 1, 2, 3, 4, 5, 6,
        ];
        assert!(pkcs8::PrivateKeyInfoRef::from_der(&pki).is_ok());
        for kdf in [Kdf::Scrypt, Kdf::Pbkdf2Sha256] {
            let enc = encrypt(&pki, b"correct horse", kdf).unwrap();
            assert!(is_encrypted_private_key_info(enc.as_slice()));
            let dec = decrypt(enc.as_slice(), b"correct horse").unwrap();
            assert_eq!(dec.as_slice(), &pki);
            assert_eq!(
                decrypt(enc.as_slice(), b"battery staple").unwrap_err(),
                Error::Passphrase
            );
            // Fresh salt and IV each time.
            let again = encrypt(&pki, b"correct horse", kdf).unwrap();
            assert_ne!(again.as_slice(), enc.as_slice());
        }
        assert_eq!(decrypt(&pki, b"x").unwrap_err(), Error::Decode);
    }
}
