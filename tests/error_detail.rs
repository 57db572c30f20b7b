//! `pf_last_error_message`: the detail behind a status, per thread, stable
//! until the next status-returning call on that thread.

mod common;

use std::ffi::CStr;

use primeforge::ffi::pf_status::*;
use primeforge::ffi::*;

fn last() -> String {
    let p = pf_last_error_message();
    assert!(!p.is_null());
    unsafe { CStr::from_ptr(p) }.to_str().unwrap().to_owned()
}

#[test]
fn each_failure_says_what_was_wrong() {
    std::thread::spawn(|| {
        assert_eq!(
            last(),
            "no primeforge call has returned a status on this thread"
        );
        let mut k = std::ptr::null_mut();
        let check = |st: pf_status, want_status: pf_status, want: &str| {
            assert_eq!(st, want_status);
            let m = last();
            assert!(m.contains(want), "got {m:?}, want {want:?}");
        };
        check(
            unsafe { pf_rsa_generate(511, 1, &mut k) },
            PF_ERR_INVALID_ARGUMENT,
            "invalid argument: bits must be even, 512..=16384",
        );
        check(
            unsafe { pf_rsa_generate(2048, 1025, &mut k) },
            PF_ERR_INVALID_ARGUMENT,
            "threads > 1024",
        );
        let mut o = common::opts(1, Some(&[1; 32]));
        o.seed_len = 31;
        check(
            unsafe { pf_rsa_generate_ex(1024, 65537, 2, &o, &mut k) },
            PF_ERR_INVALID_ARGUMENT,
            "seed_len must be 32",
        );
        let zero = common::opts(1, Some(&[0; 32]));
        check(
            unsafe { pf_dh_generate_start(512, 2, 0, &zero, &mut std::ptr::null_mut()) },
            PF_ERR_INVALID_ARGUMENT,
            "the seed is all zeros",
        );
        let mut small = common::opts(1, None);
        small.struct_size = 8;
        check(
            unsafe { pf_dh_generate_ex(512, 2, 0, &small, &mut std::ptr::null_mut()) },
            PF_ERR_INVALID_ARGUMENT,
            "struct_size",
        );
        check(
            unsafe { pf_dh_generate(512, 2, 1, std::ptr::null_mut()) },
            PF_ERR_NULL_ARGUMENT,
            "a required pointer argument was NULL",
        );
        check(
            unsafe { pf_dh_named(99, &mut std::ptr::null_mut()) },
            PF_ERR_INVALID_ARGUMENT,
            "unknown pf_dh_group value",
        );
        let mut key = std::ptr::null_mut();
        check(
            unsafe { pf_rsa_generate_ex(512, 65537, 2, &common::opts(1, None), &mut key) },
            PF_OK,
            "success",
        );
        let mut b = std::ptr::null_mut();
        check(
            unsafe { pf_rsa_export(key, 99, &mut b) },
            PF_ERR_INVALID_ARGUMENT,
            "unknown pf_format value",
        );
        check(
            unsafe { pf_rsa_export(key, pf_format::PF_FORMAT_PKCS3_PEM as u32, &mut b) },
            PF_ERR_INVALID_ARGUMENT,
            "not an RSA key format",
        );
        check(
            unsafe { pf_rsa_component(key, pf_rsa_part::PF_RSA_R3 as u32, &mut b) },
            PF_ERR_INVALID_ARGUMENT,
            "fewer primes",
        );
        let mut problems = 0;
        check(
            unsafe { pf_dh_check(b"junk".as_ptr(), 4, &mut problems) },
            PF_ERR_DECODE,
            "text with no PEM block",
        );
        // A value-returning call leaves the message alone.
        assert_eq!(unsafe { pf_rsa_bits(key) }, 512);
        assert!(last().contains("text with no PEM block"));
        unsafe { pf_rsa_free(key) };
        assert!(last().contains("text with no PEM block"));
        // A job that is still running: not an error.
        let mut job = std::ptr::null_mut();
        check(
            unsafe { pf_dh_generate_start(4096, 2, 0, &common::opts(1, None), &mut job) },
            PF_OK,
            "success",
        );
        check(
            unsafe { pf_job_poll(job, std::ptr::null_mut()) },
            PF_PENDING,
            "the job is still running",
        );
        unsafe { pf_job_cancel(job) };
        check(
            unsafe { pf_job_wait(job, u64::MAX) },
            PF_ERR_CANCELLED,
            "cancelled by the caller",
        );
        unsafe { pf_job_free(job) };
        // X9.42 export of parameters without q says why (it said only
        // "unsupported").
        let pkcs3 = b"-----BEGIN DH PARAMETERS-----\nMAYCAQcCAQI=\n-----END DH PARAMETERS-----\n";
        let mut d = std::ptr::null_mut();
        assert_eq!(
            unsafe { pf_dh_import(pkcs3.as_ptr(), pkcs3.len(), &mut d) },
            PF_OK
        );
        let mut b = std::ptr::null_mut();
        check(
            unsafe { pf_dh_export(d, pf_format::PF_FORMAT_X942_PEM as u32, &mut b) },
            PF_ERR_UNSUPPORTED,
            "these parameters have none; export them as PKCS#3",
        );
        unsafe { pf_dh_free(d) };
    })
    .join()
    .unwrap();
}

/// Each thread has its own message, and a message stays put until that
/// thread's next status-returning call.
#[test]
fn messages_are_per_thread_and_stable() {
    let mut k = std::ptr::null_mut();
    assert_eq!(
        unsafe { pf_rsa_generate(513, 1, &mut k) },
        PF_ERR_INVALID_ARGUMENT
    );
    let p = pf_last_error_message();
    let mine = unsafe { CStr::from_ptr(p) }.to_owned();
    std::thread::spawn(|| {
        let mut b = std::ptr::null_mut();
        assert_eq!(unsafe { pf_buffer_new(16, &mut b) }, PF_OK);
        assert_eq!(last(), "success");
        unsafe { pf_buffer_free(b) };
    })
    .join()
    .unwrap();
    // Same pointer, same text.
    assert_eq!(pf_last_error_message(), p);
    assert_eq!(unsafe { CStr::from_ptr(p) }, mine.as_c_str());
    assert!(mine.to_str().unwrap().contains("bits must be even"));
}

#[test]
fn pf_buffer_copy_names_what_it_refused() {
    std::thread::spawn(|| {
        let mut b = std::ptr::dangling_mut::<pf_buffer>();
        let check = |st: pf_status, want_status: pf_status, want: &str| {
            assert_eq!(st, want_status);
            let m = last();
            assert!(m.contains(want), "got {m:?}, want {want:?}");
        };
        check(
            unsafe { pf_buffer_copy(std::ptr::null(), 4, &mut b) },
            PF_ERR_NULL_ARGUMENT,
            "data is NULL and len is not 0",
        );
        check(
            unsafe { pf_buffer_copy(b"ab".as_ptr(), 2, std::ptr::null_mut()) },
            PF_ERR_NULL_ARGUMENT,
            "out is NULL",
        );
        check(
            unsafe { pf_buffer_copy(b"ab".as_ptr(), (1 << 30) + 1, &mut b) },
            PF_ERR_NO_MEMORY,
            "more than 1 GiB",
        );
        assert_eq!(b, std::ptr::dangling_mut(), "out written on failure");
    })
    .join()
    .unwrap();
}
