//! Word arithmetic shared by the engine and the GMP layer: no GMP, no
//! secrets-specific code, just the two operations both need.

/// `n mod d` for d > 0 with one or two hardware divisions.
#[inline]
pub(crate) fn rem_u128_u64(n: u128, d: u64) -> u64 {
    let hi = ((n >> 64) as u64) % d;
    let lo = n as u64;
    #[cfg(target_arch = "x86_64")]
    {
        let rem: u64;
        // SAFETY: `div` divides rdx:rax by d; hi < d so the quotient fits in
        // 64 bits and the instruction cannot fault (d ≠ 0).
        unsafe {
            std::arch::asm!(
                "div {d}",
                d = in(reg) d,
                inout("rax") lo => _,
                inout("rdx") hi => rem,
                options(pure, nomem, nostack)
            );
        }
        rem
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        ((((hi as u128) << 64) | lo as u128) % d as u128) as u64
    }
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

#[cfg(all(test, target_arch = "x86_64", target_os = "linux"))]
pub(crate) mod ct_check;
pub(crate) mod fixed;

#[cfg(test)]
mod tests {
    use super::*;

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
