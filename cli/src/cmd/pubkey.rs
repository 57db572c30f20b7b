//! `primeforge pubkey`.

use primeforge::encode::RsaFormat;

use crate::args::PubkeyArgs;
use crate::common::{check_outputs, emit, from_core, key_error, read_secret, Fail};
use crate::pass;

pub(crate) fn run_pubkey(a: PubkeyArgs) -> Result<(), Fail> {
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
    let public = key.export(format).map_err(from_core)?;
    emit(public.as_slice(), a.out.as_deref(), false, a.der)
}
