//! Trial division by small primes with batched remainders.
//!
//! The odd primes below a bound are grouped into batches whose product fits
//! in 64 bits. One multi-precision remainder per batch (GMP's
//! `mpz_fdiv_ui`, linear in the candidate's size) is followed by cheap
//! 64-bit remainders for each prime of the batch, and the test stops at the
//! first batch that finds a factor. Batches are ordered from the smallest
//! primes up, so most composites are rejected after the first few batches.

use std::sync::OnceLock;

use rug::Integer;

/// The odd primes below `bound`, by a simple sieve of Eratosthenes.
pub fn odd_primes_below(bound: u32) -> Vec<u32> {
    let n = bound as usize;
    let mut composite = vec![false; n.max(2)];
    let mut out = Vec::new();
    let mut i = 3;
    while i < n {
        if !composite[i] {
            out.push(i as u32);
            let mut j = i * i;
            while j < n {
                composite[j] = true;
                j += 2 * i;
            }
        }
        i += 2;
    }
    out
}

/// A group of small primes and their product (< 2^64).
#[derive(Debug, Clone)]
pub struct Batch {
    pub product: u64,
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

/// Trial-division bound for RSA candidates (chosen by measurement: see the
/// README's benchmark section).
pub const RSA_TRIAL_BOUND: u32 = 1 << 14;

/// The batches for [`RSA_TRIAL_BOUND`], built once per process.
pub fn rsa_batches() -> &'static [Batch] {
    static B: OnceLock<Vec<Batch>> = OnceLock::new();
    B.get_or_init(|| batches(&odd_primes_below(RSA_TRIAL_BOUND)))
}

/// Remainder of `n` modulo a 64-bit `d` (GMP `mpz_fdiv_ui`; `n` ≥ 0).
pub fn rem_u64(n: &Integer, d: u64) -> u64 {
    debug_assert!(d != 0 && *n >= 0);
    // SAFETY: `n` is a valid, initialised mpz owned by rug; mpz_fdiv_ui only
    // reads it. c_ulong is 64 bits on the LP64 targets we build for.
    unsafe { gmp_mpfr_sys::gmp::mpz_fdiv_ui(n.as_raw(), d as _) as u64 }
}

/// True if no prime of `batches` divides `n` (for `n` larger than all of
/// them). Stops at the first batch with a factor.
pub fn passes_trial_division(n: &Integer, batches: &[Batch]) -> bool {
    for b in batches {
        let r = rem_u64(n, b.product);
        if b.primes.iter().any(|&p| r % p as u64 == 0) {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let bs = rsa_batches();
        let big_prime = (Integer::from(1u32) << 127u32) - 1u32; // Mersenne prime 2^127 − 1
        assert!(passes_trial_division(&big_prime, bs));
        for f in [3u32, 5, 101, 16381] {
            let n = Integer::from(&big_prime * f);
            assert!(!passes_trial_division(&n, bs), "factor {f}");
        }
        assert_eq!(rem_u64(&Integer::from(1000u32), 7), 1000 % 7);
    }
}
