//! A constant-time base-2 Fermat test, the first test every RSA candidate
//! that survives trial division gets.
//!
//! ## Why base 2, and why our own loop
//! The first test on a candidate rejects nearly every composite, so it is
//! where RSA key generation spends its time: about 64 of the ~67
//! exponentiations per 2048-bit prime. With the base fixed at 2, the
//! multiplications of a square-and-multiply exponentiation become
//! doublings (a shift and a conditional subtraction), and only the
//! squarings remain: against GMP's `mpz_powm_sec` with an arbitrary base,
//! which spends about a sixth of its time on window multiplications and
//! table look-ups, that is measurably cheaper (see `bench/examples/powm_cost`).
//!
//! The base-2 test is a filter, not one of the counted rounds: a candidate
//! that passes it still gets every FIPS 186-5 Miller–Rabin round with
//! random bases from the seeded stream (see `rsa::RsaSource`), so the
//! error bound of Table B.1 is untouched. It cannot reject a prime
//! (Fermat), so the prime a seed yields is the same as without it.
//!
//! ## Constant time
//! The candidate may become a secret prime: the arithmetic is
//! `arith::fixed`'s for candidates of up to 7 limbs (448 bits: RSA-512's
//! primes, numbers held in registers), `arith::ifma`'s radix-2^52 steps
//! on CPUs with AVX-512 IFMA from 9 to 128 limbs, and `gmp::mont`'s
//! otherwise (basecase squarings, Montgomery reduction and masked
//! doublings); none has a value-dependent branch or index. Each exponent bit
//! is a mask, and the loop runs once per bit of n, which is public (the
//! key size). Only the verdict leaves, and for a prime it is always
//! "pass".

use std::sync::atomic::{AtomicBool, Ordering};

use rug::Integer;

use zeroize::Zeroize;

use crate::arith::fixed::{ct_eq, with_limbs, FixedMont};
use crate::arith::ifma;
use crate::gmp::mont::Mont;

/// Whether 2^(n−1) ≡ 1 (mod n), in time that depends only on the size of
/// n. `n` must be odd and at least 5; smaller or even input returns false.
pub fn fermat_base2_secret(n: &Integer) -> bool {
    fermat_base2_secret_or_stop(n, &AtomicBool::new(false))
}

/// [`fermat_base2_secret`] that gives up (returning false) once `stop` is
/// set, looked at every 64 bits of n (a cancelled search waits for no
/// more than 64 squarings).
pub fn fermat_base2_secret_or_stop(n: &Integer, stop: &AtomicBool) -> bool {
    if *n < 5u32 {
        return false;
    }
    let limbs = n.as_limbs();
    if let Some(v) = with_limbs!(limbs.len(), N => fermat_base2_fixed::<N>(n, stop)) {
        return v;
    }
    if n.is_odd() && ifma::available() && ifma::LIMBS.contains(&limbs.len()) {
        let mut rl = [0u64; 128];
        secret_r_mod(limbs, &mut rl);
        let v = ifma::fermat_base2_secret(limbs, &rl[..limbs.len()], stop);
        rl.zeroize();
        return v == Some(1);
    }
    let Some(mut m) = Mont::new(n) else {
        return false;
    };
    fermat_mont_core(&mut m, n.significant_bits() as usize, stop) == Some(1)
}

/// R = 2^(52k) mod the secret n (IFMA limbs) for its IFMA digits, by the
/// constant-time division straight into `out` (n's length used): the time
/// and every length depend on the limb counts only.
pub(crate) fn secret_r_mod(limbs: &[u64], out: &mut [u64; 128]) {
    secret_pow2_mod(52 * ifma::digits(limbs), limbs, out);
}

/// R and R² mod the secret n (R = 2^(52k), k = `ifma::digits(n)`) into
/// `r` and `r2` (each at least n's length), as [`secret_r_mod`].
pub(crate) fn secret_r_and_r2_into(limbs: &[u64], r: &mut [u64], r2: &mut [u64]) {
    let k = ifma::digits(limbs);
    secret_pow2_mod(52 * k, limbs, r);
    secret_pow2_mod(104 * k, limbs, r2);
}

/// 2^bit mod the secret n into `out` (at least n's length) by the
/// constant-time division.
fn secret_pow2_mod(bit: usize, limbs: &[u64], out: &mut [u64]) {
    let mut pow = [0u64; 2 * 128 + 4];
    pow[bit / 64] = 1 << (bit % 64);
    crate::gmp::sec::rem_into(&pow[..bit / 64 + 1], limbs, &mut out[..limbs.len()]);
}

/// [`fermat_base2_secret_or_stop`] on two to eight secret odd numbers of
/// one bit length from 205 to 8192 bits at once, for a search that has
/// that many candidates to test, on CPUs with AVX-512 IFMA: in the lanes of
/// one register, one number per lane (`arith::lanes::fermat_base2_secret`,
/// from 1245 bits in bands). [`secret_first_test_lanes`] says how many
/// suit a size. Constant time as the single test; `None` where that does
/// not apply (numbers of other sizes or of mixed lengths, or no IFMA: the
/// caller tests them one by one) or once `stop` is set.
pub fn fermat_base2_secret_lanes_or_stop(ns: &[&Integer], stop: &AtomicBool) -> Option<Vec<bool>> {
    fermat_base2_secret_in_lanes(ns, stop).flatten()
}

/// `f` with 2^bit mod each of up to eight secret odd numbers `limbs` (by
/// the constant-time division, in their length), wiped after.
fn with_pow2_mods<T>(limbs: &[&[u64]], bit: usize, f: impl FnOnce(&[&[u64]]) -> T) -> T {
    let mut rs = [[0u64; 128]; crate::arith::lanes::LANES];
    for (r, l) in rs.iter_mut().zip(limbs) {
        secret_pow2_mod(bit, l, r);
    }
    let slices: Vec<&[u64]> = rs.iter().zip(limbs).map(|(r, l)| &r[..l.len()]).collect();
    let v = f(&slices);
    drop(slices);
    rs.zeroize();
    v
}

/// [`fermat_base2_secret_lanes_or_stop`] in the lanes of one register
/// (`arith::lanes::fermat_base2_secret`, rows written out up to 1244
/// bits and bands up to 8192: up to eight numbers of one bit length, each
/// modulo its own n) where it applies: `Some(verdicts)`,
/// `Some(None)` once `stop` is set, `None` where it does not apply.
fn fermat_base2_secret_in_lanes(ns: &[&Integer], stop: &AtomicBool) -> Option<Option<Vec<bool>>> {
    let bits = ns.first()?.significant_bits();
    let k = crate::arith::lanes::lanes_digits(bits)?;
    if !(2..=crate::arith::lanes::LANES).contains(&ns.len())
        || ns
            .iter()
            .any(|n| n.significant_bits() != bits || n.is_even() || **n < 5u32)
    {
        return None;
    }
    let limbs: Vec<&[u64]> = ns.iter().map(|n| n.as_limbs()).collect();
    let v = with_pow2_mods(&limbs, 52 * k, |rs| {
        crate::arith::lanes::fermat_base2_secret(&limbs, rs, stop)
    });
    Some(v.map(|v| v[..ns.len()].iter().map(|&x| x == 1).collect()))
}

/// How many secret first tests ([`fermat_base2_secret_lanes_or_stop`]) on
/// odd numbers of `bits` bits a search runs at once on this CPU: eight
/// where the lanes of one register take them
/// (`arith::lanes::lanes_digits`), else one.
pub fn secret_first_test_lanes(bits: u32) -> usize {
    if fermat_in_lanes(bits) {
        crate::arith::lanes::LANES
    } else {
        1
    }
}

/// Whether the lanes of one register take base-2 Fermat tests on odd
/// numbers of `bits` bits on this CPU, eight at once (205 to 8192 bits,
/// with AVX-512 IFMA).
pub(crate) fn fermat_in_lanes(bits: u32) -> bool {
    crate::arith::lanes::lanes_digits(bits).is_some()
}

/// The limbs of a group the interleaved public test may take: two to four
/// odd numbers of at least 5, each of `ifma::LIMBS` limbs, on a CPU with
/// IFMA.
fn group_limbs<'a>(ns: &[&'a Integer]) -> Option<Vec<&'a [u64]>> {
    if !ifma::available()
        || !(2..=ifma::MAX_LANES).contains(&ns.len())
        || ns.iter().any(|n| **n < 5u32 || n.is_even())
    {
        return None;
    }
    let limbs: Vec<&[u64]> = ns.iter().map(|n| n.as_limbs()).collect();
    limbs
        .iter()
        .all(|l| ifma::LIMBS.contains(&l.len()))
        .then_some(limbs)
}

/// How many public first tests ([`strong_base2_public_lanes_or_stop`]) on
/// odd numbers of `bits` bits a search runs at once on this CPU: 1 where
/// they do not apply.
pub fn first_test_lanes(bits: u32) -> usize {
    ifma::lanes(bits)
}

/// The loop of [`fermat_base2_secret_or_stop`] on `gmp::mont` for n of
/// `bits` bits (public): `Some(1)` when 2^(n−1) ≡ 1 (mod n), `Some(0)`
/// when not, `None` once `stop` is set. Nothing in it branches on n
/// (`arith::ct_check` runs it under valgrind with n marked undefined).
pub(crate) fn fermat_mont_core(m: &mut Mont<'_>, bits: usize, stop: &AtomicBool) -> Option<u64> {
    let one = m.one();
    let mut acc = one.clone();
    // Left to right over the bits of n − 1 (bit 0 of n − 1 is 0): square,
    // then double by the bit.
    for i in (0..bits).rev() {
        if i % 64 == 0 && stop.load(Ordering::Relaxed) {
            crate::work::given_up((bits - 1 - i) as u64, bits as u64);
            return None;
        }
        let bit = if i == 0 { 0 } else { m.modulus_bit(i) };
        m.square_double_if(&mut acc, bit);
    }
    // acc is the Montgomery form of 2^(n−1) mod n; compare with 1's.
    Some(acc.ct_eq(&one))
}

/// [`fermat_base2_secret_or_stop`] on `arith::fixed`'s arithmetic for n
/// of N ≤ 7 limbs: the same steps, in registers.
fn fermat_base2_fixed<const N: usize>(n: &Integer, stop: &AtomicBool) -> bool {
    let Some(m) = FixedMont::<N>::new(n.as_limbs()) else {
        return false;
    };
    fermat_fixed_core(&m, n.significant_bits() as usize, stop) == Some(1)
}

/// The loop of [`fermat_base2_fixed`] for n of `bits` bits (public):
/// `Some(1)` when 2^(n−1) ≡ 1 (mod n), `Some(0)` when not, `None` once
/// `stop` is set. Nothing in it branches on n (`arith::ct_check` runs it
/// under valgrind with n marked undefined).
pub(crate) fn fermat_fixed_core<const N: usize>(
    m: &FixedMont<N>,
    bits: usize,
    stop: &AtomicBool,
) -> Option<u64> {
    let one = m.one();
    let mut acc = one;
    for i in (0..bits).rev() {
        if i % 64 == 0 && stop.load(Ordering::Relaxed) {
            acc.zeroize();
            crate::work::given_up((bits - 1 - i) as u64, bits as u64);
            return None;
        }
        acc = m.sqr(&acc);
        let bit = if i == 0 { 0 } else { m.modulus_bit(i) };
        acc = m.double_if(&acc, bit);
    }
    let pass = ct_eq(&acc, &one);
    acc.zeroize();
    Some(pass)
}

/// [`strong_base2_public_or_stop`] on two to four public odd numbers at
/// once, for a search that has that many candidates to test: on CPUs with
/// AVX-512 IFMA, when all are 9 to 128 limbs with the same digit count,
/// their steps interleave (`arith::ifma::strong_base2_lanes`; about 0.6 of
/// the time of two tests at 1024 bits for two, less per number for three
/// or four, see [`first_test_lanes`]). `None` where that does not apply,
/// or once `stop` is set: the caller tests them one by one.
pub fn strong_base2_public_lanes_or_stop(ns: &[&Integer], stop: &AtomicBool) -> Option<Vec<bool>> {
    let limbs = group_limbs(ns)?;
    let rs: Vec<Vec<u64>> = ns.iter().map(|n| ifma_r_mod(n)).collect();
    let r_slices: Vec<&[u64]> = rs.iter().map(|r| &r[..]).collect();
    ifma::strong_base2_lanes(&limbs, &r_slices, stop)
}

/// R = 2^(52k) mod the public n for its IFMA digits (one GMP division), in
/// n's length.
fn ifma_r_mod(n: &Integer) -> Vec<u64> {
    let k = ifma::digits(n.as_limbs()) as u32;
    let r = Integer::from(Integer::ONE << (52 * k)) % n;
    let mut r = r.as_limbs().to_vec();
    r.resize(n.as_limbs().len(), 0);
    r
}

/// A Miller–Rabin round to base 2 (strong probable-prime test) for a
/// *public* odd n (DH candidates), in variable time: with n − 1 = 2^s·d,
/// 2^d by squarings with GMP's fastest `mpn_sqr` and doublings only where d
/// has a one bit (no multiplications by a base, no masked passes), then up
/// to s − 1 squarings looking for −1. About 0.63–0.75× the time of
/// `mpz_powm` from 1024 to 8192 bits (`bench/examples/powm_cost`); on CPUs
/// with AVX-512 IFMA, from 9 to 128 limbs, `arith::ifma`'s radix-2^52
/// steps instead (0.24–0.63× of `mpz_powm` on Zen 5). `n`
/// must be odd and at least 5; smaller or even input returns false. Gives
/// up (false) once `stop` is set, looked at every 64 bits.
pub fn strong_base2_public_or_stop(n: &Integer, stop: &AtomicBool) -> bool {
    if *n < 5u32 || n.is_even() {
        return false;
    }
    if let Some(v) = with_limbs!(n.as_limbs().len(), N => strong_base2_fixed::<N>(n, stop)) {
        return v;
    }
    let limbs = n.as_limbs();
    if ifma::available() && ifma::LIMBS.contains(&limbs.len()) {
        if let Some(v) = ifma::strong_base2(limbs, &ifma_r_mod(n), stop) {
            return v;
        }
        if stop.load(Ordering::Relaxed) {
            return false;
        }
    }
    let Some(mut m) = Mont::new(n) else {
        return false;
    };
    let one = m.one();
    let minus_one = m.minus_one();
    // n is odd, so n − 1 has the bits of n above bit 0, and s ≥ 1.
    let s = n.find_one(1).expect("n ≥ 5 has a one bit above bit 0");
    let mut x = one.clone();
    for i in (s..n.significant_bits()).rev() {
        if i % 64 == 0 && stop.load(Ordering::Relaxed) {
            crate::work::given_up(
                u64::from(n.significant_bits() - 1 - i),
                u64::from(n.significant_bits() - s),
            );
            return false;
        }
        m.square_public(&mut x);
        // n's bit i from its limbs (a GMP call per bit cost 0.7 % of DH).
        if (limbs[i as usize / 64] >> (i % 64)) & 1 == 1 {
            m.double_public(&mut x);
        }
    }
    if stop.load(Ordering::Relaxed) {
        return false;
    }
    if x.ct_eq(&one) == 1 || x.ct_eq(&minus_one) == 1 {
        return true;
    }
    for _ in 1..s {
        m.square_public(&mut x);
        if x.ct_eq(&minus_one) == 1 {
            return true;
        }
        if x.ct_eq(&one) == 1 {
            return false;
        }
    }
    false
}

/// [`strong_base2_public_or_stop`] on `arith::fixed`'s arithmetic for n
/// of N ≤ 7 limbs (odd, at least 5).
fn strong_base2_fixed<const N: usize>(n: &Integer, stop: &AtomicBool) -> bool {
    let Some(m) = FixedMont::<N>::new(n.as_limbs()) else {
        return false;
    };
    let one = m.one();
    let minus_one = m.minus_one();
    let s = n.find_one(1).expect("n ≥ 5 has a one bit above bit 0");
    let mut x = one;
    for i in (s..n.significant_bits()).rev() {
        if i % 64 == 0 && stop.load(Ordering::Relaxed) {
            crate::work::given_up(
                u64::from(n.significant_bits() - 1 - i),
                u64::from(n.significant_bits() - s),
            );
            return false;
        }
        x = m.sqr(&x);
        if n.get_bit(i) {
            x = m.double_if(&x, 1);
        }
    }
    if stop.load(Ordering::Relaxed) {
        return false;
    }
    if ct_eq(&x, &one) == 1 || ct_eq(&x, &minus_one) == 1 {
        return true;
    }
    for _ in 1..s {
        x = m.sqr(&x);
        if ct_eq(&x, &minus_one) == 1 {
            return true;
        }
        if ct_eq(&x, &one) == 1 {
            return false;
        }
    }
    false
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::arith::inverse_mod_2_64;

    /// Every exponentiation given up by its stop flag records how far it
    /// got (for the search's work counter): here at its first check, near
    /// the start, on every path — fixed limbs, AVX-512 IFMA single and
    /// pair where the CPU has it, GMP's Montgomery loop, the public strong
    /// test and a Miller–Rabin round.
    #[test]
    fn a_test_given_up_says_how_far_it_got() {
        let stop = AtomicBool::new(true);
        let odd = |bits: u32| (Integer::from(1) << (bits - 1)) + 12_345u32;
        // The flag is read every 64 bits of the exponent.
        let near_start = |what: &str, bits: u32| {
            let share = crate::work::take_given_up();
            assert!(
                share.is_some_and(|s| s <= 64.0 / f64::from(bits) + 0.01),
                "{what}: {share:?}"
            );
        };
        for bits in [512u32, 1024, 3000] {
            let n = odd(bits);
            assert!(!fermat_base2_secret_or_stop(&n, &stop));
            near_start(&format!("Fermat, {bits} bits"), bits);
            assert!(!strong_base2_public_or_stop(&n, &stop));
            near_start(&format!("strong test, {bits} bits"), bits);
            let cand = crate::prime::mr::MrCandidate::new(n.clone());
            assert!(!cand.round_or_stop(Integer::from(3), true, &stop));
            near_start(&format!("Miller–Rabin, {bits} bits"), bits);
        }
        let (a, b) = (odd(1024), odd(1024) + 2u32);
        // Stopped (or, without IFMA, declined): no verdicts either way.
        assert_eq!(fermat_base2_secret_lanes_or_stop(&[&a, &b], &stop), None);
        if ifma::available() {
            near_start("Fermat pair", 1024);
        } else {
            assert_eq!(crate::work::take_given_up(), None);
        }
    }

    /// A base-2 Fermat pseudoprime of `bits` bits (at least 16): n = p·q
    /// with p ≡ 1 (mod 4) and q = 2p − 1 both prime. Then n − 1 = (p −
    /// 1)(2p + 1), and 2 is a square modulo q ≡ 1 (mod 8), so the orders
    /// of 2 modulo p and q divide p − 1, which divides n − 1. p starts at
    /// 1.25·√(2^(bits − 2)), where 2p² − p has `bits` bits.
    pub(crate) fn fermat_pseudoprime(bits: u32) -> Integer {
        let root = (Integer::from(1u32) << (bits - 2)).sqrt();
        let mut p = Integer::from(&root >> 2u32) + &root;
        loop {
            p = Integer::from(p.next_prime_ref());
            let q = Integer::from(&p * 2u32) - 1u32;
            if p.mod_u(4) == 1 && q.is_probably_prime(30) != rug::integer::IsPrime::No {
                let n = Integer::from(&p * &q);
                assert_eq!(n.significant_bits(), bits, "the start keeps the size");
                return n;
            }
        }
    }

    /// The eight-lane test (`arith::lanes::fermat_base2_secret`, and
    /// its bands from 1245 bits) agrees with mpz_powm from its smallest
    /// size (205 bits) to the rows' largest (1244), and on the bands at
    /// both sides of their digit counts (even counts from 26: 1245 and
    /// 1300 bits at 26 digits, 1350 at 28, 1536 at 30, 1660 at 32, 1661
    /// at 34, 2076 at 40, 2077 at 42, 3071 at 60, 4095 at 80, 6143 and 6144
    /// at 120, 8191 at 158) and at their largest (8192 bits), so every
    /// shape of the last block (two, four, six or eight rows) and of the
    /// edge bands runs; in groups of two to eight (above 4156 bits, of
    /// three and eight, and the prime a named group's p or q: a search for
    /// one would take longer than the test): primes,
    /// plain composites, and up to 2076 bits base-2 Fermat pseudoprimes
    /// that are not prime ([`fermat_pseudoprime`]; larger ones take too
    /// long to find), each in every lane position; lanes differ in n, so a
    /// lane that read another's modulus or exponent would fail. A group of
    /// mixed bit lengths is declined.
    #[test]
    fn the_tests_in_lanes_agree_with_powm() {
        if !crate::arith::ifma::available() {
            crate::capability::skip("ifma", "the eight-lane Fermat test needs AVX-512 IFMA");
            return;
        }
        let never = AtomicBool::new(false);
        let reference = |n: &Integer| {
            Integer::from(2u32)
                .pow_mod(&Integer::from(n - 1u32), n)
                .unwrap()
                == 1u32
        };
        let mut x = Integer::from(0x243f_6a88_85a3_08d3u64);
        let mut next = |bits: u32| {
            x = (Integer::from(&x * &x) + 0x1319_8a2eu32).keep_bits(bits + 40);
            let mut n = Integer::from(&x >> 40u32);
            n.set_bit(bits - 1, true);
            n.set_bit(0, true);
            n
        };
        let mut checked = 0;
        for bits in [
            205u32, 256, 465, 512, 700, 1023, 1024, 1100, 1244, 1245, 1300, 1350, 1536, 1660, 1661,
            1800, 2047, 2048, 2076, 2077, 2500, 3071, 3072, 4095, 4096, 4156, 6143, 6144, 8191,
            8192,
        ] {
            assert!(fermat_in_lanes(bits), "{bits}");
            let mut ns: Vec<Integer> = (0..6).map(|_| next(bits)).collect();
            ns.push(match bits {
                6143 | 6144 | 8191 | 8192 => {
                    let group = if bits > 8000 {
                        crate::dh::named::Group::Ffdhe8192
                    } else {
                        crate::dh::named::Group::Ffdhe6144
                    };
                    let params = group.params();
                    if bits % 2 == 0 {
                        params.p.clone()
                    } else {
                        params.q.clone().expect("a safe prime's q")
                    }
                }
                _ => Integer::from(next(bits).next_prime_ref()),
            });
            ns.retain(|n| n.significant_bits() == bits);
            if bits <= 2076 {
                let ps = fermat_pseudoprime(bits);
                assert!(reference(&ps), "a base-2 Fermat pseudoprime");
                assert_eq!(ps.is_probably_prime(30), rug::integer::IsPrime::No);
                ns.push(ps);
            }
            let want: Vec<bool> = ns.iter().map(reference).collect();
            assert!(want.iter().any(|&w| w) && want.iter().any(|&w| !w));
            // Every number in every lane position, groups of two to eight.
            let sizes: &[usize] = if bits <= 4156 {
                &[2, 3, 4, 5, 6, 7, 8]
            } else {
                &[3, 8]
            };
            for &size in sizes {
                for start in 0..ns.len() {
                    let at = |i: usize| (start + i) % ns.len();
                    let group: Vec<&Integer> = (0..size).map(|i| &ns[at(i)]).collect();
                    let got = fermat_base2_secret_lanes_or_stop(&group, &never).expect("taken");
                    let want: Vec<bool> = (0..size).map(|i| want[at(i)]).collect();
                    assert_eq!(got, want, "{bits} bits, group of {size} from {start}");
                    checked += 1;
                }
            }
        }
        assert!(checked > 1000);
        // Mixed lengths go elsewhere (`None` here, the caller's path).
        let (a, b) = (next(1024), next(1023));
        assert!(fermat_base2_secret_in_lanes(&[&a, &b], &never).is_none());
        assert_eq!(
            crate::arith::lanes::fermat_digits(1245),
            None,
            "the rows stop at 24 digits"
        );
        for (bits, k) in [
            (1245u32, 26usize),
            (1300, 26),
            (1350, 28),
            (1536, 30),
            (1660, 32),
            (1661, 34),
            (2076, 40),
            (2077, 42),
            (3071, 60),
            (4095, 80),
            (4156, 80),
            (4157, 82),
            (6143, 120),
            (8131, 158),
            (8191, 158),
            (8192, 158),
        ] {
            assert_eq!(crate::arith::lanes::banded_digits(bits), Some(k), "{bits}");
        }
        assert!(
            !fermat_in_lanes(8193),
            "the bands stop at 8192 bits (128 limbs)"
        );
        let (a, b) = (next(2048), next(2047));
        assert!(fermat_base2_secret_in_lanes(&[&a, &b], &never).is_none());
        assert_eq!(
            crate::arith::lanes::fermat_digits(204),
            None,
            "and start at 5"
        );
    }

    #[test]
    fn neg_inverse_is_exact() {
        for m in [1u64, 3, 5, 0xffff_ffff_ffff_ffff, 0x1234_5678_9abc_def1] {
            assert_eq!(
                m.wrapping_mul(inverse_mod_2_64(m).wrapping_neg()),
                u64::MAX,
                "m = {m:#x}"
            );
        }
    }

    /// A Miller–Rabin round to base 2 by mpz_powm (also `arith::ifma`'s
    /// reference).
    pub(crate) fn strong_reference(n: &Integer) -> bool {
        let n1 = Integer::from(n - 1u32);
        let s = n1.find_one(0).unwrap();
        let mut x = Integer::from(2u32)
            .pow_mod(&Integer::from(&n1 >> s), n)
            .unwrap();
        if x == 1u32 || x == n1 {
            return true;
        }
        for _ in 1..s {
            x = x.pow_mod(&Integer::from(2u32), n).unwrap();
            if x == n1 {
                return true;
            }
        }
        false
    }

    /// The strong test tells Fermat pseudoprimes to base 2 that are not
    /// strong ones (561, 645, 1105, F_5 … F_11) from strong pseudoprimes
    /// (2047, 3277, 4033, 4681, 8321), which it passes as it must.
    #[test]
    fn strong_test_on_pseudoprimes() {
        let never = AtomicBool::new(false);
        for n in [561u32, 645, 1105, 1387, 1729, 2465] {
            let n = Integer::from(n);
            assert!(fermat_base2_secret(&n), "{n} is a Fermat pseudoprime");
            assert!(!strong_base2_public_or_stop(&n, &never), "{n}");
        }
        for n in [2047u32, 3277, 4033, 4681, 8321, 15841, 29341] {
            assert!(
                strong_base2_public_or_stop(&Integer::from(n), &never),
                "{n}"
            );
        }
        for k in [5u32, 6, 7, 8, 9, 10, 11] {
            let f = (Integer::from(1u32) << (1u32 << k)) + 1u32;
            assert_eq!(
                strong_base2_public_or_stop(&f, &never),
                strong_reference(&f),
                "F_{k}"
            );
        }
        // Primes of every residue of n − 1's power of two, large and small.
        for p in [5u32, 13, 17, 97, 257, 65537, 1_000_003] {
            assert!(
                strong_base2_public_or_stop(&Integer::from(p), &never),
                "{p}"
            );
        }
        let p = (Integer::from(1u32) << 4423u32) - 1u32; // a Mersenne prime
        assert!(strong_base2_public_or_stop(&p, &never));
    }

    /// Agrees with mpz_powm on primes, composites, base-2 pseudoprimes and
    /// sizes from one limb to 40 (odd limb counts, small top limbs).
    #[test]
    fn agrees_with_powm() {
        let reference = |n: &Integer| {
            let e = Integer::from(n - 1u32);
            let r = Integer::from(2u32).pow_mod(&e, n).unwrap() == 1u32;
            let never = AtomicBool::new(false);
            assert_eq!(
                strong_base2_public_or_stop(n, &never),
                strong_reference(n),
                "strong: {n}"
            );
            r
        };
        // 341 = 11·31 and 561 (Carmichael) are base-2 pseudoprimes.
        for small in [5u32, 7, 9, 15, 341, 561, 645, 1105, 65537, 65539] {
            let n = Integer::from(small);
            assert_eq!(fermat_base2_secret(&n), reference(&n), "n = {small}");
        }
        assert!(!fermat_base2_secret(&Integer::from(4u32)));
        let never = AtomicBool::new(false);
        assert!(!strong_base2_public_or_stop(&Integer::from(4u32), &never));
        assert!(!strong_base2_public_or_stop(&Integer::from(3u32), &never));
        let stop = AtomicBool::new(true);
        assert!(!strong_base2_public_or_stop(
            &Integer::from(65537u32),
            &stop
        ));
        assert!(strong_base2_public_or_stop(
            &Integer::from(65537u32),
            &never
        ));
        assert!(!fermat_base2_secret(&Integer::from(3u32)));
        let mut x = Integer::from(0x9e37_79b9_7f4a_7c15u64);
        let mut primes = 0;
        // Three numbers per size (and the prime after each) keep every limb
        // count and top-limb shape of the six this once used, at half the
        // cost of finding the primes.
        for bits in [64u32, 65, 127, 128, 200, 512, 1000, 1024, 1536, 2048, 2560] {
            for _ in 0..3 {
                x = (Integer::from(&x * &x) + 0x6a09_e667u32).keep_bits(bits + 40);
                let mut n = Integer::from(&x >> 40u32);
                n.set_bit(bits - 1, true);
                n.set_bit(0, true);
                let p = Integer::from(n.next_prime_ref());
                for c in [n, p] {
                    let r = reference(&c);
                    primes += r as u32;
                    assert_eq!(fermat_base2_secret(&c), r, "{bits} bits");
                }
            }
        }
        assert!(primes >= 33);
        // Composite Fermat numbers F_5 … F_11 (up to 2049 bits) are base-2
        // pseudoprimes: the test must pass them, as mpz_powm does.
        for k in [5u32, 6, 7, 8, 9, 10, 11] {
            let f = (Integer::from(1u32) << (1u32 << k)) + 1u32;
            assert_eq!(fermat_base2_secret(&f), reference(&f), "F_{k}");
            assert!(fermat_base2_secret(&f), "F_{k} is a base-2 pseudoprime");
        }
    }
}
