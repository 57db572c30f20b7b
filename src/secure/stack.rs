//! Best-effort wiping of the stack below the caller's frame.
//!
//! GMP takes scratch space of up to ~64 KiB per call from the stack
//! (`TMP_ALLOC` → `alloca`), which no allocator sees: after a modular
//! exponentiation with a secret modulus, limbs of the candidate and its
//! powers stay in the dead part of the thread's stack. [`wipe_stack`]
//! overwrites [`STACK_WIPE`] bytes below the current frame with zeros and
//! clears the registers; it is called when a search worker finishes (before its thread goes back to the
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
/// we drive into it, with a wide margin; the deepest frame of our own, the
/// banded first test on 8192-bit numbers (`arith::lanes`), reaches about
/// 105 KiB below the search's call into it (checked by
/// `arith::lanes::tests::the_largest_banded_test_stays_within_the_stack_wipe`).
/// Costs about 12 µs per call on a thread whose stack is already resident
/// (measured on Zen 3); the first call on a fresh thread stack also pays
/// the page faults of touching it.
pub(crate) const STACK_WIPE: usize = 256 * 1024;

/// Overwrites up to `STACK_WIPE` bytes of stack below the caller's frame,
/// down to the lowest page of that span the thread has resident (the
/// pages below it are dropped: [`resident_depth`]), and never more than the
/// thread's stack has: on a host thread with a small
/// stack (coroutines, musl's 128 KiB default) the wipe stops 32 KiB above
/// the stack's lowest address instead of running into its guard page.
///
/// The wipe is a chain of 16 KiB frames, each zeroed with word-sized
/// volatile stores (`zeroize` on `u64`s; the byte-wise form cost about
/// 97 µs per 256 KiB), laid down from the caller's frame; each frame is
/// used again after the next returns, so the chain cannot be folded into
/// one frame.
#[inline(never)]
pub(crate) fn wipe_stack() {
    // Finding the stack's bounds and its resident pages takes system
    // calls (mincore, madvise, and on a main thread the reads of
    // pthread_getattr_np): the registers the job computed in must be clear
    // before the first of them, not only after the wipe.
    super::clear_registers();
    let here = std::hint::black_box(0u8);
    let here = std::ptr::addr_of!(here) as usize;
    // On a private stack (`super::fiber`) the bounds are that stack's.
    let low = match super::fiber::current_bounds(here) {
        Some((lo, _)) => Some(lo),
        None => stack_low(),
    };
    let room = match low {
        Some(low) => here.saturating_sub(low).saturating_sub(STACK_MARGIN),
        None => STACK_WIPE,
    };
    let room = room.min(STACK_WIPE);
    let levels = resident_depth(here, room).div_ceil(WIPE_CHUNK).max(1);
    if room >= WIPE_CHUNK {
        wipe_down(levels.min(room / WIPE_CHUNK));
    }
    // The end of a worker's job: what it computed must not wait in the
    // registers while the thread parks (see `super::signals`).
    super::clear_registers();
}

/// Bytes from `here` down to the lowest resident page of the `room` bytes
/// below it, after dropping every page below that one (`os::discard`);
/// `room` where the platform cannot tell or drop.
///
/// Pages below the lowest resident one were never touched since the stack
/// was mapped or since the C library released them (glibc hands a dead
/// thread's stack back with `MADV_DONTNEED` before caching it), or are
/// swapped out. Dropping them costs one system call and leaves zeros, also
/// where a swapped-out page held data; writing zeros would fault every
/// one of them in: 64 fresh pages cost a new worker about 0.2 ms per
/// generation, 10 % of an RSA-512 key (`bench/examples/pool_cost`). Every
/// page from `here` down to the lowest resident one is wiped by writing,
/// resident or not, so a gap left by a large `alloca` that was only partly
/// written is covered.
fn resident_depth(here: usize, room: usize) -> usize {
    const MAX_PAGES: usize = STACK_WIPE / 4096 + 1;
    let page = page_size();
    let top = here & !(page - 1);
    let bottom = (here - room).next_multiple_of(page);
    if page < 4096 || top <= bottom {
        return room;
    }
    let pages = (top - bottom) / page;
    // SAFETY: [bottom, top) is page-aligned and lies in this thread's
    // stack mapping, between the guard margin and the current frame:
    // every page below the lowest resident one is below every live frame,
    // in the thread's own private anonymous stack mapping.
    match unsafe { drop_below_resident::<MAX_PAGES>(bottom, pages, page) } {
        Some(lowest) => here - (bottom + lowest * page),
        None => room,
    }
}

/// The index of the lowest resident page among the `pages` pages of
/// `page` bytes from `bottom` (`pages` when none is), after dropping the
/// pages below it (`os::discard`: never touched, or swapped out; they
/// read as zeros afterwards). `None` where the kernel would not tell or
/// drop, or `pages` exceeds `N`.
///
/// # Safety
/// `bottom` is page-aligned, the range lies in a private anonymous
/// mapping of the caller's, and nothing live lies in it below the lowest
/// resident page.
pub(super) unsafe fn drop_below_resident<const N: usize>(
    bottom: usize,
    pages: usize,
    page: usize,
) -> Option<usize> {
    let mut vec = [0u8; N];
    if pages > N {
        return None;
    }
    // Both calls below enter the kernel, where a waiting thread's registers
    // can be read: nothing a caller computed may be left in them.
    super::clear_registers();
    // SAFETY: per this function's contract; `vec` has an entry per page.
    unsafe {
        if !super::os::resident(bottom as *mut libc::c_void, pages * page, &mut vec) {
            return None;
        }
        let lowest = vec[..pages]
            .iter()
            .position(|&v| v & 1 != 0)
            .unwrap_or(pages);
        if lowest > 0 && !super::os::discard(bottom as *mut libc::c_void, lowest * page) {
            return None;
        }
        Some(lowest)
    }
}

/// The system's page size (cached).
fn page_size() -> usize {
    static PAGE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    // SAFETY: sysconf has no preconditions.
    *PAGE.get_or_init(|| match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
        n if n > 0 => n as usize,
        _ => 4096,
    })
}

/// Bytes per link of the wipe chain.
const WIPE_CHUNK: usize = 16 * 1024;
/// Stack left untouched above the lowest address (guard page, signal
/// frames, the chain's own frame overheads).
const STACK_MARGIN: usize = 32 * 1024;

#[inline(never)]
fn wipe_down(levels: usize) {
    let mut buf = [0u64; WIPE_CHUNK / 8];
    std::hint::black_box(&mut buf);
    buf.zeroize();
    if levels > 1 {
        wipe_down(levels - 1);
    }
    // Used after the call: the frame stays below the caller's for the
    // whole chain (no tail call).
    std::hint::black_box(&buf);
}

/// The lowest usable address of the calling thread's stack (cached per
/// thread), where the C library can tell.
fn stack_low() -> Option<usize> {
    thread_local! {
        static LOW: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
    }
    if let Ok(Some(v)) = LOW.try_with(|c| c.get()) {
        return Some(v);
    }
    let low = query_stack_low()?;
    let _ = LOW.try_with(|c| c.set(Some(low)));
    Some(low)
}

#[cfg(target_os = "linux")]
fn query_stack_low() -> Option<usize> {
    stack_bounds().map(|(low, _)| low)
}

/// The calling thread's stack: its lowest address and its size.
#[cfg(target_os = "linux")]
fn stack_bounds() -> Option<(usize, usize)> {
    // SAFETY: pthread_getattr_np fills `attr` for the calling thread; it is
    // destroyed after reading the bounds.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return None;
        }
        let mut addr: *mut libc::c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let rc = libc::pthread_attr_getstack(&attr, &mut addr, &mut size);
        libc::pthread_attr_destroy(&mut attr);
        (rc == 0).then_some((addr as usize, size))
    }
}

#[cfg(not(target_os = "linux"))]
fn query_stack_low() -> Option<usize> {
    None
}

/// Runs `f` in a frame of its own, then wipes [`STACK_WIPE`] bytes below
/// this function's frame (every frame `f` used) and clears the vector
/// registers ([`super::clear_registers`]). The entry points that handle
/// secrets run their core call through it, so the wipe starts *above* the
/// frames that held the seed or key material, not inside them.
#[inline(never)]
pub(crate) fn with_wiped_stack<T>(f: impl FnOnce() -> T) -> T {
    let r = run_below(f);
    wipe_stack();
    super::clear_registers();
    r
}

#[inline(never)]
fn run_below<T>(f: impl FnOnce() -> T) -> T {
    std::hint::black_box(f())
}

/// Runs `f` on the calling thread with the part of its stack that `f` uses
/// marked `MADV_WIPEONFORK` (a `fork()` child sees zeros there) and
/// `MADV_DONTDUMP` (absent from core dumps); afterwards wipes
/// [`STACK_WIPE`] bytes below this frame and restores the defaults, so that
/// the C library may cache and reuse the stack for an ordinary thread.
///
/// The shielded range runs from the stack's lowest page up to the page
/// boundary below this frame; `f` is called below a one-page spacer, so
/// all of its frames lie inside the range. This frame and those above it
/// (the thread's start-up, and in glibc its TLS and descriptor, which the
/// C library reads in a fork child) are left as they are.
///
/// Used on every pool worker of a generation: a private thread whose
/// deeper frames hold candidates, stream states and GMP temporaries.
/// Where the stack's bounds are unknown, `f` still runs and the stack is
/// still wiped.
#[inline(never)]
pub(crate) fn run_shielded<T>(f: impl FnOnce() -> T) -> T {
    let here = std::hint::black_box(0u8);
    let shield = Shield::enter(std::ptr::addr_of!(here) as usize);
    let r = run_below_spacer(f);
    wipe_stack();
    drop(shield);
    r
}

#[inline(never)]
fn run_below_spacer<T>(f: impl FnOnce() -> T) -> T {
    let mut spacer = [0u8; 4096 + 64];
    std::hint::black_box(&mut spacer);
    let r = f();
    std::hint::black_box(&spacer);
    r
}

// Built only where the stack's bounds are known (Linux).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
struct Shield {
    lo: usize,
    len: usize,
}

impl Shield {
    #[cfg(target_os = "linux")]
    fn enter(here: usize) -> Option<Shield> {
        let (addr, size) = stack_bounds()?;
        let page = 4096usize;
        let hi = here & !(page - 1);
        let lo = (addr + page - 1) & !(page - 1);
        if hi <= lo || here >= addr + size {
            return None;
        }
        let shield = Shield { lo, len: hi - lo };
        // SAFETY: pages of this thread's own stack mapping (private and
        // anonymous); failures leave the defaults in place.
        unsafe {
            super::os::wipe_on_fork(shield.lo as *mut libc::c_void, shield.len);
            super::os::no_core_dump(shield.lo as *mut libc::c_void, shield.len);
        }
        Some(shield)
    }

    #[cfg(not(target_os = "linux"))]
    fn enter(_here: usize) -> Option<Shield> {
        None
    }
}

impl Drop for Shield {
    fn drop(&mut self) {
        // SAFETY: the pages `enter` advised, handed back to the defaults.
        unsafe {
            super::os::keep_on_fork(self.lo as *mut libc::c_void, self.len);
            super::os::core_dump(self.lo as *mut libc::c_void, self.len);
        }
    }
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

    /// Resident pages among the `STACK_WIPE` bytes below the caller.
    #[inline(never)]
    fn resident_pages_below() -> usize {
        let here = std::hint::black_box(0u8);
        let here = std::ptr::addr_of!(here) as usize;
        let page = page_size();
        let top = here & !(page - 1);
        let bottom = top - STACK_WIPE;
        let mut vec = vec![0u8; STACK_WIPE / page];
        // SAFETY: the test thread's 2 MiB stack maps this range.
        assert!(unsafe { crate::secure::os::resident(bottom as *mut _, STACK_WIPE, &mut vec) });
        vec.iter().filter(|&&v| v & 1 != 0).count()
    }

    /// On a fresh thread the wipe stays within the pages the thread used:
    /// it does not fault in the whole span (before, a new worker paid 64
    /// page faults per generation for pages that could only read as
    /// zeros), and a secret it left is still wiped.
    #[test]
    fn wipe_leaves_untouched_pages_alone() {
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(|| {
                let before = resident_pages_below();
                let addr = leave_a_secret();
                wipe_stack();
                assert!(!read_dead_stack(addr), "the secret survived");
                let after = resident_pages_below();
                assert!(
                    after <= before + 8,
                    "wipe faulted in {} pages ({before} resident before)",
                    after - before
                );
                // A deep secret is found and wiped the same way.
                let addr = leave_a_deep_secret();
                wipe_stack();
                assert!(!read_dead_stack(addr), "the deep secret survived");
            })
            .unwrap()
            .join()
            .unwrap();
    }

    /// What the vector registers are filled with before the wipe.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    const MARKER: u64 = 0x5EC2_E7F1_1E6A_11ED;

    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    extern "C" fn wipe_entry() {
        wipe_stack();
    }

    /// The child's part of [`the_wipe_enters_the_kernel_with_clear_registers`]:
    /// fills every vector register the CPU has with [`MARKER`], makes a
    /// getppid(2) (the control: the trace must see the marker there), calls
    /// the wipe and exits — in one block, so no compiled code between the
    /// fill and the wipe can disturb the registers.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    fn fill_then_wipe() -> ! {
        let avx512 = std::arch::is_x86_feature_detected!("avx512f");
        // SAFETY: never returns; the child exits from inside the block.
        // The stack is aligned for a call on entry (no `nostack`); the
        // EVEX forms run only where the CPU has AVX-512F.
        unsafe {
            std::arch::asm!(
                "movq xmm0, {m}",
                "punpcklqdq xmm0, xmm0",
                "movdqa xmm1, xmm0", "movdqa xmm2, xmm0", "movdqa xmm3, xmm0",
                "movdqa xmm4, xmm0", "movdqa xmm5, xmm0", "movdqa xmm6, xmm0",
                "movdqa xmm7, xmm0", "movdqa xmm8, xmm0", "movdqa xmm9, xmm0",
                "movdqa xmm10, xmm0", "movdqa xmm11, xmm0", "movdqa xmm12, xmm0",
                "movdqa xmm13, xmm0", "movdqa xmm14, xmm0", "movdqa xmm15, xmm0",
                "test {avx512}, {avx512}",
                "jz 2f",
                "vpbroadcastq zmm0, {m}",
                "vmovdqa64 zmm1, zmm0", "vmovdqa64 zmm2, zmm0", "vmovdqa64 zmm3, zmm0",
                "vmovdqa64 zmm4, zmm0", "vmovdqa64 zmm5, zmm0", "vmovdqa64 zmm6, zmm0",
                "vmovdqa64 zmm7, zmm0", "vmovdqa64 zmm8, zmm0", "vmovdqa64 zmm9, zmm0",
                "vmovdqa64 zmm10, zmm0", "vmovdqa64 zmm11, zmm0", "vmovdqa64 zmm12, zmm0",
                "vmovdqa64 zmm13, zmm0", "vmovdqa64 zmm14, zmm0", "vmovdqa64 zmm15, zmm0",
                "vmovdqa64 zmm16, zmm0", "vmovdqa64 zmm17, zmm0", "vmovdqa64 zmm18, zmm0",
                "vmovdqa64 zmm19, zmm0", "vmovdqa64 zmm20, zmm0", "vmovdqa64 zmm21, zmm0",
                "vmovdqa64 zmm22, zmm0", "vmovdqa64 zmm23, zmm0", "vmovdqa64 zmm24, zmm0",
                "vmovdqa64 zmm25, zmm0", "vmovdqa64 zmm26, zmm0", "vmovdqa64 zmm27, zmm0",
                "vmovdqa64 zmm28, zmm0", "vmovdqa64 zmm29, zmm0", "vmovdqa64 zmm30, zmm0",
                "vmovdqa64 zmm31, zmm0",
                "2:",
                "mov eax, {ppid}",
                "syscall",
                "call {wipe}",
                "mov eax, {exit}",
                "xor edi, edi",
                "syscall",
                "ud2",
                m = in(reg) MARKER,
                avx512 = in(reg) u64::from(avx512),
                ppid = const libc::SYS_getppid,
                exit = const libc::SYS_exit_group,
                wipe = sym wipe_entry,
                options(noreturn),
            );
        }
    }

    /// The wipe's own system calls — the stack's bounds (on a main thread
    /// pthread_getattr_np reads /proc), mincore and madvise for the
    /// resident pages — find no register holding what the job computed:
    /// a thread waiting in the kernel is read at leisure (a core dump, a
    /// debugger, `PTRACE_GETREGSET`). A forked child under ptrace fills
    /// every vector register with a marker, makes a getppid(2) (the
    /// control: the marker must be seen there) and calls the wipe; the
    /// parent reads the XSAVE area at every later system-call stop. (The
    /// wipe cleared the registers only after its system calls: a search
    /// worker entered mincore and madvise with 8 bytes of p in xmm14.)
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[test]
    fn the_wipe_enters_the_kernel_with_clear_registers() {
        // SAFETY: fork; the child stops, then runs one asm block that ends
        // in exit_group; the parent traces it with ptrace and reaps it.
        let (stops, control, dirty) = unsafe {
            let pid = libc::fork();
            if pid == 0 {
                if libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0) != 0 {
                    libc::syscall(libc::SYS_exit_group, 3);
                }
                libc::raise(libc::SIGSTOP);
                fill_then_wipe();
            }
            assert!(pid > 0, "fork failed");
            let mut status = 0;
            libc::waitpid(pid, &mut status, 0);
            if !libc::WIFSTOPPED(status) {
                crate::capability::skip(
                    "ptrace",
                    "ptrace refused: the registers at the wipe's system calls are not checked",
                );
                return;
            }
            libc::ptrace(
                libc::PTRACE_SETOPTIONS,
                pid,
                0,
                libc::PTRACE_O_TRACESYSGOOD | libc::PTRACE_O_EXITKILL,
            );
            let mut xsave = vec![0u8; 64 * 1024];
            let (mut stops, mut control, mut dirty) = (0u32, false, Vec::new());
            loop {
                assert_eq!(libc::ptrace(libc::PTRACE_SYSCALL, pid, 0, 0), 0);
                libc::waitpid(pid, &mut status, 0);
                if !libc::WIFSTOPPED(status) {
                    break;
                }
                if libc::WSTOPSIG(status) != libc::SIGTRAP | 0x80 {
                    continue;
                }
                let mut regs: libc::user_regs_struct = std::mem::zeroed();
                assert_eq!(libc::ptrace(libc::PTRACE_GETREGS, pid, 0, &mut regs), 0);
                let mut iov = libc::iovec {
                    iov_base: xsave.as_mut_ptr().cast(),
                    iov_len: xsave.len(),
                };
                // NT_X86_XSTATE: every vector register at full width.
                assert_eq!(
                    libc::ptrace(libc::PTRACE_GETREGSET, pid, 0x202usize, &mut iov),
                    0
                );
                let held = xsave[..iov.iov_len]
                    .chunks_exact(8)
                    .filter(|c| u64::from_le_bytes((*c).try_into().unwrap()) == MARKER)
                    .count();
                if regs.orig_rax == libc::SYS_getppid as u64 {
                    control |= held > 0;
                } else if control {
                    stops += 1;
                    if held > 0 {
                        dirty.push((regs.orig_rax, held));
                    }
                }
            }
            assert!(
                libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
                "the traced child failed: status {status:#x}"
            );
            (stops, control, dirty)
        };
        assert!(
            control,
            "the marker was not seen in the registers at the control's getppid: the trace is broken"
        );
        assert!(
            stops >= 2,
            "only {stops} system-call stops after the control: the wipe made no system call?"
        );
        assert!(
            dirty.is_empty(),
            "the wipe entered the kernel with the marker in registers \
             (system call, 8-byte windows): {dirty:?}"
        );
    }

    /// On a thread whose whole stack is smaller than the wipe, the wipe
    /// stays inside it (before, it ran into the guard page and crashed).
    #[test]
    fn wipe_on_a_small_stack_stays_inside_it() {
        std::thread::Builder::new()
            .stack_size(96 * 1024)
            .spawn(|| {
                wipe_stack();
                let addr = leave_a_secret();
                wipe_stack();
                assert!(!read_dead_stack(addr), "the secret survived");
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
