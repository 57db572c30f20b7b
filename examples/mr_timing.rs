//! Does a Miller–Rabin round on a secret candidate reveal s = v2(p − 1)?
//! Interleaved timing of one round on primes p = k·2^s + 1 with s = 1 and
//! s = 32 (same size), for the constant-time round (`secret = true`, used
//! on RSA candidates) and, as a control that the measurement can see a
//! difference, the variable-time round (`secret = false`, DH and checks).
//!
//!     cargo run --release --example mr_timing -- [BITS] [ROUNDS]
//!
//! Prints mean, median and standard deviation per case in microseconds and
//! the ratio s=32 / s=1. SECURITY.md quotes its figures.
use std::time::Instant;

use primeforge::prime::mr::MrCandidate;
use rug::integer::IsPrime;
use rug::Integer;

/// A prime of `bits` bits with v2(p − 1) exactly `s`, from a fixed walk.
fn prime_with_s(bits: u32, s: u32, start: u64) -> Integer {
    let mut k = (Integer::from(start) << (bits - s - 64)) | 1u32;
    k.set_bit(bits - s - 1, true);
    loop {
        let p = (Integer::from(&k << s)) + 1u32;
        if p.is_probably_prime(40) != IsPrime::No {
            return p;
        }
        k += 2u32;
    }
}

fn stats(v: &mut [f64]) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (v.len() - 1) as f64;
    (mean, v[v.len() / 2], var.sqrt())
}

fn main() {
    primeforge::gmp::init();
    let mut args = std::env::args().skip(1);
    let bits: u32 = args.next().map_or(1024, |a| a.parse().expect("bits"));
    let rounds: usize = args.next().map_or(400, |a| a.parse().expect("rounds"));
    let primes = [
        (1u32, prime_with_s(bits, 1, 0x9e37_79b9_7f4a_7c15)),
        (32, prime_with_s(bits, 32, 0x9e37_79b9_7f4a_7c15)),
    ];
    for (s, p) in &primes {
        assert_eq!(Integer::from(p - 1u32).find_one(0), Some(*s));
    }
    let cands: Vec<MrCandidate> = primes
        .iter()
        .map(|(_, p)| MrCandidate::new(p.clone()))
        .collect();
    let base = Integer::from(0x1234_5678_9abc_def1u64);
    println!("Miller–Rabin round on {bits}-bit primes, {rounds} interleaved rounds per case");
    println!("| round | s | mean µs | median µs | sd µs |");
    println!("|---|---|---|---|---|");
    for secret in [true, false] {
        let mut times = [Vec::with_capacity(rounds), Vec::with_capacity(rounds)];
        for _ in 0..rounds {
            for (i, c) in cands.iter().enumerate() {
                let t = Instant::now();
                assert!(c.round(base.clone(), secret));
                times[i].push(t.elapsed().as_secs_f64() * 1e6);
            }
        }
        let mut means = [0.0; 2];
        for (i, (s, _)) in primes.iter().enumerate() {
            let (mean, median, sd) = stats(&mut times[i]);
            means[i] = mean;
            let kind = if secret {
                "constant-time"
            } else {
                "variable-time"
            };
            println!("| {kind} | {s} | {mean:.1} | {median:.1} | {sd:.1} |");
        }
        println!(
            "| {} | ratio s=32/s=1 | {:.3} | | |",
            if secret {
                "constant-time"
            } else {
                "variable-time"
            },
            means[1] / means[0]
        );
    }
}
