//! The `primeforge` binary: every subcommand and error path, OpenSSL
//! accepting every file it writes, atomic output, modes, Ctrl-C, progress.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_primeforge"))
}

fn dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().unwrap()
}

fn ok(args: &[&str]) -> Output {
    let o = run(args);
    assert!(
        o.status.success(),
        "primeforge {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn openssl_ok(args: &[&str]) -> String {
    let o = Command::new("openssl")
        .args(args)
        .output()
        .expect("openssl");
    let text =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "openssl {args:?}: {text}");
    text
}

fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn rsa_writes_keys_openssl_accepts() {
    let d = dir("rsa");
    // Default: 3072-bit PKCS#8 PEM on stdout, no progress noise when stderr
    // is not a terminal.
    let o = ok(&["rsa", "-t", "2"]);
    let pem = String::from_utf8(o.stdout).unwrap();
    assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----\n"));
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let f = d.join("default.pem");
    std::fs::write(&f, &pem).unwrap();
    assert!(openssl_ok(&["pkey", "-in", s(&f), "-noout", "-text"]).contains("3072 bit"));

    for (extra, check) in [
        (vec!["--format", "pkcs1"], vec!["rsa", "-check", "-noout"]),
        (
            vec!["--format", "pkcs8", "--der"],
            vec!["pkey", "-inform", "DER", "-check", "-noout"],
        ),
        (
            vec!["--format", "pkcs1", "--der"],
            vec!["rsa", "-inform", "DER", "-check", "-noout"],
        ),
        (vec!["--primes", "3"], vec!["pkey", "-check", "-noout"]),
    ] {
        let key = d.join("k");
        let public = d.join("p");
        let mut args = vec![
            "rsa",
            "--bits",
            "2048",
            "-q",
            "-o",
            s(&key),
            "--pubout",
            s(&public),
        ];
        args.extend(&extra);
        ok(&args);
        assert_eq!(mode(&key), 0o600, "private key mode");
        let mut c = check.clone();
        c.extend(["-in", s(&key)]);
        openssl_ok(&c);
        let der = extra.contains(&"--der");
        let mut pubargs = vec!["pkey", "-pubin", "-in", s(&public), "-noout"];
        if der {
            pubargs.extend(["-inform", "DER"]);
        }
        openssl_ok(&pubargs);
        // Our own check agrees.
        let o = ok(&["check", s(&key)]);
        assert!(String::from_utf8_lossy(&o.stdout).contains("2048 bits"));
        // No temporary files left behind.
        let names: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(
            names.iter().all(|n| !n.to_string_lossy().contains(".tmp-")),
            "{names:?}"
        );
    }
}

#[test]
fn dhparam_writes_parameters_openssl_accepts() {
    let d = dir("dh");
    let f = d.join("dh.pem");
    ok(&["dhparam", "768", "-q", "-o", s(&f)]);
    assert_eq!(mode(&f), 0o644);
    assert!(openssl_ok(&["dhparam", "-in", s(&f), "-check", "-noout"]).contains("appear to be ok"));
    for (extra, inform) in [
        (vec!["--der"], "DER"),
        (vec!["-g", "5"], "PEM"),
        (vec!["--legacy"], "PEM"),
    ] {
        let mut args = vec!["dhparam", "512", "-q", "-o", s(&f)];
        args.extend(&extra);
        ok(&args);
        let text = openssl_ok(&[
            "dhparam",
            "-inform",
            inform,
            "-in",
            s(&f),
            "-check",
            "-noout",
        ]);
        assert!(text.contains("appear to be ok"), "{extra:?}: {text}");
        assert_eq!(run(&["check", s(&f)]).status.code(), Some(0));
    }
    ok(&["dhparam", "512", "--x942", "-q", "-o", s(&f)]);
    assert!(std::fs::read_to_string(&f)
        .unwrap()
        .starts_with("-----BEGIN X9.42 DH PARAMETERS-----"));
    assert!(openssl_ok(&["pkeyparam", "-in", s(&f), "-check", "-noout"]).contains("valid"));
    // Named groups equal OpenSSL's built-in copies.
    for (ours, theirs) in [
        ("ffdhe2048", "ffdhe2048"),
        ("modp3072", "modp_3072"),
        ("ffdhe8192", "ffdhe8192"),
    ] {
        let o = ok(&["dhparam", "--named", ours]);
        let t = Command::new("openssl")
            .args([
                "genpkey",
                "-genparam",
                "-algorithm",
                "DH",
                "-pkeyopt",
                &format!("group:{theirs}"),
            ])
            .output()
            .unwrap();
        assert_eq!(o.stdout, t.stdout, "{ours}");
    }
}

#[test]
fn check_reports_valid_and_invalid_files() {
    let d = dir("check");
    let key = d.join("key.pem");
    ok(&[
        "rsa",
        "--bits",
        "1024",
        "--format",
        "pkcs1",
        "-q",
        "-o",
        s(&key),
    ]);
    let o = ok(&["check", s(&key)]);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        "RSA private key (PKCS#1), 1024 bits, 2 primes, e = 65537: valid"
    );
    // Flip a bit deep inside the DER (in d) and re-encode: invalid, exit 1.
    let der = Command::new("openssl")
        .args(["rsa", "-in", s(&key), "-outform", "DER"])
        .output()
        .unwrap()
        .stdout;
    let mut bad = der.clone();
    let at = bad.len() * 2 / 5;
    bad[at] ^= 0x10;
    let badf = d.join("bad.der");
    std::fs::write(&badf, &bad).unwrap();
    let o = run(&["check", s(&badf)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("INVALID"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    // A good DER key from stdin.
    let mut child = bin()
        .args(["check", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), &der).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    // DH parameters (a named group) check as valid.
    let dh = d.join("dh.pem");
    ok(&["dhparam", "--named", "ffdhe2048", "-o", s(&dh)]);
    assert_eq!(run(&["check", s(&dh)]).status.code(), Some(0));
    let text = Command::new("openssl")
        .args(["dhparam", "-in", s(&dh), "-text", "-noout"])
        .output()
        .unwrap();
    assert!(text.status.success());
    // Garbage and missing files: exit 1 with one line.
    let junk = d.join("junk");
    std::fs::write(&junk, b"hello world").unwrap();
    for f in [s(&junk), "/nonexistent/file"] {
        let o = run(&["check", f]);
        assert_eq!(o.status.code(), Some(1), "{f}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.starts_with("primeforge: ") && err.lines().count() == 1,
            "{err}"
        );
    }
}

#[test]
fn usage_errors_exit_2_with_one_line() {
    for args in [
        vec!["rsa", "--bits", "1001"],
        vec!["rsa", "--exponent", "4"],
        vec!["rsa", "--primes", "9"],
        vec!["dhparam", "100"],
        vec!["dhparam", "512", "-g", "1"],
        vec!["dhparam", "512", "-g", "5", "--legacy"],
        vec!["dhparam", "--named", "ffdhe1234"],
        vec!["dhparam", "512", "--legacy", "--x942"],
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.starts_with("primeforge: ") && err.lines().count() == 1,
            "{args:?}: {err}"
        );
    }
    for args in [
        vec!["bogus"],
        vec!["rsa", "--bits"],
        vec!["rsa", "--nope"],
        vec![],
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
    }
    let o = run(&["--help"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).contains("dhparam"));
}

#[test]
fn ctrl_c_cancels_promptly_and_leaves_no_file() {
    let d = dir("sigint");
    let out = d.join("big.pem");
    let child = bin()
        .args(["dhparam", "4096", "-q", "-o", s(&out)])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let sent = std::time::Instant::now();
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert!(
        sent.elapsed() < std::time::Duration::from_secs(2),
        "took {:?}",
        sent.elapsed()
    );
    assert_eq!(o.status.code(), Some(130));
    assert!(String::from_utf8_lossy(&o.stderr).contains("interrupted"));
    assert_eq!(
        std::fs::read_dir(&d).unwrap().count(),
        0,
        "files left behind"
    );
}

#[test]
fn progress_on_a_terminal_shows_an_eta() {
    // `script` gives the program a pseudo-terminal.
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: script(1) is not installed");
        return;
    }
    let d = dir("tty");
    let cmd = format!(
        "{} dhparam 1536 -o {}",
        env!("CARGO_BIN_EXE_primeforge"),
        s(&d.join("x.pem"))
    );
    let o = Command::new("script")
        .args(["-qfc", &cmd, "/dev/null"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("positions") && text.contains("elapsed"),
        "{text}"
    );
    assert!(text.contains("1536-bit safe prime in"), "{text}");
}
