//! DH parameter generation, named groups, export, components and checks.

use super::buffer::buffer_from;
use super::buffer::pf_buffer;
use super::detail::invalid;
use super::job::{pf_job, start_job};
use super::options::{check_options, pf_options, CheckedOptions};
use super::{guard_generate, guard_secret, guard_value, pf_status, write_out};
use crate::dh::fips186::{self, GenMethod, Generator, GeneratorCheck, HashFn, SeedCheck};
use crate::dh::{self, check, named::Group, DhParams, DhPart};
use crate::encode::DhFormat;
use crate::job::Work;
use crate::secure::SecureBuf;

/// Diffie-Hellman parameters (p, q, g). Opaque; public values.
pub struct pf_dh_params {
    inner: DhParams,
}

/// Components of DH parameters, passed to `pf_dh_component` as `uint32_t`.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum pf_dh_part {
    /// The safe prime p.
    PF_DH_P = 1,
    /// q = (p − 1) / 2, the order of the subgroup.
    PF_DH_Q = 2,
    /// The generator g.
    PF_DH_G = 3,
}

/// Named groups for `pf_dh_named`, passed as `uint32_t`. All have g = 2
/// and q = (p − 1)/2 prime. The RFC 7919 FFDHE groups are what TLS 1.3
/// and RFC 7919-aware TLS 1.2 peers negotiate: for most servers a named
/// group is the right choice, generated parameters are for those who
/// need their own.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum pf_dh_group {
    /// RFC 7919 ffdhe2048.
    PF_DH_FFDHE2048 = 1,
    /// RFC 7919 ffdhe3072.
    PF_DH_FFDHE3072 = 2,
    /// RFC 7919 ffdhe4096.
    PF_DH_FFDHE4096 = 3,
    /// RFC 7919 ffdhe6144.
    PF_DH_FFDHE6144 = 4,
    /// RFC 7919 ffdhe8192.
    PF_DH_FFDHE8192 = 5,
    /// RFC 3526 MODP group 14.
    PF_DH_MODP2048 = 6,
    /// RFC 3526 MODP group 15.
    PF_DH_MODP3072 = 7,
    /// RFC 3526 MODP group 16.
    PF_DH_MODP4096 = 8,
    /// RFC 3526 MODP group 17.
    PF_DH_MODP6144 = 9,
    /// RFC 3526 MODP group 18.
    PF_DH_MODP8192 = 10,
}

/// Flag for `pf_dh_generate_ex`: with g = 2, generate the legacy form
/// p ≡ 11 (mod 24) that OpenSSL 1.1 and BoringSSL's DH_check expect (g then
/// generates the whole group of order 2q) instead of p ≡ 23 (mod 24).
pub const PF_DH_FLAG_LEGACY_G2: u32 = 0x1;

/// Flag for `pf_dh_generate_ex`: make parameters that X9.42 can carry, with
/// g generating the subgroup of prime order q (g a quadratic residue mod
/// p). Needed for `PF_FORMAT_X942_*` export with a generator other than 2,
/// 3, 4 or 5 (those are residues by their congruence anyway); refused
/// with `PF_DH_FLAG_LEGACY_G2`, which makes 2 a non-residue.
pub const PF_DH_FLAG_X942: u32 = 0x2;

/// `pf_dh_check` problem bit: p is not prime (same value as OpenSSL's
/// DH_CHECK_P_NOT_PRIME).
pub const PF_DH_CHECK_P_NOT_PRIME: u32 = 0x01;
/// Problem bit: p is prime but (p − 1)/2 is not (checked when q is absent).
pub const PF_DH_CHECK_P_NOT_SAFE_PRIME: u32 = 0x02;
/// Problem bit: g is outside 2 … p − 2, or q is given and g^q ≢ 1 (mod p).
pub const PF_DH_CHECK_NOT_SUITABLE_GENERATOR: u32 = 0x08;
/// Problem bit: q is given but not prime.
pub const PF_DH_CHECK_Q_NOT_PRIME: u32 = 0x10;
/// Problem bit: q is given but does not divide p − 1.
pub const PF_DH_CHECK_INVALID_Q: u32 = 0x20;
/// Problem bit: p has fewer than 512 bits.
pub const PF_DH_CHECK_MODULUS_TOO_SMALL: u32 = 0x80;
/// Problem bit: p has more than 16384 bits; nothing else was checked.
pub const PF_DH_CHECK_MODULUS_TOO_LARGE: u32 = 0x100;
/// X9.42's j is given but is not (p − 1)/q (OpenSSL's `DH_CHECK_INVALID_J_VALUE`).
pub const PF_DH_CHECK_INVALID_J: u32 = 0x40;
/// q is given but has fewer than 160 bits (FIPS 186-4's smallest subgroup):
/// a small subgroup protects nothing. Not one of OpenSSL's bits (OpenSSL
/// 3.0 accepts q = 11).
pub const PF_DH_CHECK_Q_TOO_SMALL: u32 = 0x10000;
/// `pf_dh_check` problem bit: the parameters carry a FIPS 186-4 seed and
/// counter (X9.42 validationParms) that do not give their p and q, by
/// FIPS 186-4 A.1.1.3 with any SHA-1 or SHA-2 hash nor by FIPS 186-2 as
/// OpenSSL makes its default X9.42 parameters (not an OpenSSL bit:
/// OpenSSL 3's DH check ignores the seed). Added after 0.2.0.
pub const PF_DH_CHECK_SEED_INVALID: u32 = 0x20000;

/// `pf_dh_check_ex` verification bit: p and q were re-derived from the
/// parameters' seed and counter by FIPS 186-4 A.1.1.3.
pub const PF_DH_VERIFIED_SEED: u32 = 0x1;
/// `pf_dh_check_ex` verification bit: p and q were re-derived from the
/// seed and counter by FIPS 186-2's procedure as OpenSSL 3 runs it (its
/// default for `openssl genpkey -genparam -algorithm DHX`), not FIPS 186-4.
pub const PF_DH_VERIFIED_SEED_FIPS186_2: u32 = 0x2;
/// `pf_dh_check_ex` verification bit: g is the canonical generator of the
/// seed (FIPS 186-4 A.2.4; every index 0 … 255 is tried).
pub const PF_DH_VERIFIED_G_CANONICAL: u32 = 0x4;
/// `pf_dh_check_ex` verification bit: q has a FIPS 186-4 size for p and
/// g generates the subgroup of order q (A.2.2).
pub const PF_DH_VERIFIED_G_ORDER: u32 = 0x8;

// The C constants mirror the core's; a mismatch fails to compile.
const _: () = {
    assert!(PF_DH_CHECK_P_NOT_PRIME == check::P_NOT_PRIME);
    assert!(PF_DH_CHECK_P_NOT_SAFE_PRIME == check::P_NOT_SAFE_PRIME);
    assert!(PF_DH_CHECK_NOT_SUITABLE_GENERATOR == check::NOT_SUITABLE_GENERATOR);
    assert!(PF_DH_CHECK_Q_NOT_PRIME == check::Q_NOT_PRIME);
    assert!(PF_DH_CHECK_INVALID_Q == check::INVALID_Q);
    assert!(PF_DH_CHECK_MODULUS_TOO_SMALL == check::MODULUS_TOO_SMALL);
    assert!(PF_DH_CHECK_MODULUS_TOO_LARGE == check::MODULUS_TOO_LARGE);
    assert!(PF_DH_CHECK_INVALID_J == check::INVALID_J);
    assert!(PF_DH_CHECK_Q_TOO_SMALL == check::Q_TOO_SMALL);
    assert!(PF_DH_CHECK_SEED_INVALID == check::SEED_INVALID);
    assert!(PF_DH_FLAG_LEGACY_G2 == dh::FLAG_LEGACY_G2);
    assert!(PF_DH_FLAG_X942 == dh::FLAG_X942);
};

pub(super) fn boxed(params: DhParams) -> *mut pf_dh_params {
    Box::into_raw(Box::new(pf_dh_params { inner: params }))
}

/// A generation's outcome for the caller: the counters into
/// `*opts->stats` and the parameters into `*out` on success, the status.
///
/// # Safety
/// `out` is not NULL and writable.
unsafe fn deliver(
    checked: &CheckedOptions<'_>,
    result: crate::Result<(DhParams, crate::prime::Stats)>,
    out: *mut *mut pf_dh_params,
) -> pf_status {
    match result {
        Ok((params, stats)) => {
            checked.write_stats(&stats);
            // SAFETY: the caller's contract.
            unsafe { write_out(out, boxed(params)) };
            pf_status::PF_OK
        }
        Err(e) => e.into(),
    }
}

/// Generates DH parameters: a safe prime p = 2q + 1 of exactly `bits` bits
/// (256 to 16384) for generator `generator` (2 to 2^31 − 1; 2 is the usual
/// choice), with fresh OS randomness on `threads` threads (0 = all cores,
/// at most 1024). Same as `pf_dh_generate_ex` with flags 0 and default
/// options.
///
/// On success `*out` receives parameters the caller owns (free with
/// `pf_dh_free`); on failure it is untouched. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn pf_dh_generate(
    bits: u32,
    generator: u32,
    threads: u32,
    out: *mut *mut pf_dh_params,
) -> pf_status {
    let mut opts = super::options::pf_options_default();
    opts.threads = threads;
    // SAFETY: the caller's `out` contract is pf_dh_generate_ex's.
    unsafe { pf_dh_generate_ex(bits, generator, 0, &opts, out) }
}

/// Generates DH parameters (see `pf_dh_generate`) with `flags` (0, or an OR
/// of `PF_DH_FLAG_LEGACY_G2` and `PF_DH_FLAG_X942`, not both) and options.
///
/// The prime follows the generator's convention: g = 2 → p ≡ 23 (mod 24),
/// so that 2 generates the subgroup of prime order q (OpenSSL 3); with
/// `PF_DH_FLAG_LEGACY_G2`, p ≡ 11 (mod 24) (OpenSSL 1.1, BoringSSL);
/// g = 5 → p ≡ 59 (mod 60), order q; any other g → p ≡ 11 (mod 12).
/// q is proven prime to within 2^-128 by Miller–Rabin plus a strong Lucas
/// test, and p is then proven prime by Pocklington's criterion.
///
/// `opts` may be NULL (defaults). With `opts->seed` set, the output is a
/// deterministic function of the seed and the arguments, byte-identical at
/// any thread count. The progress callback, cancellation and
/// `opts->stats` work as for `pf_rsa_generate_ex` (candidates are positions
/// of the sieve, survivors the positions that pass it; a strong Lucas test
/// counts as one exponentiation).
///
/// On success `*out` receives parameters the caller owns (free with
/// `pf_dh_free`); on failure `*out` and `*opts->stats` are untouched.
/// Returns `PF_ERR_NULL_ARGUMENT`, `PF_ERR_INVALID_ARGUMENT` (bits,
/// generator 0 or 1 or above 2^31 − 1, unknown flags, the legacy flag with
/// g ≠ 2, threads, seed length, struct_size), `PF_ERR_UNSUPPORTED`,
/// `PF_ERR_CANCELLED`, `PF_ERR_ENTROPY`, `PF_ERR_THREADS`,
/// `PF_ERR_NO_MEMORY`, `PF_ERR_INTERNAL`. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn pf_dh_generate_ex(
    bits: u32,
    generator: u32,
    flags: u32,
    opts: *const pf_options,
    out: *mut *mut pf_dh_params,
) -> pf_status {
    guard_generate(|| {
        // SAFETY: documented contract of `opts`.
        let (checked, request) = match unsafe { dh_call(bits, generator, flags, opts, out) } {
            Ok(c) => c,
            Err(st) => return st,
        };
        let result = checked.with_core(|o| dh::generate_request(&request, o));
        // SAFETY: `out` checked for NULL.
        unsafe { deliver(&checked, result, out) }
    })
}

/// Hash functions of FIPS 186-4 domain parameters (`pf_dh_fips186.hash`,
/// `pf_dh_fips186_info`), passed as `uint32_t`. Added after 0.2.0.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum pf_hash {
    /// SHA-1: read and checked only (OpenSSL makes 1024/160 parameters
    /// with it); generation refuses it.
    PF_HASH_SHA1 = 1,
    /// SHA-224.
    PF_HASH_SHA224 = 2,
    /// SHA-256.
    PF_HASH_SHA256 = 3,
    /// SHA-384.
    PF_HASH_SHA384 = 4,
    /// SHA-512.
    PF_HASH_SHA512 = 5,
    /// SHA-512/224.
    PF_HASH_SHA512_224 = 6,
    /// SHA-512/256.
    PF_HASH_SHA512_256 = 7,
}

c_enum_from_u32!(pf_hash {
    PF_HASH_SHA1,
    PF_HASH_SHA224,
    PF_HASH_SHA256,
    PF_HASH_SHA384,
    PF_HASH_SHA512,
    PF_HASH_SHA512_224,
    PF_HASH_SHA512_256,
});

/// The core's hash for a `pf_hash` value.
fn hash_fn(v: u32) -> Result<HashFn, pf_status> {
    use pf_hash::*;
    Ok(match pf_hash::try_from(v)? {
        PF_HASH_SHA1 => HashFn::Sha1,
        PF_HASH_SHA224 => HashFn::Sha224,
        PF_HASH_SHA256 => HashFn::Sha256,
        PF_HASH_SHA384 => HashFn::Sha384,
        PF_HASH_SHA512 => HashFn::Sha512,
        PF_HASH_SHA512_224 => HashFn::Sha512_224,
        PF_HASH_SHA512_256 => HashFn::Sha512_256,
    })
}

/// The `pf_hash` value of a core hash.
fn pf_hash_value(h: HashFn) -> u32 {
    use pf_hash::*;
    (match h {
        HashFn::Sha1 => PF_HASH_SHA1,
        HashFn::Sha224 => PF_HASH_SHA224,
        HashFn::Sha256 => PF_HASH_SHA256,
        HashFn::Sha384 => PF_HASH_SHA384,
        HashFn::Sha512 => PF_HASH_SHA512,
        HashFn::Sha512_224 => PF_HASH_SHA512_224,
        HashFn::Sha512_256 => PF_HASH_SHA512_256,
    }) as u32
}

/// What FIPS 186-4 domain parameters to make (`pf_dh_generate_fips186`):
/// a prime q of `qbits` dividing p − 1 for a prime p of `pbits`, both
/// derived from a seed (A.1.1.2), and g. Initialise with
/// `pf_dh_fips186_default` and change what you need. Added after 0.2.0.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct pf_dh_fips186 {
    /// `sizeof(pf_dh_fips186)`, set by `pf_dh_fips186_default`.
    pub struct_size: u32,
    /// Bits of p: 1024, 2048 or 3072.
    pub pbits: u32,
    /// Bits of q: 160 (p of 1024), 224 or 256 (2048), 256 (3072); 0 picks
    /// OpenSSL's choice, 160, 224 and 256.
    pub qbits: u32,
    /// A `pf_hash` of at least `qbits` bits other than SHA-1; 0 picks
    /// SHA-224 for q of 224 bits and SHA-256 otherwise (what OpenSSL
    /// assumes for 224 and 256 when it checks parameters from a file).
    pub hash: u32,
    /// 0 … 255: g is the canonical generator of this index (A.2.3),
    /// verifiable from the seed; −1: g = h^((p−1)/q) for the smallest
    /// h ≥ 2 (A.2.1), as OpenSSL makes it without an index. Default 1.
    pub gindex: i32,
    /// NULL: the domain parameter seeds are drawn from the generation's
    /// seeded stream (`pf_options.seed`, or the OS), as many as needed.
    /// Otherwise `seed_len` bytes (at least qbits/8, at most 128) of one
    /// domain_parameter_seed to run A.1.1.2 from: the call fails with
    /// `PF_ERR_INVALID_ARGUMENT` when that seed gives no prime q or no
    /// counter gives a prime p (what a validation system's "generate from
    /// this seed" test asks). Copied during the call.
    pub seed: *const u8,
    /// Length of `seed` in bytes.
    pub seed_len: usize,
}

/// Returns a request for FIPS 186-4 parameters with p of `pbits` bits and
/// every other field at its default (`struct_size` set, qbits 0, hash 0,
/// gindex 1, no seed). `pbits` is checked by `pf_dh_generate_fips186`.
/// Thread-safe.
#[no_mangle]
pub extern "C" fn pf_dh_fips186_default(pbits: u32) -> pf_dh_fips186 {
    pf_dh_fips186 {
        struct_size: std::mem::size_of::<pf_dh_fips186>() as u32,
        pbits,
        qbits: 0,
        hash: 0,
        gindex: fips186::DEFAULT_GINDEX as i32,
        seed: std::ptr::null(),
        seed_len: 0,
    }
}

/// The core request for a caller's `pf_dh_fips186`.
///
/// # Safety
/// `req` points to a readable `pf_dh_fips186` whose `seed` is NULL or points
/// to `seed_len` readable bytes.
unsafe fn fips186_request(req: &pf_dh_fips186) -> Result<fips186::Request, pf_status> {
    if req.struct_size as usize != std::mem::size_of::<pf_dh_fips186>() {
        return Err(invalid(
            "pf_dh_fips186.struct_size is not sizeof(pf_dh_fips186): initialise with pf_dh_fips186_default()",
        ));
    }
    let hash = match req.hash {
        0 => None,
        v => Some(hash_fn(v).map_err(|_| invalid("pf_dh_fips186.hash: unknown pf_hash value"))?),
    };
    let method = match req.gindex {
        -1 => GenMethod::Unverifiable,
        i @ 0..=255 => GenMethod::Canonical(i as u8),
        _ => {
            return Err(invalid(
                "pf_dh_fips186.gindex: 0 to 255, or -1 for A.2.1's generator",
            ))
        }
    };
    let mut r = fips186::Request::new(req.pbits, req.qbits, hash)
        .map_err(pf_status::from)?
        .with_generator(method);
    if !req.seed.is_null() || req.seed_len > 0 {
        if req.seed_len == 0 {
            return Err(invalid("pf_dh_fips186.seed_len is 0 with a seed"));
        }
        // SAFETY: the caller's contract for `seed`.
        let seed = unsafe { super::input(req.seed, req.seed_len) }?;
        r = r.with_domain_seed(seed).map_err(pf_status::from)?;
    }
    Ok(r)
}

/// Generates FIPS 186-4 domain parameters (DSA, and X9.42 DH as SP 800-56A
/// uses them): primes p and q derived from a domain parameter seed by
/// FIPS 186-4 A.1.1.2 with a SHA-2 hash, and g by A.2.3 (canonical, from
/// the seed and `req->gindex`) or A.2.1 — what `openssl genpkey -genparam
/// -algorithm DHX` and `openssl dsaparam` make, on `opts->threads`
/// threads. For one seed, the counters are tested on every thread and the
/// first that gives a prime wins, as A.1.1.3 requires: with `opts->seed`
/// set the output is a deterministic function of the seed and `req`,
/// identical at any thread count. Primality: trial division, Miller–Rabin
/// to base 2, the rounds of FIPS 186-4 Table C.1 with random bases, and a
/// strong Lucas test.
///
/// Export with `PF_FORMAT_X942_PEM` / `_DER` (the seed and counter go into
/// validationParms) or `PF_FORMAT_DSA_PEM` / `_DER` (no place for them:
/// read them with `pf_dh_fips186_info`). `req` must not be NULL; `opts`
/// may be (defaults); `opts->flags` takes `pf_options_flag` bits only.
/// Progress, cancellation and `opts->stats` work as for
/// `pf_dh_generate_ex` (candidates are counters tried, q candidates
/// included).
///
/// On success `*out` receives parameters the caller owns (free with
/// `pf_dh_free`); on failure `*out` and `*opts->stats` are untouched.
/// Returns `PF_ERR_NULL_ARGUMENT`, `PF_ERR_INVALID_ARGUMENT` (sizes,
/// hash, gindex, struct_size, seed; a caller's domain seed that gives no
/// parameters), `PF_ERR_CANCELLED`, `PF_ERR_ENTROPY`, `PF_ERR_THREADS`,
/// `PF_ERR_NO_MEMORY`, `PF_ERR_INTERNAL`. Thread-safe. Added after 0.2.0.
#[no_mangle]
pub unsafe extern "C" fn pf_dh_generate_fips186(
    req: *const pf_dh_fips186,
    opts: *const pf_options,
    out: *mut *mut pf_dh_params,
) -> pf_status {
    guard_generate(|| {
        if req.is_null() || out.is_null() {
            return pf_status::PF_ERR_NULL_ARGUMENT;
        }
        // SAFETY: `req` is not NULL; the caller's contract for the rest.
        let request = match unsafe { fips186_request(&*req) } {
            Ok(r) => r,
            Err(st) => return st,
        };
        // SAFETY: documented contract of `opts`.
        let checked = match unsafe { check_options(opts) } {
            Ok(c) => c,
            Err(st) => return st,
        };
        if let Err(st) = dh_flags(&checked) {
            return st;
        }
        let result = checked.with_core(|o| fips186::generate(&request, o));
        // SAFETY: `out` checked for NULL.
        unsafe { deliver(&checked, result, out) }
    })
}

/// Starts generating FIPS 186-4 parameters in the background and returns
/// at once: `req`, `opts` and the statuses are those of
/// `pf_dh_generate_fips186`, all checked before any thread starts; `req`
/// (with the domain seed it points to, copied) and `opts` may be freed as
/// soon as this returns, as for `pf_dh_generate_start`. On success `*out`
/// receives a running job the caller owns: take the parameters with
/// `pf_job_take_dh`. On failure `*out` is untouched and no thread was left
/// running. Thread-safe. Added after 0.2.0.
#[no_mangle]
pub unsafe extern "C" fn pf_dh_generate_fips186_start(
    req: *const pf_dh_fips186,
    opts: *const pf_options,
    out: *mut *mut pf_job,
) -> pf_status {
    guard_generate(|| {
        if req.is_null() {
            return pf_status::PF_ERR_NULL_ARGUMENT;
        }
        // SAFETY: `req` is not NULL; the caller's contracts for the rest
        // and for `opts` and `out` (start_job's).
        unsafe {
            let request = match fips186_request(&*req) {
                Ok(r) => r,
                Err(st) => return st,
            };
            start_job(opts, out, |c| {
                dh_flags(c)?;
                Ok(Work::Fips186(request))
            })
        }
    })
}

/// What makes FIPS 186-4 parameters verifiable: `*seed` receives a new
/// buffer with the domain parameter seed (the caller owns it: free with
/// `pf_buffer_free`), `*counter` the counter, `*hash` the `pf_hash` used
/// (0 when not known: parameters read from a file, which never names it),
/// `*gindex` the canonical generator's index (−1 when g was made by A.2.1
/// or is not known). `seed` must not be NULL; `counter`, `hash` and
/// `gindex` may be (that value is not written). All are written on success
/// only.
///
/// Returns `PF_ERR_NULL_ARGUMENT`, `PF_ERR_UNSUPPORTED` (the parameters
/// carry no seed: safe-prime, PKCS#3 or DSA-file parameters),
/// `PF_ERR_NO_MEMORY`. Thread-safe. Added after 0.2.0.
#[no_mangle]
pub unsafe extern "C" fn pf_dh_fips186_info(
    params: *const pf_dh_params,
    seed: *mut *mut pf_buffer,
    counter: *mut u32,
    hash: *mut u32,
    gindex: *mut i32,
) -> pf_status {
    guard_secret(|| {
        // SAFETY: NULL or live parameters.
        let Some(p) = (unsafe { params.as_ref() }) else {
            return pf_status::PF_ERR_NULL_ARGUMENT;
        };
        if seed.is_null() {
            return pf_status::PF_ERR_NULL_ARGUMENT;
        }
        let Some(v) = p.inner.fips186() else {
            return crate::Error::Unsupported("these parameters carry no FIPS 186-4 seed").into();
        };
        let buf = match SecureBuf::from_slice(&v.seed) {
            Ok(b) => pf_buffer::boxed(b),
            Err(e) => return e.into(),
        };
        let index = match v.generator {
            Generator::Canonical(i) => i32::from(i),
            Generator::Unverifiable(_) | Generator::Unknown => -1,
        };
        // SAFETY: each pointer checked for NULL (seed above).
        unsafe {
            write_out(seed, buf);
            if !counter.is_null() {
                write_out(counter, v.counter);
            }
            if !hash.is_null() {
                write_out(hash, v.hash.map_or(0, pf_hash_value));
            }
            if !gindex.is_null() {
                write_out(gindex, index);
            }
        }
        pf_status::PF_OK
    })
}
/// Opaque. Holds its seed in secure memory.
pub struct pf_dh_batch {
    inner: std::sync::Mutex<dh::Batch>,
}

/// Starts a batch: the lowest safe primes above one random start, taken
/// one at a time with `pf_dh_batch_next`, all from one sieve whose set-up
/// (the residues of every sieving prime) is shared and therefore deeper
/// than a single `pf_dh_generate_ex` can afford. For many parameters of one
/// size (OpenSSH moduli files, a pool of DH groups) each prime costs fewer
/// exponentiations: the count per prime falls by about 7 % for each
/// doubling of the sieve bound (2^26 for one 2048-bit prime, 2^30 for a
/// batch of 16). Nothing is generated here.
///
/// `bits`, `generator` and `flags` are those of `pf_dh_generate_ex`.
/// `expected` (1 to 4096) is how many primes the caller means to take: it
/// sizes the sieve; more may be taken, at some extra cost. `opts` may be
/// NULL; only its seed is used here: with a seed the whole sequence is a
/// deterministic function of the seed and the arguments, at any thread
/// count; without one the start comes from the OS.
///
/// On success `*out` receives a batch the caller owns (free with
/// `pf_dh_batch_free`); on failure it is untouched. Returns
/// `PF_ERR_NULL_ARGUMENT`, `PF_ERR_INVALID_ARGUMENT` (as for
/// `pf_dh_generate_ex`, and `expected`), `PF_ERR_ENTROPY`,
/// `PF_ERR_NO_MEMORY`, `PF_ERR_INTERNAL`. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn pf_dh_batch_new(
    bits: u32,
    generator: u32,
    flags: u32,
    expected: u32,
    opts: *const pf_options,
    out: *mut *mut pf_dh_batch,
) -> pf_status {
    guard_generate(|| {
        // SAFETY: documented contract of `opts`.
        let (checked, request) = match unsafe { dh_call(bits, generator, flags, opts, out) } {
            Ok(c) => c,
            Err(st) => return st,
        };
        match dh::Batch::new(&request, expected, checked.seed) {
            Ok(batch) => {
                let handle = Box::new(pf_dh_batch {
                    inner: std::sync::Mutex::new(batch),
                });
                // SAFETY: `out` checked for NULL.
                unsafe { write_out(out, Box::into_raw(handle)) };
                pf_status::PF_OK
            }
            Err(e) => e.into(),
        }
    })
}

/// Finds the batch's next safe prime: the lowest one above the last this
/// batch returned (above its start, the first time). One search, on
/// `opts->threads` threads, with the progress callback, cancellation and
/// `opts->stats` of `pf_dh_generate_ex`; `opts` may be NULL, and its seed
/// must be NULL (the batch has its own). After a failure (a cancel, say)
/// the batch is where it was: the next call searches the same range.
///
/// On success `*out` receives parameters the caller owns (free with
/// `pf_dh_free`); on failure `*out` and `*opts->stats` are untouched.
/// Returns `PF_ERR_NULL_ARGUMENT`, `PF_ERR_INVALID_ARGUMENT` (threads, a
/// seed, struct_size), `PF_ERR_CANCELLED`, `PF_ERR_THREADS`,
/// `PF_ERR_NO_MEMORY`, `PF_ERR_INTERNAL`. Thread-safe: calls on one batch
/// from several threads run one after another.
#[no_mangle]
pub unsafe extern "C" fn pf_dh_batch_next(
    batch: *mut pf_dh_batch,
    opts: *const pf_options,
    out: *mut *mut pf_dh_params,
) -> pf_status {
    guard_generate(|| {
        if batch.is_null() || out.is_null() {
            return pf_status::PF_ERR_NULL_ARGUMENT;
        }
        // SAFETY: documented contract of `opts`.
        let checked = match unsafe { check_options(opts) } {
            Ok(c) => c,
            Err(st) => return st,
        };
        if checked.seed.is_some() {
            return invalid("a batch's seed is given to pf_dh_batch_new: opts->seed must be NULL");
        }
        if checked.flags & !super::options::GENERAL_FLAGS != 0 {
            return invalid("pf_options.flags: the pf_rsa_flag bits are RSA only; DH takes pf_options_flag bits only");
        }
        // SAFETY: the caller passes a live batch; the mutex serialises
        // concurrent calls.
        let batch = unsafe { &*batch };
        let mut inner = batch.inner.lock().unwrap_or_else(|e| e.into_inner());
        let result = checked.with_core(|o| inner.next(o));
        // SAFETY: `out` checked for NULL.
        unsafe { deliver(&checked, result, out) }
    })
}

/// Frees `batch` (wiping its seed). NULL is a no-op. Freeing a batch twice,
/// or while a `pf_dh_batch_next` on it runs, is undefined behaviour. (In a
/// `fork()` child a batch still yields safe primes, but its seed reads as
/// zeros there, so the sequence is no longer the seed's.)
#[no_mangle]
pub unsafe extern "C" fn pf_dh_batch_free(batch: *mut pf_dh_batch) {
    // SAFETY: the caller passes NULL or a live handle, freed once.
    unsafe { super::free_handle(batch) }
}

/// The arguments of a blocking DH call that makes something into `out`:
/// `out` not NULL, the options and the request checked.
///
/// # Safety
/// `opts` is NULL or valid as `check_options` requires.
unsafe fn dh_call<'a, T>(
    bits: u32,
    generator: u32,
    flags: u32,
    opts: *const pf_options,
    out: *mut *mut T,
) -> Result<(CheckedOptions<'a>, dh::Request), pf_status> {
    if out.is_null() {
        return Err(pf_status::PF_ERR_NULL_ARGUMENT);
    }
    // SAFETY: the caller's contract.
    let checked = unsafe { check_options(opts) }?;
    let request = dh_request(bits, generator, flags, &checked)?;
    Ok((checked, request))
}

/// The request of a DH generate call, checked as the blocking and the
/// background calls both check it.
fn dh_request(
    bits: u32,
    generator: u32,
    flags: u32,
    checked: &CheckedOptions<'_>,
) -> Result<dh::Request, pf_status> {
    dh_flags(checked)?;
    if flags & !(PF_DH_FLAG_LEGACY_G2 | PF_DH_FLAG_X942) != 0 {
        return Err(invalid("unknown DH flags"));
    }
    dh::Request::new(bits, generator, flags).map_err(pf_status::from)
}

/// DH generation takes the `pf_options_flag` bits only.
fn dh_flags(checked: &CheckedOptions<'_>) -> Result<(), pf_status> {
    if checked.flags & !super::options::GENERAL_FLAGS != 0 {
        return Err(invalid("pf_options.flags: the pf_rsa_flag bits are RSA only; DH takes pf_options_flag bits only"));
    }
    Ok(())
}

/// Starts generating DH parameters in the background and returns at once:
/// the arguments, `opts` and the statuses are those of
/// `pf_dh_generate_ex`, all checked before any thread starts. `opts` (and
/// a seed it points to, copied into secure memory) may be freed as soon as
/// this returns; its `progress`, `user_data` and `stats` fields are not
/// used (`pf_job_poll` reports progress and the final counters).
///
/// On success `*out` receives a running job the caller owns: watch
/// `pf_job_fd`, then take the parameters with `pf_job_take_dh` and release
/// the job with `pf_job_free`. On failure `*out` is untouched and no thread
/// was left running. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn pf_dh_generate_start(
    bits: u32,
    generator: u32,
    flags: u32,
    opts: *const pf_options,
    out: *mut *mut pf_job,
) -> pf_status {
    // SAFETY: the caller's `opts` and `out` contracts are start_job's.
    guard_generate(|| unsafe {
        start_job(opts, out, |c| {
            dh_request(bits, generator, flags, c).map(Work::Dh)
        })
    })
}

/// Returns the parameters of a named group (a `pf_dh_group` value):
/// instant, and for TLS the right answer for most deployments (RFC 7919).
///
/// On success `*out` receives parameters the caller owns (free with
/// `pf_dh_free`); on failure it is untouched. Returns
/// `PF_ERR_NULL_ARGUMENT`, `PF_ERR_INVALID_ARGUMENT` (unknown group),
/// `PF_ERR_NO_MEMORY`. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn pf_dh_named(group: u32, out: *mut *mut pf_dh_params) -> pf_status {
    guard_secret(|| {
        if out.is_null() {
            return pf_status::PF_ERR_NULL_ARGUMENT;
        }
        let Some(g) = self::group(group) else {
            return invalid("unknown pf_dh_group value");
        };
        let params = g.params().clone();
        // SAFETY: `out` checked for NULL.
        unsafe { write_out(out, boxed(params)) };
        pf_status::PF_OK
    })
}

c_enum_from_u32!(pf_dh_part {
    PF_DH_P,
    PF_DH_Q,
    PF_DH_G
});

c_enum_from_u32!(pf_dh_group {
    PF_DH_FFDHE2048,
    PF_DH_FFDHE3072,
    PF_DH_FFDHE4096,
    PF_DH_FFDHE6144,
    PF_DH_FFDHE8192,
    PF_DH_MODP2048,
    PF_DH_MODP3072,
    PF_DH_MODP4096,
    PF_DH_MODP6144,
    PF_DH_MODP8192,
});

/// The core's group for a `pf_dh_group` value.
fn group(g: u32) -> Option<Group> {
    use pf_dh_group::*;
    Some(match pf_dh_group::try_from(g).ok()? {
        PF_DH_FFDHE2048 => Group::Ffdhe2048,
        PF_DH_FFDHE3072 => Group::Ffdhe3072,
        PF_DH_FFDHE4096 => Group::Ffdhe4096,
        PF_DH_FFDHE6144 => Group::Ffdhe6144,
        PF_DH_FFDHE8192 => Group::Ffdhe8192,
        PF_DH_MODP2048 => Group::Modp2048,
        PF_DH_MODP3072 => Group::Modp3072,
        PF_DH_MODP4096 => Group::Modp4096,
        PF_DH_MODP6144 => Group::Modp6144,
        PF_DH_MODP8192 => Group::Modp8192,
    })
}

/// The DH encoding of a `pf_format` value (`None` for the RSA formats).
fn dh_format(format: u32) -> Option<DhFormat> {
    use super::pf_format::*;
    Some(match super::pf_format::try_from(format).ok()? {
        PF_FORMAT_PKCS3_PEM => DhFormat::Pkcs3Pem,
        PF_FORMAT_PKCS3_DER => DhFormat::Pkcs3Der,
        PF_FORMAT_X942_PEM => DhFormat::X942Pem,
        PF_FORMAT_X942_DER => DhFormat::X942Der,
        PF_FORMAT_DSA_PEM => DhFormat::DsaPem,
        PF_FORMAT_DSA_DER => DhFormat::DsaDer,
        _ => return None,
    })
}

/// Encodes `params` in `format`: `PF_FORMAT_PKCS3_PEM` / `_DER` ("DH
/// PARAMETERS": p, g — what `openssl dhparam` reads and writes) or
/// `PF_FORMAT_X942_PEM` / `_DER` ("X9.42 DH PARAMETERS": p, g, q — what
/// `openssl pkeyparam` reads as DHX — with FIPS 186-4's seed and counter
/// for parameters that have them) or `PF_FORMAT_DSA_PEM` / `_DER` ("DSA
/// PARAMETERS": p, q, g). PEM per RFC 7468: 64 columns, LF, final newline,
/// no trailing NUL.
///
/// On success `*out` receives a buffer the caller owns (free with
/// `pf_buffer_free`); on failure it is untouched. Returns
/// `PF_ERR_NULL_ARGUMENT`, `PF_ERR_INVALID_ARGUMENT` (unknown format,
/// including the RSA formats), `PF_ERR_UNSUPPORTED` (X9.42 or DSA for parameters
/// whose g does not lie in the subgroup of order q, e.g. the legacy g = 2
/// form, or a g other than 2 to 5 generated without `PF_DH_FLAG_X942`:
/// X9.42 would declare a wrong q), `PF_ERR_NO_MEMORY`. Thread-safe. See
/// `PF_FORMAT_X942_PEM` for which stacks accept X9.42 parameters.
#[no_mangle]
pub unsafe extern "C" fn pf_dh_export(
    params: *const pf_dh_params,
    format: u32,
    out: *mut *mut pf_buffer,
) -> pf_status {
    guard_secret(|| {
        // SAFETY: the caller passes NULL or live parameters, and `out`.
        unsafe {
            buffer_from(params, out, |p| {
                let fmt = dh_format(format)
                    .ok_or_else(|| invalid("not a DH format (PKCS#3, X9.42 or DSA)"))?;
                Ok(p.inner.export(fmt))
            })
        }
    })
}

/// Copies one component (a `pf_dh_part` value) as big-endian unsigned
/// bytes without leading zeros into a new buffer.
///
/// On success `*out` receives a buffer the caller owns (free with
/// `pf_buffer_free`); on failure it is untouched. Returns
/// `PF_ERR_NULL_ARGUMENT`, `PF_ERR_INVALID_ARGUMENT` (unknown part),
/// `PF_ERR_NO_MEMORY`. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn pf_dh_component(
    params: *const pf_dh_params,
    part: u32,
    out: *mut *mut pf_buffer,
) -> pf_status {
    guard_secret(|| {
        // SAFETY: the caller passes NULL or live parameters, and `out`.
        unsafe {
            buffer_from(params, out, |p| {
                let which = match pf_dh_part::try_from(part)? {
                    pf_dh_part::PF_DH_P => DhPart::P,
                    pf_dh_part::PF_DH_Q => DhPart::Q,
                    pf_dh_part::PF_DH_G => DhPart::G,
                };
                let bytes = p
                    .inner
                    .part_bytes(which)
                    .ok_or_else(|| invalid("these parameters have no q"))?;
                Ok(SecureBuf::from_slice(&bytes))
            })
        }
    })
}

/// Returns the size of p in bits, or 0 if `params` is NULL. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn pf_dh_bits(params: *const pf_dh_params) -> u32 {
    guard_value(0, || {
        // SAFETY: NULL or live parameters.
        unsafe { params.as_ref() }.map_or(0, |d| d.inner.bits())
    })
}

/// Frees `params`. NULL is a no-op. Freeing the same parameters twice is
/// undefined behaviour (as with `free`). DH parameters are public: they
/// are not in secure memory and stay usable in a `fork()` child. Not
/// thread-safe for the same object.
#[no_mangle]
pub unsafe extern "C" fn pf_dh_free(params: *mut pf_dh_params) {
    // SAFETY: the caller passes NULL or a live handle, freed once.
    unsafe { super::free_handle(params) }
}

/// Reads DH parameters as `pf_dh_check` reads them (PEM or DER, PKCS#3 or
/// X9.42, OpenSSL's leniency) into a `pf_dh_params`, so that an existing
/// file can be exported in another format or its parts read. Nothing is
/// checked here (use `pf_dh_check` on the bytes); parameters over 16384
/// bits are refused.
///
/// `data` may be NULL only if `len` is 0 (which is malformed input). On
/// success `*out` receives parameters the caller owns (free with
/// `pf_dh_free`); on failure it is untouched. Returns
/// `PF_ERR_NULL_ARGUMENT`, `PF_ERR_DECODE` (malformed, not DH parameters,
/// or too large), `PF_ERR_NO_MEMORY`. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn pf_dh_import(
    data: *const u8,
    len: usize,
    out: *mut *mut pf_dh_params,
) -> pf_status {
    guard_secret(|| {
        if out.is_null() {
            return pf_status::PF_ERR_NULL_ARGUMENT;
        }
        // SAFETY: the caller's contract for `data`.
        let bytes = match unsafe { super::input(data, len) } {
            Ok(b) => b,
            Err(st) => return st,
        };
        match dh::import(bytes) {
            Ok(params) => {
                // SAFETY: `out` checked for NULL.
                unsafe { write_out(out, boxed(params)) };
                pf_status::PF_OK
            }
            Err(e) => e.into(),
        }
    })
}

/// Checks encoded DH parameters, in the spirit of OpenSSL's `DH_check`:
/// `data` holds `len` bytes of PEM ("DH PARAMETERS", "X9.42 DH
/// PARAMETERS" or "DSA PARAMETERS") or DER (PKCS#3, X9.42 or DSA's
/// Dss-Parms, told apart by shape). PEM is read
/// as OpenSSL reads it: text before and between blocks, several blocks
/// (certificates are skipped; the first parameters block is checked), any
/// base64 line length, CRLF.
///
/// On `PF_OK`, `*problems` receives 0 (nothing wrong found) or an OR of
/// `PF_DH_CHECK_*` bits: p not prime, p not a safe prime (when q is
/// absent), unsuitable generator (outside 2 … p − 2, or g^q ≢ 1 when q is
/// given), q not prime, q not dividing p − 1, j not (p − 1)/q, q under 160
/// bits, a FIPS 186-4 seed and counter that do not give p and q (see
/// `pf_dh_check_ex`), p under 512 bits, p over 16384 bits (then nothing else is
/// examined: no arithmetic is done on oversized input). Primality uses
/// Baillie–PSW plus Miller–Rabin rounds with fresh random bases. With q
/// given, p need not be a safe prime: X9.42 parameters such as RFC 5114's
/// are valid with a q of 160 bits or more.
///
/// `data` may be NULL only if `len` is 0 (which is malformed input).
/// On failure `*problems` is untouched. Returns `PF_ERR_NULL_ARGUMENT`
/// (problems NULL, or data NULL with len > 0), `PF_ERR_DECODE` (malformed
/// input, or something other than DH parameters: a key, a certificate),
/// `PF_ERR_ENTROPY`, `PF_ERR_NO_MEMORY`. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn pf_dh_check(data: *const u8, len: usize, problems: *mut u32) -> pf_status {
    // SAFETY: the caller's contract, pf_dh_check_ex's with no `verified`.
    unsafe { pf_dh_check_ex(data, len, problems, std::ptr::null_mut()) }
}

/// `pf_dh_check`, saying also what was verified beyond the problem bits:
/// on `PF_OK`, `*verified` (when `verified` is not NULL) receives an OR of
/// `PF_DH_VERIFIED_*` bits — p and q re-derived from the file's seed and
/// counter by FIPS 186-4 A.1.1.3 (OpenSSL's hash for q's size first, then
/// every SHA-2 hash of at least q's bits), or by FIPS 186-2 as OpenSSL
/// makes its default X9.42 parameters; g the seed's canonical generator
/// (A.2.4, every index tried); g of order q with q of a FIPS 186-4 size
/// (A.2.2). A seed and counter that give neither set
/// `PF_DH_CHECK_SEED_INVALID` in `*problems`. The generator bits are
/// given for parameters with no problem only.
///
/// `problems` must not be NULL; `verified` may be. Both are written on
/// success only. Statuses as for `pf_dh_check`. Thread-safe. Added after
/// 0.2.0.
#[no_mangle]
pub unsafe extern "C" fn pf_dh_check_ex(
    data: *const u8,
    len: usize,
    problems: *mut u32,
    verified: *mut u32,
) -> pf_status {
    guard_secret(|| {
        if problems.is_null() || (data.is_null() && len > 0) {
            return pf_status::PF_ERR_NULL_ARGUMENT;
        }
        let bytes: &[u8] = if len == 0 {
            &[]
        } else {
            // SAFETY: caller guarantees `len` readable bytes at `data`.
            unsafe { std::slice::from_raw_parts(data, len) }
        };
        match check::check_encoded(bytes) {
            Ok(report) => {
                let mut v = match report.seed {
                    SeedCheck::Verified(_) => PF_DH_VERIFIED_SEED,
                    SeedCheck::VerifiedFips186_2(_) => PF_DH_VERIFIED_SEED_FIPS186_2,
                    SeedCheck::Absent | SeedCheck::Failed(_) => 0,
                };
                v |= match report.generator {
                    Some(GeneratorCheck::Canonical(_)) => {
                        PF_DH_VERIFIED_G_CANONICAL | PF_DH_VERIFIED_G_ORDER
                    }
                    Some(GeneratorCheck::OrderOnly) => PF_DH_VERIFIED_G_ORDER,
                    Some(GeneratorCheck::Failed) | None => 0,
                };
                // SAFETY: `problems` checked for NULL, `verified` here.
                unsafe {
                    write_out(problems, report.problems);
                    if !verified.is_null() {
                        write_out(verified, v);
                    }
                }
                pf_status::PF_OK
            }
            Err(e) => e.into(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every C number maps to its own core value and back to nothing
    /// else; the numbers around the range are refused.
    #[test]
    fn c_enumerations_map_one_to_one() {
        let groups: Vec<Group> = (1..=10).map(|v| group(v).unwrap()).collect();
        assert_eq!(groups, Group::ALL);
        for bad in [0, 11, u32::MAX] {
            assert!(group(bad).is_none());
            assert!(pf_dh_part::try_from(bad).is_err());
        }
        assert_eq!(pf_dh_part::try_from(2), Ok(pf_dh_part::PF_DH_Q));
        let dh: Vec<Option<DhFormat>> = (1..=15).map(dh_format).collect();
        assert_eq!(dh.iter().filter(|f| f.is_some()).count(), 6);
        assert_eq!(dh_format(11), Some(DhFormat::X942Pem));
        assert_eq!(dh_format(14), Some(DhFormat::DsaDer));
        let hashes: Vec<HashFn> = (1..=7).map(|v| hash_fn(v).unwrap()).collect();
        assert_eq!(hashes, HashFn::ALL);
        for h in HashFn::ALL {
            assert_eq!(hash_fn(pf_hash_value(h)), Ok(h));
        }
        for bad in [0, 8, u32::MAX] {
            assert!(hash_fn(bad).is_err());
        }
    }
}
