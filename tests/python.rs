//! The Python ctypes binding (`bindings/python`), tested with `unittest`
//! against this run's cdylib.

mod common;

#[test]
fn python_binding_unittests_pass() {
    let dir = common::manifest_dir().join("bindings/python");
    let out = std::process::Command::new("python3")
        .args(["-m", "unittest", "-v", "test_primeforge"])
        .current_dir(&dir)
        .env("PRIMEFORGE_LIB", common::cdylib())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python3 is needed (installed by .ci/deps)");
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "python tests failed:\n{text}");
    assert!(text.contains("OK"), "{text}");
    // Without $PRIMEFORGE_LIB the binding loads the library by its SONAME.
    let src = std::fs::read_to_string(dir.join("primeforge.py")).unwrap();
    let soname = format!("\"libprimeforge.so.{}\"", common::soversion());
    assert!(src.contains(&soname), "the binding does not load {soname}");
}
