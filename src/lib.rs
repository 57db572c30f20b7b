//! primeforge: fast, multi-threaded RSA key and Diffie-Hellman parameter
//! generation, for Rust and (through a C ABI) for C, C++ and FFI callers.
//!
//! ## Where each rule lives
//! - [`rsa`], [`dh`]: key and parameter generation (FIPS 186-5 A.1.3;
//!   safe primes by a combined sieve and Pocklington), named groups, and
//!   the checks of existing keys and parameters;
//! - [`prime`]: the seeded ChaCha20 streams, trial division, Miller–Rabin,
//!   the strong Lucas test and the deterministic parallel search;
//! - [`encode`]: DER and PEM out of plain parts, and [`encode::sniff`], the
//!   one reader of key and parameter files (it knows nothing of `rsa` or
//!   `dh`);
//! - [`file`]: the entry points for files, above both: check whatever a
//!   file holds, import a key or parameters;
//! - [`job`]: background generations on library-owned threads, with a
//!   descriptor that becomes readable when they end (for event loops);
//! - [`gmp`]: the only module that calls raw GMP (its memory functions,
//!   the completion of its CPU dispatch table, constant-time `mpn` code);
//! - `secure`: secret memory (secure buffers, the secret arena, stack
//!   shields and wipes, register clearing, wiped streams);
//! - `threads`: private pools whose workers are shielded and joined;
//! - [`ffi`]: the C ABI, which checks arguments, calls the above, maps
//!   errors to `pf_status` and boxes handles. The header
//!   `include/primeforge.h` is generated from it by cbindgen.
//!
//! ## One GMP per program
//! The C library links GMP statically and exports none of it, so a C host
//! with its own libgmp is unaffected. A *Rust* program that uses this
//! crate and `rug` (or `gmp-mpfr-sys`) shares one GMP with it (Cargo links
//! one copy): primeforge's memory functions (every freed block wiped,
//! secret blocks in the secret arena) and its completion of GMP's CPU
//! dispatch table then apply to that program's GMP arithmetic too. Both are
//! GMP's own contracts kept (the same results, measured faster), but keep
//! them in mind, e.g. when comparing timings of `rug` with and without
//! primeforge in the process.
//!
//! ## The global allocator
//! Any heap call may enter the kernel (glibc maps, unmaps, grows and
//! trims its heaps with system calls), where a stopped thread's registers
//! are read at leisure. With the default feature `clearing-allocator`
//! this crate installs [`ClearingAllocator`] (the system allocator, with
//! the registers cleared before each heap call made during the library's
//! secret work) as the global allocator of whatever it is linked into. A
//! program with a global allocator of its own turns the feature off
//! (`default-features = false`) and wraps its allocator:
//! `#[global_allocator] static A: primeforge::ClearingAllocator<MyAlloc> =
//! primeforge::ClearingAllocator::new(MyAlloc);`.
//!
//! `prime`, `rsa`, `dh` and `encode` contain no `unsafe` (forbidden);
//! `gmp`, `secure`, `ffi`, `job` (its descriptor) and a word-division
//! helper do, each block with
//! its safety argument.
//!
//! ## An RSA key
//! ```
//! use primeforge::encode::RsaFormat;
//! use primeforge::prime::Options;
//!
//! let mut opts = Options { threads: 2, ..Default::default() };
//! let (key, stats) = primeforge::rsa::generate(1024, 65537, 2, &mut opts)?;
//! let pem = key.export(RsaFormat::Pkcs8Pem)?;
//! assert!(pem.as_slice().starts_with(b"-----BEGIN PRIVATE KEY-----"));
//! assert!(stats.exponentiations > 0);
//! # Ok::<(), primeforge::Error>(())
//! ```
//!
//! ## DH parameters, checked as a file
//! ```
//! use primeforge::encode::DhFormat;
//!
//! let mut opts = primeforge::prime::Options::default();
//! let (params, _) = primeforge::dh::generate(512, 2, 0, &mut opts)?;
//! let pem = params.export(DhFormat::Pkcs3Pem)?;
//! let report = primeforge::dh::check::check_encoded(pem.as_slice())?;
//! assert_eq!(report.problems, 0);
//! # Ok::<(), primeforge::Error>(())
//! ```

// Every unsafe block in the library says why it is sound (tests are
// exempt: their unsafe blocks call the C ABI as a C caller would).
#![cfg_attr(not(test), deny(clippy::undocumented_unsafe_blocks))]
#![warn(missing_docs)]
#![warn(unreachable_pub)]

mod arith;
pub mod error;
pub mod ffi;
/// The door to GMP. Public only for the benchmarks and the dispatch test
/// of this workspace: hidden from the documentation and not covered by
/// semver.
#[doc(hidden)]
pub mod gmp;
pub(crate) mod secure;
pub(crate) mod threads;

#[cfg(test)]
mod capability;
mod fault;
mod work;

pub use error::{Error, Result};

/// What a bug report needs to say about this build and machine, one line:
/// the version, the commit it was built from, the bundled GMP's version
/// and which arithmetic this CPU takes — AVX-512 IFMA for the first test
/// on RSA candidates, else BMI2/ADX assembly, else portable code — with
/// GMP's dispatch profile (see `gmp::dispatch_profile`).
pub fn build_info() -> String {
    let gmp_version = {
        gmp::init();
        // SAFETY: GMP's version string is a static NUL-terminated C string.
        unsafe { std::ffi::CStr::from_ptr(gmp_mpfr_sys::gmp::version) }
            .to_string_lossy()
            .into_owned()
    };
    let path = if arith::ifma_available() {
        "AVX-512 IFMA"
    } else if arith::adx_available() {
        "BMI2/ADX"
    } else {
        "portable"
    };
    format!(
        "primeforge {} (commit {}), GMP {gmp_version}, arithmetic {path}, GMP dispatch {}",
        env!("CARGO_PKG_VERSION"),
        env!("PRIMEFORGE_COMMIT"),
        gmp::dispatch_profile()
    )
}
pub use secure::{ClearingAllocator, SecureBuf};

/// The library's heap calls clear the registers first where it does
/// secret work (see [`ClearingAllocator`]). On with the default feature
/// `clearing-allocator`; a Rust program with an allocator of its own
/// turns the feature off and wraps its allocator in [`ClearingAllocator`].
#[cfg(all(feature = "clearing-allocator", not(test)))]
#[global_allocator]
static GLOBAL: ClearingAllocator = ClearingAllocator::system();

/// Joins every worker thread parked between generations now, instead of
/// after their quiet period (see [`prime::Options::threads`] and
/// [`prime::Options::per_call_threads`]); returns how many were joined.
/// Before unloading code that contains this crate (a provider module), or
/// entering a sandbox. Thread-safe.
pub fn release_workers() -> usize {
    threads::release_idle()
}

pub mod dh;
pub mod encode;
pub mod file;
pub mod job;
pub mod prime;
pub mod rsa;

#[cfg(test)]
mod layers {
    /// `encode` speaks plain parts and never reaches up into `rsa` or `dh`,
    /// which call it (the dependency runs one way; before, `encode` took
    /// `RsaKey` and `DhParams` while `rsa` and `dh` called `encode`).
    #[test]
    fn encode_does_not_depend_on_rsa_or_dh() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/encode");
        let mut offending = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            for (i, line) in text.lines().enumerate() {
                if ["crate::rsa", "crate::dh", "super::super::rsa"]
                    .iter()
                    .any(|m| line.contains(m))
                {
                    offending.push(format!("{}:{}: {line}", path.display(), i + 1));
                }
            }
        }
        assert!(offending.is_empty(), "{}", offending.join("\n"));
    }
}
