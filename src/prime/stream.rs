//! The seeded stream: every random value primeforge uses comes from ChaCha20
//! (the `rand_chacha` crate) keyed with a 32-byte seed that is either drawn
//! from the operating system (`getrandom`) or supplied by the caller. GMP's
//! own random state is never used.
//!
//! Each use gets its own ChaCha20 stream, chosen by (purpose, index): with
//! id = `purpose << 56 | index`, the stream is ChaCha20 keyed with the
//! first 32 bytes of ChaCha20(seed, stream id) (`SecretStream::with_derived`:
//! no stream state holds the seed). So candidate number k is a pure
//! function of (seed, k), whichever thread builds it and in whatever order,
//! which is what makes the parallel search's result independent of the
//! thread count. Within one stream, `set_word_pos` selects sub-blocks (e.g.
//! the base of Miller–Rabin round r).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rug::integer::Order;
use rug::Integer;
use zeroize::Zeroize;

use crate::error::{Error, Result};
use crate::secure::{rng_wide, SecretStream, SecureBuf, SharedWords};

/// Length of a seed in bytes.
pub const SEED_LEN: usize = 32;

/// What a stream is used for; keeps the streams of different uses apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Purpose {
    /// RSA prime candidates (one stream per candidate index).
    RsaCandidate = 1,
    /// Miller–Rabin bases (one stream per candidate index, one block per round).
    MillerRabinBase = 2,
    /// Once the random message of the RSA pairwise consistency test, which
    /// now signs 2 and draws nothing; the number stays taken (a purpose's
    /// number is part of every stream's derivation).
    PairwiseTest = 3,
    /// The start of a DH safe-prime sieve interval.
    DhStart = 4,
    /// A DH private key.
    DhPrivate = 5,
    /// The multipliers r of provable RSA primes p = 2·r·q + 1 and the
    /// candidates at the foot of their chains (one stream per candidate
    /// index; the index says which prime and which level, see
    /// `rsa::provable`).
    RsaProvable = 6,
    /// FIPS 186-4 domain parameter seeds (one stream per attempt).
    Fips186Seed = 7,
    /// Miller–Rabin bases for a FIPS 186-4 q (one stream per attempt).
    Fips186Base = 8,
}

/// Largest index a stream can be selected by (56 bits).
pub(crate) const MAX_INDEX: u64 = (1 << 56) - 1;

/// A 32-byte generation seed. Its bytes live only in one secure mapping
/// ([`SecureBuf`]: guard pages, `mlock`, `MADV_DONTDUMP`,
/// `MADV_WIPEONFORK`), from the moment they are read (`getrandom` writes
/// straight into it, a caller's seed is copied straight into it) until the
/// last handle is dropped, when the mapping is wiped and unmapped. Clones
/// share that one mapping. A key is a deterministic function of its seed,
/// so the seed is as secret as the key.
#[derive(Clone)]
pub struct Seed(Arc<SecureBuf>);

impl Seed {
    /// Draws a fresh seed from the operating system into secure memory.
    pub fn from_os() -> Result<Seed> {
        let mut buf = SecureBuf::new(SEED_LEN)?;
        getrandom::fill(buf.as_mut_slice()).map_err(|_| Error::Entropy)?;
        Ok(Seed(Arc::new(buf)))
    }

    /// Takes a caller's seed, which must be exactly 32 bytes; the bytes are
    /// copied straight into secure memory.
    pub fn from_bytes(bytes: &[u8]) -> Result<Seed> {
        if bytes.len() != SEED_LEN {
            return Err(Error::InvalidArgument("seed must be 32 bytes"));
        }
        Ok(Seed(Arc::new(SecureBuf::from_slice(bytes)?)))
    }

    /// The caller's seed, or a fresh one from the OS.
    pub fn from_option(bytes: Option<&[u8]>) -> Result<Seed> {
        match bytes {
            Some(b) => Seed::from_bytes(b),
            None => Seed::from_os(),
        }
    }

    /// Runs `f` with the ChaCha20 stream for (purpose, index), built in
    /// this frame and wiped when `f` returns (see the module docs).
    pub fn with_stream<R>(
        &self,
        purpose: Purpose,
        index: u64,
        f: impl FnOnce(&mut SecretStream) -> R,
    ) -> R {
        debug_assert!(index <= MAX_INDEX);
        SecretStream::with_derived(
            self.key(),
            ((purpose as u64) << 56) | (index & MAX_INDEX),
            f,
        )
    }

    /// The seed's bytes.
    fn key(&self) -> &[u8; SEED_LEN] {
        self.0.as_slice().try_into().expect("32-byte seed")
    }

    /// The first `words` words of the streams (purpose, `first + i`), i <
    /// 16, into `out[i * words..]` ([`rng_wide::derived_words`]); false
    /// where the lanes do not apply. `first` is a multiple of 16.
    fn derived_words(&self, purpose: Purpose, first: u64, words: usize, out: &mut [u64]) -> bool {
        debug_assert!(first % rng_wide::LANES as u64 == 0 && first <= MAX_INDEX);
        rng_wide::derived_words(self.key(), ((purpose as u64) << 56) | first, words, out)
    }

    /// Whether `other` is this seed (a clone of it).
    fn same(&self, other: &Seed) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::fmt::Debug for Seed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Seed(..)")
    }
}

/// Largest random integer we build, in 64-bit words (8192-bit primes plus
/// 64 bits of slack for unbiased reduction).
const MAX_WORDS: usize = 8192 / 64 + 2;

/// Sets `out` to a uniformly random integer of `bits` bits (0 ≤ out < 2^bits)
/// from `rng`. The words pass through a stack array that is wiped after use.
pub(crate) fn random_bits(rng: &mut SecretStream, bits: u32, out: &mut Integer) {
    let words = (bits as usize).div_ceil(64);
    if words > MAX_WORDS {
        // Large public values (DH starts) only: no wiping needed, but keep
        // the same construction.
        let mut big: Vec<u64> = (0..words).map(|_| rng.next_u64()).collect();
        mask_top(&mut big, bits);
        out.assign_digits(&big, Order::Lsf);
        return;
    }
    let mut buf = [0u64; MAX_WORDS];
    for w in buf[..words].iter_mut() {
        *w = rng.next_u64();
    }
    assign_masked(&mut buf, words, bits, out);
}

/// `out` ← the first `words` words of `buf` below 2^`bits`; then `buf`
/// is wiped.
fn assign_masked(buf: &mut [u64; MAX_WORDS], words: usize, bits: u32, out: &mut Integer) {
    mask_top(&mut buf[..words], bits);
    out.assign_digits(&buf[..words], Order::Lsf);
    buf.zeroize();
}

/// The words [`random_in_range`] draws for `width`: `width`'s bits and 64
/// more.
pub(crate) fn range_words(width: &Integer) -> usize {
    (width.significant_bits() as usize + 64).div_ceil(64)
}

/// What [`random_in_range`] gives `out` from a stream whose first
/// [`range_words`]`(width)` words are `words` (the same value: those are
/// the words it reads). The words pass through a stack array that is
/// wiped after use.
pub(crate) fn in_range_from_words(words: &[u64], lo: &Integer, width: &Integer, out: &mut Integer) {
    from_words(words, lo, width, out, |x, w| *x %= w);
}

/// [`random_in_range_secret`]'s value from a stream whose first
/// [`range_words`]`(width)` words are `words` (see
/// [`in_range_from_words`]).
pub(crate) fn in_range_from_words_secret(
    words: &[u64],
    lo: &Integer,
    width: &Integer,
    out: &mut Integer,
) {
    from_words(words, lo, width, out, |x, w| {
        *x = crate::gmp::sec::rem(x, w)
    });
}

/// [`draw_in_range`] from the stream's first words.
fn from_words(
    words: &[u64],
    lo: &Integer,
    width: &Integer,
    out: &mut Integer,
    reduce: impl FnOnce(&mut Integer, &Integer),
) {
    let n = range_words(width);
    assert!(n <= MAX_WORDS && words.len() >= n, "too few stream words");
    let mut buf = [0u64; MAX_WORDS];
    buf[..n].copy_from_slice(&words[..n]);
    assign_masked(&mut buf, n, width.significant_bits() + 64, out);
    reduce(out, width);
    *out += lo;
}

/// Runs `f` with the first `words` words of stream (`purpose`, `index`)
/// of `seed` (at most [`rng_wide::MAX_WORDS`] where `batches` are given,
/// [`MAX_WORDS`] otherwise): from `batches` (streams of `purpose`, drawn
/// sixteen at a time) where given, else read from the stream itself. The
/// same words either way; they pass through a stack array that is wiped.
pub(crate) fn with_first_words<R>(
    seed: &Seed,
    batches: Option<&StreamBatches>,
    purpose: Purpose,
    index: u64,
    words: usize,
    f: impl FnOnce(&[u64]) -> R,
) -> R {
    match batches {
        Some(b) => {
            debug_assert!(b.purpose == purpose && b.words == words, "other batches");
            b.with_words(seed, index, f)
        }
        None => {
            let mut buf = [0u64; MAX_WORDS];
            read_words(seed, purpose, index, &mut buf[..words]);
            let r = f(&buf[..words]);
            buf.zeroize();
            r
        }
    }
}

/// The first `out.len()` words of stream (`purpose`, `index`) of `seed`.
fn read_words(seed: &Seed, purpose: Purpose, index: u64, out: &mut [u64]) {
    seed.with_stream(purpose, index, |rng| {
        for w in out.iter_mut() {
            *w = rng.next_u64();
        }
    });
}

/// Streams of one purpose drawn sixteen at a time
/// ([`crate::secure::rng_wide`]: one pass of the lanes instead of
/// sixteen streams' two ChaCha batches each) and kept until read: the
/// words of index k come from the batch of indices 16⌊k/16⌋ to
/// 16⌊k/16⌋ + 15, computed once, by the first worker that needs it. A
/// search claims indices in order, so its workers read from one batch or
/// the next; four are kept.
///
/// Readers write nothing shared: each batch is a sequence lock (a tag
/// naming the complete batch held, cleared while one is written, read
/// before and after the words), so many workers read at once without
/// passing a cache line between cores. One worker at a time writes a
/// slot; one that finds it being written, or finds a batch it needs
/// replaced, draws its stream alone, as without batches. The batches
/// serve the seed of the first read (a search has one); another seed's
/// streams are drawn one by one.
///
/// The words are in the secret arena ([`SharedWords`]: wiped on drop)
/// and reach a reader through a wiped stack array, the registers cleared
/// after each copy.
pub(crate) struct StreamBatches {
    purpose: Purpose,
    words: usize,
    seed: std::sync::OnceLock<Seed>,
    ring: [Slot; RING],
}

/// Batches a [`StreamBatches`] keeps.
const RING: usize = 4;

struct Slot {
    /// 1 + the first index of the batch whose words `words` holds whole;
    /// 0 while it holds none or one is being written.
    tag: AtomicU64,
    writer: std::sync::Mutex<()>,
    words: SharedWords,
}

impl StreamBatches {
    /// Batches of the first `words` words of purpose `purpose`'s streams;
    /// `None` where the lanes do not apply (no AVX-512F, or more words
    /// than one pass draws).
    pub(crate) fn new(purpose: Purpose, words: usize) -> Option<StreamBatches> {
        (rng_wide::available() && (1..=rng_wide::MAX_WORDS).contains(&words)).then(|| {
            StreamBatches {
                purpose,
                words,
                seed: std::sync::OnceLock::new(),
                ring: std::array::from_fn(|_| Slot {
                    tag: AtomicU64::new(0),
                    writer: std::sync::Mutex::new(()),
                    words: SharedWords::zeroed(rng_wide::LANES * words),
                }),
            }
        })
    }

    /// Runs `f` with the first `words` words of stream (purpose, `index`)
    /// of `seed`: the words [`Seed::with_stream`]'s stream gives first.
    pub(crate) fn with_words<R>(&self, seed: &Seed, index: u64, f: impl FnOnce(&[u64]) -> R) -> R {
        let mut mine = [0u64; rng_wide::MAX_WORDS];
        let out = &mut mine[..self.words];
        let ours = self.seed.get_or_init(|| seed.clone()).same(seed);
        if !(ours && self.read_or_fill(seed, index & MAX_INDEX, out)) {
            read_words(seed, self.purpose, index, out);
        }
        let r = f(&mine[..self.words]);
        mine.zeroize();
        r
    }

    /// Index `index`'s words into `out` from its batch, drawing the batch
    /// first where the slot holds another; false where another worker is
    /// writing the slot (or the lanes declined).
    fn read_or_fill(&self, seed: &Seed, index: u64, out: &mut [u64]) -> bool {
        const L: u64 = rng_wide::LANES as u64;
        let first = index & !(L - 1);
        let at = (index - first) as usize * self.words;
        let slot = &self.ring[(index / L) as usize % RING];
        let tag = first + 1;
        if read(slot, tag, at, out) {
            return true;
        }
        let Ok(_writing) = slot.writer.try_lock() else {
            return false;
        };
        // Written meanwhile by the worker that held the lock.
        if read(slot, tag, at, out) {
            return true;
        }
        let mut buf = [0u64; rng_wide::LANES * rng_wide::MAX_WORDS];
        let all = &mut buf[..rng_wide::LANES * self.words];
        let drawn = seed.derived_words(self.purpose, first, self.words, all);
        if drawn {
            slot.tag.store(0, Ordering::Relaxed);
            std::sync::atomic::fence(Ordering::Release);
            for (i, w) in all.iter().enumerate() {
                slot.words.store(i, *w);
            }
            slot.tag.store(tag, Ordering::Release);
            out.copy_from_slice(&all[at..at + self.words]);
        }
        buf.zeroize();
        crate::secure::clear_registers();
        drawn
    }
}

/// A sequence lock's read: the words at `at` of the batch tagged `tag`
/// into `out`, if the slot held that batch before and after the copy.
fn read(slot: &Slot, tag: u64, at: usize, out: &mut [u64]) -> bool {
    if slot.tag.load(Ordering::Acquire) != tag {
        return false;
    }
    for (i, w) in out.iter_mut().enumerate() {
        *w = slot.words.load(at + i);
    }
    std::sync::atomic::fence(Ordering::Acquire);
    let whole = slot.tag.load(Ordering::Relaxed) == tag;
    crate::secure::clear_registers();
    whole
}

fn mask_top(words: &mut [u64], bits: u32) {
    let extra = (words.len() * 64) as u32 - bits;
    if extra > 0 {
        if let Some(top) = words.last_mut() {
            *top &= u64::MAX >> extra;
        }
    }
}

/// Sets `out` to a uniformly random value in `[lo, lo + width)` (bias below
/// 2^-64: 64 extra random bits are reduced modulo `width`).
pub(crate) fn random_in_range(
    rng: &mut SecretStream,
    lo: &Integer,
    width: &Integer,
    out: &mut Integer,
) {
    draw_in_range(rng, lo, width, out, |x, w| *x %= w);
}

/// The construction both range draws share; `reduce` takes x mod width.
fn draw_in_range(
    rng: &mut SecretStream,
    lo: &Integer,
    width: &Integer,
    out: &mut Integer,
    reduce: impl FnOnce(&mut Integer, &Integer),
) {
    random_bits(rng, width.significant_bits() + 64, out);
    reduce(out, width);
    *out += lo;
}

/// [`random_in_range`] for a secret `width` (a Miller–Rabin base for a
/// secret candidate, width n − 3): the same value, reduced with GMP's
/// side-channel-silent division ([`crate::gmp::sec::rem`]).
pub(crate) fn random_in_range_secret(
    rng: &mut SecretStream,
    lo: &Integer,
    width: &Integer,
    out: &mut Integer,
) {
    draw_in_range(rng, lo, width, out, |x, w| *x = crate::gmp::sec::rem(x, w));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_length_is_enforced() {
        assert!(Seed::from_bytes(&[0u8; 32]).is_ok());
        for len in [0usize, 16, 31, 33, 64] {
            assert!(matches!(
                Seed::from_bytes(&vec![1u8; len]),
                Err(Error::InvalidArgument(_))
            ));
        }
    }

    #[test]
    fn os_seeds_differ() {
        let a = Seed::from_os().unwrap();
        let b = Seed::from_os().unwrap();
        assert_ne!(a.0.as_slice(), b.0.as_slice());
    }

    #[test]
    fn streams_are_pure_functions_of_seed_purpose_index() {
        let s = Seed::from_bytes(&[7u8; 32]).unwrap();
        let mut x = Integer::new();
        let mut y = Integer::new();
        s.with_stream(Purpose::RsaCandidate, 5, |r| random_bits(r, 1024, &mut x));
        s.with_stream(Purpose::RsaCandidate, 5, |r| random_bits(r, 1024, &mut y));
        assert_eq!(x, y);
        s.with_stream(Purpose::RsaCandidate, 6, |r| random_bits(r, 1024, &mut y));
        assert_ne!(x, y);
        s.with_stream(Purpose::MillerRabinBase, 5, |r| {
            random_bits(r, 1024, &mut y)
        });
        assert_ne!(x, y);
        assert!(x.significant_bits() <= 1024 && x.significant_bits() > 1000);
    }

    /// The batches give each index the first words of its own stream:
    /// indices in and across batches, out of order, the ring's slots
    /// reused, two seeds interleaved (the batches serve the first; the
    /// other's streams are drawn one by one), and readers on four threads
    /// at once (a slot being written: the reader draws alone).
    #[test]
    fn batches_give_each_index_its_streams_first_words() {
        let words = 17;
        let Some(batches) = StreamBatches::new(Purpose::RsaCandidate, words) else {
            crate::capability::skip(
                "avx512",
                "AVX-512F is not in use here (not on this CPU, or not in this build): the candidates' streams are drawn one by one",
            );
            return;
        };
        let seeds = [
            Seed::from_bytes(&[3u8; 32]).unwrap(),
            Seed::from_bytes(&[4u8; 32]).unwrap(),
        ];
        let direct = |seed: &Seed, index: u64| -> Vec<u64> {
            seed.with_stream(Purpose::RsaCandidate, index, |r| {
                (0..words).map(|_| r.next_u64()).collect()
            })
        };
        let indices: Vec<u64> = [
            0u64,
            1,
            15,
            16,
            17,
            200,
            31,
            64,
            65,
            3,
            130,
            1 << 48,
            (1 << 48) + 77,
        ]
        .into_iter()
        .chain((300..340).rev())
        .collect();
        for &i in &indices {
            for seed in &seeds {
                let got = batches.with_words(seed, i, |w| w.to_vec());
                assert_eq!(got, direct(seed, i), "index {i}");
            }
        }
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let (batches, seeds, direct) = (&batches, &seeds, &direct);
                s.spawn(move || {
                    for i in (t..2000).step_by(4) {
                        let seed = &seeds[(i % 3 == 0) as usize];
                        let got = batches.with_words(seed, i, |w| w.to_vec());
                        assert_eq!(got, direct(seed, i), "index {i} on thread {t}");
                    }
                });
            }
        });
    }

    /// The value drawn from a stream's first words is the value drawn from
    /// the stream, at every size an RSA prime's candidate has.
    #[test]
    fn a_range_from_words_is_the_range_from_the_stream() {
        let s = Seed::from_bytes(&[5u8; 32]).unwrap();
        for bits in [256u32, 342, 512, 1024, 1536, 2048, 4096] {
            let lo = Integer::from(Integer::ONE << (bits - 1)) + 12345u32;
            let width = Integer::from(Integer::ONE << bits) - &lo;
            let n = range_words(&width);
            for i in 0..20 {
                let (mut a, mut b) = (Integer::new(), Integer::new());
                s.with_stream(Purpose::RsaCandidate, i, |r| {
                    random_in_range(r, &lo, &width, &mut a)
                });
                let words: Vec<u64> = s.with_stream(Purpose::RsaCandidate, i, |r| {
                    (0..n).map(|_| r.next_u64()).collect()
                });
                in_range_from_words(&words, &lo, &width, &mut b);
                assert_eq!(a, b, "{bits} bits, index {i}");
                s.with_stream(Purpose::RsaProvable, i, |r| {
                    random_in_range_secret(r, &lo, &width, &mut a)
                });
                let words: Vec<u64> = s.with_stream(Purpose::RsaProvable, i, |r| {
                    (0..n).map(|_| r.next_u64()).collect()
                });
                in_range_from_words_secret(&words, &lo, &width, &mut b);
                assert_eq!(a, b, "{bits} bits, index {i}, secret reduction");
            }
        }
    }

    #[test]
    fn range_is_respected() {
        let s = Seed::from_bytes(&[9u8; 32]).unwrap();
        let lo = Integer::from(1000);
        let width = Integer::from(17);
        let mut v = Integer::new();
        for i in 0..200 {
            s.with_stream(Purpose::PairwiseTest, i, |r| {
                random_in_range(r, &lo, &width, &mut v)
            });
            assert!((1000..1017).contains(&v));
        }
    }
}
