//! GMP memory functions that wipe: every block GMP frees, and the old
//! block of every reallocation, is overwritten with zeros (`zeroize`, which
//! the compiler may not elide) before it goes back to the C allocator.
//! Limbs of p, q, d and every intermediate therefore never linger in freed
//! heap.
//!
//! - Blocks come from the C library's `malloc`, like GMP's defaults, so a
//!   block allocated before the functions were installed is still freed
//!   correctly.
//! - The wipe covers the whole usable block (`malloc_usable_size`, or
//!   what the platform has: `secure::os::usable_size`), not only the size
//!   GMP passes; at least that size where the allocator cannot say.
//! - GMP cannot handle a NULL return and must not be unwound through: on
//!   allocation failure these functions abort the process, as GMP's own
//!   default functions do.
//! - The functions belong to *our* GMP, which is linked statically and not
//!   exported; a host program's own libgmp keeps its own functions (tested
//!   with a C program that links the system libgmp next to primeforge).

use std::cell::Cell;
use std::ffi::c_void;

use zeroize::Zeroize;

use crate::secure::arena;

thread_local! {
    /// Depth of [`secret_scope`] on this thread.
    static SECRET: Cell<u32> = const { Cell::new(0) };
}

/// Runs `f` with this thread's GMP allocations in the secret arena
/// ([`crate::secure::arena`]: wiped in a fork child, absent from core
/// dumps). An RSA generation runs in it on the calling thread and on every
/// worker, so the limbs of candidates, primes and key parts never sit in
/// the ordinary heap. Blocks reallocated outside the scope stay in the
/// arena; blocks allocated outside it (DH parameters, which are public and
/// must survive a fork) use the C heap.
pub(crate) fn secret_scope<T>(f: impl FnOnce() -> T) -> T {
    struct Exit;
    impl Drop for Exit {
        fn drop(&mut self) {
            let _ = SECRET.try_with(|c| c.set(c.get() - 1));
        }
    }
    SECRET.with(|c| c.set(c.get() + 1));
    let _exit = Exit;
    crate::secure::secret_work(f)
}

fn in_secret_scope() -> bool {
    SECRET.try_with(|c| c.get() > 0).unwrap_or(false)
}

/// A block of `size` bytes: from the arena when `secret` (and it has room),
/// else from malloc.
fn alloc_in(secret: bool, size: usize) -> *mut c_void {
    if secret {
        if let Some(p) = arena::alloc(size) {
            return p.as_ptr().cast();
        }
        arena::note_fallback();
    }
    // malloc may enter the kernel: not with a secret in the registers
    // (`secure::clearing`).
    crate::secure::clear_if_secret_work();
    // SAFETY: plain malloc; a non-zero size so the result is unique.
    let p = unsafe { libc::malloc(size.max(1)) };
    if p.is_null() {
        std::process::abort();
    }
    p
}

extern "C" fn gmp_alloc(size: usize) -> *mut c_void {
    alloc_in(in_secret_scope(), size)
}

/// Wipes and frees a block of at least `size` bytes from [`alloc_in`]
/// (or, before installation, from malloc).
unsafe fn release(p: *mut c_void, size: usize) {
    if arena::owns(p as *const u8) {
        // SAFETY: an arena block handed out by `alloc_in`, freed once.
        unsafe { arena::free(p.cast()) };
    } else {
        // SAFETY: a live malloc block, freed once.
        unsafe {
            wipe(p, size);
            // free may enter the kernel, and a reallocation has just
            // copied the block through the registers.
            crate::secure::clear_if_secret_work();
            libc::free(p);
        }
    }
}

/// Zeroes the whole usable block at `p` (non-NULL, from malloc, at least
/// `size` bytes).
unsafe fn wipe(p: *mut c_void, size: usize) {
    // SAFETY: `p` is a live malloc block of at least `size` bytes; its
    // usable size is ours to write.
    unsafe {
        let n = crate::secure::os::usable_size(p, size);
        std::slice::from_raw_parts_mut(p as *mut u8, n).zeroize();
    }
    #[cfg(test)]
    tests::after_wipe(p);
}

unsafe extern "C" fn gmp_realloc(p: *mut c_void, old: usize, new: usize) -> *mut c_void {
    // A secret block stays secret wherever it grows.
    let q = alloc_in(in_secret_scope() || arena::owns(p as *const u8), new);
    if !p.is_null() {
        // SAFETY: GMP passes a live block of at least `old` bytes; `q` has
        // at least `new` bytes; they are distinct blocks, and `p` is freed
        // once.
        unsafe {
            std::ptr::copy_nonoverlapping(p as *const u8, q as *mut u8, old.min(new));
            release(p, old);
        }
    }
    q
}

unsafe extern "C" fn gmp_free(p: *mut c_void, size: usize) {
    if !p.is_null() {
        // SAFETY: GMP frees blocks it got from gmp_alloc/gmp_realloc (or,
        // before installation, from malloc), once, with their size.
        unsafe { release(p, size) };
    }
}

/// Installs the wiping functions into our GMP (idempotent).
pub(crate) fn install() {
    // SAFETY: mp_set_memory_functions only stores the pointers; blocks
    // allocated earlier are malloc blocks, which gmp_free handles.
    unsafe {
        gmp_mpfr_sys::gmp::set_memory_functions(Some(gmp_alloc), Some(gmp_realloc), Some(gmp_free));
    }
}

/// Whether our GMP currently uses the wiping functions.
#[cfg(test)]
pub(crate) fn installed() -> bool {
    let mut f: gmp_mpfr_sys::gmp::free_function = None;
    // SAFETY: writes the current functions into our locals.
    unsafe {
        gmp_mpfr_sys::gmp::get_memory_functions(std::ptr::null_mut(), std::ptr::null_mut(), &mut f);
    }
    f.map(|f| f as usize) == Some(gmp_free as *const () as usize)
}

#[cfg(test)]
pub(crate) mod tests {
    use std::cell::RefCell;
    use std::ffi::c_void;

    use rug::Integer;

    thread_local! {
        /// (address, all-zero?) of blocks wiped on this thread while armed.
        static SEEN: RefCell<Option<Vec<(usize, bool)>>> = const { RefCell::new(None) };
    }

    /// The test hook: after a wipe, record whether the block is all zero.
    pub(crate) fn after_wipe(p: *mut c_void) {
        let _ = SEEN.try_with(|s| {
            if let Ok(mut s) = s.try_borrow_mut() {
                if let Some(v) = s.as_mut() {
                    // SAFETY: still a live block (freed right after).
                    let n = unsafe { crate::secure::os::usable_size(p, 0) };
                    let bytes = unsafe { std::slice::from_raw_parts(p as *const u8, n) };
                    v.push((p as usize, bytes.iter().all(|&b| b == 0)));
                }
            }
        });
    }

    #[test]
    fn freed_and_reallocated_gmp_blocks_are_zero() {
        crate::gmp::init();
        assert!(super::installed());
        SEEN.with(|s| *s.borrow_mut() = Some(Vec::new()));
        // A recognisable value, grown (realloc) and then dropped (free).
        let mut x = Integer::from(0xA5A5_A5A5_A5A5_A5A5u64);
        let limbs_addr = x.as_limbs().as_ptr() as usize;
        for _ in 0..6 {
            x *= 0xA5A5_A5A5_A5A5_A5A5u64; // forces reallocations
        }
        let grown_addr = x.as_limbs().as_ptr() as usize;
        drop(x);
        let seen = SEEN.with(|s| s.borrow_mut().take().unwrap());
        assert!(
            seen.iter().any(|&(a, _)| a == limbs_addr),
            "first block was not wiped"
        );
        assert!(
            seen.iter().any(|&(a, _)| a == grown_addr),
            "final block was not wiped"
        );
        assert!(
            seen.iter().all(|&(_, zero)| zero),
            "a freed block still held data"
        );
    }

    /// Inside a secret scope GMP's blocks come from the arena, and stay
    /// there when they grow outside it; outside, they come from malloc.
    #[test]
    fn secret_scope_routes_limbs_to_the_arena() {
        use crate::secure::arena;
        crate::gmp::init();
        let mut x = super::secret_scope(|| Integer::from(u64::MAX) * u64::MAX);
        assert!(arena::owns(x.as_limbs().as_ptr().cast()));
        for _ in 0..8 {
            x *= u64::MAX;
        }
        assert!(
            arena::owns(x.as_limbs().as_ptr().cast()),
            "grew out of the arena"
        );
        let y = Integer::from(u64::MAX) * u64::MAX;
        assert!(!arena::owns(y.as_limbs().as_ptr().cast()));
        // Nested scopes, and a panic inside one, leave the depth right.
        let _ = std::panic::catch_unwind(|| super::secret_scope(|| panic!("inside")));
        super::secret_scope(|| super::secret_scope(|| ()));
        assert!(!super::in_secret_scope());
    }
}
