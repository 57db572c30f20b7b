//! Helpers shared by the integration tests: where cargo put the cdylib, and
//! how to compile a C program against it and the committed header.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub mod cores;
pub mod trace;

/// The profile directory (target/debug or target/release) of this test run.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    // target/<profile>/deps/<test-binary>
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

pub fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The shared library built by this `cargo test` run. `cargo test` leaves
/// it in `deps/` (only `cargo build` copies it up to the profile directory),
/// so that copy is preferred: it is the one built from this source.
pub fn cdylib() -> PathBuf {
    built("libprimeforge.so")
}

/// The OpenSSL provider module of this run (a default workspace member,
/// built by `cargo test` into `deps/`).
#[allow(dead_code)]
pub fn provider_module() -> PathBuf {
    built("libprimeforge_provider.so")
}

/// A library file this run built: `deps/` first, then the profile directory.
fn built(name: &str) -> PathBuf {
    let dir = profile_dir();
    [dir.join("deps").join(name), dir.join(name)]
        .into_iter()
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("{name} not found under {}", dir.display()))
}

/// A directory holding `libprimeforge.so` and the SONAME link
/// `libprimeforge.so.SOVERSION`, both pointing at this run's cdylib, so that a C
/// program linked with -lprimeforge finds its library through its rpath.
pub fn lib_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "lib-{}",
        profile_dir().file_name().unwrap().to_string_lossy()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    for name in [
        "libprimeforge.so".to_string(),
        format!("libprimeforge.so.{}", soversion()),
    ] {
        let link = dir.join(&name);
        static SEQ: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = dir.join(format!(".{name}.{}.{seq}", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink(cdylib(), &tmp).unwrap();
        std::fs::rename(&tmp, &link).unwrap();
    }
    dir
}

/// Compiles `sources` with the project's strict C flags against the header
/// and the cdylib; returns the executable's path.
pub fn compile_c(name: &str, sources: &[&Path], extra: &[&str]) -> PathBuf {
    compile(
        name,
        sources,
        extra,
        &std::env::var("CC").unwrap_or_else(|_| "cc".into()),
        "-std=c11",
    )
}

/// Like [`compile_c`], for C++17 sources with `c++`.
pub fn compile_cxx(name: &str, sources: &[&Path], extra: &[&str]) -> PathBuf {
    compile(
        name,
        sources,
        extra,
        &std::env::var("CXX").unwrap_or_else(|_| "c++".into()),
        "-std=c++17",
    )
}

/// The compiler writes a file of its own, which is then renamed onto
/// `c-NAME`: another test of the same binary may be starting `c-NAME` at
/// that moment (exec fails with "Text file busy" on a file being written).
fn compile(name: &str, sources: &[&Path], extra: &[&str], compiler: &str, std: &str) -> PathBuf {
    static SEQ: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let lib = lib_dir();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let out = dir.join(format!("c-{name}"));
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let written = dir.join(format!(".c-{name}.{}.{seq}", std::process::id()));
    let mut cmd = Command::new(compiler);
    cmd.args([std, "-Wall", "-Wextra", "-Werror", "-pedantic", "-O1", "-g"])
        .arg("-I")
        .arg(manifest_dir().join("include"))
        .args(sources)
        .arg("-o")
        .arg(&written)
        .arg("-L")
        .arg(&lib)
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-lprimeforge")
        .args(extra);
    let res = cmd
        .output()
        .expect("a C compiler (cc) is needed for the C tests");
    assert!(
        res.status.success(),
        "compiling {name} failed:\n{}",
        String::from_utf8_lossy(&res.stderr)
    );
    std::fs::rename(&written, &out).unwrap();
    out
}

/// Output of a finished program.
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

pub fn run(exe: &Path, args: &[&str]) -> Run {
    let out = Command::new(exe).args(args).output().unwrap();
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs a program that must exit 0; returns its output.
pub fn run_ok(exe: &Path, args: &[&str]) -> Run {
    let r = run(exe, args);
    assert_eq!(
        r.code,
        Some(0),
        "{} {args:?}\nstdout:\n{}\nstderr:\n{}",
        exe.display(),
        r.stdout,
        r.stderr
    );
    r
}

/// This run's static library (cargo test leaves it in deps/, cargo build
/// in the profile directory).
pub fn staticlib() -> PathBuf {
    built("libprimeforge.a")
}

/// Default options with a thread count and an optional 32-byte seed.
pub fn opts(threads: u32, seed: Option<&[u8; 32]>) -> primeforge::ffi::pf_options {
    let mut o = primeforge::ffi::pf_options_default();
    o.threads = threads;
    if let Some(s) = seed {
        o.seed = s.as_ptr();
        o.seed_len = 32;
    }
    o
}

/// [`opts`] with `PF_THREADS_EXACT`: exactly `threads` workers, also
/// above the machine's cores (tests of what many threads do).
#[allow(dead_code)]
pub fn exact(threads: u32, seed: Option<&[u8; 32]>) -> primeforge::ffi::pf_options {
    let mut o = opts(threads, seed);
    o.flags = primeforge::ffi::pf_options_flag::PF_THREADS_EXACT as u32;
    o
}

/// Copies a buffer's bytes and frees it.
pub fn take(buf: *mut primeforge::ffi::pf_buffer) -> Vec<u8> {
    use primeforge::ffi::*;
    let v = unsafe { std::slice::from_raw_parts(pf_buffer_data(buf), pf_buffer_len(buf)) }.to_vec();
    unsafe { pf_buffer_free(buf) };
    v
}

/// The SONAME's version: "0.MINOR" while the crate is 0.x, else "MAJOR"
/// (README, "ABI policy").
#[allow(dead_code)]
pub fn soversion() -> String {
    let major = env!("CARGO_PKG_VERSION_MAJOR");
    if major == "0" {
        format!("0.{}", env!("CARGO_PKG_VERSION_MINOR"))
    } else {
        major.to_string()
    }
}

/// How many first tests on candidates of `bits` bits an RSA or DH search
/// runs at once here (1; with AVX-512 IFMA, 8 in the lanes of one register
/// up to 1244 bits, else 2 to 4 interleaved).
#[allow(dead_code)]
pub fn first_test_lanes(bits: u32) -> usize {
    primeforge::prime::fermat::secret_first_test_lanes(bits)
}

/// A test whose subject cannot run here (no core files, say): says so past
/// the test harness's capture, and fails instead where `PRIMEFORGE_REQUIRE`
/// names the capability (CI sets it from what the machine has).
pub fn skip(capability: &str, why: &str) {
    use std::io::Write;
    let required = std::env::var("PRIMEFORGE_REQUIRE").unwrap_or_default();
    if required.split(',').any(|c| c.trim() == capability) {
        panic!("PRIMEFORGE_REQUIRE names {capability}, but: {why}");
    }
    let _ = writeln!(
        std::io::stderr(),
        "\n*** SKIPPED (no {capability}): {why} ***"
    );
}

/// Runs `make install PREFIX=prefix` (plus `extra` make arguments) from
/// this test run's artifacts: the cdylib and static library cargo built
/// for the tests, the workspace's CLI and the provider module, staged in
/// `CARGO_TARGET_TMPDIR/stage-NAME` as the Makefile's TARGET. Returns the
/// staging directory. Fails the test with make's output on error.
pub fn make_install(name: &str, prefix: &Path, extra: &[&str]) -> PathBuf {
    let stage = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("stage-{name}"));
    std::fs::create_dir_all(&stage).unwrap();
    std::fs::copy(cdylib(), stage.join("libprimeforge.so")).unwrap();
    std::fs::copy(staticlib(), stage.join("libprimeforge.a")).unwrap();
    // The README's test command builds every workspace member.
    let cli = profile_dir().join("primeforge");
    assert!(
        cli.exists(),
        "{} is missing: the workspace's CLI is built by `cargo test --release`",
        cli.display()
    );
    std::fs::copy(&cli, stage.join("primeforge")).unwrap();
    std::fs::copy(provider_module(), stage.join("libprimeforge_provider.so")).unwrap();
    let out = Command::new("make")
        .arg("-C")
        .arg(manifest_dir())
        .arg("install")
        .arg(format!("TARGET={}", stage.display()))
        .arg(format!("PREFIX={}", prefix.display()))
        .args(extra)
        .output()
        .expect("make");
    assert!(
        out.status.success(),
        "make install PREFIX={}: {}{}",
        prefix.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    stage
}

/// Calls `done` every `every` until it returns true or `limit` has passed;
/// returns whether it did. (A thread the library joined leaves
/// /proc/self/task a moment after the join returns: the kernel finishes
/// its exit after waking the joiner.)
#[allow(dead_code)]
pub fn wait_until(
    limit: std::time::Duration,
    every: std::time::Duration,
    mut done: impl FnMut() -> bool,
) -> bool {
    let start = std::time::Instant::now();
    loop {
        if done() {
            return true;
        }
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(every);
    }
}
