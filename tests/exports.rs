//! The cdylib exports only the C API (no GMP, no Rust symbols) and carries
//! the SONAME libprimeforge.so.0.MINOR (0.x) or .MAJOR.

mod common;

use std::process::Command;

#[test]
fn only_pf_symbols_are_exported() {
    let so = common::cdylib();
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&so)
        .output()
        .expect("nm (binutils) is needed");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let names: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .collect();
    assert!(
        names.contains(&"pf_status_str"),
        "pf_status_str not exported: {names:?}"
    );
    assert!(names.contains(&"pf_buffer_new"));
    let foreign: Vec<&&str> = names.iter().filter(|n| !n.starts_with("pf_")).collect();
    assert!(foreign.is_empty(), "non-pf_ symbols exported: {foreign:?}");
}

#[test]
fn every_header_function_is_exported_and_vice_versa() {
    let header =
        std::fs::read_to_string(common::manifest_dir().join("include/primeforge.h")).unwrap();
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(common::cdylib())
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let exported: std::collections::BTreeSet<&str> = text
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .collect();
    for name in &exported {
        assert!(
            header.contains(&format!(" {name}(")) || header.contains(&format!("*{name}(")),
            "{name} is exported but not declared in the header"
        );
    }
    // Declarations: the identifier right before '(' on a line that is not
    // a comment or a typedef.
    for line in header.lines() {
        let t = line.trim_start();
        if t.starts_with('*') || t.starts_with("/*") || t.starts_with("//") || t.contains("typedef")
        {
            continue;
        }
        if let Some(paren) = t.find('(') {
            let name = t[..paren]
                .rsplit(|c: char| !(c.is_alphanumeric() || c == '_'))
                .next()
                .unwrap_or("");
            if name.starts_with("pf_") {
                assert!(exported.contains(name), "{name} declared but not exported");
            }
        }
    }
}

#[test]
fn soname_is_libprimeforge_so_0() {
    let out = Command::new("readelf")
        .arg("-d")
        .arg(common::cdylib())
        .output()
        .expect("readelf");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(&format!(
            "Library soname: [libprimeforge.so.{}]",
            common::soversion()
        )),
        "{text}"
    );
}
