//! RSA key generation (FIPS 186-5 A.1.3, probable primes), two to five
//! primes (RFC 8017 multi-prime), on the parallel search engine.
//!
//! - Every candidate is a fresh random number from its own stream (no
//!   incremental walk from one start, which would make keys fingerprintable).
//! - Prime r_i of k_i bits is drawn uniformly from
//!   [⌈2^(k_i − 1 + (u−1)/u)⌉, 2^k_i) for u primes, so the product of the u
//!   primes is at least 2^(bits−1): the modulus has exactly `bits` bits.
//!   For u = 2 the bound is FIPS 186-5's √2·2^(k−1).
//! - gcd(r_i − 1, e) = 1 is a side condition of each candidate.
//! - |p − q| > 2^(bits/2 − 100) and d > 2^(bits/2), else new primes.
//! - A pairwise consistency test through the CRT path before returning.

pub mod check;
mod ct;
mod key;

pub use key::{OtherPrime, RsaKey};

use std::sync::atomic::{AtomicU64, Ordering};

use rug::Integer;

use crate::error::{Error, Result};
use crate::gmp::fermat::fermat_base2_secret;
use crate::prime::mr::rounds_for_bits;
use crate::prime::mr::MrCandidate;
use crate::prime::search::{mr_round_from_stream, search, CandidateSource};
use crate::prime::small::{rem_u64, rsa_trial_bound, TrialTable};
use crate::prime::stream::{random_in_range, Purpose, Seed};
use crate::prime::{Options, Stats};

/// Smallest and largest modulus sizes.
pub const MIN_BITS: u32 = 512;
pub const MAX_BITS: u32 = 16384;
/// The default public exponent.
pub const DEFAULT_EXPONENT: u64 = 65537;

/// Most primes allowed for a modulus size (OpenSSL's caps).
pub fn max_primes(bits: u32) -> u32 {
    match bits {
        0..=1023 => 2,
        1024..=4095 => 3,
        4096..=8191 => 4,
        _ => 5,
    }
}

/// Checks the parameters of a generation request.
pub fn validate(bits: u32, e: u64, primes: u32) -> Result<()> {
    if !(MIN_BITS..=MAX_BITS).contains(&bits) || bits % 2 != 0 {
        return Err(Error::InvalidArgument("bits must be even, 512..=16384"));
    }
    if e < 3 || e % 2 == 0 {
        return Err(Error::InvalidArgument(
            "public exponent must be odd and >= 3",
        ));
    }
    if primes < 2 || primes > max_primes(bits) {
        return Err(Error::InvalidArgument(
            "number of primes out of range for this size",
        ));
    }
    Ok(())
}

/// Sizes of the primes: `bits / u`, the remainder spread over the first.
fn prime_sizes(bits: u32, u: u32) -> Vec<u32> {
    (0..u).map(|i| bits / u + u32::from(i < bits % u)).collect()
}

/// ⌈2^(k − 1 + (u−1)/u)⌉ = ⌈(2^(u·k − 1))^(1/u)⌉.
fn lower_bound(k: u32, u: u32) -> Integer {
    let target = Integer::from(1u32) << (u * k - 1);
    let mut r = Integer::from(target.root_ref(u));
    if Integer::from(rug::ops::Pow::pow(&r, u)) < target {
        r += 1u32;
    }
    r
}

fn gcd_u64(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// (−a⁻¹) mod m for gcd(a, m) = 1, m ≥ 3.
fn neg_inverse_mod_u64(a: u64, m: u64) -> u64 {
    // Extended Euclid on i128 (no overflow for 64-bit inputs).
    let (mut r0, mut r1) = (m as i128, (a % m) as i128);
    let (mut t0, mut t1) = (0i128, 1i128);
    while r1 != 0 {
        let q = r0 / r1;
        (r0, r1) = (r1, r0 - q * r1);
        (t0, t1) = (t1, t0 - q * t1);
    }
    debug_assert_eq!(r0, 1);
    let inv = t0.rem_euclid(m as i128);
    ((m as i128 - inv) % m as i128) as u64
}

/// λ = lcm(r_i − 1) with a constant-time GCD (see `ct`): λ ← λ·(r − 1) /
/// gcd(λ, r − 1), the GCD bounded by the public prime sizes. The exact
/// division is by the gcd, a single limb except with negligible
/// probability; GMP's time for it depends only on the operand sizes.
pub(crate) fn carmichael_lambda(ps: &[Integer]) -> Result<Integer> {
    let mut lambda = Integer::from(&ps[0] - 1u32);
    // Public bound on λ's size: the sum of the (public) prime sizes so far.
    let mut lambda_bound = ps[0].significant_bits();
    for p in &ps[1..] {
        let pm1 = Integer::from(p - 1u32);
        let g = ct::gcd(&pm1, &lambda, lambda_bound.max(p.significant_bits()))
            .ok_or(Error::Internal)?;
        lambda_bound += p.significant_bits();
        lambda *= &pm1;
        lambda.div_exact_mut(&g);
    }
    Ok(lambda)
}

/// e⁻¹ mod m for a secret m with gcd(e, m) = 1, without inverting modulo
/// m: with a = m mod e (a remainder by the public e, computed limb by limb
/// in data-independent time) and x = (−a⁻¹) mod e (public-size
/// arithmetic), 1 + x·m ≡ 1 − a⁻¹·a ≡ 0 (mod e), so (1 + x·m)/e is an exact
/// division by the public e, lies below m, and times e is ≡ 1 (mod m).
fn inverse_of_e_mod(m: &Integer, e: u64) -> Integer {
    let a = rem_u64(m, e);
    let x = neg_inverse_mod_u64(a, e);
    let mut d = Integer::from(m * x) + 1u32;
    d.div_exact_mut(&Integer::from(e));
    d
}

struct RsaSource {
    lo: Integer,
    width: Integer,
    e: u64,
    rounds: u32,
    trial: std::sync::Arc<TrialTable>,
}

impl RsaSource {
    fn new(k: u32, u: u32, e: u64) -> RsaSource {
        let lo = lower_bound(k, u);
        let width = (Integer::from(1u32) << k) - &lo;
        RsaSource {
            lo,
            width,
            e,
            rounds: rounds_for_bits(k),
            trial: TrialTable::shared(k.div_ceil(64) as usize, rsa_trial_bound(k)),
        }
    }
}

impl CandidateSource for RsaSource {
    type Cand = MrCandidate;

    fn candidate(&self, seed: &Seed, index: u64, out: &mut Integer) -> Option<MrCandidate> {
        let mut rng = seed.stream(Purpose::RsaCandidate, index);
        random_in_range(&mut rng, &self.lo, &self.width, out);
        out.set_bit(0, true);
        if !self.trial.passes(out) {
            return None;
        }
        // gcd(c − 1, e) = 1, from c mod e (e is public).
        let r = rem_u64(out, self.e);
        let c_minus_1 = if r == 0 { self.e - 1 } else { r - 1 };
        if gcd_u64(c_minus_1, self.e) != 1 {
            return None;
        }
        Some(MrCandidate::new(std::mem::take(out)))
    }
    fn recycle(&self, cand: MrCandidate, scratch: &mut Integer) {
        *scratch = cand.n;
    }
    /// The base-2 filter plus the FIPS 186-5 Miller–Rabin rounds.
    fn rounds(&self) -> u32 {
        self.rounds + 1
    }
    /// Up to 2048-bit primes (RSA-4096) a round takes at most ~4 ms.
    fn quick_rounds(&self) -> bool {
        self.lo.significant_bits() <= 2048
    }
    /// Round 0 is the constant-time base-2 Fermat filter
    /// ([`fermat_base2_secret`], cheaper than a general exponentiation and
    /// never failing a prime); rounds 1..=t are the counted Miller–Rabin
    /// rounds with bases from the seeded stream and GMP's constant-time
    /// `mpz_powm_sec`. Everything is constant time: the winning candidate
    /// is secret.
    fn round(
        &self,
        seed: &Seed,
        index: u64,
        round: u32,
        cand: &MrCandidate,
        exps: &AtomicU64,
    ) -> bool {
        if round == 0 {
            exps.fetch_add(1, Ordering::Relaxed);
            return fermat_base2_secret(&cand.n);
        }
        mr_round_from_stream(seed, index, round - 1, cand, true, exps)
    }
    fn prime(&self, cand: &MrCandidate) -> Integer {
        cand.n.clone()
    }
}

/// Generates an RSA key of `bits` bits with public exponent `e` and `primes`
/// primes. Returns the key and the work counters.
pub fn generate(bits: u32, e: u64, primes: u32, opts: &mut Options<'_>) -> Result<(RsaKey, Stats)> {
    let result = generate_inner(bits, e, primes, opts);
    // The calling thread ran the key assembly (powm_sec, pairwise test):
    // wipe GMP's stack temporaries below this frame.
    crate::secure::wipe_stack();
    result
}

fn generate_inner(
    bits: u32,
    e: u64,
    primes: u32,
    opts: &mut Options<'_>,
) -> Result<(RsaKey, Stats)> {
    validate(bits, e, primes)?;
    crate::gmp::init();
    crate::threads::resolve_threads(opts.threads)?;
    let seed = Seed::from_option(opts.seed)?;
    // One private pool for the whole generation: its searches and the key
    // assembly after them.
    let pool = crate::threads::build_pool(opts.threads)?;
    let sizes = prime_sizes(bits, primes);
    let mut stats = Stats::default();
    // Each distinct prime size is one search; sizes are non-increasing.
    let mut groups: Vec<(u32, usize)> = Vec::new();
    for &k in &sizes {
        match groups.last_mut() {
            Some((gk, n)) if *gk == k => *n += 1,
            _ => groups.push((k, 1)),
        }
    }
    // Candidate indices of different sizes never collide: each group has
    // its own index range (group g starts at g << 48).
    let mut next_index: Vec<u64> = (0..groups.len() as u64).map(|g| g << 48).collect();
    loop {
        let mut ps: Vec<Integer> = Vec::with_capacity(primes as usize);
        for (g, &(k, count)) in groups.iter().enumerate() {
            let found = search(
                &pool,
                RsaSource::new(k, primes, e),
                &seed,
                next_index[g],
                count,
                opts,
                ps.len(),
                primes as usize,
                &mut stats,
            )?;
            next_index[g] = found.last().map_or(next_index[g], |f| f.index + 1);
            ps.extend(found.into_iter().map(|f| f.prime));
        }
        if ps[0] < ps[1] {
            ps.swap(0, 1);
        }
        if let Some(key) = assemble(bits, e, &ps, &seed, &pool)? {
            return Ok((key, stats));
        }
        // A FIPS condition failed (probability far below 2^-90): draw new
        // primes from the following indices.
    }
}

/// Runs `a` and `b` on two of the generation's workers (wiping every
/// worker's stack afterwards), or one after the other on the calling thread
/// when the pool has a single worker.
fn run_pair<RA: Send, RB: Send>(
    pool: &rayon::ThreadPool,
    a: impl FnOnce() -> RA + Send,
    b: impl FnOnce() -> RB + Send,
) -> (RA, RB) {
    if pool.current_num_threads() >= 2 {
        let r = pool.join(a, b);
        pool.broadcast(|_| crate::secure::wipe_stack());
        r
    } else {
        (a(), b())
    }
}

/// Builds the key from its primes; `None` when a FIPS condition fails.
///
/// With two or more workers in `pool` the work splits in two: λ, d, the CRT
/// coefficients (tens of microseconds by divsteps) and the pairwise test's
/// first CRT exponentiation on one worker, the other CRT exponentiations on
/// the other, so the serial tail after the search is one constant-time
/// exponentiation long instead of two.
fn assemble(
    bits: u32,
    e: u64,
    ps: &[Integer],
    seed: &Seed,
    pool: &rayon::ThreadPool,
) -> Result<Option<RsaKey>> {
    let half = bits / 2;
    if ps.len() == 2 {
        let diff = Integer::from(&ps[0] - &ps[1]).abs();
        if diff.significant_bits() <= half - 100 {
            return Ok(None);
        }
    }
    for i in 0..ps.len() {
        for j in i + 1..ps.len() {
            if ps[i] == ps[j] {
                return Ok(None);
            }
        }
    }
    let n = ps.iter().fold(Integer::from(1u32), |acc, p| acc * p);
    if n.significant_bits() != bits {
        return Err(Error::Internal);
    }
    // CRT exponents d mod (r_i − 1) = e⁻¹ mod (r_i − 1), without inverting
    // modulo a secret (see `inverse_of_e_mod`).
    let exps: Vec<Integer> = ps
        .iter()
        .map(|p| inverse_of_e_mod(&Integer::from(p - 1u32), e))
        .collect();
    let (m, c) = pairwise_message(&n, e, seed)?;
    // The pairwise test's CRT part for prime i: c^(d_i) mod r_i.
    let part = |i: usize| Integer::from(&c % &ps[i]).secure_pow_mod(&exps[i], &ps[i]);
    let (side, rest) = run_pair(
        pool,
        || -> Result<_> {
            // d = e⁻¹ mod λ; CRT coefficients as constant-time inverses
            // modulo a prime (`ct::inverse_mod_odd`). Both take tens of
            // microseconds, so this side also takes the first CRT part.
            let d = inverse_of_e_mod(&carmichael_lambda(ps)?, e);
            let bound = ps.iter().map(|p| p.significant_bits()).max().unwrap_or(0);
            let inv_mod_prime = |v: &Integer, p: &Integer| {
                ct::inverse_mod_odd(&Integer::from(v % p), p, bound).ok_or(Error::Internal)
            };
            let mut coeffs = vec![inv_mod_prime(&ps[1], &ps[0])?];
            let mut prefix = Integer::from(&ps[0] * &ps[1]);
            for p in &ps[2..] {
                coeffs.push(inv_mod_prime(&prefix, p)?);
                prefix *= p;
            }
            Ok((d, coeffs, part(0)))
        },
        || (1..ps.len()).map(part).collect::<Vec<Integer>>(),
    );
    let (d, coeffs, first) = side?;
    let parts: Vec<Integer> = std::iter::once(first).chain(rest).collect();
    if d.significant_bits() <= half {
        return Ok(None);
    }
    pairwise_check(&m, ps, &parts, &coeffs)?;
    RsaKey::from_parts(bits, e, &n, &d, ps, &exps, &coeffs).map(Some)
}

/// The pairwise consistency test's random message m and c = m^e mod n.
fn pairwise_message(n: &Integer, e: u64, seed: &Seed) -> Result<(Integer, Integer)> {
    let mut m = Integer::new();
    let width = Integer::from(n - 3u32);
    random_in_range(
        &mut seed.stream(Purpose::PairwiseTest, 0),
        &Integer::from(2u32),
        &width,
        &mut m,
    );
    let c = Integer::from(m.pow_mod_ref(&Integer::from(e), n).ok_or(Error::Internal)?);
    Ok((m, c))
}

/// Recombines the CRT parts m_i = c^(d_i) mod r_i (RFC 8017 RSADP,
/// multi-prime form) and compares with the message: the pairwise test
/// encrypts with (n, e) and decrypts through the CRT path; a mismatch is
/// `CheckFailed`.
fn pairwise_check(
    m: &Integer,
    ps: &[Integer],
    parts: &[Integer],
    coeffs: &[Integer],
) -> Result<()> {
    let mut h = Integer::from(&parts[0] - &parts[1]) * &coeffs[0];
    h.modulo_mut(&ps[0]);
    let mut out = parts[1].clone() + Integer::from(&ps[1] * &h);
    let mut prefix = Integer::from(&ps[0] * &ps[1]);
    for i in 2..ps.len() {
        let mut h = Integer::from(&parts[i] - &out) * &coeffs[i - 1];
        h.modulo_mut(&ps[i]);
        out += Integer::from(&prefix * &h);
        prefix *= &ps[i];
    }
    if out == *m {
        Ok(())
    } else {
        Err(Error::CheckFailed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_and_validation() {
        assert_eq!(max_primes(512), 2);
        assert_eq!(max_primes(1024), 3);
        assert_eq!(max_primes(4096), 4);
        assert_eq!(max_primes(8192), 5);
        assert!(validate(2048, 65537, 2).is_ok());
        for (b, e, u) in [
            (0, 65537, 2),
            (511, 65537, 2),
            (2047, 65537, 2),
            (16386, 65537, 2),
            (2048, 0, 2),
            (2048, 1, 2),
            (2048, 65536, 2),
            (2048, 65537, 1),
            (2048, 65537, 4),
            (512, 65537, 3),
            (16384, 3, 6),
        ] {
            assert!(validate(b, e, u).is_err(), "{b} {e} {u}");
        }
    }

    #[test]
    fn lower_bounds_guarantee_the_modulus_size() {
        for (bits, u) in [
            (512u32, 2u32),
            (2048, 2),
            (2048, 3),
            (3072, 3),
            (4096, 4),
            (8192, 5),
        ] {
            let sizes = prime_sizes(bits, u);
            assert_eq!(sizes.iter().sum::<u32>(), bits);
            let prod = sizes
                .iter()
                .fold(Integer::from(1u32), |a, &k| a * lower_bound(k, u));
            assert!(prod.significant_bits() == bits, "{bits}/{u}");
            // Tight: one less in every bound would drop below 2^(bits-1).
            let less = sizes
                .iter()
                .fold(Integer::from(1u32), |a, &k| a * (lower_bound(k, u) - 1u32));
            assert!(
                less.significant_bits() < bits || u > 2,
                "{bits}/{u} bound not tight"
            );
        }
        // u = 2: the bound is ⌈√2·2^(k−1)⌉.
        let l = lower_bound(1024, 2);
        let sq = Integer::from(l.square_ref());
        assert!(sq >= Integer::from(1u32) << 2047);
        assert!(Integer::from(&l - 1u32).square() < Integer::from(1u32) << 2047);
    }

    #[test]
    fn neg_inverse() {
        for (a, m) in [
            (5u64, 65537u64),
            (12345, 65537),
            (2, 3),
            (u64::MAX - 2, u64::MAX),
        ] {
            if gcd_u64(a, m) != 1 {
                continue;
            }
            let x = neg_inverse_mod_u64(a, m);
            assert_eq!((a as u128 * x as u128 + 1) % m as u128, 0, "{a} {m}");
        }
    }
}
