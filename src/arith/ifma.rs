//! A strong base-2 probable-prime test for *public* odd numbers of 9 to
//! 128 limbs on AVX-512 IFMA (`vpmadd52luq`/`vpmadd52huq`: eight 52×52-bit
//! multiply-adds per instruction), for DH candidates. Variable time: only
//! for public values.
//!
//! Against the `mpn_sqr` + Montgomery-rows path on AMD Zen 5
//! (`powm_cost`, best of 5): 0.80× its time at 768 bits, 0.80× at 1024,
//! 0.62× at 1536, 0.49× at 2048, 0.37× at 3072, 0.32× at 4096, 0.43× at
//! 6144 and 0.32× at 8192; at 512 bits (8 limbs) no gain, so it starts at
//! 9 limbs. Above 128 limbs the registers would spill twice over.
//!
//! Numbers are k digits of 52 bits, eight to a 512-bit register, with
//! R = 2^(52k) ≥ 8n. One step is an almost-Montgomery multiplication
//! AMM(a, b) = a·b·R⁻¹ mod n up to a multiple of n: digit by digit of b,
//! the low halves of a·b_i and n·m_i go into the accumulator, whose lowest
//! digit is then zero mod 2^52 and is shifted out (its carry goes on), and
//! the high halves are added at the shifted positions. Lanes are 64 bits,
//! so the accumulator's digits need no carries until the end (at most
//! 4k·2^52 each). With every input below 2n and R ≥ 8n, AMM(x, 2x) =
//! 2x²/R + (multiple of n below R·n)/R stays below 2n: a squaring and a
//! doubling in one step, with no subtraction anywhere. Only the final
//! comparisons reduce fully.

//!
//! One step's chain (the digit-0 broadcast, m, n·m, the shift) is about
//! twice as long as its multiply-adds take to issue at 1024 bits, so the
//! public test also runs on two to four numbers at once
//! ([`strong_base2_lanes`]): their steps interleave in one loop, each
//! number's verdict unchanged.

// The AVX-512 intrinsics are stable from Rust 1.89, above the crate's MSRV
// (1.85): build.rs sets `pf_avx512` only for a compiler that has them, and
// without it nothing here is compiled but the fallbacks (`available()` is
// false).
#![allow(clippy::incompatible_msrv)]

#[cfg(all(target_arch = "x86_64", pf_avx512))]
use std::arch::x86_64::*;
use std::sync::atomic::AtomicBool;
#[cfg(all(target_arch = "x86_64", pf_avx512))]
use std::sync::atomic::Ordering;

#[cfg(all(target_arch = "x86_64", pf_avx512))]
const MASK: u64 = (1 << 52) - 1;

/// Whether this CPU runs the test (AVX-512 F and IFMA; and VL, which
/// every CPU with IFMA has, for `arith::lanes`'s four-lane variant).
pub(crate) fn available() -> bool {
    #[cfg(all(target_arch = "x86_64", pf_avx512))]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512ifma")
            && std::arch::is_x86_feature_detected!("avx512vl")
    }
    #[cfg(not(all(target_arch = "x86_64", pf_avx512)))]
    {
        false
    }
}

#[cfg(all(target_arch = "x86_64", pf_avx512))]
/// k digits of 52 bits (normalised) ORed into the zeroed limbs `out`; the
/// branches look at positions only, never at values.
pub(crate) fn limbs_into(d: &[u64], out: &mut [u64]) {
    for (j, &dj) in d.iter().enumerate() {
        let bit = 52 * j;
        let (w, o) = (bit / 64, bit % 64);
        if w < out.len() {
            out[w] |= dj << o;
        }
        if o > 12 && w + 1 < out.len() {
            out[w + 1] |= dj >> (64 - o);
        }
    }
}

#[cfg(all(target_arch = "x86_64", pf_avx512))]
/// a − b over equal-length limbs, or `None` if a < b.
fn sub(a: &[u64], b: &[u64]) -> Option<Vec<u64>> {
    let mut r = vec![0u64; a.len()];
    let mut borrow = false;
    for j in 0..a.len() {
        let (d, b1) = a[j].overflowing_sub(b.get(j).copied().unwrap_or(0));
        let (d, b2) = d.overflowing_sub(borrow as u64);
        r[j] = d;
        borrow = b1 || b2;
    }
    (!borrow).then_some(r)
}

#[cfg(all(target_arch = "x86_64", pf_avx512))]
/// x mod n for limbs x < 2n.
fn reduce_once(x: Vec<u64>, n: &[u64]) -> Vec<u64> {
    sub(&x, n).unwrap_or(x)
}

/// Calls `f::<V>(args)` for V = `v` registers (2 to 20), the only sizes
/// instantiated; `None` for any other.
#[cfg(all(target_arch = "x86_64", pf_avx512))]
macro_rules! by_registers {
    ($v:expr, $f:ident $args:tt) => {
        by_registers!(@ $v, $f $args, 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20)
    };
    (@ $v:expr, $f:ident $args:tt, $($n:literal)*) => {
        match $v {
            // SAFETY: AVX-512 F and IFMA were checked by available().
            $($n => unsafe { $f::<$n> $args },)*
            _ => None,
        }
    };
    // With a second const parameter (a lane count) after the registers.
    (@ $v:expr, $l:tt, $f:ident $args:tt, $($n:literal)*) => {
        match $v {
            // SAFETY: AVX-512 F and IFMA were checked by available().
            $($n => unsafe { $f::<$n, $l> $args },)*
            _ => None,
        }
    };
}

/// The sizes (limbs) the test takes.
pub(crate) const LIMBS: std::ops::RangeInclusive<usize> = 9..=128;

/// The strong base-2 test on the odd `n` (limbs, [`LIMBS`] of them, the
/// top one non-zero), or `None` when stopped (looked at every 64 bits) or
/// when this CPU or size is not covered. `r_mod_n` is 2^(52k) mod n, for
/// k = [`digits`]`(n)`, in `n`'s length.
pub(crate) fn strong_base2(n: &[u64], r_mod_n: &[u64], stop: &AtomicBool) -> Option<bool> {
    let (k, v) = plan(n)?;
    #[cfg(all(target_arch = "x86_64", pf_avx512))]
    {
        by_registers!(v, test1(n, r_mod_n, k, stop))
    }
    #[cfg(not(all(target_arch = "x86_64", pf_avx512)))]
    {
        let _ = (r_mod_n, stop, v, k);
        None
    }
}

/// Registers per number up to which two tests at once beat two in turn:
/// against two tests, one pair took (`powm_cost`, Zen 5) 0.60× their time
/// at 1024 bits (3 registers), 0.62× at 1536, 0.67× at 2048 (5), 0.80×
/// at 3072 (8) and 1.00× at 4096 (10), where one test alone keeps the
/// multiply-add units busy.
const PAIR_REGISTERS: usize = 8;

/// The most Miller–Rabin rounds of one number [`mr_rounds_secret`] takes
/// at once.
pub(crate) const MAX_ROUNDS_AT_ONCE: usize = 5;

/// How many secret Miller–Rabin rounds of one odd number of `bits` bits
/// to run at once on this CPU: 1 where [`pairs`] does not take it, else
/// the count that was cheapest per round (`powm_cost`, best of 5, the
/// Intel Xeon of 2026-12-06 with AVX-512 IFMA; ms per round for two /
/// three / four / five at once, the lanes sharing one copy of the
/// modulus): at 1024 bits (3 registers) 0.138 / 0.122 / 0.108 / 0.100,
/// at 1536 (4) 0.323 / 0.285 / 0.263 / 0.262, at 2048 (5) 0.668 / 0.567
/// / 0.552 / 0.60, at 2400 (6) 0.970 / 0.878 / 1.00 / 1.01, at 2800 (7)
/// 1.30 / 1.36 / 1.55, at 3072 (8) 1.92 / 2.07 / 2.16. More chains fill
/// the gaps in the multiply-add units until the accumulators spill; with
/// a copy of the modulus per lane, four at 1024 bits took 0.108 and five
/// 0.122.
pub(crate) fn rounds_at_once(bits: u32) -> usize {
    if !pairs(bits) {
        return 1;
    }
    match registers(bits) {
        ..=4 => 5,
        5 => 4,
        6 => 3,
        _ => 2,
    }
}

/// Whether the interleaved public tests ([`strong_base2_lanes`]) and the
/// secret rounds and powers two or more at once take odd numbers of
/// `bits` bits.
pub(crate) fn pairs(bits: u32) -> bool {
    let limbs = (bits as usize).div_ceil(64);
    available() && LIMBS.contains(&limbs) && registers(bits) <= PAIR_REGISTERS
}

/// [`strong_base2`] on two to [`MAX_LANES`] odd numbers with the same
/// digit count at once, their steps interleaved in one loop (see
/// [`lanes`]); `None` when stopped, when this CPU or their sizes are not
/// covered (see [`pairs`]), or when their digit counts differ.
pub(crate) fn strong_base2_lanes(
    ns: &[&[u64]],
    rs: &[&[u64]],
    stop: &AtomicBool,
) -> Option<Vec<bool>> {
    let (k, v) = plan_lanes(ns, rs)?;
    #[cfg(all(target_arch = "x86_64", pf_avx512))]
    {
        match ns.len() {
            2 => by_registers!(@ v, 2, test_slices(ns, rs, k, stop), 2 3 4 5 6 7 8),
            3 => by_registers!(@ v, 3, test_slices(ns, rs, k, stop), 2 3 4 5 6 7 8),
            4 => by_registers!(@ v, 4, test_slices(ns, rs, k, stop), 2 3 4 5 6 7 8),
            _ => None,
        }
    }
    #[cfg(not(all(target_arch = "x86_64", pf_avx512)))]
    {
        let _ = (stop, v, k);
        None
    }
}

/// The most numbers [`strong_base2_lanes`] takes at once.
pub(crate) const MAX_LANES: usize = 4;

/// How many public first tests ([`strong_base2_lanes`]) on odd numbers
/// of `bits` bits to run at once on this CPU: 1 where [`pairs`] does not
/// take them, else the count that was cheapest per number (`powm_cost`,
/// best of 5, two runs, the Intel Xeon of 2026-12-05 with AVX-512 IFMA;
/// per number against two at once, for the secret Fermat test that then
/// ran interleaved too / the public test): at 1024 bits (3 registers) four 0.76–0.77 / 0.80 (three
/// 0.88), at 1536 (4) three 0.87 / 0.87 (four 0.93–0.96), at 2048 (5) four
/// 0.88–0.93 / 0.89–0.92 (three 1.00–1.06), at 3072 (8) a pair (three
/// 1.04–1.05, four 1.12–1.26). A pair's chains leave gaps in the
/// multiply-add units that more numbers fill, until their registers
/// spill.
pub(crate) fn lanes(bits: u32) -> usize {
    if !pairs(bits) {
        return 1;
    }
    match registers(bits) {
        ..=3 | 5 => 4,
        4 => 3,
        _ => 2,
    }
}

/// Registers per number for odd numbers of `bits` bits.
fn registers(bits: u32) -> usize {
    (bits as usize + 3).div_ceil(52).div_ceil(8)
}

/// The digit count and register count the numbers `ns` (with their
/// `rs`) share, when they are two to [`MAX_LANES`] and covered.
fn plan_lanes(ns: &[&[u64]], rs: &[&[u64]]) -> Option<(usize, usize)> {
    if !(2..=MAX_LANES).contains(&ns.len()) || rs.len() != ns.len() {
        return None;
    }
    let (k, v) = plan(ns[0])?;
    for n in &ns[1..] {
        if plan(n)? != (k, v) {
            return None;
        }
    }
    (v <= PAIR_REGISTERS).then_some((k, v))
}

/// Below this many registers per number times numbers at once (and for
/// one number alone), each step of [`amm`] keeps the accumulator's chain
/// short with extra additions; from it on the multiply-adds accumulate in
/// place, fewer instructions for a longer chain that the other numbers'
/// work hides: per number, a pair at 2048 bits (5 registers) took 0.89 of
/// the short-chain time, four at 1024 bits 0.88, three at 1024 bits the
/// same and a pair at 1024 bits 1.15 (`powm_cost`, the Intel Xeon of
/// 2026-12-05).
#[cfg(all(target_arch = "x86_64", pf_avx512))]
const IN_PLACE_FROM: usize = 10;

/// The digit count k and register count for the odd `n`, or `None` when
/// this CPU or `n`'s size is not covered (both tests' entry check).
fn plan(n: &[u64]) -> Option<(usize, usize)> {
    if !available() || !LIMBS.contains(&n.len()) || n[0] & 1 == 0 {
        return None;
    }
    let k = digits(n);
    Some((k, k.div_ceil(8)))
}

/// k for n: the fewest 52-bit digits with 2^(52k) ≥ 8n.
pub(crate) fn digits(n: &[u64]) -> usize {
    let bits = 64 * n.len() - n.last().map_or(64, |t| t.leading_zeros() as usize);
    (bits + 3).div_ceil(52)
}

#[cfg(all(target_arch = "x86_64", pf_avx512))]
#[target_feature(enable = "avx512f,avx512ifma")]
unsafe fn load<const V: usize>(d: &[u64; 160]) -> [__m512i; V] {
    // SAFETY: 8·V ≤ 160 lanes, read unaligned.
    std::array::from_fn(|j| unsafe { _mm512_loadu_si512(d.as_ptr().add(8 * j).cast()) })
}

/// One number's operands for [`amm`]: its modulus n as registers,
/// k0 = −n⁻¹ mod 2^52, the running value x and the second operand b (both
/// as digits).
#[cfg(all(target_arch = "x86_64", pf_avx512))]
struct Lane<const V: usize> {
    n: [__m512i; V],
    k0: u64,
    x: [u64; 160],
    b: [u64; 160],
}

#[cfg(all(target_arch = "x86_64", pf_avx512))]
impl<const V: usize> Lane<V> {
    /// The lane of the odd `n` (limbs) in k digits, with x = `x0` (limbs,
    /// below n); b is zero.
    #[target_feature(enable = "avx512f,avx512ifma")]
    unsafe fn new(n: &[u64], x0: &[u64], k: usize) -> Lane<V> {
        use zeroize::Zeroize;
        let mut nd = [0u64; 160];
        digits_into(n, k, &mut nd);
        let mut x = [0u64; 160];
        digits_into(x0, k, &mut x);
        let lane = Lane {
            // SAFETY: the features are enabled here.
            n: unsafe { load::<V>(&nd) },
            k0: crate::arith::inverse_mod_2_64(n[0]).wrapping_neg() & MASK,
            x,
            b: [0; 160],
        };
        nd.zeroize();
        lane
    }

    /// Overwrites everything the lane holds (for secret n).
    fn wipe(&mut self) {
        use zeroize::Zeroize;
        self.x.zeroize();
        self.b.zeroize();
        self.k0.zeroize();
        for r in self.n.iter_mut() {
            // SAFETY: a valid, aligned place of this type; volatile so the
            // store is kept.
            unsafe { std::ptr::write_volatile(r, std::mem::zeroed()) };
        }
    }
}

/// b ← 2x where `mask` is all ones, b ← x where it is zero, over the V
/// registers' digits of x (normalised, with 2x below 2^(52k): x < 2n and
/// R ≥ 8n): each digit shifted up by one bit, its top bit carried into the
/// next digit's lane, the two chosen by the mask; no branch or index
/// depends on a value.
#[cfg(all(target_arch = "x86_64", pf_avx512))]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn twice_if<const V: usize>(x: &[u64; 160], b: &mut [u64; 160], mask: u64) {
    let m = _mm512_set1_epi64(mask as i64);
    let digit = _mm512_set1_epi64(MASK as i64);
    let mut below = _mm512_setzero_si512();
    // SAFETY: the loads and stores read and write 8·V ≤ 160 words of x
    // and b, unaligned.
    let xs = unsafe { load::<V>(x) };
    for (j, &xj) in xs.iter().enumerate() {
        let top = _mm512_srli_epi64::<51>(xj);
        // Lane i gets the top bit of digit 8j + i − 1 (of the registers
        // below for i = 0).
        let carry = _mm512_alignr_epi64::<7>(top, below);
        let twice = _mm512_or_si512(_mm512_and_si512(_mm512_slli_epi64::<1>(xj), digit), carry);
        let v = _mm512_or_si512(_mm512_andnot_si512(m, xj), _mm512_and_si512(twice, m));
        below = top;
        // SAFETY: as above.
        unsafe { _mm512_storeu_si512(b.as_mut_ptr().add(8 * j).cast(), v) };
    }
}

/// x ← AMM(x, b) (normalised digits) in each of L lanes of the same digit
/// count k. The lanes' chains are independent, so the CPU overlaps them:
/// at small sizes one lane's step is bound by its chain's latency, not by
/// the multiply-add throughput. Every lane is carried into 52-bit digits
/// in the registers at the end ([`normalised`]).
#[cfg(all(target_arch = "x86_64", pf_avx512))]
#[target_feature(enable = "avx512f,avx512ifma")]
#[inline]
unsafe fn amm<const V: usize, const L: usize, const SHARED: bool>(
    lanes: &mut [Lane<V>; L],
    k: usize,
) {
    // SAFETY: the features were checked by the caller.
    unsafe { amm_of::<V, L, false, SHARED>(lanes, k) }
}

/// x ← AMM(x, x) in each lane: [`amm`] reading the second operand's
/// digits from x (whose digits in memory stay as they were until the
/// result is stored), so a squaring needs no copy of x into b.
#[cfg(all(target_arch = "x86_64", pf_avx512))]
#[target_feature(enable = "avx512f,avx512ifma")]
#[inline]
unsafe fn amm_square<const V: usize, const L: usize, const SHARED: bool>(
    lanes: &mut [Lane<V>; L],
    k: usize,
) {
    // SAFETY: the features were checked by the caller.
    unsafe { amm_of::<V, L, true, SHARED>(lanes, k) }
}

/// [`amm`] (`SQUARE` false) or [`amm_square`] (true). With `SHARED`,
/// every lane has the same modulus (the rounds of one number: `mr_rounds`
/// builds all its lanes from one n) and all read lane 0's n and k0, one
/// copy in registers instead of L.
#[cfg(all(target_arch = "x86_64", pf_avx512))]
#[target_feature(enable = "avx512f,avx512ifma")]
#[inline]
unsafe fn amm_of<const V: usize, const L: usize, const SQUARE: bool, const SHARED: bool>(
    lanes: &mut [Lane<V>; L],
    k: usize,
) {
    let in_place = L > 1 && V * L >= IN_PLACE_FROM;
    let zero = _mm512_setzero_si512();
    // SAFETY: the features were checked by the caller.
    let a: [[__m512i; V]; L] = std::array::from_fn(|l| unsafe { load::<V>(&lanes[l].x) });
    let k0v: [__m512i; L] =
        std::array::from_fn(|l| _mm512_set1_epi64(lanes[if SHARED { 0 } else { l }].k0 as i64));
    let shared_n = lanes[0].n;
    let mut acc = [[zero; V]; L];
    // Per digit of b: m is formed in every lane at once, as the low half of
    // (digit 0)·k0 (vpmadd52luq reads the low 52 bits of digit 0, which is
    // all m needs). In place (see IN_PLACE_FROM), the four products go
    // straight into the accumulator around the shift. Otherwise its chain
    // is kept short: the products that do not depend on m (a·b_i) and the
    // high halves are formed in fresh registers off the chain and added
    // once, and the carry out of digit 0 joins the high halves.
    for i in 0..k {
        for l in 0..L {
            let n = if SHARED { &shared_n } else { &lanes[l].n };
            let (a, acc) = (&a[l], &mut acc[l]);
            let bi = if SQUARE { lanes[l].x[i] } else { lanes[l].b[i] };
            let bv = _mm512_set1_epi64(bi as i64);
            if in_place {
                for j in 0..V {
                    acc[j] = _mm512_madd52lo_epu64(acc[j], a[j], bv);
                }
                let mv = _mm512_madd52lo_epu64(
                    zero,
                    _mm512_broadcastq_epi64(_mm512_castsi512_si128(acc[0])),
                    k0v[l],
                );
                for j in 0..V {
                    acc[j] = _mm512_madd52lo_epu64(acc[j], n[j], mv);
                }
                // Digit 0 is now 0 mod 2^52; its carry stays in lane 0.
                let c = _mm512_maskz_srli_epi64(1, acc[0], 52);
                for j in 0..V - 1 {
                    acc[j] = _mm512_alignr_epi64::<1>(acc[j + 1], acc[j]);
                }
                acc[V - 1] = _mm512_alignr_epi64::<1>(zero, acc[V - 1]);
                acc[0] = _mm512_add_epi64(acc[0], c);
                for j in 0..V {
                    acc[j] = _mm512_madd52hi_epu64(acc[j], a[j], bv);
                }
                for j in 0..V {
                    acc[j] = _mm512_madd52hi_epu64(acc[j], n[j], mv);
                }
                continue;
            }
            for j in 0..V {
                acc[j] = _mm512_add_epi64(acc[j], _mm512_madd52lo_epu64(zero, a[j], bv));
            }
            let mv = _mm512_madd52lo_epu64(
                zero,
                _mm512_broadcastq_epi64(_mm512_castsi512_si128(acc[0])),
                k0v[l],
            );
            let mut hi = [zero; V];
            for j in 0..V {
                hi[j] = _mm512_madd52hi_epu64(_mm512_madd52hi_epu64(zero, a[j], bv), n[j], mv);
            }
            for j in 0..V {
                acc[j] = _mm512_madd52lo_epu64(acc[j], n[j], mv);
            }
            // Digit 0 is now 0 mod 2^52; its carry moves down with the shift.
            hi[0] = _mm512_add_epi64(hi[0], _mm512_maskz_srli_epi64(1, acc[0], 52));
            for j in 0..V - 1 {
                acc[j] = _mm512_add_epi64(_mm512_alignr_epi64::<1>(acc[j + 1], acc[j]), hi[j]);
            }
            acc[V - 1] = _mm512_add_epi64(_mm512_alignr_epi64::<1>(zero, acc[V - 1]), hi[V - 1]);
        }
    }
    for (lane, acc) in lanes.iter_mut().zip(&acc) {
        // SAFETY: the features were checked by the caller.
        let x = unsafe { normalised::<V>(acc) };
        // SAFETY: as above.
        unsafe { store::<V>(&x, &mut lane.x) };
    }
}

/// The digits of the V registers' number (lanes below 2^63, the lowest
/// digit first; the number below 2^(52·8V)) carried into 52-bit digits in
/// the registers: one pass moves each lane's bits above 52 into the next
/// lane, leaving at most a carry of one per lane, and those ripple through
/// the lanes that are all ones by one addition of bit masks (lanes that
/// generate a carry, shifted up a lane, plus lanes that pass one on). No
/// branch or index depends on a value.
#[cfg(all(target_arch = "x86_64", pf_avx512))]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn normalised<const V: usize>(acc: &[__m512i; V]) -> [__m512i; V] {
    let zero = _mm512_setzero_si512();
    let digit = _mm512_set1_epi64(MASK as i64);
    let mut below = zero;
    let mut x = [zero; V];
    for j in 0..V {
        let c = _mm512_srli_epi64::<52>(acc[j]);
        // Lane i gets the carry of digit 8j + i − 1.
        let up = _mm512_alignr_epi64::<7>(c, below);
        x[j] = _mm512_add_epi64(_mm512_and_si512(acc[j], digit), up);
        below = c;
    }
    debug_assert_eq!(_mm512_cmpneq_epi64_mask(below, zero) & 0x80, 0);
    // Now every lane is below 2^53 and the carries ripple: 64 lanes per
    // mask word, the carry out of one word into the next.
    let one = _mm512_set1_epi64(1);
    let mut carry = 0u64;
    let mut out = 0u64;
    for x in x.chunks_mut(8) {
        let (mut g, mut p) = (0u64, 0u64);
        for (j, x) in x.iter().enumerate() {
            g |= (_mm512_cmpgt_epu64_mask(*x, digit) as u64) << (8 * j);
            p |= (_mm512_cmpeq_epi64_mask(*x, digit) as u64) << (8 * j);
        }
        let (sum, over) = ((g << 1) | carry).overflowing_add(p);
        let into = sum ^ p;
        carry = (over as u64) | (g >> 63);
        for (j, x) in x.iter_mut().enumerate() {
            let k = (into >> (8 * j)) as u8;
            *x = _mm512_and_si512(_mm512_mask_add_epi64(*x, k, *x, one), digit);
        }
        // A carry out of the top lane (into a lane past the registers).
        out = if x.len() == 8 {
            carry
        } else {
            into >> (8 * x.len())
        };
    }
    debug_assert_eq!(out, 0);
    x
}

/// Bit i of the limbs n (zero above them).
#[cfg(all(target_arch = "x86_64", pf_avx512))]
fn bit(n: &[u64], i: u64) -> u64 {
    n.get(i as usize / 64).map_or(0, |l| (l >> (i % 64)) & 1)
}

/// Steps every lane over the bits `bits` of its n, from the top down:
/// x ← x²/R, doubled where the bit is one. Looks at `stop` every 64 bits.
#[cfg(all(target_arch = "x86_64", pf_avx512))]
#[target_feature(enable = "avx512f,avx512ifma")]
unsafe fn run<const V: usize, const L: usize>(
    lanes: &mut [Lane<V>; L],
    ns: [&[u64]; L],
    k: usize,
    bits: std::ops::Range<u64>,
    stop: &AtomicBool,
) -> Option<()> {
    let (first, end) = (bits.start, bits.end);
    for i in bits.rev() {
        if i % 64 == 0 && stop.load(Ordering::Relaxed) {
            crate::work::given_up(end - 1 - i, end - first);
            return None;
        }
        for (lane, n) in lanes.iter_mut().zip(ns) {
            // b = 2x where the bit is one, else x, in vector registers.
            // SAFETY: the features were checked by the caller.
            unsafe { twice_if::<V>(&lane.x, &mut lane.b, bit(n, i).wrapping_neg()) };
        }
        // SAFETY: the features were checked by the caller.
        unsafe { amm::<V, L, false>(lanes, k) };
    }
    Some(())
}

/// The strong base-2 test on L odd numbers with the same digit count k
/// at once (their `r_mod_n` as for [`strong_base2`]), or `None` once
/// `stop` is set.
#[cfg(all(target_arch = "x86_64", pf_avx512))]
#[target_feature(enable = "avx512f,avx512ifma")]
unsafe fn test<const V: usize, const L: usize>(
    ns: [&[u64]; L],
    rs: [&[u64]; L],
    k: usize,
    stop: &AtomicBool,
) -> Option<[bool; L]> {
    // n − 1 = 2^s·d: s is n's lowest one bit above bit 0.
    let mut s = [0u64; L];
    let mut top = 0;
    for (s, n) in s.iter_mut().zip(ns) {
        *s = n.iter().enumerate().find_map(|(w, &l)| {
            let l = if w == 0 { l & !1 } else { l };
            (l != 0).then(|| 64 * w as u64 + l.trailing_zeros() as u64)
        })?;
        top = top.max(64 * n.len() as u64 - n[n.len() - 1].leading_zeros() as u64);
    }
    // SAFETY: the features were checked by the caller.
    let mut lanes: [Lane<V>; L] = std::array::from_fn(|l| unsafe { Lane::new(ns[l], rs[l], k) });
    // x = R mod n is 1 in Montgomery form. Together over the bits above
    // every lane's s (a lane's bits above its top are zeros: 1 squared
    // stays 1), then each lane alone.
    let joint = s.iter().copied().max().unwrap_or(0);
    // SAFETY: as above.
    unsafe { run(&mut lanes, ns, k, joint..top, stop) }?;
    let mut verdicts = [false; L];
    for l in 0..L {
        let lane = std::array::from_mut(&mut lanes[l]);
        // SAFETY: as above.
        unsafe { run(lane, [ns[l]], k, s[l]..joint, stop) }?;
        // SAFETY: as above.
        verdicts[l] = unsafe { finish(&mut lane[0], ns[l], rs[l], s[l], k, stop) }?;
    }
    Some(verdicts)
}

/// The end of one lane's strong test once x = 2^d·R (up to a multiple of
/// n): it passes when x is ±1, or when one of the next s − 1 squarings is
/// −1 before any is 1.
#[cfg(all(target_arch = "x86_64", pf_avx512))]
#[target_feature(enable = "avx512f,avx512ifma")]
unsafe fn finish<const V: usize>(
    lane: &mut Lane<V>,
    n: &[u64],
    r_mod_n: &[u64],
    s: u64,
    k: usize,
    stop: &AtomicBool,
) -> Option<bool> {
    if stop.load(Ordering::Relaxed) {
        return None;
    }
    let len = n.len();
    let minus_one = sub(n, r_mod_n).expect("R mod n < n");
    let mut n_wide = n.to_vec();
    n_wide.push(0);
    let value = |x: &[u64; 160]| {
        let mut l = vec![0u64; len + 1];
        limbs_into(&x[..k], &mut l);
        // x < 2n: at most one subtraction; the extra limb is then zero.
        let mut r = reduce_once(l, &n_wide);
        r.truncate(len);
        r
    };
    let cur = value(&lane.x);
    if cur == r_mod_n || cur == minus_one {
        return Some(true);
    }
    for _ in 1..s {
        // SAFETY: the features were checked by the caller.
        unsafe { amm_square::<V, 1, false>(std::array::from_mut(lane), k) };
        let cur = value(&lane.x);
        if cur == minus_one {
            return Some(true);
        }
        if cur == r_mod_n {
            return Some(false);
        }
    }
    Some(false)
}

/// [`test`] on one number.
#[cfg(all(target_arch = "x86_64", pf_avx512))]
#[target_feature(enable = "avx512f,avx512ifma")]
unsafe fn test1<const V: usize>(
    n: &[u64],
    r_mod_n: &[u64],
    k: usize,
    stop: &AtomicBool,
) -> Option<bool> {
    // SAFETY: the features were checked by the caller.
    unsafe { test::<V, 1>([n], [r_mod_n], k, stop) }.map(|[v]| v)
}

/// [`test`] on L numbers given as slices (of that length).
#[cfg(all(target_arch = "x86_64", pf_avx512))]
#[target_feature(enable = "avx512f,avx512ifma")]
unsafe fn test_slices<const V: usize, const L: usize>(
    ns: &[&[u64]],
    rs: &[&[u64]],
    k: usize,
    stop: &AtomicBool,
) -> Option<Vec<bool>> {
    let (ns, rs) = (ns.try_into().ok()?, rs.try_into().ok()?);
    // SAFETY: the features were checked by the caller.
    unsafe { test::<V, L>(ns, rs, k, stop) }.map(|v| v.to_vec())
}

/// The base-2 Fermat test on a *secret* odd `n` ([`LIMBS`] limbs, top one
/// non-zero): `Some(1)` when 2^(n−1) ≡ 1 (mod n), `Some(0)` when not,
/// `None` once `stop` is set (looked at every 64 bits) or when this CPU or
/// size is not covered. `r_mod_n` is 2^(52k) mod n (k = [`digits`]),
/// computed by the caller in constant time.
///
/// Constant time: the loop runs once per bit of n (its length is public),
/// each exponent bit becomes a mask that selects x or 2x as the second
/// operand; the multiply-adds, the shifts and the carry pass have no
/// branch or index that depends on a value, and the verdict is formed
/// from masks. The lane (x, the second operand, k0 and n's registers) is
/// wiped before returning; the vector registers are cleared with the rest
/// when a worker ends (`secure::regs`).
pub(crate) fn fermat_base2_secret(n: &[u64], r_mod_n: &[u64], stop: &AtomicBool) -> Option<u64> {
    let (k, v) = plan(n)?;
    #[cfg(all(target_arch = "x86_64", pf_avx512))]
    {
        by_registers!(v, fermat1(n, r_mod_n, k, stop))
    }
    #[cfg(not(all(target_arch = "x86_64", pf_avx512)))]
    {
        let _ = (r_mod_n, stop, v, k);
        None
    }
}

/// (n − 1)·2^t into `out` (n's length and one limb more) for odd n and t
/// ≤ 3; a shift's time does not depend on its count, and the branches
/// look at positions only.
#[cfg(all(target_arch = "x86_64", pf_avx512))]
pub(crate) fn shifted_minus_one_into(n: &[u64], t: u32, out: &mut [u64]) {
    let len = n.len();
    let mut below = 0u64;
    for (i, oi) in out.iter_mut().enumerate().take(len + 1) {
        let limb = match i {
            0 => n[0] ^ 1,
            i if i < len => n[i],
            _ => 0,
        };
        // Two shifts, so that t = 0 shifts by 64 without overflowing.
        *oi = (limb << t) | ((below >> 1) >> (63 - t));
        below = limb;
    }
}

/// The masks (0 or 1) of position i of a round whose exponent is (n −
/// 1)·2^t, for s = v2(n − 1): there x is base^(d·2^j)·R for j = s + t −
/// i, and `first` is 1 where j = 0 (passes on 1 or −1), `rest` where 0 <
/// j < s (passes on −1). From borrows only: no branch on s or t.
#[cfg(all(target_arch = "x86_64", pf_avx512))]
pub(crate) fn folded_round_masks(i: usize, s: u32, t: u32) -> (u64, u64) {
    let (i, top) = (i as u64, u64::from(s + t));
    let below = |a: u64, b: u64| a.wrapping_sub(b) >> 63;
    let first = std::hint::black_box(1 ^ (below(i, top) | below(top, i)));
    let rest = std::hint::black_box(below(i, top) & below(u64::from(t), i));
    (first, rest)
}

/// −1 in Montgomery form, n − (R mod n) (R mod n < n), into `out` (n's
/// length), with a borrow chain that never branches.
#[cfg(all(target_arch = "x86_64", pf_avx512))]
pub(crate) fn minus_one_into(n: &[u64], r_mod_n: &[u64], out: &mut [u64]) {
    let mut borrow = 0u64;
    for (j, oj) in out.iter_mut().enumerate().take(n.len()) {
        let (d1, b1) = n[j].overflowing_sub(r_mod_n[j]);
        let (dj, b2) = d1.overflowing_sub(borrow);
        *oj = dj;
        borrow = (b1 | b2) as u64;
    }
}

/// The bit length of the limbs n (top limb non-zero).
#[cfg(all(target_arch = "x86_64", pf_avx512))]
fn bit_length(n: &[u64]) -> usize {
    64 * n.len() - n.last().map_or(64, |t| t.leading_zeros() as usize)
}

/// The first k 52-bit digits of the limbs into `out[..k]`, without
/// branching on the values.
pub(crate) fn digits_into(limbs: &[u64], k: usize, out: &mut [u64]) {
    for (j, dj) in out[..k].iter_mut().enumerate() {
        *dj = digit(limbs, j);
    }
}

/// The 52-bit digit j of the limbs, without branching on the values.
#[inline]
pub(crate) fn digit(limbs: &[u64], j: usize) -> u64 {
    super::bits_at(limbs, 52 * j, 52)
}

/// The secret Fermat test on n (k digits, `r_mod_n` = R mod n): `Some`
/// of the verdict (1 or 0), `None` once `stop` is set.
#[cfg(all(target_arch = "x86_64", pf_avx512))]
#[target_feature(enable = "avx512f,avx512ifma")]
unsafe fn fermat1<const V: usize>(
    n: &[u64],
    r_mod_n: &[u64],
    k: usize,
    stop: &AtomicBool,
) -> Option<u64> {
    let bits = bit_length(n);
    // SAFETY: the features were checked by the caller.
    let mut lane: [Lane<V>; 1] = [unsafe { Lane::new(n, r_mod_n, k) }];
    // The exponent n − 1: n's bits with bit 0 (1 in n, 0 in n − 1) left out.
    // SAFETY: as above.
    let stopped = !unsafe { pow2_loop::<V, 1>(&mut lane, [n], bits, 1, k, stop) };
    // x < 2n is congruent to 2^(n−1)·R: it passes when x ≡ R (mod n).
    let verdict = (!stopped).then(|| congruent(&lane[0].x, k, r_mod_n, n));
    lane[0].wipe();
    verdict
}

/// x_l ← 2^(e_l)·R (mod n_l, below 2n_l) in each lane, where each lane
/// holds x = R mod n_l (`Lane::new(n_l, r_l, k)`) and e_l is the number
/// whose limbs are `exps[l]` without its lowest `skip` bits (0 or 1: bit 0
/// is read as 0 when `skip` is 1, which makes n's limbs give n − 1 for an
/// odd n). Left to right over `bits` bits (public) of every exponent: x ←
/// AMM(x, x·2^bit) = x²·2^bit / R, the doubling chosen by a mask made from
/// the bit; no branch or index depends on a value. False when `stop` was
/// set (looked at every 64 bits; the work given up is reported).
#[cfg(all(target_arch = "x86_64", pf_avx512))]
#[target_feature(enable = "avx512f,avx512ifma")]
unsafe fn pow2_loop<const V: usize, const L: usize>(
    lanes: &mut [Lane<V>; L],
    exps: [&[u64]; L],
    bits: usize,
    skip: usize,
    k: usize,
    stop: &AtomicBool,
) -> bool {
    for i in (0..bits).rev() {
        if i % 64 == 0 && stop.load(Ordering::Relaxed) {
            crate::work::given_up((bits - 1 - i) as u64, bits as u64);
            return false;
        }
        for (lane, e) in lanes.iter_mut().zip(exps) {
            let bit = if i < skip {
                0
            } else {
                e.get(i / 64).map_or(0, |w| (w >> (i % 64)) & 1)
            };
            let mask = std::hint::black_box(bit.wrapping_neg());
            // SAFETY: the features were checked by the caller.
            unsafe { twice_if::<V>(&lane.x, &mut lane.b, mask) };
        }
        // SAFETY: as above.
        unsafe { amm::<V, L, false>(lanes, k) };
    }
    true
}

/// 1 when the digits x (k of them, x < 2n) are congruent to the limbs t
/// (t < n) modulo n, else 0: x − t is then 0 or n. Compared limb by limb
/// over all of n's limbs and one more, with masks: no branch or index
/// depends on a value.
#[cfg(all(target_arch = "x86_64", pf_avx512))]
fn congruent(x: &[u64; 160], k: usize, t: &[u64], n: &[u64]) -> u64 {
    use zeroize::Zeroize;
    let mut xl = [0u64; 161];
    limbs_into(&x[..k], &mut xl);
    let (mut borrow, mut diff_zero, mut diff_n) = (0u64, 0u64, 0u64);
    for (j, &xj) in xl[..=n.len()].iter().enumerate() {
        let (d1, b1) = xj.overflowing_sub(t.get(j).copied().unwrap_or(0));
        let (d, b2) = d1.overflowing_sub(borrow);
        borrow = (b1 | b2) as u64;
        diff_zero |= d;
        diff_n |= d ^ n.get(j).copied().unwrap_or(0);
    }
    xl.zeroize();
    let is_zero = |w: u64| 1 ^ ((w | w.wrapping_neg()) >> 63);
    is_zero(diff_zero) | is_zero(diff_n)
}

/// t and t + n (t < n, both in n's length; t + n < 2n ≤ 2^(52k)) as k
/// digits each into `out`, by a carry chain that never branches: the two
/// forms below 2n of the residue t.
#[cfg(all(target_arch = "x86_64", pf_avx512))]
fn below_2n_into(t: &[u64], n: &[u64], k: usize, out: &mut [[u64; 160]; 2]) {
    use zeroize::Zeroize;
    let mut sum = [0u64; 161];
    let mut carry = 0u64;
    for (j, sj) in sum.iter_mut().enumerate().take(n.len()) {
        let (a, c1) = t[j].overflowing_add(n[j]);
        let (b, c2) = a.overflowing_add(carry);
        *sj = b;
        carry = (c1 | c2) as u64;
    }
    sum[n.len()] = carry;
    digits_into(t, k, &mut out[0]);
    digits_into(&sum[..=n.len()], k, &mut out[1]);
    sum.zeroize();
}

/// 1 when the V registers' digits of x and t are equal, else 0: their
/// differences ORed in registers and tested into a mask; no branch or
/// index depends on a value.
#[cfg(all(target_arch = "x86_64", pf_avx512))]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn equal<const V: usize>(x: &[u64; 160], t: &[u64; 160]) -> u64 {
    // SAFETY: the features are enabled here.
    let (xs, ts) = unsafe { (load::<V>(x), load::<V>(t)) };
    let mut diff = _mm512_setzero_si512();
    for (a, b) in xs.iter().zip(&ts) {
        diff = _mm512_or_si512(diff, _mm512_xor_si512(*a, *b));
    }
    let m = _mm512_test_epi64_mask(diff, diff) as u64;
    1 ^ ((m | m.wrapping_neg()) >> 63)
}

/// Exponent bits per window of [`mr_round_secret`].
#[cfg(all(target_arch = "x86_64", pf_avx512))]
const MR_WINDOW: usize = 4;

/// One Miller–Rabin round to `base` (limbs, 2 ≤ base ≤ n − 2) on a
/// *secret* odd `n` ([`LIMBS`] limbs, top one non-zero): `Some(1)` when n
/// is a strong probable prime to the base, `Some(0)` when not, `None` once
/// `stop` is set (looked at every 64 exponent bits) or when this CPU or
/// size is not covered, or v2(n − 1) is above `gmp::sec::MAX_S` (the
/// caller decides). `r_mod_n` and `r2_mod_n` are R and R² mod n for R =
/// 2^(52k) (k = [`digits`]), computed by the caller in constant time.
///
/// The round of `gmp::sec::mr_round` on the IFMA step, its squarings
/// folded into the exponentiation: s = v2(n − 1) by a count of trailing
/// zeros of one limb, t ≡ −s (mod 4) in 0..4, and E = (n − 1)·2^t by
/// shifts (their time does not depend on s); the base into Montgomery form
/// by one step with R²; base^0 … base^15 in a table; base^E by fixed 4-bit
/// windows over n's bit count plus 3, each window's power read by scanning
/// all sixteen entries with masks. Bit s + t of E, its lowest set bit, is
/// at a window's foot, so base^d (d = (n − 1)/2^s) is x right after that
/// window's product and each squaring below it (the windows there are
/// zero) gives the next base^(d·2^j): at the last `MAX_S` + 3 positions x
/// is compared with 1 and −1, counted by masks only at the positions that
/// hold base^d (1 or −1) and base^(d·2^j), 0 < j < s (−1). The round costs
/// about 57 multiplications fewer than base^d followed by `MAX_S − 1`
/// squarings. Every loop's length, index and branch depends on n's size
/// only; the lane, the table and E are wiped before returning.
pub(crate) fn mr_round_secret(
    n: &[u64],
    base: &[u64],
    r_mod_n: &[u64],
    r2_mod_n: &[u64],
    stop: &AtomicBool,
) -> Option<u64> {
    let (k, v) = plan(n)?;
    let s = (n[0] ^ 1).trailing_zeros();
    if s > crate::gmp::sec::MAX_S || base.len() > n.len() {
        return None;
    }
    #[cfg(all(target_arch = "x86_64", pf_avx512))]
    {
        by_registers!(v, mr_round1(n, base, r_mod_n, r2_mod_n, s, k, stop))
    }
    #[cfg(not(all(target_arch = "x86_64", pf_avx512)))]
    {
        let _ = (base, r_mod_n, r2_mod_n, stop, v, k, s);
        None
    }
}

/// base_l^(e_l) mod n_l for two *secret* odd moduli at once (limbs,
/// [`LIMBS`] of them, top one non-zero, the same 52-bit digit count and
/// limb count, up to [`PAIR_REGISTERS`] registers: [`pairs`] of their bit
/// length), fully reduced into `outs[l]` (n_l's length): the RSA pairwise
/// test's two CRT exponentiations in one loop. Each base is below its n,
/// each exponent has at most `bits` bits (public: the loop's length) and
/// at most n's length; `rs[l]` and `r2s[l]` are R and R² mod n_l (R =
/// 2^(52k)), computed by the caller in constant time. `None` when stopped
/// (looked at every 64 exponent bits) or not covered; `outs` are then
/// untouched.
///
/// Constant time as [`mr_round_secret`]'s exponentiation (`pow_lanes`:
/// fixed 4-bit windows over `bits` bits, each window's power read by
/// scanning all sixteen entries with masks; each lane its own modulus,
/// table and window index); then one step by 1 out of Montgomery form and
/// one subtraction of n chosen by the borrow's mask. The lanes, tables and
/// digit buffers are wiped.
#[allow(clippy::too_many_arguments)]
pub(crate) fn pow_secret_pair(
    ns: [&[u64]; 2],
    bases: [&[u64]; 2],
    exps: [&[u64]; 2],
    bits: u32,
    rs: [&[u64]; 2],
    r2s: [&[u64]; 2],
    outs: [&mut [u64]; 2],
    stop: &AtomicBool,
) -> Option<()> {
    let (k, v) = pair_plan(ns, exps, bits, rs, &outs)?;
    let len = ns[0].len();
    if (0..2).any(|l| bases[l].len() > len || r2s[l].len() < len) {
        return None;
    }
    #[cfg(all(target_arch = "x86_64", pf_avx512))]
    {
        by_registers!(@ v, pow_pair(ns, bases, exps, bits as usize, rs, r2s, k, outs, stop), 2 3 4 5 6 7 8)
    }
    #[cfg(not(all(target_arch = "x86_64", pf_avx512)))]
    {
        let _ = (bases, exps, rs, r2s, outs, stop, k, v);
        None
    }
}

/// (k, V) of two moduli the pair kernels take: one digit count and limb
/// count, at most [`PAIR_REGISTERS`] registers, exponents of at most
/// their length and `bits` within it, R and the outputs of their length.
fn pair_plan(
    ns: [&[u64]; 2],
    exps: [&[u64]; 2],
    bits: u32,
    rs: [&[u64]; 2],
    outs: &[&mut [u64]; 2],
) -> Option<(usize, usize)> {
    let (k, v) = plan(ns[0])?;
    let len = ns[0].len();
    (plan(ns[1])? == (k, v)
        && ns[1].len() == len
        && v <= PAIR_REGISTERS
        && (0..2).all(|l| exps[l].len() <= len && rs[l].len() >= len && outs[l].len() == len)
        && bits as usize <= 64 * len)
        .then_some((k, v))
}

/// [`pow_secret_pair`] for V registers per number.
#[cfg(all(target_arch = "x86_64", pf_avx512))]
#[target_feature(enable = "avx512f,avx512ifma")]
#[allow(clippy::too_many_arguments)]
unsafe fn pow_pair<const V: usize>(
    ns: [&[u64]; 2],
    bases: [&[u64]; 2],
    exps: [&[u64]; 2],
    bits: usize,
    rs: [&[u64]; 2],
    r2s: [&[u64]; 2],
    k: usize,
    outs: [&mut [u64]; 2],
    stop: &AtomicBool,
) -> Option<()> {
    // SAFETY: the features were checked by the caller (for every unsafe
    // block below).
    let mut lanes: [Lane<V>; 2] = std::array::from_fn(|l| unsafe { Lane::new(ns[l], bases[l], k) });
    // SAFETY: as above.
    let done = unsafe {
        pow_lanes::<V, 2, false>(&mut lanes, rs, r2s, exps, bits, k, stop, 0, &mut |_, _| {})
    };
    if done {
        // SAFETY: as above.
        unsafe { out_of_form::<V, 2>(&mut lanes, ns, k, outs) };
    }
    for lane in lanes.iter_mut() {
        lane.wipe();
    }
    done.then_some(())
}

/// Each lane's x (Montgomery form, below 2n_l) out of the form and fully
/// reduced into `outs[l]` (n_l's length): AMM(x, 1) = x/R, at most n (x <
/// 2n, R ≥ 8n), then n taken away where the subtraction does not borrow,
/// chosen by the borrow's mask. The lanes' x and b are overwritten; the
/// digit buffers are wiped.
#[cfg(all(target_arch = "x86_64", pf_avx512))]
#[target_feature(enable = "avx512f,avx512ifma")]
unsafe fn out_of_form<const V: usize, const L: usize>(
    lanes: &mut [Lane<V>; L],
    ns: [&[u64]; L],
    k: usize,
    outs: [&mut [u64]; L],
) {
    use zeroize::Zeroize;
    for lane in lanes.iter_mut() {
        lane.b[..k].fill(0);
        lane.b[0] = 1;
    }
    // SAFETY: the features were checked by the caller.
    unsafe { amm::<V, L, false>(lanes, k) };
    let mut wide = [0u64; 129];
    let mut diff = [0u64; 129];
    for (l, out) in outs.into_iter().enumerate() {
        let (n, len) = (ns[l], ns[l].len());
        wide[..=len].fill(0);
        limbs_into(&lanes[l].x[..k], &mut wide[..=len]);
        let mut borrow = 0u64;
        for j in 0..=len {
            let (d1, b1) = wide[j].overflowing_sub(n.get(j).copied().unwrap_or(0));
            let (d, b2) = d1.overflowing_sub(borrow);
            diff[j] = d;
            borrow = (b1 | b2) as u64;
        }
        // All ones where x < n (the subtraction borrowed): keep x.
        let keep = std::hint::black_box(borrow).wrapping_neg();
        for (o, (&x, &d)) in out.iter_mut().zip(wide.iter().zip(&diff)) {
            *o = (x & keep) | (d & !keep);
        }
    }
    wide.zeroize();
    diff.zeroize();
}

/// 2^(e_l) mod n_l for two *secret* odd moduli at once, fully reduced into
/// `outs[l]` (n_l's length): the RSA pairwise test's two CRT parts of
/// signing 2. The moduli, exponents, `bits`, `rs` and `outs` as for
/// [`pow_secret_pair`] (no R² is needed: the loop starts from R, 2^0 in
/// Montgomery form). `None` when stopped or not covered; `outs` are then
/// untouched.
///
/// Constant time as the Fermat test it shares its loop with (`pow2_loop`:
/// per exponent bit one step x ← AMM(x, x·2^bit), the doubling chosen by
/// a mask; the loop's length is `bits`), then [`pow_secret_pair`]'s way
/// out of Montgomery form. A base of 2 needs no table and no window
/// products: each step costs one multiplication where a general base's
/// costs about 1.3.
pub(crate) fn pow2_secret_pair(
    ns: [&[u64]; 2],
    exps: [&[u64]; 2],
    bits: u32,
    rs: [&[u64]; 2],
    outs: [&mut [u64]; 2],
    stop: &AtomicBool,
) -> Option<()> {
    let (k, v) = pair_plan(ns, exps, bits, rs, &outs)?;
    #[cfg(all(target_arch = "x86_64", pf_avx512))]
    {
        by_registers!(@ v, pow2_pair(ns, exps, bits as usize, rs, k, outs, stop), 2 3 4 5 6 7 8)
    }
    #[cfg(not(all(target_arch = "x86_64", pf_avx512)))]
    {
        let _ = (exps, rs, outs, stop, k, v);
        None
    }
}

/// [`pow2_secret_pair`] for V registers per number.
#[cfg(all(target_arch = "x86_64", pf_avx512))]
#[target_feature(enable = "avx512f,avx512ifma")]
unsafe fn pow2_pair<const V: usize>(
    ns: [&[u64]; 2],
    exps: [&[u64]; 2],
    bits: usize,
    rs: [&[u64]; 2],
    k: usize,
    outs: [&mut [u64]; 2],
    stop: &AtomicBool,
) -> Option<()> {
    // SAFETY: the features were checked by the caller (for every unsafe
    // block below).
    let mut lanes: [Lane<V>; 2] = std::array::from_fn(|l| unsafe { Lane::new(ns[l], rs[l], k) });
    // SAFETY: as above.
    let done = unsafe { pow2_loop::<V, 2>(&mut lanes, exps, bits, 0, k, stop) };
    if done {
        // SAFETY: as above.
        unsafe { out_of_form::<V, 2>(&mut lanes, ns, k, outs) };
    }
    for lane in lanes.iter_mut() {
        lane.wipe();
    }
    done.then_some(())
}

/// [`mr_round_secret`] on L bases at once (2 ≤ L ≤
/// [`MAX_ROUNDS_AT_ONCE`]): L rounds on the same secret n, their steps
/// interleaved in one loop as the Fermat groups' are, up to
/// [`PAIR_REGISTERS`] registers (about 3300 bits); `None` as for the
/// single round, or above that size or L. Each lane has its own base and
/// table; the modulus, its inverse, the exponent and so every window's
/// index are the same in all, and the lanes read one copy of the modulus
/// (which leaves registers for more lanes: see [`rounds_at_once`]).
pub(crate) fn mr_rounds_secret<const L: usize>(
    n: &[u64],
    bases: [&[u64]; L],
    r_mod_n: &[u64],
    r2_mod_n: &[u64],
    stop: &AtomicBool,
) -> Option<[u64; L]> {
    let (k, v) = plan(n)?;
    let s = (n[0] ^ 1).trailing_zeros();
    if !(2..=MAX_ROUNDS_AT_ONCE).contains(&L)
        || s > crate::gmp::sec::MAX_S
        || bases.iter().any(|b| b.len() > n.len())
        || v > PAIR_REGISTERS
    {
        return None;
    }
    #[cfg(all(target_arch = "x86_64", pf_avx512))]
    {
        by_registers!(@ v, L, mr_rounds_v(n, bases, r_mod_n, r2_mod_n, s, k, stop), 2 3 4 5 6 7 8)
    }
    #[cfg(not(all(target_arch = "x86_64", pf_avx512)))]
    {
        let _ = (bases, r_mod_n, r2_mod_n, stop, v, k, s);
        None
    }
}

/// [`mr_rounds`] with one base.
#[cfg(all(target_arch = "x86_64", pf_avx512))]
#[target_feature(enable = "avx512f,avx512ifma")]
#[allow(clippy::too_many_arguments)]
unsafe fn mr_round1<const V: usize>(
    n: &[u64],
    base: &[u64],
    r_mod_n: &[u64],
    r2_mod_n: &[u64],
    s: u32,
    k: usize,
    stop: &AtomicBool,
) -> Option<u64> {
    // SAFETY: the features were checked by the caller.
    unsafe { mr_rounds::<V, 1>(n, [base], r_mod_n, r2_mod_n, s, k, stop) }.map(|[v]| v)
}

/// [`mr_rounds`] for V registers and L bases, as `by_registers!` calls it.
#[cfg(all(target_arch = "x86_64", pf_avx512))]
#[target_feature(enable = "avx512f,avx512ifma")]
#[allow(clippy::too_many_arguments)]
unsafe fn mr_rounds_v<const V: usize, const L: usize>(
    n: &[u64],
    bases: [&[u64]; L],
    r_mod_n: &[u64],
    r2_mod_n: &[u64],
    s: u32,
    k: usize,
    stop: &AtomicBool,
) -> Option<[u64; L]> {
    // SAFETY: the features were checked by the caller.
    unsafe { mr_rounds::<V, L>(n, bases, r_mod_n, r2_mod_n, s, k, stop) }
}

/// The rounds of [`mr_round_secret`] on L bases at once (the lanes share
/// n, d and s), for V registers per number.
#[cfg(all(target_arch = "x86_64", pf_avx512))]
#[target_feature(enable = "avx512f,avx512ifma")]
unsafe fn mr_rounds<const V: usize, const L: usize>(
    n: &[u64],
    bases: [&[u64]; L],
    r_mod_n: &[u64],
    r2_mod_n: &[u64],
    s: u32,
    k: usize,
    stop: &AtomicBool,
) -> Option<[u64; L]> {
    use crate::gmp::sec::MAX_S;
    use zeroize::Zeroize;
    let len = n.len();
    let bits = bit_length(n);
    // The exponent is n − 1 shifted up by t ∈ 0..4, t ≡ −s (mod 4): then
    // bit s + t, the lowest set, is at the foot of a window, so x =
    // base^d·R right after that window's product, and every squaring
    // below it (all-zero windows) gives the next base^(d·2^j)·R; the
    // sequence a round looks at comes out of the exponentiation itself,
    // at positions s + t − j, with no squarings after it. The exponent
    // has at most bits + 3 bits whatever s is, so the loop's length does
    // not depend on s; nor does any branch or index below.
    let t = (4 - (s & 3)) & 3;
    let mut e = [0u64; 129];
    shifted_minus_one_into(n, t, &mut e[..=len]);
    let mut minus_one = [0u64; 128];
    minus_one_into(n, r_mod_n, &mut minus_one[..len]);
    // The values below 2n that are 1 and −1 in Montgomery form, as
    // digits: x (below 2n) is congruent to v exactly when it equals v or
    // v + n.
    let mut one = [[0u64; 160]; 2];
    let mut minus = [[0u64; 160]; 2];
    below_2n_into(&r_mod_n[..len], n, k, &mut one);
    below_2n_into(&minus_one[..len], n, k, &mut minus);
    // SAFETY: the features were checked by the caller (for every unsafe
    // block below: `Lane::new`, `pow_lanes`, `amm` and `equal` need them).
    let is = |x: &[u64; 160], v: &[[u64; 160]; 2]| unsafe {
        equal::<V>(x, &v[0]) | equal::<V>(x, &v[1])
    };
    let mut pass = [0u64; L];
    let mut watch = |lanes: &[Lane<V>; L], i: usize| {
        let (first, rest) = folded_round_masks(i, s, t);
        for (p, lane) in pass.iter_mut().zip(lanes) {
            let m = is(&lane.x, &minus);
            *p |= (first & (is(&lane.x, &one) | m)) | (rest & m);
        }
    };
    // SAFETY: as above.
    let mut lanes: [Lane<V>; L] = std::array::from_fn(|l| unsafe { Lane::new(n, bases[l], k) });
    // SAFETY: as above.
    let stopped = !unsafe {
        pow_lanes::<V, L, true>(
            &mut lanes,
            [r_mod_n; L],
            [r2_mod_n; L],
            [&e[..=len]; L],
            bits + 3,
            k,
            stop,
            MAX_S as usize + 4,
            &mut watch,
        )
    };
    let verdict = (!stopped).then_some(pass);
    for v in one.iter_mut().chain(minus.iter_mut()) {
        v.zeroize();
    }
    for lane in lanes.iter_mut() {
        lane.wipe();
    }
    e.zeroize();
    minus_one.zeroize();
    verdict
}

/// x_l ← base_l^(e_l)·R (mod n_l, below 2n_l) in each lane, where each
/// lane was made by `Lane::new(n_l, base_l, k)` (x = base_l, below n_l):
/// the base into Montgomery form by one step with R² (`r2s[l]`), base^0 …
/// base^15 into a table (base^0 = R mod n_l, `rs[l]`), then fixed 4-bit
/// windows over `bits` bits of every exponent from the top, each window's
/// power read by scanning all sixteen entries with masks. Every loop's
/// length, index and branch depends on `bits` and k only; the tables are
/// wiped. False when `stop` was set (looked at every 64 bits). `SHARED`
/// as for `amm_of`: only when every lane's n is the same.
///
/// `watch(lanes, i)` is called at every bit position i below
/// `watch_below` (a public bound) once x holds the power at position i,
/// base^⌊e/2^i⌋·R, where that is so: after each window's product (i at a
/// window's foot), and after each squaring inside a window whose bits
/// from i up are zero (the power's value there; elsewhere x is the
/// squared prefix without the window's bits, which the watcher must not
/// count). The calls depend on positions only.
#[cfg(all(target_arch = "x86_64", pf_avx512))]
#[target_feature(enable = "avx512f,avx512ifma")]
#[allow(clippy::too_many_arguments)]
unsafe fn pow_lanes<const V: usize, const L: usize, const SHARED: bool>(
    lanes: &mut [Lane<V>; L],
    rs: [&[u64]; L],
    r2s: [&[u64]; L],
    exps: [&[u64]; L],
    bits: usize,
    k: usize,
    stop: &AtomicBool,
    watch_below: usize,
    watch: &mut impl FnMut(&[Lane<V>; L], usize),
) -> bool {
    use zeroize::Zeroize;
    // The powers as registers (8·V words each, what `amm` reads).
    let mut tables = [[[_mm512_setzero_si512(); V]; 1 << MR_WINDOW]; L];
    let mut one = [0u64; 160];
    // x = AMM(base, R²) = base·R: each base in Montgomery form, then its
    // powers; every value below 2n.
    for ((lane, table), (r, r2)) in lanes
        .iter_mut()
        .zip(tables.iter_mut())
        .zip(rs.iter().zip(r2s))
    {
        digits_into(r2, k, &mut lane.b);
        digits_into(r, k, &mut one);
        // SAFETY: the features were checked by the caller (for every
        // unsafe block here).
        table[0] = unsafe { load::<V>(&one) };
    }
    one.zeroize();
    // SAFETY: as above.
    unsafe { amm::<V, L, SHARED>(lanes, k) };
    for (lane, table) in lanes.iter_mut().zip(tables.iter_mut()) {
        // SAFETY: as above.
        table[1] = unsafe { load::<V>(&lane.x) };
        // SAFETY: as above.
        unsafe { store::<V>(&table[1], &mut lane.b) };
    }
    for e in 2..1 << MR_WINDOW {
        // SAFETY: as above.
        unsafe { amm::<V, L, SHARED>(lanes, k) };
        for (lane, table) in lanes.iter_mut().zip(tables.iter_mut()) {
            // SAFETY: as above.
            table[e] = unsafe { load::<V>(&lane.x) };
        }
    }
    for (lane, table) in lanes.iter_mut().zip(tables.iter()) {
        // SAFETY: as above.
        unsafe { store::<V>(&table[0], &mut lane.x) };
    }
    let mut done = true;
    let windows = bits.div_ceil(MR_WINDOW);
    for w in (0..windows).rev() {
        if w % (64 / MR_WINDOW) == 0 && stop.load(Ordering::Relaxed) {
            crate::work::given_up((windows - 1 - w) as u64, windows as u64);
            done = false;
            break;
        }
        let bit = w * MR_WINDOW;
        for j in 1..=MR_WINDOW {
            // SAFETY: as above.
            unsafe { amm_square::<V, L, SHARED>(lanes, k) };
            // x is now the power at bit − j + MR_WINDOW where the window's
            // bits above that are zero; the last squaring's is watched
            // after the window's product.
            let at = bit + MR_WINDOW - j;
            if j < MR_WINDOW && at < watch_below {
                watch(lanes, at);
            }
        }
        for ((lane, table), e) in lanes.iter_mut().zip(tables.iter()).zip(exps) {
            let idx =
                (e.get(bit / 64).copied().unwrap_or(0) >> (bit % 64)) & ((1 << MR_WINDOW) - 1);
            // SAFETY: as above.
            unsafe { select::<V>(table, idx, &mut lane.b) };
        }
        // SAFETY: as above.
        unsafe { amm::<V, L, SHARED>(lanes, k) };
        if bit < watch_below {
            watch(lanes, bit);
        }
    }
    for r in tables.iter_mut().flatten().flatten() {
        // SAFETY: a valid, aligned place of this type; volatile so the
        // store is kept.
        unsafe { std::ptr::write_volatile(r, _mm512_setzero_si512()) };
    }
    done
}

/// b ← table[idx] over the V registers' digits, reading every entry:
/// each is ANDed with a mask that is all ones for entry idx only and
/// ORed into registers, stored once. No branch, index or address depends
/// on idx.
#[cfg(all(target_arch = "x86_64", pf_avx512))]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn select<const V: usize>(
    table: &[[__m512i; V]; 1 << MR_WINDOW],
    idx: u64,
    b: &mut [u64; 160],
) {
    let mut acc = [_mm512_setzero_si512(); V];
    for (i, entry) in table.iter().enumerate() {
        let x = i as u64 ^ idx;
        // All ones when i = idx.
        let mask = std::hint::black_box(((x | x.wrapping_neg()) >> 63) ^ 1).wrapping_neg();
        let m = _mm512_set1_epi64(mask as i64);
        for (a, e) in acc.iter_mut().zip(entry) {
            *a = _mm512_or_si512(*a, _mm512_and_si512(*e, m));
        }
    }
    // SAFETY: the features are enabled here.
    unsafe { store::<V>(&acc, b) };
}

/// The V registers into the first 8·V words of `out`.
#[cfg(all(target_arch = "x86_64", pf_avx512))]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn store<const V: usize>(regs: &[__m512i; V], out: &mut [u64; 160]) {
    for (j, r) in regs.iter().enumerate() {
        // SAFETY: 8·V ≤ 160 words, written unaligned.
        unsafe { _mm512_storeu_si512(out.as_mut_ptr().add(8 * j).cast(), *r) };
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::prime::fermat::tests::strong_reference;
    use rand_chacha::rand_core::{RngCore, SeedableRng};
    use rand_chacha::ChaCha20Rng;
    use rug::integer::Order;
    use rug::Integer;

    /// A random number below 2^bits (test data, from a fixed seed).
    pub(crate) fn random(bits: u32, rng: &mut ChaCha20Rng) -> Integer {
        let mut limbs = vec![0u64; bits.div_ceil(64) as usize];
        for l in limbs.iter_mut() {
            *l = rng.next_u64();
        }
        Integer::from_digits(&limbs, Order::Lsf).keep_bits(bits)
    }

    /// The first Carmichael number (6t+1)(12t+1)(18t+1) with t above a
    /// random number of `bits` bits (all three factors prime).
    fn carmichael(bits: u32, rng: &mut ChaCha20Rng) -> Integer {
        let mut t = random(bits, rng);
        loop {
            t += 1u32;
            let f = |m: u32| Integer::from(&t * m) + 1u32;
            let (a, b, c) = (f(6), f(12), f(18));
            if [&a, &b, &c]
                .iter()
                .all(|x| x.is_probably_prime(20) != rug::integer::IsPrime::No)
            {
                return a * b * c;
            }
        }
    }

    /// 2^(52k) mod n in n's length (the tests' `r_mod_n`).
    fn r_mod(n: &Integer) -> Vec<u64> {
        let k = digits(n.as_limbs()) as u32;
        let r = Integer::from(Integer::ONE << (52 * k)) % n;
        let mut r = r.as_limbs().to_vec();
        r.resize(n.as_limbs().len(), 0);
        r
    }

    fn run(n: &Integer, stop: &AtomicBool) -> Option<bool> {
        strong_base2(n.as_limbs(), &r_mod(n), stop)
    }

    fn check(n: &Integer, what: &str) {
        let never = AtomicBool::new(false);
        assert_eq!(run(n, &never), Some(strong_reference(n)), "{what}: {n:x}");
    }

    #[test]
    fn digits_leave_room_for_eight_n() {
        for bits in 1..=8192usize {
            let n = Integer::from(Integer::ONE << (bits as u32 - 1)) | 1u32;
            let k = digits(n.as_limbs());
            assert!(52 * k >= bits + 3 && 52 * (k - 1) < bits + 3, "{bits}");
        }
        #[cfg(all(target_arch = "x86_64", pf_avx512))]
        {
            let limbs = [0x1234_5678_9abc_def1u64, 0xfedc_ba98_7654_3210, 7];
            let mut d = [0u64; 160];
            digits_into(&limbs, 4, &mut d);
            let mut back = [0u64; 4];
            limbs_into(&d[..4], &mut back);
            assert_eq!(back[..3], limbs);
        }
    }

    /// Agrees with mpz_powm at the sizes it takes (9 to 64 limbs, then
    /// every third to 128: every register count and many fills of the
    /// last register): random
    /// odd numbers (nearly all composite), primes, numbers right at the
    /// R ≥ 8n edge of each digit count and with all bits set, primes with
    /// n − 1 divisible by a large power of two (the final squarings), and
    /// Carmichael numbers (Fermat liars to base 2 that the strong test
    /// must still judge right).
    #[test]
    fn agrees_with_the_reference() {
        if !available() {
            crate::capability::skip(
                "ifma",
                "no AVX-512 IFMA on this CPU: the IFMA test is not exercised",
            );
            return;
        }
        let mut rng = ChaCha20Rng::seed_from_u64(0x1f3a_5c7e);
        for len in (9..=64u32).chain((65..=128).step_by(3)) {
            let bits = 64 * len;
            for _ in 0..3 {
                let n = random(bits, &mut rng) | 1u32 | Integer::from(Integer::ONE << (bits - 1));
                check(&n, "random");
            }
            let top = Integer::from(Integer::ONE << bits) - 1u32;
            check(&top, "all ones");
            // The largest bit length with a given digit count: 52k − 3.
            let edge = 52 * ((bits - 40).div_ceil(52)) - 3;
            if edge > 64 * (len - 1) && edge <= bits {
                let n = Integer::from(Integer::ONE << (edge - 1)) + 0x0001_2345_u32;
                check(&n, "edge");
            }
            if len <= 33 || len == 48 || len == 64 {
                let p = random(bits - 1, &mut rng).next_prime();
                assert!(run(&p, &AtomicBool::new(false)).unwrap(), "prime {p:x}");
                check(&p, "prime");
            }
        }
        // Primes c·2^s + 1 with s from 100 to 900.
        for (bits, s) in [(600u32, 100u32), (1100, 400), (2100, 900)] {
            let p = prime_with_twos(bits, s, &mut rng);
            assert!(run(&p, &AtomicBool::new(false)).unwrap(), "{p:x}");
        }
        // Carmichael numbers (6t+1)(12t+1)(18t+1) of 600 to 1050 bits.
        for bits in [200u32, 250, 340] {
            let n = carmichael(bits, &mut rng);
            assert_eq!(
                Integer::from(2u32)
                    .pow_mod(&Integer::from(&n - 1u32), &n)
                    .unwrap(),
                1u32
            );
            check(&n, "Carmichael");
        }
    }

    fn group(ns: &[&Integer], stop: &AtomicBool) -> Option<Vec<bool>> {
        let limbs: Vec<&[u64]> = ns.iter().map(|n| n.as_limbs()).collect();
        let rs: Vec<Vec<u64>> = ns.iter().map(|n| r_mod(n)).collect();
        let rs: Vec<&[u64]> = rs.iter().map(|r| &r[..]).collect();
        strong_base2_lanes(&limbs, &rs, stop)
    }

    fn pair(a: &Integer, b: &Integer, stop: &AtomicBool) -> Option<[bool; 2]> {
        group(&[a, b], stop).map(|v| [v[0], v[1]])
    }

    /// The groups of three and four the group tests add to a list of
    /// pairs: each pair with the next pair's first number, and with the
    /// whole next pair.
    fn wider_groups<T: Clone>(cases: &[(T, T)]) -> Vec<Vec<T>> {
        let mut out = Vec::new();
        for (i, (a, b)) in cases.iter().enumerate() {
            let (c, d) = &cases[(i + 1) % cases.len()];
            out.push(vec![a.clone(), b.clone(), c.clone()]);
            out.push(vec![a.clone(), b.clone(), c.clone(), d.clone()]);
        }
        out
    }

    /// The prime c·2^s + 1 for the first odd c above a random number of
    /// `bits − s` bits.
    fn prime_with_twos(bits: u32, s: u32, rng: &mut ChaCha20Rng) -> Integer {
        let mut c = random(bits - s, rng) | 1u32;
        loop {
            let p = Integer::from(&c << s) + 1u32;
            if p.is_probably_prime(30) != rug::integer::IsPrime::No {
                return p;
            }
            c += 2u32;
        }
    }

    /// Two tests at once give each number the verdict of the strong test
    /// alone, at every register count they take, for pairs that differ
    /// where the joint loop must handle it: lengths (two numbers with the
    /// same digit count but different top bits), the power of two in
    /// n − 1 (the joint loop stops at the larger s; the other lane goes
    /// on alone), prime and composite in either lane, Carmichael numbers.
    /// Sizes they do not take, and different digit counts, give `None`.
    #[test]
    fn groups_agree_with_the_reference() {
        if !available() {
            crate::capability::skip(
                "ifma",
                "no AVX-512 IFMA on this CPU: the IFMA pairs are not exercised",
            );
            return;
        }
        let never = AtomicBool::new(false);
        let mut rng = ChaCha20Rng::seed_from_u64(0x9a12_5eed);
        let mut covered = 0;
        for bits in (540u32..=3400)
            .step_by(104)
            .chain([576, 1024, 1536, 2048, 3072, 3328, 3329])
        {
            let odd = |rng: &mut ChaCha20Rng| {
                random(bits, rng) | 1u32 | Integer::from(Integer::ONE << (bits - 1))
            };
            // The smallest number with bits' digit count.
            let k = (bits as usize + 3).div_ceil(52);
            let low = Integer::from(Integer::ONE << (52 * (k as u32 - 1) - 3)) | 1u32;
            let prime =
                random(bits - 1, &mut rng).next_prime() | Integer::from(Integer::ONE << (bits - 1));
            let prime = if prime.is_probably_prime(30) == rug::integer::IsPrime::No {
                random(bits - 1, &mut rng).next_prime()
            } else {
                prime
            };
            let twos = prime_with_twos(bits, bits / 3, &mut rng);
            let cases = [
                (odd(&mut rng), odd(&mut rng)),
                (prime.clone(), odd(&mut rng)),
                (odd(&mut rng), prime.clone()),
                (twos.clone(), prime.clone()),
                (prime.clone(), twos.clone()),
                (low.clone(), twos),
            ];
            let pairs_of = cases.iter().map(|(a, b)| vec![a.clone(), b.clone()]);
            for ns in pairs_of.chain(wider_groups(&cases)) {
                let same_k = ns
                    .iter()
                    .all(|n| digits(n.as_limbs()) == digits(ns[0].as_limbs()));
                let refs: Vec<&Integer> = ns.iter().collect();
                let got = group(&refs, &never);
                if pairs(bits) && same_k && ns.iter().all(|n| pairs(n.significant_bits())) {
                    let want: Vec<bool> = ns.iter().map(strong_reference).collect();
                    assert_eq!(got, Some(want), "{bits} bits: {ns:x?}");
                    covered += 1;
                } else {
                    assert_eq!(got, None, "{bits} bits");
                }
            }
        }
        assert!(covered > 450, "{covered}");
        let mut rng = ChaCha20Rng::seed_from_u64(0xca41);
        for bits in [200u32, 250, 340] {
            let n = carmichael(bits, &mut rng);
            let m = Integer::from(&n - 2u32);
            assert_eq!(
                pair(&n, &m, &never),
                Some([strong_reference(&n), strong_reference(&m)])
            );
            assert_eq!(
                pair(&m, &n, &never),
                Some([strong_reference(&m), strong_reference(&n)])
            );
        }
        // Different digit counts, and a size above the pairs' limit.
        let a = Integer::from(Integer::ONE << 1023u32).next_prime();
        let b = Integer::from(Integer::ONE << 1100u32).next_prime();
        assert_eq!(pair(&a, &b, &never), None);
        let c = Integer::from(Integer::ONE << 4095u32).next_prime();
        assert_eq!(pair(&c, &c, &never), None);
        assert!(!pairs(4096) && pairs(1024) && !pairs(511));
        // One number, or five, are not a group.
        assert_eq!(group(&[&a], &never), None);
        assert_eq!(group(&[&a; 5], &never), None);
        // A set flag stops it.
        assert_eq!(pair(&a, &a, &AtomicBool::new(true)), None);
        assert_eq!(group(&[&a; 4], &AtomicBool::new(true)), None);
    }

    fn secret(n: &Integer, stop: &AtomicBool) -> Option<u64> {
        fermat_base2_secret(n.as_limbs(), &r_mod(n), stop)
    }

    /// The secret Fermat test agrees with 2^(n−1) mod n == 1 by mpz_powm
    /// on random odd numbers, primes and Carmichael numbers (which pass
    /// it), at the sizes it takes.
    #[test]
    fn secret_fermat_agrees_with_powm() {
        if !available() {
            crate::capability::skip(
                "ifma",
                "no AVX-512 IFMA on this CPU: the IFMA test is not exercised",
            );
            return;
        }
        let never = AtomicBool::new(false);
        let fermat = |n: &Integer| {
            let e = Integer::from(n - 1u32);
            u64::from(Integer::from(2u32).pow_mod(&e, n).unwrap() == 1u32)
        };
        let mut rng = ChaCha20Rng::seed_from_u64(0x005e_c7e7);
        for len in (9..=64u32).chain((65..=128).step_by(3)) {
            let bits = 64 * len;
            for _ in 0..2 {
                let n = random(bits, &mut rng) | 1u32 | Integer::from(Integer::ONE << (bits - 1));
                assert_eq!(secret(&n, &never), Some(fermat(&n)), "{n:x}");
            }
            let top = Integer::from(Integer::ONE << bits) - 1u32;
            assert_eq!(
                secret(&top, &never),
                Some(fermat(&top)),
                "all ones, {len} limbs"
            );
            if len <= 33 || len == 48 || len == 64 {
                let p = random(bits - 1, &mut rng).next_prime();
                assert_eq!(secret(&p, &never), Some(1), "prime {p:x}");
            }
        }
        for bits in [200u32, 250, 340] {
            let n = carmichael(bits, &mut rng);
            assert_eq!(secret(&n, &never), Some(1), "Carmichael {n:x}");
        }
        assert_eq!(
            secret(
                &Integer::from(Integer::ONE << 2047u32).next_prime(),
                &AtomicBool::new(true)
            ),
            None
        );
    }

    /// R and R² mod n in n's length (the tests' inputs of the MR round).
    pub(crate) fn r_and_r2(n: &Integer) -> (Vec<u64>, Vec<u64>) {
        let k = digits(n.as_limbs()) as u32;
        let r2 = Integer::from(Integer::ONE << (104 * k)) % n;
        let mut r2 = r2.as_limbs().to_vec();
        r2.resize(n.as_limbs().len(), 0);
        (r_mod(n), r2)
    }

    fn mr(n: &Integer, base: &Integer, stop: &AtomicBool) -> Option<u64> {
        let (r, r2) = r_and_r2(n);
        mr_round_secret(n.as_limbs(), base.as_limbs(), &r, &r2, stop)
    }

    /// The secret Miller–Rabin round agrees with the textbook round
    /// (mpz_powm) at every size it takes: primes (with v2(p − 1) from 1 to
    /// 63, so that −1 turns up at every step of the squarings), random odd
    /// composites, numbers at the R ≥ 8n edge and with all bits set, and
    /// Carmichael numbers, each with random bases and the extreme bases 2
    /// and n − 2.
    #[test]
    fn secret_mr_round_agrees_with_the_textbook_round() {
        if !available() {
            crate::capability::skip(
                "ifma",
                "no AVX-512 IFMA on this CPU: the IFMA Miller–Rabin round is not exercised",
            );
            return;
        }
        use crate::gmp::sec::tests::{prime_with_s, reference};
        let never = AtomicBool::new(false);
        let mut rng = ChaCha20Rng::seed_from_u64(0x4d52);
        let mut walk = Integer::from(0x2545_f491u32);
        let (mut passed, mut failed, mut grouped) = (0, 0, 0);
        let limbs: Vec<u32> = (9..=40)
            .chain((41..=128).step_by(11))
            .chain([128])
            .collect();
        for l in limbs {
            let bits = 64 * l - rng.next_u32() % 60;
            let top = Integer::from(Integer::ONE << (bits - 1));
            let mut ns = vec![
                random(bits - 1, &mut rng) | &top | 1u32,
                Integer::from(Integer::ONE << bits) - 1u32,
                // The largest n with R ≥ 8n for its digit count.
                Integer::from(Integer::ONE << (52 * digits(top.as_limbs()) as u32 - 3)) - 1u32,
            ];
            // Primes (slow to find) at the small sizes and a few larger.
            let ss: &[u32] = match l {
                // Every residue of s mod 4 (the exponent's shift) and
                // the ends.
                9..=12 => &[1, 2, 3, 4, 5, 6, 7, 8, 31, 60, 61, 62, 63],
                13..=16 => &[1, 2, 7, 31, 63],
                20 | 24 | 32 => &[1, 63],
                _ => &[],
            };
            for &s in ss {
                ns.push(prime_with_s(&mut walk, bits, s));
            }
            if l <= 12 {
                ns.push(carmichael(bits / 3 - 4, &mut rng));
            }
            for n in ns {
                if !LIMBS.contains(&n.as_limbs().len()) || n.is_even() {
                    continue;
                }
                let width = Integer::from(&n - 3u32);
                let mut bases = vec![Integer::from(2u32), Integer::from(&n - 2u32)];
                for _ in 0..3 {
                    bases.push((random(bits, &mut rng) % &width) + 2u32);
                }
                let (r, r2) = r_and_r2(&n);
                let wants: Vec<bool> = bases.iter().map(|b| reference(&n, b)).collect();
                for (b, &want) in bases.iter().zip(&wants) {
                    let got = mr(&n, b, &never);
                    assert_eq!(got, Some(want as u64), "n = {n:x}, base = {b:x}");
                    if want {
                        passed += 1;
                    } else {
                        failed += 1;
                    }
                }
                // Two to five at once, where they are taken: each lane's
                // verdict, the bases in another order than above.
                let order = [2usize, 0, 3, 1, 4];
                let limbs = |i: usize| bases[order[i]].as_limbs();
                let (nl, r, r2) = (n.as_limbs(), &r[..], &r2[..]);
                let got = [
                    mr_rounds_secret::<2>(nl, std::array::from_fn(limbs), r, r2, &never)
                        .map(|v| v.to_vec()),
                    mr_rounds_secret::<3>(nl, std::array::from_fn(limbs), r, r2, &never)
                        .map(|v| v.to_vec()),
                    mr_rounds_secret::<4>(nl, std::array::from_fn(limbs), r, r2, &never)
                        .map(|v| v.to_vec()),
                    mr_rounds_secret::<5>(nl, std::array::from_fn(limbs), r, r2, &never)
                        .map(|v| v.to_vec()),
                ];
                for (at_once, got) in (2..).zip(got) {
                    if pairs(n.significant_bits()) {
                        let want: Vec<u64> =
                            order[..at_once].iter().map(|&i| wants[i] as u64).collect();
                        assert_eq!(got, Some(want), "{at_once} at once, n = {n:x}");
                        grouped += 1;
                    } else {
                        assert_eq!(got, None, "{at_once} at once, n = {n:x}");
                    }
                }
            }
        }
        // Both verdicts were exercised, many times.
        assert!(
            passed > 200 && failed > 400,
            "{passed} passed, {failed} failed"
        );
        assert!(grouped > 600, "{grouped} groups");
    }

    #[test]
    fn the_secret_mr_round_declines_what_it_does_not_cover_and_stops() {
        if !available() {
            crate::capability::skip(
                "ifma",
                "no AVX-512 IFMA on this CPU: the IFMA Miller–Rabin round is not exercised",
            );
            return;
        }
        let never = AtomicBool::new(false);
        let p = Integer::from(Integer::ONE << 1023u32).next_prime();
        assert_eq!(mr(&p, &Integer::from(3u32), &never), Some(1));
        assert_eq!(mr(&p, &Integer::from(3u32), &AtomicBool::new(true)), None);
        // v2(n − 1) = 64: left to the caller.
        let n = Integer::from(Integer::ONE << 1000u32) * 7u32 + 1u32;
        let n = Integer::from(&n << 64u32) + 1u32;
        assert_eq!(mr(&n, &Integer::from(3u32), &never), None);
        // 8 limbs: below the IFMA sizes.
        let small = Integer::from(Integer::ONE << 511u32).next_prime();
        assert_eq!(mr(&small, &Integer::from(3u32), &never), None);
        // Groups of rounds: one base, or more than five, are not a group;
        // a group stops as the single round does.
        let (r, r2) = r_and_r2(&p);
        let three = Integer::from(3u32);
        let b = three.as_limbs();
        let (pl, r, r2) = (p.as_limbs(), &r[..], &r2[..]);
        assert_eq!(mr_rounds_secret::<1>(pl, [b], r, r2, &never), None);
        assert_eq!(mr_rounds_secret::<6>(pl, [b; 6], r, r2, &never), None);
        assert_eq!(
            mr_rounds_secret::<5>(pl, [b; 5], r, r2, &never),
            Some([1; 5])
        );
        let stopped = AtomicBool::new(true);
        assert_eq!(mr_rounds_secret::<5>(pl, [b; 5], r, r2, &stopped), None);
    }

    /// The addresses of every instruction `f` executes, single-stepped
    /// in a forked child under ptrace: their count and a hash of the
    /// sequence. `None` where ptrace is refused.
    ///
    /// Never inlined: the code around the fork and the call of `f` is then
    /// one copy for every call (inlined into an unrolled loop of calls,
    /// each copy would run at its own addresses, and the traces differed
    /// there, outside `f`, in a build of the next change).
    ///
    /// The child runs `f` once untraced first, so that the pages it
    /// writes are its own (copy-on-write faults taken) before the traced
    /// run: a fault in the middle of a `rep` string instruction made it
    /// trap once more in one trace of three.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[inline(never)]
    fn trace(f: &dyn Fn()) -> Option<(u64, u64)> {
        // SAFETY: fork, then the child only runs `f` (no allocation, no
        // locks: the IFMA test works on stack buffers) between a stop and
        // exit_group; the parent steps it with ptrace and reaps it.
        unsafe {
            let pid = libc::fork();
            if pid == 0 {
                if libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0) != 0 {
                    libc::syscall(libc::SYS_exit_group, 3);
                }
                f();
                libc::raise(libc::SIGSTOP);
                f();
                libc::syscall(libc::SYS_exit_group, 0);
            }
            let mut status = 0;
            libc::waitpid(pid, &mut status, 0);
            if !libc::WIFSTOPPED(status) {
                return None;
            }
            let (mut count, mut hash) = (0u64, 0xcbf2_9ce4_8422_2325u64);
            loop {
                if libc::ptrace(libc::PTRACE_SINGLESTEP, pid, 0, 0) != 0 {
                    libc::kill(pid, libc::SIGKILL);
                    libc::waitpid(pid, &mut status, 0);
                    return None;
                }
                libc::waitpid(pid, &mut status, 0);
                if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
                    break;
                }
                // user_regs_struct: rip is the 17th word.
                let rip = libc::ptrace(libc::PTRACE_PEEKUSER, pid, 16 * 8, 0) as u64;
                count += 1;
                hash = (hash ^ rip).wrapping_mul(0x0000_0100_0000_01b3);
            }
            (libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0).then_some((count, hash))
        }
    }

    /// The three numbers the path tests compare at the smallest size the
    /// secret test takes (9 limbs: single-stepping costs microseconds per
    /// instruction): a prime, a sparse and a dense composite.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    fn path_inputs() -> [Integer; 3] {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let bits = 521u32;
        let top = Integer::from(Integer::ONE << (bits - 1));
        let ns = [
            (random(bits - 1, &mut rng) | &top).next_prime(),
            Integer::from(&top + 1u32),
            Integer::from(Integer::ONE << bits) - 1u32,
        ];
        // The first is prime and all three have the same length (setting
        // the top bit of a prime after the fact made a composite once).
        assert_ne!(ns[0].is_probably_prime(40), rug::integer::IsPrime::No);
        assert!(ns.iter().all(|n| n.significant_bits() == bits));
        ns
    }

    /// The traces of `runs`, or `None` (said loudly) where the CPU or
    /// ptrace does not allow them.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    fn traces(runs: &[&dyn Fn()]) -> Option<Vec<(u64, u64)>> {
        if !available() {
            crate::capability::skip(
                "ifma",
                "no AVX-512 IFMA on this CPU: the IFMA test is not exercised",
            );
            return None;
        }
        let refused = || {
            crate::capability::skip(
                "ptrace",
                "ptrace refused: the instruction path is not checked",
            );
        };
        let mut out = Vec::new();
        for run in runs {
            let Some(t) = trace(run) else {
                refused();
                return None;
            };
            out.push(t);
        }
        if out.iter().any(|t| *t != out[0]) {
            // An interrupt can still make a `rep` string instruction trap
            // once more; such a difference does not repeat, while a path
            // that depends on the input does. So where the traces differ,
            // each run's trace is the one it gives twice in three tries.
            for (run, t) in runs.iter().zip(out.iter_mut()) {
                let (Some(a), Some(b)) = (trace(run), trace(run)) else {
                    refused();
                    return None;
                };
                *t = if a == b || a == *t { a } else { b };
            }
        }
        Some(out)
    }

    /// The secret test takes the same path through the same instructions
    /// whatever the secret is: every instruction's address, single-stepped,
    /// is the same sequence for a prime, a sparse and a dense composite of
    /// one size, very different bit patterns (a branch on a
    /// bit of n or on a value would change it; making the doubling's
    /// select a branch does, tried). valgrind cannot run AVX-512 code, so
    /// `arith::ct_check` does not cover this path; no index into memory
    /// here depends on a value either (all are loop positions). The pairs
    /// are a test of their own, so that the two (each minutes of
    /// single-stepping) run side by side.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[test]
    fn secret_fermat_takes_one_path_for_every_n() {
        let never = AtomicBool::new(false);
        let ns = path_inputs();
        let rs: Vec<Vec<u64>> = ns.iter().map(r_mod).collect();
        let Some(traces) = traces_of(3, &|i| {
            std::hint::black_box(fermat_base2_secret(ns[i].as_limbs(), &rs[i], &never));
        }) else {
            return;
        };
        // What was traced is the real test: the prime passes.
        assert_eq!(
            fermat_base2_secret(ns[0].as_limbs(), &rs[0], &never),
            Some(1)
        );
        assert_one_path(&traces, 100_000, "521 bits");
    }

    /// The step that accumulates in place (from [`IN_PLACE_FROM`] registers
    /// times numbers on: four numbers of 3 and of 5 registers and three of
    /// 4, as the searches' first tests run them at 1024, 2048 and 1536
    /// bits, and the pairs of Miller–Rabin rounds at 2048) takes one path for every
    /// input too: four steps (each a masked choice of x or 2x, then the
    /// multiplication) on three groups of different secret numbers,
    /// values and exponent bits. The test's exponent loop is these steps,
    /// one per bit; the whole-test path tests above run at 521 bits,
    /// where the short-chain step is taken, and would take many minutes
    /// of single-stepping at these sizes.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[test]
    fn steps_in_place_take_one_path_for_every_input() {
        if !available() {
            crate::capability::skip(
                "ifma",
                "no AVX-512 IFMA on this CPU: the in-place steps are not traced",
            );
        } else {
            #[cfg(pf_avx512)]
            {
                steps_take_one_path::<3, 4>(1000);
                steps_take_one_path::<4, 3>(1500);
                steps_take_one_path::<5, 4>(2040);
                steps_take_one_path::<5, 2>(2040);
            }
        }
    }

    #[cfg(all(target_os = "linux", target_arch = "x86_64", pf_avx512))]
    fn steps_take_one_path<const V: usize, const L: usize>(bits: u32) {
        assert!(V * L >= IN_PLACE_FROM);
        let mut rng = ChaCha20Rng::seed_from_u64(0xf05e + bits as u64);
        let top = Integer::from(Integer::ONE << (bits - 1));
        let len = bits.div_ceil(64) as usize;
        // Per traced group, per lane: n (a random odd number, the smallest
        // or the largest of the size) and x below it.
        let groups: Vec<Vec<(Vec<u64>, Vec<u64>)>> = (0..3)
            .map(|t| {
                (0..L)
                    .map(|l| {
                        let n = match (t + l) % 3 {
                            0 => random(bits, &mut rng) | 1u32 | &top,
                            1 => Integer::from(&top + 1u32),
                            _ => Integer::from(Integer::ONE << bits) - 1u32,
                        };
                        let x = random(bits - 2, &mut rng);
                        (padded(&n, len), padded(&x, len))
                    })
                    .collect()
            })
            .collect();
        let k = digits(&groups[0][0].0);
        assert_eq!(k.div_ceil(8), V, "{bits} bits");
        let bits_of = [[0u64, 1, 0, 1], [1, 1, 0, 0], [0, 0, 1, 1]];
        let Some(traces) = traces_of(3, &|t| {
            // SAFETY: AVX-512 F and IFMA were checked above.
            unsafe {
                let mut lanes: [Lane<V>; L] =
                    std::array::from_fn(|l| Lane::new(&groups[t][l].0, &groups[t][l].1, k));
                for (step, &bit) in bits_of[t].iter().enumerate() {
                    for (l, lane) in lanes.iter_mut().enumerate() {
                        let mask = std::hint::black_box(
                            (bit ^ (l as u64 & step as u64 & 1)).wrapping_neg(),
                        );
                        twice_if::<V>(&lane.x, &mut lane.b, mask);
                    }
                    amm::<V, L, false>(&mut lanes, k);
                }
                std::hint::black_box(&lanes[0].x);
            }
        }) else {
            return;
        };
        assert_one_path(
            &traces,
            (4 * k * L * 10) as u64,
            &format!("{bits} bits, {L} at once"),
        );
    }

    /// A round's inputs for the path tests: n, `count` random bases (in
    /// n's length), R and R² mod n.
    struct RoundInput {
        n: Integer,
        bases: Vec<Vec<u64>>,
        r: Vec<u64>,
        r2: Vec<u64>,
    }

    fn round_input(n: Integer, count: usize, rng: &mut ChaCha20Rng) -> RoundInput {
        let bits = n.significant_bits();
        let bases = (0..count)
            .map(|_| {
                let b = (random(bits, rng) % Integer::from(&n - 3u32)) + 2u32;
                padded(&b, n.as_limbs().len())
            })
            .collect();
        let (r, r2) = r_and_r2(&n);
        RoundInput { n, bases, r, r2 }
    }

    /// Every trace is the first, which is long enough (more than
    /// `min_steps` instructions) to be the real work.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    pub(crate) fn assert_one_path(traces: &[(u64, u64)], min_steps: u64, what: &str) {
        assert!(traces[0].0 > min_steps, "{what}: {traces:?}");
        assert!(traces.iter().all(|t| *t == traces[0]), "{what}: {traces:?}");
    }

    /// The traces of `f(0)` … `f(count − 1)`, each run in a child (see
    /// [`traces`]).
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    pub(crate) fn traces_of(count: usize, f: &dyn Fn(usize)) -> Option<Vec<(u64, u64)>> {
        let runs: Vec<Box<dyn Fn() + '_>> = (0..count)
            .map(|i| Box::new(move || f(i)) as Box<dyn Fn() + '_>)
            .collect();
        let runs: Vec<&dyn Fn()> = runs.iter().map(|b| b.as_ref()).collect();
        traces(&runs)
    }

    /// Limbs of x padded with zeros to `len`.
    fn padded(x: &Integer, len: usize) -> Vec<u64> {
        let mut l = x.as_limbs().to_vec();
        l.resize(len, 0);
        l
    }

    /// [`pow_secret_pair`]'s inputs as limbs: the moduli, R and R² mod
    /// each, bases and exponents padded to the moduli's length.
    struct PowInput {
        ns: [Vec<u64>; 2],
        rs: [Vec<u64>; 2],
        r2s: [Vec<u64>; 2],
        bases: [Vec<u64>; 2],
        exps: [Vec<u64>; 2],
    }

    impl PowInput {
        fn new(ns: [&Integer; 2], bases: [&Integer; 2], exps: [&Integer; 2]) -> PowInput {
            let len = ns[0].as_limbs().len();
            let rr = ns.map(r_and_r2);
            PowInput {
                ns: ns.map(|n| n.as_limbs().to_vec()),
                rs: [rr[0].0.clone(), rr[1].0.clone()],
                r2s: [rr[0].1.clone(), rr[1].1.clone()],
                bases: bases.map(|x| padded(x, len)),
                exps: exps.map(|x| padded(x, len)),
            }
        }

        /// The pair over `bits` exponent bits into `outs`.
        fn run(&self, bits: u32, outs: &mut [Vec<u64>; 2]) -> Option<()> {
            let [o0, o1] = outs;
            fn two(v: &[Vec<u64>; 2]) -> [&[u64]; 2] {
                [&v[0], &v[1]]
            }
            pow_secret_pair(
                two(&self.ns),
                two(&self.bases),
                two(&self.exps),
                bits,
                two(&self.rs),
                two(&self.r2s),
                [o0, o1],
                &AtomicBool::new(false),
            )
        }
    }

    /// [`pow_secret_pair`] on two moduli with its bases and exponents.
    fn pow_pair_of(
        ns: [&Integer; 2],
        bases: [&Integer; 2],
        exps: [&Integer; 2],
        bits: u32,
    ) -> Option<[Integer; 2]> {
        let len = ns[0].as_limbs().len();
        let mut outs = [vec![0u64; len], vec![0u64; len]];
        PowInput::new(ns, bases, exps).run(bits, &mut outs)?;
        Some(outs.map(|o| Integer::from_digits(&o, rug::integer::Order::Lsf)))
    }

    /// The pair of exponentiations (the RSA pairwise test's CRT parts)
    /// agrees with GMP's `mpz_powm` on random odd moduli and primes of the
    /// sizes it takes, with random and edge bases (0, 1, n − 1) and
    /// exponents (0, 1, all ones), and declines what it does not take.
    #[test]
    fn secret_pow_pairs_agree_with_powm() {
        if !available() {
            crate::capability::skip(
                "ifma",
                "no AVX-512 IFMA on this CPU: the IFMA exponentiation pair is not exercised",
            );
            return;
        }
        let mut rng = ChaCha20Rng::seed_from_u64(0x5057);
        let mut checked = 0;
        for limbs in (9u32..=24).chain([32, 40, 48, 52]) {
            let bits = 64 * limbs - rng.next_u32() % 40;
            let top = Integer::from(Integer::ONE << (bits - 1));
            let ns = [
                random(bits - 1, &mut rng) | &top | 1u32,
                (random(bits - 1, &mut rng) | &top).next_prime(),
            ];
            if ns[1].significant_bits() != bits {
                continue;
            }
            let cases: Vec<([Integer; 2], [Integer; 2])> = vec![
                (
                    [
                        random(bits, &mut rng) % &ns[0],
                        random(bits, &mut rng) % &ns[1],
                    ],
                    [random(bits, &mut rng), random(bits - 7, &mut rng)],
                ),
                (
                    [Integer::new(), Integer::from(1u32)],
                    [
                        Integer::from(Integer::ONE << bits) - 1u32,
                        Integer::from(5u32),
                    ],
                ),
                (
                    [Integer::from(&ns[0] - 1u32), Integer::from(&ns[1] - 1u32)],
                    [Integer::from(1u32), Integer::new()],
                ),
            ];
            for (bases, exps) in cases {
                let got = pow_pair_of(
                    [&ns[0], &ns[1]],
                    [&bases[0], &bases[1]],
                    [&exps[0], &exps[1]],
                    bits,
                );
                let want: [Integer; 2] = std::array::from_fn(|l| {
                    Integer::from(bases[l].pow_mod_ref(&exps[l], &ns[l]).unwrap())
                });
                if pairs(bits) {
                    assert_eq!(got.as_ref(), Some(&want), "{bits} bits");
                    checked += 1;
                } else {
                    assert_eq!(got, None, "{bits} bits");
                }
            }
            // Different digit counts, an exponent longer than `bits`:
            // declined.
            let short = random(bits - 60, &mut rng) | 1u32;
            let one = Integer::from(1u32);
            if digits(short.as_limbs()) != digits(ns[0].as_limbs())
                && short.as_limbs().len() == ns[0].as_limbs().len()
            {
                assert_eq!(
                    pow_pair_of([&ns[0], &short], [&one, &one], [&one, &one], bits),
                    None
                );
            }
        }
        assert!(checked >= 30, "{checked} pairs checked");
    }

    /// The pair of exponentiations takes one path for every pair of
    /// moduli, bases and exponents of one size (over 128 exponent bits:
    /// the path of a window does not depend on how many there are, and
    /// single-stepping the whole loop would take minutes).
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[test]
    fn secret_pow_pairs_take_one_path_for_every_input() {
        let bits = 521u32;
        let mut rng = ChaCha20Rng::seed_from_u64(0x5058);
        let top = Integer::from(Integer::ONE << (bits - 1));
        let inputs: Vec<[Integer; 6]> = (0..2)
            .map(|i| {
                let n0 = random(bits - 1, &mut rng) | &top | 1u32;
                let n1 = if i == 0 {
                    Integer::from(Integer::ONE << bits) - 1u32
                } else {
                    (random(bits - 1, &mut rng) | &top).next_prime()
                };
                let (b0, b1) = (random(bits, &mut rng) % &n0, Integer::from(&n1 - 1u32));
                let (e0, e1) = if i == 0 {
                    (Integer::from(1u32), random(128, &mut rng))
                } else {
                    (
                        random(128, &mut rng),
                        Integer::from(Integer::ONE << 128u32) - 1u32,
                    )
                };
                [n0, n1, b0, b1, e0, e1]
            })
            .collect();
        let prepared: Vec<PowInput> = inputs
            .iter()
            .map(|[n0, n1, b0, b1, e0, e1]| PowInput::new([n0, n1], [b0, b1], [e0, e1]))
            .collect();
        let len = inputs[0][0].as_limbs().len();
        let outs = std::sync::Mutex::new([vec![0u64; len], vec![0u64; len]]);
        let Some(traces) = traces_of(2, &|i| {
            let mut outs = outs.lock().unwrap();
            std::hint::black_box(prepared[i].run(128, &mut outs));
        }) else {
            return;
        };
        for [n0, n1, b0, b1, e0, e1] in &inputs {
            let want = [
                Integer::from(b0.pow_mod_ref(e0, n0).unwrap()),
                Integer::from(b1.pow_mod_ref(e1, n1).unwrap()),
            ];
            assert_eq!(pow_pair_of([n0, n1], [b0, b1], [e0, e1], 128), Some(want));
        }
        assert_one_path(&traces, 50_000, "521-bit moduli, exponentiation pairs");
    }

    /// 2^(e_l) mod n_l for the pair of `pow2_secret_pair`.
    fn pow2_pair_of(ns: [&Integer; 2], exps: [&Integer; 2], bits: u32) -> Option<[Integer; 2]> {
        let len = ns[0].as_limbs().len();
        let rs = ns.map(|n| r_and_r2(n).0);
        let es = exps.map(|e| padded(e, len));
        let mut outs = [vec![0u64; len], vec![0u64; len]];
        let [o0, o1] = &mut outs;
        pow2_secret_pair(
            [ns[0].as_limbs(), ns[1].as_limbs()],
            [&es[0], &es[1]],
            bits,
            [&rs[0], &rs[1]],
            [o0, o1],
            &AtomicBool::new(false),
        )?;
        Some(outs.map(|o| Integer::from_digits(&o, rug::integer::Order::Lsf)))
    }

    /// The base-2 pair (the pairwise test's CRT parts of signing 2) agrees
    /// with GMP's `mpz_powm` on random odd moduli and primes at every size
    /// the pair takes, with random exponents and the edges 0, 1 and all
    /// ones over the loop's bits; it declines moduli of different sizes.
    #[test]
    fn secret_pow2_pairs_agree_with_powm() {
        if !available() {
            crate::capability::skip(
                "ifma",
                "no AVX-512 IFMA on this CPU: the IFMA base-2 pair is not exercised",
            );
            return;
        }
        let mut rng = ChaCha20Rng::seed_from_u64(0x5032);
        let two = Integer::from(2u32);
        let mut checked = 0;
        for bits in [521u32, 576, 1000, 1024, 1536, 2048, 3000] {
            if !pairs(bits) {
                continue;
            }
            let top = Integer::from(Integer::ONE << (bits - 1));
            let n0 = random(bits - 1, &mut rng) | &top | 1u32;
            let n1 = (random(bits - 1, &mut rng) | &top).next_prime();
            let all = Integer::from(Integer::ONE << bits) - 1u32;
            for (e0, e1) in [
                (random(bits, &mut rng), random(bits - 3, &mut rng)),
                (Integer::ZERO, Integer::from(1u32)),
                (all.clone(), Integer::from(&n1 - 2u32)),
            ] {
                let want = [
                    two.clone().pow_mod(&e0, &n0).unwrap(),
                    two.clone().pow_mod(&e1, &n1).unwrap(),
                ];
                assert_eq!(
                    pow2_pair_of([&n0, &n1], [&e0, &e1], bits),
                    Some(want),
                    "{bits} bits"
                );
                checked += 1;
            }
            let short = (random(bits - 80, &mut rng) | 1u32).next_prime();
            assert_eq!(pow2_pair_of([&n0, &short], [&two, &two], bits - 80), None);
        }
        assert!(checked >= 15, "{checked}");
    }

    /// The base-2 pair takes one path for every input: two sets of moduli
    /// and exponents of one size (over 128 exponent bits) run the same
    /// sequence of instruction addresses (a branch on an exponent bit
    /// would change it).
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[test]
    fn secret_pow2_pairs_take_one_path_for_every_input() {
        let bits = 521u32;
        let mut rng = ChaCha20Rng::seed_from_u64(0x5033);
        let top = Integer::from(Integer::ONE << (bits - 1));
        let inputs: Vec<[Integer; 4]> = (0..2)
            .map(|i| {
                let n0 = random(bits - 1, &mut rng) | &top | 1u32;
                let n1 = (random(bits - 1, &mut rng) | &top).next_prime();
                let (e0, e1) = if i == 0 {
                    (Integer::from(1u32), random(128, &mut rng))
                } else {
                    (
                        random(128, &mut rng),
                        Integer::from(Integer::ONE << 128u32) - 1u32,
                    )
                };
                [n0, n1, e0, e1]
            })
            .collect();
        let len = inputs[0][0].as_limbs().len();
        // Per input: the moduli, R mod each and the exponents, as limbs.
        type Limbs2 = [Vec<u64>; 2];
        let prepared: Vec<(Limbs2, Limbs2, Limbs2)> = inputs
            .iter()
            .map(|[n0, n1, e0, e1]| {
                (
                    [n0.as_limbs().to_vec(), n1.as_limbs().to_vec()],
                    [r_and_r2(n0).0, r_and_r2(n1).0],
                    [padded(e0, len), padded(e1, len)],
                )
            })
            .collect();
        let outs = std::sync::Mutex::new([vec![0u64; len], vec![0u64; len]]);
        let Some(traces) = traces_of(2, &|i| {
            let mut outs = outs.lock().unwrap();
            let [o0, o1] = &mut *outs;
            let (ns, rs, es) = &prepared[i];
            std::hint::black_box(pow2_secret_pair(
                [&ns[0], &ns[1]],
                [&es[0], &es[1]],
                128,
                [&rs[0], &rs[1]],
                [o0, o1],
                &AtomicBool::new(false),
            ));
        }) else {
            return;
        };
        let two = Integer::from(2u32);
        for [n0, n1, e0, e1] in &inputs {
            let want = [
                two.clone().pow_mod(e0, n0).unwrap(),
                two.clone().pow_mod(e1, n1).unwrap(),
            ];
            assert_eq!(pow2_pair_of([n0, n1], [e0, e1], 128), Some(want));
        }
        assert_one_path(&traces, 50_000, "521-bit moduli, base-2 pairs");
    }

    /// The secret Miller–Rabin round takes one path too: a prime with
    /// v2(p − 1) = 63, a dense composite (s = 1) and a sparse one (s = 40)
    /// of one size, each with its own random base, run the same sequence
    /// of instruction addresses (a branch on a bit of d, on the window's
    /// index, on s or on a comparison would change it).
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[test]
    fn secret_mr_round_takes_one_path_for_every_n() {
        let never = AtomicBool::new(false);
        let bits = 521u32;
        let top = Integer::from(Integer::ONE << (bits - 1));
        let mut walk = Integer::from(0x6a09_e667u32);
        let mut rng = ChaCha20Rng::seed_from_u64(0x7261);
        let inputs: Vec<RoundInput> = [
            crate::gmp::sec::tests::prime_with_s(&mut walk, bits, 63),
            // 2^521 − 1 is a Mersenne prime: this one, just below, is not.
            Integer::from(Integer::ONE << bits) - Integer::from(Integer::ONE << 200u32) - 1u32,
            Integer::from(&top + (1u64 << 40)) + 1u32,
        ]
        .into_iter()
        .map(|n| round_input(n, 1, &mut rng))
        .collect();
        assert!(inputs.iter().all(|x| x.n.significant_bits() == bits));
        assert!(inputs[1..]
            .iter()
            .all(|x| x.n.is_probably_prime(30) == rug::integer::IsPrime::No));
        let round = |i: usize| {
            let x = &inputs[i];
            mr_round_secret(x.n.as_limbs(), &x.bases[0], &x.r, &x.r2, &never)
        };
        let Some(traces) = traces_of(3, &|i| {
            std::hint::black_box(round(i));
        }) else {
            return;
        };
        // What was traced are real rounds: the prime passes, the
        // composites fail.
        assert_eq!([round(0), round(1), round(2)], [Some(1), Some(0), Some(0)]);
        assert_one_path(&traces, 100_000, "521 bits, Miller–Rabin");
    }

    /// Two rounds at once take one path too: a prime with v2(p − 1) = 63
    /// and a composite with s = 1, each with two random bases.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[test]
    fn secret_mr_round_pairs_take_one_path_for_every_n() {
        interleaved_rounds_take_one_path::<2>(0x7262, "pairs");
    }

    /// Three rounds at once, as the pairs with three bases.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[test]
    fn secret_mr_round_triples_take_one_path_for_every_n() {
        interleaved_rounds_take_one_path::<3>(0x7263, "triples");
    }

    /// Four rounds at once (the lanes sharing the modulus), as the pairs.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[test]
    fn secret_mr_round_fours_take_one_path_for_every_n() {
        interleaved_rounds_take_one_path::<4>(0x7264, "fours");
    }

    /// Five rounds at once, as the pairs.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[test]
    fn secret_mr_round_fives_take_one_path_for_every_n() {
        interleaved_rounds_take_one_path::<5>(0x7265, "fives");
    }

    /// L rounds at once ([`mr_rounds_secret`]) on a 521-bit prime with
    /// v2(p − 1) = 63 and a composite with s = 1, with L random bases
    /// each: one path.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    fn interleaved_rounds_take_one_path<const L: usize>(rng_seed: u64, what: &str) {
        let never = AtomicBool::new(false);
        let bits = 521u32;
        let mut walk = Integer::from(0x3c6e_f372u32);
        let mut rng = ChaCha20Rng::seed_from_u64(rng_seed);
        let inputs: Vec<RoundInput> = [
            crate::gmp::sec::tests::prime_with_s(&mut walk, bits, 63),
            Integer::from(Integer::ONE << bits) - Integer::from(Integer::ONE << 300u32) - 1u32,
        ]
        .into_iter()
        .map(|n| round_input(n, L, &mut rng))
        .collect();
        assert_eq!(inputs[1].n.is_probably_prime(30), rug::integer::IsPrime::No);
        let run = |i: usize| {
            let x = &inputs[i];
            let bases: [&[u64]; L] = std::array::from_fn(|l| &x.bases[l][..]);
            mr_rounds_secret::<L>(x.n.as_limbs(), bases, &x.r, &x.r2, &never)
        };
        let Some(traces) = traces_of(2, &|i| {
            std::hint::black_box(run(i));
        }) else {
            return;
        };
        assert_eq!([run(0), run(1)], [Some([1; L]), Some([0; L])]);
        assert_one_path(&traces, 200_000, &format!("521 bits, Miller–Rabin {what}"));
    }

    #[test]
    fn a_set_flag_stops_it() {
        if !available() {
            crate::capability::skip(
                "ifma",
                "no AVX-512 IFMA on this CPU: the IFMA test's stop flag is not exercised",
            );
            return;
        }
        let p = Integer::from(Integer::ONE << 2047u32).next_prime();
        assert_eq!(run(&p, &AtomicBool::new(true)), None);
        assert_eq!(run(&p, &AtomicBool::new(false)), Some(true));
    }
}
