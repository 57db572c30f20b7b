//! One-thread RSA through the C ABI runs on the calling thread, on a
//! private stack (`secure::fiber`): no thread is started, the progress
//! callback runs on the caller's own stack, a `fork()` from the callback
//! gives a child that runs, and cancelling works. One-thread DH below 768
//! bits runs on the calling thread too. One test in its own binary, so
//! that no other test's threads are counted.

mod common;

use std::ffi::{c_int, c_void};

use common::opts;
use primeforge::ffi::*;

/// The calling thread's stack: [low, high).
fn stack_bounds() -> (usize, usize) {
    // SAFETY: pthread_getattr_np fills `attr` for the calling thread; it is
    // destroyed after reading the bounds.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        assert_eq!(libc::pthread_getattr_np(libc::pthread_self(), &mut attr), 0);
        let mut addr: *mut c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        assert_eq!(libc::pthread_attr_getstack(&attr, &mut addr, &mut size), 0);
        libc::pthread_attr_destroy(&mut attr);
        (addr as usize, addr as usize + size)
    }
}

fn threads_alive() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

#[derive(Default)]
struct Seen {
    calls: u32,
    threads: Vec<usize>,
    frames: Vec<usize>,
    cancel_after: u32,
    fork: bool,
    child_status: Option<c_int>,
}

unsafe extern "C" fn watch(user: *mut c_void, _ev: *const pf_progress) -> c_int {
    let seen = unsafe { &mut *(user as *mut Seen) };
    let here = std::hint::black_box(0u8);
    seen.frames.push(std::ptr::addr_of!(here) as usize);
    seen.threads.push(threads_alive());
    seen.calls += 1;
    if seen.fork && seen.child_status.is_none() {
        // The child returns from fork() into this frame: it must be on
        // pages the child has (the caller's stack), not on ones a fork
        // child sees as zeros.
        // SAFETY: the child only calls _exit.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            unsafe { libc::_exit(42) };
        }
        let mut status = 0;
        // SAFETY: waits for the child just forked.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        seen.child_status = Some(status);
    }
    c_int::from(seen.cancel_after != 0 && seen.calls >= seen.cancel_after)
}

fn generate(bits: u32, threads: u32, seed: Option<&[u8; 32]>, seen: &mut Seen) -> pf_status {
    let mut o = opts(threads, seed);
    // Threads started for the call and joined before it returns, so that
    // the process's thread count tells what ran (no pool stays parked);
    // exactly the threads asked for, also on a one-core machine.
    o.flags =
        pf_options_flag::PF_THREADS_PER_CALL as u32 | pf_options_flag::PF_THREADS_EXACT as u32;
    o.progress = Some(watch);
    o.user_data = seen as *mut Seen as *mut c_void;
    let mut key = std::ptr::null_mut();
    let st = unsafe { pf_rsa_generate_ex(bits, 65537, 2, &o, &mut key) };
    unsafe { pf_rsa_free(key) };
    st
}

#[test]
fn one_thread_rsa_runs_on_the_calling_thread() {
    let (low, high) = stack_bounds();
    let before = threads_alive();
    // No thread is started, at the sizes made here (up to RSA-4096), and
    // every report runs on this thread's own stack.
    for bits in [512, 1024, 2048, 4096] {
        let mut seen = Seen::default();
        assert_eq!(generate(bits, 1, None, &mut seen), pf_status::PF_OK);
        assert!(seen.calls >= 1, "RSA-{bits}: no report");
        assert!(
            seen.threads.iter().all(|&n| n == before),
            "RSA-{bits}: threads alive during the reports {:?}, {before} before",
            seen.threads
        );
        assert!(
            seen.frames.iter().all(|&f| (low..high).contains(&f)),
            "RSA-{bits}: a report ran off the caller's stack"
        );
    }
    // With two threads, this thread is one worker and a pool's thread the
    // other (the contrast that makes the count above meaningful); the
    // reports still run on this thread's own stack.
    let mut seen = Seen::default();
    assert_eq!(generate(2048, 2, None, &mut seen), pf_status::PF_OK);
    assert!(
        seen.threads.iter().all(|&n| n == before + 1),
        "RSA-2048 on two threads: threads alive during the reports {:?}, {before} before",
        seen.threads
    );
    assert!(seen.frames.iter().all(|&f| (low..high).contains(&f)));
    assert_eq!(threads_alive(), before);

    // A fork from the callback: the child runs (and exits 42).
    let mut seen = Seen {
        fork: true,
        ..Seen::default()
    };
    assert_eq!(generate(1024, 1, None, &mut seen), pf_status::PF_OK);
    let status = seen.child_status.expect("forked");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 42,
        "the child forked from the callback died: status {status:#x}"
    );

    // Cancelling from the callback, at the first report or a later one.
    // The second report comes at the latest 100 ms in (the 50 ms
    // interval); a key that is done before it (a quarter of RSA-4096 keys
    // since the Miller–Rabin rounds run on IFMA) would end with PF_OK, so
    // the seed is one whose search is long: 367 ms here on an Intel Xeon
    // with IFMA, against a median of 100 ms.
    for cancel_after in [1, 2] {
        let mut seen = Seen {
            cancel_after,
            ..Seen::default()
        };
        assert_eq!(
            generate(4096, 1, Some(&[94u8; 32]), &mut seen),
            pf_status::PF_ERR_CANCELLED
        );
        assert_eq!(seen.calls, cancel_after);
    }

    // DH below 768 bits: no thread either; from 768 bits a worker runs.
    let dh = |bits: u32, threads: u32, seen: &mut Seen| {
        let mut o = opts(threads, Some(&[0x5Au8; 32]));
        o.flags = pf_options_flag::PF_THREADS_PER_CALL as u32;
        o.progress = Some(watch);
        o.user_data = seen as *mut Seen as *mut c_void;
        let mut p = std::ptr::null_mut();
        let st = unsafe { pf_dh_generate_ex(bits, 2, 0, &o, &mut p) };
        let mut b = std::ptr::null_mut();
        if st == pf_status::PF_OK {
            assert_eq!(
                unsafe { pf_dh_export(p, pf_format::PF_FORMAT_PKCS3_DER as u32, &mut b) },
                pf_status::PF_OK
            );
        }
        unsafe { pf_dh_free(p) };
        (st, (!b.is_null()).then(|| common::take(b)))
    };
    for bits in [256, 512, 767] {
        let mut seen = Seen::default();
        let (st, here) = dh(bits, 1, &mut seen);
        assert_eq!(st, pf_status::PF_OK);
        assert!(seen.calls >= 1);
        assert!(
            seen.threads.iter().all(|&n| n == before),
            "DH-{bits}: threads alive during the reports {:?}, {before} before",
            seen.threads
        );
        assert_eq!(here, dh(bits, 2, &mut Seen::default()).1, "DH-{bits}");
    }
    let mut seen = Seen::default();
    assert_eq!(dh(768, 1, &mut seen).0, pf_status::PF_OK);
    assert!(seen.threads.iter().all(|&n| n == before + 1));
    let mut seen = Seen {
        cancel_after: 1,
        ..Seen::default()
    };
    assert_eq!(dh(512, 1, &mut seen).0, pf_status::PF_ERR_CANCELLED);
    assert_eq!(seen.calls, 1);

    // Same key as on a pool, and the same again on the calling thread
    // (the private stack is reused, wiped).
    let seed = [0x3Cu8; 32];
    let der = |threads: u32| {
        let o = opts(threads, Some(&seed));
        let mut key = std::ptr::null_mut();
        assert_eq!(
            unsafe { pf_rsa_generate_ex(1024, 65537, 2, &o, &mut key) },
            pf_status::PF_OK
        );
        let mut b = std::ptr::null_mut();
        assert_eq!(
            unsafe { pf_rsa_export(key, pf_format::PF_FORMAT_PKCS8_DER as u32, &mut b) },
            pf_status::PF_OK
        );
        unsafe { pf_rsa_free(key) };
        common::take(b)
    };
    let here = der(1);
    assert_eq!(here, der(2));
    assert_eq!(here, der(1));
}
