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
