//! A table over every exported function: NULL for each pointer argument,
//! and out-of-range values for each integer argument, each giving the
//! documented status with out-parameters untouched. The table is checked
//! against the library's actual export list, so a new export without rows
//! here fails the test.

mod common;

use std::collections::BTreeSet;

use common::opts;
use primeforge::ffi::pf_status::*;
use primeforge::ffi::*;

fn exports() -> BTreeSet<String> {
    let out = std::process::Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(common::cdylib())
        .output()
        .expect("nm");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .filter(|n| n.starts_with("pf_"))
        .map(str::to_owned)
        .collect()
}

/// A sentinel that must survive every failing call.
fn sentinel<T>() -> *mut T {
    std::ptr::dangling_mut()
}

#[test]
fn every_export_rejects_bad_arguments_as_documented() {
    let covered: std::cell::RefCell<BTreeSet<&str>> = Default::default();
    let row = |name: &'static str, got: pf_status, want: pf_status| {
        assert_eq!(got, want, "{name}");
        covered.borrow_mut().insert(name);
    };

    // Live objects to pass where the other argument is the bad one.
    let mut key = std::ptr::null_mut();
    assert_eq!(unsafe { pf_rsa_generate(512, 1, &mut key) }, PF_OK);
    let mut dh = std::ptr::null_mut();
    assert_eq!(unsafe { pf_dh_named(1, &mut dh) }, PF_OK);
    let good = opts(1, None);
    let mut bad_seed = opts(1, Some(&[1; 32]));
    bad_seed.seed_len = 31;
    let mut null_seed = opts(1, None);
    null_seed.seed_len = 32; // length without a pointer
    let mut small = opts(1, None);
    small.struct_size = 8;

    // pf_buffer_*
    row(
        "pf_buffer_new",
        unsafe { pf_buffer_new(16, std::ptr::null_mut()) },
        PF_ERR_NULL_ARGUMENT,
    );
    let mut b = sentinel::<pf_buffer>();
    row(
        "pf_buffer_new",
        unsafe { pf_buffer_new(usize::MAX, &mut b) },
        PF_ERR_NO_MEMORY, // documented: more than 1 GiB
    );
    assert_eq!(b, sentinel());
    let mut b = sentinel::<pf_buffer>();
    row(
        "pf_buffer_copy",
        unsafe { pf_buffer_copy(std::ptr::null(), 4, &mut b) },
        PF_ERR_NULL_ARGUMENT, // NULL data with a length
    );
    row(
        "pf_buffer_copy",
        unsafe { pf_buffer_copy(b"abcd".as_ptr(), 4, std::ptr::null_mut()) },
        PF_ERR_NULL_ARGUMENT,
    );
    assert_eq!(b, sentinel());
    // NULL with length 0 is an empty buffer.
    row(
        "pf_buffer_copy",
        unsafe { pf_buffer_copy(std::ptr::null(), 0, &mut b) },
        PF_OK,
    );
    assert_eq!(unsafe { pf_buffer_len(b) }, 0);
    unsafe { pf_buffer_free(b) };
    row(
        "pf_buffer_check",
        unsafe { pf_buffer_check(std::ptr::null()) },
        PF_ERR_NULL_ARGUMENT,
    );
    row(
        "pf_secure_memory_status",
        unsafe { pf_secure_memory_status(std::ptr::null_mut()) },
        PF_ERR_NULL_ARGUMENT,
    );
    // Both out-pointers may be NULL (that count is not written).
    row(
        "pf_workers_count",
        unsafe { pf_workers_count(std::ptr::null_mut(), std::ptr::null_mut()) },
        PF_OK,
    );
    row("pf_workers_release", pf_workers_release(), PF_OK);
    assert!(unsafe { pf_buffer_data(std::ptr::null()) }.is_null());
    assert!(unsafe { pf_buffer_data_mut(std::ptr::null_mut()) }.is_null());
    assert_eq!(unsafe { pf_buffer_len(std::ptr::null()) }, 0);
    assert!(!unsafe { pf_buffer_locked(std::ptr::null()) });
    unsafe { pf_buffer_free(std::ptr::null_mut()) };
    for n in [
        "pf_buffer_data",
        "pf_buffer_data_mut",
        "pf_buffer_len",
        "pf_buffer_locked",
        "pf_buffer_free",
    ] {
        covered.borrow_mut().insert(n);
    }

    // pf_rsa_*
    row(
        "pf_rsa_generate",
        unsafe { pf_rsa_generate(2048, 1, std::ptr::null_mut()) },
        PF_ERR_NULL_ARGUMENT,
    );
    let mut k = sentinel::<pf_rsa_key>();
    for (bits, threads) in [
        (0u32, 1u32),
        (511, 1),
        (2047, 1),
        (16386, 1),
        (u32::MAX, 1),
        (1024, 1025),
        (1024, u32::MAX),
    ] {
        row(
            "pf_rsa_generate",
            unsafe { pf_rsa_generate(bits, threads, &mut k) },
            PF_ERR_INVALID_ARGUMENT,
        );
    }
    for (o, want) in [
        (&bad_seed, PF_ERR_INVALID_ARGUMENT),
        (&null_seed, PF_ERR_INVALID_ARGUMENT),
        (&small, PF_ERR_INVALID_ARGUMENT),
    ] {
        row(
            "pf_rsa_generate_ex",
            unsafe { pf_rsa_generate_ex(512, 65537, 2, o, &mut k) },
            want,
        );
    }
    for (e, primes) in [
        (0u64, 2u32),
        (1, 2),
        (65536, 2),
        (u64::MAX - 1, 2),
        (65537, 0),
        (65537, 1),
        (65537, 3),
        (65537, u32::MAX),
    ] {
        row(
            "pf_rsa_generate_ex",
            unsafe { pf_rsa_generate_ex(512, e, primes, &good, &mut k) },
            PF_ERR_INVALID_ARGUMENT,
        );
    }
    row(
        "pf_rsa_generate_ex",
        unsafe { pf_rsa_generate_ex(512, 65537, 2, &good, std::ptr::null_mut()) },
        PF_ERR_NULL_ARGUMENT,
    );
    assert_eq!(k, sentinel());
    let mut b = sentinel::<pf_buffer>();
    row(
        "pf_rsa_export",
        unsafe { pf_rsa_export(std::ptr::null(), 1, &mut b) },
        PF_ERR_NULL_ARGUMENT,
    );
    row(
        "pf_rsa_export",
        unsafe { pf_rsa_export(key, 1, std::ptr::null_mut()) },
        PF_ERR_NULL_ARGUMENT,
    );
    for f in [0u32, 9, 12, 13, 14, 17, u32::MAX] {
        row(
            "pf_rsa_export",
            unsafe { pf_rsa_export(key, f, &mut b) },
            PF_ERR_INVALID_ARGUMENT,
        );
    }
    row(
        "pf_rsa_component",
        unsafe { pf_rsa_component(std::ptr::null(), 1, &mut b) },
        PF_ERR_NULL_ARGUMENT,
    );
    row(
        "pf_rsa_component",
        unsafe { pf_rsa_component(key, 1, std::ptr::null_mut()) },
        PF_ERR_NULL_ARGUMENT,
    );
    for part in [0u32, 9, 17, 18, u32::MAX] {
        row(
            "pf_rsa_component",
            unsafe { pf_rsa_component(key, part, &mut b) },
            PF_ERR_INVALID_ARGUMENT,
        );
    }
    assert_eq!(b, sentinel());
    assert_eq!(unsafe { pf_rsa_bits(std::ptr::null()) }, 0);
    assert_eq!(unsafe { pf_rsa_primes(std::ptr::null()) }, 0);
    unsafe { pf_rsa_free(std::ptr::null_mut()) };
    covered
        .borrow_mut()
        .extend(["pf_rsa_bits", "pf_rsa_primes", "pf_rsa_free"]);

    // pf_dh_*
    row(
        "pf_dh_generate",
        unsafe { pf_dh_generate(512, 2, 1, std::ptr::null_mut()) },
        PF_ERR_NULL_ARGUMENT,
    );
    let mut d = sentinel::<pf_dh_params>();
    for (bits, g, threads) in [
        (0u32, 2u32, 1u32),
        (255, 2, 1),
        (16385, 2, 1),
        (u32::MAX, 2, 1),
        (512, 0, 1),
        (512, 1, 1),
        (512, 1 << 31, 1),
        (512, u32::MAX, 1),
        (512, 2, 1025),
    ] {
        row(
            "pf_dh_generate",
            unsafe { pf_dh_generate(bits, g, threads, &mut d) },
            PF_ERR_INVALID_ARGUMENT,
        );
    }
    for flags in [
        4u32,
        0x8000_0000,
        u32::MAX,
        PF_DH_FLAG_LEGACY_G2 | PF_DH_FLAG_X942,
    ] {
        row(
            "pf_dh_generate_ex",
            unsafe { pf_dh_generate_ex(512, 2, flags, &good, &mut d) },
            PF_ERR_INVALID_ARGUMENT,
        );
    }
    // The core's OpenSSH-moduli flag (4, with generator 0) is not a C flag.
    row(
        "pf_dh_generate_ex",
        unsafe { pf_dh_generate_ex(512, 0, 4, &good, &mut d) },
        PF_ERR_INVALID_ARGUMENT,
    );
    row(
        "pf_dh_generate_ex",
        unsafe { pf_dh_generate_ex(512, 5, PF_DH_FLAG_LEGACY_G2, &good, &mut d) },
        PF_ERR_INVALID_ARGUMENT,
    );
    for o in [&bad_seed, &null_seed, &small] {
        row(
            "pf_dh_generate_ex",
            unsafe { pf_dh_generate_ex(512, 2, 0, o, &mut d) },
            PF_ERR_INVALID_ARGUMENT,
        );
    }
    row(
        "pf_dh_generate_ex",
        unsafe { pf_dh_generate_ex(512, 2, 0, &good, std::ptr::null_mut()) },
        PF_ERR_NULL_ARGUMENT,
    );
    // Batches: the generate rows, plus the batch size and the seed rule.
    let mut batch = sentinel::<pf_dh_batch>();
    for (bits, g, flags, expected) in [
        (512u32, 2u32, 0u32, 0u32),
        (512, 2, 0, 4097),
        (512, 2, 0, u32::MAX),
        (255, 2, 0, 1),
        (16385, 2, 0, 1),
        (512, 1, 0, 1),
        (512, 1 << 31, 0, 1),
        (512, 2, 4, 1),
        (512, 5, PF_DH_FLAG_LEGACY_G2, 1),
    ] {
        row(
            "pf_dh_batch_new",
            unsafe { pf_dh_batch_new(bits, g, flags, expected, &good, &mut batch) },
            PF_ERR_INVALID_ARGUMENT,
        );
    }
    for o in [&bad_seed, &null_seed, &small] {
        row(
            "pf_dh_batch_new",
            unsafe { pf_dh_batch_new(512, 2, 0, 1, o, &mut batch) },
            PF_ERR_INVALID_ARGUMENT,
        );
    }
    row(
        "pf_dh_batch_new",
        unsafe { pf_dh_batch_new(512, 2, 0, 1, &good, std::ptr::null_mut()) },
        PF_ERR_NULL_ARGUMENT,
    );
    assert_eq!(batch, sentinel());
    let mut live = std::ptr::null_mut();
    assert_eq!(
        unsafe { pf_dh_batch_new(512, 2, 0, 1, std::ptr::null(), &mut live) },
        PF_OK
    );
    let seeded = opts(1, Some(&[7u8; 32]));
    for o in [&seeded, &bad_seed, &null_seed, &small] {
        row(
            "pf_dh_batch_next",
            unsafe { pf_dh_batch_next(live, o, &mut d) },
            PF_ERR_INVALID_ARGUMENT,
        );
    }
    row(
        "pf_dh_batch_next",
        unsafe { pf_dh_batch_next(std::ptr::null_mut(), &good, &mut d) },
        PF_ERR_NULL_ARGUMENT,
    );
    row(
        "pf_dh_batch_next",
        unsafe { pf_dh_batch_next(live, &good, std::ptr::null_mut()) },
        PF_ERR_NULL_ARGUMENT,
    );
    unsafe { pf_dh_batch_free(live) };
    unsafe { pf_dh_batch_free(std::ptr::null_mut()) };
    covered.borrow_mut().insert("pf_dh_batch_free");
    row(
        "pf_dh_named",
        unsafe { pf_dh_named(1, std::ptr::null_mut()) },
        PF_ERR_NULL_ARGUMENT,
    );
    for g in [0u32, 11, u32::MAX] {
        row(
            "pf_dh_named",
            unsafe { pf_dh_named(g, &mut d) },
            PF_ERR_INVALID_ARGUMENT,
        );
    }
    assert_eq!(d, sentinel());
    let mut b = sentinel::<pf_buffer>();
    row(
        "pf_dh_export",
        unsafe { pf_dh_export(std::ptr::null(), 9, &mut b) },
        PF_ERR_NULL_ARGUMENT,
    );
    row(
        "pf_dh_export",
        unsafe { pf_dh_export(dh, 9, std::ptr::null_mut()) },
        PF_ERR_NULL_ARGUMENT,
    );
    for f in [0u32, 1, 8, 15, u32::MAX] {
        row(
            "pf_dh_export",
            unsafe { pf_dh_export(dh, f, &mut b) },
            PF_ERR_INVALID_ARGUMENT,
        );
    }
    row(
        "pf_dh_component",
        unsafe { pf_dh_component(std::ptr::null(), 1, &mut b) },
        PF_ERR_NULL_ARGUMENT,
    );
    row(
        "pf_dh_component",
        unsafe { pf_dh_component(dh, 1, std::ptr::null_mut()) },
        PF_ERR_NULL_ARGUMENT,
    );
    for part in [0u32, 4, u32::MAX] {
        row(
            "pf_dh_component",
            unsafe { pf_dh_component(dh, part, &mut b) },
            PF_ERR_INVALID_ARGUMENT,
        );
    }
    assert_eq!(b, sentinel());
    let mut problems = 0xABCDu32;
    row(
        "pf_dh_check",
        unsafe { pf_dh_check(std::ptr::null(), 10, &mut problems) },
        PF_ERR_NULL_ARGUMENT,
    );
    row(
        "pf_dh_check",
        unsafe { pf_dh_check(b"x".as_ptr(), 1, std::ptr::null_mut()) },
        PF_ERR_NULL_ARGUMENT,
    );
    row(
        "pf_dh_check",
        unsafe { pf_dh_check(std::ptr::null(), 0, &mut problems) },
        PF_ERR_DECODE,
    );
    row(
        "pf_dh_check",
        unsafe { pf_dh_check([0x30u8, 0x00].as_ptr(), 2, &mut problems) },
        PF_ERR_DECODE,
    );
    assert_eq!(problems, 0xABCD);
    assert_eq!(unsafe { pf_dh_bits(std::ptr::null()) }, 0);
    unsafe { pf_dh_free(std::ptr::null_mut()) };
    covered.borrow_mut().extend(["pf_dh_bits", "pf_dh_free"]);

    // Import, check, encrypted export.
    let pem = b"-----BEGIN PRIVATE KEY-----\n";
    let mut k2 = sentinel::<pf_rsa_key>();
    for (data, len, pass, pass_len, out, want) in [
        (
            pem.as_ptr(),
            pem.len(),
            std::ptr::null(),
            0,
            std::ptr::null_mut(),
            PF_ERR_NULL_ARGUMENT,
        ),
        (
            std::ptr::null(),
            10,
            std::ptr::null(),
            0,
            &mut k2 as *mut _,
            PF_ERR_NULL_ARGUMENT,
        ),
        (
            pem.as_ptr(),
            pem.len(),
            std::ptr::null(),
            5,
            &mut k2 as *mut _,
            PF_ERR_NULL_ARGUMENT,
        ),
        (
            std::ptr::null(),
            0,
            std::ptr::null(),
            0,
            &mut k2 as *mut _,
            PF_ERR_DECODE,
        ),
        (
            pem.as_ptr(),
            pem.len(),
            std::ptr::null(),
            0,
            &mut k2 as *mut _,
            PF_ERR_DECODE,
        ),
    ] {
        row(
            "pf_rsa_import",
            unsafe { pf_rsa_import(data, len, pass, pass_len, out) },
            want,
        );
    }
    assert_eq!(k2, sentinel());
    let mut problems = 0xABCDu32;
    row(
        "pf_rsa_check",
        unsafe { pf_rsa_check(std::ptr::null(), &mut problems) },
        PF_ERR_NULL_ARGUMENT,
    );
    row(
        "pf_rsa_check",
        unsafe { pf_rsa_check(key, std::ptr::null_mut()) },
        PF_ERR_NULL_ARGUMENT,
    );
    assert_eq!(problems, 0xABCD);
    let mut b = sentinel::<pf_buffer>();
    let pw = b"pw";
    for (k, fmt, pass, kdf, out, want) in [
        (
            std::ptr::null(),
            1u32,
            pw.as_ptr(),
            1u32,
            &mut b as *mut _,
            PF_ERR_NULL_ARGUMENT,
        ),
        (
            key as *const _,
            1,
            std::ptr::null(),
            1,
            &mut b as *mut _,
            PF_ERR_NULL_ARGUMENT,
        ),
        (
            key as *const _,
            1,
            pw.as_ptr(),
            1,
            std::ptr::null_mut(),
            PF_ERR_NULL_ARGUMENT,
        ),
        (
            key as *const _,
            3,
            pw.as_ptr(),
            1,
            &mut b as *mut _,
            PF_ERR_INVALID_ARGUMENT,
        ),
        (
            key as *const _,
            99,
            pw.as_ptr(),
            1,
            &mut b as *mut _,
            PF_ERR_INVALID_ARGUMENT,
        ),
        (
            key as *const _,
            1,
            pw.as_ptr(),
            0,
            &mut b as *mut _,
            PF_ERR_INVALID_ARGUMENT,
        ),
        (
            key as *const _,
            1,
            pw.as_ptr(),
            3,
            &mut b as *mut _,
            PF_ERR_INVALID_ARGUMENT,
        ),
        // OpenSSH keys are encrypted with bcrypt-pbkdf only.
        (
            key as *const _,
            15,
            pw.as_ptr(),
            1,
            &mut b as *mut _,
            PF_ERR_INVALID_ARGUMENT,
        ),
        (
            key as *const _,
            15,
            pw.as_ptr(),
            4,
            &mut b as *mut _,
            PF_ERR_INVALID_ARGUMENT,
        ),
        (
            key as *const _,
            16,
            pw.as_ptr(),
            3,
            &mut b as *mut _,
            PF_ERR_INVALID_ARGUMENT,
        ),
    ] {
        row(
            "pf_rsa_export_encrypted",
            unsafe { pf_rsa_export_encrypted(k, fmt, pass, pw.len(), kdf, out) },
            want,
        );
    }
    assert_eq!(b, sentinel());
    let mut d2 = sentinel::<pf_dh_params>();
    row(
        "pf_dh_import",
        unsafe { pf_dh_import(pem.as_ptr(), pem.len(), std::ptr::null_mut()) },
        PF_ERR_NULL_ARGUMENT,
    );
    row(
        "pf_dh_import",
        unsafe { pf_dh_import(std::ptr::null(), 3, &mut d2) },
        PF_ERR_NULL_ARGUMENT,
    );
    row(
        "pf_dh_import",
        unsafe { pf_dh_import(pem.as_ptr(), pem.len(), &mut d2) },
        PF_ERR_DECODE,
    );
    assert_eq!(d2, sentinel());

    // Background jobs: the start functions check exactly what the blocking
    // ones check, before any thread starts.
    let mut j = sentinel::<pf_job>();
    for (bits, e, primes, o) in [
        (511u32, 65537u64, 2u32, &good),
        (16386, 65537, 2, &good),
        (2048, 65536, 2, &good),
        (512, 65537, 3, &good),
        (512, 65537, 2, &bad_seed),
        (512, 65537, 2, &null_seed),
        (512, 65537, 2, &small),
    ] {
        row(
            "pf_rsa_generate_start",
            unsafe { pf_rsa_generate_start(bits, e, primes, o, &mut j) },
            PF_ERR_INVALID_ARGUMENT,
        );
    }
    let mut fips_small = opts(1, None);
    fips_small.flags = pf_rsa_flag::PF_RSA_FIPS as u32;
    row(
        "pf_rsa_generate_start",
        unsafe { pf_rsa_generate_start(1024, 65537, 2, &fips_small, &mut j) },
        PF_ERR_INVALID_ARGUMENT,
    );
    let mut threads_over = opts(1, None);
    threads_over.threads = 1025;
    row(
        "pf_rsa_generate_start",
        unsafe { pf_rsa_generate_start(512, 65537, 2, &threads_over, &mut j) },
        PF_ERR_INVALID_ARGUMENT,
    );
    row(
        "pf_rsa_generate_start",
        unsafe { pf_rsa_generate_start(512, 65537, 2, &good, std::ptr::null_mut()) },
        PF_ERR_NULL_ARGUMENT,
    );
    for (bits, g, flags, o) in [
        (255u32, 2u32, 0u32, &good),
        (512, 1, 0, &good),
        (512, 5, PF_DH_FLAG_LEGACY_G2, &good),
        (512, 2, 4, &good),
        (512, 2, 0, &bad_seed),
        (512, 2, 0, &threads_over),
        (512, 2, 0, &fips_small), // RSA flags in a DH call
    ] {
        row(
            "pf_dh_generate_start",
            unsafe { pf_dh_generate_start(bits, g, flags, o, &mut j) },
            PF_ERR_INVALID_ARGUMENT,
        );
    }
    row(
        "pf_dh_generate_start",
        unsafe { pf_dh_generate_start(512, 2, 0, &good, std::ptr::null_mut()) },
        PF_ERR_NULL_ARGUMENT,
    );
    assert_eq!(j, sentinel());
    let mut snap = pf_progress {
        candidates: 77,
        ..Default::default()
    };
    row(
        "pf_job_poll",
        unsafe { pf_job_poll(std::ptr::null(), &mut snap) },
        PF_ERR_NULL_ARGUMENT,
    );
    assert_eq!(snap.candidates, 77);
    row(
        "pf_job_wait",
        unsafe { pf_job_wait(std::ptr::null(), 0) },
        PF_ERR_NULL_ARGUMENT,
    );
    row(
        "pf_job_cancel",
        unsafe { pf_job_cancel(std::ptr::null()) },
        PF_ERR_NULL_ARGUMENT,
    );
    assert_eq!(unsafe { pf_job_fd(std::ptr::null()) }, -1);
    covered.borrow_mut().insert("pf_job_fd");
    let mut k = sentinel::<pf_rsa_key>();
    let mut d = sentinel::<pf_dh_params>();
    row(
        "pf_job_take_rsa",
        unsafe { pf_job_take_rsa(std::ptr::null_mut(), &mut k) },
        PF_ERR_NULL_ARGUMENT,
    );
    row(
        "pf_job_take_dh",
        unsafe { pf_job_take_dh(std::ptr::null_mut(), &mut d) },
        PF_ERR_NULL_ARGUMENT,
    );
    // A live job: NULL out-pointers, then the wrong kind.
    let mut job = std::ptr::null_mut();
    assert_eq!(
        unsafe { pf_dh_generate_start(256, 2, 0, &good, &mut job) },
        PF_OK
    );
    row(
        "pf_job_take_rsa",
        unsafe { pf_job_take_rsa(job, std::ptr::null_mut()) },
        PF_ERR_NULL_ARGUMENT,
    );
    row(
        "pf_job_take_dh",
        unsafe { pf_job_take_dh(job, std::ptr::null_mut()) },
        PF_ERR_NULL_ARGUMENT,
    );
    row(
        "pf_job_take_rsa",
        unsafe { pf_job_take_rsa(job, &mut k) },
        PF_ERR_WRONG_KIND,
    );
    assert_eq!(k, sentinel());
    assert_eq!(d, sentinel());
    unsafe { pf_job_free(job) };
    unsafe { pf_job_free(std::ptr::null_mut()) };
    covered.borrow_mut().insert("pf_job_free");

    // Value-returning helpers never fail.
    for s in [0u32, 1, 11, 12, 999, u32::MAX] {
        let p = pf_status_str(s);
        assert!(!p.is_null());
        assert!(!unsafe { std::ffi::CStr::from_ptr(p) }.to_bytes().is_empty());
    }
    assert!(!pf_version().is_null());
    let info = unsafe { std::ffi::CStr::from_ptr(pf_build_info()) }
        .to_str()
        .unwrap();
    assert!(
        info.starts_with(&format!(
            "primeforge {} (commit ",
            env!("CARGO_PKG_VERSION")
        )) && info.contains("GMP 6.")
            && info.contains("arithmetic "),
        "{info}"
    );
    assert!(!pf_last_error_message().is_null());
    covered.borrow_mut().insert("pf_last_error_message");
    assert_eq!(
        pf_options_default().struct_size as usize,
        std::mem::size_of::<pf_options>()
    );
    covered.borrow_mut().extend([
        "pf_status_str",
        "pf_version",
        "pf_build_info",
        "pf_options_default",
    ]);

    // OpenSSH export with a comment.
    let mut b = sentinel();
    let pw = b"pw";
    let long = std::ffi::CString::new("c".repeat(1025)).unwrap();
    let two_lines = std::ffi::CString::new("a\nb").unwrap();
    for (k, comment, pass, len, public, out, want) in [
        (
            std::ptr::null(),
            std::ptr::null(),
            std::ptr::null(),
            0,
            0,
            &mut b as *mut _,
            PF_ERR_NULL_ARGUMENT,
        ),
        (
            key as *const _,
            std::ptr::null(),
            std::ptr::null(),
            0,
            0,
            std::ptr::null_mut(),
            PF_ERR_NULL_ARGUMENT,
        ),
        (
            key as *const _,
            std::ptr::null(),
            std::ptr::null(),
            0,
            2,
            &mut b as *mut _,
            PF_ERR_INVALID_ARGUMENT,
        ),
        (
            key as *const _,
            std::ptr::null(),
            pw.as_ptr(),
            2,
            1,
            &mut b as *mut _,
            PF_ERR_INVALID_ARGUMENT,
        ),
        (
            key as *const _,
            std::ptr::null(),
            pw.as_ptr(),
            0,
            0,
            &mut b as *mut _,
            PF_ERR_INVALID_ARGUMENT,
        ),
        (
            key as *const _,
            long.as_ptr(),
            std::ptr::null(),
            0,
            0,
            &mut b as *mut _,
            PF_ERR_INVALID_ARGUMENT,
        ),
        (
            key as *const _,
            two_lines.as_ptr(),
            std::ptr::null(),
            0,
            1,
            &mut b as *mut _,
            PF_ERR_INVALID_ARGUMENT,
        ),
    ] {
        row(
            "pf_rsa_export_openssh",
            unsafe { pf_rsa_export_openssh(k, comment, pass, len, public, out) },
            want,
        );
    }
    assert_eq!(b, sentinel());

    // FIPS 186-4 parameters.
    let base = pf_dh_fips186_default(2048);
    assert_eq!(
        base.struct_size as usize,
        std::mem::size_of::<pf_dh_fips186>()
    );
    assert_eq!((base.qbits, base.hash, base.gindex), (0, 0, 1));
    covered.borrow_mut().insert("pf_dh_fips186_default");
    let mut d = sentinel();
    row(
        "pf_dh_generate_fips186",
        unsafe { pf_dh_generate_fips186(std::ptr::null(), &good, &mut d) },
        PF_ERR_NULL_ARGUMENT,
    );
    row(
        "pf_dh_generate_fips186",
        unsafe { pf_dh_generate_fips186(&base, &good, std::ptr::null_mut()) },
        PF_ERR_NULL_ARGUMENT,
    );
    let short = [1u8; 8];
    let bad: Vec<pf_dh_fips186> = vec![
        pf_dh_fips186 {
            struct_size: 8,
            ..base
        },
        pf_dh_fips186 {
            pbits: 1536,
            ..base
        },
        pf_dh_fips186 { pbits: 0, ..base },
        pf_dh_fips186 { qbits: 160, ..base },
        pf_dh_fips186 {
            qbits: u32::MAX,
            ..base
        },
        pf_dh_fips186 {
            hash: pf_hash::PF_HASH_SHA1 as u32,
            ..base
        },
        pf_dh_fips186 { hash: 8, ..base },
        pf_dh_fips186 {
            hash: u32::MAX,
            ..base
        },
        pf_dh_fips186 {
            qbits: 256,
            hash: pf_hash::PF_HASH_SHA224 as u32,
            ..base
        },
        pf_dh_fips186 {
            gindex: 256,
            ..base
        },
        pf_dh_fips186 { gindex: -2, ..base },
        pf_dh_fips186 {
            gindex: i32::MIN,
            ..base
        },
        pf_dh_fips186 {
            seed: short.as_ptr(),
            seed_len: 0,
            ..base
        },
        pf_dh_fips186 {
            seed: short.as_ptr(),
            seed_len: short.len(),
            ..base
        },
        pf_dh_fips186 {
            seed: short.as_ptr(),
            seed_len: 129,
            ..base
        },
    ];
    for r in &bad {
        row(
            "pf_dh_generate_fips186",
            unsafe { pf_dh_generate_fips186(r, &good, &mut d) },
            PF_ERR_INVALID_ARGUMENT,
        );
    }
    row(
        "pf_dh_generate_fips186",
        unsafe {
            pf_dh_generate_fips186(
                &pf_dh_fips186 {
                    seed: std::ptr::null(),
                    seed_len: 32,
                    ..base
                },
                &good,
                &mut d,
            )
        },
        PF_ERR_NULL_ARGUMENT,
    );
    let mut rsa_flag = good;
    rsa_flag.flags = pf_rsa_flag::PF_RSA_FIPS as u32;
    row(
        "pf_dh_generate_fips186",
        unsafe { pf_dh_generate_fips186(&base, &rsa_flag, &mut d) },
        PF_ERR_INVALID_ARGUMENT,
    );
    assert_eq!(d, sentinel());
    let mut job = sentinel();
    row(
        "pf_dh_generate_fips186_start",
        unsafe { pf_dh_generate_fips186_start(std::ptr::null(), &good, &mut job) },
        PF_ERR_NULL_ARGUMENT,
    );
    row(
        "pf_dh_generate_fips186_start",
        unsafe { pf_dh_generate_fips186_start(&base, &good, std::ptr::null_mut()) },
        PF_ERR_NULL_ARGUMENT,
    );
    for r in &bad {
        row(
            "pf_dh_generate_fips186_start",
            unsafe { pf_dh_generate_fips186_start(r, &good, &mut job) },
            PF_ERR_INVALID_ARGUMENT,
        );
    }
    row(
        "pf_dh_generate_fips186_start",
        unsafe { pf_dh_generate_fips186_start(&base, &rsa_flag, &mut job) },
        PF_ERR_INVALID_ARGUMENT,
    );
    assert_eq!(job, sentinel());
    let mut seed_buf = sentinel();
    let (mut counter, mut hash, mut gindex) = (7u32, 7u32, 7i32);
    row(
        "pf_dh_fips186_info",
        unsafe {
            pf_dh_fips186_info(
                std::ptr::null(),
                &mut seed_buf,
                &mut counter,
                &mut hash,
                &mut gindex,
            )
        },
        PF_ERR_NULL_ARGUMENT,
    );
    row(
        "pf_dh_fips186_info",
        unsafe {
            pf_dh_fips186_info(
                dh,
                std::ptr::null_mut(),
                &mut counter,
                &mut hash,
                &mut gindex,
            )
        },
        PF_ERR_NULL_ARGUMENT,
    );
    // Safe-prime parameters carry no seed.
    row(
        "pf_dh_fips186_info",
        unsafe { pf_dh_fips186_info(dh, &mut seed_buf, &mut counter, &mut hash, &mut gindex) },
        PF_ERR_UNSUPPORTED,
    );
    assert_eq!((seed_buf, counter, hash, gindex), (sentinel(), 7, 7, 7));
    let mut problems = 7u32;
    let mut verified = 7u32;
    row(
        "pf_dh_check_ex",
        unsafe { pf_dh_check_ex(std::ptr::null(), 10, &mut problems, &mut verified) },
        PF_ERR_NULL_ARGUMENT,
    );
    row(
        "pf_dh_check_ex",
        unsafe { pf_dh_check_ex(b"x".as_ptr(), 1, std::ptr::null_mut(), &mut verified) },
        PF_ERR_NULL_ARGUMENT,
    );
    row(
        "pf_dh_check_ex",
        unsafe { pf_dh_check_ex([0x30u8, 0x00].as_ptr(), 2, &mut problems, &mut verified) },
        PF_ERR_DECODE,
    );
    assert_eq!((problems, verified), (7, 7));

    unsafe { pf_rsa_free(key) };
    unsafe { pf_dh_free(dh) };

    let exported = exports();
    let missing: Vec<&String> = exported
        .iter()
        .filter(|e| !covered.borrow().contains(e.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "exports without rows in this table: {missing:?}"
    );
}
