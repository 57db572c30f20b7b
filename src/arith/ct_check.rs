//! The secret-candidate arithmetic under valgrind, with the secrets marked
//! undefined (the "ctgrind" technique): memcheck then reports every branch
//! and every memory address that depends on them. The base-2 Fermat loop
//! and the Miller–Rabin round on `arith::fixed` (4 limbs with and without
//! the assembly squaring, 6 and 7 limbs) and on `gmp::mont` with
//! `gmp::sec::pow_secret` (8, 9, 16 and 33 limbs, and 1000 bits) run with
//! n, −n⁻¹, R mod n, d, the base and s undefined; only their verdicts are
//! marked defined again. The pairwise test's CRT recombination
//! (`gmp::sec::crt_matches`) runs on RSA-4096's 32-limb primes with the
//! primes, the parts and the coefficients undefined. Above 7 limbs the byte of n that holds its top
//! bit stays defined: n's bit size is public, and GMP's division branches
//! on it.
//!
//! Valgrind hides BMI2 and ADX from CPUID but runs those instructions, so
//! the workload forces the 4-limb assembly squaring and the unrolled
//! reduction rows (`gmp::redc`) on there.
//!
//! More workloads live beside the code they check: the divsteps
//! (`rsa::ct`), the rest of key assembly (`rsa::assembly`: the remainder
//! by e, e⁻¹ modulo p − 1 and λ, the size checks and the order of the
//! primes) and the key's storage and private encodings (`rsa::key`).
//!
//! The harness test re-runs this test binary under valgrind with each
//! workload test and fails on any memcheck error. Without valgrind it says
//! so and passes (`.ci/deps` installs valgrind, so CI always runs it).

use std::sync::atomic::AtomicBool;

use rug::Integer;

use super::fixed::FixedMont;
use crate::gmp::mont::Mont;
use crate::gmp::sec::mr_round_core;
use crate::prime::fermat::{fermat_fixed_core, fermat_mont_core};
use crate::prime::mr::{mr_fixed_core, odd_part};

use crate::secure::valgrind::{client_request, MAKE_MEM_DEFINED, MAKE_MEM_UNDEFINED};

/// Valgrind's RUNNING_ON_VALGRIND request: non-zero under valgrind.
fn on_valgrind() -> bool {
    client_request(0x1001, core::ptr::null(), 0) != 0
}

fn undefined(addr: *const u8, len: usize) {
    client_request(MAKE_MEM_UNDEFINED, addr, len);
}

/// Marks `v` undefined. The slice then passes through `black_box`, so the
/// compiler assumes its contents changed and reads them again (it could
/// otherwise keep constants it wrote there before).
pub(crate) fn undefined_slice<T>(v: &mut [T]) {
    undefined(v.as_mut_ptr().cast(), std::mem::size_of_val(v));
    core::hint::black_box(v);
}

/// Marks `v` defined again (see [`undefined_slice`]).
pub(crate) fn defined_slice<T>(v: &mut [T]) {
    client_request(
        MAKE_MEM_DEFINED,
        v.as_mut_ptr().cast(),
        std::mem::size_of_val(v),
    );
    core::hint::black_box(v);
}

/// `x` marked defined: a verdict that is allowed to leave.
pub(crate) fn declassify(x: u64) -> u64 {
    let mut a = [x];
    defined_slice(&mut a);
    core::hint::black_box(a)[0]
}

/// The first prime above a `bits`-bit number made from `seed`.
fn prime_of(bits: u32, seed: u64) -> Integer {
    let mut x = Integer::from(seed);
    x = (Integer::from(&x * &x) + 0x6a09_e667u32).keep_bits(bits + 64) << (bits / 2);
    let mut n = Integer::from(&x >> 64u32).keep_bits(bits);
    n.set_bit(bits - 1, true);
    n.next_prime()
}

/// A prime of `bits` bits (n ≡ 3 mod 4 or not, as the walk gives) and the
/// workload on it: Fermat and Miller–Rabin with everything secret marked
/// undefined. Returns the verdicts (which must be 1: n is prime).
fn run<const N: usize>(seed: u64, adx: bool) -> (u64, u64) {
    let bits = 64 * N as u32;
    let n = prime_of(bits, seed);
    let nl = n.as_limbs();
    let mut m = FixedMont::<N>::new(nl).expect("N limbs");
    m.set_adx(adx);
    m.secret_bytes(undefined);
    let never = AtomicBool::new(false);
    let fermat = fermat_fixed_core(&m, bits as usize, &never).expect("not stopped");
    // d, the base and s as the round prepares them, then marked undefined.
    let mut s = (nl[0] ^ 1).trailing_zeros();
    let mut d = odd_part::<N>(nl, s);
    let mut b = [0u64; N];
    b[0] = 0x9e37_79b9_7f4a_7c15;
    b[N / 2] = 0x0123_4567_89ab_cdef;
    undefined_slice(&mut d);
    undefined_slice(&mut b);
    undefined_slice(std::slice::from_mut(&mut s));
    let mr = mr_fixed_core(&m, &d, &b, s, bits as usize, true);
    (declassify(fermat), declassify(mr))
}

/// The same for numbers above 7 limbs, on `gmp::mont` and `gmp::sec::pow_secret`
/// (RSA-2048's 16-limb primes take this path): n's limbs, −n⁻¹, d, the
/// base and s undefined.
fn run_gmp(bits: u32, seed: u64, adx: bool) -> (u64, u64) {
    let n = prime_of(bits, seed);
    let nl = n.as_limbs();
    let len = nl.len();
    let mut s = (nl[0] ^ 1).trailing_zeros();
    let mut d = (Integer::from(&n - 1u32) >> s).as_limbs().to_vec();
    d.resize(len, 0);
    let mut b = vec![0u64; len];
    b[0] = 0x9e37_79b9_7f4a_7c15;
    b[len / 2] = 0x0123_4567_89ab_cdef;
    let mut m = Mont::new(&n).expect("odd");
    if adx {
        m.force_adx();
    }
    undefined(nl.as_ptr().cast(), 8 * len);
    // The bit size of n is public (the key size): GMP's mpn_sec_div_r
    // branches on the divisor's leading zero count. The byte that holds
    // the top one bit and the zero bytes above it stay defined (this
    // treats up to 7 bits below the top one as public too).
    let top = (bits as usize - 1) / 8;
    client_request(
        MAKE_MEM_DEFINED,
        nl.as_ptr().cast::<u8>().wrapping_add(top),
        8 * len - top,
    );
    m.secret_bytes(undefined);
    let never = AtomicBool::new(false);
    let fermat = fermat_mont_core(&mut m, bits as usize, &never).expect("not stopped");
    undefined_slice(&mut d);
    undefined_slice(&mut b);
    undefined_slice(std::slice::from_mut(&mut s));
    let mr = mr_round_core(&mut m, &b, &d, s, bits, &never).expect("not stopped");
    // n's limbs are read again by rug when n is dropped.
    client_request(MAKE_MEM_DEFINED, nl.as_ptr().cast(), 8 * len);
    (declassify(fermat), declassify(mr))
}

/// Marks `x`'s limbs undefined (secret), except the byte that holds its
/// top bit: a key's sizes are public, and GMP reads the size field anyway.
pub(crate) fn secret_integer(x: &Integer) {
    let l = x.as_limbs();
    if !l.is_empty() {
        undefined(l.as_ptr().cast(), 8 * l.len() - 1);
    }
}

/// Marks `x`'s limbs undefined but its top limb: for values whose byte
/// length is public (a key part's DER length shows it), which GMP and rug
/// compute from a leading-zero count of the whole top limb, where memcheck
/// cannot tell that only the top byte decides the count.
pub(crate) fn secret_integer_below_top_limb(x: &Integer) {
    let l = x.as_limbs();
    if l.len() > 1 {
        undefined(l.as_ptr().cast(), 8 * (l.len() - 1));
    }
}

/// Marks `x`'s limbs defined again (rug reads them when `x` is dropped).
pub(crate) fn public_integer(x: &Integer) {
    let l = x.as_limbs();
    client_request(MAKE_MEM_DEFINED, l.as_ptr().cast(), 8 * l.len());
}

/// The workload; meaningful only under valgrind (the harness below).
#[test]
#[ignore = "run by secret_arithmetic_has_no_secret_branches under valgrind"]
fn workload() {
    // Valgrind hides BMI2/ADX from CPUID but runs them: the assembly
    // squaring is checked there too.
    let adx = on_valgrind() || super::fixed::has_adx();
    for seed in [3u64, 5] {
        if adx {
            assert_eq!(run::<4>(seed, true), (1, 1));
        }
        assert_eq!(run::<4>(seed, false), (1, 1));
        assert_eq!(run::<6>(seed, false), (1, 1));
        assert_eq!(run::<7>(seed, false), (1, 1));
    }
    // n = p·q at RSA-4096's size (32 limbs), where mpz_mul would use
    // Toom–Cook.
    let (p, q) = (prime_of(2048, 17), prime_of(2048, 19));
    let (mut pl, mut ql) = (p.as_limbs().to_vec(), q.as_limbs().to_vec());
    undefined_slice(&mut pl);
    undefined_slice(&mut ql);
    let mut n = crate::gmp::sec::mul_limbs(&pl, &ql);
    defined_slice(&mut n[..]);
    assert_eq!(
        Integer::from_digits(&n[..], rug::integer::Order::Lsf),
        Integer::from(&p * &q)
    );
    // The pairwise test's CRT recombination on the same primes, with the
    // primes (but the byte holding each top bit: the size is public), the
    // parts and the coefficients undefined.
    let ps = [p, q];
    let (m, parts, coeffs) = crate::gmp::sec::tests::crt_inputs(&ps, 1);
    ps.iter().for_each(secret_integer);
    for x in parts.iter().chain(&coeffs) {
        let l = x.as_limbs();
        undefined(l.as_ptr().cast(), 8 * l.len());
    }
    let mismatch = crate::gmp::sec::crt_mismatch(&m, &ps, &parts, &coeffs);
    assert_eq!(declassify(mismatch), 0);
    // rug reads the limbs again when the values are dropped.
    ps.iter()
        .chain(&parts)
        .chain(&coeffs)
        .for_each(public_integer);
    // 8 limbs (RSA-1024's primes), 9, RSA-2048's 16 and a top limb that is
    // not full, on the unrolled reduction rows (`gmp::redc`) and the fused
    // passes after them (`gmp::finish`); 33 limbs on GMP's `addmul_1` rows
    // and GMP's passes. Without ADX, GMP's portable `redc_1` and passes.
    for bits in [512u32, 576, 1024, 1000, 2112] {
        assert_eq!(run_gmp(bits, 7, adx), (1, 1), "{bits} bits");
    }
}

/// A deliberate branch on a secret and a look-up indexed by one, which
/// memcheck must report (shows the harness can fail).
#[test]
#[ignore = "run by secret_arithmetic_has_no_secret_branches under valgrind"]
fn leaky_workload() {
    let mut v = [0x1234_5678u64; 4];
    undefined_slice(&mut v);
    let table: Vec<u64> = (0..256).collect();
    let mut acc = 0u64;
    for &x in &v {
        let x = core::hint::black_box(x);
        if x % 3 == 1 {
            acc = acc.wrapping_mul(3).wrapping_add(x);
        }
        acc ^= table[(x & 255) as usize];
    }
    assert_ne!(declassify(acc), 1);
}

fn under_valgrind(test: &str) -> Option<(bool, String)> {
    let exe = std::env::current_exe().expect("test binary");
    let out = std::process::Command::new("valgrind")
        .args([
            "--tool=memcheck",
            "--error-exitcode=99",
            "--leak-check=no",
            "--track-origins=no",
        ])
        .arg(&exe)
        .args([test, "--exact", "--include-ignored", "--test-threads=1"])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    // A misspelt name would run no test and pass: insist on one.
    let ran = String::from_utf8_lossy(&out.stdout).contains("1 passed");
    Some((out.status.success() && ran, text))
}

#[test]
fn secret_arithmetic_has_no_secret_branches() {
    for workload in [
        "arith::ct_check::workload",
        "rsa::ct::tests::ct_workload",
        "rsa::assembly::tests::assembly_workload",
        "rsa::key::tests::encoding_workload",
    ] {
        let Some((ok, text)) = under_valgrind(workload) else {
            crate::capability::skip(
                "valgrind",
                "valgrind is not installed (.ci/deps installs it)",
            );
            return;
        };
        assert!(
            ok,
            "{workload}: memcheck saw secret-dependent branches or addresses:\n{text}"
        );
    }
    // The same harness reports a branch on an undefined value.
    let (ok, text) = under_valgrind("arith::ct_check::leaky_workload").expect("valgrind ran");
    assert!(!ok, "the leaky workload was not caught");
    assert!(text.contains("uninitialised value"), "{text}");
}
