//! Passphrase sources, spelled as OpenSSL spells them (openssl-passphrase-
//! options(1)): `pass:TEXT`, `env:VAR`, `file:PATH`, `fd:N` and `stdin`.
//! From a file, a descriptor or standard input the first line is the
//! passphrase (its line end removed). The passphrase is read straight into
//! secure memory, never through an ordinary buffer: `env:` reads the
//! environment's own copy (`getenv`, no `OsString`), and `stdin` reads
//! descriptor 0 itself a byte at a time, not through the standard
//! library's buffered `Stdin`, whose heap buffer would keep the line (and
//! whatever followed it) for the life of the process. `pass:TEXT` is on
//! the command line, which every process listing shows and the argument
//! parser copies: it is for tests, not for passphrases that matter.

use std::io::Read;
use std::os::fd::FromRawFd;

use primeforge::SecureBuf;

/// Longest passphrase read from a file, descriptor or standard input.
const MAX_LINE: usize = 4096;

/// Reads the passphrase named by `spec` (`what` is the option, for
/// messages). An empty passphrase is refused unless `allow_empty`.
pub fn read(spec: &str, what: &str, allow_empty: bool) -> Result<SecureBuf, String> {
    let (kind, arg) = spec.split_once(':').unwrap_or((spec, ""));
    let buf = match kind {
        "pass" => secure(arg.as_bytes(), what)?,
        "env" => {
            let name = std::ffi::CString::new(arg)
                .map_err(|_| format!("{what} env:{arg:?}: a variable name has no NUL byte"))?;
            // SAFETY: getenv reads the environment, which nothing in this
            // program changes (no setenv; the library's threads have not
            // started); the pointer, when not NULL, is the environment's
            // NUL-terminated string, copied before anything else runs.
            let v = unsafe { libc::getenv(name.as_ptr()) };
            if v.is_null() {
                return Err(format!("{what} env:{arg}: the variable is not set"));
            }
            // SAFETY: as above.
            secure(unsafe { std::ffi::CStr::from_ptr(v) }.to_bytes(), what)?
        }
        "file" => {
            let f = std::fs::File::open(arg).map_err(|e| format!("{what} file:{arg}: {e}"))?;
            first_line(f, &format!("{what} file:{arg}"))?
        }
        "fd" => {
            let fd: i32 = arg
                .parse()
                .map_err(|_| format!("{what} fd:{arg}: not a file descriptor number"))?;
            // SAFETY: fcntl(F_GETFD) only asks whether `fd` is open.
            if fd < 0 || unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
                return Err(format!("{what} fd:{arg}: not an open file descriptor"));
            }
            first_line_of(fd, &format!("{what} fd:{arg}"))?
        }
        // Descriptor 0 itself, unbuffered (see the module notes).
        "stdin" if arg.is_empty() => first_line_of(0, &format!("{what} stdin"))?,
        _ => {
            return Err(format!(
                "{what} {spec:?}: use pass:TEXT, env:VAR, file:PATH, fd:N or stdin"
            ))
        }
    };
    if buf.is_empty() && !allow_empty {
        return Err(format!("{what}: the passphrase is empty"));
    }
    Ok(buf)
}

fn secure(bytes: &[u8], what: &str) -> Result<SecureBuf, String> {
    SecureBuf::from_slice(bytes).map_err(|e| format!("{what}: {e}"))
}

/// [`first_line`] of descriptor `fd`, which stays open (it is the
/// caller's, not ours to close).
fn first_line_of(fd: i32, what: &str) -> Result<SecureBuf, String> {
    // SAFETY: `fd` is this process's descriptor (0, or checked open by
    // the caller); ManuallyDrop keeps it open afterwards.
    let f = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
    first_line(&*f, what)
}

/// The first line of `r` without its "\n", read a byte at a time so that
/// nothing after it is consumed, each byte straight into secure memory (no
/// byte of it passes through a buffer of ours on the stack). A "\r"
/// before the "\n" is part of the passphrase, as OpenSSL 3.0 reads
/// `file:`, `fd:` and `stdin` sources: a passphrase file then opens a key
/// in both tools.
fn first_line(mut r: impl Read, what: &str) -> Result<SecureBuf, String> {
    // One byte more than the longest line: its line end.
    let mut buf = SecureBuf::new(MAX_LINE + 1).map_err(|e| format!("{what}: {e}"))?;
    let mut n = 0;
    loop {
        match r.read(&mut buf.as_mut_slice()[n..n + 1]) {
            Ok(0) => break,
            Ok(_) if buf.as_slice()[n] == b'\n' => break,
            Ok(_) => {
                n += 1;
                if n > MAX_LINE {
                    return Err(format!("{what}: longer than {MAX_LINE} bytes"));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("{what}: {e}")),
        }
    }
    secure(&buf.as_slice()[..n], what)
}
