//! Robustness under abuse (issue 9, first part): many callers at once,
//! cancellation at random moments, option-struct and thread-count edges,
//! a dlopen/dlclose cycle, and oversized input refused quickly.

mod common;

use std::ffi::{c_int, c_void, CString};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use common::opts;
use primeforge::ffi::*;

/// Tests whose timing is asserted take this alone; the tests that load
/// the machine (many generations at once) take it too. A cancelled call
/// joins its workers before it returns, so it waits for the exponentiation
/// in flight: on two shared vCPUs behind sixteen other generations that
/// wait is stretched many times over.
static TIMING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn timing_lock() -> std::sync::MutexGuard<'static, ()> {
    TIMING.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn sixteen_callers_at_once_all_valid() {
    let _alone = timing_lock();
    let handles: Vec<_> = (0..16u32)
        .map(|i| {
            std::thread::spawn(move || {
                let threads = i % 4; // 0 = all cores
                let mut key = std::ptr::null_mut();
                let o = opts(threads, None);
                assert_eq!(
                    unsafe { pf_rsa_generate_ex(1024, 65537, 2, &o, &mut key) },
                    pf_status::PF_OK
                );
                assert_eq!(unsafe { pf_rsa_bits(key) }, 1024);
                let mut pem = std::ptr::null_mut();
                assert_eq!(unsafe { pf_rsa_export(key, 1, &mut pem) }, pf_status::PF_OK);
                let text = common::take(pem);
                unsafe { pf_rsa_free(key) };
                let mut dh = std::ptr::null_mut();
                assert_eq!(
                    unsafe { pf_dh_generate_ex(512, 2, 0, &o, &mut dh) },
                    pf_status::PF_OK
                );
                let mut params = std::ptr::null_mut();
                assert_eq!(
                    unsafe { pf_dh_export(dh, 9, &mut params) },
                    pf_status::PF_OK
                );
                let params = common::take(params);
                let mut problems = 99;
                assert_eq!(
                    unsafe { pf_dh_check(params.as_ptr(), params.len(), &mut problems) },
                    pf_status::PF_OK
                );
                assert_eq!(problems, 0);
                unsafe { pf_dh_free(dh) };
                text
            })
        })
        .collect();
    let mut keys: Vec<Vec<u8>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 16, "two callers got the same key");
}

struct CancelPlan {
    left: AtomicU32,
    cancelled_at: std::sync::Mutex<Option<Instant>>,
}

unsafe extern "C" fn cancel_after(user: *mut c_void, _ev: *const pf_progress) -> c_int {
    let plan = unsafe { &*(user as *const CancelPlan) };
    if plan.left.fetch_sub(1, Ordering::SeqCst) <= 1 {
        *plan.cancelled_at.lock().unwrap() = Some(Instant::now());
        1
    } else {
        0
    }
}

#[test]
fn cancelling_at_random_moments_is_prompt_and_harmless() {
    let _alone = timing_lock();
    // A cheap xorshift drives when to cancel (1 to 6 reports in) and what.
    let mut x = 0x2545_F491_4F6C_DD1Du64 ^ std::process::id() as u64;
    for round in 0..24 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let plan = CancelPlan {
            left: AtomicU32::new(1 + (x % 6) as u32),
            cancelled_at: std::sync::Mutex::new(None),
        };
        let mut o = opts(((x >> 8) % 3) as u32, None);
        o.progress = Some(cancel_after);
        o.user_data = &plan as *const CancelPlan as *mut c_void;
        let (st, out_untouched) = if round % 2 == 0 {
            let mut k = std::ptr::dangling_mut::<pf_rsa_key>();
            // 16384 bits: since the IFMA Fermat filter an RSA-8192 key can
            // be done before the sixth report (seen in CI, 2026-12-01).
            let st = unsafe { pf_rsa_generate_ex(16384, 65537, 2, &o, &mut k) };
            (st, k == std::ptr::dangling_mut())
        } else {
            let mut d = std::ptr::dangling_mut::<pf_dh_params>();
            let st = unsafe { pf_dh_generate_ex(4096, 2, 0, &o, &mut d) };
            (st, d == std::ptr::dangling_mut())
        };
        let returned = Instant::now();
        assert_eq!(st, pf_status::PF_ERR_CANCELLED, "round {round}");
        assert!(out_untouched);
        // The call returns promptly after the cancelling callback.
        let cancelled = plan
            .cancelled_at
            .lock()
            .unwrap()
            .expect("callback cancelled");
        assert!(
            // See tests/dh.rs: one uninterruptible round per worker is
            // joined before returning; generous for a loaded machine.
            returned - cancelled < Duration::from_millis(500),
            "round {round}: returned {:?} after the cancel",
            returned - cancelled
        );
    }
    // Still working.
    let mut k = std::ptr::null_mut();
    assert_eq!(unsafe { pf_rsa_generate(512, 2, &mut k) }, pf_status::PF_OK);
    unsafe { pf_rsa_free(k) };
}

#[test]
fn options_and_thread_count_edges() {
    use pf_status::*;
    let mut k = std::ptr::dangling_mut::<pf_rsa_key>();
    for (threads, expected) in [
        (0u32, PF_OK),
        (1, PF_OK),
        (1024, PF_OK),
        (1025, PF_ERR_INVALID_ARGUMENT),
        (u32::MAX, PF_ERR_INVALID_ARGUMENT),
    ] {
        let o = opts(threads, None);
        let st = unsafe { pf_rsa_generate_ex(512, 65537, 2, &o, &mut k) };
        assert_eq!(st, expected, "threads {threads}");
        if st == PF_OK {
            unsafe { pf_rsa_free(k) };
            k = std::ptr::dangling_mut::<pf_rsa_key>();
        } else {
            assert_eq!(k, std::ptr::dangling_mut());
        }
    }
    // struct_size: too small is invalid; larger with zero tail is fine;
    // larger with a non-zero unknown field is unsupported.
    #[repr(C)]
    struct Bigger {
        base: pf_options,
        extra: u64,
    }
    let mut b = Bigger {
        base: opts(1, None),
        extra: 0,
    };
    b.base.struct_size = std::mem::size_of::<Bigger>() as u32;
    let st = unsafe { pf_rsa_generate_ex(512, 65537, 2, &b.base, &mut k) };
    assert_eq!(st, PF_OK);
    unsafe { pf_rsa_free(k) };
    k = std::ptr::dangling_mut::<pf_rsa_key>();
    b.extra = 7;
    assert_eq!(
        unsafe { pf_rsa_generate_ex(512, 65537, 2, &b.base, &mut k) },
        PF_ERR_UNSUPPORTED
    );
    // 0.1's structure ended before `flags` (48 bytes): still accepted, the
    // missing field read as 0 — even when the bytes behind it are not.
    let mut v1 = opts(1, None);
    v1.struct_size = std::mem::offset_of!(pf_options, flags) as u32;
    v1.flags = 0xdead;
    assert_eq!(
        unsafe { pf_rsa_generate_ex(512, 65537, 2, &v1, &mut k) },
        PF_OK
    );
    unsafe { pf_rsa_free(k) };
    k = std::ptr::dangling_mut::<pf_rsa_key>();
    let mut small = opts(1, None);
    for size in [0u32, 4, std::mem::offset_of!(pf_options, flags) as u32 - 1] {
        small.struct_size = size;
        assert_eq!(
            unsafe { pf_rsa_generate_ex(512, 65537, 2, &small, &mut k) },
            PF_ERR_INVALID_ARGUMENT
        );
        let mut d = std::ptr::dangling_mut::<pf_dh_params>();
        assert_eq!(
            unsafe { pf_dh_generate_ex(512, 2, 0, &small, &mut d) },
            PF_ERR_INVALID_ARGUMENT
        );
        assert_eq!(d, std::ptr::dangling_mut());
    }
    assert_eq!(k, std::ptr::dangling_mut());
    // Sizes above 16384 are refused at once, before any allocation.
    let o = opts(1, None);
    let t = Instant::now();
    for bits in [16386u32, 32768, u32::MAX - 1] {
        assert_eq!(
            unsafe { pf_rsa_generate_ex(bits, 65537, 2, &o, &mut k) },
            PF_ERR_INVALID_ARGUMENT
        );
        let mut d = std::ptr::dangling_mut::<pf_dh_params>();
        assert_eq!(
            unsafe { pf_dh_generate_ex(bits, 2, 0, &o, &mut d) },
            PF_ERR_INVALID_ARGUMENT
        );
    }
    // Refusals come before any thread or arithmetic: far under a second
    // even on a loaded machine (a generation would take longer).
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
}

#[test]
fn checking_a_32768_bit_modulus_returns_at_once() {
    // CVE-2023-3446 class: a huge modulus must not cost a primality test.
    let n = 4096usize; // bytes of p
    let mut der = vec![0x30, 0x82];
    let body = 4 + 1 + n + 3;
    der.extend([
        (body >> 8) as u8,
        body as u8,
        0x02,
        0x82,
        ((n + 1) >> 8) as u8,
        (n + 1) as u8,
        0x00,
    ]);
    der.extend(std::iter::repeat_n(0xC7u8, n));
    der.extend([0x02, 0x01, 0x02]);
    let mut problems = 0;
    let t = Instant::now();
    assert_eq!(
        unsafe { pf_dh_check(der.as_ptr(), der.len(), &mut problems) },
        pf_status::PF_OK
    );
    // No arithmetic: a primality test at this size would take seconds.
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    assert_eq!(problems, PF_DH_CHECK_MODULUS_TOO_LARGE);
}

#[test]
fn dlopen_dlclose_dlopen_with_generations_between() {
    let _alone = timing_lock();
    type Generate = unsafe extern "C" fn(u32, u32, *mut *mut c_void) -> u32;
    type Free = unsafe extern "C" fn(*mut c_void);
    let path = CString::new(common::cdylib().to_str().unwrap()).unwrap();
    for round in 0..3 {
        // SAFETY: loading our own cdylib; symbols have the header's types.
        unsafe {
            let h = libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
            assert!(!h.is_null(), "dlopen failed in round {round}");
            let generate: Generate =
                std::mem::transmute(libc::dlsym(h, c"pf_rsa_generate".as_ptr()));
            let free: Free = std::mem::transmute(libc::dlsym(h, c"pf_rsa_free".as_ptr()));
            for _ in 0..2 {
                let mut k = std::ptr::null_mut();
                assert_eq!(generate(512, 2, &mut k), 0);
                free(k);
            }
            assert_eq!(libc::dlclose(h), 0);
        }
    }
}
