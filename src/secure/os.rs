//! The operating system's memory advice and allocator queries, in one
//! place, so that each platform's answer is chosen here and nowhere else.
//!
//! | what | Linux, Android | FreeBSD | OpenBSD, NetBSD | macOS, iOS | other |
//! |---|---|---|---|---|---|
//! | pages read as zeros in a fork child | `MADV_WIPEONFORK` | `minherit(INHERIT_ZERO)` | `minherit(MAP_INHERIT_ZERO)` | — | — |
//! | pages absent from a fork child | `MADV_DONTFORK` | — | `minherit(MAP_INHERIT_NONE)` | `minherit(VM_INHERIT_NONE)` | — |
//! | pages left out of core dumps | `MADV_DONTDUMP` | `MADV_NOCORE` | — | — | — |
//! | which pages are resident; drop pages to zeros | `mincore`; `MADV_DONTNEED` | — | — | — | — |
//! | usable size of a malloc block | `malloc_usable_size` | `malloc_usable_size` | — | `malloc_size` | — |
//! | the CPU a thread runs on | `sched_getcpu` | — | — | — | — |
//!
//! Only Linux (x86-64) is built and tested here. The other columns follow
//! the `libc` crate's declarations for those targets and are unverified:
//! no toolchain for them can be installed on the development machine.
//! Where a row has no answer the guarantee is weaker, not absent: secret
//! memory is still locked where `mlock` allows, wiped on release and
//! guarded by `PROT_NONE` pages; what goes is the protection in a fork
//! child (the arena is then not used and its blocks come from `malloc`)
//! or in a core dump.

#![allow(unused_variables)]

use libc::{c_void, size_t};

/// Fills `vec[i]` for each page of `[p, p + len)`: bit 0 set when the page
/// is resident. False where the platform cannot tell (everywhere but
/// Linux and Android, where [`discard`] exists too) or the call failed.
///
/// # Safety
/// `p` must be page-aligned, `[p, p + len)` mapped, and `vec` must hold
/// at least `len / page size` rounded up entries.
pub(crate) unsafe fn resident(p: *mut c_void, len: size_t, vec: &mut [u8]) -> bool {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        return libc::mincore(p, len, vec.as_mut_ptr()) == 0;
    }
    #[allow(unreachable_code)]
    false
}

/// Drops the pages of `[p, p + len)`, swapped-out ones included: they read
/// as zeros afterwards (`MADV_DONTNEED` on private anonymous memory, Linux
/// semantics; elsewhere the advice does not promise zeros, so nothing is
/// done and false returned). Whether it was done.
///
/// # Safety
/// `p`/`len` must describe page-aligned pages of a private anonymous
/// mapping the caller owns and no longer needs.
pub(crate) unsafe fn discard(p: *mut c_void, len: size_t) -> bool {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        return libc::madvise(p, len, libc::MADV_DONTNEED) == 0;
    }
    #[allow(unreachable_code)]
    false
}

/// `MAP_NORESERVE` where the platform has it, else no flag.
#[cfg(any(target_os = "linux", target_os = "android", target_vendor = "apple"))]
pub(crate) const MAP_NORESERVE: libc::c_int = libc::MAP_NORESERVE;
#[cfg(not(any(target_os = "linux", target_os = "android", target_vendor = "apple")))]
pub(crate) const MAP_NORESERVE: libc::c_int = 0;

/// Makes the pages at `p` read as zeros in a fork child. Whether the
/// platform did.
///
/// # Safety
/// `p`/`len` must describe page-aligned pages of a private anonymous
/// mapping the caller owns.
pub(crate) unsafe fn wipe_on_fork(p: *mut c_void, len: size_t) -> bool {
    // SAFETY: (each arm) advice on the caller's own mapping.
    unsafe {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        return libc::madvise(p, len, libc::MADV_WIPEONFORK) == 0;
        #[cfg(target_os = "freebsd")]
        return libc::minherit(p, len, libc::INHERIT_ZERO) == 0;
        #[cfg(any(target_os = "openbsd", target_os = "netbsd"))]
        return libc::minherit(p, len, libc::MAP_INHERIT_ZERO) == 0;
    }
    #[allow(unreachable_code)]
    false
}

/// Undoes [`wipe_on_fork`] (pages of a thread's stack handed back).
///
/// # Safety
/// As for [`wipe_on_fork`].
pub(crate) unsafe fn keep_on_fork(p: *mut c_void, len: size_t) {
    // SAFETY: (each arm) advice on the caller's own mapping.
    unsafe {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        libc::madvise(p, len, libc::MADV_KEEPONFORK);
        #[cfg(target_os = "freebsd")]
        libc::minherit(p, len, libc::INHERIT_COPY);
        #[cfg(any(target_os = "openbsd", target_os = "netbsd"))]
        libc::minherit(p, len, libc::MAP_INHERIT_COPY);
    }
}

/// Leaves the pages at `p` out of a fork child (the fallback where
/// [`wipe_on_fork`] is missing: the child faults on them). Whether the
/// platform did.
///
/// # Safety
/// As for [`wipe_on_fork`].
pub(crate) unsafe fn absent_in_child(p: *mut c_void, len: size_t) -> bool {
    // SAFETY: (each arm) advice on the caller's own mapping.
    unsafe {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        return libc::madvise(p, len, libc::MADV_DONTFORK) == 0;
        #[cfg(any(target_os = "openbsd", target_os = "netbsd"))]
        return libc::minherit(p, len, libc::MAP_INHERIT_NONE) == 0;
        #[cfg(target_vendor = "apple")]
        return libc::minherit(p, len, libc::VM_INHERIT_NONE) == 0;
    }
    #[allow(unreachable_code)]
    false
}

/// Leaves the pages at `p` out of core dumps, where the platform can.
///
/// # Safety
/// As for [`wipe_on_fork`].
pub(crate) unsafe fn no_core_dump(p: *mut c_void, len: size_t) {
    // SAFETY: (each arm) advice on the caller's own mapping.
    unsafe {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        libc::madvise(p, len, libc::MADV_DONTDUMP);
        #[cfg(any(target_os = "freebsd", target_os = "dragonfly"))]
        libc::madvise(p, len, libc::MADV_NOCORE);
    }
}

/// Keeps transparent huge pages off the pages at `p` (Linux), so that
/// only the small pages a private stack touches become resident, and
/// only those are wiped.
///
/// # Safety
/// As for [`wipe_on_fork`].
pub(crate) unsafe fn no_huge_pages(p: *mut c_void, len: size_t) {
    // SAFETY: advice on the caller's own mapping.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    unsafe {
        libc::madvise(p, len, libc::MADV_NOHUGEPAGE);
    }
}

/// Undoes [`no_core_dump`].
///
/// # Safety
/// As for [`wipe_on_fork`].
pub(crate) unsafe fn core_dump(p: *mut c_void, len: size_t) {
    // SAFETY: (each arm) advice on the caller's own mapping.
    unsafe {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        libc::madvise(p, len, libc::MADV_DODUMP);
        #[cfg(any(target_os = "freebsd", target_os = "dragonfly"))]
        libc::madvise(p, len, libc::MADV_CORE);
    }
}

/// The usable size of the malloc block at `p`, or `known` (the size it
/// was asked for) where the allocator cannot say or says less.
///
/// # Safety
/// `p` must be a live block from `malloc` of at least `known` bytes.
pub(crate) unsafe fn usable_size(p: *mut c_void, known: usize) -> usize {
    // SAFETY: (each arm) `p` is a live malloc block.
    let n: usize = unsafe {
        #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
        let n = libc::malloc_usable_size(p);
        #[cfg(target_vendor = "apple")]
        let n = libc::malloc_size(p);
        #[cfg(not(any(
            target_os = "linux",
            target_os = "android",
            target_os = "freebsd",
            target_vendor = "apple"
        )))]
        let n = 0;
        n
    };
    n.max(known)
}

/// The index of the CPU the calling thread runs on now (it may move at
/// any time: use it only to pick among equivalent copies), or `None` where
/// the platform cannot say.
pub(crate) fn current_cpu() -> Option<usize> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        // SAFETY: sched_getcpu takes no arguments and only reads (glibc
        // answers from the thread's rseq area).
        let c = unsafe { libc::sched_getcpu() };
        return usize::try_from(c).ok();
    }
    #[allow(unreachable_code)]
    None
}

/// How many CPU indices the system may hand out (at least 1).
pub(crate) fn cpu_slots() -> usize {
    // SAFETY: sysconf only reads.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    usize::try_from(n).unwrap_or(1).max(1)
}

/// Moves the calling thread onto CPU `cpu` alone; false where that CPU is
/// not allowed or the platform has no affinity call. For tests.
#[cfg(test)]
pub(crate) fn pin_to_cpu(cpu: usize) -> bool {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        if cpu >= libc::CPU_SETSIZE as usize {
            return false;
        }
        // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET writes
        // inside it (cpu < CPU_SETSIZE); sched_setaffinity reads it.
        return unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
        };
    }
    #[allow(unreachable_code)]
    false
}
