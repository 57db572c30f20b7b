//! Worker pools kept between generations (`pf_options.threads`): parked
//! after a call and reused by the next one of the same size, never more
//! threads alive than callers asked for at once, joined after the quiet
//! period or by `pf_workers_release`, joined per call with
//! `PF_THREADS_PER_CALL`, never inherited by a `fork()` child, and not
//! started for a call that arrives while the library's generations
//! already occupy every core (unless `PF_THREADS_EXACT`). The
//! security side (what a parked worker holds) is in tests/leftovers.rs:
//! its cores are taken with the workers of earlier generations parked.
//!
//! Every test here counts the process's threads: they run one at a time.

use std::collections::BTreeSet;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use primeforge::ffi::pf_status::*;
use primeforge::ffi::*;

mod common;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

const PER_CALL: u32 = pf_options_flag::PF_THREADS_PER_CALL as u32;
const EXACT: u32 = pf_options_flag::PF_THREADS_EXACT as u32;

/// (tid, name) of this process's threads whose name starts with `prefix`.
fn threads_named(prefix: &str) -> BTreeSet<(i32, String)> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| {
            let t = t.ok()?;
            let name = std::fs::read_to_string(t.path().join("comm")).ok()?;
            let tid = t.file_name().to_str()?.parse().ok()?;
            Some((tid, name.trim().to_owned()))
        })
        .filter(|(_, n)| n.starts_with(prefix))
        .collect()
}

/// The tids of the library's worker threads (`primeforge-<index>`) as
/// listed by /proc.
fn listed_workers() -> BTreeSet<i32> {
    threads_named("primeforge-")
        .into_iter()
        .filter(|(_, n)| n["primeforge-".len()..].bytes().all(|b| b.is_ascii_digit()))
        .map(|(t, _)| t)
        .collect()
}

/// The worker threads, once /proc lists as many as the library counts
/// (busy + parked; waiting up to a second): a joined thread leaves
/// /proc/self/task a moment after the join returns, since the kernel
/// finishes its exit after waking the joiner.
fn workers() -> BTreeSet<i32> {
    let mut listed = BTreeSet::new();
    common::wait_until(Duration::from_secs(1), Duration::from_millis(2), || {
        listed = listed_workers();
        let (busy, idle) = counts();
        listed.len() == (busy + idle) as usize
    });
    listed
}

fn counts() -> (u32, u32) {
    let (mut busy, mut idle) = (u32::MAX, u32::MAX);
    assert_eq!(unsafe { pf_workers_count(&mut busy, &mut idle) }, PF_OK);
    (busy, idle)
}

/// Waits up to a second for no thread named `prefix…` to be listed (see
/// [`workers`]).
fn settled(prefix: &str) -> BTreeSet<(i32, String)> {
    let mut left = BTreeSet::new();
    common::wait_until(Duration::from_secs(1), Duration::from_millis(2), || {
        left = threads_named(prefix);
        left.is_empty()
    });
    left
}

fn release() {
    assert_eq!(pf_workers_release(), PF_OK);
    let left = settled("primeforge");
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(counts(), (0, 0));
}

/// A seeded RSA key's modulus (big-endian bytes).
fn rsa_modulus(bits: u32, threads: u32, flags: u32, seed: &[u8; 32]) -> Vec<u8> {
    let mut o = common::opts(threads, Some(seed));
    o.flags = flags;
    rsa_modulus_with(bits, &o)
}

/// The modulus of an RSA key made with options `o`.
fn rsa_modulus_with(bits: u32, o: &pf_options) -> Vec<u8> {
    let mut key = std::ptr::null_mut();
    assert_eq!(
        unsafe { pf_rsa_generate_ex(bits, 65537, 2, o, &mut key) },
        PF_OK
    );
    let mut buf = std::ptr::null_mut();
    assert_eq!(
        unsafe { pf_rsa_component(key, pf_rsa_part::PF_RSA_N as u32, &mut buf) },
        PF_OK
    );
    unsafe { pf_rsa_free(key) };
    common::take(buf)
}

fn dh_prime(bits: u32, threads: u32, flags: u32, seed: &[u8; 32]) -> Result<Vec<u8>, pf_status> {
    let mut o = common::opts(threads, Some(seed));
    o.flags = flags;
    dh_prime_with(bits, &o)
}

/// The prime of DH parameters made with options `o`.
fn dh_prime_with(bits: u32, o: &pf_options) -> Result<Vec<u8>, pf_status> {
    let mut p = std::ptr::null_mut();
    match unsafe { pf_dh_generate_ex(bits, 2, 0, o, &mut p) } {
        PF_OK => {}
        st => return Err(st),
    }
    let mut buf = std::ptr::null_mut();
    assert_eq!(
        unsafe { pf_dh_component(p, pf_dh_part::PF_DH_P as u32, &mut buf) },
        PF_OK
    );
    unsafe { pf_dh_free(p) };
    Ok(common::take(buf))
}

/// After a call, its pool is parked: the same threads, all idle, run the
/// next call of that size, whose output is what a call with its own
/// threads gives.
#[test]
fn a_pool_is_parked_and_reused() {
    let _s = serial();
    release();
    // What calls with threads of their own give (a per-call pool is new
    // threads: it may end parked ones, see below). RSA on three threads
    // is the calling thread and a pool of two; DH on two, a pool of two.
    let seed = [0x31u8; 32];
    // Exactly: on a machine of fewer cores, a call gets no more threads
    // than cores otherwise.
    let want: Vec<Vec<u8>> = (0..5u8)
        .map(|i| rsa_modulus(1024, 3, PER_CALL | EXACT, &[0x40 + i; 32]))
        .collect();
    let want_p = dh_prime(512, 2, PER_CALL | EXACT, &seed).unwrap();
    assert!(workers().is_empty());
    let first = rsa_modulus(1024, 3, EXACT, &seed);
    assert_eq!(counts(), (0, 2));
    let parked = workers();
    assert_eq!(parked.len(), 2, "{:?}", threads_named("primeforge"));
    for (i, want) in (0..5u8).zip(&want) {
        assert_eq!(&rsa_modulus(1024, 3, EXACT, &[0x40 + i; 32]), want);
        assert_eq!(workers(), parked, "the parked threads run every call");
    }
    assert_eq!(rsa_modulus(1024, 3, EXACT, &seed), first);
    // DH parameters lease the same pools.
    assert_eq!(dh_prime(512, 2, EXACT, &seed).unwrap(), want_p);
    assert_eq!(workers(), parked);
    assert_eq!(counts(), (0, 2));
    // A call with threads of its own while two are parked: never more
    // pool threads alive than asked for at once (two), so the parked pool
    // ends.
    rsa_modulus(1024, 3, PER_CALL | EXACT, &seed);
    assert_eq!(counts(), (0, 0));
    assert!(workers().is_empty());
    release();
}

/// `PF_THREADS_PER_CALL` joins the call's workers before it returns, for
/// RSA and DH; DH takes no other flag.
#[test]
fn per_call_threads_are_joined_before_return() {
    let _s = serial();
    release();
    rsa_modulus(1024, 3, PER_CALL, &[7u8; 32]);
    assert!(settled("primeforge").is_empty());
    dh_prime(512, 3, PER_CALL, &[7u8; 32]).unwrap();
    assert!(settled("primeforge").is_empty());
    // PF_THREADS_EXACT is a general flag too.
    dh_prime(512, 3, PER_CALL | EXACT, &[7u8; 32]).unwrap();
    assert!(settled("primeforge").is_empty());
    assert_eq!(counts(), (0, 0));
    let rsa_flag = pf_rsa_flag::PF_RSA_FIPS as u32;
    assert_eq!(
        dh_prime(512, 3, rsa_flag | PER_CALL, &[7u8; 32]),
        Err(PF_ERR_INVALID_ARGUMENT)
    );
    let msg = unsafe { std::ffi::CStr::from_ptr(pf_last_error_message()) };
    assert!(msg.to_str().unwrap().contains("RSA only"), "{msg:?}");
    // Unknown general bits are refused by RSA and DH alike.
    assert_eq!(
        dh_prime(512, 3, 1 << 18, &[7u8; 32]),
        Err(PF_ERR_INVALID_ARGUMENT)
    );
    let mut o = common::opts(2, None);
    o.flags = 1 << 18;
    let mut key = std::ptr::null_mut();
    assert_eq!(
        unsafe { pf_rsa_generate_ex(1024, 65537, 2, &o, &mut key) },
        PF_ERR_INVALID_ARGUMENT
    );
    assert!(key.is_null());
}

/// Calls of other sizes, one after another, keep no more threads than
/// the largest asked for; calls at once keep no more than they asked for
/// together; pools above 64 threads are never kept.
#[test]
fn never_more_threads_than_asked_for_at_once() {
    let _s = serial();
    release();
    // RSA on t threads: the calling thread and a pool of t − 1 (exactly
    // t, whatever the cores).
    for (t, i) in [2u32, 3, 4, 2, 3].into_iter().zip(0u8..) {
        rsa_modulus(512, t, EXACT, &[0x50 + i; 32]);
        let (busy, idle) = counts();
        assert_eq!(busy, 0);
        assert!(idle <= 3, "after {t} threads: {idle} parked");
        assert!(idle >= t - 1, "the last pool is parked");
        assert_eq!(workers().len(), idle as usize);
    }
    release();
    // Eight callers at once, two threads each.
    std::thread::scope(|s| {
        for c in 0..8u8 {
            s.spawn(move || {
                for i in 0..4u8 {
                    rsa_modulus(512, 2, 0, &[c * 16 + i + 1; 32]);
                }
            });
        }
    });
    let (busy, idle) = counts();
    assert_eq!(busy, 0);
    assert!((1..=8).contains(&idle), "{idle} parked after 8 × 2 threads");
    assert_eq!(workers().len(), idle as usize);
    release();
    // 66 threads: the calling thread and a pool of 65, above the 64 kept.
    rsa_modulus(512, 66, EXACT, &[0x77; 32]);
    assert_eq!(counts(), (0, 0));
    assert!(workers().is_empty());
}

/// Parked pools are joined after two quiet seconds, and the helper that
/// joins them ends with them.
#[test]
fn idle_pools_end_after_the_quiet_period() {
    let _s = serial();
    release();
    // The calling thread and a pool of two.
    rsa_modulus(512, 3, EXACT, &[0x61; 32]);
    assert_eq!(workers().len(), 2);
    // The helper names itself once it runs.
    assert!(
        common::wait_until(Duration::from_secs(1), Duration::from_millis(5), || {
            threads_named("primeforge-idle").len() == 1
        }),
        "{:?}",
        threads_named("")
    );
    let t = Instant::now();
    assert!(
        common::wait_until(Duration::from_secs(6), Duration::from_millis(50), || {
            threads_named("primeforge").is_empty()
        }),
        "still alive after {:?}: {:?}",
        t.elapsed(),
        threads_named("primeforge")
    );
    assert!(
        t.elapsed() >= Duration::from_millis(1500),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(counts(), (0, 0));
}

/// A cancelled generation parks its pool only once every worker has
/// stopped: right after the call returns, the parked workers use no CPU.
#[test]
fn a_cancelled_generation_parks_a_quiet_pool() {
    let _s = serial();
    release();
    unsafe extern "C" fn cancel_late(_: *mut std::ffi::c_void, ev: *const pf_progress) -> i32 {
        i32::from(unsafe { (*ev).elapsed_ns } > 150_000_000)
    }
    for _ in 0..3 {
        let mut o = common::opts(2, None);
        o.progress = Some(cancel_late);
        let mut p = std::ptr::null_mut();
        let st = unsafe { pf_dh_generate_ex(4096, 2, 0, &o, &mut p) };
        if st == PF_OK {
            unsafe { pf_dh_free(p) };
            continue;
        }
        assert_eq!(st, PF_ERR_CANCELLED);
        assert_eq!(counts(), (0, 2));
        let cpu = |tids: &BTreeSet<i32>| -> u64 {
            tids.iter()
                .map(|t| {
                    let stat =
                        std::fs::read_to_string(format!("/proc/self/task/{t}/stat")).unwrap();
                    let f: Vec<&str> = stat
                        .rsplit(')')
                        .next()
                        .unwrap()
                        .split_whitespace()
                        .collect();
                    // utime and stime, fields 14 and 15 (after the name: 12, 13).
                    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
                })
                .sum()
        };
        let w = workers();
        let before = cpu(&w);
        std::thread::sleep(Duration::from_millis(300));
        // Clock ticks (1/100 s): a worker still testing a DH-4096
        // candidate would use most of the 300 ms.
        assert!(cpu(&w) - before <= 5, "{} ticks", cpu(&w) - before);
    }
    release();
}

/// A `fork()` child inherits no running worker and no parked pool: its
/// first generation starts its own, with the same output.
#[test]
fn a_fork_child_starts_its_own_pool() {
    let _s = serial();
    release();
    let seed = [0x42u8; 32];
    let want = rsa_modulus(1024, 3, EXACT, &seed);
    assert_eq!(counts(), (0, 2));
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // The child: a stuck generation (waiting for the parent's
        // threads) is killed by the alarm.
        unsafe { libc::alarm(30) };
        let ok = counts() == (0, 0)
            && workers().is_empty()
            && rsa_modulus(1024, 3, EXACT, &seed) == want
            && counts() == (0, 2)
            && workers().len() == 2;
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    assert!(pid > 0);
    let mut status = 0;
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "child status {status:#x}"
    );
    // The parent's pool is untouched.
    assert_eq!(counts(), (0, 2));
    assert_eq!(rsa_modulus(1024, 3, 0, &seed), want);
    release();
}

/// Parked workers run the library's code between calls, so the library
/// must never be unmapped under them: both shared objects are marked
/// `NODELETE` (`dlclose` leaves them loaded), and a program that loads the
/// C library with `dlopen`, makes DH parameters on two threads and closes
/// it keeps running while the parked workers and their reaper wake up.
#[test]
fn dlclose_never_unmaps_parked_workers() {
    let _s = serial();
    for lib in [common::cdylib(), common::provider_module()] {
        let out = std::process::Command::new("readelf")
            .arg("-d")
            .arg(&lib)
            .output()
            .expect("readelf");
        let dynamic = String::from_utf8_lossy(&out.stdout);
        assert!(
            dynamic
                .lines()
                .any(|l| l.contains("FLAGS_1") && l.contains("NODELETE")),
            "{}: no NODELETE flag:\n{dynamic}",
            lib.display()
        );
    }
    // A second copy of the library in this process, loaded and closed.
    let path = std::ffi::CString::new(common::cdylib().to_str().unwrap()).unwrap();
    unsafe {
        let h = libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
        assert!(!h.is_null());
        let sym = |name: &std::ffi::CStr| {
            let f = libc::dlsym(h, name.as_ptr());
            assert!(!f.is_null(), "{name:?}");
            f
        };
        type Generate = unsafe extern "C" fn(
            u32,
            u32,
            u32,
            *const pf_options,
            *mut *mut pf_dh_params,
        ) -> pf_status;
        type Count = unsafe extern "C" fn(*mut u32, *mut u32) -> pf_status;
        let generate: Generate = std::mem::transmute(sym(c"pf_dh_generate_ex"));
        let count: Count = std::mem::transmute(sym(c"pf_workers_count"));
        let free: unsafe extern "C" fn(*mut pf_dh_params) = std::mem::transmute(sym(c"pf_dh_free"));
        let o = common::opts(2, Some(&[9u8; 32]));
        let mut p = std::ptr::null_mut();
        assert_eq!(generate(512, 2, 0, &o, &mut p), PF_OK);
        free(p);
        let (mut busy, mut idle) = (9, 9);
        assert_eq!(count(&mut busy, &mut idle), PF_OK);
        assert_eq!((busy, idle), (0, 2), "that copy parked its pool");
        assert_eq!(libc::dlclose(h), 0);
    }
    // That copy's reaper wakes every half second and joins its pool after
    // two seconds, running code of the closed library: wait until its
    // threads have ended by themselves (this copy's are released).
    assert_eq!(pf_workers_release(), PF_OK);
    let t = Instant::now();
    assert!(
        common::wait_until(Duration::from_secs(6), Duration::from_millis(20), || {
            threads_named("primeforge").is_empty()
        }),
        "{:?}",
        threads_named("primeforge")
    );
    assert!(
        t.elapsed() > Duration::from_millis(1000),
        "{:?}",
        t.elapsed()
    );
}

/// Busy worker counts a generation's progress callback saw.
unsafe extern "C" fn record_busy(user: *mut std::ffi::c_void, _: *const pf_progress) -> i32 {
    // SAFETY: `user` is the Vec the test passed.
    let seen = unsafe { &mut *(user as *mut Vec<u32>) };
    seen.push(counts().0);
    0
}

/// The output of `make` run with options for `threads` and `flags`, with
/// the busy worker counts its progress reports saw.
fn watching_busy(
    threads: u32,
    flags: u32,
    seed: &[u8; 32],
    make: impl FnOnce(&pf_options) -> Vec<u8>,
) -> (Vec<u8>, Vec<u32>) {
    let mut seen: Vec<u32> = Vec::new();
    let mut o = common::opts(threads, Some(seed));
    o.flags = flags;
    o.progress = Some(record_busy);
    o.user_data = &mut seen as *mut Vec<u32> as *mut std::ffi::c_void;
    let out = make(&o);
    assert!(!seen.is_empty(), "no progress report");
    (out, seen)
}

/// A seeded RSA modulus, with the busy worker counts seen by its
/// progress reports.
fn rsa_watching_busy(bits: u32, threads: u32, flags: u32, seed: &[u8; 32]) -> (Vec<u8>, Vec<u32>) {
    watching_busy(threads, flags, seed, |o| rsa_modulus_with(bits, o))
}

/// A seeded DH prime, with the busy worker counts seen by its progress
/// reports.
fn dh_watching_busy(bits: u32, threads: u32, flags: u32, seed: &[u8; 32]) -> (Vec<u8>, Vec<u32>) {
    watching_busy(threads, flags, seed, |o| dh_prime_with(bits, o).unwrap())
}

/// A call alone that asks for more threads than the process has cores
/// runs on as many threads as cores (RSA: the calling thread and a pool
/// of one fewer; DH from 768 bits: a pool of that many), on all it asked
/// for with `PF_THREADS_EXACT`; the output is the same.
#[test]
fn a_call_runs_on_no_more_threads_than_cores() {
    let _s = serial();
    release();
    let cores = std::thread::available_parallelism().unwrap().get() as u32;
    let asked = 4 * cores + 1;
    let seed = [0x5Du8; 32];
    let (fitted, seen) = rsa_watching_busy(1024, asked, 0, &seed);
    assert!(
        seen.iter().all(|&b| b == cores - 1),
        "RSA asked for {asked} threads on {cores} cores: busy {seen:?}, want {}",
        cores - 1
    );
    let (exact, seen) = rsa_watching_busy(1024, asked, EXACT, &seed);
    assert!(
        seen.iter().all(|&b| b == asked - 1),
        "RSA, PF_THREADS_EXACT: busy {seen:?}, want {}",
        asked - 1
    );
    assert_eq!(fitted, exact);
    release();
    let (fitted, seen) = dh_watching_busy(768, asked, 0, &seed);
    assert!(
        seen.iter().all(|&b| b == cores),
        "DH asked for {asked} threads on {cores} cores: busy {seen:?}, want {cores}"
    );
    let (exact, seen) = dh_watching_busy(768, asked, EXACT, &seed);
    assert!(
        seen.iter().all(|&b| b == asked),
        "DH, PF_THREADS_EXACT: busy {seen:?}, want {asked}"
    );
    assert_eq!(fitted, exact);
    release();
}

/// A call that starts while the library's generations already occupy
/// every core (here: one-thread DH-4096 jobs, one per core) is given
/// one thread and runs on its calling thread: it leases no pool. With
/// `PF_THREADS_EXACT` it gets the two threads it asked for (itself and a
/// pool of one); once the cores are free a call gets them again; the key
/// is the same each time.
#[test]
fn a_call_while_every_core_is_taken_runs_on_its_own_thread() {
    let _s = serial();
    release();
    let cores = std::thread::available_parallelism().unwrap().get() as u32;
    let seed = [0x3Cu8; 32];
    // Two threads: the calling thread and a pool of one.
    let (alone, seen) = rsa_watching_busy(1024, 2, 0, &seed);
    assert!(seen.iter().all(|&b| b == 1), "alone: busy {seen:?}");
    let jobs: Vec<*mut pf_job> = (0..cores)
        .map(|_| {
            let mut j = std::ptr::null_mut();
            let o = common::opts(1, None);
            assert_eq!(
                unsafe { pf_dh_generate_start(4096, 2, 0, &o, &mut j) },
                PF_OK
            );
            j
        })
        .collect();
    // Each job's generation leases a pool of one.
    assert!(
        common::wait_until(Duration::from_secs(5), Duration::from_millis(2), || {
            counts().0 == cores
        }),
        "the {cores} jobs never ran: {:?}",
        counts()
    );
    let (shrunk, seen) = rsa_watching_busy(1024, 2, 0, &seed);
    assert!(
        seen.iter().all(|&b| b == cores),
        "{cores} cores taken: this call's reports saw busy {seen:?} (a pool was leased)"
    );
    let (exact, seen) = rsa_watching_busy(1024, 2, EXACT, &seed);
    assert!(
        seen.iter().all(|&b| b == cores + 1),
        "PF_THREADS_EXACT: busy {seen:?}, want {}",
        cores + 1
    );
    for j in jobs {
        unsafe { pf_job_free(j) };
    }
    assert_eq!(counts().0, 0);
    let (again, seen) = rsa_watching_busy(1024, 2, 0, &seed);
    assert!(
        seen.iter().all(|&b| b == 1),
        "cores free again: busy {seen:?}"
    );
    assert_eq!(shrunk, alone);
    assert_eq!(exact, alone);
    assert_eq!(again, alone);
    release();
}
