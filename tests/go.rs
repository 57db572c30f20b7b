//! The Go module (`bindings/go`: package `primeforge` in
//! `bindings/go/primeforge`, its tests and its example) and the raw cgo
//! example (`bindings/go/example`), vetted, tested and run with the Go
//! toolchain that `.ci/deps` installs; a program in a fresh module of
//! its own, built against an installed library with pkg-config alone; and
//! a program whose calls with secrets are traced register by register
//! (`tests/go/trace_regions.go`, `common::trace`).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// A directory for Go's caches, keyed on the header's contents: Go's build
/// cache does not notice a changed header that it finds through
/// pkg-config's include directory.
fn go_tmp() -> PathBuf {
    let header = std::fs::read(common::manifest_dir().join("include/primeforge.h")).unwrap();
    let key = header.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("go-{key:016x}"));
    std::fs::create_dir_all(&tmp).unwrap();
    tmp
}

/// `go ARGS` in `dir` with only `PKG_CONFIG_PATH` pointing at the library:
/// no CGO_CFLAGS or CGO_LDFLAGS, and no LD_LIBRARY_PATH for what it runs.
fn go(dir: &Path, pkg_config_path: &Path, args: &[&str]) -> String {
    let tmp = go_tmp();
    let out = Command::new("go")
        .args(args)
        .current_dir(dir)
        .env("CGO_ENABLED", "1")
        .env_remove("CGO_CFLAGS")
        .env_remove("CGO_LDFLAGS")
        .env_remove("LD_LIBRARY_PATH")
        .env("PKG_CONFIG_PATH", pkg_config_path)
        .env("GOCACHE", tmp.join("cache"))
        .env("GOPATH", tmp.join("gopath"))
        .env("GO111MODULE", "on")
        .env("GOFLAGS", "-mod=mod")
        // The module has no dependencies: nothing is downloaded.
        .env("GOPROXY", "off")
        .output()
        .expect("go is needed (installed by .ci/deps as golang-go)");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "go {args:?} in {}: {text}",
        dir.display()
    );
    text
}

/// A pkg-config file describing the library of this test run (as an
/// installed one would), with the rpath an installed non-system prefix
/// gets, in a directory `name` of its own; returns that directory.
fn pkg_config_dir(name: &str) -> PathBuf {
    let lib = common::lib_dir();
    let pc_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(&pc_dir).unwrap();
    std::fs::write(
        pc_dir.join("primeforge.pc"),
        format!(
            "libdir={}\nincludedir={}\n\nName: primeforge\nDescription: this test run's build\n\
             Version: {}\nLibs: -L${{libdir}} -Wl,-rpath,${{libdir}} -lprimeforge\n\
             Cflags: -I${{includedir}}\n",
            lib.display(),
            common::manifest_dir().join("include").display(),
            env!("CARGO_PKG_VERSION"),
        ),
    )
    .unwrap();
    pc_dir
}

#[test]
fn go_module_tests_and_example_run() {
    let pc_dir = pkg_config_dir("go-pkgconfig");
    let dir = common::manifest_dir().join("bindings/go");
    go(&dir, &pc_dir, &["vet", "./..."]);
    let text = go(&dir, &pc_dir, &["test", "-count=1", "-v", "./..."]);
    for t in [
        "TestRSAGenerateCheckImportEncrypt",
        "TestContextCancelsAGeneration",
        "TestFIPS186",
        "TestOpenSSH",
        "TestSecretsStayOutOfProfilingSignalFrames",
        "Example",
    ] {
        assert!(text.contains(&format!("--- PASS: {t}")), "{t}: {text}");
    }
    let text = go(&dir, &pc_dir, &["run", "./example"]);
    assert!(text.contains("go: ok (version "), "{text}");
}

/// A new module `name` in `dir` that requires the package by its path
/// (`go get` would fetch it from its repository; with no network here a
/// `replace` directive points the same module path at this tree).
fn module_at(dir: &Path, name: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("go.mod"),
        format!(
            "module {name}\n\ngo 1.19\n\n\
             require github.com/primeforge/primeforge/bindings/go v0.0.0\n\n\
             replace github.com/primeforge/primeforge/bindings/go => {}\n",
            common::manifest_dir().join("bindings/go").display()
        ),
    )
    .unwrap();
    dir.to_path_buf()
}

/// A Go developer's first program: a new module that imports the package
/// by its path, against a library installed with `make install` into a
/// prefix of its own; PKG_CONFIG_PATH is the only setting, at build time,
/// and the program runs with nothing set. (`go get` itself would fetch
/// the module from its repository; with no network here a `replace`
/// directive points the same module path at this tree.)
#[test]
fn a_fresh_module_builds_with_pkg_config_alone() {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("go-fresh");
    let _ = std::fs::remove_dir_all(&tmp);
    let prefix = tmp.join("prefix");
    common::make_install("go-fresh", &prefix, &[]);
    let app = module_at(&tmp.join("app"), "example.com/keys");
    std::fs::write(
        app.join("main.go"),
        r#"package main

import (
	"context"
	"fmt"
	"os"

	"github.com/primeforge/primeforge/bindings/go/primeforge"
)

func main() {
	key, err := primeforge.GenerateRSA(context.Background(), 2048, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer key.Close()
	problems, err := key.Check()
	if err != nil || problems != 0 {
		fmt.Fprintln(os.Stderr, "check:", problems, err)
		os.Exit(1)
	}
	pem, err := key.PEM()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Stdout.Write(pem)
}
"#,
    )
    .unwrap();
    go(
        &app,
        &prefix.join("lib/pkgconfig"),
        &["build", "-o", "keys", "."],
    );
    let out = Command::new(app.join("keys"))
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the fresh module's program: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pem = String::from_utf8_lossy(&out.stdout);
    assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----\n"), "{pem}");
    // It runs on the installed library, found through the rpath.
    let dynamic = Command::new("readelf")
        .args(["-d"])
        .arg(app.join("keys"))
        .output()
        .unwrap();
    let dynamic = String::from_utf8_lossy(&dynamic.stdout);
    assert!(
        dynamic.contains(&prefix.join("lib").display().to_string()),
        "{dynamic}"
    );
}

/// The Go package leaves no secret in a register where a signal could
/// arrive (Go's profiler and its preemption signal write their frames to a
/// signal stack in Go's heap): `tests/go/trace_regions.go` — a seeded
/// GenerateRSA, EncryptedPEM, ImportRSA, Close, on the first thread —
/// traced with `tests/common/trace.rs`; its control is the seed copied by
/// Go's own memmove.
#[test]
fn the_go_package_leaves_no_secret_where_a_signal_could_see_it() {
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
    common::skip(
        "ptrace",
        "the register trace reads x86-64 Linux register sets",
    );
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        use common::trace;
        const REGIONS: [&str; 5] = [
            "control: the seed copied by Go's memmove",
            "GenerateRSA with a seed, 2 threads",
            "EncryptedPEM with the passphrase",
            "ImportRSA of it with the passphrase",
            "Close of both keys",
        ];
        let pc_dir = pkg_config_dir("go-pkgconfig-trace");
        let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("go-trace");
        let _ = std::fs::remove_dir_all(&tmp);
        let app = module_at(&tmp.join("app"), "example.com/trace");
        std::fs::copy(
            common::manifest_dir().join("tests/go/trace_regions.go"),
            app.join("main.go"),
        )
        .unwrap();
        let exe = tmp.join("trace_regions");
        go(&app, &pc_dir, &["build", "-o", exe.to_str().unwrap(), "."]);
        let bits = "1024";
        let (_, secrets) = trace::secrets(&tmp.join("secrets"), bits);
        trace::run_and_judge(
            &exe,
            &[&secrets.path(""), bits],
            // Single-stepped, the thread runs for seconds: Go's runtime
            // would preempt it with SIGURG every 10 ms, and each handler,
            // stepped too, would outlast the next.
            &[("GODEBUG", "asyncpreemptoff=1")],
            &REGIONS,
            &secrets,
            "the seed in xmm",
        );
    }
}
