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

/// The named groups (the C ABI's numbers for them are `pf_dh_group`'s, in
/// `ffi`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// RFC 7919 ffdhe2048.
    Ffdhe2048,
    /// RFC 7919 ffdhe3072.
    Ffdhe3072,
    /// RFC 7919 ffdhe4096.
    Ffdhe4096,
    /// RFC 7919 ffdhe6144.
    Ffdhe6144,
    /// RFC 7919 ffdhe8192.
    Ffdhe8192,
    /// RFC 3526 group 14 (2048 bits).
    Modp2048,
    /// RFC 3526 group 15 (3072 bits).
    Modp3072,
    /// RFC 3526 group 16 (4096 bits).
    Modp4096,
    /// RFC 3526 group 17 (6144 bits).
    Modp6144,
    /// RFC 3526 group 18 (8192 bits).
    Modp8192,
}

impl Group {
    /// Every group.
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
        matches!(
            self,
            Group::Ffdhe2048
                | Group::Ffdhe3072
                | Group::Ffdhe4096
                | Group::Ffdhe6144
                | Group::Ffdhe8192
        )
    }

    /// The group's parameters (computed once per process).
    pub fn params(self) -> &'static DhParams {
        crate::gmp::init();
        static CACHE: [OnceLock<DhParams>; 10] = [const { OnceLock::new() }; 10];
        CACHE[self as usize].get_or_init(|| {
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
                fips186: None,
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

/// RFC 5114's groups with prime-order subgroups (sections 2.1–2.3), as
/// published (hexadecimal p, g, q). Their p is not a safe prime: they are
/// safe only with their q (X9.42 parameters), and a peer that ignores q
/// (PKCS#3 parameters, GnuTLS, mbedTLS) cannot check subgroup membership.
const RFC5114: [(&str, &str, &str, &str); 3] = [
    (
        "RFC 5114 1024-bit MODP group with 160-bit prime order subgroup",
        "B10B8F96A080E01DDE92DE5EAE5D54EC52C99FBCFB06A3C69A6A9DCA52D23B616073E28675A23D189838EF1E2EE652C013ECB4AEA906112324975C3CD49B83BFACCBDD7D90C4BD7098488E9C219A73724EFFD6FAE5644738FAA31A4FF55BCCC0A151AF5F0DC8B4BD45BF37DF365C1A65E68CFDA76D4DA708DF1FB2BC2E4A4371",
        "A4D1CBD5C3FD34126765A442EFB99905F8104DD258AC507FD6406CFF14266D31266FEA1E5C41564B777E690F5504F213160217B4B01B886A5E91547F9E2749F4D7FBD7D3B9A92EE1909D0D2263F80A76A6A24C087A091F531DBF0A0169B6A28AD662A4D18E73AFA32D779D5918D08BC8858F4DCEF97C2A24855E6EEB22B3B2E5",
        "F518AA8781A8DF278ABA4E7D64B7CB9D49462353",
    ),
    (
        "RFC 5114 2048-bit MODP group with 224-bit prime order subgroup",
        "AD107E1E9123A9D0D660FAA79559C51FA20D64E5683B9FD1B54B1597B61D0A75E6FA141DF95A56DBAF9A3C407BA1DF15EB3D688A309C180E1DE6B85A1274A0A66D3F8152AD6AC2129037C9EDEFDA4DF8D91E8FEF55B7394B7AD5B7D0B6C12207C9F98D11ED34DBF6C6BA0B2C8BBC27BE6A00E0A0B9C49708B3BF8A317091883681286130BC8985DB1602E714415D9330278273C7DE31EFDC7310F7121FD5A07415987D9ADC0A486DCDF93ACC44328387315D75E198C641A480CD86A1B9E587E8BE60E69CC928B2B9C52172E413042E9B23F10B0E16E79763C9B53DCF4BA80A29E3FB73C16B8E75B97EF363E2FFA31F71CF9DE5384E71B81C0AC4DFFE0C10E64F",
        "AC4032EF4F2D9AE39DF30B5C8FFDAC506CDEBE7B89998CAF74866A08CFE4FFE3A6824A4E10B9A6F0DD921F01A70C4AFAAB739D7700C29F52C57DB17C620A8652BE5E9001A8D66AD7C17669101999024AF4D027275AC1348BB8A762D0521BC98AE247150422EA1ED409939D54DA7460CDB5F6C6B250717CBEF180EB34118E98D119529A45D6F834566E3025E316A330EFBB77A86F0C1AB15B051AE3D428C8F8ACB70A8137150B8EEB10E183EDD19963DDD9E263E4770589EF6AA21E7F5F2FF381B539CCE3409D13CD566AFBB48D6C019181E1BCFE94B30269EDFE72FE9B6AA4BD7B5A0F1C71CFFF4C19C418E1F6EC017981BC087F2A7065B384B890D3191F2BFA",
        "801C0D34C58D93FE997177101F80535A4738CEBCBF389A99B36371EB",
    ),
    (
        "RFC 5114 2048-bit MODP group with 256-bit prime order subgroup",
        "87A8E61DB4B6663CFFBBD19C651959998CEEF608660DD0F25D2CEED4435E3B00E00DF8F1D61957D4FAF7DF4561B2AA3016C3D91134096FAA3BF4296D830E9A7C209E0C6497517ABD5A8A9D306BCF67ED91F9E6725B4758C022E0B1EF4275BF7B6C5BFC11D45F9088B941F54EB1E59BB8BC39A0BF12307F5C4FDB70C581B23F76B63ACAE1CAA6B7902D52526735488A0EF13C6D9A51BFA4AB3AD8347796524D8EF6A167B5A41825D967E144E5140564251CCACB83E6B486F6B3CA3F7971506026C0B857F689962856DED4010ABD0BE621C3A3960A54E710C375F26375D7014103A4B54330C198AF126116D2276E11715F693877FAD7EF09CADB094AE91E1A1597",
        "3FB32C9B73134D0B2E77506660EDBD484CA7B18F21EF205407F4793A1A0BA12510DBC15077BE463FFF4FED4AAC0BB555BE3A6C1B0C6B47B1BC3773BF7E8C6F62901228F8C28CBB18A55AE31341000A650196F931C77A57F2DDF463E5E9EC144B777DE62AAAB8A8628AC376D282D6ED3864E67982428EBC831D14348F6F2F9193B5045AF2767164E1DFC967C1FB3F2E55A4BD1BFFE83B9C80D052B985D182EA0ADB2A3B7313D3FE14C8484B1E052588B9B7D2BBD2DF016199ECD06E1557CD0915B3353BBB64E0EC377FD028370DF92B52C7891428CDC67EB6184B523D1DB246C32F63078490F00EF8D647D148D47954515E2327CFEF98C582664B4C0F6CC41659",
        "8CF83642A709A097B447997640129DA299B1A47D1EB3750BA308B0FE64F5FBD3",
    ),
];

/// A published group recognised from its p and g.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Known {
    /// What it is, e.g. "RFC 7919 ffdhe2048".
    pub name: &'static str,
    /// Whether p is a safe prime (RFC 7919 and 3526); RFC 5114's are not.
    pub safe_prime: bool,
    /// RFC 5114's q (hexadecimal), which the group needs.
    pub q_hex: Option<&'static str>,
}

/// The RFC 7919 or RFC 3526 group with this p and g (= 2), if any.
pub fn group_of(p: &Integer, g: &Integer) -> Option<Group> {
    if *g != 2u32 || p.significant_bits() < 2048 || p.is_even() {
        return None;
    }
    Group::ALL
        .into_iter()
        .find(|grp| grp.bits() == p.significant_bits() && grp.params().p == *p)
}

/// The published group with this p and g, if any.
pub fn recognize(p: &Integer, g: &Integer) -> Option<Known> {
    if let Some(grp) = group_of(p, g) {
        let name = match grp {
            Group::Ffdhe2048 => "RFC 7919 ffdhe2048",
            Group::Ffdhe3072 => "RFC 7919 ffdhe3072",
            Group::Ffdhe4096 => "RFC 7919 ffdhe4096",
            Group::Ffdhe6144 => "RFC 7919 ffdhe6144",
            Group::Ffdhe8192 => "RFC 7919 ffdhe8192",
            Group::Modp2048 => "RFC 3526 2048-bit MODP group 14",
            Group::Modp3072 => "RFC 3526 3072-bit MODP group 15",
            Group::Modp4096 => "RFC 3526 4096-bit MODP group 16",
            Group::Modp6144 => "RFC 3526 6144-bit MODP group 17",
            Group::Modp8192 => "RFC 3526 8192-bit MODP group 18",
        };
        return Some(Known {
            name,
            safe_prime: true,
            q_hex: None,
        });
    }
    RFC5114.iter().find_map(|&(name, ph, gh, qh)| {
        let same = |v: &Integer, hex: &str| Integer::from_str_radix(hex, 16).is_ok_and(|x| x == *v);
        (same(p, ph) && same(g, gh)).then_some(Known {
            name,
            safe_prime: false,
            q_hex: Some(qh),
        })
    })
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
        }
    }

    /// The transcribed RFC 5114 groups are what RFC 5114 says: p prime of
    /// the stated size, q prime of the stated size dividing p − 1, g of
    /// order q; and each is recognised, and the RFC 7919 ones are too.
    #[test]
    fn rfc5114_groups_are_consistent_and_recognised() {
        for (i, &(name, ph, gh, qh)) in RFC5114.iter().enumerate() {
            let p = Integer::from_str_radix(ph, 16).unwrap();
            let g = Integer::from_str_radix(gh, 16).unwrap();
            let q = Integer::from_str_radix(qh, 16).unwrap();
            let (pb, qb) = [(1024, 160), (2048, 224), (2048, 256)][i];
            assert_eq!(
                (p.significant_bits(), q.significant_bits()),
                (pb, qb),
                "{name}"
            );
            assert_ne!(p.is_probably_prime(30), rug::integer::IsPrime::No);
            assert_ne!(q.is_probably_prime(30), rug::integer::IsPrime::No);
            assert!(Integer::from(&p - 1u32).is_divisible(&q));
            assert_eq!(g.clone().pow_mod(&q, &p).unwrap(), 1u32);
            let k = recognize(&p, &g).unwrap();
            assert_eq!(k.name, name);
            assert!(!k.safe_prime);
            assert!(recognize(&p, &Integer::from(2u32)).is_none());
        }
        let f = Group::Ffdhe2048.params();
        assert_eq!(recognize(&f.p, &f.g).unwrap().name, "RFC 7919 ffdhe2048");
        assert!(recognize(&Integer::from(&f.p + 2u32), &f.g).is_none());
    }
}
