//! The segmented combined sieve for safe primes.
//!
//! Candidates are p_j = p0 + M·j (j = 0, 1, 2, …) where p0 ≡ a (mod M)
//! fixes the generator convention (M = 24, 60 or 12, see `dh`). Then
//! q_j = (p_j − 1)/2 = q0 + (M/2)·j. For every small odd prime r that does
//! not divide M, p_j ≡ 0 (mod r) exactly when j ≡ −p0·M⁻¹ (mod r), and
//! q_j ≡ 0 (mod r) exactly when p_j ≡ 1, i.e. j ≡ (1 − p0)·M⁻¹ (mod r): two
//! residue classes of j to strike per prime. (Primes dividing M never
//! divide p_j or q_j: the congruence p0 ≡ a was chosen so.)
//!
//! The sieve has two parts:
//! - **small primes** (below [`SMALL`]) hit every segment — 2^18
//!   consecutive j — many times. Their classes are computed once and kept
//!   (a few hundred KiB); a segment strikes them with word arithmetic when
//!   it is built: the first struck position of a class is
//!   (j_class − s·segment) mod r.
//! - **large primes** (from [`SMALL`] up to the bound, millions of them)
//!   hit a segment at most once each. Nothing is kept for them: a
//!   *window* of consecutive segments, sized to hold several times the
//!   positions a search is expected to visit, is set up by computing each
//!   large prime's residue classes (p0 mod r through remainders modulo
//!   products of primes: eight per vector register on AVX-512 IFMA, by
//!   `arith::residues`, else GMP's one-limb remainder) and marking its
//!   few hits in the window's bitmap. The cost per sieving prime is what
//!   bounds the sieve's depth; memory does not grow with the bound.
//!
//! Windows and segments are pure functions of their number, built on first
//! use by whichever workers need them (the set-up of a window is shared
//! among all workers that arrive, chunk by chunk) and kept, so the set of
//! survivors (and hence the search's answer) does not depend on the thread
//! count.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use rug::Integer;

use crate::arith::residues::{self, Dividend};
use crate::gmp::{rem_limb, REM_LIMB_MAX};
use crate::prime::small::odd_primes_below;

/// Positions per segment at most: 2^18 bits = 32 KiB, sized for the L1/L2
/// caches. Small searches (DH-256, DH-512) use smaller segments, sized to
/// their window, so as not to sieve positions they never visit.
pub(crate) const SEGMENT: u64 = 1 << 18;

/// The smallest segment.
const MIN_SEGMENT: u64 = 1 << 12;

/// Numbers per chunk of set-up work: finding the primes of the chunk and
/// their residue classes (workers share the chunks).
const CHUNK: u32 = 1 << 18;

/// Primes below this are kept with their classes and strike each segment
/// as it is built; the others strike each window once, at its set-up.
const SMALL: u32 = SEGMENT as u32;

/// The largest window: 2^27 positions, a 16 MiB bitmap.
const MAX_WINDOW: u64 = 1 << 27;

#[derive(Clone, Copy)]
struct Class {
    r: u32,
    /// j ≡ jp makes p_j divisible by r; j ≡ jq makes q_j divisible by r.
    jp: u32,
    jq: u32,
}

/// One window's marks from the large primes, and its shared set-up.
///
/// Chunk i covers [SMALL + i·CHUNK, SMALL + (i+1)·CHUNK) ∩ [.., bound).
/// A worker claims free chunks and marks their hits in a bitmap of its own
/// (up to [`LOCAL_MARKS`] positions), then ORs that into `struck` once:
/// two workers OR-ing hits into one shared bitmap, which for DH-1024 is
/// 32 KiB, kept its cache lines moving between their cores, and marking
/// took half as long again at two threads as at one.
struct Window {
    /// Bit i set: position w·window + i is divisible (p or q) by a large
    /// prime.
    struck: Vec<AtomicU64>,
    /// Per chunk: [`FREE`], [`CLAIMED`] (being marked) or [`DONE`] (its
    /// hits are in `struck`).
    chunks: Vec<AtomicU8>,
    /// Sieving primes of the chunks done.
    primes: AtomicUsize,
    /// Chunks done; waiters for the rest sleep on `finished`.
    done: Mutex<usize>,
    finished: Condvar,
    /// Set once every chunk is done: then a single load.
    ready: AtomicBool,
}

const FREE: u8 = 0;
const CLAIMED: u8 = 1;
const DONE: u8 = 2;

/// Windows up to this many positions (a 1 MiB bitmap) are marked in a
/// bitmap per worker and merged; larger ones straight into the shared one
/// (a worker's own copy would cost up to 16 MiB).
const LOCAL_MARKS: u64 = 1 << 23;

/// Where a worker marks hits: its own bitmap, or the window's.
enum Marks<'a> {
    Own(Vec<u64>),
    Shared(&'a [AtomicU64]),
}

impl Marks<'_> {
    #[inline]
    fn set(&mut self, off: u64) {
        match self {
            Marks::Own(v) => v[(off >> 6) as usize] |= 1 << (off & 63),
            Marks::Shared(s) => {
                s[(off >> 6) as usize].fetch_or(1 << (off & 63), Ordering::Relaxed);
            }
        }
    }
}

/// The chunks a worker has claimed and not yet handed over: if it unwinds
/// before handing them over (a panic in the marking), they go back to
/// [`FREE`] so that another worker can mark them.
struct Claims<'a> {
    win: &'a Window,
    mine: Vec<usize>,
}

impl Drop for Claims<'_> {
    fn drop(&mut self) {
        for &i in &self.mine {
            self.win.chunks[i].store(FREE, Ordering::Release);
        }
    }
}

/// The sieve of one search (or of one batch of searches from the same
/// start).
pub(crate) struct Sieve {
    p0: Integer,
    /// p0 in 52-bit digits where the CPU takes remainders eight divisors
    /// at a time (`arith::residues`).
    p0_digits: Option<Dividend>,
    m: u64,
    bound: u32,
    /// Odd primes up to √bound, for sieving the chunks.
    base: Vec<u32>,
    div_m: DivM,
    /// Positions per segment: a power of two in [MIN_SEGMENT, SEGMENT].
    segment: u64,
    /// Positions per window: a multiple of the segment.
    window: u64,
    /// Classes of the small primes, computed on first use.
    small: OnceLock<Vec<Class>>,
    windows: Mutex<HashMap<u64, Arc<Window>>>,
    segments: Mutex<HashMap<u64, Arc<OnceLock<Vec<u64>>>>>,
}

/// The residues modulo 30 of the numbers prime to 30: bit i of a chunk's
/// byte q stands for 30q + WHEEL[i].
const WHEEL: [u32; 8] = [1, 7, 11, 13, 17, 19, 23, 29];

/// The bit of residue x mod 30 in [`WHEEL`] (x prime to 30).
const WHEEL_BIT: [u8; 30] = {
    let mut bit = [0u8; 30];
    let mut i = 0;
    while i < 8 {
        bit[WHEEL[i] as usize] = i as u8;
        i += 1;
    }
    bit
};

/// The primes whose multiples [`presieve_pattern`] marks.
const PATTERN_PRIMES: [u32; 3] = [7, 11, 13];
/// Their product: the pattern's period in bytes (of 30 numbers each).
const PATTERN_PERIOD: usize = 7 * 11 * 13;

/// Byte q's bit i is set when 30q + WHEEL[i] is a multiple of 7, 11 or
/// 13 (q below the period).
fn presieve_pattern() -> &'static [u8] {
    static PATTERN: OnceLock<Vec<u8>> = OnceLock::new();
    PATTERN.get_or_init(|| {
        (0..PATTERN_PERIOD as u32)
            .map(|q| {
                WHEEL.iter().enumerate().fold(0u8, |byte, (i, &w)| {
                    let x = 30 * q + w;
                    if PATTERN_PRIMES.iter().any(|&p| x % p == 0) {
                        byte | 1 << i
                    } else {
                        byte
                    }
                })
            })
            .collect()
    })
}

/// Division by M modulo a sieving prime, without a division instruction:
/// for x < r, x/M mod r = (x + k·r)/M with the k ∈ [0, M) that makes the
/// sum divisible by M, k ≡ −x·r⁻¹ (mod M). Remainders modulo M are
/// multiply-and-shift (Lemire's fastmod), r⁻¹ mod M comes from a table,
/// and the exact division by M = 2^a·m is a shift and a multiplication by
/// m⁻¹ mod 2^64.
#[derive(Clone)]
struct DivM {
    m: u64,
    twos: u32,
    /// (M / 2^twos)⁻¹ mod 2^64.
    odd_inv: u64,
    /// ⌈2^64 / M⌉, for x mod M of 32-bit x.
    fast: u64,
    /// u⁻¹ mod M for each unit u < M (0 elsewhere).
    inv: Vec<u64>,
}

impl DivM {
    fn new(m: u64) -> DivM {
        // Only primes up to 5 may divide M (`primes_in` leaves out just
        // those), and M² < 2^32 keeps `apply`'s products in 32 bits.
        let mut rest = m;
        for d in [2, 3, 5] {
            while rest % d == 0 {
                rest /= d;
            }
        }
        assert!(
            rest == 1 && (2..=1 << 10).contains(&m),
            "M must be 2^a 3^b 5^c ≤ 1024"
        );
        let twos = m.trailing_zeros();
        let odd = m >> twos;
        // odd⁻¹ mod 2^64 by Newton's iteration (odd·odd ≡ 1 mod 8).
        let mut odd_inv = odd;
        for _ in 0..5 {
            odd_inv = odd_inv.wrapping_mul(2u64.wrapping_sub(odd.wrapping_mul(odd_inv)));
        }
        let inv = (0..m)
            .map(|u| (1..m).find(|&v| u * v % m == 1).unwrap_or(0))
            .collect();
        DivM {
            m,
            twos,
            odd_inv,
            fast: u64::MAX / m + 1,
            inv,
        }
    }

    /// x mod M for x < 2^32.
    #[inline(always)]
    fn rem(&self, x: u64) -> u64 {
        debug_assert!(x >> 32 == 0);
        ((self.fast.wrapping_mul(x) as u128 * self.m as u128) >> 64) as u64
    }

    /// x·M⁻¹ mod r for each x < r of `xs`, for a prime r < 2^32 that does
    /// not divide M.
    #[inline(always)]
    fn apply<const N: usize>(&self, mut xs: [u64; N], r: u64) -> [u64; N] {
        let r_inv = self.inv[self.rem(r) as usize];
        for x in &mut xs {
            let t = self.rem(self.rem(*x) * r_inv);
            let k = if t == 0 { 0 } else { self.m - t };
            // x + k·r ≡ 0 (mod M) and x + k·r < M·r.
            *x = ((*x + k * r) >> self.twos).wrapping_mul(self.odd_inv);
        }
        xs
    }
}

impl Sieve {
    /// Prepares the sieve for p_j = p0 + m·j with all odd primes below
    /// `bound` that do not divide `m`, in windows of `window` positions
    /// (rounded up to whole segments, at most [`MAX_WINDOW`]; segments as
    /// large as the window up to [`SEGMENT`]). Cheap: the
    /// residues are computed later, in parallel, by the workers that first
    /// need a segment.
    pub(crate) fn new(p0: &Integer, m: u64, bound: u32, window: u64) -> Sieve {
        let root = (bound as f64).sqrt() as u32 + 2;
        let window = window.clamp(MIN_SEGMENT, MAX_WINDOW);
        let segment = window.next_power_of_two().clamp(MIN_SEGMENT, SEGMENT);
        Sieve {
            p0: p0.clone(),
            p0_digits: residues::available().then(|| Dividend::new(p0)),
            m,
            bound,
            base: odd_primes_below(root),
            div_m: DivM::new(m),
            segment,
            window: window.next_multiple_of(segment),
            small: OnceLock::new(),
            windows: Mutex::new(HashMap::new()),
            segments: Mutex::new(HashMap::new()),
        }
    }

    /// The odd primes in [lo, hi) not dividing M: 3 and 5 by hand, the
    /// others by a segmented sieve of Eratosthenes over the numbers prime
    /// to 30 (a byte per 30 numbers: a chunk of 2^18 numbers takes 8.5 KiB,
    /// in L1, and a prime p marks 8 of every 30p numbers instead of the 15
    /// odd ones), started from the repeating pattern of 7, 11 and 13.
    fn primes_in(&self, lo: u32, hi: u32) -> Vec<u32> {
        let mut out = Vec::with_capacity((hi.saturating_sub(lo) / 16) as usize);
        for r in [3u32, 5] {
            if (lo..hi).contains(&r) && self.m % r as u64 != 0 {
                out.push(r);
            }
        }
        if hi <= 7 || lo >= hi {
            return out;
        }
        let (q0, q1) = (lo / 30, hi.div_ceil(30));
        let n = (q1 - q0) as usize;
        // Whole words for the read-out; the padding is never read as a
        // number (every candidate is checked against [lo, hi)).
        let mut bytes = vec![0u8; n.next_multiple_of(8)];
        let pattern = presieve_pattern();
        let (mut at, mut off) = (0, q0 as usize % PATTERN_PERIOD);
        while at < n {
            let take = (PATTERN_PERIOD - off).min(n - at);
            bytes[at..at + take].copy_from_slice(&pattern[off..off + take]);
            at += take;
            off = 0;
        }
        for &p in &PATTERN_PRIMES {
            // The pattern primes themselves are primes.
            if (lo..hi).contains(&p) {
                bytes[(p / 30 - q0) as usize] &= !(1 << WHEEL_BIT[(p % 30) as usize]);
            }
        }
        for &p in self.base.iter().filter(|&&p| p > 13) {
            let p = p as u64;
            if p * p >= hi as u64 {
                break;
            }
            // Multiples p·m from max(lo, p²) with m prime to 30: for each
            // residue w of m, m steps by 30 and p·m by 30p, one byte per p.
            let m_lo = (lo as u64).div_ceil(p).max(p);
            for &w in &WHEEL {
                let m = m_lo + (w as u64 + 30 - m_lo % 30) % 30;
                let x = p * m;
                let bit = 1u8 << WHEEL_BIT[(x % 30) as usize];
                let mut q = (x / 30 - q0 as u64) as usize;
                while q < n {
                    bytes[q] |= bit;
                    q += p as usize;
                }
            }
        }
        for (w, word) in bytes.chunks_exact(8).enumerate() {
            let mut free = !u64::from_le_bytes(word.try_into().expect("eight bytes"));
            while free != 0 {
                let t = free.trailing_zeros();
                free &= free - 1;
                let x = 30 * (q0 + 8 * w as u32 + t / 8) as u64 + WHEEL[(t % 8) as usize] as u64;
                // 1 is not a prime; 7 and above are prime to M (2^a 3^b 5^c).
                if x > 1 && (lo as u64..hi as u64).contains(&x) {
                    out.push(x as u32);
                }
            }
        }
        out
    }

    /// Calls `f(r, jp, jq)` for each prime r of `primes` with its two
    /// classes: p0 mod r through products of consecutive primes (one
    /// multi-precision remainder per product): below 2^52, eight per
    /// register (`arith::residues`) where the CPU has AVX-512 IFMA, else up to
    /// [`REM_LIMB_MAX`] by GMP's one-limb remainder.
    fn classes(&self, primes: &[u32], mut f: impl FnMut(u64, u64, u64)) {
        let cap = if self.p0_digits.is_some() {
            residues::MAX_DIVISOR
        } else {
            REM_LIMB_MAX
        };
        // Product i covers primes[ends[i − 1]..ends[i]].
        let (mut prods, mut ends) = (Vec::new(), Vec::new());
        let mut a = 0;
        while a < primes.len() {
            let mut prod = 1u64;
            let mut b = a;
            while b < primes.len() {
                match prod.checked_mul(primes[b] as u64) {
                    Some(x) if x <= cap => {
                        prod = x;
                        b += 1;
                    }
                    _ => break,
                }
            }
            prods.push(prod);
            ends.push(b);
            a = b;
        }
        let mut bigs = vec![0u64; prods.len()];
        let vector = self
            .p0_digits
            .as_ref()
            .is_some_and(|x| residues::rem_many(x, &prods, &mut bigs));
        if !vector {
            for (big, &d) in bigs.iter_mut().zip(&prods) {
                *big = rem_limb(&self.p0, d);
            }
        }
        let mut a = 0;
        for (&big, &b) in bigs.iter().zip(&ends) {
            for &r in &primes[a..b] {
                // p_j ≡ p0 + M·j (mod r): p_j ≡ 0 at j ≡ −p0/M and p_j ≡ 1
                // (q_j ≡ 0) at j ≡ (1 − p0)/M = jp + 1/M.
                let r = r as u64;
                let pr = big % r;
                let [jp, m_inv] = self.div_m.apply([if pr == 0 { 0 } else { r - pr }, 1], r);
                let mut jq = jp + m_inv;
                if jq >= r {
                    jq -= r;
                }
                f(r, jp, jq);
            }
            a = b;
        }
    }

    fn small_classes(&self) -> &[Class] {
        self.small.get_or_init(|| {
            let primes = self.primes_in(3, self.bound.min(SMALL));
            let mut out = Vec::with_capacity(primes.len());
            self.classes(&primes, |r, jp, jq| {
                out.push(Class {
                    r: r as u32,
                    jp: jp as u32,
                    jq: jq as u32,
                })
            });
            out
        })
    }

    fn large_chunks(&self) -> usize {
        self.bound.saturating_sub(SMALL).div_ceil(CHUNK) as usize
    }

    /// Marks the hits of chunk `i`'s large primes in window `w` into
    /// `marks`; returns the number of primes.
    fn mark_chunk(&self, marks: &mut Marks<'_>, w: u64, i: usize) -> usize {
        let lo = SMALL + i as u32 * CHUNK;
        let hi = lo.saturating_add(CHUNK).min(self.bound);
        crate::fault::point("sieve_mark");
        let primes = self.primes_in(lo, hi);
        let base = w * self.window;
        let size = self.window;
        self.classes(&primes, |r, jp, jq| {
            let b = if base < r { base } else { base % r };
            for class in [jp, jq] {
                let mut off = if class >= b { class - b } else { class + r - b };
                while off < size {
                    marks.set(off);
                    off += r;
                }
            }
        });
        primes.len()
    }

    /// Window `w`, set up: claims free chunks until none is left (so all
    /// workers arriving here share the work), hands its marks over, then
    /// waits for chunks others are still marking. `None` once `stop` is
    /// set (the search was cancelled or its claims are over; what was
    /// marked is handed over, the rest stays free for a later search of
    /// the same sieve).
    fn window(&self, w: u64, stop: &AtomicBool) -> Option<Arc<Window>> {
        let win = {
            let mut map = self.windows.lock().unwrap_or_else(|e| e.into_inner());
            Arc::clone(map.entry(w).or_insert_with(|| {
                let chunks = self.large_chunks();
                Arc::new(Window {
                    struck: (0..self.window / 64).map(|_| AtomicU64::new(0)).collect(),
                    chunks: (0..chunks).map(|_| AtomicU8::new(FREE)).collect(),
                    primes: AtomicUsize::new(0),
                    done: Mutex::new(0),
                    finished: Condvar::new(),
                    ready: AtomicBool::new(chunks == 0),
                })
            }))
        };
        loop {
            if win.ready.load(Ordering::Acquire) {
                return Some(win);
            }
            if stop.load(Ordering::Relaxed) {
                return None;
            }
            // Chunks handed back free (by a worker that unwound) are
            // claimed on the next turn; otherwise wait for the chunks
            // others are marking (they hand over with their marks).
            if !self.mark_free_chunks(&win, w, stop) {
                let done = win.done.lock().unwrap_or_else(|e| e.into_inner());
                if *done < win.chunks.len() {
                    let _ = win
                        .finished
                        .wait_timeout(done, std::time::Duration::from_millis(5));
                }
            }
        }
    }

    /// Claims the free chunks of window `w` (until `stop`), marks their
    /// hits and hands them over with the marks; false if none was free.
    fn mark_free_chunks(&self, win: &Window, w: u64, stop: &AtomicBool) -> bool {
        let mut marks = if self.window <= LOCAL_MARKS {
            Marks::Own(Vec::new())
        } else {
            Marks::Shared(&win.struck)
        };
        let mut claims = Claims {
            win,
            mine: Vec::new(),
        };
        let mut primes = 0;
        for (i, c) in win.chunks.iter().enumerate() {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            if c.load(Ordering::Relaxed) != FREE
                || c.compare_exchange(FREE, CLAIMED, Ordering::AcqRel, Ordering::Relaxed)
                    .is_err()
            {
                continue;
            }
            claims.mine.push(i);
            if let Marks::Own(v) = &mut marks {
                if v.is_empty() {
                    v.resize((self.window / 64) as usize, 0);
                }
            }
            primes += self.mark_chunk(&mut marks, w, i);
        }
        if claims.mine.is_empty() {
            return false;
        }
        if let Marks::Own(v) = &marks {
            for (mark, &bits) in win.struck.iter().zip(v.iter()) {
                if bits != 0 {
                    mark.fetch_or(bits, Ordering::Relaxed);
                }
            }
        }
        win.primes.fetch_add(primes, Ordering::Relaxed);
        let mut done = win.done.lock().unwrap_or_else(|e| e.into_inner());
        // Released by the lock: a waiter that sees DONE (or the count)
        // sees the marks.
        for i in std::mem::take(&mut claims.mine) {
            win.chunks[i].store(DONE, Ordering::Release);
            *done += 1;
        }
        if *done == win.chunks.len() {
            win.ready.store(true, Ordering::Release);
            win.finished.notify_all();
        }
        true
    }

    /// Builds segment `s` from the small primes' classes and its window's
    /// marks.
    fn build(&self, s: u64, win: &Window) -> Vec<u64> {
        let size = self.segment;
        let words = (size / 64) as usize;
        let mut bits = vec![u64::MAX; words];
        let base = s * size;
        for c in self.small_classes() {
            let r = c.r as u64;
            let b = base % r;
            for class in [c.jp as u64, c.jq as u64] {
                let mut off = if class >= b { class - b } else { class + r - b };
                while off < size {
                    bits[(off >> 6) as usize] &= !(1u64 << (off & 63));
                    off += r;
                }
            }
        }
        let first = ((base % self.window) / 64) as usize;
        for (word, mark) in bits.iter_mut().zip(&win.struck[first..first + words]) {
            *word &= !mark.load(Ordering::Relaxed);
        }
        bits
    }

    /// The survivors of segment `s` as a bitmap (bit i: j = s·segment + i).
    /// `None` once `stop` is set before its window is set up.
    pub(crate) fn segment(&self, s: u64, stop: &AtomicBool) -> Option<Arc<OnceLock<Vec<u64>>>> {
        let cell = {
            let mut map = self.segments.lock().unwrap_or_else(|e| e.into_inner());
            Arc::clone(map.entry(s).or_default())
        };
        // A built segment needs nothing else (the common case in a search).
        // Otherwise every worker that gets here helps with the window's
        // set-up first, rather than waiting for the one building the
        // segment.
        if cell.get().is_none() {
            let win = self.window(s * self.segment / self.window, stop)?;
            cell.get_or_init(|| self.build(s, &win));
        }
        Some(cell)
    }

    /// Drops the segments and windows wholly below position `k` (a batch
    /// never looks back), so that a long batch holds only what its current
    /// search can still use.
    pub(crate) fn forget_below(&self, k: u64) {
        self.segments
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|&s, _| (s + 1) * self.segment > k);
        self.windows
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|&w, _| (w + 1) * self.window > k);
    }

    /// The number of segments and windows held (tests).
    #[cfg(test)]
    pub(crate) fn held(&self) -> (usize, usize) {
        (
            self.segments.lock().unwrap().len(),
            self.windows.lock().unwrap().len(),
        )
    }

    /// Sets up window 0 on this thread and returns the number of sieving
    /// primes (measurement).
    pub(crate) fn prepare_now(&self) -> usize {
        let never = AtomicBool::new(false);
        let win = self.window(0, &never).expect("not stopped");
        self.small_classes().len() + win.primes.load(Ordering::Relaxed)
    }

    /// The survivors of segment `s`, counted.
    pub(crate) fn survivors(&self, s: u64, stop: &AtomicBool) -> u64 {
        self.segment(s, stop).map_or(0, |cell| {
            let bits = cell.get().expect("segment built");
            bits.iter().map(|w| w.count_ones() as u64).sum()
        })
    }

    /// The smallest j ≥ `k` that survives the sieve; once `stop` is set,
    /// any index ≥ `k` (the cancelled search discards it).
    pub(crate) fn next_viable(&self, k: u64, stop: &AtomicBool) -> u64 {
        let mut s = k / self.segment;
        let mut i = k % self.segment;
        loop {
            let Some(cell) = self.segment(s, stop) else {
                return k;
            };
            let bits = cell.get().expect("segment built");
            let mut w = (i / 64) as usize;
            let mut word = bits[w] & (u64::MAX << (i % 64));
            loop {
                if word != 0 {
                    return s * self.segment + (w as u64) * 64 + word.trailing_zeros() as u64;
                }
                w += 1;
                if w == bits.len() {
                    break;
                }
                word = bits[w];
            }
            s += 1;
            i = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn division_by_m_is_right() {
        for m in [12u64, 24, 60, 2, 3, 5, 2 * 3 * 5 * 5] {
            let d = DivM::new(m);
            for r in odd_primes_below(3000).into_iter().filter(|&r| r > 5) {
                let r = r as u64;
                for x in [0, 1, 2, 3, 4, 5, r / 2, r - 2, r - 1] {
                    let [y] = d.apply([x], r);
                    assert!(y < r, "{m} {r} {x}");
                    assert_eq!(y * (m % r) % r, x, "{m} {r} {x}");
                }
            }
        }
    }

    /// The chunk sieve lists exactly the primes of its range that do not
    /// divide M: ranges from 0, unaligned ends (the pattern read at many
    /// byte offsets, padding in the last word), and the chunk that ends at
    /// the bound.
    #[test]
    fn primes_in_lists_the_primes_of_the_range() {
        let bound = (1u32 << 24) + 12_345;
        let all = odd_primes_below(bound);
        for m in [12u64, 24, 60] {
            let sieve = Sieve::new(&Integer::from(m - 1), m, bound, SEGMENT);
            let mut ranges = vec![
                (0, 1000),
                (0, 3),
                (3, 4),
                (4, 5),
                (5, 6),
                (2, 14),
                (0, 1 << 18),
            ];
            let mut lo = 1u32 << 18;
            for step in [1u32, 63, 64, 65, 127, 128, 129, 4097, 99_999, 1 << 18] {
                ranges.push((lo, lo + step));
                lo += step + 2 * step % 7;
            }
            ranges.push((bound - (1 << 18) - 7, bound));
            for (lo, hi) in ranges {
                let want: Vec<u32> = all
                    .iter()
                    .copied()
                    .filter(|&r| (lo..hi).contains(&r) && m % r as u64 != 0)
                    .collect();
                assert_eq!(sieve.primes_in(lo, hi), want, "M = {m}, [{lo}, {hi})");
            }
        }
    }

    /// Large primes (marked in windows) and small ones (struck per
    /// segment) together: every survivor of four windows, and a sample of
    /// the struck positions, agree with direct divisibility by the primes
    /// below the bound. Full-size segments in windows of two, and the small
    /// segments of a small search.
    #[test]
    fn windows_and_segments_strike_exactly_the_divisible_positions() {
        let p0 = Integer::from(Integer::u_pow_u(10, 40)) * 60u32 + 59u32;
        let bound = SMALL + 2 * CHUNK + 12_345;
        let primes: Vec<u32> = odd_primes_below(bound)
            .into_iter()
            .filter(|&r| r != 3 && r != 5)
            .collect();
        let product = |lo: u32, hi: u32| {
            primes
                .iter()
                .filter(|&&r| (lo..hi).contains(&r))
                .fold(Integer::from(1u32), |acc, &r| acc * r)
        };
        let all = product(0, bound);
        let small = product(0, SMALL);
        // gcd(p·q, product of the sieving primes) = 1 exactly when neither
        // has a factor below the bound.
        let coprime = |j: u64, to: &Integer| {
            let p = Integer::from(&p0 + 60 * j);
            let q: Integer = Integer::from(&p - 1u32) >> 1u32;
            let pq = p * q;
            Integer::from(to % &pq).gcd(&pq) == 1u32
        };
        // The remainders eight divisors per register (on CPUs with IFMA) and
        // GMP's one-limb remainders (elsewhere) alike.
        for (window, segment, step, vector) in [
            (2 * SEGMENT, SEGMENT, 211, true),
            (5000, 8192, 7, true),
            (2 * SEGMENT, SEGMENT, 211, false),
        ] {
            let mut sieve = Sieve::new(&p0, 60, bound, window);
            if !vector {
                sieve.p0_digits = None;
            } else if sieve.p0_digits.is_none() {
                crate::capability::skip("ifma", "the sieve's remainders on AVX-512 IFMA");
            }
            assert_eq!(
                (sieve.segment, sieve.window),
                (segment, window.max(segment))
            );
            let end = 4 * sieve.window;
            let never = AtomicBool::new(false);
            let mut got = Vec::new();
            let mut k = 0;
            loop {
                let v = sieve.next_viable(k, &never);
                if v >= end {
                    break;
                }
                got.push(v);
                k = v + 1;
            }
            for &j in &got {
                assert!(coprime(j, &all), "{j} survived");
            }
            let survivors: std::collections::HashSet<u64> = got.iter().copied().collect();
            let struck_by_large = (0..end)
                .step_by(step)
                .filter(|j| !survivors.contains(j))
                .inspect(|&j| assert!(!coprime(j, &all), "{j} struck"))
                .filter(|&j| coprime(j, &small))
                .count();
            assert!(
                struck_by_large > 0,
                "no position was struck by a large prime only"
            );
            // Four windows; the search past them opened a fifth.
            let segments = (end / segment) as usize + 1;
            assert_eq!(sieve.held(), (segments, 5));
            sieve.forget_below(2 * sieve.window + 5);
            assert_eq!(
                sieve.held(),
                (segments - 2 * (sieve.window / segment) as usize, 3)
            );
            // What was forgotten is rebuilt the same if asked for again.
            assert_eq!(sieve.next_viable(0, &never), got[0]);
        }
    }

    fn marks(win: &Window) -> Vec<u64> {
        win.struck
            .iter()
            .map(|m| m.load(Ordering::Relaxed))
            .collect()
    }

    /// Four threads setting up a window together mark exactly what one
    /// thread marks, in windows marked per worker and merged and in
    /// windows marked straight into the shared bitmap.
    #[test]
    fn a_window_set_up_by_four_threads_is_the_one_thread_window() {
        let p0 = Integer::from(Integer::u_pow_u(10, 40)) * 60u32 + 59u32;
        let bound = SMALL + 2 * CHUNK + 12_345;
        let never = AtomicBool::new(false);
        for window in [2 * SEGMENT, 2 * LOCAL_MARKS] {
            let one = Sieve::new(&p0, 60, bound, window);
            let alone = one.window(1, &never).unwrap();
            let many = Sieve::new(&p0, 60, bound, window);
            let wins: Vec<Arc<Window>> = std::thread::scope(|s| {
                let hs: Vec<_> = (0..4)
                    .map(|_| s.spawn(|| many.window(1, &never).unwrap()))
                    .collect();
                hs.into_iter().map(|h| h.join().unwrap()).collect()
            });
            assert!(marks(&alone).iter().any(|&m| m != 0));
            for w in &wins {
                assert!(Arc::ptr_eq(w, &wins[0]), "one window for all");
                assert!(w.chunks.iter().all(|c| c.load(Ordering::Relaxed) == DONE));
            }
            assert_eq!(marks(&wins[0]), marks(&alone), "window of {window}");
            assert_eq!(
                wins[0].primes.load(Ordering::Relaxed),
                alone.primes.load(Ordering::Relaxed)
            );
        }
    }

    /// A worker that panics while marking hands its chunks back: none is
    /// left claimed, and the next set-up of the window completes it with
    /// the marks of a window set up in one go.
    #[test]
    fn a_panic_while_marking_hands_the_chunks_back() {
        let p0 = Integer::from(Integer::u_pow_u(10, 40)) * 60u32 + 59u32;
        let bound = SMALL + 3 * CHUNK;
        let never = AtomicBool::new(false);
        let sieve = Sieve::new(&p0, 60, bound, 2 * SEGMENT);
        crate::fault::arm("sieve_mark");
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| sieve.window(0, &never)));
        assert!(r.is_err(), "the armed point did not panic");
        let win = Arc::clone(sieve.windows.lock().unwrap().get(&0).unwrap());
        assert!(!win.ready.load(Ordering::Relaxed));
        assert!(win.chunks.iter().all(|c| c.load(Ordering::Relaxed) == FREE));
        let win = sieve.window(0, &never).unwrap();
        let fresh = Sieve::new(&p0, 60, bound, 2 * SEGMENT);
        assert_eq!(marks(&win), marks(&fresh.window(0, &never).unwrap()));
    }

    #[test]
    fn survivors_are_exactly_the_unstruck_positions() {
        // p0 ≡ 23 mod 24, small numbers: check every position of two
        // segments against direct divisibility of p_j and q_j.
        let p0 = Integer::from(1_000_000_007u64 * 24 + 23);
        let sieve = Sieve::new(&p0, 24, 1 << 10, SEGMENT);
        let primes: Vec<u32> = odd_primes_below(1 << 10)
            .into_iter()
            .filter(|&r| r != 3)
            .collect();
        let mut k = 0u64;
        let mut expected = Vec::new();
        for j in 0..2 * SEGMENT {
            let p = Integer::from(&p0 + 24 * j);
            let q: Integer = Integer::from(&p - 1u32) >> 1u32;
            let ok = primes
                .iter()
                .all(|&r| !p.is_divisible_u(r) && !q.is_divisible_u(r));
            if ok {
                expected.push(j);
            }
        }
        let mut got = Vec::new();
        // Windows of one segment: the second segment is in a second window.
        assert_eq!(sieve.window, SEGMENT);
        while k < 2 * SEGMENT {
            let v = sieve.next_viable(k, &AtomicBool::new(false));
            if v >= 2 * SEGMENT {
                break;
            }
            got.push(v);
            k = v + 1;
        }
        assert_eq!(got, expected);
        assert!(got.len() > 1000);
    }
}
