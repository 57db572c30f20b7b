//! `primeforge moduli` against OpenSSH itself: `ssh-keygen -M screen`
//! accepts what we generate, our screen agrees with ssh-keygen's on the
//! distribution's /etc/ssh/moduli and on broken lines, and a real sshd on
//! 127.0.0.1 uses our file for a diffie-hellman-group-exchange key
//! exchange. OpenSSH comes from .ci/deps (openssh-client, openssh-server).

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use common::{dir, ok, run, s};

/// The MODULUS field of each line.
fn moduli_of(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split_whitespace().nth(6).unwrap().to_string())
        .collect()
}

/// `ssh-keygen -M screen -f IN OUT`: the lines it keeps.
fn ssh_screen(input: &Path, out: &Path) -> String {
    let o = Command::new("ssh-keygen")
        .args(["-M", "screen", "-f", s(input), s(out)])
        .output()
        .expect("ssh-keygen (openssh-client, by .ci/deps)");
    assert!(
        o.status.success(),
        "ssh-keygen: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::read_to_string(out).unwrap()
}

#[test]
fn generated_moduli_pass_ssh_keygen_screen() {
    let d = dir("moduli-gen");
    let file = d.join("moduli");
    ok(&[
        "moduli",
        "--bits",
        "1536,1024",
        "--count",
        "2",
        "-t",
        "2",
        "-q",
        "--out",
        s(&file),
    ]);
    let text = std::fs::read_to_string(&file).unwrap();
    // The head says what TRIALS counts and that p is proven.
    assert!(
        text.starts_with("# primeforge: every p below is proven prime by Pocklington's criterion"),
        "{text}"
    );
    let lines: Vec<Vec<&str>> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(lines.len(), 4, "{text}");
    for (i, f) in lines.iter().enumerate() {
        assert_eq!(f.len(), 7);
        assert_eq!(f[0].len(), 14, "TIME");
        assert_eq!(
            &f[1..4],
            &["2", "6", if i < 2 { "7" } else { "5" }],
            "{f:?}"
        );
        assert_eq!(f[4], if i < 2 { "1023" } else { "1535" }, "sorted by size");
        assert!(f[5] == "2" || f[5] == "5", "{f:?}");
        assert_eq!(f[6].len() * 4, if i < 2 { 1024 } else { 1536 }, "hex of p");
    }
    // Sorted by value within a size (equal-length upper-case hex).
    assert!(lines[0][6] < lines[1][6] && lines[2][6] < lines[3][6]);
    let kept = ssh_screen(&file, &d.join("screened"));
    assert_eq!(
        moduli_of(&kept),
        moduli_of(&text),
        "ssh-keygen kept: {kept}"
    );
    // ssh-keygen gives each the generator we wrote (2 or 5).
    let generators = |t: &str| -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = t
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f[6].to_string(), f[5].to_string())
            })
            .collect();
        v.sort();
        v
    };
    let body: String = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(
        generators(&kept),
        generators(&body),
        "ssh-keygen's generators"
    );
}

/// The distribution's moduli (a slice of each size: screening all 424
/// lines at up to 8192 bits takes minutes), a modulus with its last digit
/// changed, a Sophie Germain (type 4) line and unreadable lines: our screen
/// keeps exactly what ssh-keygen keeps, with the same generators.
#[test]
fn our_screen_agrees_with_ssh_keygen() {
    let d = dir("moduli-screen");
    let system = std::fs::read_to_string("/etc/ssh/moduli")
        .expect("/etc/ssh/moduli (openssh-server, by .ci/deps)");
    let mut input = String::new();
    let mut per_size = std::collections::HashMap::new();
    // Up to 4096 bits: ssh-keygen's 100-odd rounds at 8192 bits take
    // tens of seconds per line.
    for l in system.lines().filter(|l| !l.starts_with('#')) {
        let size = l.split_whitespace().nth(4).unwrap_or("").to_string();
        if size.parse::<u32>().map_or(true, |b| b > 4095) {
            continue;
        }
        let n = per_size.entry(size).or_insert(0);
        if *n < 2 {
            input += l;
            input += "\n";
            *n += 1;
        }
    }
    let first: Vec<&str> = input.lines().next().unwrap().split_whitespace().collect();
    // The last hex digit moved by 2: still odd, almost surely composite.
    let mut broken = first[6].to_string();
    let last = broken.pop().unwrap().to_digit(16).unwrap();
    broken.push(
        char::from_digit((last + 2) % 16, 16)
            .unwrap()
            .to_ascii_uppercase(),
    );
    input += &format!("{} 2 6 100 {} 2 {broken}\n", first[0], first[4]);
    input += "# a comment\n";
    // A type 4 line: q = (p - 1)/2 of a 1024-bit safe prime we make.
    let ours = ok(&["moduli", "--bits", "1024", "-q", "-t", "2"]);
    let text = String::from_utf8(ours.stdout).unwrap();
    let line = text.lines().find(|l| !l.starts_with('#')).unwrap();
    let p = line.split_whitespace().nth(6).unwrap();
    let q = hex_half(p);
    input += &format!("20260101000000 4 2 0 1022 0 {q}\n");
    let file = d.join("input");
    std::fs::write(&file, &input).unwrap();
    let theirs = ssh_screen(&file, &d.join("theirs"));
    // ssh-keygen stops at an unreadable line; we skip it and say so.
    input += "not a moduli line\n";
    std::fs::write(&file, &input).unwrap();
    let o = run(&["moduli", "--screen", s(&file), "-t", "2"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mine = String::from_utf8(o.stdout).unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("skipped: 4 fields"), "{err}");
    let set = |t: &str| -> BTreeSet<(String, String)> {
        t.lines()
            .map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f[6].to_string(), f[5].to_string())
            })
            .collect()
    };
    assert_eq!(
        set(&mine),
        set(&theirs),
        "ours:\n{mine}\nssh-keygen:\n{theirs}"
    );
    assert!(!moduli_of(&mine).contains(&broken));
    assert!(moduli_of(&mine).iter().any(|m| m == p), "the type 4 line");
    assert_eq!(
        moduli_of(&mine).len(),
        per_size.values().sum::<i32>() as usize + 1
    );
}

/// (p − 1)/2 of an upper-case hex number, in upper-case hex (no bignum
/// crate in the tests: a shift by one bit, digit by digit).
fn hex_half(p: &str) -> String {
    let mut out = String::new();
    let mut carry = 0;
    for c in p.chars() {
        let v = c.to_digit(16).unwrap() + carry * 16;
        out.push(char::from_digit(v / 2, 16).unwrap().to_ascii_uppercase());
        carry = v % 2;
    }
    out.trim_start_matches('0').to_string()
}

/// A real sshd (debug mode, one connection) with our file as its
/// ModuliFile and only diffie-hellman-group-exchange-sha256 allowed: the
/// key exchange completes on our group. With an empty file instead, sshd
/// warns that it has no suitable primes (so the check can tell).
#[test]
fn sshd_uses_our_moduli_for_group_exchange() {
    let d = dir("moduli-sshd");
    let moduli = d.join("moduli");
    ok(&[
        "moduli",
        "--bits",
        "2048",
        "-q",
        "-t",
        "2",
        "--out",
        s(&moduli),
    ]);
    let empty = d.join("empty");
    std::fs::write(&empty, "").unwrap();
    let key = d.join("hostkey");
    let o = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f", s(&key)])
        .output()
        .unwrap();
    assert!(o.status.success());
    for (file, ours) in [(&moduli, true), (&empty, false)] {
        let port = common::free_port();
        let cfg = d.join("sshd_config");
        std::fs::write(
            &cfg,
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {}\nModuliFile {}\n\
                 KexAlgorithms diffie-hellman-group-exchange-sha256\nPidFile {}\n\
                 UsePAM no\nStrictModes no\n",
                key.display(),
                file.display(),
                d.join("pid").display()
            ),
        )
        .unwrap();
        let (sshd, log, mut seen) = common::start_sshd(&cfg);
        let client = Command::new("ssh")
            .args([
                "-vv",
                "-o",
                "BatchMode=yes",
                "-o",
                "StrictHostKeyChecking=no",
                "-o",
                "UserKnownHostsFile=/dev/null",
                "-o",
                "KexAlgorithms=diffie-hellman-group-exchange-sha256",
                "-p",
                &port.to_string(),
                "nobody@127.0.0.1",
                "true",
            ])
            .output()
            .unwrap();
        seen += &common::stop_sshd(sshd, log);
        let cli = String::from_utf8_lossy(&client.stderr);
        assert!(
            cli.contains("SSH2_MSG_KEX_DH_GEX_GROUP received")
                && cli.contains("SSH2_MSG_NEWKEYS received"),
            "ssh: {cli}\nsshd: {seen}"
        );
        assert_eq!(
            !seen.contains("no suitable primes"),
            ours,
            "sshd with {}: {seen}",
            file.display()
        );
    }
}

/// Bad requests: a clear message, exit 2 (usage) or 1 (an unreadable
/// file), nothing written.
#[test]
fn bad_moduli_requests_are_refused() {
    let d = dir("moduli-bad");
    let out = d.join("never");
    for (args, code, says) in [
        (vec!["--bits", "512"], 2, "1024 to 8192"),
        (vec!["--bits", "9000"], 2, "1024 to 8192"),
        (vec!["--count", "0"], 2, "--count"),
        (vec!["--der"], 2, "unexpected argument '--der'"),
        (
            vec!["--screen", "/nonexistent/moduli"],
            1,
            "/nonexistent/moduli",
        ),
        (
            vec!["--screen", "x", "--bits", "2048"],
            2,
            "cannot be used with",
        ),
    ] {
        let mut all = vec!["moduli", "-q", "--out", s(&out)];
        all.extend(&args);
        let o = run(&all);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!out.exists(), "{args:?} wrote output");
    }
}
