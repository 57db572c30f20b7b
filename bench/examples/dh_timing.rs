//! Times DH parameter generation (safe primes) through the Rust core with
//! fixed seeds (seed i = [i; 32]), interleaved per seed across thread
//! counts; with `--openssl`, `openssl dhparam` (one thread, as users run
//! it) is timed in the same loop.
//!
//!     cargo run --release --example dh_timing -- BITS N THREADS... [--openssl] [--g G] [--bound LOG2]
use std::process::{Command, Stdio};
use std::time::Instant;

use primeforge::prime::Options;

#[path = "common/timing.rs"]
mod timing;

use timing::{cpu_seconds, summary};

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let openssl = args.iter().any(|a| a == "--openssl");
    args.retain(|a| a != "--openssl");
    let mut g = 2u32;
    let mut bound = None;
    if let Some(i) = args.iter().position(|a| a == "--bound") {
        bound = Some(args[i + 1].parse::<u32>().expect("--bound LOG2"));
        args.drain(i..i + 2);
    }
    if let Some(i) = args.iter().position(|a| a == "--g") {
        g = args[i + 1].parse().expect("--g G");
        args.drain(i..i + 2);
    }
    let nums: Vec<u32> = args
        .iter()
        .map(|a| {
            a.parse()
                .expect("usage: dh_timing BITS N THREADS... [--openssl] [--g G] [--bound LOG2]")
        })
        .collect();
    assert!(
        nums.len() >= 3,
        "usage: dh_timing BITS N THREADS... [--openssl] [--g G] [--bound LOG2]"
    );
    let (bits, n, threads) = (nums[0], nums[1], &nums[2..]);
    assert!(n <= 256, "at most 256 seeds");
    let mut times = vec![Vec::new(); threads.len()];
    let mut ossl = Vec::new();
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
            let (d, st) = match bound {
                Some(lb) => primeforge::dh::generate_with_bound(bits, g, 0, &mut o, 1 << lb),
                None => primeforge::dh::generate(bits, g, 0, &mut o),
            }
            .expect("generation");
            times[j].push(start.elapsed().as_secs_f64());
            cpu[j] += cpu_seconds() - cpu0;
            assert_eq!(d.bits(), bits);
            work[j].0 += st.candidates;
            work[j].1 += st.survivors;
            work[j].2 += st.exponentiations;
        }
        if openssl {
            let start = Instant::now();
            let ok = Command::new("openssl")
                .args(["dhparam", "-out", "/dev/null"])
                .arg(format!("-{g}"))
                .arg(bits.to_string())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("openssl")
                .success();
            assert!(ok, "openssl dhparam failed");
            ossl.push(start.elapsed().as_secs_f64());
        }
    }
    println!("DH-{bits} g={g}, {n} runs (seeds [i; 32], i < {n}):");
    let mut means = Vec::new();
    for (j, &t) in threads.iter().enumerate() {
        means.push(summary(&format!("{t} thread(s)"), &times[j]));
        let (c, s, e) = work[j];
        let nf = n as f64;
        println!(
            "  {:<16} per safe prime: positions {:.0}, sieve survivors {:.1}, exponentiations {:.1}, CPU {:.4} s; busy {:.1}% of {t} thread(s)",
            "",
            c as f64 / nf,
            s as f64 / nf,
            e as f64 / nf,
            cpu[j] / nf,
            100.0 * cpu[j] / (t as f64 * times[j].iter().sum::<f64>()),
        );
    }
    for (j, &t) in threads.iter().enumerate().skip(1) {
        println!(
            "  speedup {} → {t} threads: {:.2}×",
            threads[0],
            means[0] / means[j]
        );
    }
    if openssl {
        let m = summary("openssl dhparam", &ossl);
        println!(
            "  primeforge ({} thread) vs openssl dhparam: {:.2}× faster",
            threads[0],
            m / means[0]
        );
    }
}
