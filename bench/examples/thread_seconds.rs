//! Thread-seconds per generation at 1, 2, 4, 8 and 16 threads, the same
//! seeds in every column, interleaved per seed so that machine drift hits
//! every column alike; with the machine's own two-thread ceiling measured
//! in the same loop (two one-thread generations of the seed at once on two
//! long-lived OS threads: the same work with nothing shared) and the two-thread
//! generation with threads started and joined per call
//! (`per_call_threads`, the behaviour before pools were kept).
//!
//! Reported: per column the mean and median wall time and the CPU time
//! per generation (user + system of the whole process, so the calling
//! thread's waits and every helper thread count), and, as ratios with a
//! standard error from a bootstrap over the seeds:
//! - CPU per generation against one thread (the thread-seconds target),
//! - exponentiations per generation against one thread (the engine's own
//!   work counters, which do not depend on how many cores there are):
//!   started, and done (a round given up part way counts the share of its
//!   exponent it had processed),
//! - two-thread throughput against the same-run ceiling.
//!
//! With `--callers C --seconds S`, instead: C host threads each making
//! two-thread generations with fresh seeds for S seconds, against two host
//! threads making one-thread generations for S seconds, and the C host
//! threads again with `exact_threads` (every call on the two workers it
//! asked for, as before admission): keys per second of each, alternated
//! twice.
//!
//!     cargo run --release -p primeforge-bench --example thread_seconds -- rsa BITS N
//!     cargo run --release -p primeforge-bench --example thread_seconds -- dh BITS N
//!     cargo run --release -p primeforge-bench --example thread_seconds -- ffc BITS N   (FIPS 186-4, q of 256 bits; 160 at 1024)
//!     cargo run --release -p primeforge-bench --example thread_seconds -- rsa BITS 0 --callers 8 --seconds 20
//!
//! A generation runs on no more threads than the machine has cores unless
//! it asks for its exact count: the columns above the cores measure what a
//! caller who asks for that many gets. With `--exact` every column runs on
//! exactly its thread count (`exact_threads`), taking turns on the cores.
use std::time::{Duration, Instant};

use primeforge::prime::{Options, Stats};

#[path = "common/timing.rs"]
#[allow(dead_code)] // this example needs only `cpu_seconds`
mod timing;

use timing::cpu_seconds;

#[derive(Clone, Copy)]
enum Kind {
    Rsa(u32),
    Dh(u32),
    /// FIPS 186-4 domain parameters: p of this size, q of 256 bits (160
    /// for p of 1024).
    Ffc(u32),
}

fn generate(kind: Kind, o: &mut Options<'_>) -> Stats {
    match kind {
        Kind::Rsa(bits) => primeforge::rsa::generate(bits, 65537, 2, o).expect("RSA").1,
        Kind::Dh(bits) => {
            let req = primeforge::dh::Request::new(bits, 2, 0).expect("request");
            primeforge::dh::generate_request(&req, o).expect("DH").1
        }
        Kind::Ffc(bits) => {
            let n = if bits == 1024 { 160 } else { 256 };
            let req = primeforge::dh::fips186::Request::new(bits, n, None).expect("request");
            primeforge::dh::fips186::generate(&req, o)
                .expect("FIPS 186-4")
                .1
        }
    }
}

fn seed_of(i: usize) -> [u8; 32] {
    let mut s = [0x5Du8; 32];
    s[..8].copy_from_slice(&(i as u64 + 1).to_le_bytes());
    s
}

#[derive(Default, Clone)]
struct Col {
    wall: Vec<f64>,
    cpu: Vec<f64>,
    exps: Vec<f64>,
    done: Vec<f64>,
}

/// Mean of `f` over a resample of the seed indices.
fn resampled(idx: &[usize], v: &[f64]) -> f64 {
    idx.iter().map(|&i| v[i]).sum::<f64>() / idx.len() as f64
}

/// A small xorshift for the bootstrap's resampling (not for keys).
struct Xs(u64);
impl Xs {
    fn next(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// The ratio `num(sample) / den(sample)` of means, with its bootstrap
/// standard error over the seeds.
fn ratio(num: &[f64], den: &[f64]) -> (f64, f64) {
    let n = num.len();
    let all: Vec<usize> = (0..n).collect();
    let r0 = resampled(&all, num) / resampled(&all, den);
    let mut rng = Xs(0x9E37_79B9_7F4A_7C15);
    let reps = 2000;
    let mut rs = Vec::with_capacity(reps);
    for _ in 0..reps {
        let idx: Vec<usize> = (0..n).map(|_| rng.next(n)).collect();
        rs.push(resampled(&idx, num) / resampled(&idx, den));
    }
    let m = rs.iter().sum::<f64>() / reps as f64;
    let sd = (rs.iter().map(|r| (r - m).powi(2)).sum::<f64>() / (reps - 1) as f64).sqrt();
    (r0, sd)
}

fn median(v: &[f64]) -> f64 {
    let mut t = v.to_vec();
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

fn sweep(kind: Kind, n: usize, exact_threads: bool) {
    let threads = [1u32, 2, 4, 8, 16];
    // Columns: the thread counts, then 2 per call, then the pair.
    let mut cols = vec![Col::default(); threads.len() + 2];
    let run = |o: &mut Options<'_>, col: &mut Col| {
        let t = Instant::now();
        let c = cpu_seconds();
        let st = generate(kind, o);
        col.cpu.push(cpu_seconds() - c);
        col.wall.push(t.elapsed().as_secs_f64());
        col.exps.push(st.exponentiations as f64);
        col.done.push(st.exponentiations_done());
    };
    // The ceiling's two threads live through the whole sweep: threads
    // started per seed and torn down after it (a private stack unmapped,
    // thread-locals dropped) spent CPU while the next seed's one-thread
    // column was measured — about 0.8 ms per RSA-2048 generation, which
    // made that column's process CPU exceed its wall time.
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let helpers: Vec<std::sync::mpsc::Sender<[u8; 32]>> = (0..2)
        .map(|_| {
            let (tx, rx) = std::sync::mpsc::channel::<[u8; 32]>();
            let done = done_tx.clone();
            std::thread::spawn(move || {
                for seed in rx {
                    let mut o = Options {
                        threads: 1,
                        seed: Some(&seed),
                        ..Default::default()
                    };
                    generate(kind, &mut o);
                    let _ = done.send(());
                }
            });
            tx
        })
        .collect();
    // One one-thread generation of `seed` on each helper, both at once.
    let on_both = |seed: [u8; 32]| {
        for h in &helpers {
            h.send(seed).expect("helper thread");
        }
        for _ in &helpers {
            done_rx.recv().expect("helper thread");
        }
    };
    on_both(seed_of(1 << 21));
    // Warm-up: pools of every size started once, caches filled.
    for &t in &threads {
        let seed = seed_of(1 << 20);
        let mut o = Options {
            threads: t,
            seed: Some(&seed),
            exact_threads,
            ..Default::default()
        };
        generate(kind, &mut o);
    }
    for i in 0..n {
        let seed = seed_of(i);
        for (j, &t) in threads.iter().enumerate() {
            let mut o = Options {
                threads: t,
                seed: Some(&seed),
                exact_threads,
                ..Default::default()
            };
            run(&mut o, &mut cols[j]);
        }
        let mut o = Options {
            threads: 2,
            seed: Some(&seed),
            per_call_threads: true,
            ..Default::default()
        };
        run(&mut o, &mut cols[threads.len()]);
        // The ceiling: two one-thread generations at once, on the two
        // long-lived helper threads.
        let t = Instant::now();
        let c = cpu_seconds();
        on_both(seed);
        let one_exps = cols[0].exps[i];
        let one_done = cols[0].done[i];
        let pair = &mut cols[threads.len() + 1];
        pair.cpu.push((cpu_seconds() - c) / 2.0);
        pair.wall.push(t.elapsed().as_secs_f64());
        pair.exps.push(one_exps);
        pair.done.push(one_done);
    }
    let name = match kind {
        Kind::Rsa(b) => format!("RSA-{b}"),
        Kind::Dh(b) => format!("DH-{b}"),
        Kind::Ffc(b) => format!("FIPS 186-4 {b}/{}", if b == 1024 { 160 } else { 256 }),
    };
    let fit = if exact_threads {
        "exactly the threads asked for"
    } else {
        "at most as many threads as cores"
    };
    println!("{name}, {n} seeds, every column the same seeds, interleaved, {fit}:");
    let labels: Vec<String> = threads
        .iter()
        .map(|t| format!("{t} thread(s)"))
        .chain(["2 per call".into(), "2 × 1 at once".into()])
        .collect();
    for (j, c) in cols.iter().enumerate() {
        let mean = c.wall.iter().sum::<f64>() / n as f64;
        let (cpu, cpu_se) = ratio(&c.cpu, &cols[0].cpu);
        let (ex, ex_se) = ratio(&c.exps, &cols[0].exps);
        let (dn, dn_se) = ratio(&c.done, &cols[0].done);
        println!(
            "  {:<14} wall mean {:.2} ms median {:.2} ms; CPU/gen {:.2} ms = {cpu:.3} ± {cpu_se:.3} of 1 thread; exponentiations started {ex:.3} ± {ex_se:.3}, done {dn:.3} ± {dn_se:.3} of 1 thread",
            labels[j],
            1e3 * mean,
            1e3 * median(&c.wall),
            1e3 * c.cpu.iter().sum::<f64>() / n as f64,
        );
    }
    let two = &cols[1].wall;
    let percall = &cols[threads.len()].wall;
    let pair = &cols[threads.len() + 1].wall;
    let (s2, s2e) = ratio(&cols[0].wall, two);
    let (ceil, ceil_e) = ratio(
        &cols[0].wall.iter().map(|w| 2.0 * w).collect::<Vec<_>>(),
        pair,
    );
    // speedup / ceiling = pair / (2 × two-thread time).
    let (eff, eff_e) = ratio(pair, &two.iter().map(|w| 2.0 * w).collect::<Vec<_>>());
    let (effp, effp_e) = ratio(pair, &percall.iter().map(|w| 2.0 * w).collect::<Vec<_>>());
    println!("  2-thread speedup {s2:.3} ± {s2e:.3}; machine ceiling {ceil:.3} ± {ceil_e:.3}");
    println!(
        "  2 threads / ceiling: kept pools {eff:.3} ± {eff_e:.3}; per call {effp:.3} ± {effp_e:.3}"
    );
}

fn callers(kind: Kind, callers: usize, secs: f64) {
    let window = Duration::from_secs_f64(secs);
    let run = |hosts: usize, threads: u32, exact_threads: bool| -> f64 {
        let start = Instant::now();
        let made: usize = std::thread::scope(|s| {
            let hs: Vec<_> = (0..hosts)
                .map(|_| {
                    s.spawn(move || {
                        let mut k = 0;
                        while start.elapsed() < window {
                            let mut o = Options {
                                threads,
                                exact_threads,
                                ..Default::default()
                            };
                            generate(kind, &mut o);
                            k += 1;
                        }
                        k
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum()
        });
        made as f64 / start.elapsed().as_secs_f64()
    };
    let (mut many, mut exact, mut pairs) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..2 {
        many.push(run(callers, 2, false));
        exact.push(run(callers, 2, true));
        pairs.push(run(2, 1, false));
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (m, x, p) = (mean(&many), mean(&exact), mean(&pairs));
    println!(
        "{callers} callers × 2 threads: {m:.2} per s {many:.2?}, ratio {:.3}; \
         the same with exact_threads (every call its 2 workers): {x:.2} per s {exact:.2?}, ratio {:.3}; \
         2 callers × 1 thread: {p:.2} per s {pairs:.2?}",
        m / p,
        x / p
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: thread_seconds rsa|dh|ffc BITS N [--exact | --callers C --seconds S]";
    let bits: u32 = args.get(1).expect(usage).parse().expect(usage);
    let kind = match args.first().map(String::as_str) {
        Some("rsa") => Kind::Rsa(bits),
        Some("dh") => Kind::Dh(bits),
        Some("ffc") => Kind::Ffc(bits),
        _ => panic!("{usage}"),
    };
    let n: usize = args.get(2).expect(usage).parse().expect(usage);
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .map(|i| args[i + 1].parse::<f64>().expect(usage))
    };
    if let Some(c) = flag("--callers") {
        callers(kind, c as usize, flag("--seconds").unwrap_or(20.0));
    } else {
        sweep(kind, n, args.iter().any(|a| a == "--exact"));
    }
}
