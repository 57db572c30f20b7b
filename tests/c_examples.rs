//! Compiles every program in c-examples/ with
//! `cc -std=c11 -Wall -Wextra -Werror -pedantic` against the committed header
//! and this run's cdylib, runs it, and checks what it printed.

mod common;

use std::path::PathBuf;

fn example(name: &str) -> PathBuf {
    common::manifest_dir()
        .join("c-examples")
        .join(format!("{name}.c"))
}

/// Runs `openssl ARGS... FILE` and fails with its message unless it
/// succeeds.
fn openssl_accepts(args: &[&str], file: &std::path::Path) {
    let check = std::process::Command::new("openssl")
        .args(args)
        .arg(file)
        .output()
        .expect("openssl");
    assert!(
        check.status.success(),
        "openssl {args:?} {}: {}",
        file.display(),
        String::from_utf8_lossy(&check.stderr)
    );
}

#[test]
fn every_example_has_a_test() {
    // A new example must be added to this file, so it is built and run.
    let tested = [
        "basics",
        "rsa_keygen",
        "dh_params",
        "tls_dhe_server",
        "dh_job",
        "dh_batch",
        "key_check",
        "fips186_params",
    ];
    for entry in std::fs::read_dir(common::manifest_dir().join("c-examples")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "c") {
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            assert!(
                tested.contains(&stem.as_str()),
                "c-examples/{stem}.c has no test in tests/c_examples.rs"
            );
        }
    }
}

#[test]
fn basics() {
    let exe = common::compile_c("basics", &[&example("basics")], &[]);
    let r = common::run_ok(&exe, &[]);
    assert!(r
        .stdout
        .contains(&format!("version {} (header", env!("CARGO_PKG_VERSION"))));
    assert!(r.stdout.contains("status 0: success"));
    assert!(r.stdout.contains("status 4: cancelled by the caller"));
    assert!(r.stdout.contains("status 4294967295: unknown status code"));
    assert!(r.stdout.contains("buffer 1048576 bytes: locked="));
    assert!(r.stdout.trim_end().ends_with("basics: ok"), "{}", r.stdout);
}

#[test]
fn dh_job_polls_its_descriptor_and_writes_parameters_or_cancels() {
    let exe = common::compile_c("dh_job", &[&example("dh_job")], &[]);
    // To the end: the PEM on stdout is what `openssl dhparam -check` accepts.
    let r = common::run(&exe, &["512", "0", "2"]);
    assert_eq!(r.code, Some(0), "stderr:\n{}", r.stderr);
    assert!(
        r.stderr.contains("dh_job: 512-bit parameters in "),
        "{}",
        r.stderr
    );
    assert!(r.stdout.starts_with("-----BEGIN DH PARAMETERS-----\n"));
    let pem = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dh_job.pem");
    std::fs::write(&pem, &r.stdout).unwrap();
    openssl_accepts(&["dhparam", "-check", "-noout", "-in"], &pem);
    // Cancelled by its timeout: exit 2, nothing on stdout, progress shown.
    let r = common::run(&exe, &["6144", "300", "2"]);
    assert_eq!(r.code, Some(2), "stderr:\n{}", r.stderr);
    assert!(
        r.stderr.contains("dh_job: cancelling (timeout)"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("candidates, "), "{}", r.stderr);
    assert!(r.stderr.contains("cancelled by the caller"), "{}", r.stderr);
    assert!(r.stdout.is_empty());
    // Bad input: the status text and exit 1.
    let r = common::run(&exe, &["100"]);
    assert_eq!(r.code, Some(1));
    assert!(r.stderr.contains("invalid argument"), "{}", r.stderr);
}

#[test]
fn rsa_keygen_writes_a_key_openssl_accepts() {
    let exe = common::compile_c("rsa_keygen", &[&example("rsa_keygen")], &[]);
    let out = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("rsa_keygen.pem");
    let r = common::run(&exe, &["1024", "2", out.to_str().unwrap()]);
    assert_eq!(r.code, Some(0), "stderr:\n{}", r.stderr);
    assert!(
        r.stderr.contains("rsa_keygen: 1024-bit key in "),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("exponentiations "), "{}", r.stderr);
    let pem = std::fs::read_to_string(&out).unwrap();
    assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----\n"));
    assert!(pem.ends_with("-----END PRIVATE KEY-----\n"));
    openssl_accepts(&["pkey", "-check", "-noout", "-in"], &out);
    // Bad input is reported with the status text and a non-zero exit.
    let r = common::run(&exe, &["1001", "1"]);
    assert_eq!(r.code, Some(1));
    assert!(r.stderr.contains("invalid argument"), "{}", r.stderr);
}

#[test]
fn dh_params_writes_parameters_openssl_accepts() {
    let exe = common::compile_c("dh_params", &[&example("dh_params")], &[]);
    let out = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dh_params.pem");
    let r = common::run(&exe, &["768", "2", "2", out.to_str().unwrap()]);
    assert_eq!(r.code, Some(0), "stderr:\n{}", r.stderr);
    assert!(
        r.stderr
            .contains("dh_params: 768-bit safe prime, g = 2, in "),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("exponentiations "), "{}", r.stderr);
    let pem = std::fs::read_to_string(&out).unwrap();
    assert!(pem.starts_with("-----BEGIN DH PARAMETERS-----\n"));
    let check = std::process::Command::new("openssl")
        .args(["dhparam", "-check", "-noout", "-in"])
        .arg(&out)
        .output()
        .expect("openssl");
    let text = String::from_utf8_lossy(&check.stdout).into_owned()
        + &String::from_utf8_lossy(&check.stderr);
    assert!(
        check.status.success() && text.contains("appear to be ok"),
        "{text}"
    );
    // Bad input: a clear message and a non-zero exit.
    let r = common::run(&exe, &["1024", "1"]);
    assert_eq!(r.code, Some(1));
    assert!(
        r.stderr.contains("dh_params: invalid argument"),
        "{}",
        r.stderr
    );
}

#[test]
fn fips186_params_writes_parameters_openssl_checks_and_uses() {
    let exe = common::compile_c("fips186_params", &[&example("fips186_params")], &[]);
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    for (kind, label) in [("x942", "X9.42 DH PARAMETERS"), ("dsa", "DSA PARAMETERS")] {
        let out = dir.join(format!("fips186_{kind}.pem"));
        let r = common::run(&exe, &["2048", "256", "2", kind, out.to_str().unwrap()]);
        assert_eq!(r.code, Some(0), "stderr:\n{}", r.stderr);
        assert!(r.stderr.contains(", SHA-256, gindex 1\n"), "{}", r.stderr);
        let pem = std::fs::read_to_string(&out).unwrap();
        assert!(pem.starts_with(&format!("-----BEGIN {label}-----\n")));
        // What the file lets a checker verify: the seed only in X9.42.
        let verified = if kind == "x942" {
            "verified: [p and q from the seed, A.1.1.3] [canonical g, A.2.4] [g of order q, A.2.2]\n"
        } else {
            "verified: [g of order q, A.2.2]\n"
        };
        assert!(r.stderr.contains(verified), "{}", r.stderr);
        for args in [
            vec!["pkeyparam", "-check", "-noout", "-in"],
            vec!["genpkey", "-out", "/dev/null", "-paramfile"],
        ] {
            let o = std::process::Command::new("openssl")
                .args(&args)
                .arg(&out)
                .output()
                .expect("openssl");
            assert!(
                o.status.success(),
                "{args:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
    }
    // Bad sizes: a clear message naming them, a non-zero exit.
    let r = common::run(&exe, &["1536"]);
    assert_eq!(r.code, Some(1));
    assert!(r.stderr.contains("FIPS 186-4 sizes"), "{}", r.stderr);
}

#[test]
fn dh_batch_writes_distinct_parameters_openssl_accepts() {
    let exe = common::compile_c("dh_batch", &[&example("dh_batch")], &[]);
    let r = common::run(&exe, &["768", "3", "2"]);
    assert_eq!(r.code, Some(0), "stderr:\n{}", r.stderr);
    for i in 1..=3 {
        assert!(
            r.stderr
                .contains(&format!("dh_batch: {i} of 3: 768-bit safe prime in ")),
            "{}",
            r.stderr
        );
    }
    let blocks: Vec<String> = r
        .stdout
        .split_inclusive("-----END DH PARAMETERS-----\n")
        .map(str::to_owned)
        .collect();
    assert_eq!(blocks.len(), 3, "{}", r.stdout);
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let mut primes = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        let path = dir.join(format!("dh_batch_{i}.pem"));
        std::fs::write(&path, block).unwrap();
        let out = std::process::Command::new("openssl")
            .args(["dhparam", "-check", "-text", "-noout", "-in"])
            .arg(&path)
            .output()
            .expect("openssl");
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && text.contains("appear to be ok"),
            "{text}"
        );
        primes.push(text);
    }
    primes.sort();
    primes.dedup();
    assert_eq!(primes.len(), 3, "the batch repeated a prime");
    // Bad input: a clear message and a non-zero exit.
    let r = common::run(&exe, &["768", "0"]);
    assert_eq!(r.code, Some(1));
    assert!(
        r.stderr.contains("dh_batch: invalid argument"),
        "{}",
        r.stderr
    );
}

/// Runs `exe` with `env` set (and KEY_PASSIN/KEY_PASSOUT otherwise unset).
fn run_env(exe: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> common::Run {
    let mut cmd = std::process::Command::new(exe);
    cmd.args(args)
        .env_remove("KEY_PASSIN")
        .env_remove("KEY_PASSOUT");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    common::Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn key_check_reads_checks_and_reencrypts_an_existing_key() {
    use der::{Decode, Encode};
    let exe = common::compile_c("key_check", &[&example("key_check")], &[]);
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("key_check");
    std::fs::create_dir_all(&dir).unwrap();
    let path = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    let (enc, out, dh, bad) = (
        path("openssl.pem"),
        path("reencrypted.pem"),
        path("dh.pem"),
        path("bad.der"),
    );
    // A key OpenSSL made and encrypted (AES-256, PBKDF2), as users have them.
    openssl(&[
        "genpkey",
        "-algorithm",
        "RSA",
        "-pkeyopt",
        "rsa_keygen_bits:2048",
    ])
    .args(["-aes256", "-pass", "pass:old secret", "-out", &enc])
    .run();
    let _ = std::fs::remove_file(&out);
    let r = run_env(
        &exe,
        &[&enc, &out],
        &[("KEY_PASSIN", "old secret"), ("KEY_PASSOUT", "new secret")],
    );
    assert_eq!(
        r.code,
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        r.stdout,
        r.stderr
    );
    assert!(
        r.stdout
            .contains("2048-bit RSA key, 2 primes: consistent, meets FIPS 186-5"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("key_check: secret limbs "),
        "{}",
        r.stdout
    );
    let pem = std::fs::read_to_string(&out).unwrap();
    assert!(
        pem.starts_with("-----BEGIN ENCRYPTED PRIVATE KEY-----\n"),
        "{pem}"
    );
    // OpenSSL reads it under the new passphrase, and it is the same key.
    let modulus = |file: &str, pass: &str| {
        openssl(&["rsa", "-noout", "-modulus", "-in", file])
            .args(["-passin", &format!("pass:{pass}")])
            .run()
    };
    assert_eq!(modulus(&out, "new secret"), modulus(&enc, "old secret"));

    // A wrong passphrase: exit 1 with the status and the library's message.
    let r = run_env(&exe, &[&enc], &[("KEY_PASSIN", "wrong")]);
    assert_eq!(r.code, Some(1), "{}", r.stdout);
    assert!(r.stderr.contains("passphrase"), "{}", r.stderr);
    // Not a key at all: the message names what the file is.
    openssl(&[
        "genpkey",
        "-genparam",
        "-algorithm",
        "DH",
        "-pkeyopt",
        "group:ffdhe2048",
    ])
    .args(["-out", &dh])
    .run();
    let r = run_env(&exe, &[&dh], &[]);
    assert_eq!(r.code, Some(1), "{}", r.stdout);
    assert!(r.stderr.contains("DH parameters"), "{}", r.stderr);

    // An inconsistent key (d changed): exit 2, the problem named, nothing
    // written.
    let plain = openssl(&["rsa", "-traditional", "-outform", "DER", "-in", &enc])
        .args(["-passin", "pass:old secret"])
        .run();
    let mut key = pkcs1::RsaPrivateKey::<der::asn1::UintRef<'_>>::from_der(&plain).unwrap();
    let mut d = key.private_exponent.as_bytes().to_vec();
    *d.last_mut().unwrap() ^= 2;
    key.private_exponent = der::asn1::UintRef::new(&d).unwrap();
    std::fs::write(&bad, key.to_der().unwrap()).unwrap();
    let _ = std::fs::remove_file(&out);
    let r = run_env(&exe, &[&bad, &out], &[("KEY_PASSOUT", "x")]);
    assert_eq!(
        r.code,
        Some(2),
        "stdout:\n{}\nstderr:\n{}",
        r.stdout,
        r.stderr
    );
    assert!(r.stdout.contains("INCONSISTENT"), "{}", r.stdout);
    assert!(r.stdout.contains("bad private exponent"), "{}", r.stdout);
    assert!(
        !std::path::Path::new(&out).exists(),
        "an inconsistent key was written"
    );
}

/// An `openssl` command line that must succeed.
struct OpensslCmd(std::process::Command);

fn openssl(args: &[&str]) -> OpensslCmd {
    let mut cmd = std::process::Command::new("openssl");
    cmd.args(args);
    OpensslCmd(cmd)
}

impl OpensslCmd {
    fn args<const N: usize>(mut self, args: [&str; N]) -> Self {
        self.0.args(args);
        self
    }

    /// Runs it; fails the test with OpenSSL's message unless it succeeds.
    /// Returns its standard output.
    fn run(mut self) -> Vec<u8> {
        let out = self.0.output().expect("openssl");
        assert!(
            out.status.success(),
            "{:?}: {}",
            self.0,
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }
}

#[test]
fn tls_dhe_server_completes_a_handshake_with_primeforge_keys() {
    let exe = common::compile_c(
        "tls_dhe_server",
        &[&example("tls_dhe_server")],
        &["-lssl", "-lcrypto"],
    );
    // 2048-bit RSA, 1536-bit DH on 2 threads keeps the test quick.
    let r = common::run_ok(&exe, &["2", "2048", "1536"]);
    assert!(
        r.stdout
            .contains("TLSv1.2, DHE-RSA-AES128-GCM-SHA256, DH 1536 bits, RSA 2048 bits: ok"),
        "{}",
        r.stdout
    );
}

/// Two tests in one test binary may build the same host program at the
/// same moment (the signal-frame tests both build the in-flight host). One
/// test's compiler must never be writing the file the other is starting:
/// that fails with "Text file busy" or runs a half-written program.
#[test]
fn one_program_built_by_several_tests_at_once_runs_in_each() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("built-at-once");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("status.c");
    std::fs::write(
        &src,
        "#include <stdio.h>\n#include \"primeforge.h\"\n\
         int main(void) { puts(pf_status_str(PF_OK)); return 0; }\n",
    )
    .unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..6 {
                    let exe = common::compile_c("built-at-once", &[&src], &[]);
                    let r = common::run(&exe, &[]);
                    assert_eq!(r.code, Some(0), "{}", r.stderr);
                    assert!(!r.stdout.trim().is_empty());
                }
            });
        }
    });
}
