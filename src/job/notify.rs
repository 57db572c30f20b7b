//! The file descriptor a job signals when it ends: an `eventfd` on Linux, a
//! pipe elsewhere. It is made readable once and never drained, so it stays
//! readable after the job ends (level-triggered for poll/epoll/kqueue and
//! asyncio's `add_reader`). Both ends are close-on-exec and non-blocking.

use std::os::fd::RawFd;

use crate::error::{Error, Result};

/// Owns the descriptor(s); closes them on drop.
pub(super) struct Notifier {
    /// What the caller polls.
    read: RawFd,
    /// What the job writes (the same descriptor for an eventfd).
    write: RawFd,
}

impl Notifier {
    /// A fresh, unsignalled notifier. Fails with [`Error::NoMemory`] when
    /// the process has no descriptor left (EMFILE/ENFILE) or the kernel no
    /// memory.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub(super) fn new() -> Result<Notifier> {
        // SAFETY: eventfd has no memory preconditions.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(Error::NoMemory);
        }
        Ok(Notifier {
            read: fd,
            write: fd,
        })
    }

    /// A fresh, unsignalled notifier (a pipe where there is no eventfd).
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    pub(super) fn new() -> Result<Notifier> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: `fds` has room for the two descriptors pipe writes.
        if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
            return Err(Error::NoMemory);
        }
        for fd in fds {
            // SAFETY: fcntl on descriptors we own.
            unsafe {
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
                let fl = libc::fcntl(fd, libc::F_GETFL);
                libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK);
            }
        }
        Ok(Notifier {
            read: fds[0],
            write: fds[1],
        })
    }

    /// The descriptor to poll for readability.
    pub(super) fn fd(&self) -> RawFd {
        self.read
    }

    /// Makes the descriptor readable (once is enough; it is never drained).
    pub(super) fn signal(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live local to a descriptor we own.
        // An eventfd takes exactly 8 bytes; a pipe takes them as data. It
        // cannot block (non-blocking) and a full pipe is readable anyway.
        let _ = unsafe { libc::write(self.write, (&one as *const u64).cast(), 8) };
    }

    /// Closes the descriptors without any other clean-up: the only thing a
    /// `fork()` child may do with a notifier it inherited.
    pub(super) fn close_inherited(&self) {
        self.close();
    }

    fn close(&self) {
        // SAFETY: closes descriptors this notifier owns, once (drop or the
        // fork child's release, never both).
        unsafe {
            libc::close(self.read);
            if self.write != self.read {
                libc::close(self.write);
            }
        }
    }
}

impl Drop for Notifier {
    fn drop(&mut self) {
        self.close();
    }
}
