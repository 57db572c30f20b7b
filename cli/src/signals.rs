//! Ctrl-C and SIGTERM: a generation is cancelled (its workers joined, its
//! secrets wiped); at any other time the process ends at once, removing a
//! half-written output file.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::out;

pub(crate) static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Set while a generation runs: its progress callback turns an interrupt
/// into a cancel (the workers are joined, the secrets wiped). At any other
/// time an interrupt ends the process at once.
pub(crate) static GENERATING: AtomicBool = AtomicBool::new(false);

pub(crate) extern "C" fn on_interrupt(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
    if !GENERATING.load(Ordering::SeqCst) {
        let tmp = out::PENDING_TMP.load(Ordering::SeqCst);
        // SAFETY: unlink and _exit are async-signal-safe; `tmp` is NULL or
        // a live C string (leaked while the temporary file exists).
        unsafe {
            if !tmp.is_null() {
                libc::unlink(tmp);
            }
            libc::_exit(130);
        }
    }
}

/// Ctrl-C (SIGINT) and SIGTERM stop every subcommand at once; SIGPIPE gets
/// its default action back (Rust ignores it), so `primeforge check KEY |
/// head -1` ends quietly when the reader goes away.
pub(crate) fn install_signals() {
    let handler: extern "C" fn(libc::c_int) = on_interrupt;
    // SAFETY: the handler only touches atomics and calls async-signal-safe
    // functions.
    unsafe {
        libc::signal(libc::SIGINT, handler as libc::sighandler_t);
        libc::signal(libc::SIGTERM, handler as libc::sighandler_t);
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
