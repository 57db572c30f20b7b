//! THIRD-PARTY.md lists every crate compiled into the library, the CLI and
//! the Node.js addon,
//! with its licence, as `cargo tree` reports them (normal dependencies only;
//! build scripts and proc-macros do not end up in the binaries). The list
//! is generated, and this test fails when it is stale. Refresh it with
//!
//!     PRIMEFORGE_UPDATE_THIRD_PARTY=1 cargo test --release --test licenses

mod common;

use std::collections::BTreeMap;
use std::process::Command;

const BEGIN: &str = "<!-- BEGIN GENERATED: cargo tree (tests/licenses.rs) -->";
const END: &str = "<!-- END GENERATED -->";

/// "name vX.Y.Z" → licence, for the normal dependency tree of `package`.
fn crates(package: &str) -> BTreeMap<String, String> {
    let out = Command::new(env!("CARGO"))
        .current_dir(common::manifest_dir())
        .args([
            "tree",
            "--offline",
            "--locked",
            "-e",
            "normal,no-proc-macro",
            "--prefix",
            "none",
            "-f",
            "{p}|{l}",
            "-p",
            package,
        ])
        .output()
        .expect("cargo tree");
    assert!(
        out.status.success(),
        "cargo tree: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let (p, lic) = l.split_once('|')?;
            // "name vX (/path)" for workspace members, "(*)" for repeats.
            let p = p.split(" (").next()?.trim();
            let lic = lic.trim_end_matches(" (*)").trim();
            (!p.starts_with("primeforge")).then(|| (p.to_string(), lic.replace('/', " OR ")))
        })
        .collect()
}

fn generated() -> String {
    let mut all: BTreeMap<String, (String, Vec<&str>)> = BTreeMap::new();
    for (package, into) in [
        ("primeforge", "library"),
        ("primeforge-cli", "CLI"),
        ("primeforge-node", "Node addon"),
    ] {
        for (k, v) in crates(package) {
            all.entry(k).or_insert_with(|| (v, Vec::new())).1.push(into);
        }
    }
    let mut s = format!("{BEGIN}\n\n| crate | licence | compiled into |\n|---|---|---|\n");
    for (k, (lic, into)) in all {
        s += &format!("| {k} | {lic} | {} |\n", into.join(", "));
    }
    s + "\n" + END
}

#[test]
fn third_party_list_is_current() {
    let path = common::manifest_dir().join("THIRD-PARTY.md");
    let text = std::fs::read_to_string(&path).expect("THIRD-PARTY.md");
    let (start, end) = (
        text.find(BEGIN).expect("begin marker"),
        text.find(END).expect("end marker") + END.len(),
    );
    let want = generated();
    if text[start..end] != want {
        if std::env::var("PRIMEFORGE_UPDATE_THIRD_PARTY").as_deref() == Ok("1") {
            let new = format!("{}{want}{}", &text[..start], &text[end..]);
            std::fs::write(&path, new).unwrap();
            return;
        }
        panic!(
            "THIRD-PARTY.md is stale (a dependency changed). Refresh it with\n\
             PRIMEFORGE_UPDATE_THIRD_PARTY=1 cargo test --release --test licenses\n\
             and commit it. Wanted:\n{want}"
        );
    }
    // Every licence is one the project can ship under its terms (ISC:
    // permissive, MIT-like; libloading in the Node addon).
    for line in want
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| crate"))
    {
        let lic = line.split('|').nth(2).unwrap().trim();
        assert!(
            lic.contains("MIT")
                || lic.contains("Apache-2.0")
                || lic.contains("LGPL-3.0")
                || lic.contains("BSD")
                || lic.contains("ISC")
                || lic.contains("Unicode"),
            "unexpected licence: {line}"
        );
    }
}

#[test]
fn licence_files_are_present() {
    let root = common::manifest_dir();
    for (f, words) in [
        ("LICENSE-MIT", "Permission is hereby granted"),
        ("LICENSE-APACHE", "Apache License"),
        ("COPYING.LESSER", "GNU LESSER GENERAL PUBLIC LICENSE"),
        ("COPYING", "GNU GENERAL PUBLIC LICENSE"),
    ] {
        let text = std::fs::read_to_string(root.join(f)).unwrap_or_else(|_| panic!("{f}"));
        assert!(text.contains(words), "{f}");
    }
    // The GMP version named is the one gmp-mpfr-sys bundles.
    let v = format!(
        "| {}.{}.{} (bundled by `gmp-mpfr-sys`)",
        gmp_mpfr_sys::gmp::VERSION,
        gmp_mpfr_sys::gmp::VERSION_MINOR,
        gmp_mpfr_sys::gmp::VERSION_PATCHLEVEL
    );
    let third = std::fs::read_to_string(root.join("THIRD-PARTY.md")).unwrap();
    assert!(third.contains(&v), "THIRD-PARTY.md does not name GMP {v}");
}

/// The package metadata points where the Go module says the project lives,
/// and SECURITY.md names a reporting channel there (it pointed to a
/// "repository's contact" that did not exist).
#[test]
fn metadata_and_the_security_contact_agree_with_the_module_path() {
    let root = common::manifest_dir();
    let go_mod = std::fs::read_to_string(root.join("bindings/go/go.mod")).unwrap();
    let module = go_mod
        .lines()
        .find_map(|l| l.strip_prefix("module "))
        .unwrap()
        .trim();
    let repo = format!("https://{}", module.trim_end_matches("/bindings/go"));
    let cargo = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    for key in ["repository", "homepage"] {
        assert!(
            cargo.contains(&format!("{key} = \"{repo}\"")),
            "{key} is not {repo}"
        );
    }
    assert!(cargo.contains("documentation = \"https://docs.rs/primeforge\""));
    let security = std::fs::read_to_string(root.join("SECURITY.md")).unwrap();
    assert!(
        security.contains(&repo),
        "SECURITY.md names no channel at {repo}"
    );
    assert!(!security.contains("repository's contact"));
}
