//! The generated key: every component in secure memory, big-endian.

use rug::integer::Order;
use rug::Integer;

use crate::error::Result;
use crate::secure::SecureBuf;

/// An additional prime of a multi-prime key (RFC 8017 OtherPrimeInfo).
pub struct OtherPrime {
    /// The prime r_i.
    pub r: SecureBuf,
    /// d mod (r_i − 1).
    pub d: SecureBuf,
    /// (r_1 · … · r_{i−1})⁻¹ mod r_i.
    pub t: SecureBuf,
}

/// An RSA private key. All components are unsigned big-endian byte strings
/// without leading zeros, held in [`SecureBuf`]s and wiped when dropped.
pub struct RsaKey {
    pub(crate) bits: u32,
    pub(crate) e: u64,
    pub(crate) n: SecureBuf,
    pub(crate) d: SecureBuf,
    pub(crate) p: SecureBuf,
    pub(crate) q: SecureBuf,
    pub(crate) dp: SecureBuf,
    pub(crate) dq: SecureBuf,
    pub(crate) qinv: SecureBuf,
    pub(crate) others: Vec<OtherPrime>,
}

/// Writes `v` (≥ 0) big-endian into a fresh secure buffer.
pub(crate) fn to_secure(v: &Integer) -> Result<SecureBuf> {
    let mut buf = SecureBuf::new(v.significant_digits::<u8>())?;
    v.write_digits(buf.as_mut_slice(), Order::Msf);
    Ok(buf)
}

impl RsaKey {
    pub(crate) fn from_parts(
        bits: u32,
        e: u64,
        n: &Integer,
        d: &Integer,
        ps: &[Integer],
        exps: &[Integer],
        coeffs: &[Integer],
    ) -> Result<RsaKey> {
        let mut others = Vec::with_capacity(ps.len() - 2);
        for i in 2..ps.len() {
            others.push(OtherPrime {
                r: to_secure(&ps[i])?,
                d: to_secure(&exps[i])?,
                t: to_secure(&coeffs[i - 1])?,
            });
        }
        Ok(RsaKey {
            bits,
            e,
            n: to_secure(n)?,
            d: to_secure(d)?,
            p: to_secure(&ps[0])?,
            q: to_secure(&ps[1])?,
            dp: to_secure(&exps[0])?,
            dq: to_secure(&exps[1])?,
            qinv: to_secure(&coeffs[0])?,
            others,
        })
    }

    /// Modulus size in bits.
    pub fn bits(&self) -> u32 {
        self.bits
    }
    /// Public exponent.
    pub fn public_exponent(&self) -> u64 {
        self.e
    }
    /// Public exponent, big-endian without leading zeros.
    pub fn e_bytes(&self) -> Vec<u8> {
        let b = self.e.to_be_bytes();
        let skip = b.iter().position(|&x| x != 0).unwrap_or(7);
        b[skip..].to_vec()
    }
    pub fn n(&self) -> &[u8] {
        self.n.as_slice()
    }
    pub fn d(&self) -> &[u8] {
        self.d.as_slice()
    }
    pub fn p(&self) -> &[u8] {
        self.p.as_slice()
    }
    pub fn q(&self) -> &[u8] {
        self.q.as_slice()
    }
    pub fn dp(&self) -> &[u8] {
        self.dp.as_slice()
    }
    pub fn dq(&self) -> &[u8] {
        self.dq.as_slice()
    }
    pub fn qinv(&self) -> &[u8] {
        self.qinv.as_slice()
    }
    /// The primes beyond p and q (multi-prime keys).
    pub fn other_primes(&self) -> &[OtherPrime] {
        &self.others
    }
    /// Number of primes.
    pub fn prime_count(&self) -> usize {
        2 + self.others.len()
    }
}
