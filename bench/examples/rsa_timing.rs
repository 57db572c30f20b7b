//! Times RSA key generation through the Rust core with fixed seeds
//! (seed i = [i; 32] for i in 0..N), so every thread count does the same
//! work, interleaved per seed so that machine drift hits every column alike.
//! With `--openssl`, `openssl genpkey` (one thread, as users run it) is
//! timed in the same loop. With `--ceiling`, the loop also runs two
//! one-thread generations of the same seed at once on two OS threads: the
//! same work with nothing shared, so 2 × (one-thread time) / (pair time) is
//! the best 2-thread speedup this machine allows for this work, and the
//! engine's 2-thread speedup divided by it is the engine's own efficiency. The full benchmark suite with peers is issue
//! 6's `pf-bench`.
//!
//! With `--provable`, the keys are made of provable primes
//! (`PF_RSA_PROVABLE`).
//!
//!     cargo run --release --example rsa_timing -- BITS N THREADS... [--openssl] [--provable]

use primeforge::prime::Options;

#[path = "common/timing.rs"]
mod timing;

use timing::{pair_seconds, parse_counts, report_openssl, summary, time_openssl, Series};

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let openssl = args.iter().any(|a| a == "--openssl");
    let ceiling = args.iter().any(|a| a == "--ceiling");
    let provable = args.iter().any(|a| a == "--provable");
    args.retain(|a| a != "--openssl" && a != "--ceiling" && a != "--provable");
    let (bits, n, threads) = parse_counts(
        &args,
        "usage: rsa_timing BITS N THREADS... [--openssl] [--ceiling] [--provable]",
    );
    let mut series = Series::new(&threads);
    let mut ossl = Vec::new();
    let mut pairs = Vec::new();
    for i in 0..n {
        let seed = [i as u8; 32];
        series.run(&seed, |o| {
            o.rsa_provable = provable;
            let (k, st) = primeforge::rsa::generate(bits, 65537, 2, o).expect("generation");
            assert_eq!(k.bits(), bits);
            st
        });
        if ceiling {
            let one = || {
                let mut o = Options {
                    threads: 1,
                    seed: Some(&seed),
                    rsa_provable: provable,
                    ..Default::default()
                };
                primeforge::rsa::generate(bits, 65537, 2, &mut o).expect("generation");
            };
            pairs.push(pair_seconds(one));
        }
        if openssl {
            ossl.push(time_openssl(&[
                "genpkey".into(),
                "-algorithm".into(),
                "RSA".into(),
                "-pkeyopt".into(),
                format!("rsa_keygen_bits:{bits}"),
            ]));
        }
    }
    println!("RSA-{bits}, {n} keys (seeds [i; 32], i < {n}):");
    let means = series.report("key", ("candidates", "survivors"));
    if ceiling {
        let one = threads.iter().position(|&t| t == 1);
        let m = summary("2 × 1 thread", &pairs);
        if let Some(j) = one {
            let c = 2.0 * means[j] / m;
            println!("  machine ceiling (two independent one-thread runs at once): {c:.2}×");
            for (k, &t) in threads.iter().enumerate() {
                if t == 2 {
                    println!(
                        "  engine efficiency at 2 threads: {:.1}% of the ceiling",
                        100.0 * means[j] / means[k] / c
                    );
                }
            }
        }
    }
    if openssl {
        report_openssl("openssl genpkey", &ossl, &threads, &means);
    }
}
