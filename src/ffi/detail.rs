//! `pf_last_error_message`: what went wrong, in words, for the last call on
//! this thread that returned a `pf_status`.
//!
//! Every status-returning export records its outcome on the calling
//! thread when it returns (`guard` and `guard_secret` do it): a detail
//! recorded during the call ("invalid argument: bits must be even,
//! 512..=16384"), or else the status text. Value-returning functions
//! (`pf_*_len`, `pf_*_bits`, `pf_status_str`, ...) leave it alone.

use std::cell::RefCell;
use std::ffi::c_char;

use super::pf_status;

thread_local! {
    /// The NUL-terminated message, and whether the current call has set a
    /// detail already.
    static LAST: RefCell<(Vec<u8>, bool)> = const { RefCell::new((Vec::new(), false)) };
}

const NO_CALL_YET: &str = "no primeforge call has returned a status on this thread\0";
const UNAVAILABLE: &str = "no message (the thread is exiting)\0";

/// Records `message` as the detail of the current call's failure (the
/// first detail recorded during a call wins: it is the closest to the
/// cause).
pub(crate) fn record(message: &str) {
    let _ = LAST.try_with(|l| {
        let mut l = l.borrow_mut();
        if !l.1 {
            set(&mut l.0, message);
            l.1 = true;
        }
    });
}

/// Records an invalid argument named by `what` and returns its status.
pub(crate) fn invalid(what: &str) -> pf_status {
    record(&format!("invalid argument: {what}"));
    pf_status::PF_ERR_INVALID_ARGUMENT
}

fn set(buf: &mut Vec<u8>, message: &str) {
    buf.clear();
    // An interior NUL would cut the C string short: drop it.
    buf.extend(message.bytes().filter(|&b| b != 0));
    buf.push(0);
}

/// Called by the guards when an export starts: no detail yet.
pub(super) fn begin() {
    let _ = LAST.try_with(|l| l.borrow_mut().1 = false);
}

/// Called by the guards when an export returns `status`: without a
/// detail, the message is the status text.
pub(super) fn finish(status: pf_status) {
    let _ = LAST.try_with(|l| {
        let mut l = l.borrow_mut();
        if !l.1 || status == pf_status::PF_OK || status == pf_status::PF_PENDING {
            set(&mut l.0, super::status::status_text(status as u32));
        }
        l.1 = false;
    });
}

/// Returns a message for the last call on this thread that returned a
/// `pf_status`: the detail primeforge knows ("invalid argument: bits must
/// be even, 512..=16384", "internal error: a panic: ..."), or the status
/// text (`pf_status_str`) when there is no more to say, or "success".
///
/// Never NULL. The text belongs to the library and to this thread: it
/// stays valid and unchanged until the next status-returning primeforge
/// call on the same thread, and must not be freed. Each thread has its
/// own. For bindings: read it right after the failing call, on the same
/// OS thread (in Go, with the goroutine locked to its thread).
#[no_mangle]
pub extern "C" fn pf_last_error_message() -> *const c_char {
    super::guard_value(UNAVAILABLE.as_ptr().cast(), || {
        LAST.try_with(|l| {
            let l = l.borrow();
            if l.0.is_empty() {
                NO_CALL_YET.as_ptr().cast()
            } else {
                // The buffer is only reallocated by the next recording
                // call on this thread, as documented.
                l.0.as_ptr().cast()
            }
        })
        .unwrap_or(UNAVAILABLE.as_ptr().cast())
    })
}
