//! What one group of trial division costs when a candidate walks the whole
//! table (as every survivor does): the table for 1024-bit candidates
//! (RSA-2048's primes) at bounds 2^10 … 2^17, timed on 64 primes, which
//! pass every group. A cost per group that does not grow with the table
//! says the walk is bound by arithmetic, not by reading the table.
//!
//!     cargo run --release --example trial_walk
use std::time::Instant;

use primeforge::prime::small::TrialTable;
use rug::Integer;

fn main() {
    primeforge::gmp::init();
    let mut primes = Vec::new();
    let mut x = Integer::from(Integer::ONE << 1023u32) + 12345u32;
    for _ in 0..64 {
        x = x.next_prime();
        primes.push(x.clone());
        x += 2u32;
    }
    for log2 in 10u32..=17 {
        let table = TrialTable::new(16, 1 << log2);
        let reps = 200;
        let mut best = f64::MAX;
        for _ in 0..5 {
            let start = Instant::now();
            let mut passed = 0u32;
            for _ in 0..reps {
                for p in &primes {
                    passed += table.passes(p) as u32;
                }
            }
            assert_eq!(passed, reps * primes.len() as u32, "a prime failed");
            best = best.min(start.elapsed().as_secs_f64() / (reps * primes.len() as u32) as f64);
        }
        let groups = table.batch_count().div_ceil(8);
        println!(
            "bound 2^{log2}: {} batches in {groups} groups, a full walk {:.2} us, {:.1} ns per group (best of 5)",
            table.batch_count(),
            best * 1e6,
            best * 1e9 / groups as f64
        );
    }
}
