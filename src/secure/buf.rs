//! `SecureBuf`: page-guarded, locked, non-dumpable memory for secret bytes.
//!
//! Layout of one allocation (P = page size):
//!
//! ```text
//!  base                                                     base + map_len
//!  | guard (P, PROT_NONE) | .. unused .. | canary | data (len) | guard (P) |
//!                         ^ region start           ^ data       ^ region end
//! ```
//!
//! The data is right-aligned against the trailing guard page, so reading or
//! writing even one byte past the end faults at once. A write before the
//! start of the data (an underflow) hits the canary, which is checked on
//! drop, or finally the leading guard page. The region between the guards is
//! `mlock`ed (best effort), excluded from core dumps (`MADV_DONTDUMP`) and
//! wiped in a forked child (`MADV_WIPEONFORK`, or not inherited at all with
//! `MADV_DONTFORK` on kernels older than 4.14). On drop the whole region is
//! wiped with `zeroize` before it is unlocked and unmapped.
//!
//! Like the rest of `secure`, it handles raw memory and knows nothing
//! about GMP.

use std::ptr::NonNull;
use std::sync::OnceLock;

use zeroize::Zeroize;

use crate::error::{Error, Result};

/// Size of the canary that sits immediately before the data.
const CANARY_LEN: usize = 16;

/// The largest secure buffer we hand out (far above any key encoding).
pub(crate) const MAX_LEN: usize = 1 << 30;

fn page_size() -> usize {
    static PAGE: OnceLock<usize> = OnceLock::new();
    *PAGE.get_or_init(|| {
        // SAFETY: sysconf has no preconditions.
        let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if p <= 0 {
            4096
        } else {
            p as usize
        }
    })
}

/// A per-process random canary, so an attacker who can write before a buffer
/// cannot forge it from a constant.
fn canary() -> &'static [u8; CANARY_LEN] {
    static CANARY: OnceLock<[u8; CANARY_LEN]> = OnceLock::new();
    CANARY.get_or_init(|| {
        let mut c = [0u8; CANARY_LEN];
        if getrandom::fill(&mut c).is_err() {
            // Still catches accidental underflows; documented as best effort.
            c = *b"primeforge-canry";
        }
        c
    })
}

/// Secret bytes in guarded, locked, non-dumpable memory.
pub struct SecureBuf {
    base: NonNull<u8>,
    map_len: usize,
    /// Offset of the data from `base`.
    data_off: usize,
    len: usize,
    locked: bool,
    /// The process that mapped the buffer. In a `fork()` child the region
    /// reads as zeros (`MADV_WIPEONFORK`) or is absent (`MADV_DONTFORK`), so
    /// the child must neither check the canary nor touch the region.
    owner_pid: libc::pid_t,
}

// SAFETY: SecureBuf owns its mapping exclusively; the bytes are plain data.
unsafe impl Send for SecureBuf {}
// SAFETY: shared access only reads through `&self`.
unsafe impl Sync for SecureBuf {}

impl SecureBuf {
    /// Allocates `len` zeroed bytes. `len` may be 0.
    pub fn new(len: usize) -> Result<Self> {
        crate::fault::point("secure_alloc");
        if len > MAX_LEN {
            return Err(Error::NoMemory);
        }
        // A buffer is made to take a secret, usually just computed: what
        // of it the vector registers still hold must not sit in them
        // through the system calls below (mmap, mlock, madvise, getpid),
        // where a core dump or another process's ptrace reads them.
        super::clear_registers();
        let page = page_size();
        let region = (len + CANARY_LEN).div_ceil(page) * page;
        let map_len = region + 2 * page;
        // SAFETY: anonymous private mapping, no address hint.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return Err(Error::NoMemory);
        }
        let base = NonNull::new(raw.cast::<u8>()).ok_or(Error::NoMemory)?;
        // SAFETY: base + page .. base + page + region lies inside the mapping.
        let region_ptr = unsafe { base.as_ptr().add(page) }.cast::<libc::c_void>();
        // SAFETY: region_ptr/region describe pages of our own mapping.
        let rw = unsafe { libc::mprotect(region_ptr, region, libc::PROT_READ | libc::PROT_WRITE) };
        if rw != 0 {
            // SAFETY: unmapping exactly what we mapped.
            unsafe { libc::munmap(raw, map_len) };
            return Err(Error::NoMemory);
        }
        // SAFETY: (all three) advice on our own mapping; failures are tolerated.
        unsafe {
            super::os::no_core_dump(raw, map_len);
            if !super::os::wipe_on_fork(region_ptr, region) {
                super::os::absent_in_child(region_ptr, region);
            }
        }
        // SAFETY: locking pages of our own mapping; failure is reported, not fatal.
        let locked = unsafe { libc::mlock(region_ptr, region) } == 0;
        let data_off = page + region - len;
        let buf = SecureBuf {
            base,
            map_len,
            data_off,
            len,
            locked,
            // SAFETY: getpid has no preconditions.
            owner_pid: unsafe { libc::getpid() },
        };
        // SAFETY: the canary bytes lie inside the read-write region.
        unsafe {
            std::ptr::copy_nonoverlapping(
                canary().as_ptr(),
                buf.base.as_ptr().add(data_off - CANARY_LEN),
                CANARY_LEN,
            );
        }
        Ok(buf)
    }

    /// Allocates a buffer holding a copy of `bytes`. The copy runs with
    /// asynchronous signals held and the registers it went through cleared
    /// before they are let through (`super::signals`): bytes copied in from
    /// a caller (a seed, a passphrase) reach no signal frame on the way.
    pub fn from_slice(bytes: &[u8]) -> Result<Self> {
        let mut b = Self::new(bytes.len())?;
        let signals = super::signals::hold();
        b.as_mut_slice().copy_from_slice(bytes);
        // The copy went through vector registers (glibc's memcpy keeps the
        // last bytes in zmm16/17): cleared before the next system call
        // (the signal mask's restore, a thread's creation, which copies
        // the registers to the new thread).
        super::clear_registers();
        drop(signals);
        Ok(b)
    }

    /// Number of data bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the buffer holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether this buffer was made by the parent of this `fork()` child: its
    /// region then reads as zeros (`MADV_WIPEONFORK`) or is not mapped
    /// (`MADV_DONTFORK`), and must not be used.
    pub fn is_inherited(&self) -> bool {
        // SAFETY: getpid has no preconditions.
        unsafe { libc::getpid() != self.owner_pid }
    }

    /// Whether `mlock` succeeded for the whole region.
    pub fn is_locked(&self) -> bool {
        self.locked
    }

    /// The data as a slice.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: data_off..data_off+len is mapped read-write for our lifetime.
        unsafe { std::slice::from_raw_parts(self.base.as_ptr().add(self.data_off), self.len) }
    }

    /// The data as a mutable slice.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` guarantees exclusivity.
        unsafe { std::slice::from_raw_parts_mut(self.base.as_ptr().add(self.data_off), self.len) }
    }

    /// Checks the canary in front of the data; false means something wrote
    /// before the start of the buffer.
    pub fn canary_intact(&self) -> bool {
        // SAFETY: the canary lies inside the read-write region.
        let found = unsafe {
            std::slice::from_raw_parts(
                self.base.as_ptr().add(self.data_off - CANARY_LEN),
                CANARY_LEN,
            )
        };
        // Constant-time comparison: the canary is a secret.
        found
            .iter()
            .zip(canary())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }

    /// The read-write region between the guard pages, for wiping.
    fn region_mut(&mut self) -> &mut [u8] {
        let page = page_size();
        // SAFETY: base+page .. base+map_len-page is our read-write region.
        unsafe {
            std::slice::from_raw_parts_mut(self.base.as_ptr().add(page), self.map_len - 2 * page)
        }
    }

    #[cfg(test)]
    pub(crate) fn region_ptr_and_len(&self) -> (usize, usize) {
        let page = page_size();
        (self.base.as_ptr() as usize + page, self.map_len - 2 * page)
    }
}

impl Drop for SecureBuf {
    fn drop(&mut self) {
        // What was last read of a secret may still be in the vector
        // registers; the system calls below would hold it in the kernel.
        super::clear_registers();
        // SAFETY: getpid has no preconditions.
        let in_owner = unsafe { libc::getpid() } == self.owner_pid;
        // In a fork child the kernel already wiped (or never mapped) the
        // region: there is nothing to check and nothing left to wipe.
        let intact = !in_owner || self.canary_intact();
        if in_owner {
            self.region_mut().zeroize();
            #[cfg(test)]
            tests::observe_before_unmap(self.region_mut());
        }
        let page = page_size();
        // SAFETY: unlocking and unmapping exactly what `new` mapped.
        unsafe {
            let region_ptr = self.base.as_ptr().add(page).cast::<libc::c_void>();
            if self.locked && in_owner {
                libc::munlock(region_ptr, self.map_len - 2 * page);
            }
            libc::munmap(self.base.as_ptr().cast(), self.map_len);
        }
        if !intact {
            // Memory before the buffer was overwritten: the process's memory
            // is corrupt and continuing could leak or forge secrets. Like
            // libsodium's sodium_free, stop here (the secret is already wiped).
            const MSG: &[u8] = b"primeforge: secure buffer canary corrupted (write before the start of a pf_buffer); aborting\n";
            // SAFETY: writing a static message to stderr.
            unsafe { libc::write(2, MSG.as_ptr().cast(), MSG.len()) };
            std::process::abort();
        }
    }
}

impl std::fmt::Debug for SecureBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecureBuf")
            .field("len", &self.len)
            .field("locked", &self.locked)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::cell::Cell;

    thread_local! {
        /// Set by a test to learn whether the last region unmapped on this
        /// thread was all zero.
        static LAST_UNMAP_ZERO: Cell<Option<bool>> = const { Cell::new(None) };
    }

    pub(crate) fn observe_before_unmap(region: &[u8]) {
        LAST_UNMAP_ZERO.with(|c| c.set(Some(region.iter().all(|&b| b == 0))));
    }

    #[test]
    fn lengths_from_zero_to_one_mib() {
        for len in [
            0usize,
            1,
            15,
            16,
            17,
            4079,
            4080,
            4081,
            4096,
            65537,
            1 << 20,
        ] {
            let mut b = SecureBuf::new(len).unwrap();
            assert_eq!(b.len(), len);
            assert!(b.as_slice().iter().all(|&x| x == 0));
            b.as_mut_slice().fill(0xA5);
            assert!(b.as_slice().iter().all(|&x| x == 0xA5));
            assert!(b.canary_intact());
            // Right-aligned: the data ends exactly at the trailing guard page.
            let end = b.as_slice().as_ptr() as usize + len;
            assert_eq!(end % page_size(), 0, "len {len}");
        }
    }

    #[test]
    fn wiped_before_unmap() {
        let mut b = SecureBuf::new(3000).unwrap();
        b.as_mut_slice().fill(0x5A);
        LAST_UNMAP_ZERO.with(|c| c.set(None));
        drop(b);
        assert_eq!(LAST_UNMAP_ZERO.with(|c| c.get()), Some(true));
    }

    #[test]
    fn canary_detects_underflow() {
        let b = SecureBuf::new(64).unwrap();
        assert!(b.canary_intact());
        // SAFETY: the byte before the data is the canary's last byte, mapped.
        unsafe {
            let p = b.base.as_ptr().add(b.data_off - 1);
            p.write_volatile(p.read_volatile() ^ 1);
        }
        assert!(!b.canary_intact());
        // Repair so that drop does not abort the test process.
        unsafe {
            let p = b.base.as_ptr().add(b.data_off - 1);
            p.write_volatile(p.read_volatile() ^ 1);
        }
        assert!(b.canary_intact());
    }

    #[test]
    fn from_slice_copies() {
        let b = SecureBuf::from_slice(b"secret").unwrap();
        assert_eq!(b.as_slice(), b"secret");
        let _ = b.region_ptr_and_len();
    }

    #[test]
    fn absurd_length_refused() {
        assert_eq!(SecureBuf::new(MAX_LEN + 1).unwrap_err(), Error::NoMemory);
    }
}
