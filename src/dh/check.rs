//! Parameter checks in the spirit of OpenSSL's `DH_check`, with the same
//! problem bits, so callers that know OpenSSL's flags can read ours.

use rug::Integer;

use super::fips186::{self, GeneratorCheck, SeedCheck};
use super::{named, DhParams};
use crate::encode::sniff::DhSyntax;
use crate::error::Result;
use crate::prime::is_probable_prime;
use crate::prime::stream::Seed;

/// p is not prime.
pub const P_NOT_PRIME: u32 = 0x01;
/// p is prime but (p − 1)/2 is not (checked when q is absent).
pub const P_NOT_SAFE_PRIME: u32 = 0x02;
/// g is outside 2 … p − 2, or (when q is given) g^q ≢ 1 (mod p).
pub const NOT_SUITABLE_GENERATOR: u32 = 0x08;
/// q is given but not prime.
pub const Q_NOT_PRIME: u32 = 0x10;
/// q is given but does not divide p − 1 (or is out of range).
pub const INVALID_Q: u32 = 0x20;
/// X9.42's j is given but is not (p − 1)/q (OpenSSL's "invalid j value").
pub const INVALID_J: u32 = 0x40;
/// p has fewer than [`MIN_CHECK_BITS`] bits.
pub const MODULUS_TOO_SMALL: u32 = 0x80;
/// p has more than [`MAX_CHECK_BITS`] bits (nothing else is checked).
pub const MODULUS_TOO_LARGE: u32 = 0x100;
/// q is given but has fewer than [`MIN_Q_BITS`] bits: the subgroup is too
/// small to protect anything (not one of OpenSSL's bits, which has none
/// for it: OpenSSL 3.0 accepts q = 11).
pub const Q_TOO_SMALL: u32 = 0x10000;

/// The parameters carry a FIPS 186-4 seed and counter (X9.42's
/// validationParms) from which A.1.1.3 does not give them, with any hash
/// it may use (not one of OpenSSL's bits: OpenSSL 3's DH check ignores the
/// seed).
pub const SEED_INVALID: u32 = 0x20000;

/// Smallest q accepted without a problem bit: FIPS 186-4's smallest N.
pub const MIN_Q_BITS: u32 = 160;

/// Smallest modulus accepted without a problem bit (OpenSSL's minimum).
pub const MIN_CHECK_BITS: u32 = 512;
/// Largest modulus checked at all.
pub const MAX_CHECK_BITS: u32 = super::MAX_BITS;

/// Checks `params`; returns the problem bits (0: no problem found).
pub fn check(params: &DhParams) -> Result<u32> {
    check_with_j(params, None)
}

/// [`check`], with X9.42's j when the parameters carry one.
pub fn check_with_j(params: &DhParams, j: Option<&Integer>) -> Result<u32> {
    crate::gmp::init();
    let p = &params.p;
    let bits = p.significant_bits();
    if bits > MAX_CHECK_BITS {
        return Ok(MODULUS_TOO_LARGE);
    }
    if let Some(q) = &params.q {
        if q.significant_bits() > MAX_CHECK_BITS {
            return Ok(INVALID_Q);
        }
    }
    let seed = Seed::from_os()?;
    let mut problems = 0;
    if bits < MIN_CHECK_BITS {
        problems |= MODULUS_TOO_SMALL;
    }
    let g = &params.g;
    let p_minus_1 = Integer::from(p - 1u32);
    if *g < 2u32 || *g >= p_minus_1 {
        problems |= NOT_SUITABLE_GENERATOR;
    }
    let p_prime = is_probable_prime(p, &seed, 0);
    if !p_prime {
        problems |= P_NOT_PRIME;
    }
    match &params.q {
        Some(q) => {
            if *q < 2u32 || *q >= *p {
                problems |= INVALID_Q;
            } else {
                // Each fault on its own, as OpenSSL lists them: a q that
                // neither divides p − 1 nor is prime is both.
                if !is_probable_prime(q, &seed, 1) {
                    problems |= Q_NOT_PRIME;
                }
                if !p_minus_1.is_divisible(q) {
                    problems |= INVALID_Q;
                } else if let Some(j) = j {
                    if Integer::from(&p_minus_1 / q) != *j {
                        problems |= INVALID_J;
                    }
                }
            }
            if q.significant_bits() < MIN_Q_BITS {
                problems |= Q_TOO_SMALL;
            }
            if problems & NOT_SUITABLE_GENERATOR == 0 && *p > 2u32 {
                let ok = g.clone().pow_mod(q, p).map(|x| x == 1u32).unwrap_or(false);
                if !ok {
                    problems |= NOT_SUITABLE_GENERATOR;
                }
            }
        }
        None => {
            if p_prime {
                let q = Integer::from(&p_minus_1 >> 1u32);
                if p.is_even() || !is_probable_prime(&q, &seed, 1) {
                    problems |= P_NOT_SAFE_PRIME;
                }
            }
        }
    }
    Ok(problems)
}

/// What [`check_encoded`] found in a file.
#[derive(Debug, Clone)]
pub struct DhReport {
    /// X9.42 (with q) or PKCS#3.
    pub syntax: DhSyntax,
    /// Size of p.
    pub bits: u32,
    /// The generator.
    pub g: Integer,
    /// Size of q, for X9.42.
    pub q_bits: Option<u32>,
    /// Whether the file carries X9.42's j (then it was checked).
    pub has_j: bool,
    /// Whether q = (p − 1)/2 (X9.42) or, for PKCS#3, the safe-prime test
    /// ran and passed.
    pub safe_prime: bool,
    /// A published group with this p and g.
    pub known: Option<named::Known>,
    /// For PEM: the block checked (1-based) and the number of blocks.
    pub block: Option<(usize, usize)>,
    /// Problem bits (0: none found).
    pub problems: u32,
    /// FIPS 186-4's seed and counter, when the file carries them: what
    /// A.1.1.3 found ([`SeedCheck::Absent`] otherwise; [`SEED_INVALID`]
    /// is set when it failed).
    pub seed: SeedCheck,
    /// The counter the file carries.
    pub counter: Option<u32>,
    /// For sound parameters with q of a FIPS 186-4 size: whether g is a
    /// canonical generator of the seed (A.2.4, every index tried) or only
    /// of order q (A.2.2).
    pub generator: Option<GeneratorCheck>,
}

/// Reads DH parameters from `data` (PEM or DER, read as OpenSSL reads
/// them) and checks them: the pipeline of both `pf_dh_check` and
/// `primeforge check`. Oversized parameters are refused before any
/// arithmetic.
pub fn check_encoded(data: &[u8]) -> Result<DhReport> {
    crate::gmp::init();
    match crate::encode::sniff::sniff(data)?.content_with_block() {
        (crate::encode::sniff::Content::Dh { der, syntax }, block) => {
            check_der(&der, syntax, block)
        }
        (crate::encode::sniff::Content::RsaPublic { .. }, _) => Err(
            crate::error::Error::WrongKind("an RSA public key, not DH parameters"),
        ),
        (crate::encode::sniff::Content::EncryptedKey { .. }, _) => Err(
            crate::error::Error::WrongKind("an encrypted private key, not DH parameters"),
        ),
        (crate::encode::sniff::Content::RsaPrivate { .. }, _) => Err(
            crate::error::Error::WrongKind("an RSA private key, not DH parameters"),
        ),
    }
}

/// Checks DH parameters already found by [`crate::encode::sniff`] (see
/// [`check_encoded`]); for callers that sniffed the file themselves, so
/// that it is decoded once.
pub fn check_der(
    der: &[u8],
    syntax: Option<DhSyntax>,
    block: Option<(usize, usize)>,
) -> Result<DhReport> {
    crate::gmp::init();
    let decoded = crate::encode::dh_decode_der(der, syntax)?;
    let params = DhParams::from_bytes(&decoded.p, &decoded.g, decoded.q.as_deref());
    let j = decoded
        .j
        .as_deref()
        .map(|b| Integer::from_digits(b, rug::integer::Order::Msf));
    let bits = params.p.significant_bits();
    let known = if bits <= MAX_CHECK_BITS {
        named::recognize(&params.p, &params.g)
    } else {
        None
    };
    // A published safe-prime group (RFC 7919, 3526) is known good, as
    // OpenSSL knows it: its p, with g = 2 and, if given, q = (p − 1)/2,
    // is not proven again (ffdhe8192 took 1.7 s).
    let published = known.as_ref().is_some_and(|k| k.safe_prime)
        && j.is_none()
        && params
            .q
            .as_ref()
            .is_none_or(|q| *q == Integer::from(&params.p >> 1u32));
    let mut problems = if published {
        0
    } else {
        check_with_j(&params, j.as_ref())?
    };
    let seed = match (&decoded.validation, &params.q) {
        (Some((seed, counter)), Some(q)) if problems & MODULUS_TOO_LARGE == 0 => {
            fips186::check_seed(&params.p, q, seed, *counter, None)
        }
        (Some(_), _) => SeedCheck::Failed("the parameters have no q"),
        (None, _) => SeedCheck::Absent,
    };
    if matches!(seed, SeedCheck::Failed(_)) {
        problems |= SEED_INVALID;
    }
    let fips_size = params
        .q
        .as_ref()
        .is_some_and(|q| fips186::SIZES.contains(&(bits, q.significant_bits())));
    let generator = match &params.q {
        Some(q) if fips_size && problems == 0 => {
            let with_seed = match (&decoded.validation, seed) {
                (Some((s, _)), SeedCheck::Verified(h)) => Some((s.as_slice(), h)),
                _ => None,
            };
            Some(fips186::check_generator(
                &params.p, q, &params.g, with_seed, None,
            ))
        }
        _ => None,
    };
    let safe_prime = match &params.q {
        Some(q) => problems == 0 && Integer::from(&params.p >> 1u32) == *q,
        None => problems & (P_NOT_PRIME | P_NOT_SAFE_PRIME | MODULUS_TOO_LARGE) == 0,
    };
    Ok(DhReport {
        syntax: if decoded.dsa {
            DhSyntax::Dsa
        } else if params.q.is_some() {
            DhSyntax::X942
        } else {
            DhSyntax::Pkcs3
        },
        bits,
        g: params.g.clone(),
        q_bits: params.q.as_ref().map(|q| q.significant_bits()),
        has_j: j.is_some(),
        safe_prime,
        known,
        block,
        problems,
        seed,
        counter: decoded.validation.as_ref().map(|v| v.1),
        generator,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dh::named::Group;

    #[test]
    fn named_groups_pass_and_broken_ones_fail() {
        let good = Group::Ffdhe2048.params().clone();
        assert_eq!(check(&good).unwrap(), 0);
        let pkcs3 = DhParams::from_parts(good.p.clone(), Integer::from(2u32), None);
        assert_eq!(check(&pkcs3).unwrap(), 0);

        // Composite p.
        let bad = DhParams::from_parts(Integer::from(&good.p + 2u32), Integer::from(2u32), None);
        assert_eq!(check(&bad).unwrap() & P_NOT_PRIME, P_NOT_PRIME);
        // Prime but not safe: the next prime after p.
        let np = good.p.clone().next_prime();
        let ns = DhParams::from_parts(np, Integer::from(2u32), None);
        assert_eq!(check(&ns).unwrap(), P_NOT_SAFE_PRIME);
        // Generators out of range, and g of order 2q with q declared.
        for g in [
            Integer::from(0u32),
            Integer::from(1u32),
            Integer::from(&good.p - 1u32),
        ] {
            let d = DhParams::from_parts(good.p.clone(), g, None);
            assert_eq!(check(&d).unwrap(), NOT_SUITABLE_GENERATOR);
        }
        let mut order_2q = None;
        for g in 3u32..100 {
            let d = DhParams::from_parts(good.p.clone(), Integer::from(g), good.q.clone());
            if !d.g_in_q_subgroup() {
                order_2q = Some(d);
                break;
            }
        }
        assert_eq!(check(&order_2q.unwrap()).unwrap(), NOT_SUITABLE_GENERATOR);
        // q inconsistent.
        let wrong_q = DhParams::from_parts(
            good.p.clone(),
            Integer::from(2u32),
            Some(Integer::from(7u32)),
        );
        assert_eq!(check(&wrong_q).unwrap() & INVALID_Q, INVALID_Q);
        // A q that is composite and does not divide p − 1 is both (as
        // OpenSSL's x942_q_notprime.pem is reported); it was only INVALID_Q.
        let composite = Integer::from(good.q.as_ref().unwrap() - 1u32);
        let both = DhParams::from_parts(good.p.clone(), Integer::from(2u32), Some(composite));
        assert_eq!(
            check(&both).unwrap() & (INVALID_Q | Q_NOT_PRIME),
            INVALID_Q | Q_NOT_PRIME
        );
        // Too small and too large.
        let small = DhParams::from_parts(Integer::from(23u32), Integer::from(2u32), None);
        assert_eq!(check(&small).unwrap(), MODULUS_TOO_SMALL);
        let huge = DhParams::from_parts(Integer::from(1u32) << 20000u32, Integer::from(2u32), None);
        assert_eq!(check(&huge).unwrap(), MODULUS_TOO_LARGE);
    }

    #[test]
    fn probable_prime_agrees_with_gmp() {
        let seed = Seed::from_os().unwrap();
        for n in 0u32..3000 {
            let ours = is_probable_prime(&Integer::from(n), &seed, 0);
            let gmp = Integer::from(n).is_probably_prime(30) != rug::integer::IsPrime::No;
            assert_eq!(ours, gmp, "{n}");
        }
    }
}
