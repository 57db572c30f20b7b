//! Generates the C header with cbindgen into OUT_DIR, and refreshes the
//! committed copy in include/ when PRIMEFORGE_UPDATE_HEADER=1. Also gives the
//! cdylib its SONAME: libprimeforge.so.0.MINOR while the version is 0.x (a
//! 0.x minor release may change the ABI, as Cargo's semver rules allow),
//! libprimeforge.so.MAJOR from 1.0 (see docs/abi.md).

use std::env;
use std::path::PathBuf;

fn main() {
    let crate_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    let major = env::var("CARGO_PKG_VERSION_MAJOR").unwrap();
    let minor = env::var("CARGO_PKG_VERSION_MINOR").unwrap();
    let patch = env::var("CARGO_PKG_VERSION_PATCH").unwrap();

    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=PRIMEFORGE_UPDATE_HEADER");
    // The commit for `build_info` (bug reports): from git when this is a
    // checkout, else PRIMEFORGE_COMMIT (a release tarball's builder sets
    // it), else "unknown".
    println!("cargo:rerun-if-env-changed=PRIMEFORGE_COMMIT");
    for git in [".git/HEAD", ".git/refs", ".git/packed-refs"] {
        // Only where they exist: a missing path would rerun this script on
        // every build.
        if std::path::Path::new(git).exists() {
            println!("cargo:rerun-if-changed={git}");
        }
    }
    let commit = env::var("PRIMEFORGE_COMMIT").ok().or_else(|| {
        std::process::Command::new("git")
            .args(["rev-parse", "--short=12", "HEAD"])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    });
    println!(
        "cargo:rustc-env=PRIMEFORGE_COMMIT={}",
        commit.unwrap_or_else(|| "unknown".into())
    );

    // AVX-512 intrinsics and target features are stable from Rust 1.89;
    // the crate's MSRV is 1.85 (Debian 13's rustc). `arith::ifma` is
    // compiled only by a compiler that has them (`cfg(pf_avx512)`).
    println!("cargo::rustc-check-cfg=cfg(pf_avx512)");
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rustc_minor = std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| {
            let v = String::from_utf8_lossy(&o.stdout).into_owned();
            let mut it = v.split_whitespace().nth(1)?.split('.');
            (it.next()? == "1").then_some(())?;
            it.next()?.parse::<u32>().ok()
        });
    // PRIMEFORGE_NO_AVX512=1 builds as an older compiler would: CI checks
    // that path, which this machine's compiler would never take.
    println!("cargo:rerun-if-env-changed=PRIMEFORGE_NO_AVX512");
    let forced_off = env::var("PRIMEFORGE_NO_AVX512").as_deref() == Ok("1");
    if rustc_minor.is_some_and(|m| m >= 89) && !forced_off {
        println!("cargo:rustc-cfg=pf_avx512");
    }

    let target_os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os == "linux" || target_os == "freebsd" {
        let soversion = if major == "0" {
            format!("0.{minor}")
        } else {
            major.clone()
        };
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libprimeforge.so.{soversion}");
        // Never unmapped by dlclose: the GMP memory functions we install
        // must outlive every GMP object (worker threads are joined before
        // each generation returns).
        // A dlopen/dlclose/dlopen cycle is then safe (tests/robustness.rs).
        println!("cargo:rustc-cdylib-link-arg=-Wl,-z,nodelete");
        // Bind every symbol at load time (and make the GOT read-only): with
        // lazy binding, the dynamic loader's resolver runs on our first call
        // of each libc function and saves the vector registers — which may
        // hold key material — onto the stack (SECURITY.md, "Registers").
        println!("cargo:rustc-cdylib-link-arg=-Wl,-z,now");
        println!("cargo:rustc-cdylib-link-arg=-Wl,-z,relro");
    }

    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
        .expect("cbindgen.toml is readable and valid");
    let version_macros = format!(
        "\n/** Version of this header; compare with pf_version() at run time. */\n\
         #define PRIMEFORGE_VERSION_MAJOR {major}\n\
         #define PRIMEFORGE_VERSION_MINOR {minor}\n\
         #define PRIMEFORGE_VERSION_PATCH {patch}\n\
         #define PRIMEFORGE_VERSION_STRING \"{major}.{minor}.{patch}\"\n"
    );
    // One source file per section, in the order the header presents them
    // to a reader: status codes, buffers, options, RSA, DH, jobs. cbindgen keeps
    // the order of its sources (inside ffi/mod.rs it would sort the modules).
    let mut builder = cbindgen::Builder::new().with_config(config);
    for section in ["status", "detail", "buffer", "options", "rsa", "dh", "job"] {
        builder = builder.with_src(crate_dir.join("src/ffi").join(format!("{section}.rs")));
    }
    let bindings = builder
        .with_after_include(version_macros)
        .generate()
        .expect("cbindgen could not generate the header");
    let generated = out_dir.join("primeforge.h");
    bindings.write_to_file(&generated);

    if env::var("PRIMEFORGE_UPDATE_HEADER").as_deref() == Ok("1") {
        let committed = crate_dir.join("include/primeforge.h");
        std::fs::copy(&generated, &committed).expect("cannot refresh include/primeforge.h");
        println!("cargo:warning=refreshed {}", committed.display());
    }
}
