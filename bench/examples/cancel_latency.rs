//! How long a background job runs on after `pf_job_cancel`: starts RSA and
//! DH jobs through the C ABI, cancels each at a random point of its search
//! (after 100 … 1100 ms), and measures from the cancel until the job's
//! descriptor is readable. Prints count, median, mean and maximum per size
//! (issue 17 asks for at most 100 ms of work at any size).
//!
//!     cargo run --release --example cancel_latency -- [SAMPLES] [THREADS]

#![deny(clippy::undocumented_unsafe_blocks)]
use std::time::{Duration, Instant};

use primeforge::ffi::pf_status::*;
use primeforge::ffi::*;

fn wait_readable(fd: i32) {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let n = unsafe { libc::poll(&mut p, 1, 60_000) };
    assert!(n == 1, "job did not end within 60 s of its cancel");
}

fn main() {
    let args: Vec<u32> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("number"))
        .collect();
    let samples = *args.first().unwrap_or(&12);
    let threads = *args.get(1).unwrap_or(&2);
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut opts = pf_options_default();
    opts.threads = threads;
    println!("cancel → job ended, {threads} threads, {samples} random cancels per row");
    for (kind, bits) in [
        ("RSA", 8192u32),
        ("RSA", 16384),
        ("DH", 4096),
        ("DH", 6144),
        ("DH", 8192),
        ("DH", 16384),
    ] {
        let mut ms = Vec::new();
        let mut finished = 0;
        for _ in 0..samples {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut job = std::ptr::null_mut();
            // SAFETY: valid options and out-pointer.
            let st = unsafe {
                if kind == "RSA" {
                    pf_rsa_generate_start(bits, 65537, 2, &opts, &mut job)
                } else {
                    pf_dh_generate_start(bits, 2, 0, &opts, &mut job)
                }
            };
            assert_eq!(st, PF_OK);
            std::thread::sleep(Duration::from_millis(100 + x % 1000));
            let t = Instant::now();
            // SAFETY: `job` is live until pf_job_free.
            unsafe {
                assert_eq!(pf_job_cancel(job), PF_OK);
                wait_readable(pf_job_fd(job));
            }
            let took = t.elapsed().as_secs_f64() * 1e3;
            // SAFETY: as above.
            match unsafe { pf_job_poll(job, std::ptr::null_mut()) } {
                PF_ERR_CANCELLED => ms.push(took),
                PF_OK => finished += 1,
                other => panic!("{kind}-{bits}: {other:?}"),
            }
            // SAFETY: freed once.
            unsafe { pf_job_free(job) };
        }
        ms.sort_by(f64::total_cmp);
        let n = ms.len().max(1) as f64;
        println!(
            "{kind:>3}-{bits:<5}: {} cancelled ({finished} had finished); median {:.1} ms, \
             mean {:.1} ms, max {:.1} ms",
            ms.len(),
            ms.get(ms.len() / 2).copied().unwrap_or(f64::NAN),
            ms.iter().sum::<f64>() / n,
            ms.last().copied().unwrap_or(f64::NAN),
        );
    }
}
