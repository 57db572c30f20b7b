//! What the subcommands share: failures and their exit codes, the progress
//! meter, output paths checked before work and written by the `--out`
//! rules, and reading an input file into secure memory.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use primeforge::prime::{Options, Progress, Stats};
use primeforge::{Error, SecureBuf};

use crate::args::Common;
use crate::out;
use crate::signals::{GENERATING, INTERRUPTED};

/// A failure: message and exit code.
pub(crate) struct Fail(pub(crate) String, pub(crate) u8);

pub(crate) fn usage(msg: impl Into<String>) -> Fail {
    Fail(msg.into(), 2)
}

pub(crate) fn from_core(e: Error) -> Fail {
    match e {
        Error::InvalidArgument(what) => usage(what),
        Error::Cancelled => Fail("interrupted".into(), 130),
        other => Fail(other.to_string(), 1),
    }
}

/// Progress on stderr (a terminal only): candidates, rate, elapsed, ETA.
pub(crate) struct Meter {
    pub(crate) enabled: bool,
    pub(crate) expected: f64,
    pub(crate) what: &'static str,
    pub(crate) last: Instant,
    pub(crate) spin: usize,
}

impl Meter {
    fn new(quiet: bool, expected: f64, what: &'static str) -> Meter {
        Meter {
            enabled: !quiet && std::io::stderr().is_terminal(),
            expected,
            what,
            last: Instant::now() - Duration::from_secs(1),
            spin: 0,
        }
    }

    fn update(&mut self, p: &Progress) {
        if !self.enabled || self.last.elapsed() < Duration::from_millis(200) {
            return;
        }
        self.last = Instant::now();
        let secs = p.elapsed.as_secs_f64().max(1e-3);
        const SPIN: [char; 4] = ['|', '/', '-', '\\'];
        self.spin = (self.spin + 1) % 4;
        if p.candidates == 0 && p.primes_found == 0 {
            // A DH search builds its sieve before the first candidate
            // (seconds at 3072 bits and up): say so, not "0/s".
            eprint!(
                "\r\x1b[2K{} setting up the sieve, {} elapsed",
                SPIN[self.spin],
                human(secs)
            );
            let _ = std::io::stderr().flush();
            return;
        }
        let rate = p.candidates as f64 / secs;
        let eta = if (p.candidates as f64) < self.expected && rate > 0.0 {
            format!(
                "ETA ~{} (estimate)",
                human((self.expected - p.candidates as f64) / rate)
            )
        } else {
            "longer than average, still searching".into()
        };
        eprint!(
            "\r\x1b[2K{} {} {}, {:.0}/s, primes {}/{}, {} elapsed, {}",
            SPIN[self.spin],
            p.candidates,
            self.what,
            rate,
            p.primes_found,
            p.primes_needed,
            human(secs),
            eta
        );
        let _ = std::io::stderr().flush();
    }

    fn finish(&self, summary: &str) {
        if self.enabled {
            eprintln!("\r\x1b[2K{summary}");
        }
    }
}

pub(crate) fn human(secs: f64) -> String {
    if secs < 60.0 {
        format!("{secs:.1} s")
    } else if secs < 3600.0 {
        format!("{:.0} min {:.0} s", (secs / 60.0).floor(), secs % 60.0)
    } else {
        format!("{:.1} h", secs / 3600.0)
    }
}

/// Checks every output path before any work (see `out::check`): each must
/// be writable, none may be one of the `inputs`, and no two may name the
/// same file. `outputs` are (option, path) pairs; "-" and None are
/// standard output.
pub(crate) fn check_outputs(
    outputs: &[(&str, Option<&Path>)],
    inputs: &[&Path],
) -> Result<(), Fail> {
    let files: Vec<(&str, &Path)> = outputs
        .iter()
        .filter_map(|&(opt, p)| p.filter(|p| p.as_os_str() != "-").map(|p| (opt, p)))
        .collect();
    for (i, &(opt, p)) in files.iter().enumerate() {
        out::check(p).map_err(|e| Fail(format!("{opt} {}: {e}", p.display()), 1))?;
        let me = out::identity(p);
        for input in inputs {
            if me.is_some() && me == out::identity(input) {
                return Err(usage(format!(
                    "{opt} {} is the input file {}: it would be overwritten; write elsewhere",
                    p.display(),
                    input.display()
                )));
            }
        }
        for &(other, q) in &files[..i] {
            if me.is_some() && me == out::identity(q) {
                return Err(usage(format!(
                    "{other} and {opt} name the same file ({}): one would replace the other",
                    p.display()
                )));
            }
        }
    }
    Ok(())
}

/// Writes `data` to `path` by the `--out` rules (see the `out` module), or
/// to standard output when `path` is None or "-". `private` output (a
/// private key) gets mode 0600.
pub(crate) fn emit(data: &[u8], path: Option<&Path>, private: bool, der: bool) -> Result<(), Fail> {
    match path {
        Some(p) if p.as_os_str() != "-" => out::write(p, data, private)
            .map(|_| ())
            .map_err(|e| Fail(format!("{}: {e}", p.display()), 1)),
        _ => {
            if der && std::io::stdout().is_terminal() {
                return Err(usage("refusing to write DER to a terminal; use --out FILE"));
            }
            let mut out = std::io::stdout().lock();
            out.write_all(data)
                .and_then(|_| out.flush())
                .map_err(|e| Fail(format!("writing standard output: {e}"), 1))
        }
    }
}

/// Runs a generation with the progress meter on stderr and Ctrl-C wired to
/// the engine's cancel; `summary(elapsed, stats)` is the meter's last line.
pub(crate) fn with_progress<T>(
    c: &Common,
    expected: f64,
    what: &'static str,
    generate: impl FnOnce(&mut Options<'_>) -> primeforge::Result<(T, Stats)>,
    summary: impl FnOnce(String, &Stats) -> String,
) -> Result<T, Fail> {
    let mut meter = Meter::new(c.quiet, expected, what);
    let mut cb = |p: &Progress| {
        meter.update(p);
        INTERRUPTED.load(Ordering::SeqCst)
    };
    let mut opts = Options {
        threads: c.threads,
        seed: None,
        progress: Some(&mut cb),
        ..Default::default()
    };
    let start = Instant::now();
    GENERATING.store(true, Ordering::SeqCst);
    let result = generate(&mut opts);
    GENERATING.store(false, Ordering::SeqCst);
    if INTERRUPTED.load(Ordering::SeqCst) {
        return Err(from_core(Error::Cancelled));
    }
    let (value, stats) = result.map_err(from_core)?;
    meter.finish(&summary(human(start.elapsed().as_secs_f64()), &stats));
    Ok(value)
}

/// `text` followed by `pem`, in a secure buffer (the text of a private key
/// is as secret as the key).
pub(crate) fn with_text(text: &str, pem: &SecureBuf) -> Result<SecureBuf, Fail> {
    let mut both = SecureBuf::new(text.len() + pem.len()).map_err(from_core)?;
    both.as_mut_slice()[..text.len()].copy_from_slice(text.as_bytes());
    both.as_mut_slice()[text.len()..].copy_from_slice(pem.as_slice());
    Ok(both)
}

/// Reads a file (or stdin for "-") into a secure buffer.
pub(crate) fn read_secret(file: &Path) -> Result<SecureBuf, Fail> {
    use std::io::Read;
    let err = |e: std::io::Error| Fail(format!("{}: {e}", file.display()), 1);
    const MAX: u64 = 64 << 20;
    let too_big = || Fail(format!("{}: larger than 64 MiB", file.display()), 1);
    let mut first = 64 * 1024;
    // Standard input is read from descriptor 0 itself: the standard
    // library's `Stdin` buffers reads shorter than its 8 KiB buffer in a
    // heap block it keeps for the life of the process, and the key's text
    // must not be copied there. ManuallyDrop leaves descriptor 0 open.
    // SAFETY: descriptor 0 is this process's standard input.
    let stdin = std::mem::ManuallyDrop::new(unsafe {
        <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(0)
    });
    let mut reader: Box<dyn Read + '_> = if file.as_os_str() == "-" {
        Box::new(&*stdin)
    } else {
        let f = std::fs::File::open(file).map_err(err)?;
        // A regular file's size is known: refuse a big one unread, and
        // read a small one into one buffer of its size.
        let m = f.metadata().map_err(err)?;
        if m.is_file() {
            if m.len() > MAX {
                return Err(too_big());
            }
            first = m.len() as usize + 1;
        }
        Box::new(f)
    };
    let mut buf = SecureBuf::new(first).map_err(from_core)?;
    let mut len = 0;
    loop {
        if len == buf.len() {
            if len as u64 > MAX {
                return Err(too_big());
            }
            let mut bigger = SecureBuf::new((len * 2).min(MAX as usize + 1)).map_err(from_core)?;
            bigger.as_mut_slice()[..len].copy_from_slice(&buf.as_slice()[..len]);
            buf = bigger;
        }
        match reader.read(&mut buf.as_mut_slice()[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(err(e)),
        }
    }
    SecureBuf::from_slice(&buf.as_slice()[..len]).map_err(from_core)
}

/// A key file's failure, named after the file.
pub(crate) fn key_error(file: &Path, e: Error) -> Fail {
    match e {
        Error::Passphrase => Fail(
            format!(
                "{}: the key is encrypted and the passphrase (--passin) is {}",
                file.display(),
                "missing or wrong"
            ),
            1,
        ),
        Error::WrongKind(what) => Fail(format!("{}: {what}", file.display()), 1),
        Error::Decode => Fail(
            format!(
                "{}: not an RSA private key that can be read (PEM or DER)",
                file.display()
            ),
            1,
        ),
        other => from_core(other),
    }
}
