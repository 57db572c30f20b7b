//! FIPS 186-4 finite-field domain parameters (DSA, and X9.42 DH as
//! SP 800-56A uses them): a prime q of N bits dividing p − 1 for a prime p
//! of L bits, both derived from a published seed so that anyone can check
//! them (A.1.1.2 to make, A.1.1.3 to check), and a generator of the
//! order-q subgroup, derived from the seed and an index (A.2.3, checked by
//! A.2.4) or from the smallest h = 2, 3, … (A.2.1, checked by A.2.2).
//!
//! ## Same answer at any thread count
//! For one `domain_parameter_seed`, the candidates for p are a fixed
//! sequence numbered by the counter 0 … 4L − 1, and A.1.1.3 accepts only
//! the *first* counter whose candidate is prime. That is exactly the
//! search engine's contract (the lowest-numbered candidate that passes
//! every test, `prime::search`), so the candidates are tested on all the
//! generation's threads and the answer is what the sequential procedure
//! gives. When no counter up to 4L − 1 gives a prime (about one seed in
//! e^11 at L = 2048), the next seed is drawn, as A.1.1.2 step 11 says.
//! The seeds themselves are drawn from the generation's seeded stream, one
//! per attempt, so a 32-byte generation seed fixes the output.
//!
//! ## Primality tests (FIPS 186-4 C.3, Table C.1, with a Lucas test)
//! Each candidate for p: trial division, a Miller–Rabin round to base 2
//! (on AVX-512 IFMA two candidates at once), then the table's Miller–Rabin
//! rounds with bases from the seeded stream (3 for L ≤ 2048, 2 for
//! L = 3072), then a strong Lucas test. q: base 2, the table's rounds for q
//! (19, 24, 27 and 27), Lucas. With the base-2 round, every test is
//! Baillie–PSW plus what the table asks.
//!
//! Everything here is public, so the arithmetic is variable-time.

#![forbid(unsafe_code)]

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use rug::{Assign, Integer};

use crate::error::{Error, Result};
use crate::prime::fermat::{strong_base2_public_lanes_or_stop, strong_base2_public_or_stop};
use crate::prime::lucas::{strong_lucas, strong_lucas_or_stop};
use crate::prime::mr::MrCandidate;
use crate::prime::search::{mr_round_from_stream, CandidateSource, Generation, Verdict};
use crate::prime::small::{rsa_trial_bound, TrialTable};
use crate::prime::stream::{random_bits, random_in_range, Purpose, Seed};
use crate::prime::{Options, Stats};

use super::DhParams;

/// The (L, N) pairs of FIPS 186-4 4.2 (bits of p, bits of q).
pub const SIZES: [(u32, u32); 4] = [(1024, 160), (2048, 224), (2048, 256), (3072, 256)];

/// The hash functions A.1.1.2 may use (output at least N bits). SHA-1 is
/// only for checking parameters others made (OpenSSL makes 1024/160 with
/// it); generation refuses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HashFn {
    /// SHA-1 (checking only).
    Sha1,
    /// SHA-224.
    Sha224,
    /// SHA-256.
    Sha256,
    /// SHA-384.
    Sha384,
    /// SHA-512.
    Sha512,
    /// SHA-512/224.
    Sha512_224,
    /// SHA-512/256.
    Sha512_256,
}

impl HashFn {
    /// Every hash function, SHA-1 first.
    pub const ALL: [HashFn; 7] = [
        HashFn::Sha1,
        HashFn::Sha224,
        HashFn::Sha256,
        HashFn::Sha384,
        HashFn::Sha512,
        HashFn::Sha512_224,
        HashFn::Sha512_256,
    ];

    /// Output length in bits (FIPS 186-4's outlen).
    pub fn bits(self) -> u32 {
        match self {
            HashFn::Sha1 => 160,
            HashFn::Sha224 | HashFn::Sha512_224 => 224,
            HashFn::Sha256 | HashFn::Sha512_256 => 256,
            HashFn::Sha384 => 384,
            HashFn::Sha512 => 512,
        }
    }

    /// The name OpenSSL's providers use for it ("SHA2-256", …).
    pub fn name(self) -> &'static str {
        match self {
            HashFn::Sha1 => "SHA1",
            HashFn::Sha224 => "SHA2-224",
            HashFn::Sha256 => "SHA2-256",
            HashFn::Sha384 => "SHA2-384",
            HashFn::Sha512 => "SHA2-512",
            HashFn::Sha512_224 => "SHA2-512/224",
            HashFn::Sha512_256 => "SHA2-512/256",
        }
    }

    /// Parses a name as OpenSSL spells it, in any case, with or without
    /// the "2-" or "-" ("sha256", "SHA-256", "SHA2-256", "sha512-224").
    pub fn from_name(name: &str) -> Option<HashFn> {
        let n: String = name
            .to_ascii_lowercase()
            .chars()
            .filter(|c| !matches!(c, '-' | '_' | '/'))
            .collect();
        let n = n
            .strip_prefix("sha2")
            .filter(|r| r.len() >= 3)
            .map_or(n.strip_prefix("sha").unwrap_or(&n).to_string(), |r| {
                r.to_string()
            });
        Some(match n.as_str() {
            "1" => HashFn::Sha1,
            "224" => HashFn::Sha224,
            "256" => HashFn::Sha256,
            "384" => HashFn::Sha384,
            "512" => HashFn::Sha512,
            "512224" => HashFn::Sha512_224,
            "512256" => HashFn::Sha512_256,
            _ => return None,
        })
    }

    /// The digest of `data`.
    pub fn digest(self, data: &[u8]) -> Vec<u8> {
        use sha2::Digest;
        match self {
            HashFn::Sha1 => sha1::Sha1::digest(data).to_vec(),
            HashFn::Sha224 => sha2::Sha224::digest(data).to_vec(),
            HashFn::Sha256 => sha2::Sha256::digest(data).to_vec(),
            HashFn::Sha384 => sha2::Sha384::digest(data).to_vec(),
            HashFn::Sha512 => sha2::Sha512::digest(data).to_vec(),
            HashFn::Sha512_224 => sha2::Sha512_224::digest(data).to_vec(),
            HashFn::Sha512_256 => sha2::Sha512_256::digest(data).to_vec(),
        }
    }

    /// What OpenSSL assumes when parameters do not name their hash (a
    /// file never does): SHA-1 for N = 160, SHA-224 for 224, SHA-256 for
    /// 256.
    pub fn openssl_default(n: u32) -> Option<HashFn> {
        match n {
            160 => Some(HashFn::Sha1),
            224 => Some(HashFn::Sha224),
            256 => Some(HashFn::Sha256),
            _ => None,
        }
    }

    /// The hash generation uses unless told: OpenSSL's choice for N = 224
    /// and 256 (so its checks find the seed's hash), SHA-256 for N = 160
    /// (SHA-2 only for new parameters).
    pub fn default_for(n: u32) -> HashFn {
        match n {
            224 => HashFn::Sha224,
            _ => HashFn::Sha256,
        }
    }
}

/// How g is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GenMethod {
    /// A.2.3: g = Hash(seed ‖ "ggen" ‖ index ‖ count)^((p−1)/q) mod p,
    /// verifiable from the seed and the index (A.2.4).
    Canonical(u8),
    /// A.2.1: g = h^((p−1)/q) mod p for the smallest h ≥ 2 giving g ≠ 1
    /// (not verifiable beyond A.2.2's order check).
    Unverifiable,
}

/// The default index of a canonical generator.
pub const DEFAULT_GINDEX: u8 = 1;

/// What makes FIPS 186-4 parameters verifiable: the seed, the counter,
/// the hash, and how g was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provenance {
    /// `domain_parameter_seed`, big-endian, seedlen/8 bytes.
    pub seed: Vec<u8>,
    /// `counter` (X9.42's pgenCounter).
    pub counter: u32,
    /// The hash A.1.1.2 used: known for parameters made here, not for
    /// parameters read from a file (no format carries it).
    pub hash: Option<HashFn>,
    /// g's method: the canonical index, or A.2.1's h.
    pub generator: Generator,
}

/// How a generator was made, as far as known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Generator {
    /// A.2.3 with this index.
    Canonical(u8),
    /// A.2.1 with this h.
    Unverifiable(u32),
    /// Not known (parameters read from a file).
    Unknown,
}

/// A validated request for FIPS 186-4 parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    l: u32,
    n: u32,
    hash: HashFn,
    seed_bits: u32,
    generator: GenMethod,
    /// A caller's domain_parameter_seed, instead of seeds drawn from the
    /// generation's stream.
    domain_seed: Option<Vec<u8>>,
}

impl Request {
    /// Checks sizes and hash: (L, N) one of [`SIZES`], a SHA-2 function
    /// of at least N bits (`None`: [`HashFn::default_for`]), g canonical
    /// with [`DEFAULT_GINDEX`]. `n` = 0 picks OpenSSL's N for L (160, 224,
    /// 256).
    pub fn new(l: u32, n: u32, hash: Option<HashFn>) -> Result<Request> {
        let n = if n == 0 {
            match l {
                1024 => 160,
                2048 => 224,
                3072 => 256,
                _ => 0,
            }
        } else {
            n
        };
        if !SIZES.contains(&(l, n)) {
            return Err(Error::InvalidArgument(
                "FIPS 186-4 sizes (bits of p / bits of q) are 1024/160, 2048/224, 2048/256 and 3072/256",
            ));
        }
        let hash = hash.unwrap_or(HashFn::default_for(n));
        if hash == HashFn::Sha1 {
            return Err(Error::InvalidArgument(
                "FIPS 186-4 parameters are made with a SHA-2 hash here (SHA-1 only for checking)",
            ));
        }
        if hash.bits() < n {
            return Err(Error::InvalidArgument(
                "the hash's output is shorter than q (FIPS 186-4 A.1.1.2 needs outlen >= N)",
            ));
        }
        Ok(Request {
            l,
            n,
            hash,
            seed_bits: n,
            generator: GenMethod::Canonical(DEFAULT_GINDEX),
            domain_seed: None,
        })
    }

    /// With the caller's domain_parameter_seed (at least N bits, at most
    /// 1024): the generation runs A.1.1.2 from step 6 on that seed only,
    /// as a validation system's "generate from this seed" test asks, and
    /// fails ([`Error::InvalidArgument`], saying which) when the seed
    /// gives no prime q or no counter gives a prime p.
    pub fn with_domain_seed(mut self, seed: &[u8]) -> Result<Request> {
        if seed.len() * 8 < self.n as usize || seed.len() > MAX_SEED_BYTES {
            return Err(Error::InvalidArgument(
                "the domain parameter seed must have at least as many bits as q, and at most 1024",
            ));
        }
        self.seed_bits = seed.len() as u32 * 8;
        self.domain_seed = Some(seed.to_vec());
        Ok(self)
    }

    /// With another generator method.
    pub fn with_generator(mut self, g: GenMethod) -> Request {
        self.generator = g;
        self
    }

    /// With a longer seed (bits, a multiple of 8, at least N and at most
    /// 1024).
    pub fn with_seed_bits(mut self, bits: u32) -> Result<Request> {
        if bits < self.n || bits % 8 != 0 || bits > 1024 {
            return Err(Error::InvalidArgument(
                "seed length must be a multiple of 8 bits, at least q's size and at most 1024",
            ));
        }
        self.seed_bits = bits;
        Ok(self)
    }

    /// L, the size of p.
    pub fn l(&self) -> u32 {
        self.l
    }
    /// N, the size of q.
    pub fn n(&self) -> u32 {
        self.n
    }
    /// The hash.
    pub fn hash(&self) -> HashFn {
        self.hash
    }
}

/// Miller–Rabin rounds with random bases for p, with a Lucas test
/// (FIPS 186-4 Table C.1).
fn p_rounds(l: u32) -> u32 {
    if l >= 3072 {
        2
    } else {
        3
    }
}

/// The same for q.
fn q_rounds(l: u32, n: u32) -> u32 {
    match (l, n) {
        (1024, _) => 19,
        (_, 224) => 24,
        _ => 27,
    }
}

/// The longest domain parameter seed made or checked (1024 bits).
pub const MAX_SEED_BYTES: usize = 128;

/// Seeds drawn per generation at most (each costs a q search; one in
/// about e^11 also exhausts its counters).
const MAX_SEEDS: u64 = 1 << 20;
/// Candidate indices per seed: the counters of attempt `a` are numbered
/// from `a` · 2^14 (4L − 1 < 2^14), so every candidate's stream of
/// Miller–Rabin bases is its own.
const INDEX_SHIFT: u32 = 14;

/// `seed + k` modulo 2^(8·len), big-endian.
fn seed_plus(seed: &[u8], k: u64) -> Vec<u8> {
    let mut out = seed.to_vec();
    let mut carry = k as u128;
    for b in out.iter_mut().rev() {
        if carry == 0 {
            break;
        }
        let v = *b as u128 + (carry & 0xff);
        *b = v as u8;
        carry = (carry >> 8) + (v >> 8);
    }
    out
}

fn from_be(b: &[u8]) -> Integer {
    Integer::from_digits(b, rug::integer::Order::Msf)
}

/// A.1.1.2 steps 6–7: q from the seed.
pub fn q_from_seed(seed: &[u8], n: u32, hash: HashFn) -> Integer {
    let mut u = from_be(&hash.digest(seed));
    u.keep_bits_mut(n - 1);
    let odd = u.is_odd();
    let mut q = Integer::from(1u32) << (n - 1);
    q += u;
    if !odd {
        q += 1u32;
    }
    q
}

/// FIPS 186-2's q as OpenSSL makes it: U = Hash(seed) ⊕ Hash(seed + 1)
/// (N bits: the hash OpenSSL uses has N bits of output), top and bottom
/// bits set.
pub fn q_from_seed_legacy(seed: &[u8], n: u32, hash: HashFn) -> Integer {
    let a = hash.digest(seed);
    let b = hash.digest(&seed_plus(seed, 1));
    let bytes = (n / 8) as usize;
    let mut u: Vec<u8> = a.iter().zip(&b).map(|(x, y)| x ^ y).take(bytes).collect();
    u[0] |= 0x80;
    u[bytes - 1] |= 1;
    from_be(&u)
}

/// The candidates for p of one seed, by counter (A.1.1.2 step 11).
struct Candidates {
    seed: Vec<u8>,
    hash: HashFn,
    l: u32,
    /// n = ⌈L / outlen⌉ − 1 and b = L − 1 − n·outlen.
    blocks: u32,
    b: u32,
    two_q: Integer,
    /// The offset of counter 0: 1 (FIPS 186-4), or 2 for FIPS 186-2.
    first_offset: u64,
}

impl Candidates {
    fn new(seed: &[u8], hash: HashFn, l: u32, q: &Integer) -> Candidates {
        let outlen = hash.bits();
        let blocks = l.div_ceil(outlen) - 1;
        Candidates {
            seed: seed.to_vec(),
            hash,
            l,
            blocks,
            b: l - 1 - blocks * outlen,
            two_q: Integer::from(q << 1u32),
            first_offset: 1,
        }
    }

    /// FIPS 186-2's candidates as OpenSSL 3 makes and checks them (its
    /// default for X9.42 DH parameters, "fips186_2"): offsets from 2 (the
    /// seed and seed + 1 made q), (L − 1)/160 + 1 blocks of outlen bits
    /// whatever the hash, W cut to L − 1 bits.
    fn legacy(seed: &[u8], hash: HashFn, l: u32, q: &Integer) -> Candidates {
        let outlen = hash.bits();
        let blocks = (l - 1) / 160;
        Candidates {
            seed: seed.to_vec(),
            hash,
            l,
            blocks,
            // Blocks above bit L − 1 contribute nothing once W is cut.
            b: (l - 1).saturating_sub(blocks * outlen),
            two_q: Integer::from(q << 1u32),
            first_offset: 2,
        }
    }

    /// The candidate of `counter` (steps 11.1–11.5), or `None` when it
    /// falls below 2^(L−1) (step 11.6).
    fn p(&self, counter: u32, out: &mut Integer) -> bool {
        let offset = self.first_offset + u64::from(counter) * (u64::from(self.blocks) + 1);
        let outlen = self.hash.bits();
        // W from the top block down: (V_n mod 2^b), then V_(n−1) … V_0.
        let top = from_be(
            &self
                .hash
                .digest(&seed_plus(&self.seed, offset + u64::from(self.blocks))),
        );
        out.assign(top.keep_bits(self.b));
        for j in (0..self.blocks).rev() {
            *out <<= outlen;
            *out += from_be(
                &self
                    .hash
                    .digest(&seed_plus(&self.seed, offset + u64::from(j))),
            );
        }
        out.keep_bits_mut(self.l - 1);
        // X = W + 2^(L−1); p = X − (X mod 2q − 1).
        out.set_bit(self.l - 1, true);
        let c = Integer::from(&*out % &self.two_q);
        *out -= c;
        *out += 1u32;
        out.significant_bits() == self.l
    }
}

/// The search engine's view of one seed's candidates for p.
struct PSource {
    cands: Candidates,
    first: u64,
    table: Arc<TrialTable>,
    mr_rounds: u32,
}

impl CandidateSource for PSource {
    type Cand = MrCandidate;

    fn limit(&self) -> u64 {
        self.first + 4 * u64::from(self.cands.l) - 1
    }

    fn candidate(&self, _seed: &Seed, index: u64, scratch: &mut Integer) -> Option<MrCandidate> {
        let counter = (index - self.first) as u32;
        let mut p = std::mem::take(scratch);
        if !self.cands.p(counter, &mut p) || !self.table.passes(&p) {
            *scratch = p;
            return None;
        }
        Some(MrCandidate::new(p))
    }

    fn recycle(&self, cand: MrCandidate, scratch: &mut Integer) {
        *scratch = cand.n;
    }

    /// Round 0: base 2; rounds 1 ..= t: stream bases; round t + 1: Lucas.
    fn rounds(&self) -> u32 {
        self.mr_rounds + 2
    }

    fn round(
        &self,
        seed: &Seed,
        index: u64,
        round: u32,
        c: &MrCandidate,
        stop: &AtomicBool,
    ) -> Verdict {
        if round == 0 {
            Verdict::one(strong_base2_public_or_stop(&c.n, stop))
        } else if round <= self.mr_rounds {
            mr_round_from_stream(seed, index, round - 1, c, false, stop)
        } else {
            Verdict::one(strong_lucas_or_stop(&c.n, stop))
        }
    }

    fn prime(&self, c: &MrCandidate) -> Integer {
        c.n.clone()
    }

    fn first_round_lanes(&self) -> usize {
        crate::prime::fermat::first_test_lanes(self.cands.l)
    }

    fn first_round_group(
        &self,
        _seed: &Seed,
        _index: &[u64],
        c: &[&MrCandidate],
        stop: &AtomicBool,
    ) -> Option<Vec<Verdict>> {
        let ns: Vec<&Integer> = c.iter().map(|c| &c.n).collect();
        strong_base2_public_lanes_or_stop(&ns, stop)
            .map(|v| v.into_iter().map(Verdict::one).collect())
    }
}

/// q's test: trial division, base 2, `rounds` bases from `stream`
/// (purpose `Fips186Base`, index `attempt`), Lucas.
fn q_is_prime(q: &Integer, rounds: u32, seed: &Seed, attempt: u64, stats: &mut Stats) -> bool {
    let table = TrialTable::shared(q.as_limbs().len().max(1), 1 << 12);
    if !table.passes(q) {
        return false;
    }
    stats.survivors += 1;
    stats.exponentiations += 1;
    let c = MrCandidate::new(q.clone());
    if !c.round(Integer::from(2u32), false) {
        return false;
    }
    let width = Integer::from(q - 3u32);
    let bases_pass = seed.with_stream(Purpose::Fips186Base, attempt, |rng| {
        (0..rounds).all(|_| {
            let mut base = Integer::new();
            random_in_range(rng, &Integer::from(2u32), &width, &mut base);
            stats.exponentiations += 1;
            c.round(base, false)
        })
    });
    stats.exponentiations += 1;
    bases_pass && strong_lucas(q)
}

/// Generates FIPS 186-4 parameters on the threads `opts` asks for. The
/// result for a given `opts.seed` does not depend on the thread count.
pub fn generate(req: &Request, opts: &mut Options<'_>) -> Result<(DhParams, Stats)> {
    crate::gmp::init();
    let admitted = crate::threads::admit_options(opts, false)?;
    let workers = crate::threads::Workers::admitted(&admitted, opts.per_call_threads)?;
    let seed = Seed::from_option(opts.seed)?;
    let mut generation = Generation::new(&workers, seed.clone(), opts, 1);
    let mut q_stats = Stats::default();
    let limbs = req.l.div_ceil(64) as usize;
    let table = TrialTable::shared(limbs, rsa_trial_bound(req.l / 2 + 1).min(1 << 18));
    let attempts = if req.domain_seed.is_some() {
        1
    } else {
        MAX_SEEDS
    };
    for attempt in 0..attempts {
        // Step 5: the seed, the caller's or from the generation's stream.
        let dps = match &req.domain_seed {
            Some(s) => s.clone(),
            None => {
                let mut x = Integer::new();
                seed.with_stream(Purpose::Fips186Seed, attempt, |rng| {
                    random_bits(rng, req.seed_bits, &mut x)
                });
                let mut dps = vec![0u8; (req.seed_bits / 8) as usize];
                let start = dps.len() - x.significant_digits::<u8>();
                x.write_digits(&mut dps[start..], rug::integer::Order::Msf);
                dps
            }
        };
        // Steps 6–9.
        q_stats.candidates += 1;
        let q = q_from_seed(&dps, req.n, req.hash);
        if !q_is_prime(&q, q_rounds(req.l, req.n), &seed, attempt, &mut q_stats) {
            if req.domain_seed.is_some() {
                return Err(Error::InvalidArgument(
                    "the domain parameter seed gives no prime q (FIPS 186-4 A.1.1.2 step 8)",
                ));
            }
            continue;
        }
        // Steps 10–11 on the engine.
        let first = attempt << INDEX_SHIFT;
        let source = PSource {
            cands: Candidates::new(&dps, req.hash, req.l, &q),
            first,
            table: Arc::clone(&table),
            mr_rounds: p_rounds(req.l),
        };
        let found = generation.search(source, first, 1)?;
        let Some(f) = found.into_iter().next() else {
            if req.domain_seed.is_some() {
                return Err(Error::InvalidArgument(
                    "no counter up to 4L - 1 gives a prime p from the domain parameter seed",
                ));
            }
            continue;
        };
        let counter = (f.index - first) as u32;
        let p = f.prime;
        let (g, generator) = make_generator(&p, &q, &dps, req.hash, req.generator)?;
        let mut stats = generation.stats();
        stats.add(&Stats {
            elapsed: std::time::Duration::ZERO,
            ..q_stats
        });
        let params = DhParams {
            p,
            q: Some(q),
            g,
            fips186: Some(Provenance {
                seed: dps,
                counter,
                hash: Some(req.hash),
                generator,
            }),
        };
        return Ok((params, stats));
    }
    Err(Error::Internal)
}

/// The generator by `method`.
fn make_generator(
    p: &Integer,
    q: &Integer,
    seed: &[u8],
    hash: HashFn,
    method: GenMethod,
) -> Result<(Integer, Generator)> {
    let e = Integer::from(p - 1u32) / q;
    match method {
        GenMethod::Canonical(index) => {
            let g = canonical_generator(p, &e, seed, hash, index).ok_or(Error::Internal)?;
            Ok((g, Generator::Canonical(index)))
        }
        GenMethod::Unverifiable => {
            for h in 2u32..=u32::MAX {
                let g = Integer::from(h)
                    .pow_mod(&e, p)
                    .map_err(|_| Error::Internal)?;
                if g != 1u32 {
                    return Ok((g, Generator::Unverifiable(h)));
                }
            }
            Err(Error::Internal)
        }
    }
}

/// A.2.3: the canonical generator of `index` (`None`: every count gave
/// g < 2, which no real parameters do).
pub fn canonical_generator(
    p: &Integer,
    e: &Integer,
    seed: &[u8],
    hash: HashFn,
    index: u8,
) -> Option<Integer> {
    let mut u = Vec::with_capacity(seed.len() + 7);
    for count in 1u16..=u16::MAX {
        u.clear();
        u.extend_from_slice(seed);
        u.extend_from_slice(b"ggen");
        u.push(index);
        u.extend_from_slice(&count.to_be_bytes());
        let w = from_be(&hash.digest(&u));
        let g = w.pow_mod(e, p).ok()?;
        if g >= 2u32 {
            return Some(g);
        }
    }
    None
}

/// What a FIPS 186-4 check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeedCheck {
    /// No seed was given.
    Absent,
    /// A.1.1.3 accepted (p, q) from the seed and counter with this hash.
    Verified(HashFn),
    /// Not FIPS 186-4 but FIPS 186-2 as OpenSSL makes it (its default for
    /// X9.42 DH parameters): the seed and counter give (p, q) by that
    /// procedure with this hash.
    VerifiedFips186_2(HashFn),
    /// A.1.1.3 rejected them with every hash it may use (and so did
    /// FIPS 186-2's procedure); the text says what failed first.
    Failed(&'static str),
}

/// Which procedure made the parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Procedure {
    Fips186_4,
    /// FIPS 186-2 as OpenSSL 3 makes it.
    Fips186_2,
}

/// What the check of g found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GeneratorCheck {
    /// g is A.2.3's generator for this index (A.2.4).
    Canonical(u8),
    /// g has order q (A.2.2) but is no canonical generator of the seed
    /// (or there is no seed).
    OrderOnly,
    /// g is outside 2 … p − 1 or g^q ≢ 1 (mod p).
    Failed,
}

/// A.1.1.3 with `hash`: Ok(()) or what failed.
pub fn verify_pq(
    p: &Integer,
    q: &Integer,
    seed: &[u8],
    counter: u32,
    hash: HashFn,
) -> std::result::Result<(), &'static str> {
    verify_with(p, q, seed, counter, hash, Procedure::Fips186_4)
}

fn verify_with(
    p: &Integer,
    q: &Integer,
    seed: &[u8],
    counter: u32,
    hash: HashFn,
    procedure: Procedure,
) -> std::result::Result<(), &'static str> {
    crate::gmp::init();
    let (l, n) = (p.significant_bits(), q.significant_bits());
    if ![160, 224, 256].contains(&n) {
        return Err("q is not of a FIPS 186 size (160, 224 or 256 bits)");
    }
    match procedure {
        Procedure::Fips186_4 if !SIZES.contains(&(l, n)) => {
            return Err("p and q are not of a FIPS 186-4 size");
        }
        // OpenSSL's FIPS 186-2 procedure: any p of 512 bits or more that
        // is a multiple of 64 bits, q of 160, 224 or 256 bits.
        Procedure::Fips186_2 if l < 512 || l % 64 != 0 || ![160, 224, 256].contains(&n) => {
            return Err("p and q are not of a size FIPS 186-2 (as OpenSSL runs it) makes");
        }
        _ => {}
    }
    if hash.bits() < n {
        return Err("the hash is shorter than q");
    }
    if counter > 4 * l - 1 {
        return Err("the counter is above 4L - 1");
    }
    if seed.len() * 8 < n as usize {
        return Err("the seed is shorter than q");
    }
    // Each counter hashes the seed about L/outlen times: a longer seed
    // than anyone makes is not worth that (generation stops there too).
    if seed.len() > MAX_SEED_BYTES {
        return Err("the seed is longer than 1024 bits (not checked)");
    }
    let (computed_q, cands) = match procedure {
        Procedure::Fips186_4 => (
            q_from_seed(seed, n, hash),
            Candidates::new(seed, hash, l, q),
        ),
        Procedure::Fips186_2 => {
            // OpenSSL uses the first N bits of a longer seed.
            let seed = &seed[..(n / 8) as usize];
            (
                q_from_seed_legacy(seed, n, hash),
                Candidates::legacy(seed, hash, l, q),
            )
        }
    };
    if computed_q != *q {
        return Err("q is not the one the seed gives");
    }
    let os = Seed::from_os().map_err(|_| "no random bases")?;
    if !crate::prime::is_probable_prime(q, &os, 0) {
        return Err("q is not prime");
    }
    let table = TrialTable::shared(l.div_ceil(64) as usize, 1 << 16);
    let mut x = Integer::new();
    for i in 0..counter {
        if !cands.p(i, &mut x) || !table.passes(&x) {
            continue;
        }
        if MrCandidate::new(x.clone()).round(Integer::from(2u32), false)
            && crate::prime::is_probable_prime(&x, &os, u64::from(i) + 1)
        {
            return Err("a lower counter already gives a prime p");
        }
    }
    if !cands.p(counter, &mut x) || x != *p {
        return Err("p is not the one the seed and counter give");
    }
    if !crate::prime::is_probable_prime(p, &os, u64::from(counter) + 1) {
        return Err("p is not prime");
    }
    Ok(())
}

/// A.1.1.3 with the hash named, or else with every hash it may be (what
/// OpenSSL assumes for N first, then the SHA-2 functions of at least N
/// bits).
pub fn check_seed(
    p: &Integer,
    q: &Integer,
    seed: &[u8],
    counter: u32,
    hash: Option<HashFn>,
) -> SeedCheck {
    let n = q.significant_bits();
    if seed.len() > MAX_SEED_BYTES {
        return SeedCheck::Failed("the seed is longer than 1024 bits (not checked)");
    }
    if ![160, 224, 256].contains(&n) {
        return SeedCheck::Failed("q is not of a FIPS 186 size (160, 224 or 256 bits)");
    }
    let mut order: Vec<HashFn> = match hash {
        Some(h) => vec![h],
        None => HashFn::openssl_default(n).into_iter().collect(),
    };
    if hash.is_none() {
        for h in HashFn::ALL {
            if h != HashFn::Sha1 && h.bits() >= n && !order.contains(&h) {
                order.push(h);
            }
        }
    }
    let mut first_failure = None;
    for h in order {
        // Only a hash that gives q from the seed can be the one.
        let e = if h.bits() >= n && q_from_seed(seed, n, h) == *q {
            match verify_pq(p, q, seed, counter, h) {
                Ok(()) => return SeedCheck::Verified(h),
                Err(e) => e,
            }
        } else {
            "q is not the one the seed gives"
        };
        first_failure.get_or_insert(e);
    }
    // FIPS 186-2 as OpenSSL makes it, with OpenSSL's hash for N.
    if hash.is_none() {
        if let Some(h) = HashFn::openssl_default(n) {
            // A seed that gives q this way made it so: its failure is
            // the one to report.
            if seed.len() * 8 >= n as usize
                && q_from_seed_legacy(&seed[..(n / 8) as usize], n, h) == *q
            {
                return match verify_with(p, q, seed, counter, h, Procedure::Fips186_2) {
                    Ok(()) => SeedCheck::VerifiedFips186_2(h),
                    Err(e) => SeedCheck::Failed(e),
                };
            }
        }
    }
    SeedCheck::Failed(first_failure.unwrap_or("no hash may be used with this q"))
}

/// A.2.2 and, with a seed, A.2.4: the index named, or else every index.
pub fn check_generator(
    p: &Integer,
    q: &Integer,
    g: &Integer,
    seed: Option<(&[u8], HashFn)>,
    index: Option<u8>,
) -> GeneratorCheck {
    crate::gmp::init();
    if *g < 2u32 || *g >= *p {
        return GeneratorCheck::Failed;
    }
    match g.clone().pow_mod(q, p) {
        Ok(v) if v == 1u32 => {}
        _ => return GeneratorCheck::Failed,
    }
    let Some((seed, hash)) = seed else {
        return GeneratorCheck::OrderOnly;
    };
    let e = Integer::from(p - 1u32) / q;
    let indices: Vec<u8> = match index {
        Some(i) => vec![i],
        None => (0..=255).collect(),
    };
    for i in indices {
        if canonical_generator(p, &e, seed, hash, i).as_ref() == Some(g) {
            return GeneratorCheck::Canonical(i);
        }
    }
    GeneratorCheck::OrderOnly
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plain transcription of A.1.1.2 for one seed (no engine, no
    /// sieve): the first prime counter, or none.
    fn sequential(seed: &[u8], hash: HashFn, l: u32, n: u32) -> Option<(Integer, Integer, u32)> {
        let q = q_from_seed(seed, n, hash);
        let os = Seed::from_os().unwrap();
        if !crate::prime::is_probable_prime(&q, &os, 0) {
            return None;
        }
        let outlen = hash.bits();
        let nb = l.div_ceil(outlen) - 1;
        let b = l - 1 - nb * outlen;
        let mut offset = 1u64;
        let s = from_be(seed);
        let modulus = Integer::from(1u32) << (seed.len() * 8) as u32;
        for counter in 0..4 * l {
            let mut w = Integer::new();
            for j in 0..=nb {
                let v = Integer::from(&s + (offset + u64::from(j))) % &modulus;
                let mut bytes = vec![0u8; seed.len()];
                let d = v.significant_digits::<u8>();
                v.write_digits(&mut bytes[seed.len() - d..], rug::integer::Order::Msf);
                let mut vj = from_be(&hash.digest(&bytes));
                if j == nb {
                    vj.keep_bits_mut(b);
                }
                w += vj << (j * outlen);
            }
            let x = w + (Integer::from(1u32) << (l - 1));
            let c = &x % Integer::from(&q * 2u32);
            let p = x - (c - 1u32);
            if p.significant_bits() == l && crate::prime::is_probable_prime(&p, &os, 9) {
                return Some((p, q, counter));
            }
            offset += u64::from(nb) + 1;
        }
        None
    }

    #[test]
    fn seed_arithmetic_wraps_like_the_standard() {
        assert_eq!(seed_plus(&[0x00, 0xff], 1), vec![0x01, 0x00]);
        assert_eq!(seed_plus(&[0xff, 0xff], 2), vec![0x00, 0x01]);
        assert_eq!(seed_plus(&[0x12, 0x34], 0x10000), vec![0x12, 0x34]);
    }

    #[test]
    fn hash_names() {
        for (s, h) in [
            ("sha256", HashFn::Sha256),
            ("SHA2-256", HashFn::Sha256),
            ("SHA-224", HashFn::Sha224),
            ("sha512-256", HashFn::Sha512_256),
            ("SHA2-512/224", HashFn::Sha512_224),
            ("sha1", HashFn::Sha1),
        ] {
            assert_eq!(HashFn::from_name(s), Some(h), "{s}");
        }
        assert_eq!(HashFn::from_name("md5"), None);
        for h in HashFn::ALL {
            assert_eq!(HashFn::from_name(h.name()), Some(h));
            assert_eq!(h.digest(b"abc").len() as u32 * 8, h.bits());
        }
    }

    /// The engine's answer is the sequential procedure's, for the seed it
    /// drew, at 1 and 3 threads; A.1.1.3 and A.2.4 accept it.
    #[test]
    fn parallel_answer_is_the_sequential_one() {
        let req = Request::new(1024, 160, None).unwrap();
        for s in 0..3u8 {
            let seed = [s; 32];
            let mut got = Vec::new();
            for threads in [1, 3] {
                let mut opts = Options {
                    threads,
                    seed: Some(&seed),
                    ..Default::default()
                };
                let (params, _) = generate(&req, &mut opts).unwrap();
                got.push(params);
            }
            assert_eq!(got[0], got[1]);
            let prm = &got[0];
            let prov = prm.fips186.as_ref().unwrap();
            let hash = prov.hash.unwrap();
            let (p, q, counter) = sequential(&prov.seed, hash, 1024, 160).unwrap();
            assert_eq!(
                (&p, &q, counter),
                (&prm.p, prm.q.as_ref().unwrap(), prov.counter)
            );
            assert_eq!(
                check_seed(&p, &q, &prov.seed, prov.counter, None),
                SeedCheck::Verified(HashFn::Sha256)
            );
            assert_eq!(
                check_generator(&p, &q, &prm.g, Some((&prov.seed, hash)), None),
                GeneratorCheck::Canonical(DEFAULT_GINDEX)
            );
            // A wrong counter or a changed seed is refused.
            assert!(verify_pq(&p, &q, &prov.seed, prov.counter + 1, hash).is_err());
            let mut bad = prov.seed.clone();
            bad[3] ^= 1;
            assert!(matches!(
                check_seed(&p, &q, &bad, prov.counter, None),
                SeedCheck::Failed(_)
            ));
        }
    }

    /// A lower counter that gives a prime makes a claimed higher one
    /// invalid (A.1.1.3 step 9.8 / 10), even though p itself would be
    /// prime and consistent with the seed.
    #[test]
    fn only_the_first_prime_counter_is_valid() {
        let req = Request::new(1024, 160, None).unwrap();
        let seed = [7u8; 32];
        let mut opts = Options {
            threads: 1,
            seed: Some(&seed),
            ..Default::default()
        };
        let (params, _) = generate(&req, &mut opts).unwrap();
        let prov = params.fips186.clone().unwrap();
        let q = params.q.clone().unwrap();
        let hash = prov.hash.unwrap();
        let cands = Candidates::new(&prov.seed, hash, 1024, &q);
        let os = Seed::from_os().unwrap();
        // The next prime counter after the answer.
        let mut x = Integer::new();
        let later = (prov.counter + 1..4096)
            .find(|&c| cands.p(c, &mut x) && crate::prime::is_probable_prime(&x, &os, 1))
            .expect("a second prime counter");
        cands.p(later, &mut x);
        assert_eq!(
            verify_pq(&x, &q, &prov.seed, later, hash),
            Err("a lower counter already gives a prime p")
        );
    }

    /// A megabyte seed that does give a prime q is refused before any
    /// counter is hashed (each counter would hash it about L/outlen times:
    /// gigabytes for a counter near 4L).
    #[test]
    fn long_seeds_are_refused_at_once() {
        let os = Seed::from_os().unwrap();
        let mut seed = vec![7u8; 1 << 20];
        let q = (0u8..=255)
            .find_map(|v| {
                seed[0] = v;
                let q = q_from_seed(&seed, 256, HashFn::Sha256);
                crate::prime::is_probable_prime(&q, &os, 0).then_some(q)
            })
            .expect("a seed with a prime q");
        let p = (Integer::from(1u32) << 2047u32) + 1u32;
        let refused = "the seed is longer than 1024 bits (not checked)";
        assert_eq!(verify_pq(&p, &q, &seed, 4000, HashFn::Sha256), Err(refused));
        assert_eq!(
            check_seed(&p, &q, &seed, 4000, None),
            SeedCheck::Failed(refused)
        );
    }

    /// A seed with a q of no FIPS 186 size (here 1 and 2^20 bits) is
    /// refused before q is derived (which would shift by N − 1).
    #[test]
    fn odd_sizes_of_q_are_refused_first() {
        let p = (Integer::from(1u32) << 2047u32) + 1u32;
        for q in [Integer::from(1u32), Integer::from(1u32) << 20_000u32] {
            assert!(matches!(
                check_seed(&p, &q, &[1; 32], 3, None),
                SeedCheck::Failed(_)
            ));
            assert!(verify_pq(&p, &q, &[1; 32], 3, HashFn::Sha256).is_err());
        }
    }

    #[test]
    fn requests_are_checked() {
        assert!(Request::new(2048, 160, None).is_err());
        assert!(Request::new(1536, 0, None).is_err());
        assert!(Request::new(2048, 256, Some(HashFn::Sha224)).is_err());
        assert!(Request::new(1024, 160, Some(HashFn::Sha1)).is_err());
        assert_eq!(Request::new(2048, 0, None).unwrap().n(), 224);
        assert_eq!(Request::new(3072, 0, None).unwrap().hash(), HashFn::Sha256);
        assert!(Request::new(1024, 0, None)
            .unwrap()
            .with_seed_bits(100)
            .is_err());
    }
}
