//! Secrets do not linger: after an RSA key is generated and freed, no copy
//! of p, q, d, dP, dQ, qInv or the seed is left anywhere in the process's
//! readable private memory —
//! freed heap (GMP limbs), thread stacks (GMP's alloca temporaries, our
//! frames), or anything else.
//!
//! The scan reads every readable private mapping of this process through
//! /proc/self/mem into a dedicated mmap'd scratch buffer (skipped, and wiped
//! after each chunk) and looks for windows of p's and q's bytes in both
//! big-endian order and GMP's in-memory order (little-endian limbs on
//! little-endian machines = the little-endian byte string). The needles
//! are kept bitwise inverted, so the test itself holds no plain copy.

mod common;

use std::io::{Read, Seek, SeekFrom};

use common::opts;
use primeforge::ffi::*;

const WINDOW: usize = 24;

/// Inverted windows (start, middle, end) of `v` in both byte orders.
fn needles(be: &[u8]) -> Vec<Vec<u8>> {
    let mut le: Vec<u8> = be.iter().rev().map(|b| !b).collect();
    let inv_be: Vec<u8> = be.iter().map(|b| !b).collect();
    let mut out = Vec::new();
    for v in [&inv_be, &le] {
        let n = v.len();
        for start in [0, n / 2 - WINDOW / 2, n - WINDOW] {
            out.push(v[start..start + WINDOW].to_vec());
        }
    }
    le.iter_mut().for_each(|b| *b = 0);
    out
}

fn matches_inverted(hay: &[u8], inv: &[u8]) -> bool {
    hay.iter().zip(inv).all(|(h, i)| *h == !*i)
}

/// Counts places in readable private memory where any needle occurs.
fn count_copies(needles: &[Vec<u8>]) -> usize {
    const CHUNK: usize = 1 << 20;
    let mut scratch = std::ptr::null_mut();
    assert_eq!(
        unsafe { pf_buffer_new(CHUNK + WINDOW, &mut scratch) },
        pf_status::PF_OK
    );
    let base = unsafe { pf_buffer_data_mut(scratch) };
    let buf = unsafe { std::slice::from_raw_parts_mut(base, CHUNK + WINDOW) };
    let skip = base as usize;
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let mut mem = std::fs::File::open("/proc/self/mem").unwrap();
    let mut count = 0;
    for line in maps.lines() {
        let mut f = line.split_whitespace();
        let range = f.next().unwrap();
        let perms = f.next().unwrap();
        let path = line.split_whitespace().nth(5).unwrap_or("");
        if !perms.starts_with('r') || perms.as_bytes()[3] != b'p' || path.starts_with("[v") {
            continue;
        }
        let (lo, hi) = range.split_once('-').unwrap();
        let lo = usize::from_str_radix(lo, 16).unwrap();
        let hi = usize::from_str_radix(hi, 16).unwrap();
        if (lo..hi).contains(&skip) {
            continue;
        }
        // Chunks overlap by WINDOW bytes so no occurrence is cut.
        let mut at = lo;
        while at < hi {
            let len = (hi - at).min(CHUNK + WINDOW);
            if mem.seek(SeekFrom::Start(at as u64)).is_err()
                || mem.read_exact(&mut buf[..len]).is_err()
            {
                break;
            }
            for i in 0..len.saturating_sub(WINDOW - 1) {
                if needles
                    .iter()
                    .any(|n| matches_inverted(&buf[i..i + WINDOW], n))
                {
                    count += 1;
                }
            }
            buf[..len].iter_mut().for_each(|b| *b = 0);
            at += CHUNK;
        }
    }
    unsafe { pf_buffer_free(scratch) };
    count
}

fn part_needles(key: *const pf_rsa_key, part: u32) -> Vec<Vec<u8>> {
    let mut b = std::ptr::null_mut();
    assert_eq!(
        unsafe { pf_rsa_component(key, part, &mut b) },
        pf_status::PF_OK
    );
    let bytes = unsafe { std::slice::from_raw_parts(pf_buffer_data(b), pf_buffer_len(b)) };
    let n = needles(bytes);
    unsafe { pf_buffer_free(b) };
    n
}

/// Windows of a seed (the start and the end: a seed is shorter than two
/// windows), inverted, in its own byte order only (it is never a number).
fn seed_needles(seed: &[u8]) -> Vec<Vec<u8>> {
    let inv: Vec<u8> = seed.iter().map(|b| !b).collect();
    vec![inv[..WINDOW].to_vec(), inv[seed.len() - WINDOW..].to_vec()]
}

/// No copy of any secret component (p, q, d, dP, dQ, qInv) survives a
/// generation and `pf_rsa_free`, nor of the caller's seed once its own
/// buffer is freed. The seed is passed from a `pf_buffer`, as the header
/// recommends, and generated into that buffer by the OS.
#[test]
fn no_copy_of_any_secret_or_the_seed_survives_generation_and_free() {
    let mut total = 0;
    for (bits, threads) in [(2048u32, 2u32), (1024, 1), (3072, 3)] {
        let mut seed_buf = std::ptr::null_mut();
        assert_eq!(
            unsafe { pf_buffer_new(32, &mut seed_buf) },
            pf_status::PF_OK
        );
        let seed = unsafe { std::slice::from_raw_parts_mut(pf_buffer_data_mut(seed_buf), 32) };
        getrandom_into(seed);
        let seed_needles = seed_needles(seed);
        let mut key = std::ptr::null_mut();
        let mut o = opts(threads, None);
        // Three threads run, also on a machine of fewer cores.
        o.flags = pf_options_flag::PF_THREADS_EXACT as u32;
        o.seed = seed.as_ptr();
        o.seed_len = 32;
        assert_eq!(
            unsafe { pf_rsa_generate_ex(bits, 65537, 2, &o, &mut key) },
            pf_status::PF_OK
        );
        let mut pem = std::ptr::null_mut();
        assert_eq!(unsafe { pf_rsa_export(key, 3, &mut pem) }, pf_status::PF_OK);
        let mut needles = Vec::new();
        for part in [
            pf_rsa_part::PF_RSA_P,
            pf_rsa_part::PF_RSA_Q,
            pf_rsa_part::PF_RSA_D,
            pf_rsa_part::PF_RSA_DP,
            pf_rsa_part::PF_RSA_DQ,
            pf_rsa_part::PF_RSA_QINV,
        ] {
            needles.extend(part_needles(key, part as u32));
        }
        // While the key and the seed buffer live, the scan must see them
        // (the test can fail).
        let live = count_copies(&needles);
        assert!(live >= 6, "scan found only {live} copies of a live key");
        assert!(
            count_copies(&seed_needles) >= 1,
            "scan cannot see the seed buffer"
        );
        unsafe { pf_buffer_free(pem) };
        unsafe { pf_rsa_free(key) };
        unsafe { pf_buffer_free(seed_buf) };
        let left = count_copies(&needles);
        let seed_left = count_copies(&seed_needles);
        eprintln!(
            "RSA-{bits} at {threads} thread(s): {live} places while the key lives, \
             {left} after it is freed; {seed_left} copies of the seed"
        );
        total += left + seed_left;
    }
    assert_eq!(
        total, 0,
        "copies of a secret component or the seed left in memory after free"
    );
}

/// The OS's random bytes straight into `dest`, with no copy elsewhere.
fn getrandom_into(dest: &mut [u8]) {
    // SAFETY: `dest` is writable for its length.
    let n = unsafe { libc::getrandom(dest.as_mut_ptr().cast(), dest.len(), 0) };
    assert_eq!(n, dest.len() as isize);
}
