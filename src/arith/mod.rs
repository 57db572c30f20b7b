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

#[cfg(all(test, target_arch = "x86_64", target_os = "linux"))]
mod ct_check;
pub(crate) mod fixed;
