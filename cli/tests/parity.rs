//! Side by side with `openssl genpkey` / `openssl dhparam` / `certtool`:
//! positional sizes, encrypted output with OpenSSL's passphrase sources,
//! `pubkey`, `--text`, checking public and encrypted keys, completions and
//! man pages — and every way a passphrase can fail (clear error, non-zero
//! exit, nothing written).

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use common::{bin, dir, ok, run, s};

fn fails(args: &[&str], code: i32, words: &str) -> String {
    let o = run(args);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(code), "primeforge {args:?}: {err}");
    assert!(err.contains(words), "primeforge {args:?}: {err}");
    if code == 1 {
        assert_eq!(err.lines().count(), 1, "one clear line: {err}");
    } else {
        // Usage errors: clap's message, then the usage line.
        assert!(
            err.starts_with("error: ") || err.starts_with("primeforge: "),
            "{err}"
        );
    }
    err
}

fn tool(cmd: &str, args: &[&str]) -> String {
    let o = Command::new(cmd).args(args).output().expect(cmd);
    let text =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{cmd} {args:?}: {text}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn bits_are_positional_as_in_dhparam_and_the_option_still_works() {
    let d = dir("parity-bits");
    ok(&["rsa", "1024", "-q", "--out", s(&d.join("a.pem"))]);
    ok(&["rsa", "--bits", "1024", "-q", "--out", s(&d.join("b.pem"))]);
    for f in ["a.pem", "b.pem"] {
        let t = tool(
            "openssl",
            &["pkey", "-in", s(&d.join(f)), "-noout", "-text"],
        );
        assert!(t.starts_with("Private-Key: (1024 bit, 2 primes)"), "{t}");
    }
    let o = run(&["rsa", "1024", "--bits", "2048"]);
    assert_eq!(o.status.code(), Some(2));
}

/// Every passphrase source OpenSSL knows: the key OpenSSL then opens with
/// the same passphrase.
#[test]
fn encrypt_with_each_passphrase_source() {
    let d = dir("parity-sources");
    let pwfile = d.join("pw.txt");
    std::fs::write(&pwfile, "from a file\nsecond line ignored\n").unwrap();
    let cases: Vec<(String, &str)> = vec![
        ("pass:literal words".into(), "literal words"),
        ("env:PF_TEST_PASS".into(), "from the environment"),
        (format!("file:{}", s(&pwfile)), "from a file"),
        ("stdin".into(), "from standard input"),
        ("fd:3".into(), "from fd three"),
    ];
    for (i, (spec, pass)) in cases.iter().enumerate() {
        let out = d.join(format!("k{i}.pem"));
        let mut cmd = bin();
        cmd.args([
            "rsa",
            "1024",
            "-q",
            "--encrypt",
            "--passout",
            spec,
            "--out",
            s(&out),
        ])
        .env("PF_TEST_PASS", "from the environment")
        .stdin(Stdio::piped())
        .stderr(Stdio::piped());
        if spec == "fd:3" {
            // A pipe on descriptor 3 in the child.
            let mut fds = [0; 2];
            assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
            let (r, w) = (fds[0], fds[1]);
            let line = b"from fd three\n";
            assert_eq!(
                unsafe { libc::write(w, line.as_ptr().cast(), line.len()) },
                14
            );
            unsafe { libc::close(w) };
            use std::os::unix::process::CommandExt;
            unsafe {
                cmd.pre_exec(move || {
                    if libc::dup2(r, 3) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let mut child = cmd.spawn().unwrap();
        if spec == "stdin" {
            child
                .stdin
                .take()
                .unwrap()
                .write_all(b"from standard input\n")
                .unwrap();
        } else {
            drop(child.stdin.take());
        }
        let o = child.wait_with_output().unwrap();
        assert!(
            o.status.success(),
            "{spec}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let pem = std::fs::read_to_string(&out).unwrap();
        assert!(
            pem.starts_with("-----BEGIN ENCRYPTED PRIVATE KEY-----\n"),
            "{spec}"
        );
        tool(
            "openssl",
            &[
                "pkey",
                "-in",
                s(&out),
                "-noout",
                "-passin",
                &format!("pass:{pass}"),
            ],
        );
        // Our own check and pubkey read it back with --passin.
        let o = ok(&["check", s(&out), "--passin", &format!("pass:{pass}")]);
        assert!(String::from_utf8_lossy(&o.stdout).contains("(encrypted PKCS#8)"));
    }
    // PBKDF2 for readers without scrypt: GnuTLS 3.7's certtool.
    let out = d.join("pbkdf2.pem");
    ok(&[
        "rsa",
        "1024",
        "-q",
        "--encrypt",
        "--kdf",
        "pbkdf2",
        "--passout",
        "pass:pw",
        "--out",
        s(&out),
    ]);
    let info = tool(
        "certtool",
        &["--key-info", "--load-privkey", s(&out), "--password", "pw"],
    );
    assert!(info.contains("Public Key Info"), "{info}");
    // DER too.
    let out = d.join("enc.der");
    ok(&[
        "rsa",
        "1024",
        "-q",
        "--der",
        "--encrypt",
        "--passout",
        "pass:pw",
        "--out",
        s(&out),
    ]);
    tool(
        "openssl",
        &[
            "pkey",
            "-inform",
            "DER",
            "-in",
            s(&out),
            "-noout",
            "-passin",
            "pass:pw",
        ],
    );
}

/// Unreadable sources and wrong passphrases: one clear line, exit 1, and
/// nothing written (the passphrase is read before any key is made).
#[test]
fn passphrase_failures_are_clear_and_write_nothing() {
    let d = dir("parity-pwfail");
    let out = d.join("never.pem");
    for (spec, words) in [
        ("env:PF_SURELY_UNSET_VARIABLE", "not set"),
        ("file:/nonexistent/pw", "No such file"),
        ("fd:57", "not an open file descriptor"),
        ("fd:x", "not a file descriptor number"),
        ("nonsense", "use pass:TEXT"),
        ("pass:", "empty"),
    ] {
        let t = std::time::Instant::now();
        fails(
            &[
                "rsa",
                "16384",
                "-q",
                "--encrypt",
                "--passout",
                spec,
                "--out",
                s(&out),
            ],
            1,
            words,
        );
        assert!(
            t.elapsed() < std::time::Duration::from_secs(5),
            "{spec}: a 16384-bit key was generated before the passphrase was read"
        );
        assert!(!out.exists(), "{spec}: something was written");
    }
    // Usage errors.
    fails(&["rsa", "1024", "--encrypt"], 2, "--passout");
    fails(&["rsa", "1024", "--passout", "pass:x"], 2, "--encrypt");
    fails(
        &[
            "rsa",
            "1024",
            "--encrypt",
            "--passout",
            "pass:x",
            "--format",
            "pkcs1",
        ],
        2,
        "PKCS#8",
    );
    // Wrong and missing passphrases on reading.
    let key = d.join("k.pem");
    ok(&[
        "rsa",
        "1024",
        "-q",
        "--encrypt",
        "--passout",
        "pass:right",
        "--out",
        s(&key),
    ]);
    let pubout = d.join("pub.pem");
    fails(
        &[
            "pubkey",
            s(&key),
            "--passin",
            "pass:wrong",
            "--out",
            s(&pubout),
        ],
        1,
        "missing or wrong",
    );
    fails(
        &["pubkey", s(&key), "--out", s(&pubout)],
        1,
        "missing or wrong",
    );
    fails(
        &[
            "pubkey",
            s(&key),
            "--passin",
            "env:PF_SURELY_UNSET_VARIABLE",
        ],
        1,
        "not set",
    );
    assert!(!pubout.exists());
    fails(
        &["check", s(&key), "--passin", "pass:wrong"],
        1,
        "missing or wrong",
    );
    fails(&["check", s(&key)], 1, "--passin");
}

#[test]
fn pubkey_writes_what_openssl_derives() {
    let d = dir("parity-pubkey");
    let key = d.join("k.pem");
    ok(&["rsa", "2048", "-q", "--out", s(&key)]);
    let spki = String::from_utf8(ok(&["pubkey", s(&key)]).stdout).unwrap();
    assert_eq!(spki, tool("openssl", &["pkey", "-in", s(&key), "-pubout"]));
    let pkcs1 = String::from_utf8(ok(&["pubkey", s(&key), "--rsa"]).stdout).unwrap();
    assert_eq!(
        pkcs1,
        tool("openssl", &["rsa", "-in", s(&key), "-RSAPublicKey_out"])
    );
    let der = d.join("pub.der");
    ok(&["pubkey", s(&key), "--der", "--out", s(&der)]);
    tool(
        "openssl",
        &["pkey", "-pubin", "-inform", "DER", "-in", s(&der), "-noout"],
    );
    // Not a private key: named.
    let pubf = d.join("pub.pem");
    std::fs::write(&pubf, &spki).unwrap();
    fails(&["pubkey", s(&pubf)], 1, "public key");
}

/// Runs `primeforge ARGS -q --text --out FILE`, then checks that what
/// precedes the PEM block `label` is what `openssl CMD -text` prints for it.
fn text_then_pem(d: &Path, args: &[&str], label: &str, cmd: &[&str]) {
    let file = d.join(format!("{}.pem", args[0]));
    let mut all_args = args.to_vec();
    all_args.extend(["-q", "--text", "--out", s(&file)]);
    ok(&all_args);
    let all = std::fs::read_to_string(&file).unwrap();
    let at = all.find(&format!("-----BEGIN {label}-----")).unwrap();
    let pem = d.join(format!("{}-only.pem", args[0]));
    std::fs::write(&pem, &all[at..]).unwrap();
    let mut theirs_args = cmd.to_vec();
    theirs_args.extend(["-in", s(&pem), "-noout", "-text"]);
    assert_eq!(&all[..at], tool("openssl", &theirs_args), "{args:?}");
}

/// `--text` prints what `openssl pkey -text` and `openssl dhparam -text`
/// print for the same file, then the PEM.
#[test]
fn text_matches_openssl() {
    let d = dir("parity-text");
    text_then_pem(&d, &["rsa", "1024"], "PRIVATE KEY", &["pkey"]);
    text_then_pem(&d, &["dhparam", "512"], "DH PARAMETERS", &["dhparam"]);
    // A named group is named, as openssl dhparam -text names it (it
    // printed P and G).
    for group in ["ffdhe2048", "modp3072"] {
        text_then_pem(
            &d,
            &["dhparam", "--named", group],
            "DH PARAMETERS",
            &["dhparam"],
        );
    }
    let named =
        String::from_utf8(ok(&["dhparam", "--named", "ffdhe2048", "--text"]).stdout).unwrap();
    assert!(named.starts_with("    DH Parameters: (2048 bit)\n    GROUP: ffdhe2048\n"));
    fails(&["rsa", "1024", "--text", "--der"], 2, "--der");
}

/// Public keys are checked (as OpenSSL's public-key check does), not
/// refused; a broken one is INVALID with exit 1.
#[test]
fn check_reads_public_keys() {
    let d = dir("parity-pub");
    let key = d.join("k.pem");
    ok(&[
        "rsa",
        "2048",
        "-q",
        "--out",
        s(&key),
        "--pubout",
        s(&d.join("spki.pem")),
    ]);
    std::fs::write(
        d.join("pkcs1.pem"),
        tool("openssl", &["rsa", "-in", s(&key), "-RSAPublicKey_out"]),
    )
    .unwrap();
    let der = d.join("spki.der");
    tool(
        "openssl",
        &[
            "pkey",
            "-in",
            s(&key),
            "-pubout",
            "-outform",
            "DER",
            "-out",
            s(&der),
        ],
    );
    // Bare DER {n, e} has the shape of PKCS#3 {p, g}: told apart by the
    // numbers (an odd e and a composite n make an RSA key).
    tool(
        "openssl",
        &[
            "rsa",
            "-in",
            s(&key),
            "-RSAPublicKey_out",
            "-outform",
            "DER",
            "-out",
            s(&d.join("pkcs1.der")),
        ],
    );
    for g in ["2", "5"] {
        let dh = d.join(format!("dh{g}.der"));
        ok(&["dhparam", "512", "-g", g, "--der", "-q", "--out", s(&dh)]);
        let out = String::from_utf8(ok(&["check", s(&dh)]).stdout).unwrap();
        assert!(
            out.starts_with("DH parameters (PKCS#3), 512 bits"),
            "g={g}: {out}"
        );
    }
    for (f, kind) in [
        ("spki.pem", "SubjectPublicKeyInfo"),
        ("pkcs1.pem", "PKCS#1"),
        ("pkcs1.der", "PKCS#1"),
        ("spki.der", "SubjectPublicKeyInfo"),
    ] {
        let o = ok(&["check", s(&d.join(f))]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            out.starts_with(&format!(
                "RSA public key ({kind}), 2048 bits, e = 65537: valid"
            )),
            "{f}: {out}"
        );
    }
    // A 1024-bit key: valid, with a FIPS 186-5 note.
    let small = d.join("small.pem");
    ok(&["rsa", "1024", "-q", "--out", s(&small)]);
    let o = ok(&["check", s(&small)]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains(": valid\n  note: FIPS 186-5"), "{out}");
    // n even: RSAPublicKey { n = 2^1023 + 2, e = 65537 } in DER.
    let mut n = vec![0x80u8];
    n.extend(std::iter::repeat_n(0u8, 126));
    n.push(2);
    let mut body = vec![0x02, 0x81, 0x81, 0x00];
    body.extend(&n);
    body.extend([0x02, 0x03, 0x01, 0x00, 0x01]);
    let mut der = vec![0x30, 0x81, body.len() as u8];
    der.extend(body);
    let bad = d.join("even.der");
    std::fs::write(&bad, &der).unwrap();
    let o = run(&["check", s(&bad)]);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("INVALID") && out.contains("even"), "{out}");
}

#[test]
fn completions_and_man_pages_come_from_the_options() {
    for shell in ["bash", "zsh", "fish"] {
        let o = ok(&["completions", shell]);
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(text.contains("primeforge"), "{shell}");
        assert!(text.contains("passout"), "{shell}: the new options are in");
    }
    let d = dir("parity-man");
    ok(&["man", s(&d)]);
    for page in [
        "primeforge.1",
        "primeforge-rsa.1",
        "primeforge-dhparam.1",
        "primeforge-check.1",
        "primeforge-pubkey.1",
    ] {
        let text = std::fs::read_to_string(d.join(page)).unwrap();
        assert!(text.contains(".TH"), "{page}");
    }
    let rsa = std::fs::read_to_string(d.join("primeforge-rsa.1")).unwrap();
    assert!(rsa.contains("passout"));
    // The sections openssl-dhparam(1) and ssh-keygen(1) have.
    for (page, refs) in [
        (
            "primeforge.1",
            &["openssl-dhparam(1)", "primeforge-moduli(1)"][..],
        ),
        ("primeforge-dhparam.1", &["openssl-dhparam(1)"]),
        ("primeforge-moduli.1", &["ssh-keygen(1)", "moduli(5)"]),
    ] {
        let text = std::fs::read_to_string(d.join(page)).unwrap();
        for section in [".SH \"EXIT STATUS\"", ".SH ENVIRONMENT", ".SH \"SEE ALSO\""] {
            assert!(text.contains(section), "{page}: {section}");
        }
        for r in refs {
            assert!(text.contains(r), "{page}: {r}");
        }
    }
    let moduli = std::fs::read_to_string(d.join("primeforge-moduli.1")).unwrap();
    assert!(moduli.contains(".SH FILES") && moduli.contains("/etc/ssh/moduli"));
}

/// A passphrase file with a CRLF line end means the same passphrase to us
/// as to OpenSSL 3.0, which keeps the "\r": a key either tool encrypts
/// with it, the other opens with it. (We stripped the "\r", so OpenSSL
/// could not open our key and we could not open its.)
#[test]
fn a_crlf_passphrase_file_means_what_it_means_to_openssl() {
    let d = dir("parity-crlf");
    let pw = d.join("pw.txt");
    std::fs::write(&pw, "windows line\r\n").unwrap();
    let spec = format!("file:{}", s(&pw));
    // Ours, opened by OpenSSL.
    let ours = d.join("ours.pem");
    ok(&[
        "rsa",
        "1024",
        "-q",
        "--encrypt",
        "--passout",
        &spec,
        "--out",
        s(&ours),
    ]);
    tool(
        "openssl",
        &["pkey", "-in", s(&ours), "-passin", &spec, "-noout"],
    );
    // OpenSSL's, opened by us.
    let plain = d.join("plain.pem");
    ok(&["rsa", "1024", "-q", "--out", s(&plain)]);
    let theirs = d.join("theirs.pem");
    tool(
        "openssl",
        &[
            "pkcs8",
            "-topk8",
            "-in",
            s(&plain),
            "-passout",
            &spec,
            "-out",
            s(&theirs),
        ],
    );
    ok(&["check", s(&theirs), "--passin", &spec]);
    // Without the "\r" it is another passphrase.
    fails(
        &["check", s(&theirs), "--passin", "pass:windows line"],
        1,
        "passphrase",
    );
}

/// What the X9.42 notes say of GnuTLS holds for the certtool here: it
/// refuses "X9.42 DH PARAMETERS" in PEM and reads the DER (earlier notes
/// said GnuTLS read the PEM and dropped q).
#[test]
fn gnutls_reads_x942_parameters_only_as_der() {
    let d = dir("parity-x942-gnutls");
    let (pem, der) = (d.join("x.pem"), d.join("x.der"));
    ok(&["dhparam", "512", "--x942", "-q", "--out", s(&pem)]);
    ok(&["dhparam", "512", "--x942", "--der", "-q", "--out", s(&der)]);
    let certtool = |args: &[&str]| {
        let o = Command::new("certtool")
            .args(args)
            .output()
            .expect("certtool (gnutls-bin, installed by .ci/deps)");
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
    };
    let from_pem = certtool(&["--dh-info", "--infile", s(&pem)]);
    assert!(from_pem.contains("Error parsing dh params"), "{from_pem}");
    let from_der = certtool(&["--dh-info", "--inder", "--infile", s(&der)]);
    assert!(from_der.contains("generator"), "{from_der}");
}

/// What the multi-prime note says of pyca `cryptography` holds: a key of
/// three primes (OpenSSL reads it) is refused there.
#[test]
fn pyca_refuses_multi_prime_keys_as_the_note_says() {
    let d = dir("parity-multiprime");
    let key = d.join("k3.pem");
    ok(&["rsa", "2048", "--primes", "3", "-q", "--out", s(&key)]);
    tool("openssl", &["pkey", "-in", s(&key), "-check", "-noout"]);
    let script = format!(
        "from cryptography.hazmat.primitives.serialization import load_pem_private_key as l\n\
         try:\n    l(open({:?}, 'rb').read(), None); print('loaded')\n\
         except ValueError as e:\n    print('refused')\n",
        s(&key)
    );
    let o = Command::new("python3")
        .args(["-c", &script])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    if !o.status.success() {
        // No pyca here: the note cannot be checked (it is not a
        // dependency of the library).
        common::skip(
            "pyca",
            &format!(
                "pyca cryptography is not importable: {}",
                String::from_utf8_lossy(&o.stderr)
            ),
        );
        return;
    }
    assert_eq!(out.trim(), "refused");
}
