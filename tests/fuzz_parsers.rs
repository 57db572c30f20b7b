//! Mutation fuzzing of every parser on stable Rust, in every `cargo test`
//! (the coverage-guided cargo-fuzz targets, which need nightly, are in
//! tests/fuzz): valid PEM
//! and DER inputs for pf_dh_check and the RSA key checker are mutated —
//! bit flips, byte overwrites with ASN.1-significant values, insertions,
//! deletions, truncations, splices — and every result must be a status,
//! never a panic, crash or hang.

mod common;

use primeforge::ffi::*;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, input: &[u8], corpus: &[Vec<u8>]) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        if v.is_empty() {
            v.push(0x30);
        }
        let at = rng.below(v.len());
        match rng.below(7) {
            0 => v[at] ^= 1 << rng.below(8),
            1 => {
                v[at] = [
                    0x00, 0x02, 0x30, 0x7F, 0x80, 0x81, 0x82, 0x84, 0xFF, b'-', b'\n', b'=',
                ][rng.below(12)]
            }
            2 => v.insert(at, rng.next() as u8),
            3 => {
                v.remove(at);
            }
            4 => v.truncate(at),
            5 => {
                let other = &corpus[rng.below(corpus.len())];
                let from = rng.below(other.len());
                let len = rng.below(64).min(other.len() - from);
                v.splice(at..at, other[from..from + len].iter().copied());
            }
            _ => {
                let len = rng.below(16).min(v.len() - at);
                let fill = rng.next() as u8;
                v[at..at + len].iter_mut().for_each(|b| *b = fill);
            }
        }
    }
    v
}

fn corpus() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut d = std::ptr::null_mut();
    let o = common::opts(2, Some(&[7u8; 32]));
    assert_eq!(
        unsafe { pf_dh_generate_ex(512, 2, 0, &o, &mut d) },
        pf_status::PF_OK
    );
    for f in [9u32, 10, 11, 12] {
        let mut b = std::ptr::null_mut();
        assert_eq!(unsafe { pf_dh_export(d, f, &mut b) }, pf_status::PF_OK);
        out.push(common::take(b));
    }
    unsafe { pf_dh_free(d) };
    let mut k = std::ptr::null_mut();
    assert_eq!(
        unsafe { pf_rsa_generate_ex(1024, 65537, 3, &o, &mut k) },
        pf_status::PF_OK
    );
    for f in 1u32..=4 {
        let mut b = std::ptr::null_mut();
        assert_eq!(unsafe { pf_rsa_export(k, f, &mut b) }, pf_status::PF_OK);
        out.push(common::take(b));
    }
    unsafe { pf_rsa_free(k) };
    out
}

#[test]
fn parsers_survive_mutated_input() {
    let corpus = corpus();
    let mut rng = Rng(std::env::var("PF_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x9E37_79B9_7F4A_7C15));
    let mut statuses = std::collections::BTreeMap::new();
    let start = std::time::Instant::now();
    // PF_FUZZ_ITERS=N runs a longer session by hand.
    let iters: usize = std::env::var("PF_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6000);
    for i in 0..iters {
        let input = mutate(&mut rng, &corpus[i % corpus.len()], &corpus);
        let mut problems = 0u32;
        let st = unsafe { pf_dh_check(input.as_ptr(), input.len(), &mut problems) };
        assert_ne!(
            st,
            pf_status::PF_ERR_INTERNAL,
            "panic inside pf_dh_check on {input:02x?}"
        );
        *statuses.entry(st as u32).or_insert(0) += 1;
        let r = std::panic::catch_unwind(|| primeforge::rsa::check::check_private_key(&input));
        assert!(r.is_ok(), "panic in check_private_key on {input:02x?}");
        let r = std::panic::catch_unwind(|| primeforge::rsa::check::looks_like_private_key(&input));
        assert!(r.is_ok(), "panic in looks_like_private_key on {input:02x?}");
        // Import (with and without a passphrase) and the DH importer.
        for pass in [None, Some(&b"pw"[..])] {
            let mut k = std::ptr::null_mut();
            let (pp, pl) = pass.map_or((std::ptr::null(), 0), |p| (p.as_ptr(), p.len()));
            let st = unsafe { pf_rsa_import(input.as_ptr(), input.len(), pp, pl, &mut k) };
            assert_ne!(
                st,
                pf_status::PF_ERR_INTERNAL,
                "pf_rsa_import on {input:02x?}"
            );
            if st == pf_status::PF_OK {
                let mut problems = 0;
                assert_eq!(unsafe { pf_rsa_check(k, &mut problems) }, pf_status::PF_OK);
                unsafe { pf_rsa_free(k) };
            }
        }
        let mut d = std::ptr::null_mut();
        let st = unsafe { pf_dh_import(input.as_ptr(), input.len(), &mut d) };
        assert_ne!(
            st,
            pf_status::PF_ERR_INTERNAL,
            "pf_dh_import on {input:02x?}"
        );
        unsafe { pf_dh_free(d) };
    }
    eprintln!(
        "{iters} mutated inputs in {:?}; pf_dh_check statuses {statuses:?}",
        start.elapsed()
    );
    // Both outcomes occur: the fuzzer reaches past the outer parser.
    assert!(statuses.get(&0).copied().unwrap_or(0) > 0);
    assert!(statuses.get(&10).copied().unwrap_or(0) > 0);
}

/// Inputs that cargo-fuzz found (tests/fuzz), kept as regression cases on
/// stable. Each must decode, re-encode in every format that can carry it,
/// and decode back to the same values.
#[test]
fn regressions_from_cargo_fuzz() {
    use primeforge::dh::DhParams;
    use primeforge::encode::{dh_decode, DhFormat};
    let cases: [(&str, &[u8]); 1] = [(
        // dh_roundtrip: g = 0 decoded, but re-encoded as `02 00` (an
        // INTEGER with no content octets), which no DER parser accepts.
        "g = 0",
        &[
            0x30, 0x26, 0x02, 0x21, 0x00, 0x88, 0x71, 0x66, 0x81, 0xf4, 0x03, 0xe6, 0xee, 0xd1,
            0xa6, 0xa1, 0x75, 0x6c, 0x1f, 0x9f, 0x8b, 0xab, 0xc1, 0x43, 0x4e, 0x65, 0x1e, 0x89,
            0x26, 0x29, 0x71, 0xd7, 0xfb, 0x2b, 0x5b, 0x88, 0x2f, 0x02, 0x01, 0x00,
        ],
    )];
    for (name, input) in cases {
        let d = dh_decode(input).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let params = DhParams::from_bytes(&d.p, &d.g, d.q.as_deref());
        for f in [DhFormat::Pkcs3Der, DhFormat::Pkcs3Pem] {
            let buf = params.export(f).unwrap();
            let again =
                dh_decode(buf.as_slice()).unwrap_or_else(|e| panic!("{name}, {f:?}: {e:?}"));
            assert_eq!(again.p, d.p, "{name}");
            assert_eq!(again.g.iter().all(|&b| b == 0), d.g.iter().all(|&b| b == 0));
        }
        // And the checker reports it instead of refusing it.
        let mut problems = 0;
        let st = unsafe { pf_dh_check(input.as_ptr(), input.len(), &mut problems) };
        assert_eq!(st, pf_status::PF_OK, "{name}");
        assert_ne!(problems & PF_DH_CHECK_NOT_SUITABLE_GENERATOR, 0, "{name}");
    }
}
