//! Mutation fuzzing of every parser on stable Rust (cargo-fuzz needs a
//! nightly toolchain, which this build machine cannot fetch): valid PEM
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
    }
    eprintln!(
        "{iters} mutated inputs in {:?}; pf_dh_check statuses {statuses:?}",
        start.elapsed()
    );
    // Both outcomes occur: the fuzzer reaches past the outer parser.
    assert!(statuses.get(&0).copied().unwrap_or(0) > 0);
    assert!(statuses.get(&10).copied().unwrap_or(0) > 0);
}
