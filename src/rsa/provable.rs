//! Provable primes for RSA (opt-in: `PF_RSA_PROVABLE`,
//! [`super::Request::provable`]): every prime of the key is proven prime
//! by a chain of Pocklington certificates, instead of being a probable
//! prime confirmed by Miller–Rabin rounds. nettle makes its RSA primes
//! this way; below 2048 bits, where FIPS 186-5's rounds cost more than the
//! search itself, it is also the faster way.
//!
//! - A prime p of k > [`FOOT_BITS`] bits is p = 2·r·q + 1 with q a proven
//!   prime of ⌈k/2⌉ + 1 bits, so q > √p. Pocklington's theorem with the
//!   base 2: if 2^(p−1) ≡ 1 (mod p) and gcd(2^(2r) − 1, p) = 1, then q
//!   divides ℓ − 1 for every prime ℓ dividing p, so every such ℓ exceeds
//!   √p and p is prime. The first condition is the same constant-time
//!   base-2 filter that probable primes pass first (round 0, nearly every
//!   composite fails it); the second is one exponentiation of half the
//!   size, on the candidate that passed (round 1).
//! - At the foot of the chain (k ≤ 81 bits), Miller–Rabin to the twelve
//!   prime bases 2 … 37 decides primality: no composite below
//!   ψ12 = 3 317 044 064 679 887 385 961 981 > 2^81 passes all twelve
//!   (Sorenson and Webster, 2015).
//! - Candidate number i of a level is r drawn uniformly, from the stream
//!   (`RsaProvable`, i), from the range that puts p in [lo, 2^k): the key's
//!   bound at the top, 2^(k−1) below. Trial division as for probable
//!   primes; gcd(p − 1, e) = 1 at the top.
//! - Each level is one search on the engine, so the primes are the same at
//!   any thread count.
//! - q is as secret as p: p ≡ 1 (mod 2q) with 2q about N^(1/4) would give
//!   away N's factorisation (Coppersmith). Everything on q, r and p runs
//!   in time that depends only on the public sizes.
//!
//! The primes are not uniform among all primes of their size: p − 1 has a
//! prime factor above √p (as about 69 % of primes' p − 1 do). FIPS 186-5
//! A.1.2's provable primes are the Shawe-Taylor construction from a hashed
//! seed, which this is not, so `PF_RSA_FIPS` refuses this option.

#![forbid(unsafe_code)]

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use rug::Integer;

use super::{ct, draw_odd, first_tests_grouped, mr_ready, trial_table, SideCondition};
use crate::error::{Error, Result};
use crate::gmp::sec;
use crate::prime::fermat::fermat_base2_secret_or_stop;
use crate::prime::mr::MrCandidate;
use crate::prime::search::{search_here, CandidateSource, Generation, Verdict, WorkerJob};
use crate::prime::small::TrialTable;
use crate::prime::stream::{
    in_range_from_words_secret, range_words, with_first_words, Purpose, Seed, StreamBatches,
};
use crate::prime::Stats;
use crate::secure::SecretVec;

/// Largest size proven directly, by Miller–Rabin to [`FOOT_BASES`].
pub(crate) const FOOT_BITS: u32 = 81;

/// The first twelve primes: as Miller–Rabin bases they decide primality
/// below ψ12 ≈ 3.3·10^24 (Sorenson and Webster, 2015), above 2^81.
pub(crate) const FOOT_BASES: [u32; 12] = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37];

/// The sizes of a k-bit prime's chain, from k down to the foot: each next
/// size is ⌈k/2⌉ + 1, so that its prime exceeds the square root of any
/// k-bit number.
pub(crate) fn chain(k: u32) -> Vec<u32> {
    let mut sizes = vec![k];
    let mut k = k;
    while k > FOOT_BITS {
        k = k.div_ceil(2) + 1;
        sizes.push(k);
    }
    sizes
}

/// Candidate indices of one level of one prime of the key: 2^48 per level,
/// eight levels per prime (a chain from 8192 bits has eight sizes).
pub(crate) fn first_index(slot: u32, level: usize) -> u64 {
    debug_assert!(slot < 8 && level < 8);
    (u64::from(slot) << 51) | ((level as u64) << 48)
}

/// Levels of fewer bits than this run on one worker each, index by index
/// ([`search_here`]): a 256-bit level takes about 0.2 ms, less than the
/// engine's hand-offs between the caller and the workers would add to it.
/// The chains of the key's primes run side by side. Larger levels use the
/// engine (all threads, progress, cancel).
pub(crate) const HERE_BELOW: u32 = 400;

/// The levels of one prime's chain, the prime first and the foot last
/// (each prime's p − 1 is divisible by the next).
pub(crate) type Chain = Vec<Integer>;

/// One prime of a key: its size, its lower bound and the next candidate
/// index of each level (moved past every prime found, so that a retry
/// after a failed FIPS bound draws new primes).
pub(crate) struct Slot<'a> {
    pub(crate) k: u32,
    pub(crate) lo: Integer,
    pub(crate) next: &'a mut [u64],
}

/// The source of level `level` (above the foot) of a chain of `sizes`
/// over the proven prime `q` of the level below: the key's bound `lo` and
/// e's side condition at the top, 2^(k−1) below.
fn pocklington_level(
    sizes: &[u32],
    level: usize,
    lo: &Integer,
    e: u64,
    q: Integer,
) -> PocklingtonSource {
    let k = sizes[level];
    if level == 0 {
        PocklingtonSource::new(k, lo, q, Some(e))
    } else {
        PocklingtonSource::new(k, &(Integer::from(1u32) << (k - 1)), q, None)
    }
}

// The foot is always among the levels found without the engine.
const _: () = assert!(FOOT_BITS < HERE_BELOW);

/// Finds a proven prime for every slot of a key with public exponent `e`
/// and returns their chains. Each chain is searched from the foot up, one
/// search per level: the levels below [`HERE_BELOW`] bits of all the
/// slots first (the foot among them), side by side on the workers, then
/// each larger level on the engine.
pub(crate) fn primes(
    generation: &mut Generation<'_, '_>,
    slots: &mut [Slot<'_>],
    e: u64,
) -> Result<Vec<Chain>> {
    let sizes: Vec<Vec<u32>> = slots.iter().map(|slot| chain(slot.k)).collect();
    // The small levels: a suffix of each chain.
    let mut jobs: Vec<WorkerJob<'_, Chain>> = Vec::new();
    let mut small = 0;
    for (slot, sizes) in slots.iter_mut().zip(&sizes) {
        let foot = sizes.len() - 1;
        let first_small = sizes.iter().position(|&k| k < HERE_BELOW).unwrap_or(foot);
        small += sizes.len() - first_small;
        let lo = &slot.lo;
        let next = &mut *slot.next;
        jobs.push(Box::new(move |seed: &Seed, stats: &mut Stats| {
            let f = search_here(&FootSource::new(sizes[foot]), seed, next[foot], stats)?;
            next[foot] = f.index + 1;
            let mut found: Chain = vec![f.prime];
            for level in (first_small..foot).rev() {
                let q = found.last().ok_or(Error::Internal)?.clone();
                let src = pocklington_level(sizes, level, lo, e, q);
                let f = search_here(&src, seed, next[level], stats)?;
                next[level] = f.index + 1;
                found.push(f.prime);
            }
            Ok(found)
        }));
    }
    let mut chains = generation.run_on_workers(jobs, small)?;
    // The large levels, from the largest small one up.
    for ((slot, sizes), found) in slots.iter_mut().zip(&sizes).zip(chains.iter_mut()) {
        let first_small = sizes.len() - found.len();
        for level in (0..first_small).rev() {
            let q = found.last().ok_or(Error::Internal)?.clone();
            let src = pocklington_level(sizes, level, &slot.lo, e, q);
            let f = generation.search(src, slot.next[level], 1)?;
            let f = f.into_iter().next().ok_or(Error::Internal)?;
            slot.next[level] = f.index + 1;
            found.push(f.prime);
        }
        found.reverse();
    }
    Ok(chains)
}

/// The foot of a chain: uniform odd numbers of k ≤ 81 bits (top bit set),
/// proven by Miller–Rabin to the twelve bases after the base-2 filter.
pub(crate) struct FootSource {
    lo: Integer,
    trial: Arc<TrialTable>,
    /// The candidates' streams sixteen at a time, where the lanes apply.
    batches: Option<StreamBatches>,
}

impl FootSource {
    pub(crate) fn new(k: u32) -> FootSource {
        assert!((16..=FOOT_BITS).contains(&k), "foot size {k}");
        let lo = Integer::from(1u32) << (k - 1);
        FootSource {
            batches: StreamBatches::new(Purpose::RsaProvable, range_words(&lo)),
            lo,
            trial: trial_table(k),
        }
    }
}

impl CandidateSource for FootSource {
    type Cand = MrCandidate;

    fn candidate(&self, seed: &Seed, index: u64, out: &mut Integer) -> Option<MrCandidate> {
        // [2^(k−1), 2^k): the width equals the bound.
        let stream = (Purpose::RsaProvable, index);
        let batches = self.batches.as_ref();
        if !draw_odd(seed, stream, batches, &self.lo, &self.lo, &self.trial, out) {
            return None;
        }
        mr_ready(out)
    }
    fn recycle(&self, cand: MrCandidate, scratch: &mut Integer) {
        *scratch = cand.n;
    }
    /// The base-2 filter, then the twelve bases.
    fn rounds(&self) -> u32 {
        1 + FOOT_BASES.len() as u32
    }
    fn round(
        &self,
        _seed: &Seed,
        _index: u64,
        round: u32,
        cand: &MrCandidate,
        stop: &AtomicBool,
    ) -> Verdict {
        if round == 0 {
            return Verdict::one(fermat_base2_secret_or_stop(&cand.n, stop));
        }
        let base = Integer::from(FOOT_BASES[round as usize - 1]);
        Verdict::one(cand.round_or_stop(base, true, stop))
    }
    fn prime(&self, cand: &MrCandidate) -> Integer {
        cand.n.clone()
    }
}

/// A candidate p = 2·r·q + 1 and its 2r.
pub(crate) struct PocklingtonCand {
    n: Integer,
    two_r: Integer,
}

/// One level above the foot: p = 2·r·q + 1 for the proven prime q of the
/// level below.
pub(crate) struct PocklingtonSource {
    q: Integer,
    r_lo: Integer,
    r_width: Integer,
    /// The public exponent at the top level (gcd(p − 1, e) = 1), and e
    /// prepared for the remainder.
    e: Option<SideCondition>,
    trial: Arc<TrialTable>,
    /// How many first tests run at once
    /// (`prime::fermat::secret_first_test_lanes`).
    first_lanes: usize,
    /// The multipliers' streams sixteen at a time, where the lanes apply.
    batches: Option<StreamBatches>,
}

impl PocklingtonSource {
    /// The level of `k`-bit primes at least `lo` (2^(k−1) ≤ lo < 2^k) over
    /// the proven prime `q` > 2^(k/2).
    pub(crate) fn new(k: u32, lo: &Integer, q: Integer, e: Option<u64>) -> PocklingtonSource {
        debug_assert!(q.significant_bits() > k.div_ceil(2));
        debug_assert!(lo.significant_bits() == k);
        let two_q = Integer::from(&q << 1u32);
        // p = 2rq + 1 ≤ 2^k − 1  ⇔  r ≤ ⌊(2^k − 2) / 2q⌋;
        // p ≥ lo  ⇔  r ≥ ⌈(lo − 1) / 2q⌉ = ⌊(lo + 2q − 2) / 2q⌋.
        let top = (Integer::from(1u32) << k) - 2u32;
        let r_hi = ct::div_floor(&top, &two_q, k);
        let r_lo = ct::div_floor(&(Integer::from(lo + &two_q) - 2u32), &two_q, k + 1);
        let r_width = r_hi - &r_lo + 1u32;
        PocklingtonSource {
            batches: StreamBatches::new(Purpose::RsaProvable, range_words(&r_width)),
            q,
            r_lo,
            r_width,
            e: e.map(SideCondition::new),
            trial: trial_table(k),
            first_lanes: crate::prime::fermat::secret_first_test_lanes(k),
        }
    }
}

impl CandidateSource for PocklingtonSource {
    type Cand = PocklingtonCand;

    fn candidate(&self, seed: &Seed, index: u64, out: &mut Integer) -> Option<PocklingtonCand> {
        let mut r = Integer::new();
        let (batches, words) = (self.batches.as_ref(), range_words(&self.r_width));
        with_first_words(seed, batches, Purpose::RsaProvable, index, words, |w| {
            in_range_from_words_secret(w, &self.r_lo, &self.r_width, &mut r)
        });
        r <<= 1u32;
        // 2rq is even: setting bit 0 adds the one without a carry.
        *out = sec::mul(&r, &self.q);
        out.set_bit(0, true);
        if !self.trial.passes(out) {
            return None;
        }
        if let Some(side) = &self.e {
            if !side.holds(out.as_limbs()) {
                return None;
            }
        }
        Some(PocklingtonCand {
            n: std::mem::take(out),
            two_r: r,
        })
    }
    fn recycle(&self, cand: PocklingtonCand, scratch: &mut Integer) {
        *scratch = cand.n;
    }
    /// 2^(p−1) ≡ 1, then gcd(2^(2r) − 1, p) = 1.
    fn rounds(&self) -> u32 {
        2
    }
    fn round(
        &self,
        _seed: &Seed,
        _index: u64,
        round: u32,
        cand: &PocklingtonCand,
        stop: &AtomicBool,
    ) -> Verdict {
        if round == 0 {
            return Verdict::one(fermat_base2_secret_or_stop(&cand.n, stop));
        }
        Verdict::one(second_condition(&cand.n, &cand.two_r))
    }
    fn prime(&self, cand: &PocklingtonCand) -> Integer {
        cand.n.clone()
    }
    fn first_round_lanes(&self) -> usize {
        self.first_lanes
    }
    fn first_round_group(
        &self,
        _seed: &Seed,
        _index: &[u64],
        c: &[&PocklingtonCand],
        stop: &AtomicBool,
    ) -> Option<Vec<Verdict>> {
        let ns: Vec<&Integer> = c.iter().map(|c| &c.n).collect();
        first_tests_grouped(&ns, stop)
    }
}

/// Pocklington's second condition for p = 2rq + 1 and the base 2:
/// gcd(2^(2r) − 1, p) = 1, by a constant-time exponentiation
/// (`sec::pow_mod`) and a constant-time inversion that fails exactly when
/// the gcd is not 1 (`ct::inverse_mod_odd`). Only the verdict depends on
/// the values.
pub(crate) fn second_condition(p: &Integer, two_r: &Integer) -> bool {
    let Some(y) = sec::pow_mod(&Integer::from(2u32), two_r, p) else {
        return false;
    };
    // y − 1 over p's limb count with a borrow chain (y ≥ 1: p is odd).
    let len = p.as_limbs().len();
    let mut l: SecretVec<u64> = SecretVec::zeroed(len);
    l[..y.as_limbs().len()].copy_from_slice(y.as_limbs());
    let mut borrow = 1u64;
    for limb in l.iter_mut() {
        let (v, b) = limb.overflowing_sub(borrow);
        *limb = v;
        borrow = u64::from(b);
    }
    let y_minus_1 = Integer::from_digits(&l, rug::integer::Order::Lsf);
    ct::inverse_mod_odd(&y_minus_1, p, p.significant_bits()).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drawn sixteen streams at a time or one by one, the foot and the
    /// Pocklington levels build the same candidates.
    #[test]
    fn batched_candidates_are_the_streams_candidates() {
        let seed = Seed::from_bytes(&[0x3c; 32]).unwrap();
        let q = Integer::from(Integer::ONE << 257u32).next_prime();
        let lo = Integer::from(Integer::ONE << 511u32) + 99u32;
        let mut batched = 0;
        for k in [16u32, 42, 66, 81] {
            let a = FootSource::new(k);
            let mut b = FootSource::new(k);
            batched += a.batches.is_some() as u32;
            b.batches = None;
            let (mut x, mut y) = (Integer::new(), Integer::new());
            for index in 0..200 {
                let (ca, cb) = (
                    a.candidate(&seed, index, &mut x),
                    b.candidate(&seed, index, &mut y),
                );
                assert_eq!(
                    ca.map(|c| c.n),
                    cb.map(|c| c.n),
                    "foot of {k} bits, index {index}"
                );
                assert_eq!(x, y, "foot of {k} bits, index {index}");
            }
        }
        let a = PocklingtonSource::new(512, &lo, q.clone(), Some(65537));
        let mut b = PocklingtonSource::new(512, &lo, q, Some(65537));
        batched += a.batches.is_some() as u32;
        b.batches = None;
        let (mut x, mut y) = (Integer::new(), Integer::new());
        for index in (0..100).chain(1 << 40..(1 << 40) + 40) {
            let ca = a.candidate(&seed, index, &mut x).map(|c| (c.n, c.two_r));
            let cb = b.candidate(&seed, index, &mut y).map(|c| (c.n, c.two_r));
            assert_eq!(ca, cb, "Pocklington level, index {index}");
            assert_eq!(x, y, "Pocklington level, index {index}");
        }
        if crate::secure::rng_wide::available() {
            assert_eq!(batched, 5, "the batches apply to every source here");
        } else {
            crate::capability::skip(
                "avx512",
                "AVX-512F is not in use here (not on this CPU, or not in this build): the candidates' streams are drawn one by one",
            );
        }
    }

    #[test]
    fn chains_end_at_the_foot_and_halve() {
        assert_eq!(chain(256), vec![256, 129, 66]);
        assert_eq!(chain(512), vec![512, 257, 130, 66]);
        assert_eq!(chain(1024), vec![1024, 513, 258, 130, 66]);
        assert_eq!(chain(81), vec![81]);
        assert_eq!(chain(82), vec![82, 42]);
        assert_eq!(chain(8192).len(), 8);
        for k in 82..=8192u32 {
            let c = chain(k);
            assert!(*c.last().unwrap() <= FOOT_BITS && *c.last().unwrap() >= 16);
            for w in c.windows(2) {
                // The prime below exceeds the square root of any number of
                // the size above: q ≥ 2^(m−1) ≥ 2^(k/2).
                assert!(2 * (w[1] - 1) >= w[0], "{k}: {w:?}");
            }
        }
    }

    /// Pocklington's second condition: true for primes p = 2rq + 1 whose
    /// factor q > √p does not divide the order of 2, false where it does
    /// (2^(2r) ≡ 1) and false for every base-2 Fermat pseudoprime n with a
    /// prime factor q > √n of n − 1: the theorem says no composite passes
    /// both conditions, so these must fail here.
    #[test]
    fn second_condition_decides_pocklington() {
        let check = |n: u64, q: u64| {
            assert_eq!((n - 1) % (2 * q), 0, "{n} {q}");
            second_condition(&Integer::from(n), &Integer::from((n - 1) / q))
        };
        for (p, q) in [
            (11u64, 5u64),
            (23, 11),
            (47, 23),
            (1019, 509),
            (1_000_003, 166_667),
        ] {
            assert!(Integer::from(p).is_probably_prime(30) != rug::integer::IsPrime::No);
            assert!(check(p, q), "prime {p} with {q}");
        }
        // Primes for which the base 2 proves nothing with this q.
        for (p, q) in [
            (9719u64, 113u64),
            (11119, 109),
            (13367, 163),
            (43691, 257),
            (61681, 257),
        ] {
            assert!(!check(p, q), "prime {p}: 2^((p-1)/{q}) = 1");
        }
        // Base-2 Fermat pseudoprimes, each with a prime q > √n dividing
        // n − 1.
        for (n, q) in [
            (11305u64, 157u64),
            (13741, 229),
            (13981, 233),
            (18705, 167),
            (23377, 487),
            (30121, 251),
        ] {
            assert_eq!(
                Integer::from(2u32)
                    .pow_mod(&Integer::from(n - 1), &Integer::from(n))
                    .unwrap(),
                1
            );
            assert!(q * q > n);
            assert!(!check(n, q), "pseudoprime {n} passed with {q}");
        }
    }

    /// Checks a chain as a certificate, with GMP's own arithmetic: each
    /// link p = 2rq + 1 with q² > p, 2^(p−1) ≡ 1 and gcd(2^((p−1)/q) − 1,
    /// p) = 1; the foot below 2^81 passing Miller–Rabin to the twelve
    /// bases.
    fn assert_certificate(c: &[Integer]) {
        for w in c.windows(2) {
            let (p, q) = (&w[0], &w[1]);
            let pm1 = Integer::from(p - 1u32);
            assert!(pm1.is_divisible(&Integer::from(q << 1u32)), "{q} ∤ {p} − 1");
            assert!(Integer::from(q.square_ref()) > *p, "{q}² ≤ {p}");
            let two = Integer::from(2u32);
            assert_eq!(two.clone().pow_mod(&pm1, p).unwrap(), 1);
            let y = two.pow_mod(&Integer::from(&pm1 / q), p).unwrap();
            assert_eq!(Integer::from(&y - 1u32).gcd(p), 1, "gcd for {p}");
        }
        let foot = c.last().unwrap();
        assert!(foot.significant_bits() <= FOOT_BITS);
        let m = MrCandidate::new(foot.clone());
        for b in FOOT_BASES {
            assert!(m.round(Integer::from(b), false), "foot {foot} base {b}");
        }
    }

    /// The chains found are certificates of the sizes `chain` gives, the
    /// top prime in [lo, 2^k) with gcd(p − 1, e) = 1, the same at one and
    /// at three threads and on the calling thread, and different for
    /// another seed.
    #[test]
    fn chains_are_certificates_at_any_thread_count() {
        let k = 256;
        let lo = super::super::lower_bound(k, 2);
        let e = 65537u64;
        let run = |seed: u8, threads: u32| {
            // 0: the calling thread as the one worker.
            let pool = crate::threads::Workers::for_test(threads);
            let mut opts = crate::prime::Options::default();
            let seed = Seed::from_bytes(&[seed; 32]).unwrap();
            let mut generation = Generation::new(&pool, seed, &mut opts, 3);
            let mut next: Vec<u64> = (0..8).map(|l| first_index(0, l)).collect();
            let mut slots = [Slot {
                k,
                lo: lo.clone(),
                next: &mut next,
            }];
            let c = primes(&mut generation, &mut slots, e).unwrap().remove(0);
            // The indices moved on past what was found.
            assert!(next
                .iter()
                .enumerate()
                .take(3)
                .all(|(l, &i)| i > first_index(0, l)));
            c
        };
        for s in 0..4u8 {
            let c = run(s, 1);
            assert_eq!(
                c.iter().map(|p| p.significant_bits()).collect::<Vec<_>>(),
                chain(k)
            );
            assert!(c[0] >= lo);
            assert_eq!(Integer::from(&c[0] - 1u32).gcd(&Integer::from(e)), 1);
            assert_certificate(&c);
            assert_eq!(run(s, 3), c, "seed {s}: three threads");
            assert_eq!(run(s, 0), c, "seed {s}: on the calling thread");
            assert_ne!(run(s + 100, 1)[0], c[0]);
        }
    }

    #[test]
    fn div_floor_matches_gmp() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for bits in [1u32, 63, 64, 65, 130, 257, 1025] {
            for dbits in [1u32, 2, 64, 65, 129] {
                for _ in 0..20 {
                    let words: Vec<u64> = (0..bits.div_ceil(64)).map(|_| next()).collect();
                    let a = Integer::from_digits(&words, rug::integer::Order::Lsf).keep_bits(bits);
                    let dw: Vec<u64> = (0..dbits.div_ceil(64)).map(|_| next()).collect();
                    let mut d =
                        Integer::from_digits(&dw, rug::integer::Order::Lsf).keep_bits(dbits);
                    if d == 0 {
                        d = Integer::from(1u32);
                    }
                    let want = Integer::from(&a / &d);
                    assert_eq!(ct::div_floor(&a, &d, bits), want, "{a} / {d}");
                }
            }
        }
    }
}
