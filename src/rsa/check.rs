//! Checking an RSA private key read from a file (PKCS#1 or PKCS#8, PEM or
//! DER), for `primeforge check`. The decoded DER sits in a secure buffer
//! and the numbers in GMP (whose freed memory is wiped); the checks
//! themselves use ordinary, variable-time GMP arithmetic, like OpenSSL's
//! `RSA_check_key`.

use der::Decode;
use rug::integer::Order;
use rug::Integer;

use crate::error::{Error, Result};
use crate::prime::is_probable_prime;
use crate::prime::stream::Seed;
use crate::secure::SecureBuf;

/// What `check_private_key` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RsaReport {
    /// "PKCS#1" or "PKCS#8".
    pub container: &'static str,
    pub bits: u32,
    pub primes: usize,
    /// The public exponent, when it fits 64 bits.
    pub e: Option<u64>,
    /// Human-readable problems; empty when the key is consistent.
    pub problems: Vec<String>,
}

fn int(bytes: &[u8]) -> Integer {
    Integer::from_digits(bytes, Order::Msf)
}

/// Decodes PEM ("PRIVATE KEY" / "RSA PRIVATE KEY") or DER into a secure
/// buffer holding the DER, and says which container it is.
fn to_der(data: &[u8]) -> Result<(SecureBuf, &'static str)> {
    let start = data
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(data.len());
    let text = &data[start..];
    if text.starts_with(b"-----BEGIN") {
        let mut buf = SecureBuf::new(text.len())?;
        let (label, len) = {
            let (label, der) =
                pem_rfc7468::decode(text, buf.as_mut_slice()).map_err(|_| Error::Decode)?;
            (label.to_owned(), der.len())
        };
        let kind = match label.as_str() {
            "PRIVATE KEY" => "PKCS#8",
            "RSA PRIVATE KEY" => "PKCS#1",
            _ => return Err(Error::Decode),
        };
        let out = SecureBuf::from_slice(&buf.as_slice()[..len])?;
        return Ok((out, kind));
    }
    let kind = if pkcs8::PrivateKeyInfoRef::from_der(data).is_ok() {
        "PKCS#8"
    } else {
        "PKCS#1"
    };
    Ok((SecureBuf::from_slice(data)?, kind))
}

/// True if `data` looks like an RSA private key (by PEM label or DER shape).
pub fn looks_like_private_key(data: &[u8]) -> bool {
    match to_der(data) {
        Ok((der, "PKCS#8")) => pkcs8::PrivateKeyInfoRef::from_der(der.as_slice())
            .map(|i| i.algorithm.oid == pkcs1::ALGORITHM_OID)
            .unwrap_or(false),
        Ok((der, _)) => {
            pkcs1::RsaPrivateKey::<der::asn1::UintRef<'_>>::from_der(der.as_slice()).is_ok()
        }
        Err(_) => false,
    }
}

/// Decodes and checks an RSA private key: n = ∏ r_i, every r_i prime
/// (Baillie–PSW plus random-base Miller–Rabin), e odd and > 1,
/// d·e ≡ 1 (mod λ), the CRT values, and for multi-prime keys each
/// r_i's d_i and t_i. Malformed input is [`Error::Decode`]. The key's
/// numbers live in the secret arena while they are checked.
pub fn check_private_key(data: &[u8]) -> Result<RsaReport> {
    crate::gmp::init();
    crate::gmp::secret_scope(|| check_private_key_inner(data))
}

fn check_private_key_inner(data: &[u8]) -> Result<RsaReport> {
    let (der, container) = to_der(data)?;
    let inner: SecureBuf;
    let pkcs1_der: &[u8] = if container == "PKCS#8" {
        let info = pkcs8::PrivateKeyInfoRef::from_der(der.as_slice()).map_err(|_| Error::Decode)?;
        if info.algorithm.oid != pkcs1::ALGORITHM_OID {
            return Err(Error::Decode);
        }
        inner = SecureBuf::from_slice(info.private_key.as_bytes())?;
        inner.as_slice()
    } else {
        der.as_slice()
    };
    let k = pkcs1::RsaPrivateKey::<der::asn1::UintRef<'_>>::from_der(pkcs1_der)
        .map_err(|_| Error::Decode)?;
    crate::gmp::init();
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
    let mut problems = Vec::new();
    let bits = n.significant_bits();
    if bits > 16384 {
        problems.push(format!("modulus of {bits} bits is larger than 16384"));
        return Ok(RsaReport {
            container,
            bits,
            primes: ps.len(),
            e: e.to_u64(),
            problems,
        });
    }
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
    Ok(RsaReport {
        container,
        bits,
        primes: ps.len(),
        e: e.to_u64(),
        problems,
    })
}
