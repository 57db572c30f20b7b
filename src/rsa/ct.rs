//! Constant-time helpers for secret RSA values: a binary GCD whose
//! instruction sequence and memory accesses depend only on the public bit
//! bound, never on the values (masks instead of branches, fixed iteration
//! counts, whole-array operations).
//!
//! Used for λ = lcm(p − 1, q − 1): GMP's `mpz_gcd`/`mpz_lcm` branch on the
//! values (Lehmer / half-GCD), which would leak timing on p and q.

use rug::integer::Order;
use rug::Integer;

type Limbs = Vec<u64>;

/// All-ones if `bit` is 1, else zero.
#[inline]
fn mask(bit: u64) -> u64 {
    0u64.wrapping_sub(bit & 1)
}

/// `a` ← `b` where mask is all-ones (element-wise select).
fn select(m: u64, a: &mut [u64], b: &[u64]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x ^= m & (*x ^ *y);
    }
}

/// Swaps `a` and `b` where mask is all-ones.
fn swap(m: u64, a: &mut [u64], b: &mut [u64]) {
    for (x, y) in a.iter_mut().zip(b.iter_mut()) {
        let t = m & (*x ^ *y);
        *x ^= t;
        *y ^= t;
    }
}

fn shr1(a: &mut [u64]) {
    let n = a.len();
    for i in 0..n {
        let hi = if i + 1 < n { a[i + 1] << 63 } else { 0 };
        a[i] = (a[i] >> 1) | hi;
    }
}

fn shl1(a: &mut [u64]) {
    for i in (0..a.len()).rev() {
        let lo = if i > 0 { a[i - 1] >> 63 } else { 0 };
        a[i] = (a[i] << 1) | lo;
    }
}

/// out = a − b (wrapping); returns the borrow (1 if a < b).
fn sub(out: &mut [u64], a: &[u64], b: &[u64]) -> u64 {
    let mut borrow = 0u64;
    for i in 0..a.len() {
        let (d1, b1) = a[i].overflowing_sub(b[i]);
        let (d2, b2) = d1.overflowing_sub(borrow);
        out[i] = d2;
        borrow = (b1 | b2) as u64;
    }
    borrow
}

fn to_limbs(v: &Integer, len: usize) -> Limbs {
    let mut out = vec![0u64; len];
    let src = v.as_limbs();
    out[..src.len()].copy_from_slice(src);
    out
}

/// gcd(x, y) for 0 ≤ x, y < 2^bits, not both zero, in time that depends
/// only on `bits`.
///
/// 1. Remove the common factors of two (`bits` conditional halvings).
/// 2. Binary GCD with one operand odd: each of the 2·`bits` steps makes x
///    odd (conditional swap), subtracts the smaller from the larger when y
///    is odd (conditional swap and select), and halves the even y. Each
///    step removes at least one bit from x·y, so y reaches 0 and x is the
///    odd part of the gcd.
/// 3. Restore the factors of two (`bits` conditional doublings).
pub fn gcd(x: &Integer, y: &Integer, bits: u32) -> Integer {
    debug_assert!(x.significant_bits() <= bits && y.significant_bits() <= bits);
    let len = bits as usize / 64 + 2;
    let mut a = to_limbs(x, len);
    let mut b = to_limbs(y, len);
    let mut t = vec![0u64; len];
    let mut shift = 0u64;
    for _ in 0..bits {
        let both_even = !(a[0] | b[0]) & 1;
        let m = mask(both_even);
        t.copy_from_slice(&a);
        shr1(&mut t);
        select(m, &mut a, &t);
        t.copy_from_slice(&b);
        shr1(&mut t);
        select(m, &mut b, &t);
        shift += both_even;
    }
    for _ in 0..2 * bits {
        // Make a odd: if a is even, b is odd (or both are zero: not allowed).
        swap(mask(!a[0] & 1), &mut a, &mut b);
        let b_odd = b[0] & 1;
        // If b is odd and b < a, swap so that b ≥ a; then b −= a.
        let lt = sub(&mut t, &b, &a);
        swap(mask(b_odd & lt), &mut a, &mut b);
        sub(&mut t, &b, &a);
        select(mask(b_odd), &mut b, &t);
        shr1(&mut b);
    }
    // a << shift, with `bits` conditional doublings.
    for i in 0..bits as u64 {
        // i < shift, without a branch: (i − shift) borrows.
        let below = (i.wrapping_sub(shift) >> 63) & 1;
        t.copy_from_slice(&a);
        shl1(&mut t);
        select(mask(below), &mut a, &t);
    }
    Integer::from_digits(&a, Order::Lsf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agrees_with_gmp() {
        let mut x = Integer::from(0x1234_5678_9abc_def1u64);
        let cases = [
            (Integer::from(12u32), Integer::from(18u32)),
            (Integer::from(0u32), Integer::from(40u32)),
            (Integer::from(64u32), Integer::from(0u32)),
            (Integer::from(1u32) << 100u32, Integer::from(3u32) << 90u32),
            (Integer::from(97u32), Integer::from(97u32)),
        ];
        for (a, b) in cases {
            let bits = a.significant_bits().max(b.significant_bits()).max(1);
            assert_eq!(gcd(&a, &b, bits), Integer::from(a.gcd_ref(&b)), "{a} {b}");
        }
        for bits in [64u32, 130, 512, 1024] {
            for _ in 0..20 {
                x = (Integer::from(&x * &x) + 0x9e37_79b9u32).keep_bits(bits);
                let common = Integer::from(&x % 1000u32) + 1u32;
                let a = (Integer::from(&x >> (bits / 3)) * &common).keep_bits(bits);
                let b = (Integer::from(&x >> (bits / 5)) * &common).keep_bits(bits);
                if a == 0 && b == 0 {
                    continue;
                }
                assert_eq!(gcd(&a, &b, bits), Integer::from(a.gcd_ref(&b)), "{bits}");
            }
        }
    }
}
