//! An RSA key's one-thread CPU against its floor: (exponentiations per
//! key) × t_F, where t_F is the cheapest test a search runs (the secret
//! base-2 Fermat test, as many at once as the search takes them). The
//! keys (seeds [i; 32], i < N) and the timing of t_F alternate in one
//! process, a key then a batch of tests on random odd numbers of the
//! primes' size, so both see the same minutes of the machine.
//!
//! t_F is reported two ways: the mean of all the batches (under the same
//! load as the keys, which are a mean too) and the best batch (what an
//! isolated best-of-five microbenchmark such as `powm_cost` reads). On a
//! quiet host the two agree; on a loaded one the keys and the mean slow
//! together and the best does not, so the ratio against the best grows
//! with the load.
//!
//!     cargo run --release -p primeforge-bench --example floor_ratio -- [BITS] [N]
use std::sync::atomic::AtomicBool;

use primeforge::prime::fermat::{fermat_base2_secret_lanes_or_stop, secret_first_test_lanes};
use primeforge::prime::Options;
use rug::Integer;

#[path = "common/timing.rs"]
#[allow(dead_code)]
mod timing;

use timing::cpu_seconds;

/// Batches of first tests timed after each key.
const BATCHES: usize = 8;
/// Groups per batch.
const GROUPS: usize = 4;

fn main() {
    primeforge::gmp::init();
    let args: Vec<u32> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("usage: floor_ratio [BITS] [N]"))
        .collect();
    let bits = args.first().copied().unwrap_or(2048);
    let n = args.get(1).copied().unwrap_or(256);
    let k = bits / 2;
    let lanes = secret_first_test_lanes(k).max(1);
    let never = AtomicBool::new(false);
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut odd = || {
        let mut words = vec![0u64; k.div_ceil(64) as usize];
        for w in words.iter_mut() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            *w = state;
        }
        let mut x = Integer::from_digits(&words, rug::integer::Order::Lsf);
        x.keep_bits_mut(k);
        x.set_bit(k - 1, true);
        x.set_bit(0, true);
        x
    };
    let (mut key_cpu, mut exps) = (0.0, 0.0);
    let mut per_test = Vec::new();
    for i in 0..n {
        let seed = [i as u8; 32];
        let mut o = Options {
            threads: 1,
            seed: Some(&seed),
            ..Default::default()
        };
        let c0 = cpu_seconds();
        let (key, st) = primeforge::rsa::generate(bits, 65537, 2, &mut o).expect("generation");
        key_cpu += cpu_seconds() - c0;
        exps += st.exponentiations_done();
        assert_eq!(key.bits(), bits);
        for _ in 0..BATCHES {
            let groups: Vec<Vec<Integer>> = (0..GROUPS)
                .map(|_| (0..lanes).map(|_| odd()).collect())
                .collect();
            let c0 = cpu_seconds();
            for g in &groups {
                let refs: Vec<&Integer> = g.iter().collect();
                if lanes > 1 {
                    std::hint::black_box(fermat_base2_secret_lanes_or_stop(&refs, &never));
                } else {
                    std::hint::black_box(primeforge::prime::fermat::fermat_base2_secret(&g[0]));
                }
            }
            per_test.push((cpu_seconds() - c0) / (GROUPS * lanes) as f64);
        }
    }
    let nf = n as f64;
    let (key, e) = (key_cpu / nf, exps / nf);
    per_test.sort_by(f64::total_cmp);
    let mean = per_test.iter().sum::<f64>() / per_test.len() as f64;
    let median = per_test[per_test.len() / 2];
    let best = per_test[0];
    println!(
        "RSA-{bits}, {n} keys, one thread: CPU {:.3} ms per key, {e:.1} exponentiations per key",
        key * 1e3
    );
    println!(
        "  t_F ({k}-bit secret Fermat test, {lanes} at once, {} batches of {} tests between the keys): mean {:.4} ms, median {:.4}, best {:.4}",
        per_test.len(),
        GROUPS * lanes,
        mean * 1e3,
        median * 1e3,
        best * 1e3
    );
    for (what, t) in [("mean", mean), ("median", median), ("best", best)] {
        println!(
            "  floor with t_F's {what}: {:.3} ms; key / floor {:.3}",
            e * t * 1e3,
            key / (e * t)
        );
    }
}
