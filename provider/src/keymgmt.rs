//! Key management for RSA, DH, and FIPS 186-4's DHX and DSA: gen (our
//! engine: RSA keys, DH parameters, FIPS 186-4 domain parameters, and DH,
//! DHX and DSA key pairs on given parameters — a TLS server's ephemeral
//! DHE keys — or on a named group), has, match, get_params and set_params
//! (the encoded public key TLS exchanges), import/export (to and from the
//! default provider, which signs, derives and encodes), and their type
//! lists.

use std::ffi::{c_char, c_int, c_void, CStr};

use primeforge::dh::fips186::{self, GenMethod, Generator, HashFn, Provenance};
use primeforge::dh::named::Group;
use primeforge::dh::{self, DhKeyPair, DhParams, DhPart};
use primeforge::prime::{Options, Progress};
use primeforge::rsa::{self, RsaKey};

use zeroize::Zeroizing;

use crate::params::{self, describe, BnParams, OSSL_PARAM, UNSIGNED_INTEGER};
use crate::{entry, errors, guard, ProvCtx, Static, OSSL_DISPATCH};

use crate::abi::{
    OSSL_KEYMGMT_SELECT_DOMAIN_PARAMETERS as SELECT_DOMAIN_PARAMETERS,
    OSSL_KEYMGMT_SELECT_PRIVATE_KEY as SELECT_PRIVATE_KEY,
    OSSL_KEYMGMT_SELECT_PUBLIC_KEY as SELECT_PUBLIC_KEY,
};

type OSSL_CALLBACK = unsafe extern "C" fn(*const OSSL_PARAM, *mut c_void) -> c_int;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Rsa,
    Dh,
    /// X9.42 DH with FIPS 186-4 parameters (OpenSSL's "DHX").
    Dhx,
    /// DSA (FIPS 186-4 parameters; keys for the default provider's
    /// signatures).
    Dsa,
}

impl Kind {
    /// DH, DHX and DSA objects all hold finite-field parameters.
    fn ffc(self) -> bool {
        self != Kind::Rsa
    }
    /// DHX and DSA: FIPS 186-4 parameters, with q always.
    fn fips186(self) -> bool {
        matches!(self, Kind::Dhx | Kind::Dsa)
    }
}

/// Our key object.
enum KeyData {
    Empty(Kind),
    Rsa(RsaKey),
    Dh(DhParams),
    /// A DH key pair, or a public key alone (a TLS peer's).
    DhKey(DhKeyPair),
}

impl KeyData {
    /// The DH parameters of a DH object.
    fn dh_params(&self) -> Option<&DhParams> {
        match self {
            KeyData::Dh(d) => Some(d),
            KeyData::DhKey(k) => Some(k.params()),
            _ => None,
        }
    }
}

/// A generation's settings.
struct GenCtx {
    kind: Kind,
    selection: c_int,
    bits: u32,
    primes: u32,
    e: u64,
    generator: u32,
    threads: u32,
    /// Wiped when the context is freed.
    seed: Option<Zeroizing<[u8; 32]>>,
    /// DH key pairs: the parameters to make them on (a template key, or a
    /// named group).
    dh_params: Option<DhParams>,
    /// DHX and DSA: q's size (0: OpenSSL's for the size of p).
    qbits: u32,
    /// DHX and DSA: the hash (OpenSSL's "digest"; None: by q's size).
    hash: Option<HashFn>,
    /// DHX and DSA: g's method (OpenSSL's "gindex"; -1: A.2.1).
    gindex: i32,
    /// DHX and DSA: a domain parameter seed to run A.1.1.2 from (OpenSSL's
    /// "seed" as an octet string).
    domain_seed: Option<Vec<u8>>,
}

fn security_bits(bits: u32) -> i64 {
    // NIST SP 800-57 Part 1, Table 2 (IFC and FFC).
    match bits {
        b if b >= 15360 => 256,
        b if b >= 7680 => 192,
        b if b >= 3072 => 128,
        b if b >= 2048 => 112,
        b if b >= 1024 => 80,
        _ => 0,
    }
}

/// A new, empty key object of `kind`, owned by OpenSSL until `free`.
fn new_key(kind: Kind) -> *mut c_void {
    Box::into_raw(Box::new(KeyData::Empty(kind))).cast()
}

unsafe extern "C" fn rsa_new(_provctx: *mut c_void) -> *mut c_void {
    guard(std::ptr::null_mut(), || new_key(Kind::Rsa))
}

unsafe extern "C" fn dh_new(_provctx: *mut c_void) -> *mut c_void {
    guard(std::ptr::null_mut(), || new_key(Kind::Dh))
}

unsafe extern "C" fn dhx_new(_provctx: *mut c_void) -> *mut c_void {
    guard(std::ptr::null_mut(), || new_key(Kind::Dhx))
}

unsafe extern "C" fn dsa_new(_provctx: *mut c_void) -> *mut c_void {
    guard(std::ptr::null_mut(), || new_key(Kind::Dsa))
}

unsafe extern "C" fn free(keydata: *mut c_void) {
    guard((), || {
        if !keydata.is_null() {
            // SAFETY: made by new_key or gen with Box::into_raw.
            drop(unsafe { Box::from_raw(keydata.cast::<KeyData>()) });
        }
    })
}

unsafe fn gen_init(
    kind: Kind,
    provctx: *mut c_void,
    selection: c_int,
    p: *const OSSL_PARAM,
) -> *mut c_void {
    // SAFETY: provctx is ours (OSSL_provider_init).
    let threads = unsafe { provctx.cast::<ProvCtx>().as_ref() }.map_or(0, |c| c.threads);
    let ctx = Box::into_raw(Box::new(GenCtx {
        kind,
        selection,
        // OpenSSL's defaults for both: 2048-bit keys and primes.
        bits: 2048,
        primes: 2,
        e: 65537,
        generator: 2,
        threads,
        seed: None,
        dh_params: None,
        qbits: 0,
        hash: None,
        gindex: fips186::DEFAULT_GINDEX as i32,
        domain_seed: None,
    }));
    // SAFETY: a fresh context and OpenSSL's array.
    if unsafe { gen_set_params(ctx.cast(), p) } == 0 {
        // SAFETY: just made.
        drop(unsafe { Box::from_raw(ctx) });
        return std::ptr::null_mut();
    }
    ctx.cast()
}

unsafe extern "C" fn rsa_gen_init(
    provctx: *mut c_void,
    selection: c_int,
    p: *const OSSL_PARAM,
) -> *mut c_void {
    // SAFETY: OpenSSL passes our provider context and NULL or its
    // terminated parameter array, as gen_init requires.
    guard(std::ptr::null_mut(), || unsafe {
        gen_init(Kind::Rsa, provctx, selection, p)
    })
}

unsafe extern "C" fn dh_gen_init(
    provctx: *mut c_void,
    selection: c_int,
    p: *const OSSL_PARAM,
) -> *mut c_void {
    // SAFETY: as in rsa_gen_init.
    guard(std::ptr::null_mut(), || unsafe {
        gen_init(Kind::Dh, provctx, selection, p)
    })
}

unsafe extern "C" fn dhx_gen_init(
    provctx: *mut c_void,
    selection: c_int,
    p: *const OSSL_PARAM,
) -> *mut c_void {
    // SAFETY: as in rsa_gen_init.
    guard(std::ptr::null_mut(), || unsafe {
        gen_init(Kind::Dhx, provctx, selection, p)
    })
}

unsafe extern "C" fn dsa_gen_init(
    provctx: *mut c_void,
    selection: c_int,
    p: *const OSSL_PARAM,
) -> *mut c_void {
    // SAFETY: as in rsa_gen_init.
    guard(std::ptr::null_mut(), || unsafe {
        gen_init(Kind::Dsa, provctx, selection, p)
    })
}

unsafe extern "C" fn gen_set_params(genctx: *mut c_void, p: *const OSSL_PARAM) -> c_int {
    guard(0, || {
        // SAFETY: our context.
        let Some(g) = (unsafe { genctx.cast::<GenCtx>().as_mut() }) else {
            return 0;
        };
        // SAFETY: `p` is OpenSSL's terminated array (or NULL).
        match unsafe { apply_gen_params(g, p) } {
            Ok(()) => 1,
            Err(msg) => {
                errors::raise(errors::INVALID_PARAMETER, &msg);
                0
            }
        }
    })
}

/// Reads and checks each parameter on its own (combinations are checked
/// when generating): the message names the parameter and the rule.
///
/// # Safety
/// `p` is NULL or OpenSSL's terminated array.
unsafe fn apply_gen_params(g: &mut GenCtx, p: *const OSSL_PARAM) -> Result<(), String> {
    let num = |key: &str| -> Option<Result<u64, String>> {
        // SAFETY: per this function's contract.
        unsafe { params::find(p, key) }.map(|r| {
            // SAFETY: a record of that array, readable for its size.
            unsafe { params::get_u64(r) }
                .ok_or_else(|| format!("{key}: not a non-negative integer"))
        })
    };
    if g.kind == Kind::Rsa {
        if let Some(v) = num("bits") {
            let v = v?;
            if v % 2 != 0 || !(512..=16384).contains(&v) {
                return Err(format!("bits: {v}: must be even, 512 to 16384"));
            }
            g.bits = v as u32;
        }
        if let Some(v) = num("primes") {
            let v = v?;
            if !(2..=5).contains(&v) {
                return Err(format!(
                    "primes: {v}: must be 2 to 5 (and at most OpenSSL's cap for the size)"
                ));
            }
            g.primes = v as u32;
        }
        if let Some(v) = num("e") {
            let v = v.map_err(|_| "e: must be an odd integer below 2^64".to_string())?;
            if v < 3 || v % 2 == 0 {
                return Err(format!("e: {v}: must be odd and at least 3"));
            }
            g.e = v;
        }
    } else if g.kind.fips186() {
        // SAFETY: per this function's contract.
        unsafe { apply_fips186_params(g, p) }?;
    } else {
        if let Some(v) = num("pbits") {
            let v = v?;
            if !(256..=16384).contains(&v) {
                return Err(format!("pbits: {v}: must be 256 to 16384"));
            }
            g.bits = v as u32;
        }
        if let Some(v) = num("safeprime-generator") {
            let v = v?;
            if !(2..=0x7fff_ffff).contains(&v) {
                return Err(format!("safeprime-generator: {v}: must be 2 to 2^31 - 1"));
            }
            g.generator = v as u32;
        }
        // A named group for key pairs (RFC 7919 / RFC 3526).
        // SAFETY: per this function's contract.
        if let Some(r) = unsafe { params::find(p, "group") } {
            // SAFETY: a record of that array.
            let name = unsafe { params::get_utf8(r) }.unwrap_or_default();
            match Group::ALL
                .iter()
                .find(|grp| grp.name().eq_ignore_ascii_case(&name))
            {
                Some(grp) => g.dh_params = Some(grp.params().clone()),
                None => {
                    return Err(format!(
                        "group: {name:?}: not a known DH group (ffdhe2048 … modp_8192)"
                    ))
                }
            }
        }
        // openssl genpkey -pkeyopt dh_paramgen_type:…: only safe primes
        // ("generator", OpenSSL's name for them) are made here.
        // SAFETY: per this function's contract.
        if let Some(r) = unsafe { params::find(p, "type") } {
            // SAFETY: a record of that array.
            match unsafe { params::get_utf8(r) }.as_deref() {
                Some("generator") | Some("default") => {}
                other => {
                    return Err(format!(
                    "type: {:?}: primeforge makes safe-prime parameters only (type \"generator\")",
                    other.unwrap_or("?")
                ))
                }
            }
        }
    }
    if let Some(v) = num("threads") {
        let v = v?;
        if v > 1024 {
            return Err(format!("threads: {v}: at most 1024 (0 = all cores)"));
        }
        g.threads = v as u32;
    }
    // SAFETY: per this function's contract.
    if let Some(r) = unsafe { params::find(p, "seed") } {
        if g.kind.fips186() && r.data_type == params::OCTET_STRING {
            // OpenSSL's FFC seed: a domain parameter seed.
            // SAFETY: a record of that array.
            g.domain_seed = unsafe { params::get_octets(r) };
        } else {
            // SAFETY: a record of that array.
            match unsafe { params::get_hex32(r) } {
                Some(s) => g.seed = Some(s),
                None => return Err("seed: must be 64 hexadecimal digits (32 bytes)".into()),
            }
        }
    }
    Ok(())
}

/// DHX and DSA generation parameters, with OpenSSL's names: pbits, qbits,
/// type (fips186_4 only), digest, gindex (−1: A.2.1's generator).
///
/// # Safety
/// `p` is NULL or OpenSSL's terminated array.
unsafe fn apply_fips186_params(g: &mut GenCtx, p: *const OSSL_PARAM) -> Result<(), String> {
    let num = |key: &str| -> Option<Result<u64, String>> {
        // SAFETY: per this function's contract.
        unsafe { params::find(p, key) }.map(|r| {
            // SAFETY: a record of that array, readable for its size.
            unsafe { params::get_u64(r) }
                .ok_or_else(|| format!("{key}: not a non-negative integer"))
        })
    };
    if let Some(v) = num("pbits") {
        let v = v?;
        if ![1024, 2048, 3072].contains(&v) {
            return Err(format!(
                "pbits: {v}: FIPS 186-4 sizes of p are 1024, 2048 and 3072"
            ));
        }
        g.bits = v as u32;
    }
    if let Some(v) = num("qbits") {
        let v = v?;
        if ![160, 224, 256].contains(&v) {
            return Err(format!(
                "qbits: {v}: FIPS 186-4 sizes of q are 160, 224 and 256"
            ));
        }
        g.qbits = v as u32;
    }
    // SAFETY: per this function's contract.
    if let Some(r) = unsafe { params::find(p, "gindex") } {
        // SAFETY: a record of that array.
        let v = unsafe { params::get_i64(r) };
        match v {
            Some(i @ -1..=255) => g.gindex = i as i32,
            _ => return Err("gindex: must be 0 to 255, or -1 for A.2.1's generator".into()),
        }
    }
    // SAFETY: per this function's contract.
    if let Some(r) = unsafe { params::find(p, "digest") } {
        // SAFETY: a record of that array.
        let name = unsafe { params::get_utf8(r) }.unwrap_or_default();
        match HashFn::from_name(&name) {
            Some(HashFn::Sha1) | None => {
                return Err(format!(
                    "digest: {name:?}: a SHA-2 hash (SHA2-224, SHA2-256, SHA2-384, SHA2-512, SHA2-512/224, SHA2-512/256)"
                ))
            }
            h => g.hash = h,
        }
    }
    // SAFETY: per this function's contract.
    if let Some(r) = unsafe { params::find(p, "type") } {
        // SAFETY: a record of that array.
        match unsafe { params::get_utf8(r) }.as_deref() {
            Some("fips186_4") | Some("default") => {}
            other => {
                return Err(format!(
                    "type: {:?}: primeforge makes FIPS 186-4 parameters only (type \"fips186_4\")",
                    other.unwrap_or("?")
                ))
            }
        }
    }
    Ok(())
}

static RSA_GEN_SETTABLE: Static<[OSSL_PARAM; 6]> = Static([
    describe(c"bits", UNSIGNED_INTEGER),
    describe(c"primes", UNSIGNED_INTEGER),
    describe(c"e", UNSIGNED_INTEGER),
    describe(c"threads", UNSIGNED_INTEGER),
    describe(c"seed", params::UTF8_STRING),
    params::END,
]);

static FFC_GEN_SETTABLE: Static<[OSSL_PARAM; 10]> = Static([
    describe(c"pbits", UNSIGNED_INTEGER),
    describe(c"qbits", UNSIGNED_INTEGER),
    describe(c"type", params::UTF8_STRING),
    describe(c"digest", params::UTF8_STRING),
    describe(c"gindex", params::INTEGER),
    describe(c"seed", params::OCTET_STRING),
    describe(c"group", params::UTF8_STRING),
    describe(c"threads", UNSIGNED_INTEGER),
    describe(c"properties", params::UTF8_STRING),
    params::END,
]);

unsafe extern "C" fn ffc_gen_settable(_g: *mut c_void, _p: *mut c_void) -> *const OSSL_PARAM {
    FFC_GEN_SETTABLE.0.as_ptr()
}

static DH_GEN_SETTABLE: Static<[OSSL_PARAM; 7]> = Static([
    describe(c"pbits", UNSIGNED_INTEGER),
    describe(c"group", params::UTF8_STRING),
    describe(c"safeprime-generator", params::INTEGER),
    describe(c"type", params::UTF8_STRING),
    describe(c"threads", UNSIGNED_INTEGER),
    describe(c"seed", params::UTF8_STRING),
    params::END,
]);

unsafe extern "C" fn rsa_gen_settable(_g: *mut c_void, _p: *mut c_void) -> *const OSSL_PARAM {
    RSA_GEN_SETTABLE.0.as_ptr()
}

unsafe extern "C" fn dh_gen_settable(_g: *mut c_void, _p: *mut c_void) -> *const OSSL_PARAM {
    DH_GEN_SETTABLE.0.as_ptr()
}

/// Reports progress to OpenSSL's callback as its own generators do
/// ("potential" 0 for each candidate batch, 3 when a prime is found);
/// the callback returning 0 cancels.
unsafe fn report(
    cb: Option<OSSL_CALLBACK>,
    cbarg: *mut c_void,
    potential: i32,
    iteration: i32,
) -> bool {
    let Some(cb) = cb else { return false };
    let mut pot = potential;
    let mut it = iteration;
    let arr = [
        OSSL_PARAM {
            key: c"potential".as_ptr(),
            data_type: params::INTEGER,
            data: (&mut pot as *mut i32).cast(),
            data_size: 4,
            return_size: usize::MAX,
        },
        OSSL_PARAM {
            key: c"iteration".as_ptr(),
            data_type: params::INTEGER,
            data: (&mut it as *mut i32).cast(),
            data_size: 4,
            return_size: usize::MAX,
        },
        params::END,
    ];
    // SAFETY: OpenSSL's callback with a terminated array.
    unsafe { cb(arr.as_ptr(), cbarg) == 0 }
}

unsafe extern "C" fn gen(
    genctx: *mut c_void,
    cb: Option<OSSL_CALLBACK>,
    cbarg: *mut c_void,
) -> *mut c_void {
    guard(std::ptr::null_mut(), || {
        // SAFETY: our context.
        let Some(g) = (unsafe { genctx.cast::<GenCtx>().as_ref() }) else {
            return std::ptr::null_mut();
        };
        let mut last_candidates = 0u64;
        let mut last_found = 0usize;
        let mut progress = |p: &Progress| -> bool {
            let mut stop = false;
            if p.candidates > last_candidates {
                last_candidates = p.candidates;
                // SAFETY: OpenSSL's callback and argument.
                stop |= unsafe { report(cb, cbarg, 0, (p.candidates & 0x7fff_ffff) as i32) };
            }
            if p.primes_found > last_found {
                last_found = p.primes_found;
                // SAFETY: as above.
                stop |= unsafe { report(cb, cbarg, 3, p.primes_found as i32) };
            }
            stop
        };
        let mut opts = Options {
            threads: g.threads,
            seed: g.seed.as_ref().map(|s| &s[..]),
            progress: Some(&mut progress),
            ..Default::default()
        };
        let key = match g.kind {
            Kind::Rsa => {
                if g.selection & (SELECT_PRIVATE_KEY | SELECT_PUBLIC_KEY) == 0 {
                    return std::ptr::null_mut();
                }
                match rsa::Request::new(g.bits, g.e, g.primes)
                    .and_then(|r| rsa::generate_request(&r, &mut opts))
                {
                    Ok((k, _)) => KeyData::Rsa(k),
                    Err(e) => {
                        report_failure(e);
                        return std::ptr::null_mut();
                    }
                }
            }
            Kind::Dh | Kind::Dhx | Kind::Dsa => {
                // Parameters: from the template or group, else made here.
                let made = match &g.dh_params {
                    Some(d) => Ok(d.clone()),
                    None if g.kind.fips186() => fips186_request(g)
                        .and_then(|r| fips186::generate(&r, &mut opts))
                        .map(|(d, _)| d),
                    None => dh::Request::new(g.bits, g.generator, 0)
                        .and_then(|r| dh::generate_request(&r, &mut opts))
                        .map(|(d, _)| d),
                };
                let made = made.and_then(|d| {
                    if g.selection & (SELECT_PRIVATE_KEY | SELECT_PUBLIC_KEY) != 0 {
                        DhKeyPair::generate(&d).map(KeyData::DhKey)
                    } else {
                        Ok(KeyData::Dh(d))
                    }
                });
                match made {
                    Ok(k) => k,
                    Err(e) => {
                        report_failure(e);
                        return std::ptr::null_mut();
                    }
                }
            }
        };
        Box::into_raw(Box::new(key)).cast()
    })
}

/// The FIPS 186-4 request of a DHX or DSA generation context.
fn fips186_request(g: &GenCtx) -> primeforge::Result<fips186::Request> {
    let method = match g.gindex {
        -1 => GenMethod::Unverifiable,
        i => GenMethod::Canonical(i as u8),
    };
    let r = fips186::Request::new(g.bits, g.qbits, g.hash)?.with_generator(method);
    match &g.domain_seed {
        Some(s) => r.with_domain_seed(s),
        None => Ok(r),
    }
}

/// A failed generation on OpenSSL's error queue.
fn report_failure(e: primeforge::Error) {
    match e {
        primeforge::Error::Cancelled => {
            errors::raise(errors::CANCELLED, "cancelled by the callback")
        }
        primeforge::Error::InvalidArgument(_) => {
            errors::raise(errors::INVALID_PARAMETER, &e.to_string())
        }
        other => errors::raise(errors::GENERATION_FAILED, &other.to_string()),
    }
}

/// Key generation on a template key's parameters (`EVP_PKEY_keygen` on a
/// context made from parameters, as a TLS server does for DHE).
unsafe extern "C" fn gen_set_template(genctx: *mut c_void, templ: *mut c_void) -> c_int {
    guard(0, || {
        // SAFETY: our context and our object (OpenSSL moves the template
        // to this key management first).
        let (Some(g), Some(t)) = (unsafe { genctx.cast::<GenCtx>().as_mut() }, unsafe {
            key_ref(templ)
        }) else {
            return 0;
        };
        match t.dh_params() {
            Some(d) if g.kind.ffc() => {
                g.dh_params = Some(d.clone());
                1
            }
            _ => 0,
        }
    })
}

unsafe extern "C" fn gen_cleanup(genctx: *mut c_void) {
    guard((), || {
        if !genctx.is_null() {
            // SAFETY: made by gen_init.
            drop(unsafe { Box::from_raw(genctx.cast::<GenCtx>()) });
        }
    })
}

unsafe fn key_ref<'a>(keydata: *const c_void) -> Option<&'a KeyData> {
    // SAFETY: our object or NULL.
    unsafe { keydata.cast::<KeyData>().as_ref() }
}

unsafe extern "C" fn has(keydata: *const c_void, selection: c_int) -> c_int {
    guard(0, || {
        // SAFETY: our object or NULL.
        let ok = match unsafe { key_ref(keydata) } {
            None => false,
            Some(KeyData::Empty(_)) => {
                selection & (SELECT_PRIVATE_KEY | SELECT_PUBLIC_KEY | SELECT_DOMAIN_PARAMETERS) == 0
            }
            Some(KeyData::Rsa(k)) => !k.is_inherited(),
            // DH parameters only: no key pair.
            Some(KeyData::Dh(_)) => selection & (SELECT_PRIVATE_KEY | SELECT_PUBLIC_KEY) == 0,
            Some(KeyData::DhKey(k)) => {
                selection & SELECT_PRIVATE_KEY == 0 || k.private_bytes().is_some()
            }
        };
        c_int::from(ok)
    })
}

unsafe extern "C" fn get_params(keydata: *mut c_void, p: *mut OSSL_PARAM) -> c_int {
    guard(0, || {
        // SAFETY: our object or NULL.
        let key = unsafe { key_ref(keydata) };
        let bits = match key {
            Some(KeyData::Rsa(k)) => k.bits(),
            Some(k) => match k.dh_params() {
                Some(d) => d.bits(),
                None => return 1,
            },
            None => return 1,
        };
        // SAFETY: OpenSSL's writable array.
        let mut ok = unsafe {
            params::set_int(p, "bits", i64::from(bits))
                && params::set_int(p, "security-bits", security_bits(bits))
                && params::set_int(p, "max-size", i64::from(bits.div_ceil(8)))
        };
        // DH: the parameters and keys by name (TLS reads p, g and the
        // encoded public key of its ephemeral key this way).
        if let Some(d) = key.and_then(KeyData::dh_params) {
            // p and g only, as in export (see there for q), and q for
            // FIPS 186-4 parameters.
            for (name, part) in [("p", DhPart::P), ("g", DhPart::G), ("q", DhPart::Q)] {
                if part == DhPart::Q && d.fips186().is_none() {
                    continue;
                }
                if let Some(v) = d.part_bytes(part) {
                    // SAFETY: as above.
                    ok &= unsafe { params::set_bn(p, name, &v) };
                }
            }
        }
        if let Some(KeyData::DhKey(k)) = key {
            // SAFETY: as above.
            unsafe {
                ok &= params::set_bn(p, "pub", &k.public_bytes());
                ok &= params::set_octets(p, "encoded-pub-key", &k.public_padded());
                if let Some(x) = k.private_bytes() {
                    ok &= params::set_bn(p, "priv", x);
                }
            }
        }
        c_int::from(ok)
    })
}

static GETTABLE: Static<[OSSL_PARAM; 9]> = Static([
    describe(c"bits", params::INTEGER),
    describe(c"security-bits", params::INTEGER),
    describe(c"max-size", params::INTEGER),
    describe(c"p", UNSIGNED_INTEGER),
    describe(c"g", UNSIGNED_INTEGER),
    describe(c"pub", UNSIGNED_INTEGER),
    describe(c"priv", UNSIGNED_INTEGER),
    describe(c"encoded-pub-key", params::OCTET_STRING),
    params::END,
]);

/// A peer's public key arriving in TLS form (`EVP_PKEY_set1_encoded_public_key`
/// on a key that holds the parameters).
unsafe extern "C" fn set_params(keydata: *mut c_void, p: *const OSSL_PARAM) -> c_int {
    guard(0, || {
        // SAFETY: our object or NULL; OpenSSL's array.
        let (Some(slot), Some(r)) = (unsafe { keydata.cast::<KeyData>().as_mut() }, unsafe {
            params::find(p, "encoded-pub-key")
        }) else {
            return 1;
        };
        // SAFETY: a record of that array.
        let (Some(d), Some(y)) = (slot.dh_params().cloned(), unsafe { params::get_octets(r) })
        else {
            return 0;
        };
        match DhKeyPair::from_parts(d, Some(&y), None) {
            Ok(k) => {
                *slot = KeyData::DhKey(k);
                1
            }
            Err(e) => {
                errors::raise(errors::INVALID_PARAMETER, &e.to_string());
                0
            }
        }
    })
}

static SETTABLE: Static<[OSSL_PARAM; 2]> = Static([
    describe(c"encoded-pub-key", params::OCTET_STRING),
    params::END,
]);

unsafe extern "C" fn settable_params(_provctx: *mut c_void) -> *const OSSL_PARAM {
    SETTABLE.0.as_ptr()
}

/// Whether two of our keys agree on what `selection` names.
unsafe extern "C" fn key_match(a: *const c_void, b: *const c_void, selection: c_int) -> c_int {
    guard(0, || {
        // SAFETY: our objects or NULL.
        let (Some(a), Some(b)) = (unsafe { key_ref(a) }, unsafe { key_ref(b) }) else {
            return 0;
        };
        let ok = match (a, b) {
            (KeyData::Rsa(x), KeyData::Rsa(y)) => x.n() == y.n() && x.e_bytes() == y.e_bytes(),
            _ => match (a.dh_params(), b.dh_params()) {
                (Some(x), Some(y)) => {
                    let params_ok = selection & SELECT_DOMAIN_PARAMETERS == 0
                        || (x.p() == y.p() && x.g() == y.g());
                    let keys_ok = selection & (SELECT_PUBLIC_KEY | SELECT_PRIVATE_KEY) == 0
                        || match (a, b) {
                            (KeyData::DhKey(x), KeyData::DhKey(y)) => {
                                x.public_bytes() == y.public_bytes()
                            }
                            _ => false,
                        };
                    params_ok && keys_ok
                }
                _ => false,
            },
        };
        c_int::from(ok)
    })
}

unsafe extern "C" fn gettable_params(_provctx: *mut c_void) -> *const OSSL_PARAM {
    GETTABLE.0.as_ptr()
}

const FACTORS: [&CStr; 5] = [
    c"rsa-factor1",
    c"rsa-factor2",
    c"rsa-factor3",
    c"rsa-factor4",
    c"rsa-factor5",
];
const EXPONENTS: [&CStr; 5] = [
    c"rsa-exponent1",
    c"rsa-exponent2",
    c"rsa-exponent3",
    c"rsa-exponent4",
    c"rsa-exponent5",
];
const COEFFICIENTS: [&CStr; 4] = [
    c"rsa-coefficient1",
    c"rsa-coefficient2",
    c"rsa-coefficient3",
    c"rsa-coefficient4",
];

unsafe extern "C" fn export(
    keydata: *mut c_void,
    selection: c_int,
    cb: Option<OSSL_CALLBACK>,
    cbarg: *mut c_void,
) -> c_int {
    guard(0, || {
        let Some(cb) = cb else { return 0 };
        let mut bn = BnParams::new();
        // SAFETY: our object or NULL.
        match unsafe { key_ref(keydata) } {
            Some(KeyData::Rsa(k)) => {
                if k.is_inherited() {
                    return 0;
                }
                if selection & (SELECT_PUBLIC_KEY | SELECT_PRIVATE_KEY) != 0 {
                    bn.push(c"n", k.n());
                    bn.push(c"e", &k.e_bytes());
                }
                if selection & SELECT_PRIVATE_KEY != 0 {
                    bn.push(c"d", k.d());
                    let others = k.other_primes();
                    let mut ps: Vec<&[u8]> = vec![k.p(), k.q()];
                    let mut ds: Vec<&[u8]> = vec![k.dp(), k.dq()];
                    let mut ts: Vec<&[u8]> = vec![k.qinv()];
                    for o in &others {
                        ps.push(o.r);
                        ds.push(o.d);
                        ts.push(o.t);
                    }
                    for (i, v) in ps.iter().enumerate() {
                        bn.push(FACTORS[i], v);
                    }
                    for (i, v) in ds.iter().enumerate() {
                        bn.push(EXPONENTS[i], v);
                    }
                    for (i, v) in ts.iter().enumerate() {
                        bn.push(COEFFICIENTS[i], v);
                    }
                }
            }
            Some(k @ (KeyData::Dh(_) | KeyData::DhKey(_))) => {
                let d = k.dh_params().expect("a DH object");
                if let KeyData::DhKey(pair) = k {
                    if selection & (SELECT_PUBLIC_KEY | SELECT_PRIVATE_KEY) != 0 {
                        bn.push(c"pub", &pair.public_bytes());
                    }
                    // What the key has: a peer's public key has no private
                    // part (OpenSSL asks for everything when it copies).
                    if selection & SELECT_PRIVATE_KEY != 0 {
                        if let Some(x) = pair.private_bytes() {
                            bn.push(c"priv", x);
                        }
                    }
                }
                if selection & SELECT_DOMAIN_PARAMETERS != 0 {
                    // p and g only, as OpenSSL's own safe-prime parameters:
                    // with q = (p − 1)/2 exported too, OpenSSL 3 treats them
                    // as FIPS 186 parameters and refuses to make key pairs
                    // (it wants q of 160, 224 or 256 bits). FIPS 186-4
                    // parameters carry q, and their seed, counter and
                    // canonical index, as OpenSSL's own do.
                    for (key, part) in [(c"p", DhPart::P), (c"g", DhPart::G)] {
                        if let Some(v) = d.part_bytes(part) {
                            bn.push(key, &v);
                        }
                    }
                    if let (Some(q), Some(v)) = (d.part_bytes(DhPart::Q), d.fips186()) {
                        bn.push(c"q", &q);
                        bn.push_octets(c"seed", &v.seed);
                        bn.push_int(c"pcounter", v.counter as i32);
                        let index = match v.generator {
                            Generator::Canonical(i) => i32::from(i),
                            _ => -1,
                        };
                        bn.push_int(c"gindex", index);
                    }
                }
            }
            _ => return 0,
        }
        let arr = bn.array();
        // SAFETY: OpenSSL's callback; the array and its buffers live until
        // `bn` is dropped (and wiped) below.
        let r = unsafe { cb(arr.as_ptr(), cbarg) };
        drop(arr);
        drop(bn);
        r
    })
}

static RSA_TYPES: Static<[OSSL_PARAM; 17]> = Static([
    describe(c"n", UNSIGNED_INTEGER),
    describe(c"e", UNSIGNED_INTEGER),
    describe(c"d", UNSIGNED_INTEGER),
    describe(c"rsa-factor1", UNSIGNED_INTEGER),
    describe(c"rsa-factor2", UNSIGNED_INTEGER),
    describe(c"rsa-factor3", UNSIGNED_INTEGER),
    describe(c"rsa-factor4", UNSIGNED_INTEGER),
    describe(c"rsa-factor5", UNSIGNED_INTEGER),
    describe(c"rsa-exponent1", UNSIGNED_INTEGER),
    describe(c"rsa-exponent2", UNSIGNED_INTEGER),
    describe(c"rsa-exponent3", UNSIGNED_INTEGER),
    describe(c"rsa-exponent4", UNSIGNED_INTEGER),
    describe(c"rsa-exponent5", UNSIGNED_INTEGER),
    describe(c"rsa-coefficient1", UNSIGNED_INTEGER),
    describe(c"rsa-coefficient2", UNSIGNED_INTEGER),
    describe(c"rsa-coefficient3", UNSIGNED_INTEGER),
    params::END,
]);

static FFC_TYPES: Static<[OSSL_PARAM; 9]> = Static([
    describe(c"p", UNSIGNED_INTEGER),
    describe(c"g", UNSIGNED_INTEGER),
    describe(c"q", UNSIGNED_INTEGER),
    describe(c"seed", params::OCTET_STRING),
    describe(c"pcounter", params::INTEGER),
    describe(c"gindex", params::INTEGER),
    describe(c"pub", UNSIGNED_INTEGER),
    describe(c"priv", UNSIGNED_INTEGER),
    params::END,
]);

unsafe extern "C" fn ffc_types(_selection: c_int) -> *const OSSL_PARAM {
    FFC_TYPES.0.as_ptr()
}

static DH_TYPES: Static<[OSSL_PARAM; 6]> = Static([
    describe(c"p", UNSIGNED_INTEGER),
    describe(c"g", UNSIGNED_INTEGER),
    describe(c"q", UNSIGNED_INTEGER),
    describe(c"pub", UNSIGNED_INTEGER),
    describe(c"priv", UNSIGNED_INTEGER),
    params::END,
]);

unsafe extern "C" fn rsa_types(_selection: c_int) -> *const OSSL_PARAM {
    RSA_TYPES.0.as_ptr()
}

unsafe extern "C" fn dh_types(_selection: c_int) -> *const OSSL_PARAM {
    DH_TYPES.0.as_ptr()
}

/// DER tag-length-value of the concatenated `parts`, for the few
/// structures `import` hands to primeforge's own PKCS#1 reader: built in a
/// buffer of exactly its size (never reallocated, so no copy of a key part
/// is left in freed memory) and wiped when dropped.
fn tlv(tag: u8, parts: &[&[u8]]) -> Zeroizing<Vec<u8>> {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    let len_bytes = len.to_be_bytes();
    let skip = len_bytes.iter().position(|&x| x != 0).unwrap_or(7);
    let header = if len < 128 { 2 } else { 2 + (8 - skip) };
    let mut out = Zeroizing::new(Vec::with_capacity(header + len));
    out.push(tag);
    if len < 128 {
        out.push(len as u8);
    } else {
        out.push(0x80 | (8 - skip) as u8);
        out.extend_from_slice(&len_bytes[skip..]);
    }
    for p in parts {
        out.extend_from_slice(p);
    }
    out
}

/// A non-negative DER INTEGER from big-endian bytes (see [`tlv`]).
fn der_uint(v: &[u8]) -> Zeroizing<Vec<u8>> {
    let v = &v[v.iter().position(|&x| x != 0).unwrap_or(v.len())..];
    if v.first().is_none_or(|&b| b & 0x80 != 0) {
        tlv(0x02, &[&[0], v])
    } else {
        tlv(0x02, &[v])
    }
}

unsafe extern "C" fn import(keydata: *mut c_void, selection: c_int, p: *const OSSL_PARAM) -> c_int {
    guard(0, || {
        if keydata.is_null() {
            return 0;
        }
        // SAFETY: our object.
        let slot = unsafe { &mut *keydata.cast::<KeyData>() };
        // SAFETY: `p` is OpenSSL's terminated array; its records are
        // readable for their sizes.
        let bn = |key: &str| unsafe { params::find(p, key).and_then(|r| params::get_bn(r)) };
        match slot {
            KeyData::Empty(Kind::Rsa) | KeyData::Rsa(_) => {
                // Only whole private keys are held here (our keys are made
                // here or imported as such).
                if selection & SELECT_PRIVATE_KEY == 0 {
                    return 0;
                }
                let (Some(n), Some(e), Some(d)) = (bn("n"), bn("e"), bn("d")) else {
                    return 0;
                };
                let mut ps = Vec::new();
                let mut ds = Vec::new();
                let mut ts = Vec::new();
                for i in 0..5 {
                    if let Some(f) = bn(FACTORS[i].to_str().unwrap()) {
                        ps.push(f);
                    }
                    if let Some(x) = bn(EXPONENTS[i].to_str().unwrap()) {
                        ds.push(x);
                    }
                    if i < 4 {
                        if let Some(t) = bn(COEFFICIENTS[i].to_str().unwrap()) {
                            ts.push(t);
                        }
                    }
                }
                if ps.len() < 2 || ds.len() != ps.len() || ts.len() + 1 != ps.len() {
                    return 0;
                }
                // RSAPrivateKey: version (1 with OtherPrimeInfos), n, e, d,
                // p, q, dP, dQ, qInv, then the other primes' (r, d, t).
                // Every piece is exactly sized and wiped (`tlv`).
                let multi = ps.len() > 2;
                let mut fields = vec![der_uint(&[u8::from(multi)])];
                for v in [&n, &e, &d, &ps[0], &ps[1], &ds[0], &ds[1], &ts[0]] {
                    fields.push(der_uint(v));
                }
                if multi {
                    let infos: Vec<_> = (2..ps.len())
                        .map(|i| {
                            let (r, d, t) =
                                (der_uint(&ps[i]), der_uint(&ds[i]), der_uint(&ts[i - 1]));
                            tlv(0x30, &[&r, &d, &t])
                        })
                        .collect();
                    let infos: Vec<&[u8]> = infos.iter().map(|x| &x[..]).collect();
                    fields.push(tlv(0x30, &infos));
                }
                let fields: Vec<&[u8]> = fields.iter().map(|x| &x[..]).collect();
                let der = tlv(0x30, &fields);
                match rsa::import(&der, None) {
                    Ok(k) => {
                        *slot = KeyData::Rsa(k);
                        1
                    }
                    Err(_) => 0,
                }
            }
            KeyData::Empty(Kind::Dh | Kind::Dhx | Kind::Dsa)
            | KeyData::Dh(_)
            | KeyData::DhKey(_) => {
                let (Some(pp), Some(g)) = (bn("p"), bn("g")) else {
                    return 0;
                };
                let q = bn("q");
                let mut d = DhParams::from_bytes(&pp, &g, q.as_ref().map(|v| &v[..]));
                // FIPS 186-4's seed and counter, when OpenSSL has them.
                // SAFETY: as for `bn`.
                let (seed, counter, gindex) = unsafe {
                    (
                        params::find(p, "seed").and_then(|r| params::get_octets(r)),
                        params::find(p, "pcounter").and_then(|r| params::get_i64(r)),
                        params::find(p, "gindex").and_then(|r| params::get_i64(r)),
                    )
                };
                if let (Some(seed), Some(c @ 0..=0xffff_ffff), true) = (seed, counter, q.is_some())
                {
                    d = d.with_fips186(Provenance {
                        seed,
                        counter: c as u32,
                        hash: None,
                        generator: match gindex {
                            Some(i @ 0..=255) => Generator::Canonical(i as u8),
                            _ => Generator::Unknown,
                        },
                    });
                }
                let public = if selection & (SELECT_PUBLIC_KEY | SELECT_PRIVATE_KEY) != 0 {
                    bn("pub")
                } else {
                    None
                };
                // Wiped when dropped (`params::get_bn`).
                let private = if selection & SELECT_PRIVATE_KEY != 0 {
                    bn("priv")
                } else {
                    None
                };
                let r = if public.is_none() && private.is_none() {
                    *slot = KeyData::Dh(d);
                    1
                } else {
                    match DhKeyPair::from_parts(
                        d,
                        public.as_ref().map(|v| &v[..]),
                        private.as_ref().map(|v| &v[..]),
                    ) {
                        Ok(k) => {
                            *slot = KeyData::DhKey(k);
                            1
                        }
                        Err(_) => 0,
                    }
                };
                r
            }
        }
    })
}

unsafe extern "C" fn rsa_query_operation_name(_op: c_int) -> *const c_char {
    c"RSA".as_ptr()
}

unsafe extern "C" fn dh_query_operation_name(_op: c_int) -> *const c_char {
    c"DH".as_ptr()
}

unsafe extern "C" fn dsa_query_operation_name(_op: c_int) -> *const c_char {
    c"DSA".as_ptr()
}

use crate::abi::{
    OSSL_FUNC_KEYMGMT_EXPORT as EXPORT, OSSL_FUNC_KEYMGMT_EXPORT_TYPES as EXPORT_TYPES,
    OSSL_FUNC_KEYMGMT_FREE as FREE, OSSL_FUNC_KEYMGMT_GEN as GEN,
    OSSL_FUNC_KEYMGMT_GEN_CLEANUP as GEN_CLEANUP, OSSL_FUNC_KEYMGMT_GEN_INIT as GEN_INIT,
    OSSL_FUNC_KEYMGMT_GEN_SETTABLE_PARAMS as GEN_SETTABLE_PARAMS,
    OSSL_FUNC_KEYMGMT_GEN_SET_PARAMS as GEN_SET_PARAMS,
    OSSL_FUNC_KEYMGMT_GEN_SET_TEMPLATE as GEN_SET_TEMPLATE,
    OSSL_FUNC_KEYMGMT_GETTABLE_PARAMS as GETTABLE_PARAMS,
    OSSL_FUNC_KEYMGMT_GET_PARAMS as GET_PARAMS, OSSL_FUNC_KEYMGMT_HAS as HAS,
    OSSL_FUNC_KEYMGMT_IMPORT as IMPORT, OSSL_FUNC_KEYMGMT_IMPORT_TYPES as IMPORT_TYPES,
    OSSL_FUNC_KEYMGMT_MATCH as MATCH, OSSL_FUNC_KEYMGMT_NEW as NEW,
    OSSL_FUNC_KEYMGMT_QUERY_OPERATION_NAME as QUERY_OPERATION_NAME,
    OSSL_FUNC_KEYMGMT_SETTABLE_PARAMS as SETTABLE_PARAMS,
    OSSL_FUNC_KEYMGMT_SET_PARAMS as SET_PARAMS,
};

pub(crate) static RSA_KEYMGMT: Static<[OSSL_DISPATCH; 17]> = Static([
    entry!(NEW, rsa_new),
    entry!(GEN_INIT, rsa_gen_init),
    entry!(GEN_SET_PARAMS, gen_set_params),
    entry!(GEN_SETTABLE_PARAMS, rsa_gen_settable),
    entry!(GEN, gen),
    entry!(GEN_CLEANUP, gen_cleanup),
    entry!(FREE, free),
    entry!(GET_PARAMS, get_params),
    entry!(GETTABLE_PARAMS, gettable_params),
    entry!(QUERY_OPERATION_NAME, rsa_query_operation_name),
    entry!(HAS, has),
    entry!(MATCH, key_match),
    entry!(IMPORT, import),
    entry!(IMPORT_TYPES, rsa_types),
    entry!(EXPORT, export),
    entry!(EXPORT_TYPES, rsa_types),
    crate::END,
]);

/// The dispatch table of a finite-field key management (DH, DHX, DSA):
/// its own constructor, gen_init, gen settables, type list and operation
/// name; the rest shared.
macro_rules! ffc_keymgmt {
    ($new:ident, $init:ident, $settable:ident, $types:ident, $name:ident) => {
        Static([
            entry!(NEW, $new),
            entry!(GEN_INIT, $init),
            entry!(GEN_SET_TEMPLATE, gen_set_template),
            entry!(GEN_SET_PARAMS, gen_set_params),
            entry!(GEN_SETTABLE_PARAMS, $settable),
            entry!(GEN, gen),
            entry!(GEN_CLEANUP, gen_cleanup),
            entry!(FREE, free),
            entry!(GET_PARAMS, get_params),
            entry!(GETTABLE_PARAMS, gettable_params),
            entry!(SET_PARAMS, set_params),
            entry!(SETTABLE_PARAMS, settable_params),
            entry!(QUERY_OPERATION_NAME, $name),
            entry!(HAS, has),
            entry!(MATCH, key_match),
            entry!(IMPORT, import),
            entry!(IMPORT_TYPES, $types),
            entry!(EXPORT, export),
            entry!(EXPORT_TYPES, $types),
            crate::END,
        ])
    };
}

pub(crate) static DH_KEYMGMT: Static<[OSSL_DISPATCH; 20]> = ffc_keymgmt!(
    dh_new,
    dh_gen_init,
    dh_gen_settable,
    dh_types,
    dh_query_operation_name
);

pub(crate) static DHX_KEYMGMT: Static<[OSSL_DISPATCH; 20]> = ffc_keymgmt!(
    dhx_new,
    dhx_gen_init,
    ffc_gen_settable,
    ffc_types,
    dh_query_operation_name
);

pub(crate) static DSA_KEYMGMT: Static<[OSSL_DISPATCH; 20]> = ffc_keymgmt!(
    dsa_new,
    dsa_gen_init,
    ffc_gen_settable,
    ffc_types,
    dsa_query_operation_name
);
