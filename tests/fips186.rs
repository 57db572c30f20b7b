//! FIPS 186-4 domain parameters (DSA, X9.42 DH): NIST's CAVP vectors for
//! generation from a seed and for every validation routine, OpenSSL's own
//! validation and use of what we make, our check of what OpenSSL makes, and
//! the same parameters for a seed at any thread count.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use primeforge::dh::fips186::{
    self, check_generator, check_seed, verify_pq, GenMethod, GeneratorCheck, HashFn, Request,
    SeedCheck,
};
use primeforge::dh::DhParams;
use primeforge::encode::DhFormat;
use primeforge::prime::Options;
use rug::Integer;

fn int(hex: &str) -> Integer {
    Integer::from_str_radix(hex, 16).unwrap()
}

fn bytes(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn tmp(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fips186");
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn generate(l: u32, n: u32, threads: u32, seed: &[u8; 32], g: GenMethod) -> DhParams {
    let req = Request::new(l, n, None).unwrap().with_generator(g);
    let mut opts = Options {
        threads,
        seed: Some(seed),
        // Every thread count runs, also above the machine's cores.
        exact_threads: true,
        ..Default::default()
    };
    fips186::generate(&req, &mut opts).unwrap().0
}

/// NIST CAVP's FIPS 186-3 DSA files (PQGGen.rsp, PQGVer.rsp), as pyca's
/// `cryptography_vectors` package ships them (`.ci/deps` installs it from
/// PyPI; they are not copied into this repository).
fn cavp_dir() -> Option<PathBuf> {
    let o = Command::new("python3")
        .args([
            "-c",
            "import cryptography_vectors, os; print(os.path.dirname(cryptography_vectors.__file__))",
        ])
        .output()
        .ok()?;
    if !o.status.success() {
        return None;
    }
    let d =
        PathBuf::from(String::from_utf8(o.stdout).ok()?.trim()).join("asymmetric/DSA/FIPS_186-3");
    d.join("PQGVer.rsp").exists().then_some(d)
}

/// One CAVP record: its section ("A.1.1.3", …), L, N, hash, and fields.
struct Record {
    section: String,
    l: u32,
    n: u32,
    hash: HashFn,
    fields: std::collections::HashMap<String, String>,
}

fn records(path: &Path) -> Vec<Record> {
    let text = std::fs::read_to_string(path).unwrap();
    let (mut section, mut l, mut n, mut hash) = (String::new(), 0, 0, HashFn::Sha1);
    let mut out = Vec::new();
    let mut fields = std::collections::HashMap::new();
    let mut flush = |fields: &mut std::collections::HashMap<String, String>,
                     section: &str,
                     l: u32,
                     n: u32,
                     hash: HashFn| {
        if !fields.is_empty() {
            out.push(Record {
                section: section.to_string(),
                l,
                n,
                hash,
                fields: std::mem::take(fields),
            });
        }
    };
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            flush(&mut fields, &section, l, n, hash);
        } else if let Some(m) = line.strip_prefix("[mod = ") {
            flush(&mut fields, &section, l, n, hash);
            // "L=2048, N=224, SHA-256]"
            let parts: Vec<&str> = m.trim_end_matches(']').split(", ").collect();
            l = parts[0][2..].parse().unwrap();
            n = parts[1][2..].parse().unwrap();
            hash = HashFn::from_name(parts[2]).unwrap();
        } else if let Some(s) = line.strip_prefix('[') {
            flush(&mut fields, &section, l, n, hash);
            section = s.split_whitespace().next().unwrap().to_string();
        } else if let Some((k, v)) = line.split_once(" = ") {
            fields.insert(k.to_string(), v.to_string());
        }
    }
    flush(&mut fields, &section, l, n, hash);
    out
}

fn passes(r: &Record) -> bool {
    r.fields["Result"].starts_with('P')
}

/// A.1.1.3 (p, q from seed and counter), A.2.2 (g's order) and A.2.4
/// (canonical g) agree with every verdict of NIST's PQGVer file, for
/// every hash (SHA-1 included: checking only).
#[test]
fn nist_validation_vectors() {
    let Some(dir) = cavp_dir() else {
        common::skip(
            "nist-vectors",
            "pyca's cryptography_vectors is not installed (pip install cryptography-vectors)",
        );
        return;
    };
    let all = records(&dir.join("PQGVer.rsp"));
    let mut counted = std::collections::BTreeMap::new();
    for r in &all {
        let f = &r.fields;
        let verdict = match r.section.as_str() {
            "A.1.1.3" => {
                let (p, q) = (int(&f["P"]), int(&f["Q"]));
                let c: u32 = f["c"].parse().unwrap();
                let ours = verify_pq(&p, &q, &bytes(&f["Seed"]), c, r.hash);
                // Named hash or not, the check finds the same verdict.
                let any = check_seed(&p, &q, &bytes(&f["Seed"]), c, None);
                assert_eq!(
                    ours.is_ok(),
                    matches!(any, SeedCheck::Verified(_)),
                    "{}",
                    f["Result"]
                );
                ours.is_ok()
            }
            "A.2.2" => {
                let g = check_generator(&int(&f["P"]), &int(&f["Q"]), &int(&f["G"]), None, None);
                g != GeneratorCheck::Failed
            }
            "A.2.4" => {
                let index = u8::from_str_radix(&f["index"], 16).unwrap();
                let seed = bytes(&f["domain_parameter_seed"]);
                let g = check_generator(
                    &int(&f["P"]),
                    &int(&f["Q"]),
                    &int(&f["G"]),
                    Some((&seed, r.hash)),
                    Some(index),
                );
                g == GeneratorCheck::Canonical(index)
            }
            // Shawe-Taylor provable primes: not made here.
            _ => continue,
        };
        assert_eq!(
            verdict,
            passes(r),
            "{} L={} N={} {:?}: NIST says {}",
            r.section,
            r.l,
            r.n,
            r.hash,
            f["Result"]
        );
        *counted.entry((r.section.clone(), passes(r))).or_insert(0) += 1;
    }
    // Every routine was exercised, with passes and failures.
    for s in ["A.1.1.3", "A.2.2", "A.2.4"] {
        for v in [true, false] {
            assert!(
                counted.get(&(s.to_string(), v)).copied().unwrap_or(0) >= 10,
                "{s} {v}: {counted:?}"
            );
        }
    }
}

/// Our A.1.1.3 and OpenSSL's agree on every one of NIST's PQGVer cases
/// that OpenSSL's default provider can take (p and q only: the cases have
/// no g), each verdict from both.
#[test]
fn our_seed_check_agrees_with_openssls_on_nist_data() {
    let Some(dir) = cavp_dir() else {
        common::skip(
            "nist-vectors",
            "pyca's cryptography_vectors is not installed (pip install cryptography-vectors)",
        );
        return;
    };
    let exe = common::compile_c(
        "ffc_openssl",
        &[&common::manifest_dir().join("tests/c/ffc_openssl.c")],
        &["-lcrypto"],
    );
    let (mut agreed, mut passes) = (0, 0);
    for r in records(&dir.join("PQGVer.rsp")) {
        if r.section != "A.1.1.3" {
            continue;
        }
        let f = &r.fields;
        let (p, q) = (int(&f["P"]), int(&f["Q"]));
        let c: u32 = f["c"].parse().unwrap();
        let ours = verify_pq(&p, &q, &bytes(&f["Seed"]), c, r.hash).is_ok();
        let theirs = common::run_ok(
            &exe,
            &[
                &f["P"],
                &f["Q"],
                "2",
                &f["Seed"],
                &f["c"],
                "-1",
                r.hash.name(),
                "pq",
            ],
        );
        assert_eq!(
            ours,
            theirs.stdout.trim() == "valid",
            "L={} N={} {:?} c={c}: NIST says {}; OpenSSL: {}",
            r.l,
            r.n,
            r.hash,
            f["Result"],
            theirs.stderr
        );
        agreed += 1;
        passes += usize::from(ours);
    }
    assert!(
        agreed >= 70 && passes >= 20,
        "{agreed} cases, {passes} valid"
    );
}

/// Generation from NIST's seeds (PQGGen A.1.1.2) gives NIST's p, q and
/// counter on the engine at 1 and 2 threads, and A.2.3 gives NIST's g.
#[test]
fn nist_generation_vectors() {
    let Some(dir) = cavp_dir() else {
        common::skip(
            "nist-vectors",
            "pyca's cryptography_vectors is not installed (pip install cryptography-vectors)",
        );
        return;
    };
    let (mut pq, mut g) = (0, 0);
    for r in records(&dir.join("PQGGen.rsp")) {
        let f = &r.fields;
        match r.section.as_str() {
            // Generation refuses SHA-1.
            "A.1.1.2" if r.hash != HashFn::Sha1 => {
                let seed = bytes(&f["domain_parameter_seed"]);
                let threads = if pq % 2 == 0 { 1 } else { 2 };
                let req = Request::new(r.l, r.n, Some(r.hash))
                    .unwrap()
                    .with_domain_seed(&seed)
                    .unwrap();
                let mut opts = Options {
                    threads,
                    ..Default::default()
                };
                let (params, _) = fips186::generate(&req, &mut opts).unwrap();
                let prov = params.fips186().unwrap();
                assert_eq!(params.p(), &int(&f["P"]), "L={} N={}", r.l, r.n);
                assert_eq!(params.q().unwrap(), &int(&f["Q"]));
                assert_eq!(prov.counter.to_string(), f["counter"]);
                assert_eq!(prov.seed, seed);
                pq += 1;
            }
            "A.2.3" if f.contains_key("domain_parameter_seed") => {
                let index = u8::from_str_radix(&f["index"], 16).unwrap();
                let seed = bytes(&f["domain_parameter_seed"]);
                let (p, q) = (int(&f["P"]), int(&f["Q"]));
                let e = Integer::from(&p - 1u32) / &q;
                assert_eq!(
                    fips186::canonical_generator(&p, &e, &seed, r.hash, index),
                    Some(int(&f["G"]))
                );
                g += 1;
            }
            _ => {}
        }
    }
    assert!(pq >= 50 && g >= 10, "{pq} generations, {g} generators");
}

/// The same seed gives the same parameters at 1, 2 and 16 threads, for
/// every size.
#[test]
fn same_seed_same_parameters_at_any_thread_count() {
    for (i, (l, n)) in fips186::SIZES.into_iter().enumerate() {
        let seed = [0x40 + i as u8; 32];
        let one = generate(l, n, 1, &seed, GenMethod::Canonical(1));
        for threads in [2, 16] {
            assert_eq!(
                generate(l, n, threads, &seed, GenMethod::Canonical(1)),
                one,
                "{l}/{n} at {threads} threads"
            );
        }
    }
}

/// OpenSSL's FIPS 186-4 validation (its default provider re-runs A.1.1.3
/// and, with an index, A.2.4 when the key object carries a seed) passes
/// what we make, and fails it when the counter, seed, index or g is
/// changed (each a control that the harness can say no).
#[test]
fn openssl_validates_seed_counter_and_generator() {
    let exe = common::compile_c(
        "ffc_openssl",
        &[&common::manifest_dir().join("tests/c/ffc_openssl.c")],
        &["-lcrypto"],
    );
    let openssl = |p: &DhParams, seed: &[u8], counter: u32, gindex: i32, digest: &str| {
        let r = common::run_ok(
            &exe,
            &[
                &format!("{:x}", p.p()),
                &format!("{:x}", p.q().unwrap()),
                &format!("{:x}", p.g()),
                &hex(seed),
                &counter.to_string(),
                &gindex.to_string(),
                digest,
            ],
        );
        r.stdout.trim().to_string()
    };
    for (i, (l, n)) in fips186::SIZES.into_iter().enumerate() {
        let seed = [0x10 + i as u8; 32];
        let p = generate(l, n, 2, &seed, GenMethod::Canonical(7));
        let v = p.fips186().unwrap().clone();
        let digest = v.hash.unwrap().name();
        assert_eq!(
            openssl(&p, &v.seed, v.counter, 7, digest),
            "valid",
            "{l}/{n}"
        );
        // OpenSSL's default hash for N (what it assumes reading a file)
        // is ours for 224 and 256.
        if n != 160 {
            assert_eq!(openssl(&p, &v.seed, v.counter, 7, "-"), "valid");
        }
        assert_eq!(openssl(&p, &v.seed, v.counter + 1, 7, digest), "invalid");
        assert_eq!(openssl(&p, &v.seed, v.counter, 8, digest), "invalid");
        let mut bad = v.seed.clone();
        bad[5] ^= 0x40;
        assert_eq!(openssl(&p, &bad, v.counter, 7, digest), "invalid");
        // An unverifiable g: OpenSSL checks its order only (A.2.2).
        let u = generate(l, n, 2, &seed, GenMethod::Unverifiable);
        assert_eq!(u.p(), p.p());
        assert_eq!(openssl(&u, &v.seed, v.counter, -1, digest), "valid");
        assert_eq!(openssl(&u, &v.seed, v.counter, 7, digest), "invalid");
    }
    // Other SHA-2 functions, passed by name.
    for (h, l, n) in [
        (HashFn::Sha384, 2048, 256),
        (HashFn::Sha512, 3072, 256),
        (HashFn::Sha512_256, 2048, 224),
    ] {
        let req = Request::new(l, n, Some(h)).unwrap();
        let mut opts = Options {
            threads: 2,
            seed: Some(&[0x77; 32]),
            ..Default::default()
        };
        let p = fips186::generate(&req, &mut opts).unwrap().0;
        let v = p.fips186().unwrap();
        assert_eq!(
            openssl(&p, &v.seed, v.counter, 1, h.name()),
            "valid",
            "{h:?}"
        );
        assert_eq!(
            check_seed(p.p(), p.q().unwrap(), &v.seed, v.counter, None),
            SeedCheck::Verified(h)
        );
    }
}

fn openssl_stdin(args: &[&str], input: &[u8]) -> String {
    use std::io::Write;
    let mut c = Command::new("openssl")
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("openssl");
    c.stdin.take().unwrap().write_all(input).unwrap();
    let o = c.wait_with_output().unwrap();
    assert!(o.status.success());
    String::from_utf8(o.stdout).unwrap()
}

fn openssl(args: &[&str]) -> String {
    let o = Command::new("openssl")
        .args(args)
        .output()
        .expect("openssl");
    let text =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "openssl {args:?}: {text}");
    text
}

/// OpenSSL reads every format we write, makes key pairs from the X9.42 and
/// DSA files, derives one secret from two X9.42 key pairs, and signs and
/// verifies with a DSA key; our reader keeps the seed and counter of our
/// X9.42 files and our check verifies them.
#[test]
fn openssl_uses_every_format() {
    let p = generate(2048, 256, 2, &[3; 32], GenMethod::Canonical(1));
    let v = p.fips186().unwrap();
    for (format, name) in [
        (DhFormat::X942Pem, "x942.pem"),
        (DhFormat::X942Der, "x942.der"),
        (DhFormat::DsaPem, "dsa.pem"),
        (DhFormat::DsaDer, "dsa.der"),
    ] {
        let f = tmp(name);
        std::fs::write(&f, p.export(format).unwrap().as_slice()).unwrap();
        let path = f.to_str().unwrap();
        let text = if name.starts_with("x942") {
            let inform = if name.ends_with("der") { "DER" } else { "PEM" };
            openssl(&["dhparam", "-inform", inform, "-in", path, "-noout", "-text"])
        } else if name.ends_with("pem") {
            openssl(&["dsaparam", "-in", path, "-noout", "-text"])
        } else {
            // OpenSSL 3.0's dsaparam cannot read DSA parameters in DER,
            // not even its own (-outform DER, then -inform DER: "unexpected
            // parameters type"): the DER must be the PEM file's body.
            let pem = p.export(DhFormat::DsaPem).unwrap();
            let body: String = std::str::from_utf8(pem.as_slice())
                .unwrap()
                .lines()
                .filter(|l| !l.starts_with("-----"))
                .collect();
            let der = p.export(DhFormat::DsaDer).unwrap();
            let b64 = openssl_stdin(&["base64", "-A"], der.as_slice());
            assert_eq!(b64.trim(), body);
            "2048 bit".to_string()
        };
        assert!(text.contains("2048 bit"), "{name}: {text}");
        if name.starts_with("x942") {
            // OpenSSL reads the seed and counter back.
            assert!(text.contains(&format!("pcounter: {}", v.counter)), "{text}");
        }
        // Our own reader and check, from the file.
        let r = primeforge::dh::check::check_encoded(&std::fs::read(&f).unwrap()).unwrap();
        assert_eq!(r.problems, 0, "{name}");
        if name.starts_with("x942") {
            assert_eq!(r.seed, SeedCheck::Verified(HashFn::Sha256));
            assert_eq!(r.counter, Some(v.counter));
            assert_eq!(r.generator, Some(GeneratorCheck::Canonical(1)));
        } else {
            assert_eq!(r.seed, SeedCheck::Absent);
            assert_eq!(r.generator, Some(GeneratorCheck::OrderOnly));
        }
    }
    let x942 = tmp("x942.pem");
    let dsa = tmp("dsa.pem");
    openssl(&[
        "pkeyparam",
        "-in",
        x942.to_str().unwrap(),
        "-check",
        "-noout",
    ]);
    openssl(&[
        "pkeyparam",
        "-in",
        dsa.to_str().unwrap(),
        "-check",
        "-noout",
    ]);
    // Two X9.42 key pairs derive one secret.
    let mut secrets = Vec::new();
    let (k1, k2, p1, p2) = (tmp("k1.pem"), tmp("k2.pem"), tmp("p1.pem"), tmp("p2.pem"));
    for (k, pubk) in [(&k1, &p1), (&k2, &p2)] {
        openssl(&[
            "genpkey",
            "-paramfile",
            x942.to_str().unwrap(),
            "-out",
            k.to_str().unwrap(),
        ]);
        openssl(&[
            "pkey",
            "-in",
            k.to_str().unwrap(),
            "-pubout",
            "-out",
            pubk.to_str().unwrap(),
        ]);
    }
    for (k, peer) in [(&k1, &p2), (&k2, &p1)] {
        let out = tmp("secret");
        openssl(&[
            "pkeyutl",
            "-derive",
            "-inkey",
            k.to_str().unwrap(),
            "-peerkey",
            peer.to_str().unwrap(),
            // The secret padded to p's length: unpadded, OpenSSL drops a
            // leading zero byte (one run in 256 read 255 bytes).
            "-pkeyopt",
            "pad:1",
            "-out",
            out.to_str().unwrap(),
        ]);
        secrets.push(std::fs::read(&out).unwrap());
    }
    assert_eq!(secrets[0], secrets[1]);
    assert_eq!(secrets[0].len(), 256);
    // A DSA key from the DSA file signs; its public key verifies.
    let (dk, dp, msg, sig) = (tmp("dk.pem"), tmp("dp.pem"), tmp("msg"), tmp("sig"));
    std::fs::write(&msg, b"primeforge").unwrap();
    openssl(&[
        "genpkey",
        "-paramfile",
        dsa.to_str().unwrap(),
        "-out",
        dk.to_str().unwrap(),
    ]);
    openssl(&[
        "pkey",
        "-in",
        dk.to_str().unwrap(),
        "-pubout",
        "-out",
        dp.to_str().unwrap(),
    ]);
    openssl(&[
        "dgst",
        "-sha256",
        "-sign",
        dk.to_str().unwrap(),
        "-out",
        sig.to_str().unwrap(),
        msg.to_str().unwrap(),
    ]);
    let v = openssl(&[
        "dgst",
        "-sha256",
        "-verify",
        dp.to_str().unwrap(),
        "-signature",
        sig.to_str().unwrap(),
        msg.to_str().unwrap(),
    ]);
    assert!(v.contains("Verified OK"), "{v}");
}

/// What OpenSSL makes, our check verifies: FIPS 186-4 DHX parameters
/// (seed and counter by A.1.1.3 with OpenSSL's hash for N), its default
/// DHX parameters (FIPS 186-2's procedure), a canonical g with OpenSSL's
/// index, and every one fails once its counter or seed is changed.
#[test]
fn our_check_verifies_what_openssl_makes() {
    let cases: [(&str, &[&str], SeedCheck, Option<GeneratorCheck>); 5] = [
        (
            "dhx4_224.pem",
            &[
                "dh_paramgen_prime_len:2048",
                "dh_paramgen_subprime_len:224",
                "dh_paramgen_type:2",
            ],
            SeedCheck::Verified(HashFn::Sha224),
            Some(GeneratorCheck::OrderOnly),
        ),
        (
            "dhx4_256.pem",
            &[
                "dh_paramgen_prime_len:2048",
                "dh_paramgen_subprime_len:256",
                "dh_paramgen_type:2",
                "gindex:5",
            ],
            SeedCheck::Verified(HashFn::Sha256),
            Some(GeneratorCheck::Canonical(5)),
        ),
        (
            "dhx2_256.pem",
            &["dh_paramgen_prime_len:2048", "dh_paramgen_subprime_len:256"],
            SeedCheck::VerifiedFips186_2(HashFn::Sha256),
            Some(GeneratorCheck::OrderOnly),
        ),
        // Not a FIPS 186-4 size, and OpenSSL's checks call it valid.
        (
            "dhx2_1536.pem",
            &["dh_paramgen_prime_len:1536", "dh_paramgen_subprime_len:224"],
            SeedCheck::VerifiedFips186_2(HashFn::Sha224),
            None,
        ),
        (
            "dhx2_160.pem",
            &["dh_paramgen_prime_len:1024", "dh_paramgen_subprime_len:160"],
            SeedCheck::VerifiedFips186_2(HashFn::Sha1),
            Some(GeneratorCheck::OrderOnly),
        ),
    ];
    for (name, opts, want, generator) in cases {
        let f = tmp(name);
        let mut args = vec![
            "genpkey",
            "-genparam",
            "-algorithm",
            "DHX",
            "-out",
            f.to_str().unwrap(),
        ];
        for o in opts {
            args.extend(["-pkeyopt", o]);
        }
        openssl(&args);
        let data = std::fs::read(&f).unwrap();
        let r = primeforge::dh::check::check_encoded(&data).unwrap();
        assert_eq!(r.problems, 0, "{name}");
        assert_eq!(r.seed, want, "{name}");
        assert_eq!(r.generator, generator, "{name}");
        // Change the counter (the last byte of the file's DER) and a
        // seed byte: the check says so.
        let params = primeforge::dh::import(&data).unwrap();
        let v = params.fips186().unwrap();
        for (seed, counter) in [
            (v.seed.clone(), v.counter + 1),
            (
                {
                    let mut s = v.seed.clone();
                    s[0] ^= 1;
                    s
                },
                v.counter,
            ),
        ] {
            let c = check_seed(params.p(), params.q().unwrap(), &seed, counter, None);
            assert!(matches!(c, SeedCheck::Failed(_)), "{name}: {c:?}");
        }
    }
}

/// The C ABI: the same bytes for a seed at 1 and 2 threads; the seed,
/// counter, hash and index it reports regenerate the same parameters
/// from the domain seed alone; `pf_dh_check_ex` says what it verified and
/// flags a changed seed.
#[test]
fn c_abi_generates_reports_and_checks() {
    use primeforge::ffi::*;
    let generate = |req: &pf_dh_fips186, threads: u32, seed: Option<&[u8; 32]>| {
        let o = common::opts(threads, seed);
        let mut d = std::ptr::null_mut();
        assert_eq!(
            unsafe { pf_dh_generate_fips186(req, &o, &mut d) },
            pf_status::PF_OK
        );
        d
    };
    let export = |d: *const pf_dh_params, f: pf_format| {
        let mut b = std::ptr::null_mut();
        assert_eq!(
            unsafe { pf_dh_export(d, f as u32, &mut b) },
            pf_status::PF_OK
        );
        common::take(b)
    };
    let mut req = pf_dh_fips186_default(2048);
    req.qbits = 256;
    req.hash = pf_hash::PF_HASH_SHA384 as u32;
    req.gindex = 42;
    let a = generate(&req, 1, Some(&[9; 32]));
    let b = generate(&req, 2, Some(&[9; 32]));
    let x942 = export(a, pf_format::PF_FORMAT_X942_DER);
    assert_eq!(x942, export(b, pf_format::PF_FORMAT_X942_DER));
    let mut seed = std::ptr::null_mut();
    let (mut counter, mut hash, mut gindex) = (0u32, 0u32, 0i32);
    assert_eq!(
        unsafe { pf_dh_fips186_info(a, &mut seed, &mut counter, &mut hash, &mut gindex) },
        pf_status::PF_OK
    );
    let seed = common::take(seed);
    assert_eq!((hash, gindex), (pf_hash::PF_HASH_SHA384 as u32, 42));
    // From the domain seed alone (no generation seed): the same result.
    let again = pf_dh_fips186 {
        seed: seed.as_ptr(),
        seed_len: seed.len(),
        ..req
    };
    let c = generate(&again, 2, None);
    assert_eq!(export(c, pf_format::PF_FORMAT_X942_DER), x942);
    // NULL counter/hash/gindex are allowed.
    let mut s2 = std::ptr::null_mut();
    assert_eq!(
        unsafe {
            pf_dh_fips186_info(
                c,
                &mut s2,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        },
        pf_status::PF_OK
    );
    assert_eq!(common::take(s2), seed);
    // The check finds the SHA-384 seed (not OpenSSL's default for 256).
    let (mut problems, mut verified) = (0u32, 0u32);
    assert_eq!(
        unsafe { pf_dh_check_ex(x942.as_ptr(), x942.len(), &mut problems, &mut verified) },
        pf_status::PF_OK
    );
    assert_eq!(problems, 0);
    assert_eq!(
        verified,
        PF_DH_VERIFIED_SEED | PF_DH_VERIFIED_G_CANONICAL | PF_DH_VERIFIED_G_ORDER
    );
    // One seed bit changed in the file: SEED_INVALID, nothing verified.
    let mut bad = x942.clone();
    let at = bad
        .windows(seed.len())
        .position(|w| w == seed.as_slice())
        .unwrap();
    bad[at + 3] ^= 0x10;
    assert_eq!(
        unsafe { pf_dh_check_ex(bad.as_ptr(), bad.len(), &mut problems, &mut verified) },
        pf_status::PF_OK
    );
    assert_eq!((problems, verified), (PF_DH_CHECK_SEED_INVALID, 0));
    // A domain seed that gives no prime q is refused with a message.
    let mut q_seed = vec![0u8; 32];
    let no_q = (0u8..=255)
        .find(|&v| {
            q_seed[31] = v;
            !primeforge::prime::is_probable_prime(
                &fips186::q_from_seed(&q_seed, 256, HashFn::Sha384),
                &primeforge::prime::Seed::from_os().unwrap(),
                0,
            )
        })
        .unwrap();
    q_seed[31] = no_q;
    let bad_req = pf_dh_fips186 {
        seed: q_seed.as_ptr(),
        seed_len: q_seed.len(),
        ..req
    };
    let o = common::opts(1, None);
    let mut d = std::ptr::null_mut();
    assert_eq!(
        unsafe { pf_dh_generate_fips186(&bad_req, &o, &mut d) },
        pf_status::PF_ERR_INVALID_ARGUMENT
    );
    let msg = unsafe { std::ffi::CStr::from_ptr(pf_last_error_message()) };
    assert!(msg.to_str().unwrap().contains("no prime q"), "{msg:?}");
    // In the background: the same parameters; a cancel ends it promptly.
    let o = common::opts(2, Some(&[9; 32]));
    let mut job = std::ptr::null_mut();
    assert_eq!(
        unsafe { pf_dh_generate_fips186_start(&req, &o, &mut job) },
        pf_status::PF_OK
    );
    assert_eq!(unsafe { pf_job_wait(job, u64::MAX) }, pf_status::PF_OK);
    let mut from_job = std::ptr::null_mut();
    assert_eq!(
        unsafe { pf_job_take_dh(job, &mut from_job) },
        pf_status::PF_OK
    );
    unsafe { pf_job_free(job) };
    assert_eq!(export(from_job, pf_format::PF_FORMAT_X942_DER), x942);
    let big = pf_dh_fips186_default(3072);
    let o = common::opts(1, None);
    assert_eq!(
        unsafe { pf_dh_generate_fips186_start(&big, &o, &mut job) },
        pf_status::PF_OK
    );
    // A 3072-bit search on one thread takes hundreds of exponentiations;
    // cancelled at once, it cannot have finished.
    assert_eq!(unsafe { pf_job_cancel(job) }, pf_status::PF_OK);
    assert_eq!(
        unsafe { pf_job_wait(job, 10_000) },
        pf_status::PF_ERR_CANCELLED
    );
    unsafe { pf_job_free(job) };
    for p in [a, b, c, from_job] {
        unsafe { pf_dh_free(p) };
    }
}
