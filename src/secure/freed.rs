//! Test-only: the bytes of every heap block freed on a thread while
//! [`record`] runs, logged by a global allocator over the system's (which
//! logs nothing otherwise), for tests that look for secrets in freed
//! memory.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::{Cell, RefCell};

pub(crate) struct Logging;

thread_local! {
    static ON: Cell<bool> = const { Cell::new(false) };
    static LOG: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

// SAFETY: every request goes to the system allocator unchanged;
// a freed block is only read (within its layout) before it is
// handed back, into a log whose room was reserved beforehand (no
// allocation happens inside `dealloc`).
unsafe impl GlobalAlloc for Logging {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if ON.try_with(Cell::get).unwrap_or(false) {
            let _ = LOG.try_with(|log| {
                if let Ok(mut log) = log.try_borrow_mut() {
                    let n = layout.size().min(log.capacity() - log.len());
                    // SAFETY: the block is live until the call
                    // below and at least `n` bytes long.
                    log.extend_from_slice(unsafe { std::slice::from_raw_parts(ptr, n) });
                }
            });
        }
        // SAFETY: forwarded as is.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Runs `f` and returns its result and the bytes of the blocks it
/// freed (up to 64 MiB).
pub(crate) fn record<R>(f: impl FnOnce() -> R) -> (R, Vec<u8>) {
    LOG.with(|l| {
        let mut l = l.borrow_mut();
        l.clear();
        l.reserve(64 << 20);
    });
    ON.with(|on| on.set(true));
    let r = f();
    ON.with(|on| on.set(false));
    (r, LOG.with(|l| std::mem::take(&mut *l.borrow_mut())))
}

#[global_allocator]
static ALLOCATOR: Logging = Logging;
