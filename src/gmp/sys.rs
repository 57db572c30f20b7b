//! Every declaration of GMP's internal functions and data that primeforge
//! calls or reads, in one place: the list to audit against a new GMP.
//! They are internal to GMP (not in gmp.h) but exported from the static
//! library that `gmp-mpfr-sys` builds (GMP 6.3.0, pinned with it). GMP's
//! public functions come through `gmp_mpfr_sys::gmp` instead.
//!
//! Each block says which module uses it and on what contract.

#![allow(missing_docs)]

use gmp_mpfr_sys::gmp;

type Limb = u64;

/// `struct cpuvec_t`'s size in words in GMP 6.3.0 (`dispatch.rs`).
pub(crate) const CPUVEC_WORDS: usize = 42;

// `sec.rs`: the constant-time division.
extern "C" {
    // GMP's division core behind mpn_sec_div_r (internal but exported from
    // the static library): np[..dn] = np mod dp for a normalised dp (top
    // bit set), given the reciprocal of dp's top limb plus one; tp has
    // dn + 1 limbs. Its time and addresses depend on nn and dn only.
    pub(crate) fn __gmpn_sec_pi1_div_r(
        np: *mut Limb,
        nn: gmp::size_t,
        dp: *const Limb,
        dn: gmp::size_t,
        dinv: Limb,
        tp: *mut Limb,
    );
}

// `mod.rs`: the remainder by one limb.
extern "C" {
    // GMP's remainder by a single limb, four limbs per step (internal but
    // exported from the static library; `mpn_mod_1` picks it only above a
    // per-CPU threshold, and otherwise runs a loop several times slower
    // at the 16-32 limbs of a DH start). `cps` receives b's normalising
    // shift and the constants B^k mod b; b ≤ B/4.
    pub(crate) fn __gmpn_mod_1s_4p_cps(
        cps: *mut gmp_mpfr_sys::gmp::limb_t,
        b: gmp_mpfr_sys::gmp::limb_t,
    );
    pub(crate) fn __gmpn_mod_1s_4p(
        ap: *const gmp_mpfr_sys::gmp::limb_t,
        n: gmp_mpfr_sys::gmp::size_t,
        b: gmp_mpfr_sys::gmp::limb_t,
        cps: *const gmp_mpfr_sys::gmp::limb_t,
    ) -> gmp_mpfr_sys::gmp::limb_t;
}

// `redc.rs`: Montgomery rows.
extern "C" {
    // GMP's Montgomery reduction (internal but exported from the static
    // library; `mpn_sec_powm` reaches it through `mpn_redc_2`, see the
    // parent module): rp = up / B^n mod mp (up has 2n limbs and is
    // clobbered), returning the carry out of the top limb; invm = −mp⁻¹
    // mod B. The fat entry point dispatches to a CPU-specific version —
    // on Zen, to the portable C loop over `addmul_1`.
    pub(crate) fn __gmpn_redc_1(
        rp: *mut Limb,
        up: *mut Limb,
        mp: *const Limb,
        n: isize,
        invm: Limb,
    ) -> Limb;
    // GMP's row multiply-add for Broadwell and later (mulx with the adcx
    // and adox carry chains; needs BMI2 and ADX): rp[..n] += up[..n]·v,
    // returning the carry limb.
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    pub(crate) fn __gmpn_addmul_1_coreibwl(
        rp: *mut Limb,
        up: *const Limb,
        n: isize,
        v: Limb,
    ) -> Limb;
}

// `pubpow.rs`: public exponentiation.
extern "C" {
    // GMP's subquadratic Montgomery reduction (internal but exported from
    // the static library, as `mpn_redc_1` in `redc.rs`): rp = up / B^n mod
    // mp, fully reduced, for up < mp·B^n with 2n limbs (clobbered) and
    // ip = mp⁻¹ mod B^n; needs n > 8.
    pub(crate) fn __gmpn_redc_n(
        rp: *mut Limb,
        up: *mut Limb,
        mp: *const Limb,
        n: gmp::size_t,
        ip: *const Limb,
    );
    // rp = up⁻¹ mod B^n for odd up, with `__gmpn_binvert_itch(n)` limbs of
    // scratch.
    pub(crate) fn __gmpn_binvert(
        rp: *mut Limb,
        up: *const Limb,
        n: gmp::size_t,
        scratch: *mut Limb,
    );
    pub(crate) fn __gmpn_binvert_itch(n: gmp::size_t) -> gmp::size_t;
}

// `dispatch.rs`: the CPU dispatch table and the routines it is filled with.
macro_rules! gmp_fns {
    ($($name:ident),* $(,)?) => {
        extern "C" { $(pub(crate) fn $name();)* }
    };
}

gmp_fns!(
    __gmpn_cpuvec_init,
    __gmpn_addmul_1_x86_64,
    __gmpn_addmul_2_fat,
    __gmpn_mul_basecase_fat,
    __gmpn_redc_1_fat,
    __gmpn_redc_2_fat,
    __gmpn_sqr_basecase_fat,
    __gmpn_sqr_basecase_zen,
    // Zen
    __gmpn_addlsh1_n_zen,
    __gmpn_addmul_1_zen,
    __gmpn_com_zen,
    __gmpn_copyd_zen,
    __gmpn_copyi_zen,
    __gmpn_gcd_11_zen,
    __gmpn_lshift_zen,
    __gmpn_lshiftc_zen,
    __gmpn_mul_1_zen,
    __gmpn_mul_basecase_zen,
    __gmpn_mullo_basecase_zen,
    __gmpn_rshift_zen,
    __gmpn_sublsh1_n_zen,
    __gmpn_submul_1_zen,
    // Intel: Core 2, Sandy Bridge, Haswell, Broadwell
    __gmpn_com_core2,
    __gmpn_copyd_core2,
    __gmpn_copyi_core2,
    __gmpn_sublsh1_n_core2,
    __gmpn_addlsh1_n_coreisbr,
    __gmpn_addlsh2_n_coreisbr,
    __gmpn_cnd_add_n_coreisbr,
    __gmpn_cnd_sub_n_coreisbr,
    __gmpn_divrem_1_coreisbr,
    __gmpn_gcd_11_coreisbr,
    __gmpn_lshift_coreisbr,
    __gmpn_lshiftc_coreisbr,
    __gmpn_preinv_divrem_1_coreisbr,
    __gmpn_rshift_coreisbr,
    __gmpn_add_n_coreihwl,
    __gmpn_addmul_2_coreihwl,
    __gmpn_sub_n_coreihwl,
    __gmpn_submul_1_coreihwl,
    __gmpn_mul_1_coreibwl,
    __gmpn_mul_basecase_coreibwl,
    __gmpn_mullo_basecase_coreibwl,
    __gmpn_sqr_basecase_coreibwl,
);

extern "C" {
    pub(crate) static mut __gmpn_cpuvec: [usize; CPUVEC_WORDS];
    /// GMP's mulx-based Montgomery reduction (needs BMI2).
    pub(crate) fn __gmpn_redc_1_coreihwl(
        rp: *mut Limb,
        up: *mut Limb,
        mp: *const Limb,
        n: isize,
        invm: Limb,
    ) -> Limb;
}
