//! The secret arena: memory for the limbs of values derived from secret
//! candidates (GMP's heap blocks during an RSA generation, and our own limb
//! scratch), so that a `fork()` child or a core dump taken *while* a key is
//! being made sees none of them.
//!
//! One region of address space is reserved once per process
//! ([`RESERVE`] bytes, `PROT_NONE`, `MAP_NORESERVE`) and advised
//! `MADV_WIPEONFORK` (a child sees zeros) and `MADV_DONTDUMP` (absent from
//! core dumps); pages are made readable and writable as the arena grows, a
//! megabyte at a time, and are never returned. Blocks are powers of two
//! from 32 bytes to 2 MiB, with a 16-byte header naming the size class;
//! freed blocks are wiped whole and kept on one free list per class, each
//! behind a spin lock. Larger requests, or a process where the reservation
//! fails, get `None` and the caller falls back to the C heap (documented in
//! SECURITY.md).
//!
//! In a fork child the kernel has zeroed the region: free lists end at
//! their first block (its link reads as 0), blocks the parent was using are
//! simply never seen again, and the locks are reset by a `pthread_atfork`
//! child handler (another thread may have held one when the parent forked).

use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

use zeroize::Zeroize;

/// Address space reserved for the arena (committed only as used).
pub(crate) const RESERVE: usize = 1 << 30;
const COMMIT_STEP: usize = 1 << 20;
const HEADER: usize = 16;
const MIN_SHIFT: u32 = 5;
const MAX_SHIFT: u32 = 21;
const CLASSES: usize = (MAX_SHIFT - MIN_SHIFT + 1) as usize;
/// Marks a live block's header (a wiped or inherited block reads as 0).
const MAGIC: u64 = 0x7066_6172_656e_6121;

struct Region {
    base: usize,
}

struct FreeList {
    lock: AtomicBool,
    /// Address of the first free block, 0 for none; guarded by `lock`.
    head: AtomicUsize,
}

static REGION: OnceLock<Option<Region>> = OnceLock::new();
static BUMP: AtomicUsize = AtomicUsize::new(0);
static COMMITTED: AtomicUsize = AtomicUsize::new(0);
static COMMIT_LOCK: AtomicBool = AtomicBool::new(false);
static FREE: [FreeList; CLASSES] = [const {
    FreeList {
        lock: AtomicBool::new(false),
        head: AtomicUsize::new(0),
    }
}; CLASSES];

fn spin(lock: &AtomicBool) {
    while lock
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        std::hint::spin_loop();
    }
}

extern "C" fn reset_locks_in_child() {
    COMMIT_LOCK.store(false, Ordering::Relaxed);
    for f in &FREE {
        f.lock.store(false, Ordering::Relaxed);
    }
}

fn region() -> Option<&'static Region> {
    REGION
        .get_or_init(|| {
            // SAFETY: a fresh anonymous reservation, no address hint; the
            // advice calls only change how the kernel treats it.
            unsafe {
                let p = libc::mmap(
                    std::ptr::null_mut(),
                    RESERVE,
                    libc::PROT_NONE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | super::os::MAP_NORESERVE,
                    -1,
                    0,
                );
                if p == libc::MAP_FAILED {
                    return None;
                }
                if !super::os::wipe_on_fork(p, RESERVE) {
                    // Without WIPEONFORK (kernels before 4.14, platforms
                    // without an equivalent) the arena would protect
                    // nothing in a child: do without it.
                    libc::munmap(p, RESERVE);
                    return None;
                }
                super::os::no_core_dump(p, RESERVE);
                libc::pthread_atfork(None, None, Some(reset_locks_in_child));
                Some(Region { base: p as usize })
            }
        })
        .as_ref()
}

/// Whether the arena is in use in this process.
#[cfg(test)]
pub(crate) fn available() -> bool {
    region().is_some()
}

/// Whether `p` points into the arena.
pub(crate) fn owns(p: *const u8) -> bool {
    match REGION.get() {
        Some(Some(r)) => (p as usize).wrapping_sub(r.base) < RESERVE,
        _ => false,
    }
}

fn class_of(size: usize) -> Option<usize> {
    let need = size.checked_add(HEADER)?.max(1 << MIN_SHIFT);
    let shift = usize::BITS - (need - 1).leading_zeros();
    (shift <= MAX_SHIFT).then(|| (shift - MIN_SHIFT) as usize)
}

fn block_size(class: usize) -> usize {
    1 << (class as u32 + MIN_SHIFT)
}

/// Makes `[base, base + end)` readable and writable.
fn commit(r: &Region, end: usize) -> bool {
    if COMMITTED.load(Ordering::Acquire) >= end {
        return true;
    }
    spin(&COMMIT_LOCK);
    let done = COMMITTED.load(Ordering::Acquire);
    let mut ok = true;
    if done < end {
        let upto = end.div_ceil(COMMIT_STEP) * COMMIT_STEP;
        // SAFETY: [base + done, base + upto) lies inside our reservation.
        ok = unsafe {
            libc::mprotect(
                (r.base + done) as *mut libc::c_void,
                upto - done,
                libc::PROT_READ | libc::PROT_WRITE,
            )
        } == 0;
        if ok {
            COMMITTED.store(upto, Ordering::Release);
        }
    }
    COMMIT_LOCK.store(false, Ordering::Release);
    ok
}

/// A block of at least `size` bytes, 16-byte aligned, or `None` when the
/// request is larger than the biggest class or the arena is unavailable
/// or full.
pub(crate) fn alloc(size: usize) -> Option<NonNull<u8>> {
    let r = region()?;
    let class = class_of(size)?;
    let list = &FREE[class];
    spin(&list.lock);
    let head = list.head.load(Ordering::Relaxed);
    if head != 0 {
        // SAFETY: `head` is a free block of this class inside the arena;
        // its first word (in the header) links the next free block.
        let next = unsafe { (head as *const usize).read() };
        list.head.store(next, Ordering::Relaxed);
    }
    list.lock.store(false, Ordering::Release);
    let block = if head != 0 {
        head
    } else {
        let bytes = block_size(class);
        let off = BUMP.fetch_add(bytes, Ordering::Relaxed);
        if off + bytes > RESERVE || !commit(r, off + bytes) {
            return None;
        }
        r.base + off
    };
    // SAFETY: `block` starts a committed block of this class we now own.
    unsafe {
        let h = block as *mut u64;
        h.write(class as u64);
        h.add(1).write(MAGIC);
        NonNull::new((block + HEADER) as *mut u8)
    }
}

/// Wipes and frees a block from [`alloc`].
///
/// # Safety
/// `p` came from [`alloc`] and is not used again.
pub(crate) unsafe fn free(p: *mut u8) {
    let block = p as usize - HEADER;
    // SAFETY: the header precedes every block from `alloc`.
    let (class, magic) = unsafe {
        let h = block as *const u64;
        (h.read() as usize, h.add(1).read())
    };
    if magic != MAGIC || class >= CLASSES {
        // A block made by the parent of this fork child: the kernel wiped
        // it, and the child's free lists do not know it. Leave it.
        return;
    }
    // SAFETY: the block is ours, `block_size(class)` bytes long.
    unsafe {
        std::slice::from_raw_parts_mut(block as *mut u8, block_size(class)).zeroize();
    }
    let list = &FREE[class];
    spin(&list.lock);
    // SAFETY: the wiped block's first word links the list.
    unsafe { (block as *mut usize).write(list.head.load(Ordering::Relaxed)) };
    list.head.store(block, Ordering::Relaxed);
    list.lock.store(false, Ordering::Release);
}

/// Usable bytes of a block from [`alloc`].
///
/// # Safety
/// `p` came from [`alloc`] and is live.
#[cfg(test)]
pub(crate) unsafe fn usable(p: *const u8) -> usize {
    // SAFETY: the header precedes the block.
    let class = unsafe { ((p as usize - HEADER) as *const u64).read() } as usize;
    block_size(class.min(CLASSES - 1)) - HEADER
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_reused_wiped_and_inside() {
        assert!(available(), "no arena on this machine");
        let a = alloc(100).unwrap();
        assert!(owns(a.as_ptr()));
        assert!(unsafe { usable(a.as_ptr()) } >= 100);
        unsafe { a.as_ptr().write_bytes(0xAB, 100) };
        unsafe { free(a.as_ptr()) };
        // The same class hands the wiped block out again (LIFO), unless a
        // concurrent test took it.
        let b = alloc(90).unwrap();
        let bytes = unsafe { std::slice::from_raw_parts(b.as_ptr(), 90) };
        assert!(bytes.iter().all(|&x| x != 0xAB));
        unsafe { free(b.as_ptr()) };
        assert!(alloc((1 << MAX_SHIFT) - HEADER + 1).is_none());
        let big = alloc((1 << MAX_SHIFT) - HEADER).unwrap();
        unsafe { free(big.as_ptr()) };
        assert!(!owns(&0u8));
    }

    #[test]
    fn classes() {
        assert_eq!(class_of(0), Some(0));
        assert_eq!(class_of(16), Some(0));
        assert_eq!(class_of(17), Some(1));
        assert_eq!(class_of(48), Some(1));
        assert_eq!(class_of(49), Some(2));
        assert_eq!(class_of((1 << 21) - 16), Some(CLASSES - 1));
        assert_eq!(class_of((1 << 21) - 15), None);
    }
}
