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

/// The functions are presented in the order a reader needs them: status
/// codes first, then buffers and secure memory, options, worker threads, RSA and DH
/// (later: jobs). Every
/// function of one object sits in one contiguous block.
#[test]
fn header_functions_are_ordered_for_a_reader() {
    let h = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/primeforge.h"))
        .unwrap();
    let sections = [
        "status", "buffer", "secure", "options", "workers", "rsa", "dh", "job",
    ];
    let mut seen: Vec<usize> = Vec::new();
    for line in h.lines() {
        // Function declarations: "<type> pf_<object>_<verb>(...);".
        if line.starts_with(' ') || !line.ends_with(");") {
            continue;
        }
        let Some(name) = line
            .split('(')
            .next()
            .and_then(|head| head.split([' ', '*']).rfind(|w| w.starts_with("pf_")))
        else {
            continue;
        };
        // pf_version, pf_build_info and pf_last_error_message belong to the opening
        // (status) section.
        let object =
            if name == "pf_version" || name == "pf_build_info" || name == "pf_last_error_message" {
                "status"
            } else {
                name.trim_start_matches("pf_").split('_').next().unwrap()
            };
        let index = sections
            .iter()
            .position(|s| *s == object)
            .unwrap_or_else(|| panic!("{name}: object {object} has no section in this test"));
        if seen.last() != Some(&index) {
            assert!(
                !seen.contains(&index),
                "{name}: the {object} functions are split into two blocks"
            );
            seen.push(index);
        }
    }
    let mut sorted = seen.clone();
    sorted.sort_unstable();
    assert_eq!(
        seen, sorted,
        "function blocks out of reader order: {seen:?} (want {sections:?})"
    );
    assert_eq!(seen.len(), sections.len(), "a section has no function");
}
