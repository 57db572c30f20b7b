//! `primeforge dhparam`.

use primeforge::dh;
use primeforge::encode::DhFormat;

use crate::args::{DhArgs, DsaArgs, FfcArgs};
use crate::cmd::moduli::group_by_name;
use crate::common::{check_outputs, emit, from_core, usage, with_progress, with_text, Fail};
use crate::text;

pub(crate) fn run_dh(a: DhArgs) -> Result<(), Fail> {
    let c = &a.common;
    check_outputs(&[("--out", c.out.as_deref())], &[])?;
    let ffc_given = a.ffc.qbits.is_some()
        || a.ffc.digest.is_some()
        || a.ffc.gindex.is_some()
        || a.ffc.unverifiable_g;
    if a.fips186 {
        let params = fips186(a.bits.unwrap_or(2048), &a.ffc, c)?;
        let format = if a.out.der {
            DhFormat::X942Der
        } else {
            DhFormat::X942Pem
        };
        return write(&params, format, a.out.text, a.out.der, c);
    }
    if ffc_given {
        return Err(usage(
            "--qbits, --digest, --gindex and --unverifiable-g go with --fips186",
        ));
    }
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
    let format = match (a.x942, a.out.der) {
        (false, false) => DhFormat::Pkcs3Pem,
        (false, true) => DhFormat::Pkcs3Der,
        (true, false) => DhFormat::X942Pem,
        (true, true) => DhFormat::X942Der,
    };
    if a.out.text && a.out.der {
        return Err(usage("--text prints text before PEM; not with --der"));
    }
    let mut out = params.export(format).map_err(from_core)?;
    if a.out.text {
        out = with_text(&text::dh(&params, a.x942), &out)?;
    }
    emit(out.as_slice(), c.out.as_deref(), false, a.out.der)
}

pub(crate) fn run_dsa(a: DsaArgs) -> Result<(), Fail> {
    let c = &a.common;
    check_outputs(&[("--out", c.out.as_deref())], &[])?;
    let params = fips186(a.bits.unwrap_or(2048), &a.ffc, c)?;
    let format = if a.out.der {
        DhFormat::DsaDer
    } else {
        DhFormat::DsaPem
    };
    write(&params, format, a.out.text, a.out.der, c)
}

/// FIPS 186-4 parameters of `bits` on the options' terms, with a summary
/// that carries the seed and counter (the DSA format cannot).
fn fips186(bits: u32, f: &FfcArgs, c: &crate::args::Common) -> Result<dh::DhParams, Fail> {
    use dh::fips186::{GenMethod, HashFn, Request, DEFAULT_GINDEX};
    let hash = match &f.digest {
        Some(name) => Some(HashFn::from_name(name).ok_or_else(|| {
            usage(format!(
                "unknown hash {name:?}; one of sha224, sha256, sha384, sha512, sha512-224, sha512-256"
            ))
        })?),
        None => None,
    };
    let method = if f.unverifiable_g {
        GenMethod::Unverifiable
    } else {
        GenMethod::Canonical(f.gindex.unwrap_or(DEFAULT_GINDEX))
    };
    let req = Request::new(bits, f.qbits.unwrap_or(0), hash)
        .map_err(from_core)?
        .with_generator(method);
    // About 2 candidates per ln(p) pass the counter's congruence (p ≡ 1
    // mod 2q): a prime every ln(2^L)/2 counters.
    let expected = bits as f64 * std::f64::consts::LN_2 / 2.0;
    with_progress(
        c,
        expected,
        "candidates",
        |o| dh::fips186::generate(&req, o),
        |secs, st| {
            format!(
                "{}/{} FIPS 186-4 parameters in {secs} ({} candidates, {} exponentiations)",
                req.l(),
                req.n(),
                st.candidates,
                st.exponentiations
            )
        },
    )
}

/// Writes parameters in `format`, after their text with --text.
fn write(
    params: &dh::DhParams,
    format: DhFormat,
    text: bool,
    der: bool,
    c: &crate::args::Common,
) -> Result<(), Fail> {
    if text && der {
        return Err(usage("--text prints text before PEM; not with --der"));
    }
    let mut out = params.export(format).map_err(from_core)?;
    if let (Some(v), false) = (params.fips186(), c.quiet) {
        eprintln!("{}", text::provenance(v));
    }
    if text {
        out = with_text(&text::ffc(params), &out)?;
    }
    emit(out.as_slice(), c.out.as_deref(), false, der)
}
