//! The prime-search engine shared by RSA and DH: the seeded stream, trial
//! division, Miller–Rabin, and the deterministic parallel search.

#![forbid(unsafe_code)]

// The tests' building blocks are public only for the benchmarks of this
// workspace: hidden from the documentation and not covered by semver.
#[doc(hidden)]
pub mod fermat;
pub(crate) mod lucas;
#[doc(hidden)]
pub mod mr;
pub(crate) mod search;
#[doc(hidden)]
pub mod small;
pub(crate) mod stream;

use std::time::Duration;

pub use stream::{Seed, SEED_LEN};

use rug::Integer;

use lucas::strong_lucas;
use mr::{rounds_for_bits, MrCandidate};
use stream::{random_in_range, Purpose};

/// Work counters of one generation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Candidates drawn (built from the stream).
    pub candidates: u64,
    /// Candidates that passed trial division and side conditions.
    pub survivors: u64,
    /// Modular exponentiations started, including abandoned ones.
    pub exponentiations: u64,
    /// Of the exponentiations started, the part given up undone, in
    /// thousandths of an exponentiation: a round whose verdict could no
    /// longer matter stops within 64 bits of its exponent, and the share of
    /// the exponent it had not reached is counted here. See
    /// [`Stats::exponentiations_done`].
    pub given_up_milli: u64,
    /// Wall time.
    pub elapsed: Duration,
}

impl Stats {
    /// Adds another generation's counters.
    pub fn add(&mut self, o: &Stats) {
        self.candidates += o.candidates;
        self.survivors += o.survivors;
        self.exponentiations += o.exponentiations;
        self.given_up_milli += o.given_up_milli;
        self.elapsed += o.elapsed;
    }

    /// The exponentiation work done: the exponentiations started less the
    /// parts given up (a round given up halfway counts one half). The
    /// measure of work that does not depend on how many cores ran it.
    pub fn exponentiations_done(&self) -> f64 {
        self.exponentiations as f64 - self.given_up_milli as f64 / 1000.0
    }
}

/// How a background job's generation uses threads: the
/// [`Options::per_call_threads`] and [`Options::exact_threads`] choices.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Threading {
    /// As [`Options::per_call_threads`].
    pub per_call_threads: bool,
    /// As [`Options::exact_threads`].
    pub exact_threads: bool,
}

/// A progress report, delivered on the caller's thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Candidates drawn so far.
    pub candidates: u64,
    /// Candidates that passed trial division and side conditions.
    pub survivors: u64,
    /// Modular exponentiations started so far.
    pub exponentiations: u64,
    /// Time since the generation started.
    pub elapsed: Duration,
    /// Primes found so far in this generation.
    pub primes_found: usize,
    /// Primes this generation needs.
    pub primes_needed: usize,
}

/// A progress callback: return `true` to cancel the generation.
pub type ProgressFn<'a> = dyn FnMut(&Progress) -> bool + 'a;

/// How a generation runs.
#[derive(Default)]
pub struct Options<'a> {
    /// Worker threads: 0 = all available cores, at most 1024. A pool of
    /// worker threads is parked after a generation, holding nothing of it,
    /// for the next one that asks for as many threads; parked pools are
    /// joined after 2 s unused or by [`crate::release_workers`]. At most
    /// the cores the process may run on unless [`Options::exact_threads`].
    pub threads: u32,
    /// A 32-byte seed for reproducible output; `None` draws one from the OS.
    pub seed: Option<&'a [u8]>,
    /// Called on the calling thread every `progress_interval` (default
    /// `search::PROGRESS_INTERVAL`, 50 ms) while the search runs, whenever a prime is found, and once
    /// when each search ends; returning `true` cancels.
    pub progress: Option<&'a mut ProgressFn<'a>>,
    /// RSA only: refuse any request whose key would not meet FIPS 186-5
    /// (see [`crate::rsa::validate_fips`]).
    pub rsa_fips: bool,
    /// RSA only: provable primes (see [`crate::rsa::Request::provable`]);
    /// refused together with `rsa_fips`.
    pub rsa_provable: bool,
    /// How often `progress` is called while a search runs (`None`: every
    /// 50 ms). Background jobs use 10 ms, so that a cancel is seen sooner;
    /// at most 1 s, at least 1 ms.
    pub progress_interval: Option<Duration>,
    /// Start this call's worker threads for it and join them before it
    /// returns, instead of leasing a pool kept between calls
    /// (`crate::threads`): what every call did before pools were kept.
    pub per_call_threads: bool,
    /// Run on exactly `threads` workers, even above the cores the process
    /// may run on and when the library's generations already running
    /// occupy every core. Without it a generation runs on at most as many
    /// threads as cores, and an RSA generation up to 4096 bits (a DH one
    /// below 768 bits) only on the cores left free — on its calling
    /// thread alone when none is (`crate::threads::admit`). The output is
    /// the same either way.
    pub exact_threads: bool,
}

/// Runs `f` on the calling thread but on a private stack of the library's
/// (`secure::fiber::on_private_stack`: shielded from core dumps and fork
/// children, wiped afterwards, asynchronous signals held), with options
/// whose progress callback runs back on the caller's own stack. `None`
/// where no private stack can be had: the caller then starts a worker.
pub(crate) fn on_private_stack<T>(
    opts: &mut Options<'_>,
    f: impl FnOnce(&mut Options<'_>) -> T,
) -> Option<T> {
    let mut user = opts.progress.take();
    let (threads, seed, interval) = (opts.threads, opts.seed, opts.progress_interval);
    let (rsa_fips, rsa_provable) = (opts.rsa_fips, opts.rsa_provable);
    let (per_call_threads, exact_threads) = (opts.per_call_threads, opts.exact_threads);
    let r = crate::secure::fiber::on_private_stack(|caller| {
        let mut relay = |event: &Progress| match user.as_mut() {
            Some(cb) => caller.run(|| cb(event)),
            None => false,
        };
        let mut here = Options {
            threads,
            seed,
            progress: Some(&mut relay),
            rsa_fips,
            rsa_provable,
            progress_interval: interval,
            per_call_threads,
            exact_threads,
        };
        f(&mut here)
    });
    opts.progress = user;
    r
}

/// Probable-prime test for checking supplied numbers: Miller–Rabin to
/// base 2, a strong Lucas test (together Baillie–PSW), and Miller–Rabin
/// rounds with bases from a fresh OS seed, so that crafted input cannot
/// target known bases.
pub fn is_probable_prime(n: &Integer, seed: &Seed, index: u64) -> bool {
    if *n < 5u32 {
        return *n == 2u32 || *n == 3u32;
    }
    if n.is_even() {
        return false;
    }
    let c = MrCandidate::new(n.clone());
    if !c.round(Integer::from(2u32), false) || !strong_lucas(n) {
        return false;
    }
    let width = Integer::from(n - 3u32);
    seed.with_stream(Purpose::MillerRabinBase, index, |rng| {
        for _ in 0..rounds_for_bits(n.significant_bits()) {
            let mut base = Integer::new();
            random_in_range(rng, &Integer::from(2u32), &width, &mut base);
            if !c.round(base, false) {
                return false;
            }
        }
        true
    })
}

/// Benchmark hook (not API): the wall time of a generation's fixed thread
/// costs with `threads` workers and no work: the caller's wiped frame,
/// building the private pool (threads started, stacks shielded), one
/// empty job, the stack wipe on every worker and the join.
#[doc(hidden)]
pub fn measure_pool_cost(threads: u32) -> crate::Result<std::time::Duration> {
    crate::gmp::init();
    let start = std::time::Instant::now();
    crate::secure::with_wiped_stack(|| {
        crate::gmp::secret_scope(|| -> crate::Result<()> {
            let pool = crate::threads::build_pool(threads)?;
            pool.install(|| ());
            pool.broadcast(|_| crate::secure::wipe_stack());
            Ok(())
        })
    })?;
    Ok(start.elapsed())
}
