//! Remainders of one *public* number x modulo many odd word-sized
//! divisors, eight per vector register on AVX-512 IFMA: the DH sieve's
//! set-up, which needs the start of its progression modulo every sieving
//! prime (millions of them, each used once per window).
//!
//! Per divisor d (odd, below 2^52), in the eight lanes of a register:
//! - −d⁻¹ mod 2^52 by Newton's iteration (five steps from d itself, which
//!   is right to three bits);
//! - 2^52 mod d from a double-precision quotient ⌊2^52/d⌋ (off by at
//!   most one, corrected by one comparison each way);
//! - C = 2^(52(K+1)) mod d, the Montgomery form of 2^(52K), by
//!   left-to-right squarings and doublings over the public exponent 52K;
//! - the Montgomery reduction of x streamed over its K digits of 52 bits,
//!   lowest first: s ← (s + x_j + m·d)/2^52 with m = −(s + x_j)/d mod
//!   2^52, which leaves s ≡ x·2^(−52K) with s < d + 2, then one Montgomery
//!   product with C: x mod d.
//!
//! About five vector instructions per digit for eight divisors, against
//! GMP's one-limb remainder (`mpn_mod_1s_4p`, about two cycles a limb per
//! divisor after a set-up of its own per divisor): at DH-2048 the sieve's
//! set-up took 24.6 instead of 39.9 ns per sieving prime (Intel Xeon,
//! 2026-12-06). Variable time is fine: everything here is public.

#![allow(clippy::incompatible_msrv)]

#[cfg(all(target_arch = "x86_64", pf_avx512))]
use std::arch::x86_64::*;

use rug::Integer;

/// The largest divisor taken.
pub(crate) const MAX_DIVISOR: u64 = (1 << 52) - 1;

/// Whether this CPU computes remainders here (AVX-512 F, DQ and IFMA).
pub(crate) fn available() -> bool {
    #[cfg(all(target_arch = "x86_64", pf_avx512))]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512dq")
            && std::arch::is_x86_feature_detected!("avx512ifma")
    }
    #[cfg(not(all(target_arch = "x86_64", pf_avx512)))]
    {
        false
    }
}

/// A non-negative number as 52-bit digits, lowest first, ready for
/// [`rem_many`].
#[derive(Clone, Debug)]
pub(crate) struct Dividend {
    digits: Vec<u64>,
}

impl Dividend {
    /// x (≥ 0) in digits of 52 bits; at least one digit.
    pub(crate) fn new(x: &Integer) -> Dividend {
        assert!(*x >= 0, "a dividend is not negative");
        let k = (x.significant_bits() as usize).div_ceil(52).max(1);
        let mut digits = vec![0u64; k];
        super::ifma::digits_into(x.as_limbs(), k, &mut digits);
        Dividend { digits }
    }
}

/// x mod d for each d of `ds` (odd, 3 ≤ d ≤ [`MAX_DIVISOR`]) into `out`
/// (as long as `ds`); false, with `out` untouched, where this CPU lacks
/// the instructions ([`available`]).
pub(crate) fn rem_many(x: &Dividend, ds: &[u64], out: &mut [u64]) -> bool {
    assert_eq!(ds.len(), out.len(), "one remainder per divisor");
    assert!(
        ds.iter()
            .all(|&d| d & 1 == 1 && (3..=MAX_DIVISOR).contains(&d)),
        "divisors are odd, from 3 to 2^52 - 1"
    );
    if !available() {
        return false;
    }
    #[cfg(all(target_arch = "x86_64", pf_avx512))]
    {
        // Groups of four registers (32 divisors), the rest padded with 3.
        for (ds, out) in ds.chunks(8 * GROUP).zip(out.chunks_mut(8 * GROUP)) {
            let mut d = [3u64; 8 * GROUP];
            d[..ds.len()].copy_from_slice(ds);
            // SAFETY: the features were checked by available().
            let r = unsafe { rem_lanes::<GROUP>(&x.digits, &d) };
            out.copy_from_slice(&r.as_flattened()[..ds.len()]);
        }
        true
    }
    #[cfg(not(all(target_arch = "x86_64", pf_avx512)))]
    {
        let _ = &x.digits;
        false
    }
}

#[cfg(all(target_arch = "x86_64", pf_avx512))]
const MASK: i64 = (1 << 52) - 1;

/// Registers of divisors whose chains run side by side. A register's
/// digit step waits on three multiply-adds in a row, so one register
/// alone runs at its chain's speed: the sieve's set-up per prime at
/// DH-2048 took 34.1 ns with one, 27.0 with four, 25.0 with six and 24.3
/// with eight.
#[cfg(all(target_arch = "x86_64", pf_avx512))]
const GROUP: usize = 8;

/// s − d where s ≥ d, else s (lane by lane).
#[cfg(all(target_arch = "x86_64", pf_avx512))]
#[target_feature(enable = "avx512f")]
#[inline]
fn reduce_once(s: __m512i, d: __m512i) -> __m512i {
    let ge = _mm512_cmpge_epu64_mask(s, d);
    _mm512_mask_sub_epi64(s, ge, s, d)
}

/// a·b·2^(−52) mod d for a, b < d < 2^52, fully reduced: (a·b + m·d)/2^52
/// < 2d, then one subtraction.
#[cfg(all(target_arch = "x86_64", pf_avx512))]
#[target_feature(enable = "avx512f,avx512ifma")]
#[inline]
fn mont(a: __m512i, b: __m512i, d: __m512i, dinv: __m512i) -> __m512i {
    let zero = _mm512_setzero_si512();
    let lo = _mm512_madd52lo_epu64(zero, a, b);
    let hi = _mm512_madd52hi_epu64(zero, a, b);
    let m = _mm512_madd52lo_epu64(zero, lo, dinv);
    // lo + (m·d mod 2^52) is 0 or 2^52.
    let u = _mm512_madd52lo_epu64(lo, m, d);
    let r = _mm512_madd52hi_epu64(_mm512_add_epi64(hi, _mm512_srli_epi64::<52>(u)), m, d);
    reduce_once(r, d)
}

/// x mod d in each lane of G registers of divisors (odd, below 2^52):
/// the G registers' chains are independent, so their steps overlap (one
/// chain's digit step waits on four multiply-adds in a row).
#[cfg(all(target_arch = "x86_64", pf_avx512))]
#[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
unsafe fn rem_lanes<const G: usize>(x: &[u64], ds: &[u64]) -> [[u64; 8]; G] {
    debug_assert_eq!(ds.len(), 8 * G);
    let zero = _mm512_setzero_si512();
    let mask = _mm512_set1_epi64(MASK);
    // SAFETY: 8·G words, read unaligned.
    let d: [__m512i; G] =
        std::array::from_fn(|g| unsafe { _mm512_loadu_si512(ds.as_ptr().add(8 * g).cast()) });
    // −d⁻¹ mod 2^52: d·d ≡ 1 (mod 8), and each step doubles the bits.
    let two = _mm512_set1_epi64(2);
    let mut inv = d;
    for _ in 0..5 {
        for g in 0..G {
            let t = _mm512_madd52lo_epu64(zero, d[g], inv[g]);
            let t = _mm512_and_si512(_mm512_sub_epi64(two, t), mask);
            inv[g] = _mm512_madd52lo_epu64(zero, inv[g], t);
        }
    }
    let dinv: [__m512i; G] =
        std::array::from_fn(|g| _mm512_and_si512(_mm512_sub_epi64(zero, inv[g]), mask));
    // 2^52 mod d: q = ⌊2^52/d⌋ up to one either way (d < 2^52 and the
    // quotient are exact in a double's 53 bits but for its rounding);
    // then −d < 2^52 − q·d < 2d.
    let p52 = _mm512_set1_epi64(1 << 52);
    let mut c: [__m512i; G] = std::array::from_fn(|g| {
        let q = _mm512_cvttpd_epu64(_mm512_div_pd(
            _mm512_cvtepu64_pd(p52),
            _mm512_cvtepu64_pd(d[g]),
        ));
        let r = _mm512_sub_epi64(p52, _mm512_mullo_epi64(q, d[g]));
        let neg = _mm512_cmplt_epi64_mask(r, zero);
        let r1 = reduce_once(_mm512_mask_add_epi64(r, neg, r, d[g]), d[g]);
        // The Montgomery form of 2.
        reduce_once(_mm512_add_epi64(r1, r1), d[g])
    });
    // C = the Montgomery form of 2^(52K) (the exponent is public).
    let e = 52 * x.len() as u64;
    for i in (0..63 - e.leading_zeros()).rev() {
        for g in 0..G {
            c[g] = mont(c[g], c[g], d[g], dinv[g]);
        }
        if (e >> i) & 1 == 1 {
            for g in 0..G {
                c[g] = reduce_once(_mm512_add_epi64(c[g], c[g]), d[g]);
            }
        }
    }
    // s ≡ x·2^(−52K), s < d + 2, digit by digit from the lowest.
    let mut s = [zero; G];
    for &xj in x {
        let xv = _mm512_set1_epi64(xj as i64);
        for g in 0..G {
            let t = _mm512_add_epi64(s[g], xv);
            let m = _mm512_madd52lo_epu64(zero, t, dinv[g]);
            let u = _mm512_madd52lo_epu64(t, m, d[g]);
            s[g] = _mm512_madd52hi_epu64(_mm512_srli_epi64::<52>(u), m, d[g]);
        }
    }
    std::array::from_fn(|g| {
        let s = reduce_once(s[g], d[g]);
        let out = mont(s, c[g], d[g], dinv[g]);
        let mut r = [0u64; 8];
        // SAFETY: eight words, written unaligned.
        unsafe { _mm512_storeu_si512(r.as_mut_ptr().cast(), out) };
        r
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xorshift(s: &mut u64) -> u64 {
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        *s
    }

    /// Agrees with GMP's remainder for dividends of 0 to 4200 bits (one
    /// digit and many, all bits set, powers of two) and divisors from 3 to
    /// 2^52 − 1 (small, products of two sieving primes, right below 2^52,
    /// all-ones, near powers of two), in full and partial groups of eight.
    #[test]
    fn agrees_with_gmp() {
        if !available() {
            crate::capability::skip("ifma", "remainders on AVX-512 IFMA");
            return;
        }
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut ds: Vec<u64> = vec![
            3,
            5,
            7,
            MAX_DIVISOR,
            MAX_DIVISOR - 2,
            (1 << 51) + 1,
            (1 << 51) - 1,
            (1 << 26) - 5,
            ((1 << 26) - 5) * ((1 << 26) - 27),
            65537,
            262_147 * 262_151,
        ];
        for _ in 0..300 {
            let bits = 2 + xorshift(&mut seed) % 51;
            ds.push((xorshift(&mut seed) >> (64 - bits)) | 1 | (1 << (bits - 1)));
        }
        ds.retain(|&d| d >= 3);
        let mut xs = vec![
            Integer::new(),
            Integer::from(1),
            Integer::from((1u64 << 52) - 1),
            Integer::from(1u64 << 52),
            (Integer::from(1) << 2048u32) - 1,
            Integer::from(1) << 4199u32,
        ];
        for bits in [53u32, 104, 105, 1000, 2047, 2048, 3072, 4096] {
            let mut limbs = vec![0u64; bits.div_ceil(64) as usize];
            for l in limbs.iter_mut() {
                *l = xorshift(&mut seed);
            }
            xs.push(Integer::from_digits(&limbs, rug::integer::Order::Lsf).keep_bits(bits));
        }
        for x in &xs {
            let div = Dividend::new(x);
            for take in [ds.len(), 1, 7, 8, 9] {
                let ds = &ds[..take];
                let mut out = vec![u64::MAX; ds.len()];
                assert!(rem_many(&div, ds, &mut out));
                for (&d, &r) in ds.iter().zip(&out) {
                    let want = Integer::from(x % d).to_u64().expect("below d");
                    assert_eq!(r, want, "x of {} bits mod {d}", x.significant_bits());
                }
            }
        }
    }
}
