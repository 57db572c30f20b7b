//! `primeforge rsa --format openssh`: what `ssh-keygen` reads (the public
//! line it derives, its fingerprint, the passphrase it asks for), and a
//! login with the key to a real sshd on 127.0.0.1.

mod common;

use std::process::{Command, Stdio};

use common::{dir, ok, run, s};

fn ssh_keygen(args: &[&str]) -> (bool, String) {
    let o = Command::new("ssh-keygen")
        .args(args)
        .output()
        .expect("ssh-keygen (openssh-client, by .ci/deps)");
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr),
    )
}

fn mode(p: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// The key and its public line as ssh-keygen sees them: `ssh-keygen -y`
/// derives our public line (comment included), `-l` gives the same
/// fingerprint for both files, an encrypted key opens with its passphrase
/// only, and `primeforge check` reads all of them back.
#[test]
fn ssh_keygen_reads_what_we_write() {
    let d = dir("openssh");
    let (key, public) = (d.join("id_rsa"), d.join("id_rsa.pub"));
    ok(&[
        "rsa",
        "3072",
        "--format",
        "openssh",
        "--comment",
        "ops@example.org",
        "-q",
        "-o",
        s(&key),
        "--pubout",
        s(&public),
    ]);
    assert_eq!(mode(&key), 0o600);
    let body = std::fs::read_to_string(&key).unwrap();
    assert!(
        body.starts_with("-----BEGIN OPENSSH PRIVATE KEY-----\n"),
        "{body}"
    );
    let line = std::fs::read_to_string(&public).unwrap();
    assert!(
        line.starts_with("ssh-rsa AAAA") && line.ends_with(" ops@example.org\n"),
        "{line}"
    );
    let (good, derived) = ssh_keygen(&["-y", "-f", s(&key)]);
    assert!(good, "{derived}");
    assert_eq!(derived, line);
    let (_, fp_key) = ssh_keygen(&["-l", "-f", s(&key)]);
    let (_, fp_pub) = ssh_keygen(&["-l", "-f", s(&public)]);
    assert!(
        fp_key.starts_with("3072 SHA256:") && fp_key.contains("(RSA)"),
        "{fp_key}"
    );
    assert_eq!(fp_key, fp_pub);
    assert_eq!(run(&["check", s(&key)]).status.code(), Some(0));

    // Encrypted: bcrypt-pbkdf and AES-256-CTR, as ssh-keygen writes.
    let enc = d.join("id_enc");
    ok(&[
        "rsa",
        "2048",
        "--format",
        "openssh",
        "--encrypt",
        "--passout",
        "pass:correct horse",
        "-q",
        "-o",
        s(&enc),
    ]);
    let (good, text) = ssh_keygen(&["-y", "-P", "correct horse", "-f", s(&enc)]);
    assert!(good && text.starts_with("ssh-rsa AAAA"), "{text}");
    let (good, text) = ssh_keygen(&["-y", "-P", "wrong", "-f", s(&enc)]);
    assert!(!good, "{text}");
    // The cipher and KDF named in the key's (unencrypted) header.
    let der = base64_body(&std::fs::read_to_string(&enc).unwrap());
    assert!(
        contains(&der, b"aes256-ctr") && contains(&der, b"bcrypt"),
        "not aes256-ctr with bcrypt"
    );
    assert_eq!(
        run(&["check", s(&enc), "--passin", "pass:correct horse"])
            .status
            .code(),
        Some(0)
    );

    // Usage errors: one line, exit 2, nothing written.
    let never = d.join("never");
    for args in [
        vec!["rsa", "--format", "openssh", "--der"],
        vec!["rsa", "--format", "openssh", "--text"],
        vec!["rsa", "--format", "openssh", "--primes", "3"],
        vec!["rsa", "--comment", "x"],
    ] {
        let mut a = args.clone();
        a.extend(["-o", s(&never)]);
        let o = run(&a);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(!never.exists());
    }
}

fn base64_body(pem: &str) -> Vec<u8> {
    let b64: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    let o = Command::new("openssl")
        .args(["base64", "-d", "-A"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    let mut o = o;
    o.stdin.take().unwrap().write_all(b64.as_bytes()).unwrap();
    o.wait_with_output().unwrap().stdout
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// A login with our key: a real sshd (debug mode, one connection) on
/// 127.0.0.1 whose only authorised key is our public line, public-key
/// authentication only; `ssh -i` with our private key runs a command.
/// With another key (a control), the same login is refused.
#[test]
fn sshd_accepts_a_login_with_our_key() {
    let d = dir("openssh-sshd");
    let (key, public) = (d.join("id_rsa"), d.join("id_rsa.pub"));
    ok(&[
        "rsa",
        "3072",
        "--format",
        "openssh",
        "--comment",
        "login-test",
        "-q",
        "-o",
        s(&key),
        "--pubout",
        s(&public),
    ]);
    let other = d.join("other");
    ok(&["rsa", "2048", "--format", "openssh", "-q", "-o", s(&other)]);
    let host = d.join("hostkey");
    let (good, text) = ssh_keygen(&["-q", "-t", "ed25519", "-N", "", "-f", s(&host)]);
    assert!(good, "{text}");
    let user = String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout)
        .unwrap()
        .trim()
        .to_string();
    for (identity, accepted) in [(&key, true), (&other, false)] {
        let port = common::free_port();
        let cfg = d.join("sshd_config");
        std::fs::write(
            &cfg,
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {}\nPidFile {}\n\
                 AuthorizedKeysFile {}\nPubkeyAuthentication yes\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                 PermitRootLogin prohibit-password\nAllowUsers {user}\n\
                 UsePAM no\nStrictModes no\n",
                host.display(),
                d.join("pid").display(),
                public.display(),
            ),
        )
        .unwrap();
        let (sshd, log, mut seen) = common::start_sshd(&cfg);
        let client = Command::new("ssh")
            .args([
                "-o",
                "BatchMode=yes",
                "-o",
                "StrictHostKeyChecking=no",
                "-o",
                "UserKnownHostsFile=/dev/null",
                "-o",
                "IdentitiesOnly=yes",
                "-o",
                "PubkeyAcceptedAlgorithms=rsa-sha2-256,rsa-sha2-512",
                "-i",
                s(identity),
                "-p",
                &port.to_string(),
                &format!("{user}@127.0.0.1"),
                "echo primeforge-login-ok",
            ])
            .output()
            .unwrap();
        seen += &common::stop_sshd(sshd, log);
        let out = String::from_utf8_lossy(&client.stdout);
        let err = String::from_utf8_lossy(&client.stderr);
        assert_eq!(
            out.contains("primeforge-login-ok"),
            accepted,
            "{}: ssh stdout {out}\nssh stderr {err}\nsshd: {seen}",
            identity.display()
        );
    }
}
