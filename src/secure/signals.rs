//! Asynchronous signals and secret work.
//!
//! When a signal handler runs, the kernel saves the interrupted thread's
//! whole register state — general and vector registers — in a signal
//! frame on the handler's stack: the thread's own stack, or an alternate
//! stack (`SA_ONSTACK`: Go's runtime installs one on every thread, and so do
//! crash reporters and Rust's stack-overflow handler) that is ordinary,
//! dumpable, fork-inherited memory nobody wipes. A handler that runs while
//! a thread computes on a secret therefore writes limbs of it, or stream
//! state, into such memory. A handler that calls `fork()` while a thread
//! runs on a private stack (`super::fiber`) makes a child whose copy of
//! that stack is zeros, and the child dies when the handler returns.
//!
//! So secret work never runs with asynchronous signals deliverable:
//!
//! - The library's own threads (pool workers, job threads) block every
//!   asynchronous signal for their whole life ([`block_for_thread`]).
//! - On a caller's thread, [`hold`] blocks them while secret work runs and
//!   restores the caller's mask when it ends, after clearing the vector
//!   and caller-saved registers: a signal that arrived meanwhile is
//!   delivered then, into a frame that holds no secret.
//! - [`released`] runs host code inside a hold (the progress callback, a
//!   wait for the workers) with the caller's mask back, its registers
//!   cleared first. On a private stack it changes nothing: host code runs
//!   on the caller's own stack (`fiber::Caller::run`), which releases there.
//!
//! Synchronous signals (`SIGSEGV`, `SIGBUS`, `SIGFPE`, `SIGILL`, `SIGTRAP`,
//! `SIGSYS`) stay deliverable: blocking them would turn a fault into a kill
//! without a core, and they only arise from a fault (a crash, which a core
//! shows anyway). `SIGKILL` and `SIGSTOP` cannot be blocked.

use std::cell::Cell;

/// The asynchronous signals: every signal but the synchronous ones.
#[cfg(unix)]
fn async_set() -> libc::sigset_t {
    // SAFETY: sigfillset/sigdelset initialise and edit a local set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut set);
        for s in [
            libc::SIGSEGV,
            libc::SIGBUS,
            libc::SIGFPE,
            libc::SIGILL,
            libc::SIGTRAP,
            libc::SIGSYS,
        ] {
            libc::sigdelset(&mut set, s);
        }
        set
    }
}

#[cfg(unix)]
fn set_mask(how: libc::c_int, set: &libc::sigset_t) -> libc::sigset_t {
    // SAFETY: both sets are valid; pthread_sigmask only fails for a bad
    // `how`, which is a constant here.
    unsafe {
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(how, set, &mut old);
        old
    }
}

/// Blocks every asynchronous signal on the calling thread for good: for
/// the library's own threads, at their start.
pub(crate) fn block_for_thread() {
    #[cfg(unix)]
    set_mask(libc::SIG_BLOCK, &async_set());
}

#[cfg(unix)]
thread_local! {
    /// The caller's mask while a [`hold`] is active on this thread.
    static SAVED: Cell<Option<libc::sigset_t>> = const { Cell::new(None) };
}

/// Asynchronous signals blocked on this thread until dropped (see the
/// module docs). Nested holds share the outermost one's saved mask.
#[must_use = "the signals are blocked only while the guard lives"]
pub(crate) struct Held {
    #[cfg(unix)]
    outermost: bool,
}

/// Blocks the asynchronous signals on this thread until the guard drops.
pub(crate) fn hold() -> Held {
    #[cfg(unix)]
    {
        let old = set_mask(libc::SIG_BLOCK, &async_set());
        let outermost = SAVED
            .try_with(|s| {
                if s.get().is_none() {
                    s.set(Some(old));
                    true
                } else {
                    false
                }
            })
            .unwrap_or(false);
        Held { outermost }
    }
    #[cfg(not(unix))]
    Held {}
}

impl Drop for Held {
    fn drop(&mut self) {
        #[cfg(unix)]
        if self.outermost {
            if let Ok(Some(old)) = SAVED.try_with(|s| s.take()) {
                super::clear_registers();
                set_mask(libc::SIG_SETMASK, &old);
            }
        }
    }
}

/// Whether a [`hold`] is active on this thread.
#[cfg(test)]
pub(crate) fn holding() -> bool {
    #[cfg(unix)]
    return SAVED.try_with(|s| s.get().is_some()).unwrap_or(false);
    #[cfg(not(unix))]
    false
}

/// Runs `f` — host code or a wait, holding no secret — with the caller's
/// signal mask back if a [`hold`] is active, the registers cleared before;
/// blocks the signals again afterwards. On a private stack (where no
/// host code runs, see the module docs) or without a hold, just runs `f`
/// after clearing the registers.
pub(crate) fn released<R>(f: impl FnOnce() -> R) -> R {
    super::clear_registers();
    #[cfg(unix)]
    {
        let here = std::hint::black_box(0u8);
        let on_private = super::fiber::current_bounds(std::ptr::addr_of!(here) as usize).is_some();
        let saved = SAVED.try_with(|s| s.get()).ok().flatten();
        if let (Some(old), false) = (saved, on_private) {
            set_mask(libc::SIG_SETMASK, &old);
            let r = f();
            set_mask(libc::SIG_BLOCK, &async_set());
            return r;
        }
    }
    f()
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn blocked(sig: libc::c_int) -> bool {
        // SAFETY: a query of this thread's mask into a local set.
        unsafe {
            let mut cur: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut cur);
            libc::sigismember(&cur, sig) == 1
        }
    }

    #[test]
    fn hold_blocks_async_signals_and_restores_the_callers_mask() {
        std::thread::spawn(|| {
            assert!(!blocked(libc::SIGINT) && !blocked(libc::SIGUSR1));
            {
                let _h = hold();
                assert!(holding());
                assert!(blocked(libc::SIGINT) && blocked(libc::SIGPROF) && blocked(libc::SIGURG));
                assert!(!blocked(libc::SIGSEGV) && !blocked(libc::SIGBUS));
                {
                    let _inner = hold();
                    released(|| assert!(!blocked(libc::SIGINT)));
                    assert!(blocked(libc::SIGINT));
                }
                // The inner hold's end does not unblock.
                assert!(blocked(libc::SIGINT));
            }
            assert!(!holding());
            assert!(!blocked(libc::SIGINT) && !blocked(libc::SIGUSR1));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_callers_own_blocked_signals_stay_blocked() {
        std::thread::spawn(|| {
            // SAFETY: a set built locally.
            let usr2 = unsafe {
                let mut s: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut s);
                libc::sigaddset(&mut s, libc::SIGUSR2);
                s
            };
            set_mask(libc::SIG_BLOCK, &usr2);
            {
                let _h = hold();
                released(|| assert!(blocked(libc::SIGUSR2) && !blocked(libc::SIGINT)));
            }
            assert!(blocked(libc::SIGUSR2) && !blocked(libc::SIGINT));
        })
        .join()
        .unwrap();
    }

    /// A signal sent during a hold runs its handler after the hold, not
    /// during it.
    #[test]
    fn a_signal_during_a_hold_is_delivered_after_it() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static RAN: AtomicUsize = AtomicUsize::new(0);
        extern "C" fn handler(_: libc::c_int) {
            RAN.fetch_add(1, Ordering::SeqCst);
        }
        std::thread::spawn(|| {
            // SAFETY: installs a handler for SIGUSR1 that only counts; the
            // test binary does not use SIGUSR1 otherwise.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = handler as *const () as usize;
                libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut());
            }
            let before = RAN.load(Ordering::SeqCst);
            {
                let _h = hold();
                // SAFETY: signals this thread.
                unsafe { libc::pthread_kill(libc::pthread_self(), libc::SIGUSR1) };
                assert_eq!(
                    RAN.load(Ordering::SeqCst),
                    before,
                    "delivered during the hold"
                );
            }
            assert_eq!(
                RAN.load(Ordering::SeqCst),
                before + 1,
                "not delivered after"
            );
        })
        .join()
        .unwrap();
    }
}
