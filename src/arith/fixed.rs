//! Montgomery arithmetic on fixed-size numbers, for moduli of up to
//! [`MAX_LIMBS`] limbs (RSA primes and DH moduli up to 448 bits: RSA-512's
//! primes, DH-256 and DH-384).
//!
//! At 8 limbs (RSA-1024's primes, DH-512) `gmp::mont` is faster: GMP's
//! basecase squaring and the reduction rows written out in assembly
//! (`gmp::redc`) beat this code there, secret or public (see
//! [`MAX_LIMBS`]).
//!
//! ## Why not GMP here
//! At four to seven limbs a GMP squaring and reduction is a dozen calls
//! (`mpn_sqr`, one `addmul_1` row per limb, `mpn_add_n`, `mpn_sub_n`,
//! `mpn_cnd_sub_n`), each with its own loop set-up, for a few dozen
//! multiplications. Here the limb count is a constant: the compiler unrolls
//! every loop, keeps the numbers in registers and the whole step is one
//! straight run of multiplications and carries. At 4 limbs (RSA-512's
//! primes, DH-256) the squaring, which is most of every test, is written in
//! assembly where the CPU has BMI2 and ADX ([`sqr4_adx`]: `mulx` with the
//! two carry chains of `adcx`/`adox`, about half the instructions of the
//! compiler's u128 code).
//!
//! ## Constant time
//! Nothing branches on or indexes memory by a value (only by n's bit
//! size, which is public: the key size). Products are u128
//! multiplications (one `mul`/`mulx` each); the final subtraction of every
//! step and every conditional doubling is selected with a mask derived from
//! borrows, behind [`core::hint::black_box`] so that the optimiser does not
//! see that the mask is all zeros or all ones and turn the select back into
//! a branch (a best effort, as Rust documents it: `arith::ct_check` runs
//! this code under valgrind with the secrets marked undefined, and
//! `bench/examples/mr_timing` measures it); a table look-up reads every
//! entry. Every value is
//! fully reduced (< n) after every operation.
//!
//! Contexts are wiped when dropped, and callers wipe their tables and
//! accumulators. The per-step temporaries (products, differences) live in
//! registers and on the worker's stack, which is wiped when the worker
//! finishes (`secure::stack`): wiping them at every step would cost more
//! than the step.

// Limb loops walk several arrays (and carries) in step; an index reads
// better than zipped iterators.
#![allow(clippy::needless_range_loop)]

use core::hint::black_box;

use zeroize::Zeroize;

use super::inverse_mod_2_64;

/// The largest limb count served here (448 bits), secret or public. At 8
/// limbs `gmp::mont` (GMP's `mpn_sqr` and the unrolled reduction rows of
/// `gmp::redc`) is faster: the 512-bit secret Fermat test 50–52 against
/// 55–66 µs (`bench/examples/powm_cost`; the public strong test was
/// already 0.057 against 0.068 ms before the unrolled rows), RSA-1024
/// 4.50 against 4.83 ms of CPU
/// per key (`rsa_timing 1024 150 1`, six alternations). Up to 7 limbs
/// registers win: at 256 bits 9 against 14–15 µs (secret), at 320 bits
/// 15 against 20–21 µs (public).
pub(crate) const MAX_LIMBS: usize = 7;

type Limb = u64;

#[inline(always)]
fn mac(t: Limb, a: Limb, b: Limb, c: Limb) -> (Limb, Limb) {
    let s = t as u128 + (a as u128) * (b as u128) + c as u128;
    (s as Limb, (s >> 64) as Limb)
}

#[inline(always)]
fn adc(a: Limb, b: Limb, c: Limb) -> (Limb, Limb) {
    let s = a as u128 + b as u128 + c as u128;
    (s as Limb, (s >> 64) as Limb)
}

#[inline(always)]
fn sbb(a: Limb, b: Limb, borrow: Limb) -> (Limb, Limb) {
    let d = (a as u128).wrapping_sub(b as u128 + borrow as u128);
    (d as Limb, ((d >> 64) as Limb) & 1)
}

/// x if mask is all ones, y if it is zero.
#[inline(always)]
fn select<const N: usize>(mask: Limb, x: &[Limb; N], y: &[Limb; N]) -> [Limb; N] {
    let mask = black_box(mask);
    let mut r = [0; N];
    for i in 0..N {
        r[i] = y[i] ^ ((x[i] ^ y[i]) & mask);
    }
    r
}

/// Montgomery arithmetic modulo an odd n of exactly N limbs (top limb
/// non-zero), R = 2^(64·N).
///
/// `repr(C)`: the 4-limb assembly squaring ([`sqr4_adx`]) reads n at
/// offset 0 and −n⁻¹ mod 2^64 right after it.
#[repr(C)]
pub(crate) struct FixedMont<const N: usize> {
    m: [Limb; N],
    invm: Limb,
    one: [Limb; N],
    /// The CPU has BMI2 and ADX (public; chooses [`sqr4_adx`] at N = 4).
    adx: bool,
}

impl<const N: usize> Drop for FixedMont<N> {
    fn drop(&mut self) {
        self.m.zeroize();
        self.invm.zeroize();
        self.one.zeroize();
    }
}

impl<const N: usize> FixedMont<N> {
    /// The context for odd `m` of N limbs, or `None` (even, or a shorter
    /// number).
    pub(crate) fn new(m: &[Limb]) -> Option<FixedMont<N>> {
        const { assert!(N >= 1 && N <= MAX_LIMBS) };
        if m.len() != N || m[0] & 1 == 0 || m[N - 1] == 0 {
            return None;
        }
        let mut a = [0; N];
        a.copy_from_slice(m);
        let mut f = FixedMont {
            m: a,
            invm: inverse_mod_2_64(m[0]).wrapping_neg(),
            one: [0; N],
            adx: has_adx(),
        };
        f.one = f.r_mod_n();
        Some(f)
    }

    /// Hands the secret fields (n, −n⁻¹, R mod n) to `f` as byte ranges,
    /// for `arith::ct_check` to mark them undefined under valgrind.
    #[cfg(test)]
    pub(crate) fn secret_bytes(&mut self, mut f: impl FnMut(*const u8, usize)) {
        f(self.m.as_ptr().cast(), 8 * N);
        f((&self.invm as *const Limb).cast(), 8);
        f(self.one.as_ptr().cast(), 8 * N);
    }

    /// Chooses the squaring at 4 limbs, for tests of both paths. The
    /// caller makes sure the CPU (or valgrind, which runs BMI2 and ADX
    /// instructions but hides them from CPUID) has the instructions.
    #[cfg(test)]
    pub(crate) fn set_adx(&mut self, on: bool) {
        self.adx = on;
    }

    /// Bit `i` of n as 0 or 1 (for masks only: n is secret).
    #[inline(always)]
    pub(crate) fn modulus_bit(&self, i: usize) -> Limb {
        (self.m[i / 64] >> (i % 64)) & 1
    }

    /// x − n when `carry` is 1 or x ≥ n, else x (x < 2n).
    #[inline(always)]
    fn reduce_once(&self, x: &[Limb; N], carry: Limb) -> [Limb; N] {
        let mut d = [0; N];
        let mut borrow = 0;
        for i in 0..N {
            (d[i], borrow) = sbb(x[i], self.m[i], borrow);
        }
        // Keep d when there was a carry out or no borrow.
        let keep_d = (carry | (borrow ^ 1)).wrapping_neg();
        select(keep_d, &d, x)
    }

    /// a·b·R⁻¹ mod n (coarsely integrated operand scanning).
    #[inline(always)]
    pub(crate) fn mul(&self, a: &[Limb; N], b: &[Limb; N]) -> [Limb; N] {
        let mut t = [0; N];
        let mut top: Limb = 0;
        for bi in b.iter() {
            let mut c = 0;
            for j in 0..N {
                (t[j], c) = mac(t[j], a[j], *bi, c);
            }
            let (t_n, t_n1) = adc(top, c, 0);
            let q = t[0].wrapping_mul(self.invm);
            let (_, mut c) = mac(t[0], q, self.m[0], 0);
            for j in 1..N {
                (t[j - 1], c) = mac(t[j], q, self.m[j], c);
            }
            let (lo, hi) = adc(t_n, c, 0);
            t[N - 1] = lo;
            top = t_n1 + hi;
        }
        self.reduce_once(&t, top)
    }

    /// a²·R⁻¹ mod n: the square with each cross product computed once
    /// (N(N−1)/2 + N multiplications instead of N²), then N rows of
    /// Montgomery reduction.
    #[inline(always)]
    pub(crate) fn sqr(&self, a: &[Limb; N]) -> [Limb; N] {
        #[cfg(target_arch = "x86_64")]
        if N == 4 && self.adx {
            let a4: &[Limb; 4] = a[..].try_into().expect("N = 4");
            // SAFETY: `self` is repr(C) with m: [u64; 4] at offset 0 and
            // invm right after it (N = 4), and the CPU has BMI2 and ADX.
            let (r, top) = unsafe { sqr4_adx(a4, (self as *const Self).cast()) };
            let mut out = [0; N];
            out.copy_from_slice(&r);
            return self.reduce_once(&out, top);
        }
        self.sqr_portable(a)
    }

    /// [`FixedMont::sqr`] in portable Rust.
    #[inline(always)]
    fn sqr_portable(&self, a: &[Limb; N]) -> [Limb; N] {
        let mut p = [0; 2 * MAX_LIMBS];
        // Cross products a[i]·a[j], i < j.
        for i in 0..N {
            let mut c = 0;
            for j in i + 1..N {
                (p[i + j], c) = mac(p[i + j], a[i], a[j], c);
            }
            p[i + N] = c;
        }
        // Doubled, plus the squares a[i]².
        let mut shifted_out = 0;
        for x in p.iter_mut().take(2 * N) {
            let next = *x >> 63;
            *x = (*x << 1) | shifted_out;
            shifted_out = next;
        }
        let mut c = 0;
        for i in 0..N {
            let sq = (a[i] as u128) * (a[i] as u128);
            (p[2 * i], c) = adc(p[2 * i], sq as Limb, c);
            (p[2 * i + 1], c) = adc(p[2 * i + 1], (sq >> 64) as Limb, c);
        }
        // Montgomery reduction: row i clears limb i; its carry goes into
        // limb i + N, and that addition's carry into the next row's.
        let mut top = 0;
        for i in 0..N {
            let q = p[i].wrapping_mul(self.invm);
            let mut c = 0;
            for j in 0..N {
                (p[i + j], c) = mac(p[i + j], q, self.m[j], c);
            }
            (p[i + N], top) = adc(p[i + N], c, top);
        }
        let mut r = [0; N];
        r.copy_from_slice(&p[N..2 * N]);
        self.reduce_once(&r, top)
    }

    /// 2^bit·x mod n for `bit` 0 or 1, the same work either way.
    #[inline(always)]
    pub(crate) fn double_if(&self, x: &[Limb; N], bit: Limb) -> [Limb; N] {
        let mask = bit.wrapping_neg();
        let mut s = [0; N];
        let mut c = 0;
        for i in 0..N {
            (s[i], c) = adc(x[i], x[i] & mask, c);
        }
        self.reduce_once(&s, c)
    }

    /// R mod n (the Montgomery form of 1): r = R − n, then n·2^k
    /// subtracted where it fits for k from 64·N − bits(n) down to 0, each
    /// with a masked select. R − n < R ≤ 2^(64N − bits(n) + 1)·n, so that
    /// is enough. The number of steps depends on the bit size of n, which
    /// is public wherever this is used (a candidate's size is the key's).
    fn r_mod_n(&self) -> [Limb; N] {
        let mut r = [0; N];
        let mut borrow = 0;
        for i in 0..N {
            (r[i], borrow) = sbb(0, self.m[i], borrow);
        }
        let top_shift = self.m[N - 1].leading_zeros();
        for k in (0..=top_shift).rev() {
            // s = n·2^k over N + 1 limbs (k ≤ 63: the top limb is not 0).
            let mut s = [0; N];
            let mut carry = 0;
            for i in 0..N {
                s[i] = (self.m[i] << k) | carry;
                // n's limb shifted right by 64 − k, as 0 when k = 0.
                carry = (self.m[i] >> 1) >> (63 - k);
            }
            // d = r − s over N + 1 limbs (r's extra limb is 0).
            let mut d = [0; N];
            let mut borrow = 0;
            for i in 0..N {
                (d[i], borrow) = sbb(r[i], s[i], borrow);
            }
            let (_, borrow) = sbb(0, carry, borrow);
            r = select(borrow.wrapping_sub(1), &d, &r);
        }
        r
    }

    /// R mod n (the Montgomery form of 1).
    #[inline(always)]
    pub(crate) fn one(&self) -> [Limb; N] {
        self.one
    }

    /// R² mod n (the Montgomery form of R): with 64·N = a·2^b, a odd, the
    /// form of 2^a by a doublings of R mod n, then b squarings.
    pub(crate) fn r_squared(&self) -> [Limb; N] {
        let bits = 64 * N;
        let b = bits.trailing_zeros();
        let mut x = self.one();
        for _ in 0..bits >> b {
            x = self.double_if(&x, 1);
        }
        for _ in 0..b {
            x = self.sqr(&x);
        }
        x
    }

    /// y·R mod n for y < 2^(64·N), given R² mod n.
    pub(crate) fn to_mont(&self, y: &[Limb; N], r2: &[Limb; N]) -> [Limb; N] {
        self.mul(y, r2)
    }

    /// The Montgomery form of n − 1 (n − R mod n).
    pub(crate) fn minus_one(&self) -> [Limb; N] {
        let one = self.one();
        let mut r = [0; N];
        let mut borrow = 0;
        for i in 0..N {
            (r[i], borrow) = sbb(self.m[i], one[i], borrow);
        }
        r
    }

    /// x·R⁻¹ mod n: out of Montgomery form.
    #[cfg(test)]
    pub(crate) fn out_of_mont(&self, x: &[Limb; N]) -> [Limb; N] {
        let mut one = [0; N];
        one[0] = 1;
        self.mul(x, &one)
    }
}

// sqr4_adx reads n at offset 0 and invm at offset 32.
const _: () = assert!(core::mem::offset_of!(FixedMont<4>, m) == 0);
const _: () = assert!(core::mem::offset_of!(FixedMont<4>, invm) == 32);

/// Whether the CPU has `mulx` (BMI2) and `adcx`/`adox` (ADX).
pub(crate) fn has_adx() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("bmi2") && std::arch::is_x86_feature_detected!("adx")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// a²·R⁻¹ before the final subtraction, for 4 limbs: returns the low four
/// limbs and the carry above them (the value is below 2n). `ctx` points at
/// n's four limbs followed by −n⁻¹ mod 2^64.
///
/// The square's cross products once (`mulx`, one `adc` chain per row),
/// doubled by an `adc` chain, plus the four squares; then four Montgomery
/// rows, each with its low halves in the `adcx` (CF) chain and its high
/// halves in the `adox` (OF) chain, the row's carry added one limb up
/// with the previous row's carry. No branches and no value-dependent
/// addresses: the same instructions for every input.
///
/// # Safety
/// The CPU must have BMI2 and ADX; `ctx` must point at five readable
/// limbs.
#[cfg(target_arch = "x86_64")]
#[inline]
unsafe fn sqr4_adx(a: &[Limb; 4], ctx: *const Limb) -> ([Limb; 4], Limb) {
    let (r0, r1, r2, r3, top): (Limb, Limb, Limb, Limb, Limb);
    // SAFETY: reads a[0..4] and ctx[0..5]; writes only registers.
    unsafe {
        core::arch::asm!(
            // Cross products a_i·a_j (i < j) into r9..r14 (p1..p6).
            "mov rdx, [rsi]",
            "mulx r10, r9, [rsi + 8]",
            "mulx r11, rax, [rsi + 16]",
            "add r10, rax",
            "mulx r12, rax, [rsi + 24]",
            "adc r11, rax",
            "adc r12, 0",
            "mov rdx, [rsi + 8]",
            "mulx rcx, rax, [rsi + 16]",
            "mulx r13, r8, [rsi + 24]",
            "add rcx, r8",
            "adc r13, 0",
            "add r11, rax",
            "adc r12, rcx",
            "adc r13, 0",
            "mov rdx, [rsi + 16]",
            "mulx r14, rax, [rsi + 24]",
            "add r13, rax",
            "adc r14, 0",
            // Doubled into p1..p7 (r15 = p7).
            "xor r15d, r15d",
            "add r9, r9",
            "adc r10, r10",
            "adc r11, r11",
            "adc r12, r12",
            "adc r13, r13",
            "adc r14, r14",
            "adc r15, r15",
            // Plus the squares a_i² (r8 = p0).
            "mov rdx, [rsi]",
            "mulx rcx, r8, rdx",
            "add r9, rcx",
            "mov rdx, [rsi + 8]",
            "mulx rcx, rax, rdx",
            "adc r10, rax",
            "adc r11, rcx",
            "mov rdx, [rsi + 16]",
            "mulx rcx, rax, rdx",
            "adc r12, rax",
            "adc r13, rcx",
            "mov rdx, [rsi + 24]",
            "mulx rcx, rax, rdx",
            "adc r14, rax",
            "adc r15, rcx",
            // Montgomery row 0 (limbs r8..r12); rsi = 0 from here.
            "mov rdx, r8",
            "imul rdx, [rdi + 32]",
            "xor esi, esi",
            "mulx rcx, rax, [rdi]",
            "adcx r8, rax",
            "adox r9, rcx",
            "mulx rcx, rax, [rdi + 8]",
            "adcx r9, rax",
            "adox r10, rcx",
            "mulx rcx, rax, [rdi + 16]",
            "adcx r10, rax",
            "adox r11, rcx",
            "mulx rcx, rax, [rdi + 24]",
            "adcx r11, rax",
            "adox rcx, rsi",
            "adcx rcx, rsi",
            // r8 is 0 now: it takes the row's carry out of r12.
            "add r12, rcx",
            "adc r8, rsi",
            // Row 1 (r9..r13), previous carry in r8, next in r9.
            "mov rdx, r9",
            "imul rdx, [rdi + 32]",
            "xor eax, eax",
            "mulx rcx, rax, [rdi]",
            "adcx r9, rax",
            "adox r10, rcx",
            "mulx rcx, rax, [rdi + 8]",
            "adcx r10, rax",
            "adox r11, rcx",
            "mulx rcx, rax, [rdi + 16]",
            "adcx r11, rax",
            "adox r12, rcx",
            "mulx rcx, rax, [rdi + 24]",
            "adcx r12, rax",
            "adox rcx, rsi",
            "adcx rcx, rsi",
            "bt r8, 0",
            "adc r13, rcx",
            "adc r9, rsi",
            // Row 2 (r10..r14), carry r9 → r10.
            "mov rdx, r10",
            "imul rdx, [rdi + 32]",
            "xor eax, eax",
            "mulx rcx, rax, [rdi]",
            "adcx r10, rax",
            "adox r11, rcx",
            "mulx rcx, rax, [rdi + 8]",
            "adcx r11, rax",
            "adox r12, rcx",
            "mulx rcx, rax, [rdi + 16]",
            "adcx r12, rax",
            "adox r13, rcx",
            "mulx rcx, rax, [rdi + 24]",
            "adcx r13, rax",
            "adox rcx, rsi",
            "adcx rcx, rsi",
            "bt r9, 0",
            "adc r14, rcx",
            "adc r10, rsi",
            // Row 3 (r11..r15), carry r10 → r11.
            "mov rdx, r11",
            "imul rdx, [rdi + 32]",
            "xor eax, eax",
            "mulx rcx, rax, [rdi]",
            "adcx r11, rax",
            "adox r12, rcx",
            "mulx rcx, rax, [rdi + 8]",
            "adcx r12, rax",
            "adox r13, rcx",
            "mulx rcx, rax, [rdi + 16]",
            "adcx r13, rax",
            "adox r14, rcx",
            "mulx rcx, rax, [rdi + 24]",
            "adcx r14, rax",
            "adox rcx, rsi",
            "adcx rcx, rsi",
            "bt r10, 0",
            "adc r15, rcx",
            "adc r11, rsi",
            inout("rsi") a.as_ptr() => _,
            in("rdi") ctx,
            out("rax") _,
            out("rcx") _,
            out("rdx") _,
            out("r8") _,
            out("r9") _,
            out("r10") _,
            out("r11") top,
            out("r12") r0,
            out("r13") r1,
            out("r14") r2,
            out("r15") r3,
            options(pure, readonly, nostack),
        );
    }
    ([r0, r1, r2, r3], top)
}

/// 1 when equal, 0 when not (full-length XOR, no early exit).
#[inline(always)]
pub(crate) fn ct_eq<const N: usize>(a: &[Limb; N], b: &[Limb; N]) -> Limb {
    let mut diff = 0;
    for i in 0..N {
        diff |= a[i] ^ b[i];
    }
    1 ^ ((diff | diff.wrapping_neg()) >> 63)
}

/// Runs `$body` with `$n` bound to the constant limb count `$len` when it
/// is served here (1 … [`MAX_LIMBS`]), giving `Some(result)`; `None` for
/// other counts.
macro_rules! with_limbs {
    ($len:expr, $n:ident => $body:expr) => {
        match $len {
            1 => {
                const $n: usize = 1;
                Some($body)
            }
            2 => {
                const $n: usize = 2;
                Some($body)
            }
            3 => {
                const $n: usize = 3;
                Some($body)
            }
            4 => {
                const $n: usize = 4;
                Some($body)
            }
            5 => {
                const $n: usize = 5;
                Some($body)
            }
            6 => {
                const $n: usize = 6;
                Some($body)
            }
            7 => {
                const $n: usize = 7;
                Some($body)
            }
            _ => None,
        }
    };
}
pub(crate) use with_limbs;

#[cfg(test)]
mod tests {
    use super::*;
    use rug::Integer;

    fn limbs<const N: usize>(x: &Integer) -> [Limb; N] {
        let mut a = [0; N];
        let l = x.as_limbs();
        a[..l.len()].copy_from_slice(l);
        a
    }

    fn int(a: &[Limb]) -> Integer {
        Integer::from_digits(a, rug::integer::Order::Lsf)
    }

    fn check<const N: usize>(m: &Integer, x: &Integer, y: &Integer) {
        let f = FixedMont::<N>::new(m.as_limbs()).expect("odd, N limbs");
        let r = Integer::from(1u32) << (64 * N as u32);
        let rinv = r.clone().invert(m).unwrap();
        assert_eq!(int(&f.one()), Integer::from(&r % m), "one, m = {m:#x}");
        let r2 = f.r_squared();
        assert_eq!(int(&r2), Integer::from(&r * &r) % m, "R², m = {m:#x}");
        let (xa, ya) = (limbs::<N>(&(x.clone() % m)), limbs::<N>(&(y.clone() % m)));
        let want = Integer::from(&x.clone() * y) * &rinv % m;
        assert_eq!(int(&f.mul(&xa, &ya)), want, "mul, m = {m:#x}");
        let want = Integer::from(x * x) % m * &rinv % m;
        assert_eq!(int(&f.sqr(&limbs::<N>(&(x.clone() % m)))), want);
        // to_mont takes any y < R.
        let yr = limbs::<N>(y);
        assert_eq!(int(&f.to_mont(&yr, &r2)), Integer::from(y * &r) % m);
        let xm = f.to_mont(&yr, &r2);
        assert_eq!(int(&f.out_of_mont(&xm)), Integer::from(y % m));
        for bit in [0, 1] {
            let want = Integer::from(x % m) * (1u32 << bit) % m;
            assert_eq!(int(&f.double_if(&xa, bit)), want);
        }
        assert_eq!(int(&f.minus_one()), (m - &r % m.clone()) % m);
        assert_eq!(ct_eq(&xa, &xa), 1);
        let mut z = xa;
        z[N - 1] ^= 1 << 63;
        assert_eq!(ct_eq(&xa, &z), 0);
    }

    fn sizes<const N: usize>(seed: &mut Integer) {
        let bits = 64 * N as u32;
        let next = |s: &mut Integer| {
            *s = (Integer::from(&*s * &*s) + 0x6a09_e667u32).keep_bits(2 * bits + 64);
            Integer::from(&*s >> 32u32).keep_bits(bits)
        };
        for shape in 0..6 {
            let mut m = next(seed);
            match shape {
                // all ones: m = R − 1
                0 => m = (Integer::from(1u32) << bits) - 1u32,
                // the smallest N-limb odd number
                1 => m = (Integer::from(1u32) << (bits - 64)) + 1u32,
                // a small top limb
                2 => m.keep_bits_mut(bits - 60),
                _ => {}
            }
            m.set_bit(0, true);
            if shape >= 2 {
                m.set_bit(bits - 1 - (shape == 2) as u32 * 60, true);
            }
            for _ in 0..8 {
                let (x, y) = (next(seed), next(seed));
                check::<N>(&m, &x, &y);
                let all = (Integer::from(1u32) << bits) - 1u32;
                check::<N>(&m, &all, &(m.clone() - 1u32));
            }
        }
    }

    #[test]
    fn agrees_with_gmp_at_every_size() {
        let mut seed = Integer::from(0x9e37_79b9_7f4a_7c15u64);
        sizes::<1>(&mut seed);
        sizes::<2>(&mut seed);
        sizes::<3>(&mut seed);
        sizes::<4>(&mut seed);
        sizes::<5>(&mut seed);
        sizes::<6>(&mut seed);
        sizes::<7>(&mut seed);
    }

    /// The 4-limb assembly squaring agrees with the portable one on random
    /// numbers and at the edges: n = 2^256 − 1, n = 2^192 + 1, a = n − 1,
    /// a = 0 and a = 1, and a walk of squares.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn adx_squaring_agrees_with_the_portable_one() {
        if !has_adx() {
            crate::capability::skip(
                "adx",
                "no BMI2/ADX on this CPU: the assembly squaring is not compared",
            );
            return;
        }
        let mut seed = Integer::from(0x2545_f491_4f6c_dd1du64);
        let mut moduli = vec![
            (Integer::from(1u32) << 256u32) - 1u32,
            (Integer::from(1u32) << 192u32) + 1u32,
            (Integer::from(1u32) << 255u32) + 1u32,
        ];
        for _ in 0..40 {
            seed = (Integer::from(&seed * &seed) + 0x6a09_e667u32).keep_bits(600);
            let mut m = Integer::from(&seed >> 7u32).keep_bits(256) | 1u32;
            m.set_bit(255 - (moduli.len() as u32 % 3) * 20, true);
            if m.significant_bits() > 192 {
                moduli.push(m);
            }
        }
        let mut checked = 0;
        for m in &moduli {
            let f = FixedMont::<4>::new(m.as_limbs()).expect("odd, 4 limbs");
            assert!(f.adx);
            let mut xs = vec![Integer::new(), Integer::from(1u32), Integer::from(m - 1u32)];
            for _ in 0..20 {
                seed = (Integer::from(&seed * &seed) + 0x3c6e_f372u32).keep_bits(600);
                xs.push(Integer::from(&seed >> 11u32) % m);
            }
            for x in &xs {
                let mut a = limbs::<4>(x);
                for _ in 0..4 {
                    let fast = f.sqr(&a);
                    assert_eq!(fast, f.sqr_portable(&a), "m = {m:#x}, a = {a:x?}");
                    a = fast;
                    checked += 1;
                }
            }
        }
        assert!(checked > 3000, "{checked}");
    }

    #[test]
    fn refuses_even_and_short_moduli() {
        assert!(FixedMont::<2>::new(&[3]).is_none());
        assert!(FixedMont::<2>::new(&[3, 0]).is_none());
        assert!(FixedMont::<2>::new(&[4, 1]).is_none());
        assert!(FixedMont::<2>::new(&[5, 1]).is_some());
        assert_eq!(with_limbs!(3usize, N => N * 2), Some(6));
        assert_eq!(with_limbs!(9usize, N => N), None);
    }
}
