//! The Go module (`bindings/go`: package primeforge, its tests and its
//! example) and the raw cgo example (`bindings/go/example`), vetted, tested
//! and run with the Go toolchain that `.ci/deps` installs.

mod common;

#[test]
fn go_example_runs() {
    let dir = common::manifest_dir().join("bindings/go");
    let lib = common::lib_dir();
    // Go's build cache does not see a header found through CGO_CFLAGS
    // change: key the cache on the header's contents.
    let header = std::fs::read(common::manifest_dir().join("include/primeforge.h")).unwrap();
    let key = header.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    let tmp = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("go-{key:016x}"));
    std::fs::create_dir_all(&tmp).unwrap();
    let go = |args: &[&str]| {
        let out = std::process::Command::new("go")
            .args(args)
            .current_dir(&dir)
            .env("CGO_ENABLED", "1")
            .env(
                "CGO_CFLAGS",
                format!("-I{}", common::manifest_dir().join("include").display()),
            )
            .env(
                "CGO_LDFLAGS",
                format!("-L{} -Wl,-rpath,{}", lib.display(), lib.display()),
            )
            .env("GOCACHE", tmp.join("cache"))
            .env("GOPATH", tmp.join("gopath"))
            .env("GO111MODULE", "on")
            .env("GOFLAGS", "-mod=mod")
            // The module has no dependencies: nothing is downloaded.
            .env("GOPROXY", "off")
            .output()
            .expect("go is needed (installed by .ci/deps as golang-go)");
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "go {args:?}: {text}");
        text
    };
    go(&["vet", "./..."]);
    let text = go(&["test", "-count=1", "-v", "./..."]);
    for t in [
        "TestRSAGenerateCheckImportEncrypt",
        "TestContextCancelsAGeneration",
        "TestSecretsStayOutOfProfilingSignalFrames",
        "Example",
    ] {
        assert!(text.contains(&format!("--- PASS: {t}")), "{t}: {text}");
    }
    let text = go(&["run", "./example"]);
    assert!(text.contains("go: ok (version "), "{text}");
}
