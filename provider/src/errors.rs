//! OpenSSL's error queue: refusals and failures are reported through the
//! core's `new_error`, `set_error_debug` and `vset_error`, with our
//! message (for example "bits: bits must be even, 512..=16384"), so that
//! `openssl genpkey` prints it and `ERR_get_error` callers see it.

use std::ffi::{c_char, c_int, c_uint, c_void, CString};
use std::sync::OnceLock;

/// Reason codes (this module's library in OpenSSL's error strings).
pub const INVALID_PARAMETER: u32 = 1;
pub const GENERATION_FAILED: u32 = 2;
pub const CANCELLED: u32 = 3;

/// `OSSL_ITEM`.
#[repr(C)]
pub struct OSSL_ITEM {
    id: c_uint,
    ptr: *const c_void,
}

pub static REASONS: crate::Static<[OSSL_ITEM; 4]> = crate::Static([
    OSSL_ITEM {
        id: INVALID_PARAMETER,
        ptr: c"invalid parameter".as_ptr().cast(),
    },
    OSSL_ITEM {
        id: GENERATION_FAILED,
        ptr: c"generation failed".as_ptr().cast(),
    },
    OSSL_ITEM {
        id: CANCELLED,
        ptr: c"cancelled".as_ptr().cast(),
    },
    OSSL_ITEM {
        id: 0,
        ptr: std::ptr::null(),
    },
]);

pub type NewError = unsafe extern "C" fn(*const c_void);
pub type SetErrorDebug = unsafe extern "C" fn(*const c_void, *const c_char, c_int, *const c_char);
/// `va_list` on x86-64 System V is a pointer to this record.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[repr(C)]
pub struct VaListTag {
    gp_offset: c_uint,
    fp_offset: c_uint,
    overflow_arg_area: *mut c_void,
    reg_save_area: *mut c_void,
}
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
pub type VsetError = unsafe extern "C" fn(*const c_void, u32, *const c_char, *mut VaListTag);
#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
pub type VsetError = unsafe extern "C" fn(*const c_void, u32, *const c_char, *mut c_void);

/// The core's error functions and our handle.
pub struct Core {
    pub handle: *const c_void,
    pub new_error: Option<NewError>,
    pub set_error_debug: Option<SetErrorDebug>,
    pub vset_error: Option<VsetError>,
}
// SAFETY: the handle and functions are OpenSSL's, valid for the provider's
// life and callable from any thread (OpenSSL's error queue is per thread).
unsafe impl Send for Core {}
// SAFETY: as above; nothing is mutated after initialisation.
unsafe impl Sync for Core {}

pub static CORE: OnceLock<Core> = OnceLock::new();

/// Function ids of the core's error functions.
pub use crate::abi::{
    OSSL_FUNC_CORE_NEW_ERROR as NEW_ERROR, OSSL_FUNC_CORE_SET_ERROR_DEBUG as SET_ERROR_DEBUG,
    OSSL_FUNC_CORE_VSET_ERROR as VSET_ERROR,
};

/// Puts an error with `reason` and `message` on the calling thread's queue.
pub fn raise(reason: u32, message: &str) {
    let Some(core) = CORE.get() else { return };
    let (Some(new_error), Some(set_debug), Some(vset)) =
        (core.new_error, core.set_error_debug, core.vset_error)
    else {
        return;
    };
    let msg = CString::new(message.replace('\0', " ")).unwrap_or_default();
    // SAFETY: OpenSSL's functions with our handle and C strings that live
    // across the calls.
    unsafe {
        new_error(core.handle);
        set_debug(
            core.handle,
            c"primeforge".as_ptr(),
            0,
            c"primeforge".as_ptr(),
        );
        vset_message(vset, core.handle, reason, &msg);
    }
}

/// `vset_error(handle, reason, "%s", args)` with `args` holding `msg`: a
/// va_list built by hand (x86-64 System V: every register slot marked
/// used, so the one argument is read from the overflow area).
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
unsafe fn vset_message(vset: VsetError, handle: *const c_void, reason: u32, msg: &CString) {
    let mut args: [*const c_char; 1] = [msg.as_ptr()];
    let mut tag = VaListTag {
        gp_offset: 48,
        fp_offset: 304,
        overflow_arg_area: args.as_mut_ptr().cast(),
        reg_save_area: std::ptr::null_mut(),
    };
    // SAFETY: "%s" reads exactly one `char *`, from the overflow area.
    unsafe { vset(handle, reason, c"%s".as_ptr(), &mut tag) };
}

/// Elsewhere the reason alone (no format: the va_list is not read).
#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
unsafe fn vset_message(vset: VsetError, handle: *const c_void, reason: u32, _msg: &CString) {
    // SAFETY: with a NULL format the va_list is not touched.
    unsafe { vset(handle, reason, std::ptr::null(), std::ptr::null_mut()) };
}
