//! The DH parameter decoder (PEM and DER, PKCS#3 and X9.42) against the
//! encoder: whatever the decoder accepts must re-encode in every format
//! that can carry it, and decode back to the same p, g and q.
#![no_main]

use libfuzzer_sys::fuzz_target;
use primeforge::dh::DhParams;
use primeforge::encode::{dh_decode, DhFormat};
use rug::Integer;

fn int(b: &[u8]) -> Integer {
    Integer::from_digits(b, rug::integer::Order::Msf)
}

fuzz_target!(|data: &[u8]| {
    let Ok(d) = dh_decode(data) else { return };
    let params = DhParams::from_bytes(&d.p, &d.g, d.q.as_deref());
    let mut formats = vec![DhFormat::Pkcs3Pem, DhFormat::Pkcs3Der];
    if d.q.is_some() {
        formats.extend([DhFormat::X942Pem, DhFormat::X942Der]);
    }
    for f in formats {
        let Ok(buf) = params.export(f) else {
            panic!("decoded parameters do not re-encode as {f:?}")
        };
        let again = dh_decode(buf.as_slice()).expect("our own encoding decodes");
        assert_eq!(int(&again.p), int(&d.p), "p after {f:?}");
        assert_eq!(int(&again.g), int(&d.g), "g after {f:?}");
        if matches!(f, DhFormat::X942Pem | DhFormat::X942Der) {
            assert_eq!(
                again.q.as_deref().map(int),
                d.q.as_deref().map(int),
                "q after {f:?}"
            );
        }
    }
});
