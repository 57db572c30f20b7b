//! Miller–Rabin rounds: how many (FIPS 186-5) and one round at a time.
//!
//! ## Round counts
//! For a random k-bit candidate that already passed trial division, the
//! probability that a composite survives t rounds with random bases is far
//! below the worst case 4^-t (Damgård, Landrock and Pomerance 1993, the
//! basis of FIPS 186-5 Appendix C.1). FIPS 186-5 Table B.1 gives, for RSA
//! primes:
//!
//! | prime size | rounds |
//! |---|---|
//! | 1024 bits (RSA-2048) | 5 |
//! | 1536 bits (RSA-3072) | 4 |
//! | 2048 bits (RSA-4096) | 4 |
//!
//! Other sizes use the smallest t whose DLP bound p(k, t) is at most 2^-128
//! (computed by [`dlp_log2_bound`]); above 2048 bits we never go below the
//! table's 4 rounds, although the bound would allow fewer: the extra rounds
//! cost a few exponentiations per key and keep the margin uniform.
//!
//! ## RSA moduli below 2048 bits
//! Table B.1's rows are the DLP bound evaluated at two targets: 2^-100,
//! and the modulus's security strength (2^-112 for 1024-bit primes,
//! 2^-128 for 1536, 2^-144 for 2048; [`dlp_log2_bound`] reproduces every
//! p, q entry). A modulus below 2048 bits (outside FIPS 186-5; RSA-1024's
//! strength is 80 bits) gets the table's floor, 2^-100: the column FIPS
//! 186-5 accepts even for RSA-2048's 112-bit strength, and 20 bits beyond
//! RSA-1024's ([`rsa_rounds`]). That is 17
//! rounds instead of 29 for RSA-512's 256-bit primes and 8 instead of 12
//! for RSA-1024's. A strong Lucas test would not lower these counts: the
//! Miller–Rabin-plus-Lucas counts in FIPS 186-4 Table C.1 are the same
//! DLP-bound rounds with the Lucas test added on top.

use std::sync::atomic::AtomicBool;

use rug::Integer;
use zeroize::Zeroize;

use crate::arith::fixed::{ct_eq, with_limbs, FixedMont};

use crate::gmp::pubpow::pow_mod_or_stop;

/// Target error probability exponent (2^-128) for sizes outside Table B.1.
pub const TARGET_LOG2_ERROR: f64 = -128.0;

/// Table B.1's smallest target (2^-100), used for RSA moduli below 2048
/// bits ([`rsa_rounds`]).
pub const SMALL_RSA_LOG2_ERROR: f64 = -100.0;

/// The smallest modulus size [`rsa_rounds`] treats as Table B.1's (2048
/// bits, security strength 112).
pub const SMALL_RSA_BELOW: u32 = 2048;

/// log2 of the best DLP upper bound on p(k, t): the probability that a
/// random odd k-bit composite passes t Miller–Rabin rounds with random bases.
pub fn dlp_log2_bound(k: u32, t: u32) -> f64 {
    let kf = k as f64;
    let tf = t as f64;
    let log2 = f64::log2;
    // Always: 4^-t.
    let mut best = -2.0 * tf;
    if t == 1 && k >= 2 {
        // k^2 4^(2 - sqrt k)
        best = best.min(2.0 * log2(kf) + 2.0 * (2.0 - kf.sqrt()));
    }
    if (t == 2 && k >= 88) || (t >= 3 && k >= 21 && tf <= kf / 9.0) {
        // k^1.5 2^t t^-0.5 4^(2 - sqrt(t k))
        best = best.min(1.5 * log2(kf) + tf - 0.5 * log2(tf) + 2.0 * (2.0 - (tf * kf).sqrt()));
    }
    if tf >= kf / 9.0 && k >= 21 {
        // (7/20) k 2^(-5t) + (1/7) k^(15/4) 2^(-k/2 - 2t) + 12 k 2^(-k/4 - 3t)
        let s = (7.0 / 20.0) * kf * (-5.0 * tf).exp2()
            + (1.0 / 7.0) * kf.powf(3.75) * (-kf / 2.0 - 2.0 * tf).exp2()
            + 12.0 * kf * (-kf / 4.0 - 3.0 * tf).exp2();
        best = best.min(log2(s));
    }
    if tf >= kf / 4.0 && k >= 21 {
        // (1/7) k^(15/4) 2^(-k/2 - 2t)
        best = best.min(log2(1.0 / 7.0) + 3.75 * log2(kf) - kf / 2.0 - 2.0 * tf);
    }
    best
}

/// Miller–Rabin rounds for a random `bits`-bit prime candidate.
pub fn rounds_for_bits(bits: u32) -> u32 {
    match bits {
        1024 => 5,
        1536 | 2048 => 4,
        _ => {
            let t = (1..=64)
                .find(|&t| dlp_log2_bound(bits, t) <= TARGET_LOG2_ERROR)
                .unwrap_or(64);
            if bits > 2048 {
                t.max(4)
            } else {
                t
            }
        }
    }
}

/// Miller–Rabin rounds for a random `prime_bits`-bit prime of an RSA
/// modulus of `modulus_bits` bits: [`rounds_for_bits`] from 2048 bits up,
/// and below that the smallest t whose DLP bound is at most 2^-100 (see
/// the module notes).
pub fn rsa_rounds(prime_bits: u32, modulus_bits: u32) -> u32 {
    if modulus_bits >= SMALL_RSA_BELOW {
        return rounds_for_bits(prime_bits);
    }
    (1..=64)
        .find(|&t| dlp_log2_bound(prime_bits, t) <= SMALL_RSA_LOG2_ERROR)
        .unwrap_or(64)
}

/// How many secret rounds of one `bits`-bit candidate run at once on this
/// CPU ([`MrCandidate::rounds_together_or_stop`]): the group that was
/// cheapest per round, 1 where rounds do not interleave.
pub fn rounds_at_once(bits: u32) -> usize {
    crate::arith::ifma::rounds_at_once(bits)
}

/// A candidate prepared for Miller–Rabin: n - 1 = d·2^s with d odd.
pub struct MrCandidate {
    /// The candidate.
    pub n: Integer,
    /// n − 1.
    pub n_minus_1: Integer,
    /// The odd part of n − 1.
    pub d: Integer,
    /// v2(n − 1).
    pub s: u32,
}

impl MrCandidate {
    /// Prepares odd `n` ≥ 5.
    pub fn new(n: Integer) -> MrCandidate {
        let n_minus_1 = Integer::from(&n - 1u32);
        let s = n_minus_1.find_one(0).unwrap_or(0);
        let d = Integer::from(&n_minus_1 >> s);
        MrCandidate { n, n_minus_1, d, s }
    }

    /// One strong-probable-prime round with `base` (2 ≤ base ≤ n − 2).
    ///
    /// With `secret`, the round is `mr_round_fixed` for n of up to 7
    /// limbs, `arith::ifma::mr_round_secret` from 9 to 128 limbs on CPUs
    /// with AVX-512 IFMA, and `gmp::sec::mr_round` otherwise: its time depends only on the
    /// size of n — not on s = v2(n − 1), nor on where
    /// −1 shows up. Candidates with s > 63 never reach it from the RSA
    /// source (rejected unbuilt); for them this falls back to the loop
    /// below with `gmp::sec::pow_mod` and s − 1 squarings.
    pub fn round(&self, base: Integer, secret: bool) -> bool {
        self.round_or_stop(base, secret, &AtomicBool::new(false))
    }

    /// Whether [`MrCandidate::rounds_together_or_stop`] takes this
    /// candidate (AVX-512 IFMA, 9 limbs to about 3300 bits, v2(n − 1) ≤
    /// 63).
    pub fn pairs_apply(&self) -> bool {
        let limbs = self.n.as_limbs();
        !limbs.is_empty()
            && self.n.is_odd()
            && (limbs[0] ^ 1).trailing_zeros() <= crate::gmp::sec::MAX_S
            && crate::arith::ifma::pairs(self.n.significant_bits())
    }

    /// Two to five secret rounds at once, one per base (each 2 ≤ base ≤
    /// n − 2), interleaved on AVX-512 IFMA
    /// (`arith::ifma::mr_rounds_secret`): the verdicts calls of
    /// [`MrCandidate::round_or_stop`] with `secret` give, in order; a
    /// stopped group fails them all. `None` where
    /// [`MrCandidate::pairs_apply`] is false or there are fewer than two or
    /// more than five bases (the caller runs the rounds in turn). Constant
    /// time as the single round; R and R² mod n are computed once for all.
    pub fn rounds_together_or_stop(
        &self,
        bases: &[&Integer],
        stop: &AtomicBool,
    ) -> Option<Vec<bool>> {
        if !self.pairs_apply() {
            return None;
        }
        match bases.len() {
            2 => self.interleaved::<2>(bases, stop),
            3 => self.interleaved::<3>(bases, stop),
            4 => self.interleaved::<4>(bases, stop),
            5 => self.interleaved::<5>(bases, stop),
            _ => None,
        }
    }

    /// L rounds by `arith::ifma::mr_rounds_secret` with R and R² mod n
    /// computed once, for a candidate it takes.
    fn interleaved<const L: usize>(
        &self,
        bases: &[&Integer],
        stop: &AtomicBool,
    ) -> Option<Vec<bool>> {
        let limbs = self.n.as_limbs();
        if bases.len() != L || bases.iter().any(|b| b.as_limbs().len() > limbs.len()) {
            return None;
        }
        let v = with_r_and_r2(limbs, |r, r2| {
            let b: [&[u64]; L] = std::array::from_fn(|l| bases[l].as_limbs());
            crate::arith::ifma::mr_rounds_secret::<L>(limbs, b, r, r2, stop)
        });
        // Every condition under which the rounds decline was checked by
        // the caller and above: `None` here is a stop.
        Some(v.map_or(vec![false; L], |v| v.iter().map(|&x| x == 1).collect()))
    }

    /// Whether [`MrCandidate::rounds_in_lanes_or_stop`] takes this
    /// candidate (AVX-512 IFMA, 256 to 1245 bits, v2(n − 1) ≤ 63).
    pub fn lanes_apply(&self) -> bool {
        crate::arith::lanes::applies(self.n.as_limbs())
    }

    /// Up to eight secret rounds at once, one per base (each 2 ≤ base ≤
    /// n − 2), in the lanes of one AVX-512 IFMA register
    /// (`arith::lanes::mr_rounds_secret`): the verdicts calls of
    /// [`MrCandidate::round_or_stop`] with `secret` give, in order; a
    /// stopped run fails them all. `None` where
    /// [`MrCandidate::lanes_apply`] is false or there are no or more than
    /// eight bases. Constant time as the single round; R and R² mod n are
    /// computed once for all.
    pub fn rounds_in_lanes_or_stop(
        &self,
        bases: &[Integer],
        stop: &AtomicBool,
    ) -> Option<Vec<bool>> {
        let limbs = self.n.as_limbs();
        if !self.lanes_apply()
            || bases.is_empty()
            || bases.len() > crate::arith::lanes::LANES
            || bases.iter().any(|b| b.as_limbs().len() > limbs.len())
        {
            return None;
        }
        let refs: Vec<&[u64]> = bases.iter().map(|b| b.as_limbs()).collect();
        let v = with_r_and_r2(limbs, |r, r2| {
            crate::arith::lanes::mr_rounds_secret(limbs, &refs, r, r2, stop)
        });
        // Every condition under which the lanes decline was checked
        // above: `None` here is a stop.
        Some(match v {
            Some(v) => v[..bases.len()].iter().map(|&x| x == 1).collect(),
            None => vec![false; bases.len()],
        })
    }

    /// [`MrCandidate::round`] that a cancelled search can interrupt: a
    /// public round (`secret` false) gives up, returning false, once
    /// `stop` is set (looked at every 64 squarings, `gmp::pubpow`); a
    /// secret round above 7 limbs looks at it every 64 exponent bits
    /// (`gmp::sec::pow_secret`), and one of up to 7 limbs (tens of
    /// microseconds) runs to its end.
    pub fn round_or_stop(&self, mut base: Integer, secret: bool, stop: &AtomicBool) -> bool {
        let len = self.n.as_limbs().len();
        let fixed = with_limbs!(len, N => mr_round_fixed::<N>(&self.n, &base, secret)).flatten();
        if let Some(v) = fixed {
            return v;
        }
        if secret {
            if let Some(v) = mr_round_ifma(&self.n, &base, stop) {
                return v;
            }
            if let Some(v) = crate::gmp::sec::mr_round(&self.n, &base, stop) {
                return v;
            }
            match crate::gmp::sec::pow_mod(&base, &self.d, &self.n) {
                Some(x) => base = x,
                None => return false,
            }
        } else {
            match pow_mod_or_stop(&base, &self.d, &self.n, stop) {
                Some(x) => base = x,
                None => return false,
            }
        }
        let mut x = base;
        let mut pass = x == 1u32 || x == self.n_minus_1;
        if secret {
            for _ in 1..self.s {
                x.square_mut();
                x %= &self.n;
                pass |= x == self.n_minus_1;
            }
            // If x reached 1 before n-1, later values stay 1 and never equal
            // n-1, so `pass` is exactly the strong-probable-prime verdict.
            pass
        } else {
            for _ in 1..self.s {
                if pass {
                    break;
                }
                x.square_mut();
                x %= &self.n;
                if x == 1u32 {
                    return false;
                }
                pass = x == self.n_minus_1;
            }
            pass
        }
    }
}

/// The secret round on AVX-512 IFMA (`arith::ifma::mr_round_secret`) for
/// n of 9 to 128 limbs on CPUs that have it: `Some` of the verdict (a
/// stopped round fails), `None` where it does not apply. R and R² mod n
/// come from the constant-time division and are wiped after the round.
fn mr_round_ifma(n: &Integer, base: &Integer, stop: &AtomicBool) -> Option<bool> {
    use crate::arith::ifma;
    let limbs = n.as_limbs();
    let len = limbs.len();
    if !ifma::available()
        || !ifma::LIMBS.contains(&len)
        || n.is_even()
        || (limbs[0] ^ 1).trailing_zeros() > crate::gmp::sec::MAX_S
        || base.as_limbs().len() > len
    {
        return None;
    }
    let v = with_r_and_r2(limbs, |r, r2| {
        ifma::mr_round_secret(limbs, base.as_limbs(), r, r2, stop)
    });
    // Every condition under which the round declines was checked above:
    // `None` here is a stop.
    Some(v == Some(1))
}

/// `f(R mod n, R² mod n)` (the IFMA rounds' inputs, in n's length) for
/// the secret odd `n`, both by the constant-time division and wiped
/// afterwards.
pub(crate) fn with_r_and_r2<T>(limbs: &[u64], f: impl FnOnce(&[u64], &[u64]) -> T) -> T {
    let len = limbs.len();
    let (mut r, mut r2) = ([0u64; 128], [0u64; 128]);
    crate::prime::fermat::secret_r_and_r2_into(limbs, &mut r, &mut r2);
    let v = f(&r[..len], &r2[..len]);
    r.zeroize();
    r2.zeroize();
    v
}

/// Exponent bits per window of [`mr_round_fixed`]'s exponentiation.
const WINDOW: usize = 4;

/// `gmp::sec::mr_round` on `arith::fixed`'s arithmetic for n of N ≤ 7
/// limbs, in time that depends only on N and the bit size of n:
/// - s = v2(n − 1) and d = (n − 1) / 2^s by shifts (a shift's time does
///   not depend on its count);
/// - base^d by fixed 4-bit windows over as many bits as n has (not d), each
///   window's power read from a table of base^0 … base^15 by scanning all
///   sixteen entries with masks;
/// - then `MAX_S − 1` squarings, each compared with −1, only those before
///   the s-th counted.
///
/// A public round (`secret` false: DH candidates, whose numbers are
/// public) squares only s − 1 times and stops at the first −1.
///
/// `None` when v2(n − 1) > `MAX_S`, n is even or shorter than N limbs, or
/// the base is longer than n.
fn mr_round_fixed<const N: usize>(n: &Integer, base: &Integer, secret: bool) -> Option<bool> {
    use crate::gmp::sec::MAX_S;
    let nl = n.as_limbs();
    let m = FixedMont::<N>::new(nl)?;
    let s = (nl[0] ^ 1).trailing_zeros();
    if s > MAX_S || s == 0 || *n < 5u32 {
        return None;
    }
    let bl = base.as_limbs();
    if bl.len() > N {
        return None;
    }
    let mut d = odd_part::<N>(nl, s);
    let mut b = [0u64; N];
    b[..bl.len()].copy_from_slice(bl);
    let pass = mr_fixed_core(&m, &d, &b, s, n.significant_bits() as usize, secret);
    d.zeroize();
    b.zeroize();
    Some(pass == 1)
}

/// d = (n − 1) / 2^s for odd n of N limbs and 1 ≤ s ≤ 63, by shifts
/// (whose time does not depend on s).
pub(crate) fn odd_part<const N: usize>(nl: &[u64], s: u32) -> [u64; N] {
    let mut d = [0u64; N];
    for i in 0..N {
        let lo = if i == 0 { nl[0] ^ 1 } else { nl[i] };
        let hi = if i + 1 < N { nl[i + 1] } else { 0 };
        d[i] = (lo >> s) | (hi << (64 - s));
    }
    d
}

/// The work of [`mr_round_fixed`] once n is in `m`: `base`^`d` by fixed
/// windows over `bits` (n's bit size, public) bits, then the squarings;
/// 1 when the round passes, 0 when not. With `secret`, nothing in it
/// branches on n, d, the base or s (`arith::ct_check` runs it under
/// valgrind with all four marked undefined).
pub(crate) fn mr_fixed_core<const N: usize>(
    m: &FixedMont<N>,
    d: &[u64; N],
    b: &[u64; N],
    s: u32,
    bits: usize,
    secret: bool,
) -> u64 {
    use crate::gmp::sec::MAX_S;
    let r2 = m.r_squared();
    let one = m.one();
    let mut table = [[0u64; N]; 1 << WINDOW];
    table[0] = one;
    table[1] = m.to_mont(b, &r2);
    for k in 2..table.len() {
        table[k] = m.mul(&table[k - 1], &table[1]);
    }
    let mut acc = one;
    let windows = bits.div_ceil(WINDOW);
    for w in (0..windows).rev() {
        for _ in 0..WINDOW {
            acc = m.sqr(&acc);
        }
        let bit = w * WINDOW;
        let idx = (d[bit / 64] >> (bit % 64)) & ((1 << WINDOW) - 1);
        let mut power = [0u64; N];
        for (k, entry) in table.iter().enumerate() {
            let x = k as u64 ^ idx;
            // All ones when k = idx.
            let mask = core::hint::black_box(((x | x.wrapping_neg()) >> 63) ^ 1).wrapping_neg();
            for i in 0..N {
                power[i] |= entry[i] & mask;
            }
        }
        acc = m.mul(&acc, &power);
        power.zeroize();
    }
    let minus_one = m.minus_one();
    let mut pass = ct_eq(&acc, &one) | ct_eq(&acc, &minus_one);
    let squarings = if secret { MAX_S } else { s };
    for j in 1..squarings {
        if !secret && pass == 1 {
            break;
        }
        acc = m.sqr(&acc);
        // Counts only while j < s: mask from the borrow of j − s.
        let live = (j.wrapping_sub(s) >> 31) as u64 & 1;
        pass |= ct_eq(&acc, &minus_one) & live;
    }
    for entry in table.iter_mut() {
        entry.zeroize();
    }
    acc.zeroize();
    pass
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gmp::sec::tests::{prime_with_s, reference};

    #[test]
    fn table_b1_sizes() {
        assert_eq!(rounds_for_bits(1024), 5);
        assert_eq!(rounds_for_bits(1536), 4);
        assert_eq!(rounds_for_bits(2048), 4);
    }

    #[test]
    fn table_b1_columns_are_the_dlp_bound() {
        // Every p, q entry of FIPS 186-5 Table B.1, both columns.
        let first =
            |k: u32, target: f64| (1..64).find(|&t| dlp_log2_bound(k, t) <= target).unwrap();
        for (k, t100, t_strength, strength) in [
            (1024u32, 4u32, 5u32, -112.0),
            (1536, 3, 4, -128.0),
            (2048, 2, 4, -144.0),
        ] {
            assert_eq!(first(k, -100.0), t100, "{k} bits at 2^-100");
            assert_eq!(first(k, strength), t_strength, "{k} bits at 2^{strength}");
        }
    }

    #[test]
    fn small_rsa_moduli_use_the_table_floor() {
        assert_eq!(rsa_rounds(256, 512), 17);
        assert_eq!(rsa_rounds(512, 1024), 8);
        assert_eq!(rsa_rounds(342, 1024), 12); // three primes
        for (k, n) in [(256u32, 512u32), (384, 768), (512, 1024), (1023, 2047)] {
            let t = rsa_rounds(k, n);
            assert!(dlp_log2_bound(k, t) <= SMALL_RSA_LOG2_ERROR);
            assert!(dlp_log2_bound(k, t - 1) > SMALL_RSA_LOG2_ERROR);
            assert!(t < rounds_for_bits(k));
        }
        // From 2048 bits on, Table B.1 and the 2^-128 rule are unchanged,
        // for two primes and more.
        for (k, n) in [
            (1024u32, 2048u32),
            (683, 2048),
            (1536, 3072),
            (2048, 4096),
            (4096, 8192),
        ] {
            assert_eq!(rsa_rounds(k, n), rounds_for_bits(k));
        }
    }

    #[test]
    fn formula_sizes_meet_the_target_and_are_minimal() {
        for k in [256u32, 384, 512, 683, 768, 1366, 3072, 4096, 8192] {
            let t = rounds_for_bits(k);
            assert!(dlp_log2_bound(k, t) <= TARGET_LOG2_ERROR, "k={k} t={t}");
            if k <= 2048 {
                assert!(
                    dlp_log2_bound(k, t - 1) > TARGET_LOG2_ERROR,
                    "k={k}: {t} not minimal"
                );
            } else {
                assert!(t >= 4);
            }
        }
        // Smaller candidates need more rounds.
        assert!(rounds_for_bits(256) > rounds_for_bits(512));
        assert!(rounds_for_bits(512) >= rounds_for_bits(1024));
    }

    /// The in-register round agrees with the textbook round at every limb
    /// count it serves: strong pseudoprimes, Carmichael numbers, primes of
    /// every s from 1 to 63 and composites with the same s, bases short
    /// and full-length; s = 64 and a base longer than n are refused.
    #[test]
    fn fixed_round_agrees_with_reference() {
        let fixed = |n: &Integer, a: &Integer| {
            let len = n.as_limbs().len();
            let ct = with_limbs!(len, N => mr_round_fixed::<N>(n, a, true)).flatten();
            let public = with_limbs!(len, N => mr_round_fixed::<N>(n, a, false)).flatten();
            assert_eq!(ct, public, "{n:#x} to base {a:#x}");
            ct
        };
        for (n, a, want) in [
            (2047u32, 2u32, true),
            (3277, 2, true),
            (2047, 3, false),
            (561, 2, false),
        ] {
            let (n, a) = (Integer::from(n), Integer::from(a));
            assert_eq!(fixed(&n, &a), Some(want), "{n} to base {a}");
        }
        let mut x = Integer::from(0x1234_5678_9abc_def1u64);
        let mut checked = 0;
        for bits in [64u32, 100, 128, 192, 255, 256, 320, 384, 447, 448] {
            for s in [1u32, 2, 3, 5, 17, 32, 62, 63] {
                if s + 8 > bits {
                    continue;
                }
                let n = prime_with_s(&mut x, bits, s);
                // A composite with the same s, cut to the same size.
                let c: Integer = &n * ((Integer::from(1u32) << (s + 1)) * 3u32 + 1u32);
                let c = c.keep_bits(bits) | 1u32;
                let full = Integer::from(&x >> 3u32) % &n;
                for a in [Integer::from(2u32), Integer::from(3u32), full] {
                    if a < 2u32 {
                        continue;
                    }
                    assert_eq!(fixed(&n, &a), Some(true), "prime, {bits} bits, s={s}");
                    if c > 4u32 && Integer::from(&c - 1u32).find_one(0).unwrap() <= 63 {
                        let a = Integer::from(&a % &c);
                        if a >= 2u32 {
                            assert_eq!(
                                fixed(&c, &a),
                                Some(reference(&c, &a)),
                                "composite {c:#x} to base {a:#x}"
                            );
                        }
                    }
                    checked += 1;
                }
            }
        }
        assert!(checked > 200, "{checked}");
        let big = (Integer::from(5u32) << 64u32) + 1u32;
        assert_eq!(fixed(&big, &Integer::from(2u32)), None);
        let n = Integer::from(2047u32);
        assert_eq!(
            mr_round_fixed::<1>(&n, &Integer::from(u128::MAX), true),
            None
        );
    }

    #[test]
    fn rounds_agree_with_gmp() {
        // Carmichael number 561 = 3·11·17 and a strong pseudoprime to base 2
        // (2047 = 23·89) are caught by other bases; primes always pass.
        let primes = [101u32, 65537, 2147483647];
        for &p in &primes {
            let c = MrCandidate::new(Integer::from(p));
            for b in [2u32, 3, 10, 99] {
                assert!(c.round(Integer::from(b), false));
                assert!(c.round(Integer::from(b), true));
            }
        }
        let c = MrCandidate::new(Integer::from(2047u32));
        assert!(c.round(Integer::from(2u32), false)); // strong pseudoprime to base 2
        assert!(c.round(Integer::from(2u32), true));
        assert!(!c.round(Integer::from(3u32), false));
        assert!(!c.round(Integer::from(3u32), true));
        let c = MrCandidate::new(Integer::from(561u32));
        assert!(!c.round(Integer::from(2u32), false));
        assert!(!c.round(Integer::from(2u32), true));
    }
}
