//! The fastest constant-time Montgomery reduction for this CPU, for
//! [`super::mont`].

use gmp_mpfr_sys::gmp;

type Limb = u64;

pub(super) type Redc = unsafe extern "C" fn(*mut Limb, *mut Limb, *const Limb, isize, Limb) -> Limb;

extern "C" {
    // GMP's Montgomery reduction (internal but exported from the static
    // library; `mpn_sec_powm` reaches it through `mpn_redc_2`, see the
    // parent module): rp = up / B^n mod mp (up has 2n limbs and is
    // clobbered), returning the carry out of the top limb; invm = −mp⁻¹
    // mod B. The fat entry point dispatches to a CPU-specific version —
    // on Zen, to the portable C loop over `addmul_1`.
    fn __gmpn_redc_1(rp: *mut Limb, up: *mut Limb, mp: *const Limb, n: isize, invm: Limb) -> Limb;
    // GMP's row multiply-add for Broadwell and later (mulx with the adcx
    // and adox carry chains; needs BMI2 and ADX): rp[..n] += up[..n]·v,
    // returning the carry limb.
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    fn __gmpn_addmul_1_coreibwl(rp: *mut Limb, up: *const Limb, n: isize, v: Limb) -> Limb;
}

/// `mpn_redc_1` as n rows of the ADX `addmul_1`, the algorithm of GMP's
/// portable redc_1: row i zeroes limb i with q = up[i]·invm, whose carry is
/// kept in that limb and added in at the end. Fixed work for a given n.
/// On Zen 3 it is a tenth faster than the assembly `redc_1_coreihwl` at 32
/// limbs (846 against 936 ns).
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
unsafe extern "C" fn redc_rows_adx(
    rp: *mut Limb,
    up: *mut Limb,
    mp: *const Limb,
    n: isize,
    invm: Limb,
) -> Limb {
    // SAFETY: up has 2n limbs, mp and rp n limbs (redc_1's contract); row
    // i touches up[i .. i + n].
    unsafe {
        let mut u = up;
        for _ in 0..n {
            let q = (*u).wrapping_mul(invm);
            *u = __gmpn_addmul_1_coreibwl(u, mp, n, q);
            u = u.add(1);
        }
        gmp::mpn_add_n(rp, up.add(n as usize), up, n as gmp::size_t)
    }
}

/// The fastest constant-time Montgomery reduction for this CPU.
pub(super) fn redc() -> Redc {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    if std::arch::is_x86_feature_detected!("bmi2") {
        if std::arch::is_x86_feature_detected!("adx") {
            return redc_rows_adx;
        }
        return super::zen::__gmpn_redc_1_coreihwl;
    }
    __gmpn_redc_1
}
