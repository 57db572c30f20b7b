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
