//! Compiles every program in c-examples/ with
//! `cc -std=c11 -Wall -Wextra -Werror -pedantic` against the committed header
//! and this run's cdylib, runs it, and checks what it printed.

mod common;

use std::path::PathBuf;

fn example(name: &str) -> PathBuf {
    common::manifest_dir()
        .join("c-examples")
        .join(format!("{name}.c"))
}

#[test]
fn every_example_has_a_test() {
    // A new example must be added to this file, so it is built and run.
    let tested = ["basics"];
    for entry in std::fs::read_dir(common::manifest_dir().join("c-examples")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "c") {
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            assert!(
                tested.contains(&stem.as_str()),
                "c-examples/{stem}.c has no test in tests/c_examples.rs"
            );
        }
    }
}

#[test]
fn basics() {
    let exe = common::compile_c("basics", &[&example("basics")], &[]);
    let r = common::run(&exe, &[]);
    assert_eq!(
        r.code,
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        r.stdout,
        r.stderr
    );
    assert!(r
        .stdout
        .contains(&format!("version {} (header", env!("CARGO_PKG_VERSION"))));
    assert!(r.stdout.contains("status 0: success"));
    assert!(r
        .stdout
        .contains("status 4: cancelled by the progress callback"));
    assert!(r.stdout.contains("status 4294967295: unknown status code"));
    assert!(r.stdout.contains("buffer 1048576 bytes: locked="));
    assert!(r.stdout.trim_end().ends_with("basics: ok"), "{}", r.stdout);
}
