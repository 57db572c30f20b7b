//! The `primeforge` binary: every subcommand and error path, OpenSSL
//! accepting every file it writes, atomic output, modes, Ctrl-C, progress.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::{bin, dir, ok, run, s};

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

/// FIPS 186-4 parameters: `dhparam --fips186` writes X9.42 parameters with
/// their seed and counter, `dsaparam` DSA parameters with the seed and
/// counter in the summary and --text; OpenSSL checks and uses both, and
/// `check` says what it verified.
#[test]
fn fips186_parameters_openssl_accepts() {
    let d = dir("fips186");
    let x = d.join("dhx.pem");
    let o = ok(&[
        "dhparam",
        "2048",
        "--fips186",
        "--qbits",
        "256",
        "-t",
        "2",
        "-o",
        s(&x),
    ]);
    let summary = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(
        summary.contains("SHA2-256, canonical g, index 1"),
        "{summary}"
    );
    assert!(std::fs::read_to_string(&x)
        .unwrap()
        .starts_with("-----BEGIN X9.42 DH PARAMETERS-----\n"));
    assert!(openssl_ok(&["pkeyparam", "-in", s(&x), "-check", "-noout"]).contains("valid"));
    let text = openssl_ok(&["pkeyparam", "-in", s(&x), "-noout", "-text"]);
    let counter = summary
        .split("counter ")
        .nth(1)
        .unwrap()
        .split(',')
        .next()
        .unwrap();
    assert!(text.contains(&format!("pcounter: {counter}")), "{text}");
    openssl_ok(&["genpkey", "-paramfile", s(&x), "-out", s(&d.join("k.pem"))]);
    let c = ok(&["check", s(&x)]);
    let said = String::from_utf8_lossy(&c.stdout);
    assert!(
        said.contains(&format!(
            "verified from their seed and counter {counter} by FIPS 186-4 A.1.1.3 with SHA2-256"
        )) && said.contains("canonical generator of index 1"),
        "{said}"
    );

    let p = d.join("dsa.pem");
    let o = ok(&[
        "dsaparam",
        "3072",
        "--gindex",
        "9",
        "--digest",
        "sha384",
        "--text",
        "-o",
        s(&p),
    ]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("SHA2-384, canonical g, index 9"));
    let body = std::fs::read_to_string(&p).unwrap();
    assert!(
        body.contains("    SEED:\n")
            && body.contains("gindex: 9")
            && body.contains("digest: SHA2-384")
    );
    assert!(body.contains("-----BEGIN DSA PARAMETERS-----\n"));
    assert!(openssl_ok(&["pkeyparam", "-in", s(&p), "-check", "-noout"]).contains("valid"));
    assert!(openssl_ok(&["dsaparam", "-in", s(&p), "-noout", "-text"]).contains("3072 bit"));
    let c = ok(&["check", s(&p)]);
    assert!(String::from_utf8_lossy(&c.stdout).starts_with("DH parameters (DSA), 3072 bits"));
    // Quiet: nothing on stderr; unverifiable g; DER.
    let o = ok(&[
        "dsaparam",
        "1024",
        "-q",
        "--unverifiable-g",
        "--der",
        "-o",
        s(&p),
    ]);
    assert!(o.stderr.is_empty());
    assert_eq!(std::fs::read(&p).unwrap()[0], 0x30);
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
    let out = String::from_utf8_lossy(&o.stdout);
    let mut lines = out.lines();
    assert_eq!(
        lines.next().unwrap(),
        "RSA private key (PKCS#1), 1024 bits, 2 primes, e = 65537: valid"
    );
    // Sound, but not FIPS 186-5 at 1024 bits: a note, not an error.
    assert!(lines
        .next()
        .unwrap()
        .starts_with("  note: FIPS 186-5 asks for"));
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
        vec!["dsaparam", "1536"],
        vec!["dsaparam", "2048", "--qbits", "160"],
        vec!["dsaparam", "2048", "--digest", "md5"],
        vec!["dsaparam", "2048", "--digest", "sha1"],
        vec!["dsaparam", "2048", "--qbits", "256", "--digest", "sha224"],
        vec!["dhparam", "2048", "--qbits", "256"],
        vec!["dhparam", "4096", "--fips186"],
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
    assert!(
        Command::new("script").arg("--version").output().is_ok(),
        "script(1) is needed to give the CLI a terminal (util-linux/bsdutils; .ci/deps installs it)"
    );
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

fn file_type(p: &Path) -> std::fs::FileType {
    std::fs::symlink_metadata(p).unwrap().file_type()
}

/// `--out -` is standard output, and creates no file named "-".
#[test]
fn out_dash_is_standard_output() {
    let d = dir("out-dash");
    let o = bin()
        .args(["dhparam", "--named", "ffdhe2048", "--out", "-"])
        .current_dir(&d)
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("-----BEGIN DH PARAMETERS-----"));
    assert_eq!(
        std::fs::read_dir(&d).unwrap().count(),
        0,
        "a file was created"
    );
}

/// A symbolic link stays a link; its final target (through a chain, and a
/// dangling one) receives the key, with mode 0600.
#[test]
fn out_through_a_symlink_writes_the_target_and_keeps_the_link() {
    use std::os::unix::fs::symlink;
    let d = dir("out-link");
    std::fs::create_dir(d.join("keys")).unwrap();
    std::fs::write(d.join("keys/real.pem"), "old\n").unwrap();
    symlink("keys/real.pem", d.join("hop.pem")).unwrap();
    symlink(d.join("hop.pem"), d.join("link.pem")).unwrap();
    ok(&[
        "rsa",
        "--bits",
        "1024",
        "-q",
        "--out",
        s(&d.join("link.pem")),
    ]);
    assert!(file_type(&d.join("link.pem")).is_symlink());
    assert!(file_type(&d.join("hop.pem")).is_symlink());
    let key = std::fs::read_to_string(d.join("keys/real.pem")).unwrap();
    assert!(key.starts_with("-----BEGIN PRIVATE KEY-----"), "{key}");
    assert_eq!(mode(&d.join("keys/real.pem")), 0o600);
    openssl_ok(&["pkey", "-in", s(&d.join("link.pem")), "-noout"]);
    // A dangling link: its target is created.
    symlink("new.pem", d.join("dangling.pem")).unwrap();
    ok(&[
        "dhparam",
        "--named",
        "ffdhe2048",
        "-o",
        s(&d.join("dangling.pem")),
    ]);
    assert!(file_type(&d.join("dangling.pem")).is_symlink());
    assert!(d.join("new.pem").is_file());
    // No temporary files are left anywhere.
    for sub in [d.clone(), d.join("keys")] {
        for e in std::fs::read_dir(sub).unwrap() {
            let name = e.unwrap().file_name();
            assert!(!name.to_string_lossy().contains(".tmp-"), "{name:?} left");
        }
    }
}

/// A FIFO is written through and stays a FIFO.
#[test]
fn out_to_a_fifo_writes_through() {
    let d = dir("out-fifo");
    let fifo = d.join("pipe");
    let c = std::ffi::CString::new(s(&fifo)).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    ok(&["dhparam", "--named", "ffdhe2048", "--out", s(&fifo)]);
    let got = reader.join().unwrap();
    assert!(got.starts_with(b"-----BEGIN DH PARAMETERS-----"));
    use std::os::unix::fs::FileTypeExt;
    assert!(file_type(&fifo).is_fifo());
}

/// A character device is written through, never replaced: a device node
/// of our own (the null device, where mknod is allowed), /dev/null, and a
/// symlink to it.
#[test]
fn out_to_a_character_device_writes_through() {
    use std::os::unix::fs::{symlink, FileTypeExt, MetadataExt};
    let d = dir("out-dev");
    let node = d.join("null");
    let c = std::ffi::CString::new(s(&node)).unwrap();
    let made = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) } == 0;
    let dev_null = Path::new("/dev/null");
    let before = std::fs::metadata(dev_null).unwrap().ino();
    symlink(dev_null, d.join("to-null")).unwrap();
    let mut targets = vec![dev_null.to_path_buf(), d.join("to-null")];
    if made {
        targets.push(node.clone());
    }
    for t in &targets {
        ok(&["rsa", "--bits", "1024", "-q", "--out", s(t)]);
    }
    assert!(std::fs::metadata(dev_null)
        .unwrap()
        .file_type()
        .is_char_device());
    assert_eq!(
        std::fs::metadata(dev_null).unwrap().ino(),
        before,
        "/dev/null was replaced"
    );
    assert!(file_type(&d.join("to-null")).is_symlink());
    if made {
        assert!(file_type(&node).is_char_device());
    }
}

/// A socket cannot be written: a clear error, and the socket stays.
#[test]
fn out_to_a_socket_is_an_error_and_leaves_it() {
    let d = dir("out-sock");
    let path = d.join("sock");
    let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let o = run(&["dhparam", "--named", "ffdhe2048", "--out", s(&path)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("socket"));
    use std::os::unix::fs::FileTypeExt;
    assert!(file_type(&path).is_socket());
}

/// A regular file is replaced atomically: private keys 0600, public output
/// keeps the file's mode, and (as root) the owner and group are kept.
#[test]
fn out_replaces_a_regular_file_keeping_its_owner() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let d = dir("out-file");
    let key = d.join("key.pem");
    let params = d.join("dh.pem");
    for f in [&key, &params] {
        std::fs::write(f, "old\n").unwrap();
        std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o640)).unwrap();
    }
    let root = unsafe { libc::geteuid() } == 0;
    if root {
        for f in [&key, &params] {
            std::os::unix::fs::chown(f, Some(4242), Some(4343)).unwrap();
        }
    }
    ok(&["rsa", "--bits", "1024", "-q", "--out", s(&key)]);
    ok(&["dhparam", "--named", "ffdhe2048", "--out", s(&params)]);
    assert_eq!(mode(&key), 0o600);
    assert_eq!(mode(&params), 0o640);
    if root {
        for f in [&key, &params] {
            let m = std::fs::metadata(f).unwrap();
            assert_eq!((m.uid(), m.gid()), (4242, 4343), "{}", f.display());
        }
    } else {
        eprintln!("not root: ownership preservation not exercised");
    }
    assert!(std::fs::read_to_string(&key)
        .unwrap()
        .starts_with("-----BEGIN PRIVATE KEY-----"));
}

/// OpenSSL-style `-out`/`-in` are usage errors, not short-option clusters.
#[test]
fn single_dash_long_options_are_usage_errors() {
    let d = dir("single-dash");
    for args in [
        &["dhparam", "-out", "x.pem", "512"][..],
        &["rsa", "-out", "k.pem"],
        &["check", "-in", "k.pem"],
        &["dhparam", "-check"],
    ] {
        let o = bin().args(args).current_dir(&d).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("two dashes"), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    assert_eq!(
        std::fs::read_dir(&d).unwrap().count(),
        0,
        "a file was written"
    );
}

/// OpenSSL's spellings get primeforge's in one line (clap's own answer was
/// "use '-- -passin'"), and a size beside --named is refused, not ignored.
#[test]
fn openssl_habits_get_the_primeforge_spelling() {
    let d = dir("habits");
    for (args, words) in [
        (
            &["check", "k.pem", "-passin", "pass:x"][..],
            "--passin SOURCE",
        ),
        (&["rsa", "-aes256"], "--encrypt --passout"),
        (
            &["rsa", "2048", "-passout", "pass:x"],
            "--encrypt --passout",
        ),
        (&["dhparam", "-5", "2048"], "--generator 5"),
        (&["dhparam", "-2", "2048"], "--generator 2"),
        (&["dhparam", "-text"], "--text"),
        (&["dhparam", "-noout"], "primeforge check FILE"),
        (&["rsa", "-outform", "DER"], "--der"),
    ] {
        let o = bin().args(args).current_dir(&d).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(words), "{args:?}: {err}");
        assert!(!err.contains("-- -"), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
    let o = run(&["dhparam", "--named", "ffdhe2048", "4096"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty(), "the group was printed anyway");
}

/// The help says what the tool does: OpenSSL 3.0 writes PBKDF2, not
/// scrypt, and `moduli` (a text format) offers no --der.
#[test]
fn help_texts_hold_no_false_claims() {
    let rsa = String::from_utf8(ok(&["rsa", "--help"]).stdout).unwrap();
    for wrong in ["genpkey -aes256", "OpenSSL 3's choice"] {
        assert!(!rsa.contains(wrong), "rsa --help: {wrong}");
    }
    assert!(rsa.contains("PBKDF2-HMAC-SHA256 with 2048"), "{rsa}");
    let moduli = String::from_utf8(ok(&["moduli", "--help"]).stdout).unwrap();
    assert!(!moduli.contains("--der"), "{moduli}");
}

/// Ctrl-C (and SIGTERM) stop `check` at once, even while it waits for
/// input.
#[test]
fn ctrl_c_stops_check_at_once() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let mut child = bin()
            .args(["check", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        unsafe { libc::kill(child.id() as i32, sig) };
        let start = std::time::Instant::now();
        let status = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break Some(st);
            }
            if start.elapsed() > std::time::Duration::from_secs(3) {
                let _ = child.kill();
                break None;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        assert_eq!(
            status.and_then(|s| s.code()),
            Some(130),
            "signal {sig} ignored"
        );
        drop(child.stdin.take());
    }
}

/// A reader that goes away ends `check` quietly (no panic on EPIPE).
#[test]
fn closed_pipe_ends_quietly() {
    let d = dir("epipe");
    let key = d.join("k.pem");
    ok(&["rsa", "--bits", "1024", "-q", "--out", s(&key)]);
    let (r, w) = {
        let mut fds = [0; 2];
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        (fds[0], fds[1])
    };
    unsafe { libc::close(r) };
    use std::os::fd::FromRawFd;
    let o = bin()
        .args(["check", s(&key)])
        .stdout(unsafe { Stdio::from_raw_fd(w) })
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
    use std::os::unix::process::ExitStatusExt;
    assert!(
        o.status.signal() == Some(libc::SIGPIPE) || o.status.code() == Some(0),
        "{:?}: {err}",
        o.status
    );
}

/// Every output path is checked before any work: a missing directory, a
/// directory, `--out` and `--pubout` naming one file (also through a
/// link), an output that is the input file. Each fails at once (the
/// generations asked for take minutes) and leaves every file as it was.
/// Before, `dhparam 4096 --out /nonexistent/x.pem` generated first and
/// failed after, `pubkey k.pem --out k.pem` replaced the private key with
/// the public one, and `--out F --pubout F` silently dropped the public key.
#[test]
fn output_paths_are_checked_before_any_work() {
    let d = dir("out-first");
    let key = d.join("k.pem");
    ok(&["rsa", "512", "-q", "--out", s(&key)]);
    let before = std::fs::read(&key).unwrap();
    let link = d.join("link.pem");
    std::os::unix::fs::symlink(&key, &link).unwrap();
    let moduli = d.join("moduli");
    std::fs::write(&moduli, "").unwrap();
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (
            vec!["dhparam", "8192", "--out", "/nonexistent/x.pem"],
            1,
            "does not exist",
        ),
        (vec!["rsa", "16384", "--out", s(&d)], 1, "directory"),
        (
            vec!["dsaparam", "3072", "--out", "/nonexistent/x.pem"],
            1,
            "does not exist",
        ),
        (
            vec![
                "rsa",
                "16384",
                "--out",
                "/nonexistent/k.pem",
                "--pubout",
                "p.pem",
            ],
            1,
            "does not exist",
        ),
        (
            vec!["rsa", "16384", "--out", s(&key), "--pubout", s(&key)],
            2,
            "same file",
        ),
        (
            vec!["rsa", "16384", "--out", s(&key), "--pubout", s(&link)],
            2,
            "same file",
        ),
        (vec!["pubkey", s(&key), "--out", s(&key)], 2, "input file"),
        (vec!["pubkey", s(&key), "--out", s(&link)], 2, "input file"),
        (
            vec!["moduli", "--screen", s(&moduli), "--out", s(&moduli)],
            2,
            "input file",
        ),
    ];
    let mut wrong = Vec::new();
    for (args, code, words) in cases {
        let started = std::time::Instant::now();
        let o = run(&args);
        let took = started.elapsed();
        let err = String::from_utf8_lossy(&o.stderr);
        if o.status.code() != Some(code) || !err.contains(words) || took.as_secs() > 10 {
            wrong.push(format!(
                "{args:?}: status {:?} after {took:?}: {err}",
                o.status.code()
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert_eq!(std::fs::read(&key).unwrap(), before, "the key file changed");
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
}

/// While a DH search builds its sieve (the first seconds at 4096 bits),
/// the progress line says so instead of "0 positions, 0/s … longer than
/// average, still searching".
#[test]
fn progress_shows_the_sieve_set_up_as_such() {
    let d = dir("tty-setup");
    let cmd = format!(
        "timeout -s INT 1.2 {} dhparam 4096 -o {}",
        env!("CARGO_BIN_EXE_primeforge"),
        s(&d.join("x.pem"))
    );
    let o = Command::new("script")
        .args(["-qfc", &cmd, "/dev/null"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("setting up the sieve"), "{text}");
    assert!(!text.contains(" 0 positions, 0/s"), "{text}");
}

/// A regular file over 64 MiB is refused from its size, unread: under an
/// address-space limit of 48 MiB (too small to read 64 MiB into memory)
/// the answer is still "larger than 64 MiB". Before, the file was read up
/// to the cap first (about 100 MB resident).
#[test]
fn a_file_over_64_mib_is_refused_unread() {
    let d = dir("big-input");
    let big = d.join("big.pem");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len((64 << 20) + 1).unwrap(); // sparse
    drop(f);
    let mut cmd = bin();
    cmd.args(["check", s(&big)]);
    use std::os::unix::process::CommandExt;
    // SAFETY: setrlimit is async-signal-safe; only the child is limited.
    unsafe {
        cmd.pre_exec(|| {
            let r = libc::rlimit {
                rlim_cur: 48 << 20,
                rlim_max: 48 << 20,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &r) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let o = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("larger than 64 MiB"), "{err}");
}

/// `--version` says what a bug report needs: the version, the commit, the
/// bundled GMP's version and the arithmetic this CPU takes.
#[test]
fn version_says_what_a_bug_report_needs() {
    let v = String::from_utf8(ok(&["--version"]).stdout).unwrap();
    assert!(
        v.starts_with(&format!(
            "primeforge {} (commit ",
            env!("CARGO_PKG_VERSION")
        )),
        "{v}"
    );
    for part in ["GMP 6.", "arithmetic ", "GMP dispatch "] {
        assert!(v.contains(part), "{part}: {v}");
    }
}
