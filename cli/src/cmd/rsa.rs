//! `primeforge rsa`.

use primeforge::encode::pbes2::Kdf;
use primeforge::encode::RsaFormat;
use primeforge::SecureBuf;

use crate::args::{KdfArg, KeyFormat, RsaArgs};
use crate::common::{check_outputs, emit, from_core, usage, with_progress, with_text, Fail};
use crate::{pass, text};

pub(crate) fn run_rsa(a: RsaArgs) -> Result<(), Fail> {
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
    let openssh = matches!(a.format, KeyFormat::Openssh);
    if openssh && (a.der || a.text) {
        return Err(usage(
            "--format openssh writes OpenSSH's own text format; not with --der or --text",
        ));
    }
    if openssh && a.primes != 2 {
        return Err(usage(
            "OpenSSH keys have two primes; drop --primes or --format openssh",
        ));
    }
    if a.comment.is_some() && !openssh {
        return Err(usage("--comment is for --format openssh"));
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
    if openssh {
        let comment = a.comment.as_deref().unwrap_or("");
        let private = key
            .export_openssh(comment, passphrase.as_ref().map(|p| p.as_slice()))
            .map_err(from_core)?;
        if let Some(pubpath) = &a.pubout {
            let line = key.openssh_public(comment).map_err(from_core)?;
            emit(line.as_bytes(), Some(pubpath), false, false)?;
        }
        return emit(private.as_slice(), c.out.as_deref(), true, false);
    }
    let format = match (a.format, a.der) {
        (KeyFormat::Pkcs8, false) => RsaFormat::Pkcs8Pem,
        (KeyFormat::Pkcs8, true) => RsaFormat::Pkcs8Der,
        (KeyFormat::Pkcs1, false) => RsaFormat::Pkcs1Pem,
        (KeyFormat::Pkcs1, true) => RsaFormat::Pkcs1Der,
        (KeyFormat::Openssh, _) => unreachable!("written above"),
    };
    let mut private: SecureBuf = match &passphrase {
        Some(p) => {
            let kdf = match a.kdf {
                KdfArg::Scrypt => Kdf::Scrypt,
                KdfArg::Pbkdf2 => Kdf::Pbkdf2Sha256,
            };
            key.export_encrypted(!a.der, p.as_slice(), kdf)
                .map_err(from_core)?
        }
        None => key.export(format).map_err(from_core)?,
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
        let public = key.export(f).map_err(from_core)?;
        emit(public.as_slice(), Some(pubpath), false, a.der)?;
    }
    emit(private.as_slice(), c.out.as_deref(), true, a.der)
}
