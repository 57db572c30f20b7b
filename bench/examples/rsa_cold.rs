//! RSA keys of probable primes (the default) and of provable primes
//! (`PF_RSA_PROVABLE`), interleaved per seed with the order alternating,
//! hot or cold: with `--cold`, 64 MiB are written between keys, so every
//! key starts with the caches holding none of its code or data (as when
//! keys are made now and then, or interleaved with other libraries, as in
//! pf-bench). Prints mean and median milliseconds per mode.
//!
//!     cargo run --release --example rsa_cold -- BITS N [--cold]
use std::time::Instant;

use primeforge::prime::Options;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cold = args.iter().any(|a| a == "--cold");
    let nums: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let [bits, n] = nums[..] else {
        eprintln!("usage: rsa_cold BITS N [--cold]");
        std::process::exit(2);
    };
    let mut times = [Vec::new(), Vec::new()];
    for i in 0..n {
        for k in 0..2 {
            let provable = (i + k) % 2 == 1;
            let mut seed = [(i % 256) as u8; 32];
            seed[1] = (i / 256) as u8;
            if cold {
                let mut v = vec![1u8; 64 << 20];
                for j in (0..v.len()).step_by(64) {
                    v[j] = v[j].wrapping_add(j as u8);
                }
                std::hint::black_box(&v);
            }
            let mut o = Options {
                threads: 1,
                seed: Some(&seed),
                rsa_provable: provable,
                ..Default::default()
            };
            let start = Instant::now();
            primeforge::rsa::generate(bits as u32, 65537, 2, &mut o).expect("generation");
            times[usize::from(provable)].push(start.elapsed().as_secs_f64() * 1e3);
        }
    }
    println!(
        "RSA-{bits}, {n} keys each, {}:",
        if cold { "cold" } else { "hot" }
    );
    for (name, v) in ["probable primes", "provable primes"]
        .iter()
        .zip(times.iter_mut())
    {
        v.sort_by(f64::total_cmp);
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        println!(
            "  {name:16} mean {mean:.4} ms  median {:.4} ms",
            v[v.len() / 2]
        );
    }
}
