//! Process-wide set-up of the private, bundled GMP, run once before
//! primeforge uses GMP from any entry point ([`init`]).
//!
//! The completion of GMP's CPU dispatch table lives in `dispatch.rs`;
//! everything that touches raw GMP is in this module's files.

pub(crate) mod alloc;

pub(crate) use alloc::secret_scope;
mod finish;
pub(crate) mod mont;
pub mod pubpow;
mod redc;
pub(crate) mod sec;

use std::sync::Once;

use rug::Integer;

/// Runs the one-time set-up: the wiping memory functions (`alloc`) and
/// the dispatch table's completion. Cheap after the first call.
///
/// The init point is the library's constructor (`.init_array` on Linux),
/// which runs before any caller code. Because a Rust program's linker may
/// leave that constructor out of a static link, the core's entry points
/// that create GMP values call this as well, first thing: RSA generation
/// and check, DH generation and check, the named groups. Inside `gmp` only
/// [`dispatch_profile`] and [`basecase_sqr_below`] call it (their answers
/// depend on it).
pub fn init() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        alloc::install();
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        dispatch::patch();
    });
}

/// Runs [`init`] when the library is loaded (or the program starts), so
/// that our GMP's memory functions are in place before any GMP object can
/// exist: `.init_array` on ELF platforms, `__mod_init_func` on Apple's
/// (the latter and the BSDs unverified here, see `secure::os`).
#[cfg(any(
    target_os = "linux",
    target_os = "android",
    target_os = "freebsd",
    target_os = "dragonfly",
    target_os = "openbsd",
    target_os = "netbsd",
    target_vendor = "apple"
))]
#[used]
#[cfg_attr(not(target_vendor = "apple"), link_section = ".init_array")]
#[cfg_attr(target_vendor = "apple", link_section = "__DATA,__mod_init_func")]
static CONSTRUCTOR: extern "C" fn() = {
    extern "C" fn constructor() {
        // Never unwind out of a constructor.
        let _ = std::panic::catch_unwind(init);
    }
    constructor
};

/// Which routines GMP's dispatch table holds in this process: `"gmp"`
/// (GMP's own choice), `"amd"` (GMP's Zen routines with our fixes) or
/// `"intel"` (GMP's chain for Skylake); see `dispatch.rs`.
pub fn dispatch_profile() -> &'static str {
    init();
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        match dispatch::profile() {
            dispatch::Profile::Gmp => "gmp",
            dispatch::Profile::Amd => "amd",
            dispatch::Profile::Intel => "intel",
        }
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    {
        "gmp"
    }
}

/// `mpn_sqr` runs GMP's data-independent basecase on operands of fewer
/// limbs than this; 0 where the threshold is not known.
pub(crate) fn basecase_sqr_below() -> usize {
    init();
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        dispatch::basecase_sqr_below()
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    {
        0
    }
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod dispatch;

/// Remainder of `n` modulo a 64-bit `d` (GMP `mpz_fdiv_ui`; `n` ≥ 0).
pub(crate) fn rem_u64(n: &Integer, d: u64) -> u64 {
    debug_assert!(d != 0 && *n >= 0);
    // SAFETY: `n` is a valid, initialised mpz owned by rug; mpz_fdiv_ui only
    // reads it. c_ulong is 64 bits on the LP64 targets we build for.
    unsafe { gmp_mpfr_sys::gmp::mpz_fdiv_ui(n.as_raw(), d as _) as u64 }
}

extern "C" {
    // GMP's remainder by a single limb, four limbs per step (internal but
    // exported from the static library; `mpn_mod_1` picks it only above a
    // per-CPU threshold, and otherwise runs a loop several times slower
    // at the 16-32 limbs of a DH start). `cps` receives b's normalising
    // shift and the constants B^k mod b; b ≤ B/4.
    fn __gmpn_mod_1s_4p_cps(cps: *mut gmp_mpfr_sys::gmp::limb_t, b: gmp_mpfr_sys::gmp::limb_t);
    fn __gmpn_mod_1s_4p(
        ap: *const gmp_mpfr_sys::gmp::limb_t,
        n: gmp_mpfr_sys::gmp::size_t,
        b: gmp_mpfr_sys::gmp::limb_t,
        cps: *const gmp_mpfr_sys::gmp::limb_t,
    ) -> gmp_mpfr_sys::gmp::limb_t;
}

/// The largest divisor [`rem_limb`] takes.
pub(crate) const REM_LIMB_MAX: u64 = u64::MAX / 4;

/// Remainder of `n` (≥ 0) modulo `d` in 1 ..= [`REM_LIMB_MAX`], by GMP's
/// four-limbs-per-step reduction (the sieve set-up's inner loop).
pub(crate) fn rem_limb(n: &Integer, d: u64) -> u64 {
    assert!((1..=REM_LIMB_MAX).contains(&d) && *n >= 0);
    let limbs = n.as_limbs();
    if limbs.is_empty() {
        return 0;
    }
    let mut cps = [0 as gmp_mpfr_sys::gmp::limb_t; 7];
    // SAFETY: cps has the 7 limbs mpn_mod_1s_4p_cps writes; d ≤ B/4 as it
    // requires. `limbs` is n's live limb array (n ≥ 1 limbs), read only,
    // and the divisor passed is d shifted by the count cps[1] holds, as
    // mpn_mod_1s_4p expects; it returns the unshifted remainder.
    unsafe {
        __gmpn_mod_1s_4p_cps(cps.as_mut_ptr(), d as _);
        __gmpn_mod_1s_4p(
            limbs.as_ptr(),
            limbs.len() as _,
            (d << cps[1]) as _,
            cps.as_ptr(),
        ) as u64
    }
}

/// The first lines of a generated assembly file of module `gmp::{module}`,
/// written by its `unrolled_source` and checked by its test `test`.
#[cfg(test)]
pub(crate) fn generated_header(module: &str, test: &str) -> String {
    format!(
        "// @generated by `gmp::{module}::tests::{test}`\n\
         // (PRIMEFORGE_UPDATE_ASM=1 rewrites it); do not edit. The algorithm is\n\
         // described at `gmp::{module}::unrolled_source`.\n"
    )
}

/// A generated file's look-up by limb count: `pub(super) fn name(n) ->
/// Option<ty>` with the arm `arm(n)` for each of `sizes`, under `doc`.
#[cfg(test)]
pub(crate) fn size_table(
    doc: &str,
    name: &str,
    ty: &str,
    sizes: std::ops::RangeInclusive<usize>,
    arm: impl Fn(usize) -> String,
) -> String {
    let mut s = format!(
        "/// {doc}\npub(super) fn {name}(n: usize) -> Option<{ty}> {{\n    Some(match n {{\n"
    );
    for n in sizes {
        s += &format!("        {n} => {},\n", arm(n));
    }
    s + "        _ => return None,\n    })\n}\n"
}

/// Asserts that the generated file at `path` (from the crate's root) is
/// `want`; with PRIMEFORGE_UPDATE_ASM=1 it writes `want` there first.
#[cfg(test)]
pub(crate) fn check_generated(path: &str, want: &str) {
    let full = format!("{}/{path}", env!("CARGO_MANIFEST_DIR"));
    if std::env::var("PRIMEFORGE_UPDATE_ASM").as_deref() == Ok("1") {
        std::fs::write(&full, want).expect("write the generated file");
    }
    let have = std::fs::read_to_string(&full).unwrap_or_default();
    if have != want {
        let (h, w): (Vec<&str>, Vec<&str>) = (have.lines().collect(), want.lines().collect());
        let first = h
            .iter()
            .zip(&w)
            .position(|(a, b)| a != b)
            .unwrap_or(h.len().min(w.len()));
        let show = |v: &[&str]| {
            v.iter()
                .skip(first)
                .take(3)
                .copied()
                .collect::<Vec<_>>()
                .join("\n")
        };
        panic!(
            "{path} is stale: run the test with PRIMEFORGE_UPDATE_ASM=1 (see the README's \
             'Generated code'). First difference at line {}:\n--- committed\n{}\n+++ generated\n{}",
            first + 1,
            show(&h),
            show(&w)
        );
    }
}

/// A xorshift64 stream of test words from `seed` (non-zero): operands for
/// the assembly's tests, reproducible without a seeded generator.
#[cfg(test)]
pub(crate) fn test_words(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}

#[cfg(test)]
mod tests {
    use rug::Integer;

    /// A stale generated file is reported with its first differing lines.
    #[test]
    fn a_stale_generated_file_shows_where_it_differs() {
        if std::env::var_os("PRIMEFORGE_UPDATE_ASM").is_some() {
            return; // the check would rewrite the file
        }
        let committed = std::fs::read_to_string(format!(
            "{}/src/gmp/redc/unrolled.rs",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        let mut lines: Vec<&str> = committed.lines().collect();
        lines[5] = "    changed line";
        let want = lines.join("\n") + "\n";
        let r =
            std::panic::catch_unwind(|| super::check_generated("src/gmp/redc/unrolled.rs", &want));
        let msg = r.unwrap_err();
        let msg = msg.downcast_ref::<String>().unwrap();
        assert!(
            msg.contains("line 6") && msg.contains("+++ generated\n    changed line"),
            "{msg}"
        );
    }

    #[test]
    fn rem_limb_agrees_with_fdiv_ui() {
        let mut n = Integer::from(0x9e37_79b9_7f4a_7c15u64);
        for len in 0..70u32 {
            for d in [
                1u64,
                2,
                3,
                1_000_003,
                (1 << 31) - 1,
                (1 << 40) + 15,
                997 * 1_000_003 * 1_000_033,
                super::REM_LIMB_MAX,
                super::REM_LIMB_MAX - 2,
            ] {
                assert_eq!(super::rem_limb(&n, d), super::rem_u64(&n, d), "{len} {d}");
            }
            n = n * 0x1234_5678_9abc_def1u64 + len;
        }
        assert_eq!(super::rem_limb(&Integer::new(), 7), 0);
    }

    /// With the fix active, exponentiation still agrees with a plain
    /// square-and-multiply reference on many sizes (including odd limb
    /// counts and moduli with the top limb small).
    #[test]
    fn exponentiation_agrees_with_reference() {
        super::init();
        let mut x = Integer::from(0x1234_5678_9abc_def1u64);
        for bits in [64u32, 130, 500, 1024, 1100, 1536, 2048, 3000] {
            for _ in 0..3 {
                x = (Integer::from(&x * &x) + 0x9e37_79b9u32).keep_bits(bits + 17);
                let m = Integer::from(&x >> 16u32) | 1u32;
                let base = Integer::from(&x % &m);
                let e = Integer::from(&x >> 40u32);
                let fast = base.clone().secure_pow_mod(&e, &m);
                let plain = base.clone().pow_mod(&e, &m).unwrap();
                let mut r = Integer::from(1u32);
                for i in (0..e.significant_bits()).rev() {
                    r.square_mut();
                    r %= &m;
                    if e.get_bit(i) {
                        r *= &base;
                        r %= &m;
                    }
                }
                assert_eq!(fast, r, "powm_sec, {bits} bits");
                assert_eq!(plain, r, "powm, {bits} bits");
            }
        }
    }
}
