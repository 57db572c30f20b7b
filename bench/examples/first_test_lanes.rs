//! What a group of eight secret first tests (the base-2 Fermat test, one
//! candidate per vector lane on AVX-512 IFMA) costs at each size: best of
//! five timings of REPS / 5 groups on the same eight random odd numbers,
//! in µs per group and per test. Where the lanes do not take a size (no
//! IFMA, or outside 205 to 8192 bits) the group runs one test at a time.
//!
//!     cargo run --release -p primeforge-bench --example first_test_lanes -- [BITS...] [--reps N]
use std::sync::atomic::AtomicBool;

use primeforge::prime::fermat::fermat_base2_secret_lanes_or_stop;
use rug::Integer;

fn main() {
    primeforge::gmp::init();
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut reps = 2000usize;
    if let Some(i) = args.iter().position(|a| a == "--reps") {
        reps = args
            .get(i + 1)
            .and_then(|v| v.parse().ok())
            .expect("--reps N");
        args.drain(i..i + 2);
    }
    let sizes: Vec<u32> = if args.is_empty() {
        vec![256, 512, 640, 768, 896, 1024, 1240]
    } else {
        args.iter()
            .map(|a| {
                a.parse()
                    .expect("usage: first_test_lanes [BITS...] [--reps N]")
            })
            .collect()
    };
    let never = AtomicBool::new(false);
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for bits in sizes {
        let mut odd = || {
            let mut words = vec![0u64; bits.div_ceil(64) as usize];
            for w in words.iter_mut() {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                *w = state;
            }
            let mut x = Integer::from_digits(&words, rug::integer::Order::Lsf);
            x.keep_bits_mut(bits);
            x.set_bit(bits - 1, true);
            x.set_bit(0, true);
            x
        };
        let group: Vec<Integer> = (0..8).map(|_| odd()).collect();
        let refs: Vec<&Integer> = group.iter().collect();
        let per = (reps / 5).max(1);
        let mut best = f64::MAX;
        for _ in 0..5 {
            let t = std::time::Instant::now();
            for _ in 0..per {
                std::hint::black_box(fermat_base2_secret_lanes_or_stop(&refs, &never));
            }
            best = best.min(t.elapsed().as_secs_f64() / per as f64);
        }
        println!(
            "{bits} bits: {:.2} us per group of 8, {:.2} us per test (best of 5)",
            best * 1e6,
            best * 1e6 / 8.0
        );
    }
}
