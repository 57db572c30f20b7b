//! `pf_options`, progress events and work counters.

use std::ffi::{c_int, c_void};

use super::detail::invalid;
use super::pf_status;
use crate::prime::{Options, Progress, Stats, SEED_LEN};

/// Progress event passed to a `pf_progress_fn`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct pf_progress {
    /// Candidates drawn so far.
    pub candidates: u64,
    /// Candidates that survived trial division.
    pub survivors: u64,
    /// Modular exponentiations started so far.
    pub exponentiations: u64,
    /// Nanoseconds since the generation started.
    pub elapsed_ns: u64,
    /// Primes found so far.
    pub primes_found: u32,
    /// Primes the generation needs in all.
    pub primes_needed: u32,
}

/// Work counters of one successful generation.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct pf_stats {
    /// Candidates drawn.
    pub candidates: u64,
    /// Candidates that survived trial division (and side conditions).
    pub survivors: u64,
    /// Modular exponentiations started, including abandoned ones.
    pub exponentiations: u64,
    /// Wall time in nanoseconds.
    pub elapsed_ns: u64,
}

/// Progress callback. Called only on the thread that called the generate
/// function, every 50 ms while the search runs and whenever primes are
/// found (one event may cover several primes). Every search ends with an
/// event, so the
/// callback runs at least once per generation (not for named groups).
/// Return 0 to continue, non-zero to cancel — also on the last event: the
/// generate call then returns `PF_ERR_CANCELLED` promptly, leaves `*out`
/// untouched and frees everything.
/// It always runs on the calling thread's own stack, also when a
/// one-thread RSA generation does its work on that thread (see
/// `pf_options.threads`): there, reports come between candidates, at
/// most one candidate and its pending confirmation rounds late (tens of
/// milliseconds at RSA-4096).
/// The callback must not call back into the same generation, throw a C++
/// exception or `longjmp` out. Leaving by `longjmp` (or a C++ exception)
/// skips the library's clean-up: the generation's worker threads keep
/// running with no one to wait for them, their pool is never parked or
/// joined (on one thread: its private stack is
/// abandoned, not wiped), its memory is leaked, and its seed and
/// candidates are never wiped — return non-zero to stop instead.
/// A `fork()` from the callback is allowed if the child execs or calls
/// `_exit` without returning from the callback.
pub type pf_progress_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, event: *const pf_progress) -> c_int>;

/// Options for the `*_generate_ex` functions. Initialise with
/// `pf_options_default()` and change what you need; `struct_size` lets the
/// structure grow in later versions without breaking older callers.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct pf_options {
    /// `sizeof(pf_options)` as the caller compiled it.
    pub struct_size: u32,
    /// Worker threads: 0 = all available cores; at most 1024. They run on
    /// a private pool of the library's (never a pool of the host's). When
    /// the call returns, every worker has ended its work, wiped the part of
    /// its stack the work used and cleared its registers; then the pool is
    /// parked for the next call that asks for as many threads, which
    /// saves starting and joining threads on every call (0.1–0.5 ms, a
    /// few per cent of an RSA-2048 key on two threads). Parked workers
    /// are blocked, hold nothing of the calls they ran, have every
    /// asynchronous signal blocked, and keep their stacks excluded from
    /// core dumps and zeroed in a `fork()` child. A pool left unused for
    /// 2 seconds is joined; `pf_workers_release` joins every parked one
    /// at once, `pf_workers_count` tells how many there are, and
    /// `PF_THREADS_PER_CALL` in `flags` joins this call's workers before
    /// it returns instead. The library never keeps more threads alive
    /// than callers asked for at one time, nor pools above 64 threads
    /// (those are joined when their call ends). A `fork()` child inherits
    /// no running worker: its first generation starts its own. The
    /// calling thread's own stack never holds the seed or a candidate: it
    /// waits and runs the progress callback there. One thread (1, or 0 on a one-core machine) for RSA up to
    /// 4096 bits starts no thread: the calling thread does the work, on a
    /// private stack of the library's (2 MiB reserved, excluded from core
    /// dumps, zeros in a `fork()` child) that is wiped before the call
    /// returns; the callback still runs on the caller's own stack. That
    /// saves 0.1–0.5 ms per call (more than 10 % of an RSA-512 key). The
    /// thread keeps that stack, wiped, for its next call and unmaps it
    /// when it exits. With more threads at those sizes the calling thread
    /// is one of the workers, on that private stack, beside a pool of one
    /// thread fewer (`pf_workers_count` counts the pool's threads): a
    /// two-thread RSA key runs on the caller and one thread of the
    /// library. One-thread DH below 768 bits starts no thread
    /// either, and runs on the caller's own stack (DH parameters are
    /// public). The output is the same either way. Unless
    /// `PF_THREADS_EXACT` is set, a call runs on no more threads than the
    /// cores the process may run on (its CPU affinity mask and cgroup CPU
    /// quota): more threads would only take turns on the same cores, at
    /// a CPU cost (on 2 cores an RSA-2048 key asked on 16 threads cost
    /// 1.38 times the CPU of one thread); and a call that can run on its
    /// calling thread alone (RSA up to 4096 bits, DH below 768 bits) gets
    /// only the cores the library's generations already running leave
    /// free — at least one, its own thread.
    pub threads: u32,
    /// NULL for fresh OS randomness, or a 32-byte seed: the same seed gives
    /// byte-identical output at any thread count. It is read and copied
    /// into secure memory with asynchronous signals blocked, and wiped when
    /// the call (for a job, the job) ends; not retained. Keep it in a
    /// `pf_buffer` (`pf_buffer_copy` moves a seed there without passing it
    /// through registers a signal handler's frame would receive). An
    /// all-zero seed is refused (`PF_ERR_INVALID_ARGUMENT`): it is what a
    /// seed kept in a `pf_buffer` reads as in a `fork()` child.
    pub seed: *const u8,
    /// Length of `seed`; must be 32 when `seed` is set, 0 otherwise.
    pub seed_len: usize,
    /// Optional progress callback (NULL for none).
    pub progress: pf_progress_fn,
    /// Passed unchanged to `progress`.
    pub user_data: *mut c_void,
    /// Optional: receives the work counters when the call succeeds.
    pub stats: *mut pf_stats,
    /// Zero or more `pf_rsa_flag` values (RSA only) and `pf_options_flag`
    /// values (every generate function) or'ed together. Added in 0.2: a caller compiled against 0.1's header
    /// passes the shorter structure (`struct_size` 48), read as flags 0.
    pub flags: u32,
}

/// Flags for `pf_options.flags` in the RSA generate functions.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum pf_rsa_flag {
    /// Refuse (`PF_ERR_INVALID_ARGUMENT`, before any work) every request
    /// whose key would not meet FIPS 186-5: fewer than 2048 bits, a public
    /// exponent of 65535 or less, or more than two primes.
    PF_RSA_FIPS = 1,
    /// Provable primes: every prime p of the key is proven prime by a chain
    /// of Pocklington certificates (p − 1 = 2·r·q with q a proven prime
    /// above √p, down to primes below 2^81 that Miller–Rabin to the bases
    /// 2 … 37 decides) instead of being a probable prime confirmed by
    /// Miller–Rabin rounds, as nettle makes RSA primes. Faster than the
    /// default at 512 bits, where the rounds dominate; about as fast from
    /// 1024 bits up. Seeded output differs from the default's; the primes are not
    /// uniform among all primes of their size (p − 1 always has a prime
    /// factor above √p). Progress reports count every prime of the chains
    /// in `primes_found` and `primes_needed` (three per prime of an RSA-512
    /// key, five per prime of an RSA-2048 key). Refused (`PF_ERR_INVALID_ARGUMENT`) together with
    /// `PF_RSA_FIPS`: FIPS 186-5's provable primes are another
    /// construction (A.1.2). A library older than this flag refuses it
    /// as an unknown bit (`PF_ERR_INVALID_ARGUMENT`).
    PF_RSA_PROVABLE = 2,
    /// Keep every secret of the generation in the library's secret arena
    /// (memory advised `MADV_WIPEONFORK` and `MADV_DONTDUMP`: zeros in a
    /// `fork()` child, left out of core dumps) or make nothing: the call
    /// fails with `PF_ERR_SECURE_MEMORY` before any work when the arena's
    /// address space cannot be reserved in this process, and after the
    /// work (the key wiped, never returned) when a block of secret limbs
    /// went to the C heap meanwhile. Without this flag such blocks go to
    /// the C heap, wiped when freed but visible to a fork child or a core
    /// dump while the key is made; `pf_secure_memory_status` tells whether
    /// that ever happened. Added after 0.2.0: an older library refuses it as an
    /// unknown bit (`PF_ERR_INVALID_ARGUMENT`).
    PF_RSA_SECURE_ARENA = 4,
}

/// Flags for `pf_options.flags` that apply to every generate function
/// (RSA, DH parameters, DH batches and background jobs). They are numbered
/// from bit 16 up; the bits below are `pf_rsa_flag` values (RSA only).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum pf_options_flag {
    /// Start this call's worker threads for the call and join them before
    /// it returns, instead of taking a pool of parked workers and parking
    /// it again afterwards (see `pf_options.threads`). For hosts that want
    /// no thread of the library alive between calls (sandboxes entered
    /// after start-up, `fork()` without exec from another thread, leak
    /// checkers); costs 0.1–0.5 ms per call. The output is the same either
    /// way. Added after 0.2.0: an older library refuses it as an unknown
    /// bit (`PF_ERR_INVALID_ARGUMENT`).
    PF_THREADS_PER_CALL = 65536,
    /// Run on exactly `pf_options.threads` workers, even above the cores
    /// the process may run on and even when the library's generations
    /// already running (other calls, other threads of the host,
    /// background jobs) occupy every core. Without this flag a call runs
    /// on at most as many threads as cores (its CPU affinity mask and
    /// cgroup CPU quota), and an RSA generation up to 4096 bits (DH
    /// parameters below 768 bits) only on the cores the library's running
    /// generations leave free, on its calling thread alone when none is:
    /// more workers would only wait for the same cores, and each one
    /// costs CPU (on 2 cores, an RSA-2048 key asked on 16 threads cost
    /// 1.38 times the CPU of one thread; 8 host threads asking for
    /// 2-thread RSA-2048 keys made 12 % fewer keys per second than with
    /// one thread each). The decision is taken when the call starts. The
    /// output is the same either way. Added after 0.2.0: an older library
    /// refuses it as an unknown bit (`PF_ERR_INVALID_ARGUMENT`).
    PF_THREADS_EXACT = 131072,
}

/// The `pf_options_flag` bits: accepted by every generate function.
pub(crate) const GENERAL_FLAGS: u32 =
    pf_options_flag::PF_THREADS_PER_CALL as u32 | pf_options_flag::PF_THREADS_EXACT as u32;

/// Returns options with every field at its default: `struct_size` set,
/// `threads` 0 (all cores), no seed, no callback, no stats. Thread-safe.
#[no_mangle]
pub extern "C" fn pf_options_default() -> pf_options {
    pf_options {
        struct_size: std::mem::size_of::<pf_options>() as u32,
        threads: 0,
        seed: std::ptr::null(),
        seed_len: 0,
        progress: None,
        user_data: std::ptr::null_mut(),
        stats: std::ptr::null_mut(),
        flags: 0,
    }
}

/// Tells how many worker threads the library has: `*busy` receives the
/// number running generations now, `*idle` the number parked for the next
/// generation (see `pf_options.threads`). Either pointer may be NULL (that
/// count is not written); both are written on success only. The counts
/// are a snapshot: other threads' calls change them at any time.
/// Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn pf_workers_count(busy: *mut u32, idle: *mut u32) -> pf_status {
    super::guard(|| {
        let (b, i) = crate::threads::counts();
        let clamp = |n: usize| n.min(u32::MAX as usize) as u32;
        if !busy.is_null() {
            // SAFETY: checked non-NULL; the caller passes a writable u32.
            unsafe { super::write_out(busy, clamp(b)) };
        }
        if !idle.is_null() {
            // SAFETY: as above.
            unsafe { super::write_out(idle, clamp(i)) };
        }
        pf_status::PF_OK
    })
}

/// Joins every parked worker thread now, instead of after their quiet
/// period (see `pf_options.threads`), and the helper thread that would
/// have joined them: when it returns, the only threads of the library
/// alive are those of generations and background jobs still running. For
/// hosts that are about to enter a sandbox or `fork()` without exec, or
/// are done with the library: it is linked `NODELETE`, so `dlclose` never
/// unmaps code a parked worker runs, but only this (or the quiet period)
/// ends those threads. Returns `PF_OK`. Thread-safe; a generation that
/// starts afterwards starts its threads again, and from then on the
/// library keeps no more threads than callers ask for at once after this
/// call (earlier peaks are forgotten).
#[no_mangle]
pub extern "C" fn pf_workers_release() -> pf_status {
    super::guard(|| {
        crate::threads::release_idle();
        pf_status::PF_OK
    })
}

/// `struct_size` of the first version of `pf_options` (without `flags`).
const V1_STRUCT_SIZE: u32 = std::mem::offset_of!(pf_options, flags) as u32;

/// Largest `struct_size` accepted from a (newer) caller.
const MAX_STRUCT_SIZE: u32 = 4096;

/// Validated options from C.
pub(crate) struct CheckedOptions<'a> {
    pub threads: u32,
    pub seed: Option<&'a [u8]>,
    pub progress: pf_progress_fn,
    pub user_data: *mut c_void,
    pub stats: *mut pf_stats,
    pub flags: u32,
}

/// Checks `opts` (NULL = defaults).
///
/// # Safety
/// `opts` is NULL or points to `opts->struct_size` readable bytes; a seed
/// pointer is readable for `seed_len` bytes.
pub(crate) unsafe fn check_options<'a>(
    opts: *const pf_options,
) -> Result<CheckedOptions<'a>, pf_status> {
    if opts.is_null() {
        return Ok(CheckedOptions {
            threads: 0,
            seed: None,
            progress: None,
            user_data: std::ptr::null_mut(),
            stats: std::ptr::null_mut(),
            flags: 0,
        });
    }
    // Read the size through the raw pointer before forming a reference to
    // the whole structure: an older or broken caller's structure may be
    // shorter than ours.
    // SAFETY: `opts` is non-NULL and, per the contract, at least its first
    // field (`struct_size`, at offset 0) is readable.
    let size = unsafe { std::ptr::addr_of!((*opts).struct_size).read_unaligned() };
    let ours = std::mem::size_of::<pf_options>() as u32;
    if !(V1_STRUCT_SIZE..=MAX_STRUCT_SIZE).contains(&size) {
        return Err(invalid(
            "pf_options.struct_size is not sizeof(pf_options): initialise with pf_options_default()",
        ));
    }
    // Copy what the caller declared (an older, shorter structure leaves
    // the newer fields zero: no flags).
    let mut copy = pf_options {
        struct_size: 0,
        flags: 0,
        ..pf_options_default()
    };
    // SAFETY: min(size, ours) bytes are readable at `opts` (the caller
    // declared `size`) and writable in `copy`; every field of pf_options
    // accepts any bit pattern the caller's structure may hold (integers,
    // raw pointers, a nullable function pointer read from a C caller).
    unsafe {
        std::ptr::copy_nonoverlapping(
            opts.cast::<u8>(),
            (&mut copy as *mut pf_options).cast::<u8>(),
            size.min(ours) as usize,
        );
    }
    let o = &copy;
    if size > ours {
        // A newer caller: fields we do not know must be zero (unused).
        // SAFETY: the caller declared struct_size readable bytes.
        let tail = unsafe {
            std::slice::from_raw_parts(
                (opts as *const u8).add(ours as usize),
                (size - ours) as usize,
            )
        };
        if tail.iter().any(|&b| b != 0) {
            super::detail::record("unsupported: pf_options fields newer than this library are set");
            return Err(pf_status::PF_ERR_UNSUPPORTED);
        }
    }
    if o.threads > crate::threads::MAX_THREADS {
        return Err(invalid("threads > 1024"));
    }
    let seed = match (o.seed.is_null(), o.seed_len) {
        (true, 0) => None,
        (true, _) => return Err(invalid("seed_len is set but seed is NULL")),
        // SAFETY: the caller declared `seed_len` (32) readable bytes at `seed`.
        (false, SEED_LEN) => Some(unsafe { std::slice::from_raw_parts(o.seed, SEED_LEN) }),
        (false, _) => return Err(invalid("seed_len must be 32")),
    };
    // 32 zero bytes are what a seed kept in a `pf_buffer` reads as in a
    // fork child (the kernel wiped it): refuse rather than generate a key
    // anyone can reproduce.
    if seed.is_some_and(|s| s.iter().all(|&b| b == 0)) {
        return Err(invalid(
            "the seed is all zeros (a secure buffer read in a fork() child?)",
        ));
    }
    Ok(CheckedOptions {
        threads: o.threads,
        seed,
        progress: o.progress,
        user_data: o.user_data,
        stats: o.stats,
        flags: o.flags,
    })
}

/// The C form of a progress report.
pub(crate) fn progress_event(p: &Progress) -> pf_progress {
    pf_progress {
        candidates: p.candidates,
        survivors: p.survivors,
        exponentiations: p.exponentiations,
        elapsed_ns: p.elapsed.as_nanos().min(u64::MAX as u128) as u64,
        primes_found: p.primes_found as u32,
        primes_needed: p.primes_needed as u32,
    }
}

impl CheckedOptions<'_> {
    /// Runs `f` with core options whose progress callback calls the C one.
    pub(crate) fn with_core<T>(&self, f: impl FnOnce(&mut Options<'_>) -> T) -> T {
        let cb = self.progress;
        let user_data = self.user_data;
        let mut forward = move |p: &Progress| -> bool {
            let Some(cb) = cb else { return false };
            let ev = progress_event(p);
            // SAFETY: the caller supplied this callback and its user data.
            unsafe { cb(user_data, &ev) != 0 }
        };
        let mut opts = Options {
            threads: self.threads,
            seed: self.seed,
            progress: if cb.is_some() {
                Some(&mut forward)
            } else {
                None
            },
            rsa_fips: self.flags & pf_rsa_flag::PF_RSA_FIPS as u32 != 0,
            rsa_provable: self.flags & pf_rsa_flag::PF_RSA_PROVABLE as u32 != 0,
            progress_interval: None,
            per_call_threads: self.threading().per_call_threads,
            exact_threads: self.threading().exact_threads,
        };
        f(&mut opts)
    }

    /// The thread choices of the flags.
    pub(crate) fn threading(&self) -> crate::prime::Threading {
        crate::prime::Threading {
            per_call_threads: self.flags & pf_options_flag::PF_THREADS_PER_CALL as u32 != 0,
            exact_threads: self.flags & pf_options_flag::PF_THREADS_EXACT as u32 != 0,
        }
    }

    /// Writes the counters if the caller asked for them.
    pub(crate) fn write_stats(&self, s: &Stats) {
        if !self.stats.is_null() {
            let v = pf_stats {
                candidates: s.candidates,
                survivors: s.survivors,
                exponentiations: s.exponentiations,
                elapsed_ns: s.elapsed.as_nanos().min(u64::MAX as u128) as u64,
            };
            // SAFETY: documented as writable when set.
            unsafe { self.stats.write(v) };
        }
    }
}
