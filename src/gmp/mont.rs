//! Constant-time Montgomery arithmetic modulo a secret odd number, as safe
//! operations for the algorithms in `prime/` (the base-2 Fermat filter) and
//! [`super::sec`] (the Miller–Rabin squarings).
//!
//! ## Constant time
//! Nothing here branches on or indexes memory by a value:
//! - squaring is a basecase squaring (`mpn_sqr` below GMP's Toom
//!   threshold where `dispatch` has set it, `mpn_sec_sqr` otherwise;
//!   no data-dependent branches) followed by `mpn_redc_1` — the same pair
//!   `mpn_sec_powm` uses;
//! - every reduction and every conditional doubling is applied with
//!   `mpn_cnd_add_n`/`mpn_cnd_sub_n`, their condition computed from carries
//!   and `mpn_sub_n` borrows, or, with BMI2 and ADX at 2 to 32 limbs, by
//!   the fused passes of [`super::finish`] (carry chains and `cmov`);
//!   results stay fully reduced (< n);
//! - R mod n comes from `sec::sec_div_r` (GMP's `mpn_sec_div_r` without
//!   its table look-up), and −n⁻¹ mod 2^64 from Newton's
//!   iteration (GMP's `binvert_limb` would index a table by the low bits
//!   of n);
//! - buffers are exchanged by handle, the same for every value.
//!
//! Every buffer is in the secret arena and wiped when dropped.

use gmp_mpfr_sys::gmp;
use rug::Integer;

use super::finish::{negated, Finish};
use super::redc::{redc, Redc, Rows};
use crate::arith::inverse_mod_2_64;
use crate::secure::SecretVec;

type Limb = u64;

/// A residue modulo the context's n, in Montgomery form (x·R mod n, fully
/// reduced), `len` limbs.
#[derive(Clone)]
pub(crate) struct Residue(SecretVec<Limb>);

impl Residue {
    /// The limbs (secret: for copying into other secret buffers).
    pub(crate) fn limbs(&self) -> &[Limb] {
        &self.0
    }

    /// The limbs, to be overwritten with another residue's.
    pub(crate) fn limbs_mut(&mut self) -> &mut [Limb] {
        &mut self.0
    }

    /// 1 when equal, 0 when not, by a full-length XOR (no early exit).
    pub(crate) fn ct_eq(&self, other: &Residue) -> u64 {
        assert_eq!(self.0.len(), other.0.len(), "residues of two sizes");
        let diff = self
            .0
            .iter()
            .zip(other.0.iter())
            .fold(0, |acc, (x, y)| acc | (x ^ y));
        1 ^ ((diff | diff.wrapping_neg()) >> 63)
    }
}

/// The fused path of a [`Mont`]: the rows, the passes after them, and
/// `negm` = B^len − n (secret: derived from n).
struct Fused {
    rows: Rows,
    finish: Finish,
    negm: SecretVec<Limb>,
}

impl Fused {
    /// The fused path for `m` on a CPU with BMI2 and ADX, if `m`'s size
    /// has one (there is none off x86-64).
    fn adx(m: &[Limb]) -> Option<Fused> {
        #[cfg(target_arch = "x86_64")]
        let code = super::redc::rows_adx(m.len()).zip(super::finish::finish_adx(m.len()));
        #[cfg(not(target_arch = "x86_64"))]
        let code: Option<(Rows, Finish)> = None;
        let (rows, finish) = code?;
        let mut negm = SecretVec::zeroed(m.len());
        negated(m, &mut negm);
        Some(Fused { rows, finish, negm })
    }

    /// The fused path where this CPU has BMI2 and ADX.
    fn for_cpu(m: &[Limb]) -> Option<Fused> {
        if crate::arith::fixed::has_adx() {
            return Fused::adx(m);
        }
        None
    }
}

/// Montgomery arithmetic modulo an odd n ≥ 3 (R = 2^(64·limbs)).
pub(crate) struct Mont<'n> {
    m: &'n [Limb],
    invm: Limb,
    redc: Redc,
    basecase_sqr: bool,
    /// The reduction rows alone and the fused finishing passes, with
    /// B^len − n, where the CPU and the size allow (`None`: `redc` and
    /// GMP's passes).
    fused: Option<Fused>,
    prod: SecretVec<Limb>,
    tmp: SecretVec<Limb>,
    spare: SecretVec<Limb>,
    scratch: SecretVec<Limb>,
}

impl<'n> Mont<'n> {
    /// The context for `n`, or `None` unless n is odd and at least 3.
    pub(crate) fn new(n: &'n Integer) -> Option<Mont<'n>> {
        if n.is_even() || *n < 3u32 {
            return None;
        }
        let m = n.as_limbs();
        let len = m.len();
        // SAFETY: the `_itch` functions only compute sizes.
        let itch = unsafe {
            (gmp::mpn_sec_sqr_itch(len as _) as usize)
                .max(gmp::mpn_sec_mul_itch(len as _, len as _) as usize)
                .max(gmp::mpn_sec_div_r_itch((2 * len) as _, len as _) as usize)
        };
        Some(Mont {
            m,
            invm: inverse_mod_2_64(m[0]).wrapping_neg(),
            redc: redc(len),
            // `mpn_sqr` runs GMP's data-independent basecase below
            // SQR_TOOM2_THRESHOLD, and Toom (which branches on operand
            // values) above. The threshold is known only where `dispatch`
            // has set GMP's table (it is 33 there); elsewhere, and above
            // it, `mpn_sec_sqr` never leaves the basecase.
            basecase_sqr: len < super::basecase_sqr_below(),
            fused: Fused::for_cpu(m),
            prod: SecretVec::zeroed(2 * len),
            tmp: SecretVec::zeroed(len),
            spare: SecretVec::zeroed(len),
            scratch: SecretVec::zeroed(itch.max(1)),
        })
    }

    /// Hands −n⁻¹ mod 2^64 (derived from n) to `f` as a byte range, for
    /// `arith::ct_check` to mark it undefined under valgrind; n's limbs
    /// are the caller's.
    #[cfg(test)]
    pub(crate) fn secret_bytes(&mut self, mut f: impl FnMut(*const u8, usize)) {
        f((&self.invm as *const Limb).cast(), 8);
    }

    /// Uses the BMI2/ADX reduction whatever CPUID says (the valgrind check:
    /// valgrind hides both from CPUID but runs them).
    #[cfg(all(test, target_arch = "x86_64"))]
    pub(crate) fn force_adx(&mut self) {
        self.redc = super::redc::redc_adx(self.len());
        self.fused = Fused::adx(self.m);
    }

    /// Uses `redc` and GMP's finishing passes whatever the CPU (tests of
    /// the fused passes against them).
    #[cfg(test)]
    pub(crate) fn force_gmp_passes(&mut self) {
        self.fused = None;
    }

    /// The limb count of n (public).
    pub(crate) fn len(&self) -> usize {
        self.m.len()
    }

    /// Bit `i` of n (a mask-ready 0 or 1; n is secret, so callers use it
    /// only as a condition of the masked operations below).
    pub(crate) fn modulus_bit(&self, i: usize) -> u64 {
        (self.m[i / 64] >> (i % 64)) & 1
    }

    /// y·R mod n for `y` of at most `len` limbs (y < n not required).
    pub(crate) fn mont_form(&mut self, y: &[Limb]) -> Residue {
        let len = self.len();
        let mut wide = SecretVec::<Limb>::zeroed(2 * len);
        wide[len..len + y.len()].copy_from_slice(y);
        // SAFETY: `wide` has 2·len limbs, n's top limb is non-zero (rug
        // normalises) and the scratch has the size GMP asked for.
        unsafe {
            super::sec::sec_div_r(
                wide.as_mut_ptr(),
                (2 * len) as _,
                self.m.as_ptr(),
                len as _,
                self.scratch.as_mut_ptr(),
            );
        }
        let mut r = SecretVec::zeroed(len);
        r.copy_from_slice(&wide[..len]);
        Residue(r)
    }

    /// The Montgomery form of 1 (R mod n).
    pub(crate) fn one(&mut self) -> Residue {
        self.mont_form(&[1])
    }

    /// The Montgomery form of n − 1 (n − (R mod n)).
    pub(crate) fn minus_one(&mut self) -> Residue {
        let one = self.one();
        let mut r = SecretVec::zeroed(self.len());
        // SAFETY: both operands and the result have `len` limbs.
        unsafe {
            gmp::mpn_sub_n(
                r.as_mut_ptr(),
                self.m.as_ptr(),
                one.0.as_ptr(),
                self.len() as _,
            );
        }
        Residue(r)
    }

    /// Subtracts n from `x` when `carry` is 1 or `x` ≥ n (no borrow).
    fn reduce(&mut self, x: *mut Limb, carry: Limb) {
        let n_l = self.len() as gmp::size_t;
        // SAFETY: `x` and `spare` have `len` limbs; cnd_sub_n works in
        // place, as the GMP manual allows.
        unsafe {
            let borrow = gmp::mpn_sub_n(self.spare.as_mut_ptr(), x, self.m.as_ptr(), n_l);
            gmp::mpn_cnd_sub_n(carry | (borrow ^ 1), x, x, self.m.as_ptr(), n_l);
        }
    }

    /// x ← x²·R⁻¹ mod n. `redc` leaves cy·R + x < 2n: one masked
    /// subtraction brings it below n.
    /// Every residue handed in must be of this context's size: a residue
    /// of another (a `Mont` of another modulus length) would have GMP read
    /// and write past its buffer. Its length is public; checked always.
    fn own(&self, x: &Residue) {
        assert_eq!(
            x.0.len(),
            self.len(),
            "a residue of another Montgomery context (another modulus size)"
        );
    }

    pub(crate) fn square(&mut self, x: &mut Residue) {
        self.own(x);
        self.square_into_prod(x);
        self.reduce_product_into(x);
    }

    /// prod ← x², by a basecase squaring (no data-dependent branch).
    fn square_into_prod(&mut self, x: &Residue) {
        let n_l = self.len() as gmp::size_t;
        let xp = x.0.as_ptr();
        // SAFETY: `prod` has 2·len limbs as mpn_sqr/mpn_sec_sqr require,
        // `x` len limbs, the scratch the size GMP asked for.
        unsafe {
            if self.basecase_sqr {
                gmp::mpn_sqr(self.prod.as_mut_ptr(), xp, n_l);
            } else {
                gmp::mpn_sec_sqr(self.prod.as_mut_ptr(), xp, n_l, self.scratch.as_mut_ptr());
            }
        }
    }

    /// x ← prod·R⁻¹ mod n for the 2·len-limb product in `prod` (below
    /// n·R): the reduction rows, then one masked subtraction (`redc`
    /// leaves cy·R + x < 2n).
    fn reduce_product_into(&mut self, x: &mut Residue) {
        let xp = x.0.as_mut_ptr();
        if let Some(f) = &self.fused {
            // SAFETY: `prod` has 2·len limbs, `x`, `negm`, `spare` and the
            // modulus len limbs, `spare` and `prod` are our own; `fused`
            // exists only with BMI2 and ADX (or under valgrind, which runs
            // them).
            unsafe {
                (f.rows)(self.prod.as_mut_ptr(), self.m.as_ptr(), self.invm);
                (f.finish.reduce)(
                    xp,
                    self.prod.as_ptr(),
                    f.negm.as_ptr(),
                    self.spare.as_mut_ptr(),
                );
            }
            return;
        }
        // SAFETY: `prod` has 2·len limbs, `x` and the modulus len limbs.
        let cy = unsafe {
            (self.redc)(
                xp,
                self.prod.as_mut_ptr(),
                self.m.as_ptr(),
                self.len() as isize,
                self.invm,
            )
        };
        self.reduce(xp, cy);
    }

    /// x ← x·R⁻¹ mod n: out of Montgomery form, by the reduction alone.
    pub(crate) fn out_of_form(&mut self, x: &mut Residue) {
        self.own(x);
        let len = self.len();
        self.prod[..len].copy_from_slice(&x.0);
        self.prod[len..].fill(0);
        self.reduce_product_into(x);
    }

    /// x ← x·y·R⁻¹ mod n: `mpn_sec_mul` (GMP's basecase product, no
    /// data-dependent branch at any size), then the reduction of
    /// [`Mont::square`].
    pub(crate) fn mul(&mut self, x: &mut Residue, y: &Residue) {
        self.own(x);
        self.own(y);
        let len = self.len();
        let n_l = len as gmp::size_t;
        let xp = x.0.as_mut_ptr();
        // SAFETY: `prod` has 2·len limbs, `x` and `y` len limbs, the
        // scratch the size GMP asked for (mpn_sec_mul_itch).
        unsafe {
            gmp::mpn_sec_mul(
                self.prod.as_mut_ptr(),
                xp,
                n_l,
                y.0.as_ptr(),
                n_l,
                self.scratch.as_mut_ptr(),
            );
        }
        self.reduce_product_into(x);
    }

    /// x ← x²·R⁻¹ mod n for a *public* n and x (DH candidates): GMP's
    /// fastest squaring at every size and a branch for the final
    /// subtraction, instead of the masked passes of [`Mont::square`].
    pub(crate) fn square_public(&mut self, x: &mut Residue) {
        self.own(x);
        let len = self.len();
        let n_l = len as gmp::size_t;
        let xp = x.0.as_mut_ptr();
        // SAFETY: `prod` has 2·len limbs as mpn_sqr and redc_1 require,
        // `x` and the modulus len limbs; mpn_sub_n works in place.
        unsafe {
            gmp::mpn_sqr(self.prod.as_mut_ptr(), xp, n_l);
            let cy = (self.redc)(
                xp,
                self.prod.as_mut_ptr(),
                self.m.as_ptr(),
                len as isize,
                self.invm,
            );
            if cy != 0 || gmp::mpn_cmp(xp, self.m.as_ptr(), n_l) >= 0 {
                gmp::mpn_sub_n(xp, xp, self.m.as_ptr(), n_l);
            }
        }
    }

    /// x ← 2x mod n for a public n and x (see [`Mont::square_public`]).
    pub(crate) fn double_public(&mut self, x: &mut Residue) {
        self.own(x);
        let n_l = self.len() as gmp::size_t;
        let xp = x.0.as_mut_ptr();
        // SAFETY: `x` and the modulus have len limbs; mpn_lshift and
        // mpn_sub_n work in place.
        unsafe {
            let top = gmp::mpn_lshift(xp, xp, n_l, 1);
            if top != 0 || gmp::mpn_cmp(xp, self.m.as_ptr(), n_l) >= 0 {
                gmp::mpn_sub_n(xp, xp, self.m.as_ptr(), n_l);
            }
        }
    }

    /// x ← 2^bit·x²·R⁻¹ mod n for `bit` 0 or 1, the same work either
    /// way: [`Mont::square`] then [`Mont::double_if`], their finishing
    /// passes fused where the CPU and the size allow.
    pub(crate) fn square_double_if(&mut self, x: &mut Residue, bit: u64) {
        self.own(x);
        self.square_into_prod(x);
        let Some(f) = &self.fused else {
            self.reduce_product_into(x);
            self.double_if(x, bit);
            return;
        };
        // SAFETY: as in `reduce_product_into`.
        unsafe {
            (f.rows)(self.prod.as_mut_ptr(), self.m.as_ptr(), self.invm);
            (f.finish.reduce_double)(
                x.0.as_mut_ptr(),
                self.prod.as_ptr(),
                f.negm.as_ptr(),
                self.spare.as_mut_ptr(),
                bit,
            );
        }
    }

    /// x ← 2^bit·x mod n for `bit` 0 or 1, the same work either way.
    pub(crate) fn double_if(&mut self, x: &mut Residue, bit: u64) {
        self.own(x);
        let n_l = self.len() as gmp::size_t;
        let xp = x.0.as_ptr();
        // SAFETY: `tmp` and `x` have `len` limbs.
        let top = unsafe { gmp::mpn_cnd_add_n(bit, self.tmp.as_mut_ptr(), xp, xp, n_l) };
        let tp = self.tmp.as_mut_ptr();
        self.reduce(tp, top);
        std::mem::swap(&mut x.0, &mut self.tmp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rug::integer::Order;

    /// A residue of one context handed to another of another size is
    /// refused (it read and wrote past its buffer), by every operation.
    #[test]
    fn a_residue_of_another_size_is_refused() {
        crate::gmp::init();
        let small = (Integer::from(1u32) << 190u32) + 1u32; // 3 limbs
        let big = (Integer::from(1u32) << 510u32) + 1u32; // 8 limbs
        let mut a = Mont::new(&small).unwrap();
        let mut b = Mont::new(&big).unwrap();
        type Op<'a> = &'a dyn Fn(&mut Mont<'_>, &mut Residue);
        let ops: [Op<'_>; 5] = [
            &|m, x| m.square(x),
            &|m, x| m.square_public(x),
            &|m, x| m.double_if(x, 1),
            &|m, x| m.square_double_if(x, 0),
            &|m, x| m.out_of_form(x),
        ];
        for (i, op) in ops.iter().enumerate() {
            let mut foreign = a.one();
            let r =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| op(&mut b, &mut foreign)));
            assert!(r.is_err(), "operation {i} took a residue of another size");
        }
        let mut x = b.one();
        let y = a.one();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| b.mul(&mut x, &y)));
        assert!(r.is_err(), "mul took a residue of another size");
    }

    fn value(r: &Residue) -> Integer {
        Integer::from_digits(r.limbs(), Order::Lsf)
    }

    /// Moduli of `len` limbs whose top limbs make the reduction's carry
    /// out of B^len frequent (all ones), rare (one) or anything between,
    /// and values that sit at the edges of the subtractions.
    fn moduli_and_values(
        len: usize,
        next: &mut impl FnMut() -> u64,
    ) -> Vec<(Integer, Vec<Integer>)> {
        (0..6)
            .map(|t| {
                let mut l: Vec<u64> = (0..len).map(|_| next()).collect();
                match t {
                    0 => l[len - 1] = u64::MAX,
                    1 => l[len - 1] = 1,
                    2 => l.iter_mut().for_each(|x| *x = u64::MAX),
                    3 => l[len - 1] |= 1 << 63,
                    _ => {}
                }
                l[0] |= if len == 1 { 3 } else { 1 };
                let n = Integer::from_digits(&l, Order::Lsf);
                let mut xs = vec![
                    Integer::new(),
                    Integer::from(1),
                    Integer::from(&n - 1u32),
                    Integer::from(&n - 2u32),
                    Integer::from(&n >> 1),
                    Integer::from(&n >> 1u32) + 1u32,
                ];
                for _ in 0..12 {
                    let r: Vec<u64> = (0..len).map(|_| next()).collect();
                    xs.push(Integer::from_digits(&r, Order::Lsf) % &n);
                }
                (n, xs)
            })
            .collect()
    }

    /// The fused finishing passes (`gmp::finish`) compute what GMP's
    /// passes compute, and both what rug computes: a squaring, a
    /// multiplication and a squaring with a doubling by 0 and by 1, at
    /// every size with unrolled code and the sizes beside it.
    #[test]
    fn fused_passes_agree_with_gmp_and_rug() {
        let mut next = crate::gmp::test_words(0x2545_f491_4f6c_dd1du64);
        let mut fused_seen = 0;
        for len in 1..=34usize {
            for (n, xs) in moduli_and_values(len, &mut next) {
                let r_inv = (Integer::from(1u32) << (64 * len as u32))
                    .invert(&n)
                    .expect("odd n");
                let mut plain = Mont::new(&n).expect("odd");
                plain.force_gmp_passes();
                let mut fused = Mont::new(&n).expect("odd");
                #[cfg(target_arch = "x86_64")]
                if crate::arith::fixed::has_adx() {
                    fused.force_adx();
                }
                fused_seen += usize::from(fused.fused.is_some());
                for (k, x) in xs.iter().enumerate() {
                    let y = &xs[(k + 1) % xs.len()];
                    // Residues whose limbs are x and y themselves.
                    let in_form = |v: &Integer| {
                        let mut r = Residue(SecretVec::zeroed(len));
                        r.limbs_mut()[..v.as_limbs().len()].copy_from_slice(v.as_limbs());
                        r
                    };
                    let sq = Integer::from(x * x) * &r_inv % &n;
                    let mu = Integer::from(x * y) * &r_inv % &n;
                    for m in [&mut plain, &mut fused] {
                        let mut a = in_form(x);
                        m.square(&mut a);
                        assert_eq!(value(&a), sq, "square, {len} limbs, n = {n:x}, x = {x:x}");
                        let mut a = in_form(x);
                        m.mul(&mut a, &in_form(y));
                        assert_eq!(value(&a), mu, "mul, {len} limbs, n = {n:x}, x = {x:x}");
                        for bit in [0u64, 1] {
                            let mut a = in_form(x);
                            m.square_double_if(&mut a, bit);
                            let want = Integer::from(&sq << bit as u32) % &n;
                            assert_eq!(
                                value(&a),
                                want,
                                "square·2^{bit}, {len} limbs, n = {n:x}, x = {x:x}"
                            );
                        }
                    }
                }
            }
        }
        #[cfg(target_arch = "x86_64")]
        if crate::arith::fixed::has_adx() {
            assert_eq!(fused_seen, 31 * 6, "the fused passes ran at 2..=32 limbs");
        }
        let _ = fused_seen;
    }
}
