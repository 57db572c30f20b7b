//! Best-effort wiping of the stack below the caller's frame.
//!
//! GMP takes scratch space of up to ~64 KiB per call from the stack
//! (`TMP_ALLOC` → `alloca`), which no allocator sees: after a modular
//! exponentiation with a secret modulus, limbs of the candidate and its
//! powers stay in the dead part of the thread's stack. [`wipe_stack`]
//! overwrites [`STACK_WIPE`] bytes below the current frame with zeros; it is
//! called when a search worker finishes (before its thread goes back to the
//! pool or is cached by the C library for reuse) and on the calling thread
//! before a generation returns.
//!
//! Best effort, and documented as such: it relies on the callee's frame
//! lying below the frames that did the arithmetic (true on every ABI with
//! a downward-growing stack, as all our targets have), and on the compiler
//! not eliding the writes (volatile writes through `zeroize`, and the
//! buffer escapes through `black_box`).

use zeroize::Zeroize;

/// Bytes wiped: GMP's largest `alloca` (65536) plus the deepest call chain
/// we drive into it, with a wide margin. Costs about 12 µs per call on a
/// thread whose stack is already resident (measured on Zen 3); the first
/// call on a fresh thread stack also pays the page faults of touching it.
pub const STACK_WIPE: usize = 256 * 1024;

/// Overwrites the `STACK_WIPE` bytes of stack below the caller's frame.
///
/// The writes are word-sized volatile stores (`zeroize` on `u64`s): the
/// byte-wise form cost about 97 µs per call, which a two-thread RSA-2048
/// generation paid several times on its critical path.
#[inline(never)]
pub fn wipe_stack() {
    let mut buf = [0u64; STACK_WIPE / 8];
    std::hint::black_box(&mut buf);
    buf.zeroize();
    std::hint::black_box(&buf);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn leave_a_secret() -> usize {
        let mut secret = [0x5Cu8; 4096];
        std::hint::black_box(&mut secret);
        secret.as_ptr() as usize
    }

    #[inline(never)]
    fn leave_a_deep_secret() -> usize {
        let mut pad = [1u8; 160 * 1024];
        std::hint::black_box(&mut pad);
        leave_a_secret()
    }

    #[inline(never)]
    fn read_dead_stack(addr: usize) -> bool {
        // The frame of `leave_a_secret` is dead; read it through a raw
        // pointer the way an attacker with a memory disclosure would.
        // SAFETY: the address lies within this thread's mapped stack
        // (below the live frames, above the guard page: STACK_WIPE is far
        // smaller than the 2 MiB test thread stack).
        let bytes = unsafe { std::slice::from_raw_parts(addr as *const u8, 4096) };
        bytes.iter().filter(|&&b| b == 0x5C).count() > 3000
    }

    #[test]
    fn wipe_clears_dead_frames() {
        std::thread::spawn(|| {
            let addr = leave_a_secret();
            assert!(
                read_dead_stack(addr),
                "test setup: the secret was not on the stack"
            );
            let addr = leave_a_secret();
            wipe_stack();
            assert!(!read_dead_stack(addr), "dead stack still holds the secret");
            // A secret left 160 KiB down (GMP's alloca scratch sits deep
            // in powm's frames) is inside the wiped span too.
            let addr = leave_a_deep_secret();
            assert!(read_dead_stack(addr), "test setup: no deep secret");
            wipe_stack();
            assert!(!read_dead_stack(addr), "the deep secret survived");
        })
        .join()
        .unwrap();
    }
}
