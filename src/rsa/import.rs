//! Reading an existing RSA private key into an [`RsaKey`], so that
//! everything primeforge does with a generated key (export, components,
//! checks) works on it too.

use crate::encode::sniff::{sniff_with, Content};
use crate::error::{Error, Result};

use super::check::parse_pkcs1;
use super::RsaKey;

/// Reads an RSA private key: PEM (as leniently as OpenSSL's reader: any
/// line length, CRLF, text around the block, the first key of a bundle)
/// or DER; PKCS#1, PKCS#8, or PKCS#8 encrypted with PBES2 (scrypt or
/// PBKDF2, AES) given its `passphrase`. The key's numbers are decoded in
/// secure memory and the key lives there, as a generated one does.
///
/// Refused: malformed input ([`Error::Decode`]); something else — a public
/// key, DH parameters, another algorithm — or a key whose component sizes
/// are impossible for its modulus, or whose public exponent does not fit
/// 64 bits ([`Error::WrongKind`], naming it); an encrypted key without the
/// right passphrase ([`Error::Passphrase`]). Whether the numbers are
/// consistent is [`super::check`]'s question, not this one's.
pub fn import(data: &[u8], passphrase: Option<&[u8]>) -> Result<RsaKey> {
    crate::gmp::init();
    // On a private stack (`secure::fiber::run_secret`), signals held.
    crate::secure::fiber::run_secret(|| crate::gmp::secret_scope(|| import_inner(data, passphrase)))
}

fn import_inner(data: &[u8], passphrase: Option<&[u8]>) -> Result<RsaKey> {
    let pkcs1 = match sniff_with(data, passphrase)?.content {
        Content::RsaPrivate { pkcs1, .. } => pkcs1,
        Content::RsaPublic { .. } => {
            return Err(Error::WrongKind("an RSA public key, not a private key"))
        }
        // Encrypted, and no passphrase was given.
        Content::EncryptedKey { .. } => return Err(Error::Passphrase),
        Content::Dh { .. } => {
            return Err(Error::WrongKind("DH parameters, not an RSA private key"))
        }
    };
    let parts = parse_pkcs1(pkcs1.as_slice())?;
    if !parts.sizes_ok() {
        return Err(Error::WrongKind(
            "an RSA key whose component sizes are impossible for its modulus (primeforge check says which)",
        ));
    }
    let e = parts.e.to_u64().ok_or(super::check::E_TOO_LARGE)?;
    RsaKey::from_parts(
        parts.n.significant_bits(),
        e,
        &parts.n,
        &parts.d,
        &parts.ps,
        &parts.exps,
        &parts.coeffs,
    )
}
