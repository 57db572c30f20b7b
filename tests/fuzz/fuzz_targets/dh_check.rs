//! `pf_dh_check` through the C ABI, exactly as a C caller uses it: any
//! bytes must give a documented status — never a crash, a hang or a
//! caught panic (PF_ERR_INTERNAL) — and `problems` is written only on
//! PF_OK, with only documented bits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use primeforge::ffi::*;

const KNOWN: u32 = PF_DH_CHECK_P_NOT_PRIME
    | PF_DH_CHECK_P_NOT_SAFE_PRIME
    | PF_DH_CHECK_NOT_SUITABLE_GENERATOR
    | PF_DH_CHECK_Q_NOT_PRIME
    | PF_DH_CHECK_INVALID_Q
    | PF_DH_CHECK_MODULUS_TOO_SMALL
    | PF_DH_CHECK_MODULUS_TOO_LARGE;

fuzz_target!(|data: &[u8]| {
    let mut problems = 0xdead_beef_u32;
    // SAFETY: `data` is valid for `data.len()` bytes; `problems` is ours.
    let status = unsafe { pf_dh_check(data.as_ptr(), data.len(), &mut problems) };
    match status {
        pf_status::PF_OK => assert_eq!(problems & !KNOWN, 0, "unknown bits {problems:#x}"),
        pf_status::PF_ERR_DECODE => assert_eq!(problems, 0xdead_beef, "out written on failure"),
        other => panic!("unexpected status {other:?} for {} bytes", data.len()),
    }
});
