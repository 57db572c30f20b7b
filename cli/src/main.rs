//! `primeforge`: RSA keys and DH parameters on every core, from the
//! command line. Uses the Rust core directly (not the C ABI).

#![deny(clippy::undocumented_unsafe_blocks)]

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clap::{Args, Parser, Subcommand, ValueEnum};
use rug::Integer;

use primeforge::dh::{self, named::Group};
use primeforge::encode::pbes2::Kdf;
use primeforge::encode::{dh_export, rsa_export, rsa_export_encrypted, DhFormat, RsaFormat};
use primeforge::prime::{Options, Progress, Stats};
use primeforge::{Error, SecureBuf};

mod moduli;
mod out;
mod pass;
mod text;

/// Fast RSA key and Diffie-Hellman parameter generation on all cores.
///
/// Files are written as PEM by default (RFC 7468, OpenSSL's labels), DER
/// with --der. --out FILE never destroys what is at FILE: "-" is standard
/// output; a symbolic link is followed and its final target written; a
/// device, FIFO or socket is written through, never replaced; a regular
/// file is replaced atomically (temporary file in the same directory, then
/// rename), keeping its owner where possible, private keys with mode 0600.
/// An interrupted run (Ctrl-C) leaves the old file or none.
#[derive(Parser)]
#[command(
    name = "primeforge",
    version,
    about,
    long_about,
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Generate an RSA private key (FIPS 186-5 A.1.3).
    ///
    /// Example: primeforge rsa 3072 --out key.pem --pubout pub.pem
    ///
    /// Encrypted (PKCS#8 EncryptedPrivateKeyInfo: PBES2 with scrypt and
    /// AES-256-CBC, or --kdf pbkdf2 for PBKDF2-HMAC-SHA256; OpenSSL,
    /// pyca and certtool read both):
    /// primeforge rsa 3072 --encrypt --passout file:pass.txt --out key.pem
    Rsa(RsaArgs),
    /// Generate Diffie-Hellman parameters (a safe prime p = 2q + 1), or
    /// print a named group.
    ///
    /// For TLS, a named group (--named ffdhe2048) is the right choice for
    /// most servers: instant, vetted, and what RFC 7919 clients expect.
    /// Generated primes follow OpenSSL's conventions: g = 2 gives
    /// p ≡ 23 (mod 24) so that 2 generates the subgroup of prime order q;
    /// --legacy gives p ≡ 11 (mod 24) as OpenSSL 1.1 and BoringSSL expect;
    /// g = 5 gives p ≡ 59 (mod 60); other g, p ≡ 11 (mod 12).
    ///
    /// Example: primeforge dhparam 2048 --out dhparams.pem
    Dhparam(DhArgs),
    /// Check an RSA private key (PKCS#1, PKCS#8, or encrypted PKCS#8 with
    /// --passin), an RSA public key (SubjectPublicKeyInfo or PKCS#1) or DH
    /// parameters (PKCS#3 or X9.42), PEM or DER. PEM is read as OpenSSL
    /// reads it: text around the blocks, several blocks (the first key or
    /// parameters block is checked and named), any line length, CRLF.
    /// RSA-PSS keys and certificates are named, not checked. RFC 7919, 3526
    /// and 5114 groups are recognised. Where a sound RSA key falls short
    /// of FIPS 186-5, a note says so. Prints a short summary; exits 0 when
    /// valid, 1 when not.
    Check {
        /// The file to check ("-" reads standard input).
        file: PathBuf,
        /// Passphrase of an encrypted key: pass:TEXT, env:VAR, file:PATH,
        /// fd:N or stdin (the first line).
        #[arg(long, value_name = "SOURCE")]
        passin: Option<String>,
    },
    /// Write the public key (SubjectPublicKeyInfo, "PUBLIC KEY") of an RSA
    /// private key, like `openssl pkey -pubout`.
    ///
    /// Example: primeforge pubkey key.pem --out pub.pem
    Pubkey(PubkeyArgs),
    /// Generate or screen OpenSSH's Diffie-Hellman groups (moduli(5), the
    /// /etc/ssh/moduli format), on all cores.
    ///
    /// Generation writes COUNT safe primes of each size with the generator
    /// `ssh-keygen -M screen` would give them (g = 2, p ≡ 11 mod 24),
    /// sorted by size and value as /etc/ssh/moduli is. Ctrl-C keeps the
    /// lines already complete (exit 130). --screen re-checks an existing
    /// file (ours or ssh-keygen's, types 2 and 4) and writes the lines
    /// that pass, like `ssh-keygen -M screen`.
    ///
    /// Example: primeforge moduli --bits 2048,3072,4096 --count 20 --out moduli
    ///
    /// Example: primeforge moduli --screen /etc/ssh/moduli --out moduli.checked
    Moduli(ModuliArgs),
    /// Print shell completions for bash, zsh, fish, elvish or powershell.
    ///
    /// Example: primeforge completions bash > /etc/bash_completion.d/primeforge
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Write the manual pages (primeforge.1 and one per subcommand) into
    /// DIR.
    Man {
        /// The directory (created if missing).
        dir: PathBuf,
    },
}

#[derive(Args)]
struct ModuliArgs {
    /// Sizes of the moduli in bits, comma-separated (1024 to 8192, as
    /// OpenSSH uses them).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "2048,3072,4096,6144,8192"
    )]
    bits: Vec<u32>,
    /// Moduli per size.
    #[arg(long, short = 'n', default_value_t = 1)]
    count: u32,
    /// Screen this moduli file ("-" reads standard input) instead of
    /// generating.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["bits", "count"])]
    screen: Option<PathBuf>,
    #[command(flatten)]
    common: Common,
}

#[derive(Args)]
struct PubkeyArgs {
    /// The private key ("-" reads standard input).
    file: PathBuf,
    /// Passphrase of an encrypted key: pass:TEXT, env:VAR, file:PATH, fd:N
    /// or stdin.
    #[arg(long, value_name = "SOURCE")]
    passin: Option<String>,
    /// PKCS#1 RSAPublicKey ("RSA PUBLIC KEY") instead of
    /// SubjectPublicKeyInfo.
    #[arg(long)]
    rsa: bool,
    /// Write DER instead of PEM.
    #[arg(long)]
    der: bool,
    /// Output file, "-" for standard output (the default).
    #[arg(long, short = 'o', value_name = "FILE")]
    out: Option<PathBuf>,
}

#[derive(Args)]
struct Common {
    /// Worker threads (default: all available cores).
    #[arg(
        long,
        short = 't',
        value_name = "N",
        default_value_t = 0,
        hide_default_value = true
    )]
    threads: u32,
    /// Output file, "-" for standard output (the default). A symbolic link
    /// is followed, a device or FIFO written through, a regular file
    /// replaced atomically.
    #[arg(long, short = 'o', value_name = "FILE")]
    out: Option<PathBuf>,
    /// No progress display.
    #[arg(long, short = 'q')]
    quiet: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum KeyFormat {
    /// PKCS#8 PrivateKeyInfo ("PRIVATE KEY").
    Pkcs8,
    /// PKCS#1 RSAPrivateKey ("RSA PRIVATE KEY").
    Pkcs1,
}

#[derive(Clone, Copy, ValueEnum)]
enum KdfArg {
    /// scrypt, N = 2^14, r = 8, p = 1 (as `openssl pkcs8 -topk8 -scrypt`
    /// writes it; OpenSSL 3.0's own default is PBKDF2-HMAC-SHA256 with 2048
    /// iterations).
    Scrypt,
    /// PBKDF2-HMAC-SHA256, 600 000 iterations (for readers without scrypt,
    /// e.g. GnuTLS before 3.8).
    Pbkdf2,
}

#[derive(Args)]
struct RsaArgs {
    /// Modulus size in bits (even, 512 to 16384; default 3072).
    #[arg(value_name = "BITS", conflicts_with = "bits")]
    size: Option<u32>,
    /// The size, as an option (same as BITS).
    #[arg(long, short = 'b')]
    bits: Option<u32>,
    /// Public exponent (odd, at least 3).
    #[arg(long, short = 'e', default_value_t = 65537)]
    exponent: u64,
    /// Number of primes (2; up to 3 below 4096 bits, 4 below 8192, else 5).
    /// Keys of more than two primes are for OpenSSL: pyca, mbedTLS, Java and
    /// GnuTLS refuse them.
    #[arg(long, default_value_t = 2)]
    primes: u32,
    /// Provable primes: each prime is proven by a chain of Pocklington
    /// certificates (as nettle makes RSA primes) instead of being a FIPS
    /// 186-5 A.1.3 probable prime. Faster at 512 bits, about as fast from
    /// 1024 up; not FIPS 186-5.
    #[arg(long)]
    provable: bool,
    /// Private key container.
    #[arg(long, value_enum, default_value_t = KeyFormat::Pkcs8)]
    format: KeyFormat,
    /// Also write the public key (SubjectPublicKeyInfo) to FILE.
    #[arg(long, value_name = "FILE")]
    pubout: Option<PathBuf>,
    /// Encrypt the key under a passphrase (--passout): PKCS#8
    /// EncryptedPrivateKeyInfo, PBES2 with AES-256-CBC.
    #[arg(long, requires = "passout")]
    encrypt: bool,
    /// Where the passphrase comes from: pass:TEXT, env:VAR, file:PATH, fd:N
    /// or stdin (the first line). Read before the key is generated.
    #[arg(long, value_name = "SOURCE", requires = "encrypt")]
    passout: Option<String>,
    /// Key derivation for --encrypt.
    #[arg(long, value_enum, default_value_t = KdfArg::Scrypt, requires = "encrypt")]
    kdf: KdfArg,
    /// Print the key's components as text (like openssl pkey -text) before
    /// the PEM. They are secret: mind where the output goes.
    #[arg(long, conflicts_with = "der")]
    text: bool,
    /// Write DER instead of PEM.
    #[arg(long)]
    der: bool,
    #[command(flatten)]
    common: Common,
}

#[derive(Args)]
struct DhArgs {
    /// Size of p in bits (256 to 16384; default 2048).
    #[arg(conflicts_with = "named")]
    bits: Option<u32>,
    /// Generator (2 to 2^31 − 1).
    #[arg(long, short = 'g', default_value_t = 2)]
    generator: u32,
    /// For g = 2, the legacy form p ≡ 11 (mod 24) (OpenSSL 1.1, BoringSSL).
    #[arg(long)]
    legacy: bool,
    /// Write X9.42 parameters ("X9.42 DH PARAMETERS", with q = (p − 1)/2
    /// and g in the subgroup of order q) instead of PKCS#3 ("DH
    /// PARAMETERS"). For TLS servers keep PKCS#3: OpenSSL 3 generates keys
    /// from X9.42 parameters only with FIPS 186-4 sizes of q (160, 224,
    /// 256 bits), so `openssl genpkey -paramfile` fails on these and
    /// `openssl s_server -dhparam` silently uses a built-in group; GnuTLS
    /// 3.7 and mbedTLS 2.28 refuse the PEM form and read only DER (--der),
    /// dropping q. Not with --legacy.
    #[arg(long)]
    x942: bool,
    /// Print a named group instead of generating: ffdhe2048 … ffdhe8192
    /// (RFC 7919) or modp2048 … modp8192 (RFC 3526).
    #[arg(long, value_name = "GROUP", conflicts_with_all = ["generator", "legacy"])]
    named: Option<String>,
    /// Print the parameters as text (like openssl dhparam -text) before
    /// the PEM.
    #[arg(long)]
    text: bool,
    /// Write DER instead of PEM.
    #[arg(long)]
    der: bool,
    #[command(flatten)]
    common: Common,
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// Set while a generation runs: its progress callback turns an interrupt
/// into a cancel (the workers are joined, the secrets wiped). At any other
/// time an interrupt ends the process at once.
static GENERATING: AtomicBool = AtomicBool::new(false);

extern "C" fn on_interrupt(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
    if !GENERATING.load(Ordering::SeqCst) {
        let tmp = out::PENDING_TMP.load(Ordering::SeqCst);
        // SAFETY: unlink and _exit are async-signal-safe; `tmp` is NULL or
        // a live C string (leaked while the temporary file exists).
        unsafe {
            if !tmp.is_null() {
                libc::unlink(tmp);
            }
            libc::_exit(130);
        }
    }
}

/// Ctrl-C (SIGINT) and SIGTERM stop every subcommand at once; SIGPIPE gets
/// its default action back (Rust ignores it), so `primeforge check KEY |
/// head -1` ends quietly when the reader goes away.
fn install_signals() {
    let handler: extern "C" fn(libc::c_int) = on_interrupt;
    // SAFETY: the handler only touches atomics and calls async-signal-safe
    // functions.
    unsafe {
        libc::signal(libc::SIGINT, handler as libc::sighandler_t);
        libc::signal(libc::SIGTERM, handler as libc::sighandler_t);
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// OpenSSL's options and their primeforge spellings. OpenSSL-style
/// single-dash long options (`-out`, `-passin`, `-aes256`) would be read as
/// clusters of short options (`-o ut`), and clap would suggest `-- -out`:
/// they are answered with the spelling to use instead.
const OPENSSL_SPELLINGS: [(&str, &str); 37] = [
    ("out", "--out FILE"),
    ("in", "the file as an argument, e.g. primeforge check FILE"),
    ("passin", "--passin SOURCE"),
    ("passout", "--encrypt --passout SOURCE"),
    ("aes256", "--encrypt --passout SOURCE (AES-256-CBC)"),
    ("aes-256-cbc", "--encrypt --passout SOURCE (AES-256-CBC)"),
    (
        "aes128",
        "--encrypt --passout SOURCE (primeforge writes AES-256-CBC)",
    ),
    (
        "aes192",
        "--encrypt --passout SOURCE (primeforge writes AES-256-CBC)",
    ),
    (
        "des3",
        "--encrypt --passout SOURCE (primeforge writes AES-256-CBC)",
    ),
    ("pubout", "--pubout FILE (rsa), or primeforge pubkey KEY"),
    ("text", "--text"),
    ("noout", "primeforge check FILE (a summary, no key)"),
    ("check", "primeforge check FILE"),
    ("outform", "--der for DER output (input format is detected)"),
    ("inform", "nothing: PEM or DER input is detected"),
    ("traditional", "--format pkcs1"),
    ("nocrypt", "nothing: keys are unencrypted unless --encrypt"),
    (
        "dsaparam",
        "primeforge dhparam (safe primes; DSA-style parameters are not made)",
    ),
    (
        "rand",
        "nothing: primeforge draws from the operating system",
    ),
    ("engine", "nothing: primeforge is its own engine"),
    ("algorithm", "primeforge rsa or primeforge dhparam"),
    (
        "pkeyopt",
        "the options: --bits, --exponent, --primes, --generator",
    ),
    ("newkey", "primeforge rsa BITS --out key.pem"),
    ("bits", "--bits N"),
    (
        "numbits",
        "the size as an argument, e.g. primeforge rsa 3072",
    ),
    ("threads", "--threads N"),
    ("der", "--der"),
    ("quiet", "--quiet"),
    ("exponent", "--exponent E"),
    ("primes", "--primes N"),
    ("format", "--format pkcs8|pkcs1"),
    ("generator", "--generator G"),
    ("legacy", "--legacy"),
    ("x942", "--x942"),
    ("named", "--named GROUP"),
    ("help", "--help"),
    ("version", "--version"),
];

/// The one-line answer to an OpenSSL-style option, if `args` has one
/// (see [`OPENSSL_SPELLINGS`]); `-2` and `-5` are `openssl dhparam`'s
/// generators.
fn single_dash_long_option(args: &[std::ffi::OsString]) -> Option<String> {
    for a in args.iter().skip(1) {
        let Some(s) = a.to_str() else { continue };
        if s == "--" {
            break;
        }
        let Some(word) = s.strip_prefix('-') else {
            continue;
        };
        if word.starts_with('-') {
            continue;
        }
        if word.len() == 1 && word.as_bytes()[0].is_ascii_digit() {
            return Some(format!(
                "unknown option '{s}': primeforge spells the generator --generator {word}"
            ));
        }
        if word.len() < 2 {
            continue;
        }
        let name = word.split('=').next().unwrap_or(word);
        if let Some((_, spelling)) = OPENSSL_SPELLINGS.iter().find(|(o, _)| *o == name) {
            return Some(format!(
                "unknown option '{s}' (openssl's; primeforge's options take two dashes): use {spelling}"
            ));
        }
    }
    None
}

/// A failure: message and exit code.
struct Fail(String, u8);

fn usage(msg: impl Into<String>) -> Fail {
    Fail(msg.into(), 2)
}

fn from_core(e: Error) -> Fail {
    match e {
        Error::InvalidArgument(what) => usage(what),
        Error::Cancelled => Fail("interrupted".into(), 130),
        other => Fail(other.to_string(), 1),
    }
}

/// Progress on stderr (a terminal only): candidates, rate, elapsed, ETA.
struct Meter {
    enabled: bool,
    expected: f64,
    what: &'static str,
    last: Instant,
    spin: usize,
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

fn human(secs: f64) -> String {
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
fn check_outputs(outputs: &[(&str, Option<&Path>)], inputs: &[&Path]) -> Result<(), Fail> {
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
fn emit(data: &[u8], path: Option<&Path>, private: bool, der: bool) -> Result<(), Fail> {
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
fn with_progress<T>(
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

fn run_rsa(a: RsaArgs) -> Result<(), Fail> {
    let bits = a.size.or(a.bits).unwrap_or(3072);
    let request = if a.provable {
        primeforge::rsa::Request::provable(bits, a.exponent, a.primes)
    } else {
        primeforge::rsa::Request::new(bits, a.exponent, a.primes)
    }
    .map_err(from_core)?;
    let c = &a.common;
    if a.encrypt && matches!(a.format, KeyFormat::Pkcs1) {
        return Err(usage(
            "--encrypt writes PKCS#8 (encrypted PKCS#1 PEM is a legacy format); drop --format pkcs1",
        ));
    }
    if a.text && a.der {
        return Err(usage("--text prints text before PEM; not with --der"));
    }
    check_outputs(
        &[
            ("--out", c.out.as_deref()),
            ("--pubout", a.pubout.as_deref()),
        ],
        &[],
    )?;
    // The passphrase first: a bad source fails before minutes of work.
    let passphrase = match &a.passout {
        Some(spec) => Some(pass::read(spec, "--passout", false).map_err(|m| Fail(m, 1))?),
        None => None,
    };
    // Expected candidates: each k-bit prime takes k·ln2/2 odd candidates.
    let expected = bits as f64 * std::f64::consts::LN_2 / 2.0;
    let key = with_progress(
        c,
        expected,
        "candidates",
        |o| primeforge::rsa::generate_request(&request, o),
        |secs, st| {
            format!(
                "RSA-{} key in {secs} ({} candidates, {} exponentiations)",
                bits, st.candidates, st.exponentiations
            )
        },
    )?;
    let format = match (a.format, a.der) {
        (KeyFormat::Pkcs8, false) => RsaFormat::Pkcs8Pem,
        (KeyFormat::Pkcs8, true) => RsaFormat::Pkcs8Der,
        (KeyFormat::Pkcs1, false) => RsaFormat::Pkcs1Pem,
        (KeyFormat::Pkcs1, true) => RsaFormat::Pkcs1Der,
    };
    let mut private: SecureBuf = match &passphrase {
        Some(p) => {
            let kdf = match a.kdf {
                KdfArg::Scrypt => Kdf::Scrypt,
                KdfArg::Pbkdf2 => Kdf::Pbkdf2Sha256,
            };
            rsa_export_encrypted(&key, !a.der, p.as_slice(), kdf).map_err(from_core)?
        }
        None => rsa_export(&key, format).map_err(from_core)?,
    };
    if a.text {
        private = with_text(&text::rsa(&key), &private)?;
    }
    if let Some(pubpath) = &a.pubout {
        let f = if a.der {
            RsaFormat::SpkiDer
        } else {
            RsaFormat::SpkiPem
        };
        let public = rsa_export(&key, f).map_err(from_core)?;
        emit(public.as_slice(), Some(pubpath), false, a.der)?;
    }
    emit(private.as_slice(), c.out.as_deref(), true, a.der)
}

/// `text` followed by `pem`, in a secure buffer (the text of a private key
/// is as secret as the key).
fn with_text(text: &str, pem: &SecureBuf) -> Result<SecureBuf, Fail> {
    let mut both = SecureBuf::new(text.len() + pem.len()).map_err(from_core)?;
    both.as_mut_slice()[..text.len()].copy_from_slice(text.as_bytes());
    both.as_mut_slice()[text.len()..].copy_from_slice(pem.as_slice());
    Ok(both)
}

fn run_pubkey(a: PubkeyArgs) -> Result<(), Fail> {
    check_outputs(&[("--out", a.out.as_deref())], &[&a.file])?;
    let secret = read_secret(&a.file)?;
    let passphrase = match &a.passin {
        Some(spec) => Some(pass::read(spec, "--passin", true).map_err(|m| Fail(m, 1))?),
        None => None,
    };
    let key = primeforge::rsa::import(secret.as_slice(), passphrase.as_ref().map(|p| p.as_slice()))
        .map_err(|e| key_error(&a.file, e))?;
    let format = match (a.rsa, a.der) {
        (false, false) => RsaFormat::SpkiPem,
        (false, true) => RsaFormat::SpkiDer,
        (true, false) => RsaFormat::RsaPublicPem,
        (true, true) => RsaFormat::RsaPublicDer,
    };
    let public = rsa_export(&key, format).map_err(from_core)?;
    emit(public.as_slice(), a.out.as_deref(), false, a.der)
}

/// A key file's failure, named after the file.
fn key_error(file: &Path, e: Error) -> Fail {
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

fn group_by_name(name: &str) -> Option<Group> {
    let norm: String = name
        .to_ascii_lowercase()
        .chars()
        .filter(|c| *c != '_' && *c != '-')
        .collect();
    Group::ALL
        .into_iter()
        .find(|g| g.name().replace('_', "") == norm)
}

fn run_moduli(a: ModuliArgs) -> Result<(), Fail> {
    let screened: Vec<&Path> = a.screen.iter().map(|p| p.as_path()).collect();
    check_outputs(&[("--out", a.common.out.as_deref())], &screened)?;
    let mut lines: Vec<(Integer, String)> = Vec::new();
    let mut interrupted = false;
    if let Some(file) = &a.screen {
        // Public data, and /etc/ssh/moduli is about half a megabyte: an
        // ordinary read.
        let data = if file.as_os_str() == "-" {
            let mut v = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin(), &mut v).map(|_| v)
        } else {
            std::fs::read(file)
        }
        .map_err(|e| Fail(format!("{}: {e}", file.display()), 1))?;
        let text = std::str::from_utf8(&data)
            .map_err(|_| Fail(format!("{}: not a text file", file.display()), 1))?;
        let (mut seen, mut bad) = (0, 0);
        for (i, l) in text.lines().enumerate() {
            if INTERRUPTED.load(Ordering::SeqCst) {
                interrupted = true;
                break;
            }
            let p = match moduli::parse(l) {
                Ok(None) => continue,
                Ok(Some(p)) => p,
                Err(why) => {
                    bad += 1;
                    if !a.common.quiet {
                        eprintln!("{}:{}: skipped: {why}", file.display(), i + 1);
                    }
                    continue;
                }
            };
            seen += 1;
            let Some(g) = moduli::ssh_generator(&p) else {
                continue;
            };
            GENERATING.store(true, Ordering::SeqCst);
            let ok = moduli::passes(&p, g);
            GENERATING.store(false, Ordering::SeqCst);
            if ok.map_err(from_core)? {
                let bits = p.significant_bits();
                lines.push((
                    p.clone(),
                    moduli::line(&moduli::now(), moduli::trials(bits), &p, g),
                ));
            }
        }
        if !a.common.quiet {
            eprintln!(
                "screened {seen} moduli: {} passed{}",
                lines.len(),
                if bad > 0 {
                    format!(", {bad} lines unreadable")
                } else {
                    String::new()
                }
            );
        }
    } else {
        if a.count == 0 || a.count > 100_000 {
            return Err(usage("--count: 1 to 100000"));
        }
        if let Some(b) = a.bits.iter().find(|b| !(1024..=8192).contains(*b)) {
            return Err(usage(format!(
                "--bits: {b}: OpenSSH moduli are 1024 to 8192 bits"
            )));
        }
        let common = &a.common;
        'sizes: for &bits in &a.bits {
            let request = dh::Request::new(bits, 2, dh::FLAG_LEGACY_G2).map_err(from_core)?;
            // One sieve for the size: its set-up is shared by all COUNT
            // searches (and sized for them), each still its own search, so
            // Ctrl-C keeps every prime already found.
            let mut batch =
                dh::Batch::new(&request, a.count.min(dh::BATCH_MAX), None).map_err(from_core)?;
            for i in 0..a.count {
                let what = format!("{bits} bits, {} of {}", i + 1, a.count);
                let got = with_progress(
                    common,
                    0.064 * (bits as f64).powi(2),
                    "positions",
                    |o| batch.next(o),
                    |secs, _| format!("{what}: done in {secs}"),
                );
                match got {
                    Ok(params) => {
                        let p = params.p().clone();
                        let line = moduli::line(&moduli::now(), moduli::trials(bits), &p, 2);
                        lines.push((p, line));
                    }
                    Err(Fail(_, 130)) => {
                        interrupted = true;
                        break 'sizes;
                    }
                    Err(e) => return Err(e),
                }
            }
        }
    }
    // By size, then value, as /etc/ssh/moduli is sorted.
    lines.sort_by(|x, y| {
        x.0.significant_bits()
            .cmp(&y.0.significant_bits())
            .then_with(|| x.0.cmp(&y.0))
    });
    let text: String = lines.iter().map(|(_, l)| format!("{l}\n")).collect();
    emit(text.as_bytes(), a.common.out.as_deref(), false, false)?;
    if interrupted {
        return Err(Fail(
            format!(
                "interrupted: the {} complete moduli were written",
                lines.len()
            ),
            130,
        ));
    }
    Ok(())
}

fn run_dh(a: DhArgs) -> Result<(), Fail> {
    let c = &a.common;
    check_outputs(&[("--out", c.out.as_deref())], &[])?;
    let params = if let Some(name) = &a.named {
        let g = group_by_name(name).ok_or_else(|| {
            usage(format!(
                "unknown group {name:?}; one of ffdhe2048, ffdhe3072, ffdhe4096, ffdhe6144, ffdhe8192, modp2048, modp3072, modp4096, modp6144, modp8192"
            ))
        })?;
        g.params().clone()
    } else {
        let flags =
            if a.legacy { dh::FLAG_LEGACY_G2 } else { 0 } | if a.x942 { dh::FLAG_X942 } else { 0 };
        let bits = a.bits.unwrap_or(2048);
        let request = dh::Request::new(bits, a.generator, flags).map_err(from_core)?;
        // Expected sieve positions per safe prime grow with bits²; the
        // constant is measured (67 000 at 1024 bits).
        let expected = 0.064 * (bits as f64).powi(2);
        with_progress(
            c,
            expected,
            "positions",
            |o| dh::generate_request(&request, o),
            |secs, st| {
                format!(
                    "{}-bit safe prime in {secs} ({} positions, {} exponentiations)",
                    bits, st.candidates, st.exponentiations
                )
            },
        )?
    };
    let format = match (a.x942, a.der) {
        (false, false) => DhFormat::Pkcs3Pem,
        (false, true) => DhFormat::Pkcs3Der,
        (true, false) => DhFormat::X942Pem,
        (true, true) => DhFormat::X942Der,
    };
    if a.text && a.der {
        return Err(usage("--text prints text before PEM; not with --der"));
    }
    let mut out = dh_export(&params, format).map_err(from_core)?;
    if a.text {
        out = with_text(&text::dh(&params, a.x942), &out)?;
    }
    emit(out.as_slice(), c.out.as_deref(), false, a.der)
}

/// Reads a file (or stdin for "-") into a secure buffer.
fn read_secret(file: &Path) -> Result<SecureBuf, Fail> {
    use std::io::Read;
    let err = |e: std::io::Error| Fail(format!("{}: {e}", file.display()), 1);
    const MAX: u64 = 64 << 20;
    let too_big = || Fail(format!("{}: larger than 64 MiB", file.display()), 1);
    let mut first = 64 * 1024;
    let mut reader: Box<dyn Read> = if file.as_os_str() == "-" {
        Box::new(std::io::stdin())
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

/// "block 2 of 3" for bundles, nothing for a lone block or DER.
fn block_note(block: Option<(usize, usize)>) -> String {
    match block {
        Some((i, n)) if n > 1 => format!(", block {i} of {n}"),
        _ => String::new(),
    }
}

/// A generator for humans: decimal when small, else its size and the
/// first and last hex digits.
fn show_g(g: &rug::Integer) -> String {
    if g.significant_bits() <= 64 {
        g.to_string()
    } else {
        let hex = format!("{g:x}");
        format!(
            "a {}-bit value 0x{}…{}",
            g.significant_bits(),
            &hex[..8],
            &hex[hex.len() - 8..]
        )
    }
}

/// Writes the lines of a report to standard output.
fn say(lines: &[String]) {
    let mut out = std::io::stdout().lock();
    for l in lines {
        let _ = writeln!(out, "{l}");
    }
    let _ = out.flush();
}

/// Prints an RSA verdict: the head line with "valid" or "INVALID", each
/// problem, then each FIPS 186-5 note; true when there is no problem.
fn say_rsa_verdict(
    head: String,
    problems: &[primeforge::rsa::check::Problem],
    fips: &[primeforge::rsa::check::Problem],
) -> bool {
    let verdict = if problems.is_empty() {
        "valid"
    } else {
        "INVALID"
    };
    let mut lines = vec![head + verdict];
    lines.extend(problems.iter().map(|p| format!("  - {p}")));
    lines.extend(fips.iter().map(|p| format!("  note: {p}")));
    say(&lines);
    problems.is_empty()
}

fn run_check(file: &Path, passin: Option<&str>) -> Result<bool, Fail> {
    // The passphrase first (it may come from standard input too).
    let passphrase = match passin {
        Some(spec) => Some(pass::read(spec, "--passin", true).map_err(|m| Fail(m, 1))?),
        None => None,
    };
    // The file may hold a private key: read it straight into a secure
    // buffer, never into an ordinary heap buffer.
    let secret = read_secret(file)?;
    let data = secret.as_slice();
    let named = |e: Error| match e {
        Error::Passphrase => key_error(file, e),
        Error::WrongKind(what) => Fail(format!("{}: {what}", file.display()), 1),
        Error::Decode => Fail(
            format!(
                "{}: neither an RSA private key nor DH parameters that can be read (PEM or DER)",
                file.display()
            ),
            1,
        ),
        other => from_core(other),
    };
    // The file is decoded once: the sniffer says what it holds.
    use primeforge::encode::sniff::{sniff_with, Content};
    let (content, block) = sniff_with(data, passphrase.as_ref().map(|p| p.as_slice()))
        .map_err(named)?
        .content_with_block();
    if let Content::RsaPublic { pkcs1, spki } = &content {
        let r = primeforge::rsa::check::check_public(pkcs1, *spki, block).map_err(named)?;
        let e = r.e.map_or("(over 64 bits)".to_string(), |e| e.to_string());
        let head = format!(
            "RSA public key ({}{}), {} bits, e = {e}: ",
            if r.spki {
                "SubjectPublicKeyInfo"
            } else {
                "PKCS#1"
            },
            block_note(r.block),
            r.bits,
        );
        return Ok(say_rsa_verdict(head, &r.problems, &r.fips));
    }
    if let Content::RsaPrivate { pkcs1, container } = &content {
        let r = primeforge::rsa::check::check_pkcs1(pkcs1.as_slice(), *container, block)
            .map_err(named)?;
        let e = r.e.map_or("(over 64 bits)".to_string(), |e| e.to_string());
        let head = format!(
            "RSA private key ({}{}), {} bits, {} primes, e = {e}: ",
            r.container.name(),
            block_note(r.block),
            r.bits,
            r.primes
        );
        return Ok(say_rsa_verdict(head, &r.problems, &r.fips));
    }
    let (der, syntax) = match content {
        Content::Dh { der, syntax } => (der, syntax),
        // Checked and returned above.
        Content::RsaPrivate { .. } | Content::RsaPublic { .. } => return Ok(false),
        Content::EncryptedKey { legacy } => {
            return Err(named(Error::WrongKind(if legacy {
                "an encrypted private key (PEM encryption or OpenSSH): give its passphrase (--passin)"
            } else {
                "an encrypted PKCS#8 private key: give its passphrase (--passin)"
            })))
        }
    };
    let r = dh::check::check_der(&der, syntax, block).map_err(named)?;
    use dh::check::*;
    use primeforge::encode::sniff::DhSyntax;
    let kind = match r.syntax {
        DhSyntax::X942 => "X9.42",
        DhSyntax::Pkcs3 => "PKCS#3",
    };
    let known = r
        .known
        .as_ref()
        .map_or(String::new(), |k| format!(", {}", k.name));
    let head = format!(
        "DH parameters ({kind}{}), {} bits, g = {}{known}: ",
        block_note(r.block),
        r.bits,
        show_g(&r.g)
    );
    let mut lines = Vec::new();
    if r.problems == 0 {
        let what = match (r.syntax, r.q_bits) {
            (DhSyntax::X942, Some(qb)) => {
                let mut v =
                    format!("valid (p prime; q prime, {qb} bits, dividing p − 1; g of order q");
                if r.has_j {
                    v += "; j = (p − 1)/q";
                }
                if r.safe_prime {
                    v += "; p is a safe prime, q = (p − 1)/2";
                }
                v + ")"
            }
            _ => "valid (p is a safe prime: p and (p − 1)/2 are prime; g in range)".to_string(),
        };
        lines.push(head + &what);
    } else {
        lines.push(head + "INVALID");
        for (bit, text) in [
            (P_NOT_PRIME, "p is not prime"),
            (
                P_NOT_SAFE_PRIME,
                "p is prime but (p - 1)/2 is not (not a safe prime)",
            ),
            (
                NOT_SUITABLE_GENERATOR,
                "unsuitable generator (out of range, or g^q is not 1)",
            ),
            (Q_NOT_PRIME, "q is not prime"),
            (INVALID_Q, "q does not divide p - 1"),
            (INVALID_J, "invalid j value: j is not (p - 1)/q"),
            (
                Q_TOO_SMALL,
                "q has fewer than 160 bits: the subgroup is too small",
            ),
            (MODULUS_TOO_SMALL, "p is smaller than 512 bits"),
            (
                MODULUS_TOO_LARGE,
                "p is larger than 16384 bits (not checked further)",
            ),
        ] {
            if r.problems & bit != 0 {
                lines.push(format!("  - {text}"));
            }
        }
    }
    if let Some(k) = r.known.as_ref().filter(|k| !k.safe_prime) {
        let qb = k.q_hex.map_or(0, |h| h.len() * 4);
        lines.push(format!(
            "  note: {} has a p that is not a safe prime; it is safe only with its {qb}-bit q, \
             which peers must check (X9.42 parameters carry it; PKCS#3 ones, GnuTLS and mbedTLS drop it)",
            k.name
        ));
    }
    say(&lines);
    Ok(r.problems == 0)
}

/// primeforge.1 and primeforge-SUBCOMMAND.1 for every subcommand.
fn write_man_pages(dir: &Path) -> Result<(), Fail> {
    let io = |e: std::io::Error| Fail(format!("{}: {e}", dir.display()), 1);
    std::fs::create_dir_all(dir).map_err(io)?;
    let cmd = <Cli as clap::CommandFactory>::command();
    let mut pages = vec![("primeforge".to_string(), cmd.clone())];
    for sub in cmd.get_subcommands() {
        let name = format!("primeforge-{}", sub.get_name());
        let leaked: &'static str = Box::leak(name.clone().into_boxed_str());
        pages.push((name, sub.clone().name(leaked)));
    }
    for (name, page) in pages {
        let mut buf = Vec::new();
        clap_mangen::Man::new(page).render(&mut buf).map_err(io)?;
        buf.extend_from_slice(man_sections(&name).as_bytes());
        std::fs::write(dir.join(format!("{name}.1")), buf).map_err(io)?;
    }
    Ok(())
}

/// The sections clap does not write, as openssl-dhparam(1) and
/// ssh-keygen(1) have them: EXIT STATUS, ENVIRONMENT, FILES, SEE ALSO.
fn man_sections(page: &str) -> String {
    let mut s = String::from(
        ".SH \"EXIT STATUS\"\n\
         .TP\n0\nSuccess; for \\fBcheck\\fR, the file is valid.\n\
         .TP\n1\nAn error (unreadable or unwritable file, bad passphrase, a failed \
         generation); for \\fBcheck\\fR, also a file with problems.\n\
         .TP\n2\nA usage error: a bad or conflicting option, reported in one line before any work.\n\
         .TP\n130\nInterrupted (SIGINT or SIGTERM): the generation was cancelled and nothing written.\n\
         .SH ENVIRONMENT\n\
         .TP\nVAR\nA passphrase source \\fBenv:\\fIVAR\\fR reads the variable VAR.\n\
         .TP\nPRIMEFORGE_GMP_CPU\nForces the CPU profile of the bundled GMP \
         (for diagnosis; the output does not change).\n",
    );
    if page == "primeforge" || page == "primeforge-moduli" {
        s.push_str(
            ".SH FILES\n.TP\n/etc/ssh/moduli\nOpenSSH's Diffie-Hellman groups \
             (what \\fBprimeforge moduli\\fR writes and \\fB--screen\\fR reads).\n",
        );
    }
    let see_also: &[&str] = match page {
        "primeforge-rsa" => &["openssl-genpkey(1)", "openssl-pkey(1)", "ssh-keygen(1)"],
        "primeforge-dhparam" => &["openssl-dhparam(1)", "openssl-genpkey(1)"],
        "primeforge-check" => &["openssl-pkey(1)", "openssl-dhparam(1)"],
        "primeforge-pubkey" => &["openssl-pkey(1)"],
        "primeforge-moduli" => &["ssh-keygen(1)", "moduli(5)", "sshd_config(5)"],
        _ => &[
            "openssl-dhparam(1)",
            "openssl-genpkey(1)",
            "ssh-keygen(1)",
            "moduli(5)",
        ],
    };
    s.push_str(".SH \"SEE ALSO\"\n");
    let mut refs: Vec<String> = see_also.iter().map(|r| r.to_string()).collect();
    if page == "primeforge" {
        for sub in ["rsa", "dhparam", "check", "pubkey", "moduli"] {
            refs.push(format!("primeforge-{sub}(1)"));
        }
    } else {
        refs.insert(0, "primeforge(1)".into());
    }
    s.push_str(&refs.join(",\n"));
    s.push('\n');
    s
}

fn main() -> ExitCode {
    install_signals();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(msg) = single_dash_long_option(&args) {
        eprintln!("primeforge: {msg}");
        return ExitCode::from(2);
    }
    let cli = match Cli::try_parse_from(&args) {
        Ok(c) => c,
        Err(e) => {
            // Help and version go to stdout with exit 0; usage errors are
            // one clear message with exit 2 (clap's convention).
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let result = match cli.command {
        Command::Rsa(a) => run_rsa(a).map(|_| true),
        Command::Dhparam(a) => run_dh(a).map(|_| true),
        Command::Check { file, passin } => run_check(&file, passin.as_deref()),
        Command::Pubkey(a) => run_pubkey(a).map(|_| true),
        Command::Moduli(a) => run_moduli(a).map(|_| true),
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "primeforge", &mut std::io::stdout());
            Ok(true)
        }
        Command::Man { dir } => write_man_pages(&dir).map(|_| true),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(Fail(msg, code)) => {
            if std::io::stderr().is_terminal() {
                eprint!("\r\x1b[2K");
            }
            eprintln!("primeforge: {msg}");
            ExitCode::from(code)
        }
    }
}
