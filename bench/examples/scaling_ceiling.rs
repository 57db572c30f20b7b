//! How well does this machine itself scale? Runs the same fixed batch of
//! independent modular exponentiations (no shared state, no locks) on 1
//! thread and on T threads at once, and reports the throughput ratio: the
//! best speedup any prime search can reach here. Interleaved repeats,
//! median reported.
//!
//!     cargo run --release --example scaling_ceiling -- [THREADS] [BITS] [REPEATS]
use std::time::Instant;

use rug::Integer;

fn batch(bits: u32, count: u32, salt: u32) -> f64 {
    let n = (Integer::from(1u32) << bits) - (2 * salt + 1);
    let e = Integer::from(&n >> 1u32);
    let start = Instant::now();
    let mut x = Integer::from(3u32);
    for _ in 0..count {
        x = x.pow_mod(&e, &n).expect("odd modulus");
        x += 3u32;
    }
    std::hint::black_box(x);
    start.elapsed().as_secs_f64()
}

fn main() {
    let args: Vec<u32> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("number"))
        .collect();
    let threads = *args.first().unwrap_or(&2);
    let bits = *args.get(1).unwrap_or(&1024);
    let repeats = *args.get(2).unwrap_or(&15);
    primeforge::gmp::init();
    let count = (200_000_000u64 / (bits as u64 * bits as u64 / 64)).clamp(5, 2000) as u32;
    let mut ratios = Vec::new();
    for r in 0..repeats {
        let t1 = batch(bits, count, r);
        let start = Instant::now();
        std::thread::scope(|s| {
            for t in 0..threads {
                s.spawn(move || batch(bits, count, r + t));
            }
        });
        let tt = start.elapsed().as_secs_f64();
        // T threads did T batches in tt; one thread does one batch in t1.
        ratios.push(threads as f64 * t1 / tt);
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "{bits}-bit powm, {count} per batch, {repeats} repeats: {threads} threads reach {:.2}× the 1-thread throughput (median; min {:.2}, max {:.2})",
        ratios[ratios.len() / 2],
        ratios[0],
        ratios[ratios.len() - 1]
    );
}
