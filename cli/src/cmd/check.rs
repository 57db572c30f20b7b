//! `primeforge check`.

use std::io::Write;
use std::path::Path;

use primeforge::dh;
use primeforge::Error;

use crate::common::{from_core, key_error, read_secret, Fail};
use crate::pass;

/// "block 2 of 3" for bundles, nothing for a lone block or DER.
pub(crate) fn block_note(block: Option<(usize, usize)>) -> String {
    match block {
        Some((i, n)) if n > 1 => format!(", block {i} of {n}"),
        _ => String::new(),
    }
}

/// A generator for humans: decimal when small, else its size and the
/// first and last hex digits.
pub(crate) fn show_g(g: &rug::Integer) -> String {
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
pub(crate) fn say(lines: &[String]) {
    let mut out = std::io::stdout().lock();
    for l in lines {
        let _ = writeln!(out, "{l}");
    }
    let _ = out.flush();
}

/// Prints an RSA verdict: the head line with "valid" or "INVALID", each
/// problem, then each FIPS 186-5 note; true when there is no problem.
pub(crate) fn say_rsa_verdict(
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

pub(crate) fn run_check(file: &Path, passin: Option<&str>) -> Result<bool, Fail> {
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
    let report = match primeforge::file::check(data, passphrase.as_ref().map(|p| p.as_slice())) {
        Err(Error::Passphrase) if passphrase.is_none() => {
            // Encrypted: say which kind, and ask for the passphrase.
            let legacy = matches!(
                primeforge::encode::sniff::sniff(data).map(|s| s.content),
                Ok(primeforge::encode::sniff::Content::EncryptedKey { legacy: true })
            );
            return Err(named(Error::WrongKind(if legacy {
                "an encrypted private key (PEM encryption or OpenSSH): give its passphrase (--passin)"
            } else {
                "an encrypted PKCS#8 private key: give its passphrase (--passin)"
            })));
        }
        other => other.map_err(named)?,
    };
    let r = match report {
        primeforge::file::Report::RsaPublic(r) => {
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
        primeforge::file::Report::RsaPrivate(r) => {
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
        primeforge::file::Report::Dh(r) => r,
    };
    use dh::check::*;
    use primeforge::encode::sniff::DhSyntax;
    let kind = match r.syntax {
        DhSyntax::X942 => "X9.42",
        DhSyntax::Pkcs3 => "PKCS#3",
        DhSyntax::Dsa => "DSA",
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
            (DhSyntax::X942 | DhSyntax::Dsa, Some(qb)) => {
                let mut v =
                    format!("valid (p prime; q prime, {qb} bits, dividing p − 1; g of order q");
                if r.has_j {
                    v += "; j = (p − 1)/q";
                }
                if r.safe_prime {
                    v += "; p is a safe prime, q = (p − 1)/2";
                }
                match (r.seed, r.counter) {
                    (dh::fips186::SeedCheck::Verified(h), Some(c)) => {
                        v += &format!(
                            "; p and q verified from their seed and counter {c} by FIPS 186-4 A.1.1.3 with {}",
                            h.name()
                        )
                    }
                    (dh::fips186::SeedCheck::VerifiedFips186_2(h), Some(c)) => {
                        v += &format!(
                            "; p and q verified from their seed and counter {c} by FIPS 186-2's procedure \
                             as OpenSSL runs it, with {} (not FIPS 186-4)",
                            h.name()
                        )
                    }
                    _ => {}
                }
                match r.generator {
                    Some(dh::fips186::GeneratorCheck::Canonical(i)) => {
                        v += &format!(
                            "; g verified as the seed's canonical generator of index {i} (A.2.4)"
                        )
                    }
                    Some(dh::fips186::GeneratorCheck::OrderOnly)
                        if r.seed != dh::fips186::SeedCheck::Absent =>
                    {
                        v += "; g not derived from the seed (checked by its order only, A.2.2)"
                    }
                    _ => {}
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
            (
                SEED_INVALID,
                "the seed and counter do not give p and q (FIPS 186-4 A.1.1.3, nor FIPS 186-2 as OpenSSL runs it)",
            ),
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
        if let dh::fips186::SeedCheck::Failed(why) = r.seed {
            lines.push(format!("    ({why})"));
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
