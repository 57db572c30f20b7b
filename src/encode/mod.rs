//! Encoders: DER with the RustCrypto `der`/`pkcs1`/`pkcs8`/`spki` crates and
//! PEM (RFC 7468, OpenSSL's labels, 64 columns, LF, final newline) with
//! `pem-rfc7468`, whose base64 is constant-time. Every encoding is computed
//! to its exact length first and then written straight into a
//! [`SecureBuf`]; secrets never pass through an ordinary heap buffer.

use der::asn1::{BitStringRef, OctetStringRef, UintRef};
use der::Encode;
use pem_rfc7468::LineEnding;

use crate::error::{Error, Result};
use crate::rsa::RsaKey;
use crate::secure::SecureBuf;

/// Output formats for RSA keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RsaFormat {
    /// PKCS#8 PrivateKeyInfo, PEM "PRIVATE KEY".
    Pkcs8Pem,
    /// PKCS#8 PrivateKeyInfo, DER.
    Pkcs8Der,
    /// PKCS#1 RSAPrivateKey, PEM "RSA PRIVATE KEY".
    Pkcs1Pem,
    /// PKCS#1 RSAPrivateKey, DER.
    Pkcs1Der,
    /// X.509 SubjectPublicKeyInfo, PEM "PUBLIC KEY".
    SpkiPem,
    /// X.509 SubjectPublicKeyInfo, DER.
    SpkiDer,
    /// PKCS#1 RSAPublicKey, PEM "RSA PUBLIC KEY".
    RsaPublicPem,
    /// PKCS#1 RSAPublicKey, DER.
    RsaPublicDer,
}

fn der_err(_: der::Error) -> Error {
    Error::Internal
}

/// DER-encodes `value` into a secure buffer of exactly its length.
pub fn der_to_secure(value: &impl Encode) -> Result<SecureBuf> {
    let len =
        usize::try_from(value.encoded_len().map_err(der_err)?).map_err(|_| Error::Internal)?;
    let mut buf = SecureBuf::new(len)?;
    let written = value
        .encode_to_slice(buf.as_mut_slice())
        .map_err(der_err)?
        .len();
    if written != len {
        return Err(Error::Internal);
    }
    Ok(buf)
}

/// PEM-encodes `der` with `label` into a secure buffer (LF line ends, final
/// newline, no NUL).
pub fn pem_to_secure(label: &str, der: &[u8]) -> Result<SecureBuf> {
    let len = pem_rfc7468::encoded_len(label, LineEnding::LF, der).map_err(|_| Error::Internal)?;
    let mut buf = SecureBuf::new(len)?;
    let written = pem_rfc7468::encode(label, LineEnding::LF, der, buf.as_mut_slice())
        .map_err(|_| Error::Internal)?
        .len();
    if written != len {
        return Err(Error::Internal);
    }
    Ok(buf)
}

fn uint(bytes: &[u8]) -> Result<UintRef<'_>> {
    UintRef::new(bytes).map_err(der_err)
}

fn pkcs1_private_der(key: &RsaKey) -> Result<SecureBuf> {
    let e = key.e_bytes();
    let others = if key.other_primes().is_empty() {
        None
    } else {
        let mut v = Vec::with_capacity(key.other_primes().len());
        for o in key.other_primes() {
            v.push(pkcs1::OtherPrimeInfo {
                prime: uint(o.r.as_slice())?,
                exponent: uint(o.d.as_slice())?,
                coefficient: uint(o.t.as_slice())?,
            });
        }
        Some(v)
    };
    let pk = pkcs1::RsaPrivateKey {
        modulus: uint(key.n())?,
        public_exponent: uint(&e)?,
        private_exponent: uint(key.d())?,
        prime1: uint(key.p())?,
        prime2: uint(key.q())?,
        exponent1: uint(key.dp())?,
        exponent2: uint(key.dq())?,
        coefficient: uint(key.qinv())?,
        other_prime_infos: others,
    };
    der_to_secure(&pk)
}

fn pkcs1_public_der(key: &RsaKey) -> Result<SecureBuf> {
    let e = key.e_bytes();
    der_to_secure(&pkcs1::RsaPublicKey {
        modulus: uint(key.n())?,
        public_exponent: uint(&e)?,
    })
}

/// Encodes `key` in `format`.
pub fn rsa_export(key: &RsaKey, format: RsaFormat) -> Result<SecureBuf> {
    use RsaFormat::*;
    match format {
        Pkcs1Der => pkcs1_private_der(key),
        Pkcs1Pem => pem_to_secure("RSA PRIVATE KEY", pkcs1_private_der(key)?.as_slice()),
        Pkcs8Der | Pkcs8Pem => {
            let inner = pkcs1_private_der(key)?;
            let info = pkcs8::PrivateKeyInfoRef {
                algorithm: pkcs1::ALGORITHM_ID,
                private_key: OctetStringRef::new(inner.as_slice()).map_err(der_err)?,
                public_key: None,
            };
            let der = der_to_secure(&info)?;
            if format == Pkcs8Der {
                Ok(der)
            } else {
                pem_to_secure("PRIVATE KEY", der.as_slice())
            }
        }
        RsaPublicDer => pkcs1_public_der(key),
        RsaPublicPem => pem_to_secure("RSA PUBLIC KEY", pkcs1_public_der(key)?.as_slice()),
        SpkiDer | SpkiPem => {
            let inner = pkcs1_public_der(key)?;
            let spki = spki::SubjectPublicKeyInfoRef {
                algorithm: pkcs1::ALGORITHM_ID,
                subject_public_key: BitStringRef::from_bytes(inner.as_slice()).map_err(der_err)?,
            };
            let der = der_to_secure(&spki)?;
            if format == SpkiDer {
                Ok(der)
            } else {
                pem_to_secure("PUBLIC KEY", der.as_slice())
            }
        }
    }
}
