//! Diffie-Hellman parameters: safe primes p = 2q + 1 on the parallel
//! search engine with a segmented combined sieve, generator conventions,
//! named groups (RFC 7919, RFC 3526) and parameter checks.
//!
//! ## Test order and the primality proof of p
//! For each sieve survivor j (p = p0 + M·j, q = (p − 1)/2):
//! 1. one Miller–Rabin round to base 2 on q — nearly every survivor fails
//!    here, at the cost of one exponentiation (squarings and doublings
//!    only: `prime::fermat::strong_base2_public_or_stop`; on AVX-512
//!    IFMA, for q of 9 limbs up to about 3300 bits, three or four
//!    survivors at once, `strong_base2_public_lanes_or_stop`, and the
//!    search engine hands each worker its survivors in groups);
//! 2. an Euler test to base 2 on p: 2^q ≡ (2/p) (mod p), the Legendre
//!    symbol, which is +1 for p ≡ ±1 (mod 8) and −1 otherwise;
//! 3. confirmation of q: Miller–Rabin rounds with bases from the seeded
//!    stream, enough for an error below 2^-128 on a random candidate of
//!    q's size (FIPS 186-5 C.1 bound, see `prime::mr`), then a strong Lucas
//!    test (with round 1 this is Baillie–PSW, for which no composite is
//!    known);
//! 4. p is then *proven* prime from q by Pocklington's criterion: if q is
//!    prime, q | p − 1, q > √p − 1, and some a has a^(p−1) ≡ 1 (mod p) and
//!    gcd(a^((p−1)/q) − 1, p) = 1, then p is prime. (Proof: a prime factor
//!    f of p has a^(p−1) ≡ 1 and a^((p−1)/q) ≢ 1 mod f, so the order of a
//!    mod f divides p − 1 = 2q but not 2, hence q | order | f − 1, so
//!    f > q ≥ √p, and p cannot have two such factors.) With a = 2: step 2
//!    gives 2^(p−1) = (2^q)² ≡ 1, and 2^((p−1)/q) − 1 = 3, coprime to p
//!    because every convention below makes p ≡ 2 (mod 3).
//!
//! Nothing here is secret (DH parameters are public), so exponentiations
//! are variable-time: step 1 as above, the others by `gmp::pubpow` (GMP's
//! sliding windows, interruptible); a cancelled job waits for no more than
//! 64 squarings.
//!
//! ## Generator conventions (p mod M ≡ a)
//! | g | condition | why |
//! |---|---|---|
//! | 2 (default) | p ≡ 23 (mod 24) | 2 is a square mod p, so g = 2 generates the subgroup of prime order q (OpenSSL 3) |
//! | 2, legacy flag | p ≡ 11 (mod 24) | OpenSSL 1.1 / BoringSSL's `DH_check` expectation; g generates the whole group of order 2q |
//! | 5 | p ≡ 59 (mod 60) | 5 is a square mod p (p ≡ ±1 mod 5), order q |
//! | other g in 3 … 2^31 − 1 | p ≡ 11 (mod 12) | p ≡ 3 (mod 4) and q ≢ 0 (mod 3) |

#![forbid(unsafe_code)]

pub mod check;
pub mod fips186;
mod keypair;
pub mod named;
pub(crate) mod sieve;

use std::sync::atomic::{AtomicBool, Ordering};

use rug::{Assign, Integer};

use crate::error::{Error, Result};
use crate::gmp::pubpow::pow_mod_or_stop;
use crate::prime::fermat::{strong_base2_public_lanes_or_stop, strong_base2_public_or_stop};
use crate::prime::lucas::strong_lucas_or_stop;
use crate::prime::mr::{rounds_for_bits, MrCandidate};
use crate::prime::search::{mr_round_from_stream, CandidateSource, Generation, Verdict};
use crate::prime::stream::{random_in_range, Purpose, Seed};
use crate::prime::{Options, Stats};

pub use keypair::DhKeyPair;
use sieve::Sieve;

/// Smallest size of p.
pub const MIN_BITS: u32 = 256;
/// Largest size of p.
pub const MAX_BITS: u32 = 16384;
/// The default generator.
pub const DEFAULT_GENERATOR: u32 = 2;
/// Largest generator accepted.
pub const MAX_GENERATOR: u32 = (1 << 31) - 1;
/// Flag: for g = 2, the legacy form p ≡ 11 (mod 24).
pub const FLAG_LEGACY_G2: u32 = 1;
/// Flag (with generator 0): OpenSSH's moduli — p ≡ 11 (mod 12), kept
/// when `ssh-keygen -M screen` gives it a generator: g = 2 for p ≡ 11
/// (mod 24), else g = 5 for p ≡ 3 or 7 (mod 10); the others (a quarter of
/// the sieve's classes) are passed over unbuilt. Every prime ssh-keygen
/// would accept, not only the g = 2 ones. Not with the other flags; not a
/// C flag (`primeforge moduli`).
pub const FLAG_SSH_MODULI: u32 = 4;
/// Flag: g must generate the subgroup of prime order q (g a quadratic
/// residue mod p), as X9.42 parameters require. Automatic for g = 2, 3, 4
/// and 5 by their congruences; for other g a side condition on each
/// candidate; impossible (refused) with [`FLAG_LEGACY_G2`].
pub const FLAG_X942: u32 = 2;

/// DH parameters: a safe prime p, q = (p − 1)/2 and a generator g.
/// Everything is public.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DhParams {
    pub(crate) p: Integer,
    pub(crate) q: Option<Integer>,
    pub(crate) g: Integer,
    /// For FIPS 186-4 parameters: the seed, counter and hash that make
    /// them verifiable (X9.42's validationParms carry seed and counter).
    pub(crate) fips186: Option<fips186::Provenance>,
}

impl DhParams {
    /// Builds parameters from their parts (no checks; see [`check`]).
    pub fn from_parts(p: Integer, g: Integer, q: Option<Integer>) -> DhParams {
        DhParams {
            p,
            q,
            g,
            fips186: None,
        }
    }
    /// Builds parameters from big-endian unsigned bytes (public values).
    pub fn from_bytes(p: &[u8], g: &[u8], q: Option<&[u8]>) -> DhParams {
        let int = |b: &[u8]| Integer::from_digits(b, rug::integer::Order::Msf);
        DhParams {
            p: int(p),
            q: q.map(int),
            g: int(g),
            fips186: None,
        }
    }
    /// Size of p in bits.
    pub fn bits(&self) -> u32 {
        self.p.significant_bits()
    }
    /// The prime p.
    pub fn p(&self) -> &Integer {
        &self.p
    }
    /// The subgroup order, when known.
    pub fn q(&self) -> Option<&Integer> {
        self.q.as_ref()
    }
    /// The generator g.
    pub fn g(&self) -> &Integer {
        &self.g
    }
    /// Whether g lies in the subgroup of order q (g^q ≡ 1 mod p).
    pub fn g_in_q_subgroup(&self) -> bool {
        match &self.q {
            Some(q) => self
                .g
                .clone()
                .pow_mod(q, &self.p)
                .map(|x| x == 1u32)
                .unwrap_or(false),
            None => false,
        }
    }
}

/// A component of DH parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DhPart {
    /// The prime p.
    P,
    /// q = (p − 1)/2, or the X9.42 subgroup order.
    Q,
    /// The generator g.
    G,
}

impl DhParams {
    /// Encodes the parameters in `format` ([`crate::encode::DhFormat`]).
    /// X9.42 and DSA need q and g in the subgroup of order q (else
    /// [`Error::Unsupported`], saying which: the file would declare a
    /// wrong q). X9.42 carries FIPS 186-4's seed and counter when the
    /// parameters have them.
    pub fn export(&self, format: crate::encode::DhFormat) -> Result<crate::secure::SecureBuf> {
        use crate::encode::DhFormat::{DsaDer, DsaPem, X942Der, X942Pem};
        if matches!(format, X942Pem | X942Der | DsaPem | DsaDer) {
            if self.q.is_none() {
                return Err(Error::Unsupported(
                    "X9.42 and DSA parameters carry q, and these parameters have none; export them as PKCS#3",
                ));
            }
            if !self.g_in_q_subgroup() {
                return Err(Error::Unsupported(
                    "X9.42 and DSA parameters need g in the subgroup of order q, and this g is not; export them as PKCS#3",
                ));
            }
        }
        let p = self.part_bytes(DhPart::P).ok_or(Error::Internal)?;
        let g = self.part_bytes(DhPart::G).ok_or(Error::Internal)?;
        let q = self.part_bytes(DhPart::Q);
        crate::encode::dh_encode(
            &crate::encode::DhParts {
                p: &p,
                g: &g,
                q: q.as_deref(),
                validation: self
                    .fips186
                    .as_ref()
                    .map(|v| (v.seed.as_slice(), v.counter)),
            },
            format,
        )
    }

    /// FIPS 186-4's seed, counter and (for parameters made here) hash and
    /// generator method, when the parameters have them.
    pub fn fips186(&self) -> Option<&fips186::Provenance> {
        self.fips186.as_ref()
    }

    /// The parameters with FIPS 186-4's seed and counter attached (as
    /// another library hands them over; nothing is checked here: see
    /// [`check`]).
    pub fn with_fips186(mut self, provenance: fips186::Provenance) -> DhParams {
        self.fips186 = Some(provenance);
        self
    }

    /// Big-endian unsigned bytes of a component (`None`: q is unknown).
    pub fn part_bytes(&self, part: DhPart) -> Option<Vec<u8>> {
        let v = match part {
            DhPart::P => &self.p,
            DhPart::Q => self.q.as_ref()?,
            DhPart::G => &self.g,
        };
        Some(be_bytes(v))
    }
}

/// A non-negative number as minimal big-endian bytes (none for 0).
pub(crate) fn be_bytes(v: &Integer) -> Vec<u8> {
    let mut b = vec![0u8; v.significant_digits::<u8>()];
    v.write_digits(&mut b, rug::integer::Order::Msf);
    b
}

/// The congruence p ≡ a (mod M) for a generator and flags.
pub fn convention(generator: u32, flags: u32) -> Result<(u64, u64)> {
    if flags & !(FLAG_LEGACY_G2 | FLAG_X942 | FLAG_SSH_MODULI) != 0 {
        return Err(Error::InvalidArgument("unknown DH flags"));
    }
    if flags & FLAG_SSH_MODULI != 0 {
        if flags != FLAG_SSH_MODULI || generator != 0 {
            return Err(Error::InvalidArgument(
                "OpenSSH moduli pick g per prime: generator 0 and no other flag",
            ));
        }
        return Ok((12, 11));
    }
    if flags & FLAG_LEGACY_G2 != 0 && flags & FLAG_X942 != 0 {
        return Err(Error::InvalidArgument(
            "X9.42 needs g in the subgroup of order q, and with the legacy form \
             (p ≡ 11 mod 24) g = 2 never is: drop one of them",
        ));
    }
    if !(2..=MAX_GENERATOR).contains(&generator) {
        return Err(Error::InvalidArgument(
            "generator must be in 2 ..= 2^31 - 1",
        ));
    }
    if flags & FLAG_LEGACY_G2 != 0 {
        if generator != 2 {
            return Err(Error::InvalidArgument(
                "the legacy flag applies to g = 2 only",
            ));
        }
        return Ok((24, 11));
    }
    Ok(match generator {
        2 => (24, 23),
        5 => (60, 59),
        _ => (12, 11),
    })
}

/// Checks a generation request.
pub fn validate(bits: u32, generator: u32, flags: u32) -> Result<(u64, u64)> {
    if !(MIN_BITS..=MAX_BITS).contains(&bits) {
        return Err(Error::InvalidArgument("bits must be in 256 ..= 16384"));
    }
    convention(generator, flags)
}

/// Sieve bound for safe primes of `bits` bits, chosen by measurement with
/// `cargo run --release --example dh_timing -- BITS N 1 --bound LOG2` and
/// `--example sieve_setup` (the answer does not depend on the bound, only
/// the work does). Each doubling of the bound removes 7–8 % of the
/// exponentiations (the sieve strikes more composites) and costs set-up
/// time: about 43–60 ns per sieving prime with GMP's remainders, about
/// 20 ns with those on AVX-512 IFMA, and no memory (large primes only
/// mark a window's bitmap). A prime r is worth sieving while the
/// exponentiations it saves, 2/r of those a search does, cost more than
/// its set-up; the bounds below are that model's optimum with the
/// measured costs (docs/measurements/benchmarks-archive.md, "Design
/// measurements"). With the cheaper set-up, one more doubling still
/// costs more than it saves: DH-2048 at 2^27 took 3.2–3.7 % more CPU than
/// at 2^26 (16 seeds, Intel Xeon with IFMA, 2026-12-06), DH-3072 at 2^28
/// and 2^29 were even. Where q's first test runs eight at once in the
/// lanes of one register (`arith::lanes`, q up to 1244 bits by rows
/// written out), each test costs about 0.6 of the interleaved one, and
/// DH-1024 at 2^22 took 4–7 % less CPU than at 2^23 (60 seeds, twice,
/// Intel Xeon with IFMA, 2026-12-06; 2^21 sat between). With q in bands
/// (up to 4156 bits) the larger bounds stay: DH-2048 at 2^25 took 4–8 %
/// more CPU than at 2^26 (40 seeds, twice), DH-3072 at 2^28 and 2^29 were
/// even (16 seeds, twice; Intel Xeon with IFMA, 2026-12-07). From 6144
/// bits the bound is the deepest the sieve takes (2^31), and the model
/// still puts the optimum above it with q's test in bands (half the cost
/// of the single test it replaced): the primes from 2^30 to 2^31 (about
/// 49 million, about 1 s of set-up) strike about 7 % of a search's
/// exponentiations, some 8 s of DH-6144's mean of about two minutes on one
/// thread (three seeds, Intel Xeon with IFMA, 2026-12-07).
pub fn sieve_bound(bits: u32) -> u32 {
    match bits {
        0..=511 => 1 << 16,
        512..=767 => 1 << 18,
        768..=1535 if crate::arith::lanes::fermat_digits(bits - 1).is_some() => 1 << 22,
        768..=1535 => 1 << 23,
        1536..=2559 => 1 << 26,
        2560..=3583 => 1 << 29,
        3584..=6143 => 1 << 30,
        _ => MAX_BOUND,
    }
}

/// Positions per sieve window for a search that wants `count` safe primes
/// of `bits` bits: four times the expected distance (about 0.06·bits²
/// positions per safe prime, measured at 1024 and 2048 bits), so that
/// about 2 % of searches set up a second window.
fn window_for(bits: u32, count: u64) -> u64 {
    let expected = 0.06 * (bits as f64).powi(2) * count as f64;
    // `Sieve::new` bounds it.
    (4.0 * expected) as u64
}

/// A sieve survivor ready for testing.
pub struct DhCand {
    q: MrCandidate,
    p: Integer,
}

struct DhSource {
    p0: Integer,
    m: u64,
    sieve: Sieve,
    /// With [`FLAG_X942`] and a g whose congruence does not already make it
    /// a quadratic residue: the side condition (g/p) = 1.
    residue_g: Option<Integer>,
    /// With [`FLAG_SSH_MODULI`]: the side condition that ssh-keygen gives
    /// p a generator.
    ssh_generators: bool,
    /// Miller–Rabin rounds on q with random bases.
    mr_rounds: u32,
    /// q's size.
    q_bits: u32,
}

impl DhSource {
    /// The source of a request's search, with its X9.42 side condition.
    fn for_request(req: &Request, seed: &Seed, bound: u32, window: u64) -> DhSource {
        let mut source = DhSource::new(req.bits, req.m, req.a, seed, bound, window);
        // 2 (p ≡ 7 mod 8), 3 (p ≡ 11 mod 12), 4 (a square) and 5 (p ≡ 4 mod 5)
        // are residues by their congruences already.
        if req.flags & FLAG_X942 != 0 && ![2, 3, 4, 5].contains(&req.generator) {
            source.residue_g = Some(Integer::from(req.generator));
        }
        source.ssh_generators = req.flags & FLAG_SSH_MODULI != 0;
        source
    }

    fn new(bits: u32, m: u64, a: u64, seed: &Seed, bound: u32, window: u64) -> DhSource {
        // p0: uniform in [2^(bits−1), 2^bits − 2^(bits−2)), moved up to the
        // class a mod M. At least 2^(bits−2)/M candidates lie above it,
        // far more than any search visits, so every p_j has `bits` bits.
        let lo = Integer::from(1u32) << (bits - 1);
        let width = Integer::from(1u32) << (bits - 2);
        let mut x = Integer::new();
        seed.with_stream(Purpose::DhStart, 0, |rng| {
            random_in_range(rng, &lo, &width, &mut x)
        });
        let r = Integer::from(&x % m).to_u64().expect("small");
        x += (a + m - r) % m;
        let sieve = Sieve::new(&x, m, bound, window);
        DhSource {
            p0: x,
            m,
            sieve,
            residue_g: None,
            ssh_generators: false,
            mr_rounds: rounds_for_bits(bits - 1),
            q_bits: bits - 1,
        }
    }
}

impl CandidateSource for DhSource {
    type Cand = DhCand;

    fn next_viable(&self, index: u64, stop: &AtomicBool) -> u64 {
        self.sieve.next_viable(index, stop)
    }

    fn candidate(&self, _seed: &Seed, index: u64, scratch: &mut Integer) -> Option<DhCand> {
        let mut p = std::mem::take(scratch);
        p.assign(self.m);
        p *= index;
        p += &self.p0;
        if let Some(g) = &self.residue_g {
            // p is public: an ordinary Jacobi symbol.
            if g.jacobi(&p) != 1 {
                *scratch = p;
                return None;
            }
        }
        if self.ssh_generators && ssh_generator(&p).is_none() {
            *scratch = p;
            return None;
        }
        let q = Integer::from(&p >> 1u32);
        Some(DhCand {
            q: MrCandidate::new(q),
            p,
        })
    }

    fn recycle(&self, cand: DhCand, scratch: &mut Integer) {
        *scratch = cand.p;
    }

    /// Round 0: MR base 2 on q and the Euler test on p; rounds 1 ..= t:
    /// MR with stream bases on q; round t + 1: strong Lucas on q.
    fn rounds(&self) -> u32 {
        self.mr_rounds + 2
    }

    fn round(&self, seed: &Seed, index: u64, round: u32, c: &DhCand, stop: &AtomicBool) -> Verdict {
        if round == 0 {
            // The first test on q: a Miller–Rabin round to base 2 by
            // squarings and doublings only, in variable time (q is public;
            // `prime::fermat`), 0.63-0.75x of `mpz_powm` at every size. It
            // looks at `stop` every 64 squarings.
            let q_passes = strong_base2_public_or_stop(&c.q.n, stop);
            euler_on_p(c, q_passes, stop)
        } else if round <= self.mr_rounds {
            // Stream rounds are numbered from 0 for the base derivation.
            mr_round_from_stream(seed, index, round - 1, &c.q, false, stop)
        } else {
            // The Lucas chain costs about two exponentiations; it is counted
            // as one.
            Verdict::one(strong_lucas_or_stop(&c.q.n, stop))
        }
    }

    fn prime(&self, c: &DhCand) -> Integer {
        c.p.clone()
    }

    /// Round 0's test on q can run on two to eight candidates at once
    /// (AVX-512 IFMA): eight in the lanes of one register where they take
    /// q's size (`prime::fermat::fermat_base2_secret_lanes_or_stop`, up to
    /// 8192 bits: DH-8192), else two to four interleaved
    /// (`prime::fermat::strong_base2_public_lanes_or_stop`).
    fn first_round_lanes(&self) -> usize {
        crate::prime::fermat::secret_first_test_lanes(self.q_bits)
    }

    fn first_round_group(
        &self,
        _seed: &Seed,
        _index: &[u64],
        c: &[&DhCand],
        stop: &AtomicBool,
    ) -> Option<Vec<Verdict>> {
        let qs: Vec<&Integer> = c.iter().map(|c| &c.q.n).collect();
        // In lanes, q's test is the base-2 Fermat test (the lanes have no
        // strong test); a q that passes it and not the strong test is a
        // base-2 pseudoprime, which the Euler test on p and the
        // Miller–Rabin rounds on q still reject: the parameters of a seed
        // are the same either way.
        let verdicts = if crate::prime::fermat::fermat_in_lanes(self.q_bits) {
            crate::prime::fermat::fermat_base2_secret_lanes_or_stop(&qs, stop)
        } else {
            strong_base2_public_lanes_or_stop(&qs, stop)
        };
        match verdicts {
            Some(q_passes) => Some(
                c.iter()
                    .zip(q_passes)
                    .map(|(c, q_passes)| euler_on_p(c, q_passes, stop))
                    .collect(),
            ),
            None if stop.load(Ordering::Relaxed) => Some(vec![Verdict::one(false); c.len()]),
            None => None,
        }
    }
}

/// The rest of round 0 once q's strong base-2 test has given its verdict:
/// the Euler test to base 2 on p, 2^q ≡ (2/p) (mod p), where q passed.
fn euler_on_p(c: &DhCand, q_passes: bool, stop: &AtomicBool) -> Verdict {
    // A cancelled search stops between the two exponentiations.
    if !q_passes || stop.load(Ordering::Relaxed) {
        return Verdict::one(false);
    }
    let pass = match pow_mod_or_stop(&Integer::from(2u32), &c.q.n, &c.p, stop) {
        Some(x) => {
            let p_mod_8 = c.p.mod_u(8);
            if p_mod_8 == 1 || p_mod_8 == 7 {
                x == 1u32
            } else {
                x == Integer::from(&c.p - 1u32)
            }
        }
        None => false,
    };
    Verdict {
        pass,
        exponentiations: 2,
    }
}

/// The generator `ssh-keygen -M screen` gives a safe prime p (OpenSSH's
/// moduli.c): 2 for p ≡ 11 (mod 24), else 5 for p ≡ 3 or 7 (mod 10), else
/// none (the prime is skipped).
pub fn ssh_generator(p: &Integer) -> Option<u32> {
    if p.mod_u(24) == 11 {
        Some(2)
    } else if matches!(p.mod_u(10), 3 | 7) {
        Some(5)
    } else {
        None
    }
}

/// Reads DH parameters (PEM or DER, PKCS#3 or X9.42, read as leniently as
/// OpenSSL reads them). Parameters above [`check::MAX_CHECK_BITS`] bits
/// are refused ([`Error::WrongKind`]); whether they are sound is
/// [`check::check`]'s question.
pub fn import(data: &[u8]) -> Result<DhParams> {
    crate::gmp::init();
    let d = crate::encode::dh_decode(data)?;
    let mut params = DhParams::from_bytes(&d.p, &d.g, d.q.as_deref());
    params.fips186 = d.validation.map(|(seed, counter)| fips186::Provenance {
        seed,
        counter,
        hash: None,
        generator: fips186::Generator::Unknown,
    });
    if params.bits() > check::MAX_CHECK_BITS {
        return Err(Error::WrongKind("DH parameters above 16384 bits"));
    }
    Ok(params)
}

/// Generates DH parameters: a safe prime of exactly `bits` bits with the
/// congruence of `generator`'s convention (see the module docs).
pub fn generate(
    bits: u32,
    generator: u32,
    flags: u32,
    opts: &mut Options<'_>,
) -> Result<(DhParams, Stats)> {
    generate_request(&Request::new(bits, generator, flags)?, opts)
}

/// A validated DH generation request: the only place the size, generator
/// and flags are checked (the C ABI, the CLI and [`generate`] build one),
/// with the congruence p ≡ a (mod M) they call for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    bits: u32,
    generator: u32,
    flags: u32,
    m: u64,
    a: u64,
}

impl Request {
    /// Checks the request (see [`validate`]).
    pub fn new(bits: u32, generator: u32, flags: u32) -> Result<Request> {
        let (m, a) = validate(bits, generator, flags)?;
        Ok(Request {
            bits,
            generator,
            flags,
            m,
            a,
        })
    }

    /// Size of p in bits.
    pub fn bits(&self) -> u32 {
        self.bits
    }

    /// The parameters for a safe prime p the search found for this
    /// request, after checking it has the request's size and congruence
    /// (and, with [`FLAG_X942`], that g lies in the order-q subgroup).
    fn params(&self, p: Integer) -> Result<DhParams> {
        if p.significant_bits() != self.bits || p.mod_u(self.m as u32) as u64 != self.a {
            return Err(Error::Internal);
        }
        let q = Integer::from(&p >> 1u32);
        let g = if self.flags & FLAG_SSH_MODULI != 0 {
            ssh_generator(&p).ok_or(Error::Internal)?
        } else {
            self.generator
        };
        let params = DhParams {
            p,
            q: Some(q),
            g: Integer::from(g),
            fips186: None,
        };
        if self.flags & FLAG_X942 != 0 && !params.g_in_q_subgroup() {
            return Err(Error::Internal);
        }
        Ok(params)
    }
}

/// [`generate`] for a request already validated.
pub fn generate_request(req: &Request, opts: &mut Options<'_>) -> Result<(DhParams, Stats)> {
    generate_with_bound(req, opts, sieve_bound(req.bits))
}

/// [`generate_request`] with an explicit sieve bound (for measuring the
/// choice of [`sieve_bound`]; the output does not depend on the bound).
#[doc(hidden)]
pub fn generate_with_bound(
    req: &Request,
    opts: &mut Options<'_>,
    bound: u32,
) -> Result<(DhParams, Stats)> {
    if !(1 << 10..=MAX_BOUND).contains(&bound) {
        return Err(Error::InvalidArgument("sieve bound"));
    }
    crate::gmp::init();
    let here_possible = req.bits < HERE_BELOW_BITS;
    let admitted = crate::threads::admit_options(opts, here_possible)?;
    if here_possible && admitted.threads() == 1 {
        if let Some(r) = crate::prime::on_private_stack(opts, |here| {
            search_one(req, here, bound, &crate::threads::Workers::Here)
        }) {
            return r;
        }
    }
    search_one(
        req,
        opts,
        bound,
        &crate::threads::Workers::admitted(&admitted, opts.per_call_threads)?,
    )
}

/// The search for one safe prime of `req` on `workers`.
fn search_one(
    req: &Request,
    opts: &mut Options<'_>,
    bound: u32,
    workers: &crate::threads::Workers,
) -> Result<(DhParams, Stats)> {
    let seed = Seed::from_option(opts.seed)?;
    let source = DhSource::for_request(req, &seed, bound, window_for(req.bits, 1));
    let mut generation = Generation::new(workers, seed, opts, 1);
    let found = generation.search(source, 0, 1)?;
    let stats = generation.stats();
    let p = found.into_iter().next().ok_or(Error::Internal)?.prime;
    Ok((req.params(p)?, stats))
}

/// One-thread searches below this size run on the calling thread, on a
/// private stack (`prime::on_private_stack`: GMP's stack temporaries then
/// need nothing of the caller's stack), without a pool: its thread start
/// and join cost 0.1–0.3 ms, a fifth of a DH-256 search. Their sieve is set up within the first
/// candidate's turn (bound 2^18: a few ms), so progress reports keep
/// their cadence; from 768 bits (bound 2^23 and up) that set-up alone
/// outlasts the 50 ms between reports.
pub const HERE_BELOW_BITS: u32 = 768;

/// The deepest sieve: primes below 2^31 (two fit the 62-bit products the
/// set-up reduces by).
const MAX_BOUND: u32 = 1 << 31;

/// The most safe primes a [`Batch`] sizes its sieve for.
pub const BATCH_MAX: u32 = 4096;

/// Safe primes one after another from a single sieve: the lowest-numbered
/// safe primes p0 + M·j above one random start, in order. Each
/// [`Batch::next`] is one search (its own threads, progress and cancel),
/// so a caller keeps every prime found before it stops; the sieve's set-up
/// is shared by all of them, which lets it go deeper than one search
/// could afford (OpenSSH's moduli files: `primeforge moduli`).
///
/// For a seed, the sequence does not depend on the thread counts used.
pub struct Batch {
    req: Request,
    seed: Seed,
    source: std::sync::Arc<DhSource>,
    next_index: u64,
}

impl Batch {
    /// Sizes the sieve for `expected` safe primes (1 ..= [`BATCH_MAX`]; more
    /// may be taken, at some extra set-up cost). `seed`: 32 bytes, or
    /// `None` for fresh OS randomness.
    pub fn new(req: &Request, expected: u32, seed: Option<&[u8]>) -> Result<Batch> {
        if !(1..=BATCH_MAX).contains(&expected) {
            return Err(Error::InvalidArgument("batch size must be in 1 ..= 4096"));
        }
        crate::gmp::init();
        let seed = Seed::from_option(seed)?;
        let source = DhSource::for_request(
            req,
            &seed,
            batch_bound(req.bits, expected),
            window_for(req.bits, expected as u64),
        );
        Ok(Batch {
            req: *req,
            seed,
            source: std::sync::Arc::new(source),
            next_index: 0,
        })
    }

    /// The next safe prime of the sequence. `opts` gives the threads, the
    /// progress callback and the cancel flag; its seed must be `None` (the
    /// batch has its own). After an error (a cancel) the batch can go on:
    /// the next call searches from where the failed one started.
    pub fn next(&mut self, opts: &mut Options<'_>) -> Result<(DhParams, Stats)> {
        if opts.seed.is_some() {
            return Err(Error::InvalidArgument(
                "a batch's seed is given to Batch::new",
            ));
        }
        self.source.sieve.forget_below(self.next_index);
        let admitted = crate::threads::admit_options(opts, false)?;
        let pool = crate::threads::Workers::admitted(&admitted, opts.per_call_threads)?;
        let mut generation = Generation::new(&pool, self.seed.clone(), opts, 1);
        let found = generation
            .search(std::sync::Arc::clone(&self.source), self.next_index, 1)?
            .into_iter()
            .next()
            .ok_or(Error::Internal)?;
        let stats = generation.stats();
        let params = self.req.params(found.prime)?;
        self.next_index = found.index + 1;
        Ok((params, stats))
    }
}

/// Sieve bound for a batch of `expected` safe primes: the set-up is shared,
/// so the single search's optimum ([`sieve_bound`]) moves up about in
/// proportion (see there), to at most 2^31.
fn batch_bound(bits: u32, expected: u32) -> u32 {
    let scale = expected.next_power_of_two().min(1 << 8) as u64;
    (sieve_bound(bits) as u64 * scale).min(MAX_BOUND as u64) as u32
}

/// What setting up the combined sieve of one search costs
/// (`bench/examples/sieve_setup`).
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct SieveCost {
    /// Sieving primes below the bound (those not dividing M).
    pub primes: usize,
    /// Finding them and their residue classes, on one thread.
    pub setup: std::time::Duration,
    /// Building the first segment from the classes.
    pub first_segment: std::time::Duration,
    /// Survivors in the first segment.
    pub survivors: u64,
}

/// Sets up the sieve of the search a request and seed start, with `bound`,
/// on the calling thread, and times it (for `bench/examples/sieve_setup`).
#[doc(hidden)]
pub fn measure_sieve(req: &Request, bound: u32, seed: &[u8]) -> Result<SieveCost> {
    if !(1 << 10..=MAX_BOUND).contains(&bound) {
        return Err(Error::InvalidArgument("sieve bound"));
    }
    crate::gmp::init();
    let seed = Seed::from_bytes(seed)?;
    let never = AtomicBool::new(false);
    let t0 = std::time::Instant::now();
    let source = DhSource::new(
        req.bits,
        req.m,
        req.a,
        &seed,
        bound,
        window_for(req.bits, 1),
    );
    let primes = source.sieve.prepare_now();
    let setup = t0.elapsed();
    let t1 = std::time::Instant::now();
    let survivors = source.sieve.survivors(0, &never);
    Ok(SieveCost {
        primes,
        setup,
        first_segment: t1.elapsed(),
        survivors,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conventions() {
        assert_eq!(convention(2, 0), Ok((24, 23)));
        assert_eq!(convention(2, FLAG_LEGACY_G2), Ok((24, 11)));
        assert_eq!(convention(5, 0), Ok((60, 59)));
        assert_eq!(convention(3, 0), Ok((12, 11)));
        assert_eq!(convention(MAX_GENERATOR, 0), Ok((12, 11)));
        for (g, f) in [
            (0, 0),
            (1, 0),
            (MAX_GENERATOR + 1, 0),
            (5, FLAG_LEGACY_G2),
            (2, 4),
            (2, FLAG_LEGACY_G2 | FLAG_X942),
        ] {
            assert!(
                matches!(convention(g, f), Err(Error::InvalidArgument(_))),
                "{g} {f}"
            );
        }
    }

    #[test]
    fn small_safe_primes_for_every_convention() {
        for (g, flags) in [(2u32, 0u32), (2, FLAG_LEGACY_G2), (5, 0), (3, 0), (7, 0)] {
            let seed = [g as u8 + flags as u8 * 16; 32];
            let mut o = Options {
                threads: 2,
                seed: Some(&seed),
                progress: None,
                ..Default::default()
            };
            let (params, st) = generate(256, g, flags, &mut o).unwrap();
            let p = params.p();
            let q = params.q().unwrap();
            assert_eq!(p.significant_bits(), 256);
            assert_eq!(*p, Integer::from(q * 2u32) + 1u32);
            assert_ne!(p.is_probably_prime(30), rug::integer::IsPrime::No);
            assert_ne!(q.is_probably_prime(30), rug::integer::IsPrime::No);
            let (m, a) = convention(g, flags).unwrap();
            assert_eq!(p.mod_u(m as u32) as u64, a);
            // g = 2 and 5 (default forms) generate the order-q subgroup.
            // g = 2 and 5 (default forms) generate the order-q subgroup; the
            // legacy g = 2 form generates the whole group. (g = 3 is also a
            // square for p ≡ 11 mod 12; 7 depends on p mod 7.)
            match (g, flags) {
                (2, 0) | (5, 0) | (3, 0) => assert!(params.g_in_q_subgroup(), "g={g}"),
                (2, _) => assert!(!params.g_in_q_subgroup()),
                _ => {}
            }
            assert!(st.exponentiations >= 2 + rounds_for_bits(255) as u64);
        }
    }

    /// A batch yields the lowest safe primes above its start in order: the
    /// first is what a single search with the same seed finds, none is
    /// skipped between two it yields, the sequence is the same at 1 and 2
    /// threads, and a cancelled `next` leaves the batch where it was.
    #[test]
    fn batches_are_the_lowest_safe_primes_in_order() {
        let req = Request::new(512, 2, FLAG_LEGACY_G2).unwrap();
        let seed = [0x42u8; 32];
        let run = |threads: u32, cancel_first: bool| {
            let mut batch = Batch::new(&req, 3, Some(&seed)).unwrap();
            if cancel_first {
                let mut cb = |_: &crate::prime::Progress| true;
                let mut o = Options {
                    threads,
                    progress: Some(&mut cb),
                    progress_interval: Some(std::time::Duration::from_millis(1)),
                    ..Default::default()
                };
                assert_eq!(batch.next(&mut o).err(), Some(Error::Cancelled));
            }
            (0..3)
                .map(|_| {
                    let mut o = Options {
                        threads,
                        ..Default::default()
                    };
                    batch.next(&mut o).unwrap().0.p().clone()
                })
                .collect::<Vec<_>>()
        };
        let one = run(1, false);
        assert_eq!(one, run(2, false));
        assert_eq!(one, run(2, true));
        let mut o = Options {
            threads: 2,
            seed: Some(&seed),
            ..Default::default()
        };
        assert_eq!(&one[0], generate_request(&req, &mut o).unwrap().0.p());
        for pair in one.windows(2) {
            assert!(pair[0] < pair[1]);
            let mut p = Integer::from(&pair[0] + 24u32);
            while p < pair[1] {
                let q = Integer::from(&p >> 1u32);
                assert!(
                    q.is_probably_prime(20) == rug::integer::IsPrime::No
                        || p.is_probably_prime(20) == rug::integer::IsPrime::No,
                    "a safe prime was skipped"
                );
                p += 24u32;
            }
        }
        assert!(Batch::new(&req, 0, None).is_err());
        assert!(Batch::new(&req, BATCH_MAX + 1, None).is_err());
        let mut batch = Batch::new(&req, 1, Some(&seed)).unwrap();
        let mut o = Options {
            seed: Some(&seed),
            ..Default::default()
        };
        assert!(matches!(batch.next(&mut o), Err(Error::InvalidArgument(_))));
    }

    /// OpenSSH moduli: a seeded batch holds every safe prime ssh-keygen
    /// gives a generator, in order — g = 2 and g = 5 ones — and skips none
    /// of them: between two, every p ≡ 11 (mod 12) with a generator is not
    /// a safe prime.
    #[test]
    fn ssh_moduli_admit_every_generator_ssh_keygen_gives() {
        assert!(Request::new(1024, 2, FLAG_SSH_MODULI).is_err());
        assert!(Request::new(1024, 0, FLAG_SSH_MODULI | FLAG_LEGACY_G2).is_err());
        let req = Request::new(512, 0, FLAG_SSH_MODULI).unwrap();
        let mut batch = Batch::new(&req, 12, Some(&[0x17; 32])).unwrap();
        let found: Vec<DhParams> = (0..12)
            .map(|_| batch.next(&mut Options::default()).unwrap().0)
            .collect();
        let mut gs = std::collections::BTreeSet::new();
        for d in &found {
            let g = ssh_generator(d.p()).unwrap();
            assert_eq!(*d.g(), g);
            gs.insert(g);
        }
        assert_eq!(gs.into_iter().collect::<Vec<_>>(), vec![2, 5]);
        for pair in found.windows(2) {
            let mut p = Integer::from(pair[0].p() + 12u32);
            while p < *pair[1].p() {
                if ssh_generator(&p).is_some() {
                    let q = Integer::from(&p >> 1u32);
                    assert!(
                        q.is_probably_prime(20) == rug::integer::IsPrime::No
                            || p.is_probably_prime(20) == rug::integer::IsPrime::No,
                        "a safe prime with a generator was skipped"
                    );
                }
                p += 12u32;
            }
        }
    }

    /// With FLAG_X942 every generator ends in the subgroup of order q
    /// (a side condition where its congruence does not make it a residue),
    /// so X9.42 export always works; without it, some generators do not.
    #[test]
    fn x942_flag_puts_every_generator_in_the_subgroup() {
        let mut outside = 0;
        for g in 2u32..=13 {
            for s in 0u8..3 {
                let seed = [
                    g as u8 ^ 0x5a,
                    s,
                    7,
                    1,
                    2,
                    3,
                    4,
                    5,
                    6,
                    7,
                    8,
                    9,
                    10,
                    11,
                    12,
                    13,
                    14,
                    15,
                    16,
                    17,
                    18,
                    19,
                    20,
                    21,
                    22,
                    23,
                    24,
                    25,
                    26,
                    27,
                    28,
                    29,
                ];
                let mut o = Options {
                    threads: 1,
                    seed: Some(&seed),
                    ..Default::default()
                };
                let (p, _) = generate(256, g, FLAG_X942, &mut o).unwrap();
                assert!(p.g_in_q_subgroup(), "g = {g}");
                assert!(p.export(crate::encode::DhFormat::X942Der).is_ok());
                let mut o = Options {
                    threads: 1,
                    seed: Some(&seed),
                    ..Default::default()
                };
                let (plain, _) = generate(256, g, 0, &mut o).unwrap();
                outside += usize::from(!plain.g_in_q_subgroup());
            }
        }
        assert!(
            outside > 0,
            "the side condition was never needed: test is vacuous"
        );
    }
}
