//! `primeforge check` and `pf_dh_check` on real-world files (issue 11):
//! read what OpenSSL reads (text around PEM blocks, bundles, 76-column
//! base64, CRLF, trailing blank lines), name what they cannot check,
//! judge oversized RSA components without arithmetic, verify X9.42's q,
//! j and subgroup, and recognise RFC 7919/3526/5114 groups.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use primeforge::ffi::*;
use rug::integer::Order;
use rug::Integer;

fn dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("check-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn primeforge(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_primeforge"))
        .args(args)
        .output()
        .unwrap()
}

/// Runs `primeforge ARGS --out DIR/NAME`, which must succeed; the path.
fn made(d: &Path, name: &str, args: &[&str]) -> PathBuf {
    let path = d.join(name);
    let mut all = args.to_vec();
    all.extend(["--out", path.to_str().unwrap()]);
    let o = primeforge(&all);
    assert!(
        o.status.success(),
        "{all:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    path
}

fn check(path: &Path) -> (Option<i32>, String, String) {
    let o = primeforge(&["check", path.to_str().unwrap()]);
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn openssl(args: &[&str]) {
    let o = Command::new("openssl")
        .args(args)
        .output()
        .expect("openssl");
    assert!(
        o.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn dh_check_bytes(data: &[u8]) -> Result<u32, pf_status> {
    let mut problems = 0xdead_beef;
    let st = unsafe { pf_dh_check(data.as_ptr(), data.len(), &mut problems) };
    if st == pf_status::PF_OK {
        Ok(problems)
    } else {
        assert_eq!(problems, 0xdead_beef, "*problems written on failure");
        Err(st)
    }
}

// ---- DER by hand (test material) ----

fn der_len(n: usize) -> Vec<u8> {
    if n < 128 {
        vec![n as u8]
    } else {
        let b: Vec<u8> = n
            .to_be_bytes()
            .into_iter()
            .skip_while(|&x| x == 0)
            .collect();
        let mut v = vec![0x80 | b.len() as u8];
        v.extend(b);
        v
    }
}

fn der_int(v: &Integer) -> Vec<u8> {
    let mut b = vec![0u8; v.significant_digits::<u8>()];
    v.write_digits(&mut b, Order::Msf);
    if b.is_empty() || b[0] & 0x80 != 0 {
        b.insert(0, 0);
    }
    let mut out = vec![0x02];
    out.extend(der_len(b.len()));
    out.extend(b);
    out
}

fn der_seq(items: &[Vec<u8>]) -> Vec<u8> {
    let body: Vec<u8> = items.concat();
    let mut out = vec![0x30];
    out.extend(der_len(body.len()));
    out.extend(body);
    out
}

fn pem(label: &str, der: &[u8], width: usize, eol: &str) -> String {
    use std::fmt::Write;
    const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut b64 = String::new();
    for chunk in der.chunks(3) {
        let n = chunk.iter().fold(0u32, |a, &x| a << 8 | x as u32) << (8 * (3 - chunk.len()));
        for i in 0..4 {
            if i <= chunk.len() {
                b64.push(B64[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                b64.push('=');
            }
        }
    }
    let mut out = format!("-----BEGIN {label}-----{eol}");
    for line in b64.as_bytes().chunks(width) {
        let _ = write!(out, "{}{eol}", std::str::from_utf8(line).unwrap());
    }
    let _ = write!(out, "-----END {label}-----{eol}");
    out
}

/// Every PEM block's body back to DER (for re-wrapping test material).
fn pem_der(text: &str) -> Vec<u8> {
    let b64: String = text
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect::<String>();
    let mut out = Vec::new();
    let val = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    for q in b64.trim().as_bytes().chunks(4) {
        let pad = q.iter().filter(|&&c| c == b'=').count();
        let n = q.iter().fold(0u32, |a, &c| {
            a << 6 | if c == b'=' { 0 } else { val(c) as u32 }
        });
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend(&bytes[..3 - pad]);
    }
    out
}

#[test]
fn pem_is_read_as_openssl_reads_it() {
    let d = dir("lenient");
    let key = made(&d, "key.pem", &["rsa", "--bits", "1024", "-q"]);
    let dh = made(&d, "dh.pem", &["dhparam", "--named", "ffdhe2048"]);
    let cert = d.join("cert.pem");
    openssl(&[
        "req",
        "-x509",
        "-key",
        key.to_str().unwrap(),
        "-subj",
        "/CN=test",
        "-days",
        "1",
        "-out",
        cert.to_str().unwrap(),
    ]);
    let text_dh = d.join("dh-text.pem");
    openssl(&[
        "dhparam",
        "-in",
        dh.to_str().unwrap(),
        "-text",
        "-out",
        text_dh.to_str().unwrap(),
    ]);
    let key_text = std::fs::read_to_string(&key).unwrap();
    let dh_text = std::fs::read_to_string(&dh).unwrap();
    let cert_text = std::fs::read_to_string(&cert).unwrap();
    let key_der = pem_der(&key_text);
    let dh_der = pem_der(&dh_text);
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "bag attributes",
            format!("Bag Attributes\n    localKeyID: 01 02\n    friendlyName: test\nKey Attributes: <No Attributes>\n{key_text}"),
            "RSA private key",
        ),
        ("trailing blank lines", format!("{key_text}\n\n\n"), "RSA private key"),
        ("76 columns", pem("PRIVATE KEY", &key_der, 76, "\n"), "RSA private key"),
        ("CRLF", pem("PRIVATE KEY", &key_der, 64, "\r\n"), "RSA private key"),
        ("certificate then key", format!("{cert_text}{key_text}"), "block 2 of 2"),
        ("key then certificate", format!("{key_text}{cert_text}"), "block 1 of 2"),
        ("dhparam -text", std::fs::read_to_string(&text_dh).unwrap(), "DH parameters"),
        ("DH CRLF 76", pem("DH PARAMETERS", &dh_der, 76, "\r\n"), "DH parameters"),
        ("DH after a certificate", format!("{cert_text}\n{dh_text}\n\n"), "block 2 of 2"),
    ];
    for (name, text, expect) in cases {
        let f = d.join(format!("{}.pem", name.replace(' ', "-")));
        std::fs::write(&f, &text).unwrap();
        let (code, out, err) = check(&f);
        assert_eq!(code, Some(0), "{name}: {out}{err}");
        assert!(
            out.contains(expect) && out.contains("valid"),
            "{name}: {out}"
        );
        if expect.starts_with("DH") || name.starts_with("DH") {
            assert_eq!(
                dh_check_bytes(text.as_bytes()),
                Ok(0),
                "pf_dh_check: {name}"
            );
        }
    }
    // The named group is recognised.
    let (_, out, _) = check(&dh);
    assert!(out.contains("RFC 7919 ffdhe2048"), "{out}");
}

#[test]
fn keys_it_cannot_check_are_named() {
    let d = dir("kinds");
    let key = made(&d, "key.pem", &["rsa", "--bits", "1024", "-q"]);
    let k = key.to_str().unwrap();
    let f = |n: &str| d.join(n).to_str().unwrap().to_owned();
    openssl(&["pkey", "-in", k, "-pubout", "-out", &f("spki.pem")]);
    openssl(&[
        "rsa",
        "-in",
        k,
        "-RSAPublicKey_out",
        "-out",
        &f("pkcs1pub.pem"),
    ]);
    for (form, name) in [("PEM", "enc.pem"), ("DER", "enc.der")] {
        let out = f(name);
        openssl(&[
            "pkcs8", "-topk8", "-in", k, "-passout", "pass:x", "-outform", form, "-out", &out,
        ]);
    }
    openssl(&[
        "pkey",
        "-in",
        k,
        "-pubout",
        "-outform",
        "DER",
        "-out",
        &f("spki.der"),
    ]);
    openssl(&[
        "genpkey",
        "-algorithm",
        "RSA-PSS",
        "-pkeyopt",
        "rsa_keygen_bits:1024",
        "-out",
        &f("pss.pem"),
    ]);
    openssl(&[
        "req",
        "-x509",
        "-key",
        k,
        "-subj",
        "/CN=t",
        "-days",
        "1",
        "-out",
        &f("cert.pem"),
    ]);
    openssl(&[
        "x509",
        "-in",
        &f("cert.pem"),
        "-outform",
        "DER",
        "-out",
        &f("cert.der"),
    ]);
    openssl(&[
        "ecparam",
        "-name",
        "prime256v1",
        "-genkey",
        "-noout",
        "-outform",
        "DER",
        "-out",
        &f("ec.der"),
    ]);
    openssl(&["genpkey", "-algorithm", "ED25519", "-out", &f("ed.pem")]);
    // Public keys are checked now (tests/parity.rs), and refused as DH.
    for file in ["spki.pem", "pkcs1pub.pem", "spki.der"] {
        let (code, out, err) = check(&d.join(file));
        assert_eq!(code, Some(0), "{file}: {out}{err}");
        assert!(out.starts_with("RSA public key ("), "{file}: {out}");
        let bytes = std::fs::read(d.join(file)).unwrap();
        assert_eq!(
            dh_check_bytes(&bytes),
            Err(pf_status::PF_ERR_DECODE),
            "{file}"
        );
    }
    for (file, word) in [
        ("enc.pem", "encrypted"),
        ("enc.der", "encrypted"),
        ("pss.pem", "RSA-PSS"),
        ("cert.pem", "certificates only"),
        ("cert.der", "certificate"),
        ("ec.der", "EC private key"),
        ("ed.pem", "Ed25519"),
    ] {
        let (code, out, err) = check(&d.join(file));
        assert_eq!(code, Some(1), "{file}: {out}{err}");
        assert!(err.contains(word), "{file}: {err}");
        assert!(!err.contains("neither"), "{file}: {err}");
        let bytes = std::fs::read(d.join(file)).unwrap();
        assert_eq!(
            dh_check_bytes(&bytes),
            Err(pf_status::PF_ERR_DECODE),
            "{file}"
        );
    }
}

/// A PKCS#1 RSAPrivateKey from components.
fn pkcs1(parts: &[&Integer], others: &[[Integer; 3]]) -> Vec<u8> {
    let mut items = vec![der_int(&Integer::from(u32::from(!others.is_empty())))];
    items.extend(parts.iter().map(|v| der_int(v)));
    if !others.is_empty() {
        items.push(der_seq(
            &others
                .iter()
                .map(|o| der_seq(&o.iter().map(der_int).collect::<Vec<_>>()))
                .collect::<Vec<_>>(),
        ));
    }
    der_seq(&items)
}

#[test]
fn oversized_rsa_components_are_judged_without_arithmetic() {
    let d = dir("bounded");
    let n = (Integer::from(1u32) << 2047u32) + 12345u32;
    let e = Integer::from(65537u32);
    let small = (Integer::from(1u32) << 1023u32) + 1u32;
    let odd_big = |bits: u32| (Integer::from(1u32) << (bits - 1)) + 1u32;
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "200000-bit prime field",
            pkcs1(
                &[
                    &n,
                    &e,
                    &small,
                    &odd_big(200_000),
                    &small,
                    &small,
                    &small,
                    &small,
                ],
                &[],
            ),
            "prime1 (p) has 200000 bits",
        ),
        (
            "60000-bit prime1",
            pkcs1(
                &[
                    &n,
                    &e,
                    &small,
                    &odd_big(60_000),
                    &small,
                    &small,
                    &small,
                    &small,
                ],
                &[],
            ),
            "prime1 (p) has 60000 bits",
        ),
        (
            "202 primes of 16384 bits",
            pkcs1(
                &[&n, &e, &small, &small, &small, &small, &small, &small],
                &(0..200)
                    .map(|_| [odd_big(16_384), small.clone(), small.clone()])
                    .collect::<Vec<_>>(),
            ),
            "202 primes: at most 3",
        ),
        (
            "huge private exponent",
            pkcs1(
                &[
                    &n,
                    &e,
                    &odd_big(90_000),
                    &small,
                    &small,
                    &small,
                    &small,
                    &small,
                ],
                &[],
            ),
            "private exponent has 90000 bits",
        ),
    ];
    for (name, der, expect) in cases {
        let f = d.join(format!("{}.der", name.replace(' ', "-")));
        std::fs::write(&f, &der).unwrap();
        let started = Instant::now();
        let (code, out, err) = check(&f);
        // b5c69ff took 38 to 432 s of CPU on these; the size checks need
        // no arithmetic (a generous bound for a shared machine).
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{name}: {:?}",
            started.elapsed()
        );
        assert_eq!(code, Some(1), "{name}: {out}{err}");
        assert!(
            out.contains("INVALID") && out.contains(expect),
            "{name}: {out}"
        );
    }
}

fn x942(p: &Integer, g: &Integer, q: &Integer, j: Option<&Integer>) -> String {
    let mut items = vec![der_int(p), der_int(g), der_int(q)];
    if let Some(j) = j {
        items.push(der_int(j));
    }
    pem("X9.42 DH PARAMETERS", &der_seq(&items), 64, "\n")
}

#[test]
fn x942_verdicts_say_what_was_verified() {
    let d = dir("x942");
    // Safe-prime X9.42 from the generator itself.
    let safe = d.join("safe.pem");
    let o = primeforge(&[
        "dhparam",
        "512",
        "--x942",
        "-q",
        "--out",
        safe.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let (code, out, _) = check(&safe);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("X9.42") && out.contains("p is a safe prime, q = (p − 1)/2"),
        "{out}"
    );

    // RFC 5114 (p not a safe prime, 224-bit q), as OpenSSL makes it.
    let rfc = d.join("rfc5114.pem");
    openssl(&[
        "genpkey",
        "-genparam",
        "-algorithm",
        "DHX",
        "-pkeyopt",
        "dh_rfc5114:2",
        "-out",
        rfc.to_str().unwrap(),
    ]);
    let (code, out, _) = check(&rfc);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("RFC 5114 2048-bit MODP group with 224-bit"),
        "{out}"
    );
    assert!(out.contains("q prime, 224 bits"), "{out}");
    assert!(
        !out.contains("p is a safe prime"),
        "claims a safe prime: {out}"
    );
    assert!(out.contains("not a safe prime"), "{out}");

    // Its p and g as PKCS#3: invalid, and the note says it needs its q.
    let der = pem_der(&std::fs::read_to_string(&rfc).unwrap());
    let (p, g, q) = {
        // SEQUENCE { p, g, q }: reuse the library's decoder.
        let decoded = primeforge::encode::dh_decode(&der).unwrap();
        let int = |b: &[u8]| Integer::from_digits(b, Order::Msf);
        (
            int(&decoded.p),
            int(&decoded.g),
            int(decoded.q.as_ref().unwrap()),
        )
    };
    let pkcs3 = d.join("rfc5114-pkcs3.pem");
    std::fs::write(
        &pkcs3,
        pem(
            "DH PARAMETERS",
            &der_seq(&[der_int(&p), der_int(&g)]),
            64,
            "\n",
        ),
    )
    .unwrap();
    let (code, out, _) = check(&pkcs3);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("RFC 5114") && out.contains("safe only with its 224-bit q"),
        "{out}"
    );

    // A wrong j: OpenSSL's "invalid j value".
    let j_good = Integer::from(&p - 1u32) / &q;
    let with_j = x942(&p, &g, &q, Some(&j_good));
    assert_eq!(dh_check_bytes(with_j.as_bytes()), Ok(0));
    let bad_j = x942(&p, &g, &q, Some(&Integer::from(&j_good + 2u32)));
    let f = d.join("bad-j.pem");
    std::fs::write(&f, &bad_j).unwrap();
    let (code, out, _) = check(&f);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("invalid j value"), "{out}");
    assert_eq!(dh_check_bytes(bad_j.as_bytes()), Ok(PF_DH_CHECK_INVALID_J));

    // A subgroup of order 11: p = 22k + 1 prime, g of order 11.
    let mut k = Integer::from(1u32) << 2040u32;
    let p11 = loop {
        let cand = Integer::from(&k * 22u32) + 1u32;
        if cand.is_probably_prime(30) != rug::integer::IsPrime::No {
            break cand;
        }
        k += 1u32;
    };
    let g11 = Integer::from(2u32)
        .pow_mod(&(Integer::from(&p11 - 1u32) / 11u32), &p11)
        .unwrap();
    let q11 = x942(&p11, &g11, &Integer::from(11u32), None);
    let f = d.join("q11.pem");
    std::fs::write(&f, &q11).unwrap();
    let (code, out, _) = check(&f);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("q has fewer than 160 bits"), "{out}");
    assert_eq!(dh_check_bytes(q11.as_bytes()), Ok(PF_DH_CHECK_Q_TOO_SMALL));
}

#[test]
fn dhparam_x942_requests_are_refused_before_work_or_succeed() {
    let d = dir("x942-gen");
    let started = Instant::now();
    let o = primeforge(&["dhparam", "4096", "--x942", "--legacy", "-q"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "refused only after work"
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("legacy"));
    // Every generator works with --x942 (g = 7 failed 4 of 12 runs on b5c69ff).
    for g in ["3", "6", "7", "10", "11"] {
        for i in 0..3 {
            let f = d.join(format!("g{g}-{i}.pem"));
            let o = primeforge(&[
                "dhparam",
                "512",
                "--x942",
                "-g",
                g,
                "-q",
                "--out",
                f.to_str().unwrap(),
            ]);
            assert!(
                o.status.success(),
                "g = {g}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            let (code, out, _) = check(&f);
            assert_eq!(code, Some(0), "g = {g}: {out}");
            assert!(out.contains("g of order q"), "{out}");
        }
    }
}
