//! The Rust side under valgrind memcheck: this test binary re-runs itself
//! under valgrind with a workload that goes through every export — RSA (on
//! two threads and on the calling thread's private stack) and
//! DH generation on a private pool of two workers, every format and part,
//! named groups, checks of good and broken input, cancellation from the
//! callback, bad arguments — and fails on any memcheck error or definite
//! leak. (The C examples get the same treatment in `tests/secrets.rs`;
//! AddressSanitizer on the Rust side needs nightly: see `.ci/asan`.)
//!
//!     valgrind --tool=memcheck --error-exitcode=99 --leak-check=full \
//!       --errors-for-leak-kinds=definite,indirect --show-possibly-lost=no \
//!       <this test binary> \
//!       workload_for_memcheck --exact --include-ignored --test-threads=1

mod common;

use std::os::raw::{c_int, c_void};
use std::ptr;

use primeforge::ffi::*;

fn ok(s: pf_status) {
    assert_eq!(s, pf_status::PF_OK);
}

unsafe extern "C" fn cancel_after(user: *mut c_void, _e: *const pf_progress) -> c_int {
    let left = unsafe { &mut *(user as *mut u32) };
    if *left == 0 {
        return 1;
    }
    *left -= 1;
    0
}

fn exports(mut each: impl FnMut(u32, *mut *mut pf_buffer) -> pf_status, formats: &[u32]) {
    for &f in formats {
        let mut b = ptr::null_mut();
        ok(each(f, &mut b));
        let bytes = common::take(b);
        assert!(!bytes.is_empty());
        if f % 2 == 1 {
            // PEM: check what a parser in the library makes of it.
            let mut problems = 0;
            let s = unsafe { pf_dh_check(bytes.as_ptr(), bytes.len(), &mut problems) };
            assert!(s == pf_status::PF_OK || s == pf_status::PF_ERR_DECODE);
        }
    }
}

/// The workload valgrind runs (ignored in a normal run: it is run by the
/// test below, under valgrind).
#[test]
#[ignore = "run under valgrind by rust_side_is_clean_under_memcheck"]
fn workload_for_memcheck() {
    unsafe {
        // RSA: 2 and 3 primes, two workers, fixed and OS seeds.
        for (bits, primes, seed) in [(1024u32, 2u32, Some([7u8; 32])), (1024, 3, None)] {
            let o = common::opts(2, seed.as_ref());
            let mut k = ptr::null_mut();
            ok(pf_rsa_generate_ex(bits, 65537, primes, &o, &mut k));
            assert_eq!(pf_rsa_bits(k), bits);
            exports(|f, b| pf_rsa_export(k, f, b), &[1, 2, 3, 4, 5, 6, 7, 8]);
            for part in 0..16 {
                let mut b = ptr::null_mut();
                if pf_rsa_component(k, part, &mut b) == pf_status::PF_OK {
                    common::take(b);
                }
            }
            pf_rsa_free(k);
        }
        // One thread: on the calling thread, on a private stack, with the
        // progress callback back on this stack; then cancelled at the
        // first report.
        for left in [u32::MAX, 0] {
            let mut left = left;
            let mut o = common::opts(1, Some(&[9u8; 32]));
            o.progress = Some(cancel_after);
            o.user_data = &mut left as *mut u32 as *mut c_void;
            let mut k = ptr::null_mut();
            let st = pf_rsa_generate_ex(1024, 65537, 2, &o, &mut k);
            if left == 0 {
                assert_eq!(st, pf_status::PF_ERR_CANCELLED);
                assert!(k.is_null());
            } else {
                ok(st);
                exports(|f, b| pf_rsa_export(k, f, b), &[1, 2]);
                pf_rsa_free(k);
            }
        }
        // DH: generated (both containers) and named groups.
        let o = common::opts(2, Some(&[3u8; 32]));
        let mut p = ptr::null_mut();
        ok(pf_dh_generate_ex(512, 2, 0, &o, &mut p));
        exports(|f, b| pf_dh_export(p, f, b), &[9, 10, 11, 12]);
        for part in 0..4 {
            let mut b = ptr::null_mut();
            if pf_dh_component(p, part, &mut b) == pf_status::PF_OK {
                common::take(b);
            }
        }
        pf_dh_free(p);
        for group in [1u32, 6] {
            let mut p = ptr::null_mut();
            ok(pf_dh_named(group, &mut p));
            exports(|f, b| pf_dh_export(p, f, b), &[9, 10]);
            pf_dh_free(p);
        }
        // Broken input for the checker.
        let mut problems = 0;
        for bad in [
            &b"-----BEGIN DH PARAMETERS-----\nAA==\n"[..],
            &[0x30, 0x82, 0xff],
            &[],
        ] {
            let s = pf_dh_check(bad.as_ptr(), bad.len(), &mut problems);
            assert_eq!(s, pf_status::PF_ERR_DECODE);
        }
        // Cancellation mid-search frees everything (at the first callback:
        // under valgrind the caller thread may get few time slices).
        let mut left = 0u32;
        let mut o = common::opts(2, None);
        o.progress = Some(cancel_after);
        o.user_data = &mut left as *mut u32 as *mut c_void;
        let mut k = ptr::null_mut();
        assert_eq!(
            pf_rsa_generate_ex(4096, 65537, 2, &o, &mut k),
            pf_status::PF_ERR_CANCELLED
        );
        assert!(k.is_null());
        // Background jobs: one taken, one cancelled, one freed while it runs.
        let o = common::opts(2, Some(&[5u8; 32]));
        let mut j = ptr::null_mut();
        ok(pf_dh_generate_start(512, 2, 0, &o, &mut j));
        assert_eq!(pf_job_wait(j, u64::MAX), pf_status::PF_OK);
        let mut p = ptr::null_mut();
        ok(pf_job_take_dh(j, &mut p));
        pf_dh_free(p);
        pf_job_free(j);
        let mut j = ptr::null_mut();
        ok(pf_rsa_generate_start(4096, 65537, 2, &o, &mut j));
        ok(pf_job_cancel(j));
        assert_eq!(pf_job_wait(j, u64::MAX), pf_status::PF_ERR_CANCELLED);
        pf_job_free(j);
        let mut j = ptr::null_mut();
        ok(pf_rsa_generate_start(2048, 65537, 2, &o, &mut j));
        pf_job_free(j);
        // Bad arguments.
        let mut p = ptr::null_mut();
        assert_ne!(pf_rsa_generate(511, 1, &mut k), pf_status::PF_OK);
        assert_ne!(pf_dh_generate(100, 2, 1, &mut p), pf_status::PF_OK);
        assert!(k.is_null() && p.is_null());
        // Secure buffers.
        let mut b = ptr::null_mut();
        ok(pf_buffer_new(100, &mut b));
        ptr::write_bytes(pf_buffer_data_mut(b), 0x5a, 100);
        ok(pf_buffer_check(b));
        pf_buffer_free(b);
        pf_buffer_free(ptr::null_mut());
    }
}

#[test]
fn rust_side_is_clean_under_memcheck() {
    let exe = std::env::current_exe().unwrap();
    let r = std::process::Command::new("valgrind")
        .args([
            "--tool=memcheck",
            "--error-exitcode=99",
            "--leak-check=full",
            "--errors-for-leak-kinds=definite,indirect",
            "--show-possibly-lost=no",
            "-q",
        ])
        .arg(&exe)
        .args([
            "workload_for_memcheck",
            "--exact",
            "--include-ignored",
            "--test-threads=1",
        ])
        .output()
        .expect("valgrind is needed (installed by .ci/deps)");
    let text =
        String::from_utf8_lossy(&r.stdout).into_owned() + &String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(0), "valgrind:\n{text}");
    assert!(
        text.contains("1 passed"),
        "the workload did not run:\n{text}"
    );
}
