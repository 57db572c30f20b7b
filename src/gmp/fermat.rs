//! A constant-time base-2 Fermat test, the first test every RSA candidate
//! that survives trial division gets.
//!
//! ## Why base 2, and why our own loop
//! The first test on a candidate rejects nearly every composite, so it is
//! where RSA key generation spends its time: about 64 of the ~67
//! exponentiations per 2048-bit prime. With the base fixed at 2, the
//! multiplications of a square-and-multiply exponentiation become
//! doublings (a shift and a conditional subtraction), and only the
//! squarings remain: against GMP's `mpz_powm_sec` with an arbitrary base,
//! which spends about a sixth of its time on window multiplications and
//! table look-ups, that is measurably cheaper (see `bench/examples/powm_cost`).
//!
//! The base-2 test is a filter, not one of the counted rounds: a candidate
//! that passes it still gets every FIPS 186-5 Miller–Rabin round with
//! random bases from the seeded stream (see `rsa::RsaSource`), so the
//! error bound of Table B.1 is untouched. It cannot reject a prime
//! (Fermat), so the prime a seed yields is the same as without it.
//!
//! ## Constant time
//! The candidate may become a secret prime, so nothing here branches on
//! or indexes memory by its value:
//! - Montgomery squaring is a basecase squaring (`mpn_sqr` below GMP's
//!   Toom threshold, `mpn_sec_sqr` otherwise; no data-dependent branches)
//!   followed by `mpn_redc_1` — the same pair `mpn_sec_powm` uses;
//! - every reduction and every exponent bit is applied with
//!   `mpn_cnd_add_n`/`mpn_cnd_sub_n`, their condition computed from carries
//!   and `mpn_sub_n` borrows;
//! - R mod n comes from `mpn_sec_div_r`, and −n⁻¹ mod 2^64 from Newton's
//!   iteration (GMP's `binvert_limb` would index a table by the low bits
//!   of n);
//! - the loop runs once per bit of n, which is public (the key size).
//!
//! Only the verdict leaves, and for a prime it is always "pass". Every
//! buffer is wiped before it is freed.

use crate::secure::SecretVec;
use gmp_mpfr_sys::gmp;
use rug::Integer;

use crate::arith::inverse_mod_2_64;

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

/// Whether 2^(n−1) ≡ 1 (mod n), in time that depends only on the size of
/// n. `n` must be odd and at least 5; smaller or even input returns false.
pub fn fermat_base2_secret(n: &Integer) -> bool {
    fermat_base2_secret_or_stop(n, &std::sync::atomic::AtomicBool::new(false))
}

/// [`fermat_base2_secret`] that gives up (returning false) once `stop` is
/// set, looked at every 64 bits of n (a cancelled search waits for no
/// more than 64 squarings).
pub fn fermat_base2_secret_or_stop(n: &Integer, stop: &std::sync::atomic::AtomicBool) -> bool {
    super::init();
    if n.is_even() || *n < 5u32 {
        return false;
    }
    let m = n.as_limbs();
    let len = m.len();
    let bits = n.significant_bits() as usize;
    let invm = inverse_mod_2_64(m[0]).wrapping_neg();
    let redc = redc();
    // `mpn_sqr` runs GMP's data-independent basecase below
    // SQR_TOOM2_THRESHOLD, and Toom (which branches on operand values)
    // above. The threshold is known only where the Zen fix has checked
    // GMP's dispatch table (it is 33 there); elsewhere, and above it, use
    // `mpn_sec_sqr`, which never leaves the basecase routines.
    let basecase_sqr = super::zen_fix_active() && len <= 32;
    // SAFETY: (whole block) every pointer comes from a live Vec or slice
    // of the length GMP is told; outputs alias inputs only in place, as
    // the GMP manual allows for mpn_cnd_add_n/mpn_cnd_sub_n; `prod` has 2n
    // limbs as mpn_sqr/mpn_sec_sqr and redc_1 require; the scratch area has
    // the size the `_itch` functions ask for.
    unsafe {
        let sqr_itch = gmp::mpn_sec_sqr_itch(len as _) as usize;
        let div_itch = gmp::mpn_sec_div_r_itch((len + 1) as _, len as _) as usize;
        // Every buffer is wiped when dropped.
        let buf = |l: usize| SecretVec::<Limb>::zeroed(l);
        let (mut acc, mut one, mut tmp, mut tmp2) = (buf(len + 1), buf(len), buf(len), buf(len));
        let (mut prod, mut scratch) = (buf(2 * len), buf(sqr_itch.max(div_itch).max(1)));
        let mp = m.as_ptr();
        let n_l = len as gmp::size_t;
        // one = R mod n, the Montgomery form of 1 (R = 2^(64·len)).
        acc[len] = 1;
        gmp::mpn_sec_div_r(acc.as_mut_ptr(), n_l + 1, mp, n_l, scratch.as_mut_ptr());
        acc.truncate(len);
        one.copy_from_slice(&acc);

        // Left to right over the bits of n − 1 (bit 0 of n − 1 is 0).
        // Values stay fully reduced (< n). Every selection is GMP's
        // assembly `mpn_cnd_sub_n`/`mpn_cnd_add_n` with a mask computed
        // from carries and borrows; `std::mem::swap` only exchanges the
        // two buffers' handles, the same for every value.
        for i in (0..bits).rev() {
            if i % 64 == 0 && stop.load(std::sync::atomic::Ordering::Relaxed) {
                return false;
            }
            // acc = acc² · R⁻¹ mod n. redc leaves cy·R + acc < 2n:
            // subtract n when cy = 1 or acc ≥ n (no borrow).
            if basecase_sqr {
                gmp::mpn_sqr(prod.as_mut_ptr(), acc.as_ptr(), n_l);
            } else {
                gmp::mpn_sec_sqr(prod.as_mut_ptr(), acc.as_ptr(), n_l, scratch.as_mut_ptr());
            }
            let cy = redc(acc.as_mut_ptr(), prod.as_mut_ptr(), mp, len as isize, invm);
            let borrow = gmp::mpn_sub_n(tmp2.as_mut_ptr(), acc.as_ptr(), mp, n_l);
            gmp::mpn_cnd_sub_n(cy | (borrow ^ 1), acc.as_mut_ptr(), acc.as_ptr(), mp, n_l);

            // tmp = 2^bit · acc mod n, the same way; then it becomes acc.
            let bit = if i == 0 {
                0
            } else {
                (m[i / 64] >> (i % 64)) & 1
            };
            let top = gmp::mpn_cnd_add_n(bit, tmp.as_mut_ptr(), acc.as_ptr(), acc.as_ptr(), n_l);
            let borrow = gmp::mpn_sub_n(tmp2.as_mut_ptr(), tmp.as_ptr(), mp, n_l);
            gmp::mpn_cnd_sub_n(top | (borrow ^ 1), tmp.as_mut_ptr(), tmp.as_ptr(), mp, n_l);
            std::mem::swap(&mut acc, &mut tmp);
        }
        // acc is the Montgomery form of 2^(n−1) mod n; compare with 1's.
        acc[..] == one[..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neg_inverse_is_exact() {
        for m in [1u64, 3, 5, 0xffff_ffff_ffff_ffff, 0x1234_5678_9abc_def1] {
            assert_eq!(
                m.wrapping_mul(inverse_mod_2_64(m).wrapping_neg()),
                u64::MAX,
                "m = {m:#x}"
            );
        }
    }

    /// Agrees with mpz_powm on primes, composites, base-2 pseudoprimes and
    /// sizes from one limb to 40 (odd limb counts, small top limbs).
    #[test]
    fn agrees_with_powm() {
        let reference = |n: &Integer| {
            let e = Integer::from(n - 1u32);
            Integer::from(2u32).pow_mod(&e, n).unwrap() == 1u32
        };
        // 341 = 11·31 and 561 (Carmichael) are base-2 pseudoprimes.
        for small in [5u32, 7, 9, 15, 341, 561, 645, 1105, 65537, 65539] {
            let n = Integer::from(small);
            assert_eq!(fermat_base2_secret(&n), reference(&n), "n = {small}");
        }
        assert!(!fermat_base2_secret(&Integer::from(4u32)));
        assert!(!fermat_base2_secret(&Integer::from(3u32)));
        let mut x = Integer::from(0x9e37_79b9_7f4a_7c15u64);
        let mut primes = 0;
        // Three numbers per size (and the prime after each) keep every limb
        // count and top-limb shape of the six this once used, at half the
        // cost of finding the primes.
        for bits in [64u32, 65, 127, 128, 200, 512, 1000, 1024, 1536, 2048, 2560] {
            for _ in 0..3 {
                x = (Integer::from(&x * &x) + 0x6a09_e667u32).keep_bits(bits + 40);
                let mut n = Integer::from(&x >> 40u32);
                n.set_bit(bits - 1, true);
                n.set_bit(0, true);
                let p = Integer::from(n.next_prime_ref());
                for c in [n, p] {
                    let r = reference(&c);
                    primes += r as u32;
                    assert_eq!(fermat_base2_secret(&c), r, "{bits} bits");
                }
            }
        }
        assert!(primes >= 33);
        // Composite Fermat numbers F_5 … F_11 (up to 2049 bits) are base-2
        // pseudoprimes: the test must pass them, as mpz_powm does.
        for k in [5u32, 6, 7, 8, 9, 10, 11] {
            let f = (Integer::from(1u32) << (1u32 << k)) + 1u32;
            assert_eq!(fermat_base2_secret(&f), reference(&f), "F_{k}");
            assert!(fermat_base2_secret(&f), "F_{k} is a base-2 pseudoprime");
        }
    }
}
