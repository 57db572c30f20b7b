//! GMP's dispatch profiles (`src/gmp/dispatch.rs`) compute the same numbers.
//!
//! The profile is chosen once per process, so each runs in a child process
//! (this test binary again, with `PRIMEFORGE_GMP_CPU` set): seeded RSA keys
//! and DH parameters, and GMP arithmetic across the sizes where its
//! thresholds switch algorithms (basecase, Toom, the secure variants),
//! must come out identical under GMP's own table, the AMD profile and the
//! Intel profile. Profiles needing BMI2 and ADX are skipped, with a note,
//! on CPUs without them.

use std::process::Command;

use primeforge::prime::Options;
use rug::integer::Order;
use rug::Integer;

const CHILD: &str = "PF_DISPATCH_CHILD";

fn hex(b: &[u8]) -> String {
    format!("{:x}", Integer::from_digits(b, Order::Msf))
}

/// What a child prints: the profile in force, then one line per result.
#[test]
fn child() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    println!("PROFILE {}", primeforge::gmp::dispatch_profile());
    for (bits, s) in [(1024u32, 1u8), (2048, 2), (4096, 3)] {
        let seed = [s; 32];
        let mut o = Options {
            threads: 2,
            seed: Some(&seed),
            ..Default::default()
        };
        let (k, _) = primeforge::rsa::generate(bits, 65537, 2, &mut o).expect("RSA");
        println!("RESULT rsa{bits} {} {}", hex(k.n()), hex(k.d()));
    }
    for (bits, s) in [(512u32, 4u8), (1024, 5)] {
        let seed = [s; 32];
        let mut o = Options {
            threads: 2,
            seed: Some(&seed),
            ..Default::default()
        };
        let (p, _) = primeforge::dh::generate(bits, 2, 0, &mut o).expect("DH");
        println!("RESULT dh{bits} {:x}", p.p());
    }
    // Arithmetic from 1 to 300 limbs: every basecase/Toom switch of the
    // thresholds the profiles set (16 … 130 limbs) and beyond.
    let mut x = Integer::from(0x9e37_79b9_7f4a_7c15u64);
    for limbs in (1..=48).chain([60, 64, 72, 73, 100, 107, 114, 117, 130, 200, 300]) {
        let bits = 64 * limbs as u32;
        x = (Integer::from(&x * &x) + 0x1234_5677u32).keep_bits(bits + 128);
        let a = Integer::from(&x >> 64u32).keep_bits(bits);
        let b = Integer::from(&x >> 7u32).keep_bits(bits) | 1u32;
        let m = &b | Integer::from(1u32) << (bits - 1);
        let sq = Integer::from(&a * &a);
        let pr = Integer::from(&a * &b);
        let q = Integer::from(&pr / &m);
        let g = Integer::from(a.gcd_ref(&b));
        let e = Integer::from(&a >> (bits / 2));
        let pw = a.clone().pow_mod(&e, &m).expect("pow_mod");
        let spw = a.clone().secure_pow_mod(&e, &m);
        println!("RESULT arith{limbs} {sq:x} {pr:x} {q:x} {g:x} {pw:x} {spw:x}");
    }
}

fn run(profile: &str) -> (String, Vec<String>) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env("PRIMEFORGE_GMP_CPU", profile)
        .output()
        .expect("child");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{profile}: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let used = text
        .lines()
        .find_map(|l| l.split_once("PROFILE ").map(|(_, p)| p))
        .expect("profile line")
        .to_string();
    let results: Vec<String> = text
        .lines()
        .filter_map(|l| l.split_once("RESULT ").map(|(_, r)| r.to_string()))
        .collect();
    assert_eq!(results.len(), 5 + 48 + 11, "{profile}: {text}");
    (used, results)
}

#[cfg(target_arch = "x86_64")]
fn modern() -> bool {
    std::arch::is_x86_feature_detected!("bmi2") && std::arch::is_x86_feature_detected!("adx")
}

#[cfg(not(target_arch = "x86_64"))]
fn modern() -> bool {
    false
}

#[test]
fn every_profile_computes_the_same() {
    let (used, reference) = run("gmp");
    assert_eq!(used, "gmp");
    for profile in ["amd", "intel", "auto"] {
        let (used, results) = run(profile);
        if !cfg!(all(target_arch = "x86_64", target_os = "linux")) || !modern() {
            eprintln!("no BMI2/ADX here: profile {profile} ran as {used}");
        } else if profile != "auto" {
            assert_eq!(used, profile);
        }
        for (a, b) in reference.iter().zip(&results) {
            assert!(
                a == b,
                "{profile} differs from GMP's table:\n{a:.200}\n{b:.200}"
            );
        }
    }
}
