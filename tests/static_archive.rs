//! The static library keeps GMP private (issue 11): the archive that
//! `make install` ships (`make private-archive`) defines no global symbol
//! but `pf_*`, and a C program that uses GMP itself links statically
//! against both it and the system's `libgmp.a`, and runs with each GMP
//! undisturbed by the other (`tests/c/host_gmp.c`, which the shared-library
//! test in `secrets.rs` runs too).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn output(cmd: &mut Command) -> String {
    let out = cmd.output().expect("command");
    assert!(
        out.status.success(),
        "{cmd:?}:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// This run's libprimeforge.a, made private by the Makefile's rule.
fn private_archive() -> PathBuf {
    let staticlib = common::staticlib();
    let stage = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("static-stage");
    let _ = std::fs::remove_dir_all(&stage);
    std::fs::create_dir_all(&stage).unwrap();
    std::fs::copy(&staticlib, stage.join("libprimeforge.a")).unwrap();
    output(
        Command::new("make")
            .arg("-C")
            .arg(common::manifest_dir())
            .arg("private-archive")
            .arg(format!("TARGET={}", stage.display())),
    );
    stage.join("libprimeforge-private.a")
}

/// Global symbols an archive defines (readelf: binutils' nm may load an
/// LLVM plugin that cannot read every object).
fn global_definitions(archive: &Path) -> Vec<String> {
    let table = output(Command::new("readelf").args(["-sW"]).arg(archive));
    table
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // Num: Value Size Type Bind Vis Ndx Name
            (f.len() >= 8 && (f[4] == "GLOBAL" || f[4] == "WEAK") && f[6] != "UND")
                .then(|| f[7].to_string())
        })
        .collect()
}

#[test]
fn the_installed_archive_exports_only_pf_symbols_and_links_next_to_libgmp() {
    let archive = private_archive();
    let globals = global_definitions(&archive);
    assert!(
        globals.iter().any(|s| s == "pf_rsa_generate_ex"),
        "the archive lost the API: {globals:?}"
    );
    let foreign: Vec<&String> = globals.iter().filter(|s| !s.starts_with("pf_")).collect();
    assert!(
        foreign.is_empty(),
        "{} global non-pf_ definitions, e.g. {:?}",
        foreign.len(),
        &foreign[..foreign.len().min(10)]
    );

    // A program that calls GMP itself, linked statically against both.
    let libgmp = output(Command::new("cc").arg("-print-file-name=libgmp.a"));
    let libgmp = PathBuf::from(libgmp.trim());
    assert!(
        libgmp.is_absolute() && libgmp.exists(),
        "the system libgmp.a is needed (libgmp-dev, installed by .ci/deps)"
    );
    let exe = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("host_gmp-static");
    output(
        Command::new("cc")
            .args([
                "-std=c11",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-pedantic",
                "-O1",
            ])
            .arg("-I")
            .arg(common::manifest_dir().join("include"))
            .arg(common::manifest_dir().join("tests/c/host_gmp.c"))
            .arg("-o")
            .arg(&exe)
            .arg(&archive)
            .arg(&libgmp)
            .args(["-lpthread", "-ldl", "-lm"]),
    );
    let r = common::run(&exe, &[]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("host_gmp: ok"), "{}", r.stdout);
    // Nothing of libprimeforge is needed at run time.
    let needed = output(Command::new("readelf").args(["-d"]).arg(&exe));
    assert!(!needed.contains("libprimeforge"), "{needed}");
}
