//! Cost of the DH combined sieve's set-up per sieving prime (issue 20,
//! lever 2): finding the primes below the bound and their two residue
//! classes for the search's start, on one thread, then building the first
//! segment. Seeds [i; 32]; reports mean, median and spread of ns per prime.
//!
//!     cargo run --release --example sieve_setup -- BITS LOG2_BOUND [N]
use primeforge::dh::{measure_sieve, Request};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: sieve_setup BITS LOG2_BOUND [N]";
    let bits: u32 = args.first().expect(usage).parse().expect(usage);
    let lb: u32 = args.get(1).expect(usage).parse().expect(usage);
    let n: usize = args.get(2).map_or(10, |a| a.parse().expect(usage));
    let req = Request::new(bits, 2, 0).expect("request");
    let mut setup = Vec::new();
    let mut segment = Vec::new();
    let mut primes = 0;
    let mut survivors = 0;
    for i in 0..n {
        let c = measure_sieve(&req, 1 << lb, &[i as u8; 32]).expect("measure");
        primes = c.primes;
        survivors += c.survivors;
        setup.push(c.setup.as_nanos() as f64 / c.primes as f64);
        segment.push(c.first_segment.as_nanos() as f64 / c.primes as f64);
    }
    let stats = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len() as f64).sqrt();
        (mean, v[v.len() / 2], sd)
    };
    let (m1, med1, sd1) = stats(&mut setup);
    let (m2, med2, sd2) = stats(&mut segment);
    println!(
        "DH-{bits} bound 2^{lb}: {primes} primes, {n} seeds; ns per prime: set-up mean {m1:.1} median {med1:.1} sd {sd1:.1}; first segment mean {m2:.1} median {med2:.1} sd {sd2:.1}; survivors per segment {:.0}",
        survivors as f64 / n as f64
    );
}
