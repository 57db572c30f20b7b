//! The fixed thread costs of one generation (issue 20, lever 5): the
//! caller's wiped frame, building the private pool, one empty job, the
//! stack wipes and the join, with no prime search — against a whole
//! RSA-512 generation measured in the same loop.
//!
//!     cargo run --release --example pool_cost -- [N] [THREADS]
use std::time::{Duration, Instant};

use primeforge::prime::{measure_pool_cost, Options};

fn stats(v: &mut [Duration]) -> (f64, f64) {
    v.sort();
    let mean = v.iter().map(|d| d.as_secs_f64()).sum::<f64>() / v.len() as f64;
    (mean * 1e6, v[v.len() / 2].as_secs_f64() * 1e6)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = args.first().map_or(200, |a| a.parse().expect("N"));
    let threads: u32 = args.get(1).map_or(1, |a| a.parse().expect("THREADS"));
    let mut pool = Vec::with_capacity(n);
    let mut rsa = Vec::with_capacity(n);
    for i in 0..n {
        pool.push(measure_pool_cost(threads).expect("pool"));
        let seed = [(i % 256) as u8; 32];
        let mut o = Options {
            threads,
            seed: Some(&seed),
            ..Options::default()
        };
        let t = Instant::now();
        primeforge::rsa::generate(512, 65537, 2, &mut o).expect("RSA-512");
        rsa.push(t.elapsed());
    }
    let (pm, pmed) = stats(&mut pool);
    let (rm, rmed) = stats(&mut rsa);
    println!("{threads} thread(s), {n} samples: fixed thread costs mean {pm:.0} µs (median {pmed:.0}); RSA-512 mean {rm:.0} µs (median {rmed:.0}); share {:.1} %", 100.0 * pm / rm);
}
