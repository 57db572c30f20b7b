//! Writing password-protected private keys: PKCS#8 EncryptedPrivateKeyInfo
//! with PBES2 (RFC 8018) — scrypt or PBKDF2-HMAC-SHA256 and AES-256-CBC —
//! through RustCrypto's `pkcs5` (the parameters, PBKDF2 and the
//! encryption) and its primitives, never hand-written cryptography; scrypt
//! is composed in [`super::scrypt`] from RustCrypto's PBKDF2 and Salsa20/8
//! so that its working memory is secure. The plaintext PrivateKeyInfo is
//! encrypted in place inside a secure buffer.
//! Reading them, with every scheme OpenSSL reads: [`super::decrypt`].

use der::asn1::OctetStringRef;
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
    let ct_len = match kdf {
        // scrypt through our composition, whose working memory is secure
        // (`super::scrypt`); then AES-256-CBC with PKCS#7 padding, as
        // `pkcs5` would do it.
        Kdf::Scrypt => {
            let mut key = SecureBuf::new(32)?;
            super::scrypt::scrypt(passphrase, &salt, 14, 8, 1, key.as_mut_slice())?;
            use aes::cipher::{BlockModeEncrypt, KeyIvInit};
            cbc::Encryptor::<aes::Aes256>::new_from_slices(key.as_slice(), &iv)
                .map_err(|_| Error::Internal)?
                .encrypt_padded::<cbc::cipher::block_padding::Pkcs7>(buf.as_mut_slice(), len)
                .map_err(|_| Error::Internal)?
                .len()
        }
        Kdf::Pbkdf2Sha256 => params
            .encrypt_in_place(passphrase, buf.as_mut_slice(), len)
            .map_err(|_| Error::Internal)?
            .len(),
    };
    let info = EncryptedPrivateKeyInfoRef {
        encryption_algorithm: EncryptionScheme::Pbes2(params),
        encrypted_data: OctetStringRef::new(&buf.as_slice()[..ct_len])
            .map_err(|_| Error::Internal)?,
    };
    der_to_secure(&info)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::decrypt::{decrypt_pkcs8 as decrypt, is_encrypted_private_key_info};
    use der::Decode;

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
