//! The core's error type. The FFI layer maps each variant to one `pf_status`.

use std::fmt;

/// Everything that can go wrong inside primeforge's core.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// An argument is out of range; the text names which one.
    InvalidArgument(&'static str),
    /// A caller-supplied buffer is too small.
    BufferTooSmall,
    /// The caller's progress callback asked to stop.
    Cancelled,
    /// Memory (or secure memory) could not be obtained.
    NoMemory,
    /// A worker thread could not be started.
    Threads,
    /// The operating system's random source failed.
    Entropy,
    /// An internal invariant failed (a bug).
    Internal,
    /// The request is valid but not supported (by this build, or for this
    /// object); the text says what.
    Unsupported(&'static str),
    /// Input bytes could not be decoded.
    Decode,
    /// A consistency check on generated or supplied material failed.
    CheckFailed,
    /// The object was made by the parent of this `fork()` child: its secure
    /// memory was wiped by the kernel, so it holds nothing usable.
    Forked,
    /// The input is something recognised that is not what was asked for
    /// (a public key, an encrypted or RSA-PSS key, a certificate, …); the
    /// text names it.
    WrongKind(&'static str),
    /// An encrypted key could not be decrypted with the passphrase given
    /// (wrong, missing, or the file is corrupted).
    Passphrase,
    /// The caller asked for secrets to stay in the secret arena (fork-wiped,
    /// absent from core dumps), and this process cannot give it; the text
    /// says why.
    SecureMemory(&'static str),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidArgument(what) => write!(f, "invalid argument: {what}"),
            Error::BufferTooSmall => f.write_str("buffer too small"),
            Error::Cancelled => f.write_str("cancelled by the caller"),
            Error::NoMemory => f.write_str("out of memory"),
            Error::Threads => f.write_str("could not start worker threads"),
            Error::Entropy => f.write_str("the operating system's random source failed"),
            Error::Internal => f.write_str("internal error"),
            Error::Unsupported(what) => write!(f, "unsupported: {what}"),
            Error::Decode => f.write_str("malformed input"),
            Error::CheckFailed => f.write_str("consistency check failed"),
            Error::WrongKind(what) => write!(f, "{what}"),
            Error::Passphrase => f.write_str(
                "the passphrase does not decrypt the key (wrong or missing passphrase, or a corrupted file)",
            ),
            Error::SecureMemory(why) => write!(f, "secure memory unavailable: {why}"),
            Error::Forked => {
                f.write_str("the object was inherited through fork(): its secrets were wiped")
            }
        }
    }
}

impl std::error::Error for Error {}

/// Result alias used throughout the core.
pub type Result<T> = std::result::Result<T, Error>;
