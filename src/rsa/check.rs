//! Checking an RSA private key read from a file (PKCS#1 or PKCS#8, PEM or
//! DER), for `primeforge check`. The decoded DER sits in a secure buffer
//! and the numbers in GMP (whose freed memory is wiped); the checks
//! themselves use ordinary, variable-time GMP arithmetic, like OpenSSL's
//! `RSA_check_key`.

use der::Decode;
use rug::integer::Order;
use rug::Integer;

use crate::encode::sniff::{sniff, sniff_with, Container, Content};
use crate::error::{Error, Result};
use crate::prime::is_probable_prime;
use crate::prime::stream::Seed;

/// What kind of problem a [`Problem`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProblemKind {
    /// n has more than [`MAX_CHECK_BITS`] bits (nothing else was checked).
    ModulusTooLarge,
    /// n is smaller than 2.
    ModulusTooSmall,
    /// More primes than OpenSSL allows for the size.
    TooManyPrimes,
    /// A component is larger than it can be for n.
    ComponentTooLarge,
    /// e is even or ≤ 1.
    BadPublicExponent,
    /// n is not the product of the primes.
    ModulusNotProduct,
    /// A prime is composite.
    NotPrime,
    /// d·e ≢ 1 (mod λ(n)).
    BadPrivateExponent,
    /// A CRT exponent is not d mod (r_i − 1).
    BadCrtExponent,
    /// A CRT coefficient is wrong.
    BadCrtCoefficient,
    /// A public modulus is even.
    ModulusEven,
    /// A public modulus has a small prime factor (below 10 000).
    ModulusSmallFactor,
    /// A public modulus is (probably) prime.
    ModulusPrime,
    /// FIPS 186-5 only (the key works): fewer than 2048 bits, an odd size,
    /// or more than two primes.
    FipsSize,
    /// FIPS 186-5 only: e not in (2^16, 2^256).
    FipsExponent,
    /// FIPS 186-5 only: a prime outside [√2·2^(nlen/2−1), 2^(nlen/2)), or
    /// |p − q| ≤ 2^(nlen/2−100).
    FipsPrimes,
    /// FIPS 186-5 only: d ≤ 2^(nlen/2) or d ≥ λ(n).
    FipsPrivateExponent,
}

impl ProblemKind {
    /// Whether the problem only concerns FIPS 186-5 (the key is still a
    /// consistent RSA key).
    pub fn fips_only(self) -> bool {
        matches!(
            self,
            ProblemKind::FipsSize
                | ProblemKind::FipsExponent
                | ProblemKind::FipsPrimes
                | ProblemKind::FipsPrivateExponent
        )
    }
}

/// One finding: its kind and a sentence for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// What kind of problem.
    pub kind: ProblemKind,
    /// What exactly, in words.
    pub text: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

fn problem(kind: ProblemKind, text: impl Into<String>) -> Problem {
    Problem {
        kind,
        text: text.into(),
    }
}

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
    /// Problems that make the key unusable or wrong; empty when the key
    /// is consistent.
    pub problems: Vec<Problem>,
    /// Where a consistent key falls short of FIPS 186-5 (not errors).
    pub fips: Vec<Problem>,
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
    check_private_key_with(data, None)
}

/// [`check_private_key`] for a key that may be encrypted (PKCS#8 PBES2):
/// `passphrase` decrypts it ([`Error::Passphrase`] if it does not).
pub fn check_private_key_with(data: &[u8], passphrase: Option<&[u8]>) -> Result<RsaReport> {
    crate::gmp::init();
    // On a private stack, signals held (`secure::fiber::run_secret`).
    crate::secure::fiber::run_secret(|| check_private_key_inner(data, passphrase))
}

fn check_private_key_inner(data: &[u8], passphrase: Option<&[u8]>) -> Result<RsaReport> {
    match sniff_with(data, passphrase)?.content_with_block() {
        (Content::RsaPrivate { pkcs1, container }, block) => {
            check_pkcs1(pkcs1.as_slice(), container, block)
        }
        (Content::Dh { .. }, _) => Err(Error::WrongKind("DH parameters, not an RSA private key")),
        (Content::RsaPublic { .. }, _) => Err(Error::WrongKind(
            "an RSA public key, not a private key (check_public_key reads it)",
        )),
        (Content::EncryptedKey { .. }, _) => Err(Error::WrongKind(
            "an encrypted private key: give its passphrase (--passin), or decrypt it first",
        )),
    }
}

/// What [`check_public`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicReport {
    /// SubjectPublicKeyInfo (true) or PKCS#1 RSAPublicKey.
    pub spki: bool,
    /// Modulus size in bits.
    pub bits: u32,
    /// The public exponent, when it fits 64 bits.
    pub e: Option<u64>,
    /// For PEM input: the block checked and the number of blocks.
    pub block: Option<(usize, usize)>,
    /// Problems that make the key unusable; empty when it is sound.
    pub problems: Vec<Problem>,
    /// Where a sound key falls short of FIPS 186-5.
    pub fips: Vec<Problem>,
}

/// Checks an RSA public key (PKCS#1 RSAPublicKey DER) as OpenSSL 3's
/// public-key check (SP 800-56B 6.4.2.2) does: n odd, of a size we handle,
/// without prime factors below 10 000 and not prime (Baillie–PSW plus
/// random-base Miller–Rabin); e odd, > 1 and < n; and the FIPS 186-5 size
/// and exponent conditions. Time depends on n's size only.
pub fn check_public(
    pkcs1_der: &[u8],
    spki: bool,
    block: Option<(usize, usize)>,
) -> Result<PublicReport> {
    crate::gmp::init();
    let k = pkcs1::RsaPublicKey::<der::asn1::UintRef<'_>>::from_der(pkcs1_der)
        .map_err(|_| Error::Decode)?;
    small_exponent(k.public_exponent.as_bytes())?;
    let n = int(k.modulus.as_bytes());
    let e = int(k.public_exponent.as_bytes());
    let bits = n.significant_bits();
    let mut problems = Vec::new();
    let mut fips = Vec::new();
    let report = |problems, fips| PublicReport {
        spki,
        bits,
        e: e.to_u64(),
        block,
        problems,
        fips,
    };
    if bits > MAX_CHECK_BITS {
        problems.push(problem(
            ProblemKind::ModulusTooLarge,
            format!("modulus of {bits} bits is larger than {MAX_CHECK_BITS}"),
        ));
        return Ok(report(problems, fips));
    }
    if bits < 2 {
        problems.push(problem(
            ProblemKind::ModulusTooSmall,
            "the modulus is smaller than 2",
        ));
        return Ok(report(problems, fips));
    }
    if e <= 1u32 || e.is_even() {
        problems.push(problem(
            ProblemKind::BadPublicExponent,
            "public exponent is not odd and > 1",
        ));
    }
    if e >= n {
        problems.push(too_large(format!(
            "the public exponent has {} bits, not less than n",
            e.significant_bits()
        )));
    }
    if n.is_even() {
        problems.push(problem(ProblemKind::ModulusEven, "the modulus is even"));
    } else if let Some(p) = crate::prime::small::odd_primes_below(10_000)
        .into_iter()
        .find(|&p| n.is_divisible_u(p) && n != p)
    {
        problems.push(problem(
            ProblemKind::ModulusSmallFactor,
            format!("the modulus has the small factor {p}"),
        ));
    } else if crate::prime::is_probable_prime(&n, &Seed::from_os()?, 0) {
        problems.push(problem(ProblemKind::ModulusPrime, "the modulus is prime"));
    }
    if problems.is_empty() {
        if bits < 2048 || bits % 2 != 0 {
            fips.push(problem(
                ProblemKind::FipsSize,
                format!("FIPS 186-5 asks for an even size of at least 2048 bits ({bits} bits)"),
            ));
        }
        if e.significant_bits() <= 16 || e.significant_bits() > 256 {
            fips.push(problem(
                ProblemKind::FipsExponent,
                "FIPS 186-5 asks for 2^16 < e < 2^256",
            ));
        }
    }
    Ok(report(problems, fips))
}

/// Checks a key in hand (generated or imported) as [`check_private_key`]
/// checks a file.
pub fn check_key(key: &super::RsaKey) -> Result<RsaReport> {
    key.usable()?;
    crate::gmp::init();
    // Its numbers straight from the key, not encoded and parsed again.
    crate::secure::fiber::run_secret(|| {
        crate::gmp::secret_scope(|| {
            let k = key.parts();
            let parts = Parts {
                n: int(k.n),
                e: Integer::from(k.e),
                d: int(k.d),
                ps: k.primes.iter().map(|v| int(v)).collect(),
                exps: k.exps.iter().map(|v| int(v)).collect(),
                coeffs: k.coeffs.iter().map(|v| int(v)).collect(),
            };
            check_parts(parts, Container::Pkcs1, None)
        })
    })
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
    // On a private stack (`secure::fiber::run_secret`), signals held.
    crate::secure::fiber::run_secret(|| {
        crate::gmp::secret_scope(|| check_pkcs1_inner(pkcs1_der, container, block))
    })
}

/// The numbers of a PKCS#1 RSAPrivateKey.
pub(crate) struct Parts {
    pub n: Integer,
    pub e: Integer,
    pub d: Integer,
    /// p, q, then r_3, …
    pub ps: Vec<Integer>,
    /// dP, dQ, then d_3, …
    pub exps: Vec<Integer>,
    /// qInv, then t_3, …
    pub coeffs: Vec<Integer>,
}

impl Parts {
    /// Whether the sizes are possible for n (see [`check_private_key`]);
    /// nothing is multiplied or tested.
    pub(crate) fn sizes_ok(&self) -> bool {
        size_problems(
            &self.n,
            &self.e,
            &self.d,
            &self.ps,
            &self.exps,
            &self.coeffs,
        )
        .is_empty()
    }
}

/// The one rule for large public exponents, for every reader (check,
/// import, pubkey): primeforge's keys carry e below 2^64; a key with a
/// larger one (FIPS 186-5 allows up to 2^256, OpenSSL reads it) is named,
/// not read.
pub(crate) const E_TOO_LARGE: Error = Error::WrongKind(
    "an RSA key whose public exponent is 2^64 or more, which primeforge does not handle",
);

/// Refuses a public exponent of 65 bits or more ([`E_TOO_LARGE`]).
fn small_exponent(e_bytes: &[u8]) -> Result<()> {
    let significant = &e_bytes[e_bytes
        .iter()
        .position(|&b| b != 0)
        .unwrap_or(e_bytes.len())..];
    if significant.len() > 8 {
        return Err(E_TOO_LARGE);
    }
    Ok(())
}

/// Decodes a PKCS#1 RSAPrivateKey (DER) into its numbers.
pub(crate) fn parse_pkcs1(pkcs1_der: &[u8]) -> Result<Parts> {
    let k = pkcs1::RsaPrivateKey::<der::asn1::UintRef<'_>>::from_der(pkcs1_der)
        .map_err(|_| Error::Decode)?;
    small_exponent(k.public_exponent.as_bytes())?;
    let mut parts = Parts {
        n: int(k.modulus.as_bytes()),
        e: int(k.public_exponent.as_bytes()),
        d: int(k.private_exponent.as_bytes()),
        ps: vec![int(k.prime1.as_bytes()), int(k.prime2.as_bytes())],
        exps: vec![int(k.exponent1.as_bytes()), int(k.exponent2.as_bytes())],
        coeffs: vec![int(k.coefficient.as_bytes())],
    };
    if let Some(others) = &k.other_prime_infos {
        for o in others.iter() {
            parts.ps.push(int(o.prime.as_bytes()));
            parts.exps.push(int(o.exponent.as_bytes()));
            parts.coeffs.push(int(o.coefficient.as_bytes()));
        }
    }
    Ok(parts)
}

fn check_pkcs1_inner(
    pkcs1_der: &[u8],
    container: Container,
    block: Option<(usize, usize)>,
) -> Result<RsaReport> {
    check_parts(parse_pkcs1(pkcs1_der)?, container, block)
}

fn check_parts(
    parts: Parts,
    container: Container,
    block: Option<(usize, usize)>,
) -> Result<RsaReport> {
    let Parts {
        n,
        e,
        d,
        ps,
        exps,
        coeffs,
    } = parts;
    let bits = n.significant_bits();
    let report = |problems: Vec<Problem>, fips: Vec<Problem>| RsaReport {
        container,
        bits,
        primes: ps.len(),
        e: e.to_u64(),
        block,
        problems,
        fips,
    };
    let problems = size_problems(&n, &e, &d, &ps, &exps, &coeffs);
    if !problems.is_empty() {
        return Ok(report(problems, Vec::new()));
    }
    let mut problems = Vec::new();
    if e <= 1u32 || e.is_even() {
        problems.push(problem(
            ProblemKind::BadPublicExponent,
            "public exponent is not odd and > 1",
        ));
    }
    let product = ps.iter().fold(Integer::from(1u32), |a, p| a * p);
    if product != n {
        problems.push(problem(
            ProblemKind::ModulusNotProduct,
            "n is not the product of the primes",
        ));
    }
    let seed = Seed::from_os()?;
    for (i, p) in ps.iter().enumerate() {
        if !is_probable_prime(p, &seed, i as u64) {
            problems.push(problem(
                ProblemKind::NotPrime,
                format!("prime {} is not prime", i + 1),
            ));
        }
    }
    let mut fips = Vec::new();
    if problems.is_empty() {
        let lambda = super::carmichael_lambda(&ps)?;
        if Integer::from(&d * &e) % &lambda != 1u32 {
            problems.push(problem(
                ProblemKind::BadPrivateExponent,
                "d·e is not 1 modulo lcm(p_i − 1)",
            ));
        }
        fips = fips_shortfalls(bits, &e, &d, &ps, &lambda);
        for (i, (p, x)) in ps.iter().zip(&exps).enumerate() {
            if &d % Integer::from(p - 1u32) != *x {
                problems.push(problem(
                    ProblemKind::BadCrtExponent,
                    format!("CRT exponent {} is not d mod (r_{} − 1)", i + 1, i + 1),
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
                problems.push(problem(
                    ProblemKind::BadCrtCoefficient,
                    format!("CRT coefficient {i} is wrong"),
                ));
            }
            prefix *= p;
        }
    }
    Ok(report(problems, fips))
}

/// Where a consistent key falls short of FIPS 186-5 (A.1.1 and 5.1):
/// nlen ≥ 2048 and even, two primes, 2^16 < e < 2^256, each prime in
/// [√2·2^(nlen/2−1), 2^(nlen/2)), |p − q| > 2^(nlen/2−100), and
/// 2^(nlen/2) < d < λ(n).
fn fips_shortfalls(
    bits: u32,
    e: &Integer,
    d: &Integer,
    ps: &[Integer],
    lambda: &Integer,
) -> Vec<Problem> {
    let mut out = Vec::new();
    if bits < 2048 || bits % 2 != 0 || ps.len() != 2 {
        out.push(problem(
            ProblemKind::FipsSize,
            format!(
                "FIPS 186-5 asks for an even size of at least 2048 bits and two primes ({bits} bits, {} primes)",
                ps.len()
            ),
        ));
        return out;
    }
    let half = bits / 2;
    if e.significant_bits() <= 16 || e.significant_bits() > 256 {
        out.push(problem(
            ProblemKind::FipsExponent,
            "FIPS 186-5 asks for 2^16 < e < 2^256",
        ));
    }
    // p ≥ √2·2^(half−1)  ⇔  p² ≥ 2^(2·half−1), for p < 2^half.
    let low = Integer::from(1u32) << (2 * half - 1);
    let in_range = |p: &Integer| p.significant_bits() == half && Integer::from(p * p) >= low;
    let close = Integer::from(&ps[0] - &ps[1]).abs().significant_bits() <= half.saturating_sub(100);
    if !ps.iter().all(in_range) || close {
        out.push(problem(
            ProblemKind::FipsPrimes,
            "FIPS 186-5 asks for primes in [√2·2^(nlen/2−1), 2^(nlen/2)) with |p − q| > 2^(nlen/2−100)",
        ));
    }
    if d.significant_bits() <= half || d >= lambda {
        out.push(problem(
            ProblemKind::FipsPrivateExponent,
            "FIPS 186-5 asks for 2^(nlen/2) < d < λ(n)",
        ));
    }
    out
}

/// Size and count problems, found without arithmetic on the values.
fn size_problems(
    n: &Integer,
    e: &Integer,
    d: &Integer,
    ps: &[Integer],
    exps: &[Integer],
    coeffs: &[Integer],
) -> Vec<Problem> {
    let bits = n.significant_bits();
    let mut problems = Vec::new();
    if bits > MAX_CHECK_BITS {
        problems.push(problem(
            ProblemKind::ModulusTooLarge,
            format!("modulus of {bits} bits is larger than {MAX_CHECK_BITS}"),
        ));
        return problems;
    }
    if bits < 2 {
        problems.push(problem(
            ProblemKind::ModulusTooSmall,
            "the modulus is smaller than 2",
        ));
        return problems;
    }
    let cap = super::max_primes(bits) as usize;
    if ps.len() > cap {
        problems.push(problem(
            ProblemKind::TooManyPrimes,
            format!(
                "{} primes: at most {cap} for a {bits}-bit modulus (OpenSSL's limit)",
                ps.len()
            ),
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
            problems.push(too_large(format!(
                "{} has {pb} bits, more than n's {bits}",
                name(i)
            )));
        }
        if exps[i].significant_bits() > pb {
            problems.push(too_large(format!(
                "CRT exponent {} has {} bits, more than its prime's {pb}",
                i + 1,
                exps[i].significant_bits()
            )));
        }
    }
    if problems.is_empty() && sum > u64::from(bits) + ps.len() as u64 {
        problems.push(too_large(format!(
            "the primes have {sum} bits together, too many for a {bits}-bit n"
        )));
    }
    for (what, v) in [("the public exponent", e), ("the private exponent", d)] {
        if v.significant_bits() > bits {
            problems.push(too_large(format!(
                "{what} has {} bits, more than n's {bits}",
                v.significant_bits()
            )));
        }
    }
    for (i, c) in coeffs.iter().enumerate() {
        let limit = ps[i + 1].significant_bits().max(ps[0].significant_bits());
        if c.significant_bits() > limit {
            problems.push(too_large(format!(
                "CRT coefficient {} has {} bits, more than its prime's {limit}",
                i + 1,
                c.significant_bits()
            )));
        }
    }
    problems
}

fn too_large(text: String) -> Problem {
    problem(ProblemKind::ComponentTooLarge, text)
}
