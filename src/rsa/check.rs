//! Checking an RSA private key read from a file (PKCS#1 or PKCS#8, PEM or
//! DER), for `primeforge check`. The decoded DER sits in a secure buffer
//! and the numbers in GMP (whose freed memory is wiped); the checks
//! themselves use ordinary, variable-time GMP arithmetic, like OpenSSL's
//! `RSA_check_key`.

use der::Decode;
use rug::integer::Order;
use rug::Integer;

use crate::encode::sniff::{sniff, Container, Content};
use crate::error::{Error, Result};
use crate::prime::is_probable_prime;
use crate::prime::stream::Seed;

/// What `check_private_key` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RsaReport {
    /// PKCS#1 or PKCS#8.
    pub container: Container,
    /// Modulus size in bits.
    pub bits: u32,
    /// Number of primes.
    pub primes: usize,
    /// The public exponent, when it fits 64 bits.
    pub e: Option<u64>,
    /// For PEM input: the block checked (1-based) and the number of blocks.
    pub block: Option<(usize, usize)>,
    /// Human-readable problems; empty when the key is consistent.
    pub problems: Vec<String>,
}

fn int(bytes: &[u8]) -> Integer {
    Integer::from_digits(bytes, Order::Msf)
}

/// True if `data` holds an RSA private key that [`check_private_key`]
/// would check (PEM or DER; see [`crate::encode::sniff`]).
pub fn looks_like_private_key(data: &[u8]) -> bool {
    matches!(
        sniff(data).map(|s| s.content),
        Ok(Content::RsaPrivate { .. })
    )
}

/// Largest modulus checked.
pub const MAX_CHECK_BITS: u32 = 16384;

/// Decodes and checks an RSA private key: n = ∏ r_i, every r_i prime
/// (Baillie–PSW plus random-base Miller–Rabin), e odd and > 1,
/// d·e ≡ 1 (mod λ), the CRT values, and for multi-prime keys each
/// r_i's d_i and t_i. Malformed input is [`Error::Decode`]; a public,
/// encrypted, RSA-PSS or non-RSA key, or DH parameters, is
/// [`Error::WrongKind`] naming it.
///
/// Bounded: before any arithmetic, n must be at most [`MAX_CHECK_BITS`],
/// the number of primes within OpenSSL's cap for the size
/// ([`super::max_primes`]), and every component no larger than it can be
/// for n (each prime and the primes together, e and d, each CRT exponent
/// and coefficient); otherwise the report lists the size problems and
/// nothing is multiplied or tested. So any input is judged in time that
/// depends on n's size only.
///
/// The key's numbers live in the secret arena while they are checked.
pub fn check_private_key(data: &[u8]) -> Result<RsaReport> {
    crate::gmp::init();
    match sniff(data)?.content_with_block() {
        (Content::RsaPrivate { pkcs1, container }, block) => {
            check_pkcs1(pkcs1.as_slice(), container, block)
        }
        (Content::Dh { .. }, _) => Err(Error::WrongKind("DH parameters, not an RSA private key")),
    }
}

/// Checks a PKCS#1 RSAPrivateKey already found by
/// [`crate::encode::sniff`] (see [`check_private_key`]); for callers that
/// sniffed the file themselves, so that it is decoded once.
pub fn check_pkcs1(
    pkcs1_der: &[u8],
    container: Container,
    block: Option<(usize, usize)>,
) -> Result<RsaReport> {
    crate::gmp::init();
    crate::gmp::secret_scope(|| check_pkcs1_inner(pkcs1_der, container, block))
}

fn check_pkcs1_inner(
    pkcs1_der: &[u8],
    container: Container,
    block: Option<(usize, usize)>,
) -> Result<RsaReport> {
    let k = pkcs1::RsaPrivateKey::<der::asn1::UintRef<'_>>::from_der(pkcs1_der)
        .map_err(|_| Error::Decode)?;
    let n = int(k.modulus.as_bytes());
    let e = int(k.public_exponent.as_bytes());
    let d = int(k.private_exponent.as_bytes());
    let mut ps = vec![int(k.prime1.as_bytes()), int(k.prime2.as_bytes())];
    let mut exps = vec![int(k.exponent1.as_bytes()), int(k.exponent2.as_bytes())];
    let mut coeffs = vec![int(k.coefficient.as_bytes())];
    if let Some(others) = &k.other_prime_infos {
        for o in others.iter() {
            ps.push(int(o.prime.as_bytes()));
            exps.push(int(o.exponent.as_bytes()));
            coeffs.push(int(o.coefficient.as_bytes()));
        }
    }
    let bits = n.significant_bits();
    let report = |problems: Vec<String>| RsaReport {
        container,
        bits,
        primes: ps.len(),
        e: e.to_u64(),
        block,
        problems,
    };
    let problems = size_problems(&n, &e, &d, &ps, &exps, &coeffs);
    if !problems.is_empty() {
        return Ok(report(problems));
    }
    let mut problems = Vec::new();
    if e <= 1u32 || e.is_even() {
        problems.push("public exponent is not odd and > 1".into());
    }
    let product = ps.iter().fold(Integer::from(1u32), |a, p| a * p);
    if product != n {
        problems.push("n is not the product of the primes".into());
    }
    let seed = Seed::from_os()?;
    for (i, p) in ps.iter().enumerate() {
        if !is_probable_prime(p, &seed, i as u64) {
            problems.push(format!("prime {} is not prime", i + 1));
        }
    }
    if problems.is_empty() {
        let lambda = super::carmichael_lambda(&ps)?;
        if Integer::from(&d * &e) % &lambda != 1u32 {
            problems.push("d·e is not 1 modulo lcm(p_i − 1)".into());
        }
        for (i, (p, x)) in ps.iter().zip(&exps).enumerate() {
            if &d % Integer::from(p - 1u32) != *x {
                problems.push(format!(
                    "CRT exponent {} is not d mod (r_{} − 1)",
                    i + 1,
                    i + 1
                ));
            }
        }
        let mut prefix = ps[0].clone();
        for (i, p) in ps.iter().enumerate().skip(1) {
            // coefficient i−1: (r_1 ⋯ r_{i})⁻¹ mod r_{i+1}; for i = 1 it is
            // qInv = q⁻¹ mod p (PKCS#1's order: p is prime1).
            let (val, modulus) = if i == 1 {
                (&ps[1], &ps[0])
            } else {
                (&prefix, p)
            };
            if Integer::from(val * &coeffs[i - 1]) % modulus != 1u32 {
                problems.push(format!("CRT coefficient {i} is wrong"));
            }
            prefix *= p;
        }
    }
    Ok(report(problems))
}

/// Size and count problems, found without arithmetic on the values.
fn size_problems(
    n: &Integer,
    e: &Integer,
    d: &Integer,
    ps: &[Integer],
    exps: &[Integer],
    coeffs: &[Integer],
) -> Vec<String> {
    let bits = n.significant_bits();
    let mut problems = Vec::new();
    if bits > MAX_CHECK_BITS {
        problems.push(format!(
            "modulus of {bits} bits is larger than {MAX_CHECK_BITS}"
        ));
        return problems;
    }
    if bits < 2 {
        problems.push("the modulus is smaller than 2".into());
        return problems;
    }
    let cap = super::max_primes(bits) as usize;
    if ps.len() > cap {
        problems.push(format!(
            "{} primes: at most {cap} for a {bits}-bit modulus (OpenSSL's limit)",
            ps.len()
        ));
        return problems;
    }
    let name = |i: usize| match i {
        0 => "prime1 (p)".to_string(),
        1 => "prime2 (q)".to_string(),
        _ => format!("prime {}", i + 1),
    };
    let mut sum = 0u64;
    for (i, p) in ps.iter().enumerate() {
        let pb = p.significant_bits();
        sum += u64::from(pb);
        if pb > bits {
            problems.push(format!("{} has {pb} bits, more than n's {bits}", name(i)));
        }
        if exps[i].significant_bits() > pb {
            problems.push(format!(
                "CRT exponent {} has {} bits, more than its prime's {pb}",
                i + 1,
                exps[i].significant_bits()
            ));
        }
    }
    if problems.is_empty() && sum > u64::from(bits) + ps.len() as u64 {
        problems.push(format!(
            "the primes have {sum} bits together, too many for a {bits}-bit n"
        ));
    }
    for (what, v) in [("the public exponent", e), ("the private exponent", d)] {
        if v.significant_bits() > bits {
            problems.push(format!(
                "{what} has {} bits, more than n's {bits}",
                v.significant_bits()
            ));
        }
    }
    for (i, c) in coeffs.iter().enumerate() {
        let limit = ps[i + 1].significant_bits().max(ps[0].significant_bits());
        if c.significant_bits() > limit {
            problems.push(format!(
                "CRT coefficient {} has {} bits, more than its prime's {limit}",
                i + 1,
                c.significant_bits()
            ));
        }
    }
    problems
}
