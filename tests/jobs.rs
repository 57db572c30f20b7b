//! Background jobs through the C ABI: same output as the blocking calls,
//! the descriptor with poll(2) and epoll, cancellation at random points,
//! free while running, many jobs from many threads, take semantics, fork,
//! and no thread left behind.

mod common;

use std::sync::Mutex;
use std::time::{Duration, Instant};

use primeforge::ffi::pf_status::*;
use primeforge::ffi::*;

/// The tests run one at a time: some count the process's threads, which
/// any other job would add to, and some time a cancel.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// Names of this process's threads that belong to the library.
fn library_threads() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|s| s.trim().to_owned())
        .filter(|n| n.starts_with("primeforge"))
        .collect()
}

/// Whether `fd` is readable right now (poll(2) with a zero timeout).
fn readable(fd: i32, wait_ms: i32) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let n = unsafe { libc::poll(&mut p, 1, wait_ms) };
    n == 1 && p.revents & libc::POLLIN != 0
}

fn start_rsa(bits: u32, o: &pf_options) -> *mut pf_job {
    let mut j = std::ptr::null_mut();
    assert_eq!(
        unsafe { pf_rsa_generate_start(bits, 65537, 2, o, &mut j) },
        PF_OK
    );
    j
}

fn start_dh(bits: u32, o: &pf_options) -> *mut pf_job {
    let mut j = std::ptr::null_mut();
    assert_eq!(
        unsafe { pf_dh_generate_start(bits, 2, 0, o, &mut j) },
        PF_OK
    );
    j
}

fn rsa_der(k: *const pf_rsa_key) -> Vec<u8> {
    let mut b = std::ptr::null_mut();
    assert_eq!(
        unsafe { pf_rsa_export(k, pf_format::PF_FORMAT_PKCS8_DER as u32, &mut b) },
        PF_OK
    );
    common::take(b)
}

fn dh_der(p: *const pf_dh_params) -> Vec<u8> {
    let mut b = std::ptr::null_mut();
    assert_eq!(
        unsafe { pf_dh_export(p, pf_format::PF_FORMAT_PKCS3_DER as u32, &mut b) },
        PF_OK
    );
    common::take(b)
}

/// A seeded job makes byte-for-byte what the blocking call makes with the
/// same seed; the options (and the seed) may be freed right after start.
#[test]
fn seeded_jobs_match_the_blocking_calls() {
    let _s = serial();
    let seed = [0x42u8; 32];
    let o = common::opts(2, Some(&seed));
    let mut blocking = std::ptr::null_mut();
    assert_eq!(
        unsafe { pf_rsa_generate_ex(1024, 65537, 2, &o, &mut blocking) },
        PF_OK
    );
    let job = {
        let seed_copy = Box::new(seed);
        let o = Box::new(common::opts(3, Some(&seed_copy)));
        let j = start_rsa(1024, &o);
        // The caller's options and seed are gone before the job needs them.
        drop(o);
        let mut seed_copy = seed_copy;
        seed_copy.fill(0);
        j
    };
    assert_eq!(unsafe { pf_job_wait(job, u64::MAX) }, PF_OK);
    let mut k = std::ptr::null_mut();
    assert_eq!(unsafe { pf_job_take_rsa(job, &mut k) }, PF_OK);
    assert_eq!(rsa_der(k), rsa_der(blocking));
    unsafe {
        pf_rsa_free(k);
        pf_rsa_free(blocking);
        pf_job_free(job);
    }

    let o = common::opts(1, Some(&seed));
    let mut blocking = std::ptr::null_mut();
    assert_eq!(
        unsafe { pf_dh_generate_ex(512, 2, 0, &o, &mut blocking) },
        PF_OK
    );
    let job = start_dh(512, &common::opts(2, Some(&seed)));
    assert_eq!(unsafe { pf_job_wait(job, u64::MAX) }, PF_OK);
    let mut p = std::ptr::null_mut();
    assert_eq!(unsafe { pf_job_take_dh(job, &mut p) }, PF_OK);
    assert_eq!(dh_der(p), dh_der(blocking));
    unsafe {
        pf_dh_free(p);
        pf_dh_free(blocking);
        pf_job_free(job);
    }
}

/// Before the end: PF_PENDING everywhere, the descriptor not readable.
/// After: readable (and it stays so), poll gives the final counters, the
/// result is taken once, the wrong kind is refused.
#[test]
fn a_job_reports_pending_then_done_and_hands_its_result_out_once() {
    let _s = serial();
    // DH-2048 on one thread takes seconds: long enough to see it pending.
    let job = start_dh(2048, &common::opts(1, None));
    let fd = unsafe { pf_job_fd(job) };
    assert!(fd >= 0);
    assert!(!readable(fd, 0));
    let mut snap = pf_progress::default();
    assert_eq!(unsafe { pf_job_poll(job, &mut snap) }, PF_PENDING);
    assert_eq!(snap.primes_needed, 1);
    assert_eq!(unsafe { pf_job_wait(job, 0) }, PF_PENDING);
    assert_eq!(unsafe { pf_job_wait(job, 20) }, PF_PENDING);
    let mut p = std::ptr::null_mut();
    assert_eq!(unsafe { pf_job_take_dh(job, &mut p) }, PF_PENDING);
    assert!(p.is_null());
    // Progress moves while it runs (reports every 50 ms; the first
    // candidates come after the sieve's set-up).
    let t = Instant::now();
    while snap.candidates == 0 && t.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(unsafe { pf_job_poll(job, &mut snap) }, PF_PENDING);
    }
    assert!(snap.candidates > 0 && snap.elapsed_ns > 0, "{snap:?}");
    // poll(2) on the descriptor, as an event loop would.
    assert!(readable(fd, 120_000), "the job did not end in 2 minutes");
    assert!(readable(fd, 0), "the descriptor must stay readable");
    assert_eq!(unsafe { pf_job_poll(job, &mut snap) }, PF_OK);
    assert_eq!(snap.primes_found, 1);
    let mut k = std::ptr::null_mut();
    assert_eq!(unsafe { pf_job_take_rsa(job, &mut k) }, PF_ERR_WRONG_KIND);
    assert!(k.is_null());
    assert_eq!(unsafe { pf_job_take_dh(job, &mut p) }, PF_OK);
    assert_eq!(unsafe { pf_dh_bits(p) }, 2048);
    let mut again = std::ptr::null_mut();
    assert_eq!(
        unsafe { pf_job_take_dh(job, &mut again) },
        PF_ERR_ALREADY_TAKEN
    );
    assert!(again.is_null());
    // Still reports how it ended; the result outlives the job.
    assert_eq!(unsafe { pf_job_poll(job, std::ptr::null_mut()) }, PF_OK);
    unsafe { pf_job_free(job) };
    assert_eq!(unsafe { pf_dh_bits(p) }, 2048);
    unsafe { pf_dh_free(p) };
}

/// The descriptor works with epoll (level-triggered), next to others.
#[test]
fn the_descriptor_works_with_epoll() {
    let _s = serial();
    let jobs = [
        start_dh(512, &common::opts(1, None)),
        start_rsa(1024, &common::opts(1, None)),
        start_dh(768, &common::opts(1, None)),
    ];
    let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    assert!(ep >= 0);
    for (i, &j) in jobs.iter().enumerate() {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: i as u64,
        };
        let fd = unsafe { pf_job_fd(j) };
        assert_eq!(
            unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, fd, &mut ev) },
            0
        );
    }
    let mut done = [false; 3];
    let deadline = Instant::now() + Duration::from_secs(120);
    while done.iter().any(|d| !d) {
        assert!(Instant::now() < deadline, "jobs did not end");
        let mut evs = [libc::epoll_event { events: 0, u64: 0 }; 3];
        let n = unsafe { libc::epoll_wait(ep, evs.as_mut_ptr(), 3, 1000) };
        assert!(n >= 0);
        for ev in &evs[..n as usize] {
            let i = ev.u64 as usize;
            // Readable means ended.
            assert_ne!(
                unsafe { pf_job_poll(jobs[i], std::ptr::null_mut()) },
                PF_PENDING
            );
            if !done[i] {
                done[i] = true;
                let fd = unsafe { pf_job_fd(jobs[i]) };
                unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_DEL, fd, std::ptr::null_mut()) };
            }
        }
    }
    unsafe { libc::close(ep) };
    for j in jobs {
        assert_eq!(unsafe { pf_job_poll(j, std::ptr::null_mut()) }, PF_OK);
        unsafe { pf_job_free(j) };
    }
}

/// Cancels at random points of RSA and DH jobs of several sizes: each
/// ends with PF_ERR_CANCELLED (or PF_OK if it had already finished), its
/// descriptor becomes readable, nothing can be taken, and it ends soon
/// after the cancel (a generous bound: one progress interval, 50 ms, plus
/// the round the workers are in; a missing cancel would take seconds).
#[test]
fn cancel_at_random_points() {
    let _s = serial();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut cancelled = 0;
    let mut worst = Duration::ZERO;
    for i in 0..16 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let delay = Duration::from_millis(x % 200);
        let o = common::opts(2, None);
        let job = match i % 4 {
            // Sizes that outlast a 200 ms delay (raised once the IFMA
            // first tests made RSA-4096 and DH-3072 finish within it).
            0 => start_rsa(8192, &o),
            1 => start_dh(4096, &o),
            2 => start_rsa(16384, &o),
            _ => start_dh(1024, &o),
        };
        std::thread::sleep(delay);
        let t = Instant::now();
        assert_eq!(unsafe { pf_job_cancel(job) }, PF_OK);
        assert!(t.elapsed() < Duration::from_millis(20), "cancel blocked");
        assert_eq!(unsafe { pf_job_cancel(job) }, PF_OK); // idempotent
        let fd = unsafe { pf_job_fd(job) };
        assert!(readable(fd, 10_000), "job {i} did not end after cancel");
        worst = worst.max(t.elapsed());
        let st = unsafe { pf_job_poll(job, std::ptr::null_mut()) };
        match st {
            PF_ERR_CANCELLED => {
                cancelled += 1;
                let mut k = std::ptr::null_mut();
                let mut p = std::ptr::null_mut();
                let take = if i % 2 == 0 {
                    unsafe { pf_job_take_rsa(job, &mut k) }
                } else {
                    unsafe { pf_job_take_dh(job, &mut p) }
                };
                assert_eq!(take, PF_ERR_CANCELLED);
                assert!(k.is_null() && p.is_null());
            }
            PF_OK => {}
            other => panic!("job {i}: {other:?}"),
        }
        unsafe { pf_job_free(job) };
    }
    assert!(cancelled >= 8, "only {cancelled} of 16 were still running");
    assert!(
        worst < Duration::from_millis(1000),
        "a cancel took {worst:?} to end the job"
    );
    eprintln!("cancel: {cancelled}/16 cancelled, slowest end {worst:?}");
}

/// (busy, parked) worker threads (`pf_workers_count`).
fn worker_counts() -> (u32, u32) {
    let (mut busy, mut idle) = (0, 0);
    assert_eq!(unsafe { pf_workers_count(&mut busy, &mut idle) }, PF_OK);
    (busy, idle)
}

/// Freeing a running job cancels it, ends its thread and its workers'
/// work and returns: the job's thread is gone and every worker is parked
/// (none busy), or, with `PF_THREADS_PER_CALL`, no library thread is left.
#[test]
fn free_while_running_leaves_no_thread() {
    let _s = serial();
    let per_call = pf_options_flag::PF_THREADS_PER_CALL as u32;
    for (threads, flags) in [
        (1u32, 0),
        (4, 0),
        (16, 0),
        (1, per_call),
        (4, per_call),
        (16, per_call),
    ] {
        assert_eq!(pf_workers_release(), PF_OK);
        let mut o = common::opts(threads, None);
        // Every thread asked for runs, also above the machine's cores.
        o.flags = flags | pf_options_flag::PF_THREADS_EXACT as u32;
        let j1 = start_rsa(4096, &o);
        let j2 = start_dh(4096, &o);
        std::thread::sleep(Duration::from_millis(60));
        assert!(!library_threads().is_empty());
        let t = Instant::now();
        unsafe {
            pf_job_free(j1);
            pf_job_free(j2);
        }
        // A joined thread leaves /proc/self/task a moment after the join
        // returns (the kernel finishes its exit after waking the joiner).
        let mut left = Vec::new();
        common::wait_until(Duration::from_secs(1), Duration::from_millis(2), || {
            left = library_threads();
            !left
                .iter()
                .any(|n| n == "primeforge-job" || (flags == per_call && n != "primeforge-idle"))
        });
        let (busy, parked) = worker_counts();
        assert_eq!(busy, 0, "threads={threads}: workers busy after free");
        if flags == per_call {
            assert!(
                left.is_empty(),
                "threads={threads}: alive after free: {left:?}"
            );
        } else {
            // Parked workers only (and the helper that ends them).
            assert!(!left.iter().any(|n| n == "primeforge-job"), "{left:?}");
            let workers = left.iter().filter(|n| *n != "primeforge-idle").count();
            assert_eq!(workers, parked as usize, "threads={threads}: {left:?}");
        }
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    }
    // A finished job that is never taken: its thread is gone too, and
    // freeing it wipes the key.
    assert_eq!(pf_workers_release(), PF_OK);
    // Three threads: the job's thread and a pool of two.
    let j = start_rsa(512, &common::exact(3, None));
    assert_eq!(unsafe { pf_job_wait(j, u64::MAX) }, PF_OK);
    unsafe { pf_job_free(j) };
    // Joined, but /proc lists it a moment longer (see above).
    common::wait_until(Duration::from_secs(1), Duration::from_millis(2), || {
        !library_threads().iter().any(|n| n == "primeforge-job")
    });
    assert!(!library_threads().iter().any(|n| n == "primeforge-job"));
    assert_eq!(worker_counts(), (0, 2));
    assert_eq!(pf_workers_release(), PF_OK);
    common::wait_until(Duration::from_secs(1), Duration::from_millis(2), || {
        library_threads().is_empty()
    });
    assert!(library_threads().is_empty(), "{:?}", library_threads());
}

/// Many jobs at once, started, polled and taken from many threads: every
/// seeded result equals the blocking call's.
#[test]
fn many_jobs_from_many_threads() {
    let _s = serial();
    let seeds: Vec<[u8; 32]> = (1..=12u8).map(|i| [i; 32]).collect();
    let expected: Vec<Vec<u8>> = seeds
        .iter()
        .map(|s| {
            let mut p = std::ptr::null_mut();
            assert_eq!(
                unsafe { pf_dh_generate_ex(256, 2, 0, &common::opts(1, Some(s)), &mut p) },
                PF_OK
            );
            let d = dh_der(p);
            unsafe { pf_dh_free(p) };
            d
        })
        .collect();
    std::thread::scope(|sc| {
        for chunk in 0..4 {
            let seeds = &seeds;
            let expected = &expected;
            sc.spawn(move || {
                let mine: Vec<usize> = (chunk * 3..chunk * 3 + 3).collect();
                let jobs: Vec<usize> = mine
                    .iter()
                    .map(|&i| start_dh(256, &common::opts(2, Some(&seeds[i]))) as usize)
                    .collect();
                for (&i, &j) in mine.iter().zip(&jobs) {
                    let j = j as *mut pf_job;
                    assert_eq!(unsafe { pf_job_wait(j, u64::MAX) }, PF_OK);
                    let mut p = std::ptr::null_mut();
                    assert_eq!(unsafe { pf_job_take_dh(j, &mut p) }, PF_OK);
                    assert_eq!(dh_der(p), expected[i]);
                    unsafe {
                        pf_dh_free(p);
                        pf_job_free(j);
                    }
                }
            });
        }
    });
    // Several threads racing to take one result: exactly one gets it.
    let j = start_rsa(512, &common::opts(1, None)) as usize;
    assert_eq!(unsafe { pf_job_wait(j as *mut pf_job, u64::MAX) }, PF_OK);
    let winners: usize = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..8)
            .map(|_| {
                sc.spawn(move || {
                    let mut k = std::ptr::null_mut();
                    match unsafe { pf_job_take_rsa(j as *mut pf_job, &mut k) } {
                        PF_OK => {
                            unsafe { pf_rsa_free(k) };
                            1
                        }
                        PF_ERR_ALREADY_TAKEN => 0,
                        other => panic!("{other:?}"),
                    }
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum()
    });
    assert_eq!(winners, 1);
    unsafe { pf_job_free(j as *mut pf_job) };
}

/// A fork child inherits a running job but none of its threads: every call
/// says PF_ERR_FORKED, the descriptor is -1, free only releases the child's
/// copy; the parent's job is unaffected and finishes.
#[test]
fn a_fork_child_gets_an_unusable_job() {
    let _s = serial();
    let job = start_dh(1536, &common::opts(2, Some(&[9u8; 32])));
    std::thread::sleep(Duration::from_millis(30));
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        // The child: only async-signal-safe exits, and a code per failure.
        let mut code = 0;
        unsafe {
            let mut snap = pf_progress::default();
            if pf_job_poll(job, &mut snap) != PF_ERR_FORKED {
                code |= 1;
            }
            if pf_job_wait(job, 10) != PF_ERR_FORKED {
                code |= 2;
            }
            if pf_job_cancel(job) != PF_ERR_FORKED {
                code |= 4;
            }
            if pf_job_fd(job) != -1 {
                code |= 8;
            }
            let mut p = std::ptr::null_mut();
            if pf_job_take_dh(job, &mut p) != PF_ERR_FORKED || !p.is_null() {
                code |= 16;
            }
            pf_job_free(job);
            libc::_exit(code);
        }
    }
    let mut status = 0;
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(libc::WIFEXITED(status), "child crashed: {status:#x}");
    assert_eq!(libc::WEXITSTATUS(status), 0, "child's failure bits");
    // The parent's job was not cancelled by the child's free.
    assert_eq!(unsafe { pf_job_wait(job, u64::MAX) }, PF_OK);
    let mut p = std::ptr::null_mut();
    assert_eq!(unsafe { pf_job_take_dh(job, &mut p) }, PF_OK);
    let mut same = std::ptr::null_mut();
    assert_eq!(
        unsafe { pf_dh_generate_ex(1536, 2, 0, &common::opts(1, Some(&[9u8; 32])), &mut same) },
        PF_OK
    );
    assert_eq!(dh_der(p), dh_der(same));
    unsafe {
        pf_dh_free(p);
        pf_dh_free(same);
        pf_job_free(job);
    }
}
