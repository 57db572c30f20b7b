//! The segmented combined sieve for safe primes.
//!
//! Candidates are p_j = p0 + M·j (j = 0, 1, 2, …) where p0 ≡ a (mod M)
//! fixes the generator convention (M = 24, 60 or 12, see `dh`). Then
//! q_j = (p_j − 1)/2 = q0 + (M/2)·j. For every small odd prime r that does
//! not divide M, p_j ≡ 0 (mod r) exactly when j ≡ −p0·M⁻¹ (mod r), and
//! q_j ≡ 0 (mod r) exactly when p_j ≡ 1, i.e. j ≡ (1 − p0)·M⁻¹ (mod r): two
//! residue classes of j to strike per prime. (Primes dividing M never
//! divide p_j or q_j: the congruence p0 ≡ a was chosen so.)
//!
//! The residues p0 mod r are computed once per search; a segment — W
//! consecutive j — is then sieved with word arithmetic only: its first
//! struck position for each class is (j_class − s·W) mod r. Segments are
//! pure functions of their number, built on first use by whichever worker
//! needs them and shared, so the set of survivors (and hence the search's
//! answer) does not depend on the thread count.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use rug::Integer;

use crate::gmp::rem_u64;
use crate::prime::small::odd_primes_below;

/// Positions per segment: 2^18 bits = 32 KiB, sized for the L1/L2 caches.
pub(crate) const SEGMENT: u64 = 1 << 18;

/// Numbers per chunk of set-up work: finding the primes of the chunk and
/// their residue classes (workers share the chunks).
const CHUNK: u32 = 1 << 18;

#[derive(Clone, Copy)]
struct Class {
    r: u32,
    /// j ≡ jp makes p_j divisible by r; j ≡ jq makes q_j divisible by r.
    jp: u32,
    jq: u32,
}

/// The sieve of one search.
pub(crate) struct Sieve {
    p0: Integer,
    m: u64,
    bound: u32,
    /// Odd primes up to √bound, for sieving the chunks.
    base: Vec<u32>,
    /// Residue classes of the primes in [i·CHUNK, (i+1)·CHUNK) ∩ [3, bound),
    /// computed on first use by the workers together (see
    /// [`Sieve::prepare`]).
    chunks: Vec<OnceLock<Vec<Class>>>,
    next_chunk: AtomicUsize,
    /// Set once every chunk exists: `prepare` is then a single load.
    prepared: AtomicBool,
    segments: Mutex<HashMap<u64, Arc<OnceLock<Vec<u64>>>>>,
}

/// M⁻¹ mod r for M = 2^a·3^b·5^c (every M we use) and a prime r > 5, from
/// the closed forms of 2⁻¹, 3⁻¹ and 5⁻¹ mod r: no extended Euclid per
/// prime (that was the largest part of the set-up cost).
fn inverse_of_m(m: u64, r: u64) -> u64 {
    let inv = |d: u64| -> u64 {
        // The k in 1..d with k·r + 1 ≡ 0 (mod d); then (k·r + 1)/d.
        let k = (1..d)
            .find(|&k| (k * (r % d) + 1) % d == 0)
            .expect("d prime to r");
        (k * r + 1) / d
    };
    let mut out = 1u64;
    let mut rest = m;
    for d in [2u64, 3, 5] {
        if rest % d == 0 {
            let i = inv(d);
            while rest % d == 0 {
                out = out * i % r;
                rest /= d;
            }
        }
    }
    debug_assert_eq!(rest, 1, "M must be 2^a 3^b 5^c");
    out
}

impl Sieve {
    /// Prepares the sieve for p_j = p0 + m·j with all odd primes below
    /// `bound` that do not divide `m`. Cheap: the residues are computed
    /// later, in parallel, by the workers that first need a segment.
    pub(crate) fn new(p0: &Integer, m: u64, bound: u32) -> Sieve {
        let root = (bound as f64).sqrt() as u32 + 2;
        let n_chunks = bound.div_ceil(CHUNK) as usize;
        Sieve {
            p0: p0.clone(),
            m,
            bound,
            base: odd_primes_below(root),
            chunks: (0..n_chunks).map(|_| OnceLock::new()).collect(),
            next_chunk: AtomicUsize::new(0),
            prepared: AtomicBool::new(false),
            segments: Mutex::new(HashMap::new()),
        }
    }

    /// The odd primes in [lo, hi) not dividing M, by a segmented sieve of
    /// Eratosthenes with the base primes.
    fn primes_in(&self, lo: u32, hi: u32) -> Vec<u32> {
        let lo = lo.max(3) | 1; // first odd number ≥ max(lo, 3)
        if lo >= hi {
            return Vec::new();
        }
        // Bit i stands for lo + 2i.
        let n = ((hi - lo) as usize).div_ceil(2);
        let mut composite = vec![0u64; n.div_ceil(64)];
        for &p in &self.base {
            let p = p as u64;
            if p * p >= hi as u64 {
                break;
            }
            // First odd multiple of p that is ≥ max(lo, p²).
            let mut start = (lo as u64).div_ceil(p) * p;
            if start < p * p {
                start = p * p;
            }
            if start % 2 == 0 {
                start += p;
            }
            let mut i = ((start - lo as u64) / 2) as usize;
            while i < n {
                composite[i >> 6] |= 1 << (i & 63);
                i += p as usize;
            }
        }
        (0..n)
            .filter(|&i| composite[i >> 6] >> (i & 63) & 1 == 0)
            .map(|i| lo + 2 * i as u32)
            .filter(|&r| self.m % r as u64 != 0)
            .collect()
    }

    /// Residue classes for chunk `i`: its primes, and p0 mod r through
    /// products of primes below 2^64 (one multi-precision remainder per
    /// product).
    fn compute_chunk(&self, i: usize) -> Vec<Class> {
        let lo = i as u32 * CHUNK;
        let hi = lo.saturating_add(CHUNK).min(self.bound);
        let primes = &self.primes_in(lo, hi)[..];
        let mut out = Vec::with_capacity(primes.len());
        let mut a = 0;
        while a < primes.len() {
            let mut prod = 1u64;
            let mut b = a;
            while b < primes.len() {
                match prod.checked_mul(primes[b] as u64) {
                    Some(x) => {
                        prod = x;
                        b += 1;
                    }
                    None => break,
                }
            }
            let big = rem_u64(&self.p0, prod);
            for &r in &primes[a..b] {
                let r64 = r as u64;
                let pr = big % r64;
                let minv = inverse_of_m(self.m, r64);
                let jp = ((r64 - pr) % r64 * minv) % r64;
                let jq = ((1 + r64 - pr) % r64 * minv) % r64;
                out.push(Class {
                    r,
                    jp: jp as u32,
                    jq: jq as u32,
                });
            }
            a = b;
        }
        out
    }

    /// Makes sure every chunk's classes exist: claims unclaimed chunks
    /// until none is left (so all workers arriving here share the work),
    /// then waits for chunks others are still computing. Returns false,
    /// unprepared, once `stop` is set (the search was cancelled).
    fn prepare(&self, stop: &AtomicBool) -> bool {
        if self.prepared.load(Ordering::Acquire) {
            return true;
        }
        loop {
            if stop.load(Ordering::Relaxed) {
                return false;
            }
            let i = self.next_chunk.fetch_add(1, Ordering::Relaxed);
            if i >= self.chunks.len() {
                break;
            }
            self.chunks[i].get_or_init(|| self.compute_chunk(i));
        }
        for (i, c) in self.chunks.iter().enumerate() {
            if stop.load(Ordering::Relaxed) {
                return false;
            }
            c.get_or_init(|| self.compute_chunk(i));
        }
        self.prepared.store(true, Ordering::Release);
        true
    }

    /// Builds segment `s` (after [`Sieve::prepare`]). Once `stop` is set
    /// it returns early with a bitmap that is not the sieve's: the
    /// cancelled search discards everything it finds.
    fn build(&self, s: u64, stop: &AtomicBool) -> Vec<u64> {
        let words = (SEGMENT / 64) as usize;
        let mut bits = vec![u64::MAX; words];
        let base = s * SEGMENT;
        for chunk in &self.chunks {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            for c in chunk.get().expect("prepared") {
                let r = c.r as u64;
                let b = base % r;
                for class in [c.jp as u64, c.jq as u64] {
                    let mut off = if class >= b { class - b } else { class + r - b };
                    while off < SEGMENT {
                        bits[(off >> 6) as usize] &= !(1u64 << (off & 63));
                        off += r;
                    }
                }
            }
        }
        bits
    }

    /// The survivors of segment `s` as a bitmap (bit i: j = s·W + i).
    /// `None` once `stop` is set before the set-up is complete.
    pub(crate) fn segment(&self, s: u64, stop: &AtomicBool) -> Option<Arc<OnceLock<Vec<u64>>>> {
        // Every worker that gets here helps with the set-up first, rather
        // than waiting for the one building the segment.
        if !self.prepare(stop) {
            return None;
        }
        let cell = {
            let mut map = self.segments.lock().unwrap_or_else(|e| e.into_inner());
            Arc::clone(map.entry(s).or_default())
        };
        cell.get_or_init(|| self.build(s, stop));
        Some(cell)
    }

    /// The smallest j ≥ `k` that survives the sieve; once `stop` is set,
    /// any index ≥ `k` (the cancelled search discards it).
    pub(crate) fn next_viable(&self, k: u64, stop: &AtomicBool) -> u64 {
        let mut s = k / SEGMENT;
        let mut i = k % SEGMENT;
        loop {
            let Some(cell) = self.segment(s, stop) else {
                return k;
            };
            let bits = cell.get().expect("segment built");
            let mut w = (i / 64) as usize;
            let mut word = bits[w] & (u64::MAX << (i % 64));
            loop {
                if word != 0 {
                    return s * SEGMENT + (w as u64) * 64 + word.trailing_zeros() as u64;
                }
                w += 1;
                if w == bits.len() {
                    break;
                }
                word = bits[w];
            }
            s += 1;
            i = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inverse_of_m_is_right() {
        for m in [12u64, 24, 60] {
            for r in odd_primes_below(2000)
                .into_iter()
                .filter(|&r| m % r as u64 != 0)
            {
                let r = r as u64;
                assert_eq!(inverse_of_m(m, r) * (m % r) % r, 1, "{m} {r}");
            }
        }
    }

    #[test]
    fn survivors_are_exactly_the_unstruck_positions() {
        // p0 ≡ 23 mod 24, small numbers: check every position of two
        // segments against direct divisibility of p_j and q_j.
        let p0 = Integer::from(1_000_000_007u64 * 24 + 23);
        let sieve = Sieve::new(&p0, 24, 1 << 10);
        let primes: Vec<u32> = odd_primes_below(1 << 10)
            .into_iter()
            .filter(|&r| r != 3)
            .collect();
        let mut k = 0u64;
        let mut expected = Vec::new();
        for j in 0..2 * SEGMENT {
            let p = Integer::from(&p0 + 24 * j);
            let q: Integer = Integer::from(&p - 1u32) >> 1u32;
            let ok = primes
                .iter()
                .all(|&r| !p.is_divisible_u(r) && !q.is_divisible_u(r));
            if ok {
                expected.push(j);
            }
        }
        let mut got = Vec::new();
        while k < 2 * SEGMENT {
            let v = sieve.next_viable(k, &AtomicBool::new(false));
            if v >= 2 * SEGMENT {
                break;
            }
            got.push(v);
            k = v + 1;
        }
        assert_eq!(got, expected);
        assert!(got.len() > 1000);
    }
}
