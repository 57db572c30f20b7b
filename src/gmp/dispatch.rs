//! GMP's CPU dispatch table, completed where GMP 6.3 falls short (measured,
//! guarded).
//!
//! rug's GMP is a "fat" build: it picks assembly routines for the CPU at
//! run time through a table of function pointers (`__gmpn_cpuvec`), from
//! a list of CPU families and models fixed in 2023. Two gaps matter here.
//!
//! **CPUs GMP does not know** (AMD family 1Ah, Zen 5; Intel models after
//! Kaby Lake: Ice Lake, Sapphire/Emerald/Granite Rapids, Alder Lake and
//! later; Hygon's Zen-based CPUs). GMP leaves the whole table on its
//! generic x86-64 code: portable C for `sqr_basecase`, `mul_basecase`,
//! `redc_1`, and `addmul_1` without `mulx`. Every squaring of every
//! exponentiation then runs in C over pre-Haswell row code. Where the
//! table is exactly that generic one and the CPU has BMI2 and ADX, it is
//! filled as GMP fills it for the nearest CPU it knows: on AMD (and
//! Hygon), GMP's Zen routines plus the Zen fixes below; on Intel and
//! other vendors, GMP's own chain for Skylake (its Core 2, Nehalem, Sandy
//! Bridge, Haswell and Broadwell routines, later ones overriding earlier
//! ones, and Skylake's thresholds). Every routine put in is GMP's, with
//! the same contract; each needs at most BMI2 and ADX (with BMI1 and
//! SSSE3, which come with them), all checked.
//! As GMP does, a Pentium or Celeron brand string keeps the table as it
//! is (such parts have claimed BMI2 without having it).
//!
//! **Zen 1–4 (AMD families 17h and 19h).** GMP fills the table with Zen
//! routines for multiplication but leaves `mpn_addmul_2` and `mpn_redc_2`
//! on their portable C fallbacks, so Montgomery reduction, most of every
//! modular exponentiation, runs in C through pairs of `addmul_1` calls.
//! Those two entries are pointed at GMP's own assembly for Haswell-class
//! CPUs: `addmul_2` directly, and `redc_2` through a shim that calls
//! `redc_1` with the low limb of the inverse (both compute the same
//! Montgomery reduction; `mpn_sec_powm` and `mpn_powm` pass −m⁻¹ mod 2^128
//! to `redc_2`, whose low limb is exactly `redc_1`'s −m⁻¹ mod 2^64).
//! The `sqr_basecase` slot gets GMP's Broadwell routine (`mulx` with the
//! two carry chains of `adcx`/`adox`), faster than its Zen routine on
//! Zen 3 by a quarter at 32 limbs.
//!
//! **SQR_TOOM2_THRESHOLD.** `mpn_sec_powm` squares with `mpn_sqr_basecase`
//! only below it and falls back to a full multiplication at and above it
//! ("play it safe", says its source), and `mpn_sqr` switches to Toom,
//! which branches on operand values, at it. It is set to 33 wherever a
//! profile is applied (GMP's tuned values are 32 for Zen and Skylake, 34
//! for Broadwell): 32-limb squarings, RSA-4096's primes, use the
//! data-independent basecase everywhere, which costs ordinary squaring
//! nothing measurable at 32 limbs. [`basecase_sqr_below`] reports it, so
//! that secret squarings know when `mpn_sqr` is safe.
//!
//! (What each change bought is in docs/measurements/benchmarks-archive.md, "Design measurements"
//! and "GMP on CPUs it does not know".)
//!
//! The table is changed only when it holds exactly what we expect (GMP's
//! Zen table, or its generic one, checked slot by slot), so a different
//! GMP build, layout or CPU leaves it untouched. Our GMP is private to
//! this library (its symbols are not exported), so a host's own GMP is
//! never affected. `PRIMEFORGE_GMP_CPU` overrides the choice, as
//! `OPENSSL_ia32cap` does for OpenSSL: `gmp` keeps GMP's table, `amd` or
//! `intel` applies that profile whatever the CPU's vendor (still only
//! with BMI2 and ADX present); anything else, or unset, is automatic.

use super::sys::*;
use std::ptr::addr_of_mut;
use std::sync::atomic::{AtomicU8, Ordering};

type Limb = u64;

/// The profile [`patch`] applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Profile {
    /// GMP's table as GMP set it.
    Gmp = 0,
    /// GMP's Zen routines with the Zen fixes.
    Amd = 1,
    /// GMP's routine chain for Skylake.
    Intel = 2,
}

static PROFILE: AtomicU8 = AtomicU8::new(Profile::Gmp as u8);

/// The profile applied in this process (after [`super::init`]).
pub(super) fn profile() -> Profile {
    match PROFILE.load(Ordering::Relaxed) {
        1 => Profile::Amd,
        2 => Profile::Intel,
        _ => Profile::Gmp,
    }
}

// Slots of `struct cpuvec_t` in GMP 6.3.0 (gmp-impl.h), which lists the
// fat functions in alphabetical order, then the run-time thresholds
// (mp_size_t): mul_toom22, mul_toom33, sqr_toom2, sqr_toom3, bmod_1.
const ADD_N: usize = 0;
const ADDLSH1_N: usize = 1;
const ADDLSH2_N: usize = 2;
const ADDMUL_1: usize = 3;
const ADDMUL_2: usize = 4;
const CND_ADD_N: usize = 6;
const CND_SUB_N: usize = 7;
const COM: usize = 8;
const COPYD: usize = 9;
const COPYI: usize = 10;
const DIVREM_1: usize = 12;
const GCD_11: usize = 13;
const LSHIFT: usize = 14;
const LSHIFTC: usize = 15;
const MUL_1: usize = 25;
const MUL_BASECASE: usize = 26;
const MULLO_BASECASE: usize = 27;
const PREINV_DIVREM_1: usize = 28;
const REDC_1: usize = 30;
const REDC_2: usize = 31;
const RSHIFT: usize = 32;
const SQR_BASECASE: usize = 33;
const SUB_N: usize = 34;
const SUBLSH1_N: usize = 35;
const SUBMUL_1: usize = 36;
const MUL_TOOM22: usize = 37;
const SQR_TOOM2: usize = 39;
const SQR_TOOM3: usize = 40;
const SLOTS: usize = super::sys::CPUVEC_WORDS;

/// GMP's fat-build defaults (x86_64/fat/gmp-mparam.h), which its generic
/// table carries: mul_toom22, mul_toom33, sqr_toom2, sqr_toom3, bmod_1.
const GENERIC_THRESHOLDS: [usize; 5] = [20, 130, 30, 200, 20];
/// GMP's tuned Zen SQR_TOOM2_THRESHOLD.
const ZEN_SQR_TOOM2: usize = 32;
/// Ours, wherever a profile is applied (see the module docs).
const OUR_SQR_TOOM2: usize = 33;
/// Thresholds of GMP's x86_64/zen and x86_64/skylake gmp-mparam.h, with
/// sqr_toom2 raised to ours.
const ZEN_THRESHOLDS: [usize; 5] = [16, 107, OUR_SQR_TOOM2, 114, 22];
const SKYLAKE_THRESHOLDS: [usize; 5] = [26, 73, OUR_SQR_TOOM2, 117, 20];

/// `mpn_redc_2` contract on top of the assembly `mpn_redc_1`.
unsafe extern "C" fn redc_2_via_redc_1(
    rp: *mut Limb,
    up: *mut Limb,
    mp: *const Limb,
    n: isize,
    mip: *const Limb,
) -> Limb {
    // SAFETY: same buffers as GMP passed to redc_2; mip has 2 limbs.
    unsafe { __gmpn_redc_1_coreihwl(rp, up, mp, n, *mip) }
}

fn addr(f: unsafe extern "C" fn()) -> usize {
    f as usize
}

/// The slots the AMD profile writes: GMP's Zen routines (what GMP itself
/// installs on Zen 1–4), then the Zen fixes.
fn amd_slots() -> Vec<(usize, usize)> {
    vec![
        (ADDLSH1_N, addr(__gmpn_addlsh1_n_zen)),
        (ADDMUL_1, addr(__gmpn_addmul_1_zen)),
        (COM, addr(__gmpn_com_zen)),
        (COPYD, addr(__gmpn_copyd_zen)),
        (COPYI, addr(__gmpn_copyi_zen)),
        (GCD_11, addr(__gmpn_gcd_11_zen)),
        (LSHIFT, addr(__gmpn_lshift_zen)),
        (LSHIFTC, addr(__gmpn_lshiftc_zen)),
        (MUL_1, addr(__gmpn_mul_1_zen)),
        (MUL_BASECASE, addr(__gmpn_mul_basecase_zen)),
        (MULLO_BASECASE, addr(__gmpn_mullo_basecase_zen)),
        (RSHIFT, addr(__gmpn_rshift_zen)),
        (SUBLSH1_N, addr(__gmpn_sublsh1_n_zen)),
        (SUBMUL_1, addr(__gmpn_submul_1_zen)),
        // The fixes.
        (ADDMUL_2, addr(__gmpn_addmul_2_coreihwl)),
        (REDC_2, redc_2_via_redc_1 as *const () as usize),
        (SQR_BASECASE, addr(__gmpn_sqr_basecase_coreibwl)),
    ]
}

/// The slots the Intel profile writes: for each slot, the routine of the
/// latest of GMP's Core 2 → Nehalem → Sandy Bridge → Haswell → Broadwell
/// directories that has one, which is what GMP's own set-up for Skylake
/// leaves in the table (Nehalem's three are all overridden later).
fn intel_slots() -> Vec<(usize, usize)> {
    vec![
        (ADD_N, addr(__gmpn_add_n_coreihwl)),
        (ADDLSH1_N, addr(__gmpn_addlsh1_n_coreisbr)),
        (ADDLSH2_N, addr(__gmpn_addlsh2_n_coreisbr)),
        (
            ADDMUL_1,
            super::sys::__gmpn_addmul_1_coreibwl as *const () as usize,
        ),
        (ADDMUL_2, addr(__gmpn_addmul_2_coreihwl)),
        (CND_ADD_N, addr(__gmpn_cnd_add_n_coreisbr)),
        (CND_SUB_N, addr(__gmpn_cnd_sub_n_coreisbr)),
        (COM, addr(__gmpn_com_core2)),
        (COPYD, addr(__gmpn_copyd_core2)),
        (COPYI, addr(__gmpn_copyi_core2)),
        (DIVREM_1, addr(__gmpn_divrem_1_coreisbr)),
        (GCD_11, addr(__gmpn_gcd_11_coreisbr)),
        (LSHIFT, addr(__gmpn_lshift_coreisbr)),
        (LSHIFTC, addr(__gmpn_lshiftc_coreisbr)),
        (MUL_1, addr(__gmpn_mul_1_coreibwl)),
        (MUL_BASECASE, addr(__gmpn_mul_basecase_coreibwl)),
        (MULLO_BASECASE, addr(__gmpn_mullo_basecase_coreibwl)),
        (PREINV_DIVREM_1, addr(__gmpn_preinv_divrem_1_coreisbr)),
        (REDC_1, __gmpn_redc_1_coreihwl as *const () as usize),
        (RSHIFT, addr(__gmpn_rshift_coreisbr)),
        (SQR_BASECASE, addr(__gmpn_sqr_basecase_coreibwl)),
        (SUB_N, addr(__gmpn_sub_n_coreihwl)),
        (SUBLSH1_N, addr(__gmpn_sublsh1_n_core2)),
        (SUBMUL_1, addr(__gmpn_submul_1_coreihwl)),
    ]
}

/// What GMP put in the table, as far as the choice depends on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Found {
    /// GMP's Zen 1–4 table, its Zen fixes not yet applied.
    Zen,
    /// GMP's generic table: it did not recognise the CPU.
    Generic,
    /// Anything else of GMP 6.3's layout: a CPU GMP knows.
    Other,
    /// A table whose layout is not GMP 6.3's ([`layout_ok`] fails): never
    /// patched.
    Foreign,
}

/// The CPU, as far as the choice depends on it.
#[derive(Clone, Copy, Debug)]
struct Cpu {
    amd: bool,
    bmi2_adx: bool,
    pentium_or_celeron: bool,
}

/// Whether `t` has the shape of GMP 6.3's `struct cpuvec_t`, whose
/// indices this module hard-codes: 37 function pointers (non-null, not
/// small numbers), then 5 thresholds (small numbers). A GMP with another
/// layout fails it, and is left alone whatever `PRIMEFORGE_GMP_CPU` says.
fn layout_ok(t: &[usize; SLOTS]) -> bool {
    const SMALL: usize = 1 << 16;
    t[..MUL_TOOM22].iter().all(|&f| f >= SMALL) && t[MUL_TOOM22..].iter().all(|&v| v < SMALL)
}

/// The profile for a table and a CPU, with `PRIMEFORGE_GMP_CPU`'s value:
/// a profile is forced only onto a table of the expected layout.
fn choose(found: Found, cpu: Cpu, forced: Option<&str>) -> Profile {
    if !cpu.bmi2_adx || cpu.pentium_or_celeron || found == Found::Foreign {
        return Profile::Gmp;
    }
    match forced {
        Some("gmp") => return Profile::Gmp,
        Some("amd") => return Profile::Amd,
        Some("intel") => return Profile::Intel,
        _ => {}
    }
    match found {
        Found::Zen => Profile::Amd,
        Found::Generic if cpu.amd => Profile::Amd,
        Found::Generic => Profile::Intel,
        Found::Other | Found::Foreign => Profile::Gmp,
    }
}

fn classify(t: &[usize; SLOTS]) -> Found {
    if !layout_ok(t) {
        return Found::Foreign;
    }
    let zen = t[ADDMUL_2] == addr(__gmpn_addmul_2_fat)
        && t[REDC_2] == addr(__gmpn_redc_2_fat)
        && t[SQR_BASECASE] == addr(__gmpn_sqr_basecase_zen)
        && t[MUL_BASECASE] == addr(__gmpn_mul_basecase_zen)
        && t[SQR_TOOM2] == ZEN_SQR_TOOM2
        && t[SQR_TOOM3] > OUR_SQR_TOOM2;
    let generic = t[ADDMUL_1] == addr(__gmpn_addmul_1_x86_64)
        && t[ADDMUL_2] == addr(__gmpn_addmul_2_fat)
        && t[MUL_BASECASE] == addr(__gmpn_mul_basecase_fat)
        && t[REDC_1] == addr(__gmpn_redc_1_fat)
        && t[REDC_2] == addr(__gmpn_redc_2_fat)
        && t[SQR_BASECASE] == addr(__gmpn_sqr_basecase_fat)
        && t[MUL_TOOM22..] == GENERIC_THRESHOLDS;
    if zen {
        Found::Zen
    } else if generic {
        Found::Generic
    } else {
        Found::Other
    }
}

#[cfg(target_arch = "x86_64")]
fn this_cpu() -> Cpu {
    use std::arch::x86_64::__cpuid;
    // `__cpuid` is an unsafe fn before Rust 1.87 (our MSRV is 1.85) and
    // safe from then on: hence the block and the allow.
    #[allow(unused_unsafe)]
    // SAFETY: CPUID exists on every x86-64 CPU; leaf 0x8000_0000 reports
    // the highest extended leaf, and the brand leaves are read only when
    // present.
    let (vendor, brand) = unsafe {
        let l0 = __cpuid(0);
        let mut vendor = [0u8; 12];
        vendor[..4].copy_from_slice(&l0.ebx.to_le_bytes());
        vendor[4..8].copy_from_slice(&l0.edx.to_le_bytes());
        vendor[8..].copy_from_slice(&l0.ecx.to_le_bytes());
        let mut brand = Vec::with_capacity(48);
        if __cpuid(0x8000_0000).eax >= 0x8000_0004 {
            for leaf in 0x8000_0002..=0x8000_0004u32 {
                let r = __cpuid(leaf);
                for w in [r.eax, r.ebx, r.ecx, r.edx] {
                    brand.extend_from_slice(&w.to_le_bytes());
                }
            }
        }
        (vendor, brand)
    };
    let brand = String::from_utf8_lossy(&brand);
    Cpu {
        amd: &vendor == b"AuthenticAMD" || &vendor == b"HygonGenuine",
        // The routines put in use `mulx`/`shlx` (BMI2), `adcx`/`adox`
        // (ADX), `tzcnt` (BMI1, Zen's gcd_11) and `palignr` (SSSE3, Core 2's
        // copies); every CPU with the first two has the others, but all four
        // are checked.
        bmi2_adx: std::arch::is_x86_feature_detected!("bmi2")
            && std::arch::is_x86_feature_detected!("adx")
            && std::arch::is_x86_feature_detected!("bmi1")
            && std::arch::is_x86_feature_detected!("ssse3"),
        pentium_or_celeron: brand.contains("Pentium") || brand.contains("Celeron"),
    }
}

pub(super) fn patch() {
    let cpu = this_cpu();
    if !cpu.bmi2_adx {
        return;
    }
    let forced = std::env::var("PRIMEFORGE_GMP_CPU").ok();
    // SAFETY: __gmpn_cpuvec_init fills GMP's dispatch table (idempotent).
    // We read the table and write some of its aligned word slots, once,
    // under `Once`, before primeforge creates any GMP object, and only if
    // it holds what `classify` expects (or the caller forced a profile);
    // the replacements are GMP's own routines with the same contracts,
    // needing at most BMI2 and ADX, which were checked (module docs).
    unsafe {
        __gmpn_cpuvec_init();
        let table = addr_of_mut!(__gmpn_cpuvec) as *mut usize;
        let mut now = [0usize; SLOTS];
        for (i, v) in now.iter_mut().enumerate() {
            *v = std::ptr::read_volatile(table.add(i));
        }
        let profile = choose(classify(&now), cpu, forced.as_deref());
        let (slots, thresholds) = match profile {
            Profile::Gmp => return,
            Profile::Amd => (amd_slots(), ZEN_THRESHOLDS),
            Profile::Intel => (intel_slots(), SKYLAKE_THRESHOLDS),
        };
        for (i, f) in slots {
            std::ptr::write_volatile(table.add(i), f);
        }
        for (i, v) in thresholds.into_iter().enumerate() {
            std::ptr::write_volatile(table.add(MUL_TOOM22 + i), v);
        }
        PROFILE.store(profile as u8, Ordering::Relaxed);
    }
}

/// Squarings below this many limbs run GMP's data-independent basecase in
/// `mpn_sqr` (the threshold a profile set); 0 where it is not known.
pub(super) fn basecase_sqr_below() -> usize {
    match profile() {
        Profile::Gmp => 0,
        Profile::Amd | Profile::Intel => OUR_SQR_TOOM2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODERN: Cpu = Cpu {
        amd: false,
        bmi2_adx: true,
        pentium_or_celeron: false,
    };

    #[test]
    fn the_choice_follows_the_table_the_vendor_and_the_override() {
        let amd = Cpu {
            amd: true,
            ..MODERN
        };
        let old = Cpu {
            bmi2_adx: false,
            ..amd
        };
        let celeron = Cpu {
            pentium_or_celeron: true,
            ..MODERN
        };
        // GMP knew a Zen 1–4: the fixes; an unknown AMD (Zen 5): the AMD
        // profile; an unknown Intel: Skylake's chain; a known CPU: GMP's.
        assert_eq!(choose(Found::Zen, amd, None), Profile::Amd);
        assert_eq!(choose(Found::Generic, amd, None), Profile::Amd);
        assert_eq!(choose(Found::Generic, MODERN, None), Profile::Intel);
        assert_eq!(choose(Found::Other, MODERN, None), Profile::Gmp);
        assert_eq!(choose(Found::Other, amd, None), Profile::Gmp);
        // Without BMI2 and ADX, or on a Pentium/Celeron, nothing is applied,
        // whatever the override says.
        for found in [Found::Zen, Found::Generic, Found::Other] {
            for forced in [None, Some("amd"), Some("intel"), Some("gmp")] {
                assert_eq!(choose(found, old, forced), Profile::Gmp);
                assert_eq!(choose(found, celeron, forced), Profile::Gmp);
            }
        }
        // The override wins otherwise; unknown values mean automatic.
        assert_eq!(choose(Found::Generic, amd, Some("gmp")), Profile::Gmp);
        assert_eq!(choose(Found::Generic, amd, Some("intel")), Profile::Intel);
        assert_eq!(choose(Found::Other, MODERN, Some("amd")), Profile::Amd);
        assert_eq!(choose(Found::Generic, amd, Some("zen5")), Profile::Amd);
        // A table of another layout is never patched, forced or not.
        for forced in [None, Some("amd"), Some("intel")] {
            assert_eq!(choose(Found::Foreign, amd, forced), Profile::Gmp);
            assert_eq!(choose(Found::Foreign, MODERN, forced), Profile::Gmp);
        }
    }

    /// The layout check: GMP's own table passes; tables whose pointers and
    /// thresholds sit elsewhere (another GMP's struct) fail and are
    /// classified as foreign.
    #[test]
    fn a_table_of_another_layout_is_foreign() {
        super::super::init();
        // SAFETY: reads aligned words of GMP's table, filled by init().
        let table: [usize; SLOTS] = unsafe {
            let t = addr_of_mut!(__gmpn_cpuvec) as *const usize;
            std::array::from_fn(|i| std::ptr::read_volatile(t.add(i)))
        };
        assert!(layout_ok(&table), "GMP's own table: {table:x?}");
        // One slot more before the thresholds, or one fewer.
        let mut shifted = [0usize; SLOTS];
        shifted[1..].copy_from_slice(&table[..SLOTS - 1]);
        shifted[0] = table[0];
        assert_eq!(classify(&shifted), Found::Foreign);
        let mut fewer = [0usize; SLOTS];
        fewer[..SLOTS - 1].copy_from_slice(&table[1..]);
        assert_eq!(classify(&fewer), Found::Foreign);
    }

    /// No CPU with BMI2 and ADX is left on GMP's generic table (on Zen 5,
    /// GMP 6.3 left every squaring in portable C), and where a profile was
    /// applied the table holds exactly its routines and thresholds.
    #[test]
    fn the_table_holds_what_the_profile_says() {
        super::super::init();
        let cpu = this_cpu();
        // SAFETY: reads aligned words of GMP's table, filled by init().
        let table: [usize; SLOTS] = unsafe {
            let t = addr_of_mut!(__gmpn_cpuvec) as *const usize;
            std::array::from_fn(|i| std::ptr::read_volatile(t.add(i)))
        };
        let forced = std::env::var("PRIMEFORGE_GMP_CPU").ok();
        let (slots, thresholds) = match profile() {
            Profile::Gmp => {
                if cpu.bmi2_adx && !cpu.pentium_or_celeron && forced.as_deref() != Some("gmp") {
                    assert_eq!(
                        classify(&table),
                        Found::Other,
                        "{cpu:?}: GMP's table left as found"
                    );
                }
                return;
            }
            Profile::Amd => (amd_slots(), ZEN_THRESHOLDS),
            Profile::Intel => (intel_slots(), SKYLAKE_THRESHOLDS),
        };
        assert!(cpu.bmi2_adx);
        for (i, f) in slots {
            assert_eq!(table[i], f, "slot {i}");
        }
        assert_eq!(table[MUL_TOOM22..], thresholds);
        assert_eq!(basecase_sqr_below(), 33);
    }
}
