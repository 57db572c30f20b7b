//! Word arithmetic shared by the engine and the GMP layer: no GMP, no
//! secrets-specific code.

/// The `width` bits (1 to 63) of `limbs` from bit `bit` on, bits past the
/// end read as zero: a digit of another base (2^52 for the IFMA digits,
/// 2^62 for the constant-time inverse's limbs). The limb index and the
/// shifts depend on the position only, never on the values.
#[inline]
pub(crate) fn bits_at(limbs: &[u64], bit: usize, width: u32) -> u64 {
    debug_assert!((1..64).contains(&width));
    let (w, o) = (bit / 64, (bit % 64) as u32);
    let lo = limbs.get(w).copied().unwrap_or(0) >> o;
    let hi = if o + width > 64 {
        limbs.get(w + 1).copied().unwrap_or(0) << (64 - o)
    } else {
        0
    };
    (lo | hi) & ((1 << width) - 1)
}

/// Σ x_j·w_j over j < `x.len()` (`w` at least as long), for sums below
/// 2^128 (the trial-division table's: weights below 2^56, at most 255
/// limbs). With BMI2 (`mulx`, every x86-64 CPU since Haswell and Zen) the
/// even and odd limbs go to two accumulators, whose add/adc chains the
/// core runs side by side; one chain waits on its own carries.
#[inline]
pub(crate) fn dot(x: &[u64], w: &[u64]) -> u128 {
    assert!(w.len() >= x.len());
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("bmi2") {
        let pairs = x.len() & !1;
        let (mut lo0, mut hi0, mut lo1, mut hi1) = (0u64, 0u64, 0u64, 0u64);
        if pairs > 0 {
            // SAFETY: reads x[0..pairs] and w[0..pairs], in bounds (pairs ≤
            // x.len() ≤ w.len()); writes only the listed registers; mulx
            // needs BMI2, checked above.
            unsafe {
                std::arch::asm!(
                    "xor {i:e}, {i:e}",
                    "2:",
                    "mov rdx, [{x} + 8*{i}]",
                    "mulx {h0}, {l0}, [{w} + 8*{i}]",
                    "add {lo0}, {l0}",
                    "adc {hi0}, {h0}",
                    "mov rdx, [{x} + 8*{i} + 8]",
                    "mulx {h1}, {l1}, [{w} + 8*{i} + 8]",
                    "add {lo1}, {l1}",
                    "adc {hi1}, {h1}",
                    "add {i}, 2",
                    "cmp {i}, {n}",
                    "jb 2b",
                    x = in(reg) x.as_ptr(),
                    w = in(reg) w.as_ptr(),
                    n = in(reg) pairs,
                    i = out(reg) _,
                    h0 = out(reg) _,
                    l0 = out(reg) _,
                    h1 = out(reg) _,
                    l1 = out(reg) _,
                    lo0 = inout(reg) lo0,
                    hi0 = inout(reg) hi0,
                    lo1 = inout(reg) lo1,
                    hi1 = inout(reg) hi1,
                    out("rdx") _,
                    options(nostack, readonly),
                );
            }
        }
        let mut sum = (((hi0 as u128) << 64) | lo0 as u128) + (((hi1 as u128) << 64) | lo1 as u128);
        if pairs < x.len() {
            sum += x[pairs] as u128 * w[pairs] as u128;
        }
        return sum;
    }
    x.iter().zip(w).map(|(&a, &b)| a as u128 * b as u128).sum()
}

/// p⁻¹ mod 2^64 for odd p (no table: also used on secret values).
pub(crate) fn inverse_mod_2_64(p: u64) -> u64 {
    // Newton iteration: each step doubles the correct low bits (p odd).
    let mut x = p; // correct to 3 bits
    for _ in 0..5 {
        x = x.wrapping_mul(2u64.wrapping_sub(p.wrapping_mul(x)));
    }
    x
}

/// ⌊(2^128 − 1) / d⌋ − 2^64 for 2^63 ≤ d < 2^64 (the reciprocal GMP's
/// division code calls `invert_limb`), in constant time: Möller and
/// Granlund's Algorithm 2 ("Improved division by invariant integers",
/// 2011) with its 256-entry table look-up replaced by a masked binary long
/// division of 2^19 − 3·2^8 by the top nine bits of d. GMP's own
/// `mpn_invert_limb` indexes that table by those bits, which a cache
/// observer could see when d is secret.
pub(crate) fn reciprocal_word(d: u64) -> u64 {
    debug_assert!(d >> 63 == 1);
    let d0 = d & 1;
    let d9 = d >> 55;
    let d40 = (d >> 24) + 1;
    let d63 = (d >> 1) + d0;
    // v0 = ⌊(2^19 − 3·2^8) / d9⌋, 256 ≤ d9 < 512, bit by bit with masks.
    const NUM: u64 = (1 << 19) - 3 * (1 << 8);
    let (mut q, mut r) = (0u64, 0u64);
    for i in (0..20).rev() {
        r = (r << 1) | ((NUM >> i) & 1);
        let t = r.wrapping_sub(d9);
        // All ones when r ≥ d9 (no borrow: t's top bit clear, r < 2^11).
        let ge = (t >> 63).wrapping_sub(1);
        r = (t & ge) | (r & !ge);
        q |= (ge & 1) << i;
    }
    let v0 = q;
    let v1 = (v0 << 11)
        .wrapping_sub((v0 * v0 * d40) >> 40)
        .wrapping_sub(1);
    let v2 = (v1 << 13)
        .wrapping_add(((v1 as u128 * ((1u128 << 60) - v1 as u128 * d40 as u128)) >> 47) as u64);
    let e = ((v2 >> 1) & d0.wrapping_neg()).wrapping_sub(v2.wrapping_mul(d63));
    let v3 = (v2 << 31).wrapping_add(((v2 as u128 * e as u128) >> 65) as u64);
    let t = ((v3 as u128 + 1) * d as u128) >> 64;
    v3.wrapping_sub(t as u64).wrapping_sub(d)
}

/// Whether this CPU runs the AVX-512 IFMA first test.
pub(crate) fn ifma_available() -> bool {
    ifma::available()
}

/// Whether this CPU runs the BMI2/ADX assembly.
pub(crate) fn adx_available() -> bool {
    fixed::has_adx()
}

#[cfg(all(test, target_arch = "x86_64", target_os = "linux"))]
pub(crate) mod ct_check;
pub(crate) mod fixed;
pub(crate) mod ifma;
pub(crate) mod lanes;
pub(crate) mod residues;

#[cfg(test)]
mod tests {
    use super::*;

    /// Bit `i` of the limbs, one at a time.
    fn bit(limbs: &[u64], i: usize) -> u64 {
        limbs.get(i / 64).map_or(0, |w| (w >> (i % 64)) & 1)
    }

    #[test]
    fn bits_at_reads_each_field_bit_by_bit() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let limbs: Vec<u64> = (0..5)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            })
            .chain([u64::MAX])
            .collect();
        for width in [1, 2, 12, 52, 62, 63] {
            for at in 0..64 * limbs.len() + 70 {
                let want = (0..width as usize).fold(0, |v, b| v | (bit(&limbs, at + b) << b));
                assert_eq!(bits_at(&limbs, at, width), want, "{width} bits at {at}");
            }
        }
    }

    /// The two-chain kernel agrees with the plain 128-bit sum at every
    /// length up to 40 (odd ones use the tail) and at 255 limbs with every
    /// limb and weight at its largest (the table's worst case).
    #[test]
    fn dot_agrees_with_the_plain_sum() {
        let plain = |x: &[u64], w: &[u64]| {
            x.iter().zip(w).fold(0u128, |acc, (&a, &b)| {
                acc.checked_add(a as u128 * b as u128).expect("fits")
            })
        };
        let mut s = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for n in 0..=40usize {
            for _ in 0..20 {
                let x: Vec<u64> = (0..n).map(|_| next()).collect();
                let w: Vec<u64> = (0..n + 3).map(|_| next() >> 8).collect();
                assert_eq!(dot(&x, &w), plain(&x, &w), "{n} limbs");
            }
        }
        let x = vec![u64::MAX; 255];
        let w = vec![(1u64 << 56) - 1; 255];
        assert_eq!(dot(&x, &w), plain(&x, &w));
        assert_eq!(dot(&[], &[]), 0);
    }

    /// Agrees with the exact quotient at the ends of the range, around
    /// every table boundary of the original algorithm and on a million
    /// pseudo-random divisors.
    #[test]
    fn reciprocal_word_is_exact() {
        let exact = |d: u64| (u128::MAX / d as u128 - (1u128 << 64)) as u64;
        let mut ds = vec![1u64 << 63, (1 << 63) + 1, u64::MAX, u64::MAX - 1];
        for d9 in 256u64..512 {
            for off in [0u64, 1, 2, (1 << 55) - 1, (1 << 54) + 12345] {
                ds.push((d9 << 55) | off);
            }
        }
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..1_000_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ds.push(x | 1 << 63);
        }
        for d in ds {
            assert_eq!(reciprocal_word(d), exact(d), "d = {d:#x}");
        }
    }
}
