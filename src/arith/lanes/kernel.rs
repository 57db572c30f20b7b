// The lanes' shared arithmetic and the exponentiations of
// `super::exps_secret`, written once for both register widths: this file
// is included by `imp` (512-bit registers, eight lanes) and by `imp4`
// (256-bit registers of AVX-512 VL, four lanes), each of which names its
// register type `V`, its lane count `W` and its intrinsics (`madd52lo`,
// `add64`, `set1`, ...) before the `include!`.

const MASK: u64 = (1 << 52) - 1;

/// Exponent bits per window.
const WINDOW: usize = 4;

/// A number per lane: register j holds digit j (52 bits) of each.
type Lanes<const K: usize> = [V; K];

/// The moduli of the lanes: their digits (register j digit j of each
/// lane's n) and −n⁻¹ mod 2^52 per lane.
struct Modulus<const K: usize> {
    n: Lanes<K>,
    k0: V,
}

/// Positions of [`amm_rows`]'s accumulator: 2k + 1 for k up to 24.
const POSITIONS: usize = 49;

/// Writes zeros over `x` where the compiler cannot drop the stores.
fn wipe<T>(x: &mut T) {
    // SAFETY: `x` is plain data (vectors and integers) whose bytes are
    // overwritten in place; it is read again only as zeros.
    let bytes = unsafe {
        std::slice::from_raw_parts_mut((x as *mut T).cast::<u8>(), std::mem::size_of::<T>())
    };
    bytes.zeroize();
}

/// The W words of `w` as a register, read unaligned.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl")]
fn load(w: &[u64; W]) -> V {
    // SAFETY: reads the W words of `w`, unaligned.
    unsafe { loadu(w.as_ptr().cast()) }
}

/// A register's W words.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl")]
fn store(v: V) -> [u64; W] {
    let mut w = [0u64; W];
    // SAFETY: writes the W words of `w`, unaligned.
    unsafe { storeu(w.as_mut_ptr().cast(), v) };
    w
}

/// Lane l holds the digits of `xs[l]` (`xs[0]` where l ≥ xs.len()).
#[target_feature(enable = "avx512f,avx512ifma,avx512vl")]
fn spread<const K: usize>(xs: &[&[u64]]) -> Lanes<K> {
    let mut v = [zero_v(); K];
    spread_into(xs, &mut v);
    v
}

/// [`spread`] into `out`, as many digits as it is long: digit j of every
/// lane's number into a column of W words, then into register j.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl")]
fn spread_into(xs: &[&[u64]], out: &mut [V]) {
    let mut col = [0u64; W];
    for (j, o) in out.iter_mut().enumerate() {
        for (l, c) in col.iter_mut().enumerate() {
            *c = crate::arith::ifma::digit(xs[if l < xs.len() { l } else { 0 }], j);
        }
        *o = load(&col);
    }
    col.zeroize();
}

/// −n_l⁻¹ mod 2^52 in lane l for each n of `ns` (`ns[0]`'s where l ≥
/// ns.len()): the lanes' Montgomery factors.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl")]
fn lane_k0s(ns: &[&[u64]]) -> V {
    let mut k0s = [0u64; W];
    for (l, k0) in k0s.iter_mut().enumerate() {
        let n = ns[if l < ns.len() { l } else { 0 }];
        *k0 = crate::arith::inverse_mod_2_64(n[0]).wrapping_neg() & MASK;
    }
    let v = load(&k0s);
    k0s.zeroize();
    v
}

/// a·b·R⁻¹ mod n in every lane (each lane its own n, or all one n;
/// R = 2^(52K)), doubled in the lanes where `double` is 1 (0
/// elsewhere), for digits below 2^52 and a·b < 4n·4n with R ≥ 16n, or
/// a, b < 2n with R ≥ 8n: below 2n before the doubling, its digits
/// normalised. Row by row (operand scanning, the reduction
/// interleaved): row i adds b_i·a at positions i.. and then q·n with
/// q = p_i·(−n⁻¹) mod 2^52, which clears position i's low 52 bits, whose
/// carry moves to position i + 1. The rows are written out (the
/// positions are constants), so that the accumulator's live positions
/// stay in registers: one multiply-add per lane-count digit products, no
/// shuffle. Each position stays below 4K·2^52 + 2^12 < 2^59.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl")]
fn amm_rows<const K: usize>(a: &Lanes<K>, b: &Lanes<K>, m: &Modulus<K>, double: V) -> Lanes<K> {
    amm_rows_body!(a, b, m, double, K)
}

/// [`amm_rows`] of a·a by columns ([`ams_rows_body`]; the loops write
/// it in place), for the tests that hold the two to one result.
#[cfg(test)]
#[target_feature(enable = "avx512f,avx512ifma,avx512vl")]
fn ams_rows<const K: usize>(a: &Lanes<K>, m: &Modulus<K>, double: V) -> Lanes<K> {
    ams_rows_body!(a, m, double, K)
}

/// a·a·R⁻¹ (doubled in the lanes where `double` is 1) for the moduli
/// `ns` and the numbers `xs` (limbs), by [`amm_rows`] and by
/// [`ams_rows`]: each result's digits, lane by lane.
#[cfg(test)]
#[target_feature(enable = "avx512f,avx512ifma,avx512vl")]
pub(super) fn square_both<const K: usize>(
    ns: &[&[u64]],
    xs: &[&[u64]],
    double: &[u64; W],
) -> [[[u64; W]; K]; 2] {
    let m = Modulus::<K> {
        n: spread::<K>(ns),
        k0: lane_k0s(ns),
    };
    let a = spread::<K>(xs);
    let d = load(double);
    let rows = amm_rows(&a, &a, &m, d);
    let columns = ams_rows(&a, &m, d);
    [
        std::array::from_fn(|j| store(rows[j])),
        std::array::from_fn(|j| store(columns[j])),
    ]
}

/// x mod n in every lane, for x < 2n: x − n where that does not
/// borrow, else x, chosen by masks.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl")]
fn reduced<const K: usize>(x: &Lanes<K>, m: &Modulus<K>) -> Lanes<K> {
    let zero = zero_v();
    let mask = set1(MASK as i64);
    let mut diff = [zero; K];
    let mut borrow = zero;
    for j in 0..K {
        let v = sub64(sub64(x[j], m.n[j]), borrow);
        borrow = srli64::<63>(v);
        diff[j] = and(v, mask);
    }
    // All ones in the lanes where x < n.
    let keep = sub64(zero, borrow);
    let out = std::array::from_fn(|j| or(and(x[j], keep), andnot(keep, diff[j])));
    wipe(&mut diff);
    out
}

/// 1 in the lanes where x (reduced) equals c, else 0.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl")]
fn equal(x: &[V], c: &[V]) -> V {
    let zero = zero_v();
    let mut acc = zero;
    for (xj, cj) in x.iter().zip(c) {
        acc = or(acc, xor(*xj, *cj));
    }
    // (acc | −acc) has its top bit set unless acc = 0.
    let nonzero = srli64::<63>(or(acc, sub64(zero, acc)));
    xor(nonzero, set1(1))
}

/// 1 in the lanes where a < b, else 0, for lanes below 2^63.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl")]
fn below(a: V, b: V) -> V {
    srli64::<63>(sub64(a, b))
}

/// [`super::exps_secret`] in W lanes for moduli of K digits and at most
/// `bits` bits, the lanes' inputs prepared by [`super::Prepared`].
#[target_feature(enable = "avx512f,avx512ifma,avx512vl")]
pub(super) fn exps<const K: usize>(
    job: &super::Prepared<'_>,
    bits: usize,
    digits_out: &mut [u64],
    stop: &AtomicBool,
) -> Option<[u64; W]> {
    use crate::gmp::sec::MAX_S;
    let len = job.len;
    let zero = zero_v();
    let mut m = Modulus::<K> {
        n: spread::<K>(&job.ns),
        k0: lane_k0s(&job.ns),
    };
    let mut one = spread::<K>(&job.rs);
    let mut minus = spread::<K>(&job.minus_ones()[..job.count]);
    let mut r2 = spread::<K>(&job.r2s);
    let mut b = spread::<K>(&job.bases);
    // The exponents by 64-bit words: register i holds word i of each
    // lane's.
    let mut words = [zero; 21];
    for (i, reg) in words.iter_mut().enumerate().take(len + 1) {
        let mut col: [u64; W] = std::array::from_fn(|l| job.exponent(l)[i]);
        *reg = load(&col);
        col.zeroize();
    }
    // Per lane: where the round's watch starts (s + t) and ends (t), and
    // 1 for a round, 0 for a power (never watched).
    let mut col: [u64; W] = std::array::from_fn(|l| job.watch(l)[0]);
    let mut top = load(&col);
    col = std::array::from_fn(|l| job.watch(l)[1]);
    let mut foot = load(&col);
    col = std::array::from_fn(|l| job.watch(l)[2]);
    let mut round = load(&col);
    col.zeroize();
    // The table of base^0 … base^15 in Montgomery form, all below 2n.
    let mut table = [one; 1 << WINDOW];
    table[1] = amm_rows(&b, &r2, &m, zero);
    for e in 2..1 << WINDOW {
        table[e] = amm_rows(&table[e - 1], &table[1], &m, zero);
    }
    let mut x = one;
    let mut power = one;
    let mut c = one;
    let mut pass = zero;
    let unit = set1(1);
    let watch_below = MAX_S as usize + 4;
    // At position i, x is base^(d·2^j)·R for j = s + t − i in a round's
    // lane: `first` where j = 0 (passes on 1 or −1), `rest` where 0 < j
    // < s (passes on −1); from borrows per lane, no branch.
    let watch = |x: &Lanes<K>, i: usize, c: &mut Lanes<K>, pass: &mut V| {
        let at = set1(i as i64);
        let first = and(xor(unit, or(below(at, top), below(top, at))), round);
        let rest = and(and(below(at, top), below(foot, at)), round);
        *c = reduced(x, &m);
        let is_minus = equal(c, &minus);
        let hit = or(
            and(or(equal(c, &one), is_minus), first),
            and(is_minus, rest),
        );
        *pass = or(*pass, hit);
    };
    let mut stopped = false;
    let windows = (bits + 3).div_ceil(WINDOW);
    let low = set1((1 << WINDOW) - 1);
    for w in (0..windows).rev() {
        if w % (64 / WINDOW) == 0 && stop.load(Ordering::Relaxed) {
            crate::work::given_up((windows - 1 - w) as u64, windows as u64);
            stopped = true;
            break;
        }
        let bit = w * WINDOW;
        for j in 1..=WINDOW {
            x = ams_rows_body!(&x, &m, zero, K);
            // The last squaring's power is watched after the product.
            let at = bit + WINDOW - j;
            if j < WINDOW && at < watch_below {
                watch(&x, at, &mut c, &mut pass);
            }
        }
        // Each lane's window of its exponent, and its table entry by a
        // scan of all sixteen with masks.
        let idx = and(srlv64(words[bit / 64], set1((bit % 64) as i64)), low);
        power = [zero; K];
        for (e, entry) in table.iter().enumerate() {
            let y = xor(idx, set1(e as i64));
            // All ones in the lanes whose index is e.
            let sel = sub64(srli64::<63>(or(y, sub64(zero, y))), unit);
            for (pj, ej) in power.iter_mut().zip(entry) {
                *pj = or(*pj, and(*ej, sel));
            }
        }
        x = amm_rows_body!(&x, &power, &m, zero, K);
        if bit < watch_below {
            watch(&x, bit, &mut c, &mut pass);
        }
    }
    let mut verdict = None;
    if !stopped {
        // The powers out of Montgomery form: x·1·R⁻¹, below 2n, reduced.
        let mut plain = [zero; K];
        plain[0] = unit;
        let mut y = amm_rows(&x, &plain, &m, zero);
        y = reduced(&y, &m);
        for (j, yj) in y.iter().enumerate() {
            let mut col = store(*yj);
            for (l, v) in col.iter().enumerate() {
                digits_out[l * K + j] = *v;
            }
            col.zeroize();
        }
        wipe(&mut y);
        verdict = Some(store(pass));
    }
    wipe(&mut c);
    wipe(&mut pass);
    wipe(&mut x);
    wipe(&mut power);
    wipe(&mut table);
    wipe(&mut b);
    wipe(&mut one);
    wipe(&mut minus);
    wipe(&mut r2);
    wipe(&mut m.n);
    wipe(&mut words);
    wipe(&mut top);
    wipe(&mut foot);
    wipe(&mut round);
    verdict
}
