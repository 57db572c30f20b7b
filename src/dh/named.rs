//! Named groups: the RFC 7919 FFDHE groups and the RFC 3526 MODP groups,
//! computed from their published definitions rather than pasted in:
//!
//! - RFC 3526: p = 2^n − 2^(n−64) − 1 + 2^64 · (⌊2^(n−130) · π⌋ + k)
//! - RFC 7919: p = 2^n − 2^(n−64) − 1 + 2^64 · (⌊2^(n−130) · e⌋ + X)
//!
//! with g = 2 and q = (p − 1)/2 prime for every group. π and e come from
//! exact integer series with 64 guard bits (error far below one unit of the
//! truncated value). The tests compare the results with OpenSSL's built-in
//! copies. For TLS, a named group is the right choice for nearly everyone:
//! it is instant, vetted, and what clients expect (RFC 7919).

use std::sync::OnceLock;

use rug::Integer;

use super::DhParams;

/// The named groups. Values are part of the C ABI (`pf_dh_group`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Group {
    Ffdhe2048 = 1,
    Ffdhe3072 = 2,
    Ffdhe4096 = 3,
    Ffdhe6144 = 4,
    Ffdhe8192 = 5,
    Modp2048 = 6,
    Modp3072 = 7,
    Modp4096 = 8,
    Modp6144 = 9,
    Modp8192 = 10,
}

impl Group {
    /// Every group, in ABI order.
    pub const ALL: [Group; 10] = [
        Group::Ffdhe2048,
        Group::Ffdhe3072,
        Group::Ffdhe4096,
        Group::Ffdhe6144,
        Group::Ffdhe8192,
        Group::Modp2048,
        Group::Modp3072,
        Group::Modp4096,
        Group::Modp6144,
        Group::Modp8192,
    ];

    pub fn from_u32(v: u32) -> Option<Group> {
        Group::ALL.iter().copied().find(|g| *g as u32 == v)
    }

    /// The name OpenSSL uses (`-pkeyopt group:NAME`).
    pub fn name(self) -> &'static str {
        match self {
            Group::Ffdhe2048 => "ffdhe2048",
            Group::Ffdhe3072 => "ffdhe3072",
            Group::Ffdhe4096 => "ffdhe4096",
            Group::Ffdhe6144 => "ffdhe6144",
            Group::Ffdhe8192 => "ffdhe8192",
            Group::Modp2048 => "modp_2048",
            Group::Modp3072 => "modp_3072",
            Group::Modp4096 => "modp_4096",
            Group::Modp6144 => "modp_6144",
            Group::Modp8192 => "modp_8192",
        }
    }

    /// Size of p in bits.
    pub fn bits(self) -> u32 {
        match self {
            Group::Ffdhe2048 | Group::Modp2048 => 2048,
            Group::Ffdhe3072 | Group::Modp3072 => 3072,
            Group::Ffdhe4096 | Group::Modp4096 => 4096,
            Group::Ffdhe6144 | Group::Modp6144 => 6144,
            Group::Ffdhe8192 | Group::Modp8192 => 8192,
        }
    }

    /// The RFC's constant (k in RFC 3526, X in RFC 7919).
    fn offset(self) -> u64 {
        match self {
            Group::Ffdhe2048 => 560_316,
            Group::Ffdhe3072 => 2_625_351,
            Group::Ffdhe4096 => 5_736_041,
            Group::Ffdhe6144 => 15_705_020,
            Group::Ffdhe8192 => 10_965_728,
            Group::Modp2048 => 124_476,
            Group::Modp3072 => 1_690_314,
            Group::Modp4096 => 240_904,
            Group::Modp6144 => 929_484,
            Group::Modp8192 => 4_743_158,
        }
    }

    fn is_ffdhe(self) -> bool {
        (self as u32) <= 5
    }

    /// The group's parameters (computed once per process).
    pub fn params(self) -> &'static DhParams {
        crate::gmp::init();
        static CACHE: [OnceLock<DhParams>; 10] = [const { OnceLock::new() }; 10];
        CACHE[self as usize - 1].get_or_init(|| {
            let n = self.bits();
            let constant = if self.is_ffdhe() {
                e_times_2_pow(n - 130)
            } else {
                pi_times_2_pow(n - 130)
            };
            let mut p = Integer::from(1u32) << n;
            p -= Integer::from(1u32) << (n - 64);
            p -= 1u32;
            p += (constant + self.offset()) << 64u32;
            let q = Integer::from(&p >> 1u32);
            DhParams {
                p,
                q: Some(q),
                g: Integer::from(2u32),
            }
        })
    }
}

const GUARD: u32 = 64;

/// ⌊e · 2^k⌋ from e = Σ 1/j!.
pub fn e_times_2_pow(k: u32) -> Integer {
    let mut term = Integer::from(1u32) << (k + GUARD);
    let mut sum = Integer::new();
    let mut j = 1u32;
    while term != 0u32 {
        sum += &term;
        term /= j;
        j += 1;
    }
    sum >> GUARD
}

/// atan(1/x) · 2^bits, truncated term by term.
fn atan_inv(x: u32, bits: u32) -> Integer {
    let x2 = x * x;
    let mut power = (Integer::from(1u32) << bits) / x; // 1 / x^(2j+1)
    let mut sum = Integer::new();
    let mut j = 0u32;
    while power != 0u32 {
        let t = Integer::from(&power / (2 * j + 1));
        if j % 2 == 0 {
            sum += t;
        } else {
            sum -= t;
        }
        power /= x2;
        j += 1;
    }
    sum
}

/// ⌊π · 2^k⌋ by Machin's formula π = 16 atan(1/5) − 4 atan(1/239).
pub fn pi_times_2_pow(k: u32) -> Integer {
    let bits = k + GUARD;
    let pi = atan_inv(5, bits) * 16u32 - atan_inv(239, bits) * 4u32;
    pi >> GUARD
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_start_right() {
        // π = 3.243F6A8885A308D3..., e = 2.B7E151628AED2A6A... (hex)
        assert_eq!(
            pi_times_2_pow(64),
            Integer::from(0x3_243F_6A88_85A3_08D3u128)
        );
        assert_eq!(
            e_times_2_pow(64),
            Integer::from(0x2_B7E1_5162_8AED_2A6Au128)
        );
    }

    #[test]
    fn groups_are_safe_primes_of_the_right_size() {
        for g in Group::ALL {
            let d = g.params();
            assert_eq!(d.bits(), g.bits());
            let q = d.q().unwrap();
            assert_ne!(q.is_probably_prime(5), rug::integer::IsPrime::No, "{g:?}");
            assert!(d.g_in_q_subgroup(), "{g:?}");
            assert_eq!(Group::from_u32(g as u32), Some(g));
        }
        assert_eq!(Group::from_u32(0), None);
        assert_eq!(Group::from_u32(11), None);
    }
}
