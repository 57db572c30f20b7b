//! The linear passes that finish a constant-time Montgomery step, fused
//! and unrolled in assembly for CPUs with BMI2 and ADX, 2 to 32 limbs.
//!
//! After the reduction rows (`super::redc`'s `Rows`), a step of
//! [`super::mont`] has to add the rows' carries to the upper half, bring
//! the result below n, and (in the base-2 Fermat loop) double it by an
//! exponent bit and bring it below n again. With GMP that is six calls
//! per step: `mpn_add_n`, `mpn_sub_n`, `mpn_cnd_sub_n`, `mpn_cnd_add_n`,
//! `mpn_sub_n`, `mpn_cnd_sub_n`, each a carry chain that waits for the one
//! before. Here they are two passes (a reduction) or three (a reduction
//! and a doubling):
//! - the upper half plus the carries, r, runs in `adcx`'s chain (CF) and
//!   r − n, as r + (B^len − n) with `negm` = B^len − n prepared once per
//!   modulus, in `adox`'s (OF), side by side in one pass;
//! - the choice between r and r − n is a `cmov` on ZF, which one `test`
//!   sets before the pass and which nothing in the pass writes (`adcx` and
//!   `adox` write only CF and OF; `mov`, `lea`, `mulx` and `cmov` no
//!   flags);
//! - the doubling by an exponent bit b is a `mulx` by 1 + b, whose high
//!   half (the bit shifted out, or 0) goes into the next limb by `lea`;
//!   a multiplication's time does not depend on its operands.
//!
//! No branch or address depends on a value: the code is straight-line, a
//! `cmov` with a memory operand always loads it, and the valgrind check
//! (`arith::ct_check`) runs it with the modulus undefined.
//!
//! Measured on Zen 3 (2026-12-01, old and new builds alternated; figures
//! in docs/measurements/benchmarks-archive.md): the secret base-2 Fermat test −13 % at 512 bits,
//! −6.5 % at 1024, −3 % at 2048; CPU per RSA key (same seeds, paired
//! runs) −7 % at 1024 bits, −8 % at 2048, −2 % at 4096.

type Limb = u64;

/// The fused finishing passes for one limb count `len` (see the module
/// comment). In both, `x` (len limbs) receives the result, `up` is the
/// 2·len-limb output of the reduction rows (read only), `negm` is
/// B^len − n and `tmp` len limbs of scratch; `up`, `negm` and `tmp`
/// overlap neither `x` nor each other.
#[derive(Clone, Copy)]
pub(super) struct Finish {
    /// x ← V mod n for V = up[len..2len] + up[0..len] < 2n.
    pub(super) reduce: unsafe fn(x: *mut Limb, up: *const Limb, negm: *const Limb, tmp: *mut Limb),
    /// x ← (V mod n)·2^bit mod n for V as in `reduce` and `bit` 0 or 1.
    pub(super) reduce_double:
        unsafe fn(x: *mut Limb, up: *const Limb, negm: *const Limb, tmp: *mut Limb, bit: Limb),
}

#[cfg(target_arch = "x86_64")]
#[rustfmt::skip]
mod unrolled;

/// The sizes `unrolled.rs` has code for (its generator's list; the same as
/// the unrolled reduction rows').
#[cfg(test)]
const UNROLLED: std::ops::RangeInclusive<usize> = 2..=32;

/// The fused passes for `len` limbs on a CPU with BMI2 and ADX (the caller
/// checks; the valgrind check forces them), if there are.
#[cfg(target_arch = "x86_64")]
pub(super) fn finish_adx(len: usize) -> Option<Finish> {
    unrolled::finish(len)
}

/// B^len − m for `m` of len ≥ 1 limbs, m odd: ~m + 1, where limb 0 of ~m is
/// even, so adding 1 never carries.
pub(super) fn negated(m: &[Limb], out: &mut [Limb]) {
    debug_assert!(m.len() == out.len() && m[0] & 1 == 1);
    for (o, &l) in out.iter_mut().zip(m) {
        *o = !l;
    }
    out[0] |= 1;
}

/// The text of `unrolled.rs`: for each size n, the two functions of
/// [`Finish`] as straight-line assembly.
///
/// `reduce` (rdi = x, r8 = up, rsi = negm, rcx = tmp):
/// 1. for each limb i, r = up[n + i] + up[i] (+ CF) into x[i], then
///    r + negm[i] (+ OF) into tmp[i];
/// 2. ZF ← (CF | OF) = 0, i.e. V < n;
/// 3. x[i] ← tmp[i] where ZF is clear (`cmovnz`).
///
/// `reduce_double` (also rdx = 1 + b): steps 1 and 2, then
/// 3. x[i] ← tmp[i] where ZF is clear (the reduced V, x_i), every limb
///    before any `adox` (which writes OF into the flags group that holds ZF,
///    so a `cmovnz` after it would wait for it: the limbs would chain);
///    then for each limb i, hi:lo = x_i·(1 + b) (`mulx`); y_i = lo + the
///    previous limb's hi (0 at first) into x[i]; y_i + negm[i] (+ OF,
///    cleared by step 2's `test`) into tmp[i];
/// 4. ZF ← (the last hi | OF) = 0, i.e. 2^b·x < n;
/// 5. x[i] ← tmp[i] where ZF is clear.
///
/// V < 2n, so V mod n is V or V − n, and V − n = r + negm mod B^n; 2^b·x
/// < 2n likewise.
#[cfg(test)]
fn unrolled_source() -> String {
    let mut s = super::generated_header("finish", "unrolled_finish_is_generated");
    s += "//! The fused finishing passes of a Montgomery step, straight-line\n\
          //! assembly for each limb count.\n\n\
          use super::{Finish, Limb};\n\n";
    s += &super::size_table(
        "The fused passes for `n` limbs, if there are.",
        "finish",
        "Finish",
        UNROLLED,
        |n| format!("Finish {{ reduce: reduce_{n}, reduce_double: reduce_double_{n} }}"),
    );
    let lines = |v: &[String]| -> String {
        v.iter()
            .map(|t| format!("            \"{t}\",\n"))
            .collect()
    };
    // Step 1 and 2 of both functions.
    let add_sub = |n: usize| -> Vec<String> {
        let mut v = vec!["xor eax, eax".to_string()];
        for i in 0..n {
            v.push(format!("mov rax, [r8 + {}]", 8 * (n + i)));
            v.push(format!("adcx rax, [r8 + {}]", 8 * i));
            v.push(format!("mov [rdi + {}], rax", 8 * i));
            v.push(format!("adox rax, [rsi + {}]", 8 * i));
            v.push(format!("mov [rcx + {}], rax", 8 * i));
        }
        v.extend(
            [
                "mov eax, 0",
                "setc al",
                "mov r11d, 0",
                "seto r11b",
                "or rax, r11",
                "test rax, rax",
            ]
            .map(String::from),
        );
        v
    };
    let select = |n: usize| -> Vec<String> {
        let mut v = Vec::new();
        for i in 0..n {
            v.push(format!("mov rax, [rdi + {}]", 8 * i));
            v.push(format!("cmovnz rax, [rcx + {}]", 8 * i));
            v.push(format!("mov [rdi + {}], rax", 8 * i));
        }
        v
    };
    // One function: its doc line, name, parameters after `tmp`, first
    // statement, registers beyond the four pointers and rax, and body.
    let function = |n: usize,
                    doc: &str,
                    name: &str,
                    params: &str,
                    pre: &str,
                    regs: &[&str],
                    body: &[String]| {
        let regs: String = regs.iter().map(|r| format!("            {r},\n")).collect();
        format!(
            "\n/// [`Finish::{doc}`] for {n} limbs.\n\
             unsafe fn {name}_{n}(x: *mut Limb, up: *const Limb, negm: *const Limb, tmp: *mut Limb{params}) {{\n\
             {pre}\
             \x20   // SAFETY: x, negm and tmp have {n} limbs and up {m} ([`Finish`]'s\n\
             \x20   // contract); the caller checked BMI2 and ADX.\n\
             \x20   unsafe {{\n\
             \x20       core::arch::asm!(\n{body}\
             \x20           in(\"rdi\") x,\n\
             \x20           in(\"r8\") up,\n\
             \x20           in(\"rsi\") negm,\n\
             \x20           in(\"rcx\") tmp,\n\
             \x20           out(\"rax\") _,\n\
             {regs}\
             \x20           options(nostack),\n\
             \x20       );\n\
             \x20   }}\n\
             }}\n",
            m = 2 * n,
            body = lines(body)
        )
    };
    for n in UNROLLED {
        let mut reduce = add_sub(n);
        reduce.extend(select(n));
        s += &function(n, "reduce", "reduce", "", "", &["out(\"r11\") _"], &reduce);
        let mut double = add_sub(n);
        // The selection first, as a pass of its own: a `cmovnz` after an
        // `adox` waits for it (adox writes OF into the flags that hold
        // ZF), which chained every limb's select, product and addition.
        double.extend(select(n));
        double.push("mov r12d, 0".into());
        for i in 0..n {
            double.push(format!("mov rax, [rdi + {}]", 8 * i));
            double.push("mulx r13, rax, rax".into());
            double.push("lea rax, [rax + r12]".into());
            double.push("mov r12, r13".into());
            double.push(format!("mov [rdi + {}], rax", 8 * i));
            double.push(format!("adox rax, [rsi + {}]", 8 * i));
            double.push(format!("mov [rcx + {}], rax", 8 * i));
        }
        double.extend(["mov eax, 0", "seto al", "or rax, r12", "test rax, rax"].map(String::from));
        double.extend(select(n));
        s += &function(
            n,
            "reduce_double",
            "reduce_double",
            ", bit: Limb",
            "    debug_assert!(bit <= 1);\n",
            &[
                "in(\"rdx\") 1 + bit",
                "out(\"r11\") _",
                "out(\"r12\") _",
                "out(\"r13\") _",
            ],
            &double,
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `unrolled.rs` is what [`unrolled_source`] writes
    /// (PRIMEFORGE_UPDATE_ASM=1 rewrites the file).
    #[test]
    fn unrolled_finish_is_generated() {
        crate::gmp::check_generated("src/gmp/finish/unrolled.rs", &unrolled_source());
    }

    #[test]
    fn negated_is_two_s_complement() {
        for m in [
            vec![1u64],
            vec![u64::MAX],
            vec![3, 0],
            vec![u64::MAX, u64::MAX, 7],
        ] {
            let mut out = vec![0; m.len()];
            negated(&m, &mut out);
            let r = rug::Integer::from(1u32) << (64 * m.len() as u32);
            let mi = rug::Integer::from_digits(&m, rug::integer::Order::Lsf);
            let oi = rug::Integer::from_digits(&out, rug::integer::Order::Lsf);
            assert_eq!(oi, r - mi, "{m:?}");
        }
    }
}
