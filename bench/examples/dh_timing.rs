//! Times DH parameter generation (safe primes) through the Rust core with
//! fixed seeds (seed i = [i; 32]), interleaved per seed across thread
//! counts; with `--openssl`, `openssl dhparam` (one thread, as users run
//! it) is timed in the same loop.
//!
//!     cargo run --release --example dh_timing -- BITS N THREADS... [--openssl] [--g G] [--bound LOG2]

#[path = "common/timing.rs"]
#[allow(dead_code)] // without the ceiling's pair (`pair_seconds`)
mod timing;

use timing::{parse_counts, report_openssl, time_openssl, Series};

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
    let (bits, n, threads) = parse_counts(
        &args,
        "usage: dh_timing BITS N THREADS... [--openssl] [--g G] [--bound LOG2]",
    );
    let mut series = Series::new(&threads);
    let mut ossl = Vec::new();
    for i in 0..n {
        let seed = [i as u8; 32];
        series.run(&seed, |o| {
            let (d, st) = match bound {
                Some(lb) => primeforge::dh::generate_with_bound(
                    &primeforge::dh::Request::new(bits, g, 0).expect("request"),
                    o,
                    1 << lb,
                ),
                None => primeforge::dh::generate(bits, g, 0, o),
            }
            .expect("generation");
            assert_eq!(d.bits(), bits);
            st
        });
        if openssl {
            ossl.push(time_openssl(&[
                "dhparam".into(),
                "-out".into(),
                "/dev/null".into(),
                format!("-{g}"),
                bits.to_string(),
            ]));
        }
    }
    println!("DH-{bits} g={g}, {n} runs (seeds [i; 32], i < {n}):");
    let means = series.report("safe prime", ("positions", "sieve survivors"));
    if openssl {
        report_openssl("openssl dhparam", &ossl, &threads, &means);
    }
}
