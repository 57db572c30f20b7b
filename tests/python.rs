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
    let src = std::fs::read_to_string(dir.join("primeforge/__init__.py")).unwrap();
    let soname = format!("\"libprimeforge.so.{}\"", common::soversion());
    assert!(src.contains(&soname), "the binding does not load {soname}");
}

/// `pip wheel ./bindings/python` builds a wheel that carries the library;
/// installed into a fresh virtual environment it imports and passes the
/// unittests from another directory with no environment variables.
#[test]
fn the_wheel_works_from_a_fresh_virtual_environment() {
    let root = common::manifest_dir();
    let pyproject = std::fs::read_to_string(root.join("bindings/python/pyproject.toml")).unwrap();
    assert!(
        pyproject.contains(&format!("version = \"{}\"", env!("CARGO_PKG_VERSION"))),
        "bindings/python/pyproject.toml's version is not the crate's"
    );
    let tmp = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("python-wheel");
    let _ = std::fs::remove_dir_all(tmp.join("venv"));
    let _ = std::fs::remove_dir_all(tmp.join("wheels"));
    let _ = std::fs::remove_dir_all(tmp.join("run"));
    std::fs::create_dir_all(tmp.join("run")).unwrap();
    let run = |cmd: &mut std::process::Command| {
        let out = cmd.output().expect("python3 -m venv / pip");
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{cmd:?}:\n{text}");
        text
    };
    run(std::process::Command::new("python3")
        .args(["-m", "venv"])
        .arg(tmp.join("venv")));
    let py = tmp.join("venv/bin/python");
    // The build compiles the library again in its own target directory
    // (the outer cargo holds this run's).
    run(std::process::Command::new(&py)
        .args(["-m", "pip", "wheel", "--no-deps", "-q", "-w"])
        .arg(tmp.join("wheels"))
        .arg(root.join("bindings/python"))
        .env("CARGO_TARGET_DIR", tmp.join("target")));
    let wheel = std::fs::read_dir(tmp.join("wheels"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "whl"))
        .expect("a wheel");
    // The licence files travel in the wheel, byte for byte the
    // repository's (the library inside is MIT/Apache and LGPL GMP).
    let listing = run(std::process::Command::new(&py)
        .args([
            "-c",
            "import sys, zipfile\n\
             z = zipfile.ZipFile(sys.argv[1])\n\
             for n in z.namelist():\n\
             \x20   if '.dist-info/licenses/' in n or n.endswith('/METADATA'):\n\
             \x20       print(n, len(z.read(n)))",
        ])
        .arg(&wheel));
    for f in [
        "LICENSE-MIT",
        "LICENSE-APACHE",
        "COPYING.LESSER",
        "COPYING",
        "THIRD-PARTY.md",
    ] {
        let len = std::fs::metadata(root.join(f)).unwrap().len();
        assert!(
            listing
                .lines()
                .any(|l| l.ends_with(&format!(".dist-info/licenses/{f} {len}"))),
            "{f} ({len} bytes) missing from the wheel:\n{listing}"
        );
    }
    run(std::process::Command::new(&py)
        .args(["-m", "pip", "install", "-q", "--no-deps"])
        .arg(&wheel));
    let mut meta = std::process::Command::new(&py);
    meta.args([
        "-c",
        "from importlib.metadata import metadata; print(metadata('primeforge-keygen')['License-Expression'])",
    ]);
    let expr = run(&mut meta);
    assert!(expr.contains("LGPL-3.0-or-later"), "{expr}");
    std::fs::copy(
        root.join("bindings/python/test_primeforge.py"),
        tmp.join("run/test_primeforge.py"),
    )
    .unwrap();
    let clean = |cmd: &mut std::process::Command| {
        cmd.current_dir(tmp.join("run"))
            .env_remove("PRIMEFORGE_LIB")
            .env_remove("LD_LIBRARY_PATH")
            .env_remove("PYTHONPATH")
            .env("PYTHONDONTWRITEBYTECODE", "1");
    };
    let mut where_ = std::process::Command::new(&py);
    where_.args(["-c", "import primeforge; print(primeforge._lib._name)"]);
    clean(&mut where_);
    let loaded = run(&mut where_);
    assert!(
        loaded.contains("venv") && loaded.contains("site-packages/primeforge/_native"),
        "loaded from {loaded}"
    );
    let mut tests = std::process::Command::new(&py);
    tests.args(["-m", "unittest", "test_primeforge"]);
    clean(&mut tests);
    let text = run(&mut tests);
    assert!(text.contains("OK"), "{text}");
}
