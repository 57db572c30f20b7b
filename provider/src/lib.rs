//! primeforge as an OpenSSL 3 provider: key management "gen" for RSA and
//! DH, so that `openssl genpkey`, `openssl dhparam` and every EVP caller
//! (`EVP_PKEY_keygen`, `EVP_PKEY_paramgen`) get primeforge's engine
//! without code changes. Keys are made in primeforge's secure memory and
//! handed to the default provider (for signing, encoding, …) through
//! `export`; the exported numbers are wiped after the callback.
//!
//! OpenSSL is reached only through the dispatch tables: no libcrypto is
//! linked (the OSSL_PARAM arrays are plain C structures, read and written
//! in `params`), so one module serves OpenSSL 3.0 and later.

#![cfg_attr(not(test), deny(clippy::undocumented_unsafe_blocks))]
#![allow(non_camel_case_types)]
#![allow(clippy::missing_safety_doc)]

#[doc(hidden)]
pub mod abi;
mod errors;
mod groups;
mod keymgmt;
mod params;

use std::ffi::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

pub use params::OSSL_PARAM;

/// One entry of an OpenSSL dispatch table.
#[repr(C)]
pub struct OSSL_DISPATCH {
    function_id: c_int,
    function: Option<unsafe extern "C" fn()>,
}

/// One algorithm implementation offered to OpenSSL.
#[repr(C)]
pub struct OSSL_ALGORITHM {
    names: *const c_char,
    property_definition: *const c_char,
    implementation: *const OSSL_DISPATCH,
    description: *const c_char,
}

/// A static table of raw pointers to static data.
#[repr(transparent)]
pub(crate) struct Static<T>(pub T);
// SAFETY: every pointer in the wrapped tables points to static, immutable
// data (C strings, functions, other tables).
unsafe impl<T> Sync for Static<T> {}

/// A dispatch entry from a function of any signature.
macro_rules! entry {
    ($id:expr, $f:expr) => {
        $crate::OSSL_DISPATCH {
            function_id: $id,
            // SAFETY: OpenSSL casts the pointer back to the signature that
            // the function id documents, which is `$f`'s.
            function: Some(unsafe {
                std::mem::transmute::<*const (), unsafe extern "C" fn()>($f as *const ())
            }),
        }
    };
}
pub(crate) use entry;

/// The table's end.
pub(crate) const END: OSSL_DISPATCH = OSSL_DISPATCH {
    function_id: 0,
    function: None,
};

use abi::{
    OSSL_FUNC_CORE_GET_PARAMS, OSSL_FUNC_PROVIDER_GETTABLE_PARAMS,
    OSSL_FUNC_PROVIDER_GET_CAPABILITIES, OSSL_FUNC_PROVIDER_GET_PARAMS,
    OSSL_FUNC_PROVIDER_GET_REASON_STRINGS, OSSL_FUNC_PROVIDER_QUERY_OPERATION,
    OSSL_FUNC_PROVIDER_TEARDOWN, OSSL_OP_KEYMGMT,
};

/// The provider's context: the configured default thread count.
pub(crate) struct ProvCtx {
    /// `threads` from the provider's openssl.cnf section (0 = all cores).
    pub threads: u32,
}

/// Runs `f`, turning a panic into `fallback`: no panic crosses into
/// OpenSSL.
pub(crate) fn guard<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}

type CoreGetParams = unsafe extern "C" fn(*const c_void, *mut OSSL_PARAM) -> c_int;

/// The module's entry point, called by OpenSSL when the provider is
/// loaded. Reads the `threads` setting of the provider's configuration
/// section and hands back the provider's dispatch table.
///
/// # Safety
/// Called by OpenSSL with its documented arguments.
#[no_mangle]
pub unsafe extern "C" fn OSSL_provider_init(
    handle: *const c_void,
    core_in: *const OSSL_DISPATCH,
    out: *mut *const OSSL_DISPATCH,
    provctx: *mut *mut c_void,
) -> c_int {
    guard(0, || {
        if out.is_null() || provctx.is_null() {
            return 0;
        }
        let mut threads = 0u32;
        let (mut new_error, mut set_debug, mut vset) = (None, None, None);
        let mut d = core_in;
        // SAFETY: OpenSSL's table ends with a zero function id.
        while !d.is_null() && unsafe { (*d).function_id } != 0 {
            // SAFETY: as above.
            let entry = unsafe { &*d };
            if let Some(f) = entry.function {
                // SAFETY: each id documents its function's signature.
                unsafe {
                    match entry.function_id {
                        errors::NEW_ERROR => {
                            new_error = Some(std::mem::transmute::<
                                unsafe extern "C" fn(),
                                errors::NewError,
                            >(f))
                        }
                        errors::SET_ERROR_DEBUG => {
                            set_debug = Some(std::mem::transmute::<
                                unsafe extern "C" fn(),
                                errors::SetErrorDebug,
                            >(f))
                        }
                        errors::VSET_ERROR => {
                            vset = Some(std::mem::transmute::<
                                unsafe extern "C" fn(),
                                errors::VsetError,
                            >(f))
                        }
                        _ => {}
                    }
                }
            }
            if entry.function_id == OSSL_FUNC_CORE_GET_PARAMS {
                if let Some(f) = entry.function {
                    // SAFETY: the id documents this signature.
                    let get: CoreGetParams = unsafe { std::mem::transmute(f) };
                    threads = params::config_threads(get, handle).unwrap_or(0);
                }
            }
            // SAFETY: within the table.
            d = unsafe { d.add(1) };
        }
        let _ = errors::CORE.set(errors::Core {
            handle,
            new_error,
            set_error_debug: set_debug,
            vset_error: vset,
        });
        let ctx = Box::new(ProvCtx { threads });
        // SAFETY: out-pointers checked for NULL.
        unsafe {
            *provctx = Box::into_raw(ctx).cast();
            *out = PROVIDER.0.as_ptr();
        }
        1
    })
}

unsafe extern "C" fn teardown(provctx: *mut c_void) {
    guard((), || {
        if !provctx.is_null() {
            // SAFETY: made by OSSL_provider_init with Box::into_raw.
            drop(unsafe { Box::from_raw(provctx.cast::<ProvCtx>()) });
        }
        // The provider is being unloaded: no worker parked between
        // generations outlives it (the module itself is linked NODELETE,
        // so none could run unmapped code, but nothing would end them).
        primeforge::release_workers();
    })
}

static PROVIDER_GETTABLE: Static<[OSSL_PARAM; 4]> = Static([
    params::describe(c"name", params::UTF8_PTR),
    params::describe(c"version", params::UTF8_PTR),
    params::describe(c"buildinfo", params::UTF8_PTR),
    params::END,
]);

unsafe extern "C" fn gettable_params(_provctx: *mut c_void) -> *const OSSL_PARAM {
    PROVIDER_GETTABLE.0.as_ptr()
}

unsafe extern "C" fn get_params(_provctx: *mut c_void, p: *mut OSSL_PARAM) -> c_int {
    guard(0, || {
        // SAFETY: OpenSSL passes a terminated array (or NULL).
        unsafe {
            params::set_utf8_ptr(p, "name", c"primeforge");
            params::set_utf8_ptr(
                p,
                "version",
                std::ffi::CStr::from_bytes_with_nul(
                    concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes(),
                )
                .unwrap(),
            );
            params::set_utf8_ptr(p, "buildinfo", c"primeforge (Rust, GMP 6.3.0 private)");
        }
        1
    })
}

static KEYMGMT_ALGORITHMS: Static<[OSSL_ALGORITHM; 5]> = Static([
    OSSL_ALGORITHM {
        names: c"RSA:rsaEncryption:1.2.840.113549.1.1.1".as_ptr(),
        property_definition: c"provider=primeforge".as_ptr(),
        implementation: keymgmt::RSA_KEYMGMT.0.as_ptr(),
        description: c"primeforge RSA key generation (FIPS 186-5 A.1.3, all cores)".as_ptr(),
    },
    OSSL_ALGORITHM {
        names: c"DH:dhKeyAgreement:1.2.840.113549.1.3.1".as_ptr(),
        property_definition: c"provider=primeforge".as_ptr(),
        implementation: keymgmt::DH_KEYMGMT.0.as_ptr(),
        description: c"primeforge DH parameter generation (safe primes, all cores)".as_ptr(),
    },
    OSSL_ALGORITHM {
        names: c"DHX:X9.42 DH:dhpublicnumber:1.2.840.10046.2.1".as_ptr(),
        property_definition: c"provider=primeforge".as_ptr(),
        implementation: keymgmt::DHX_KEYMGMT.0.as_ptr(),
        description: c"primeforge X9.42 DH parameters (FIPS 186-4 A.1.1.2, all cores)".as_ptr(),
    },
    OSSL_ALGORITHM {
        names: c"DSA:dsaEncryption:1.2.840.10040.4.1".as_ptr(),
        property_definition: c"provider=primeforge".as_ptr(),
        implementation: keymgmt::DSA_KEYMGMT.0.as_ptr(),
        description: c"primeforge DSA parameters (FIPS 186-4 A.1.1.2, all cores)".as_ptr(),
    },
    OSSL_ALGORITHM {
        names: std::ptr::null(),
        property_definition: std::ptr::null(),
        implementation: std::ptr::null(),
        description: std::ptr::null(),
    },
]);

unsafe extern "C" fn query_operation(
    _provctx: *mut c_void,
    operation_id: c_int,
    no_cache: *mut c_int,
) -> *const OSSL_ALGORITHM {
    if !no_cache.is_null() {
        // SAFETY: OpenSSL's out-parameter.
        unsafe { *no_cache = 0 };
    }
    if operation_id == OSSL_OP_KEYMGMT {
        KEYMGMT_ALGORITHMS.0.as_ptr()
    } else {
        std::ptr::null()
    }
}

unsafe extern "C" fn get_reason_strings(_provctx: *mut c_void) -> *const errors::OSSL_ITEM {
    errors::REASONS.0.as_ptr()
}

static PROVIDER: Static<[OSSL_DISPATCH; 7]> = Static([
    entry!(OSSL_FUNC_PROVIDER_TEARDOWN, teardown),
    entry!(OSSL_FUNC_PROVIDER_GETTABLE_PARAMS, gettable_params),
    entry!(OSSL_FUNC_PROVIDER_GET_PARAMS, get_params),
    entry!(OSSL_FUNC_PROVIDER_QUERY_OPERATION, query_operation),
    entry!(OSSL_FUNC_PROVIDER_GET_REASON_STRINGS, get_reason_strings),
    entry!(
        OSSL_FUNC_PROVIDER_GET_CAPABILITIES,
        groups::get_capabilities
    ),
    END,
]);
