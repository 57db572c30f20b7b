//! Trial division by small primes with batched remainders.
//!
//! The odd primes below a bound are grouped into batches whose product fits
//! in 64 bits. One multi-precision remainder per batch (GMP's
//! `mpz_fdiv_ui`, linear in the candidate's size) is followed by cheap
//! 64-bit remainders for each prime of the batch, and the test stops at the
//! first batch that finds a factor. Batches are ordered from the smallest
//! primes up, so most composites are rejected after the first few batches.

use std::sync::{Arc, Mutex, OnceLock};

use rug::Integer;
use zeroize::Zeroize;

use crate::arith::{dot, inverse_mod_2_64};
use crate::gmp::rem_u64;

/// The odd primes below `bound`, by a sieve of Eratosthenes over the odd
/// numbers only, one bit each (2^24 needs 1 MiB of scratch).
pub fn odd_primes_below(bound: u32) -> Vec<u32> {
    // Bit i stands for 2i + 1.
    let n = (bound as usize).div_ceil(2);
    let mut composite = vec![0u64; n.div_ceil(64).max(1)];
    let mut out = Vec::with_capacity(if bound > 16 {
        (1.3 * bound as f64 / (bound as f64).ln()) as usize
    } else {
        8
    });
    for i in 1..n {
        if composite[i >> 6] >> (i & 63) & 1 == 1 {
            continue;
        }
        let p = 2 * i + 1;
        out.push(p as u32);
        let mut j = (p * p) / 2; // index of p², the first odd multiple to strike
        while j < n {
            composite[j >> 6] |= 1 << (j & 63);
            j += p;
        }
    }
    out
}

/// A group of small primes and their product (< 2^64).
#[derive(Debug, Clone)]
pub struct Batch {
    /// The product of the batch's primes (below 2^56).
    pub product: u64,
    /// The primes.
    pub primes: Vec<u32>,
}

/// Groups `primes` (ascending) into batches whose products fit in 64 bits.
pub fn batches(primes: &[u32]) -> Vec<Batch> {
    let mut out = Vec::new();
    let mut cur = Batch {
        product: 1,
        primes: Vec::new(),
    };
    for &p in primes {
        match cur.product.checked_mul(p as u64) {
            Some(prod) => {
                cur.product = prod;
                cur.primes.push(p);
            }
            None => {
                out.push(std::mem::replace(
                    &mut cur,
                    Batch {
                        product: p as u64,
                        primes: vec![p],
                    },
                ));
            }
        }
    }
    if !cur.primes.is_empty() {
        out.push(cur);
    }
    out
}

/// Trial-division bound for RSA prime candidates of `prime_bits` bits.
///
/// Chosen by measurement (`cargo run --release --example trial_bound`):
/// a bigger bound rejects more composites before their first
/// exponentiation (survivors fall like 1/ln B, Mertens) but makes the full
/// pass that every survivor pays longer (linear in the number of primes).
/// The modelled cost per prime is flat within a few percent around the
/// minimum, where the table sits (the measured model costs per bound are
/// in docs/measurements/benchmarks-archive.md, "Design measurements").
/// RSA-4096's primes took 2^18 until trial division's vector pass made
/// the IFMA engine's pass cheap and its table outgrew a core's cache:
/// there 2^17 makes keys about 8 % faster (Intel Xeon, 2026-12-05), and
/// without IFMA the model differs by 1 % between the two.
///
/// | prime size | bound |
/// |---|---|
/// | < 384 bits | 2^12 |
/// | < 768 bits | 2^14 |
/// | < 1280 bits (RSA-2048) | 2^16 |
/// | < 1792 bits (RSA-3072) | 2^17 |
/// | < 3072 bits (RSA-4096) | 2^17 |
/// | larger | 2^20 |
pub fn rsa_trial_bound(prime_bits: u32) -> u32 {
    match prime_bits {
        0..=383 => 1 << 12,
        384..=767 => 1 << 14,
        768..=1279 => 1 << 16,
        1280..=1791 => 1 << 17,
        1792..=3071 => 1 << 17,
        _ => 1 << 20,
    }
}

/// True if no prime of `batches` divides `n` (for `n` larger than all of
/// them). Stops at the first batch with a factor. Slow path, kept for
/// cross-checking [`TrialTable`].
pub fn passes_trial_division(n: &Integer, batches: &[Batch]) -> bool {
    for b in batches {
        let r = rem_u64(n, b.product);
        if b.primes.iter().any(|&p| r % p as u64 == 0) {
            return false;
        }
    }
    true
}

/// A number below 2^64 congruent to s·2^-64 modulo the odd d (d < 2^56,
/// s < 255·2^64·d): one Montgomery step, no division. With s = h·2^64 + l
/// and t = l·(−d⁻¹) mod 2^64, l + t·d ≡ 0 (mod 2^64), so (s + t·d)/2^64 =
/// h + ⌊t·d / 2^64⌋ + [l ≠ 0] ≤ 256·d − 1 < 2^64. A prime p dividing d divides s
/// exactly when it divides the result (2^64 is a unit modulo d).
#[inline]
fn montgomery_rem(s: u128, d: u64, neg_inv: u64) -> u64 {
    let (h, l) = ((s >> 64) as u64, s as u64);
    let t = l.wrapping_mul(neg_inv);
    h + ((t as u128 * d as u128) >> 64) as u64 + (l != 0) as u64
}

/// Batch products d stay below 2^56 so that a sum of up to 255 products
/// limb × weight (each < 2^64 · d) fits in 128 bits and its Montgomery
/// remainder ([`montgomery_rem`], below 256·d) in 64.
const TABLE_PRODUCT_LIMIT: u64 = 1 << 56;
/// Most limbs a candidate may have for a table (16320-bit numbers).
pub const TABLE_MAX_LIMBS: usize = 255;

/// Trial division by all odd primes below a bound for numbers of at most
/// `limbs` 64-bit limbs, with no multi-precision division at all.
///
/// The primes are grouped into batches with product d < 2^56. For each
/// batch the table holds w_j = 2^(64·j) mod d for every limb position j, so
/// n ≡ Σ n_j · w_j (mod d): one multiply-add per limb into a 128-bit sum
/// (two sums side by side, [`dot`]), then one Montgomery step to a word r ≡
/// n·2^-64 (mod d) ([`montgomery_rem`]: no division; 2^-64 changes no
/// prime's divisibility). Divisibility of r by each prime p of the batch is
/// then the multiply-and-compare test of Granlund and Montgomery: p | r iff
/// r · p⁻¹ mod 2^64 ≤ ⌊(2^64 − 1)/p⌋.
/// Batches run from the smallest primes up and the test stops at the first
/// factor, so most composites cost one or two batches.
///
/// The arrays are kept once per CPU that walks them (by `sched_getcpu`,
/// copied on a CPU's first use, at most [`REPLICA_BYTES`] in all): on the
/// 2-vCPU Intel machine of docs/measurements/2026-12-05-trial-table-per-cpu.md,
/// threads of one process walking one shared copy took about half as long
/// again per pass as threads each walking their own (two one-thread
/// processes do not slow each other down), which cost 4–5 % of the CPU
/// time of a two-thread RSA-3072 key, and 6–8 % when two one-thread keys
/// were made at once.
pub struct TrialTable {
    limbs: usize,
    bound: u32,
    /// The CPU the table was built on: its replica is the first one.
    home: usize,
    /// One copy of the arrays per CPU index (modulo their number).
    replicas: Box<[OnceLock<Box<Arrays>>]>,
}

/// A table's read-only arrays.
#[derive(Clone)]
struct Arrays {
    products: Vec<u64>,
    /// −d⁻¹ mod 2^64 per batch product d.
    neg_inv: Vec<u64>,
    /// Index into `tests` where each batch's primes end.
    ends: Vec<u32>,
    /// (p⁻¹ mod 2^64, ⌊(2^64 − 1)/p⌋) per prime.
    tests: Vec<(u64, u64)>,
    /// `limbs` weights per batch.
    weights: Vec<u64>,
    /// With AVX-512 IFMA (batch products below 2^52): the batches in
    /// groups of eight as `arith::lanes::no_factor` walks them (per
    /// 52-bit digit j of a candidate the eight weights 2^(52j) mod d, the
    /// products, their inverses and the primes' tests, lane by lane; see
    /// `arith::lanes::group_words`); empty otherwise.
    wide: Vec<u64>,
    /// Where each group of `wide` ends.
    wide_ends: Vec<u32>,
    /// The lanes of the last group that hold a batch.
    last_valid: u8,
    /// A candidate's 52-bit digits for `wide` (0 when it is empty).
    digits: usize,
}

impl Arrays {
    fn bytes(&self) -> usize {
        8 * (self.products.len() + self.neg_inv.len() + self.weights.len() + self.wide.len())
            + 4 * (self.ends.len() + self.wide_ends.len())
            + 16 * self.tests.len()
    }
}

/// The most memory all replicas of one table take together (RSA-8192's
/// table, 19 MiB, is kept at most three times; one larger than 32 MiB
/// once).
pub const REPLICA_BYTES: usize = 64 << 20;

/// The CPU this thread runs on, 0 where the system cannot say.
fn this_cpu() -> usize {
    crate::secure::os::current_cpu().unwrap_or(0)
}

/// How many CPU indices the system may hand out (asked once).
fn cpu_slots() -> usize {
    static SLOTS: OnceLock<usize> = OnceLock::new();
    *SLOTS.get_or_init(crate::secure::os::cpu_slots)
}

impl TrialTable {
    /// Builds the table (cost: one 128-bit remainder per batch and limb).
    pub fn new(limbs: usize, bound: u32) -> TrialTable {
        assert!((1..=TABLE_MAX_LIMBS).contains(&limbs));
        Self::build(limbs, bound, crate::arith::ifma::available())
    }

    /// [`TrialTable::new`], with the IFMA dot products when `wide` (and
    /// the candidate fits 160 digits of 52 bits).
    fn build(limbs: usize, bound: u32, wide: bool) -> TrialTable {
        let digits = (64 * limbs).div_ceil(52);
        let wide = wide && digits <= WIDE_MAX_DIGITS;
        // The multiply-adds take 52-bit operands: weights below 2^52.
        let limit = if wide { 1 << 52 } else { TABLE_PRODUCT_LIMIT };
        let primes = odd_primes_below(bound);
        let mut products = Vec::new();
        let mut ends = Vec::new();
        let mut tests = Vec::with_capacity(primes.len());
        let mut cur = 1u64;
        for &p in &primes {
            let p = p as u64;
            if cur > 1 && cur.saturating_mul(p) >= limit {
                products.push(cur);
                ends.push(tests.len() as u32);
                cur = 1;
            }
            cur *= p;
            tests.push((inverse_mod_2_64(p), u64::MAX / p));
        }
        if cur > 1 {
            products.push(cur);
            ends.push(tests.len() as u32);
        }
        let mut weights = Vec::with_capacity(products.len() * limbs);
        for &d in &products {
            let mut w = 1u64 % d;
            for _ in 0..limbs {
                weights.push(w);
                w = (((w as u128) << 64) % d as u128) as u64;
            }
        }
        let (mut wide_words, mut wide_ends, mut last_valid) = (Vec::new(), Vec::new(), 0u8);
        if wide {
            for (g, group) in products.chunks(LANES).enumerate() {
                let end_of = |i: usize| ends[i] as usize;
                let start_of = |i: usize| if i == 0 { 0 } else { end_of(i - 1) };
                let batches = g * LANES..g * LANES + group.len();
                let slots = batches
                    .clone()
                    .map(|i| end_of(i) - start_of(i))
                    .max()
                    .unwrap_or(0);
                let base = wide_words.len();
                wide_words.resize(base + crate::arith::lanes::group_words(digits, slots), 0);
                let word = &mut wide_words[base..];
                for (l, (i, &d)) in batches.zip(group).enumerate() {
                    let mut w = 1u64 % d;
                    for j in 0..digits {
                        word[j * LANES + l] = w;
                        w = (((w as u128) << 52) % d as u128) as u64;
                    }
                    word[digits * LANES + l] = d;
                    word[(digits + 1) * LANES + l] =
                        inverse_mod_2_64(d).wrapping_neg() & ((1 << 52) - 1);
                    for p in 0..slots {
                        let (inv, lim) = if start_of(i) + p < end_of(i) {
                            tests[start_of(i) + p]
                        } else {
                            (1, 0)
                        };
                        word[(digits + 2 + 2 * p) * LANES + l] = inv;
                        word[(digits + 3 + 2 * p) * LANES + l] = lim;
                    }
                }
                // Lanes without a batch (the last group only): d = 1 and no
                // test that fires but on r = 0, masked by `last_valid`.
                for l in group.len()..LANES {
                    word[digits * LANES + l] = 1;
                    for p in 0..slots {
                        word[(digits + 2 + 2 * p) * LANES + l] = 1;
                    }
                }
                last_valid = ((1u16 << group.len()) - 1) as u8;
                wide_ends.push(wide_words.len() as u32);
            }
        }
        let arrays = Arrays {
            wide: wide_words,
            wide_ends,
            last_valid,
            digits: if wide { digits } else { 0 },
            neg_inv: products
                .iter()
                .map(|&d| inverse_mod_2_64(d).wrapping_neg())
                .collect(),
            products,
            ends,
            tests,
            weights,
        };
        let count = (REPLICA_BYTES / arrays.bytes().max(1)).clamp(1, cpu_slots());
        let replicas: Box<[OnceLock<Box<Arrays>>]> = (0..count).map(|_| OnceLock::new()).collect();
        let home = this_cpu() % count;
        let _ = replicas[home].set(Box::new(arrays));
        TrialTable {
            limbs,
            bound,
            home,
            replicas,
        }
    }

    /// The shared table for (`limbs`, `bound`), built on first use and kept
    /// for the life of the process (its replicas included: at most
    /// [`REPLICA_BYTES`] per table).
    pub fn shared(limbs: usize, bound: u32) -> Arc<TrialTable> {
        static CACHE: Mutex<Vec<Arc<TrialTable>>> = Mutex::new(Vec::new());
        let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = cache.iter().find(|t| t.limbs == limbs && t.bound == bound) {
            return Arc::clone(t);
        }
        let t = Arc::new(TrialTable::new(limbs, bound));
        cache.push(Arc::clone(&t));
        t
    }

    /// The bound: every odd prime below it is tested.
    pub fn bound(&self) -> u32 {
        self.bound
    }

    /// Number of batches (the length of a survivor's full pass).
    pub fn batch_count(&self) -> usize {
        self.arrays().products.len()
    }

    /// This CPU's copy of the arrays (made now if it has none).
    fn arrays(&self) -> &Arrays {
        let i = if self.replicas.len() == 1 {
            0
        } else {
            this_cpu() % self.replicas.len()
        };
        self.replicas[i].get_or_init(|| {
            let home = self.replicas[self.home].get();
            Box::new(Arrays::clone(
                home.expect("the home replica is set at build"),
            ))
        })
    }

    /// How many CPUs' copies exist now.
    #[cfg(test)]
    fn replicas_made(&self) -> usize {
        self.replicas.iter().filter(|r| r.get().is_some()).count()
    }

    /// True if no odd prime below the bound divides `n` (n ≥ 0, larger than
    /// the bound, with at most `limbs` limbs).
    pub fn passes(&self, n: &Integer) -> bool {
        let digits = n.as_limbs();
        assert!(
            digits.len() <= self.limbs,
            "candidate larger than the table"
        );
        let a = self.arrays();
        if a.digits > 0 {
            if let Some(v) = Self::passes_wide(a, digits) {
                return v;
            }
        }
        let mut start = 0usize;
        for (i, w) in a.weights.chunks_exact(self.limbs).enumerate() {
            let r = montgomery_rem(dot(digits, w), a.products[i], a.neg_inv[i]);
            let end = a.ends[i] as usize;
            for &(inv, lim) in &a.tests[start..end] {
                if r.wrapping_mul(inv) <= lim {
                    return false;
                }
            }
            start = end;
        }
        true
    }
}

impl TrialTable {
    /// [`TrialTable::passes`] eight batches at a time on AVX-512 IFMA
    /// (`arith::lanes::no_factor`): remainders that differ from the word
    /// pass's by a unit factor (2^-52 against 2^-64), so the same verdict.
    /// `None` where the CPU has no IFMA.
    fn passes_wide(a: &Arrays, limbs: &[u64]) -> Option<bool> {
        let mut x = [0u64; WIDE_MAX_DIGITS];
        let v = Self::passes_wide_in(a, limbs, &mut x);
        // The candidate's digits: wiped here, not left to the stack wipe.
        x.zeroize();
        v
    }

    /// [`TrialTable::passes_wide`] with the candidate's digits in `x`.
    fn passes_wide_in(a: &Arrays, limbs: &[u64], x: &mut [u64; WIDE_MAX_DIGITS]) -> Option<bool> {
        let k = a.digits;
        crate::arith::ifma::digits_into(limbs, k, x);
        crate::arith::lanes::no_factor(&x[..k], &a.wide, &a.wide_ends, a.last_valid)
    }
}

/// Batches `arith::lanes::no_factor` takes at once.
const LANES: usize = crate::arith::lanes::LANES;

/// The most 52-bit digits a candidate may have for the IFMA dot products
/// (8320 bits, RSA-16384's primes).
const WIDE_MAX_DIGITS: usize = 160;

#[cfg(test)]
mod tests {
    use super::*;

    /// The Montgomery step's word is congruent to s·2^-64 modulo d and
    /// below 256·d, up to the largest sum a 255-limb table can make.
    #[test]
    fn montgomery_rem_is_congruent_and_small() {
        let mut ds = vec![3u64, 3 * 5 * 7 * 11 * 13, (1 << 56) - 1, (1 << 56) - 3];
        ds.extend(TrialTable::new(1, 1 << 18).arrays().products.clone());
        for d in ds {
            let inv = inverse_mod_2_64(d).wrapping_neg();
            let top = 255 * (u64::MAX as u128) * (d - 1) as u128;
            let b64 = (1u128 << 64) % d as u128;
            for s in [
                0,
                1,
                d as u128,
                top,
                top - 1,
                top / 3,
                u64::MAX as u128,
                1u128 << 64,
            ] {
                let r = montgomery_rem(s, d, inv);
                assert!((r as u128) < 256 * d as u128, "d = {d}, s = {s}");
                assert_eq!(
                    r as u128 % d as u128 * b64 % d as u128,
                    s % d as u128,
                    "d = {d}, s = {s}"
                );
            }
        }
    }

    /// Every CPU a thread walks the table on gets its own copy of the
    /// arrays, made on first use there, and every copy gives the same
    /// answers as the slow path.
    #[test]
    fn each_cpu_walks_its_own_copy() {
        let bs = batches(&odd_primes_below(1 << 16));
        let big_prime = (Integer::from(1u32) << 521u32) - 1u32; // 2^521 − 1 is prime
        let inputs: Vec<Integer> = [1u32, 3, 65521, 65519 * 65521]
            .iter()
            .map(|&f| Integer::from(&big_prime * f))
            .collect();
        let t = TrialTable::new(9, 1 << 16);
        assert_eq!(
            t.replicas_made(),
            1,
            "only the building CPU's copy exists at first"
        );
        // A thread of its own, so the affinity changes end with it.
        let pinned = std::thread::scope(|s| {
            s.spawn(|| {
                let mut pinned = Vec::new();
                for cpu in 0..cpu_slots().min(64) {
                    if !crate::secure::os::pin_to_cpu(cpu) {
                        continue;
                    }
                    assert_eq!(this_cpu(), cpu, "sched_getcpu names the pinned CPU");
                    pinned.push(cpu % t.replicas.len());
                    for n in &inputs {
                        assert_eq!(t.passes(n), passes_trial_division(n, &bs), "CPU {cpu}");
                    }
                }
                pinned
            })
            .join()
            .unwrap()
        });
        let mut distinct = pinned.clone();
        distinct.push(t.home);
        distinct.sort_unstable();
        distinct.dedup();
        assert!(!pinned.is_empty(), "no CPU could be pinned");
        assert_eq!(t.replicas_made(), distinct.len(), "pinned to {pinned:?}");
        if distinct.len() < 2 {
            crate::capability::skip("cores", "one CPU only: no second copy could be made");
        }
    }

    #[test]
    fn sieve_is_right() {
        assert_eq!(odd_primes_below(30), vec![3, 5, 7, 11, 13, 17, 19, 23, 29]);
        assert_eq!(odd_primes_below(1 << 14).len(), 1899); // pi(16384) = 1900, minus 2
    }

    #[test]
    fn batches_cover_all_primes_and_fit() {
        let primes = odd_primes_below(1 << 14);
        let bs = batches(&primes);
        let flat: Vec<u32> = bs.iter().flat_map(|b| b.primes.clone()).collect();
        assert_eq!(flat, primes);
        for b in &bs {
            let prod = b.primes.iter().fold(1u128, |a, &p| a * p as u128);
            assert_eq!(prod, b.product as u128);
        }
        assert_eq!(bs[0].primes[..3], [3, 5, 7]);
    }

    #[test]
    fn trial_division_finds_small_factors() {
        let bs = batches(&odd_primes_below(1 << 14));
        let big_prime = (Integer::from(1u32) << 127u32) - 1u32; // Mersenne prime 2^127 − 1
        assert!(passes_trial_division(&big_prime, &bs));
        for f in [3u32, 5, 101, 16381] {
            let n = Integer::from(&big_prime * f);
            assert!(!passes_trial_division(&n, &bs), "factor {f}");
        }
        assert_eq!(rem_u64(&Integer::from(1000u32), 7), 1000 % 7);
    }

    /// Steps the LCG state `x` and returns it as an odd number of exactly
    /// `limbs` limbs (test data).
    fn next_odd(x: &mut Integer, limbs: usize) -> Integer {
        *x = (Integer::from(&*x * 6_364_136_223_846_793_005u64) + 1_442_695_040_888_963_407u64)
            .keep_bits(64 * limbs as u32);
        let mut n = Integer::from(&*x | 1u32);
        n.set_bit(64 * limbs as u32 - 1, true);
        n
    }

    #[test]
    fn table_agrees_with_gmp_remainders() {
        // Random-looking numbers of several sizes, with and without small
        // factors planted: the table and the slow path must agree.
        let mut x = Integer::from(0x9e37_79b9_7f4a_7c15u64);
        for limbs in [1usize, 2, 16, 17, 32, 64] {
            let t = TrialTable::new(limbs, 1 << 16);
            let slow = batches(&odd_primes_below(1 << 16));
            let mut agree_pass = 0;
            for i in 0..400u32 {
                let mut n = next_odd(&mut x, limbs);
                if i % 3 == 0 {
                    // Plant the largest prime below 2^16 (odd × odd is odd).
                    n = Integer::from(&n >> 17u32) | 1u32;
                    n *= 65_521u32;
                }
                let fast = t.passes(&n);
                assert_eq!(fast, passes_trial_division(&n, &slow), "{n}");
                agree_pass += fast as u32;
            }
            assert!(agree_pass > 0 || limbs == 1);
        }
    }

    /// The largest sums (every limb all ones) up to the table's 256 limbs:
    /// the table agrees with the slow path.
    #[test]
    fn table_agrees_at_the_largest_sums() {
        let slow = batches(&odd_primes_below(1 << 12));
        for limbs in [32usize, 128, 129, TABLE_MAX_LIMBS] {
            let t = TrialTable::new(limbs, 1 << 12);
            let top = (Integer::from(1u32) << (64 * limbs as u32)) - 1u32;
            let mut passed = 0;
            for j in 0..300u32 {
                let n = Integer::from(&top - 2 * j);
                let fast = t.passes(&n);
                assert_eq!(
                    fast,
                    passes_trial_division(&n, &slow),
                    "{limbs} limbs, j = {j}"
                );
                passed += fast as u32;
            }
            assert!(
                passed > 0,
                "{limbs} limbs: nothing passed, the test is vacuous"
            );
        }
    }

    /// With AVX-512 IFMA the table takes eight batches' dot products at a
    /// time; its verdicts are the word-by-word pass's and the slow path's,
    /// on random numbers with and without planted factors and on the
    /// largest sums, at every size up to RSA-16384's primes.
    #[test]
    fn the_wide_pass_agrees_with_the_word_pass() {
        if !crate::arith::ifma::available() {
            crate::capability::skip(
                "ifma",
                "no AVX-512 IFMA on this CPU: the wide trial-division pass is not exercised",
            );
            return;
        }
        let mut x = Integer::from(0x2545_f491_4f6c_dd1du64);
        for (limbs, bound) in [
            (4usize, 1u32 << 12),
            (8, 1 << 14),
            (16, 1 << 16),
            (17, 1 << 16),
            (48, 1 << 18),
            (128, 1 << 20),
        ] {
            let wide = TrialTable::build(limbs, bound, true);
            let word = TrialTable::build(limbs, bound, false);
            assert!(wide.arrays().digits > 0 && word.arrays().digits == 0);
            let primes = odd_primes_below(bound);
            let slow = batches(&primes);
            let top = (Integer::from(1u32) << (64 * limbs as u32)) - 1u32;
            let mut passed = 0;
            for i in 0..300u32 {
                let mut n = next_odd(&mut x, limbs);
                match i % 4 {
                    // A planted prime from anywhere in the table.
                    0 => {
                        let p = primes[(i as usize * 7919) % primes.len()];
                        n = Integer::from(&n >> 21u32) | 1u32;
                        n *= p;
                    }
                    // The largest sums.
                    1 => n = Integer::from(&top - 2 * i),
                    // A planted prime of the last batches (the wide pass's
                    // last group, part of whose lanes hold no batch).
                    2 => {
                        let p = primes[primes.len() - 1 - (i as usize / 4) % 40];
                        n = Integer::from(&n >> 21u32) | 1u32;
                        n *= p;
                    }
                    _ => {}
                }
                let v = wide.passes(&n);
                assert_eq!(v, word.passes(&n), "{limbs} limbs: {n:#x}");
                if limbs <= 64 {
                    assert_eq!(v, passes_trial_division(&n, &slow), "{limbs} limbs: {n:#x}");
                }
                passed += v as u32;
            }
            assert!(passed > 0, "{limbs} limbs: nothing passed");
        }
    }

    #[test]
    fn table_rejects_each_prime_and_accepts_primes() {
        let t = TrialTable::new(4, 1 << 14);
        let m127 = (Integer::from(1u32) << 127u32) - 1u32;
        assert!(t.passes(&m127));
        for p in odd_primes_below(1 << 14) {
            assert!(!t.passes(&Integer::from(&m127 * p)), "{p}");
        }
        assert!(t.passes(&Integer::from(&m127 * 16411u32))); // first prime above 2^14
    }
}
