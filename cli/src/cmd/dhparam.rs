//! `primeforge dhparam`.

use primeforge::dh;
use primeforge::encode::DhFormat;

use crate::args::DhArgs;
use crate::cmd::moduli::group_by_name;
use crate::common::{check_outputs, emit, from_core, usage, with_progress, with_text, Fail};
use crate::text;

pub(crate) fn run_dh(a: DhArgs) -> Result<(), Fail> {
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
    let mut out = params.export(format).map_err(from_core)?;
    if a.text {
        out = with_text(&text::dh(&params, a.x942), &out)?;
    }
    emit(out.as_slice(), c.out.as_deref(), false, a.der)
}
