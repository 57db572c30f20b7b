//! Constant-time GCD and modular inversion for secret RSA values, by
//! Bernstein and Yang's "divsteps" ("Fast constant-time gcd computation
//! and modular inversion", 2019). Instruction sequence and memory accesses
//! depend only on the public bit bound, never on the values: fixed
//! iteration counts, masks instead of branches, whole-array operations.
//!
//! Used for λ = lcm(p − 1, q − 1) and for the CRT coefficients
//! qInv = q⁻¹ mod p (and t_i of extra primes). GMP's `mpz_gcd`/`mpz_invert`
//! branch on the values (Lehmer / half-GCD), which would leak timing on the
//! primes; a Fermat inverse x^(p−2) mod p by a constant-time exponentiation
//! would cost a full exponentiation (0.5 ms at 1024 bits against about
//! 20 µs here).
//!
//! ## The algorithm
//! One divstep maps (δ, f, g), f odd, to
//! - (1 − δ, g, (g − f)/2) if δ > 0 and g is odd,
//! - (1 + δ, f, (g + f)/2) if δ ≤ 0 and g is odd,
//! - (1 + δ, f, g/2) if g is even.
//!
//! Starting from (1, f, g) with f odd and f, g < 2^d, g reaches 0 within
//! ⌊(49d + 57)/17⌋ steps (d ≥ 46; ⌊(49d + 80)/17⌋ below) and then f = ±gcd(f, g)
//! (Bernstein–Yang, Theorem 11.2). Each step's choice depends only on δ
//! and the parities, so 62 steps can run on the low 62 bits of f and g
//! alone, collecting a 2×2 integer matrix T with
//! 2^62·(f', g') = T·(f, g); T is then applied once to the full numbers.
//!
//! Numbers are kept as signed base-2^62 limbs (the low limbs in
//! [0, 2^62), the top limb signed), so dividing by 2^62 is dropping a limb
//! and products of a limb by a matrix entry (|entry| ≤ 2^62) fit in i128.
//!
//! For the inverse x⁻¹ mod m (m odd), start from (f, g) = (m, x) and keep
//! d, e with f ≡ d·x and g ≡ e·x (mod m), starting at (0, 1). Each batch
//! gives d' = (u·d + v·e)·2^−62 mod m: a multiple k·m with k < 2^62 is
//! added to make the low 62 bits zero (k from m⁻¹ mod 2^62, as in a
//! Montgomery reduction), which keeps d' in (−m, 2m), and one conditional
//! subtraction brings it back into (−m, m). At the end f = ±1 and
//! x⁻¹ = ±d mod m.

use rug::integer::Order;
use rug::Integer;

use crate::secure::SecretVec;

use crate::arith::{bits_at, inverse_mod_2_64};

/// Scratch limbs, wiped when dropped: every array here holds secrets or
/// values derived from them.
type Limbs<T> = SecretVec<T>;

const M62: i64 = (1 << 62) - 1;

/// All-ones if `bit` is 1, else zero.
#[inline]
pub(super) fn mask(bit: u64) -> u64 {
    opaque(0u64.wrapping_sub(bit & 1))
}

/// `x`, hidden from the optimiser: a mask it cannot see to be 0 or all
/// ones, so that a masked select is not turned back into a branch (LLVM did
/// that to `sub_if_at_least`, which `arith::ct_check` caught under
/// valgrind). A best effort, as Rust documents `black_box`.
#[inline(always)]
pub(super) fn opaque<T>(x: T) -> T {
    core::hint::black_box(x)
}

/// The divsteps needed for f, g < 2^bits (Bernstein–Yang, Theorem 11.2),
/// rounded up to whole batches of 62.
fn batches(bits: u32) -> usize {
    let d = bits as u64;
    let steps = if d < 46 {
        (49 * d + 80) / 17
    } else {
        (49 * d + 57) / 17
    };
    steps.div_ceil(62) as usize
}

/// Signed base-2^62 limbs for values of up to `bits` bits with headroom
/// for the (−2m, 2m) range of the Bézout coefficients.
fn limbs62(bits: u32) -> usize {
    bits as usize / 62 + 2
}

/// `v` (0 ≤ v < 2^(62·(n−1))) as n signed base-2^62 limbs.
fn to_s62(v: &[u64], n: usize) -> Limbs<i64> {
    let mut out = SecretVec::zeroed(n);
    for (i, o) in out.iter_mut().enumerate() {
        *o = bits_at(v, 62 * i, 62) as i64;
    }
    out
}

/// A non-negative value in normalised signed base-2^62 limbs, as u64 limbs.
fn from_s62(a: &[i64], words: usize) -> Limbs<u64> {
    let mut out = SecretVec::zeroed(words);
    for (i, &l) in a.iter().enumerate() {
        let bit = 62 * i;
        let (w, s) = (bit / 64, bit % 64);
        let l = l as u64;
        if w < words {
            out[w] |= l << s;
        }
        if s > 2 && w + 1 < words {
            out[w + 1] |= l >> (64 - s);
        }
    }
    out
}

fn limbs_of(v: &Integer, words: usize) -> Limbs<u64> {
    let mut out = SecretVec::zeroed(words);
    let src = v.as_limbs();
    out[..src.len()].copy_from_slice(src);
    out
}

/// 62 divsteps on the low bits of f (odd) and g: the new δ and the matrix
/// (u, v, q, r) with 2^62·f' = u·f + v·g and 2^62·g' = q·f + r·g.
fn divsteps_62(mut delta: i64, f0: i64, g0: i64) -> (i64, [i64; 4]) {
    let (mut f, mut g) = (f0 as u64, g0 as u64);
    let (mut u, mut v, mut q, mut r) = (1i64, 0i64, 0i64, 1i64);
    for _ in 0..62 {
        // Swap-and-negate when δ > 0 and g is odd: (δ, f, g) ← (−δ, g, −f)
        // and the rows likewise; then the common step below gives
        // (1 − δ, g, (g − f)/2).
        // opaque: LLVM had turned "δ > 0" into a jump around the mask
        // (`arith::ct_check` saw it under valgrind).
        let s = opaque((delta.wrapping_neg() >> 63) as u64) & mask(g);
        let si = s as i64;
        delta = (delta ^ si).wrapping_sub(si);
        let t = (f ^ g) & s;
        f ^= t;
        g ^= t;
        g = (g ^ s).wrapping_sub(s);
        let t = (u ^ q) & si;
        u ^= t;
        q ^= t;
        q = (q ^ si).wrapping_sub(si);
        let t = (v ^ r) & si;
        v ^= t;
        r ^= t;
        r = (r ^ si).wrapping_sub(si);
        // (1 + δ, f, (g + [g odd]·f)/2); f is kept, so its row doubles.
        let odd = mask(g);
        g = g.wrapping_add(f & odd) >> 1;
        q = q.wrapping_add(u & odd as i64);
        r = r.wrapping_add(v & odd as i64);
        u <<= 1;
        v <<= 1;
        delta = delta.wrapping_add(1);
    }
    (delta, [u, v, q, r])
}

/// (a, b) ← (T·(a, b) + (ka, kb)·m) / 2^62 on whole arrays; the caller
/// makes the low 62 bits zero, so the division drops one limb. Without
/// `m` the multiples are zero (the f, g update).
fn combine(a: &mut [i64], b: &mut [i64], t: [i64; 4], m: Option<(&[i64], i128, i128)>) {
    let [u, v, q, r] = t.map(i128::from);
    let n = a.len();
    let extra = |i: usize| m.map_or((0, 0), |(m, ka, kb)| (ka * m[i] as i128, kb * m[i] as i128));
    let (xa, xb) = extra(0);
    let mut ca = u * a[0] as i128 + v * b[0] as i128 + xa;
    let mut cb = q * a[0] as i128 + r * b[0] as i128 + xb;
    debug_assert!(ca & M62 as i128 == 0 && cb & M62 as i128 == 0);
    ca >>= 62;
    cb >>= 62;
    for i in 1..n {
        let (xa, xb) = extra(i);
        ca += u * a[i] as i128 + v * b[i] as i128 + xa;
        cb += q * a[i] as i128 + r * b[i] as i128 + xb;
        a[i - 1] = ca as i64 & M62;
        b[i - 1] = cb as i64 & M62;
        ca >>= 62;
        cb >>= 62;
    }
    a[n - 1] = ca as i64;
    b[n - 1] = cb as i64;
}

/// (f, g) ← T·(f, g) / 2^62 on the full numbers (the division is exact).
fn apply_fg(f: &mut [i64], g: &mut [i64], t: [i64; 4]) {
    combine(f, g, t, None);
}

/// (d, e) ← T·(d, e)·2^−62 mod m, each result in (−m, m) given inputs in
/// (−m, m); `minv` = m⁻¹ mod 2^62.
fn apply_de(d: &mut [i64], e: &mut [i64], t: [i64; 4], m: &[i64], minv: u64) {
    let [u, v, q, r] = t;
    // k·m, 0 ≤ k < 2^62, clears the low 62 bits of each combination.
    let low_d = u.wrapping_mul(d[0]).wrapping_add(v.wrapping_mul(e[0])) as u64;
    let low_e = q.wrapping_mul(d[0]).wrapping_add(r.wrapping_mul(e[0])) as u64;
    let kd = (low_d.wrapping_mul(minv).wrapping_neg() & M62 as u64) as i128;
    let ke = (low_e.wrapping_mul(minv).wrapping_neg() & M62 as u64) as i128;
    combine(d, e, t, Some((m, kd, ke)));
    // From (−m, 2m) back to (−m, m).
    sub_if_at_least(d, m);
    sub_if_at_least(e, m);
}

/// a_i ← f(i, a_i) for every limb, then the carries renormalise the sum
/// (low limbs in [0, 2^62), the top limb signed).
fn map_limbs(a: &mut [i64], mut f: impl FnMut(usize, i64) -> i64) {
    let n = a.len();
    let mut c = 0i64;
    for (i, l) in a.iter_mut().enumerate() {
        let x = f(i, *l) + c;
        if i + 1 < n {
            *l = x & M62;
            c = x >> 62;
        } else {
            *l = x;
        }
    }
}

/// a ← a − m if a ≥ m (normalised limbs).
fn sub_if_at_least(a: &mut [i64], m: &[i64]) {
    let mut t = SecretVec::from_slice(a);
    map_limbs(&mut t, |i, l| l - m[i]);
    let keep = opaque(!(t[t.len() - 1] >> 63)); // all-ones if a − m ≥ 0
    for (x, y) in a.iter_mut().zip(t.iter()) {
        *x ^= keep & (*x ^ y);
    }
}

/// a ← −a where `neg` is all-ones (normalised limbs): each limb is negated
/// ((l ^ −1) + 1 = −l), and the carries renormalise the sum.
fn negate_if(a: &mut [i64], neg: i64) {
    let neg = opaque(neg);
    map_limbs(a, |_, l| (l ^ neg) - neg);
}

/// a ← a + m where `add` is all-ones (normalised limbs).
fn add_if(a: &mut [i64], m: &[i64], add: i64) {
    let add = opaque(add);
    map_limbs(a, |i, l| l + (m[i] & add));
}

/// The Bézout pair of an inversion: f ≡ d·x and g ≡ e·x (mod m), with
/// `minv` = m⁻¹ mod 2^62.
struct Bezout<'a> {
    d: &'a mut [i64],
    e: &'a mut [i64],
    m: &'a [i64],
    minv: u64,
}

/// Runs the divsteps on (f, g) for inputs below 2^bits; afterwards g = 0.
/// With `de`, also updates the Bézout pair modulo m.
fn run(bits: u32, f: &mut [i64], g: &mut [i64], mut de: Option<Bezout<'_>>) {
    let mut delta = 1i64;
    for _ in 0..batches(bits) {
        let (nd, t) = divsteps_62(delta, f[0], g[0]);
        delta = nd;
        apply_fg(f, g, t);
        if let Some(b) = de.as_mut() {
            apply_de(b.d, b.e, t, b.m, b.minv);
        }
    }
}

/// Whether every limb is zero, computed without branching on the limbs.
fn is_zero(a: &[i64]) -> bool {
    a.iter().fold(0i64, |acc, &l| acc | l) == 0
}

/// The starting state of an inversion of x modulo m: m, f = m and g = x in
/// signed 62-bit limbs, the Bézout pair (d, e) = (0, 1), m⁻¹ mod 2^62.
struct Inversion {
    ms: Limbs<i64>,
    f: Limbs<i64>,
    g: Limbs<i64>,
    d: Limbs<i64>,
    e: Limbs<i64>,
    minv: u64,
}

impl Inversion {
    fn new(x: &Integer, m: &Integer, bits: u32) -> Inversion {
        let words = bits as usize / 64 + 2;
        let n = limbs62(bits);
        let ms = to_s62(&limbs_of(m, words), n);
        let mut e = SecretVec::zeroed(n);
        e[0] = 1;
        Inversion {
            f: ms.clone(),
            g: to_s62(&limbs_of(x, words), n),
            d: SecretVec::zeroed(n),
            e,
            minv: inverse_mod_2_64(m.to_u64_wrapping()) & M62 as u64,
            ms,
        }
    }

    /// The divsteps with the Bézout pair: afterwards g = 0, f = ±gcd and
    /// d·x ≡ f (mod m).
    fn run(&mut self, bits: u32) {
        let pair = Bezout {
            d: &mut self.d,
            e: &mut self.e,
            m: &self.ms,
            minv: self.minv,
        };
        run(bits, &mut self.f, &mut self.g, Some(pair));
    }
}

/// x⁻¹ mod m for odd m > 1 and 0 ≤ x < m, both below 2^bits, in time that
/// depends only on `bits`. `None` when gcd(x, m) ≠ 1 (only the verdict is
/// revealed, after the fixed-length computation).
pub(super) fn inverse_mod_odd(x: &Integer, m: &Integer, bits: u32) -> Option<Integer> {
    debug_assert!(m.is_odd() && *m > 1 && *x < *m && m.significant_bits() <= bits);
    let words = bits as usize / 64 + 2;
    let n = limbs62(bits);
    let mut inv = Inversion::new(x, m, bits);
    inv.run(bits);
    let Inversion {
        ms,
        mut f,
        g,
        mut d,
        ..
    } = inv;
    // f = ±gcd(x, m); the inverse exists iff f = ±1.
    let neg = f[n - 1] >> 63;
    negate_if(&mut f, neg);
    let unit = f
        .iter()
        .enumerate()
        .fold(0i64, |acc, (i, &l)| acc | (l ^ i64::from(i == 0)))
        == 0;
    if !is_zero(&g) {
        // Impossible by the iteration bound; never return a wrong value.
        return None;
    }
    negate_if(&mut d, neg);
    let negative = d[n - 1] >> 63;
    add_if(&mut d, &ms, negative);
    let out = Integer::from_digits(&from_s62(&d, words), Order::Lsf);
    unit.then_some(out)
}

/// Trailing zero bits of a non-zero value, without branching on it.
fn trailing_zeros(a: &[u64]) -> u64 {
    let mut count = 0u64;
    let mut below = u64::MAX; // all-ones while every lower limb was zero
    for &l in a {
        let tz = ((l & l.wrapping_neg()).wrapping_sub(1)).count_ones() as u64;
        count += tz & below;
        let nonzero = mask((l | l.wrapping_neg()) >> 63);
        below &= !nonzero;
    }
    count
}

/// a shifted by `s` bits (right if `right`, else left), 0 ≤ s < 2^steps,
/// as a barrel shifter: one conditional shift by each power of two.
fn shift_by_secret(a: &mut [u64], s: u64, steps: u32, right: bool) {
    let n = a.len();
    let mut t = SecretVec::zeroed(n);
    for j in 0..steps {
        let amount = 1usize << j;
        let (w, b) = (amount / 64, amount % 64);
        for i in 0..n {
            t[i] = if right {
                let lo = a.get(i + w).copied().unwrap_or(0);
                let hi = a.get(i + w + 1).copied().unwrap_or(0);
                if b == 0 {
                    lo
                } else {
                    (lo >> b) | (hi << (64 - b))
                }
            } else {
                let hi = if i >= w { a[i - w] } else { 0 };
                let lo = if i > w { a[i - w - 1] } else { 0 };
                if b == 0 {
                    hi
                } else {
                    (hi << b) | (lo >> (64 - b))
                }
            };
        }
        let m = mask(s >> j);
        for i in 0..n {
            a[i] ^= m & (a[i] ^ t[i]);
        }
    }
}

/// gcd(x, y) for 0 < x, y < 2^bits in time that depends only on `bits`:
/// with x = 2^a·x' (x' odd), gcd(x, y) = 2^min(a, b)·gcd(x', y), and the
/// divsteps on (x', y) give ±gcd(x', y). `None` only if the divstep bound
/// failed to bring g to zero (impossible by Bernstein–Yang's theorem;
/// checked rather than trusted).
pub(super) fn gcd(x: &Integer, y: &Integer, bits: u32) -> Option<Integer> {
    debug_assert!(*x > 0 && *y > 0);
    debug_assert!(x.significant_bits() <= bits && y.significant_bits() <= bits);
    let words = bits as usize / 64 + 2;
    let steps = 64 - (bits as u64).leading_zeros(); // 2^steps > bits
    let mut xs = limbs_of(x, words);
    let ys = limbs_of(y, words);
    let (a, b) = (trailing_zeros(&xs), trailing_zeros(&ys));
    let lt = (a.wrapping_sub(b) >> 63) & 1; // a < b
    let common = b ^ (mask(lt) & (a ^ b));
    shift_by_secret(&mut xs, a, steps, true);
    let n = limbs62(bits);
    let mut f = to_s62(&xs, n);
    let mut g = to_s62(&ys, n);
    run(bits, &mut f, &mut g, None);
    let done = is_zero(&g);
    let neg = f[n - 1] >> 63;
    negate_if(&mut f, neg);
    let mut out = from_s62(&f, words);
    shift_by_secret(&mut out, common, steps, false);
    let v = Integer::from_digits(&out, Order::Lsf);
    done.then_some(v)
}

/// ⌊a / d⌋ for 0 ≤ a < 2^a_bits and d > 0, in time that depends only on
/// `a_bits` and d's limb count: restoring division, one shift and one
/// masked subtraction of d per bit of a (the bound of a provable prime's
/// multiplier r from its secret factor q, once per level, see
/// `provable`).
pub(super) fn div_floor(a: &Integer, d: &Integer, a_bits: u32) -> Integer {
    debug_assert!(*a >= 0 && *d > 0 && a.significant_bits() <= a_bits);
    let al = a.as_limbs();
    let dl = d.as_limbs();
    // The remainder stays below 2d, so one limb above d's is enough.
    let w = dl.len() + 1;
    let mut dpad: Limbs<u64> = SecretVec::zeroed(w);
    dpad[..dl.len()].copy_from_slice(dl);
    let mut rem: Limbs<u64> = SecretVec::zeroed(w);
    let mut t: Limbs<u64> = SecretVec::zeroed(w);
    let mut quot: Limbs<u64> = SecretVec::zeroed((a_bits as usize).div_ceil(64).max(1));
    for i in (0..a_bits as usize).rev() {
        let bit = al.get(i / 64).map_or(0, |&l| (l >> (i % 64)) & 1);
        let mut carry = bit;
        for l in rem.iter_mut() {
            let next = *l >> 63;
            *l = (*l << 1) | carry;
            carry = next;
        }
        let mut borrow = 0u64;
        for j in 0..w {
            let (x, b1) = rem[j].overflowing_sub(dpad[j]);
            let (x, b2) = x.overflowing_sub(borrow);
            t[j] = x;
            borrow = u64::from(b1 | b2);
        }
        // rem ≥ d exactly when the subtraction did not borrow.
        let keep = mask(borrow ^ 1);
        for j in 0..w {
            rem[j] ^= keep & (rem[j] ^ t[j]);
        }
        quot[i / 64] |= (keep & 1) << (i % 64);
    }
    Integer::from_digits(&quot, Order::Lsf)
}

/// All ones when `x < y`, else zero, from the borrow of a 128-bit
/// subtraction (no comparison instruction on the values).
pub(super) fn lt_mask(x: u64, y: u64) -> u64 {
    opaque(((x as u128).wrapping_sub(y as u128) >> 64) as u64)
}

/// `x − y mod m` for x, y < m, without a branch.
fn sub_mod(x: u64, y: u64, m: u64) -> u64 {
    let d = (x as u128).wrapping_sub(y as u128);
    let neg = opaque((d >> 64) as u64); // all ones on borrow
    (d as u64).wrapping_add(m & neg)
}

/// `x / 2 mod m` for x < m, m odd, without a branch.
fn half_mod(x: u64, m: u64) -> u64 {
    let odd = opaque((x & 1).wrapping_neg());
    (((x as u128) + ((m & odd) as u128)) >> 1) as u64
}

/// gcd(a, m) and, when it is 1, a⁻¹ mod m, for odd m ≥ 3 and a < m, in a
/// fixed 128 iterations of masked steps (the constant-time binary
/// extended Euclid BoringSSL uses for its small inverses): with
/// (x, y) = (a, m) and x ≡ u·a, y ≡ v·a (mod m), each step makes x even —
/// swapping x and y first when x is odd and smaller, then x ← x − y — and
/// halves it. bits(x) + bits(y) ≤ 128 drops by one per step until x = 0,
/// leaving y = gcd and v = a⁻¹ when it is 1.
///
/// Used on values derived from the secret primes modulo the public e:
/// (r − 1) mod e and λ mod e.
pub(super) fn gcd_inverse_u64(a: u64, m: u64) -> (u64, u64) {
    debug_assert!(m & 1 == 1 && m >= 3 && a < m);
    let (mut x, mut y, mut u, mut v) = (a, m, 1u64, 0u64);
    for _ in 0..128 {
        let odd = opaque((x & 1).wrapping_neg());
        let swap = odd & lt_mask(x, y);
        let (tx, tu) = ((x ^ y) & swap, (u ^ v) & swap);
        x ^= tx;
        y ^= tx;
        u ^= tu;
        v ^= tu;
        x = x.wrapping_sub(y & odd);
        u = sub_mod(u, v & odd, m);
        x >>= 1;
        u = half_mod(u, m);
    }
    (y, v)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// The divsteps of an inversion and of a gcd with f, g, the Bézout
    /// pair, m and m⁻¹ marked undefined; only the results are marked
    /// defined again. Meaningful only under valgrind: run by
    /// `arith::ct_check::secret_arithmetic_has_no_secret_branches`.
    #[test]
    #[ignore = "run by arith::ct_check under valgrind"]
    fn ct_workload() {
        use crate::arith::ct_check::{declassify, defined_slice, undefined_slice};
        let mut next = values(0x5eed);
        for bits in [512u32, 1024] {
            let mut m = next(bits);
            m.set_bit(bits - 1, true);
            m.set_bit(0, true);
            let x = next(bits) % &m;
            let mut inv = Inversion::new(&x, &m, bits);
            for v in [&mut inv.f, &mut inv.g, &mut inv.ms, &mut inv.d, &mut inv.e] {
                undefined_slice(&mut v[..]);
            }
            undefined_slice(std::slice::from_mut(&mut inv.minv));
            inv.run(bits);
            for v in [&mut inv.f, &mut inv.g, &mut inv.d, &mut inv.ms] {
                defined_slice(&mut v[..]);
            }
            assert!(is_zero(&inv.g));
            // gcd's run, without the pair.
            let Inversion { mut f, mut g, .. } = Inversion::new(&x, &m, bits);
            undefined_slice(&mut f[..]);
            undefined_slice(&mut g[..]);
            run(bits, &mut f, &mut g, None);
            defined_slice(&mut f[..]);
            defined_slice(&mut g[..]);
            assert!(is_zero(&g));
        }
        // λ's exact division by a secret one-limb gcd.
        let mut x = next(1024).as_limbs().to_vec();
        for g in [2u64, 6, 12] {
            let mut prod = vec![0u64; x.len() + 1];
            let mut c = 0u128;
            for (p, &l) in prod.iter_mut().zip(x.iter()) {
                let v = l as u128 * g as u128 + c;
                *p = v as u64;
                c = v >> 64;
            }
            *prod.last_mut().unwrap() = c as u64;
            let mut g = [g];
            undefined_slice(&mut prod);
            undefined_slice(&mut g);
            let mut out = vec![0u64; prod.len()];
            crate::gmp::sec::div_exact_limbs(&prod, g[0], &mut out);
            defined_slice(&mut out);
            defined_slice(&mut prod);
            x.push(0);
            assert_eq!(out, x);
            x.pop();
        }
        // The small gcd and inverse modulo the public e, on a secret
        // residue (r − 1 mod e, λ mod e).
        for a in [12345u64, 65536, 1] {
            let mut a = [a];
            undefined_slice(&mut a);
            let (g, inv) = gcd_inverse_u64(a[0], 65537);
            assert_eq!(declassify(g), 1);
            declassify(inv);
        }
    }

    /// A deterministic stream of test values (xorshift).
    pub(in crate::rsa) fn values(seed: u64) -> impl FnMut(u32) -> Integer {
        let mut s = seed | 1;
        move |bits: u32| {
            let mut v = Integer::new();
            for _ in 0..bits.div_ceil(64) {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                v = (v << 64u32) + s;
            }
            v.keep_bits(bits)
        }
    }

    #[test]
    fn gcd_agrees_with_gmp() {
        let cases = [
            (Integer::from(12u32), Integer::from(18u32)),
            (Integer::from(64u32), Integer::from(40u32)),
            (Integer::from(1u32) << 100u32, Integer::from(3u32) << 90u32),
            (Integer::from(97u32), Integer::from(97u32)),
            (Integer::from(1u32), Integer::from(1u32)),
        ];
        for (a, b) in cases {
            let bits = a.significant_bits().max(b.significant_bits());
            assert_eq!(
                gcd(&a, &b, bits),
                Some(Integer::from(a.gcd_ref(&b))),
                "{a} {b}"
            );
        }
        let mut next = values(0x1234_5678_9abc_def1);
        for bits in [5u32, 63, 64, 65, 130, 512, 1024, 1025, 2048, 3000] {
            for round in 0..30u32 {
                // A shared factor with a random power of two.
                let common: Integer = (next(20) + 1u32) << (round % 70);
                let a = (next(bits / 2) + 1u32) * &common;
                let b = (next(bits / 2) + 1u32) * &common;
                let bound = a.significant_bits().max(b.significant_bits());
                assert_eq!(
                    gcd(&a, &b, bound),
                    Some(Integer::from(a.gcd_ref(&b))),
                    "{bits}"
                );
                // A looser public bound gives the same answer.
                assert_eq!(gcd(&a, &b, bound + 70), Some(Integer::from(a.gcd_ref(&b))));
            }
        }
    }

    #[test]
    fn gcd_of_p_minus_1_and_q_minus_1() {
        let mut next = values(77);
        for _ in 0..10 {
            let p = (next(512) | (Integer::from(1u32) << 511u32)).next_prime();
            let q = (next(512) | (Integer::from(1u32) << 511u32)).next_prime();
            let (a, b) = (Integer::from(&p - 1u32), Integer::from(&q - 1u32));
            assert_eq!(gcd(&a, &b, 513), Some(Integer::from(a.gcd_ref(&b))));
        }
    }

    #[test]
    fn inverse_agrees_with_gmp() {
        let mut next = values(0xfeed_beef);
        for bits in [
            3u32, 61, 62, 63, 64, 65, 124, 128, 512, 1024, 1536, 2048, 4096,
        ] {
            for _ in 0..20 {
                let m = next(bits) | Integer::from(1u32) | (Integer::from(1u32) << (bits - 1));
                if m == 1 {
                    continue;
                }
                let x = next(bits) % &m;
                let want = x.clone().invert(&m).ok();
                assert_eq!(inverse_mod_odd(&x, &m, bits), want, "{bits}: {x} mod {m}");
                assert_eq!(inverse_mod_odd(&x, &m, bits + 100), want, "{bits} loose");
            }
        }
        // Edge values: 0 and 1 and m − 1; a shared factor gives None.
        let m = Integer::from(1_000_003u32);
        assert_eq!(
            inverse_mod_odd(&Integer::from(1u32), &m, 20),
            Some(Integer::from(1u32))
        );
        assert_eq!(
            inverse_mod_odd(&Integer::from(&m - 1u32), &m, 20),
            Some(Integer::from(&m - 1u32))
        );
        assert_eq!(inverse_mod_odd(&Integer::new(), &m, 20), None);
        let m = Integer::from(3u32 * 1_000_003);
        assert_eq!(inverse_mod_odd(&Integer::from(6u32), &m, 22), None);
    }

    #[test]
    fn crt_coefficient_of_real_primes() {
        let mut next = values(5);
        for bits in [512u32, 1024, 1536] {
            let p = (next(bits) | (Integer::from(1u32) << (bits - 1))).next_prime();
            let q = (next(bits) | (Integer::from(1u32) << (bits - 1))).next_prime();
            let x = Integer::from(&q % &p);
            let qinv = inverse_mod_odd(&x, &p, bits).unwrap();
            assert_eq!(Integer::from(&qinv * &q) % &p, 1);
            let by_fermat = x.secure_pow_mod(&Integer::from(&p - 2u32), &p);
            assert_eq!(qinv, by_fermat);
        }
    }

    #[test]
    fn helpers() {
        assert_eq!(trailing_zeros(&[0, 0b1000]), 67);
        assert_eq!(trailing_zeros(&[1, 0]), 0);
        let mut a = vec![0u64, 1 << 5, 0];
        shift_by_secret(&mut a, 69, 8, true);
        assert_eq!(a, vec![1, 0, 0]);
        shift_by_secret(&mut a, 130, 8, false);
        assert_eq!(a, vec![0, 0, 4]);
        // The divstep bound: Bernstein–Yang give 2954 steps for 1024 bits.
        assert_eq!(batches(1024), 2954usize.div_ceil(62));
    }

    #[test]
    fn gcd_inverse_u64_agrees_with_euclid() {
        let gcd = |mut a: u64, mut b: u64| {
            while b != 0 {
                (a, b) = (b, a % b);
            }
            a
        };
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut moduli = vec![
            3u64,
            5,
            15,
            17,
            65537,
            65539,
            0xffff_ffff_ffff_fffd,
            u64::MAX,
        ];
        for _ in 0..200 {
            moduli.push(next() | 1);
            moduli.push((next() >> 40) | 3);
        }
        for &m in &moduli {
            for a in [0u64, 1, 2, m - 1, m / 2, next() % m, next() % m, next() % m] {
                let (g, inv) = gcd_inverse_u64(a, m);
                assert_eq!(g, gcd(a, m), "gcd({a}, {m})");
                if g == 1 {
                    assert_eq!((a as u128 * inv as u128) % m as u128, 1, "{a}^-1 mod {m}");
                }
            }
        }
    }
}
