//! Side-channel-silent arithmetic on secret values through GMP's `mpn_sec_*`
//! functions: a remainder by a secret modulus and a Miller–Rabin round on
//! a secret candidate, both in time that depends only on public sizes.

use super::sys::*;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::secure::SecretVec;
use gmp_mpfr_sys::gmp;
use rug::Integer;

use super::mont::Mont;

type Limb = u64;

fn buf(l: usize) -> SecretVec<Limb> {
    SecretVec::zeroed(l.max(1))
}

/// `mpn_sec_div_r` without its table look-up: np[..dn] = np[..nn] mod
/// dp[..dn] (nn ≥ dn ≥ 1, dp's top limb non-zero), with scratch `tp` of
/// `mpn_sec_div_r_itch(nn, dn)` limbs. GMP's own function gets the
/// reciprocal of the divisor's top limb from `mpn_invert_limb`, which reads
/// a 512-byte table at an index made of the divisor's top nine bits: with
/// a secret divisor (a prime candidate), a cache observer learns its top
/// bits. Here the reciprocal is `arith::reciprocal_word` (no table), and
/// the rest is GMP's steps: a shift by the divisor's leading zero count
/// (its bit size, public), `mpn_sec_pi1_div_r`, the shift back.
///
/// # Safety
/// np has nn limbs, dp dn limbs, tp `mpn_sec_div_r_itch(nn, dn)` limbs;
/// none overlap; dp[dn − 1] ≠ 0; nn ≥ dn ≥ 1.
pub(crate) unsafe fn sec_div_r(
    np: *mut Limb,
    nn: gmp::size_t,
    dp: *const Limb,
    dn: gmp::size_t,
    tp: *mut Limb,
) {
    let reciprocal = |top: Limb| {
        // GMP's under-estimate: the reciprocal of top + 1 (top itself when
        // it is all ones), computed without a branch.
        crate::arith::reciprocal_word(top + (!top != 0) as Limb)
    };
    // SAFETY: the caller's contract; tp's layout is GMP's (dn limbs of
    // shifted divisor, nn + 1 of shifted dividend, dn + 1 for the core).
    unsafe {
        let cnt = (*dp.add(dn as usize - 1)).leading_zeros();
        if cnt != 0 {
            let dp2 = tp;
            gmp::mpn_lshift(dp2, dp, dn, cnt);
            let np2 = tp.add(dn as usize);
            let cy = gmp::mpn_lshift(np2, np, nn, cnt);
            *np2.add(nn as usize) = cy;
            let inv = reciprocal(*dp2.add(dn as usize - 1));
            __gmpn_sec_pi1_div_r(np2, nn + 1, dp2, dn, inv, tp.add((nn + 1 + dn) as usize));
            gmp::mpn_rshift(np, np2, dn, cnt);
        } else {
            let inv = reciprocal(*dp.add(dn as usize - 1));
            __gmpn_sec_pi1_div_r(np, nn, dp, dn, inv, tp);
        }
    }
}

/// `x mod m` for `x ≥ 0` and `m > 0` with [`sec_div_r`]: the time
/// depends on the limb counts of `x` and `m` only. Scratch is wiped.
pub(crate) fn rem(x: &Integer, m: &Integer) -> Integer {
    // A public precondition (the sign and the size), checked always: an
    // empty divisor would have GMP read before its buffer.
    assert!(*x >= 0 && *m > 0, "sec::rem: x < 0 or m <= 0");
    let (xl, ml) = (x.as_limbs(), m.as_limbs());
    if xl.len() < ml.len() {
        return x.clone();
    }
    let mut r = buf(ml.len());
    rem_into(xl, ml, &mut r);
    Integer::from_digits(&r[..ml.len()], rug::integer::Order::Lsf)
}

/// a·b for non-negative secret a and b by `mpn_sec_mul` (GMP's basecase
/// product): no branch on the values at any size, where `mpz_mul` uses
/// Toom–Cook above about 30 limbs, which branches on the signs of
/// differences of the operands' halves.
pub(crate) fn mul(a: &Integer, b: &Integer) -> Integer {
    debug_assert!(*a >= 0 && *b >= 0);
    let (al, bl) = (a.as_limbs(), b.as_limbs());
    if al.is_empty() || bl.is_empty() {
        return Integer::new();
    }
    Integer::from_digits(&mul_limbs(al, bl), rug::integer::Order::Lsf)
}

/// The a.len() + b.len() limbs of a·b for non-empty a and b, by
/// `mpn_sec_mul`.
pub(crate) fn mul_limbs(a: &[Limb], b: &[Limb]) -> SecretVec<Limb> {
    // Public lengths, checked always: mpn_sec_mul needs both non-empty.
    assert!(
        !a.is_empty() && !b.is_empty(),
        "sec::mul_limbs: an empty operand"
    );
    // mpn_sec_mul wants the longer operand first.
    let (x, y) = if a.len() >= b.len() { (a, b) } else { (b, a) };
    let mut prod = buf(x.len() + y.len());
    // SAFETY: prod has x.len() + y.len() limbs, x.len() ≥ y.len() ≥ 1,
    // the scratch has the size GMP asks for.
    unsafe {
        let itch = gmp::mpn_sec_mul_itch(x.len() as _, y.len() as _) as usize;
        let mut scratch = buf(itch);
        gmp::mpn_sec_mul(
            prod.as_mut_ptr(),
            x.as_ptr(),
            x.len() as _,
            y.as_ptr(),
            y.len() as _,
            scratch.as_mut_ptr(),
        );
    }
    prod
}

/// out = x / g for x < 2^(64·len) divisible by a one-limb g ≥ 1, without
/// a table or a branch on the values: g = 2^t·h (h odd, t by a trailing-
/// zero count), x shifted right by t limb by limb (shifts take the same
/// time for every count), then Hensel's exact division by h with
/// h⁻¹ mod 2^64 from Newton's iteration (GMP's `mpn_divexact_1` reads the
/// start of that inverse from a table at h's low bits).
pub(crate) fn div_exact_limbs(x: &[Limb], g: Limb, out: &mut [Limb]) {
    debug_assert!(g != 0 && out.len() == x.len());
    let t = g.trailing_zeros();
    let h = g >> t;
    let hinv = crate::arith::inverse_mod_2_64(h);
    let mut c = 0;
    for i in 0..x.len() {
        // y_i = bits t .. t + 64 of x; (x_{i+1} << 1) << (63 − t) is
        // x_{i+1} << (64 − t), and 0 when t = 0.
        let next = x.get(i + 1).copied().unwrap_or(0);
        let y = (x[i] >> t) | ((next << 1) << (63 - t));
        let (l, borrow) = y.overflowing_sub(c);
        let q = l.wrapping_mul(hinv);
        out[i] = q;
        c = ((q as u128 * h as u128) >> 64) as Limb + borrow as Limb;
    }
}

/// x / g for a secret x ≥ 0 divisible by a secret g ≥ 1 (λ's
/// gcd(p − 1, q − 1)): [`div_exact_limbs`] when g has one limb (always,
/// but with probability about 2^-64), GMP's exact division otherwise.
pub(crate) fn div_exact(x: &Integer, g: &Integer) -> Integer {
    debug_assert!(*x >= 0 && *g > 0);
    let gl = g.as_limbs();
    if gl.len() != 1 {
        return Integer::from(x.div_exact_ref(g));
    }
    let xl = x.as_limbs();
    let mut out = buf(xl.len());
    div_exact_limbs(xl, gl[0], &mut out[..xl.len()]);
    Integer::from_digits(&out[..xl.len()], rug::integer::Order::Lsf)
}

/// Exponent bits per window of [`pow_secret`].
const WINDOW: u32 = 4;

/// base^e·R mod n (Montgomery form) for a secret odd n (`mont`), base `b`
/// (at most n's limb count, any value) and exponent `e` taken as `bits`
/// bits long: fixed 4-bit windows from the top, four squarings and one
/// multiplication each, the window's power read from a table of base^0 …
/// base^15 by `mpn_sec_tabselect` (which reads every entry). The time
/// depends on the limb count and `bits` only. `None` once `stop` is set
/// (looked at every 64 exponent bits; the flag is the caller's, not a
/// secret).
///
/// This replaces `mpn_sec_powm`, which brings the base into Montgomery
/// form with `mpn_sec_div_r` and so with `mpn_invert_limb`'s table look-up
/// at an index made of n's top bits (see [`sec_div_r`]).
pub(crate) fn pow_secret(
    mont: &mut Mont<'_>,
    b: &[Limb],
    e: &[Limb],
    bits: u32,
    stop: &AtomicBool,
) -> Option<super::mont::Residue> {
    let len = mont.len();
    let entries = 1usize << WINDOW;
    let one = mont.one();
    let base = mont.mont_form(b);
    // The table, contiguous for mpn_sec_tabselect: entry k at k·len.
    let mut table = buf(entries * len);
    let mut power = one.clone();
    for k in 0..entries {
        table[k * len..(k + 1) * len].copy_from_slice(power.limbs());
        if k + 1 < entries {
            mont.mul(&mut power, &base);
        }
    }
    let mut acc = one;
    let mut pick = power.clone();
    let windows = bits.div_ceil(WINDOW);
    for w in (0..windows).rev() {
        let lo = w * WINDOW;
        if lo % 64 == 0 && stop.load(Ordering::Relaxed) {
            crate::work::given_up((windows - 1 - w) as u64, windows as u64);
            return None;
        }
        for _ in 0..WINDOW {
            mont.square(&mut acc);
        }
        // The window's bits (public positions; a window never straddles
        // a limb since 64 is a multiple of WINDOW).
        let idx =
            (e.get(lo as usize / 64).copied().unwrap_or(0) >> (lo % 64)) & (entries as Limb - 1);
        // SAFETY: `table` has entries·len limbs, `pick` len limbs.
        unsafe {
            gmp::mpn_sec_tabselect(
                pick.limbs_mut().as_mut_ptr(),
                table.as_ptr(),
                len as _,
                entries as _,
                idx as _,
            );
        }
        mont.mul(&mut acc, &pick);
    }
    Some(acc)
}

/// base^e mod m for a secret odd m ≥ 3 and a secret e < 2^bits(m) (a CRT
/// exponent, a Miller–Rabin d), by [`pow_secret`] with the exponent taken
/// as long as m: the time depends on the sizes of m and of the base only.
/// `None` when m is even or below 3 or e is longer than m.
pub(crate) fn pow_mod(base: &Integer, e: &Integer, m: &Integer) -> Option<Integer> {
    pow_over(base, e, m, m.significant_bits())
}

/// base^e mod m for a secret odd m ≥ 3, a secret base and a *public*
/// exponent e ≥ 1 (the pairwise test's e), by [`pow_secret`] over e's
/// bits only: the time depends on the sizes of m and of the base and on
/// e's bit length. `None` when m is even or below 3, or e is 0 or longer
/// than m.
pub(crate) fn pow_mod_public_exp(base: &Integer, e: &Integer, m: &Integer) -> Option<Integer> {
    match e.significant_bits() {
        0 => None,
        bits => pow_over(base, e, m, bits),
    }
}

/// base^e mod m by [`pow_secret`] over `bits` exponent bits (e shorter
/// than both `bits` and m); out of Montgomery form.
fn pow_over(base: &Integer, e: &Integer, m: &Integer, bits: u32) -> Option<Integer> {
    if e.significant_bits() > bits || bits > m.significant_bits() || *e < 0 || *base < 0 {
        return None;
    }
    let mut mont = Mont::new(m)?;
    let len = mont.len();
    let b = rem(base, m);
    let el = padded(e, len);
    let mut y = pow_secret(&mut mont, b.as_limbs(), &el, bits, &AtomicBool::new(false))?;
    mont.out_of_form(&mut y);
    Some(Integer::from_digits(y.limbs(), rug::integer::Order::Lsf))
}

/// `x`'s limbs in a zeroed secret buffer of `len` limbs (`x` < B^len).
pub(crate) fn padded(x: &Integer, len: usize) -> SecretVec<Limb> {
    let xl = x.as_limbs();
    debug_assert!(xl.len() <= len);
    let mut out = buf(len);
    out[..xl.len()].copy_from_slice(xl);
    out
}

/// x mod r into `out` (r's `out.len()` limbs, top limb non-zero: rug's
/// normalised limbs) for `x` of any length, by [`sec_div_r`] on a copy
/// padded to at least r's length; the copy and the scratch are wiped. The
/// time depends on the lengths only.
pub(crate) fn rem_into(x: &[Limb], r: &[Limb], out: &mut [Limb]) {
    let k = r.len();
    // Public preconditions, checked always (the top limb of a divisor of
    // public size is non-zero by construction; a zero one would make GMP
    // shift by 64 and read outside): a non-empty divisor with a non-zero
    // top limb, and room for the remainder.
    assert!(
        k > 0 && r[k - 1] != 0 && out.len() == k,
        "sec::rem_into: an empty divisor, a zero top limb, or out of another length"
    );
    let nn = x.len().max(k);
    let mut num = buf(nn);
    num[..x.len()].copy_from_slice(x);
    // SAFETY: `num` has nn ≥ k limbs, r's top limb is non-zero (a prime's
    // normalised limbs), the scratch has the size GMP asks for.
    unsafe {
        let itch = gmp::mpn_sec_div_r_itch(nn as _, k as _) as usize;
        let mut scratch = buf(itch);
        sec_div_r(
            num.as_mut_ptr(),
            nn as _,
            r.as_ptr(),
            k as _,
            scratch.as_mut_ptr(),
        );
    }
    out.copy_from_slice(&num[..k]);
}

/// Whether [`crt_recombine`] of `parts` gives `m` (tests' helper).
#[cfg(test)]
pub(crate) fn crt_matches(
    m: &Integer,
    ps: &[Integer],
    parts: &[Integer],
    coeffs: &[Integer],
) -> bool {
    crt_mismatch(m, ps, parts, coeffs) == 0
}

/// 0 when [`crt_recombine`] of `parts` gives `m`, otherwise the OR of the
/// XORs of their limbs (non-zero), compared over the whole buffer (the
/// constant-time check's workload and tests' helper).
#[cfg(test)]
pub(crate) fn crt_mismatch(
    m: &Integer,
    ps: &[Integer],
    parts: &[Integer],
    coeffs: &[Integer],
) -> Limb {
    let out = crt_recombine(ps, parts, coeffs);
    if m.as_limbs().len() > out.len() {
        return 1;
    }
    let want = padded(m, out.len());
    out.iter()
        .zip(want.iter())
        .fold(0, |acc, (x, y)| acc | (x ^ y))
}

/// The multi-prime CRT recombination of RFC 8017's RSADP (Garner's form)
/// of `parts` (m_i below r_i) with the coefficients (`coeffs[0]` = r_1⁻¹
/// mod r_0, `coeffs[i − 1]` = (r_0···r_{i−1})⁻¹ mod r_i): the number below
/// the product of the primes that is m_i modulo every r_i when the
/// coefficients are right (the pairwise consistency test's signature of
/// 2), in a secret buffer of as many limbs as the primes have together.
///
/// Every value lives in a buffer whose length comes from the primes' limb
/// counts (public: the key size), padded with zeros: differences by
/// `mpn_sub_n` with the borrow's correction by `mpn_cnd_add_n`, products
/// by `mpn_sec_mul`, reductions by [`sec_div_r`], sums by `mpn_add_n`.
/// `mpz_mul` would use Toom–Cook from about 30 limbs (RSA-4096's primes),
/// which branches on the signs of differences of the primes' halves, and
/// `mpz_sub` compares its operands to find the result's sign.
pub(crate) fn crt_recombine(
    ps: &[Integer],
    parts: &[Integer],
    coeffs: &[Integer],
) -> SecretVec<Limb> {
    assert!(ps.len() >= 2 && parts.len() == ps.len() && coeffs.len() == ps.len() - 1);
    let len: usize = ps.iter().map(|p| p.as_limbs().len()).sum();
    // h = (a − (b mod r))·c mod r for a < r: the difference plus r when it
    // borrowed, then the product reduced.
    let garner = |a: &Integer, b: &[Limb], c: &Integer, r: &Integer| -> SecretVec<Limb> {
        let rl = r.as_limbs();
        let k = rl.len();
        let mut bm = buf(k);
        rem_into(b, rl, &mut bm);
        let mut t = padded(a, k);
        // SAFETY: t, bm and r have k limbs; both GMP calls work in place.
        unsafe {
            let borrow = gmp::mpn_sub_n(t.as_mut_ptr(), t.as_ptr(), bm.as_ptr(), k as _);
            gmp::mpn_cnd_add_n(borrow, t.as_mut_ptr(), t.as_ptr(), rl.as_ptr(), k as _);
        }
        let prod = mul_limbs(&t, &padded(c, k));
        let mut h = buf(k);
        rem_into(&prod, rl, &mut h);
        h
    };
    // out += x·h over out's `len` limbs (the product is below n, so any
    // limbs of its buffer past `len` are zero).
    let add_product = |out: &mut SecretVec<Limb>, x: &[Limb], h: &[Limb]| {
        let prod = mul_limbs(x, h);
        let mut wide = buf(len);
        let take = prod.len().min(len);
        wide[..take].copy_from_slice(&prod[..take]);
        // SAFETY: out and wide have `len` limbs; mpn_add_n works in place.
        unsafe {
            gmp::mpn_add_n(out.as_mut_ptr(), out.as_ptr(), wide.as_ptr(), len as _);
        }
    };
    let k0 = ps[0].as_limbs().len();
    let b1 = padded(&parts[1], ps[1].as_limbs().len());
    let h = garner(&parts[0], &b1, &coeffs[0], &ps[0]);
    let mut out = padded(&parts[1], len);
    add_product(&mut out, ps[1].as_limbs(), &h[..k0]);
    let mut prefix = mul_limbs(ps[0].as_limbs(), ps[1].as_limbs());
    for i in 2..ps.len() {
        let h = garner(&parts[i], &out, &coeffs[i - 1], &ps[i]);
        add_product(&mut out, &prefix, &h);
        prefix = mul_limbs(&prefix, ps[i].as_limbs());
    }
    out
}

/// Largest s = v2(n − 1) the constant-time rounds handle: this one's and
/// `arith::fixed`'s squarings always run `MAX_S − 1` times, and the IFMA
/// rounds (`arith::ifma`, `arith::lanes`) look at the last `MAX_S` + 3
/// positions of their exponentiation. Candidates with a larger s
/// (probability 2^-63 for a random odd number) are rejected unbuilt by the
/// RSA source.
pub(crate) const MAX_S: u32 = 63;

/// One strong-probable-prime round to `base` (2 ≤ base ≤ n − 2) on an odd
/// secret `n` with v2(n − 1) ≤ [`MAX_S`], in time that depends only on the
/// limb count and bit size of n:
/// - s = v2(n − 1) by a count of trailing zeros of one limb, and
///   d = (n − 1) / 2^s by `mpn_rshift` (whose time does not depend on the
///   count);
/// - y = base^d mod n by [`pow_secret`] with the exponent length set to
///   the bit size of n, not of d (`mpz_powm_sec` would take d's length, and
///   so reveal s);
/// - the squarings run `MAX_S − 1` times in Montgomery form
///   ([`super::mont`]), each compared with n − 1 by a full-length XOR, and
///   only those before the s-th count.
///
/// A set `stop` (the caller's cancel) ends the exponentiation at the next
/// 64 exponent bits, and the round fails.
///
/// Returns `None` when v2(n − 1) > `MAX_S` (the caller decides).
pub(crate) fn mr_round(n: &Integer, base: &Integer, stop: &AtomicBool) -> Option<bool> {
    let m = n.as_limbs();
    let len = m.len();
    if len == 0 || m[0] & 1 == 0 || (m[0] == 1 && len > 1) || *n < 5u32 {
        return None;
    }
    let s = (m[0] ^ 1).trailing_zeros();
    if s > MAX_S {
        return None;
    }
    let bits = n.significant_bits();
    let b = base.as_limbs();
    if b.is_empty() || b.len() > len {
        return None;
    }
    let mut d = buf(len);
    d.copy_from_slice(m);
    d[0] ^= 1;
    // SAFETY: `d` has len limbs; mpn_rshift works in place (rp = up), as
    // the GMP manual allows. d = (n − 1) >> s, 1 ≤ s ≤ 63.
    unsafe { gmp::mpn_rshift(d.as_mut_ptr(), d.as_ptr(), len as _, s) };
    let mut mont = Mont::new(n)?;
    // A stopped round is a failed one.
    Some(mr_round_core(&mut mont, b, &d, s, bits, stop) == Some(1))
}

/// The work of [`mr_round`] once n (in `mont`), the base
/// `b`, d and s are known and `bits` (n's bit size, public) is set: 1 when
/// the round passes, 0 when not, `None` once `stop` is set.
/// Nothing in it branches on n, the base, d or s (`arith::ct_check` runs
/// it under valgrind with them marked undefined).
pub(crate) fn mr_round_core(
    mont: &mut Mont<'_>,
    b: &[Limb],
    d: &[Limb],
    s: u32,
    bits: u32,
    stop: &AtomicBool,
) -> Option<u64> {
    // x = b^d·R, compared with R (1) and n − R (−1).
    let mut x = pow_secret(mont, b, d, bits, stop)?;
    let one = mont.one();
    let minus_one = mont.minus_one();
    let mut pass = x.ct_eq(&one) | x.ct_eq(&minus_one);
    for j in 1..MAX_S {
        mont.square(&mut x);
        // Counts only while j < s: mask from the borrow of j − s.
        let live = (j.wrapping_sub(s) >> 31) as Limb & 1;
        pass |= x.ct_eq(&minus_one) & live;
    }
    Some(pass)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The public preconditions GMP relies on are checked in every build:
    /// an empty or zero divisor, a zero top limb, an empty factor (before,
    /// reads before or past the buffers in a release build).
    #[test]
    fn the_preconditions_gmp_relies_on_are_checked() {
        crate::gmp::init();
        let refused =
            |f: &dyn Fn()| std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err();
        assert!(refused(&|| {
            rem(&Integer::from(5u32), &Integer::new());
        }));
        assert!(refused(&|| rem_into(&[5], &[], &mut [])));
        assert!(refused(&|| rem_into(&[5, 6], &[3, 0], &mut [0, 0])));
        assert!(refused(&|| rem_into(&[5, 6], &[3, 1], &mut [0])));
        assert!(refused(&|| {
            mul_limbs(&[], &[1]);
        }));
        assert!(refused(&|| {
            mul_limbs(&[1], &[]);
        }));
        // The checks pass what is valid.
        let mut out = [0, 0];
        rem_into(&[5, 6, 7], &[3, 1], &mut out);
        assert_eq!(mul_limbs(&[3], &[4])[..], [12, 0]);
    }

    /// The message m of a key with primes `ps`, its CRT parts and the
    /// coefficients of [`crt_matches`] (by rug's inverses: a test helper).
    pub(crate) fn crt_inputs(ps: &[Integer], seed: u32) -> (Integer, Vec<Integer>, Vec<Integer>) {
        let n: Integer = ps.iter().product();
        let m = (Integer::from(&n >> 3u32) * 5u32 + seed) % &n;
        let parts = ps.iter().map(|p| Integer::from(&m % p)).collect();
        let mut coeffs = vec![ps[1].clone().invert(&ps[0]).expect("coprime")];
        let mut prefix = Integer::from(&ps[0] * &ps[1]);
        for p in &ps[2..] {
            coeffs.push(prefix.clone().invert(p).expect("coprime"));
            prefix *= p;
        }
        (m, parts, coeffs)
    }

    /// The limb-level CRT recombination recovers m for two to four primes
    /// (equal and unequal sizes, a 17-limb prime beside a 16-limb one,
    /// RSA-4096's 32-limb primes), and reports a mismatch for another
    /// message, a corrupted part and a corrupted coefficient.
    #[test]
    fn crt_recombination_matches_and_catches_faults() {
        let mut x = Integer::from(0x243f_6a88_85a3_08d3u64);
        let sizes: [&[u32]; 5] = [
            &[512, 512],
            &[1025, 1023],
            &[2048, 2048],
            &[700, 690, 680],
            &[512, 520, 530, 540],
        ];
        for (k, bits) in sizes.into_iter().enumerate() {
            let ps: Vec<Integer> = bits
                .iter()
                .map(|&b| {
                    x = (Integer::from(&x * &x) + 0x6a09_e667u32).keep_bits(b + 64);
                    let mut p = Integer::from(&x >> 64u32).keep_bits(b);
                    p.set_bit(b - 1, true);
                    p.next_prime()
                })
                .collect();
            let (m, parts, coeffs) = crt_inputs(&ps, k as u32);
            assert!(crt_matches(&m, &ps, &parts, &coeffs), "{bits:?}");
            let n: Integer = ps.iter().product();
            let other = Integer::from(&m + 1u32) % &n;
            assert!(
                !crt_matches(&other, &ps, &parts, &coeffs),
                "{bits:?} other m"
            );
            for i in 0..ps.len() {
                let mut bad = parts.clone();
                bad[i] = Integer::from(&bad[i] + 1u32) % &ps[i];
                assert!(!crt_matches(&m, &ps, &bad, &coeffs), "{bits:?} part {i}");
            }
            for i in 0..coeffs.len() {
                let mut bad = coeffs.clone();
                let r = if i == 0 { &ps[0] } else { &ps[i + 1] };
                bad[i] = Integer::from(&bad[i] + 1u32) % r;
                assert!(
                    !crt_matches(&m, &ps, &parts, &bad),
                    "{bits:?} coefficient {i}"
                );
            }
        }
    }

    /// `rem` (on our table-free `sec_div_r`) agrees with GMP's remainder
    /// for one-limb and many-limb moduli, full top limbs (no shift), top
    /// limbs of all ones (no +1 in the reciprocal) and short ones.
    #[test]
    fn rem_agrees_with_gmp() {
        let mut x = Integer::from(0x9e37_79b9_7f4a_7c15u64);
        for bits in [64u32, 65, 130, 700, 1024, 2048, 4100] {
            x = (Integer::from(&x * &x) + 0x6a09_e667u32).keep_bits(bits * 2 + 40);
            for mbits in [bits / 2 + 1, bits, bits + 70, 64, 128, 1024] {
                let m = Integer::from(&x >> 17u32).keep_bits(mbits) | 1u32;
                assert_eq!(rem(&x, &m), Integer::from(&x % &m), "{bits}/{mbits}");
                // The same size with a top limb of all ones.
                let ones = m.clone() | (Integer::from(u64::MAX) << (64 * (mbits.div_ceil(64) - 1)));
                assert_eq!(
                    rem(&x, &ones),
                    Integer::from(&x % &ones),
                    "ones {bits}/{mbits}"
                );
            }
        }
        let m = Integer::from(3u32);
        assert_eq!(rem(&x, &m), Integer::from(&x % &m));
        assert_eq!(rem(&m, &Integer::from(u64::MAX)), m);
    }

    /// The textbook strong-probable-prime round to base `a`, by mpz_powm
    /// (also the reference of `prime::mr`'s tests).
    pub(crate) fn reference(n: &Integer, a: &Integer) -> bool {
        let nm1 = Integer::from(n - 1u32);
        let s = nm1.find_one(0).unwrap();
        let mut x = a.clone().pow_mod(&Integer::from(&nm1 >> s), n).unwrap();
        if x == 1u32 || x == nm1 {
            return true;
        }
        for _ in 1..s {
            x = x.square() % n;
            if x == nm1 {
                return true;
            }
        }
        false
    }

    /// A `bits`-bit prime p with v2(p − 1) = s, from the walk `x`.
    pub(crate) fn prime_with_s(x: &mut Integer, bits: u32, s: u32) -> Integer {
        *x = (Integer::from(&*x * &*x) + 0x9e37_79b9u32).keep_bits(bits + 64);
        let mut k = Integer::from(&*x >> 64u32).keep_bits(bits - s);
        k.set_bit(bits - s - 1, true);
        k |= 1u32;
        let mut n = (Integer::from(&k << s)) + 1u32;
        // GMP's test with reps ≤ 24 is Baillie–PSW: enough to pick test
        // primes (the round itself is what is under test).
        while n.is_probably_prime(1) == rug::integer::IsPrime::No {
            k += 2u32;
            n = (Integer::from(&k << s)) + 1u32;
        }
        n
    }

    /// Agrees with the textbook round on primes, strong pseudoprimes and
    /// composites, for s from 1 to 63, at one limb and at many.
    #[test]
    fn mr_round_agrees_with_reference() {
        let mut checked = 0;
        for small in [101u32, 561, 2047, 3277, 4033, 65537, 2147483647] {
            let n = Integer::from(small);
            for a in [2u32, 3, 10, 99] {
                let a = Integer::from(a);
                assert_eq!(
                    mr_round(&n, &a, &AtomicBool::new(false)),
                    Some(reference(&n, &a)),
                    "{small} {a}"
                );
                checked += 1;
            }
        }
        // Primes p = k·2^s + 1 for s = 1..63 at 64..1024 bits, and the
        // extremes and the middle at 2048 (32 limbs: the basecase limit).
        let mut x = Integer::from(0x1234_5678_9abc_def1u64);
        for bits in [64u32, 200, 1024, 2048] {
            let all = [1u32, 2, 5, 17, 32, 62, 63];
            let some = [1u32, 32, 63];
            for &s in if bits < 2048 { &all[..] } else { &some[..] } {
                if s + 8 > bits {
                    continue;
                }
                let n = prime_with_s(&mut x, bits, s);
                assert_eq!(Integer::from(&n - 1u32).find_one(0), Some(s));
                for a in [2u32, 3, 7] {
                    let a = Integer::from(a);
                    assert_eq!(
                        mr_round(&n, &a, &AtomicBool::new(false)),
                        Some(true),
                        "prime, s={s}"
                    );
                    // A composite with the same s: n·(2^(s+1)·j + 1).
                    let c: Integer = &n * ((Integer::from(1u32) << (s + 1)) * 3u32 + 1u32);
                    if Integer::from(&c - 1u32).find_one(0).unwrap() <= MAX_S {
                        assert_eq!(
                            mr_round(&c, &a, &AtomicBool::new(false)),
                            Some(reference(&c, &a)),
                            "composite, s={s}"
                        );
                    }
                    checked += 2;
                }
            }
        }
        assert!(checked > 100);
        // s = 64 is refused, not misjudged.
        let big = (Integer::from(5u32) << 64u32) + 1u32;
        assert_eq!(
            mr_round(&big, &Integer::from(2u32), &AtomicBool::new(false)),
            None
        );
    }

    /// The secret exponentiation agrees with `mpz_powm` for exponent
    /// lengths that are and are not multiples of the window and of 64,
    /// bases short, full-length and above n; a set stop flag ends it.
    #[test]
    fn secret_power_agrees_and_stops() {
        let mut x = Integer::from(0x0123_4567_89ab_cdefu64);
        for bits in [64u32, 130, 700, 1024, 2048, 4100] {
            x = (Integer::from(&x * &x) + 0x9e37_79b9u32).keep_bits(bits * 2 + 64);
            let m = (Integer::from(&x >> 64u32).keep_bits(bits) | 1u32)
                | (Integer::from(1u32) << (bits - 1));
            let len = m.as_limbs().len();
            for ebits in [bits, bits - 3, 5] {
                let d = Integer::from(&x >> 7u32).keep_bits(ebits);
                let mut dl = d.as_limbs().to_vec();
                dl.resize(len, 0);
                let high = Integer::from(&x >> 3u32).keep_bits(64 * len as u32);
                for base in [Integer::from(3u32), Integer::from(&x >> 100u32) % &m, high] {
                    let want = Integer::from(base.pow_mod_ref(&d, &m).unwrap());
                    let mut mont = Mont::new(&m).unwrap();
                    let never = AtomicBool::new(false);
                    let r = pow_secret(&mut mont, base.as_limbs(), &dl, ebits, &never)
                        .expect("not stopped");
                    let mut y = r.clone();
                    mont.out_of_form(&mut y);
                    assert_eq!(
                        Integer::from_digits(y.limbs(), rug::integer::Order::Lsf),
                        want,
                        "{bits}/{ebits}"
                    );
                    let stop = AtomicBool::new(true);
                    assert!(pow_secret(&mut mont, base.as_limbs(), &dl, ebits, &stop).is_none());
                }
            }
        }
    }

    /// `div_exact` agrees with GMP's exact division for one-limb divisors
    /// that are odd, powers of two, both, 1 and all ones, and for a
    /// two-limb divisor.
    #[test]
    fn div_exact_agrees_with_gmp() {
        let mut x = Integer::from(0x9e37_79b9_7f4a_7c15u64);
        for g in [
            1u64,
            2,
            3,
            6,
            8,
            12,
            1 << 40,
            3 << 62,
            u64::MAX,
            0x1234_5678_9abc_def0,
        ] {
            for bits in [1u32, 64, 65, 1000, 2048] {
                x = (Integer::from(&x * &x) + 0x6a09_e667u32).keep_bits(bits + 64);
                let y = Integer::from(&x >> 64u32).keep_bits(bits);
                let prod = Integer::from(&y * g);
                assert_eq!(div_exact(&prod, &Integer::from(g)), y, "{g:#x}, {bits}");
            }
        }
        let g = (Integer::from(1u32) << 70u32) + 6u32;
        let prod = Integer::from(&x * &g);
        assert_eq!(div_exact(&prod, &g), x);
        assert_eq!(div_exact(&Integer::new(), &Integer::from(6u32)), 0);
    }

    /// `mul` agrees with GMP's product at sizes on both sides of the Toom
    /// thresholds, with unequal lengths and zero.
    #[test]
    fn mul_agrees_with_gmp() {
        let mut x = Integer::from(0x2545_f491_4f6c_dd1du64);
        for (abits, bbits) in [
            (64u32, 64u32),
            (1024, 1024),
            (2048, 2048),
            (4096, 4096),
            (8192, 1000),
            (100, 5000),
        ] {
            x = (Integer::from(&x * &x) + 0x6a09_e667u32).keep_bits(abits + bbits + 64);
            let a = Integer::from(&x >> 3u32).keep_bits(abits);
            let b = Integer::from(&x >> 7u32).keep_bits(bbits);
            assert_eq!(mul(&a, &b), Integer::from(&a * &b), "{abits}×{bbits}");
        }
        assert_eq!(mul(&Integer::new(), &x), 0);
    }

    /// `pow_mod` agrees with `mpz_powm` for bases below and above m and
    /// exponents up to m's length, and refuses what it does not serve.
    #[test]
    fn pow_mod_agrees_with_gmp() {
        let mut x = Integer::from(0x7f4a_7c15_9e37_79b9u64);
        for bits in [70u32, 512, 1024, 1500, 2048] {
            x = (Integer::from(&x * &x) + 0x9e37_79b9u32).keep_bits(bits * 3 + 64);
            let m = Integer::from(&x >> 64u32).keep_bits(bits)
                | 1u32
                | (Integer::from(1u32) << (bits - 1));
            let e = Integer::from(&x >> 11u32).keep_bits(bits);
            for base in [Integer::from(2u32), Integer::from(&x >> 5u32)] {
                let want = Integer::from(base.pow_mod_ref(&e, &m).unwrap());
                assert_eq!(pow_mod(&base, &e, &m), Some(want), "{bits}");
            }
        }
        let m = Integer::from(1_000_003u32);
        assert_eq!(
            pow_mod(&Integer::from(5u32), &Integer::from(1u32 << 21), &m),
            None
        );
        assert_eq!(
            pow_mod(
                &Integer::from(5u32),
                &Integer::from(3u32),
                &Integer::from(10u32)
            ),
            None
        );
        assert_eq!(
            pow_mod(&Integer::from(5u32), &Integer::ZERO, &m),
            Some(Integer::from(1u32))
        );
    }

    /// A stopped round fails, at any size; a large round judges right.
    #[test]
    fn a_large_round_stops() {
        let n = (Integer::from(1u32) << 6000u32) + 3u32 * 4u32 + 1u32;
        let stop = AtomicBool::new(true);
        assert_eq!(mr_round(&n, &Integer::from(2u32), &stop), Some(false));
        // Not stopped: the Mersenne prime
        // 2^4423 − 1 passes, 2^4423 − 3 (divisible by 5) fails.
        let never = AtomicBool::new(false);
        let p = (Integer::from(1u32) << 4423u32) - 1u32;
        assert_eq!(mr_round(&p, &Integer::from(3u32), &never), Some(true));
        let c = (Integer::from(1u32) << 4423u32) - 3u32;
        assert_eq!(mr_round(&c, &Integer::from(3u32), &never), Some(false));
    }
}
