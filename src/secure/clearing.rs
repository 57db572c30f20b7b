//! No heap call of the library's secret work enters the kernel with a
//! secret in the registers.
//!
//! Any `malloc`, `realloc` or `free` may make a system call — `mmap`
//! and `munmap` for a large block or (with `MALLOC_MMAP_THRESHOLD_=0`)
//! for every block, `brk`, `mprotect` when a thread's heap grows,
//! `madvise` when one shrinks — and a thread stopped in the kernel shows
//! its registers to a debugger, a core dump or another process's ptrace.
//! The library's own code, and the encoders and ciphers it calls
//! (`der`, `pkcs8`, `ssh-key`, the block ciphers), allocate in the middle
//! of secret work, a copy of a prime or of d often still in the vector
//! registers glibc's `memcpy` uses (zmm16–31 with AVX-512).
//!
//! So the library's Rust allocations go through [`ClearingAllocator`],
//! which clears the vector registers (and the caller-saved general ones,
//! which a call clobbers anyway) before every heap call made while the
//! thread does secret work: inside [`secret_work`], which the generations,
//! imports, exports, checks, the C entry points and the pool's threads
//! enter. Elsewhere it is the allocator it wraps, unchanged (one
//! thread-local read more). GMP's blocks outside the secret arena go
//! through `malloc` directly and are cleared for the same way
//! (`gmp::alloc`).
//!
//! The shared and static C libraries, the command-line tool and the
//! OpenSSL provider install it as their global allocator (the default
//! feature `clearing-allocator`). A Rust program that has an allocator of
//! its own turns the feature off and wraps its allocator:
//! `#[global_allocator] static A: ClearingAllocator<MyAlloc> =
//! ClearingAllocator::new(MyAlloc);`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    /// How many [`secret_work`] scopes this thread is in.
    static IN_FLIGHT: Cell<u32> = const { Cell::new(0) };
}

/// Runs `f` as secret work of this thread: its heap calls (and GMP's
/// outside the arena) clear the registers first.
pub(crate) fn secret_work<T>(f: impl FnOnce() -> T) -> T {
    struct Exit;
    impl Drop for Exit {
        fn drop(&mut self) {
            let _ = IN_FLIGHT.try_with(|c| c.set(c.get().saturating_sub(1)));
        }
    }
    let _ = IN_FLIGHT.try_with(|c| c.set(c.get().saturating_add(1)));
    let _exit = Exit;
    f()
}

/// Whether this thread is in [`secret_work`].
#[inline]
pub(crate) fn in_secret_work() -> bool {
    IN_FLIGHT.try_with(|c| c.get() > 0).unwrap_or(false)
}

/// Clears the registers where this thread does secret work: before a
/// call that may enter the kernel.
#[inline]
pub(crate) fn clear_if_secret_work() {
    if in_secret_work() {
        super::clear_registers();
    }
}

/// A global allocator over `A` (the system's by default) that clears the
/// vector registers before each of its calls made during the library's
/// secret work (see the module docs).
pub struct ClearingAllocator<A = System> {
    inner: A,
}

impl ClearingAllocator<System> {
    /// Over the system allocator.
    pub const fn system() -> Self {
        Self { inner: System }
    }
}

impl<A> ClearingAllocator<A> {
    /// Over `inner`.
    pub const fn new(inner: A) -> Self {
        Self { inner }
    }
}

// SAFETY: every request is forwarded unchanged to `inner`, which upholds
// GlobalAlloc's contract; clearing caller-saved registers before the
// call changes no memory and no value the caller keeps live (they are
// clobbered by any call).
unsafe impl<A: GlobalAlloc> GlobalAlloc for ClearingAllocator<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        clear_if_secret_work();
        // SAFETY: forwarded as is.
        unsafe { self.inner.alloc(layout) }
    }
    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        clear_if_secret_work();
        // SAFETY: forwarded as is.
        unsafe { self.inner.alloc_zeroed(layout) }
    }
    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        clear_if_secret_work();
        // SAFETY: forwarded as is.
        unsafe { self.inner.dealloc(ptr, layout) }
    }
    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        clear_if_secret_work();
        // SAFETY: forwarded as is.
        unsafe { self.inner.realloc(ptr, layout, new_size) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_work_nests_and_ends() {
        assert!(!in_secret_work());
        secret_work(|| {
            assert!(in_secret_work());
            secret_work(|| assert!(in_secret_work()));
            assert!(in_secret_work());
        });
        assert!(!in_secret_work());
        let r = std::panic::catch_unwind(|| secret_work(|| panic!("inside")));
        assert!(r.is_err());
        assert!(!in_secret_work(), "a panic ends the scope");
    }
}
