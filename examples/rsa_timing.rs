//! Times RSA key generation through the Rust core with fixed seeds
//! (seed i = [i; 32] for i in 0..N), so every thread count does the same
//! work. The full benchmark suite with peers is issue 6's `pf-bench`.
//!
//!     cargo run --release --example rsa_timing -- BITS THREADS N
use primeforge::prime::Options;

fn main() {
    let args: Vec<u32> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("BITS THREADS N"))
        .collect();
    let [bits, threads, n] = args[..] else {
        panic!("usage: rsa_timing BITS THREADS N")
    };
    let mut times = Vec::new();
    let mut exps = 0;
    let mut cands = 0;
    let mut survs = 0;
    for i in 0..n {
        let seed = [i as u8; 32];
        let mut o = Options {
            threads,
            seed: Some(&seed),
            progress: None,
        };
        let t = std::time::Instant::now();
        let (k, st) = primeforge::rsa::generate(bits, 65537, 2, &mut o).expect("generation");
        times.push(t.elapsed().as_secs_f64());
        exps += st.exponentiations;
        cands += st.candidates;
        survs += st.survivors;
        assert_eq!(k.bits(), bits);
    }
    times.sort_by(f64::total_cmp);
    let mean = times.iter().sum::<f64>() / n as f64;
    let sd = (times.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
    println!(
        "RSA-{bits} threads {threads} keys {n}: mean {mean:.4} s, median {:.4} s, sd {sd:.4} s, min {:.4}, max {:.4}, exponentiations/key {:.1}, candidates/key {:.0}, survivors/key {:.1}",
        times[times.len() / 2],
        times[0],
        times[times.len() - 1],
        exps as f64 / n as f64,
        cands as f64 / n as f64,
        survs as f64 / n as f64
    );
}
