//! The command line: every subcommand's options (clap), and the answer to
//! OpenSSL's spellings of them.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

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
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
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
    ///
    /// --fips186 makes FIPS 186-4 domain parameters instead (a prime q of
    /// 160, 224 or 256 bits dividing p − 1, both derived from a seed by
    /// A.1.1.2, g from the seed by A.2.3), written as X9.42 parameters
    /// with the seed and counter, which anyone can re-check (primeforge
    /// check does): what `openssl genpkey -genparam -algorithm DHX` makes.
    ///
    /// Example: primeforge dhparam 2048 --fips186 --qbits 256 --out dhx.pem
    Dhparam(DhArgs),
    /// Generate DSA domain parameters (FIPS 186-4 A.1.1.2, g by A.2.3), as
    /// `openssl dsaparam` does, on all cores. The "DSA PARAMETERS" format
    /// has no place for the seed and counter: they are printed with
    /// --text and in the summary, so the parameters stay verifiable.
    ///
    /// Example: primeforge dsaparam 3072 --out dsaparams.pem
    Dsaparam(DsaArgs),
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
    /// `ssh-keygen -M screen` gives them (g = 2 for p ≡ 11 mod 24, else
    /// g = 5 for p ≡ 3 or 7 mod 10: every prime it accepts),
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
pub(crate) struct ModuliArgs {
    /// Sizes of the moduli in bits, comma-separated (1024 to 8192, as
    /// OpenSSH uses them).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "2048,3072,4096,6144,8192"
    )]
    pub(crate) bits: Vec<u32>,
    /// Moduli per size.
    #[arg(long, short = 'n', default_value_t = 1)]
    pub(crate) count: u32,
    /// Screen this moduli file ("-" reads standard input) instead of
    /// generating.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["bits", "count"])]
    pub(crate) screen: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) common: Common,
}

#[derive(Args)]
pub(crate) struct PubkeyArgs {
    /// The private key ("-" reads standard input).
    pub(crate) file: PathBuf,
    /// Passphrase of an encrypted key: pass:TEXT, env:VAR, file:PATH, fd:N
    /// or stdin.
    #[arg(long, value_name = "SOURCE")]
    pub(crate) passin: Option<String>,
    /// PKCS#1 RSAPublicKey ("RSA PUBLIC KEY") instead of
    /// SubjectPublicKeyInfo.
    #[arg(long)]
    pub(crate) rsa: bool,
    /// Write DER instead of PEM.
    #[arg(long)]
    pub(crate) der: bool,
    /// Output file, "-" for standard output (the default).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub(crate) out: Option<PathBuf>,
}

#[derive(Args)]
pub(crate) struct Common {
    /// Worker threads, at most the available cores (default: all of them).
    #[arg(
        long,
        short = 't',
        value_name = "N",
        default_value_t = 0,
        hide_default_value = true
    )]
    pub(crate) threads: u32,
    /// Output file, "-" for standard output (the default). A symbolic link
    /// is followed, a device or FIFO written through, a regular file
    /// replaced atomically.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub(crate) out: Option<PathBuf>,
    /// No progress display.
    #[arg(long, short = 'q')]
    pub(crate) quiet: bool,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum KeyFormat {
    /// PKCS#8 PrivateKeyInfo ("PRIVATE KEY").
    Pkcs8,
    /// PKCS#1 RSAPrivateKey ("RSA PRIVATE KEY").
    Pkcs1,
    /// OpenSSH ("OPENSSH PRIVATE KEY"), as `ssh-keygen -t rsa` writes it;
    /// --pubout then writes the `ssh-rsa AAAA… comment` line, --encrypt
    /// uses bcrypt-pbkdf and AES-256-CTR as ssh-keygen does.
    Openssh,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum KdfArg {
    /// scrypt, N = 2^14, r = 8, p = 1 (as `openssl pkcs8 -topk8 -scrypt`
    /// writes it; OpenSSL 3.0's own default is PBKDF2-HMAC-SHA256 with 2048
    /// iterations).
    Scrypt,
    /// PBKDF2-HMAC-SHA256, 600 000 iterations (for readers without scrypt,
    /// e.g. GnuTLS before 3.8).
    Pbkdf2,
}

#[derive(Args)]
pub(crate) struct RsaArgs {
    /// Modulus size in bits (even, 512 to 16384; default 3072).
    #[arg(value_name = "BITS", conflicts_with = "bits")]
    pub(crate) size: Option<u32>,
    /// The size, as an option (same as BITS).
    #[arg(long, short = 'b')]
    pub(crate) bits: Option<u32>,
    /// Public exponent (odd, at least 3).
    #[arg(long, short = 'e', default_value_t = 65537)]
    pub(crate) exponent: u64,
    /// Number of primes (2; up to 3 below 4096 bits, 4 below 8192, else 5).
    /// Keys of more than two primes are for OpenSSL: pyca, mbedTLS, Java and
    /// GnuTLS refuse them.
    #[arg(long, default_value_t = 2)]
    pub(crate) primes: u32,
    /// Provable primes: each prime is proven by a chain of Pocklington
    /// certificates (as nettle makes RSA primes) instead of being a FIPS
    /// 186-5 A.1.3 probable prime. Faster at 512 bits, about as fast from
    /// 1024 up; not FIPS 186-5.
    #[arg(long)]
    pub(crate) provable: bool,
    /// Private key container.
    #[arg(long, value_enum, default_value_t = KeyFormat::Pkcs8)]
    pub(crate) format: KeyFormat,
    /// Also write the public key (SubjectPublicKeyInfo; with --format
    /// openssh the authorized_keys line) to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) pubout: Option<PathBuf>,
    /// The comment of an OpenSSH key (--format openssh), e.g. user@host.
    #[arg(long, value_name = "TEXT")]
    pub(crate) comment: Option<String>,
    /// Encrypt the key under a passphrase (--passout): PKCS#8
    /// EncryptedPrivateKeyInfo, PBES2 with AES-256-CBC (OpenSSH keys:
    /// bcrypt-pbkdf and AES-256-CTR).
    #[arg(long, requires = "passout")]
    pub(crate) encrypt: bool,
    /// Where the passphrase comes from: pass:TEXT, env:VAR, file:PATH, fd:N
    /// or stdin (the first line). Read before the key is generated. A
    /// pass:TEXT passphrase is on the command line, which process listings
    /// show: prefer the others.
    #[arg(long, value_name = "SOURCE", requires = "encrypt")]
    pub(crate) passout: Option<String>,
    /// Key derivation for --encrypt.
    #[arg(long, value_enum, default_value_t = KdfArg::Scrypt, requires = "encrypt")]
    pub(crate) kdf: KdfArg,
    /// Print the key's components as text (like openssl pkey -text) before
    /// the PEM. They are secret: mind where the output goes.
    #[arg(long, conflicts_with = "der")]
    pub(crate) text: bool,
    /// Write DER instead of PEM.
    #[arg(long)]
    pub(crate) der: bool,
    #[command(flatten)]
    pub(crate) common: Common,
}

#[derive(Args)]
pub(crate) struct DhArgs {
    /// Size of p in bits (256 to 16384; default 2048).
    #[arg(conflicts_with = "named")]
    pub(crate) bits: Option<u32>,
    /// Generator (2 to 2^31 − 1).
    #[arg(long, short = 'g', default_value_t = 2)]
    pub(crate) generator: u32,
    /// For g = 2, the legacy form p ≡ 11 (mod 24) (OpenSSL 1.1, BoringSSL).
    #[arg(long)]
    pub(crate) legacy: bool,
    /// Write X9.42 parameters ("X9.42 DH PARAMETERS", with q = (p − 1)/2
    /// and g in the subgroup of order q) instead of PKCS#3 ("DH
    /// PARAMETERS"). For TLS servers keep PKCS#3: OpenSSL 3 generates keys
    /// from X9.42 parameters only with FIPS 186-4 sizes of q (160, 224,
    /// 256 bits), so `openssl genpkey -paramfile` fails on these and
    /// `openssl s_server -dhparam` silently uses a built-in group; GnuTLS
    /// 3.7 and mbedTLS 2.28 refuse the PEM form and read only DER (--der),
    /// dropping q. Not with --legacy.
    #[arg(long)]
    pub(crate) x942: bool,
    /// Print a named group instead of generating: ffdhe2048 … ffdhe8192
    /// (RFC 7919) or modp2048 … modp8192 (RFC 3526).
    #[arg(long, value_name = "GROUP", conflicts_with_all = ["generator", "legacy"])]
    pub(crate) named: Option<String>,
    /// FIPS 186-4 domain parameters (p of 1024, 2048 or 3072 bits, q of
    /// --qbits) written as X9.42 parameters with their seed and counter.
    #[arg(long, conflicts_with_all = ["generator", "legacy", "named", "x942"])]
    pub(crate) fips186: bool,
    #[command(flatten)]
    pub(crate) ffc: FfcArgs,
    #[command(flatten)]
    pub(crate) out: ParamsOut,
    #[command(flatten)]
    pub(crate) common: Common,
}

/// How parameters are written (`dhparam`, `dsaparam`).
#[derive(Args)]
pub(crate) struct ParamsOut {
    /// Print the parameters as text (like openssl dhparam -text and
    /// dsaparam -text; FIPS 186-4 parameters with their seed, counter,
    /// hash and generator index) before the PEM.
    #[arg(long)]
    pub(crate) text: bool,
    /// Write DER instead of PEM.
    #[arg(long)]
    pub(crate) der: bool,
}

/// FIPS 186-4 choices, shared by `dhparam --fips186` and `dsaparam`.
#[derive(Args)]
pub(crate) struct FfcArgs {
    /// Size of q in bits: 160 (with p of 1024), 224 or 256 (2048), 256
    /// (3072). Default: as OpenSSL, 160, 224 and 256.
    #[arg(long, value_name = "N")]
    pub(crate) qbits: Option<u32>,
    /// The hash for A.1.1.2 and A.2.3: sha224, sha256, sha384, sha512,
    /// sha512-224 or sha512-256, with at least q's bits. Default: sha224
    /// for q of 224 bits, else sha256 (what OpenSSL's checks assume for
    /// 224 and 256).
    #[arg(long, value_name = "HASH")]
    pub(crate) digest: Option<String>,
    /// Index of the canonical generator (A.2.3), 0 to 255 (default 1).
    #[arg(long, value_name = "I", conflicts_with = "unverifiable_g")]
    pub(crate) gindex: Option<u8>,
    /// g = h^((p − 1)/q) for the smallest h ≥ 2 (A.2.1), as OpenSSL does
    /// when no index is given, instead of a canonical generator.
    #[arg(long)]
    pub(crate) unverifiable_g: bool,
}

#[derive(Args)]
pub(crate) struct DsaArgs {
    /// Size of p in bits: 1024, 2048 or 3072 (default 2048).
    pub(crate) bits: Option<u32>,
    #[command(flatten)]
    pub(crate) ffc: FfcArgs,
    #[command(flatten)]
    pub(crate) out: ParamsOut,
    #[command(flatten)]
    pub(crate) common: Common,
}

/// OpenSSL's options and their primeforge spellings. OpenSSL-style
/// single-dash long options (`-out`, `-passin`, `-aes256`) would be read as
/// clusters of short options (`-o ut`), and clap would suggest `-- -out`:
/// they are answered with the spelling to use instead.
pub(crate) const OPENSSL_SPELLINGS: [(&str, &str); 37] = [
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
    ("format", "--format pkcs8|pkcs1|openssh"),
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
pub(crate) fn single_dash_long_option(args: &[std::ffi::OsString]) -> Option<String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(args: &[&str]) -> Option<String> {
        let v: Vec<std::ffi::OsString> = std::iter::once("primeforge")
            .chain(args.iter().copied())
            .map(Into::into)
            .collect();
        single_dash_long_option(&v)
    }

    #[test]
    fn openssl_spellings_are_answered_and_ours_are_not() {
        assert!(answer(&["rsa", "-aes256"]).unwrap().contains("--encrypt"));
        assert!(answer(&["dhparam", "-5"])
            .unwrap()
            .contains("--generator 5"));
        assert!(answer(&["check", "k.pem", "-passin", "pass:x"])
            .unwrap()
            .contains("--passin"));
        for ours in [
            &["rsa", "-t", "2", "-q"][..],
            &["dhparam", "--text"],
            &["rsa", "--", "-out"],
        ] {
            assert_eq!(answer(ours), None, "{ours:?}");
        }
        // Every spelling names a distinct OpenSSL option.
        let mut seen = std::collections::HashSet::new();
        assert!(OPENSSL_SPELLINGS.iter().all(|(o, _)| seen.insert(*o)));
    }

    #[test]
    fn the_command_line_is_consistent() {
        <Cli as clap::CommandFactory>::command().debug_assert();
    }
}
