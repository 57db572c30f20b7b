//! Valgrind's client requests: no-ops on a real CPU (and everywhere but
//! x86-64, where they are not wired up), read by valgrind when it runs us.

/// Memcheck's requests ('M', 'C' tool base).
pub(crate) const MAKE_MEM_UNDEFINED: u64 = 0x4d43_0001;
#[cfg(test)]
pub(crate) const MAKE_MEM_DEFINED: u64 = 0x4d43_0002;

/// A valgrind client request; returns 0 when not under valgrind.
#[cfg(target_arch = "x86_64")]
pub(crate) fn client_request(request: u64, addr: *const u8, len: usize) -> u64 {
    let args: [u64; 6] = [request, addr as u64, len as u64, 0, 0, 0];
    let mut result: u64 = 0;
    // SAFETY: valgrind's documented amd64 "magic sequence": four rotations
    // of rdi that add up to 128 (rdi is unchanged) and xchg rbx, rbx, a
    // no-op on a real CPU. Under valgrind it reads the six words at rax.
    unsafe {
        core::arch::asm!(
            "rol rdi, 3",
            "rol rdi, 13",
            "rol rdi, 61",
            "rol rdi, 51",
            "xchg rbx, rbx",
            in("rax") args.as_ptr(),
            inout("rdx") result,
            in("rdi") 0u64,
            options(nostack, preserves_flags),
        );
    }
    result
}

/// A valgrind client request; returns 0 when not under valgrind.
#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn client_request(_request: u64, _addr: *const u8, _len: usize) -> u64 {
    0
}
