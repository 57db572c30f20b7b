//! OSSL_PARAM arrays, read and written by hand (their layout is part of
//! OpenSSL 3's stable ABI: core.h).

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};

use zeroize::Zeroizing;

/// OpenSSL's parameter record.
#[repr(C)]
pub struct OSSL_PARAM {
    pub key: *const c_char,
    pub data_type: c_uint,
    pub data: *mut c_void,
    pub data_size: usize,
    pub return_size: usize,
}

pub use crate::abi::{
    OSSL_PARAM_INTEGER as INTEGER, OSSL_PARAM_OCTET_STRING as OCTET_STRING,
    OSSL_PARAM_UNSIGNED_INTEGER as UNSIGNED_INTEGER, OSSL_PARAM_UTF8_PTR as UTF8_PTR,
    OSSL_PARAM_UTF8_STRING as UTF8_STRING,
};
/// `OSSL_PARAM_UNMODIFIED`.
const UNMODIFIED: usize = usize::MAX;

/// A descriptor for a gettable/settable list.
pub const fn describe(key: &'static CStr, data_type: c_uint) -> OSSL_PARAM {
    OSSL_PARAM {
        key: key.as_ptr(),
        data_type,
        data: std::ptr::null_mut(),
        data_size: 0,
        return_size: UNMODIFIED,
    }
}

/// The terminator.
pub const END: OSSL_PARAM = OSSL_PARAM {
    key: std::ptr::null(),
    data_type: 0,
    data: std::ptr::null_mut(),
    data_size: 0,
    return_size: 0,
};

/// The index of the record named `key` in a terminated array.
///
/// # Safety
/// `p` is NULL or a terminated OSSL_PARAM array.
unsafe fn position(p: *const OSSL_PARAM, key: &str) -> Option<usize> {
    if p.is_null() {
        return None;
    }
    let mut i = 0;
    loop {
        // SAFETY: within the terminated array.
        let r = unsafe { &*p.add(i) };
        if r.key.is_null() {
            return None;
        }
        // SAFETY: keys are C strings.
        if unsafe { CStr::from_ptr(r.key) }.to_bytes() == key.as_bytes() {
            return Some(i);
        }
        i += 1;
    }
}

/// The record named `key` in a terminated array (NULL: none).
///
/// # Safety
/// `p` is NULL or a terminated OSSL_PARAM array.
pub unsafe fn find<'a>(p: *const OSSL_PARAM, key: &str) -> Option<&'a OSSL_PARAM> {
    // SAFETY: per the contract; the index is within the array.
    unsafe { position(p, key).map(|i| &*p.add(i)) }
}

/// The writable record named `key`.
///
/// # Safety
/// `p` is NULL or a terminated, writable OSSL_PARAM array.
unsafe fn find_mut<'a>(p: *mut OSSL_PARAM, key: &str) -> Option<&'a mut OSSL_PARAM> {
    // SAFETY: per the contract; the index is within the array.
    unsafe { position(p, key).map(|i| &mut *p.add(i)) }
}

/// An integer parameter (signed or unsigned, native endian, up to 8 bytes;
/// a longer unsigned one — a BIGNUM — when its value fits 64 bits).
///
/// # Safety
/// `r.data` is readable for `r.data_size` bytes.
pub unsafe fn get_u64(r: &OSSL_PARAM) -> Option<u64> {
    if r.data.is_null() || r.data_size == 0 {
        return None;
    }
    // SAFETY: per the contract.
    let bytes = unsafe { std::slice::from_raw_parts(r.data.cast::<u8>(), r.data_size) };
    match r.data_type {
        INTEGER | UNSIGNED_INTEGER => {
            // Native endian (little endian on every target we build for).
            let (low, high) = bytes.split_at(bytes.len().min(8));
            if high.iter().any(|&b| b != 0) {
                return None;
            }
            let mut v = [0u8; 8];
            v[..low.len()].copy_from_slice(low);
            let v = u64::from_le_bytes(v);
            if r.data_type == INTEGER && low.len() < 8 && bytes[low.len() - 1] & 0x80 != 0 {
                return None; // negative
            }
            if r.data_type == INTEGER && low.len() == 8 && (v as i64) < 0 {
                return None;
            }
            Some(v)
        }
        _ => None,
    }
}

/// A C integer parameter (INTEGER of 1 to 8 bytes, sign-extended, or an
/// UNSIGNED_INTEGER below 2^63) as an i64.
///
/// # Safety
/// As [`get_u64`].
pub unsafe fn get_i64(r: &OSSL_PARAM) -> Option<i64> {
    if r.data.is_null() || r.data_size == 0 || r.data_size > 8 {
        return None;
    }
    match r.data_type {
        INTEGER => {
            // SAFETY: per the contract.
            let bytes = unsafe { std::slice::from_raw_parts(r.data.cast::<u8>(), r.data_size) };
            // Native endian (little endian on every target we build for),
            // sign-extended from the top byte.
            let fill = if bytes[bytes.len() - 1] & 0x80 != 0 {
                0xff
            } else {
                0
            };
            let mut v = [fill; 8];
            v[..bytes.len()].copy_from_slice(bytes);
            Some(i64::from_le_bytes(v))
        }
        // SAFETY: per the contract.
        UNSIGNED_INTEGER => unsafe { get_u64(r) }.and_then(|v| i64::try_from(v).ok()),
        _ => None,
    }
}

/// An unsigned big number (native-endian byte array), big endian, in a
/// buffer of exactly its size (never reallocated, so no copy is left
/// behind) that is wiped when dropped: the number may be a private key's
/// part.
///
/// # Safety
/// As [`get_u64`].
pub unsafe fn get_bn(r: &OSSL_PARAM) -> Option<Zeroizing<Vec<u8>>> {
    if r.data_type != UNSIGNED_INTEGER || r.data.is_null() {
        return None;
    }
    // SAFETY: per the contract.
    let bytes = unsafe { std::slice::from_raw_parts(r.data.cast::<u8>(), r.data_size) };
    // Native endian (little endian here): the top byte is the last non-zero.
    let top = bytes.iter().rposition(|&b| b != 0);
    let mut be = Zeroizing::new(Vec::with_capacity(top.map_or(1, |t| t + 1)));
    match top {
        Some(t) => be.extend(bytes[..=t].iter().rev()),
        None => be.push(0),
    }
    Some(be)
}

/// A 32-byte value given as 64 hexadecimal digits in a UTF-8 parameter
/// (a generation's seed), decoded straight from the parameter's bytes into
/// a buffer wiped when dropped.
///
/// # Safety
/// As [`get_utf8`].
pub unsafe fn get_hex32(r: &OSSL_PARAM) -> Option<Zeroizing<[u8; 32]>> {
    let text: &[u8] = match r.data_type {
        // SAFETY: per the contract.
        UTF8_STRING if !r.data.is_null() => unsafe {
            std::slice::from_raw_parts(r.data.cast::<u8>(), r.data_size)
        },
        UTF8_PTR if !r.data.is_null() => {
            // SAFETY: data points at a `const char *`.
            let s = unsafe { *(r.data as *const *const c_char) };
            if s.is_null() {
                return None;
            }
            // SAFETY: a C string.
            unsafe { CStr::from_ptr(s) }.to_bytes()
        }
        _ => return None,
    };
    let text = text.split(|&c| c == 0).next().unwrap_or(text).trim_ascii();
    if text.len() != 64 {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut out = Zeroizing::new([0u8; 32]);
    for (o, pair) in out.iter_mut().zip(text.chunks(2)) {
        *o = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(out)
}

/// A UTF-8 string parameter.
///
/// # Safety
/// `r.data` is readable for `r.data_size` bytes (or a pointer to a string
/// for UTF8_PTR).
pub unsafe fn get_utf8(r: &OSSL_PARAM) -> Option<String> {
    match r.data_type {
        UTF8_STRING if !r.data.is_null() => {
            // SAFETY: per the contract.
            let b = unsafe { std::slice::from_raw_parts(r.data.cast::<u8>(), r.data_size) };
            let b = b.split(|&c| c == 0).next().unwrap_or(b);
            String::from_utf8(b.to_vec()).ok()
        }
        UTF8_PTR if !r.data.is_null() => {
            // SAFETY: data points at a `const char *`.
            let s = unsafe { *(r.data as *const *const c_char) };
            if s.is_null() {
                return None;
            }
            // SAFETY: a C string.
            unsafe { CStr::from_ptr(s) }
                .to_str()
                .ok()
                .map(str::to_owned)
        }
        _ => None,
    }
}

/// Sets integer parameter `key` if requested (by size: 4 or 8 bytes).
///
/// # Safety
/// `p` is NULL or a terminated, writable array.
pub unsafe fn set_int(p: *mut OSSL_PARAM, key: &str, v: i64) -> bool {
    // SAFETY: per the contract.
    let Some(r) = (unsafe { find_mut(p, key) }) else {
        return true;
    };
    if r.data_type != INTEGER && r.data_type != UNSIGNED_INTEGER {
        return false;
    }
    match r.data_size {
        4 => {
            r.return_size = 4;
            if !r.data.is_null() {
                // SAFETY: 4 writable bytes.
                unsafe { r.data.cast::<i32>().write_unaligned(v as i32) };
            }
        }
        8 => {
            r.return_size = 8;
            if !r.data.is_null() {
                // SAFETY: 8 writable bytes.
                unsafe { r.data.cast::<i64>().write_unaligned(v) };
            }
        }
        _ => return false,
    }
    true
}

/// Writes `bytes` into a requested record of `key`'s type, as OpenSSL's
/// setters do: with no buffer only the size is returned; a buffer too
/// small fails.
///
/// # Safety
/// As [`set_int`].
unsafe fn set_bytes(p: *mut OSSL_PARAM, key: &str, data_type: c_uint, bytes: &[u8]) -> bool {
    // SAFETY: per the contract.
    let Some(r) = (unsafe { find_mut(p, key) }) else {
        return true;
    };
    if r.data_type != data_type {
        return false;
    }
    r.return_size = bytes.len();
    if r.data.is_null() {
        return true;
    }
    if r.data_size < bytes.len() {
        return false;
    }
    // SAFETY: `data_size` writable bytes.
    let out = unsafe { std::slice::from_raw_parts_mut(r.data.cast::<u8>(), r.data_size) };
    if data_type == UNSIGNED_INTEGER {
        // Native endian (little endian here), zero-padded to the buffer.
        out.fill(0);
        out.iter_mut()
            .zip(bytes.iter().rev())
            .for_each(|(o, b)| *o = *b);
        r.return_size = r.data_size;
    } else {
        out[..bytes.len()].copy_from_slice(bytes);
    }
    true
}

/// Sets an unsigned big-number record `key` to the big-endian `be`.
///
/// # Safety
/// As [`set_int`].
pub unsafe fn set_bn(p: *mut OSSL_PARAM, key: &str, be: &[u8]) -> bool {
    // SAFETY: per the contract.
    unsafe { set_bytes(p, key, UNSIGNED_INTEGER, be) }
}

/// Sets an octet-string record `key`.
///
/// # Safety
/// As [`set_int`].
pub unsafe fn set_octets(p: *mut OSSL_PARAM, key: &str, bytes: &[u8]) -> bool {
    // SAFETY: per the contract.
    unsafe { set_bytes(p, key, OCTET_STRING, bytes) }
}

/// An octet-string parameter's bytes.
///
/// # Safety
/// As [`get_u64`].
pub unsafe fn get_octets(r: &OSSL_PARAM) -> Option<Vec<u8>> {
    if r.data_type != OCTET_STRING || r.data.is_null() {
        return None;
    }
    // SAFETY: per the contract.
    Some(unsafe { std::slice::from_raw_parts(r.data.cast::<u8>(), r.data_size) }.to_vec())
}

/// Sets UTF8_PTR parameter `key` to static text if requested.
///
/// # Safety
/// As [`set_int`].
pub unsafe fn set_utf8_ptr(p: *mut OSSL_PARAM, key: &str, v: &'static CStr) {
    // SAFETY: per the contract.
    if let Some(r) = unsafe { find_mut(p, key) } {
        if r.data_type == UTF8_PTR && !r.data.is_null() {
            // SAFETY: data points at a `const char *` slot.
            unsafe { *(r.data as *mut *const c_char) = v.as_ptr() };
            r.return_size = v.to_bytes().len();
        }
    }
}

/// The `threads` setting of the provider's configuration section.
///
/// # Safety
/// `get` and `handle` come from OpenSSL's core dispatch table.
pub unsafe fn config_threads(
    get: unsafe extern "C" fn(*const c_void, *mut OSSL_PARAM) -> c_int,
    handle: *const c_void,
) -> Option<u32> {
    let mut value: *const c_char = std::ptr::null();
    let mut req = [
        OSSL_PARAM {
            key: c"threads".as_ptr(),
            data_type: UTF8_PTR,
            data: (&mut value as *mut *const c_char).cast(),
            data_size: 0,
            return_size: UNMODIFIED,
        },
        END,
    ];
    // SAFETY: a terminated array with one writable slot.
    if unsafe { get(handle, req.as_mut_ptr()) } == 0 || value.is_null() {
        return None;
    }
    // SAFETY: OpenSSL hands back a C string.
    unsafe { CStr::from_ptr(value) }
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Big numbers to hand to an OSSL_CALLBACK: owned little-endian buffers
/// (wiped on drop) and the array that points into them.
pub struct BnParams {
    keys: Vec<&'static CStr>,
    types: Vec<c_uint>,
    bufs: Vec<Vec<u8>>,
}

impl BnParams {
    pub fn new() -> BnParams {
        BnParams {
            keys: Vec::new(),
            types: Vec::new(),
            bufs: Vec::new(),
        }
    }

    /// Adds `key` = the big-endian number `be`.
    pub fn push(&mut self, key: &'static CStr, be: &[u8]) {
        let mut le: Vec<u8> = be.iter().rev().copied().collect();
        if le.is_empty() {
            le.push(0);
        }
        self.keys.push(key);
        self.types.push(UNSIGNED_INTEGER);
        self.bufs.push(le);
    }

    /// Adds `key` = the octet string `bytes`.
    pub fn push_octets(&mut self, key: &'static CStr, bytes: &[u8]) {
        self.keys.push(key);
        self.types.push(OCTET_STRING);
        self.bufs.push(bytes.to_vec());
    }

    /// Adds `key` = the C `int` `v`.
    pub fn push_int(&mut self, key: &'static CStr, v: i32) {
        self.keys.push(key);
        self.types.push(INTEGER);
        self.bufs.push(v.to_ne_bytes().to_vec());
    }

    /// The terminated array, valid while `self` lives and is not changed.
    pub fn array(&mut self) -> Vec<OSSL_PARAM> {
        let mut v: Vec<OSSL_PARAM> = self
            .keys
            .iter()
            .zip(&self.types)
            .zip(self.bufs.iter_mut())
            .map(|((k, &t), b)| OSSL_PARAM {
                key: k.as_ptr(),
                data_type: t,
                data: b.as_mut_ptr().cast(),
                data_size: b.len(),
                return_size: UNMODIFIED,
            })
            .collect();
        v.push(END);
        v
    }
}

impl Drop for BnParams {
    fn drop(&mut self) {
        for b in &mut self.bufs {
            for x in b.iter_mut() {
                // SAFETY: a valid byte of our own buffer; volatile so the
                // wipe of secret numbers is not optimised away.
                unsafe { std::ptr::write_volatile(x, 0) };
            }
        }
    }
}
