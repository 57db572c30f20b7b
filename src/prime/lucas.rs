//! The strong Lucas probable-prime test (Baillie–Wagstaff 1980, FIPS 186-5
//! B.3.3 describes the non-strong variant), with Selfridge's method A for
//! the parameters: D is the first of 5, −7, 9, −11, 13, … with Jacobi
//! symbol (D/n) = −1, P = 1, Q = (1 − D)/4.
//!
//! With n + 1 = d·2^s, d odd, n passes if U_d ≡ 0 or V_(d·2^r) ≡ 0 (mod n)
//! for some 0 ≤ r < s. Together with a Miller–Rabin round to base 2 this is
//! the Baillie–PSW test, for which no composite is known. The values are
//! public (DH parameters), so the arithmetic is not constant-time.

use rug::Integer;

/// Halves `x` modulo odd `n` (x in [0, n)).
fn half_mod(x: &mut Integer, n: &Integer) {
    if x.is_odd() {
        *x += n;
    }
    *x >>= 1;
}

/// True if odd `n` > 2 is a strong Lucas probable prime (Selfridge
/// parameters). Perfect squares, for which no suitable D exists, and
/// numbers with a small factor found while choosing D are composite.
pub(crate) fn strong_lucas(n: &Integer) -> bool {
    strong_lucas_or_stop(n, &std::sync::atomic::AtomicBool::new(false))
}

/// [`strong_lucas`] that gives up (returning false) once `stop` is set,
/// looked at every 64 steps of the chain (a cancelled search waits for no
/// more than that).
pub(crate) fn strong_lucas_or_stop(n: &Integer, stop: &std::sync::atomic::AtomicBool) -> bool {
    if *n <= 2u32 || n.is_even() {
        return *n == 2u32;
    }
    if n.is_perfect_square() {
        return false;
    }
    // Selfridge: D = 5, −7, 9, −11, …
    let mut d_abs: u32 = 5;
    let mut negative = false;
    let d: i64 = loop {
        let d = if negative {
            -(d_abs as i64)
        } else {
            d_abs as i64
        };
        let j = Integer::from(d).jacobi(n);
        if j == -1 {
            break d;
        }
        if j == 0 && *n != d_abs {
            return false; // gcd(|D|, n) is a proper factor
        }
        d_abs += 2;
        negative = !negative;
        if d_abs > 1_000_000 {
            // Unreachable for non-squares in practice (D is small on
            // average); refuse rather than loop.
            return false;
        }
    };
    // P = 1, Q = (1 − D)/4 (exact: D ≡ 1 mod 4 by construction).
    let q_small = (1 - d) / 4;
    let modn = |v: i64| -> Integer { mod_n(Integer::from(v), n) };
    let q = modn(q_small);
    let dd = modn(d);

    let n_plus_1 = Integer::from(n + 1u32);
    let s = n_plus_1.find_one(0).unwrap_or(0);
    let k = Integer::from(&n_plus_1 >> s);

    // Left-to-right binary Lucas chain for index k, from (U_1, V_1, Q^1).
    let mut u = Integer::from(1u32);
    let mut v = Integer::from(1u32); // V_1 = P = 1
    let mut qk = q.clone();
    let mut t = Integer::new();
    for i in (0..k.significant_bits() - 1).rev() {
        if i % 64 == 0 && stop.load(std::sync::atomic::Ordering::Relaxed) {
            crate::work::given_up(
                u64::from(k.significant_bits() - 2 - i),
                u64::from(k.significant_bits() - 1),
            );
            return false;
        }
        // Doubling: U_2m = U_m V_m, V_2m = V_m² − 2Q^m, Q^2m = (Q^m)².
        u *= &v;
        u %= n;
        v.square_mut();
        t.clone_from(&qk);
        t <<= 1;
        v -= &t;
        v = mod_n(v, n);
        qk.square_mut();
        qk %= n;
        if k.get_bit(i) {
            // Step: U_(m+1) = (P U + V)/2, V_(m+1) = (D U + P V)/2.
            t.clone_from(&u);
            t += &v;
            t %= n;
            let mut nv = Integer::from(&dd * &u);
            nv += &v;
            nv %= n;
            u.clone_from(&t);
            half_mod(&mut u, n);
            v = nv;
            half_mod(&mut v, n);
            qk *= &q;
            qk %= n;
        }
    }
    if u == 0u32 || v == 0u32 {
        return true;
    }
    for _ in 1..s {
        v.square_mut();
        t.clone_from(&qk);
        t <<= 1;
        v -= &t;
        v = mod_n(v, n);
        if v == 0u32 {
            return true;
        }
        qk.square_mut();
        qk %= n;
    }
    false
}

/// x mod n in [0, n).
fn mod_n(x: Integer, n: &Integer) -> Integer {
    let mut r = x % n;
    if r < 0 {
        r += n;
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prime::small::odd_primes_below;

    #[test]
    fn primes_pass() {
        for p in odd_primes_below(5000).into_iter().filter(|&p| p > 5) {
            assert!(strong_lucas(&Integer::from(p)), "{p}");
        }
        let m127 = (Integer::from(1u32) << 127u32) - 1u32;
        assert!(strong_lucas(&m127));
        let m521 = (Integer::from(1u32) << 521u32) - 1u32;
        assert!(strong_lucas(&m521));
    }

    #[test]
    fn known_strong_lucas_pseudoprimes_pass_and_other_composites_fail() {
        // OEIS A217255: the strong Lucas pseudoprimes (Selfridge method A)
        // below 30000. They must pass; every other odd composite below
        // 30000 must fail. (Miller–Rabin base 2 rejects all of them, which
        // is why BPSW combines the two.)
        let pseudo = [5459u32, 5777, 10877, 16109, 18971, 22499, 24569, 25199];
        let primes: std::collections::HashSet<u32> = odd_primes_below(30000).into_iter().collect();
        for n in (9u32..30000).step_by(2) {
            if primes.contains(&n) {
                continue;
            }
            let got = strong_lucas(&Integer::from(n));
            assert_eq!(got, pseudo.contains(&n), "{n}");
        }
    }

    #[test]
    fn squares_and_big_composites_fail() {
        let m127 = (Integer::from(1u32) << 127u32) - 1u32;
        assert!(!strong_lucas(&Integer::from(&m127 * &m127)));
        let m89 = (Integer::from(1u32) << 89u32) - 1u32;
        assert!(!strong_lucas(&Integer::from(&m127 * &m89)));
        assert!(!strong_lucas(&Integer::from(49u32)));
    }
}
