//! The small arithmetic of key assembly on fixed-length limbs, in
//! constant time: the remainder of a secret by a one-word divisor (the
//! public e), e⁻¹ modulo a secret (the CRT exponents and d), and the
//! FIPS 186-5 size checks |p − q| > 2^k and d > 2^k, plus the p > q order.
//!
//! GMP's versions of these branch on the values: `mpz_fdiv_ui` uses the
//! CPU's division instruction (whose latency can depend on the operands)
//! and `mpn_mod_1` skips a step when the top limb is below the divisor;
//! `mpz_mul_ui` and `mpz_add_ui` stop their carry loops early;
//! `mpz_sub`, `mpz_cmp` and `mpz_abs` compare from the top limb and stop
//! at the first difference. Here every loop runs over the whole, public
//! length, selections are masks, and the only values that leave are the
//! verdicts and the results. `arith::ct_check` runs these functions under
//! valgrind with their secret inputs marked undefined (see
//! `tests::assembly_workload`).

use super::ct::{lt_mask, mask, opaque};
use crate::arith::reciprocal_word;
use crate::gmp::sec::div_exact_limbs;
use crate::secure::SecretVec;

/// The remainder of the two-word number ⟨u1, u0⟩ (u1 < d) by a normalised
/// d (top bit set), with v = [`reciprocal_word`]`(d)`: Möller and
/// Granlund's division by a reciprocal ("Improved division by invariant
/// integers", 2011, Algorithm 4), its two corrections done with masks.
#[inline]
fn rem_2by1(u1: u64, u0: u64, d: u64, v: u64) -> u64 {
    let q = (v as u128 * u1 as u128).wrapping_add(((u1 as u128) << 64) | u0 as u128);
    let q1 = ((q >> 64) as u64).wrapping_add(1);
    let q0 = q as u64;
    let mut r = u0.wrapping_sub(q1.wrapping_mul(d));
    // r > q0: add d back (the estimate was one too large).
    r = r.wrapping_add(d & lt_mask(q0, r));
    // r ≥ d: subtract d (rare).
    r.wrapping_sub(d & !lt_mask(r, d))
}

/// A one-word divisor d ≥ 1 prepared for [`WordDivisor::rem`]: its
/// normalising shift, the shifted divisor and that one's reciprocal, so
/// that a divisor used for many remainders (the public e, once per
/// candidate) is prepared once.
pub(super) struct WordDivisor {
    s: u32,
    dn: u64,
    v: u64,
}

impl WordDivisor {
    pub(super) fn new(d: u64) -> WordDivisor {
        assert!(d != 0, "division by zero");
        let s = d.leading_zeros();
        let dn = d << s;
        WordDivisor {
            s,
            dn,
            v: reciprocal_word(dn),
        }
    }

    /// x mod d, limb by limb from the top: the instructions and memory
    /// accesses depend on x's limb count and on d only. x is shifted by d's
    /// leading zeros on the fly so that the divisor is normalised; the
    /// remainder is shifted back by the same count.
    pub(super) fn rem(&self, x: &[u64]) -> u64 {
        let s = self.s;
        // Limb i of x·2^s (i = 0 ..= len); (a >> 1) >> (63 − s) is
        // a >> (64 − s) and 0 when s = 0.
        let limb = |i: usize| -> u64 {
            let hi = if i < x.len() { x[i] << s } else { 0 };
            let lo = if i > 0 {
                (x[i - 1] >> 1) >> (63 - s)
            } else {
                0
            };
            hi | lo
        };
        let mut r = 0u64;
        for i in (0..=x.len()).rev() {
            r = rem_2by1(r, limb(i), self.dn, self.v);
        }
        r >> s
    }
}

/// x mod d for d ≥ 1 ([`WordDivisor::rem`] for a divisor used once).
pub(super) fn rem_word(x: &[u64], d: u64) -> u64 {
    WordDivisor::new(d).rem(x)
}

/// (−a⁻¹) mod m for gcd(a, m) = 1, m odd ≥ 3, in constant time
/// ([`super::ct::gcd_inverse_u64`]).
pub(super) fn neg_inverse_mod_u64(a: u64, m: u64) -> u64 {
    let (_, inv) = super::ct::gcd_inverse_u64(a, m);
    // m − inv, or 0 when inv = 0, without a branch.
    let nz = (inv | inv.wrapping_neg()) >> 63;
    (m - inv) & nz.wrapping_neg()
}

/// e⁻¹ mod m for a secret m ≥ 1 (its limbs) with gcd(e, m) = 1 and a
/// public odd e ≥ 3, as m.len() limbs, without inverting modulo m: with
/// a = m mod e and x = (−a⁻¹) mod e, 1 + x·m ≡ 1 − a⁻¹·a ≡ 0 (mod e), so
/// (1 + x·m)/e is an exact division by the public e; it lies below m, and
/// times e it is ≡ 1 (mod m).
pub(super) fn inverse_of_e(m: &[u64], e: u64) -> SecretVec<u64> {
    debug_assert!(e & 1 == 1 && e >= 3 && !m.is_empty());
    let len = m.len();
    let x = neg_inverse_mod_u64(rem_word(m, e), e);
    // t = m·x + 1 over len + 1 limbs, carries to the end.
    let mut t = SecretVec::zeroed(len + 1);
    let mut carry = 1u128;
    for (ti, &mi) in t.iter_mut().zip(m) {
        let v = mi as u128 * x as u128 + carry;
        *ti = v as u64;
        carry = v >> 64;
    }
    t[len] = carry as u64;
    let mut out = SecretVec::zeroed(len + 1);
    div_exact_limbs(&t, e, &mut out);
    // (1 + x·m)/e < m: the top limb is zero.
    let mut d = SecretVec::zeroed(len);
    d.copy_from_slice(&out[..len]);
    d
}

/// 1 if x > 2^k, else 0: the borrow of x − (2^k + 1) over x's limbs.
pub(super) fn exceeds_pow2(x: &[u64], k: u32) -> u64 {
    let (w, b) = ((k / 64) as usize, k % 64);
    let mut borrow = 0u64;
    let mut any = false;
    for (i, &xi) in x.iter().enumerate() {
        // Limb i of 2^k + 1 (k and the positions are public).
        let c = (if i == w { 1u64 << b } else { 0 }) + u64::from(i == 0);
        let (v, b1) = xi.overflowing_sub(c);
        let (_, b2) = v.overflowing_sub(borrow);
        borrow = opaque(u64::from(b1) | u64::from(b2));
        any |= i == w;
    }
    // 2^k beyond x's limbs: x < 2^(64·len) ≤ 2^k.
    if !any {
        return 0;
    }
    1 ^ borrow
}

/// `x` and `y` as limbs of the same, larger length (zero-padded).
fn padded_pair(x: &[u64], y: &[u64]) -> (SecretVec<u64>, SecretVec<u64>) {
    let len = x.len().max(y.len());
    let mut a = SecretVec::zeroed(len);
    let mut b = SecretVec::zeroed(len);
    a[..x.len()].copy_from_slice(x);
    b[..y.len()].copy_from_slice(y);
    (a, b)
}

/// x − y over the common length and the final borrow (1 when x < y).
fn sub_borrow(x: &[u64], y: &[u64], out: &mut [u64]) -> u64 {
    let mut borrow = 0u64;
    for ((o, &a), &b) in out.iter_mut().zip(x).zip(y) {
        let (v, b1) = a.overflowing_sub(b);
        let (v, b2) = v.overflowing_sub(borrow);
        *o = v;
        borrow = opaque(u64::from(b1) | u64::from(b2));
    }
    borrow
}

/// 1 if x < y, else 0 (x, y ≥ 0 as limbs of any lengths).
pub(super) fn less_than(x: &[u64], y: &[u64]) -> u64 {
    let (a, b) = padded_pair(x, y);
    let mut scratch = SecretVec::zeroed(a.len());
    sub_borrow(&a, &b, &mut scratch)
}

/// 1 if |x − y| > 2^k, else 0 (FIPS 186-5 A.1.3's |p − q| > 2^(nlen/2 − 100)).
pub(super) fn differ_by_more_than_pow2(x: &[u64], y: &[u64], k: u32) -> u64 {
    let (a, b) = padded_pair(x, y);
    let mut diff = SecretVec::zeroed(a.len());
    let neg = sub_borrow(&a, &b, &mut diff);
    // |x − y|: the two's complement negation under the borrow's mask.
    let m = mask(neg);
    let mut carry = neg;
    for l in diff.iter_mut() {
        let (v, c) = (*l ^ m).overflowing_add(carry);
        *l = v;
        carry = opaque(u64::from(c));
    }
    exceeds_pow2(&diff, k)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::ct::tests::values;
    use super::*;
    use rug::integer::Order;
    use rug::Integer;

    fn limbs(v: &Integer) -> Vec<u64> {
        v.as_limbs().to_vec()
    }

    #[test]
    fn remainders_agree_with_gmp() {
        let mut next = values(7);
        let divisors = [
            1u64,
            2,
            3,
            65537,
            (1 << 32) + 15,
            u64::MAX / 4,
            (1 << 63) - 25,
            1 << 63,
            u64::MAX,
            u64::MAX - 58,
        ];
        for bits in [0u32, 1, 63, 64, 65, 128, 1000, 1024, 2048] {
            for _ in 0..20 {
                let x = next(bits);
                for d in divisors {
                    let want = Integer::from(&x % d);
                    assert_eq!(rem_word(&limbs(&x), d), want, "{x} mod {d}");
                }
            }
        }
        // The largest values: every limb all ones.
        for len in [1u32, 2, 16] {
            let x = (Integer::from(1u32) << (64 * len)) - 1u32;
            for d in divisors {
                assert_eq!(rem_word(&limbs(&x), d), Integer::from(&x % d));
            }
        }
    }

    #[test]
    fn inverse_of_e_agrees_with_gmp() {
        let mut next = values(11);
        let mut checked = 0;
        for bits in [64u32, 65, 512, 1024, 2047, 2048] {
            for e in [3u64, 65537, (1 << 61) - 1, u64::MAX] {
                for _ in 0..10 {
                    let m = next(bits) | 1u32;
                    let Ok(want) = Integer::from(e).invert(&m) else {
                        continue;
                    };
                    let got = inverse_of_e(&limbs(&m), e);
                    assert_eq!(got.len(), m.as_limbs().len());
                    assert_eq!(
                        Integer::from_digits(&got, Order::Lsf),
                        want,
                        "{e}⁻¹ mod {m}"
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 150, "{checked}");
        // An even m (p − 1, λ).
        let m = Integer::from(2u32) * 3u32 * 5u32 * 7u32 * 1_000_003u32;
        let got = inverse_of_e(&limbs(&m), 65537);
        assert_eq!(
            Integer::from_digits(&got, Order::Lsf),
            Integer::from(65537u32).invert(&m).unwrap()
        );
    }

    #[test]
    fn size_checks_at_the_edges() {
        for k in [0u32, 1, 63, 64, 65, 127, 412, 924, 1000] {
            let p = Integer::from(1u32) << k;
            for (x, want) in [
                (Integer::from(&p - 1u32), 0),
                (p.clone(), 0),
                (Integer::from(&p + 1u32), 1),
                (Integer::from(&p * 2u32), 1),
                (Integer::from(&p * 3u32) - 1u32, 1),
            ] {
                assert_eq!(exceeds_pow2(&limbs(&x), k), want, "{x} > 2^{k}");
                // The same with zero limbs on top (a longer buffer).
                let mut long = limbs(&x);
                long.extend([0, 0]);
                assert_eq!(exceeds_pow2(&long, k), want, "{x} > 2^{k}, padded");
            }
            // 2^k beyond the buffer.
            let short = limbs(&Integer::from(&p - 1u32));
            assert_eq!(exceeds_pow2(&short, k + 64), 0);
        }
        let mut next = values(13);
        for _ in 0..200 {
            let (a, b) = (next(1024), next(1024));
            let k = 924;
            let want = u64::from(Integer::from(&a - &b).abs() > (Integer::from(1u32) << k));
            assert_eq!(differ_by_more_than_pow2(&limbs(&a), &limbs(&b), k), want);
            assert_eq!(differ_by_more_than_pow2(&limbs(&b), &limbs(&a), k), want);
            assert_eq!(less_than(&limbs(&a), &limbs(&b)), u64::from(a < b));
        }
        // |p − q| exactly at 2^k, just above, and equal or close primes of
        // different limb counts.
        let q = next(1024) | (Integer::from(1u32) << 1023u32);
        let k = 412;
        for (delta, want) in [(0i32, 0u64), (1, 0), (2, 1)] {
            let mut p: Integer = &q + (Integer::from(1u32) << k);
            p += delta - 1;
            assert_eq!(differ_by_more_than_pow2(&limbs(&p), &limbs(&q), k), want);
            assert_eq!(differ_by_more_than_pow2(&limbs(&q), &limbs(&p), k), want);
        }
        let small = Integer::from(5u32);
        assert_eq!(differ_by_more_than_pow2(&limbs(&q), &limbs(&small), k), 1);
        assert_eq!(less_than(&limbs(&small), &limbs(&q)), 1);
        assert_eq!(less_than(&limbs(&q), &limbs(&small)), 0);
        assert_eq!(less_than(&limbs(&q), &limbs(&q)), 0);
    }

    /// Key assembly's checks and inverses with their secret inputs
    /// undefined, through the functions `rsa::generate` calls: the
    /// candidate's gcd(r − 1, e) condition, e⁻¹ modulo p − 1 and modulo λ,
    /// d > 2^(nlen/2), |p − q| > 2^(nlen/2 − 100) and the p > q order. Only
    /// verdicts and results are marked defined again. (Integers keep the
    /// byte holding their top bit defined: sizes are public.) Meaningful
    /// only under valgrind: run by `arith::ct_check`, which found GMP's
    /// `mpz_fdiv_ui`/`mpn_mod_1`, `mpz_mul_ui`, `mpz_add_ui`,
    /// `mpz_divexact`, `mpz_sub` and `mpz_cmp` branching on these values
    /// in the versions these replace.
    #[test]
    #[ignore = "run by arith::ct_check under valgrind"]
    pub(crate) fn assembly_workload() {
        use crate::arith::ct_check::{declassify, defined_slice, public_integer, secret_integer};
        use crate::rsa::{coprime_minus_one, d_large_enough, minus_one_odd, primes_far_apart};
        let mut next = values(0xa55e);
        for bits in [512u32, 1024, 2048] {
            let top = Integer::from(1u32) << (bits / 2 - 1);
            let p = next(bits / 2) | &top | 1u32;
            let q = next(bits / 2) | &top | 1u32;
            secret_integer(&p);
            secret_integer(&q);
            let side = declassify(u64::from(coprime_minus_one(
                rem_word(p.as_limbs(), 65537),
                65537,
            )));
            let pm1 = minus_one_odd(&p);
            secret_integer(&pm1);
            let mut dp = inverse_of_e(pm1.as_limbs(), 65537);
            defined_slice(&mut dp[..]);
            let apart = declassify(u64::from(primes_far_apart(&p, &q, bits)));
            let lt = declassify(less_than(p.as_limbs(), q.as_limbs()));
            // λ-sized and d-sized values.
            let lambda = next(bits - 1) | (Integer::from(1u32) << (bits - 2));
            secret_integer(&lambda);
            let mut d = inverse_of_e(lambda.as_limbs(), 65537);
            defined_slice(&mut d[..]);
            let d = Integer::from_digits(&d, Order::Lsf);
            secret_integer(&d);
            let big = declassify(u64::from(d_large_enough(&d, bits)));
            for x in [&p, &q, &pm1, &lambda, &d] {
                public_integer(x);
            }
            let want_dp = Integer::from(65537u32).invert(&pm1).ok();
            assert_eq!(side == 1, want_dp.is_some());
            if let Some(w) = want_dp {
                assert_eq!(Integer::from_digits(&dp, Order::Lsf), w);
            }
            let want_d = Integer::from(65537u32).invert(&lambda).ok();
            if let Some(w) = want_d {
                assert_eq!(d, w);
            }
            assert_eq!(big, u64::from(d > (Integer::from(1u32) << (bits / 2))));
            let far = Integer::from(&p - &q).abs() > (Integer::from(1u32) << (bits / 2 - 100));
            assert_eq!(apart, u64::from(far));
            assert_eq!(lt, u64::from(p < q));
        }
    }
}
