//! The committed header must be exactly what build.rs generates.

#[test]
fn committed_header_matches_generated() {
    let generated = std::fs::read_to_string(concat!(env!("OUT_DIR"), "/primeforge.h"))
        .expect("build.rs writes OUT_DIR/primeforge.h");
    let committed =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/primeforge.h"))
            .expect("include/primeforge.h is committed");
    if generated != committed {
        let first = generated
            .lines()
            .zip(committed.lines())
            .position(|(a, b)| a != b)
            .map_or_else(
                || "length differs".to_owned(),
                |i| format!("first difference at line {}", i + 1),
            );
        panic!(
            "include/primeforge.h is out of date ({first}).\n\
             Run `PRIMEFORGE_UPDATE_HEADER=1 cargo build` and commit the result."
        );
    }
}

#[test]
fn header_carries_version_macros_from_cargo() {
    let h = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/primeforge.h"))
        .unwrap();
    let want = format!(
        "#define PRIMEFORGE_VERSION_STRING \"{}\"",
        env!("CARGO_PKG_VERSION")
    );
    assert!(h.contains(&want), "missing: {want}");
    assert!(h.contains(&format!(
        "#define PRIMEFORGE_VERSION_MAJOR {}",
        env!("CARGO_PKG_VERSION_MAJOR")
    )));
}
