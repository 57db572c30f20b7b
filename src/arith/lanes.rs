//! Secret exponentiations in the lanes of AVX-512 IFMA registers: one
//! number per 64-bit lane, eight at once.
//!
//! `arith::ifma` spreads one number's 52-bit digits across a register's
//! lanes, and each step of its multiplication shifts the accumulator by
//! one lane (`valignq`, a shuffle) and broadcasts a digit. Here the layout
//! is turned around: register j holds digit j of eight numbers, one per
//! lane, so a multiply-add does eight lanes' digit products and the
//! accumulator's shift is a change of register, nothing at run time. The
//! multiplication (`imp::amm_rows`) is written out row by row with
//! constant positions, so that the accumulator stays in registers up to
//! 24 digits (1245 bits); the lanes may share one modulus or have eight.
//! A squaring forms its product column by column instead, each pair of
//! digits once (`ams_rows_body`): three quarters of the multiply-adds.
//!
//! Two users:
//! - [`fermat_base2_secret`]: the first test of up to eight RSA
//!   candidates of one size (205 to 1244 bits: RSA-512 to RSA-2048's
//!   primes), each modulo its own n; one squaring per bit of n, doubled
//!   in the lanes whose exponent bit is 1 by a per-lane shift of the
//!   result's digits (0 or 1) as they are normalised, so no lane's bit
//!   decides a branch or an address. From 1245 to 8192 bits (RSA-3072
//!   to RSA-16384's primes, DH-1536 to DH-8192's q) [`fermat_base2_secret`]
//!   runs the same test with the squaring in bands of eight accumulator
//!   positions (`imp::sqr_banded`): 26 to 158 digits do not fit the
//!   registers at once. Its cross products too are formed once each and
//!   doubled, in a pass of their own before the reduction's.
//! - [`exps_secret`]: up to eight secret exponentiations of 256 to 1245
//!   bits (RSA-512 to RSA-2048's primes), each lane with its own modulus,
//!   base and exponent, each a Miller–Rabin round or a power: a two-prime
//!   key's confirmation rounds and its pairwise test's CRT powers 2^(d_i)
//!   mod r_i in one pass of eight lanes and one of four (`rsa::confirm`),
//!   and [`mr_rounds_secret`], up to eight rounds of one candidate (the
//!   case of one modulus). Its kernel (`lanes/kernel.rs`) is compiled
//!   twice: for 512-bit registers (`imp`, eight lanes) and for 256-bit
//!   registers of AVX-512 VL (`imp4`, four lanes, for groups of up to
//!   four, which cost less than eight lanes on CPUs that issue more
//!   256-bit multiply-adds per cycle).
//!
//! The rounds are constant time as `prime::mr`'s fixed-limb round, with
//! the squarings folded into the exponentiation as in
//! `arith::ifma::mr_round_secret`: per lane s by a count of trailing zeros
//! of one limb, E = (n − 1)·2^t (t ≡ −s mod 4) by shifts, base^E by fixed
//! 4-bit windows over the largest n's bit count plus 3, each lane's window
//! taken from its own exponent by a vector shift and its power read by
//! scanning all sixteen table entries with per-lane masks; at the last
//! `MAX_S` + 3 positions x is compared with 1 and −1, counted by per-lane
//! masks only where it holds base^d and base^(d·2^j), j < s. A power's
//! lane runs the same loop over its exponent, never counted. Every loop's
//! length, index and branch depends on the moduli's size and on which
//! lanes are rounds or powers only. Lanes without an item of their own
//! run a copy of the first.

// See `arith::ifma` for the MSRV note.
#![allow(clippy::incompatible_msrv)]

#[cfg(all(target_arch = "x86_64", pf_avx512))]
use std::arch::x86_64::*;
use std::sync::atomic::AtomicBool;
#[cfg(all(target_arch = "x86_64", pf_avx512))]
use std::sync::atomic::Ordering;

/// Rounds run at once (lanes of a 512-bit register).
pub(crate) const LANES: usize = 8;

/// The sizes (limbs of n) taken: RSA-512 to RSA-2048 primes (up to 24
/// digits, [`applies`] checks). Above, the digit-spread layout of
/// `arith::ifma` does better.
pub(crate) const LIMBS: std::ops::RangeInclusive<usize> = 4..=20;

/// Whether [`mr_rounds_secret`] takes odd numbers of `bits` bits on this
/// CPU (their size only: [`applies`] checks the number).
pub(crate) fn rounds_take(bits: u32) -> bool {
    crate::arith::ifma::available()
        && LIMBS.contains(&(bits as usize).div_ceil(64))
        && (bits as usize + 3).div_ceil(52) <= MAX_DIGITS
}

/// The most 52-bit digits [`mr_rounds_secret`] and
/// [`fermat_base2_secret`] take (the accumulator's positions, 2k + 1,
/// stay within `imp`'s fixed array).
const MAX_DIGITS: usize = 24;

/// Whether [`mr_rounds_secret`] takes n (limbs, top one non-zero): this
/// CPU has AVX-512 IFMA, n is odd, of [`LIMBS`] limbs, with v2(n − 1) at
/// most `gmp::sec::MAX_S`.
pub(crate) fn applies(n: &[u64]) -> bool {
    crate::arith::ifma::available()
        && LIMBS.contains(&n.len())
        && crate::arith::ifma::digits(n) <= MAX_DIGITS
        && n[0] & 1 == 1
        && n.last().is_some_and(|&t| t != 0)
        && (n[0] ^ 1).trailing_zeros() <= crate::gmp::sec::MAX_S
}

/// Miller–Rabin rounds on a *secret* odd `n` ([`applies`]), one per base
/// (1 to [`LANES`] bases, each 2 ≤ base ≤ n − 2, at most n's length):
/// lane l of the result is 1 when n is a strong probable prime to
/// `bases[l]`, 0 when not (lanes past the bases: 0). `None` when n is not
/// taken or `stop` was set (looked at every 64 exponent bits). `r_mod_n`
/// and `r2_mod_n` are R and R² mod n for R = 2^(52k), k =
/// `arith::ifma::digits(n)`, in n's length, computed by the caller in
/// constant time. [`exps_secret`] with every lane a round of this n.
pub(crate) fn mr_rounds_secret(
    n: &[u64],
    bases: &[&[u64]],
    r_mod_n: &[u64],
    r2_mod_n: &[u64],
    stop: &AtomicBool,
) -> Option<[u64; LANES]> {
    let lanes: Vec<LaneExp<'_>> = bases
        .iter()
        .map(|base| LaneExp {
            n,
            r: r_mod_n,
            r2: r2_mod_n,
            base,
            power: None,
        })
        .collect();
    exps_secret(&lanes, &mut [], stop)
}

/// One lane of [`exps_secret`]: a Miller–Rabin round of `n` to `base`, or
/// `base`^`power` mod n. `r` and `r2` are R and R² mod n for R =
/// 2^(52k), k = `arith::ifma::digits(n)`, at least n's length, computed by
/// the caller in constant time.
pub(crate) struct LaneExp<'a> {
    /// The odd modulus (limbs, top one non-zero).
    pub n: &'a [u64],
    /// R mod n.
    pub r: &'a [u64],
    /// R² mod n.
    pub r2: &'a [u64],
    /// The base: 2 ≤ base ≤ n − 2 for a round, below n for a power; at
    /// most n's length.
    pub base: &'a [u64],
    /// `None`: a round; `Some(e)`: the power base^e, e at most n's length
    /// and bit length.
    pub power: Option<&'a [u64]>,
}

/// Miller–Rabin rounds and modular powers, all on *secret* numbers, one
/// per lane, up to [`LANES`] at once, each lane with its own modulus,
/// base and exponent: the rounds of several candidates and the pairwise
/// test's CRT powers in one pass. Lane l of the result is 1 where lane l
/// is a round its n passes (n is a strong probable prime to its base), 0
/// where it fails or is a power (lanes past `lanes`: 0); the powers go to
/// `outs` in order, one per power lane, each of its n's length. All n
/// have one limb count of [`LIMBS`] and one digit count, each n odd with
/// v2(n − 1) ≤ `gmp::sec::MAX_S` where it has a round. Up to four lanes
/// run in 256-bit registers (`imp4`), more in 512-bit ones (`imp`).
/// `None` when the lanes are not taken, `outs` does not fit, or `stop`
/// was set (looked at every 64 exponent bits).
///
/// Constant time as [`mr_rounds_secret`] was for one n: the loop runs over
/// the largest n's bit count plus 3 in fixed 4-bit windows, each lane's
/// window read from its exponent by a per-lane shift and its table entry
/// by a scan of all sixteen with masks; per lane, s and t set masks, not
/// branches. Which lanes are rounds and which powers is not secret.
pub(crate) fn exps_secret(
    lanes: &[LaneExp<'_>],
    outs: &mut [&mut [u64]],
    stop: &AtomicBool,
) -> Option<[u64; LANES]> {
    let (len, k, bits) = exps_shape(lanes, outs)?;
    #[cfg(all(target_arch = "x86_64", pf_avx512))]
    {
        let job = Prepared::new(lanes, len);
        let mut digits = crate::secure::SecretVec::<u64>::zeroed(LANES * MAX_DIGITS);
        let four = lanes.len() <= 4;
        macro_rules! run {
            ($($k:literal)*) => {
                match (k, four) {
                    $(
                        // SAFETY: `exps_shape` checked AVX-512 F, VL and
                        // IFMA (`ifma::available`).
                        ($k, true) => unsafe {
                            imp4::exps::<$k>(&job, bits, &mut digits, stop).map(|v| {
                                let mut w = [0u64; LANES];
                                w[..4].copy_from_slice(&v);
                                w
                            })
                        },
                        // SAFETY: as above.
                        ($k, false) => unsafe { imp::exps::<$k>(&job, bits, &mut digits, stop) },
                    )*
                    _ => None,
                }
            };
        }
        let v = run!(4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24);
        crate::secure::clear_registers();
        let mut v = v?;
        for x in v.iter_mut().skip(lanes.len()) {
            *x = 0;
        }
        let powers = lanes.iter().enumerate().filter(|(_, l)| l.power.is_some());
        for ((l, _), out) in powers.zip(outs.iter_mut()) {
            out[..len].fill(0);
            crate::arith::ifma::limbs_into(&digits[l * k..(l + 1) * k], &mut out[..len]);
            v[l] = 0;
        }
        Some(v)
    }
    #[cfg(not(all(target_arch = "x86_64", pf_avx512)))]
    {
        let _ = (stop, len, k, bits);
        None
    }
}

/// The limb count, digit count and largest bit length of a group
/// [`exps_secret`] takes; `None` where it does not (see there).
fn exps_shape(lanes: &[LaneExp<'_>], outs: &[&mut [u64]]) -> Option<(usize, usize, usize)> {
    let first = lanes.first()?;
    let len = first.n.len();
    let k = crate::arith::ifma::digits(first.n);
    let taken = |l: &LaneExp<'_>| {
        let n = l.n;
        LIMBS.contains(&n.len())
            && n.len() == len
            && crate::arith::ifma::digits(n) == k
            && n[0] & 1 == 1
            && n.last().is_some_and(|&t| t != 0)
            && l.r.len() >= len
            && l.r2.len() >= len
            && l.base.len() <= len
            && match l.power {
                None => (n[0] ^ 1).trailing_zeros() <= crate::gmp::sec::MAX_S,
                Some(e) => e.len() <= len && bit_length(e) <= bit_length(n),
            }
    };
    let powers = lanes.iter().filter(|l| l.power.is_some()).count();
    let ok = crate::arith::ifma::available()
        && lanes.len() <= LANES
        && k <= MAX_DIGITS
        && lanes.iter().all(taken)
        && outs.len() == powers
        && outs.iter().all(|o| o.len() >= len);
    let bits = lanes.iter().map(|l| bit_length(l.n)).max()?;
    ok.then_some((len, k, bits))
}

/// The bit length of the limbs x (0 for none or all zero).
fn bit_length(x: &[u64]) -> usize {
    let top = x.iter().rposition(|&w| w != 0);
    top.map_or(0, |i| 64 * i + 64 - x[i].leading_zeros() as usize)
}

/// The first `len` limbs of each of `xs` (at most [`LANES`]), in an
/// array: the Fermat kernels take R mod n this way, without a heap call
/// per group.
#[cfg(all(target_arch = "x86_64", pf_avx512))]
fn cut_to<'a>(xs: &[&'a [u64]], len: usize) -> [&'a [u64]; LANES] {
    std::array::from_fn(|i| xs.get(i).map_or(&[][..], |x| &x[..len]))
}

/// [`exps_secret`]'s lanes as the kernels read them: the numbers' limbs
/// by reference, and per lane −1 in Montgomery form (n − R mod n), the
/// exponent by words ((n − 1)·2^t for a round, t ≡ −s mod 4, so that
/// base^d·R comes right after the product of a window; the power's
/// exponent for a power) and the round's watch (s + t, t; 1 for a round,
/// 0 for a power), all in the secret arena and wiped when dropped.
#[cfg(all(target_arch = "x86_64", pf_avx512))]
struct Prepared<'a> {
    count: usize,
    len: usize,
    ns: Vec<&'a [u64]>,
    rs: Vec<&'a [u64]>,
    r2s: Vec<&'a [u64]>,
    bases: Vec<&'a [u64]>,
    /// Lane i's −1 at words [20i, 20i + len).
    minus: crate::secure::SecretVec<u64>,
    /// Lane i's exponent at words [21i, 21i + 21).
    exps: crate::secure::SecretVec<u64>,
    /// Lane i's s + t, t and round flag at words 3i, 3i + 1, 3i + 2.
    watch: crate::secure::SecretVec<u64>,
}

#[cfg(all(target_arch = "x86_64", pf_avx512))]
impl<'a> Prepared<'a> {
    fn new(lanes: &[LaneExp<'a>], len: usize) -> Prepared<'a> {
        use crate::secure::SecretVec;
        let count = lanes.len();
        let mut job = Prepared {
            count,
            len,
            ns: lanes.iter().map(|l| l.n).collect(),
            rs: lanes.iter().map(|l| &l.r[..len]).collect(),
            r2s: lanes.iter().map(|l| &l.r2[..len]).collect(),
            bases: lanes.iter().map(|l| l.base).collect(),
            minus: SecretVec::zeroed(20 * count),
            exps: SecretVec::zeroed(21 * count),
            watch: SecretVec::zeroed(3 * count),
        };
        for (i, l) in lanes.iter().enumerate() {
            crate::arith::ifma::minus_one_into(l.n, l.r, &mut job.minus[20 * i..20 * i + len]);
            let e = &mut job.exps[21 * i..21 * i + 21];
            match l.power {
                None => {
                    let s = (l.n[0] ^ 1).trailing_zeros();
                    let t = (4 - (s & 3)) & 3;
                    crate::arith::ifma::shifted_minus_one_into(l.n, t, &mut e[..=len]);
                    job.watch[3 * i..3 * i + 3].copy_from_slice(&[
                        u64::from(s + t),
                        u64::from(t),
                        1,
                    ]);
                }
                Some(p) => e[..p.len()].copy_from_slice(p),
            }
        }
        job
    }

    /// The caller's lane that kernel lane l runs (lane 0's past them).
    fn lane(&self, l: usize) -> usize {
        if l < self.count {
            l
        } else {
            0
        }
    }

    /// Kernel lane l's exponent by words.
    fn exponent(&self, l: usize) -> &[u64] {
        let i = self.lane(l);
        &self.exps[21 * i..21 * i + 21]
    }

    /// Kernel lane l's watch: s + t, t, and 1 for a round (0 for a power).
    fn watch(&self, l: usize) -> [u64; 3] {
        let i = self.lane(l);
        [
            self.watch[3 * i],
            self.watch[3 * i + 1],
            self.watch[3 * i + 2],
        ]
    }

    /// The lanes' −1 in Montgomery form, in n's length (the first
    /// `count` entries; in an array, without a heap call).
    fn minus_ones(&self) -> [&[u64]; LANES] {
        std::array::from_fn(|i| {
            if i < self.count {
                &self.minus[20 * i..20 * i + self.len]
            } else {
                &[]
            }
        })
    }
}

/// The digit counts [`fermat_base2_secret`] takes: odd numbers of 205 to
/// 1244 bits (RSA-512 to RSA-2048 primes), whose accumulator and operands
/// fit the 32 vector registers well enough; above, up to 8192 bits, the
/// banded squaring (`imp::sqr_banded`) does better.
pub(crate) const FERMAT_DIGITS: std::ops::RangeInclusive<usize> = 5..=MAX_DIGITS;

/// The digit count k of the base-2 Fermat test in lanes for odd numbers
/// of `bits` bits: the fewest 52-bit digits with 2^(52k) ≥ 16n, so that a
/// number doubled after its squaring (below 4n) squares to below 2n
/// again; `None` outside [`FERMAT_DIGITS`] or without AVX-512 IFMA.
pub(crate) fn fermat_digits(bits: u32) -> Option<usize> {
    let k = (bits as usize + 4).div_ceil(52);
    (crate::arith::ifma::available() && FERMAT_DIGITS.contains(&k)).then_some(k)
}

/// The digit count of [`fermat_base2_secret`] for odd numbers of `bits`
/// bits: [`fermat_digits`] up to 1244 bits (rows written out),
/// [`banded_digits`] from 1245 to 8192 (bands); `None` elsewhere or
/// without AVX-512 IFMA.
pub(crate) fn lanes_digits(bits: u32) -> Option<usize> {
    fermat_digits(bits).or_else(|| banded_digits(bits))
}

/// The base-2 Fermat test on up to eight *secret* odd numbers at once,
/// one per lane, each modulo its own n: lane l of the result is 1 when
/// 2^(n_l − 1) ≡ 1 (mod n_l), 0 when not (lanes past `ns`: 0). All of
/// `ns` have the same bit length b, with [`lanes_digits`]`(b)` = k;
/// `rs[l]` is 2^(52k) mod n_l, computed by the caller in constant time.
/// Up to 24 digits the squaring is written out row by row (`imp::fermat`),
/// from 26 to 158 digits (even counts) in bands (`imp::fermat_banded`).
/// `None` when that does not hold or `stop` was set (looked at every 64
/// exponent bits).
///
/// Always in 512-bit registers: the searches' groups are full (eight),
/// and eight lanes cost less than two passes of four in 256-bit
/// registers on every CPU measured, Zen 4 included (1.03–1.32× as much
/// there, from 256 to 3071 bits).
///
/// Constant time: the loop runs over b bits, one squaring per bit, each
/// followed by a doubling by a per-lane shift of 0 or 1 (the exponent's
/// bit, a vector operand); no branch, index or address depends on the
/// numbers. Lanes without a number of their own test a copy of the first.
pub(crate) fn fermat_base2_secret(
    ns: &[&[u64]],
    rs: &[&[u64]],
    stop: &AtomicBool,
) -> Option<[u64; LANES]> {
    let bits = group_bits(ns, rs)?;
    let k = lanes_digits(u32::try_from(bits).ok()?)?;
    #[cfg(all(target_arch = "x86_64", pf_avx512))]
    {
        // SAFETY: `lanes_digits` checked AVX-512 F and IFMA.
        let v = unsafe {
            match k {
                5 => imp::fermat::<5>(ns, rs, bits, stop),
                6 => imp::fermat::<6>(ns, rs, bits, stop),
                7 => imp::fermat::<7>(ns, rs, bits, stop),
                8 => imp::fermat::<8>(ns, rs, bits, stop),
                9 => imp::fermat::<9>(ns, rs, bits, stop),
                10 => imp::fermat::<10>(ns, rs, bits, stop),
                11 => imp::fermat::<11>(ns, rs, bits, stop),
                12 => imp::fermat::<12>(ns, rs, bits, stop),
                13 => imp::fermat::<13>(ns, rs, bits, stop),
                14 => imp::fermat::<14>(ns, rs, bits, stop),
                15 => imp::fermat::<15>(ns, rs, bits, stop),
                16 => imp::fermat::<16>(ns, rs, bits, stop),
                17 => imp::fermat::<17>(ns, rs, bits, stop),
                18 => imp::fermat::<18>(ns, rs, bits, stop),
                19 => imp::fermat::<19>(ns, rs, bits, stop),
                20 => imp::fermat::<20>(ns, rs, bits, stop),
                21 => imp::fermat::<21>(ns, rs, bits, stop),
                22 => imp::fermat::<22>(ns, rs, bits, stop),
                23 => imp::fermat::<23>(ns, rs, bits, stop),
                24 => imp::fermat::<24>(ns, rs, bits, stop),
                26..=BANDED_MAX if k % 2 == 0 => match k % 8 {
                    0 => imp::fermat_banded::<0>(k, ns, rs, bits, stop),
                    2 => imp::fermat_banded::<2>(k, ns, rs, bits, stop),
                    4 => imp::fermat_banded::<4>(k, ns, rs, bits, stop),
                    _ => imp::fermat_banded::<6>(k, ns, rs, bits, stop),
                },
                _ => None,
            }
        };
        finish(v, ns.len())
    }
    #[cfg(not(all(target_arch = "x86_64", pf_avx512)))]
    {
        let _ = (stop, k);
        None
    }
}

/// The bit length of a group the Fermat lanes may take: one to eight odd
/// numbers of one bit length (at least 3) and limb count, with an R mod n
/// of at least that length each.
fn group_bits(ns: &[&[u64]], rs: &[&[u64]]) -> Option<usize> {
    let first = ns.first()?;
    let bits = 64 * first.len() - first.last().map_or(64, |t| t.leading_zeros() as usize);
    let ok = ns.len() <= LANES
        && rs.len() == ns.len()
        && ns.iter().all(|n| {
            n.len() == first.len()
                && n[0] & 1 == 1
                && n.last().map(|t| t.leading_zeros()) == first.last().map(|t| t.leading_zeros())
        })
        && rs.iter().all(|r| r.len() >= first.len())
        && bits >= 3;
    ok.then_some(bits)
}

/// A group's verdicts as the lanes left them, the vector registers
/// cleared and the lanes past the group's `len` numbers set to 0.
#[cfg(all(target_arch = "x86_64", pf_avx512))]
fn finish(v: Option<[u64; LANES]>, len: usize) -> Option<[u64; LANES]> {
    crate::secure::clear_registers();
    v.map(|mut v| {
        for x in v.iter_mut().skip(len) {
            *x = 0;
        }
        v
    })
}

/// The most bits [`fermat_base2_secret`] takes in bands: 128 limbs
/// (DH-8192's q, RSA-16384's primes), the most the callers' R mod n
/// buffers and [`imp`]'s exponent words hold.
pub(crate) const BANDED_BITS: u32 = 8192;

/// The most digits [`fermat_base2_secret`] takes in bands: those of
/// [`BANDED_BITS`] bits.
pub(crate) const BANDED_MAX: usize = 158;

const _: () = assert!((BANDED_BITS as usize + 4).div_ceil(52).div_ceil(2) * 2 == BANDED_MAX);

/// The digit count of [`fermat_base2_secret`]'s bands for odd numbers of
/// `bits` bits: the fewest 52-bit digits with 2^(52k) ≥ 16n, rounded up to
/// an even count, from 26 to [`BANDED_MAX`] (numbers of 1245 to
/// [`BANDED_BITS`] bits); `None` elsewhere or without AVX-512 IFMA.
pub(crate) fn banded_digits(bits: u32) -> Option<usize> {
    let k = (bits as usize + 4).div_ceil(52);
    let k = k.next_multiple_of(2);
    (crate::arith::ifma::available() && (1245..=BANDED_BITS).contains(&bits)).then_some(k)
}

/// Words of one group of eight trial-division batches in the table that
/// [`no_factor`] walks, for candidates of k 52-bit digits: the eight
/// batches' weights per digit (8k words, `[8j + l]` = 2^(52j) mod d_l),
/// their products d_l (8 words, odd, below 2^52), −d_l⁻¹ mod 2^52 (8),
/// then per prime slot the eight batches' (p⁻¹ mod 2^64) and
/// ⌊(2^64 − 1)/p⌋ (16 words per slot). A batch with fewer primes than
/// the group's slots fills the rest with (1, 0), which fires only when
/// its remainder is 0, that is when every prime of the batch divides.
pub(crate) const fn group_words(k: usize, slots: usize) -> usize {
    LANES * k + 2 * LANES + 2 * LANES * slots
}

/// Trial division of the 52-bit digits `x` by the batches of `groups`
/// (laid out as [`group_words`] says, group g ending at `ends[g]`), eight
/// batches at a time on AVX-512 IFMA: per lane the dot product Σ x_j ·
/// w_j as low and high sums of 52-bit halves, one Montgomery step modulo
/// the batch product to a word r ≡ x · 2^-52 (no division; 2^-52 changes
/// no prime's divisibility), then per slot the multiply-and-compare test
/// r · p⁻¹ mod 2^64 ≤ ⌊(2^64 − 1)/p⌋ of Granlund and Montgomery. Only
/// the lanes of `last_valid` (a mask) count in the last group. Stops at
/// the first group with a factor: `Some(false)`; `Some(true)` when no
/// prime divides. `None` where this CPU lacks AVX-512 F, DQ or IFMA, or
/// the lengths do not fit (`x` at most 160 digits, each group at least
/// its weights and products, whole slots).
pub(crate) fn no_factor(x: &[u64], groups: &[u64], ends: &[u32], last_valid: u8) -> Option<bool> {
    let k = x.len();
    // Each group's layout is checked as the walk reaches it (most
    // candidates stop in the first groups).
    if !crate::arith::ifma::available() || !dq() || k == 0 || k > 160 {
        return None;
    }
    #[cfg(all(target_arch = "x86_64", pf_avx512))]
    {
        // SAFETY: AVX-512 F, DQ and IFMA were checked; the layout is
        // checked group by group inside.
        unsafe { imp::no_factor(x, groups, ends, last_valid) }
    }
    #[cfg(not(all(target_arch = "x86_64", pf_avx512)))]
    {
        let _ = (groups, ends, last_valid);
        None
    }
}

/// Whether this CPU has AVX-512 DQ (every CPU with IFMA has; checked all
/// the same, for the 64-bit multiplies of [`no_factor`]).
fn dq() -> bool {
    #[cfg(all(target_arch = "x86_64", pf_avx512))]
    {
        std::arch::is_x86_feature_detected!("avx512dq")
    }
    #[cfg(not(all(target_arch = "x86_64", pf_avx512)))]
    {
        false
    }
}

// The lanes' Montgomery multiplication, written out for both register
// widths: the intrinsics are the names `imp` and `imp4` give them
// (`madd52lo`, `add64`, ...), and `V`, `Lanes`, `Modulus`, `POSITIONS` and
// `MASK` are theirs.

/// The rows of [`amm_rows`] (see there), written out: `$p` the
/// accumulator, `$a`, `$b` the operands, `$m` the modulus, `$k` the
/// digit count; row `$i` over the digits `$j`.
#[cfg(all(target_arch = "x86_64", pf_avx512))]
macro_rules! amm_row {
    ($p:ident, $a:ident, $b:ident, $m:ident, $zero:ident, $k:ident; $i:literal; $($j:literal)*) => {
        if $i < $k {
            let bi = $b[$i];
            $(
                if $j < $k {
                    $p[$i + $j] = madd52lo($p[$i + $j], bi, $a[$j]);
                    $p[$i + $j + 1] = madd52hi($p[$i + $j + 1], bi, $a[$j]);
                }
            )*
            redc_row!($p, $m, $zero, $k; $i; $($j)*);
        }
    };
}

/// [`amm_rows`]'s rows 0 to 23 (those below `$k` run).
#[cfg(all(target_arch = "x86_64", pf_avx512))]
macro_rules! amm_rows {
    ($p:ident, $a:ident, $b:ident, $m:ident, $zero:ident, $k:ident; $($i:literal)*) => {
        $(
            amm_row!($p, $a, $b, $m, $zero, $k; $i;
                0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23);
        )*
    };
}

/// [`amm_rows`]'s body, for the loops that must have it in place (a
/// call would pass the operands and the result through memory and
/// cost a third of the multiplication).
#[cfg(all(target_arch = "x86_64", pf_avx512))]
macro_rules! amm_rows_body {
    ($a:expr, $b:expr, $m:expr, $double:expr, $k:ident) => {{
        let (a, b, m, double): (&Lanes<$k>, &Lanes<$k>, &Modulus<$k>, V) =
            ($a, $b, $m, $double);
        let zero = zero_v();
        let mut p = [zero; POSITIONS];
        amm_rows!(p, a, b, m, zero, $k;
            0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23);
        upper_half!(p, double, zero, $k)
    }};
}

/// Positions k to 2k − 1 of an accumulator `$p` after its reduction,
/// shifted left by `$double` (0 or 1 per lane) and normalised to 52-bit
/// digits: the result of [`amm_rows_body`] and [`ams_rows_body`]. `$p`
/// is not wiped here: it lives in registers (a wipe would put it in
/// memory, and cost more than the multiplication); what the register
/// allocator spills stays on the stack, which the search wipes
/// (`secure::with_wiped_stack`).
#[cfg(all(target_arch = "x86_64", pf_avx512))]
macro_rules! upper_half {
    ($p:ident, $double:ident, $zero:ident, $k:ident) => {{
        let mask = set1(MASK as i64);
        let mut carry = $zero;
        let out: Lanes<$k> = std::array::from_fn(|j| {
            let v = add64(sllv64($p[$k + j], $double), carry);
            carry = srli64::<52>(v);
            and(v, mask)
        });
        out
    }};
}

/// Column `$c` of a squaring's product a·a (see [`ams_rows_body`]),
/// added to what position `$c` holds (the reduction rows that ran before
/// it): twice the products a_i·a_j, i < j, whose low half lands at `$c`
/// (i + j = c) or whose high half does (i + j = c − 1), in two chains,
/// and the square a_(c/2)²'s half at `$c`; positions past 2k − 1 are
/// left out.
#[cfg(all(target_arch = "x86_64", pf_avx512))]
macro_rules! ams_column {
    ($p:ident, $a:ident, $zero:ident, $k:ident; $c:literal; $($i:literal)*) => {
        if $c < 2 * $k {
            let (mut lo, mut hi) = ($zero, $zero);
            $(
                {
                    // The pair (i, c − i) for the low half, (i, c − 1 − i)
                    // for the high; both constants (wrapping where i > c,
                    // which the bound on j rules out).
                    let j = ($c as usize).wrapping_sub($i);
                    if $i < j && j < $k {
                        lo = madd52lo(lo, $a[$i], $a[j]);
                    }
                    let j1 = j.wrapping_sub(1);
                    if $i < j1 && j1 < $k {
                        hi = madd52hi(hi, $a[$i], $a[j1]);
                    }
                }
            )*
            let s = add64(lo, hi);
            let mut t = add64(add64(s, s), $p[$c]);
            let h = $c / 2;
            if h < $k {
                t = if $c % 2 == 0 {
                    madd52lo(t, $a[h], $a[h])
                } else {
                    madd52hi(t, $a[h], $a[h])
                };
            }
            $p[$c] = t;
        }
    };
}

/// [`ams_column`] for columns `$c` (pairs over digits 0 to 23).
#[cfg(all(target_arch = "x86_64", pf_avx512))]
macro_rules! ams_columns {
    ($p:ident, $a:ident, $zero:ident, $k:ident; $($c:literal)*) => {
        $(
            ams_column!($p, $a, $zero, $k; $c;
                0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23);
        )*
    };
}

/// Row `$i` of the Montgomery reduction of a product already in `$p`:
/// q = p_i·(−n⁻¹) mod 2^52, q·n added from position i, position i's
/// carry into the next (the second half of [`amm_row`]).
#[cfg(all(target_arch = "x86_64", pf_avx512))]
macro_rules! redc_row {
    ($p:ident, $m:ident, $zero:ident, $k:ident; $i:literal; $($j:literal)*) => {
        if $i < $k {
            let q = madd52lo($zero, $p[$i], $m.k0);
            // Position i + 1, which the next row's factor waits for, from
            // three independent steps: position i's carry, q·n_0's high
            // half and q·n_1's low half.
            let low = madd52lo($p[$i], q, $m.n[0]);
            let h0 = madd52hi($zero, q, $m.n[0]);
            let l1 = madd52lo($p[$i + 1], q, $m.n[1]);
            $p[$i + 1] = add64(add64(l1, h0), srli64::<52>(low));
            $(
                if $j < $k && $j >= 1 {
                    if $j >= 2 {
                        $p[$i + $j] = madd52lo($p[$i + $j], q, $m.n[$j]);
                    }
                    $p[$i + $j + 1] = madd52hi($p[$i + $j + 1], q, $m.n[$j]);
                }
            )*
        }
    };
}

/// Column `$c` then reduction row `$i`, pair by pair (`$c` ahead of `$i`
/// by the schedule's lag, see [`ams_rows_body`]).
#[cfg(all(target_arch = "x86_64", pf_avx512))]
macro_rules! ams_lagged {
    ($p:ident, $a:ident, $m:ident, $zero:ident, $k:ident; $(($c:literal $i:literal))*) => {
        $(
            ams_column!($p, $a, $zero, $k; $c;
                0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23);
            redc_row!($p, $m, $zero, $k; $i;
                0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23);
        )*
    };
}

/// [`amm_rows_body`] for a·a: the same result (a·a + q·n)/R with the
/// same factors q, for about three quarters of the multiply-adds (at 20
/// digits 1240 instead of 1620). The product is formed column by column
/// ([`ams_column`]): each pair a_i·a_j, i < j, once, its column's sum
/// doubled, the square added. Row i of the reduction ([`redc_row`])
/// needs column i and the rows before it, so the columns run ahead of
/// the rows by a lag, column c beside row c − lag: the columns give the
/// rows' chain of dependent steps work to overlap, and hold registers
/// (lag 6 up to 12 digits, 20 up to 17, 24 above: the fastest of the
/// lags measured on the Intel Xeon of the logs). A column's sum stays
/// below 2^58 (at most 2k pairs' halves, doubled, and one square's), and
/// each position below 2^60 with the reduction's halves and carry, as in
/// the rows. Every index is a constant: nothing depends on the numbers.
#[cfg(all(target_arch = "x86_64", pf_avx512))]
macro_rules! ams_rows_body {
    ($a:expr, $m:expr, $double:expr, $k:ident) => {{
        let (a, m, double): (&Lanes<$k>, &Modulus<$k>, V) = ($a, $m, $double);
        let zero = zero_v();
        let mut p = [zero; POSITIONS];
        // Column c beside row c − lag (see above).
        if $k <= 12 {
            ams_columns!(p, a, zero, $k; 0 1 2 3 4 5);
            ams_lagged!(p, a, m, zero, $k; (6 0) (7 1) (8 2) (9 3) (10 4) (11 5) (12 6) (13 7)
                (14 8) (15 9) (16 10) (17 11) (18 12) (19 13) (20 14) (21 15) (22 16) (23 17)
                (24 18) (25 19) (26 20) (27 21) (28 22) (29 23));
            ams_columns!(p, a, zero, $k; 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47);
        } else if $k <= 17 {
            ams_columns!(p, a, zero, $k; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19);
            ams_lagged!(p, a, m, zero, $k; (20 0) (21 1) (22 2) (23 3) (24 4) (25 5) (26 6) (27 7)
                (28 8) (29 9) (30 10) (31 11) (32 12) (33 13) (34 14) (35 15) (36 16) (37 17)
                (38 18) (39 19) (40 20) (41 21) (42 22) (43 23));
            ams_columns!(p, a, zero, $k; 44 45 46 47);
        } else {
            ams_columns!(p, a, zero, $k; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22
                23);
            ams_lagged!(p, a, m, zero, $k; (24 0) (25 1) (26 2) (27 3) (28 4) (29 5) (30 6) (31 7)
                (32 8) (33 9) (34 10) (35 11) (36 12) (37 13) (38 14) (39 15) (40 16) (41 17)
                (42 18) (43 19) (44 20) (45 21) (46 22) (47 23));
        }
        upper_half!(p, double, zero, $k)
    }};
}

#[cfg(all(target_arch = "x86_64", pf_avx512))]
mod imp {
    use super::*;
    use zeroize::Zeroize;

    use std::arch::x86_64::{
        __m512i as V, _mm512_add_epi64 as add64, _mm512_and_si512 as and,
        _mm512_andnot_si512 as andnot, _mm512_loadu_si512 as loadu,
        _mm512_madd52hi_epu64 as madd52hi, _mm512_madd52lo_epu64 as madd52lo,
        _mm512_or_si512 as or, _mm512_set1_epi64 as set1, _mm512_setzero_si512 as zero_v,
        _mm512_sllv_epi64 as sllv64, _mm512_srli_epi64 as srli64, _mm512_srlv_epi64 as srlv64,
        _mm512_storeu_si512 as storeu, _mm512_sub_epi64 as sub64, _mm512_xor_si512 as xor,
    };

    /// Lanes of a register.
    const W: usize = LANES;

    include!("lanes/kernel.rs");
    /// The Fermat lanes' exponents n − 1 by 64-bit words into `words`
    /// (register i holds word i of each lane's n − 1, `ns[0]`'s where l ≥
    /// ns.len()), as many as the numbers have limbs (bit 0 of n − 1 is 0:
    /// the last step never doubles).
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl")]
    fn exponent_words(ns: &[&[u64]], words: &mut [__m512i]) {
        let mut w = [0u64; LANES];
        for (i, reg) in words.iter_mut().enumerate().take(ns[0].len()) {
            for (l, wl) in w.iter_mut().enumerate() {
                *wl = ns[if l < ns.len() { l } else { 0 }][i] & if i == 0 { !1 } else { !0 };
            }
            // SAFETY: eight words, read unaligned.
            *reg = unsafe { _mm512_loadu_si512(w.as_ptr().cast()) };
        }
        w.zeroize();
    }

    /// The Fermat lanes' loop over the exponent n − 1 (`$words`: word i of
    /// each lane's n − 1 in register i), from bit `$bits` − 1 down: `$body`
    /// with `$bit` 1 in the lanes whose exponent bit is 1, 0 elsewhere (a
    /// per-lane shift of the lane's word, no branch or index on a lane's
    /// value), the stop flag looked at every 64 bits. True when stopped
    /// (the work given up reported). A macro, so that each body stays
    /// inlined in its `target_feature` function.
    macro_rules! over_exponent_bits {
        ($bits:expr, $words:expr, $stop:expr, |$bit:ident| $body:block) => {{
            let bits: usize = $bits;
            let low_bit = _mm512_set1_epi64(1);
            let mut stopped = false;
            for i in (0..bits).rev() {
                if i % 64 == 0 && $stop.load(Ordering::Relaxed) {
                    crate::work::given_up((bits - 1 - i) as u64, bits as u64);
                    stopped = true;
                    break;
                }
                let shift = _mm512_set1_epi64((i % 64) as i64);
                let $bit = _mm512_and_si512(_mm512_srlv_epi64($words[i / 64], shift), low_bit);
                $body
            }
            stopped
        }};
    }

    /// [`super::fermat_base2_secret`] for numbers of K digits and `bits`
    /// bits.
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl")]
    pub(super) fn fermat<const K: usize>(
        ns: &[&[u64]],
        rs: &[&[u64]],
        bits: usize,
        stop: &AtomicBool,
    ) -> Option<[u64; LANES]> {
        let rs_in = cut_to(rs, ns[0].len());
        let mut m = Modulus::<K> {
            n: spread::<K>(ns),
            k0: _mm512_setzero_si512(),
        };
        m.k0 = lane_k0s(ns);
        let mut one = spread::<K>(&rs_in[..rs.len()]);
        // x = 1 in Montgomery form (R mod n, below n).
        let mut x = one;
        // The exponent n − 1 by 64-bit words, a word of each lane per
        // register.
        let mut words = [_mm512_setzero_si512(); 20];
        exponent_words(ns, &mut words);
        let stopped = over_exponent_bits!(bits, words, stop, |bit| {
            x = ams_rows_body!(&x, &m, bit, K);
        });
        let out = fermat_verdict(&x, &one, &m.n);
        wipe(&mut x);
        wipe(&mut one);
        wipe(&mut m);
        wipe(&mut words);
        (!stopped).then_some(out)
    }

    /// Row `$u` of a block (see [`sqr_banded`]) over one band: at each of
    /// the band's positions `$c` (0 to 7 above its foot), the row's
    /// multiplier `$b[$u]` (digit i0 + u of x for the cross products, the
    /// factor q for the reduction) times digit `$base` + c − u of `$x`
    /// (x, or n), where that digit lies above i0 + u and below K: `$lead` is
    /// `$base` − i0 (16 for any band from i0 + 16 up), and the digit is
    /// above i0 + u exactly when c + `$lead` > 2u; `$d` is K − `$base` (8
    /// for any band below the top), and the digit is below K exactly when
    /// c − u < `$d`. Both are constants where the macro is used, so the
    /// conditions fold away.
    macro_rules! pair_row {
        ($acc:ident, $b:ident, $x:ident, $base:ident, $lead:expr, $d:expr; $u:literal;
         $($c:literal)*) => {
            let bu = $b[$u];
            $(
                if ($c as isize) + ($lead as isize) > 2 * $u
                    && ($c as isize) - ($u as isize) < $d
                {
                    let a = $x[$base + $c - $u];
                    $acc[$c] = _mm512_madd52lo_epu64($acc[$c], bu, a);
                    $acc[$c + 1] = _mm512_madd52hi_epu64($acc[$c + 1], bu, a);
                }
            )*
        };
    }

    /// One band of a block of cross products: the rows `$u` of the block
    /// from `$i0` (multipliers `$b`) against the digits from `$base` (see
    /// [`pair_row`]), at positions `$i0` + `$base` to 8 above, kept in
    /// registers for the band.
    macro_rules! pair_band {
        ($p:ident, $b:ident, $x:ident, $i0:ident, $base:expr, $lead:expr, $d:expr; $($u:literal)*) => {{
            let base: usize = $base;
            let s = $i0 + base;
            let mut acc: [__m512i; 9] = std::array::from_fn(|c| $p[s + c]);
            $(
                pair_row!(acc, $b, $x, base, $lead, $d; $u; 0 1 2 3 4 5 6 7);
            )*
            $p[s..s + 9].copy_from_slice(&acc);
        }};
    }

    /// Row `$u` of a block of the reduction (see [`sqr_banded`]) over the
    /// block's first band: its factor q from position `$u`, the factor's
    /// products at positions `$c` (from `$u` + 1 to the band's last,
    /// digit `$c` − `$u` of n), and position `$u` + 1 from three
    /// independent steps (position `$u`'s carry after q·n₀, q·n₀'s high
    /// half, and what it held with q·n₁'s low half), so that the next
    /// row's factor waits for as few steps as the row allows.
    macro_rules! redc_first_row {
        ($acc:ident, $q:ident, $n:ident, $k0:ident, $zero:ident; $u:literal; $($c:literal)*) => {
            let q = _mm512_madd52lo_epu64($zero, $acc[$u], $k0);
            $q[$u] = q;
            let low = _mm512_madd52lo_epu64($acc[$u], q, $n[0]);
            let h0 = _mm512_madd52hi_epu64($zero, q, $n[0]);
            $(
                $acc[$c] = _mm512_madd52lo_epu64($acc[$c], q, $n[$c - $u]);
                $acc[$c + 1] = _mm512_madd52hi_epu64($acc[$c + 1], q, $n[$c - $u]);
            )*
            $acc[$u + 1] = _mm512_add_epi64(
                _mm512_add_epi64($acc[$u + 1], h0),
                _mm512_srli_epi64::<52>(low),
            );
        };
    }

    /// A reduction block's rows `$u` over one later band: [`pair_row`]
    /// with the factors q for multipliers and n's digits, every digit
    /// from 1 up (lead 16), those from K up left out by `$d`.
    macro_rules! redc_band_rows {
        ($acc:ident, $q:ident, $n:ident, $base:ident, $d:expr; $($u:literal)*) => {
            $(
                pair_row!($acc, $q, $n, $base, 16, $d; $u; 0 1 2 3 4 5 6 7);
            )*
        };
    }

    /// One block of `$t` rows of the reduction from `$i0` (see
    /// [`sqr_banded`]) for a modulus of `$k` digits: the first band row by
    /// row (rows `$u` with their positions `$c` after their own), then
    /// the later bands of eight positions from `$i0 + $t` with rows `$r`,
    /// the last one or two with `$d` = K − base (see [`redc_band_rows`]).
    macro_rules! redc_block {
        ($p:ident, $n:ident, $k0:ident, $zero:ident, $i0:expr, $k:expr, $t:literal,
         $d:expr; $([$u:literal; $($c:literal)*])*; $($r:literal)*) => {{
            let i0 = $i0;
            let mut q = [$zero; 8];
            let mut acc: [__m512i; 9] = std::array::from_fn(|c| $p[i0 + c]);
            // The block's first band, written out (the positions are
            // constants: the band stays in registers).
            $(
                redc_first_row!(acc, q, $n, $k0, $zero; $u; $($c)*);
            )*
            $p[i0 + $t] = acc[$t];
            // Position s + c of row i0 + u takes digit s + c − (i0 + u) of
            // n, from 1 up: below K on the bands up to base K − 8, past K
            // on some pairs of the one or two bands after (the edge, at
            // base K − d and, where d + t > 8, K − d + 8).
            let d: isize = $d;
            let edge = $k - d as usize;
            for s in (i0 + $t..i0 + edge).step_by(8) {
                let mut acc: [__m512i; 9] = std::array::from_fn(|c| $p[s + c]);
                let base = s - i0;
                redc_band_rows!(acc, q, $n, base, 8; $($r)*);
                $p[s..s + 9].copy_from_slice(&acc);
            }
            {
                let base = edge;
                let s = i0 + base;
                let mut acc: [__m512i; 9] = std::array::from_fn(|c| $p[s + c]);
                redc_band_rows!(acc, q, $n, base, d; $($r)*);
                $p[s..s + 9].copy_from_slice(&acc);
            }
            if d + $t > 8 {
                let base = edge + 8;
                let s = i0 + base;
                let mut acc: [__m512i; 9] = std::array::from_fn(|c| $p[s + c]);
                redc_band_rows!(acc, q, $n, base, d - 8; $($r)*);
                $p[s..s + 9].copy_from_slice(&acc);
            }
        }};
    }

    /// Digits of [`fermat_banded`]'s operands in memory: K up to
    /// [`BANDED_MAX`] and eight zero digits above (the last block's
    /// multipliers read up to digit K + 5).
    const PADDED: usize = super::BANDED_MAX + 8;

    /// Positions of [`sqr_banded`]'s accumulator: 2K + 1 for K up to
    /// [`BANDED_MAX`], and the last band's top (at most 2K + 8).
    const BANDED_POSITIONS: usize = 2 * super::BANDED_MAX + 9;

    /// x·x·R⁻¹ mod n in every lane (R = 2^(52k), k even, from 26 to
    /// [`BANDED_MAX`], with k mod 8 = R8), doubled in the lanes where
    /// `double` is 1, for x < 4n with R ≥ 16n: below 2n before the
    /// doubling, its digits normalised, written over x's k digits (the
    /// digits above stay 0).
    ///
    /// Too many digits for the registers to hold the operands and the
    /// accumulator, so the work goes in bands of eight accumulator
    /// positions, each band keeping a block's eight multipliers and nine
    /// positions in registers and reading the digits it needs once each.
    /// Three passes over the accumulator:
    /// - the cross products x_i·x_j, i < j, each pair once: blocks of
    ///   eight rows i, each row against the digits above it; a block's
    ///   first two bands hold the pairs of the block's own digits (the
    ///   triangle above the diagonal), the bands after are full until the
    ///   top, where the pairs that would read past digit k − 1 are left
    ///   out;
    /// - each position doubled and the squares x_i² added (a digit cannot
    ///   be doubled before its products: 2·x_i has 53 bits, and the
    ///   multiply-adds read 52);
    /// - the reduction, the rows of [`amm_rows`]'s second half eight at a
    ///   time: a block's first band row by row (q_i = p_i·(−n⁻¹) mod
    ///   2^52 needs row i − 1's carry into position i), its later bands
    ///   with the block's factors q_i in registers.
    ///
    /// Against the rows' product (every pair twice, its reduction in the
    /// same bands) this is three quarters of the multiply-adds, with the
    /// same factors q and the same result. A band's shape — which of its
    /// pairs it leaves out below the diagonal (a block's first two bands
    /// of cross products) and above the top (the last one or two of a
    /// block) — is one of a few constant shapes, chosen by R8 (K − the
    /// first edge band's base) and by the block's place, which k alone
    /// gives, so one function serves every k of a residue. Positions and
    /// indices are constants or loop counters over k: nothing depends on
    /// the numbers. Each position
    /// stays below 4k·2^52 + 2^12 < 2^62 (its pairs' halves doubled, a
    /// square's half, the factors' halves and a carry).
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl")]
    fn sqr_banded<const R8: usize>(
        k: usize,
        x: &mut [__m512i; PADDED],
        n: &[__m512i; PADDED],
        k0: __m512i,
        double: __m512i,
        p: &mut [__m512i; BANDED_POSITIONS],
    ) {
        let zero = _mm512_setzero_si512();
        for v in p.iter_mut().take(2 * k + 9) {
            *v = zero;
        }
        let full = k - R8;
        let top = R8 as isize;
        // The cross products, by blocks of eight rows (lead and room per
        // band as in `pair_row`: 16 and 8 where no pair is left out).
        for i0 in (0..full).step_by(8) {
            let b: [__m512i; 8] = std::array::from_fn(|u| x[i0 + u]);
            pair_band!(p, b, x, i0, i0, 0, 8; 0 1 2 3 4 5 6 7);
            if i0 + 8 < full {
                pair_band!(p, b, x, i0, i0 + 8, 8, 8; 0 1 2 3 4 5 6 7);
                for base in (i0 + 16..full).step_by(8) {
                    pair_band!(p, b, x, i0, base, 16, 8; 0 1 2 3 4 5 6 7);
                }
                pair_band!(p, b, x, i0, full, 16, top; 0 1 2 3 4 5 6 7);
            } else {
                pair_band!(p, b, x, i0, full, 8, top; 0 1 2 3 4 5 6 7);
            }
            if R8 > 0 {
                pair_band!(p, b, x, i0, full + 8, 16, top - 8; 0 1 2 3 4 5 6 7);
            }
        }
        // The last block's rows where k is not a multiple of eight (R8 is
        // a constant: one arm is compiled, the same for every number).
        if R8 > 0 {
            let i0 = full;
            let b: [__m512i; 8] = std::array::from_fn(|u| x[i0 + u]);
            match R8 {
                2 => pair_band!(p, b, x, i0, full, 0, top; 0 1),
                4 => pair_band!(p, b, x, i0, full, 0, top; 0 1 2 3),
                6 => {
                    pair_band!(p, b, x, i0, full, 0, top; 0 1 2 3 4 5);
                    pair_band!(p, b, x, i0, full + 8, 8, top - 8; 0 1 2 3 4 5);
                }
                _ => {}
            }
        }
        // Twice the pairs, and the squares.
        for (i, &xi) in x.iter().enumerate().take(k) {
            let (lo, hi) = (p[2 * i], p[2 * i + 1]);
            p[2 * i] = _mm512_madd52lo_epu64(_mm512_add_epi64(lo, lo), xi, xi);
            p[2 * i + 1] = _mm512_madd52hi_epu64(_mm512_add_epi64(hi, hi), xi, xi);
        }
        // The reduction.
        for i0 in (0..full).step_by(8) {
            redc_block!(p, n, k0, zero, i0, k, 8, top;
                [0; 1 2 3 4 5 6 7] [1; 2 3 4 5 6 7] [2; 3 4 5 6 7] [3; 4 5 6 7]
                [4; 5 6 7] [5; 6 7] [6; 7] [7;];
                0 1 2 3 4 5 6 7);
        }
        match R8 {
            2 => redc_block!(p, n, k0, zero, full, k, 2, 0; [0; 1] [1;]; 0 1),
            4 => redc_block!(p, n, k0, zero, full, k, 4, 0;
                [0; 1 2 3] [1; 2 3] [2; 3] [3;]; 0 1 2 3),
            6 => redc_block!(p, n, k0, zero, full, k, 6, 0;
                [0; 1 2 3 4 5] [1; 2 3 4 5] [2; 3 4 5] [3; 4 5] [4; 5] [5;];
                0 1 2 3 4 5),
            _ => {}
        }
        let mask = _mm512_set1_epi64(MASK as i64);
        let mut carry = zero;
        for j in 0..k {
            let v = _mm512_add_epi64(_mm512_sllv_epi64(p[k + j], double), carry);
            carry = _mm512_srli_epi64::<52>(v);
            x[j] = _mm512_and_si512(v, mask);
        }
    }

    /// [`sqr_banded`] of `xs` modulo `ns` (limbs, k digits), doubled in
    /// the lanes where `double` is 1: each result's k digits, lane by
    /// lane, for the tests.
    #[cfg(test)]
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl")]
    pub(super) fn square_banded(
        k: usize,
        ns: &[&[u64]],
        xs: &[&[u64]],
        double: &[u64; LANES],
    ) -> Vec<[u64; LANES]> {
        let zero = _mm512_setzero_si512();
        let mut n = [zero; PADDED];
        spread_into(ns, &mut n[..k]);
        let mut x = [zero; PADDED];
        spread_into(xs, &mut x[..k]);
        let k0 = lane_k0s(ns);
        // SAFETY: eight words, read unaligned.
        let d = unsafe { _mm512_loadu_si512(double.as_ptr().cast()) };
        let mut p = [zero; BANDED_POSITIONS];
        match k % 8 {
            0 => sqr_banded::<0>(k, &mut x, &n, k0, d, &mut p),
            2 => sqr_banded::<2>(k, &mut x, &n, k0, d, &mut p),
            4 => sqr_banded::<4>(k, &mut x, &n, k0, d, &mut p),
            _ => sqr_banded::<6>(k, &mut x, &n, k0, d, &mut p),
        }
        x[..k]
            .iter()
            .map(|v| {
                let mut w = [0u64; LANES];
                // SAFETY: eight words, written unaligned.
                unsafe { _mm512_storeu_si512(w.as_mut_ptr().cast(), *v) };
                w
            })
            .collect()
    }

    /// [`super::fermat_base2_secret`] for numbers of k digits (even, from
    /// 26 to [`BANDED_MAX`], k mod 8 = R8) and `bits` bits, by
    /// [`sqr_banded`]; operands, accumulator and exponent in memory, all
    /// wiped at the end.
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl")]
    pub(super) fn fermat_banded<const R8: usize>(
        k: usize,
        ns: &[&[u64]],
        rs: &[&[u64]],
        bits: usize,
        stop: &AtomicBool,
    ) -> Option<[u64; LANES]> {
        let rs_in = cut_to(rs, ns[0].len());
        let zero = _mm512_setzero_si512();
        let mut n = [zero; PADDED];
        spread_into(ns, &mut n[..k]);
        let mut k0 = lane_k0s(ns);
        let mut one = [zero; PADDED];
        spread_into(&rs_in[..rs.len()], &mut one[..k]);
        let mut x = one;
        let mut words = [zero; super::BANDED_BITS as usize / 64];
        exponent_words(ns, &mut words);
        let mut p = [zero; BANDED_POSITIONS];
        let stopped = over_exponent_bits!(bits, words, stop, |bit| {
            sqr_banded::<R8>(k, &mut x, &n, k0, bit, &mut p);
        });
        let out = fermat_verdict(&x[..k], &one[..k], &n[..k]);
        wipe(&mut x);
        wipe(&mut n);
        wipe(&mut one);
        wipe(&mut k0);
        wipe(&mut words);
        wipe(&mut p);
        (!stopped).then_some(out)
    }

    /// The Fermat test's verdict per lane: x < 2n (k digits, as long as
    /// `one` and `n`; at most [`PADDED`]) is the Montgomery form of
    /// 2^(n − 1), which is 1 exactly where x is R mod n (`one`) or R mod
    /// n + n.
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl")]
    fn fermat_verdict(x: &[__m512i], one: &[__m512i], n: &[__m512i]) -> [u64; LANES] {
        let mut plus_n = [_mm512_setzero_si512(); PADDED];
        let plus_n_k = &mut plus_n[..x.len()];
        let mask = _mm512_set1_epi64(MASK as i64);
        let mut carry = _mm512_setzero_si512();
        for ((pj, oj), nj) in plus_n_k.iter_mut().zip(one).zip(n) {
            let v = _mm512_add_epi64(_mm512_add_epi64(*oj, *nj), carry);
            carry = _mm512_srli_epi64::<52>(v);
            *pj = _mm512_and_si512(v, mask);
        }
        let pass = _mm512_or_si512(equal(x, one), equal(x, plus_n_k));
        let mut out = [0u64; LANES];
        // SAFETY: eight words, written unaligned.
        unsafe { _mm512_storeu_si512(out.as_mut_ptr().cast(), pass) };
        wipe(&mut plus_n);
        out
    }

    /// [`super::no_factor`]: the dot products with two accumulators per
    /// half, so that consecutive digits' multiply-adds do not wait on each
    /// other. The remainders stay in registers.
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma,avx512vl")]
    pub(super) fn no_factor(
        x: &[u64],
        groups: &[u64],
        ends: &[u32],
        last_valid: u8,
    ) -> Option<bool> {
        let zero = _mm512_setzero_si512();
        let mask = _mm512_set1_epi64(MASK as i64);
        let one = _mm512_set1_epi64(1);
        let k = x.len();
        let pairs = k / 2;
        let mut start = 0usize;
        let head = super::group_words(k, 0);
        for (g, &end) in ends.iter().enumerate() {
            let end = end as usize;
            if end > groups.len() || end < start + head || (end - start - head) % (2 * LANES) != 0 {
                return None;
            }
            let w = groups[start..end].as_ptr();
            // Register i of the group (words 8i .. 8i + 8), read unaligned.
            let at = |i: usize| {
                // SAFETY: checked above: group g's words lie in
                // groups[start..end] and hold 8k weights, 16 words of
                // products and inverses, and whole 16-word slots; every
                // i used below is within them.
                unsafe { _mm512_loadu_si512(w.add(8 * i).cast()) }
            };
            let (mut lo0, mut hi0, mut lo1, mut hi1) = (zero, zero, zero, zero);
            for j in 0..pairs {
                let (a, b) = (2 * j, 2 * j + 1);
                let xa = _mm512_set1_epi64(x[a] as i64);
                let xb = _mm512_set1_epi64(x[b] as i64);
                let (wa, wb) = (at(a), at(b));
                lo0 = _mm512_madd52lo_epu64(lo0, xa, wa);
                hi0 = _mm512_madd52hi_epu64(hi0, xa, wa);
                lo1 = _mm512_madd52lo_epu64(lo1, xb, wb);
                hi1 = _mm512_madd52hi_epu64(hi1, xb, wb);
            }
            if k % 2 == 1 {
                let xa = _mm512_set1_epi64(x[k - 1] as i64);
                let wa = at(k - 1);
                lo0 = _mm512_madd52lo_epu64(lo0, xa, wa);
                hi0 = _mm512_madd52hi_epu64(hi0, xa, wa);
            }
            let (lo, hi) = (_mm512_add_epi64(lo0, lo1), _mm512_add_epi64(hi0, hi1));
            // The sum is lo + hi·2^52 (each half below 160·2^52). With
            // l = lo mod 2^52, h = hi + ⌊lo/2^52⌋ and t = l·(−d⁻¹) mod
            // 2^52, l + t·d is a multiple of 2^52, so r = h + hi52(t·d) +
            // [l ≠ 0] = (sum + t·d)/2^52 ≡ sum·2^-52 (mod d), below 2^60.
            let l = _mm512_and_si512(lo, mask);
            let h = _mm512_add_epi64(hi, _mm512_srli_epi64::<52>(lo));
            let (d, neg_inv) = (at(k), at(k + 1));
            let t = _mm512_madd52lo_epu64(zero, l, neg_inv);
            let hq = _mm512_madd52hi_epu64(h, t, d);
            let r = _mm512_mask_add_epi64(hq, _mm512_test_epi64_mask(l, l), hq, one);
            let slots = (end - start - 8 * (k + 2)) / 16;
            let mut hit: __mmask8 = 0;
            for p in 0..slots {
                let (inv, lim) = (at(k + 2 + 2 * p), at(k + 3 + 2 * p));
                hit |= _mm512_cmple_epu64_mask(_mm512_mullo_epi64(r, inv), lim);
            }
            if g + 1 == ends.len() {
                hit &= last_valid;
            }
            if hit != 0 {
                return Some(false);
            }
            start = end;
        }
        Some(true)
    }
}

/// [`exps_secret`] in the four lanes of 256-bit registers (AVX-512 VL):
/// the same code as `imp`'s, for groups of up to four. A CPU may issue
/// more 256-bit multiply-adds than 512-bit ones per cycle: on the Intel
/// Xeon of the measurements four 1024-bit lanes cost 0.76 of eight, four
/// 512-bit lanes as much as eight; on AMD Zen 4, which runs a 512-bit
/// instruction as two 256-bit halves, four cost 0.53–0.56 of eight at
/// 512 to 1024 bits. Five to eight lanes run in `imp` on every CPU: two
/// passes of four cost more than one of eight there too.
#[cfg(all(target_arch = "x86_64", pf_avx512))]
mod imp4 {
    use super::*;
    use std::arch::x86_64::{
        __m256i as V, _mm256_add_epi64 as add64, _mm256_and_si256 as and,
        _mm256_andnot_si256 as andnot, _mm256_loadu_si256 as loadu,
        _mm256_madd52hi_epu64 as madd52hi, _mm256_madd52lo_epu64 as madd52lo,
        _mm256_or_si256 as or, _mm256_set1_epi64x as set1, _mm256_setzero_si256 as zero_v,
        _mm256_sllv_epi64 as sllv64, _mm256_srli_epi64 as srli64, _mm256_srlv_epi64 as srlv64,
        _mm256_storeu_si256 as storeu, _mm256_sub_epi64 as sub64, _mm256_xor_si256 as xor,
    };
    use zeroize::Zeroize;

    /// Lanes of a register.
    const W: usize = 4;

    include!("lanes/kernel.rs");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arith::ifma::tests::{r_and_r2, random};
    use crate::gmp::sec::tests::{prime_with_s, reference};
    use rand_chacha::rand_core::SeedableRng;
    use rand_chacha::ChaCha20Rng;
    use rug::Integer;

    /// Runs the lanes on `n` with `bases`, or `None` (said loudly) where
    /// this CPU has no IFMA.
    fn lanes(n: &Integer, bases: &[Integer]) -> Option<[u64; LANES]> {
        if !crate::arith::ifma::available() {
            crate::capability::skip(
                "ifma",
                "no AVX-512 IFMA on this CPU: the Miller–Rabin lanes are not exercised",
            );
            return None;
        }
        let (r, r2) = r_and_r2(n);
        let bl: Vec<Vec<u64>> = bases.iter().map(|b| b.as_limbs().to_vec()).collect();
        let refs: Vec<&[u64]> = bl.iter().map(|b| b.as_slice()).collect();
        let v = mr_rounds_secret(n.as_limbs(), &refs, &r, &r2, &AtomicBool::new(false));
        assert!(v.is_some(), "{n:#x} refused");
        v
    }

    /// The squaring by columns (`ams_rows_body`, the Fermat lanes' and
    /// the rounds' squarings) gives the rows' product (`amm_rows_body`)
    /// digit for digit, at every digit count and both register widths:
    /// the same factors q, so the same sum. Moduli of every size a digit
    /// count takes, from the smallest to the largest (R = 16·2^b, and n =
    /// 2^b − 1 whose digits are all ones), operands below 4n up to the
    /// largest, 4n − 1, doubled in some lanes ([`square_inputs`]); each
    /// result is also checked to be the exact Montgomery square
    /// ([`assert_montgomery_square`]).
    #[test]
    fn the_squaring_by_columns_gives_the_rows_product() {
        if !crate::arith::ifma::available() {
            crate::capability::skip(
                "ifma",
                "no AVX-512 IFMA on this CPU: the squaring by columns is not exercised",
            );
        } else {
            #[cfg(all(target_arch = "x86_64", pf_avx512))]
            squarings_agree();
        }
    }

    /// [`the_squaring_by_columns_gives_the_rows_product`]'s checks.
    #[cfg(all(target_arch = "x86_64", pf_avx512))]
    fn squarings_agree() {
        fn check<const K: usize>(rng: &mut ChaCha20Rng) {
            let top = 52 * K as u32 - 4;
            let bottom = 52 * (K as u32 - 1) - 3;
            for case in 0..6u32 {
                let (ns, xs, double) = square_inputs(top, bottom, case, rng);
                let nl: Vec<&[u64]> = ns.iter().map(|n| n.as_limbs()).collect();
                let xl: Vec<&[u64]> = xs.iter().map(|x| x.as_limbs()).collect();
                // SAFETY: IFMA and AVX-512 VL checked by the caller.
                let [rows, columns] = unsafe { imp::square_both::<K>(&nl, &xl, &double) };
                let d4: [u64; 4] = std::array::from_fn(|l| double[l]);
                // SAFETY: as above.
                let [rows4, columns4] = unsafe { imp4::square_both::<K>(&nl[..4], &xl[..4], &d4) };
                for l in 0..LANES {
                    let got =
                        |r: &[[u64; LANES]; K]| -> Vec<u64> { r.iter().map(|d| d[l]).collect() };
                    assert_eq!(got(&rows), got(&columns), "K = {K}, case {case}, lane {l}");
                    let digits = got(&columns);
                    assert_montgomery_square(
                        &digits,
                        &ns[l],
                        &xs[l],
                        double[l],
                        &format!("K = {K}, case {case}, lane {l}"),
                    );
                    if l < 4 {
                        let got4 =
                            |r: &[[u64; 4]; K]| -> Vec<u64> { r.iter().map(|d| d[l]).collect() };
                        assert_eq!(
                            got4(&rows4),
                            digits,
                            "K = {K}, case {case}, lane {l} (4 lanes)"
                        );
                        assert_eq!(
                            got4(&columns4),
                            digits,
                            "K = {K}, case {case}, lane {l} (4 lanes)"
                        );
                    }
                }
            }
        }
        let mut rng = ChaCha20Rng::seed_from_u64(0x636f_6c73);
        macro_rules! each_k {
            ($($k:literal)*) => { $( check::<$k>(&mut rng); )* };
        }
        each_k!(5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24);
    }

    /// The squaring tests' inputs for `case`: eight moduli of `bottom`
    /// to `top` bits (all-ones moduli of `top` bits in two lanes,
    /// 2^`bottom` + 1 in two, random odd ones between in the others),
    /// an operand below 4n for each (4n − 1, random, or 2n + 1, by lane)
    /// and the lanes whose result is doubled.
    #[cfg(all(target_arch = "x86_64", pf_avx512))]
    fn square_inputs(
        top: u32,
        bottom: u32,
        case: u32,
        rng: &mut ChaCha20Rng,
    ) -> (Vec<Integer>, Vec<Integer>, [u64; LANES]) {
        let ns: Vec<Integer> = (0..LANES as u32)
            .map(|l| match (l + case) % 4 {
                0 => Integer::from(Integer::ONE << top) - 1u32,
                1 => Integer::from(Integer::ONE << bottom) + 1u32,
                _ => {
                    let bits = bottom + (l * 7 + case) % (top - bottom + 1);
                    let mut n = random(bits, rng);
                    n.set_bit(bits - 1, true);
                    n.set_bit(0, true);
                    n
                }
            })
            .collect();
        let xs: Vec<Integer> = ns
            .iter()
            .enumerate()
            .map(|(l, n)| {
                let four_n = Integer::from(n << 2u32);
                match (l as u32 + case) % 3 {
                    0 => four_n - 1u32,
                    1 => random(top + 2, rng) % four_n,
                    _ => Integer::from(&four_n >> 1u32) + 1u32,
                }
            })
            .collect();
        let double = std::array::from_fn(|l| ((l as u32 + case) % 2) as u64);
        (ns, xs, double)
    }

    /// `digits` (52 bits each, as many as R = 2^(52·digits) has) are
    /// exactly the Montgomery square of x modulo n, doubled when
    /// `double` is 1: (x² + Q·n)/R·2^double with Q = −x²·n⁻¹ mod R, the
    /// one factor below R that a digit-by-digit reduction can reach,
    /// and below 2n before the doubling.
    #[cfg(all(target_arch = "x86_64", pf_avx512))]
    fn assert_montgomery_square(digits: &[u64], n: &Integer, x: &Integer, double: u64, what: &str) {
        let mut v = Integer::new();
        for (j, &d) in digits.iter().enumerate() {
            assert!(d < 1 << 52, "{what}: digit {j}");
            v += Integer::from(d) << (52 * j as u32);
        }
        let r = Integer::from(Integer::ONE << (52 * digits.len() as u32));
        let sq = Integer::from(x * x);
        let n_inv = n.clone().invert(&r).expect("n is odd");
        let q = (&r - Integer::from(&sq * &n_inv) % &r) % &r;
        let want = (sq + q * n) / &r;
        assert!(want < Integer::from(n << 1u32), "{what}: the bound");
        assert_eq!(v, want << double as u32, "{what}");
    }

    /// The banded squaring (pairs once, doubled, squares added, the
    /// reduction in bands) gives the Montgomery square exactly: for every
    /// digit count it takes (26 to 158, even: every residue mod 8 and
    /// every shape of the top bands), moduli from the smallest to the
    /// largest bit count k takes (all-ones moduli among them), operands
    /// random below 4n and the largest, 4n − 1, doubled in some lanes,
    /// each lane's digits are (x² + Q·n)/R·2^d with Q = −x²·n⁻¹ mod R, the
    /// one factor below R that the digit-by-digit reduction can reach. A
    /// pair left out, counted twice or read past the top fails it.
    #[test]
    fn the_banded_squaring_is_the_montgomery_square() {
        if !crate::arith::ifma::available() {
            crate::capability::skip(
                "ifma",
                "no AVX-512 IFMA on this CPU: the banded squaring is not exercised",
            );
        } else {
            #[cfg(all(target_arch = "x86_64", pf_avx512))]
            banded_squarings_agree();
        }
    }

    /// [`the_banded_squaring_is_the_montgomery_square`]'s checks.
    #[cfg(all(target_arch = "x86_64", pf_avx512))]
    fn banded_squarings_agree() {
        let mut rng = ChaCha20Rng::seed_from_u64(0x6261_6e64);
        let mut checked = 0;
        for k in (26..=BANDED_MAX).step_by(2) {
            let top = 52 * k as u32 - 4;
            let bottom = 52 * (k as u32 - 1) - 3;
            let cases = if k <= 42 || k % 16 == 6 { 3u32 } else { 1 };
            for case in 0..cases {
                let (ns, xs, double) = square_inputs(top, bottom, case, &mut rng);
                let nl: Vec<&[u64]> = ns.iter().map(|n| n.as_limbs()).collect();
                let xl: Vec<&[u64]> = xs.iter().map(|x| x.as_limbs()).collect();
                // SAFETY: IFMA and AVX-512 VL checked by the caller.
                let got = unsafe { imp::square_banded(k, &nl, &xl, &double) };
                assert_eq!(got.len(), k);
                for l in 0..LANES {
                    let digits: Vec<u64> = got.iter().map(|d| d[l]).collect();
                    assert_montgomery_square(
                        &digits,
                        &ns[l],
                        &xs[l],
                        double[l],
                        &format!("k = {k}, case {case}, lane {l}"),
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 600, "{checked}");
    }

    /// Every lane gives the textbook verdict, for primes (with small and
    /// large v2(p − 1), every residue of it mod 4), random odd composites, Carmichael numbers and
    /// strong pseudoprimes to some of the bases, at every size taken and
    /// with one to eight bases.
    #[test]
    fn every_lane_agrees_with_the_textbook_round() {
        let mut rng = ChaCha20Rng::seed_from_u64(0x4c61_6e65);
        let mut checked = [0usize; 2];
        let mut walk = Integer::from(0x9b05_688cu32);
        for bits in [
            193u32, 205, 206, 256, 300, 384, 448, 449, 500, 512, 513, 1024, 1245,
        ] {
            let top = Integer::from(Integer::ONE << (bits - 1));
            for case in 0..12 {
                let n = match case % 4 {
                    0 => (random(bits - 1, &mut rng) | &top).next_prime(),
                    // A prime with a large v2(p − 1), of every residue
                    // mod 4 (the exponent's shift), up to 63.
                    1 => {
                        let s = [40, 61, 62, 63, 5, 6][(case / 4 + bits as usize) % 6];
                        prime_with_s(&mut walk, bits, s)
                    }
                    2 => random(bits - 1, &mut rng) | &top | 1u32,
                    _ => {
                        // p·(2p − 1) with both prime: a strong pseudoprime
                        // to about a quarter of the bases.
                        let half = (bits - 1) / 2;
                        let mut p = (random(half, &mut rng)
                            | Integer::from(Integer::ONE << (half - 1)))
                        .next_prime();
                        loop {
                            let q = Integer::from(&p * 2u32) - 1u32;
                            if q.is_probably_prime(30) != rug::integer::IsPrime::No {
                                break Integer::from(&p * &q);
                            }
                            p = p.next_prime();
                        }
                    }
                };
                // The pseudoprimes may come out a bit short (at 193 bits,
                // below the four limbs the lanes take).
                if (n.significant_bits() != bits && case % 4 != 3)
                    || !LIMBS.contains(&n.as_limbs().len())
                {
                    continue;
                }
                let count = 1 + (case % LANES);
                let width = Integer::from(&n - 3u32);
                let bases: Vec<Integer> = (0..count)
                    .map(|_| (random(bits, &mut rng) % &width) + 2u32)
                    .collect();
                let Some(v) = lanes(&n, &bases) else {
                    return;
                };
                for (l, base) in bases.iter().enumerate() {
                    let want = reference(&n, base) as u64;
                    assert_eq!(
                        v[l], want,
                        "{bits} bits, case {case}, lane {l}: n = {n:#x}, base {base:#x}"
                    );
                    checked[want as usize] += 1;
                }
                assert!(v[count..].iter().all(|&x| x == 0));
            }
        }
        // Both verdicts were seen many times.
        assert!(checked[0] > 50 && checked[1] > 100, "{checked:?}");
    }

    /// A mixed group of `count` lanes for [`exps_secret`]: moduli of
    /// `bits` bits (primes, some with a large v2(p − 1), and odd
    /// composites), each lane a round with a random base or, where
    /// `power(l)`, a power of a random base to a random exponent of up to
    /// n's bits. Per lane (n, base, exponent or `None`).
    type Mixed = Vec<(Integer, Integer, Option<Integer>)>;

    fn mixed(
        bits: u32,
        count: usize,
        power: impl Fn(usize) -> bool,
        rng: &mut ChaCha20Rng,
        walk: &mut Integer,
    ) -> Mixed {
        let top = Integer::from(Integer::ONE << (bits - 1));
        (0..count)
            .map(|l| {
                let n = match (l + bits as usize) % 3 {
                    0 => (random(bits - 1, rng) | &top).next_prime(),
                    1 => prime_with_s(walk, bits, [2, 33, 62, 63][l % 4]),
                    _ => random(bits - 1, rng) | &top | 1u32,
                };
                let width = Integer::from(&n - 3u32);
                let base = (random(bits, rng) % &width) + 2u32;
                let e = power(l).then(|| random(bits, rng) % &n);
                (n, base, e)
            })
            .collect()
    }

    /// A [`Mixed`] group's inputs as limbs, R and R² mod each n.
    struct Inputs {
        ns: Vec<Vec<u64>>,
        rr: Vec<(Vec<u64>, Vec<u64>)>,
        bases: Vec<Vec<u64>>,
        exps: Vec<Option<Vec<u64>>>,
    }

    fn inputs(group: &Mixed) -> Inputs {
        let len = group[0].0.as_limbs().len();
        let pad = |x: &Integer| {
            let mut v = x.as_limbs().to_vec();
            v.resize(len, 0);
            v
        };
        Inputs {
            ns: group
                .iter()
                .map(|(n, _, _)| n.as_limbs().to_vec())
                .collect(),
            rr: group.iter().map(|(n, _, _)| r_and_r2(n)).collect(),
            bases: group.iter().map(|(_, b, _)| pad(b)).collect(),
            exps: group.iter().map(|(_, _, e)| e.as_ref().map(pad)).collect(),
        }
    }

    /// [`exps_secret`] on prepared inputs: the verdicts and the powers'
    /// limbs.
    fn run_inputs(x: &Inputs, stop: &AtomicBool) -> Option<([u64; LANES], Vec<Vec<u64>>)> {
        let len = x.ns[0].len();
        let lanes: Vec<LaneExp<'_>> = (0..x.ns.len())
            .map(|l| LaneExp {
                n: &x.ns[l],
                r: &x.rr[l].0,
                r2: &x.rr[l].1,
                base: &x.bases[l],
                power: x.exps[l].as_deref(),
            })
            .collect();
        let mut outs: Vec<Vec<u64>> = x.exps.iter().flatten().map(|_| vec![7u64; len]).collect();
        let mut refs: Vec<&mut [u64]> = outs.iter_mut().map(|o| &mut o[..]).collect();
        let v = exps_secret(&lanes, &mut refs, stop)?;
        Some((v, outs))
    }

    /// [`exps_secret`] on `group`: the verdicts and the powers.
    fn run_mixed(group: &Mixed, stop: &AtomicBool) -> Option<([u64; LANES], Vec<Integer>)> {
        let (v, outs) = run_inputs(&inputs(group), stop)?;
        let powers = outs
            .iter()
            .map(|o| Integer::from_digits(o, rug::integer::Order::Lsf))
            .collect();
        Some((v, powers))
    }

    /// Groups of one to eight lanes (four or fewer in 256-bit registers),
    /// each lane its own modulus: every round gives the textbook verdict
    /// and every power mpz_powm's value, at every size taken.
    #[test]
    fn mixed_lanes_agree_with_the_textbook_round_and_powm() {
        if !crate::arith::ifma::available() {
            crate::capability::skip(
                "ifma",
                "no AVX-512 IFMA on this CPU: the mixed lanes are not exercised",
            );
            return;
        }
        let never = AtomicBool::new(false);
        let mut rng = ChaCha20Rng::seed_from_u64(0x6d69_7865);
        let mut walk = Integer::from(0x243f_6a88u32);
        let mut seen = [0usize; 3];
        for bits in [256u32, 300, 512, 640, 1000, 1024, 1245] {
            for count in 1..=LANES {
                for pattern in [0usize, 0b1010_0101, 0b1100_0000, 0xff] {
                    let group = mixed(bits, count, |l| pattern >> l & 1 == 1, &mut rng, &mut walk);
                    let (v, powers) = run_mixed(&group, &never).expect("taken");
                    let mut powers = powers.into_iter();
                    for (l, (n, base, e)) in group.iter().enumerate() {
                        match e {
                            None => {
                                let want = reference(n, base) as u64;
                                assert_eq!(v[l], want, "{bits} bits, lane {l} of {count}: {n:#x}");
                                seen[want as usize] += 1;
                            }
                            Some(e) => {
                                assert_eq!(v[l], 0);
                                let want = base.clone().pow_mod(e, n).unwrap();
                                assert_eq!(powers.next(), Some(want), "{bits} bits, lane {l}");
                                seen[2] += 1;
                            }
                        }
                    }
                    assert!(v[count..].iter().all(|&x| x == 0));
                }
            }
        }
        assert!(seen.iter().all(|&c| c > 100), "{seen:?}");
    }

    /// Groups [`exps_secret`] declines: moduli of two limb counts, an even
    /// modulus, a power's exponent longer than its modulus, outputs that
    /// do not match the powers, nine lanes.
    #[test]
    fn mixed_lanes_decline_what_they_do_not_take() {
        if !crate::arith::ifma::available() {
            crate::capability::skip(
                "ifma",
                "no AVX-512 IFMA on this CPU: the mixed lanes are not exercised",
            );
            return;
        }
        let never = AtomicBool::new(false);
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let mut walk = Integer::from(99u32);
        let ok = mixed(512, 3, |l| l == 2, &mut rng, &mut walk);
        assert!(run_mixed(&ok, &never).is_some());
        let mut two_sizes = ok.clone();
        two_sizes[1] = mixed(600, 1, |_| false, &mut rng, &mut walk).remove(0);
        assert!(run_mixed(&two_sizes, &never).is_none());
        let mut even = ok.clone();
        even[0].0 += 1u32;
        assert!(run_mixed(&even, &never).is_none());
        // Moduli of 500 bits; the power's exponent of 506, in their limbs.
        let mut long = mixed(500, 3, |l| l == 2, &mut rng, &mut walk);
        assert!(run_mixed(&long, &never).is_some());
        long[2].2 = Some(Integer::from(Integer::ONE << 505u32));
        assert!(run_mixed(&long, &never).is_none());
        let nine = mixed(512, 9, |_| false, &mut rng, &mut walk);
        assert!(run_mixed(&nine, &never).is_none());
        // One power but no output for it.
        let (n, b) = (ok[0].0.as_limbs(), ok[0].1.as_limbs());
        let (r, r2) = r_and_r2(&ok[0].0);
        let lane = LaneExp {
            n,
            r: &r,
            r2: &r2,
            base: b,
            power: Some(b),
        };
        assert!(exps_secret(&[lane], &mut [], &never).is_none());
    }

    /// A mixed group takes one path whatever its secrets: three groups of
    /// one shape (four lanes, then eight: rounds and powers in the same
    /// lanes, moduli of one size) with different moduli, bases, exponents
    /// and v2(n − 1), single-stepped (a branch or index on a lane's
    /// window, s, exponent or value would change the path).
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[test]
    fn mixed_lanes_take_one_path_for_every_group() {
        use crate::arith::ifma::tests::{assert_one_path, traces_of};
        if !crate::arith::ifma::available() {
            crate::capability::skip(
                "ifma",
                "no AVX-512 IFMA on this CPU: the mixed lanes' path is not checked",
            );
            return;
        }
        let never = AtomicBool::new(false);
        let mut rng = ChaCha20Rng::seed_from_u64(0x7061_7468);
        let mut walk = Integer::from(0x1319_8a2eu32);
        for count in [4usize, 8] {
            let groups: Vec<Inputs> = (0..3)
                .map(|_| inputs(&mixed(256, count, |l| l % 3 == 2, &mut rng, &mut walk)))
                .collect();
            let Some(traces) = traces_of(3, &|i| {
                std::hint::black_box(run_inputs(&groups[i], &never));
            }) else {
                return;
            };
            assert_one_path(&traces, 50_000, &format!("256 bits, {count} mixed lanes"));
        }
    }

    /// One group by hand: lane 0 the batch 3·5 (two slots), lane 1 the
    /// batch 7 (one slot and the padding), the other lanes empty.
    /// `no_factor` finds 3, 5 and 7 in numbers of two digits, passes one
    /// with none of them, ignores the empty lanes, and refuses a group
    /// whose layout does not fit instead of reading past it.
    #[test]
    fn no_factor_walks_a_group_and_refuses_a_bad_layout() {
        if !crate::arith::ifma::available() || !dq() {
            crate::capability::skip(
                "ifma",
                "no AVX-512 IFMA and DQ on this CPU: the trial-division lanes are not exercised",
            );
            return;
        }
        let k = 2;
        let mut g = vec![0u64; group_words(k, 2)];
        for (l, d, tests) in [(0usize, 15u64, vec![3u64, 5]), (1, 7, vec![7])] {
            let mut w = 1 % d;
            for j in 0..k {
                g[j * LANES + l] = w;
                w = (((w as u128) << 52) % d as u128) as u64;
            }
            g[k * LANES + l] = d;
            g[(k + 1) * LANES + l] =
                crate::arith::inverse_mod_2_64(d).wrapping_neg() & ((1 << 52) - 1);
            for p in 0..2 {
                let (inv, lim) = tests.get(p).map_or((1, 0), |&q| {
                    (crate::arith::inverse_mod_2_64(q), u64::MAX / q)
                });
                g[(k + 2 + 2 * p) * LANES + l] = inv;
                g[(k + 3 + 2 * p) * LANES + l] = lim;
            }
        }
        let ends = [g.len() as u32];
        let digits = |n: u128| [(n as u64) & ((1 << 52) - 1), (n >> 52) as u64];
        // 2^90 + 3 has none of 3, 5 and 7 as a factor.
        let big = (1u128 << 90) + 3;
        for (n, want) in [
            (big * 3, false),
            (big * 5, false),
            (big * 7, false),
            (11 * 13 * (1u128 << 80) + 11 * 13, true),
        ] {
            assert_eq!(no_factor(&digits(n), &g, &ends, 0b11), Some(want), "{n}");
        }
        // Only lane 0 counted: 7 is not looked for.
        assert_eq!(no_factor(&digits(big * 7), &g, &ends, 0b01), Some(true));
        // A group one word short, or ending past the words: refused.
        assert_eq!(
            no_factor(&digits(big), &g, &[g.len() as u32 - 1], 0b11),
            None
        );
        assert_eq!(
            no_factor(&digits(big), &g[..g.len() - 16], &ends, 0b11),
            None
        );
    }

    #[test]
    fn sizes_outside_the_lanes_are_refused() {
        let never = AtomicBool::new(false);
        let base = [2u64];
        // Three limbs, 21, and 20 limbs of 25 digits (1280 bits).
        for limbs in [3usize, 21, 20] {
            let mut n = vec![u64::MAX; limbs];
            n[0] = u64::MAX - 2;
            let r = vec![0u64; limbs];
            assert_eq!(mr_rounds_secret(&n, &[&base], &r, &r, &never), None);
        }
        assert!(rounds_take(1245) == crate::arith::ifma::available());
        assert!(!rounds_take(1246) && !rounds_take(192));
        // Even n, no bases, nine bases.
        let n = [u64::MAX - 1; 4];
        let r = [0u64; 4];
        assert_eq!(mr_rounds_secret(&n, &[&base], &r, &r, &never), None);
        let n = [u64::MAX; 4];
        assert_eq!(mr_rounds_secret(&n, &[], &r, &r, &never), None);
        assert_eq!(mr_rounds_secret(&n, &[&base[..]; 9], &r, &r, &never), None);
    }

    /// The rounds take one path whatever the secret: a prime with
    /// v2(p − 1) = 63, a dense composite (s = 1) and a sparse one (s = 40)
    /// of one size, each with its own eight random bases, run the same
    /// sequence of instruction addresses, single-stepped (a branch on a
    /// bit of d, on the window's index, on s, on a lane's value or on a
    /// comparison would change it). valgrind cannot run AVX-512 code.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[test]
    fn the_lanes_take_one_path_for_every_n() {
        use crate::arith::ifma::tests::{assert_one_path, traces_of};
        let never = AtomicBool::new(false);
        let bits = 256u32;
        let top = Integer::from(Integer::ONE << (bits - 1));
        let mut walk = Integer::from(0x510e_527fu32);
        let mut rng = ChaCha20Rng::seed_from_u64(0x6c61);
        let ns = [
            crate::gmp::sec::tests::prime_with_s(&mut walk, bits, 63),
            Integer::from(Integer::ONE << bits) - Integer::from(Integer::ONE << 100u32) - 1u32,
            Integer::from(&top + (1u64 << 40)) + 1u32,
        ];
        assert!(ns.iter().all(|n| n.significant_bits() == bits));
        assert!(ns[1..]
            .iter()
            .all(|n| n.is_probably_prime(30) == rug::integer::IsPrime::No));
        // Per n: its eight bases, R and R² mod n.
        type Input = (Vec<Vec<u64>>, Vec<u64>, Vec<u64>);
        let inputs: Vec<Input> = ns
            .iter()
            .map(|n| {
                let width = Integer::from(n - 3u32);
                let bases = (0..LANES)
                    .map(|_| {
                        let b = (random(bits, &mut rng) % &width) + 2u32;
                        let mut l = b.as_limbs().to_vec();
                        l.resize(n.as_limbs().len(), 0);
                        l
                    })
                    .collect();
                let (r, r2) = r_and_r2(n);
                (bases, r, r2)
            })
            .collect();
        let run = |i: usize| {
            let (bases, r, r2) = &inputs[i];
            let refs: Vec<&[u64]> = bases.iter().map(|b| b.as_slice()).collect();
            mr_rounds_secret(ns[i].as_limbs(), &refs, r, r2, &never)
        };
        let Some(traces) = traces_of(3, &|i| {
            std::hint::black_box(run(i));
        }) else {
            return;
        };
        // What was traced are real rounds: the prime passes in every
        // lane, the composites fail in every lane.
        assert_eq!(
            [run(0), run(1), run(2)],
            [Some([1; LANES]), Some([0; LANES]), Some([0; LANES])]
        );
        assert_one_path(&traces, 50_000, "256 bits, eight lanes");
    }

    /// R = 2^(52k) mod n for the Fermat lanes' k, in n's length.
    fn fermat_r(n: &Integer) -> Vec<u64> {
        let k = fermat_digits(n.significant_bits()).expect("taken") as u32;
        let r = Integer::from(Integer::ONE << (52 * k)) % n;
        let mut l = r.as_limbs().to_vec();
        l.resize(n.as_limbs().len(), 0);
        l
    }

    /// The Fermat test in lanes takes one path whatever the numbers:
    /// eight primes, eight composites (one a base-2 Fermat pseudoprime,
    /// which passes), and eight numbers with sparse and dense bits run the
    /// same sequence of instruction addresses, single-stepped (a branch on
    /// an exponent bit, on a lane's value or on the verdict would change
    /// it). valgrind cannot run AVX-512 code.
    /// Three groups of eight odd numbers of `bits` bits for the one-path
    /// tests: primes, composites (the last a base-2 Fermat pseudoprime)
    /// and numbers with sparse and dense bits.
    fn one_path_groups(bits: u32, seed: u64) -> [Vec<Integer>; 3] {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let odd = |rng: &mut ChaCha20Rng| {
            let mut x = random(bits, rng);
            x.set_bit(bits - 1, true);
            x.set_bit(0, true);
            x
        };
        let primes: Vec<Integer> = (0..LANES)
            .map(|_| Integer::from(odd(&mut rng).next_prime_ref()))
            .filter(|p| p.significant_bits() == bits)
            .collect();
        // 2^(b−1) + 2^40 + 1 … (sparse) and 2^b − 2^100 − 1 … (dense).
        let top = Integer::from(Integer::ONE << (bits - 1));
        let mut shapes: Vec<Integer> = (0..4u32)
            .map(|i| Integer::from(&top + (1u64 << (40 + i))) + 1u32)
            .collect();
        shapes.extend((0..4u32).map(|i| {
            Integer::from(Integer::ONE << bits) - Integer::from(Integer::ONE << (100 + i)) - 1u32
        }));
        let mut composites: Vec<Integer> = (0..LANES - 1)
            .map(|_| odd(&mut rng))
            .filter(|n| n.is_probably_prime(30) == rug::integer::IsPrime::No)
            .collect();
        let pseudo = crate::prime::fermat::tests::fermat_pseudoprime(bits);
        assert_eq!(pseudo.significant_bits(), bits);
        composites.push(pseudo);
        assert_eq!((primes.len(), composites.len()), (LANES, LANES));
        [primes, composites, shapes]
    }

    /// The banded Fermat test takes one path whatever the numbers: for
    /// each of its four compiled shapes (digit counts 0, 2, 4 and 6 mod 8:
    /// 1603 bits at 32 digits, 1283 at 26, 1411 at 28, 1539 at 30, each
    /// with blocks of eight rows, a last block of two, four or six rows
    /// where there is one, and the edge bands), eight primes, eight
    /// composites (one a base-2 Fermat pseudoprime) and eight numbers with
    /// sparse and dense bits run the same sequence of instruction
    /// addresses, single-stepped through the set-up, the squarings and
    /// doublings before the first look at the stop flag (set from the
    /// start: the whole test would be millions of steps; each size is 3
    /// bits above a multiple of 64, so two squarings run), and the wipes.
    /// That the test is right is `prime::fermat`'s agreement with mpz_powm
    /// up to 8192 bits.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[test]
    fn the_banded_fermat_lanes_take_one_path_for_every_n() {
        banded_one_path(1539, 30);
    }

    /// [`the_banded_fermat_lanes_take_one_path_for_every_n`] at 32 digits.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[test]
    fn the_banded_fermat_lanes_take_one_path_at_32_digits() {
        banded_one_path(1603, 32);
    }

    /// [`the_banded_fermat_lanes_take_one_path_for_every_n`] at 26 digits.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[test]
    fn the_banded_fermat_lanes_take_one_path_at_26_digits() {
        banded_one_path(1283, 26);
    }

    /// [`the_banded_fermat_lanes_take_one_path_for_every_n`] at 28 digits.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[test]
    fn the_banded_fermat_lanes_take_one_path_at_28_digits() {
        banded_one_path(1411, 28);
    }

    /// What the stack below a caller holds after the bands' largest test
    /// (8192 bits, 158 digits, from the search's entry
    /// `prime::fermat::fermat_base2_secret_lanes_or_stop`: the R mod n
    /// values, then operand, modulus, R mod n, accumulator and exponent
    /// words in the test's frame) lies within the
    /// [`crate::secure::STACK_WIPE`] bytes that a search's stack wipe
    /// covers, with room to spare for the search's own frames above it:
    /// the stack below is painted, the test runs (stopped after its first
    /// 63 squarings: its frame is all there from the first), and the
    /// lowest word no longer painted gives the depth. The frame's arrays
    /// must show (more than 40 KiB), or the painting saw nothing.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[test]
    fn the_largest_banded_test_stays_within_the_stack_wipe() {
        if !crate::arith::ifma::available() {
            crate::capability::skip("ifma", "the banded Fermat lanes need AVX-512 IFMA");
            return;
        }
        const PAINT: u64 = 0x9a1e_d5ea_7c0f_fee5;
        const WORDS: usize = 48 * 1024;
        /// Paints `WORDS` words of stack below the caller, returns their
        /// lowest address.
        #[inline(never)]
        fn paint() -> usize {
            let mut pad = [0u64; WORDS];
            for w in pad.iter_mut() {
                // SAFETY: a write to a local.
                unsafe { std::ptr::write_volatile(w, PAINT) };
            }
            std::hint::black_box(&mut pad);
            pad.as_ptr() as usize
        }
        /// The lowest address in `[low, low + 8·WORDS)` no longer painted.
        #[inline(never)]
        fn lowest_touched(low: usize) -> Option<usize> {
            (0..WORDS).map(|i| low + 8 * i).find(|&a| {
                // SAFETY: the painted span lies within this thread's
                // mapped stack, below the live frames (the 2 MiB thread
                // stack is far larger than it).
                unsafe { std::ptr::read_volatile(a as *const u64) != PAINT }
            })
        }
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(|| {
                let bits = 8192u32;
                assert_eq!(banded_digits(bits), Some(158), "8192 bits in bands");
                let mut rng = ChaCha20Rng::seed_from_u64(0x0053_7461_636b);
                let ns: Vec<Integer> = (0..LANES)
                    .map(|_| {
                        let mut x = random(bits, &mut rng);
                        x.set_bit(bits - 1, true);
                        x.set_bit(0, true);
                        x
                    })
                    .collect();
                let refs: Vec<&Integer> = ns.iter().collect();
                let here = std::hint::black_box(0u8);
                let here = std::ptr::addr_of!(here) as usize;
                let low = paint();
                let stop = AtomicBool::new(true);
                assert_eq!(
                    crate::prime::fermat::fermat_base2_secret_lanes_or_stop(&refs, &stop),
                    None,
                    "stopped"
                );
                let deepest = lowest_touched(low).expect("the test's frames");
                let depth = here - deepest;
                assert!(depth > 40 * 1024, "the painting saw {depth} bytes only");
                assert!(
                    depth <= crate::secure::STACK_WIPE / 2,
                    "the banded test at 8192 bits reaches {depth} bytes below its caller, \
                     more than half of the stack wipe ({} bytes)",
                    crate::secure::STACK_WIPE
                );
                eprintln!("banded test at 8192 bits: {depth} bytes of stack below its caller");
            })
            .unwrap()
            .join()
            .unwrap();
    }

    /// The single-stepped comparison of
    /// [`the_banded_fermat_lanes_take_one_path_for_every_n`] for numbers
    /// of `bits` bits, `k` digits.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    fn banded_one_path(bits: u32, k: usize) {
        use crate::arith::ifma::tests::{assert_one_path, traces_of};
        if !crate::arith::ifma::available() {
            crate::capability::skip("ifma", "the banded Fermat lanes need AVX-512 IFMA");
            return;
        }
        assert_eq!(banded_digits(bits), Some(k), "{bits} bits");
        let groups = one_path_groups(bits, 0x6266 + u64::from(bits));
        let rs: Vec<Vec<Vec<u64>>> = groups
            .iter()
            .map(|g| {
                g.iter()
                    .map(|n| {
                        let r = Integer::from(Integer::ONE << (52 * k as u32)) % n;
                        let mut l = r.as_limbs().to_vec();
                        l.resize(n.as_limbs().len(), 0);
                        l
                    })
                    .collect()
            })
            .collect();
        let stop = AtomicBool::new(true);
        let run = |i: usize| {
            let ns: Vec<&[u64]> = groups[i].iter().map(|n| n.as_limbs()).collect();
            let r: Vec<&[u64]> = rs[i].iter().map(|r| r.as_slice()).collect();
            fermat_base2_secret(&ns, &r, &stop)
        };
        assert_eq!(run(0), None, "stopped at the first look");
        let Some(traces) = traces_of(3, &|i| {
            std::hint::black_box(run(i));
        }) else {
            return;
        };
        assert_one_path(
            &traces,
            10_000,
            &format!("{bits} bits, eight banded Fermat lanes of {k} digits"),
        );
    }

    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[test]
    fn the_fermat_lanes_take_one_path_for_every_n() {
        use crate::arith::ifma::tests::{assert_one_path, traces_of};
        if !crate::arith::ifma::available() {
            crate::capability::skip("ifma", "the Fermat lanes need AVX-512 IFMA");
            return;
        }
        let never = AtomicBool::new(false);
        let bits = 256u32;
        let groups = one_path_groups(bits, 0x6665);
        let rs: Vec<Vec<Vec<u64>>> = groups
            .iter()
            .map(|g| g.iter().map(fermat_r).collect())
            .collect();
        let run = |i: usize| {
            let ns: Vec<&[u64]> = groups[i].iter().map(|n| n.as_limbs()).collect();
            let r: Vec<&[u64]> = rs[i].iter().map(|r| r.as_slice()).collect();
            fermat_base2_secret(&ns, &r, &never)
        };
        let want = |g: &[Integer]| {
            let mut v = [0u64; LANES];
            for (x, n) in v.iter_mut().zip(g) {
                *x = u64::from(
                    Integer::from(2u32)
                        .pow_mod(&Integer::from(n - 1u32), n)
                        .unwrap()
                        == 1u32,
                );
            }
            v
        };
        // What is traced are real tests: the primes and the pseudoprime
        // pass, the other composites fail.
        assert_eq!(run(0), Some([1; LANES]));
        assert_eq!(run(1), Some(want(&groups[1])));
        assert_eq!(run(1).map(|v| v[LANES - 1]), Some(1));
        assert_eq!(run(2), Some(want(&groups[2])));
        let Some(traces) = traces_of(3, &|i| {
            std::hint::black_box(run(i));
        }) else {
            return;
        };
        assert_one_path(&traces, 30_000, "256 bits, eight Fermat lanes");
    }

    /// A set stop ends the Fermat lanes with no verdict and records how
    /// far they got; bad groups are declined.
    #[test]
    fn the_fermat_lanes_stop_and_decline() {
        if !crate::arith::ifma::available() {
            crate::capability::skip("ifma", "the Fermat lanes need AVX-512 IFMA");
            return;
        }
        let n = Integer::from(Integer::ONE << 1023u32) + 12_345u32;
        let r = fermat_r(&n);
        let (nl, rl) = (n.as_limbs(), r.as_slice());
        let stop = AtomicBool::new(true);
        let _ = crate::work::take_given_up();
        assert_eq!(fermat_base2_secret(&[nl, nl], &[rl, rl], &stop), None);
        assert!(crate::work::take_given_up().is_some_and(|s| s <= 64.0 / 1024.0 + 0.01));
        let never = AtomicBool::new(false);
        assert!(fermat_base2_secret(&[nl, nl], &[rl, rl], &never).is_some());
        // Nine numbers, an even one, a missing R, mixed lengths.
        assert_eq!(fermat_base2_secret(&[nl; 9], &[rl; 9], &never), None);
        let even = Integer::from(&n - 1u32);
        assert_eq!(
            fermat_base2_secret(&[nl, even.as_limbs()], &[rl, rl], &never),
            None
        );
        assert_eq!(fermat_base2_secret(&[nl, nl], &[rl], &never), None);
        let short = Integer::from(&n >> 1u32) | 1u32;
        assert_eq!(
            fermat_base2_secret(&[nl, short.as_limbs()], &[rl, rl], &never),
            None
        );
        assert_eq!(fermat_base2_secret(&[], &[], &never), None);
    }

    /// A set stop ends the rounds with no verdict, and records how far
    /// they got.
    #[test]
    fn a_stop_gives_up() {
        if !crate::arith::ifma::available() {
            crate::capability::skip(
                "ifma",
                "no AVX-512 IFMA on this CPU: the lanes' stop is not exercised",
            );
            return;
        }
        let n = (Integer::from(Integer::ONE << 239u32) + 12345u32).next_prime();
        let (r, r2) = r_and_r2(&n);
        let base = [3u64];
        let stop = AtomicBool::new(true);
        let _ = crate::work::take_given_up();
        assert_eq!(
            mr_rounds_secret(n.as_limbs(), &[&base], &r, &r2, &stop),
            None
        );
        // 240 bits and the exponent's shift of up to 3: 61 windows, the
        // first look at the flag after 12 of them.
        assert_eq!(crate::work::take_given_up(), Some(12.0 / 61.0));
    }
}
