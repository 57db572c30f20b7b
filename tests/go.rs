//! The cgo example (`bindings/go/main.go`), built and run with the Go
//! toolchain that `.ci/deps` installs.

mod common;

#[test]
fn go_example_runs() {
    let dir = common::manifest_dir().join("bindings/go");
    let lib = common::lib_dir();
    let tmp = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("go");
    std::fs::create_dir_all(&tmp).unwrap();
    let out = std::process::Command::new("go")
        .args(["run", "main.go"])
        .current_dir(&dir)
        .env("CGO_ENABLED", "1")
        .env(
            "CGO_CFLAGS",
            format!("-I{}", common::manifest_dir().join("include").display()),
        )
        .env(
            "CGO_LDFLAGS",
            format!(
                "-L{} -Wl,-rpath,{} -lprimeforge",
                lib.display(),
                lib.display()
            ),
        )
        .env("GOCACHE", tmp.join("cache"))
        .env("GOPATH", tmp.join("gopath"))
        .env("GOFLAGS", "-mod=mod")
        .env("GO111MODULE", "off")
        .output()
        .expect("go is needed (installed by .ci/deps as golang-go)");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("go: ok (version "), "{text}");
}
