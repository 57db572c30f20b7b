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
//!     cargo run --release --example rsa_timing -- BITS N THREADS... [--openssl]
use std::process::{Command, Stdio};
use std::time::Instant;

use primeforge::prime::Options;

#[path = "common/timing.rs"]
mod timing;

use timing::{cpu_seconds, summary};

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let openssl = args.iter().any(|a| a == "--openssl");
    let ceiling = args.iter().any(|a| a == "--ceiling");
    args.retain(|a| a != "--openssl" && a != "--ceiling");
    let nums: Vec<u32> = args
        .iter()
        .map(|a| {
            a.parse()
                .expect("usage: rsa_timing BITS N THREADS... [--openssl] [--ceiling]")
        })
        .collect();
    assert!(
        nums.len() >= 3,
        "usage: rsa_timing BITS N THREADS... [--openssl] [--ceiling]"
    );
    let (bits, n, threads) = (nums[0], nums[1], &nums[2..]);
    assert!(n <= 256, "at most 256 seeds");
    let mut times = vec![Vec::new(); threads.len()];
    let mut ossl = Vec::new();
    let mut pairs = Vec::new();
    let mut work = vec![(0u64, 0u64, 0u64); threads.len()];
    let mut cpu = vec![0f64; threads.len()];
    for i in 0..n {
        let seed = [i as u8; 32];
        for (j, &t) in threads.iter().enumerate() {
            let mut o = Options {
                threads: t,
                seed: Some(&seed),
                progress: None,
                ..Default::default()
            };
            let start = Instant::now();
            let cpu0 = cpu_seconds();
            let (k, st) = primeforge::rsa::generate(bits, 65537, 2, &mut o).expect("generation");
            times[j].push(start.elapsed().as_secs_f64());
            cpu[j] += cpu_seconds() - cpu0;
            assert_eq!(k.bits(), bits);
            work[j].0 += st.candidates;
            work[j].1 += st.survivors;
            work[j].2 += st.exponentiations;
        }
        if ceiling {
            let one = || {
                let mut o = Options {
                    threads: 1,
                    seed: Some(&seed),
                    progress: None,
                    ..Default::default()
                };
                primeforge::rsa::generate(bits, 65537, 2, &mut o).expect("generation");
            };
            let start = Instant::now();
            std::thread::scope(|s| {
                s.spawn(one);
                s.spawn(one);
            });
            pairs.push(start.elapsed().as_secs_f64());
        }
        if openssl {
            let start = Instant::now();
            let ok = Command::new("openssl")
                .args(["genpkey", "-algorithm", "RSA", "-pkeyopt"])
                .arg(format!("rsa_keygen_bits:{bits}"))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("openssl")
                .success();
            assert!(ok, "openssl genpkey failed");
            ossl.push(start.elapsed().as_secs_f64());
        }
    }
    println!("RSA-{bits}, {n} keys (seeds [i; 32], i < {n}):");
    let mut means = Vec::new();
    for (j, &t) in threads.iter().enumerate() {
        means.push(summary(&format!("{t} thread(s)"), &times[j]));
        let (c, s, e) = work[j];
        let nf = n as f64;
        println!(
            "  {:<16} per key: candidates {:.0}, survivors {:.1}, exponentiations {:.1}, CPU {:.4} s; busy {:.1}% of {t} thread(s); CPU per exponentiation {:.2} ms",
            "",
            c as f64 / nf,
            s as f64 / nf,
            e as f64 / nf,
            cpu[j] / nf,
            100.0 * cpu[j] / (t as f64 * times[j].iter().sum::<f64>()),
            1e3 * cpu[j] / e as f64
        );
    }
    for (j, &t) in threads.iter().enumerate().skip(1) {
        println!(
            "  speedup {} → {t} threads: {:.2}×",
            threads[0],
            means[0] / means[j]
        );
    }
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
        let m = summary("openssl genpkey", &ossl);
        println!(
            "  primeforge ({} thread) vs openssl genpkey: {:.2}× faster",
            threads[0],
            m / means[0]
        );
    }
}
