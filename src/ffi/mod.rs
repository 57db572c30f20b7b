//! The C ABI: a thin layer that checks arguments, calls the core, maps
//! errors to `pf_status` and boxes handles. Nothing here knows about GMP;
//! nothing in the core knows about C pointers.
//!
//! Every export runs inside `guard` (or `guard_value`), which catches a
//! Rust panic so it never unwinds into C: the call returns
//! `PF_ERR_INTERNAL` (or a documented neutral value) and the library stays
//! usable.

#![allow(non_camel_case_types)]
// The pointer contracts of every export are stated in its doc comment, which
// cbindgen copies into the header; a separate `# Safety` heading would only
// clutter the C documentation.
#![allow(clippy::missing_safety_doc)]

/// `TryFrom<u32>` for a C enumeration, from its variants' names only: the
/// numbers are written once, in the `pf_*` enum itself (which cbindgen
/// copies into the header), and nowhere else.
macro_rules! c_enum_from_u32 {
    ($c:ident { $($v:ident),+ $(,)? }) => {
        impl TryFrom<u32> for $c {
            type Error = pf_status;
            fn try_from(v: u32) -> Result<$c, pf_status> {
                $(
                    if v == $c::$v as u32 {
                        return Ok($c::$v);
                    }
                )+
                Err($crate::ffi::detail::invalid(concat!("unknown ", stringify!($c), " value")))
            }
        }
    };
}

// One file per header section. The header presents them in the order a
// reader needs them (status codes, buffers, options, RSA, DH): build.rs
// hands the files to cbindgen in that order, and tests/header.rs checks it.
mod buffer;
mod detail;
mod dh;
mod job;
mod options;
mod rsa;
mod status;

pub use buffer::*;
pub use detail::pf_last_error_message;
pub use dh::*;
pub use job::*;
pub use options::*;
pub use rsa::*;
pub use status::*;

use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `f`, turning a panic into `PF_ERR_INTERNAL`. The vector registers
/// are cleared before returning to C (see `secure::clear_registers`).
pub(crate) fn guard(f: impl FnOnce() -> pf_status) -> pf_status {
    detail::begin();
    let st =
        crate::secure::secret_work(|| catch_unwind(AssertUnwindSafe(f))).unwrap_or_else(panicked);
    detail::finish(st);
    crate::secure::clear_registers();
    st
}

/// The status of a caught panic; its message is kept for
/// `pf_last_error_message`.
fn panicked(payload: Box<dyn std::any::Any + Send>) -> pf_status {
    let what = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)");
    detail::record(&format!("internal error: a panic: {what}"));
    pf_status::PF_ERR_INTERNAL
}

/// Like [`guard`] for the generating exports: `f` runs below a frame from
/// which the stack it used is wiped afterwards
/// (`secure::with_wiped_stack`), with asynchronous signals held from the
/// first read of the caller's options (a seed is read and copied there)
/// to the return, the registers cleared before they are let through
/// (`secure::signals`). The generation itself decides where its secret
/// work runs (workers, or a private stack) and gives the caller's mask
/// back for the progress callback and while it waits.
pub(crate) fn guard_generate(f: impl FnOnce() -> pf_status) -> pf_status {
    detail::begin();
    let signals = crate::secure::signals::hold();
    let st = crate::secure::with_wiped_stack(|| {
        crate::secure::secret_work(|| catch_unwind(AssertUnwindSafe(f))).unwrap_or_else(panicked)
    });
    drop(signals);
    detail::finish(st);
    st
}

/// Like [`guard`] for exports that run GMP or handle secrets and call no
/// host code (check, import, export, components): `f` runs on a private
/// stack of the library's (`secure::fiber::run_secret`: shielded, wiped,
/// asynchronous signals held), so it needs nothing of the caller's stack.
pub(crate) fn guard_secret(f: impl FnOnce() -> pf_status) -> pf_status {
    detail::begin();
    let st = crate::secure::fiber::run_secret(|| {
        catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(panicked)
    });
    detail::finish(st);
    crate::secure::clear_registers();
    st
}

/// Runs `f` for exports that return a value instead of a status; a panic
/// yields `fallback`.
pub(crate) fn guard_value<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    let v = crate::secure::secret_work(|| catch_unwind(AssertUnwindSafe(f))).unwrap_or(fallback);
    crate::secure::clear_registers();
    v
}

/// The body of every `pf_*_free`: drops a handle that came from
/// `Box::into_raw` in this library (wiping what its type wipes); NULL is a
/// no-op; a panic in a destructor never crosses the ABI.
///
/// # Safety
/// `p` is NULL or a live handle of type `T` from this library, freed once.
pub(crate) unsafe fn free_handle<T>(p: *mut T) {
    guard_value((), || {
        if !p.is_null() {
            // SAFETY: per this function's contract.
            drop(unsafe { Box::from_raw(p) });
        }
    })
}

/// The bytes a C caller passed (`data` may be NULL only with `len` 0).
///
/// # Safety
/// `data` is NULL or readable for `len` bytes, for `'a`.
pub(crate) unsafe fn input<'a>(data: *const u8, len: usize) -> Result<&'a [u8], pf_status> {
    match (data.is_null(), len) {
        (_, 0) => Ok(&[]),
        (true, _) => Err(pf_status::PF_ERR_NULL_ARGUMENT),
        // SAFETY: per this function's contract.
        (false, _) => Ok(unsafe { std::slice::from_raw_parts(data, len) }),
    }
}

/// Writes `value` through a caller's out-pointer. Call only on success,
/// after the pointer was checked for NULL.
///
/// # Safety
/// `out` must be valid for a write of `T`.
pub(crate) unsafe fn write_out<T>(out: *mut T, value: T) {
    out.write(value);
}
