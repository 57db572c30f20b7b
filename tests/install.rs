//! `make install` into a temporary prefix, then a C example built purely
//! from `pkg-config --cflags --libs primeforge` (shared) and
//! `pkg-config --static` (static library), and run.

mod common;

use std::process::Command;

fn sh(cmd: &mut Command) -> String {
    let out = cmd.output().expect("command");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{cmd:?}:\n{text}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn installed_tree_works_through_pkg_config() {
    let prefix = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("prefix");
    let _ = std::fs::remove_dir_all(&prefix);
    let root = common::manifest_dir();
    let stage = common::make_install("prefix", &prefix, &[]);
    let libdir = prefix.join("lib");
    let version = env!("CARGO_PKG_VERSION");
    assert!(libdir.join(format!("libprimeforge.so.{version}")).exists());
    assert_eq!(
        std::fs::read_link(libdir.join(format!("libprimeforge.so.{}", common::soversion())))
            .unwrap()
            .to_str(),
        Some(format!("libprimeforge.so.{version}").as_str())
    );
    assert!(libdir.join("libprimeforge.so").exists() && libdir.join("libprimeforge.a").exists());
    assert!(prefix.join("include/primeforge.hpp").exists());
    // The tool, its manual pages and completions.
    for f in [
        "bin/primeforge",
        "share/man/man1/primeforge.1",
        "share/man/man1/primeforge-rsa.1",
        "share/man/man1/primeforge-check.1",
        "share/bash-completion/completions/primeforge",
        "share/zsh/site-functions/_primeforge",
        "share/fish/vendor_completions.d/primeforge.fish",
        "share/doc/primeforge/LICENSE-MIT",
        "share/doc/primeforge/LICENSE-APACHE",
        "share/doc/primeforge/COPYING.LESSER",
        "share/doc/primeforge/COPYING",
        "share/doc/primeforge/THIRD-PARTY.md",
        "lib/ossl-modules/primeforge.so",
    ] {
        let p = prefix.join(f);
        assert!(
            p.metadata().is_ok_and(|m| m.len() > 100),
            "{f} missing or empty"
        );
    }
    // Stripped, with the debug information split into lib/debug.
    for (installed, debug) in [
        (
            format!("lib/libprimeforge.so.{version}"),
            format!("lib/debug/libprimeforge.so.{version}.debug"),
        ),
        ("bin/primeforge".into(), "lib/debug/primeforge.debug".into()),
        (
            "lib/ossl-modules/primeforge.so".into(),
            "lib/debug/primeforge.so.debug".into(),
        ),
    ] {
        let sections = sh(Command::new("readelf")
            .arg("-S")
            .arg(prefix.join(&installed)));
        assert!(
            !sections.contains(".debug_info"),
            "{installed} is not stripped"
        );
        assert!(
            sections.contains(".gnu_debuglink"),
            "{installed} has no debuglink"
        );
        let split = sh(Command::new("readelf").arg("-S").arg(prefix.join(&debug)));
        assert!(
            split.contains(".debug_info"),
            "{debug} holds no debug information"
        );
    }
    let so = std::fs::metadata(prefix.join(format!("lib/libprimeforge.so.{version}"))).unwrap();
    assert!(
        so.len() < 8 << 20,
        "the installed library is {} bytes",
        so.len()
    );
    let man = std::fs::read_to_string(prefix.join("share/man/man1/primeforge-rsa.1")).unwrap();
    assert!(man.contains(".TH") && man.contains("passout"), "{man}");

    let pc = libdir.join("pkgconfig");
    let flags = sh(Command::new("pkg-config")
        .args(["--cflags", "--libs", "primeforge"])
        .env("PKG_CONFIG_PATH", &pc));
    assert!(flags.contains("-lprimeforge"), "{flags}");
    // The .pc files are relocatable: ${prefix}-relative directories.
    let pc_text = std::fs::read_to_string(pc.join("primeforge.pc")).unwrap();
    assert!(
        pc_text.contains("libdir=${prefix}/lib")
            && pc_text.contains("includedir=${prefix}/include"),
        "{pc_text}"
    );
    // The static link goes through primeforge-static.pc, which names the
    // archive by path (the linker would pick the shared library for
    // -lprimeforge, both being in one directory).
    let static_flags = sh(Command::new("pkg-config")
        .args(["--static", "--cflags", "--libs", "primeforge-static"])
        .env("PKG_CONFIG_PATH", &pc));
    let example = root.join("c-examples/basics.c");
    // `-lgcc_s` must not be in Libs.private: `cc -static` has no static
    // libgcc_s (the compiler driver adds the static unwinder itself).
    assert!(!static_flags.contains("-lgcc_s"), "{static_flags}");
    for (name, flags, extra) in [
        ("shared", flags.clone(), vec![]),
        ("static", static_flags.clone(), vec!["-static-libgcc"]),
        ("fully-static", static_flags, vec!["-static"]),
    ] {
        let exe =
            std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("pkgconfig-{name}"));
        let mut cc = Command::new("cc");
        cc.args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic"])
            .arg(&example)
            .arg("-o")
            .arg(&exe);
        cc.args(flags.split_whitespace());
        cc.args(&extra);
        sh(&mut cc);
        let dynamic = sh(Command::new("readelf")
            .arg("-d")
            .arg(&exe)
            .env("LC_ALL", "C"));
        assert_eq!(
            dynamic.contains("libprimeforge.so"),
            name == "shared",
            "{name}: NEEDED of {}:\n{dynamic}",
            exe.display()
        );
        // Nothing set at run time: the shared link found the library
        // through the rpath primeforge.pc gives a non-system prefix.
        let out = sh(Command::new(&exe).env_remove("LD_LIBRARY_PATH"));
        assert!(out.trim_end().ends_with("basics: ok"), "{name}: {out}");
    }
    assert!(
        flags.contains(&format!("-Wl,-rpath,{}", libdir.display())),
        "a non-system prefix's primeforge.pc carries an rpath: {flags}"
    );
    // make uninstall leaves nothing of ours behind.
    sh(Command::new("make")
        .arg("-C")
        .arg(&root)
        .arg("uninstall")
        .arg(format!("TARGET={}", stage.display()))
        .arg(format!("PREFIX={}", prefix.display())));
    let left: Vec<_> = walk(&prefix)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().contains("primeforge"))
        })
        .collect();
    assert!(left.is_empty(), "left after uninstall: {left:?}");
    // The README's quick start is what was just tested: pkg-config alone.
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(
        readme.contains("cc app.c $(PKG_CONFIG_PATH=$HOME/.local/lib/pkgconfig pkg-config --cflags --libs primeforge)\n"),
        "the README's quick start changed: update this test"
    );

    // A system prefix gets no rpath (distributions forbid them), and
    // PC_RPATH= leaves it out anywhere.
    for (prefix, rpath_off) in [("/usr", false), ("/opt/pf", true)] {
        let dest = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("destdir");
        let _ = std::fs::remove_dir_all(&dest);
        let destdir = format!("DESTDIR={}", dest.display());
        let mut extra = vec![destdir.as_str()];
        if rpath_off {
            extra.push("PC_RPATH=");
        }
        common::make_install("destdir", std::path::Path::new(prefix), &extra);
        let pc = dest
            .join(prefix.trim_start_matches('/'))
            .join("lib/pkgconfig/primeforge.pc");
        let pc = std::fs::read_to_string(pc).unwrap();
        assert!(
            pc.contains("Libs: -L${libdir} -lprimeforge\n"),
            "PREFIX={prefix} (PC_RPATH= {rpath_off}): {pc}"
        );
        let _ = std::fs::remove_dir_all(&dest);
    }
}

/// Every file and symbolic link below `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// `make install` builds what it installs when it is missing (a fresh
/// clone's `make install` failed with make's "No rule to make target"),
/// and with PREFIX=/usr puts the provider where the system OpenSSL looks
/// for modules.
#[test]
fn make_install_builds_what_is_missing_and_finds_the_modules_directory() {
    let root = common::manifest_dir();
    let dry = sh(Command::new("make").arg("-C").arg(&root).args([
        "-n",
        "install",
        "PREFIX=/usr",
        "TARGET=/nonexistent/target",
    ]));
    assert!(dry.contains("cargo build --release"), "{dry}");
    let system = Command::new("pkg-config")
        .args(["--variable=modulesdir", "libcrypto"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| s.starts_with("/usr/"));
    match system {
        Some(dir) => assert!(
            dry.contains(&format!("{dir}/primeforge.so")),
            "{dir}:\n{dry}"
        ),
        None => common::skip(
            "libcrypto.pc",
            "no system modulesdir under /usr to compare with",
        ),
    }
}
