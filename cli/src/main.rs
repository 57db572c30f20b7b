//! `primeforge`: RSA keys and DH parameters on every core, from the
//! command line. Uses the Rust core directly (not the C ABI).

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clap::{Args, Parser, Subcommand, ValueEnum};

use primeforge::dh::{self, named::Group};
use primeforge::encode::{dh_export, rsa_export, DhFormat, RsaFormat};
use primeforge::prime::{Options, Progress, Stats};
use primeforge::{Error, SecureBuf};

mod out;

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
    /// Example: primeforge rsa --bits 3072 --out key.pem --pubout pub.pem
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
    /// Check an RSA private key (PKCS#1 or PKCS#8) or DH parameters (PKCS#3
    /// or X9.42), PEM or DER. PEM is read as OpenSSL reads it: text around
    /// the blocks, several blocks (the first private key or parameters
    /// block is checked and named), any line length, CRLF. Public,
    /// encrypted and RSA-PSS keys and certificates are named, not checked.
    /// RFC 7919, 3526 and 5114 groups are recognised. Prints a short
    /// summary; exits 0 when valid, 1 when not.
    Check {
        /// The file to check ("-" reads standard input).
        file: PathBuf,
    },
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
    /// Write DER instead of PEM.
    #[arg(long)]
    der: bool,
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

#[derive(Args)]
struct RsaArgs {
    /// Modulus size in bits (even, 512 to 16384).
    #[arg(long, short = 'b', default_value_t = 3072)]
    bits: u32,
    /// Public exponent (odd, at least 3).
    #[arg(long, short = 'e', default_value_t = 65537)]
    exponent: u64,
    /// Number of primes (2; up to 3 below 4096 bits, 4 below 8192, else 5).
    #[arg(long, default_value_t = 2)]
    primes: u32,
    /// Private key container.
    #[arg(long, value_enum, default_value_t = KeyFormat::Pkcs8)]
    format: KeyFormat,
    /// Also write the public key (SubjectPublicKeyInfo) to FILE.
    #[arg(long, value_name = "FILE")]
    pubout: Option<PathBuf>,
    #[command(flatten)]
    common: Common,
}

#[derive(Args)]
struct DhArgs {
    /// Size of p in bits (256 to 16384).
    #[arg(default_value_t = 2048)]
    bits: u32,
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
    /// and mbedTLS read them but drop q. Not with --legacy.
    #[arg(long)]
    x942: bool,
    /// Print a named group instead of generating: ffdhe2048 … ffdhe8192
    /// (RFC 7919) or modp2048 … modp8192 (RFC 3526).
    #[arg(long, value_name = "GROUP", conflicts_with_all = ["generator", "legacy"])]
    named: Option<String>,
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

/// OpenSSL-style single-dash long options (`-out`, `-in`, `-check`) would
/// be read as clusters of short options (`-o ut`): refuse them with the
/// right spelling instead.
fn single_dash_long_option(args: &[std::ffi::OsString]) -> Option<String> {
    const LONG: [&str; 24] = [
        "out",
        "in",
        "bits",
        "threads",
        "der",
        "quiet",
        "exponent",
        "primes",
        "format",
        "pubout",
        "generator",
        "legacy",
        "x942",
        "named",
        "check",
        "text",
        "noout",
        "outform",
        "inform",
        "help",
        "version",
        "dsaparam",
        "rand",
        "engine",
    ];
    for a in args.iter().skip(1) {
        let Some(s) = a.to_str() else { continue };
        if s == "--" {
            break;
        }
        let Some(word) = s.strip_prefix('-') else {
            continue;
        };
        if word.starts_with('-') || word.len() < 2 {
            continue;
        }
        let name = word.split('=').next().unwrap_or(word);
        if LONG.contains(&name) {
            let hint = match name {
                "in" => "give the file as an argument: primeforge check FILE".to_string(),
                "check" | "text" | "noout" | "outform" | "inform" | "dsaparam" | "rand"
                | "engine" => "this is an openssl option; see primeforge --help".to_string(),
                _ => format!("did you mean --{name}?"),
            };
            return Some(format!(
                "unknown option '{s}': options take two dashes; {hint}"
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
        let rate = p.candidates as f64 / secs;
        let eta = if (p.candidates as f64) < self.expected && rate > 0.0 {
            format!(
                "ETA ~{} (estimate)",
                human((self.expected - p.candidates as f64) / rate)
            )
        } else {
            "longer than average, still searching".into()
        };
        const SPIN: [char; 4] = ['|', '/', '-', '\\'];
        self.spin = (self.spin + 1) % 4;
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
    let request = primeforge::rsa::Request::new(a.bits, a.exponent, a.primes).map_err(from_core)?;
    let c = &a.common;
    // Expected candidates: each k-bit prime takes k·ln2/2 odd candidates.
    let expected = a.bits as f64 * std::f64::consts::LN_2 / 2.0;
    let key = with_progress(
        c,
        expected,
        "candidates",
        |o| primeforge::rsa::generate_request(&request, o),
        |secs, st| {
            format!(
                "RSA-{} key in {secs} ({} candidates, {} exponentiations)",
                a.bits, st.candidates, st.exponentiations
            )
        },
    )?;
    let format = match (a.format, c.der) {
        (KeyFormat::Pkcs8, false) => RsaFormat::Pkcs8Pem,
        (KeyFormat::Pkcs8, true) => RsaFormat::Pkcs8Der,
        (KeyFormat::Pkcs1, false) => RsaFormat::Pkcs1Pem,
        (KeyFormat::Pkcs1, true) => RsaFormat::Pkcs1Der,
    };
    let private: SecureBuf = rsa_export(&key, format).map_err(from_core)?;
    if let Some(pubpath) = &a.pubout {
        let f = if c.der {
            RsaFormat::SpkiDer
        } else {
            RsaFormat::SpkiPem
        };
        let public = rsa_export(&key, f).map_err(from_core)?;
        emit(public.as_slice(), Some(pubpath), false, c.der)?;
    }
    emit(private.as_slice(), c.out.as_deref(), true, c.der)
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

fn run_dh(a: DhArgs) -> Result<(), Fail> {
    let c = &a.common;
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
        let request = dh::Request::new(a.bits, a.generator, flags).map_err(from_core)?;
        // Expected sieve positions per safe prime grow with bits²; the
        // constant is measured (67 000 at 1024 bits).
        let expected = 0.064 * (a.bits as f64).powi(2);
        with_progress(
            c,
            expected,
            "positions",
            |o| dh::generate_request(&request, o),
            |secs, st| {
                format!(
                    "{}-bit safe prime in {secs} ({} positions, {} exponentiations)",
                    a.bits, st.candidates, st.exponentiations
                )
            },
        )?
    };
    let format = match (a.x942, c.der) {
        (false, false) => DhFormat::Pkcs3Pem,
        (false, true) => DhFormat::Pkcs3Der,
        (true, false) => DhFormat::X942Pem,
        (true, true) => DhFormat::X942Der,
    };
    let out = dh_export(&params, format).map_err(from_core)?;
    emit(out.as_slice(), c.out.as_deref(), false, c.der)
}

/// Reads a file (or stdin for "-") into a secure buffer.
fn read_secret(file: &Path) -> Result<SecureBuf, Fail> {
    use std::io::Read;
    let err = |e: std::io::Error| Fail(format!("{}: {e}", file.display()), 1);
    let mut reader: Box<dyn Read> = if file.as_os_str() == "-" {
        Box::new(std::io::stdin())
    } else {
        Box::new(std::fs::File::open(file).map_err(err)?)
    };
    let mut buf = SecureBuf::new(64 * 1024).map_err(from_core)?;
    let mut len = 0;
    loop {
        if len == buf.len() {
            if len >= 64 << 20 {
                return Err(Fail(format!("{}: larger than 64 MiB", file.display()), 1));
            }
            let mut bigger = SecureBuf::new(len * 2).map_err(from_core)?;
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

fn run_check(file: &Path) -> Result<bool, Fail> {
    // The file may hold a private key: read it straight into a secure
    // buffer, never into an ordinary heap buffer.
    let secret = read_secret(file)?;
    let data = secret.as_slice();
    let named = |e: Error| match e {
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
    use primeforge::encode::sniff::{sniff, Content};
    let (content, block) = sniff(data).map_err(named)?.content_with_block();
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
        let mut lines = vec![
            head + if r.problems.is_empty() {
                "valid"
            } else {
                "INVALID"
            },
        ];
        lines.extend(r.problems.iter().map(|p| format!("  - {p}")));
        say(&lines);
        return Ok(r.problems.is_empty());
    }
    let (der, syntax) = match content {
        Content::Dh { der, syntax } => (der, syntax),
        // Checked and returned above.
        Content::RsaPrivate { .. } => return Ok(false),
        Content::EncryptedKey { .. } => return Err(named(Error::WrongKind(
            "an encrypted PKCS#8 private key: give its passphrase (--passin), or decrypt it first",
        ))),
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
        Command::Check { file } => run_check(&file),
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
