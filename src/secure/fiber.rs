//! Secret work on the calling thread, on a private stack.
//!
//! A one-thread generation need not start a thread: [`on_private_stack`]
//! runs it on the calling thread, but on a stack of our own — a mapping
//! advised `MADV_WIPEONFORK` (a `fork()` child sees zeros),
//! `MADV_DONTDUMP` (left out of core dumps) and `MADV_NOHUGEPAGE`, with a
//! guard page below it, registered with valgrind — and wipes that stack
//! before returning. The
//! host's own stack never holds the frames that touch the seed or a
//! candidate, as with a worker thread; what goes is the thread's start,
//! its stack shield, the hand-offs and the join (0.12–0.15 ms hot,
//! about 0.5 ms after the caches were flushed: `bench/examples/pool_cost`).
//!
//! Asynchronous signals are blocked while the private stack is in use
//! (`super::signals`), so no handler runs on it.
//!
//! Code on the private stack reaches the host's code only through
//! [`Caller::run`], which clears the vector registers and runs the given
//! closure back on the caller's own stack, with the caller's signal mask
//! (the progress callback: a Python or Go callback checks its stack
//! bounds, and a `fork()` + `exec` from it must not run on pages the child
//! sees as zeros).
//!
//! One spare stack is kept per thread after use, wiped (its resident pages
//! zeroed, the others dropped), for the thread's next call; it is unmapped
//! when the thread exits. A nested call (from a callback) gets a fresh one.
//!
//! Linux only (where `mincore` tells which pages to wipe and
//! `MADV_WIPEONFORK` exists); elsewhere [`on_private_stack`] declines and
//! the caller starts a worker thread instead.

use std::cell::Cell;
use std::num::NonZeroUsize;

use corosensei::stack::valgrind::ValgrindStackRegistration;
use corosensei::stack::{Stack, StackPointer};
use corosensei::{CoroutineResult, ScopedCoroutine, Yielder};

use super::os;

/// Usable bytes of a private stack: a pool worker's (Rust's default
/// thread stack). Only the pages a generation touches are ever backed;
/// RSA-512 touches about 20.
const STACK_SIZE: usize = 2 << 20;

const PAGE: usize = 4096;

/// A private stack: `[lo, lo + PAGE)` is the guard page, the rest the
/// stack, shielded from fork children and core dumps.
pub(crate) struct PrivateStack {
    lo: usize,
    len: usize,
    _valgrind: ValgrindStackRegistration,
}

// SAFETY: the mapping has a PROT_NONE guard page at its low end, holds
// STACK_SIZE ≥ MIN_STACK_SIZE usable bytes, and both ends are
// page-aligned (so STACK_ALIGNMENT-aligned).
unsafe impl Stack for PrivateStack {
    fn base(&self) -> StackPointer {
        NonZeroUsize::new(self.lo + self.len).expect("mapped")
    }
    fn limit(&self) -> StackPointer {
        NonZeroUsize::new(self.lo).expect("mapped")
    }
}

impl PrivateStack {
    #[cfg(target_os = "linux")]
    fn new() -> Option<PrivateStack> {
        // The page size is checked, not assumed: the guard and the
        // advice ranges are in 4 KiB pages.
        // SAFETY: sysconf has no preconditions.
        if unsafe { libc::sysconf(libc::_SC_PAGESIZE) } != PAGE as libc::c_long {
            return None;
        }
        let len = STACK_SIZE + PAGE;
        // SAFETY: a fresh private anonymous mapping; failure is checked.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK | os::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return None;
        }
        let stack = PrivateStack {
            lo: p as usize,
            len,
            _valgrind: ValgrindStackRegistration::new(p.cast(), len),
        };
        let (usable, usable_len) = stack.usable();
        // SAFETY: pages of the mapping just made; on failure `stack` is
        // dropped, which unmaps it.
        unsafe {
            if libc::mprotect(p, PAGE, libc::PROT_NONE) != 0
                || !os::wipe_on_fork(usable as *mut libc::c_void, usable_len)
            {
                return None;
            }
            os::no_core_dump(usable as *mut libc::c_void, usable_len);
            os::no_huge_pages(usable as *mut libc::c_void, usable_len);
        }
        Some(stack)
    }

    #[cfg(not(target_os = "linux"))]
    fn new() -> Option<PrivateStack> {
        None
    }

    /// The stack's pages above the guard page.
    fn usable(&self) -> (usize, usize) {
        (self.lo + PAGE, self.len - PAGE)
    }

    /// Wipes what the stack held: every page from the lowest resident one
    /// up to the top is zeroed by writing (a page there that was swapped
    /// out is brought back and overwritten), and the pages below it, never
    /// touched or swapped out, are dropped (they read as zeros). False if
    /// the kernel would not tell or drop: the stack must then be unmapped.
    #[cfg(target_os = "linux")]
    fn wipe(&mut self) -> bool {
        const PAGES: usize = STACK_SIZE / PAGE;
        let (lo, len) = self.usable();
        // SAFETY: [lo, lo + len) is this stack's own mapping, page-aligned,
        // not in use (no coroutine runs on it).
        let Some(lowest) = (unsafe { super::stack::drop_below_resident::<PAGES>(lo, PAGES, PAGE) })
        else {
            return false;
        };
        // SAFETY: [from, lo + len) lies in this stack's mapping.
        unsafe {
            let from = lo + lowest * PAGE;
            // Valgrind marks a stack's dead part unaddressable; it is ours.
            let _ = super::valgrind::client_request(
                super::valgrind::MAKE_MEM_UNDEFINED,
                from as *const u8,
                lo + len - from,
            );
            // explicit_bzero: a write the compiler may not drop.
            libc::explicit_bzero(from as *mut libc::c_void, lo + len - from);
        }
        true
    }

    #[cfg(not(target_os = "linux"))]
    fn wipe(&mut self) -> bool {
        false
    }
}

impl Drop for PrivateStack {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, no longer used; unmapped
        // pages are zeroed by the kernel before any reuse.
        unsafe {
            libc::munmap(self.lo as *mut libc::c_void, self.len);
        }
    }
}

thread_local! {
    /// The thread's spare private stack, wiped.
    static SPARE: Cell<Option<PrivateStack>> = const { Cell::new(None) };
    /// The usable range of the private stack the thread runs on, if any
    /// (for [`super::stack`]'s wipes, which must stay inside it).
    static CURRENT: Cell<Option<(usize, usize)>> = const { Cell::new(None) };
}

/// The usable range `[lo, hi)` of the private stack the calling thread
/// runs on, if `here` lies in it.
pub(super) fn current_bounds(here: usize) -> Option<(usize, usize)> {
    CURRENT
        .try_with(|c| c.get())
        .ok()
        .flatten()
        .filter(|&(lo, hi)| (lo..hi).contains(&here))
}

/// Code on a private stack's way back to the caller's (see [`Caller::run`]).
pub(crate) struct Caller<'y> {
    yielder: &'y Yielder<(), ()>,
}

impl Caller<'_> {
    /// Runs `f` on the calling thread's own stack, below the frame that
    /// called [`on_private_stack`], after clearing the vector registers
    /// (the general registers are the caller's own there), with the
    /// caller's signal mask back (`super::signals::released`). For the
    /// host's callbacks; `f` must not hold secrets.
    pub(crate) fn run<R>(&self, f: impl FnOnce() -> R) -> R {
        super::clear_registers();
        let job = SameThread(f);
        self.yielder
            .on_parent_stack(move || SameThread(super::signals::released(|| job.call())))
            .0
    }
}

/// A closure or value moved to the caller's stack on the same thread:
/// `on_parent_stack` asks for `Send` so that a `Yielder` cannot reach
/// the parent; this one carries none.
struct SameThread<T>(T);

// SAFETY: `Caller::run` moves it between two stacks of one thread, never
// to another thread, and it holds no `Yielder`.
unsafe impl<T> Send for SameThread<T> {}

impl<R, F: FnOnce() -> R> SameThread<F> {
    fn call(self) -> R {
        (self.0)()
    }
}

/// Puts a used private stack back as the thread's spare once wiped, or
/// unmaps it (a spare is already there, or the wipe failed). Runs on
/// unwinding too.
struct Return(Option<PrivateStack>, Option<(usize, usize)>);

impl Drop for Return {
    fn drop(&mut self) {
        let _ = CURRENT.try_with(|c| c.set(self.1));
        if let Some(mut stack) = self.0.take() {
            if stack.wipe() {
                if let Ok(Some(other)) = SPARE.try_with(|c| c.replace(Some(stack))) {
                    drop(other);
                }
            }
        }
    }
}

/// Runs `f` on the calling thread, on a private stack (see the module
/// docs), and wipes that stack afterwards. `None` where no private stack
/// can be had (not Linux, or the kernel refused the mapping or its
/// advice): the caller then uses a worker thread. A panic in `f` is
/// carried back to the caller; the stack is wiped on the way.
pub(crate) fn on_private_stack<T>(f: impl FnOnce(&Caller<'_>) -> T) -> Option<T> {
    let stack = match SPARE.try_with(|c| c.take()) {
        Ok(Some(s)) => s,
        _ => PrivateStack::new()?,
    };
    // No asynchronous signal handler runs on the private stack: its frame
    // would hold the registers of secret work, and a `fork()` in it would
    // give a child whose stack is zeros. Released when `held` (below) is
    // dropped, after the wipe; callbacks release it on the caller's stack.
    let signals = super::signals::hold();
    let before = CURRENT.try_with(|c| c.get()).ok().flatten();
    let mut held = Return(Some(stack), before);
    let stack = held.0.as_mut().expect("held");
    let _ = CURRENT.try_with(|c| c.set(Some(stack.usable()).map(|(lo, n)| (lo, lo + n))));
    let co = ScopedCoroutine::with_stack(stack, |yielder: &Yielder<(), ()>, ()| {
        let r = f(&Caller { yielder });
        super::clear_registers();
        r
    });
    let r = co.scope(|mut co| match co.as_mut().resume(()) {
        CoroutineResult::Return(r) => r,
        CoroutineResult::Yield(()) => unreachable!("the body never suspends"),
    });
    drop(held);
    drop(signals);
    Some(r)
}

/// Runs secret work that calls no host code — a key check, an import, an
/// export — on a private stack ([`on_private_stack`]): its frames and
/// GMP's stack temporaries never touch the caller's stack, whose size then
/// does not matter (a `PTHREAD_STACK_MIN` thread is enough), and no signal
/// handler runs in the middle of it. Already on a private stack, runs
/// `f` there; where none can be had, runs it below a wiped frame
/// (`super::with_wiped_stack`) with the signals held.
pub(crate) fn run_secret<T>(f: impl FnOnce() -> T) -> T {
    super::secret_work(|| run_secret_here(f))
}

fn run_secret_here<T>(f: impl FnOnce() -> T) -> T {
    let here = std::hint::black_box(0u8);
    if current_bounds(std::ptr::addr_of!(here) as usize).is_some() {
        return f();
    }
    let mut f = Some(f);
    if let Some(r) = on_private_stack(|_| (f.take().expect("runs once"))()) {
        return r;
    }
    let _signals = super::signals::hold();
    super::with_wiped_stack(f.take().expect("not run"))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn sp() -> usize {
        let here = std::hint::black_box(0u8);
        std::ptr::addr_of!(here) as usize
    }

    #[inline(never)]
    fn leave_a_secret() -> usize {
        let mut secret = [0x5Cu8; 4096];
        std::hint::black_box(&mut secret);
        secret.as_ptr() as usize
    }

    #[test]
    fn runs_on_the_private_stack_and_calls_back_on_the_callers() {
        std::thread::spawn(|| {
            let outside = sp();
            let (inside, back, bounds) = on_private_stack(|caller| {
                let inside = sp();
                let back = caller.run(sp);
                (inside, back, current_bounds(inside))
            })
            .expect("a private stack");
            let (lo, hi) = bounds.expect("inside a private stack");
            assert!((lo..hi).contains(&inside));
            assert!(!(lo..hi).contains(&outside));
            // The callback ran on this thread's own stack, below us.
            assert!(!(lo..hi).contains(&back) && back < outside && outside - back < 1 << 20);
            assert_eq!(current_bounds(sp()), None);
        })
        .join()
        .unwrap();
    }

    /// The kernel's flags for the private stack's pages (and the guard's
    /// protection): wiped in a fork child (`wf`), left out of core dumps
    /// (`dd`), no huge pages (`nh`).
    #[test]
    fn the_stack_carries_its_advice() {
        let stack = PrivateStack::new().expect("a private stack");
        let (lo, n) = stack.usable();
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let region = |start: usize| {
            let head = format!("{start:x}-");
            let at = smaps
                .lines()
                .position(|l| l.starts_with(&head))
                .unwrap_or_else(|| panic!("no mapping at {start:x}"));
            smaps.lines().skip(at).take(40).collect::<Vec<_>>()
        };
        let usable = region(lo);
        assert!(usable[0].starts_with(&format!("{lo:x}-{:x} rw-p", lo + n)));
        let flags = usable
            .iter()
            .find(|l| l.starts_with("VmFlags:"))
            .expect("VmFlags");
        for f in ["wf", "dd", "nh"] {
            assert!(
                flags.split_whitespace().any(|w| w == f),
                "{f} missing: {flags}"
            );
        }
        assert!(region(lo - PAGE)[0].contains(" ---p "), "no guard page");
    }

    /// Whether the thread's spare stack holds a byte of `leave_a_secret`'s
    /// (the spare is put back).
    fn spare_holds_the_secret() -> bool {
        let spare = SPARE.with(|c| c.take()).expect("kept as the spare");
        let (lo, n) = spare.usable();
        // SAFETY: the spare's mapping is alive and readable.
        let found = unsafe { std::slice::from_raw_parts(lo as *const u8, n) }.contains(&0x5C);
        SPARE.with(|c| c.set(Some(spare)));
        found
    }

    #[test]
    fn the_stack_is_wiped_and_kept_for_the_next_call() {
        std::thread::spawn(|| {
            let addr = on_private_stack(|_| leave_a_secret()).unwrap();
            assert!(!spare_holds_the_secret(), "the secret survived");
            // The next call reuses it.
            let again = on_private_stack(|_| leave_a_secret()).unwrap();
            assert_eq!(again, addr);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_panic_reaches_the_caller_and_the_stack_is_still_wiped() {
        std::thread::spawn(|| {
            let r = std::panic::catch_unwind(|| {
                on_private_stack(|_| {
                    leave_a_secret();
                    panic!("inside")
                })
            });
            assert!(r.is_err());
            assert!(!spare_holds_the_secret(), "the secret survived");
            assert_eq!(current_bounds(sp()), None);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn nested_calls_get_their_own_stack() {
        std::thread::spawn(|| {
            let (outer, inner) = on_private_stack(|caller| {
                let outer = sp();
                let inner = caller.run(|| on_private_stack(|_| sp()).unwrap());
                (outer, inner)
            })
            .unwrap();
            assert!(outer.abs_diff(inner) > STACK_SIZE / 2);
        })
        .join()
        .unwrap();
    }
}
