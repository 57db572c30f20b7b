//! The generated key: every component in secure memory, big-endian.

use rug::integer::Order;
use rug::Integer;

use crate::error::Result;
use crate::secure::SecureBuf;

/// An additional prime of a multi-prime key (RFC 8017 OtherPrimeInfo),
/// borrowed from the key's secure memory.
pub struct OtherPrime<'a> {
    /// The prime r_i.
    pub r: &'a [u8],
    /// d mod (r_i − 1).
    pub d: &'a [u8],
    /// (r_1 · … · r_{i−1})⁻¹ mod r_i.
    pub t: &'a [u8],
}

/// An RSA private key. All components are unsigned big-endian byte strings
/// without leading zeros, held together in one [`SecureBuf`] (one locked,
/// guarded mapping per key rather than one per component: each mapping
/// costs several system calls, about 0.3 ms per key for eight of them) and
/// wiped when dropped.
pub struct RsaKey {
    pub(crate) bits: u32,
    pub(crate) e: u64,
    store: SecureBuf,
    /// (offset, length) in `store` of n, d, p, q, dP, dQ, qInv, then r, d,
    /// t of each additional prime.
    spans: Vec<(usize, usize)>,
}

/// Index of each component in `RsaKey::spans`.
const N: usize = 0;
const D: usize = 1;
const P: usize = 2;
const Q: usize = 3;
const DP: usize = 4;
const DQ: usize = 5;
const QINV: usize = 6;
const FIXED: usize = 7;

impl RsaKey {
    /// Writes every component (each ≥ 0) big-endian, without leading
    /// zeros, into one fresh secure buffer.
    pub(crate) fn from_parts(
        bits: u32,
        e: u64,
        n: &Integer,
        d: &Integer,
        ps: &[Integer],
        exps: &[Integer],
        coeffs: &[Integer],
    ) -> Result<RsaKey> {
        let mut parts: Vec<&Integer> = vec![n, d, &ps[0], &ps[1], &exps[0], &exps[1], &coeffs[0]];
        for i in 2..ps.len() {
            parts.extend([&ps[i], &exps[i], &coeffs[i - 1]]);
        }
        let mut spans = Vec::with_capacity(parts.len());
        let mut total = 0;
        for v in &parts {
            let len = v.significant_digits::<u8>();
            spans.push((total, len));
            total += len;
        }
        let mut store = SecureBuf::new(total)?;
        for (v, &(at, len)) in parts.iter().zip(&spans) {
            v.write_digits(&mut store.as_mut_slice()[at..at + len], Order::Msf);
        }
        Ok(RsaKey {
            bits,
            e,
            store,
            spans,
        })
    }

    fn part(&self, i: usize) -> &[u8] {
        let (at, len) = self.spans[i];
        &self.store.as_slice()[at..at + len]
    }

    /// Whether the key was made by the parent of this `fork()` child (its
    /// secure memory is wiped: nothing in it may be used).
    pub fn is_inherited(&self) -> bool {
        self.store.is_inherited()
    }

    /// `Err(Forked)` for a key inherited through `fork()`.
    pub fn usable(&self) -> Result<()> {
        if self.is_inherited() {
            Err(crate::error::Error::Forked)
        } else {
            Ok(())
        }
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
    /// The modulus n.
    pub fn n(&self) -> &[u8] {
        self.part(N)
    }
    /// The private exponent d.
    pub fn d(&self) -> &[u8] {
        self.part(D)
    }
    /// The first prime p.
    pub fn p(&self) -> &[u8] {
        self.part(P)
    }
    /// The second prime q.
    pub fn q(&self) -> &[u8] {
        self.part(Q)
    }
    /// d mod (p − 1).
    pub fn dp(&self) -> &[u8] {
        self.part(DP)
    }
    /// d mod (q − 1).
    pub fn dq(&self) -> &[u8] {
        self.part(DQ)
    }
    /// q⁻¹ mod p.
    pub fn qinv(&self) -> &[u8] {
        self.part(QINV)
    }
    /// The primes beyond p and q (multi-prime keys).
    pub fn other_primes(&self) -> Vec<OtherPrime<'_>> {
        (0..self.prime_count() - 2)
            .filter_map(|i| self.other_prime(i))
            .collect()
    }
    /// Additional prime number `i` (0 = the third prime), if the key has it.
    pub fn other_prime(&self, i: usize) -> Option<OtherPrime<'_>> {
        let at = FIXED + 3 * i;
        (at + 2 < self.spans.len()).then(|| OtherPrime {
            r: self.part(at),
            d: self.part(at + 1),
            t: self.part(at + 2),
        })
    }
    /// Number of primes.
    pub fn prime_count(&self) -> usize {
        2 + (self.spans.len() - FIXED) / 3
    }

    /// The key's numbers, as the encoders take them.
    pub fn parts(&self) -> crate::encode::RsaParts<'_> {
        let others = self.other_primes();
        let mut parts = crate::encode::RsaParts {
            n: self.n(),
            e: self.e,
            d: self.d(),
            primes: vec![self.p(), self.q()],
            exps: vec![self.dp(), self.dq()],
            coeffs: vec![self.qinv()],
        };
        for o in others {
            parts.primes.push(o.r);
            parts.exps.push(o.d);
            parts.coeffs.push(o.t);
        }
        parts
    }

    /// Encodes the key in `format` ([`crate::encode::RsaFormat`]): PKCS#1,
    /// PKCS#8 or, for the public half, SPKI and PKCS#1, in PEM or DER; into
    /// secure memory. `Err(Forked)` for a key inherited through `fork()`.
    pub fn export(&self, format: crate::encode::RsaFormat) -> Result<SecureBuf> {
        self.usable()?;
        // On a private stack, signals held (`secure::fiber::run_secret`),
        // for callers of the core as for the C ABI's.
        crate::secure::fiber::run_secret(|| crate::encode::rsa_encode(&self.parts(), format))
    }

    /// The key as an "OPENSSH PRIVATE KEY" (what `ssh-keygen -t rsa`
    /// writes), with `comment`, encrypted under `passphrase` when given
    /// (bcrypt-pbkdf and AES-256-CTR, as ssh-keygen encrypts). Two-prime
    /// keys only ([`Error::Unsupported`] otherwise).
    pub fn export_openssh(&self, comment: &str, passphrase: Option<&[u8]>) -> Result<SecureBuf> {
        self.usable()?;
        crate::secure::fiber::run_secret(|| {
            crate::encode::openssh::write_private(&self.parts(), comment, passphrase)
        })
    }

    /// The public key as an `authorized_keys` line ("ssh-rsa AAAA…
    /// comment", newline-terminated).
    pub fn openssh_public(&self, comment: &str) -> Result<String> {
        self.usable()?;
        crate::encode::openssh::write_public(self.n(), self.e, comment)
    }

    /// Encodes the key as encrypted PKCS#8 (see
    /// [`crate::encode::rsa_encode_encrypted`]).
    pub fn export_encrypted(
        &self,
        pem: bool,
        passphrase: &[u8],
        kdf: crate::encode::pbes2::Kdf,
    ) -> Result<SecureBuf> {
        self.usable()?;
        crate::secure::fiber::run_secret(|| {
            crate::encode::rsa_encode_encrypted(&self.parts(), pem, passphrase, kdf)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::RsaFormat;

    /// The key's storage and every private encoding with the key's
    /// secret parts marked undefined but each part's top limb: a part's
    /// byte length is public (its DER length shows it), and it is counted
    /// from the top limb's leading zeros, which memcheck cannot see depend
    /// on the top byte alone. Meaningful only under valgrind: run by
    /// `arith::ct_check`.
    #[test]
    #[ignore = "run by arith::ct_check under valgrind"]
    fn encoding_workload() {
        use crate::arith::ct_check::{
            defined_slice, public_integer, secret_integer_below_top_limb,
        };
        let seed = [0x3cu8; 32];
        for primes in [2u32, 3] {
            let mut opts = crate::prime::Options {
                threads: 1,
                seed: Some(&seed),
                ..Default::default()
            };
            let (key, _) = crate::rsa::generate(1024, 65537, primes, &mut opts).unwrap();
            let int = |b: &[u8]| Integer::from_digits(b, Order::Msf);
            let (n, d) = (int(key.n()), int(key.d()));
            let mut ps = vec![int(key.p()), int(key.q())];
            let mut exps = vec![int(key.dp()), int(key.dq())];
            let mut coeffs = vec![int(key.qinv())];
            for o in key.other_primes() {
                ps.push(int(o.r));
                exps.push(int(o.d));
                coeffs.push(int(o.t));
            }
            let secrets: Vec<&Integer> = std::iter::once(&d)
                .chain(&ps)
                .chain(&exps)
                .chain(&coeffs)
                .collect();
            for x in &secrets {
                secret_integer_below_top_limb(x);
            }
            let again = RsaKey::from_parts(1024, 65537, &n, &d, &ps, &exps, &coeffs).unwrap();
            for format in [
                RsaFormat::Pkcs1Der,
                RsaFormat::Pkcs1Pem,
                RsaFormat::Pkcs8Der,
                RsaFormat::Pkcs8Pem,
            ] {
                let mut out = again.export(format).unwrap();
                defined_slice(out.as_mut_slice());
                assert_eq!(
                    out.as_slice(),
                    key.export(format).unwrap().as_slice(),
                    "{format:?}"
                );
            }
            // The copies `from_parts` made, for the comparisons above and
            // the wipe when `again` drops.
            let mut store = again;
            defined_slice(store.store.as_mut_slice());
            for x in secrets {
                public_integer(x);
            }
        }
    }
}
