//! The entry points for key and parameter files, above both `rsa`/`dh`
//! and `encode`: what a file holds, read once ([`crate::encode::sniff`]),
//! and checked or imported by the module it belongs to.

#![forbid(unsafe_code)]

use crate::dh::check::DhReport;
use crate::encode::sniff::{sniff_with, Content};
use crate::error::{Error, Result};
use crate::rsa::check::{PublicReport, RsaReport};

/// What a file held, checked.
pub enum Report {
    /// An RSA private key (PKCS#1, PKCS#8, encrypted, OpenSSH).
    RsaPrivate(RsaReport),
    /// An RSA public key (SubjectPublicKeyInfo or PKCS#1).
    RsaPublic(PublicReport),
    /// DH parameters (PKCS#3 or X9.42).
    Dh(DhReport),
}

/// Checks whatever key or parameters `data` holds (PEM or DER; an
/// encrypted key with `passphrase`), as `primeforge check` does: the file
/// is decoded once. An encrypted key without a passphrase is
/// [`Error::Passphrase`]; anything else unreadable is named
/// ([`Error::WrongKind`]) or [`Error::Decode`].
pub fn check(data: &[u8], passphrase: Option<&[u8]>) -> Result<Report> {
    crate::gmp::init();
    let (content, block) = sniff_with(data, passphrase)?.content_with_block();
    match content {
        Content::RsaPrivate { pkcs1, container } => {
            crate::rsa::check::check_pkcs1(pkcs1.as_slice(), container, block)
                .map(Report::RsaPrivate)
        }
        Content::RsaPublic { pkcs1, spki } => {
            crate::rsa::check::check_public(&pkcs1, spki, block).map(Report::RsaPublic)
        }
        Content::Dh { der, syntax } => {
            crate::dh::check::check_der(&der, syntax, block).map(Report::Dh)
        }
        Content::EncryptedKey { .. } => Err(Error::Passphrase),
    }
}

pub use crate::dh::import as import_dh;
pub use crate::rsa::import as import_rsa;
