//! Chooses the trial-division bound for RSA candidates by measurement.
//!
//!     cargo run --release --example trial_bound
//!
//! For each prime size it measures the cost of the first test on a
//! survivor (the constant-time base-2 Fermat test, `prime::fermat`, as
//! many at once as a search runs it), of one
//! constant-time Miller–Rabin round (`mpz_powm_sec`), and the average cost
//! of trial division of a random odd candidate for bounds 2^12 … 2^22,
//! then models the expected cost of finding one prime:
//!
//!   N = k·ln 2 / 2 odd candidates per prime (prime number theorem),
//!   survivors S(B) = N · Π_{3 ≤ p < B} (1 − 1/p),
//!   cost(B) = N · t_trial(B) + S(B) · t_fermat + rounds · t_mr.
//!
//! The chosen bounds are in `primeforge::prime::small::rsa_trial_bound`.
use std::time::Instant;

use primeforge::prime::mr::{rsa_rounds, MrCandidate};
use primeforge::prime::small::{odd_primes_below, rsa_trial_bound, TrialTable};
use rug::Integer;

struct Lcg(u64);
impl Lcg {
    fn odd(&mut self, bits: u32) -> Integer {
        let mut bytes = vec![0u8; bits.div_ceil(8) as usize];
        for b in bytes.iter_mut() {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            *b = (self.0 >> 56) as u8;
        }
        let mut n = Integer::from_digits(&bytes, rug::integer::Order::Msf);
        n.keep_bits_mut(bits);
        n.set_bit(bits - 1, true);
        n.set_bit(0, true);
        n
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    primeforge::gmp::init();
    let mut rng = Lcg(42);
    for k in [256u32, 512, 1024, 1536, 2048, 4096] {
        let n = rng.odd(k);
        let c = MrCandidate::new(n);
        let reps = if k >= 2048 { 15 } else { 41 };
        // The first test as a search runs it: as many at once as it
        // groups (`secret_first_test_lanes`), per number.
        let lanes = primeforge::prime::fermat::secret_first_test_lanes(k);
        let group: Vec<Integer> = (0..lanes).map(|_| rng.odd(k)).collect();
        let refs: Vec<&Integer> = group.iter().collect();
        let never = std::sync::atomic::AtomicBool::new(false);
        let t_fermat = median(
            (0..reps)
                .map(|_| {
                    let t = Instant::now();
                    if lanes > 1 {
                        std::hint::black_box(
                            primeforge::prime::fermat::fermat_base2_secret_lanes_or_stop(
                                &refs, &never,
                            ),
                        );
                    } else {
                        std::hint::black_box(primeforge::prime::fermat::fermat_base2_secret(&c.n));
                    }
                    t.elapsed().as_secs_f64() / lanes as f64
                })
                .collect(),
        );
        let t_exp = median(
            (0..reps)
                .map(|_| {
                    let t = Instant::now();
                    std::hint::black_box(c.round(Integer::from(3u32), true));
                    t.elapsed().as_secs_f64()
                })
                .collect(),
        );
        let rounds = rsa_rounds(k, 2 * k) as f64;
        let cands = k as f64 * std::f64::consts::LN_2 / 2.0;
        let samples: Vec<Integer> = (0..4000).map(|_| rng.odd(k)).collect();
        println!(
            "prime {k} bits: t_fermat {:.3} ms, t_mr {:.3} ms, {} rounds, {:.0} odd candidates \
             per prime; chosen bound 2^{}",
            t_fermat * 1e3,
            t_exp * 1e3,
            rounds,
            cands,
            rsa_trial_bound(k).trailing_zeros()
        );
        println!("  bound | batches | survivors/prime | trial µs/cand | model ms/prime");
        let mut best = (f64::MAX, 0);
        for lb in 12..=22u32 {
            let b = 1u32 << lb;
            let frac: f64 = odd_primes_below(b)
                .iter()
                .map(|&p| 1.0 - 1.0 / p as f64)
                .product();
            let table = TrialTable::new(k.div_ceil(64) as usize, b);
            let t_td = median(
                (0..5)
                    .map(|_| {
                        let t = Instant::now();
                        let mut pass = 0;
                        for s in &samples {
                            pass += table.passes(s) as u32;
                        }
                        std::hint::black_box(pass);
                        t.elapsed().as_secs_f64() / samples.len() as f64
                    })
                    .collect(),
            );
            let surv = cands * frac;
            let cost = cands * t_td + surv * t_fermat + rounds * t_exp;
            if cost < best.0 {
                best = (cost, lb);
            }
            println!(
                "  2^{lb:<3} | {:>7} | {:>15.1} | {:>13.2} | {:>8.2}",
                table.batch_count(),
                surv,
                t_td * 1e6,
                cost * 1e3
            );
        }
        println!("  model minimum at 2^{}", best.1);
    }
}
