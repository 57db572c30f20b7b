//! Does a Miller–Rabin round on a secret candidate reveal s = v2(p − 1)?
//! Interleaved timing of one round on a prime with s = 1, one with s = 32
//! (same size) and a second prime with s = 1 as a control, for the
//! constant-time round (`secret = true`, used on RSA candidates), the
//! variable-time round (`secret = false`, DH and checks) and the secret
//! round as it was before (GMP's `mpz_powm_sec`, whose time follows the
//! exponent's length, then s − 1 squarings), which shows the measurement
//! can see a dependence on s.
//!
//!     cargo run --release --example mr_timing -- [BITS] [ROUNDS]
//!
//! Prints mean, median and standard deviation per case in microseconds,
//! then each prime paired with the first s = 1 prime: the median of the
//! paired differences and the share of pairs in which it was slower (a
//! sign test: 50 % ± 100/√ROUNDS % at 2σ when the time does not depend on
//! the prime). SECURITY.md quotes its figures.
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

/// Paired comparison of `b` against `a` (same iterations): the median
/// difference in µs and the share of pairs in which `b` was slower.
fn paired(a: &[f64], b: &[f64]) -> (f64, f64) {
    let mut d: Vec<f64> = b.iter().zip(a).map(|(y, x)| y - x).collect();
    let slower = d.iter().filter(|&&x| x > 0.0).count() as f64 / d.len() as f64;
    let (_, median, _) = stats(&mut d);
    (median, 100.0 * slower)
}

fn main() {
    primeforge::gmp::init();
    let mut args = std::env::args().skip(1);
    let bits: u32 = args.next().map_or(1024, |a| a.parse().expect("bits"));
    let rounds: usize = args.next().map_or(400, |a| a.parse().expect("rounds"));
    // Two primes with s = 1 and one with s = 32: the second s = 1 prime is
    // the control, showing how much two moduli differ when s does not.
    let primes = [
        (1u32, prime_with_s(bits, 1, 0x9e37_79b9_7f4a_7c15)),
        (32, prime_with_s(bits, 32, 0x9e37_79b9_7f4a_7c15)),
        (1, prime_with_s(bits, 1, 0x1234_5678_9abc_def1)),
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
    println!("| round | prime | mean µs | median µs | sd µs |");
    println!("|---|---|---|---|---|");
    // The secret round before issue 10: mpz_powm_sec(b, d) and s − 1
    // squarings with a GMP remainder each.
    let old_round = |c: &MrCandidate| {
        let mut x = base.clone().secure_pow_mod(&c.d, &c.n);
        let mut pass = x == 1u32 || x == c.n_minus_1;
        for _ in 1..c.s {
            x.square_mut();
            x %= &c.n;
            pass |= x == c.n_minus_1;
        }
        pass
    };
    let mut comparisons = Vec::new();
    for kind in ["constant-time", "variable-time", "before (powm_sec)"] {
        let mut times: Vec<Vec<f64>> = (0..3).map(|_| Vec::with_capacity(rounds)).collect();
        for r in 0..rounds {
            // Rotate which prime goes first, so that an order effect
            // (caches, frequency) falls on all alike.
            for step in 0..3 {
                let i = (step + r) % 3;
                let c = &cands[i];
                let t = Instant::now();
                let pass = match kind {
                    "constant-time" => c.round(base.clone(), true),
                    "variable-time" => c.round(base.clone(), false),
                    _ => old_round(c),
                };
                times[i].push(t.elapsed().as_secs_f64() * 1e6);
                assert!(pass);
            }
        }
        let (d_s, slower_s) = paired(&times[0], &times[1]);
        let (d_c, slower_c) = paired(&times[0], &times[2]);
        comparisons.push(format!(
            "| {kind} | {d_s:+.1} µs, slower in {slower_s:.1} % | {d_c:+.1} µs, slower in {slower_c:.1} % |"
        ));
        for (i, (s, _)) in primes.iter().enumerate() {
            let (mean, median, sd) = stats(&mut times[i]);
            let label = if i == 2 {
                format!("s = {s} (control)")
            } else {
                format!("s = {s}")
            };
            println!("| {kind} | {label} | {mean:.1} | {median:.1} | {sd:.1} |");
        }
    }
    println!();
    println!(
        "Paired against the first s = 1 prime (median difference; share of pairs in which it was slower; \
         50 % ± {:.1} % (2σ) when the time does not depend on the prime):",
        100.0 / (rounds as f64).sqrt()
    );
    println!("| round | s = 32 | control, s = 1 |");
    println!("|---|---|---|");
    for c in comparisons {
        println!("{c}");
    }
}
