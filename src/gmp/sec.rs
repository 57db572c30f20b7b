//! Side-channel-silent arithmetic on secret values through GMP's `mpn_sec_*`
//! functions: a remainder by a secret modulus and a Miller–Rabin round on
//! a secret candidate, both in time that depends only on public sizes.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::secure::SecretVec;
use gmp_mpfr_sys::gmp;
use rug::Integer;

use super::mont::Mont;

type Limb = u64;

fn buf(l: usize) -> SecretVec<Limb> {
    SecretVec::zeroed(l.max(1))
}

/// `x mod m` for `x ≥ 0` and `m > 0` with `mpn_sec_div_r`: the time
/// depends on the limb counts of `x` and `m` only. Scratch is wiped.
pub(crate) fn rem(x: &Integer, m: &Integer) -> Integer {
    debug_assert!(*x >= 0 && *m > 0);
    let (xl, ml) = (x.as_limbs(), m.as_limbs());
    if xl.len() < ml.len() {
        return x.clone();
    }
    let mut num = SecretVec::from_slice(xl);
    // SAFETY: `num` has xl.len() ≥ ml.len() limbs, `m`'s top limb is non-zero
    // (rug normalises), and the scratch has the size GMP asks for.
    unsafe {
        let itch = gmp::mpn_sec_div_r_itch(xl.len() as _, ml.len() as _) as usize;
        let mut scratch = buf(itch);
        gmp::mpn_sec_div_r(
            num.as_mut_ptr(),
            xl.len() as _,
            ml.as_ptr(),
            ml.len() as _,
            scratch.as_mut_ptr(),
        );
    }
    Integer::from_digits(&num[..ml.len()], rug::integer::Order::Lsf)
}

/// Moduli above this many bits get their Miller–Rabin exponentiation in
/// chunks (RSA above 8192 bits only).
pub(crate) const CHUNKED_ABOVE_BITS: u32 = 4096;
/// Exponent bits per chunk: one chunk at 8192 bits is a quarter of a round.
const CHUNK_BITS: u32 = 2048;

/// base^d mod m, d taken as `bits` bits long, by `mpn_sec_powm` in chunks
/// of `chunk` exponent bits from the top: y ← y^(2^w) · base^(d's next w
/// bits), each power a `mpn_sec_powm`, the product by `mpn_sec_mul`
/// reduced by `mpn_sec_div_r`. One chunk (`chunk` ≥ `bits`) is a single
/// `mpn_sec_powm`; more cost about twice the work. The time depends on
/// the limb counts, `bits` and `chunk` only. `None` once `stop` is set
/// (looked at between chunks).
fn sec_pow(
    b: &[Limb],
    d: &[Limb],
    bits: u32,
    m: &[Limb],
    chunk: u32,
    stop: &AtomicBool,
) -> Option<SecretVec<Limb>> {
    let len = m.len();
    let n_l = len as gmp::size_t;
    let width_max = chunk.min(bits);
    // SAFETY: (whole block) every pointer comes from a live slice or
    // SecretVec of the length GMP is told; the scratch buffers have the
    // sizes the _itch functions ask for (for the largest base and exponent
    // used); mpn_rshift works in place.
    unsafe {
        let itch = gmp::mpn_sec_powm_itch(len as _, (width_max + 1) as _, n_l)
            .max(gmp::mpn_sec_powm_itch(b.len() as _, width_max as _, n_l))
            .max(gmp::mpn_sec_div_r_itch(2 * n_l, n_l))
            .max(gmp::mpn_sec_mul_itch(n_l, n_l));
        let mut scratch = buf(itch as usize);
        let mut y = buf(len);
        if chunk >= bits {
            gmp::mpn_sec_powm(
                y.as_mut_ptr(),
                b.as_ptr(),
                b.len() as _,
                d.as_ptr(),
                bits as _,
                m.as_ptr(),
                n_l,
                scratch.as_mut_ptr(),
            );
            return Some(y);
        }
        let mut e = buf(len);
        let mut t = buf(len);
        let mut prod = buf(2 * len);
        // 2^w as an exponent of w + 1 bits.
        let mut two_w = buf(width_max as usize / 64 + 1);
        let chunks = bits.div_ceil(chunk);
        for c in (0..chunks).rev() {
            let lo = c * chunk;
            let w = chunk.min(bits - lo);
            if c + 1 < chunks {
                if stop.load(Ordering::Relaxed) {
                    return None;
                }
                // y ← y^(2^w).
                two_w.fill(0);
                two_w[w as usize / 64] = 1 << (w % 64);
                t.copy_from_slice(&y);
                gmp::mpn_sec_powm(
                    y.as_mut_ptr(),
                    t.as_ptr(),
                    n_l,
                    two_w.as_ptr(),
                    (w + 1) as _,
                    m.as_ptr(),
                    n_l,
                    scratch.as_mut_ptr(),
                );
            }
            // e = d's bits lo .. lo + w (a public shift; mpn_sec_powm
            // reads only the low w bits).
            e.copy_from_slice(d);
            let limbs = lo as usize / 64;
            e.copy_within(limbs.., 0);
            e[len - limbs..].fill(0);
            if lo % 64 != 0 {
                gmp::mpn_rshift(e.as_mut_ptr(), e.as_ptr(), n_l, lo % 64);
            }
            gmp::mpn_sec_powm(
                t.as_mut_ptr(),
                b.as_ptr(),
                b.len() as _,
                e.as_ptr(),
                w as _,
                m.as_ptr(),
                n_l,
                scratch.as_mut_ptr(),
            );
            if c + 1 == chunks {
                y.copy_from_slice(&t);
            } else {
                gmp::mpn_sec_mul(
                    prod.as_mut_ptr(),
                    y.as_ptr(),
                    n_l,
                    t.as_ptr(),
                    n_l,
                    scratch.as_mut_ptr(),
                );
                gmp::mpn_sec_div_r(
                    prod.as_mut_ptr(),
                    2 * n_l,
                    m.as_ptr(),
                    n_l,
                    scratch.as_mut_ptr(),
                );
                y.copy_from_slice(&prod[..len]);
            }
        }
        Some(y)
    }
}

/// Largest s = v2(n − 1) the constant-time round handles: its squarings
/// always run `MAX_S − 1` times. Candidates with a larger s (probability
/// 2^-63 for a random odd number) are rejected unbuilt by the RSA source.
pub(crate) const MAX_S: u32 = 63;

/// One strong-probable-prime round to `base` (2 ≤ base ≤ n − 2) on an odd
/// secret `n` with v2(n − 1) ≤ [`MAX_S`], in time that depends only on the
/// limb count and bit size of n:
/// - s = v2(n − 1) by a count of trailing zeros of one limb, and
///   d = (n − 1) / 2^s by `mpn_rshift` (whose time does not depend on the
///   count);
/// - y = base^d mod n by `mpn_sec_powm` with the exponent length set to the
///   bit size of n, not of d (`mpz_powm_sec` would take d's length, and so
///   reveal s);
/// - the squarings run `MAX_S − 1` times in Montgomery form
///   ([`super::mont`]), each compared with n − 1 by a full-length XOR, and
///   only those before the s-th count.
///
/// Above [`CHUNKED_ABOVE_BITS`] the exponentiation runs in chunks of
/// [`CHUNK_BITS`] exponent bits and gives up (a failed round) once `stop`
/// is set, so that a cancelled RSA-16384 search does not wait for one
/// uninterruptible 8192-bit `mpn_sec_powm` (about 230 ms here). The chunk
/// boundaries depend only on the size of n, and `stop` only on the caller.
///
/// Returns `None` when v2(n − 1) > `MAX_S` (the caller decides).
pub(crate) fn mr_round(n: &Integer, base: &Integer, stop: &AtomicBool) -> Option<bool> {
    let m = n.as_limbs();
    let len = m.len();
    if len == 0 || m[0] & 1 == 0 || (m[0] == 1 && len > 1) || *n < 5u32 {
        return None;
    }
    let s = (m[0] ^ 1).trailing_zeros();
    if s > MAX_S {
        return None;
    }
    let bits = n.significant_bits();
    let b = base.as_limbs();
    if b.is_empty() || b.len() > len {
        return None;
    }
    let mut d = buf(len);
    d.copy_from_slice(m);
    d[0] ^= 1;
    // SAFETY: `d` has len limbs; mpn_rshift works in place (rp = up), as
    // the GMP manual allows. d = (n − 1) >> s, 1 ≤ s ≤ 63.
    unsafe { gmp::mpn_rshift(d.as_mut_ptr(), d.as_ptr(), len as _, s) };
    let chunk = if bits > CHUNKED_ABOVE_BITS {
        CHUNK_BITS
    } else {
        bits
    };
    let Some(y) = sec_pow(b, &d, bits, m, chunk, stop) else {
        return Some(false);
    };
    // In Montgomery form from here: x = y·R, compared with R (1) and
    // n − R (−1).
    let mut mont = Mont::new(n)?;
    let mut x = mont.mont_form(&y);
    let one = mont.one();
    let minus_one = mont.minus_one();
    let mut pass = x.ct_eq(&one) | x.ct_eq(&minus_one);
    for j in 1..MAX_S {
        mont.square(&mut x);
        // Counts only while j < s: mask from the borrow of j − s.
        let live = (j.wrapping_sub(s) >> 31) as Limb & 1;
        pass |= x.ct_eq(&minus_one) & live;
    }
    Some(pass == 1)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn rem_agrees_with_gmp() {
        let mut x = Integer::from(0x9e37_79b9_7f4a_7c15u64);
        for bits in [64u32, 65, 130, 700, 1024, 2048, 4100] {
            x = (Integer::from(&x * &x) + 0x6a09_e667u32).keep_bits(bits * 2 + 40);
            for mbits in [bits / 2 + 1, bits, bits + 70] {
                let m = Integer::from(&x >> 17u32).keep_bits(mbits) | 1u32;
                assert_eq!(rem(&x, &m), Integer::from(&x % &m), "{bits}/{mbits}");
            }
        }
    }

    /// The textbook strong-probable-prime round to base `a`, by mpz_powm
    /// (also the reference of `prime::mr`'s tests).
    pub(crate) fn reference(n: &Integer, a: &Integer) -> bool {
        let nm1 = Integer::from(n - 1u32);
        let s = nm1.find_one(0).unwrap();
        let mut x = a.clone().pow_mod(&Integer::from(&nm1 >> s), n).unwrap();
        if x == 1u32 || x == nm1 {
            return true;
        }
        for _ in 1..s {
            x = x.square() % n;
            if x == nm1 {
                return true;
            }
        }
        false
    }

    /// A `bits`-bit prime p with v2(p − 1) = s, from the walk `x`.
    pub(crate) fn prime_with_s(x: &mut Integer, bits: u32, s: u32) -> Integer {
        *x = (Integer::from(&*x * &*x) + 0x9e37_79b9u32).keep_bits(bits + 64);
        let mut k = Integer::from(&*x >> 64u32).keep_bits(bits - s);
        k.set_bit(bits - s - 1, true);
        k |= 1u32;
        let mut n = (Integer::from(&k << s)) + 1u32;
        // GMP's test with reps ≤ 24 is Baillie–PSW: enough to pick test
        // primes (the round itself is what is under test).
        while n.is_probably_prime(1) == rug::integer::IsPrime::No {
            k += 2u32;
            n = (Integer::from(&k << s)) + 1u32;
        }
        n
    }

    /// Agrees with the textbook round on primes, strong pseudoprimes and
    /// composites, for s from 1 to 63, at one limb and at many.
    #[test]
    fn mr_round_agrees_with_reference() {
        let mut checked = 0;
        for small in [101u32, 561, 2047, 3277, 4033, 65537, 2147483647] {
            let n = Integer::from(small);
            for a in [2u32, 3, 10, 99] {
                let a = Integer::from(a);
                assert_eq!(
                    mr_round(&n, &a, &AtomicBool::new(false)),
                    Some(reference(&n, &a)),
                    "{small} {a}"
                );
                checked += 1;
            }
        }
        // Primes p = k·2^s + 1 for s = 1..63 at 64..1024 bits, and the
        // extremes and the middle at 2048 (32 limbs: the basecase limit).
        let mut x = Integer::from(0x1234_5678_9abc_def1u64);
        for bits in [64u32, 200, 1024, 2048] {
            let all = [1u32, 2, 5, 17, 32, 62, 63];
            let some = [1u32, 32, 63];
            for &s in if bits < 2048 { &all[..] } else { &some[..] } {
                if s + 8 > bits {
                    continue;
                }
                let n = prime_with_s(&mut x, bits, s);
                assert_eq!(Integer::from(&n - 1u32).find_one(0), Some(s));
                for a in [2u32, 3, 7] {
                    let a = Integer::from(a);
                    assert_eq!(
                        mr_round(&n, &a, &AtomicBool::new(false)),
                        Some(true),
                        "prime, s={s}"
                    );
                    // A composite with the same s: n·(2^(s+1)·j + 1).
                    let c: Integer = &n * ((Integer::from(1u32) << (s + 1)) * 3u32 + 1u32);
                    if Integer::from(&c - 1u32).find_one(0).unwrap() <= MAX_S {
                        assert_eq!(
                            mr_round(&c, &a, &AtomicBool::new(false)),
                            Some(reference(&c, &a)),
                            "composite, s={s}"
                        );
                    }
                    checked += 2;
                }
            }
        }
        assert!(checked > 100);
        // s = 64 is refused, not misjudged.
        let big = (Integer::from(5u32) << 64u32) + 1u32;
        assert_eq!(
            mr_round(&big, &Integer::from(2u32), &AtomicBool::new(false)),
            None
        );
    }

    /// The chunked exponentiation agrees with `mpz_powm` for chunk sizes
    /// that divide the exponent length, that do not, and that are not
    /// multiples of 64, with bases shorter than the modulus; a set stop
    /// flag ends it between chunks; a single chunk never looks at it.
    #[test]
    fn chunked_power_agrees_and_stops() {
        let mut x = Integer::from(0x0123_4567_89ab_cdefu64);
        for bits in [700u32, 1024, 4100] {
            x = (Integer::from(&x * &x) + 0x9e37_79b9u32).keep_bits(bits * 2 + 64);
            let m = (Integer::from(&x >> 64u32).keep_bits(bits) | 1u32)
                | (Integer::from(1u32) << (bits - 1));
            let d = Integer::from(&x >> 7u32).keep_bits(bits - 3);
            for base in [Integer::from(3u32), Integer::from(&x >> 100u32) % &m] {
                let want = base.clone().pow_mod(&d, &m).unwrap();
                let mut dl = d.as_limbs().to_vec();
                dl.resize(m.as_limbs().len(), 0);
                for chunk in [bits, 64, 100, 333, 512, bits - 1] {
                    let y = sec_pow(
                        base.as_limbs(),
                        &dl,
                        bits,
                        m.as_limbs(),
                        chunk,
                        &AtomicBool::new(false),
                    )
                    .expect("not stopped");
                    assert_eq!(
                        Integer::from_digits(&y, rug::integer::Order::Lsf),
                        want,
                        "{bits}/{chunk}"
                    );
                }
                let stop = AtomicBool::new(true);
                assert!(sec_pow(base.as_limbs(), &dl, bits, m.as_limbs(), 333, &stop).is_none());
                assert!(sec_pow(base.as_limbs(), &dl, bits, m.as_limbs(), bits, &stop).is_some());
            }
        }
    }

    /// Above 4096 bits the round itself stops: a stopped round fails.
    #[test]
    fn a_large_round_stops() {
        let n = (Integer::from(1u32) << 6000u32) + 3u32 * 4u32 + 1u32;
        let stop = AtomicBool::new(true);
        assert_eq!(mr_round(&n, &Integer::from(2u32), &stop), Some(false));
        // Not stopped, the chunked round judges right: the Mersenne prime
        // 2^4423 − 1 passes, 2^4423 − 3 (divisible by 5) fails.
        let never = AtomicBool::new(false);
        let p = (Integer::from(1u32) << 4423u32) - 1u32;
        assert!(p.significant_bits() > CHUNKED_ABOVE_BITS);
        assert_eq!(mr_round(&p, &Integer::from(3u32), &never), Some(true));
        let c = (Integer::from(1u32) << 4423u32) - 3u32;
        assert_eq!(mr_round(&c, &Integer::from(3u32), &never), Some(false));
    }
}
