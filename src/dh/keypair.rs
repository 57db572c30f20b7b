//! DH key pairs on given parameters, for the OpenSSL provider (a TLS
//! server's ephemeral DHE keys) and any caller that wants one.
//!
//! The private exponent x is uniform in [2, q − 2] (q the subgroup order
//! the parameters carry, else (p − 1)/2, which is q for our safe primes),
//! drawn from a fresh OS seed through the ChaCha20 stream and reduced with
//! GMP's side-channel-silent division; y = g^x mod p by `mpz_powm_sec`, in
//! the secret GMP arena. x is kept in secure memory (`SecureBuf`, wiped on
//! drop); y and the parameters are public. OpenSSL's default provider
//! also draws full-length exponents for parameters that are not a named
//! group.

use rug::integer::Order;
use rug::Integer;

use super::{be_bytes as be, DhParams};
use crate::error::{Error, Result};
use crate::prime::stream::{random_in_range_secret, Purpose, Seed};
use crate::secure::SecureBuf;

/// A DH key pair (or a public key alone) on its parameters.
pub struct DhKeyPair {
    params: DhParams,
    public: Integer,
    private: Option<SecureBuf>,
}

impl DhKeyPair {
    /// The order the private exponent is drawn below.
    fn order(params: &DhParams) -> Integer {
        match params.q() {
            Some(q) => q.clone(),
            None => Integer::from(params.p() - 1u32) >> 1u32,
        }
    }

    /// Checks what every public key must satisfy: 1 < y < p − 1 (SP
    /// 800-56A rev. 3, 5.6.2.3.1, the partial check).
    fn public_in_range(params: &DhParams, y: &Integer) -> bool {
        *y > 1u32 && *y < Integer::from(params.p() - 1u32)
    }

    /// Generates a key pair on `params` (p odd and at least 256 bits).
    pub fn generate(params: &DhParams) -> Result<DhKeyPair> {
        crate::gmp::init();
        if params.bits() < super::MIN_BITS || params.p().is_even() {
            return Err(Error::InvalidArgument(
                "DH parameters: p must be odd and at least 256 bits",
            ));
        }
        let order = Self::order(params);
        if order < 5u32 {
            return Err(Error::InvalidArgument("DH parameters: q too small"));
        }
        let seed = Seed::from_os()?;
        // On a private stack, signals held (`secure::fiber::run_secret`).
        crate::secure::fiber::run_secret(|| {
            crate::gmp::secret_scope(|| {
                let mut x = Integer::new();
                seed.with_stream(Purpose::DhPrivate, 0, |rng| {
                    random_in_range_secret(
                        rng,
                        &Integer::from(2u32),
                        &Integer::from(&order - 3u32),
                        &mut x,
                    )
                });
                let y = params.g().clone().secure_pow_mod(&x, params.p());
                let mut store = SecureBuf::new(x.significant_digits::<u8>().max(1))?;
                x.write_digits(store.as_mut_slice(), Order::Msf);
                if !Self::public_in_range(params, &y) {
                    return Err(Error::InvalidArgument("DH parameters: g is degenerate"));
                }
                Ok(DhKeyPair {
                    params: params.clone(),
                    public: y,
                    private: Some(store),
                })
            })
        })
    }

    /// A key from its parts (big-endian): the public key, or the private
    /// key (the public key is then computed, and must equal `public` if
    /// that is given too).
    pub fn from_parts(
        params: DhParams,
        public: Option<&[u8]>,
        private: Option<&[u8]>,
    ) -> Result<DhKeyPair> {
        crate::gmp::init();
        let given = public.map(|b| Integer::from_digits(b, Order::Msf));
        let (public, private) = match private {
            Some(x_bytes) => crate::gmp::secret_scope(|| {
                let x = Integer::from_digits(x_bytes, Order::Msf);
                if x < 1u32 || x >= *params.p() {
                    return Err(Error::InvalidArgument("DH private key out of range"));
                }
                let y = params.g().clone().secure_pow_mod(&x, params.p());
                let store = SecureBuf::from_slice(x_bytes)?;
                Ok((y, Some(store)))
            })?,
            None => (
                given.clone().ok_or(Error::InvalidArgument(
                    "a DH key needs a public or a private key",
                ))?,
                None,
            ),
        };
        if given.is_some_and(|g| g != public) {
            return Err(Error::InvalidArgument(
                "DH public key does not match the private key",
            ));
        }
        if !Self::public_in_range(&params, &public) {
            return Err(Error::InvalidArgument(
                "DH public key out of range (1 < y < p - 1)",
            ));
        }
        Ok(DhKeyPair {
            params,
            public,
            private,
        })
    }

    /// The parameters.
    pub fn params(&self) -> &DhParams {
        &self.params
    }

    /// The public key y, big-endian, minimal.
    pub fn public_bytes(&self) -> Vec<u8> {
        be(&self.public)
    }

    /// The public key y, big-endian, left-padded to the length of p (the
    /// form TLS and OpenSSL's encoded public key use).
    pub fn public_padded(&self) -> Vec<u8> {
        let len = (self.params.bits() as usize).div_ceil(8);
        let y = self.public_bytes();
        let mut out = vec![0; len.saturating_sub(y.len())];
        out.extend(y);
        out
    }

    /// The private key x, big-endian, if this is a key pair.
    pub fn private_bytes(&self) -> Option<&[u8]> {
        self.private.as_ref().map(|s| s.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dh::named::Group;

    #[test]
    fn generated_pairs_agree_and_derive_the_same_secret() {
        let params = Group::Ffdhe2048.params();
        let a = DhKeyPair::generate(params).unwrap();
        let b = DhKeyPair::generate(params).unwrap();
        assert_ne!(a.public_bytes(), b.public_bytes());
        let x = Integer::from_digits(a.private_bytes().unwrap(), Order::Msf);
        let q = Integer::from(params.p() - 1u32) >> 1u32;
        assert!(x >= 2u32 && x <= Integer::from(&q - 2u32));
        // y = g^x, and both sides reach the same shared secret.
        let ya = Integer::from_digits(&a.public_bytes(), Order::Msf);
        let yb = Integer::from_digits(&b.public_bytes(), Order::Msf);
        let xb = Integer::from_digits(b.private_bytes().unwrap(), Order::Msf);
        assert_eq!(params.g().clone().pow_mod(&x, params.p()).unwrap(), ya);
        assert_eq!(
            yb.pow_mod(&x, params.p()).unwrap(),
            ya.pow_mod(&xb, params.p()).unwrap()
        );
        assert_eq!(a.public_padded().len(), 256);
        // Rebuilt from its private key, the same pair.
        let again = DhKeyPair::from_parts(params.clone(), None, a.private_bytes()).unwrap();
        assert_eq!(again.public_bytes(), a.public_bytes());
    }

    #[test]
    fn bad_parts_are_refused() {
        let params = Group::Ffdhe2048.params();
        let p_minus_1 = be(&Integer::from(params.p() - 1u32));
        for y in [vec![0u8], vec![1], p_minus_1, be(params.p())] {
            assert!(DhKeyPair::from_parts(params.clone(), Some(&y), None).is_err());
        }
        assert!(DhKeyPair::from_parts(params.clone(), None, None).is_err());
        let a = DhKeyPair::generate(params).unwrap();
        let b = DhKeyPair::generate(params).unwrap();
        assert!(
            DhKeyPair::from_parts(params.clone(), Some(&b.public_bytes()), a.private_bytes())
                .is_err()
        );
        assert!(DhKeyPair::from_parts(params.clone(), None, Some(&[0])).is_err());
    }
}
