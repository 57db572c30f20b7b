//! Every number of OpenSSL 3's provider ABI this module uses, named as
//! OpenSSL's headers name it, in one place: the module links no libcrypto
//! and includes no header, so these are copied by hand (from 3.0's
//! `core_dispatch.h`, `core.h`, `core_names.h` and `tls1.h`). The numbers
//! are part of OpenSSL's stable ABI; `tests/openssl.rs` compiles them
//! against the installed headers and compares each one.

use std::ffi::{c_int, c_uint};

macro_rules! numbers {
    ($($name:ident : $ty:ty = $v:expr;)*) => {
        $(
            #[allow(missing_docs)]
            pub const $name: $ty = $v;
        )*
        /// Every number, by its C name, for the test against the headers.
        pub const TABLE: &[(&str, i64)] = &[$((stringify!($name), $v as i64)),*];
    };
}

numbers! {
    OSSL_FUNC_CORE_GET_PARAMS: c_int = 2;
    OSSL_FUNC_CORE_NEW_ERROR: c_int = 5;
    OSSL_FUNC_CORE_SET_ERROR_DEBUG: c_int = 6;
    OSSL_FUNC_CORE_VSET_ERROR: c_int = 7;
    OSSL_FUNC_PROVIDER_TEARDOWN: c_int = 1024;
    OSSL_FUNC_PROVIDER_GETTABLE_PARAMS: c_int = 1025;
    OSSL_FUNC_PROVIDER_GET_PARAMS: c_int = 1026;
    OSSL_FUNC_PROVIDER_QUERY_OPERATION: c_int = 1027;
    OSSL_FUNC_PROVIDER_GET_REASON_STRINGS: c_int = 1029;
    OSSL_FUNC_PROVIDER_GET_CAPABILITIES: c_int = 1030;
    OSSL_OP_KEYMGMT: c_int = 10;
    OSSL_FUNC_KEYMGMT_NEW: c_int = 1;
    OSSL_FUNC_KEYMGMT_GEN_INIT: c_int = 2;
    OSSL_FUNC_KEYMGMT_GEN_SET_TEMPLATE: c_int = 3;
    OSSL_FUNC_KEYMGMT_GEN_SET_PARAMS: c_int = 4;
    OSSL_FUNC_KEYMGMT_GEN_SETTABLE_PARAMS: c_int = 5;
    OSSL_FUNC_KEYMGMT_GEN: c_int = 6;
    OSSL_FUNC_KEYMGMT_GEN_CLEANUP: c_int = 7;
    OSSL_FUNC_KEYMGMT_FREE: c_int = 10;
    OSSL_FUNC_KEYMGMT_GET_PARAMS: c_int = 11;
    OSSL_FUNC_KEYMGMT_GETTABLE_PARAMS: c_int = 12;
    OSSL_FUNC_KEYMGMT_SET_PARAMS: c_int = 13;
    OSSL_FUNC_KEYMGMT_SETTABLE_PARAMS: c_int = 14;
    OSSL_FUNC_KEYMGMT_QUERY_OPERATION_NAME: c_int = 20;
    OSSL_FUNC_KEYMGMT_HAS: c_int = 21;
    OSSL_FUNC_KEYMGMT_MATCH: c_int = 23;
    OSSL_FUNC_KEYMGMT_IMPORT: c_int = 40;
    OSSL_FUNC_KEYMGMT_IMPORT_TYPES: c_int = 41;
    OSSL_FUNC_KEYMGMT_EXPORT: c_int = 42;
    OSSL_FUNC_KEYMGMT_EXPORT_TYPES: c_int = 43;
    OSSL_KEYMGMT_SELECT_PRIVATE_KEY: c_int = 0x01;
    OSSL_KEYMGMT_SELECT_PUBLIC_KEY: c_int = 0x02;
    OSSL_KEYMGMT_SELECT_DOMAIN_PARAMETERS: c_int = 0x04;
    OSSL_PARAM_INTEGER: c_uint = 1;
    OSSL_PARAM_UNSIGNED_INTEGER: c_uint = 2;
    OSSL_PARAM_UTF8_STRING: c_uint = 4;
    OSSL_PARAM_OCTET_STRING: c_uint = 5;
    OSSL_PARAM_UTF8_PTR: c_uint = 6;
    TLS1_3_VERSION: c_int = 0x0304;
}
