//! The RSA private-key importer behind `primeforge check` (PKCS#1 and
//! PKCS#8, PEM and DER, two to five primes): any bytes give a report or an
//! error — never a crash, a panic or a hang — and the sniffing helper
//! agrees with itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use primeforge::rsa::check::{check_private_key, looks_like_private_key};

fuzz_target!(|data: &[u8]| {
    let _ = looks_like_private_key(data);
    if let Ok(report) = check_private_key(data) {
        assert!(report.primes >= 2, "a key with {} primes", report.primes);
        assert!(report.bits > 0);
    }
});
