//! The parallel prime search with a thread-count-independent result.
//!
//! ## The contract
//! Candidates are numbered 0, 1, 2, … and candidate k is a pure function of
//! (seed, k) (see `stream`), as are the Miller–Rabin bases used on it. The
//! answer of a search for `count` primes is defined as **the `count`
//! lowest-numbered candidates that pass all tests**. That definition does
//! not mention threads, so if the search computes it, the result is the
//! same at 1, 2 or 64 threads.
//!
//! ## Why scheduling cannot change the result
//! - Workers claim indices from one atomic counter, one at a time (a
//!   source with a sieve lets a claim skip indices it rejects unbuilt), so
//!   when any worker claims index j every index below j has been claimed.
//! - A claimed candidate is tested to its verdict, or abandoned only when
//!   `count` confirmed primes with *lower* indices exist — then it cannot
//!   be among the `count` lowest, whatever its verdict. Its first round
//!   may also be given up when `count` lower candidates have passed
//!   theirs; it then stays unresolved and is tested again from the start
//!   if one of them fails a confirmation round.
//! - A worker stops claiming once its next index is above `bound`, the
//!   index of the `count`-th lowest confirmed prime; `bound` only ever
//!   decreases, so every index below the final `bound` was claimed and
//!   brought to a verdict.
//! - Each verdict is deterministic (same candidate, same bases).
//!
//! Hence when all workers have stopped, the `count` lowest confirmed
//! indices are exactly the defined answer.
//!
//! ## Little waste
//! Only exponentiations are expensive. A composite almost always fails its
//! first Miller–Rabin round; a candidate that passes it is almost surely
//! prime and needs `rounds − 1` more. Those confirmation rounds are put in a
//! shared queue and every idle worker takes one, so they run in parallel.
//! Before starting an exponentiation on candidate k, a worker checks whether
//! `count` candidates below k are already confirmed or awaiting
//! confirmation; if so, k's exponentiation would be speculative, and the
//! worker helps with pending rounds or waits instead. The work beyond the
//! one-thread run is then what is in flight when the last prime passes its
//! first round: at most one exponentiation per thread (see `gate`), or one
//! group of first rounds per thread for a source that runs two to four at
//! once for less than their cost in turn (on AVX-512 IFMA: a pair for
//! about 0.6 of two, three or four for about 0.45–0.5 each; see
//! `partner`).
//! Those rounds are given up at that moment (see `first_verdict`), so
//! only the part of each already run is spent, and the work counter
//! (`Stats::given_up_milli`) counts only that part.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rug::Integer;

use super::mr::MrCandidate;
use super::stream::{random_in_range, random_in_range_secret, Purpose, Seed, MAX_INDEX};
use super::{Options, Progress, Stats};
use crate::error::{Error, Result};
use crate::threads::Workers;

/// How often the caller's thread wakes to report progress (the header's
/// `pf_progress_fn` promises this value).
pub(crate) const PROGRESS_INTERVAL: Duration = Duration::from_millis(50);

/// What the search needs to know about the primes it looks for.
///
/// Everything here must be a pure function of (seed, index, round): that is
/// what makes the answer independent of scheduling.
pub(crate) trait CandidateSource: Send + Sync + 'static {
    /// A candidate that passed the cheap tests, ready for its rounds.
    type Cand: Send + Sync + 'static;
    /// The smallest index ≥ `index` that is worth building; indices skipped
    /// over are rejected without being built (a sieve). Default: `index`.
    /// Once `stop` is set any index ≥ `index` will do (it is discarded).
    fn next_viable(&self, index: u64, stop: &AtomicBool) -> u64 {
        let _ = stop;
        index
    }
    /// Builds candidate number `index` and applies the cheap tests (trial
    /// division, side conditions); `None` rejects it. `scratch` is a
    /// reusable allocation.
    fn candidate(&self, seed: &Seed, index: u64, scratch: &mut Integer) -> Option<Self::Cand>;
    /// Gives a rejected candidate's allocation back.
    fn recycle(&self, cand: Self::Cand, scratch: &mut Integer) {
        let _ = (cand, scratch);
    }
    /// Total rounds a candidate must pass; round 0 is the first test, which
    /// nearly every composite fails, the others confirm.
    fn rounds(&self) -> u32;
    /// Runs round `round` on candidate `index` and says whether it passed
    /// and how many modular exponentiations it started (the engine keeps
    /// the count). Once `stop` is set (the search was cancelled, or the
    /// candidate's index fell above the search's bound: its verdict can no
    /// longer matter) a long round may give up early with any verdict: it
    /// is discarded.
    fn round(
        &self,
        seed: &Seed,
        index: u64,
        round: u32,
        cand: &Self::Cand,
        stop: &AtomicBool,
    ) -> Verdict;
    /// The prime a confirmed candidate stands for.
    fn prime(&self, cand: &Self::Cand) -> Integer;
    /// How many candidates' round 0 the source may run at once for less
    /// than that many rounds' cost ([`CandidateSource::first_round_group`]),
    /// at most [`GROUP_MAX`]; then a worker that passed the gate with one
    /// candidate claims up to that many less one next as its partners.
    /// Default: 1 (one at a time).
    fn first_round_lanes(&self) -> usize {
        1
    }
    /// The highest index the source has (at most `MAX_INDEX`, the
    /// default): a search whose claims pass it ends with the primes found
    /// up to it, possibly fewer than asked for (FIPS 186-4's counter
    /// limit, `dh::fips186`).
    fn limit(&self) -> u64 {
        MAX_INDEX
    }
    /// Round 0 on two to `first_round_lanes()` candidates at once
    /// (ascending indices), with the verdicts `round` would give each, in
    /// order; `None` when this group cannot be done together (the engine
    /// then runs them in turn). Default: `None`.
    fn first_round_group(
        &self,
        seed: &Seed,
        index: &[u64],
        cand: &[&Self::Cand],
        stop: &AtomicBool,
    ) -> Option<Vec<Verdict>> {
        let _ = (seed, index, cand, stop);
        None
    }
    /// How many consecutive confirmation rounds of one candidate a worker
    /// may take at once ([`CandidateSource::rounds_together`]), for less
    /// than that many rounds cost. Default: 1 (one at a time).
    fn rounds_at_once(&self) -> u32 {
        1
    }
    /// The consecutive confirmation rounds `rounds` (at least two, at most
    /// `rounds_at_once`) of one candidate at once, with the verdicts
    /// `round` would give each, in order; `None` when they cannot be done
    /// together (the engine then runs them in turn). Default: `None`.
    fn rounds_together(
        &self,
        seed: &Seed,
        index: u64,
        rounds: std::ops::Range<u32>,
        cand: &Self::Cand,
        stop: &AtomicBool,
    ) -> Option<Vec<Verdict>> {
        let _ = (seed, index, rounds, cand, stop);
        None
    }
}

/// A shared source searches like the source itself (several searches in
/// turn over one sieve: `dh::Batch`).
impl<S: CandidateSource> CandidateSource for Arc<S> {
    type Cand = S::Cand;
    fn next_viable(&self, index: u64, stop: &AtomicBool) -> u64 {
        (**self).next_viable(index, stop)
    }
    fn candidate(&self, seed: &Seed, index: u64, scratch: &mut Integer) -> Option<Self::Cand> {
        (**self).candidate(seed, index, scratch)
    }
    fn recycle(&self, cand: Self::Cand, scratch: &mut Integer) {
        (**self).recycle(cand, scratch)
    }
    fn rounds(&self) -> u32 {
        (**self).rounds()
    }
    fn round(
        &self,
        seed: &Seed,
        index: u64,
        round: u32,
        cand: &Self::Cand,
        stop: &AtomicBool,
    ) -> Verdict {
        (**self).round(seed, index, round, cand, stop)
    }
    fn prime(&self, cand: &Self::Cand) -> Integer {
        (**self).prime(cand)
    }
    fn first_round_lanes(&self) -> usize {
        (**self).first_round_lanes()
    }
    fn limit(&self) -> u64 {
        (**self).limit()
    }
    fn first_round_group(
        &self,
        seed: &Seed,
        index: &[u64],
        cand: &[&Self::Cand],
        stop: &AtomicBool,
    ) -> Option<Vec<Verdict>> {
        (**self).first_round_group(seed, index, cand, stop)
    }
    fn rounds_at_once(&self) -> u32 {
        (**self).rounds_at_once()
    }
    fn rounds_together(
        &self,
        seed: &Seed,
        index: u64,
        rounds: std::ops::Range<u32>,
        cand: &Self::Cand,
        stop: &AtomicBool,
    ) -> Option<Vec<Verdict>> {
        (**self).rounds_together(seed, index, rounds, cand, stop)
    }
}

/// The outcome of one round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Verdict {
    /// The candidate passed the round.
    pub pass: bool,
    /// Modular exponentiations the round started (a compound round that
    /// stops at its first failing test counts only what it ran).
    pub exponentiations: u32,
}

impl Verdict {
    /// A round of exactly one exponentiation.
    pub(crate) fn one(pass: bool) -> Verdict {
        Verdict {
            pass,
            exponentiations: 1,
        }
    }
}

/// Miller–Rabin round `round` on candidate `index` with a base drawn from
/// the seeded stream (purpose `MillerRabinBase`, one block of words per
/// round), for sources whose rounds are all Miller–Rabin rounds.
pub(crate) fn mr_round_from_stream(
    seed: &Seed,
    index: u64,
    round: u32,
    cand: &MrCandidate,
    secret: bool,
    stop: &AtomicBool,
) -> Verdict {
    let base = mr_bases(seed, index, round..round + 1, &cand.n, secret).remove(0);
    Verdict::one(cand.round_or_stop(base, secret, stop))
}

/// The bases of Miller–Rabin rounds `rounds` on candidate `index`: one
/// block of words per round of the seeded stream (purpose
/// `MillerRabinBase`), round r's at word r × the block. Drawn from one
/// stream: the rounds' blocks are consecutive, so the stream reads on
/// instead of being derived again and set back for each.
pub(crate) fn mr_bases(
    seed: &Seed,
    index: u64,
    rounds: std::ops::Range<u32>,
    n: &Integer,
    secret: bool,
) -> Vec<Integer> {
    let words_per_round = (n.significant_bits() as u128 + 64).div_ceil(32) + 2;
    let width = Integer::from(n - 3u32);
    let two = Integer::from(2u32);
    seed.with_stream(Purpose::MillerRabinBase, index, |rng| {
        rounds
            .map(|round| {
                let mut base = Integer::new();
                rng.seek(words_per_round * round as u128);
                if secret {
                    random_in_range_secret(rng, &two, &width, &mut base);
                } else {
                    random_in_range(rng, &two, &width, &mut base);
                }
                base
            })
            .collect()
    })
}

/// Secret Miller–Rabin rounds `rounds` of [`mr_round_from_stream`] (the
/// same bases) on candidate `index` at once: in the lanes of one register
/// (`MrCandidate::rounds_in_lanes_or_stop`, up to eight, n up to 1245
/// bits), or
/// interleaved (`MrCandidate::rounds_together_or_stop`, two to five);
/// `None` where none applies.
pub(crate) fn mr_rounds_from_stream(
    seed: &Seed,
    index: u64,
    rounds: std::ops::Range<u32>,
    cand: &MrCandidate,
    stop: &AtomicBool,
) -> Option<Vec<Verdict>> {
    let n = rounds.len();
    let in_lanes = cand.lanes_apply() && n <= crate::arith::lanes::LANES;
    if !in_lanes
        && (!(2..=crate::arith::ifma::MAX_ROUNDS_AT_ONCE).contains(&n) || !cand.pairs_apply())
    {
        return None;
    }
    // The bases' limbs are wiped when GMP frees them (`gmp::alloc`).
    let bases = mr_bases(seed, index, rounds, &cand.n, true);
    let verdicts = if in_lanes {
        cand.rounds_in_lanes_or_stop(&bases, stop)
    } else {
        cand.rounds_together_or_stop(&bases.iter().collect::<Vec<_>>(), stop)
    };
    verdicts.map(|v| v.into_iter().map(Verdict::one).collect())
}

/// A confirmed prime and its candidate index.
pub(crate) struct Found {
    /// Its candidate index.
    pub index: u64,
    /// The prime.
    pub prime: Integer,
}

struct Pending<C> {
    cand: Arc<C>,
    /// Next round number to hand out (round 0 was the first test).
    next_round: u32,
    /// Rounds that passed, round 0 included.
    passed: u32,
}

/// The most candidates whose first rounds a worker runs at once (see
/// [`CandidateSource::first_round_lanes`]).
pub(crate) const GROUP_MAX: usize = 8;

/// What [`Shared::partner`] found for a worker's candidate.
enum Partner<C> {
    /// Nothing left to pair with.
    None,
    /// A candidate to run together with the worker's.
    Now(u64, C),
    /// A candidate that must pass the gate after the worker's own.
    Later(u64, C),
}

struct State<C> {
    confirmed: BTreeMap<u64, Arc<C>>,
    pending: BTreeMap<u64, Pending<C>>,
    /// Claimed survivors of the cheap tests whose verdict is open and that
    /// are not pending: waiting at the gate, or in their first round (or
    /// given up and deferred). A claimed index still in its cheap tests is
    /// not here yet — the tests reject most, and registering each would
    /// put every claim through the lock; a survivor is registered when it
    /// comes to the gate (or as a partner). Until then the rules below
    /// that count open indices may let a little more work start than they
    /// would with it (at most one candidate per worker); no verdict and no
    /// answer depends on them.
    open: BTreeSet<u64>,
    /// Survivors whose first round started above the lowest unresolved
    /// survivor (see `gate`): the speculative work in flight or done.
    speculative: BTreeSet<u64>,
    /// Workers parked at the gate, by the index they hold (see
    /// `Shared::wake`).
    waiting: BTreeMap<u64, std::thread::Thread>,
    /// Survivors whose first round was given up part way because enough
    /// candidates below them had passed theirs (see
    /// `Shared::first_verdict`): still open, run again from the start if
    /// one of those fails a confirmation round, dropped once the bound is
    /// below them.
    deferred: BTreeMap<u64, C>,
}

impl<C> Default for State<C> {
    fn default() -> Self {
        State {
            confirmed: BTreeMap::new(),
            pending: BTreeMap::new(),
            open: BTreeSet::new(),
            speculative: BTreeSet::new(),
            waiting: BTreeMap::new(),
            deferred: BTreeMap::new(),
        }
    }
}

impl<C> State<C> {
    /// Candidates below `k` that passed their first round: confirmed or
    /// awaiting confirmation.
    fn passed_below(&self, k: u64) -> usize {
        self.confirmed.range(..k).count() + self.pending.range(..k).count()
    }

    /// The lowest survivor whose verdict is still open.
    fn lowest_unresolved(&self) -> Option<u64> {
        let a = self.open.first().copied();
        let b = self.pending.keys().next().copied();
        match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (x, y) => x.or(y),
        }
    }

    /// Forgets speculative entries that are no longer above the lowest
    /// unresolved survivor (they were resolved before it).
    fn prune(&mut self) {
        match self.lowest_unresolved() {
            Some(low) => self.speculative.retain(|&i| i > low),
            None => self.speculative.clear(),
        }
    }
}

/// One worker's round in flight: the index it runs a round for (set under
/// the state lock when the round is handed out), and the flag that makes
/// the round give up — set when the search stops, or when the bound drops
/// below that index, so that a round whose verdict can no longer matter
/// stops within a few dozen multiplications instead of running to its end
/// (with many workers, the rounds in flight when the last prime is found
/// were a visible share of a search). One cache line each: a round reads
/// its flag every 64 bits of the exponent, and a neighbour's hand-offs must
/// not keep invalidating that line.
#[repr(align(64))]
struct Slot {
    index: AtomicU64,
    abandon: AtomicBool,
    /// The round handed out is a first round (written under the state
    /// lock, with `index`): only those are given up when a lower candidate
    /// passes its first round (see `Shared::first_verdict`).
    first: AtomicBool,
}

struct Shared<S: CandidateSource> {
    source: S,
    /// One per worker (see [`Slot`]).
    slots: Vec<Slot>,
    /// `source.first_round_lanes()` (1 to [`GROUP_MAX`]), asked once.
    lanes: usize,
    /// `source.rounds_at_once()` (at least 1), asked once.
    rounds_at_once: u32,
    /// First rounds that may be started above the lowest unresolved
    /// survivor (see `gate`), `lanes` per thread for a grouping source.
    window: usize,
    /// `source.limit()`, asked once: claims above it end the search.
    limit: u64,
    seed: Seed,
    count: usize,
    rounds: u32,
    next: AtomicU64,
    /// Index of the `count`-th lowest confirmed prime, or u64::MAX.
    bound: AtomicU64,
    /// Set once the bound is known (or the search stopped): every index
    /// not yet claimed lies above it, so a claim in progress may end at
    /// any index (the source's `next_viable` stops building its sieve).
    claims_over: AtomicBool,
    state: Mutex<State<S::Cand>>,
    /// Whether `state` has pending or deferred candidates (set by
    /// `settle` under the lock): when not, `help` has nothing to take and
    /// does not take the lock.
    queued: AtomicBool,
    /// How often the state lock was taken, and the calling thread
    /// notified (tests).
    #[cfg(test)]
    state_locks: AtomicU64,
    #[cfg(test)]
    caller_notifies: AtomicU64,
    stop: AtomicBool,
    panicked: AtomicBool,
    candidates: AtomicU64,
    survivors: AtomicU64,
    exponentiations: AtomicU64,
    /// `Stats::given_up_milli`.
    given_up_milli: AtomicU64,
    found: AtomicUsize,
    workers_left: Mutex<usize>,
    /// The calling thread waits on `caller_cv` for the workers and for
    /// found primes ([`Workers::Pool`]); else nobody does.
    caller_waits: bool,
    caller_cv: Condvar,
}

impl<S: CandidateSource> Shared<S> {
    fn new(
        source: S,
        seed: &Seed,
        first_index: u64,
        count: usize,
        threads: usize,
        caller_waits: bool,
    ) -> Self {
        let rounds = source.rounds();
        // A worker of a grouping source runs up to `lanes` first rounds
        // at once.
        let lanes = source.first_round_lanes().clamp(1, GROUP_MAX);
        let rounds_at_once = source.rounds_at_once().max(1);
        let limit = source.limit().min(MAX_INDEX);
        Shared {
            source,
            slots: (0..threads.max(1))
                .map(|_| Slot {
                    index: AtomicU64::new(u64::MAX),
                    abandon: AtomicBool::new(false),
                    first: AtomicBool::new(false),
                })
                .collect(),
            lanes,
            rounds_at_once,
            window: lanes
                * if threads <= 4 {
                    threads + 1
                } else {
                    threads - 1
                },
            limit,
            seed: seed.clone(),
            count,
            rounds,
            next: AtomicU64::new(first_index),
            bound: AtomicU64::new(u64::MAX),
            claims_over: AtomicBool::new(false),
            state: Mutex::new(State::default()),
            queued: AtomicBool::new(false),
            #[cfg(test)]
            state_locks: AtomicU64::new(0),
            #[cfg(test)]
            caller_notifies: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            panicked: AtomicBool::new(false),
            candidates: AtomicU64::new(0),
            survivors: AtomicU64::new(0),
            exponentiations: AtomicU64::new(0),
            given_up_milli: AtomicU64::new(0),
            found: AtomicUsize::new(0),
            workers_left: Mutex::new(threads),
            caller_waits,
            caller_cv: Condvar::new(),
        }
    }
}

/// Takes one of the search's locks. The coordination it opens may enter
/// the kernel through a futex — waiting for the lock, waking a waiting
/// worker or the caller under it, releasing it to a waiter — where the
/// thread's registers are seen at leisure (a debugger, a core dump,
/// another process's ptrace): so they are cleared first, and nothing of
/// the candidate the worker just built or tested (copies of its limbs
/// that GMP, glibc's memcpy and the IFMA code leave in vector registers)
/// goes there. Under the lock only indices, counters and pointers are
/// handled.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    crate::secure::clear_before_kernel();
    // A worker that panicked while holding the lock is reported separately;
    // the data itself stays consistent enough to wind down.
    match m.try_lock() {
        Ok(g) => g,
        Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => m.lock().unwrap_or_else(|p| p.into_inner()),
    }
}

impl<S: CandidateSource> Shared<S> {
    /// Takes the state lock (see [`lock`]).
    fn lock_state(&self) -> MutexGuard<'_, State<S::Cand>> {
        #[cfg(test)]
        self.state_locks.fetch_add(1, Ordering::Relaxed);
        lock(&self.state)
    }

    /// Runs a round handed out to `slot` (by `take_round` or the gate). A
    /// round given up (see [`Slot`]) has no verdict: it counts as failed,
    /// which changes nothing, since its index is above the bound (or the
    /// search stopped).
    fn run_round(&self, slot: &Slot, index: u64, round: u32, cand: &S::Cand) -> bool {
        crate::fault::point("search_round");
        let _stale = crate::work::take_given_up();
        let v = self
            .source
            .round(&self.seed, index, round, cand, &slot.abandon);
        self.count(v.exponentiations, 1);
        v.pass && !slot.abandon.load(Ordering::Acquire)
    }

    /// Runs candidate `k`'s first round, handed out to `slot`. Returns
    /// whether it passed and whether it was given up (then without a
    /// verdict).
    fn run_first(&self, slot: &Slot, k: u64, cand: &S::Cand) -> (bool, bool) {
        let pass = self.run_round(slot, k, 0, cand);
        (pass, slot.abandon.load(Ordering::Acquire))
    }

    /// Counts `exponentiations` started by a round or a group of them, and
    /// the part given up undone when the loop that ran last (on `lanes`
    /// numbers at once) stopped early ([`crate::work`]).
    fn count(&self, exponentiations: u32, lanes: u32) {
        self.exponentiations
            .fetch_add(u64::from(exponentiations), Ordering::Relaxed);
        if let Some(share) = crate::work::take_given_up() {
            let undone = f64::from(lanes.min(exponentiations)) * (1.0 - share);
            self.given_up_milli
                .fetch_add((undone * 1000.0).round() as u64, Ordering::Relaxed);
        }
    }

    /// Runs the `n` consecutive rounds from `round` handed out by
    /// `take_round`: together where the source can, else in turn (each
    /// only if the one before passed). Whether all passed.
    fn run_rounds(&self, slot: &Slot, index: u64, round: u32, n: u32, cand: &S::Cand) -> bool {
        if n >= 2 {
            crate::fault::point("search_round");
            let _stale = crate::work::take_given_up();
            if let Some(v) = self.source.rounds_together(
                &self.seed,
                index,
                round..round + n,
                cand,
                &slot.abandon,
            ) {
                debug_assert_eq!(v.len(), n as usize);
                self.count(v.iter().map(|v| v.exponentiations).sum(), n);
                return v.iter().all(|v| v.pass) && !slot.abandon.load(Ordering::Acquire);
            }
        }
        (round..round + n).all(|r| self.run_round(slot, index, r, cand))
    }

    /// Hands a round for `index` to `slot` (under the state lock): its
    /// first round when `first`, else a confirmation round.
    fn assign(slot: &Slot, index: u64, first: bool) {
        slot.abandon.store(false, Ordering::Relaxed);
        slot.first.store(first, Ordering::Relaxed);
        slot.index.store(index, Ordering::Relaxed);
    }

    /// Stops the search: every worker at its next check, every round in
    /// flight within a few dozen multiplications, every waiter now.
    fn halt(&self) {
        self.stop.store(true, Ordering::Release);
        self.claims_over.store(true, Ordering::Release);
        let st = self.lock_state();
        for slot in &self.slots {
            slot.abandon.store(true, Ordering::Release);
        }
        self.wake_all(&st);
    }

    /// Takes the lowest pending confirmation round that is certainly needed:
    /// a pending candidate's rounds are handed out only while fewer than
    /// `count` candidates below it are confirmed or unresolved, i.e. it is
    /// in the answer unless it fails itself. Otherwise its rounds would be
    /// speculative and wait until the lower ones are decided.
    ///
    /// For a source that runs rounds together
    /// ([`CandidateSource::rounds_at_once`]) a worker takes up to that many
    /// of one candidate's remaining rounds: a candidate that reaches its
    /// confirmation rounds is nearly always prime, so the rounds after a
    /// failing one are rarely wasted. Returns the index, the first round,
    /// how many and the candidate.
    fn take_round(
        &self,
        slot: &Slot,
        st: &mut State<S::Cand>,
    ) -> Option<(u64, u32, u32, Arc<S::Cand>)> {
        let needed = self.needed_pending(st);
        for (&idx, p) in st.pending.iter_mut().take(needed) {
            if p.next_round < self.rounds {
                let r = p.next_round;
                let n = self.rounds_at_once.min(self.rounds - r);
                p.next_round += n;
                Self::assign(slot, idx, false);
                return Some((idx, r, n, Arc::clone(&p.cand)));
            }
        }
        None
    }

    /// How many of the lowest pending candidates certainly need their
    /// rounds (see [`Shared::take_round`]): those at or below the bound
    /// with fewer than `count` candidates below them confirmed or
    /// unresolved. The condition only gets harder going up, so they are a
    /// prefix of `pending`.
    fn needed_pending(&self, st: &State<S::Cand>) -> usize {
        let bound = self.bound.load(Ordering::Acquire);
        st.pending
            .keys()
            .enumerate()
            .take_while(|&(pending_below, &idx)| {
                idx <= bound
                    && st.confirmed.range(..idx).count()
                        + st.open.range(..idx).count()
                        + pending_below
                        < self.count
            })
            .count()
    }

    /// Records the verdict of a confirmation round.
    /// (`n` of them run together: all passed, or not).
    fn finish_rounds(&self, index: u64, pass: bool, n: u32) {
        let mut st = self.lock_state();
        // Absent: another round already failed it, or the bound dropped it.
        let Some(p) = st.pending.get_mut(&index) else {
            return;
        };
        p.passed += if pass { n } else { 0 };
        if !pass || p.passed == self.rounds {
            let p = st.pending.remove(&index).expect("pending entry");
            if pass {
                self.confirm(&mut st, index, p.cand);
            }
        }
        self.settle(&mut st);
    }

    /// Gives up the rounds in flight on indices above `bound` (under the
    /// state lock, which hands rounds out): only first rounds when
    /// `first_only`.
    fn give_up_above(&self, bound: u64, first_only: bool) {
        for slot in &self.slots {
            if (!first_only || slot.first.load(Ordering::Relaxed))
                && slot.index.load(Ordering::Relaxed) > bound
            {
                slot.abandon.store(true, Ordering::Release);
            }
        }
    }

    fn confirm(&self, st: &mut State<S::Cand>, index: u64, cand: Arc<S::Cand>) {
        st.confirmed.insert(index, cand);
        if st.confirmed.len() >= self.count {
            let b = *st
                .confirmed
                .keys()
                .nth(self.count - 1)
                .expect("count entries");
            self.bound.fetch_min(b, Ordering::AcqRel);
            self.claims_over.store(true, Ordering::Release);
            // Drop pending candidates that can no longer matter, and give
            // up the rounds in flight above the bound.
            st.pending.retain(|&i, _| i < b);
            for i in st.deferred.split_off(&b).into_keys() {
                st.open.remove(&i);
            }
            self.give_up_above(b, false);
            // Waiters above the bound leave.
            self.wake_all(st);
        }
        self.found
            .store(st.confirmed.len().min(self.count), Ordering::Release);
        self.notify_caller();
    }

    /// Wakes the calling thread if it waits on `caller_cv` (only with
    /// [`Workers::Pool`]: otherwise it is a worker itself, and a
    /// notification would be a system call for nobody, made here under
    /// the state lock).
    fn notify_caller(&self) {
        if self.caller_waits {
            #[cfg(test)]
            self.caller_notifies.fetch_add(1, Ordering::Relaxed);
            let _g = lock(&self.workers_left);
            self.caller_cv.notify_all();
        }
    }

    /// After a state change, under the lock: unparks the waiters that may
    /// now go on — the one holding the lowest index (the next to leave the
    /// speculative window, or to learn that its index can no longer
    /// matter) and one more per confirmation round that may be taken now,
    /// lowest indices first — rather than all of them: with many more
    /// threads than cores, waking every waiter on every verdict cost more
    /// CPU in wake-ups and context switches than the search saved. A
    /// waiter that is not woken looks again after at most 20 ms. Nobody
    /// waiting (the common case at two threads) costs nothing.
    fn wake(&self, st: &State<S::Cand>) {
        if st.waiting.is_empty() {
            return;
        }
        let n = 1 + self.takeable_rounds(st) + usize::from(!st.deferred.is_empty());
        for t in st.waiting.values().take(n) {
            t.unpark();
        }
    }

    /// Unparks every waiter: the search stopped, or its bound dropped
    /// (waiters above it leave).
    fn wake_all(&self, st: &State<S::Cand>) {
        for t in st.waiting.values() {
            t.unpark();
        }
    }

    /// How many confirmation rounds [`Shared::take_round`] would hand out
    /// now.
    fn takeable_rounds(&self, st: &State<S::Cand>) -> usize {
        st.pending
            .values()
            .take(self.needed_pending(st))
            .map(|p| self.rounds.saturating_sub(p.next_round) as usize)
            .sum()
    }

    /// Runs one pending round if there is one; returns whether it did.
    /// Runs one pending round, or one deferred first round that is
    /// needed again, if there is one; returns whether it did.
    fn help(&self, slot: &Slot) -> bool {
        // Nothing pending or deferred: nothing to take, without the lock
        // (a worker that adds to either comes back here itself).
        if !self.queued.load(Ordering::Acquire) {
            return false;
        }
        let mut st = self.lock_state();
        if let Some((idx, r, n, cand)) = self.take_round(slot, &mut st) {
            drop(st);
            let pass = self.run_rounds(slot, idx, r, n, &cand);
            self.finish_rounds(idx, pass, n);
            return true;
        }
        if let Some((d, cand)) = self.take_deferred(slot, &mut st) {
            drop(st);
            self.rerun_first(slot, d, cand);
            return true;
        }
        false
    }

    /// The count-th lowest of the confirmed and pending candidates: with
    /// no failure among the pending, the answer's last index. First rounds
    /// above it are very likely wasted.
    fn provisional_bound(&self, st: &State<S::Cand>) -> Option<u64> {
        let mut keys: Vec<u64> = st
            .confirmed
            .keys()
            .chain(st.pending.keys())
            .copied()
            .collect();
        keys.sort_unstable();
        keys.get(self.count - 1).copied()
    }

    /// The lowest deferred candidate (see `State::deferred`) if it is
    /// needed again: fewer than `count` candidates below it are confirmed
    /// or pending, and it is not above the bound. Handed to `slot` as its
    /// first round.
    fn take_deferred(&self, slot: &Slot, st: &mut State<S::Cand>) -> Option<(u64, S::Cand)> {
        let (&d, _) = st.deferred.first_key_value()?;
        if d > self.bound.load(Ordering::Acquire) || st.passed_below(d) >= self.count {
            return None;
        }
        let cand = st.deferred.remove(&d).expect("deferred entry");
        if st.lowest_unresolved().is_some_and(|low| d > low) {
            st.speculative.insert(d);
        }
        Self::assign(slot, d, true);
        Some((d, cand))
    }

    /// Runs deferred candidate `d`'s first round again (handed out by
    /// `take_deferred`) and records its verdict.
    fn rerun_first(&self, slot: &Slot, d: u64, cand: S::Cand) {
        let (pass, given_up) = self.run_first(slot, d, &cand);
        self.first_verdict(d, cand, pass, given_up, &mut Integer::new());
    }

    /// Before the first exponentiation on candidate `k`: returns false if
    /// `k` can no longer be in the answer; waits (helping) while `count`
    /// lower candidates are confirmed or awaiting confirmation, or while
    /// `window` first rounds above the lowest unresolved survivor have
    /// already been started. The second rule bounds the speculative work
    /// whatever the scheduling (a preempted thread holding a low index
    /// cannot let the others race ahead): if the lowest unresolved survivor
    /// turns out to complete the answer, at most `window` first rounds
    /// above it were spent.
    ///
    /// `window` is `threads − 1` (the other threads' rounds in flight),
    /// plus two rounds of slack up to 4 threads: without them a thread
    /// whose speculative round ends before the lowest one must idle, and at
    /// 2 threads that cost 2.4% of thread time (0.35% with one round of
    /// slack, DH-2048). From 5 threads on an idle thread costs at most a
    /// fifth of the capacity for a moment, and the bound stays
    /// `threads − 1`. For a source that groups first rounds (see `partner`)
    /// the window is `lanes` times that: a thread in flight holds a group.
    /// The second round of slack is for groups: finished rounds stay in the window
    /// until the lowest is decided, and with one round of slack a thread
    /// could run only one more pair while the other ran a longer one (a
    /// DH candidate whose q passed runs the test on p as well), then ran
    /// its next candidate alone — 7 % of DH-1024's first rounds at two
    /// threads, each costing 1.0 instead of a pair's 0.6.
    /// On success `k` is registered as running.
    fn gate(&self, slot: &Slot, k: u64) -> bool {
        loop {
            let mut st = self.lock_state();
            st.open.insert(k);
            st.waiting.remove(&k);
            if self.stop.load(Ordering::Relaxed) {
                st.open.remove(&k);
                return false;
            }
            let confirmed_below = st.confirmed.range(..k).count();
            if confirmed_below >= self.count {
                st.open.remove(&k);
                self.settle(&mut st);
                return false;
            }
            // `k` is open, so the lowest unresolved index is at most `k`.
            let low = st.lowest_unresolved().unwrap_or(k);
            let within_window = k <= low || st.speculative.range(low + 1..).count() < self.window;
            if st.passed_below(k) < self.count && within_window {
                if k > low {
                    st.speculative.insert(k);
                }
                Self::assign(slot, k, true);
                return true;
            }
            // k would be speculative: help confirm the lower ones, or wait.
            if let Some((idx, r, n, cand)) = self.take_round(slot, &mut st) {
                drop(st);
                let pass = self.run_rounds(slot, idx, r, n, &cand);
                self.finish_rounds(idx, pass, n);
            } else if let Some((d, cand)) = self.take_deferred(slot, &mut st) {
                drop(st);
                self.rerun_first(slot, d, cand);
            } else {
                st.waiting.insert(k, std::thread::current());
                drop(st);
                // Parked with nothing of its rounds in the registers.
                crate::secure::signals::released(|| {
                    std::thread::park_timeout(Duration::from_millis(20))
                });
            }
        }
    }

    /// Builds claimed candidate `k`; `None` when the source's cheap tests
    /// reject it (it was never registered as open: nothing to undo).
    fn build(&self, k: u64, scratch: &mut Integer) -> Option<S::Cand> {
        let cand = self.source.candidate(&self.seed, k, scratch);
        if cand.is_some() {
            self.survivors.fetch_add(1, Ordering::Relaxed);
        }
        cand
    }

    /// Records candidate `k`'s first-round verdict: pending confirmation
    /// (or confirmed, for a one-round source), or failed. A round
    /// `given_up` has no verdict: `k` fails if it can no longer matter
    /// (the search stopped, or `k` is above the bound), else it is
    /// deferred (see `State::deferred`).
    ///
    /// A pass that completes the answer provisionally — `count`
    /// candidates at or below it confirmed or pending, almost always the
    /// answer, since a candidate that passed its first round is nearly
    /// always prime — gives up the first rounds in flight above it at once
    /// rather than when the last of its confirmation rounds ends: with
    /// many threads those rounds ran to their end meanwhile: about 2 % of
    /// a two-thread RSA-2048 search's round time, 10 % at 16 threads on
    /// two cores.
    fn first_verdict(
        &self,
        k: u64,
        cand: S::Cand,
        pass: bool,
        given_up: bool,
        scratch: &mut Integer,
    ) {
        let mut st = self.lock_state();
        self.record_first(&mut st, k, cand, pass, given_up, scratch);
        self.settle(&mut st);
    }

    /// [`Shared::first_verdict`] for a group's candidates, under one
    /// taking of the lock.
    fn first_verdicts(&self, verdicts: Vec<(u64, S::Cand, bool, bool)>, scratch: &mut [Integer]) {
        let mut st = self.lock_state();
        for ((k, cand, pass, given_up), s) in verdicts.into_iter().zip(scratch.iter_mut()) {
            self.record_first(&mut st, k, cand, pass, given_up, s);
        }
        self.settle(&mut st);
    }

    /// Records one first-round verdict (see [`Shared::first_verdict`])
    /// under the lock.
    fn record_first(
        &self,
        st: &mut State<S::Cand>,
        k: u64,
        cand: S::Cand,
        pass: bool,
        given_up: bool,
        scratch: &mut Integer,
    ) {
        if given_up && !self.stop.load(Ordering::Relaxed) && k <= self.bound.load(Ordering::Acquire)
        {
            st.speculative.remove(&k);
            st.deferred.insert(k, cand);
            return;
        }
        st.open.remove(&k);
        if pass {
            let cand = Arc::new(cand);
            if self.rounds <= 1 {
                self.confirm(st, k, cand);
            } else {
                st.pending.insert(
                    k,
                    Pending {
                        cand,
                        next_round: 1,
                        passed: 1,
                    },
                );
                if let Some(p) = self.provisional_bound(st) {
                    self.give_up_above(p, true);
                }
            }
        } else {
            self.source.recycle(cand, scratch);
        }
    }

    /// After a change of the state, before the lock is released: forgets
    /// what is resolved, notes whether `help` may find work, and wakes the
    /// waiters that may go on.
    fn settle(&self, st: &mut State<S::Cand>) {
        st.prune();
        self.queued.store(
            !st.pending.is_empty() || !st.deferred.is_empty(),
            Ordering::Release,
        );
        self.wake(st);
    }

    /// For a worker whose candidate `k` passed the gate, with a source
    /// that groups first rounds
    /// ([`first_round_lanes`](CandidateSource::first_round_lanes) above
    /// 1): claims and builds the next candidate as a partner of `k` (and of
    /// the partners it has). It may run with them ([`Partner::Now`]) on the
    /// gate's terms: fewer than `count` candidates below it confirmed or
    /// pending, and room in the window (`lanes` times the one-at-a-time
    /// window: in time, since a group of L costs about 0.5 to 0.6 of L
    /// rounds in turn, the speculative work stays within about 0.6·L
    /// rounds per thread). Otherwise it goes through the gate after the
    /// group ([`Partner::Later`]). Never blocks: the worker holds `k`,
    /// which may be the lowest unresolved candidate.
    fn partner(&self, scratch: &mut Integer) -> Partner<S::Cand> {
        // The next claimed index the cheap tests keep.
        let (k2, cand) = loop {
            let k2 = self.claim();
            if k2 > self.bound.load(Ordering::Acquire)
                || k2 > self.limit
                || self.stop.load(Ordering::Relaxed)
            {
                return Partner::None;
            }
            if let Some(cand) = self.build(k2, scratch) {
                break (k2, cand);
            }
        };
        let mut st = self.lock_state();
        st.open.insert(k2);
        let below = st.passed_below(k2);
        // The worker's own candidate is open and below k2.
        let low = st.lowest_unresolved().unwrap_or(k2);
        let within_window = st.speculative.range(low + 1..).count() < self.window;
        if below < self.count && within_window && !self.stop.load(Ordering::Relaxed) {
            st.speculative.insert(k2);
            Partner::Now(k2, cand)
        } else {
            Partner::Later(k2, cand)
        }
    }

    fn test_candidate(&self, slot: &Slot, k: u64, scratch: &mut [Integer; GROUP_MAX]) {
        let Some(cand) = self.build(k, &mut scratch[0]) else {
            return;
        };
        if !self.gate(slot, k) {
            self.source.recycle(cand, &mut scratch[0]);
            return;
        }
        // The group: k and the partners that may run with it, in claim
        // order; a partner that must wait runs after the group, alone.
        let mut group = vec![(k, cand)];
        let mut later = None;
        while group.len() < self.lanes {
            match self.partner(&mut scratch[group.len()]) {
                Partner::Now(k2, cand2) => group.push((k2, cand2)),
                Partner::Later(k2, cand2) => {
                    later = Some((k2, cand2));
                    break;
                }
                Partner::None => break,
            }
        }
        let verdicts: Vec<(bool, bool)> = if group.len() == 1 {
            vec![self.run_first(slot, k, &group[0].1)]
        } else {
            crate::fault::point("search_round");
            let _stale = crate::work::take_given_up();
            let index: Vec<u64> = group.iter().map(|g| g.0).collect();
            let cands: Vec<&S::Cand> = group.iter().map(|g| &g.1).collect();
            // The slot holds k, the lowest: the group gives up only when
            // all of it is above the bound.
            match self
                .source
                .first_round_group(&self.seed, &index, &cands, &slot.abandon)
                .filter(|v| v.len() == group.len())
            {
                Some(v) => {
                    let exps = v.iter().map(|v| v.exponentiations).sum();
                    self.count(exps, v.len() as u32);
                    let given_up = slot.abandon.load(Ordering::Acquire);
                    v.iter().map(|v| (v.pass && !given_up, given_up)).collect()
                }
                None => group
                    .iter()
                    .map(|(k, cand)| self.run_first(slot, *k, cand))
                    .collect(),
            }
        };
        let later_scratch = group.len();
        self.first_verdicts(
            group
                .into_iter()
                .zip(verdicts)
                .map(|((k, cand), (pass, given_up))| (k, cand, pass, given_up))
                .collect(),
            scratch,
        );
        if let Some((k2, cand2)) = later {
            let s = &mut scratch[later_scratch];
            if self.gate(slot, k2) {
                let (pass, given_up) = self.run_first(slot, k2, &cand2);
                self.first_verdict(k2, cand2, pass, given_up, s);
            } else {
                self.source.recycle(cand2, s);
            }
        }
    }

    /// Claims the next viable index: every index below it is claimed (the
    /// skipped ones are rejected by the source's sieve without a test), so
    /// the claim order is the index order, as the contract needs. Without
    /// the state lock: a claim is registered as open only once its
    /// candidate survives the cheap tests (see `State::open`), so the many
    /// candidates those tests reject never touch the lock.
    fn claim(&self) -> u64 {
        loop {
            let cur = self.next.load(Ordering::Acquire);
            let v = if cur > self.limit {
                cur
            } else {
                self.source.next_viable(cur, &self.claims_over).max(cur)
            };
            if self
                .next
                .compare_exchange(
                    cur,
                    v.saturating_add(1),
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_ok()
            {
                self.candidates
                    .fetch_add(v.saturating_sub(cur).saturating_add(1), Ordering::Relaxed);
                return v;
            }
        }
    }

    /// Worker number `i`'s loop (its [`Slot`] is `slots[i]`).
    fn worker(&self, i: usize) {
        let mut scratch = std::array::from_fn(|_| Integer::new());
        let slot = &self.slots[i];
        while self.step(slot, &mut scratch) {}
    }

    /// One turn of a worker: the pending rounds it can take, then one
    /// claimed candidate brought to its verdict. Returns false when there
    /// is nothing left to claim (or the search stopped); the claimed index
    /// is always resolved before returning, so any thread may take turns.
    fn step(&self, slot: &Slot, scratch: &mut [Integer; GROUP_MAX]) -> bool {
        while self.help(slot) {
            if self.stop.load(Ordering::Relaxed) {
                return false;
            }
        }
        if self.stop.load(Ordering::Relaxed) {
            return false;
        }
        let k = self.claim();
        if k > self.bound.load(Ordering::Acquire)
            || k > self.limit
            || self.stop.load(Ordering::Relaxed)
        {
            // Every lower index is claimed; pending rounds below the
            // bound are taken by whoever is still running.
            while self.help(slot) {}
            return false;
        }
        self.test_candidate(slot, k, scratch);
        true
    }
}

/// One generation's use of the engine: its private pool, its seed, the
/// caller's options (progress and cancel) and the work counters of the
/// searches so far. A generation runs one search per distinct prime size
/// through [`Generation::search`]; progress reports count the primes of all
/// of them.
pub(crate) struct Generation<'g, 'o> {
    workers: &'g Workers,
    seed: Seed,
    opts: &'g mut Options<'o>,
    stats: Stats,
    primes_found: usize,
    primes_needed: usize,
    /// The last search's takings of its state lock and notifications of
    /// the calling thread (tests).
    #[cfg(test)]
    last_coordination: (u64, u64),
}

impl<'g, 'o> Generation<'g, 'o> {
    /// A generation on `workers` (a pool is built once per generation,
    /// see [`crate::threads::build_pool`]: building one costs about 100 µs
    /// and it is shared by the searches and the work after them) that
    /// needs `primes_needed` primes in all.
    pub(crate) fn new(
        workers: &'g Workers,
        seed: Seed,
        opts: &'g mut Options<'o>,
        primes_needed: usize,
    ) -> Self {
        Generation {
            workers,
            seed,
            opts,
            stats: Stats::default(),
            primes_found: 0,
            primes_needed,
            #[cfg(test)]
            last_coordination: (0, 0),
        }
    }

    /// The work counters of every search so far.
    pub(crate) fn stats(&self) -> Stats {
        self.stats
    }

    /// Takes `n` primes back from the progress's count: candidates a
    /// search found that are not primes of the answer yet (their
    /// confirmation rounds run after it, `rsa::confirm`).
    pub(crate) fn withdraw_found(&mut self, n: usize) {
        self.primes_found = self.primes_found.saturating_sub(n);
    }

    /// Finds the `count` lowest-numbered primes of `source`'s candidate
    /// sequence, numbering from `first_index`, one worker per pool thread.
    /// The result does not depend on the thread count (see the module
    /// docs). With a pool the calling thread only reports progress; with
    /// [`Workers::Here`] it is the one worker ([`Generation::work_here`]).
    pub(crate) fn search<S: CandidateSource>(
        &mut self,
        source: S,
        first_index: u64,
        count: usize,
    ) -> Result<Vec<Found>> {
        assert!(count >= 1);
        let shared = Arc::new(Shared::new(
            source,
            &self.seed,
            first_index,
            count,
            self.workers.threads(),
            matches!(self.workers, Workers::Pool(_)),
        ));
        let started = Instant::now();
        // Starting the workers wakes the pool's sleeping threads with a
        // system call: not with the caller's registers still holding what
        // it did last (the primes of a previous search, collected just
        // before).
        crate::secure::clear_before_kernel();
        let outcome = match self.workers {
            Workers::Pool(pool) => {
                spawn_workers(&shared, pool);
                let outcome = self.report_until_done(&shared, started);
                if outcome.is_err() {
                    // Cancelled: the workers stop at their next check.
                    // The pool is not handed back (parked for the next
                    // generation) while one of them still holds a
                    // candidate of this one.
                    wait_for_workers(&shared);
                }
                outcome
            }
            Workers::Here => self.work_here(&shared, started),
            Workers::WithCaller(pool) => self.work_with(&shared, pool, started),
        };
        self.stats.add(&snapshot_stats(&shared, started));
        #[cfg(test)]
        {
            self.last_coordination = (
                shared.state_locks.load(Ordering::Relaxed),
                shared.caller_notifies.load(Ordering::Relaxed),
            );
        }
        outcome?;
        let found = collect(&shared)?;
        self.primes_found += found.len();
        Ok(found)
    }

    /// Runs `jobs` on the generation's workers — in parallel when there
    /// are several, on the calling thread only where it is a worker itself
    /// on its private stack ([`Workers::WithCaller`], which is wiped as a
    /// whole afterwards), a pool thread wiping the stack below each job
    /// when done —, adds the work each job counted to the counters and
    /// the `found` primes to the progress, and reports progress once on
    /// the calling thread (which may cancel). For work too short to be
    /// worth the engine's hand-offs between the caller and the workers
    /// (the small levels of a provable prime's chain, with
    /// [`search_here`]); nothing is reported while the jobs run.
    pub(crate) fn run_on_workers<R: Send>(
        &mut self,
        jobs: Vec<WorkerJob<'_, R>>,
        found: usize,
    ) -> Result<Vec<R>> {
        use rayon::prelude::*;
        let started = Instant::now();
        let seed = &self.seed;
        let run = |job: WorkerJob<'_, R>| {
            let mut stats = Stats::default();
            (job(seed, &mut stats), stats)
        };
        // The jobs on the pool's threads, each wiping the stack below it.
        let on_pool = |pool: &rayon::ThreadPool, jobs: Vec<WorkerJob<'_, R>>| {
            pool.install(|| {
                jobs.into_par_iter()
                    .map(|job| crate::secure::with_wiped_stack(|| run(job)))
                    .collect::<Vec<_>>()
            })
        };
        let outcome =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match self.workers {
                // The calling thread only waits, registers cleared.
                Workers::Pool(pool) => crate::secure::signals::released(|| on_pool(pool, jobs)),
                // The calling thread, on its private stack (wiped as a
                // whole afterwards), runs the first job and the pool the
                // others, so that two jobs on two threads take one job's
                // time; it waits for them with signals held (they are let
                // through for the progress callback only, on its own
                // stack), registers cleared. A single job goes to the pool.
                Workers::WithCaller(pool) if jobs.len() > 1 => {
                    let mut theirs = jobs;
                    let first = theirs.remove(0);
                    let mut others = None;
                    let mut mine = None;
                    crate::secure::clear_before_kernel();
                    pool.in_place_scope(|scope| {
                        let others = &mut others;
                        scope.spawn(move |_| *others = Some(on_pool(pool, theirs)));
                        mine = Some(run(first));
                        crate::secure::clear_before_kernel();
                    });
                    mine.into_iter().chain(others.unwrap_or_default()).collect()
                }
                Workers::WithCaller(pool) => {
                    crate::secure::clear_before_kernel();
                    on_pool(pool, jobs)
                }
                // On the private stack, which is wiped as a whole afterwards.
                Workers::Here => jobs.into_iter().map(run).collect(),
            }));
        let results = outcome.map_err(|_| Error::Internal)?;
        let mut out = Vec::with_capacity(results.len());
        for (r, stats) in results {
            self.stats.add(&Stats {
                elapsed: Duration::ZERO,
                ..stats
            });
            out.push(r?);
        }
        self.stats.elapsed += started.elapsed();
        self.primes_found += found;
        let event = Progress {
            candidates: self.stats.candidates,
            survivors: self.stats.survivors,
            exponentiations: self.stats.exponentiations,
            elapsed: self.stats.elapsed,
            primes_found: self.primes_found,
            primes_needed: self.primes_needed,
        };
        if let Some(cb) = self.opts.progress.as_mut() {
            if crate::secure::signals::released(|| cb(&event)) {
                return Err(Error::Cancelled);
            }
        }
        Ok(out)
    }

    /// The progress so far: the searches before this one and `shared`'s.
    fn event<S: CandidateSource>(&self, shared: &Shared<S>, started: Instant) -> Progress {
        Progress {
            candidates: self.stats.candidates + shared.candidates.load(Ordering::Relaxed),
            survivors: self.stats.survivors + shared.survivors.load(Ordering::Relaxed),
            exponentiations: self.stats.exponentiations
                + shared.exponentiations.load(Ordering::Relaxed),
            elapsed: self.stats.elapsed + started.elapsed(),
            primes_found: self.primes_found + shared.found.load(Ordering::Acquire),
            primes_needed: self.primes_needed,
        }
    }

    /// Reports the progress so far to the caller's callback; if it
    /// cancels, stops the search's workers (at their next check) and
    /// returns `Cancelled`.
    fn report<S: CandidateSource>(&mut self, shared: &Shared<S>, started: Instant) -> Result<()> {
        let event = self.event(shared, started);
        if let Some(cb) = self.opts.progress.as_mut() {
            if crate::secure::signals::released(|| cb(&event)) {
                shared.halt();
                return Err(Error::Cancelled);
            }
        }
        Ok(())
    }

    /// The caller's interval between progress reports.
    fn interval(&self) -> Duration {
        self.opts
            .progress_interval
            .unwrap_or(PROGRESS_INTERVAL)
            .clamp(Duration::from_millis(1), Duration::from_secs(1))
    }

    /// The search with the calling thread as its one worker
    /// ([`Workers::Here`]): turns of the worker loop, reporting progress
    /// between them when a prime was found or `interval` has passed, and
    /// once at the end, as [`Generation::report_until_done`] does. A turn
    /// is the pending confirmation rounds and one candidate, so reports
    /// come at most that far apart (RSA-4096 on one thread: a few tens of
    /// ms). A panic in the search is `Internal`.
    fn work_here<S: CandidateSource>(
        &mut self,
        shared: &Shared<S>,
        started: Instant,
    ) -> Result<()> {
        self.turns_here(shared, started, true)
    }

    /// Turns of worker 0 on the calling thread with reports between them
    /// ([`Generation::work_here`]); the report after the last turn only
    /// when `final_report`.
    fn turns_here<S: CandidateSource>(
        &mut self,
        shared: &Shared<S>,
        started: Instant,
        final_report: bool,
    ) -> Result<()> {
        let interval = self.interval();
        let mut scratch = std::array::from_fn(|_| Integer::new());
        let mut last = Instant::now();
        let mut found = 0;
        loop {
            let more = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                shared.step(&shared.slots[0], &mut scratch)
            }))
            .map_err(|_| Error::Internal)?;
            let now_found = shared.found.load(Ordering::Acquire);
            if more && now_found == found && last.elapsed() < interval {
                continue;
            }
            if !more && !final_report {
                return Ok(());
            }
            found = now_found;
            self.report(shared, started)?;
            if !more {
                return Ok(());
            }
            last = Instant::now();
        }
    }

    /// The search with the calling thread as worker 0 and the pool's
    /// threads as the others ([`Workers::WithCaller`]): the caller takes
    /// turns and reports between them as [`Generation::work_here`] does,
    /// then waits (signals held: it is on its private stack) for the
    /// workers' last rounds, and reports once more when all are done. A
    /// two-thread generation so wakes one thread, and its calling thread
    /// keeps its core instead of sleeping while a third thread runs.
    fn work_with<S: CandidateSource>(
        &mut self,
        shared: &Arc<Shared<S>>,
        pool: &rayon::ThreadPool,
        started: Instant,
    ) -> Result<()> {
        let mut outcome = Ok(());
        pool.in_place_scope(|s| {
            for i in 1..=pool.current_num_threads() {
                let sh = Arc::clone(shared);
                s.spawn(move |_| run_worker(&sh, i));
            }
            outcome = self.turns_here(shared, started, false);
            // The scope now waits for the pool's workers, in the kernel
            // if they are not done: with nothing of this thread's last
            // candidate in its registers.
            crate::secure::clear_before_kernel();
            if outcome.is_err() {
                // Cancelled or panicked: the workers stop at their next
                // check, and the scope waits for them.
                shared.halt();
            }
        });
        outcome?;
        if shared.panicked.load(Ordering::Acquire) {
            return Err(Error::Internal);
        }
        self.report(shared, started)
    }

    /// Waits on the calling thread, reporting progress on every wake-up
    /// (every `opts.progress_interval`, default [`PROGRESS_INTERVAL`], when
    /// a prime is found, and once when
    /// the workers are done: they may finish before this thread is first
    /// scheduled, and the final primes must still be reported — and may
    /// still be refused). A cancel stops the workers at their next check
    /// (at most one round away); they are joined with the pool.
    fn report_until_done<S: CandidateSource>(
        &mut self,
        shared: &Shared<S>,
        started: Instant,
    ) -> Result<()> {
        let interval = self.interval();
        loop {
            let left = {
                let g = lock(&shared.workers_left);
                if *g == 0 {
                    0
                } else {
                    let (g, _) = crate::secure::signals::released(|| {
                        shared
                            .caller_cv
                            .wait_timeout(g, interval)
                            .unwrap_or_else(|p| p.into_inner())
                    });
                    *g
                }
            };
            self.report(shared, started)?;
            if left == 0 {
                return Ok(());
            }
        }
    }
}

/// A job for [`Generation::run_on_workers`]: it gets the generation's
/// seed and counts its work.
pub(crate) type WorkerJob<'a, R> = Box<dyn FnOnce(&Seed, &mut Stats) -> Result<R> + Send + 'a>;

/// The lowest-numbered prime of `source` from `first_index`, found on the
/// current thread one index at a time: the answer [`Generation::search`]
/// gives for a count of 1 (its definition does not involve threads), for
/// searches of microseconds. Counts into `stats` as the engine counts.
pub(crate) fn search_here<S: CandidateSource>(
    source: &S,
    seed: &Seed,
    first_index: u64,
    stats: &mut Stats,
) -> Result<Found> {
    let never = AtomicBool::new(false);
    let mut scratch = Integer::new();
    let mut k = first_index;
    loop {
        let v = source.next_viable(k, &never);
        if v > source.limit().min(MAX_INDEX) {
            return Err(Error::Internal);
        }
        stats.candidates += v - k + 1;
        k = v;
        if let Some(cand) = source.candidate(seed, k, &mut scratch) {
            stats.survivors += 1;
            let mut pass = true;
            for round in 0..source.rounds() {
                let verdict = source.round(seed, k, round, &cand, &never);
                stats.exponentiations += u64::from(verdict.exponentiations);
                if !verdict.pass {
                    pass = false;
                    break;
                }
            }
            if pass {
                return Ok(Found {
                    index: k,
                    prime: source.prime(&cand),
                });
            }
            source.recycle(cand, &mut scratch);
        }
        k += 1;
    }
}

/// Starts one worker per pool thread. Each resolves claimed indices until
/// nothing is left, wipes its stack, and reports a panic as a stop.
fn spawn_workers<S: CandidateSource>(shared: &Arc<Shared<S>>, pool: &rayon::ThreadPool) {
    for i in 0..pool.current_num_threads() {
        let sh = Arc::clone(shared);
        pool.spawn(move || run_worker(&sh, i));
    }
}

/// Worker `i`'s job in a search on a pool thread: its turns, then the
/// stack wipe, then the count of workers left.
fn run_worker<S: CandidateSource>(sh: &Shared<S>, i: usize) {
    let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| sh.worker(i))).is_ok();
    // GMP's stack temporaries (candidates, powers) and stream states die
    // with the worker's frames; wipe them before the thread takes other
    // work.
    crate::secure::wipe_stack();
    if !ok {
        sh.panicked.store(true, Ordering::Release);
        sh.halt();
    }
    *lock(&sh.workers_left) -= 1;
    sh.notify_caller();
}

/// Waits until every worker of `shared` has ended its job (wiped its
/// stack and registers), the caller's registers cleared and its signals
/// let through meanwhile.
fn wait_for_workers<S: CandidateSource>(shared: &Shared<S>) {
    crate::secure::signals::released(|| {
        let mut left = lock(&shared.workers_left);
        while *left > 0 {
            left = shared
                .caller_cv
                .wait(left)
                .unwrap_or_else(|p| p.into_inner());
        }
    });
}

/// The answer once every worker has stopped: the `count` lowest confirmed
/// candidates, as primes.
fn collect<S: CandidateSource>(shared: &Shared<S>) -> Result<Vec<Found>> {
    if shared.panicked.load(Ordering::Acquire) {
        return Err(Error::Internal);
    }
    let mut st = lock(&shared.state);
    let confirmed = std::mem::take(&mut st.confirmed);
    drop(st);
    // Fewer only when the claims ran past the source's last index.
    if confirmed.len() < shared.count && shared.next.load(Ordering::Acquire) <= shared.limit {
        return Err(Error::Internal);
    }
    Ok(confirmed
        .into_iter()
        .take(shared.count)
        .map(|(index, cand)| Found {
            index,
            prime: shared.source.prime(&cand),
        })
        .collect())
}

fn snapshot_stats<S: CandidateSource>(sh: &Shared<S>, started: Instant) -> Stats {
    Stats {
        candidates: sh.candidates.load(Ordering::Relaxed),
        survivors: sh.survivors.load(Ordering::Relaxed),
        exponentiations: sh.exponentiations.load(Ordering::Relaxed),
        given_up_milli: sh.given_up_milli.load(Ordering::Relaxed),
        elapsed: started.elapsed(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A group's bases drawn from one stream are each round's base drawn
    /// alone (its own stream, set to the round's block), at sizes whose
    /// blocks leave one or two words between rounds' draws, for groups
    /// starting at any round, secret and public.
    #[test]
    fn a_groups_bases_are_each_rounds_base() {
        let seed = Seed::from_bytes(&[0x5a; 32]).unwrap();
        for bits in [256u32, 512, 1000, 1024, 1030, 1536, 2048] {
            let n = Integer::from(Integer::ONE << (bits - 1)) + 0x1_0001u32;
            let cand = MrCandidate::new(n);
            let width = Integer::from(&cand.n - 3u32);
            let wpr = (cand.n.significant_bits() as u128 + 64).div_ceil(32) + 2;
            for secret in [true, false] {
                for rounds in [0..1, 0..5, 2..7, 3..4, 1..9] {
                    let alone: Vec<Integer> = rounds
                        .clone()
                        .map(|r| {
                            let mut b = Integer::new();
                            seed.with_stream(Purpose::MillerRabinBase, 77, |rng| {
                                rng.set_word_pos(wpr * r as u128);
                                random_in_range(rng, &Integer::from(2u32), &width, &mut b);
                            });
                            b
                        })
                        .collect();
                    let group = mr_bases(&seed, 77, rounds.clone(), &cand.n, secret);
                    assert_eq!(
                        group, alone,
                        "{bits} bits, rounds {rounds:?}, secret {secret}"
                    );
                }
            }
        }
    }

    /// A toy source: candidate `i` survives the cheap tests when `i % 3 == 0`,
    /// is "prime" when `i % 7 == 0`; round `r` reports `r + 1`
    /// exponentiations, and the source tallies what it reported itself.
    struct Toy {
        reported: Arc<AtomicU64>,
        /// `first_round_lanes()`, and whether `first_round_group` runs a
        /// group (else it declines and the engine runs them in turn).
        lanes: (usize, bool),
        /// Groups run: their indices.
        grouped: Arc<Mutex<Vec<Vec<u64>>>>,
        /// `rounds_at_once()`, and whether `rounds_together` runs them.
        together: (u32, bool),
        /// Rounds run together: (index, first round, how many).
        ran_together: Arc<Mutex<Vec<(u64, u32, u32)>>>,
    }

    impl Toy {
        fn new(lanes: (usize, bool)) -> Toy {
            Toy {
                reported: Arc::new(AtomicU64::new(0)),
                lanes,
                grouped: Arc::new(Mutex::new(Vec::new())),
                together: (1, false),
                ran_together: Arc::new(Mutex::new(Vec::new())),
            }
        }
    }

    impl CandidateSource for Toy {
        type Cand = u64;
        fn candidate(&self, _: &Seed, index: u64, _: &mut Integer) -> Option<u64> {
            (index % 3 == 0).then_some(index)
        }
        fn rounds(&self) -> u32 {
            4
        }
        fn round(&self, _: &Seed, _: u64, round: u32, c: &u64, _: &AtomicBool) -> Verdict {
            let v = Verdict {
                pass: c % 7 == 0,
                exponentiations: round + 1,
            };
            self.reported
                .fetch_add(u64::from(v.exponentiations), Ordering::Relaxed);
            v
        }
        fn prime(&self, c: &u64) -> Integer {
            Integer::from(*c)
        }
        fn first_round_lanes(&self) -> usize {
            self.lanes.0
        }
        fn first_round_group(
            &self,
            seed: &Seed,
            index: &[u64],
            c: &[&u64],
            stop: &AtomicBool,
        ) -> Option<Vec<Verdict>> {
            assert!((2..=self.lanes.0).contains(&index.len()));
            assert_eq!(index.len(), c.len());
            if !self.lanes.1 {
                return None;
            }
            lock(&self.grouped).push(index.to_vec());
            Some(
                index
                    .iter()
                    .zip(c)
                    .map(|(&i, c)| self.round(seed, i, 0, c, stop))
                    .collect(),
            )
        }
        fn rounds_at_once(&self) -> u32 {
            self.together.0
        }
        fn rounds_together(
            &self,
            seed: &Seed,
            index: u64,
            rounds: std::ops::Range<u32>,
            c: &u64,
            stop: &AtomicBool,
        ) -> Option<Vec<Verdict>> {
            let n = rounds.len() as u32;
            assert!(n >= 2 && n <= self.together.0, "{rounds:?}");
            if !self.together.1 {
                return None;
            }
            lock(&self.ran_together).push((index, rounds.start, n));
            Some(
                rounds
                    .map(|r| self.round(seed, index, r, c, stop))
                    .collect(),
            )
        }
    }

    /// Candidate 3 is the prime (its round takes 50 ms); rounds on 0–2
    /// fail at once; rounds above 3 run until they are told to give up (or
    /// 10 s pass), and tell whether they were.
    struct Stubborn {
        given_up: Arc<AtomicU64>,
        timed_out: Arc<AtomicU64>,
    }

    impl CandidateSource for Stubborn {
        type Cand = u64;
        fn candidate(&self, _: &Seed, index: u64, _: &mut Integer) -> Option<u64> {
            Some(index)
        }
        fn rounds(&self) -> u32 {
            1
        }
        fn round(&self, _: &Seed, _: u64, _: u32, c: &u64, stop: &AtomicBool) -> Verdict {
            if *c > 3 {
                let t = Instant::now();
                while !stop.load(Ordering::Acquire) {
                    if t.elapsed() > Duration::from_secs(10) {
                        self.timed_out.fetch_add(1, Ordering::Relaxed);
                        return Verdict::one(true);
                    }
                    std::thread::yield_now();
                }
                self.given_up.fetch_add(1, Ordering::Relaxed);
                // Any verdict: the engine must discard it.
                return Verdict::one(true);
            }
            if *c == 3 {
                // Long enough for the other workers to start rounds above.
                std::thread::sleep(Duration::from_millis(50));
            }
            Verdict::one(*c == 3)
        }
        fn prime(&self, c: &u64) -> Integer {
            Integer::from(*c)
        }
    }

    /// Searches `make(counters)`'s source for one prime on `threads`
    /// workers and checks that the answer is 3, that the source gave up
    /// work above it (`given_up` > 0) rather than running it out (no
    /// `timed_out`), and that the search ended well before the 10 s a
    /// source runs out in.
    fn ends_promptly<S: CandidateSource>(threads: u32, make: impl FnOnce(Stubborn) -> S) {
        let pool = Workers::for_test(threads);
        let seed = Seed::from_bytes(&[7u8; 32]).unwrap();
        let mut opts = Options::default();
        let mut generation = Generation::new(&pool, seed, &mut opts, 1);
        let (given_up, timed_out) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let src = make(Stubborn {
            given_up: Arc::clone(&given_up),
            timed_out: Arc::clone(&timed_out),
        });
        let t = Instant::now();
        let found = generation.search(src, 0, 1).unwrap();
        assert_eq!(found[0].index, 3, "threads={threads}");
        assert_eq!(timed_out.load(Ordering::Relaxed), 0, "threads={threads}");
        assert!(given_up.load(Ordering::Relaxed) > 0, "threads={threads}");
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "threads={threads}: {:?}",
            t.elapsed()
        );
    }

    /// Rounds in flight on indices above the answer give up as soon as the
    /// answer is known, and their verdicts (here: "prime") are discarded:
    /// the search ends promptly with the right answer at every thread count.
    #[test]
    fn rounds_above_the_answer_give_up() {
        for threads in [2u32, 4, 8] {
            ends_promptly(threads, |s| s);
        }
    }

    /// Index 0's first round passes once index 1's has started; its
    /// confirmation round waits until index 1's first round was given up
    /// (or `patience`), then passes (`pseudo` false) or fails (`pseudo`
    /// true: a candidate that passed its first round and is composite).
    /// Index 1's first round runs until it is told to give up (or
    /// `patience`), records a
    /// quarter of its work done, and passes when run again; its
    /// confirmation round passes. Index 5 is prime (what an engine that
    /// took "given up" for "failed" would answer); the others fail at once.
    struct Deferring {
        pseudo: bool,
        patience: Duration,
        started_1: AtomicBool,
        given_up_1: AtomicBool,
        runs_1: AtomicU64,
        timed_out: AtomicU64,
    }

    impl Deferring {
        fn new(pseudo: bool, patience: Duration) -> Deferring {
            Deferring {
                pseudo,
                patience,
                started_1: AtomicBool::new(false),
                given_up_1: AtomicBool::new(false),
                runs_1: AtomicU64::new(0),
                timed_out: AtomicU64::new(0),
            }
        }

        /// Waits for `flag` for up to `patience`; counts a time-out.
        fn wait_for(&self, flag: &AtomicBool) {
            let t = Instant::now();
            while !flag.load(Ordering::Acquire) {
                if t.elapsed() > self.patience {
                    self.timed_out.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                std::thread::sleep(Duration::from_micros(200));
            }
        }
    }

    impl CandidateSource for Deferring {
        type Cand = u64;
        fn candidate(&self, _: &Seed, index: u64, _: &mut Integer) -> Option<u64> {
            Some(index)
        }
        fn rounds(&self) -> u32 {
            2
        }
        fn round(&self, _: &Seed, _: u64, round: u32, c: &u64, stop: &AtomicBool) -> Verdict {
            match (*c, round) {
                (0, 0) => {
                    self.wait_for(&self.started_1);
                    Verdict::one(true)
                }
                (0, _) => {
                    self.wait_for(&self.given_up_1);
                    Verdict::one(!self.pseudo)
                }
                (1, 0) => {
                    if self.runs_1.fetch_add(1, Ordering::AcqRel) > 0 {
                        return Verdict::one(true);
                    }
                    self.started_1.store(true, Ordering::Release);
                    let t = Instant::now();
                    while !stop.load(Ordering::Acquire) {
                        if t.elapsed() > self.patience {
                            self.timed_out.fetch_add(1, Ordering::Relaxed);
                            return Verdict::one(true);
                        }
                        std::thread::yield_now();
                    }
                    crate::work::given_up(1, 4);
                    self.given_up_1.store(true, Ordering::Release);
                    // Any verdict: the engine must not take it.
                    Verdict::one(false)
                }
                (1 | 5, _) => Verdict::one(true),
                _ => Verdict::one(false),
            }
        }
        fn prime(&self, c: &u64) -> Integer {
            Integer::from(*c)
        }
    }

    /// Runs `Deferring` for one prime on `threads` workers (0: on this
    /// thread alone, where nothing is ever given up and every wait runs
    /// out, so it is short).
    fn deferring(threads: u32, pseudo: bool) -> (Vec<Found>, Stats, Arc<Deferring>) {
        let patience = Duration::from_millis(if threads == 0 { 20 } else { 10_000 });
        let src = Arc::new(Deferring::new(pseudo, patience));
        let pool = Workers::for_test(threads);
        let seed = Seed::from_bytes(&[9u8; 32]).unwrap();
        let mut opts = Options::default();
        let mut generation = Generation::new(&pool, seed, &mut opts, 1);
        let found = generation.search(Arc::clone(&src), 0, 1).unwrap();
        (found, generation.stats(), src)
    }

    /// A first round above a candidate that completes the answer by
    /// passing its own first round is given up then, not when the
    /// candidate's confirmation rounds end (with many threads such rounds
    /// used to run to their end meanwhile); the counter says how much of
    /// it was done.
    #[test]
    fn a_pass_gives_up_the_first_rounds_above_it() {
        for threads in [2u32, 4, 8] {
            let (found, stats, src) = deferring(threads, false);
            assert_eq!(found[0].index, 0, "threads={threads}");
            assert_eq!(
                src.timed_out.load(Ordering::Relaxed),
                0,
                "threads={threads}"
            );
            assert_eq!(src.runs_1.load(Ordering::Relaxed), 1, "threads={threads}");
            // Index 1's round: three quarters given up undone.
            assert_eq!(stats.given_up_milli, 750, "threads={threads}");
            assert_eq!(
                stats.exponentiations_done(),
                stats.exponentiations as f64 - 0.75,
                "threads={threads}"
            );
        }
    }

    /// When the candidate whose pass gave up the rounds above it then
    /// fails a confirmation round, the candidates given up are tested
    /// again: the answer is the one-thread answer.
    #[test]
    fn a_round_given_up_for_a_pseudoprime_runs_again() {
        for threads in [2u32, 4, 8] {
            let (found, _, src) = deferring(threads, true);
            assert_eq!(found[0].index, 1, "threads={threads}");
            assert_eq!(
                src.timed_out.load(Ordering::Relaxed),
                0,
                "threads={threads}"
            );
            assert_eq!(src.runs_1.load(Ordering::Relaxed), 2, "threads={threads}");
        }
        let (found, _, src) = deferring(0, true);
        assert_eq!(found[0].index, 1);
        assert_eq!(src.runs_1.load(Ordering::Relaxed), 1);
    }

    /// Index 20 is the prime; the pair of first rounds holding index 0
    /// waits until two other pairs have run (or 2 s), and every first round
    /// run alone before that is counted.
    struct SlowPair {
        pairs_done: Arc<AtomicU64>,
        alone_while_held: Arc<AtomicU64>,
        timed_out: Arc<AtomicBool>,
    }

    impl CandidateSource for SlowPair {
        type Cand = u64;
        fn candidate(&self, _: &Seed, index: u64, _: &mut Integer) -> Option<u64> {
            Some(index)
        }
        fn rounds(&self) -> u32 {
            1
        }
        fn round(&self, _: &Seed, _: u64, _: u32, c: &u64, _: &AtomicBool) -> Verdict {
            if self.pairs_done.load(Ordering::Acquire) < 2 {
                self.alone_while_held.fetch_add(1, Ordering::Relaxed);
            }
            Verdict::one(*c == 20)
        }
        fn prime(&self, c: &u64) -> Integer {
            Integer::from(*c)
        }
        fn first_round_lanes(&self) -> usize {
            2
        }
        fn first_round_group(
            &self,
            _: &Seed,
            index: &[u64],
            c: &[&u64],
            _: &AtomicBool,
        ) -> Option<Vec<Verdict>> {
            if index.contains(&0) {
                let t = Instant::now();
                while self.pairs_done.load(Ordering::Acquire) < 2 {
                    if t.elapsed() > Duration::from_secs(2) {
                        self.timed_out.store(true, Ordering::Relaxed);
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            } else {
                self.pairs_done.fetch_add(1, Ordering::AcqRel);
            }
            Some(c.iter().map(|&&c| Verdict::one(c == 20)).collect())
        }
    }

    /// At two threads, while one runs a long pair of first rounds on the
    /// lowest candidates, the other runs two more pairs before it has to
    /// run a candidate alone (a pair costs about 0.6 of two rounds): the
    /// window's second round of slack. With one round of slack it ran one
    /// pair, then a candidate alone, then waited for the long pair.
    #[test]
    fn a_long_pair_leaves_room_for_two_more_pairs() {
        let pool = Workers::for_test(2);
        let seed = Seed::from_bytes(&[7u8; 32]).unwrap();
        let mut opts = Options::default();
        let mut generation = Generation::new(&pool, seed, &mut opts, 1);
        let src = SlowPair {
            pairs_done: Arc::new(AtomicU64::new(0)),
            alone_while_held: Arc::new(AtomicU64::new(0)),
            timed_out: Arc::new(AtomicBool::new(false)),
        };
        let (alone, timed_out) = (
            Arc::clone(&src.alone_while_held),
            Arc::clone(&src.timed_out),
        );
        let found = generation.search(src, 0, 1).unwrap();
        assert_eq!(found[0].index, 20);
        assert_eq!(alone.load(Ordering::Relaxed), 0, "a first round ran alone");
        assert!(
            !timed_out.load(Ordering::Relaxed),
            "the other thread stopped"
        );
    }

    /// [`Stubborn`] whose sieve, above the prime, takes until it is told
    /// that any index will do (or 10 s).
    struct SlowSieve(Stubborn);

    impl CandidateSource for SlowSieve {
        type Cand = u64;
        fn next_viable(&self, index: u64, stop: &AtomicBool) -> u64 {
            if index > 3 {
                let t = Instant::now();
                while !stop.load(Ordering::Acquire) {
                    if t.elapsed() > Duration::from_secs(10) {
                        self.0.timed_out.fetch_add(1, Ordering::Relaxed);
                        return index;
                    }
                    std::thread::yield_now();
                }
                self.0.given_up.fetch_add(1, Ordering::Relaxed);
            }
            index
        }
        fn candidate(&self, seed: &Seed, index: u64, scratch: &mut Integer) -> Option<u64> {
            self.0.candidate(seed, index, scratch)
        }
        fn rounds(&self) -> u32 {
            1
        }
        fn round(&self, seed: &Seed, k: u64, r: u32, c: &u64, stop: &AtomicBool) -> Verdict {
            self.0.round(seed, k, r, c, stop)
        }
        fn prime(&self, c: &u64) -> Integer {
            Integer::from(*c)
        }
    }

    /// A claim whose sieve work lies above the answer ends as soon as the
    /// answer is known (a DH search's sieve builds its windows on demand:
    /// a window built for indices above the answer was wasted).
    #[test]
    fn claims_above_the_answer_stop_sieving() {
        for threads in [2u32, 4] {
            ends_promptly(threads, SlowSieve);
        }
    }

    /// `search_here` gives the engine's answer for a count of 1, and counts
    /// what the rounds reported; `run_on_workers` keeps the jobs' order,
    /// adds their counters and the primes to the progress, and turns a
    /// job's panic into `Internal`.
    #[test]
    fn searching_here_gives_the_engines_answer() {
        for first in [0u64, 1, 22, 40, 43] {
            let pool = Workers::pool(2, false).unwrap();
            let seed = Seed::from_bytes(&[7u8; 32]).unwrap();
            let mut opts = Options::default();
            let mut generation = Generation::new(&pool, seed.clone(), &mut opts, 1);
            let engine = generation.search(Toy::new((1, false)), first, 1).unwrap();
            let toy = Toy::new((1, false));
            let mut stats = Stats::default();
            let here = search_here(&toy, &seed, first, &mut stats).unwrap();
            assert_eq!(here.index, engine[0].index, "from {first}");
            assert_eq!(here.prime, engine[0].prime);
            assert_eq!(stats.exponentiations, toy.reported.load(Ordering::Relaxed));
            assert_eq!(stats.candidates, here.index - first + 1);
        }
        for pool in [Workers::pool(3, false).unwrap(), Workers::Here] {
            run_on_workers_keeps_order_and_counts(&pool);
        }
    }

    fn run_on_workers_keeps_order_and_counts(pool: &Workers) {
        let seed = Seed::from_bytes(&[7u8; 32]).unwrap();
        let found = std::cell::Cell::new(None);
        let mut cb = |p: &Progress| {
            found.set(Some(p.primes_found));
            false
        };
        let mut opts = Options {
            progress: Some(&mut cb),
            ..Options::default()
        };
        let mut generation = Generation::new(pool, seed, &mut opts, 4);
        let jobs: Vec<WorkerJob<'_, u64>> = (0..4u64)
            .map(|i| -> WorkerJob<'_, u64> {
                Box::new(move |seed: &Seed, stats: &mut Stats| {
                    Ok(search_here(&Toy::new((1, false)), seed, 30 * i, stats)?.index)
                })
            })
            .collect();
        assert_eq!(
            generation.run_on_workers(jobs, 4).unwrap(),
            [0, 42, 63, 105]
        );
        assert_eq!(generation.stats().candidates, 1 + 13 + 4 + 16);
        let jobs: Vec<WorkerJob<'_, u64>> = vec![Box::new(|_: &Seed, _: &mut Stats| panic!("job"))];
        assert!(matches!(
            generation.run_on_workers(jobs, 1),
            Err(Error::Internal)
        ));
        drop(generation);
        assert_eq!(found.get(), Some(4));
    }

    /// A source whose cheap tests reject 63 of 64 candidates: candidate
    /// `i` survives when `i % 64 == 0` and is "prime" when `i % 320 == 0`;
    /// two rounds.
    struct Sparse;

    impl CandidateSource for Sparse {
        type Cand = u64;
        fn candidate(&self, _: &Seed, index: u64, _: &mut Integer) -> Option<u64> {
            (index % 64 == 0).then_some(index)
        }
        fn rounds(&self) -> u32 {
            2
        }
        fn round(&self, _: &Seed, _: u64, _: u32, c: &u64, _: &AtomicBool) -> Verdict {
            Verdict::one(c % 320 == 0)
        }
        fn prime(&self, c: &u64) -> Integer {
            Integer::from(*c)
        }
    }

    /// The candidates the cheap tests reject never take the search's
    /// lock (it was two takings each, claim and release, and a third for
    /// the look for pending rounds): with 63 of 64 rejected, a search
    /// takes it a few times per survivor — exactly accountable at one
    /// thread, and well below once per candidate at any thread count. The
    /// calling thread is notified (a system call, under the lock) only
    /// when it waits for the workers (a pool of its own): never when it
    /// is the one worker.
    #[test]
    fn rejected_candidates_do_not_take_the_lock() {
        for threads in [0u32, 1, 2, 5] {
            let pool = Workers::for_test(threads);
            let seed = Seed::from_bytes(&[9u8; 32]).unwrap();
            let mut opts = Options::default();
            let mut generation = Generation::new(&pool, seed, &mut opts, 4);
            let found = generation.search(Sparse, 1, 4).unwrap();
            let idx: Vec<u64> = found.iter().map(|f| f.index).collect();
            assert_eq!(idx, [320, 640, 960, 1280], "threads={threads}");
            let st = generation.stats();
            let (locks, notifies) = generation.last_coordination;
            assert!(st.candidates >= 1280, "threads={threads}: {st:?}");
            assert!(
                locks < st.candidates / 4,
                "threads={threads}: {locks} takings of the lock for {} candidates",
                st.candidates
            );
            if threads <= 1 {
                // Per survivor: the gate and its verdict; per pass, the
                // look that takes its second round and its verdict; one
                // look at the end.
                assert!(
                    locks <= 2 * st.survivors + 2 * 4 + 1,
                    "threads={threads}: {locks} takings for {} survivors",
                    st.survivors
                );
            }
            match threads {
                0 => assert_eq!(notifies, 0, "the one worker is the caller"),
                _ => assert!(notifies > 0, "threads={threads}: the caller waits"),
            }
        }
    }

    /// The engine's exponentiation counter is exactly the sum of what the
    /// rounds it ran reported, at any thread count; the answer does not
    /// depend on the thread count.
    #[test]
    fn engine_counts_what_each_round_reports() {
        for threads in [0, 1, 2, 5] {
            let pool = Workers::for_test(threads);
            let seed = Seed::from_bytes(&[7u8; 32]).unwrap();
            let mut opts = Options::default();
            let mut generation = Generation::new(&pool, seed, &mut opts, 3);
            let toy = Toy::new((1, false));
            let reported = Arc::clone(&toy.reported);
            let found = generation.search(toy, 1, 3).unwrap();
            let idx: Vec<u64> = found.iter().map(|f| f.index).collect();
            assert_eq!(idx, [21, 42, 63], "threads={threads}");
            let st = generation.stats();
            assert_eq!(
                st.exponentiations,
                reported.load(Ordering::Relaxed),
                "threads={threads}"
            );
            // Three confirmed candidates ran rounds 0..4 (1+2+3+4 = 10 each).
            assert!(st.exponentiations >= 30, "threads={threads}: {st:?}");
        }
    }

    /// A source that groups first rounds (two, three or four at once)
    /// gets the same answer as one that does not, at any thread count,
    /// whether it runs the groups or declines them; its groups are
    /// survivors in claim order (consecutive survivors at one thread, as
    /// many as it takes), each tested once; the counter still sums what
    /// the rounds reported.
    #[test]
    fn groups_change_the_work_not_the_answer() {
        for threads in [0, 1, 2, 5, 16] {
            for pairs in [2, 3, 4].into_iter().flat_map(|l| [(l, true), (l, false)]) {
                let pool = Workers::for_test(threads);
                let seed = Seed::from_bytes(&[7u8; 32]).unwrap();
                let mut opts = Options::default();
                let mut generation = Generation::new(&pool, seed, &mut opts, 5);
                let toy = Toy::new(pairs);
                let (reported, grouped) = (Arc::clone(&toy.reported), Arc::clone(&toy.grouped));
                let found = generation.search(toy, 1, 5).unwrap();
                let idx: Vec<u64> = found.iter().map(|f| f.index).collect();
                assert_eq!(idx, [21, 42, 63, 84, 105], "threads={threads} {pairs:?}");
                assert_eq!(
                    generation.stats().exponentiations,
                    reported.load(Ordering::Relaxed)
                );
                let grouped = lock(&grouped);
                if !pairs.1 {
                    assert!(grouped.is_empty());
                    continue;
                }
                assert!(!grouped.is_empty(), "threads={threads}: no groups ran");
                let mut tested: Vec<u64> = grouped.iter().flatten().copied().collect();
                assert!(grouped
                    .iter()
                    .all(|g| g.windows(2).all(|w| w[0] < w[1]) && g.iter().all(|i| i % 3 == 0)));
                if threads <= 1 {
                    // Every survivor up to the answer, in full groups of
                    // consecutive survivors.
                    assert!(
                        grouped
                            .iter()
                            .all(|g| g.len() == pairs.0 && g.windows(2).all(|w| w[1] == w[0] + 3)),
                        "{grouped:?}"
                    );
                    assert_eq!(grouped[0][0], 3);
                    assert!(tested.contains(&105));
                    let ends: Vec<u64> = grouped.iter().map(|g| g[0]).collect();
                    assert!(ends.windows(2).all(|w| w[1] == w[0] + 3 * pairs.0 as u64));
                }
                let n = tested.len();
                tested.sort_unstable();
                tested.dedup();
                assert_eq!(tested.len(), n, "a candidate was tested twice");
            }
        }
    }

    /// Confirmation rounds taken together change the work, not the
    /// answer, at any thread count, whether the source runs them together
    /// or declines (then each runs alone): of rounds 1 to 3 (round 0 is
    /// the first round), two at once go as 1–2 and 3, three at once as
    /// 1–3, and every round's exponentiations are counted once.
    #[test]
    fn rounds_together_change_the_work_not_the_answer() {
        for threads in [0, 1, 2, 5, 16] {
            for together in [(2, true), (2, false), (3, true), (8, true), (1, false)] {
                let pool = Workers::for_test(threads);
                let seed = Seed::from_bytes(&[7u8; 32]).unwrap();
                let mut opts = Options::default();
                let mut generation = Generation::new(&pool, seed, &mut opts, 5);
                let mut toy = Toy::new((1, false));
                toy.together = together;
                let (reported, ran) = (Arc::clone(&toy.reported), Arc::clone(&toy.ran_together));
                let found = generation.search(toy, 1, 5).unwrap();
                let idx: Vec<u64> = found.iter().map(|f| f.index).collect();
                assert_eq!(idx, [21, 42, 63, 84, 105], "threads={threads} {together:?}");
                assert_eq!(
                    generation.stats().exponentiations,
                    reported.load(Ordering::Relaxed)
                );
                let ran = lock(&ran);
                if !together.1 {
                    assert!(ran.is_empty());
                    continue;
                }
                // Rounds 1 and on go together (as many as three remain),
                // once per candidate, and every answer's did.
                let n = together.0.min(3);
                assert!(ran.iter().all(|&(_, r, m)| r == 1 && m == n), "{ran:?}");
                let mut which: Vec<u64> = ran.iter().map(|&(i, _, _)| i).collect();
                let count = which.len();
                which.sort_unstable();
                which.dedup();
                assert_eq!(which.len(), count, "rounds ran together twice: {ran:?}");
                for i in [21, 42, 63, 84, 105] {
                    assert!(which.contains(&i), "threads={threads}: {ran:?}");
                }
            }
        }
    }
}
