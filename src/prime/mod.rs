//! The prime-search engine shared by RSA and DH: the seeded stream, trial
//! division, Miller–Rabin, and the deterministic parallel search.

pub mod lucas;
pub mod mr;
pub mod search;
pub mod small;
pub mod stream;

use std::time::Duration;

pub use stream::{Seed, SEED_LEN};

/// Work counters of one generation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Candidates drawn (built from the stream).
    pub candidates: u64,
    /// Candidates that passed trial division and side conditions.
    pub survivors: u64,
    /// Modular exponentiations started, including abandoned ones.
    pub exponentiations: u64,
    /// Wall time.
    pub elapsed: Duration,
}

impl Stats {
    /// Adds another generation's counters.
    pub fn add(&mut self, o: &Stats) {
        self.candidates += o.candidates;
        self.survivors += o.survivors;
        self.exponentiations += o.exponentiations;
        self.elapsed += o.elapsed;
    }
}

/// A progress report, delivered on the caller's thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    pub candidates: u64,
    pub survivors: u64,
    pub exponentiations: u64,
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
    /// Worker threads: 0 = all available cores, at most 1024.
    pub threads: u32,
    /// A 32-byte seed for reproducible output; `None` draws one from the OS.
    pub seed: Option<&'a [u8]>,
    /// Called on the calling thread at least every 100 ms and whenever a
    /// prime is found; returning `true` cancels.
    pub progress: Option<&'a mut ProgressFn<'a>>,
}
