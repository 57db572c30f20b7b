//! The secret arena: memory for the limbs of values derived from secret
//! candidates (GMP's heap blocks during an RSA generation, and our own limb
//! scratch), so that a `fork()` child or a core dump taken *while* a key is
//! being made sees none of them.
//!
//! Address space is reserved in segments of [`SEGMENT`] bytes
//! (`PROT_NONE`, `MAP_NORESERVE`), the first on first use and another
//! whenever the last is full, up to [`MAX_SEGMENTS`]; each is advised
//! `MADV_WIPEONFORK` (a child sees zeros) and `MADV_DONTDUMP` (absent from
//! core dumps). Pages are made readable and writable as a segment fills,
//! a megabyte at a time, and are never returned. Reserving what is used
//! rather than a gigabyte up front keeps the arena inside the address-space
//! limits hosts set (`ulimit -v`, `RLIMIT_AS`): one segment is all a
//! generation on a few threads needs. Blocks are powers of two from 32
//! bytes to 2 MiB, with a 16-byte header naming the size class; freed
//! blocks are wiped whole and kept on one free list per class, each behind
//! a spin lock. Larger requests, or a process where no segment can be
//! reserved, get `None` and the caller falls back to the C heap: it
//! records that with [`note_fallback`], which [`status`] reports to the
//! host (`pf_secure_memory_status`), and a generation that asked for the
//! arena fails instead (SECURITY.md).
//!
//! In a fork child the kernel has zeroed every segment: free lists end at
//! their first block (its link reads as 0), blocks the parent was using are
//! simply never seen again, and the locks are reset by a `pthread_atfork`
//! child handler (another thread may have held one when the parent forked).

use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

use zeroize::Zeroize;

/// Address space of one segment (committed only as used).
pub(crate) const SEGMENT: usize = 64 << 20;
/// The most segments reserved (4 GiB of address space).
const MAX_SEGMENTS: usize = 64;
const COMMIT_STEP: usize = 1 << 20;
const HEADER: usize = 16;
const MIN_SHIFT: u32 = 5;
const MAX_SHIFT: u32 = 21;
const CLASSES: usize = (MAX_SHIFT - MIN_SHIFT + 1) as usize;
/// Marks a live block's header (a wiped or inherited block reads as 0).
const MAGIC: u64 = 0x7066_6172_656e_6121;

struct FreeList {
    lock: AtomicBool,
    /// Address of the first free block, 0 for none; guarded by `lock`.
    head: AtomicUsize,
}

/// Base addresses of the reserved segments (0: not reserved); only
/// `SEGMENTS[..COUNT]` are set, and a set entry never changes.
static SEGMENTS: [AtomicUsize; MAX_SEGMENTS] = [const { AtomicUsize::new(0) }; MAX_SEGMENTS];
static COUNT: AtomicUsize = AtomicUsize::new(0);
/// Under `GROW_LOCK`: bytes handed out from the last segment, and bytes
/// of it made readable and writable.
static BUMP: AtomicUsize = AtomicUsize::new(0);
static COMMITTED: AtomicUsize = AtomicUsize::new(0);
static GROW_LOCK: AtomicBool = AtomicBool::new(false);
/// Whether the first segment could be had (decided once).
static USABLE: OnceLock<bool> = OnceLock::new();
/// Secret blocks that went to the C heap instead ([`note_fallback`]).
static FALLBACKS: AtomicU64 = AtomicU64::new(0);
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
    GROW_LOCK.store(false, Ordering::Relaxed);
    for f in &FREE {
        f.lock.store(false, Ordering::Relaxed);
    }
}

/// Reserves one segment: its base address, or `None` when the kernel
/// refuses the mapping (an address-space limit) or its fork advice.
fn reserve() -> Option<usize> {
    // SAFETY: a fresh anonymous reservation, no address hint; the advice
    // calls only change how the kernel treats it.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            SEGMENT,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | super::os::MAP_NORESERVE,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            return None;
        }
        if !super::os::wipe_on_fork(p, SEGMENT) {
            // Without WIPEONFORK (kernels before 4.14, platforms without
            // an equivalent) the arena would protect nothing in a child:
            // do without it.
            libc::munmap(p, SEGMENT);
            return None;
        }
        super::os::no_core_dump(p, SEGMENT);
        Some(p as usize)
    }
}

/// Whether the arena can be used in this process: the first segment is
/// reserved on the first call.
pub(crate) fn usable() -> bool {
    *USABLE.get_or_init(|| match reserve() {
        Some(base) => {
            SEGMENTS[0].store(base, Ordering::Release);
            COUNT.store(1, Ordering::Release);
            // SAFETY: registers a handler that only resets our locks.
            unsafe { libc::pthread_atfork(None, None, Some(reset_locks_in_child)) };
            true
        }
        None => false,
    })
}

/// Records that a block of secret limbs went to the C heap (the arena is
/// unusable or full, or the block is larger than its largest class).
pub(crate) fn note_fallback() {
    FALLBACKS.fetch_add(1, Ordering::Relaxed);
}

/// How many blocks of secret limbs went to the C heap so far.
pub(crate) fn fallbacks() -> u64 {
    FALLBACKS.load(Ordering::Relaxed)
}

/// Whether the arena is in use in this process.
#[cfg(test)]
pub(crate) fn available() -> bool {
    usable()
}

/// Whether `p` points into the arena.
pub(crate) fn owns(p: *const u8) -> bool {
    let n = COUNT.load(Ordering::Acquire);
    SEGMENTS[..n]
        .iter()
        .any(|s| (p as usize).wrapping_sub(s.load(Ordering::Relaxed)) < SEGMENT)
}

fn class_of(size: usize) -> Option<usize> {
    let need = size.checked_add(HEADER)?.max(1 << MIN_SHIFT);
    let shift = usize::BITS - (need - 1).leading_zeros();
    (shift <= MAX_SHIFT).then(|| (shift - MIN_SHIFT) as usize)
}

fn block_size(class: usize) -> usize {
    1 << (class as u32 + MIN_SHIFT)
}

/// A fresh block of `bytes` from the last segment, reserving the next
/// segment when it is full; `None` when no segment can be had.
fn carve(bytes: usize) -> Option<usize> {
    // Called from GMP's allocation in the middle of secret arithmetic,
    // and it may enter the kernel (mmap, mprotect): the vector registers
    // (caller-saved, so free to clobber here) go in cleared.
    super::clear_registers();
    spin(&GROW_LOCK);
    let r = carve_locked(bytes);
    GROW_LOCK.store(false, Ordering::Release);
    r
}

fn carve_locked(bytes: usize) -> Option<usize> {
    let mut n = COUNT.load(Ordering::Acquire);
    let mut off = BUMP.load(Ordering::Relaxed);
    if off + bytes > SEGMENT {
        // The tail of a full segment is left unused (less than 2 MiB).
        if n == MAX_SEGMENTS {
            return None;
        }
        let base = reserve()?;
        SEGMENTS[n].store(base, Ordering::Release);
        n += 1;
        COUNT.store(n, Ordering::Release);
        off = 0;
        COMMITTED.store(0, Ordering::Relaxed);
    }
    let base = SEGMENTS[n - 1].load(Ordering::Relaxed);
    let end = off + bytes;
    let done = COMMITTED.load(Ordering::Relaxed);
    if done < end {
        let upto = (end.div_ceil(COMMIT_STEP) * COMMIT_STEP).min(SEGMENT);
        // SAFETY: [base + done, base + upto) lies inside the segment.
        let ok = unsafe {
            libc::mprotect(
                (base + done) as *mut libc::c_void,
                upto - done,
                libc::PROT_READ | libc::PROT_WRITE,
            )
        } == 0;
        if !ok {
            return None;
        }
        COMMITTED.store(upto, Ordering::Relaxed);
    }
    BUMP.store(end, Ordering::Relaxed);
    Some(base + off)
}

/// A block of at least `size` bytes, 16-byte aligned, or `None` when the
/// request is larger than the biggest class or the arena is unavailable
/// or full.
pub(crate) fn alloc(size: usize) -> Option<NonNull<u8>> {
    if !usable() {
        return None;
    }
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
        carve(block_size(class))?
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
pub(crate) unsafe fn usable_bytes(p: *const u8) -> usize {
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
        assert!(unsafe { usable_bytes(a.as_ptr()) } >= 100);
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

    /// Blocks beyond one segment come from further segments, each owned,
    /// and all are reused after being freed.
    #[test]
    fn the_arena_grows_by_segments() {
        assert!(available(), "no arena on this machine");
        let big = (1 << MAX_SHIFT) - HEADER;
        let blocks: Vec<_> = (0..SEGMENT / (1 << MAX_SHIFT) + 2)
            .map(|_| alloc(big).expect("another segment"))
            .collect();
        assert!(COUNT.load(Ordering::Acquire) >= 2, "still one segment");
        for b in &blocks {
            assert!(owns(b.as_ptr()));
            // SAFETY: a live block of `big` bytes.
            unsafe { b.as_ptr().write_bytes(0x5A, big) };
        }
        for b in blocks {
            // SAFETY: from `alloc`, freed once.
            unsafe { free(b.as_ptr()) };
        }
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
