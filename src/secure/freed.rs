//! Test-only: the bytes of every heap block freed on a thread while
//! [`record`] runs — and on the library's pool threads as well — logged
//! by a global allocator over the library's own ([`ClearingAllocator`]
//! over the system's; it logs nothing otherwise), for tests that look for
//! secrets in freed memory.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::ClearingAllocator;

/// What the library's builds install (`clearing-allocator`).
static INNER: ClearingAllocator = ClearingAllocator::system();

/// How many [`record`]s run now (pool threads log while any does).
static RECORDING: AtomicUsize = AtomicUsize::new(0);
/// What the pool threads freed meanwhile (room reserved by [`record`]).
static WORKERS_LOG: Mutex<Vec<u8>> = Mutex::new(Vec::new());
/// One [`record`] at a time.
static ONE: Mutex<()> = Mutex::new(());

pub(crate) struct Logging;

thread_local! {
    static ON: Cell<bool> = const { Cell::new(false) };
    static LOG: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    static WORKER: Cell<bool> = const { Cell::new(false) };
}

/// Marks the current thread as one of the library's pool threads.
pub(crate) fn mark_worker() {
    WORKER.with(|w| w.set(true));
}

/// Appends the `n` bytes at `ptr` to `log` within its reserved room.
///
/// # Safety
/// `ptr` is valid for reads of `n` bytes.
unsafe fn append(log: &mut Vec<u8>, ptr: *const u8, n: usize) {
    let n = n.min(log.capacity() - log.len());
    // SAFETY: as the caller promises, for n bytes or fewer.
    log.extend_from_slice(unsafe { std::slice::from_raw_parts(ptr, n) });
}

// SAFETY: every request goes to the library's allocator unchanged;
// a freed block is only read (within its layout) before it is
// handed back, into a log whose room was reserved beforehand (no
// allocation happens inside `dealloc`).
unsafe impl GlobalAlloc for Logging {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is.
        unsafe { INNER.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is.
        unsafe { INNER.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if ON.try_with(Cell::get).unwrap_or(false) {
            let _ = LOG.try_with(|log| {
                if let Ok(mut log) = log.try_borrow_mut() {
                    // SAFETY: the block is live until the call below.
                    unsafe { append(&mut log, ptr, layout.size()) };
                }
            });
        } else if RECORDING.load(Ordering::Acquire) > 0
            && WORKER.try_with(Cell::get).unwrap_or(false)
        {
            if let Ok(mut log) = WORKERS_LOG.lock() {
                // SAFETY: the block is live until the call below.
                unsafe { append(&mut log, ptr, layout.size()) };
            }
        }
        // SAFETY: forwarded as is.
        unsafe { INNER.dealloc(ptr, layout) }
    }
}

/// Runs `f` and returns its result and the bytes of the blocks freed
/// meanwhile on this thread and on the library's pool threads (up to 64
/// MiB each; pool threads of other tests running at the same time add
/// theirs).
pub(crate) fn record<R>(f: impl FnOnce() -> R) -> (R, Vec<u8>) {
    let _one = ONE.lock().unwrap_or_else(|p| p.into_inner());
    LOG.with(|l| {
        let mut l = l.borrow_mut();
        l.clear();
        l.reserve(64 << 20);
    });
    {
        let mut w = WORKERS_LOG.lock().unwrap_or_else(|p| p.into_inner());
        w.clear();
        w.reserve(64 << 20);
    }
    RECORDING.fetch_add(1, Ordering::AcqRel);
    ON.with(|on| on.set(true));
    let r = f();
    ON.with(|on| on.set(false));
    RECORDING.fetch_sub(1, Ordering::AcqRel);
    let mut log = LOG.with(|l| std::mem::take(&mut *l.borrow_mut()));
    let workers = std::mem::take(&mut *WORKERS_LOG.lock().unwrap_or_else(|p| p.into_inner()));
    log.extend_from_slice(&workers);
    (r, log)
}

#[global_allocator]
static ALLOCATOR: Logging = Logging;
