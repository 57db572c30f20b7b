//! Dispatch fix for AMD Zen (measured, guarded).
//!
//! rug's GMP is a "fat" build: it picks assembly routines for the CPU at
//! run time through a table of function pointers (`__gmpn_cpuvec`). For
//! AMD family 17h/19h (Zen 1–4) GMP 6.3 fills the table with Zen routines
//! for multiplication but leaves `mpn_addmul_2` and `mpn_redc_2` on their
//! portable C fallbacks. Montgomery reduction, which is most of every
//! modular exponentiation, then runs in C through pairs of `addmul_1`
//! calls. On such a CPU [`super::init`] points those two entries at GMP's own
//! assembly for Haswell-class CPUs (which needs only BMI2, present on
//! every Zen): `addmul_2` directly, and `redc_2` through a shim that calls
//! `redc_1` with the low limb of the inverse (both compute the same
//! Montgomery reduction; `mpn_sec_powm` and `mpn_powm` pass −m⁻¹ mod 2^128
//! to `redc_2`, whose low limb is exactly `redc_1`'s −m⁻¹ mod 2^64).
//!
//! A second fat-build limit: `mpn_sec_powm` squares with
//! `mpn_sqr_basecase` only below the run-time SQR_TOOM2_THRESHOLD (32
//! limbs on Zen) and falls back to a full multiplication at and above it
//! ("play it safe", says its source), so 2048-bit moduli, RSA-4096's
//! primes, pay multiplications for every squaring. Zen's assembly
//! `sqr_basecase` has no size limit (no stack buffer), so the threshold is
//! raised by one, to 33: 32-limb squarings use the basecase everywhere,
//! which costs ordinary (non-secret) squaring nothing measurable at 32
//! limbs, and leaves larger sizes to Toom as tuned.
//!
//! (What each change bought is in BENCHMARKS.md, "Design measurements".)
//!
//! Third, squaring itself: GMP fills the `sqr_basecase` slot with its Zen
//! routine, but its Broadwell routine (mulx with the two independent carry
//! chains of adcx/adox, which every Zen has) is faster on Zen 3. With ADX
//! present the slot is pointed at it (both are GMP's basecase code: no
//! branches on operand values, as `mpn_sec_powm` requires).
//!
//! The patch is applied only when both entries still hold exactly the
//! portable fallbacks we expect, so a different GMP build, layout or CPU
//! leaves the table untouched. Our GMP is private to this library (its
//! symbols are not exported), so a host's own GMP is never affected.

use std::ptr::addr_of_mut;
use std::sync::atomic::{AtomicBool, Ordering};

type Limb = u64;

pub(super) static ACTIVE: AtomicBool = AtomicBool::new(false);

// Slots of `struct cpuvec_t` in GMP 6.3.0 (gmp-impl.h), which lists the
// fat functions in alphabetical order: addmul_2 is the 5th entry,
// redc_2 the 32nd. Checked against the expected contents below.
const SLOT_ADDMUL_2: usize = 4;
const SLOT_REDC_2: usize = 31;
const SLOT_SQR_BASECASE: usize = 33;
// After the 37 function pointers come the run-time thresholds
// (mp_size_t): mul_toom22, mul_toom33, sqr_toom2, sqr_toom3, bmod_1.
const SLOT_SQR_TOOM2: usize = 39;
const SLOT_SQR_TOOM3: usize = 40;
const SLOTS: usize = 42;
/// GMP's tuned Zen value of SQR_TOOM2_THRESHOLD, and ours.
const ZEN_SQR_TOOM2: usize = 32;
const OUR_SQR_TOOM2: usize = 33;

extern "C" {
    static mut __gmpn_cpuvec: [usize; SLOTS];
    fn __gmpn_cpuvec_init();
    fn __gmpn_addmul_2_fat();
    fn __gmpn_redc_2_fat();
    fn __gmpn_addmul_2_coreihwl();
    fn __gmpn_sqr_basecase_zen();
    fn __gmpn_sqr_basecase_coreibwl();
    /// GMP's mulx-based Montgomery reduction (needs BMI2).
    pub(super) fn __gmpn_redc_1_coreihwl(
        rp: *mut Limb,
        up: *mut Limb,
        mp: *const Limb,
        n: isize,
        invm: Limb,
    ) -> Limb;
}

/// `mpn_redc_2` contract on top of the assembly `mpn_redc_1`.
unsafe extern "C" fn redc_2_via_redc_1(
    rp: *mut Limb,
    up: *mut Limb,
    mp: *const Limb,
    n: isize,
    mip: *const Limb,
) -> Limb {
    // SAFETY: same buffers as GMP passed to redc_2; mip has 2 limbs.
    unsafe { __gmpn_redc_1_coreihwl(rp, up, mp, n, *mip) }
}

pub(super) fn patch() {
    if !std::arch::is_x86_feature_detected!("bmi2") {
        return;
    }
    // SAFETY: __gmpn_cpuvec_init fills GMP's dispatch table (idempotent).
    // We read and write three aligned word slots of that table, once,
    // under `Once`, before primeforge creates any GMP object, and only if
    // they hold the exact fallbacks we expect; the replacements have the
    // same contracts (see the module docs).
    unsafe {
        __gmpn_cpuvec_init();
        let table = addr_of_mut!(__gmpn_cpuvec) as *mut usize;
        let slot = |i: usize| table.add(i);
        if std::ptr::read_volatile(slot(SLOT_ADDMUL_2)) != __gmpn_addmul_2_fat as *const () as usize
            || std::ptr::read_volatile(slot(SLOT_REDC_2)) != __gmpn_redc_2_fat as *const () as usize
            || std::ptr::read_volatile(slot(SLOT_SQR_TOOM2)) != ZEN_SQR_TOOM2
            || std::ptr::read_volatile(slot(SLOT_SQR_TOOM3)) <= OUR_SQR_TOOM2
        {
            return;
        }
        std::ptr::write_volatile(
            slot(SLOT_ADDMUL_2),
            __gmpn_addmul_2_coreihwl as *const () as usize,
        );
        std::ptr::write_volatile(slot(SLOT_REDC_2), redc_2_via_redc_1 as *const () as usize);
        std::ptr::write_volatile(slot(SLOT_SQR_TOOM2), OUR_SQR_TOOM2);
        // GMP's Broadwell squaring (mulx with the two carry chains of
        // adcx/adox) beats its Zen squaring on Zen 3 by a quarter at
        // 32 limbs; it needs ADX, which every Zen has.
        if std::arch::is_x86_feature_detected!("adx")
            && std::ptr::read_volatile(slot(SLOT_SQR_BASECASE))
                == __gmpn_sqr_basecase_zen as *const () as usize
        {
            std::ptr::write_volatile(
                slot(SLOT_SQR_BASECASE),
                __gmpn_sqr_basecase_coreibwl as *const () as usize,
            );
        }
    }
    ACTIVE.store(true, Ordering::Relaxed);
}
