//! The provider inside the system OpenSSL 3: `openssl genpkey`, `openssl
//! dhparam`, a configuration file, and an EVP program that knows nothing
//! of primeforge but its name. With the test-only `seed` parameter the
//! files OpenSSL writes are byte-identical to the engine's output for that
//! seed — proof that our engine made them.

use std::path::{Path, PathBuf};
use std::process::Command;

use primeforge::encode::{DhFormat, RsaFormat};
use primeforge::prime::Options;

/// This build's module, copied as `primeforge.so` into a directory of its
/// own (OpenSSL loads NAME.so from the provider path).
fn module_dir() -> PathBuf {
    // Copied once per test process: the tests run in parallel, and a copy
    // over a module another openssl is loading would be read half-written.
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().unwrap();
        let profile = exe.parent().unwrap().parent().unwrap();
        // `cargo test` leaves the module in deps/ (only `cargo build`
        // copies it up): prefer that copy, built from this source.
        let built = [profile.join("deps"), profile.to_path_buf()]
            .iter()
            .map(|d| d.join("libprimeforge_provider.so"))
            .find(|p| p.exists())
            .expect("the provider module was not built");
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("ossl-modules-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(&built, dir.join("primeforge.so")).unwrap();
        dir
    })
    .clone()
}

fn tmp(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn openssl(args: &[&str], env: &[(&str, &str)]) -> (bool, String) {
    let mut c = Command::new("openssl");
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().expect("openssl (installed by .ci/deps)");
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr),
    )
}

fn ok(args: &[&str]) -> String {
    let (good, text) = openssl(args, &[]);
    assert!(good, "openssl {args:?}: {text}");
    text
}

/// `-provider-path DIR -provider primeforge -provider default -propquery
/// ?provider=primeforge`: ours preferred for key management, the default
/// for the rest (a mandatory `provider=primeforge` would also apply to the
/// cipher and digest fetches of `genpkey -aes256` or `req -x509`, which
/// only the default provider has).
/// The options go right after the subcommand (before `dhparam`'s size).
fn with_provider<'a>(dir: &'a Path, rest: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![rest[0]];
    v.extend([
        "-provider-path",
        s(dir),
        "-provider",
        "primeforge",
        "-provider",
        "default",
        "-propquery",
        "?provider=primeforge",
    ]);
    v.extend(&rest[1..]);
    v
}

#[test]
fn only_the_entry_point_is_exported() {
    let dir = module_dir();
    let out = Command::new("readelf")
        .args(["--dyn-syms", "-W"])
        .arg(dir.join("primeforge.so"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let exported: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(" GLOBAL ") && !l.contains(" UND "))
        .filter_map(|l| l.split_whitespace().last())
        .collect();
    assert_eq!(exported, ["OSSL_provider_init"], "{text}");
    assert!(!text.contains("__gmp"), "GMP symbols are visible");
    let listed = ok(&with_provider(&dir, &["list", "-providers"]));
    assert!(
        listed.contains("name: primeforge") && listed.contains(env!("CARGO_PKG_VERSION")),
        "{listed}"
    );
}

#[test]
fn genpkey_rsa_writes_keys_openssl_accepts() {
    let dir = module_dir();
    for (opts, want) in [
        (vec!["bits:3072"], "Private-Key: (3072 bit, 2 primes)"),
        (
            vec!["bits:3072", "primes:3", "e:3"],
            "Private-Key: (3072 bit, 3 primes)",
        ),
    ] {
        let out = tmp("prov-rsa.pem");
        let mut args = vec!["genpkey", "-algorithm", "RSA", "-out", s(&out)];
        for o in &opts {
            args.extend(["-pkeyopt", o]);
        }
        let text = ok(&with_provider(&dir, &args));
        // OpenSSL's own progress dots come from our callback reports.
        assert!(text.contains('.'), "{text}");
        assert!(ok(&["pkey", "-in", s(&out), "-check", "-noout"]).contains("Key is valid"));
        let info = ok(&["pkey", "-in", s(&out), "-noout", "-text"]);
        assert!(info.starts_with(want), "{opts:?}: {info}");
        if opts.contains(&"e:3") {
            assert!(info.contains("publicExponent: 3 (0x3)"));
        }
    }
}

#[test]
fn seeded_keys_are_the_engines() {
    let dir = module_dir();
    let seed = [0x5au8; 32];
    let hex: String = seed.iter().map(|b| format!("{b:02x}")).collect();
    let seed_opt = format!("seed:{hex}");
    // RSA-2048 on 2 threads.
    let out = tmp("prov-seeded.pem");
    ok(&with_provider(
        &dir,
        &[
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "bits:2048",
            "-pkeyopt",
            "threads:2",
            "-pkeyopt",
            &seed_opt,
            "-out",
            s(&out),
        ],
    ));
    let mut o = Options {
        threads: 1,
        seed: Some(&seed),
        ..Default::default()
    };
    let (key, _) = primeforge::rsa::generate(2048, 65537, 2, &mut o).unwrap();
    let want = key.export(RsaFormat::Pkcs8Pem).unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), want.as_slice());
    // DH-1024 parameters.
    let out = tmp("prov-seeded-dh.pem");
    ok(&with_provider(
        &dir,
        &[
            "genpkey",
            "-genparam",
            "-algorithm",
            "DH",
            "-pkeyopt",
            "dh_paramgen_prime_len:1024",
            "-pkeyopt",
            &seed_opt,
            "-out",
            s(&out),
        ],
    ));
    let mut o = Options {
        seed: Some(&seed),
        ..Default::default()
    };
    let (params, _) = primeforge::dh::generate(1024, 2, 0, &mut o).unwrap();
    let want = params.export(DhFormat::Pkcs3Pem).unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), want.as_slice());
}

#[test]
fn dh_through_genpkey_and_dhparam() {
    let dir = module_dir();
    let out = tmp("prov-dh.pem");
    ok(&with_provider(
        &dir,
        &[
            "genpkey",
            "-genparam",
            "-algorithm",
            "DH",
            "-pkeyopt",
            "dh_paramgen_prime_len:2048",
            "-out",
            s(&out),
        ],
    ));
    assert!(ok(&["dhparam", "-in", s(&out), "-check", "-noout"]).contains("appear to be ok"));
    for (g, bits) in [("-2", "2048"), ("-5", "1024")] {
        let out = tmp(&format!("prov-dhparam{g}.pem"));
        ok(&with_provider(&dir, &["dhparam", g, "-out", s(&out), bits]));
        assert!(ok(&["dhparam", "-in", s(&out), "-check", "-noout"]).contains("appear to be ok"));
        let text = ok(&["dhparam", "-in", s(&out), "-noout", "-text"]);
        assert!(text.contains(&format!("({bits} bit)")), "{text}");
        assert!(text.contains(&format!("G:    {}", &g[1..])), "{text}");
    }
}

/// The ready-to-copy configuration of the README: the module, `activate`,
/// and `threads` (read: 1025 threads is refused, so the generation fails).
/// An openssl.cnf loading the default provider and ours with `threads`.
fn conf_with_threads(dir: &Path, threads: &str) -> PathBuf {
    let conf = tmp(&format!("prov-openssl-{threads}.cnf"));
    std::fs::write(
        &conf,
        format!(
            "openssl_conf = openssl_init\n\n[openssl_init]\nproviders = provider_sect\n\n\
             [provider_sect]\ndefault = default_sect\nprimeforge = primeforge_sect\n\n\
             [default_sect]\nactivate = 1\n\n\
             [primeforge_sect]\nmodule = {}\nactivate = 1\nthreads = {threads}\n",
            dir.join("primeforge.so").display()
        ),
    )
    .unwrap();
    conf
}

#[test]
fn configuration_file_loads_and_sets_threads() {
    let dir = module_dir();
    for (threads, works) in [("2", true), ("1025", false)] {
        let conf = conf_with_threads(&dir, threads);
        let out = tmp("prov-conf.pem");
        let _ = std::fs::remove_file(&out);
        let (good, text) = openssl(
            &[
                "genpkey",
                "-propquery",
                "provider=primeforge",
                "-algorithm",
                "RSA",
                "-pkeyopt",
                "bits:1024",
                "-out",
                s(&out),
            ],
            &[("OPENSSL_CONF", s(&conf))],
        );
        assert_eq!(good, works, "threads = {threads}: {text}");
        if works {
            assert!(ok(&["pkey", "-in", s(&out), "-check", "-noout"]).contains("Key is valid"));
        }
    }
}

/// Compiles tests/c/evp.c (with `extra` flags) against the system libcrypto.
fn evp_program(name: &str, extra: &[&str]) -> PathBuf {
    c_program("evp.c", name, extra)
}

/// Compiles `tests/c/SOURCE` against the system libcrypto.
fn c_program(source: &str, name: &str, extra: &[&str]) -> PathBuf {
    let exe = tmp(name);
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/c")
        .join(source);
    let cc = Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-g"])
        .args(extra)
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .arg("-lcrypto")
        .output()
        .expect("cc");
    assert!(
        cc.status.success(),
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    exe
}

/// The EVP program under valgrind memcheck (no memory errors, no definite
/// leak) and built with AddressSanitizer + UBSan.
#[test]
fn the_evp_program_is_clean_under_valgrind_and_asan() {
    let dir = module_dir();
    let exe = evp_program("prov-evp-vg", &[]);
    let out = Command::new("valgrind")
        .args([
            "--tool=memcheck",
            "--error-exitcode=99",
            "--leak-check=full",
            "--errors-for-leak-kinds=definite",
            "-q",
        ])
        .arg(&exe)
        .arg(&dir)
        .output()
        .expect("valgrind (installed by .ci/deps)");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "valgrind:\n{text}");
    let exe = evp_program(
        "prov-evp-asan",
        &[
            "-fsanitize=address,undefined",
            "-fno-sanitize-recover=all",
            "-fno-omit-frame-pointer",
        ],
    );
    let out = Command::new(&exe)
        .arg(&dir)
        .env("ASAN_OPTIONS", "detect_leaks=1:exitcode=97")
        .env("UBSAN_OPTIONS", "halt_on_error=1:exitcode=98")
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "ASan/UBSan:\n{text}");
    assert!(
        !text.contains("ERROR: AddressSanitizer") && !text.contains("runtime error"),
        "{text}"
    );
}

#[test]
fn an_evp_program_generates_signs_and_cancels() {
    let dir = module_dir();
    let exe = evp_program("prov-evp", &[]);
    let out = Command::new(&exe).arg(&dir).output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("provider of the key manager: primeforge"),
        "{text}"
    );
    assert!(text.contains("bits 2048, security bits 112"), "{text}");
    assert!(text.contains("signature of 256 bytes verified"), "{text}");
    assert!(text.contains("key none"), "{text}");
    assert!(
        text.contains("key pairs from primeforge and default, 64-byte shared secrets agreed"),
        "{text}"
    );
    for primes in [2, 3] {
        assert!(
            text.contains(&format!("{primes}-prime key exported and imported back")),
            "{text}"
        );
    }
}

/// Bad parameters are refused by gen_set_params (or, for combinations, by
/// gen) with our message on OpenSSL's error queue; never a crash.
#[test]
fn bad_parameters_are_refused_with_our_message() {
    let dir = module_dir();
    for (alg, opts, words) in [
        (
            "RSA",
            vec!["bits:1001"],
            "bits: 1001: must be even, 512 to 16384",
        ),
        ("RSA", vec!["bits:100000"], "bits: 100000: must be even"),
        ("RSA", vec!["threads:1025"], "threads: 1025: at most 1024"),
        (
            "RSA",
            vec!["seed:abcd"],
            "seed: must be 64 hexadecimal digits",
        ),
        ("RSA", vec!["e:4"], "e: 4: must be odd"),
        (
            "RSA",
            vec!["bits:1024", "primes:5"],
            "number of primes out of range",
        ),
        (
            "DH",
            vec!["dh_paramgen_prime_len:100"],
            "pbits: 100: must be 256 to 16384",
        ),
        (
            "DH",
            vec!["dh_paramgen_generator:1"],
            "safeprime-generator: 1",
        ),
    ] {
        let out = tmp("prov-refused.pem");
        let _ = std::fs::remove_file(&out);
        let mut args = vec!["genpkey"];
        if alg == "DH" {
            args.push("-genparam");
        }
        args.extend(["-algorithm", alg, "-out", s(&out)]);
        for o in &opts {
            args.extend(["-pkeyopt", o]);
        }
        let (good, text) = openssl(&with_provider(&dir, &args), &[]);
        assert!(!good, "{opts:?} was accepted");
        assert!(
            text.contains("primeforge") && text.contains(words),
            "{opts:?}: {text}"
        );
        assert!(
            !out.exists() || std::fs::metadata(&out).unwrap().len() == 0,
            "{opts:?}: a key was written"
        );
    }
}

/// Runs `openssl s_server -cert CERT -key KEY … -naccept 1 -www` until it
/// listens, then `openssl s_client -quiet -CAfile CERT …` with an HTTP
/// request; the page must arrive. Both run under `conf`.
fn tls_round_trip(conf: &Path, (cert, key): (&str, &str), server: &[&str], client: &[&str]) {
    use std::io::{BufRead, BufReader, Write};
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let accept = format!("127.0.0.1:{port}");
    let spawn = |args: &[&str], more: &[&str], stdin: std::process::Stdio| {
        Command::new("openssl")
            .args(args)
            .args(more)
            .env("OPENSSL_CONF", conf)
            .stdin(stdin)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut srv = spawn(
        &[
            "s_server", "-accept", &accept, "-naccept", "1", "-www", "-cert", cert, "-key", key,
        ],
        server,
        std::process::Stdio::null(),
    );
    let mut lines = BufReader::new(srv.stdout.take().unwrap()).lines();
    let mut seen = String::new();
    loop {
        match lines.next() {
            Some(Ok(l)) => {
                seen += &l;
                seen += "\n";
                if l.contains("ACCEPT") {
                    break;
                }
            }
            _ => {
                let _ = srv.kill();
                let out = srv.wait_with_output().unwrap();
                panic!(
                    "s_server {server:?} did not start: {seen}{}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
    }
    let mut cli = spawn(
        &["s_client", "-quiet", "-connect", &accept, "-CAfile", cert],
        client,
        std::process::Stdio::piped(),
    );
    cli.stdin
        .take()
        .unwrap()
        .write_all(b"GET / HTTP/1.0\r\n\r\n")
        .unwrap();
    let out = cli.wait_with_output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let _ = srv.kill();
    let srv_err = srv.wait_with_output().unwrap();
    assert!(
        text.contains("HTTP/1.0 200 ok"),
        "s_client {client:?} against s_server {server:?}: {text}\nserver: {}",
        String::from_utf8_lossy(&srv_err.stderr)
    );
}

/// With an openssl.cnf that activates the provider and prefers it for
/// everything (`default_properties = ?provider=primeforge`): `openssl req
/// -x509 -newkey rsa:3072` makes its key here (it takes our `threads`
/// option, which the default provider would refuse), `openssl dhparam`
/// makes the group, and s_server/s_client — both under that config, so
/// their ephemeral DH key pairs, the peer's public key and the TLS 1.3
/// ffdhe groups all go through this module — complete a TLS 1.2 DHE-RSA
/// and a TLS 1.3 ffdhe2048 handshake on 127.0.0.1.
#[test]
fn a_preferring_configuration_serves_dhe_rsa_and_ffdhe() {
    let dir = module_dir();
    let conf = tmp("prov-prefer.cnf");
    std::fs::write(
        &conf,
        format!(
            "openssl_conf = openssl_init\n\n[openssl_init]\nproviders = provider_sect\n\
             alg_section = evp_properties\n\n\
             [evp_properties]\ndefault_properties = ?provider=primeforge\n\n\
             [provider_sect]\ndefault = default_sect\nprimeforge = primeforge_sect\n\n\
             [default_sect]\nactivate = 1\n\n\
             [primeforge_sect]\nmodule = {}\nactivate = 1\nthreads = 2\n\n\
             [req]\ndistinguished_name = dn\nprompt = no\n[dn]\nCN = localhost\n",
            dir.join("primeforge.so").display()
        ),
    )
    .unwrap();
    let env = [("OPENSSL_CONF", s(&conf))];
    let (key, cert, dh) = (
        tmp("prov-tls-key.pem"),
        tmp("prov-tls-cert.pem"),
        tmp("prov-tls-dh.pem"),
    );
    let (good, text) = openssl(
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:3072",
            "-pkeyopt",
            "threads:2",
            "-nodes",
            "-keyout",
            s(&key),
            "-out",
            s(&cert),
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
        ],
        &env,
    );
    assert!(good, "req: {text}");
    assert!(ok(&["pkey", "-in", s(&key), "-check", "-noout"]).contains("Key is valid"));
    // Without the provider the same option is refused: ours made the key.
    let (refused, _) = openssl(
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:1024",
            "-pkeyopt",
            "threads:2",
            "-nodes",
            "-keyout",
            s(&tmp("prov-tls-no.pem")),
            "-out",
            s(&tmp("prov-tls-no.crt")),
            "-subj",
            "/CN=x",
        ],
        &[("OPENSSL_CONF", "/dev/null")],
    );
    assert!(!refused);
    let (good, text) = openssl(&["dhparam", "-out", s(&dh), "2048"], &env);
    assert!(good, "dhparam: {text}");
    assert!(ok(&["dhparam", "-in", s(&dh), "-check", "-noout"]).contains("ok"));
    let cipher = "DHE-RSA-AES128-GCM-SHA256";
    let (cert, key) = (s(&cert), s(&key));
    tls_round_trip(
        &conf,
        (cert, key),
        &["-dhparam", s(&dh), "-tls1_2", "-cipher", cipher],
        &["-tls1_2", "-cipher", cipher],
    );
    tls_round_trip(
        &conf,
        (cert, key),
        &["-tls1_3", "-groups", "ffdhe2048"],
        &["-tls1_3", "-groups", "ffdhe2048"],
    );
}

/// Importing keys into the provider (EVP_PKEY_fromdata), exporting them
/// back (EVP_PKEY_todata, EVP_PKEY_get_bn_param) and freeing them leaves no
/// 16-byte window of p, q, d, dP, dQ, qInv or a DH private key anywhere in
/// the process. The scan proves itself on the live keys; a control run
/// without the import shows what OpenSSL alone leaves (nothing). Before,
/// the import's unsized and unwiped intermediates left 15 copies in freed
/// heap.
#[test]
fn importing_and_exporting_keys_leaves_no_key_part_behind() {
    let dir = module_dir();
    let exe = tmp("prov-scan");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/scan.c");
    let cc = Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-g"])
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .arg("-lcrypto")
        .output()
        .expect("cc");
    assert!(
        cc.status.success(),
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    for mode in [None, Some("control")] {
        let mut c = Command::new(&exe);
        c.arg(&dir).args(mode);
        let out = c.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{mode:?}: (5 = the live keys were not found, 6 = key parts left behind)\n{text}"
        );
    }
}

/// The documented per-command form works for commands that also fetch
/// ciphers and digests (`genpkey -aes256`, `req -x509 -newkey`), and the
/// key is ours: with the test-only seed it is the engine's key for that
/// seed. (The form `-propquery provider=primeforge` made both fail.)
#[test]
fn the_per_command_form_covers_encrypted_keys_and_certificates() {
    let dir = module_dir();
    let seed = [0x6bu8; 32];
    let hex: String = seed.iter().map(|b| format!("{b:02x}")).collect();
    let seed_opt = format!("seed:{hex}");
    let mut o = Options {
        threads: 1,
        seed: Some(&seed),
        ..Default::default()
    };
    let (key, _) = primeforge::rsa::generate(2048, 65537, 2, &mut o).unwrap();
    let want = key.export(RsaFormat::Pkcs8Pem).unwrap();
    // An encrypted key.
    let enc = tmp("prov-aes256.pem");
    ok(&with_provider(
        &dir,
        &[
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "bits:2048",
            "-pkeyopt",
            &seed_opt,
            "-aes256",
            "-pass",
            "pass:s3cret",
            "-out",
            s(&enc),
        ],
    ));
    let plain = ok(&["pkey", "-in", s(&enc), "-passin", "pass:s3cret"]);
    assert_eq!(
        plain.as_bytes(),
        want.as_slice(),
        "genpkey -aes256 made another key"
    );
    // A self-signed certificate with a new key.
    let (cert, keyout) = (tmp("prov-req.crt"), tmp("prov-req.key"));
    ok(&with_provider(
        &dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-pkeyopt",
            &seed_opt,
            "-nodes",
            "-subj",
            "/CN=primeforge",
            "-days",
            "1",
            "-keyout",
            s(&keyout),
            "-out",
            s(&cert),
        ],
    ));
    assert_eq!(
        std::fs::read(&keyout).unwrap(),
        want.as_slice(),
        "req -newkey made another key"
    );
    ok(&["x509", "-in", s(&cert), "-noout", "-subject"]);
}

/// Every OpenSSL ABI number the module copies by hand (`abi.rs`) is the
/// installed headers' own: a C program includes them and prints each
/// macro, and every one must match (a wrong one would make OpenSSL call
/// the wrong function or read a parameter as another type).
#[test]
fn the_copied_abi_numbers_are_the_installed_headers() {
    let table = primeforge_provider::abi::TABLE;
    let mut src = String::from(
        "#include <stdio.h>\n#include <openssl/core.h>\n#include <openssl/core_dispatch.h>\n\
         #include <openssl/core_names.h>\n#include <openssl/tls1.h>\nint main(void) {\n",
    );
    for (name, _) in table {
        src.push_str(&format!(
            "    printf(\"%s %ld\\n\", \"{name}\", (long)({name}));\n"
        ));
    }
    src.push_str("    return 0;\n}\n");
    let c = tmp("prov-abi.c");
    std::fs::write(&c, src).unwrap();
    let exe = tmp("prov-abi");
    let cc = Command::new("cc")
        .args(["-std=c11", "-Wall", "-Werror"])
        .arg(&c)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("cc");
    assert!(
        cc.status.success(),
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let out = Command::new(&exe).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let mut wrong = Vec::new();
    for ((name, ours), line) in table.iter().zip(text.lines()) {
        let theirs: i64 = line.rsplit(' ').next().unwrap().parse().unwrap();
        if *ours != theirs {
            wrong.push(format!("{name}: ours {ours}, the headers' {theirs}"));
        }
    }
    assert_eq!(text.lines().count(), table.len());
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// `openssl genpkey -genparam -algorithm DHX|DSA` and `openssl dsaparam`
/// run on our engine: our `threads` parameter is accepted (OpenSSL's own
/// generators refuse it), the parameters are the library's for the same
/// domain parameter seed (`hexseed`) with our canonical generator (OpenSSL
/// makes an A.2.1 g when no index is given), OpenSSL checks them, makes
/// key pairs and derives one secret from two; the seed, counter and index
/// travel to the default provider's encoder; a configuration with 1025
/// threads makes `dsaparam` fail, so it is ours that ran.
#[test]
fn dhx_and_dsa_parameters_are_the_engines() {
    use primeforge::dh::fips186;
    let dir = module_dir();
    // A domain seed the library turns into parameters.
    let req = fips186::Request::new(2048, 256, None).unwrap();
    let mut o = Options {
        threads: 2,
        seed: Some(&[0x3c; 32]),
        ..Default::default()
    };
    let (want, _) = fips186::generate(&req, &mut o).unwrap();
    let domain_seed: String = want
        .fips186()
        .unwrap()
        .seed
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let hexseed = format!("hexseed:{domain_seed}");
    for (alg, extra, format) in [
        (
            "DHX",
            vec![
                "dh_paramgen_prime_len:2048",
                "dh_paramgen_subprime_len:256",
                "dh_paramgen_type:2",
            ],
            DhFormat::X942Pem,
        ),
        ("DSA", vec!["pbits:2048", "qbits:256"], DhFormat::DsaPem),
    ] {
        let out = tmp(&format!("prov-{alg}.pem"));
        let mut args = vec!["genpkey", "-genparam", "-algorithm", alg];
        for o in extra.iter().chain(&["threads:2", &hexseed]) {
            args.extend(["-pkeyopt", o]);
        }
        args.extend(["-out", s(&out)]);
        ok(&with_provider(&dir, &args));
        assert_eq!(
            std::fs::read(&out).unwrap(),
            want.export(format).unwrap().as_slice(),
            "{alg}"
        );
        assert!(ok(&["pkeyparam", "-in", s(&out), "-check", "-noout"]).contains("valid"));
        // Key pairs on them: on our key management, then OpenSSL's use.
        let (k1, k2) = (
            tmp(&format!("prov-{alg}-k1.pem")),
            tmp(&format!("prov-{alg}-k2.pem")),
        );
        for k in [&k1, &k2] {
            ok(&with_provider(
                &dir,
                &["genpkey", "-paramfile", s(&out), "-out", s(k)],
            ));
        }
        if alg == "DHX" {
            let p2 = tmp("prov-DHX-p2.pem");
            ok(&["pkey", "-in", s(&k2), "-pubout", "-out", s(&p2)]);
            let p1 = tmp("prov-DHX-p1.pem");
            ok(&["pkey", "-in", s(&k1), "-pubout", "-out", s(&p1)]);
            let (a, b) = (tmp("prov-DHX-a"), tmp("prov-DHX-b"));
            ok(&[
                "pkeyutl",
                "-derive",
                "-inkey",
                s(&k1),
                "-peerkey",
                s(&p2),
                "-out",
                s(&a),
            ]);
            ok(&[
                "pkeyutl",
                "-derive",
                "-inkey",
                s(&k2),
                "-peerkey",
                s(&p1),
                "-out",
                s(&b),
            ]);
            assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
        } else {
            let (msg, sig, pubk) = (tmp("prov-msg"), tmp("prov-sig"), tmp("prov-DSA-pub.pem"));
            std::fs::write(&msg, b"primeforge").unwrap();
            ok(&["pkey", "-in", s(&k1), "-pubout", "-out", s(&pubk)]);
            ok(&["dgst", "-sha256", "-sign", s(&k1), "-out", s(&sig), s(&msg)]);
            assert!(ok(&[
                "dgst",
                "-sha256",
                "-verify",
                s(&pubk),
                "-signature",
                s(&sig),
                s(&msg)
            ])
            .contains("Verified OK"));
        }
    }
    // A generation seed of ours with the seed, counter and index printed
    // by OpenSSL from our export.
    let text = ok(&with_provider(
        &dir,
        &[
            "genpkey",
            "-genparam",
            "-algorithm",
            "DSA",
            "-pkeyopt",
            "pbits:2048",
            "-pkeyopt",
            "qbits:256",
            "-pkeyopt",
            "gindex:7",
            "-text",
        ],
    ));
    assert!(
        text.contains("gindex: 7") && text.contains("pcounter: "),
        "{text}"
    );
    // FIPS 186-2 and bad sizes are refused with our message.
    for (opt, words) in [
        ("dh_paramgen_type:1", "FIPS 186-4 parameters only"),
        ("dh_paramgen_prime_len:1536", "FIPS 186-4 sizes of p"),
    ] {
        let (good, text) = openssl(
            &with_provider(
                &dir,
                &["genpkey", "-genparam", "-algorithm", "DHX", "-pkeyopt", opt],
            ),
            &[],
        );
        assert!(!good && text.contains(words), "{opt}: {text}");
    }
    // `openssl dsaparam` goes through our key management: with 1025
    // threads configured it fails, with 2 it works.
    for (threads, works) in [("2", true), ("1025", false)] {
        let conf = conf_with_threads(&dir, threads);
        let out = tmp("prov-dsaparam.pem");
        let _ = std::fs::remove_file(&out);
        let (good, text) = openssl(
            &[
                "dsaparam",
                "-propquery",
                "provider=primeforge",
                "-out",
                s(&out),
                "2048",
            ],
            &[("OPENSSL_CONF", s(&conf))],
        );
        assert_eq!(good, works, "threads = {threads}: {text}");
        if works {
            assert!(ok(&["pkeyparam", "-in", s(&out), "-check", "-noout"]).contains("valid"));
        }
    }
}
