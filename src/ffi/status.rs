//! Status codes, their texts, and the library version.

use std::ffi::c_char;

use crate::error::Error;

/// Result of every fallible primeforge function.
///
/// `PF_OK` is 0 and `PF_PENDING` says a job is still running; every other
/// value is an error. Values are fixed forever: a code is never renumbered
/// or reused, new codes are only appended.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum pf_status {
    /// Success.
    PF_OK = 0,
    /// A required pointer argument was NULL.
    PF_ERR_NULL_ARGUMENT = 1,
    /// An argument is out of range (size, exponent, thread count, unknown
    /// format, part, group, flag or generator, wrong seed length, ...).
    PF_ERR_INVALID_ARGUMENT = 2,
    /// A caller-supplied buffer is too small.
    PF_ERR_BUFFER_TOO_SMALL = 3,
    /// The progress callback returned non-zero; nothing was produced.
    PF_ERR_CANCELLED = 4,
    /// Memory or locked memory could not be allocated.
    PF_ERR_NO_MEMORY = 5,
    /// Worker threads could not be started.
    PF_ERR_THREADS = 6,
    /// The operating system's random source failed.
    PF_ERR_ENTROPY = 7,
    /// Internal error, including a Rust panic caught at the API boundary.
    /// The library remains usable.
    PF_ERR_INTERNAL = 8,
    /// Valid request that this build does not support.
    PF_ERR_UNSUPPORTED = 9,
    /// Input could not be decoded (malformed PEM/DER).
    PF_ERR_DECODE = 10,
    /// A consistency check failed (e.g. corrupted buffer, invalid parameters).
    PF_ERR_CHECK_FAILED = 11,
    /// The key or buffer was made by the parent of this `fork()` child. Its
    /// secure memory is wiped in the child (`MADV_WIPEONFORK`), so it holds
    /// nothing usable; free it with its `pf_*_free` function (which works)
    /// and make a new one.
    PF_ERR_FORKED = 12,
    /// Not an error: the job is still running (`pf_job_poll`,
    /// `pf_job_wait`, `pf_job_take_*`).
    PF_PENDING = 13,
    /// The object is of another kind than the call needs (e.g. taking DH
    /// parameters from a job that makes an RSA key).
    PF_ERR_WRONG_KIND = 14,
    /// The job's result was taken before; a result is handed out once.
    PF_ERR_ALREADY_TAKEN = 15,
    /// The key is encrypted and the passphrase given (or none) does not
    /// decrypt it, or the encrypted file is corrupted.
    PF_ERR_PASSPHRASE = 16,
    /// The call asked that every secret stay in the library's secret arena
    /// (`PF_RSA_SECURE_ARENA`), and this process could not keep them
    /// there: the arena's address space could not be reserved (an
    /// address-space limit such as `ulimit -v`, or a kernel without
    /// `MADV_WIPEONFORK`) or a block of secret limbs went to the C heap
    /// during the call. Nothing was produced; `pf_last_error_message` says
    /// which. See `pf_secure_memory_status`.
    PF_ERR_SECURE_MEMORY = 17,
}

impl From<Error> for pf_status {
    /// Maps a core error to its status, and records its text (which may
    /// name the argument) for `pf_last_error_message` on this thread.
    fn from(e: Error) -> Self {
        super::detail::record(&e.to_string());
        match e {
            Error::InvalidArgument(_) => pf_status::PF_ERR_INVALID_ARGUMENT,
            Error::BufferTooSmall => pf_status::PF_ERR_BUFFER_TOO_SMALL,
            Error::Cancelled => pf_status::PF_ERR_CANCELLED,
            Error::NoMemory => pf_status::PF_ERR_NO_MEMORY,
            Error::Threads => pf_status::PF_ERR_THREADS,
            Error::Entropy => pf_status::PF_ERR_ENTROPY,
            Error::Internal => pf_status::PF_ERR_INTERNAL,
            Error::Unsupported(_) => pf_status::PF_ERR_UNSUPPORTED,
            Error::Decode => pf_status::PF_ERR_DECODE,
            Error::CheckFailed => pf_status::PF_ERR_CHECK_FAILED,
            Error::Forked => pf_status::PF_ERR_FORKED,
            Error::WrongKind(_) => pf_status::PF_ERR_DECODE,
            Error::Passphrase => pf_status::PF_ERR_PASSPHRASE,
            Error::SecureMemory(_) => pf_status::PF_ERR_SECURE_MEMORY,
        }
    }
}

/// Static, NUL-terminated text for each status value, indexed by code.
const STATUS_TEXT: [&str; 18] = [
    "success\0",
    "a required pointer argument was NULL\0",
    "invalid argument\0",
    "buffer too small\0",
    "cancelled by the caller (progress callback or pf_job_cancel)\0",
    "out of memory\0",
    "could not start worker threads\0",
    "the operating system's random source failed\0",
    "internal error\0",
    "unsupported\0",
    "malformed input (PEM/DER decoding failed)\0",
    "consistency check failed\0",
    "the key or buffer was inherited through fork() and its secrets were wiped\0",
    "the job is still running\0",
    "the object is of another kind than the call needs\0",
    "the job's result was taken already\0",
    "wrong or missing passphrase for an encrypted key\0",
    "secrets cannot be kept in the library's secret arena in this process\0",
];

const UNKNOWN_STATUS: &str = "unknown status code\0";

/// The NUL-terminated text of `status` (generic for an unknown value).
pub(crate) fn status_text(status: u32) -> &'static str {
    STATUS_TEXT
        .get(status as usize)
        .copied()
        .unwrap_or(UNKNOWN_STATUS)
}

/// Returns a short English description of `status`.
///
/// Any value is accepted: an unknown value yields a generic text. The result
/// is never NULL, is statically allocated (never free it) and is valid for
/// the life of the process. Thread-safe.
#[no_mangle]
pub extern "C" fn pf_status_str(status: u32) -> *const c_char {
    super::guard_value(UNKNOWN_STATUS.as_ptr().cast(), || {
        status_text(status).as_ptr().cast()
    })
}

const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");

/// Returns the library version as "MAJOR.MINOR.PATCH".
///
/// Compare with the `PRIMEFORGE_VERSION_*` macros to detect a header/library
/// mismatch. Static text, never NULL, never free it. Thread-safe.
#[no_mangle]
pub extern "C" fn pf_version() -> *const c_char {
    super::guard_value(VERSION.as_ptr().cast(), || VERSION.as_ptr().cast())
}

/// Returns one line for bug reports: the library version, the commit it
/// was built from, the bundled GMP's version, and which arithmetic this CPU
/// takes (AVX-512 IFMA, BMI2/ADX or portable) with GMP's dispatch profile,
/// e.g. "primeforge 0.2.0 (commit 1c11ca8f0e2a), GMP 6.3.0, arithmetic
/// BMI2/ADX, GMP dispatch amd". Static text computed once, never NULL,
/// never free it. Thread-safe.
#[no_mangle]
pub extern "C" fn pf_build_info() -> *const c_char {
    static INFO: std::sync::OnceLock<std::ffi::CString> = std::sync::OnceLock::new();
    super::guard_value(VERSION.as_ptr().cast(), || {
        INFO.get_or_init(|| {
            std::ffi::CString::new(crate::build_info()).unwrap_or_else(|_| c"primeforge".into())
        })
        .as_ptr()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn every_code_has_its_own_text() {
        let mut seen = std::collections::HashSet::new();
        for code in 0..STATUS_TEXT.len() as u32 {
            let s = unsafe { CStr::from_ptr(pf_status_str(code)) }
                .to_str()
                .unwrap();
            assert!(!s.is_empty() && !s.contains("unknown"));
            assert!(seen.insert(s.to_owned()), "duplicate text {s}");
        }
        for code in [18u32, 99, u32::MAX] {
            let s = unsafe { CStr::from_ptr(pf_status_str(code)) }
                .to_str()
                .unwrap();
            assert_eq!(s, "unknown status code");
        }
    }

    #[test]
    fn texts_match_error_mapping() {
        let s = |st: pf_status| {
            unsafe { CStr::from_ptr(pf_status_str(st as u32)) }
                .to_str()
                .unwrap()
        };
        assert_eq!(
            s(Error::Cancelled.into()),
            "cancelled by the caller (progress callback or pf_job_cancel)"
        );
        assert_eq!(s(Error::InvalidArgument("x").into()), "invalid argument");
        assert_eq!(
            s(pf_status::PF_ERR_CHECK_FAILED),
            "consistency check failed"
        );
    }

    #[test]
    fn version_is_cargo_version() {
        let v = unsafe { CStr::from_ptr(pf_version()) }.to_str().unwrap();
        assert_eq!(v, env!("CARGO_PKG_VERSION"));
    }
}
