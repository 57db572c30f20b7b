//! Helpers shared by the CLI's test files.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The binary under test.
pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_primeforge"))
}

/// A fresh, empty directory for one test.
pub fn dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `primeforge ARGS`.
pub fn run(args: &[&str]) -> Output {
    bin().args(args).output().unwrap()
}

/// Runs `primeforge ARGS`, which must succeed.
pub fn ok(args: &[&str]) -> Output {
    let o = run(args);
    assert!(
        o.status.success(),
        "primeforge {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// A path as a &str argument.
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A test whose subject cannot run here: says so past the harness's
/// capture, and fails where `PRIMEFORGE_REQUIRE` names the capability (CI
/// sets it from what the machine has).
pub fn skip(capability: &str, why: &str) {
    use std::io::Write;
    let required = std::env::var("PRIMEFORGE_REQUIRE").unwrap_or_default();
    if required.split(',').any(|c| c.trim() == capability) {
        panic!("PRIMEFORGE_REQUIRE names {capability}, but: {why}");
    }
    let _ = writeln!(
        std::io::stderr(),
        "\n*** SKIPPED (no {capability}): {why} ***"
    );
}

/// A real sshd in debug mode (one connection) with config `cfg`, once it
/// listens; its log so far. Stop it with [`stop_sshd`].
// The child is handed to the caller, whose stop_sshd waits for it.
#[allow(clippy::zombie_processes)]
pub fn start_sshd(
    cfg: &Path,
) -> (
    std::process::Child,
    std::io::BufReader<std::process::ChildStderr>,
    String,
) {
    use std::io::BufRead;
    // sshd needs its privilege-separation directory.
    let _ = std::fs::create_dir_all("/run/sshd");
    let mut sshd = Command::new("/usr/sbin/sshd")
        .args(["-D", "-ddd", "-e", "-f", s(cfg)])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("/usr/sbin/sshd (openssh-server, by .ci/deps)");
    let mut log = std::io::BufReader::new(sshd.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut l = String::new();
        if log.read_line(&mut l).unwrap() == 0 {
            let _ = sshd.kill();
            let _ = sshd.wait();
            panic!("sshd did not start: {seen}");
        }
        seen += &l;
        if l.contains("Server listening") {
            return (sshd, log, seen);
        }
    }
}

/// Stops an sshd from [`start_sshd`]; the rest of its log.
pub fn stop_sshd(
    mut sshd: std::process::Child,
    mut log: std::io::BufReader<std::process::ChildStderr>,
) -> String {
    let _ = sshd.kill();
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut log, &mut rest);
    let _ = sshd.wait();
    rest
}

/// A free TCP port on 127.0.0.1.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
