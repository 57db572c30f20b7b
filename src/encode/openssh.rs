//! OpenSSH private keys ("OPENSSH PRIVATE KEY", the `openssh-key-v1`
//! format of OpenSSH's PROTOCOL.key): what `ssh-keygen -t rsa` writes by
//! default. Parsed and, for a passphrase-protected key, decrypted
//! (bcrypt-pbkdf and AES-256-CTR, or any cipher ssh-keygen writes) by
//! RustCrypto's `ssh-key`; an RSA key becomes the PKCS#1 RSAPrivateKey the
//! rest of the library reads, with dP = d mod (p − 1) and dQ = d mod
//! (q − 1), which the format does not carry, computed by constant-time
//! division (`gmp::sec::rem`). Keys of other algorithms are named.
//!
//! `ssh-key` holds the key's numbers in its own heap buffers while it
//! parses them and wipes them when they are dropped (`Zeroize`); the
//! PKCS#1 DER is built straight into a secure buffer.
//!
//! Written the same way ([`write_private`], [`write_public`]): the key's
//! numbers go into `ssh-key`'s wiped buffers, the encoding straight into a
//! secure buffer; encryption is `ssh-key`'s
//! (bcrypt-pbkdf with 16 rounds and a 16-byte salt, AES-256-CTR: what
//! `ssh-keygen` writes), with randomness from the operating system.

use rug::integer::Order;
use rug::Integer;
use ssh_key::private::KeypairData;

use super::sniff::{Container, Content};
use super::{der_to_secure, uint};
use crate::error::{Error, Result};

/// Reads the binary `openssh-key-v1` structure (a PEM block's decoded
/// body): without `pass`, an encrypted key is reported as such; with it,
/// decrypted (a wrong one: [`Error::Passphrase`]).
pub(super) fn read(data: &[u8], pass: Option<&[u8]>) -> Result<Content> {
    let key = ssh_key::PrivateKey::from_bytes(data).map_err(|_| Error::Decode)?;
    let key = if key.is_encrypted() {
        let Some(pass) = pass else {
            return Ok(Content::EncryptedKey { legacy: true });
        };
        key.decrypt(pass).map_err(|e| match e {
            ssh_key::Error::Crypto | ssh_key::Error::Decrypted => Error::Passphrase,
            ssh_key::Error::AlgorithmUnknown | ssh_key::Error::AlgorithmUnsupported { .. } => {
                Error::WrongKind(
                    "an OpenSSH private key encrypted with a cipher primeforge does not read",
                )
            }
            _ => Error::Passphrase,
        })?
    } else {
        key
    };
    let rsa = match key.key_data() {
        KeypairData::Rsa(rsa) => rsa,
        KeypairData::Ed25519(_) => {
            return Err(Error::WrongKind("an OpenSSH Ed25519 private key, not RSA"))
        }
        KeypairData::Dsa(_) => return Err(Error::WrongKind("an OpenSSH DSA private key, not RSA")),
        _ if matches!(key.algorithm(), ssh_key::Algorithm::Ecdsa { .. }) => {
            return Err(Error::WrongKind("an OpenSSH ECDSA private key, not RSA"))
        }
        _ => {
            return Err(Error::WrongKind(
                "an OpenSSH private key of an algorithm other than RSA (a security key?)",
            ))
        }
    };
    fn bytes(m: &ssh_key::Mpint) -> Result<&[u8]> {
        m.as_positive_bytes().ok_or(Error::Decode)
    }
    let (n, e) = (bytes(rsa.public().n())?, bytes(rsa.public().e())?);
    let private = rsa.private();
    let (d, p, q, iqmp) = (
        bytes(private.d())?,
        bytes(private.p())?,
        bytes(private.q())?,
        bytes(private.iqmp())?,
    );
    // d mod (r − 1) for each prime r (odd, so r − 1 is r with bit 0
    // cleared), by constant-time division; into wiped limb storage.
    let d_int = Integer::from_digits(d, Order::Msf);
    let crt = |r: &[u8]| -> Result<zeroize::Zeroizing<Vec<u8>>> {
        let mut m = Integer::from_digits(r, Order::Msf);
        if m <= 2u32 || m.is_even() {
            return Err(Error::Decode);
        }
        m.set_bit(0, false);
        let v = crate::gmp::sec::rem(&d_int, &m);
        // The remainder's length: that of r − 1, whose size is public.
        let mut out = zeroize::Zeroizing::new(vec![0u8; r.len()]);
        v.write_digits(&mut out, Order::Msf);
        Ok(out)
    };
    let dp = crt(p)?;
    let dq = crt(q)?;
    let pkcs1 = pkcs1::RsaPrivateKey {
        modulus: uint(n)?,
        public_exponent: uint(e)?,
        private_exponent: uint(d)?,
        prime1: uint(p)?,
        prime2: uint(q)?,
        exponent1: uint(strip(&dp))?,
        exponent2: uint(strip(&dq))?,
        coefficient: uint(iqmp)?,
        other_prime_infos: None,
    };
    Ok(Content::RsaPrivate {
        pkcs1: der_to_secure(&pkcs1)?,
        container: Container::OpenSsh,
    })
}

/// Big-endian bytes without their leading zeros (a DER INTEGER's).
fn strip(b: &[u8]) -> &[u8] {
    &b[b.iter().position(|&x| x != 0).unwrap_or(b.len())..]
}

/// The operating system's random source, for `ssh-key`'s encryption (the
/// bcrypt-pbkdf salt and the check integer): rand_core's traits as
/// `ssh-key` re-exports them, over getrandom.
struct OsRng;

/// The OS random source failed.
#[derive(Debug)]
struct RngFailed;

impl std::fmt::Display for RngFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the operating system's random source failed")
    }
}

impl std::error::Error for RngFailed {}

impl ssh_key::rand_core::TryRng for OsRng {
    type Error = RngFailed;
    fn try_next_u32(&mut self) -> std::result::Result<u32, Self::Error> {
        getrandom::u32().map_err(|_| RngFailed)
    }
    fn try_next_u64(&mut self) -> std::result::Result<u64, Self::Error> {
        getrandom::u64().map_err(|_| RngFailed)
    }
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> std::result::Result<(), Self::Error> {
        getrandom::fill(dst).map_err(|_| RngFailed)
    }
}

impl ssh_key::rand_core::TryCryptoRng for OsRng {}

/// The key as `ssh-key` holds it (two primes only: the format has no
/// place for more).
fn ssh_private(key: &super::RsaParts<'_>, comment: &str) -> Result<ssh_key::PrivateKey> {
    use ssh_key::private::{RsaKeypair, RsaPrivateKey};
    use ssh_key::Mpint;
    if key.primes.len() != 2 {
        return Err(Error::Unsupported(
            "OpenSSH keys have two primes; this is a multi-prime key",
        ));
    }
    let mp = Mpint::from_positive_bytes;
    let fail = |_| Error::Internal;
    let public = ssh_key::public::RsaPublicKey::new(mp(&key.e_bytes()), mp(key.n)).map_err(fail)?;
    // OpenSSH's iqmp is q⁻¹ mod p, PKCS#1's coefficient.
    let private = RsaPrivateKey::new(
        mp(key.d),
        mp(key.coeffs[0]),
        mp(key.primes[0]),
        mp(key.primes[1]),
    )
    .map_err(fail)?;
    let pair = RsaKeypair::new(public, private).map_err(fail)?;
    ssh_key::PrivateKey::new(KeypairData::Rsa(pair), comment).map_err(fail)
}

/// An "OPENSSH PRIVATE KEY" (openssh-key-v1) with `comment`, encrypted
/// under `passphrase` when given (not empty: [`Error::InvalidArgument`]),
/// in a secure buffer.
pub(crate) fn write_private(
    key: &super::RsaParts<'_>,
    comment: &str,
    passphrase: Option<&[u8]>,
) -> Result<crate::secure::SecureBuf> {
    let plain = ssh_private(key, comment)?;
    let key = match passphrase {
        Some([]) => return Err(Error::InvalidArgument("the passphrase is empty")),
        Some(pass) => plain.encrypt(&mut OsRng, pass).map_err(|e| match e {
            ssh_key::Error::RngFailure => Error::Entropy,
            _ => Error::Internal,
        })?,
        None => plain,
    };
    // Encoded straight into secure memory (a bound on its length, then
    // the exact length): no ordinary heap copy of the text.
    use ssh_key::encoding::Encode;
    let binary = key.encoded_len().map_err(|_| Error::Internal)?;
    let b64 = binary.div_ceil(3) * 4;
    let bound = b64 + b64.div_ceil(70) + 128;
    let mut scratch = crate::secure::SecureBuf::new(bound)?;
    let len = key
        .encode_openssh(ssh_key::LineEnding::LF, scratch.as_mut_slice())
        .map_err(|_| Error::Internal)?
        .len();
    crate::secure::SecureBuf::from_slice(&scratch.as_slice()[..len])
}

/// The public key as one line of `authorized_keys` / `id_rsa.pub`:
/// "ssh-rsa AAAA… comment" and a newline (no comment: no trailing space).
pub(crate) fn write_public(n: &[u8], e: u64, comment: &str) -> Result<String> {
    use ssh_key::Mpint;
    let eb = e.to_be_bytes();
    let e = &eb[eb.iter().position(|&x| x != 0).unwrap_or(7)..];
    let public = ssh_key::public::RsaPublicKey::new(
        Mpint::from_positive_bytes(e),
        Mpint::from_positive_bytes(n),
    )
    .map_err(|_| Error::Internal)?;
    let key = ssh_key::PublicKey::new(ssh_key::public::KeyData::Rsa(public), comment);
    let mut line = key.to_openssh().map_err(|_| Error::Internal)?;
    line.push('\n');
    Ok(line)
}
