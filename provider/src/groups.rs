//! The TLS-GROUP capability for the RFC 7919 groups.
//!
//! libssl only uses a TLS group whose key management comes from the
//! provider that announced the group. When this module is preferred for DH
//! (`default_properties = ?provider=primeforge`), DH key management is ours,
//! so the default provider's ffdhe groups would silently vanish from TLS
//! 1.3; announcing them here keeps them, with the default provider's
//! figures (RFC 7919 code points 256–260, TLS 1.3 and later, not DTLS).

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};

use crate::params::{INTEGER, OSSL_PARAM, UNSIGNED_INTEGER, UTF8_STRING};

type OSSL_CALLBACK = unsafe extern "C" fn(*const OSSL_PARAM, *mut c_void) -> c_int;

/// (name, TLS code point, security bits), as OpenSSL's default provider.
const GROUPS: [(&CStr, c_uint, c_uint); 5] = [
    (c"ffdhe2048", 256, 112),
    (c"ffdhe3072", 257, 128),
    (c"ffdhe4096", 258, 128),
    (c"ffdhe6144", 259, 128),
    (c"ffdhe8192", 260, 192),
];

use crate::abi::TLS1_3_VERSION;

fn text(key: &'static CStr, v: &'static CStr) -> OSSL_PARAM {
    OSSL_PARAM {
        key: key.as_ptr(),
        data_type: UTF8_STRING,
        data: v.as_ptr() as *mut c_void,
        data_size: v.to_bytes().len(),
        return_size: usize::MAX,
    }
}

fn num<T>(key: &'static CStr, data_type: c_uint, v: &mut T) -> OSSL_PARAM {
    OSSL_PARAM {
        key: key.as_ptr(),
        data_type,
        data: (v as *mut T).cast(),
        data_size: std::mem::size_of::<T>(),
        return_size: usize::MAX,
    }
}

/// `OSSL_FUNC_provider_get_capabilities`: the five ffdhe groups for
/// "TLS-GROUP", nothing for other capabilities.
pub(crate) unsafe extern "C" fn get_capabilities(
    _provctx: *mut c_void,
    capability: *const c_char,
    cb: Option<OSSL_CALLBACK>,
    arg: *mut c_void,
) -> c_int {
    crate::guard(0, || {
        let Some(cb) = cb else { return 0 };
        if capability.is_null() {
            return 0;
        }
        // SAFETY: OpenSSL passes a C string.
        if unsafe { CStr::from_ptr(capability) }.to_bytes() != b"TLS-GROUP" {
            return 1;
        }
        for (name, id, sec) in GROUPS {
            let (mut id, mut sec, mut kem) = (id, sec, 0 as c_uint);
            let (mut min_tls, mut max_tls, mut min_dtls, mut max_dtls) =
                (TLS1_3_VERSION, 0 as c_int, -1 as c_int, -1 as c_int);
            let arr = [
                text(c"tls-group-name", name),
                text(c"tls-group-name-internal", name),
                num(c"tls-group-id", UNSIGNED_INTEGER, &mut id),
                text(c"tls-group-alg", c"DH"),
                num(c"tls-group-sec-bits", UNSIGNED_INTEGER, &mut sec),
                num(c"tls-group-is-kem", UNSIGNED_INTEGER, &mut kem),
                num(c"tls-min-tls", INTEGER, &mut min_tls),
                num(c"tls-max-tls", INTEGER, &mut max_tls),
                num(c"tls-min-dtls", INTEGER, &mut min_dtls),
                num(c"tls-max-dtls", INTEGER, &mut max_dtls),
                crate::params::END,
            ];
            // SAFETY: OpenSSL's callback with a terminated array whose
            // data live until it returns.
            if unsafe { cb(arr.as_ptr(), arg) } == 0 {
                return 0;
            }
        }
        1
    })
}
