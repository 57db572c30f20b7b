//! Cost of one constant-time modular exponentiation (GMP `mpz_powm_sec`,
//! with an arbitrary base) against plain `mpz_powm` and our constant-time
//! base-2 Fermat test (`prime::fermat`, the first test on RSA candidates)
//! and our interruptible variable-time exponentiation for public values
//! (`gmp::pubpow`) and our variable-time strong base-2 test for public
//! candidates (the first test on DH candidates), and our secret
//! Miller–Rabin round (RSA candidates' confirmation rounds), alone, and two
//! to five of one candidate at once.
//!
//!     cargo run --release --example powm_cost -- [BITS...]
use std::time::Instant;

use rug::Integer;

fn main() {
    primeforge::gmp::init();
    let sizes: Vec<u32> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("bits"))
        .collect();
    let sizes = if sizes.is_empty() {
        vec![512, 1024, 1536, 2048, 4096]
    } else {
        sizes
    };
    for bits in sizes {
        let n = (Integer::from(1u32) << bits) - 1339u32;
        let e = Integer::from(&n >> 1u32);
        let count = (std::env::var("POWM_WORK")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(400_000_000u64)
            / (bits as u64 * bits as u64 / 64))
            .clamp(5, 4000) as u32;
        let mut best = [f64::MAX; 11];
        let never = std::sync::atomic::AtomicBool::new(false);
        for _ in 0..5 {
            let start = Instant::now();
            let mut pass = 0u32;
            let mut c = n.clone();
            for _ in 0..count {
                pass += primeforge::prime::fermat::fermat_base2_secret(&c) as u32;
                c -= 2u32;
            }
            std::hint::black_box(pass);
            best[2] = best[2].min(start.elapsed().as_secs_f64() / count as f64);
            for (k, secure) in [true, false].into_iter().enumerate() {
                let mut x = Integer::from(3u32);
                let start = Instant::now();
                for _ in 0..count {
                    x = if secure {
                        x.secure_pow_mod(&e, &n)
                    } else {
                        x.pow_mod(&e, &n).expect("odd modulus")
                    };
                    x += 3u32;
                }
                std::hint::black_box(&x);
                best[k] = best[k].min(start.elapsed().as_secs_f64() / count as f64);
            }
            let mut x = Integer::from(3u32);
            let start = Instant::now();
            for _ in 0..count {
                x = primeforge::gmp::pubpow::pow_mod_or_stop(&x, &e, &n, &never)
                    .expect("not stopped");
                x += 3u32;
            }
            std::hint::black_box(&x);
            best[3] = best[3].min(start.elapsed().as_secs_f64() / count as f64);
            let start = Instant::now();
            let mut pass = 0u32;
            let mut c = n.clone();
            for _ in 0..count {
                pass += primeforge::prime::fermat::strong_base2_public_or_stop(&c, &never) as u32;
                c -= 2u32;
            }
            std::hint::black_box(pass);
            best[4] = best[4].min(start.elapsed().as_secs_f64() / count as f64);
            if let Some(t) = lanes_cost(&n, count, 2, |ns| {
                primeforge::prime::fermat::strong_base2_public_lanes_or_stop(ns, &never)
            }) {
                best[5] = best[5].min(t);
            }
            // The secret base-2 Fermat filter on two candidates at once.
            if let Some(t) = lanes_cost(&n, count, 2, |ns| {
                primeforge::prime::fermat::fermat_base2_secret_lanes_or_stop(ns, &never)
            }) {
                best[6] = best[6].min(t);
            }
            // Three and four first tests at once, secret and public.
            for (i, lanes) in [3, 4].into_iter().enumerate() {
                if let Some(t) = lanes_cost(&n, count, lanes, |ns| {
                    primeforge::prime::fermat::fermat_base2_secret_lanes_or_stop(ns, &never)
                }) {
                    best[7 + i] = best[7 + i].min(t);
                }
                if let Some(t) = lanes_cost(&n, count, lanes, |ns| {
                    primeforge::prime::fermat::strong_base2_public_lanes_or_stop(ns, &never)
                }) {
                    best[9 + i] = best[9 + i].min(t);
                }
            }
        }
        if best[7] < f64::MAX {
            println!(
                "{bits:>5} bits: first tests at once, ms per number for 2 / 3 / 4: secret Fermat \
                 {:.4} / {:.4} / {:.4}, public strong test {:.4} / {:.4} / {:.4}; a search takes \
                 {} secret / {} public at once (best of 5, {count} each)",
                best[6] * 1e3,
                best[7] * 1e3,
                best[8] * 1e3,
                best[5] * 1e3,
                best[9] * 1e3,
                best[10] * 1e3,
                primeforge::prime::fermat::secret_first_test_lanes(bits),
                primeforge::prime::fermat::first_test_lanes(bits),
            );
        }
        println!(
            "{bits:>5} bits: powm_sec {:.3} ms, powm {:.3} ms, base-2 Fermat (ours) {:.3} ms, \
             interruptible powm (ours) {:.3} ms = {:.3}x powm, public strong base-2 test (ours) \
             {:.3} ms = {:.3}x powm, two at once {:.3} ms each = {:.3}x powm; secret Fermat \
             two at once {:.3} ms each = {:.2}x one alone (best of 5, {count} each)",
            best[0] * 1e3,
            best[1] * 1e3,
            best[2] * 1e3,
            best[3] * 1e3,
            best[3] / best[1],
            best[4] * 1e3,
            best[4] / best[1],
            best[5] * 1e3,
            best[5] / best[1],
            best[6] * 1e3,
            best[6] / best[2]
        );
        // The secret Miller–Rabin round (the confirmation rounds of RSA
        // candidates), one at a time, and two to five of one candidate at
        // once.
        let cand = primeforge::prime::mr::MrCandidate::new(n.clone());
        let bases: Vec<Integer> = [3u32, 5, 7, 9, 11]
            .iter()
            .map(|&s| Integer::from(&n >> s))
            .collect();
        let refs: Vec<&Integer> = bases.iter().collect();
        let mut one = f64::MAX;
        let mut together = [f64::MAX; 4];
        let rounds = count.div_ceil(2);
        for _ in 0..5 {
            let start = Instant::now();
            let mut pass = 0u32;
            for i in 0..rounds {
                pass += cand.round(bases[i as usize % 2].clone(), true) as u32;
            }
            std::hint::black_box(pass);
            one = one.min(start.elapsed().as_secs_f64() / rounds as f64);
            for (at_once, best) in (2usize..).zip(together.iter_mut()) {
                let groups = rounds.div_ceil(at_once as u32);
                let start = Instant::now();
                for _ in 0..groups {
                    if cand
                        .rounds_together_or_stop(&refs[..at_once], &never)
                        .is_none()
                    {
                        *best = f64::INFINITY;
                        break;
                    }
                }
                *best = best.min(start.elapsed().as_secs_f64() / (at_once as u32 * groups) as f64);
            }
        }
        let at_once: Vec<String> = together
            .iter()
            .map(|t| {
                if t.is_finite() {
                    format!("{:.3}", t * 1e3)
                } else {
                    "-".to_string()
                }
            })
            .collect();
        println!(
            "{bits:>5} bits: secret Miller–Rabin round (ours) {:.3} ms = {:.2}x base-2 Fermat, \
             {:.2}x powm_sec; two / three / four / five rounds of one number at once {} ms \
             each (a search takes {} at once)",
            one * 1e3,
            one / best[2],
            one / best[0],
            at_once.join(" / "),
            primeforge::prime::mr::rounds_at_once(bits)
        );
    }
}

/// Time per number of `test` on groups of `lanes` numbers below n (odd,
/// stepping down by 2), or `None` where it declines.
fn lanes_cost(
    n: &Integer,
    count: u32,
    lanes: usize,
    test: impl Fn(&[&Integer]) -> Option<Vec<bool>>,
) -> Option<f64> {
    let start = Instant::now();
    let mut pass = 0u32;
    let mut c = n.clone();
    let groups = count / lanes as u32;
    for _ in 0..groups {
        let ns: Vec<Integer> = (0..lanes as u32)
            .map(|i| Integer::from(&c - 2 * i))
            .collect();
        let refs: Vec<&Integer> = ns.iter().collect();
        pass += test(&refs)?.iter().filter(|x| **x).count() as u32;
        c -= 2 * lanes as u32;
    }
    std::hint::black_box(pass);
    Some(start.elapsed().as_secs_f64() / (groups * lanes as u32) as f64)
}
