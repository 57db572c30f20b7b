//! RSA key generation (FIPS 186-5 A.1.3, probable primes), two to five
//! primes (RFC 8017 multi-prime), on the parallel search engine.
//!
//! - Every candidate is a fresh random number from its own stream (no
//!   incremental walk from one start, which would make keys fingerprintable).
//! - Prime r_i of k_i bits is drawn uniformly from
//!   [⌈2^(k_i − 1 + (u−1)/u)⌉, 2^k_i) for u primes, so the product of the u
//!   primes is at least 2^(bits−1): the modulus has exactly `bits` bits.
//!   For u = 2 the bound is FIPS 186-5's √2·2^(k−1).
//! - gcd(r_i − 1, e) = 1 is a side condition of each candidate.
//! - |p − q| > 2^(bits/2 − 100) and d > 2^(bits/2), else new primes.
//! - A pairwise consistency test through the CRT path before returning:
//!   2 is signed (2^d mod n, its CRT parts recombined) and the signature
//!   verified (s^e ≡ 2), SP 800-56B's test with k = 2 in the order of a
//!   signature key's sign-then-verify.
//! - Opt-in: proven primes instead of probable ones (`provable`), with
//!   every other condition the same.

#![forbid(unsafe_code)]

mod assembly;
pub mod check;
mod confirm;
mod ct;
mod import;
mod key;
mod provable;

pub use import::import;
pub use key::{OtherPrime, RsaKey};

use std::sync::atomic::AtomicBool;

use rug::Integer;

use crate::error::{Error, Result};
use crate::gmp::sec;
use crate::prime::fermat::{fermat_base2_secret_lanes_or_stop, fermat_base2_secret_or_stop};
use crate::prime::mr::rsa_rounds;
use crate::prime::mr::MrCandidate;
use crate::prime::search::{
    mr_round_from_stream, mr_rounds_from_stream, CandidateSource, Found, Generation, Verdict,
};
use crate::prime::small::{rsa_trial_bound, TrialTable};
use crate::prime::stream::{
    in_range_from_words, range_words, with_first_words, Purpose, Seed, StreamBatches,
};
use crate::prime::{Options, Stats};
use crate::threads::Workers;

/// Smallest modulus size.
pub const MIN_BITS: u32 = 512;
/// Largest modulus size.
pub const MAX_BITS: u32 = 16384;
/// The default public exponent.
pub const DEFAULT_EXPONENT: u64 = 65537;

/// Most primes allowed for a modulus size (OpenSSL's caps).
pub fn max_primes(bits: u32) -> u32 {
    match bits {
        0..=1023 => 2,
        1024..=4095 => 3,
        4096..=8191 => 4,
        _ => 5,
    }
}

/// Checks the parameters of a generation request.
pub fn validate(bits: u32, e: u64, primes: u32) -> Result<()> {
    if !(MIN_BITS..=MAX_BITS).contains(&bits) || bits % 2 != 0 {
        return Err(Error::InvalidArgument("bits must be even, 512..=16384"));
    }
    if e < 3 || e % 2 == 0 {
        return Err(Error::InvalidArgument(
            "public exponent must be odd and >= 3",
        ));
    }
    if primes < 2 || primes > max_primes(bits) {
        return Err(Error::InvalidArgument(
            "number of primes out of range for this size",
        ));
    }
    Ok(())
}

/// Smallest modulus FIPS 186-5 allows for new keys (nlen ≥ 2048).
pub const FIPS_MIN_BITS: u32 = 2048;

/// Checks a request against FIPS 186-5 (A.1.3 and 5.4): two primes,
/// nlen ≥ 2048, and 2^16 < e < 2^256 (every odd u64 above 65536). A key
/// generated from such a request meets FIPS 186-5; one from any other
/// valid request (512–2047 bits, e ≤ 65535, or 3–5 primes) follows the
/// same procedure but does not.
pub fn validate_fips(bits: u32, e: u64, primes: u32) -> Result<()> {
    validate(bits, e, primes)?;
    if bits < FIPS_MIN_BITS {
        return Err(Error::InvalidArgument(
            "FIPS 186-5 needs a modulus of at least 2048 bits",
        ));
    }
    if e <= 1 << 16 {
        return Err(Error::InvalidArgument(
            "FIPS 186-5 needs a public exponent above 65536",
        ));
    }
    if primes != 2 {
        return Err(Error::InvalidArgument("FIPS 186-5 keys have two primes"));
    }
    Ok(())
}

/// A validated RSA generation request: the only place the parameters are
/// checked (the C ABI, the CLI and [`generate`] all build one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    bits: u32,
    e: u64,
    primes: u32,
    provable: bool,
    secure_arena: bool,
}

impl Request {
    /// A request the FIPS 186-5 A.1.3 procedure can serve (see
    /// [`validate`]).
    pub fn new(bits: u32, e: u64, primes: u32) -> Result<Request> {
        validate(bits, e, primes)?;
        Ok(Request {
            bits,
            e,
            primes,
            provable: false,
            secure_arena: false,
        })
    }

    /// A request whose key will meet FIPS 186-5 (see [`validate_fips`]).
    pub fn fips(bits: u32, e: u64, primes: u32) -> Result<Request> {
        validate_fips(bits, e, primes)?;
        Ok(Request {
            bits,
            e,
            primes,
            provable: false,
            secure_arena: false,
        })
    }

    /// A request for a key of provable primes (see `provable`): each prime
    /// p is proven by a chain of Pocklington certificates (p − 1 has a
    /// proven prime factor above √p) instead of Miller–Rabin rounds. Same
    /// parameters as [`Request::new`]; not FIPS 186-5 (its provable
    /// primes are A.1.2's Shawe-Taylor construction).
    pub fn provable(bits: u32, e: u64, primes: u32) -> Result<Request> {
        Ok(Request {
            provable: true,
            ..Request::new(bits, e, primes)?
        })
    }

    /// The request the flags ask for: [`Request::fips`] with `fips`,
    /// [`Request::provable`] with `provable`, [`Request::new`] with
    /// neither. Both at once is refused: FIPS 186-5 knows only its own
    /// provable primes.
    pub fn with_flags(
        bits: u32,
        e: u64,
        primes: u32,
        fips: bool,
        provable: bool,
    ) -> Result<Request> {
        match (fips, provable) {
            (true, true) => Err(Error::InvalidArgument(
                "provable primes are not FIPS 186-5's (A.1.2); drop one of the two flags",
            )),
            (true, false) => Request::fips(bits, e, primes),
            (false, true) => Request::provable(bits, e, primes),
            (false, false) => Request::new(bits, e, primes),
        }
    }

    /// The request with every secret of the generation kept in the secret
    /// arena (fork-wiped, left out of core dumps) or none made: with
    /// `required`, [`generate_request`] fails with
    /// [`Error::SecureMemory`] when the arena cannot be had in this
    /// process, or when a block of secret limbs went to the C heap while
    /// the key was made (the key is then wiped, not returned).
    pub fn with_secure_arena(mut self, required: bool) -> Request {
        self.secure_arena = required;
        self
    }

    /// Whether the request requires the secret arena
    /// ([`Request::with_secure_arena`]).
    pub fn requires_secure_arena(&self) -> bool {
        self.secure_arena
    }

    /// Modulus size in bits.
    pub fn bits(&self) -> u32 {
        self.bits
    }
    /// Public exponent.
    pub fn exponent(&self) -> u64 {
        self.e
    }
    /// Number of primes.
    pub fn primes(&self) -> u32 {
        self.primes
    }
    /// Whether the primes are provable (see [`Request::provable`]).
    pub fn is_provable(&self) -> bool {
        self.provable
    }
}

/// FIPS 186-5 A.1.3 step 5.4: |p − q| > 2^(nlen/2 − 100).
fn primes_far_apart(p: &Integer, q: &Integer, bits: u32) -> bool {
    assembly::differ_by_more_than_pow2(p.as_limbs(), q.as_limbs(), bits / 2 - 100) == 1
}

/// FIPS 186-5 A.1.1 / 5.3: d > 2^(nlen/2), in constant time.
fn d_large_enough(d: &Integer, bits: u32) -> bool {
    assembly::exceeds_pow2(d.as_limbs(), bits / 2) == 1
}

/// Sizes of the primes: `bits / u`, the remainder spread over the first.
fn prime_sizes(bits: u32, u: u32) -> Vec<u32> {
    (0..u).map(|i| bits / u + u32::from(i < bits % u)).collect()
}

/// ⌈2^(k − 1 + (u−1)/u)⌉ = ⌈(2^(u·k − 1))^(1/u)⌉.
fn lower_bound(k: u32, u: u32) -> Integer {
    let target = Integer::from(1u32) << (u * k - 1);
    let mut r = Integer::from(target.root_ref(u));
    if Integer::from(rug::ops::Pow::pow(&r, u)) < target {
        r += 1u32;
    }
    r
}

/// Whether gcd(c − 1, e) = 1, from r = c mod e, in constant time: c is a
/// candidate that may become a secret prime.
fn coprime_minus_one(r: u64, e: u64) -> bool {
    // (r − 1) mod e = r + e − 1, less e unless that borrows (r = 0).
    let v = r as u128 + e as u128 - 1;
    let w = v.wrapping_sub(e as u128);
    let borrow = ((w >> 127) as u64).wrapping_neg() as u128;
    let c_minus_1 = ((w & !borrow) | (v & borrow)) as u64;
    ct::gcd_inverse_u64(c_minus_1, e).0 == 1
}

/// gcd(c − 1, e) = 1 for every candidate c of one search, e public: c mod
/// e by a prepared word division, then, where e is prime (65537, 3, 17:
/// nearly always), one masked comparison — gcd(c − 1, e) is 1 or e, and e
/// exactly when c ≡ 1 (mod e) — else [`coprime_minus_one`]'s
/// constant-time GCD (about 1 µs).
pub(crate) struct SideCondition {
    e: u64,
    divisor: assembly::WordDivisor,
    prime: bool,
}

impl SideCondition {
    /// For an odd e ≥ 3. Whether e is prime is GMP's BPSW test, exact
    /// below 2^64.
    pub(crate) fn new(e: u64) -> SideCondition {
        SideCondition {
            e,
            divisor: assembly::WordDivisor::new(e),
            prime: Integer::from(e).is_probably_prime(30) != rug::integer::IsPrime::No,
        }
    }

    /// Whether gcd(c − 1, e) = 1 for the candidate's limbs `c`, in
    /// constant time.
    pub(crate) fn holds(&self, c: &[u64]) -> bool {
        self.holds_for(self.divisor.rem(c))
    }

    /// [`SideCondition::holds`] from r = c mod e.
    fn holds_for(&self, r: u64) -> bool {
        if self.prime {
            let x = std::hint::black_box(r ^ 1);
            (x | x.wrapping_neg()) >> 63 == 1
        } else {
            coprime_minus_one(r, self.e)
        }
    }
}

/// λ = lcm(r_i − 1) with a constant-time GCD (see `ct`): λ ← λ·(r − 1) /
/// gcd(λ, r − 1), the GCD bounded by the public prime sizes. The exact
/// division is by the gcd, a single limb except with negligible
/// probability; GMP's time for it depends only on the operand sizes.
pub(crate) fn carmichael_lambda(ps: &[Integer]) -> Result<Integer> {
    let mut lambda = prime_minus_one(&ps[0]);
    // Public bound on λ's size: the sum of the (public) prime sizes so far.
    let mut lambda_bound = ps[0].significant_bits();
    for p in &ps[1..] {
        let pm1 = prime_minus_one(p);
        let g = ct::gcd(&pm1, &lambda, lambda_bound.max(p.significant_bits()))
            .ok_or(Error::Internal)?;
        lambda_bound += p.significant_bits();
        lambda = sec::div_exact(&sec::mul(&lambda, &pm1), &g);
    }
    Ok(lambda)
}

/// e⁻¹ mod m for a secret m > 0 with gcd(e, m) = 1, without inverting
/// modulo m, on fixed-length limbs in constant time
/// ([`assembly::inverse_of_e`]).
fn inverse_of_e_mod(m: &Integer, e: u64) -> Integer {
    Integer::from_digits(
        &assembly::inverse_of_e(m.as_limbs(), e),
        rug::integer::Order::Lsf,
    )
}

/// p − 1 for an odd p (every generated prime): bit 0 cleared in a copy of
/// the limbs (`mpz_sub_ui` branches on whether the low limb borrows).
fn minus_one_odd(p: &Integer) -> Integer {
    debug_assert!(p.is_odd());
    let mut l = crate::secure::SecretVec::zeroed(p.as_limbs().len());
    l.copy_from_slice(p.as_limbs());
    if let Some(low) = l.first_mut() {
        *low &= !1;
    }
    Integer::from_digits(&l, rug::integer::Order::Lsf)
}

/// p − 1 for a prime p: [`minus_one_odd`], or GMP's subtraction for the
/// one even prime, 2, which only a checked key (`check`) can bring. A
/// prime's parity is not secret: every generated prime is odd.
fn prime_minus_one(p: &Integer) -> Integer {
    if p.is_odd() {
        minus_one_odd(p)
    } else {
        Integer::from(p - 1u32)
    }
}

/// Draws the candidate of stream `(purpose, index)` uniformly from [lo,
/// lo + width) into `out` — its words from `batches` where given (drawn
/// sixteen streams at a time: the same words) —, makes it odd and
/// trial-divides it: false when a small prime divides it.
fn draw_odd(
    seed: &Seed,
    (purpose, index): (Purpose, u64),
    batches: Option<&StreamBatches>,
    lo: &Integer,
    width: &Integer,
    trial: &TrialTable,
    out: &mut Integer,
) -> bool {
    let words = range_words(width);
    with_first_words(seed, batches, purpose, index, words, |w| {
        in_range_from_words(w, lo, width, out)
    });
    out.set_bit(0, true);
    trial.passes(out)
}

/// The shared trial-division table for `k`-bit primes.
fn trial_table(k: u32) -> std::sync::Arc<TrialTable> {
    TrialTable::shared(k.div_ceil(64) as usize, rsa_trial_bound(k))
}

/// The candidate in `c`, prepared for Miller–Rabin, when v2(c − 1) ≤ 63 so
/// that the constant-time round (`gmp::sec::mr_round`) applies; `None`
/// with probability 2^-63.
fn mr_ready(c: &mut Integer) -> Option<MrCandidate> {
    if c.as_limbs()[0] == 1 {
        return None;
    }
    Some(MrCandidate::new(std::mem::take(c)))
}

struct RsaSource {
    lo: Integer,
    width: Integer,
    /// gcd(c − 1, e) = 1, prepared for every candidate.
    side: SideCondition,
    rounds: u32,
    trial: std::sync::Arc<TrialTable>,
    /// How many first tests run at once
    /// (`prime::fermat::secret_first_test_lanes`).
    first_lanes: usize,
    /// Confirmation rounds a worker takes at once: eight in the lanes of
    /// `arith::lanes` (256 to 1245 bits), else up to the interleaved group
    /// that is cheapest per round on this CPU
    /// (`arith::ifma::rounds_at_once`: all five of RSA-2048's primes, all
    /// four of RSA-3072's and RSA-4096's), fewer where a round would be
    /// left alone, one where rounds do not interleave.
    rounds_at_once: u32,
    /// The candidates' streams sixteen at a time, where the lanes apply.
    batches: Option<StreamBatches>,
    /// Only the first test: the confirmation rounds run after the search
    /// (`confirm`).
    first_only: bool,
}

impl RsaSource {
    /// The search for `k`-bit primes of a `bits`-bit modulus of `u`
    /// primes.
    fn new(k: u32, u: u32, e: u64, bits: u32) -> RsaSource {
        let lo = lower_bound(k, u);
        let width = (Integer::from(1u32) << k) - &lo;
        let rounds = rsa_rounds(k, bits);
        let batches = StreamBatches::new(Purpose::RsaCandidate, range_words(&width));
        RsaSource {
            batches,
            first_only: false,
            lo,
            width,
            side: SideCondition::new(e),
            rounds,
            trial: trial_table(k),
            first_lanes: crate::prime::fermat::secret_first_test_lanes(k),
            rounds_at_once: if crate::arith::lanes::rounds_take(k) {
                crate::arith::lanes::LANES as u32
            } else {
                // Taken greedily: the CPU's best group, smaller where the
                // rounds would leave one alone (a lone round costs more
                // than its share of a group).
                let mut at_once = (crate::arith::ifma::rounds_at_once(k) as u32).min(rounds);
                while at_once > 2 && rounds % at_once == 1 {
                    at_once -= 1;
                }
                at_once
            },
        }
    }

    /// [`RsaSource::new`] whose search stops at the first test: it finds
    /// the lowest-numbered candidates that pass the base-2 Fermat test,
    /// whose confirmation rounds [`confirm::confirm`] runs.
    fn first_tests(k: u32, u: u32, e: u64, bits: u32) -> RsaSource {
        RsaSource {
            first_only: true,
            ..RsaSource::new(k, u, e, bits)
        }
    }
}

impl CandidateSource for RsaSource {
    type Cand = MrCandidate;

    fn candidate(&self, seed: &Seed, index: u64, out: &mut Integer) -> Option<MrCandidate> {
        let stream = (Purpose::RsaCandidate, index);
        let batches = self.batches.as_ref();
        if !draw_odd(
            seed,
            stream,
            batches,
            &self.lo,
            &self.width,
            &self.trial,
            out,
        ) {
            return None;
        }
        // gcd(c − 1, e) = 1, from c mod e (e is public).
        if !self.side.holds(out.as_limbs()) {
            return None;
        }
        mr_ready(out)
    }
    fn recycle(&self, cand: MrCandidate, scratch: &mut Integer) {
        *scratch = cand.n;
    }
    /// The base-2 filter plus the FIPS 186-5 Miller–Rabin rounds (the
    /// filter alone for [`RsaSource::first_tests`]).
    fn rounds(&self) -> u32 {
        if self.first_only {
            1
        } else {
            self.rounds + 1
        }
    }
    /// Round 0 is the constant-time base-2 Fermat filter
    /// ([`fermat_base2_secret_or_stop`], cheaper than a general exponentiation and
    /// never failing a prime); rounds 1..=t are the counted Miller–Rabin
    /// rounds with bases from the seeded stream, on constant-time
    /// arithmetic (`arith::fixed` up to 7 limbs, `gmp::sec::pow_secret`
    /// above). Everything is constant time: the winning candidate is
    /// secret.
    fn round(
        &self,
        seed: &Seed,
        index: u64,
        round: u32,
        cand: &MrCandidate,
        stop: &AtomicBool,
    ) -> Verdict {
        if round == 0 {
            return Verdict::one(fermat_base2_secret_or_stop(&cand.n, stop));
        }
        mr_round_from_stream(seed, index, round - 1, cand, true, stop)
    }
    fn prime(&self, cand: &MrCandidate) -> Integer {
        cand.n.clone()
    }
    fn first_round_lanes(&self) -> usize {
        self.first_lanes
    }
    fn first_round_group(
        &self,
        _seed: &Seed,
        _index: &[u64],
        c: &[&MrCandidate],
        stop: &AtomicBool,
    ) -> Option<Vec<Verdict>> {
        let ns: Vec<&Integer> = c.iter().map(|c| &c.n).collect();
        first_tests_grouped(&ns, stop)
    }
    /// Miller–Rabin rounds of one candidate at once on AVX-512 IFMA: up
    /// to eight in the lanes of one register for primes of 256 to 1245
    /// bits (RSA-512 to RSA-2048: all five of RSA-2048's primes), else two
    /// to five interleaved (see the `rounds_at_once` field: all four of
    /// RSA-3072's and RSA-4096's).
    fn rounds_at_once(&self) -> u32 {
        self.rounds_at_once
    }
    fn rounds_together(
        &self,
        seed: &Seed,
        index: u64,
        rounds: std::ops::Range<u32>,
        cand: &MrCandidate,
        stop: &AtomicBool,
    ) -> Option<Vec<Verdict>> {
        if rounds.start == 0 {
            return None;
        }
        mr_rounds_from_stream(seed, index, rounds.start - 1..rounds.end - 1, cand, stop)
    }
}

/// Round 0 (the secret base-2 Fermat filter) on two to four candidates
/// at once (`fermat_base2_secret_lanes_or_stop`), with the verdicts the
/// single test gives; `None` where the group cannot run together.
pub(crate) fn first_tests_grouped(ns: &[&Integer], stop: &AtomicBool) -> Option<Vec<Verdict>> {
    match fermat_base2_secret_lanes_or_stop(ns, stop) {
        Some(v) => Some(v.into_iter().map(Verdict::one).collect()),
        None if stop.load(std::sync::atomic::Ordering::Relaxed) => {
            Some(vec![Verdict::one(false); ns.len()])
        }
        None => None,
    }
}

/// Generates an RSA key of `bits` bits with public exponent `e` and `primes`
/// primes. Returns the key and the work counters.
///
/// Everything derived from the seed (candidates, Miller–Rabin bases, the
/// pairwise test) and the key assembly run on the generation's private
/// pool, whose workers' stacks are shielded and wiped and which is joined
/// before this returns; the calling thread only waits and reports
/// progress (the key comes back from a worker, already in secure
/// memory). Up to [`HERE_MAX_BITS`] the calling thread does the work
/// itself — alone with one thread, as worker 0 beside a pool of one
/// thread fewer with more — but on a private stack
/// (`secure::fiber::on_private_stack`: shielded like a worker's, wiped
/// before this returns), and the progress callback runs back on its own
/// stack. The calling thread's frames are
/// wiped from above (`secure::with_wiped_stack`), and every GMP
/// block of the generation lives in the secret arena
/// (`gmp::secret_scope`).
///
/// `opts.rsa_fips` and `opts.rsa_provable` choose the request as
/// [`Request::with_flags`] does.
pub fn generate(bits: u32, e: u64, primes: u32, opts: &mut Options<'_>) -> Result<(RsaKey, Stats)> {
    let req = Request::with_flags(bits, e, primes, opts.rsa_fips, opts.rsa_provable)?;
    generate_request(&req, opts)
}

/// [`generate`] for a request already validated.
pub fn generate_request(req: &Request, opts: &mut Options<'_>) -> Result<(RsaKey, Stats)> {
    if !req.secure_arena {
        return generate_anywhere(req, opts);
    }
    if !crate::secure::arena::usable() {
        return Err(Error::SecureMemory(
            "the secret arena's address space could not be reserved \
             (an address-space limit such as ulimit -v / RLIMIT_AS, or a kernel without MADV_WIPEONFORK)",
        ));
    }
    let before = crate::secure::arena::fallbacks();
    let r = generate_anywhere(req, opts)?;
    if crate::secure::arena::fallbacks() != before {
        // `r` (the key) is wiped as it is dropped.
        return Err(Error::SecureMemory(
            "a block of secret limbs went to the C heap during the generation (the arena is full)",
        ));
    }
    Ok(r)
}

/// [`generate_request`] without the arena requirement.
fn generate_anywhere(req: &Request, opts: &mut Options<'_>) -> Result<(RsaKey, Stats)> {
    crate::gmp::init();
    // Asynchronous signals wait while this thread handles the key (they
    // are let through for the progress callback and while it waits for
    // the workers): see `secure::signals`.
    let _signals = crate::secure::signals::hold();
    // Up to HERE_MAX_BITS a call gets only the cores the library's other
    // generations leave free, and runs on its own thread alone when they
    // occupy every core.
    let here_possible = req.bits <= HERE_MAX_BITS;
    let admitted = crate::threads::admit_options(opts, here_possible)?;
    if here_possible {
        // The calling thread works, on a private stack: alone, or as
        // worker 0 beside a pool of one thread fewer.
        // `Workers::Here` as a constant: a local of that variant leaves
        // the other variant's bytes undefined, and valgrind reported the
        // match on it as a branch on undefined memory.
        let with_caller;
        let workers = match admitted.threads() {
            1 => &Workers::Here,
            _ => {
                with_caller = Workers::with_caller(&admitted, opts.per_call_threads)?;
                &with_caller
            }
        };
        // Nothing secret touches this stack: no wipe of it is needed.
        if let Some(r) = crate::gmp::secret_scope(|| generate_here(req, opts, workers)) {
            crate::secure::clear_registers();
            return r;
        }
    }
    crate::secure::with_wiped_stack(|| {
        crate::gmp::secret_scope(|| {
            generate_inner(
                req,
                opts,
                &Workers::admitted(&admitted, opts.per_call_threads)?,
            )
        })
    })
}

/// The largest modulus a generation makes with the calling thread as a
/// worker ([`generate_here`]: alone with one thread, beside a pool with
/// more). There a progress report waits for the
/// candidate in hand and the pending confirmation rounds: at RSA-4096
/// (2048-bit primes) tens of milliseconds, near the 50 ms cadence the
/// header promises; above, a round alone takes longer. The thread costs
/// saved (0.12–0.15 ms hot, about 0.5 ms cold) are 10–15 % of an RSA-512
/// key and below 0.1 % of an RSA-4096 one.
pub const HERE_MAX_BITS: u32 = 4096;

/// The generation on the calling thread, on a private stack; the
/// progress callback runs on the caller's own stack. `None` where no
/// private stack can be had (then a pool does it).
fn generate_here(
    req: &Request,
    opts: &mut Options<'_>,
    workers: &Workers,
) -> Option<Result<(RsaKey, Stats)>> {
    crate::prime::on_private_stack(opts, |here| generate_inner(req, here, workers))
}

fn generate_inner(
    req: &Request,
    opts: &mut Options<'_>,
    workers: &Workers,
) -> Result<(RsaKey, Stats)> {
    let Request {
        bits,
        e,
        primes,
        provable,
        ..
    } = *req;
    let seed = Seed::from_option(opts.seed)?;
    // One set of workers for the whole generation: its searches and the
    // key assembly after them.
    let sizes = prime_sizes(bits, primes);
    let needed = if provable {
        // Every level of every prime's chain is one search.
        sizes.iter().map(|&k| provable::chain(k).len()).sum()
    } else {
        primes as usize
    };
    let mut generation = Generation::new(workers, seed, opts, needed);
    if !provable && primes == 2 && sizes[0] == sizes[1] && confirm::applies(sizes[0]) {
        return generate_pair_in_lanes(bits, e, sizes[0], &mut generation, workers);
    }
    let mut draw: Draw = if provable {
        Box::new(provable_draw(&sizes, primes, e))
    } else {
        Box::new(probable_draw(&sizes, primes, e, bits))
    };
    loop {
        let mut ps = draw(&mut generation)?;
        // Which prime the search found first is not secret; the order
        // by size is decided without GMP's early-exit comparison.
        if assembly::less_than(ps[0].as_limbs(), ps[1].as_limbs()) == 1 {
            ps.swap(0, 1);
        }
        if let Some(key) = assemble(bits, e, &ps, None, workers)? {
            return Ok((key, generation.stats()));
        }
        // A FIPS condition failed (probability far below 2^-90): draw new
        // primes from the following indices.
    }
}

/// [`generate_inner`] for two `k`-bit primes that `confirm` takes: the
/// search stops at the first test, and the confirmation rounds of both
/// primes and the pairwise test's CRT powers run together in the lanes
/// (`confirm::confirm`). The same key as the search with the rounds
/// inside: a candidate that fails a round is dropped, the other kept,
/// and the search goes on after the last candidate tested.
fn generate_pair_in_lanes(
    bits: u32,
    e: u64,
    k: u32,
    generation: &mut Generation<'_, '_>,
    workers: &Workers,
) -> Result<(RsaKey, Stats)> {
    let rounds = rsa_rounds(k, bits);
    let mut next = 0u64;
    let mut kept: Vec<Found> = Vec::with_capacity(2);
    loop {
        let found =
            generation.search(RsaSource::first_tests(k, 2, e, bits), next, 2 - kept.len())?;
        // Not found until confirmed.
        generation.withdraw_found(found.len());
        next = found.last().map_or(next, |f| f.index + 1);
        kept.extend(found);
        let [a, b] = &kept[..] else {
            return Err(Error::Internal);
        };
        let indices = [a.index, b.index];
        let mut ps = [a.prime.clone(), b.prime.clone()];
        let mut exps = ps
            .each_ref()
            .map(|p| inverse_of_e_mod(&minus_one_odd(p), e));
        let (passed, parts) = confirm::confirm(generation, &ps, indices, rounds, &exps)?;
        let Some(mut parts) = parts else {
            // A composite passed the base-2 Fermat test: drop it (and
            // keep the other where it passed its rounds).
            kept = kept
                .into_iter()
                .zip(passed)
                .filter_map(|(f, ok)| ok.then_some(f))
                .collect();
            continue;
        };
        kept.clear();
        // Which prime the search found first is not secret; the order
        // by size is decided without GMP's early-exit comparison.
        if assembly::less_than(ps[0].as_limbs(), ps[1].as_limbs()) == 1 {
            ps.swap(0, 1);
            exps.swap(0, 1);
            parts.swap(0, 1);
        }
        if let Some(key) = assemble(bits, e, &ps, Some((&exps, &parts)), workers)? {
            return Ok((key, generation.stats()));
        }
        // A FIPS condition failed (probability far below 2^-90): draw new
        // primes from the following indices.
    }
}

/// Draws the key's primes, each call from the indices after the last
/// call's.
type Draw = Box<dyn FnMut(&mut Generation<'_, '_>) -> Result<Vec<Integer>>>;

/// The key's probable primes, each call from the indices after the last
/// call's: one search per distinct prime size (sizes are non-increasing).
fn probable_draw(
    sizes: &[u32],
    primes: u32,
    e: u64,
    bits: u32,
) -> impl FnMut(&mut Generation<'_, '_>) -> Result<Vec<Integer>> {
    let mut groups: Vec<(u32, usize)> = Vec::new();
    for &k in sizes {
        match groups.last_mut() {
            Some((gk, n)) if *gk == k => *n += 1,
            _ => groups.push((k, 1)),
        }
    }
    // Candidate indices of different sizes never collide: each group has
    // its own index range (group g starts at g << 48).
    let mut next_index: Vec<u64> = (0..groups.len() as u64).map(|g| g << 48).collect();
    move |generation| {
        let mut ps: Vec<Integer> = Vec::with_capacity(primes as usize);
        for (g, &(k, count)) in groups.iter().enumerate() {
            let found =
                generation.search(RsaSource::new(k, primes, e, bits), next_index[g], count)?;
            next_index[g] = found.last().map_or(next_index[g], |f| f.index + 1);
            ps.extend(found.into_iter().map(|f| f.prime));
        }
        Ok(ps)
    }
}

/// The key's provable primes (`provable`), each call from the indices
/// after the last call's.
fn provable_draw(
    sizes: &[u32],
    primes: u32,
    e: u64,
) -> impl FnMut(&mut Generation<'_, '_>) -> Result<Vec<Integer>> {
    let sizes = sizes.to_vec();
    let mut next: Vec<Vec<u64>> = (0..primes)
        .map(|j| (0..8).map(|l| provable::first_index(j, l)).collect())
        .collect();
    move |generation| {
        let mut slots: Vec<provable::Slot<'_>> = sizes
            .iter()
            .zip(next.iter_mut())
            .map(|(&k, next)| provable::Slot {
                k,
                lo: lower_bound(k, primes),
                next,
            })
            .collect();
        provable::primes(generation, &mut slots, e)?
            .into_iter()
            .map(|c| c.into_iter().next().ok_or(Error::Internal))
            .collect()
    }
}

/// Builds the key from its primes on one of the generation's workers (one
/// hand-off from the calling thread, about 14 µs; none for
/// [`Workers::Here`]); `None` when a FIPS condition fails.
fn assemble(
    bits: u32,
    e: u64,
    ps: &[Integer],
    done: Done<'_>,
    workers: &Workers,
) -> Result<Option<RsaKey>> {
    match workers {
        // The calling thread waits with its registers cleared.
        Workers::Pool(pool) => crate::secure::signals::released(|| {
            pool.install(|| {
                crate::secure::with_wiped_stack(|| assemble_here(bits, e, ps, done, Split::InPool))
            })
        }),
        Workers::Here => assemble_here(bits, e, ps, done, Split::No),
        // On the caller's private stack, its other half on the pool.
        Workers::WithCaller(pool) => assemble_here(bits, e, ps, done, Split::With(pool)),
    }
}

/// The CRT exponents e⁻¹ mod (r_i − 1) and the pairwise test's CRT parts
/// 2^(d_i) mod r_i of two primes, where `confirm` computed them with the
/// primes' rounds (in the primes' order); `None` where [`assemble_here`]
/// computes them.
type Done<'a> = Option<(&'a [Integer; 2], &'a [Integer; 2])>;

/// Whether [`assemble_here`] splits its work in two, and how.
enum Split<'p> {
    /// All of it on this thread.
    No,
    /// `rayon::join` on the pool this thread belongs to.
    InPool,
    /// This thread and a thread of `pool` (this thread is not one of its
    /// threads).
    With(&'p rayon::ThreadPool),
}

/// [`assemble`]'s work, on a worker.
///
/// With two or more workers in the pool (`in_pool`) the work splits in two
/// (`rayon::join`, each side wiping the stack below it when done): λ, d,
/// the CRT coefficients (tens of microseconds by divsteps) and the
/// pairwise test's first CRT exponentiation on one worker, the other CRT
/// exponentiations on the other, so the serial tail after the search is
/// one constant-time exponentiation long instead of two.
fn assemble_here(
    bits: u32,
    e: u64,
    ps: &[Integer],
    done: Done<'_>,
    split: Split<'_>,
) -> Result<Option<RsaKey>> {
    if ps.len() == 2 && !primes_far_apart(&ps[0], &ps[1], bits) {
        return Ok(None);
    }
    for i in 0..ps.len() {
        for j in i + 1..ps.len() {
            if ps[i] == ps[j] {
                return Ok(None);
            }
        }
    }
    // The product by `sec::mul`: GMP's `mpz_mul` would use Toom–Cook on
    // RSA-4096's primes, which branches on the primes' values.
    let n = ps[1..]
        .iter()
        .fold(ps[0].clone(), |acc, p| sec::mul(&acc, p));
    if n.significant_bits() != bits {
        return Err(Error::Internal);
    }
    // CRT exponents d mod (r_i − 1) = e⁻¹ mod (r_i − 1), without inverting
    // modulo a secret (see `inverse_of_e_mod`).
    let exps: Vec<Integer> = match done {
        Some((exps, _)) => exps.to_vec(),
        None => ps
            .iter()
            .map(|p| inverse_of_e_mod(&minus_one_odd(p), e))
            .collect(),
    };
    // The pairwise test's CRT part for prime i: 2^(d_i) mod r_i.
    // `sec::pow_mod`, not `mpz_powm_sec`: GMP's brings the base into
    // Montgomery form through `mpn_invert_limb`'s table, indexed by r_i's
    // top bits.
    let two = Integer::from(2u32);
    let part = |i: usize| sec::pow_mod(&two, &exps[i], &ps[i]).ok_or(Error::Internal);
    // Two primes the IFMA engine pairs: both parts in one loop, on the
    // side that does not compute d and the coefficients.
    let paired = crt_pair_applies(ps);
    let side = || -> Result<_> {
        // d = e⁻¹ mod λ; CRT coefficients as constant-time inverses
        // modulo a prime (`ct::inverse_mod_odd`). Both take tens of
        // microseconds, so this side also takes the first CRT part.
        let d = inverse_of_e_mod(&carmichael_lambda(ps)?, e);
        let bound = ps.iter().map(|p| p.significant_bits()).max().unwrap_or(0);
        let inv_mod_prime = |v: &Integer, p: &Integer| {
            ct::inverse_mod_odd(&sec::rem(v, p), p, bound).ok_or(Error::Internal)
        };
        let mut coeffs = vec![inv_mod_prime(&ps[1], &ps[0])?];
        let mut prefix = sec::mul(&ps[0], &ps[1]);
        for p in &ps[2..] {
            coeffs.push(inv_mod_prime(&prefix, p)?);
            prefix = sec::mul(&prefix, p);
        }
        let first = if paired || done.is_some() {
            None
        } else {
            Some(part(0)?)
        };
        Ok((d, coeffs, first))
    };
    let rest = || -> Result<Vec<Integer>> {
        if paired {
            crt_parts_paired(&exps, ps).ok_or(Error::Internal)
        } else {
            (1..ps.len()).map(part).collect()
        }
    };
    use crate::secure::with_wiped_stack as wiped;
    // Handing the other half to the pool wakes a worker with a system
    // call (rayon's futex): not with the CRT exponents just computed
    // still in the registers (glibc's memcpy leaves copies of them in
    // zmm16–31, which nothing since has overwritten).
    if !matches!(split, Split::No) {
        crate::secure::clear_before_kernel();
    }
    let (side, rest) = match (split, done) {
        // The parts are done: the rest is tens of microseconds, here.
        (_, Some((_, parts))) => (side(), Ok(parts.to_vec())),
        (Split::InPool, None) => rayon::join(|| wiped(side), || wiped(rest)),
        // This side on a private stack, which is wiped as a whole at the
        // end; the other on a pool thread, which wipes below it.
        (Split::With(pool), None) => {
            let mut other = None;
            let mut mine = None;
            pool.in_place_scope(|s| {
                s.spawn(|_| other = Some(wiped(rest)));
                mine = Some(side());
                // This thread may now wait in the kernel for the other
                // half: not with d in its registers.
                crate::secure::clear_before_kernel();
            });
            (mine.ok_or(Error::Internal)?, other.ok_or(Error::Internal)?)
        }
        // On a private stack, which is wiped as a whole at the end.
        (Split::No, None) => (side(), rest()),
    };
    let (d, coeffs, first) = side?;
    let parts: Vec<Integer> = first.into_iter().chain(rest?).collect();
    if !d_large_enough(&d, bits) {
        return Ok(None);
    }
    pairwise_check(e, ps, &parts, &coeffs)?;
    RsaKey::from_parts(bits, e, &n, &d, ps, &exps, &coeffs).map(Some)
}

/// Whether [`crt_parts_paired`] takes the primes `ps`: two of one limb
/// count and 52-bit digit count that the IFMA engine pairs.
fn crt_pair_applies(ps: &[Integer]) -> bool {
    ps.len() == 2
        && ps[0].as_limbs().len() == ps[1].as_limbs().len()
        && crate::arith::ifma::digits(ps[0].as_limbs())
            == crate::arith::ifma::digits(ps[1].as_limbs())
        && crate::arith::ifma::LIMBS.contains(&ps[0].as_limbs().len())
        && crate::arith::ifma::pairs(ps[0].significant_bits().max(ps[1].significant_bits()))
}

/// The pairwise test's two CRT parts 2^(d_i) mod r_i at once
/// (`arith::ifma::pow2_secret_pair`, constant time: the loop runs over as
/// many exponent bits as the larger prime has, one step per bit, the
/// exponents padded to the primes' limb count (`sec::padded`), R mod r_i
/// by the constant-time division (`prime::mr::with_r_and_r2`)); `None`
/// where [`crt_pair_applies`] is false. The padded copies are wiped; the
/// results are GMP integers in the secret arena, as `sec::pow_mod`'s are.
fn crt_parts_paired(exps: &[Integer], ps: &[Integer]) -> Option<Vec<Integer>> {
    if !crt_pair_applies(ps) || exps.len() != 2 {
        return None;
    }
    let len = ps[0].as_limbs().len();
    let bits = ps[0].significant_bits().max(ps[1].significant_bits());
    if exps.iter().any(|e| e.significant_bits() > bits) {
        return None;
    }
    // Secret buffers of the primes' limb count, wiped when dropped.
    let es = [0, 1].map(|l| sec::padded(&exps[l], len));
    let mut outs = [0, 1].map(|_| sec::padded(&Integer::new(), len));
    let [p0, p1] = [ps[0].as_limbs(), ps[1].as_limbs()];
    let [o0, o1] = &mut outs;
    with_pair_r_and_r2([p0, p1], |rs, _| {
        crate::arith::ifma::pow2_secret_pair(
            [p0, p1],
            [&es[0], &es[1]],
            bits,
            rs,
            [o0, o1],
            &AtomicBool::new(false),
        )
    })?;
    Some(
        outs.iter()
            .map(|o| Integer::from_digits(o, rug::integer::Order::Lsf))
            .collect(),
    )
}

/// `f` with R and R² modulo each of two primes (`prime::mr::with_r_and_r2`:
/// the constant-time division, wiped after).
fn with_pair_r_and_r2<T>(ps: [&[u64]; 2], f: impl FnOnce([&[u64]; 2], [&[u64]; 2]) -> T) -> T {
    crate::prime::mr::with_r_and_r2(ps[0], |r0, r2_0| {
        crate::prime::mr::with_r_and_r2(ps[1], |r1, r2_1| f([r0, r1], [r2_0, r2_1]))
    })
}

/// (x_i)^e mod r_i for the two primes the IFMA engine pairs
/// (`arith::ifma::pow_secret_pair` with e, public, as both exponents: the
/// loop runs over e's bits), each x_i below r_i; `None` where
/// [`crt_pair_applies`] is false.
fn public_pow_paired(
    xs: &[crate::secure::SecretVec<u64>; 2],
    e: &Integer,
    ps: &[Integer],
) -> Option<[Integer; 2]> {
    if !crt_pair_applies(ps)
        || e.significant_bits() > ps[0].significant_bits().min(ps[1].significant_bits())
    {
        return None;
    }
    let len = ps[0].as_limbs().len();
    let el = sec::padded(e, len);
    let mut outs = [0, 1].map(|_| sec::padded(&Integer::new(), len));
    let [p0, p1] = [ps[0].as_limbs(), ps[1].as_limbs()];
    let [o0, o1] = &mut outs;
    with_pair_r_and_r2([p0, p1], |rs, r2s| {
        crate::arith::ifma::pow_secret_pair(
            [p0, p1],
            [&xs[0], &xs[1]],
            [&el, &el],
            e.significant_bits(),
            rs,
            r2s,
            [o0, o1],
            &AtomicBool::new(false),
        )
    })?;
    Some(outs.map(|o| Integer::from_digits(&o, rug::integer::Order::Lsf)))
}

/// The pairwise consistency test's verification: recombines the CRT parts
/// s_i = 2^(d_i) mod r_i (RFC 8017 RSADP, multi-prime form) into s = 2^d
/// mod n, the signature of 2, and checks s^e ≡ 2 modulo every prime
/// (which is s^e ≡ 2 mod n, the primes being distinct): a mismatch is
/// `CheckFailed`. The recombination works on the secret primes, so it
/// runs on fixed-length limb buffers with GMP's branch-free `mpn_sec_*`
/// functions (`sec::crt_recombine`); s mod r_i by the constant-time
/// division, the powers by the constant-time exponentiation over e's bits
/// (the IFMA pair for two primes it takes, else `sec::pow_mod_public_exp`),
/// and the comparison with 2 over whole limb buffers.
fn pairwise_check(e: u64, ps: &[Integer], parts: &[Integer], coeffs: &[Integer]) -> Result<()> {
    let s = sec::crt_recombine(ps, parts, coeffs);
    let e = Integer::from(e);
    let residues: Vec<crate::secure::SecretVec<u64>> = ps
        .iter()
        .map(|p| {
            let mut r = sec::padded(&Integer::new(), p.as_limbs().len());
            sec::rem_into(&s, p.as_limbs(), &mut r);
            r
        })
        .collect();
    let powers: Vec<Integer> = match <&[crate::secure::SecretVec<u64>; 2]>::try_from(&residues[..])
        .ok()
        .and_then(|xs| public_pow_paired(xs, &e, ps))
    {
        Some(pair) => pair.into(),
        None => residues
            .iter()
            .zip(ps)
            .map(|(r, p)| {
                let x = Integer::from_digits(r, rug::integer::Order::Lsf);
                sec::pow_mod_public_exp(&x, &e, p).ok_or(Error::Internal)
            })
            .collect::<Result<_>>()?,
    };
    // Each power against 2 over its prime's whole length: no early exit.
    let mismatch = powers.iter().zip(ps).fold(0u64, |acc, (y, p)| {
        let y = sec::padded(y, p.as_limbs().len());
        y.iter()
            .enumerate()
            .fold(acc, |acc, (j, &w)| acc | (w ^ (u64::from(j == 0) * 2)))
    });
    if std::hint::black_box(mismatch) == 0 {
        Ok(())
    } else {
        Err(Error::CheckFailed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With AVX-512 IFMA, a candidate's confirmation rounds run up to
    /// eight at once in the lanes for RSA-512 to RSA-2048 primes (256 to
    /// 1245 bits), two to five interleaved above, and the key of a seed is
    /// the one the rounds taken one by one give.
    #[test]
    fn the_pairwise_tests_crt_parts_run_as_a_pair_where_they_can() {
        if !crate::arith::ifma::available() {
            crate::capability::skip(
                "ifma",
                "no AVX-512 IFMA on this CPU: the CRT parts' pair is not exercised",
            );
            return;
        }
        // RSA-2048 to RSA-6144's primes pair; RSA-1024's (8 limbs) and
        // three primes do not.
        let mut walk = Integer::from(0x6a09_e667u32);
        for (k, pairs) in [
            (512u32, false),
            (1024, true),
            (1536, true),
            (2048, true),
            (3072, true),
        ] {
            let top = Integer::from(Integer::ONE << (k - 1));
            let ps: Vec<Integer> = (0..2)
                .map(|i| {
                    walk =
                        (Integer::from(&walk * 0x9e37_79b9u32) + 0x7f4a_7c15u32).keep_bits(k - 1);
                    Integer::from(&walk | &top).next_prime() + 2u32 * i
                })
                .map(|p| p.next_prime())
                .collect();
            assert_eq!(crt_pair_applies(&ps), pairs, "{k}-bit primes");
            assert!(!crt_pair_applies(&[
                ps[0].clone(),
                ps[1].clone(),
                ps[0].clone()
            ]));
            let exps: Vec<Integer> = ps
                .iter()
                .map(|p| inverse_of_e_mod(&minus_one_odd(p), 65537))
                .collect();
            let two = Integer::from(2u32);
            let xs = [0, 1]
                .map(|l| sec::padded(&Integer::from(&ps[l] - 777u32), ps[l].as_limbs().len()));
            if !pairs {
                assert!(crt_parts_paired(&exps, &ps).is_none());
                assert!(public_pow_paired(&xs, &Integer::from(65537u32), &ps).is_none());
                continue;
            }
            let got = crt_parts_paired(&exps, &ps).expect("paired");
            let e = Integer::from(65537u32);
            let verified = public_pow_paired(&xs, &e, &ps).expect("paired");
            for l in 0..2 {
                // Against GMP's own (variable-time) exponentiation.
                let want = two.clone().pow_mod(&exps[l], &ps[l]).unwrap();
                assert_eq!(got[l], want, "{k} bits, part {l}");
                assert_eq!(got[l], sec::pow_mod(&two, &exps[l], &ps[l]).unwrap());
                let x = Integer::from(&ps[l] - 777u32);
                assert_eq!(
                    verified[l],
                    x.pow_mod(&e, &ps[l]).unwrap(),
                    "{k} bits, power {l}"
                );
            }
        }
    }

    /// The pairwise test passes a consistent key and fails one whose CRT
    /// parts or coefficients are wrong, with two primes (the IFMA pair
    /// where the CPU has it) and three (one prime at a time), and with
    /// e = 3, 65537 and a 33-bit e.
    #[test]
    fn the_pairwise_test_signs_2_and_catches_a_wrong_part_or_coefficient() {
        let mut walk = Integer::from(0x3c6e_f372u32);
        let mut prime = |k: u32, e: u64| loop {
            walk = (Integer::from(&walk * 0x9e37_79b9u32) + 0x7f4a_7c15u32).keep_bits(k - 2);
            let p = Integer::from(&walk | &Integer::from(Integer::ONE << (k - 1))).next_prime();
            if p.significant_bits() == k && Integer::from(&p - 1u32).gcd(&Integer::from(e)) == 1 {
                break p;
            }
        };
        for (sizes, e) in [
            (vec![1024u32, 1024], 65537u64),
            (vec![1024, 1024], 3),
            (vec![1536, 1536], (1u64 << 32) + 15),
            (vec![512, 512], 65537),
            (vec![704, 672, 672], 65537),
        ] {
            let ps: Vec<Integer> = sizes.iter().map(|&k| prime(k, e)).collect();
            let exps: Vec<Integer> = ps
                .iter()
                .map(|p| inverse_of_e_mod(&minus_one_odd(p), e))
                .collect();
            let mut coeffs = vec![ps[1].clone().invert(&ps[0]).unwrap()];
            let mut prefix = Integer::from(&ps[0] * &ps[1]);
            for p in &ps[2..] {
                coeffs.push(prefix.clone().invert(p).unwrap());
                prefix *= p;
            }
            let two = Integer::from(2u32);
            let parts: Vec<Integer> = exps
                .iter()
                .zip(&ps)
                .map(|(d, p)| two.clone().pow_mod(d, p).unwrap())
                .collect();
            assert_eq!(
                pairwise_check(e, &ps, &parts, &coeffs),
                Ok(()),
                "{sizes:?} e={e}"
            );
            for i in 0..ps.len() {
                let mut bad = parts.clone();
                bad[i] = Integer::from(&bad[i] + 1u32) % &ps[i];
                assert_eq!(
                    pairwise_check(e, &ps, &bad, &coeffs),
                    Err(Error::CheckFailed),
                    "{sizes:?} e={e}: part {i}"
                );
            }
            for i in 0..coeffs.len() {
                let mut bad = coeffs.clone();
                bad[i] = Integer::from(&bad[i] + 2u32) % &ps[i + 1];
                assert_eq!(
                    pairwise_check(e, &ps, &parts, &bad),
                    Err(Error::CheckFailed),
                    "{sizes:?} e={e}: coefficient {i}"
                );
            }
            // Another public exponent than the one the key was made for.
            assert_eq!(
                pairwise_check(e + 2, &ps, &parts, &coeffs),
                Err(Error::CheckFailed),
                "{sizes:?} e={e}"
            );
        }
    }

    #[test]
    fn confirmation_rounds_run_in_lanes_where_they_can() {
        if !crate::arith::ifma::available() {
            crate::capability::skip(
                "ifma",
                "no AVX-512 IFMA on this CPU: rounds in lanes are not exercised",
            );
            return;
        }
        // Up to RSA-2048's primes, in the lanes of one register (all
        // five of RSA-2048's at once); RSA-3072's and RSA-4096's four, all
        // at once; 3072-bit primes (RSA-6144) four, in pairs; 4096-bit
        // primes one by one.
        for (k, want) in [
            (256u32, 8u32),
            (384, 8),
            (512, 8),
            (1024, 8),
            (1245, 8),
            (1246, 5),
            (1536, 4),
            (2048, 4),
            (3072, 2),
            (4096, 1),
            (8192, 1),
        ] {
            let source = RsaSource::new(k, 2, 65537, 2 * k);
            assert_eq!(source.rounds_at_once, want, "{k}-bit primes");
            // The first tests: eight at once in the lanes up to 8192 bits
            // (rows written out up to 1244, bands above), every prime an
            // RSA key has.
            let first = 8;
            assert_eq!(source.first_lanes, first, "{k}-bit primes' first tests");
            assert!(
                want <= 2 || want == 8 || source.rounds % want != 1,
                "{k}-bit primes: {} rounds leave one alone",
                source.rounds
            );
        }
        // The same candidate's rounds, in lanes and one by one, from the
        // seeded stream.
        let seed = Seed::from_bytes(&[0x1au8; 32]).unwrap();
        let never = AtomicBool::new(false);
        let p = (Integer::from(Integer::ONE << 255u32) + 0x1234_5678u32).next_prime();
        let cands = [
            MrCandidate::new(p.clone()),
            MrCandidate::new(Integer::from(&p * 3u32).keep_bits(256) | 1u32),
        ];
        for (i, cand) in cands.iter().enumerate() {
            let together = mr_rounds_from_stream(&seed, 9, 0..8, cand, &never).expect("lanes");
            for (r, v) in together.iter().enumerate() {
                let one = mr_round_from_stream(&seed, 9, r as u32, cand, true, &never);
                assert_eq!(v.pass, one.pass, "candidate {i}, round {r}");
                assert_eq!(v.exponentiations, 1);
            }
        }
        // Two to five interleaved, for a 1024-bit prime and a composite,
        // give the verdicts of the rounds one by one.
        let p = (Integer::from(Integer::ONE << 1023u32) + 0x9e37_79b9u32).next_prime();
        let cands = [
            MrCandidate::new(p.clone()),
            MrCandidate::new(
                Integer::from(&p * 3u32).keep_bits(1024)
                    | 1u32
                    | Integer::from(Integer::ONE << 1023u32),
            ),
        ];
        for (i, cand) in cands.iter().enumerate() {
            assert!(cand.pairs_apply(), "candidate {i}");
            for range in [0..5u32, 1..5, 1..4, 3..5] {
                let together = mr_rounds_from_stream(&seed, 7, range.clone(), cand, &never)
                    .expect("interleaved");
                assert_eq!(together.len(), range.len());
                for (r, v) in range.clone().zip(&together) {
                    let one = mr_round_from_stream(&seed, 7, r, cand, true, &never);
                    assert_eq!(v.pass, one.pass, "candidate {i}, round {r}");
                    assert_eq!(v.exponentiations, 1);
                }
            }
        }
    }

    /// Two primes of one size that the lanes take: the search stops at the
    /// first test and the confirmation rounds run after it, with the
    /// pairwise test's powers (`confirm`); the key's primes are the two
    /// lowest-numbered candidates that pass every round, which the search
    /// with the rounds inside finds, at one and at two threads; the work
    /// counters count the same exponentiations.
    #[test]
    fn a_pairs_rounds_after_the_search_give_the_searchs_primes() {
        if !crate::arith::ifma::available() {
            crate::capability::skip(
                "ifma",
                "no AVX-512 IFMA on this CPU: the confirmation in lanes is not exercised",
            );
            return;
        }
        for (bits, seeds) in [(512u32, 0..6u8), (1024, 0..3), (2048, 0..3)] {
            let k = bits / 2;
            assert!(confirm::applies(k));
            for i in seeds {
                let bytes = [i ^ 0x3c; 32];
                // The reference: one search with every round inside.
                let workers = Workers::Here;
                let mut opts = Options::default();
                let seed = Seed::from_bytes(&bytes).unwrap();
                let mut generation = Generation::new(&workers, seed, &mut opts, 2);
                let found = generation
                    .search(RsaSource::new(k, 2, 65537, bits), 0, 2)
                    .unwrap();
                let mut want: Vec<Integer> = found.into_iter().map(|f| f.prime).collect();
                want.sort();
                let reference = generation.stats();
                for threads in [1u32, 2] {
                    let mut o = Options {
                        threads,
                        seed: Some(&bytes),
                        ..Options::default()
                    };
                    let (key, stats) = generate(bits, 65537, 2, &mut o).unwrap();
                    let mut got: Vec<Integer> = [key.p(), key.q()]
                        .iter()
                        .map(|b| Integer::from_digits(b, rug::integer::Order::Msf))
                        .collect();
                    got.sort();
                    assert_eq!(got, want, "RSA-{bits}, seed {i}, {threads} threads");
                    if threads == 1 {
                        assert_eq!(stats.candidates, reference.candidates, "RSA-{bits} {i}");
                        assert_eq!(
                            stats.exponentiations, reference.exponentiations,
                            "RSA-{bits} {i}"
                        );
                    }
                }
            }
        }
    }

    /// `confirm` on a prime and a composite: the prime passes, the
    /// composite fails, and no powers come back; on two primes, both pass
    /// and the powers are 2^(d_i) mod r_i; the rounds are counted as
    /// exponentiations, once each.
    #[test]
    fn confirm_drops_a_composite_and_powers_two_primes() {
        if !crate::arith::ifma::available() {
            crate::capability::skip(
                "ifma",
                "no AVX-512 IFMA on this CPU: the confirmation in lanes is not exercised",
            );
            return;
        }
        let p = (Integer::from(Integer::ONE << 1023u32) + 0x9e37_79b9u32).next_prime();
        let q = (Integer::from(Integer::ONE << 1023u32) + 0x7f4a_7c15u64 * 3).next_prime();
        // A Carmichael-free composite of the same size: p·3 cut to 1024
        // bits, odd, with v2(c − 1) small.
        let c = Integer::from(&p * 3u32).keep_bits(1023)
            | 1u32
            | Integer::from(Integer::ONE << 1023u32);
        assert_eq!(c.is_probably_prime(30), rug::integer::IsPrime::No);
        let e = 65537u64;
        for (ps, want) in [
            ([p.clone(), c.clone()], [true, false]),
            ([c, q.clone()], [false, true]),
            ([p, q], [true, true]),
        ] {
            let exps = ps
                .each_ref()
                .map(|x| inverse_of_e_mod(&minus_one_odd(x), e));
            for workers in [Workers::Here, Workers::pool(2, false).unwrap()] {
                let mut opts = Options::default();
                let seed = Seed::from_bytes(&[5u8; 32]).unwrap();
                let mut generation = Generation::new(&workers, seed, &mut opts, 2);
                let (passed, powers) =
                    confirm::confirm(&mut generation, &ps, [3, 8], 5, &exps).unwrap();
                assert_eq!(passed, want);
                assert_eq!(generation.stats().exponentiations, 10);
                match powers {
                    None => assert_ne!(want, [true, true]),
                    Some(powers) => {
                        assert_eq!(want, [true, true]);
                        for i in 0..2 {
                            let two = Integer::from(2u32);
                            assert_eq!(powers[i], two.pow_mod(&exps[i], &ps[i]).unwrap());
                        }
                    }
                }
            }
        }
    }

    /// Drawn sixteen streams at a time or one by one, a source builds the
    /// same candidates, at every RSA prime size (the batches apply up to
    /// RSA-4096's 2048-bit primes; above, the source draws one by one).
    #[test]
    fn batched_candidates_are_the_streams_candidates() {
        let seed = Seed::from_bytes(&[0x2a; 32]).unwrap();
        let mut batched_sizes = 0;
        for (k, u, bits) in [
            (256u32, 2u32, 512u32),
            (342, 3, 1024),
            (512, 2, 1024),
            (1024, 2, 2048),
            (1536, 2, 3072),
            (2048, 2, 4096),
            (4096, 2, 8192),
        ] {
            let source = RsaSource::new(k, u, 65537, bits);
            batched_sizes += source.batches.is_some() as u32;
            let mut plain = RsaSource::new(k, u, 65537, bits);
            plain.batches = None;
            let (mut a, mut b) = (Integer::new(), Integer::new());
            for index in (0..150).chain((1 << 48)..(1 << 48) + 40) {
                let x = source.candidate(&seed, index, &mut a).map(|c| c.n);
                let y = plain.candidate(&seed, index, &mut b).map(|c| c.n);
                assert_eq!(x, y, "{k}-bit primes, index {index}");
                assert_eq!(
                    a, b,
                    "{k}-bit primes, index {index}: the drawn numbers differ"
                );
            }
        }
        if crate::secure::rng_wide::available() {
            assert_eq!(
                batched_sizes, 6,
                "the batches apply to primes of up to 2048 bits"
            );
        } else {
            crate::capability::skip(
                "avx512",
                "AVX-512F is not in use here (not on this CPU, or not in this build): the candidates' streams are drawn one by one",
            );
        }
    }

    #[test]
    fn caps_and_validation() {
        assert_eq!(max_primes(512), 2);
        assert_eq!(max_primes(1024), 3);
        assert_eq!(max_primes(4096), 4);
        assert_eq!(max_primes(8192), 5);
        assert!(validate(2048, 65537, 2).is_ok());
        for (b, e, u) in [
            (0, 65537, 2),
            (511, 65537, 2),
            (2047, 65537, 2),
            (16386, 65537, 2),
            (2048, 0, 2),
            (2048, 1, 2),
            (2048, 65536, 2),
            (2048, 65537, 1),
            (2048, 65537, 4),
            (512, 65537, 3),
            (16384, 3, 6),
        ] {
            assert!(validate(b, e, u).is_err(), "{b} {e} {u}");
        }
    }

    #[test]
    fn lower_bounds_guarantee_the_modulus_size() {
        for (bits, u) in [
            (512u32, 2u32),
            (2048, 2),
            (2048, 3),
            (3072, 3),
            (4096, 4),
            (8192, 5),
        ] {
            let sizes = prime_sizes(bits, u);
            assert_eq!(sizes.iter().sum::<u32>(), bits);
            let prod = sizes
                .iter()
                .fold(Integer::from(1u32), |a, &k| a * lower_bound(k, u));
            assert!(prod.significant_bits() == bits, "{bits}/{u}");
            // Tight: one less in every bound would drop below 2^(bits-1).
            let less = sizes
                .iter()
                .fold(Integer::from(1u32), |a, &k| a * (lower_bound(k, u) - 1u32));
            assert!(
                less.significant_bits() < bits || u > 2,
                "{bits}/{u} bound not tight"
            );
        }
        // u = 2: the bound is ⌈√2·2^(k−1)⌉.
        let l = lower_bound(1024, 2);
        let sq = Integer::from(l.square_ref());
        assert!(sq >= Integer::from(1u32) << 2047);
        assert!(Integer::from(&l - 1u32).square() < Integer::from(1u32) << 2047);
    }

    /// FIPS 186-5's bounds are strict: |p − q| > 2^(nlen/2 − 100) and
    /// d > 2^(nlen/2); equality fails.
    #[test]
    fn fips_bounds_at_the_exact_edge() {
        for bits in [2048u32, 3072, 4096] {
            let edge = Integer::from(1u32) << (bits / 2 - 100);
            let q = (Integer::from(1u32) << (bits / 2 - 1)) + 12345u32;
            let p = Integer::from(&q + &edge);
            assert!(
                !primes_far_apart(&p, &q, bits),
                "{bits}: |p−q| = 2^(n/2−100)"
            );
            assert!(!primes_far_apart(&q, &p, bits), "{bits}: order");
            let p1 = Integer::from(&p + 1u32);
            assert!(
                primes_far_apart(&p1, &q, bits),
                "{bits}: |p−q| = 2^(n/2−100) + 1"
            );
            assert!(primes_far_apart(&q, &p1, bits), "{bits}: order, + 1");
            let p0 = Integer::from(&p - 1u32);
            assert!(!primes_far_apart(&p0, &q, bits), "{bits}: − 1");

            let d = Integer::from(1u32) << (bits / 2);
            assert!(!d_large_enough(&d, bits), "{bits}: d = 2^(n/2)");
            assert!(
                d_large_enough(&Integer::from(&d + 1u32), bits),
                "{bits}: d = 2^(n/2) + 1"
            );
            assert!(
                !d_large_enough(&Integer::from(&d - 1u32), bits),
                "{bits}: d < 2^(n/2)"
            );
        }
    }

    #[test]
    fn fips_requests() {
        assert!(validate_fips(2048, 65537, 2).is_ok());
        assert!(validate_fips(4096, (1 << 40) + 1, 2).is_ok());
        assert!(validate_fips(2048, u64::MAX, 2).is_ok());
        for (b, e, u) in [
            (2046, 65537, 2),
            (1024, 65537, 2),
            (512, 65537, 2),
            (2048, 3, 2),
            (2048, 65535, 2),
            (2048, 1 << 16 | 1, 3),
            (4096, 65537, 3),
        ] {
            assert!(validate(b, e, u).is_ok(), "{b} {e} {u} is a valid request");
            assert!(validate_fips(b, e, u).is_err(), "{b} {e} {u} is not FIPS");
        }
    }

    #[test]
    fn coprime_side_condition() {
        for e in [3u64, 5, 17, 65537, 65539, (1 << 40) + 15] {
            for r in [0u64, 1, 2, 3, e - 1, e / 2] {
                let c_minus_1 = (r + e - 1) % e;
                let mut a = c_minus_1;
                let mut b = e;
                while b != 0 {
                    (a, b) = (b, a % b);
                }
                assert_eq!(coprime_minus_one(r, e), a == 1, "r={r} e={e}");
            }
        }
    }

    #[test]
    fn the_side_condition_agrees_with_the_gcd_for_prime_and_composite_e() {
        for (e, prime) in [
            (3u64, true),
            (5, true),
            (17, true),
            (65537, true),
            (9, false),
            (15, false),
            (21, false),
            (65535, false),
            (3 * 65537, false),
            ((1 << 61) - 1, true),
            ((1 << 40) + 15, true),
            ((1 << 40) + 1, false),
        ] {
            let side = SideCondition::new(e);
            assert_eq!(side.prime, prime, "e = {e}");
            let rs: Vec<u64> = if e < 1000 {
                (0..e).collect()
            } else {
                vec![0, 1, 2, 3, e - 1, e / 2, e / 3 + 1]
            };
            for r in rs {
                assert_eq!(
                    side.holds_for(r),
                    coprime_minus_one(r, e),
                    "r = {r}, e = {e}"
                );
            }
            // From a candidate's limbs: c = e·t + r.
            for (t, r) in [(12345u64, 1u64), (99, 2), (7, 0)] {
                let c = Integer::from(e) * t + r;
                assert_eq!(side.holds(c.as_limbs()), coprime_minus_one(r % e, e));
            }
        }
    }

    #[test]
    fn lambda_of_odd_and_even_primes() {
        // 2 can only come from a checked key; its p − 1 is 1.
        for (ps, want) in [
            (vec![11u32, 7], 30u32),
            (vec![2, 11], 10),
            (vec![3, 2], 2),
            (vec![2, 2], 1),
            (vec![13, 11, 7], 60),
        ] {
            let ps: Vec<Integer> = ps.into_iter().map(Integer::from).collect();
            assert_eq!(carmichael_lambda(&ps).unwrap(), want, "{ps:?}");
        }
    }

    #[test]
    fn neg_inverse() {
        for (a, m) in [
            (5u64, 65537u64),
            (12345, 65537),
            (2, 3),
            (u64::MAX - 2, u64::MAX),
        ] {
            if ct::gcd_inverse_u64(a % m, m).0 != 1 {
                continue;
            }
            let x = assembly::neg_inverse_mod_u64(a, m);
            assert_eq!((a as u128 * x as u128 + 1) % m as u128, 0, "{a} {m}");
        }
    }

    /// Every 8-byte window of `bytes`, and each reversed, into `windows`.
    fn add_windows(windows: &mut std::collections::HashSet<[u8; 8]>, bytes: &[u8]) {
        for w in bytes.windows(8) {
            let w: [u8; 8] = w.try_into().unwrap();
            windows.insert(w);
            windows.insert(u64::from_le_bytes(w).swap_bytes().to_le_bytes());
        }
    }

    /// The 8-byte windows (both byte orders) of key `k`'s p, q, d, dP, dQ
    /// and qInv and, for a probable-prime RSA-`bits` generation from
    /// `seed` that counted `stats`, of every candidate its search claimed
    /// (indices from 0: the source has no sieve, so it claims each in
    /// turn): n, n − 1 and the odd part of n − 1.
    fn secret_windows(
        k: &RsaKey,
        bits: u32,
        probable: Option<(&Seed, &Stats)>,
    ) -> std::collections::HashSet<[u8; 8]> {
        let mut windows = std::collections::HashSet::new();
        for part in [k.p(), k.q(), k.d(), k.dp(), k.dq(), k.qinv()] {
            add_windows(&mut windows, part);
        }
        if let Some((seed, stats)) = probable {
            let source = RsaSource::new(bits / 2, 2, 65537, bits);
            let mut scratch = Integer::new();
            for index in 0..stats.candidates + 16 {
                if let Some(c) = source.candidate(seed, index, &mut scratch) {
                    for v in [&c.n, &c.n_minus_1, &c.d] {
                        let le: Vec<u8> =
                            v.as_limbs().iter().flat_map(|l| l.to_le_bytes()).collect();
                        add_windows(&mut windows, &le);
                    }
                }
            }
        }
        windows
    }

    /// A generation and the key's exports free no heap block that holds a
    /// secret: every block freed on the calling thread and on the pool's
    /// threads during a seeded generation (RSA-1024/2048/3072 on one
    /// thread, where all the work is on the calling thread's private
    /// stack; RSA-2048/3072 on two, the caller beside a pool thread) and
    /// during exports of the key
    /// (PKCS#1 DER, PKCS#8 PEM, PKCS#8 encrypted with scrypt, OpenSSH
    /// with and without a passphrase) and the imports of the last three
    /// is logged by a test allocator (`secure::freed`) and searched for 8
    /// bytes of every candidate the search built and of the key's parts
    /// (the secret arena and the secure buffers are not the allocator's:
    /// only what escaped them is seen). The controls: a plain copy of p,
    /// freed on this thread or on a pool thread, is found.
    #[test]
    fn a_generation_and_its_exports_free_no_heap_block_holding_a_secret() {
        use crate::encode::pbes2::Kdf;
        use crate::encode::RsaFormat;
        const CONTROL: &str = "the control";
        const CONTROL_POOL: &str = "the control on a pool thread";
        let workers = crate::threads::Workers::for_test(1);
        let crate::threads::Workers::Pool(pool) = &workers else {
            unreachable!("a pool")
        };
        let mut hits = Vec::new();
        for (bits, threads) in [(1024u32, 1u32), (2048, 1), (3072, 1), (2048, 2), (3072, 2)] {
            let bytes = [bits as u8 ^ 0x5c ^ threads as u8; 32];
            let seed = Seed::from_bytes(&bytes).unwrap();
            let mut opts = Options {
                threads,
                exact_threads: true,
                seed: Some(&bytes),
                ..Options::default()
            };
            let (generated, freed) =
                crate::secure::freed::record(|| generate(bits, 65537, 2, &mut opts).unwrap());
            let (k, stats) = generated;
            let mut logs = vec![("the generation", freed)];
            let pass = b"an export passphrase";
            type Step<'a> = (&'static str, Box<dyn Fn() + 'a>);
            let steps: Vec<Step<'_>> = vec![
                // The controls: a copy of p in a plain Vec, freed unwiped
                // on this thread or on a pool thread, must be found.
                (
                    CONTROL,
                    Box::new(|| drop(std::hint::black_box(k.p().to_vec()))),
                ),
                (
                    CONTROL_POOL,
                    Box::new(|| pool.install(|| drop(std::hint::black_box(k.p().to_vec())))),
                ),
                (
                    "PKCS#1 DER",
                    Box::new(|| drop(k.export(RsaFormat::Pkcs1Der).unwrap())),
                ),
                (
                    "PKCS#8 PEM",
                    Box::new(|| drop(k.export(RsaFormat::Pkcs8Pem).unwrap())),
                ),
                (
                    "PKCS#8 with scrypt, and its import",
                    Box::new(|| {
                        let e = k.export_encrypted(true, pass, Kdf::Scrypt).unwrap();
                        drop(super::import::import(e.as_slice(), Some(pass)).unwrap());
                    }),
                ),
                (
                    "OpenSSH with a passphrase, and its import",
                    Box::new(|| {
                        let e = k.export_openssh("c", Some(pass)).unwrap();
                        drop(super::import::import(e.as_slice(), Some(pass)).unwrap());
                    }),
                ),
                (
                    "OpenSSH, and its import",
                    Box::new(|| {
                        let e = k.export_openssh("c", None).unwrap();
                        drop(super::import::import(e.as_slice(), None).unwrap());
                    }),
                ),
            ];
            for (what, step) in &steps {
                let ((), freed) = crate::secure::freed::record(step);
                logs.push((what, freed));
            }
            // Only now: the windows' own copies of the secrets (and the
            // candidates rebuilt for them) must not be freed before a
            // step, whose fresh blocks could show them as stale bytes.
            let windows = secret_windows(&k, bits, Some((&seed, &stats)));
            for (what, freed) in logs {
                let n = freed
                    .windows(8)
                    .filter(|w| windows.contains(&<[u8; 8]>::try_from(*w).unwrap()))
                    .count();
                if what == CONTROL || what == CONTROL_POOL {
                    assert!(
                        n > 0,
                        "RSA-{bits}: the control was not found: the search is broken"
                    );
                } else if n > 0 {
                    hits.push(format!(
                        "RSA-{bits}, {threads} thread(s), {what}: {n} windows in {} freed bytes",
                        freed.len()
                    ));
                }
            }
        }
        assert!(
            hits.is_empty(),
            "secrets in freed heap blocks:\n{}",
            hits.join("\n")
        );
    }

    /// A search's worker coordinates with the others (the state lock,
    /// and under it the wake-ups of waiting workers and of the caller)
    /// through futexes, which may enter the kernel, where a debugger, a
    /// core dump or another process's ptrace reads the registers at
    /// leisure: it must get there with nothing of the candidates it built
    /// and tested in its vector registers; so must the calling thread when
    /// it starts, wakes or waits for the pool (a search's start and end,
    /// the key assembly's hand-off). The registers are recorded at every
    /// such point (`secure::clear_before_kernel`, `secure::probe`) during
    /// seeded two- and three-thread generations (the caller as a worker
    /// beside a pool; probable primes at RSA-1024/2048/3072, provable at
    /// RSA-2048), and none may hold 8 bytes, in either byte order and at
    /// any offset, of a candidate the probable searches built (n, n - 1
    /// and the odd part of n - 1) or of the key's p, q, d, dP, dQ or qInv.
    /// Without the clear there, about 2 % of the entries held one (xmm1,
    /// and zmm16-31: copies GMP, glibc's memcpy and the IFMA code leave).
    #[test]
    fn the_searchs_coordination_sees_no_candidate_in_the_registers() {
        if cfg!(not(any(target_arch = "x86_64", target_arch = "aarch64"))) {
            crate::capability::skip(
                "registers",
                "the register probe reads x86-64 and AArch64 vector registers only",
            );
            return;
        }
        let probing = crate::secure::probe::start();
        let mut snapshots = 0usize;
        let mut hits = Vec::new();
        let runs = [
            (3072u32, 2u32, false, 6u8),
            (2048, 3, false, 6),
            (1024, 2, false, 12),
            (2048, 2, true, 3),
        ];
        for (bits, threads, provable, keys) in runs {
            for key in 0..keys {
                let bytes = [key ^ (bits >> 4) as u8 ^ (threads as u8 * 0x35); 32];
                let seed = Seed::from_bytes(&bytes).unwrap();
                let mut opts = Options {
                    threads,
                    exact_threads: true,
                    seed: Some(&bytes),
                    rsa_provable: provable,
                    ..Options::default()
                };
                let (k, stats) = generate(bits, 65537, 2, &mut opts).unwrap();
                let taken = crate::secure::probe::take();
                snapshots += taken.len();
                let windows = secret_windows(&k, bits, (!provable).then_some((&seed, &stats)));
                for snap in &taken {
                    for (r, reg) in snap.chunks(64).enumerate() {
                        if reg.iter().all(|&b| b == 0) {
                            continue;
                        }
                        if reg
                            .windows(8)
                            .any(|w| windows.contains(&<[u8; 8]>::try_from(w).unwrap()))
                        {
                            hits.push(format!(
                                "RSA-{bits} (provable: {provable}), {threads} threads, key {key}: register {r}"
                            ));
                        }
                    }
                }
            }
        }
        drop(probing);
        assert!(
            snapshots > 1000,
            "only {snapshots} entries into the coordination were recorded"
        );
        assert!(
            hits.is_empty(),
            "{} of {snapshots} entries into a search's coordination held a secret in a vector register:\n{}",
            hits.len(),
            hits.join("\n")
        );
    }
}
