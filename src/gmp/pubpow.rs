//! Modular exponentiation of public values that a cancelled search can
//! interrupt.
//!
//! GMP's `mpz_powm` cannot be interrupted: one call at 8192 bits takes
//! about 110 ms here, so a DH-8192 job asked to stop could run on for that
//! long inside one exponentiation (issue 17 asks for 100 ms at any size).
//! [`pow_mod_or_stop`] does what `mpn_powm` does for large moduli —
//! left-to-right sliding windows (GMP's window sizes), subquadratic
//! `mpn_sqr`/`mpn_mul_n` and the subquadratic Montgomery reduction
//! `mpn_redc_n` — and looks at a stop flag every 64 squarings.
//!
//! Variable time: it branches on the exponent's bits and GMP's multiply
//! routines on sizes. Only for values that are public (DH candidates,
//! their Miller–Rabin bases); secret candidates use `mont`/`sec`.

use super::sys::*;
use std::sync::atomic::{AtomicBool, Ordering};

use gmp_mpfr_sys::gmp;
use rug::integer::Order;
use rug::Integer;

type Limb = gmp::limb_t;

/// Moduli of at most this many limbs go to `mpz_powm` (uninterrupted but
/// short: one call at 2048 bits takes under 5 ms here); `mpn_redc_n`
/// needs more than 8 limbs in any case.
pub const MPZ_MAX_LIMBS: usize = 32;

/// How many squarings may pass between two looks at the stop flag.
const STOP_EVERY: u32 = 64;

/// GMP's window size for an exponent of `bits` bits (`mpn_powm`'s table).
fn window(bits: u64) -> u32 {
    const LIMITS: [u64; 9] = [7, 25, 81, 241, 673, 1793, 4609, 11521, 28161];
    LIMITS.iter().take_while(|&&l| bits > l).count() as u32 + 1
}

/// Montgomery arithmetic modulo an odd public `m` of `n` > 8 limbs.
struct Redc {
    m: Vec<Limb>,
    ip: Vec<Limb>,
    prod: Vec<Limb>,
    squarings: u32,
}

impl Redc {
    fn new(m: &Integer) -> Redc {
        let m: Vec<Limb> = m.as_limbs().to_vec();
        let n = m.len();
        let mut ip = vec![0; n];
        // SAFETY: `ip` and `m` have n limbs, `m` is odd, the scratch the
        // size GMP asks for.
        unsafe {
            let mut scratch = vec![0; __gmpn_binvert_itch(n as gmp::size_t) as usize];
            __gmpn_binvert(
                ip.as_mut_ptr(),
                m.as_ptr(),
                n as gmp::size_t,
                scratch.as_mut_ptr(),
            );
        }
        Redc {
            prod: vec![0; 2 * n],
            m,
            ip,
            squarings: 0,
        }
    }

    fn n(&self) -> usize {
        self.m.len()
    }

    /// x ← prod / B^n mod m.
    fn reduce_into(&mut self, x: &mut [Limb]) {
        // SAFETY: `x` has n limbs, `prod` 2n and holds a value below m·B^n
        // (a product of two residues below m, or one residue), `ip` is
        // m⁻¹ mod B^n; n > 8.
        unsafe {
            __gmpn_redc_n(
                x.as_mut_ptr(),
                self.prod.as_mut_ptr(),
                self.m.as_ptr(),
                self.n() as gmp::size_t,
                self.ip.as_ptr(),
            );
        }
    }

    /// x ← x²/B^n mod m.
    fn square(&mut self, x: &mut [Limb]) {
        // SAFETY: `prod` has 2n limbs and does not overlap `x` (n limbs).
        unsafe { gmp::mpn_sqr(self.prod.as_mut_ptr(), x.as_ptr(), self.n() as gmp::size_t) };
        self.reduce_into(x);
        self.squarings += 1;
    }

    /// x ← x·y/B^n mod m.
    fn mul(&mut self, x: &mut [Limb], y: &[Limb]) {
        // SAFETY: `prod` has 2n limbs and overlaps neither operand (n limbs
        // each).
        unsafe {
            gmp::mpn_mul_n(
                self.prod.as_mut_ptr(),
                x.as_ptr(),
                y.as_ptr(),
                self.n() as gmp::size_t,
            )
        };
        self.reduce_into(x);
    }

    /// v·B^n mod m as n limbs.
    fn to_form(&self, v: &Integer, m: &Integer) -> Vec<Limb> {
        let mut t = Integer::from(v % m);
        if t < 0 {
            t += m;
        }
        t <<= (64 * self.n()) as u32;
        t %= m;
        self.limbs(&t)
    }

    fn limbs(&self, v: &Integer) -> Vec<Limb> {
        let mut out = vec![0; self.n()];
        out[..v.as_limbs().len()].copy_from_slice(v.as_limbs());
        out
    }
}

/// base^exp mod m for public values, or `None` once `stop` is set (looked
/// at every 64 squarings). `m` must be positive and `exp` non-negative;
/// small or even moduli go to `mpz_powm`, uninterrupted.
pub fn pow_mod_or_stop(
    base: &Integer,
    exp: &Integer,
    m: &Integer,
    stop: &AtomicBool,
) -> Option<Integer> {
    debug_assert!(*m > 0 && *exp >= 0);
    if m.as_limbs().len() <= MPZ_MAX_LIMBS || m.is_even() || *exp <= 0 {
        return base.pow_mod_ref(exp, m).map(Integer::from);
    }
    let mut r = Redc::new(m);
    let bits = exp.significant_bits() as u64;
    let k = window(bits);
    // The odd powers b, b³, …, b^(2^k − 1) in Montgomery form.
    let b = r.to_form(base, m);
    let mut b2 = b.clone();
    r.square(&mut b2);
    let mut table = vec![b];
    for i in 1..(1usize << (k - 1)) {
        let mut t = table[i - 1].clone();
        r.mul(&mut t, &b2);
        table.push(t);
    }
    let bit = |i: u64| exp.get_bit(i as u32);
    // The window ending at bit i (a 1): its lowest bit j (at most k bits,
    // ending in a 1) and the table index of its value.
    let window_at = |i: i64| -> (i64, usize) {
        let mut j = (i - k as i64 + 1).max(0);
        while !bit(j as u64) {
            j += 1;
        }
        (j, (window_value(exp, j as u64, i as u64) >> 1) as usize)
    };
    // The first window starts at the top bit (exp > 0).
    let (j, w) = window_at(bits as i64 - 1);
    let mut a = table[w].clone();
    let mut i = j - 1;
    let mut next_look = STOP_EVERY;
    while i >= 0 {
        if r.squarings >= next_look {
            if stop.load(Ordering::Relaxed) {
                crate::work::given_up((bits as i64 - 1 - i) as u64, bits);
                return None;
            }
            next_look = r.squarings + STOP_EVERY;
        }
        if !bit(i as u64) {
            r.square(&mut a);
            i -= 1;
            continue;
        }
        let (j, w) = window_at(i);
        for _ in j..=i {
            r.square(&mut a);
        }
        r.mul(&mut a, &table[w]);
        i = j - 1;
    }
    // Out of Montgomery form: a·1/B^n.
    r.prod.fill(0);
    r.prod[..a.len()].copy_from_slice(&a);
    r.reduce_into(&mut a);
    Some(Integer::from_digits(&a, Order::Lsf))
}

/// Bits lo ..= hi of e as a number.
fn window_value(e: &Integer, lo: u64, hi: u64) -> u64 {
    (lo..=hi)
        .rev()
        .fold(0, |w, b| (w << 1) | e.get_bit(b as u32) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic stream of unstructured `bits`-bit numbers.
    fn next(x: &mut Integer, bits: u32) -> Integer {
        *x = (Integer::from(&*x * &*x) + 0x9e37_79b9u32).keep_bits(bits + 80);
        Integer::from(&*x >> 80u32) | (Integer::from(1u32) << (bits - 1))
    }

    #[test]
    fn window_sizes_are_gmps() {
        assert_eq!(window(7), 1);
        assert_eq!(window(8), 2);
        assert_eq!(window(1024), 6);
        assert_eq!(window(8192), 8);
    }

    /// Agrees with `mpz_powm` for random and edge exponents, bases above m
    /// and negative, moduli on both sides of the threshold.
    #[test]
    fn agrees_with_mpz_powm() {
        crate::gmp::init();
        let never = AtomicBool::new(false);
        let mut x = Integer::from(0x1234_5678_9abc_def1u64);
        for bits in [576u32, 2048, 2049, 3000, 4096, 8192] {
            for _ in 0..if bits > 4096 { 1 } else { 3 } {
                let m = next(&mut x, bits) | 1u32;
                let mut bases = vec![
                    Integer::from(2),
                    next(&mut x, bits + 10),
                    Integer::from(&m - 1u32),
                    Integer::from(-3),
                    Integer::new(),
                ];
                bases.push(Integer::from(&m + 5u32));
                let exps = [
                    Integer::from(&m - 1u32),
                    next(&mut x, bits),
                    Integer::from(1),
                    Integer::from(2),
                    Integer::from(0),
                    Integer::from(1u32) << 1000,
                    (Integer::from(1u32) << 999) - 1u32,
                ];
                for b in &bases {
                    for e in &exps {
                        let want = b.pow_mod_ref(e, &m).map(Integer::from);
                        assert_eq!(pow_mod_or_stop(b, e, &m, &never), want, "{bits} bits");
                    }
                }
            }
        }
    }

    #[test]
    fn a_set_flag_stops_it() {
        crate::gmp::init();
        let m = (Integer::from(1u32) << 8192) - 1u32;
        let stop = AtomicBool::new(true);
        assert_eq!(
            pow_mod_or_stop(&Integer::from(2), &Integer::from(&m - 1u32), &m, &stop),
            None
        );
        // A short exponent finishes before the first look.
        assert!(pow_mod_or_stop(&Integer::from(3), &Integer::from(1000), &m, &stop).is_some());
    }
}
