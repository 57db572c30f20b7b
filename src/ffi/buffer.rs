//! `pf_buffer`: the opaque secure buffer handed to C callers.

use super::{guard, guard_secret, guard_value, pf_status, write_out};
use crate::secure::SecureBuf;

/// An opaque, read-only (to the library's clients) block of bytes in secure
/// memory: guard pages on both sides, `mlock`ed when the system allows it,
/// excluded from core dumps, not inherited by `fork()` children, and wiped
/// before it is released. Every secret that leaves primeforge (private keys,
/// components) arrives in a `pf_buffer`.
pub struct pf_buffer {
    pub(crate) inner: SecureBuf,
}

impl pf_buffer {
    pub(crate) fn boxed(inner: SecureBuf) -> *mut pf_buffer {
        Box::into_raw(Box::new(pf_buffer { inner }))
    }
}

/// Allocates a zero-filled secure buffer of `len` bytes (0 to 1 GiB), for a
/// caller's own secrets (for example a seed for `pf_options`).
///
/// - `out` must not be NULL; on success `*out` receives a buffer that the
///   caller owns and releases with `pf_buffer_free`. On failure `*out` is
///   left untouched.
/// - Returns `PF_ERR_NULL_ARGUMENT` if `out` is NULL, `PF_ERR_NO_MEMORY` if
///   the memory cannot be mapped or `len` exceeds 1 GiB.
/// - Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn pf_buffer_new(len: usize, out: *mut *mut pf_buffer) -> pf_status {
    guard(|| {
        if out.is_null() {
            return pf_status::PF_ERR_NULL_ARGUMENT;
        }
        // SAFETY: `out` checked for NULL.
        unsafe { deliver(SecureBuf::new(len), out) }
    })
}

/// Allocates a secure buffer holding a copy of the `len` bytes at `data`
/// (0 to 1 GiB): the way for a binding or a host to move a secret it holds
/// (a seed for `pf_options`, a passphrase, a key's text) into secure
/// memory without leaving it anywhere on the way. The copy runs with
/// asynchronous signals blocked on the calling thread and the vector and
/// caller-saved registers cleared before they are unblocked, so no signal
/// handler's frame (Go's runtime, a profiler) receives the bytes; copying
/// them with `memcpy` into `pf_buffer_data_mut` leaves them in registers
/// that the next signal writes to its frame.
///
/// - `data` is read during the call only, `len` bytes; it may be NULL
///   only when `len` is 0.
/// - `out` must not be NULL; on success `*out` receives a buffer that the
///   caller owns and releases with `pf_buffer_free`. On failure `*out` is
///   left untouched.
/// - Returns `PF_ERR_NULL_ARGUMENT` if `out` is NULL or `data` is NULL
///   with `len` > 0, `PF_ERR_NO_MEMORY` if the memory cannot be mapped or
///   `len` exceeds 1 GiB.
/// - Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn pf_buffer_copy(
    data: *const u8,
    len: usize,
    out: *mut *mut pf_buffer,
) -> pf_status {
    guard_secret(|| {
        if out.is_null() {
            super::detail::record("null argument: out is NULL");
            return pf_status::PF_ERR_NULL_ARGUMENT;
        }
        if len > crate::secure::SECURE_BUF_MAX_LEN {
            // Refused before the bytes are looked at.
            super::detail::record("no memory: len is more than 1 GiB");
            return pf_status::PF_ERR_NO_MEMORY;
        }
        // SAFETY: the caller's contract for `data`.
        let bytes = match unsafe { super::input(data, len) } {
            Ok(b) => b,
            Err(st) => {
                super::detail::record("null argument: data is NULL and len is not 0");
                return st;
            }
        };
        // SAFETY: `out` checked for NULL.
        unsafe { deliver(SecureBuf::from_slice(bytes), out) }
    })
}

/// Returns a pointer to the buffer's bytes, valid until `pf_buffer_free`.
///
/// The bytes are exactly `pf_buffer_len(buf)` long and are NOT
/// NUL-terminated, even when they hold PEM text. The last byte is followed by
/// an inaccessible guard page: reading past the end crashes instead of
/// leaking. For a zero-length buffer the pointer is non-NULL but must not be
/// dereferenced. Returns NULL if `buf` is NULL, or if it was made by the
/// parent of this `fork()` child (its bytes were wiped by the kernel; see
/// `PF_ERR_FORKED` and `pf_buffer_check`). The buffer remains owned by the
/// caller. Safe to call from several threads at once.
#[no_mangle]
pub unsafe extern "C" fn pf_buffer_data(buf: *const pf_buffer) -> *const u8 {
    guard_value(std::ptr::null(), || {
        // SAFETY: the caller passes NULL or a live buffer from this library.
        match unsafe { buf.as_ref() } {
            Some(b) if !b.inner.is_inherited() => b.inner.as_slice().as_ptr(),
            _ => std::ptr::null(),
        }
    })
}

/// Returns a writable pointer to the buffer's bytes (see `pf_buffer_data`).
///
/// Meant for buffers from `pf_buffer_new`. Writing before the first byte
/// corrupts a canary that `pf_buffer_free` checks (the process is then
/// aborted); writing past the last byte faults. Returns NULL if `buf` is
/// NULL or inherited through `fork()`. Not thread-safe with respect to
/// other users of the same buffer.
#[no_mangle]
pub unsafe extern "C" fn pf_buffer_data_mut(buf: *mut pf_buffer) -> *mut u8 {
    guard_value(std::ptr::null_mut(), || {
        // SAFETY: the caller passes NULL or a live buffer it owns exclusively.
        match unsafe { buf.as_mut() } {
            Some(b) if !b.inner.is_inherited() => b.inner.as_mut_slice().as_mut_ptr(),
            _ => std::ptr::null_mut(),
        }
    })
}

/// Returns the number of bytes in the buffer; 0 if `buf` is NULL or was
/// inherited through `fork()`. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn pf_buffer_len(buf: *const pf_buffer) -> usize {
    guard_value(0, || {
        // SAFETY: the caller passes NULL or a live buffer from this library.
        unsafe { buf.as_ref() }
            .filter(|b| !b.inner.is_inherited())
            .map_or(0, |b| b.inner.len())
    })
}

/// Returns true if the buffer's pages are locked in RAM (`mlock` succeeded),
/// so they cannot be written to swap. Locking is best effort: it fails when
/// `RLIMIT_MEMLOCK` is exhausted, and the buffer is then still guarded,
/// non-dumpable and wiped on free. Returns false if `buf` is NULL.
/// Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn pf_buffer_locked(buf: *const pf_buffer) -> bool {
    guard_value(false, || {
        // SAFETY: the caller passes NULL or a live buffer from this library.
        unsafe { buf.as_ref() }.is_some_and(|b| !b.inner.is_inherited() && b.inner.is_locked())
    })
}

/// Checks the canary in front of the buffer's data.
///
/// Returns `PF_OK` if it is intact, `PF_ERR_CHECK_FAILED` if something wrote
/// before the start of the buffer, `PF_ERR_NULL_ARGUMENT` if `buf` is NULL,
/// `PF_ERR_FORKED` if the buffer was made by the parent of this `fork()`
/// child (its bytes were wiped by the kernel: call this to tell an
/// inherited buffer from a live one). Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn pf_buffer_check(buf: *const pf_buffer) -> pf_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a live buffer from this library.
        match unsafe { buf.as_ref() } {
            None => pf_status::PF_ERR_NULL_ARGUMENT,
            Some(b) if b.inner.is_inherited() => pf_status::PF_ERR_FORKED,
            Some(b) if b.inner.canary_intact() => pf_status::PF_OK,
            Some(_) => pf_status::PF_ERR_CHECK_FAILED,
        }
    })
}

/// Wipes the buffer's bytes with zeros, then unlocks and unmaps its memory.
///
/// `buf` may be NULL (no-op); a buffer inherited through `fork()` is freed
/// normally. Freeing a buffer twice is undefined behaviour (as with `free`).
/// After this call `buf` and every pointer from `pf_buffer_data` are
/// invalid. If the canary in front of the data was
/// overwritten (a buffer underflow by the caller), the contents are still
/// wiped and then the process is aborted, as libsodium's `sodium_free`
/// does: memory is corrupt. Not thread-safe for the same buffer.
#[no_mangle]
pub unsafe extern "C" fn pf_buffer_free(buf: *mut pf_buffer) {
    // SAFETY: the caller passes NULL or a live handle, freed once.
    unsafe { super::free_handle(buf) }
}

/// The body of every export that reads a handle and hands a new buffer
/// out (`pf_*_export`, `pf_*_component`): NULL handle or `out` is
/// `PF_ERR_NULL_ARGUMENT`; otherwise `f` makes the buffer or names the
/// status, and `*out` is written only on success.
///
/// # Safety
/// `handle` is NULL or a live handle; `out` is NULL or valid for a write.
pub(crate) unsafe fn buffer_from<H>(
    handle: *const H,
    out: *mut *mut pf_buffer,
    f: impl FnOnce(&H) -> Result<crate::Result<SecureBuf>, pf_status>,
) -> pf_status {
    // SAFETY: per this function's contract.
    let (Some(h), false) = (unsafe { handle.as_ref() }, out.is_null()) else {
        return pf_status::PF_ERR_NULL_ARGUMENT;
    };
    match f(h) {
        // SAFETY: `out` checked for NULL.
        Ok(made) => unsafe { deliver(made, out) },
        Err(st) => st,
    }
}

/// Hands a core result to C: on success boxes the buffer into `*out` and
/// returns PF_OK; on failure leaves `*out` untouched and maps the error.
///
/// # Safety
/// `out` must be non-NULL and valid for a write.
pub(crate) unsafe fn deliver(res: crate::Result<SecureBuf>, out: *mut *mut pf_buffer) -> pf_status {
    match res {
        Ok(buf) => {
            // SAFETY: the caller checked `out` for NULL.
            unsafe { write_out(out, pf_buffer::boxed(buf)) };
            pf_status::PF_OK
        }
        Err(e) => e.into(),
    }
}

/// Bits of `pf_secure_memory_status`'s answer.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum pf_secure_flag {
    /// The secret arena is in use in this process: the GMP blocks of every
    /// RSA generation, key check and import (candidates, primes, key parts)
    /// and the library's own limb scratch live in memory advised
    /// `MADV_WIPEONFORK` (zeros in a `fork()` child) and `MADV_DONTDUMP`
    /// (left out of core dumps). Absent when its address space could not
    /// be reserved (an address-space limit such as `ulimit -v`, or a
    /// kernel without `MADV_WIPEONFORK`): such blocks then live on the C
    /// heap, wiped when freed but visible to a fork child or a core dump
    /// while in use.
    PF_SECURE_ARENA = 1,
    /// Since the process started, at least one block of secret limbs went
    /// to the C heap (the arena unavailable or full).
    PF_SECURE_FALLBACK = 2,
}

/// Tells where this process keeps secrets while they are being computed
/// with: on success `*out` receives `pf_secure_flag` bits. The first call
/// reserves the secret arena's address space (64 MiB, committed only as
/// used) if no generation has yet, so the answer holds for what follows;
/// to make a generation fail rather than fall back, pass
/// `PF_RSA_SECURE_ARENA`.
///
/// - `out` must not be NULL (`PF_ERR_NULL_ARGUMENT`); it is written only
///   on success.
/// - Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn pf_secure_memory_status(out: *mut u32) -> pf_status {
    guard(|| {
        if out.is_null() {
            return pf_status::PF_ERR_NULL_ARGUMENT;
        }
        let (arena, fallbacks) = crate::secure::memory_status();
        let mut bits = 0;
        if arena {
            bits |= pf_secure_flag::PF_SECURE_ARENA as u32;
        }
        if fallbacks > 0 {
            bits |= pf_secure_flag::PF_SECURE_FALLBACK as u32;
        }
        // SAFETY: checked non-NULL; the caller passes a writable u32.
        unsafe { write_out(out, bits) };
        pf_status::PF_OK
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault;

    #[test]
    fn new_and_free() {
        let mut b: *mut pf_buffer = std::ptr::null_mut();
        unsafe {
            assert_eq!(pf_buffer_new(100, &mut b), pf_status::PF_OK);
            assert_eq!(pf_buffer_len(b), 100);
            let p = pf_buffer_data_mut(b);
            p.write(7);
            assert_eq!(*pf_buffer_data(b), 7);
            assert_eq!(pf_buffer_check(b), pf_status::PF_OK);
            pf_buffer_free(b);
            pf_buffer_free(std::ptr::null_mut());
        }
    }

    #[test]
    fn null_arguments() {
        unsafe {
            assert_eq!(
                pf_buffer_new(1, std::ptr::null_mut()),
                pf_status::PF_ERR_NULL_ARGUMENT
            );
            assert!(pf_buffer_data(std::ptr::null()).is_null());
            assert!(pf_buffer_data_mut(std::ptr::null_mut()).is_null());
            assert_eq!(pf_buffer_len(std::ptr::null()), 0);
            assert!(!pf_buffer_locked(std::ptr::null()));
            assert_eq!(
                pf_buffer_check(std::ptr::null()),
                pf_status::PF_ERR_NULL_ARGUMENT
            );
        }
    }

    #[test]
    fn too_large_leaves_out_untouched() {
        let sentinel = 0x1234usize as *mut pf_buffer;
        let mut b = sentinel;
        unsafe {
            assert_eq!(
                pf_buffer_new(usize::MAX, &mut b),
                pf_status::PF_ERR_NO_MEMORY
            );
        }
        assert_eq!(b, sentinel);
    }

    /// A panic inside the core comes back as PF_ERR_INTERNAL, `*out` stays
    /// untouched, and the library keeps working afterwards.
    #[test]
    fn panic_in_core_becomes_internal_error() {
        let sentinel = 0x5678usize as *mut pf_buffer;
        let mut b = sentinel;
        fault::arm("secure_alloc");
        let st = unsafe { pf_buffer_new(32, &mut b) };
        assert_eq!(st, pf_status::PF_ERR_INTERNAL);
        assert_eq!(b, sentinel);
        // The panic's message reaches pf_last_error_message.
        let msg = unsafe { std::ffi::CStr::from_ptr(super::super::pf_last_error_message()) };
        let msg = msg.to_str().unwrap();
        assert!(msg.starts_with("internal error: a panic: "), "{msg}");
        assert!(msg.contains("secure_alloc"), "{msg}");
        // Still alive and working.
        let st = unsafe { pf_buffer_new(32, &mut b) };
        assert_eq!(st, pf_status::PF_OK);
        unsafe { pf_buffer_free(b) };
    }
}
