//! primeforge: fast, multi-threaded RSA key and Diffie-Hellman parameter
//! generation, for Rust and (through a C ABI) for C, C++ and FFI callers.
//!
//! Layers:
//! - the core, in pure Rust without raw pointers: [`error`], [`threads`],
//!   and (one module that must touch raw memory, but not GMP) [`secure`];
//! - [`ffi`], the thin C ABI that checks arguments, calls the core, maps
//!   errors to `pf_status` and boxes handles.
//!
//! The C header `include/primeforge.h` is generated from `ffi` by cbindgen.

// Every unsafe block in the library says why it is sound (tests are
// exempt: their unsafe blocks call the C ABI as a C caller would).
#![cfg_attr(not(test), deny(clippy::undocumented_unsafe_blocks))]

mod arith;
pub mod error;
pub mod ffi;
pub mod gmp;
pub mod secure;
pub mod threads;

mod fault;

pub use error::{Error, Result};
pub use secure::SecureBuf;
pub mod dh;
pub mod encode;
pub mod prime;
pub mod rsa;
