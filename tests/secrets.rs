//! Secrets stay secret (issue 5): fork behaviour of OS-seeded generation,
//! isolation from a host's own libgmp, and a memcheck run of a C example.
//! The memory scan for leftover key bytes is in `memscan.rs`; freed-block
//! wiping is a unit test of `gmp::alloc`; DONTDUMP is checked in `buffer.rs`.

mod common;

use std::io::Read;

use primeforge::ffi::*;

fn modulus(key: *const pf_rsa_key) -> Vec<u8> {
    let mut b = std::ptr::null_mut();
    assert_eq!(
        unsafe { pf_rsa_component(key, 1, &mut b) },
        pf_status::PF_OK
    );
    common::take(b)
}

#[test]
fn parent_and_child_generate_different_keys_after_fork() {
    // Warm up: the library is initialised and has generated before forking.
    let mut key = std::ptr::null_mut();
    assert_eq!(
        unsafe { pf_rsa_generate(512, 1, &mut key) },
        pf_status::PF_OK
    );
    unsafe { pf_rsa_free(key) };

    let mut fds = [0i32; 2];
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: the child generates a key, writes its modulus and _exits.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        unsafe {
            let mut k = std::ptr::null_mut();
            let st = pf_rsa_generate(512, 1, &mut k);
            let mut code = 1;
            if st == pf_status::PF_OK {
                let mut b = std::ptr::null_mut();
                if pf_rsa_component(k, 1, &mut b) == pf_status::PF_OK {
                    let n = pf_buffer_len(b);
                    if libc::write(fds[1], pf_buffer_data(b).cast(), n) == n as isize {
                        code = 0;
                    }
                    pf_buffer_free(b);
                }
                pf_rsa_free(k);
            }
            libc::_exit(code);
        }
    }
    unsafe { libc::close(fds[1]) };
    let mut parent_key = std::ptr::null_mut();
    assert_eq!(
        unsafe { pf_rsa_generate(512, 1, &mut parent_key) },
        pf_status::PF_OK
    );
    let parent_n = modulus(parent_key);
    unsafe { pf_rsa_free(parent_key) };
    let mut child_n = Vec::new();
    let mut f = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fds[0]) };
    f.read_to_end(&mut child_n).unwrap();
    let mut status = 0;
    unsafe { libc::waitpid(pid, &mut status, 0) };
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "child failed: {status:#x}"
    );
    assert_eq!(child_n.len(), 64);
    assert_ne!(child_n, parent_n, "parent and child generated the same key");
}

#[test]
fn a_host_using_its_own_libgmp_is_unaffected() {
    let src = common::manifest_dir().join("tests/c/host_gmp.c");
    let exe = common::compile_c("host_gmp", &[&src], &["-lgmp"]);
    let r = common::run_ok(&exe, &[]);
    assert!(r.stdout.contains("host_gmp: ok"), "{}", r.stdout);
}

#[test]
fn memcheck_finds_no_errors_or_leaks_in_the_c_examples() {
    // valgrind --tool=memcheck --error-exitcode=99 --leak-check=full
    //   --errors-for-leak-kinds=definite ./<example> <args>
    let tmp = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let rsa_out = tmp.join("memcheck.pem");
    let dh_out = tmp.join("memcheck-dh.pem");
    let cases: [(&str, Vec<&str>, &str); 5] = [
        (
            "dh_job",
            vec!["512", "0", "2"],
            "dh_job: 512-bit parameters",
        ),
        (
            "dh_job",
            vec!["4096", "200", "2"],
            "dh_job: cancelled by the caller",
        ),
        (
            "rsa_keygen",
            vec!["768", "2", rsa_out.to_str().unwrap()],
            "rsa_keygen: 768-bit key",
        ),
        (
            "dh_params",
            vec!["512", "2", "2", dh_out.to_str().unwrap()],
            "dh_params: 512-bit safe prime",
        ),
        ("basics", vec![], "basics: ok"),
    ];
    for (name, args, expect) in cases {
        let src = common::manifest_dir().join(format!("c-examples/{name}.c"));
        let exe = common::compile_c(&format!("{name}_memcheck"), &[&src], &[]);
        let r = std::process::Command::new("valgrind")
            .args([
                "--tool=memcheck",
                "--error-exitcode=99",
                "--leak-check=full",
                "--errors-for-leak-kinds=definite",
                "-q",
            ])
            .arg(&exe)
            .args(&args)
            .env("LD_LIBRARY_PATH", common::lib_dir())
            .output()
            .expect("valgrind is needed (installed by .ci/deps)");
        let text =
            String::from_utf8_lossy(&r.stdout).into_owned() + &String::from_utf8_lossy(&r.stderr);
        // dh_job exits 2 when cancelled; valgrind's own errors exit 99.
        let want = if expect.contains("cancelled") { 2 } else { 0 };
        assert_eq!(
            r.status.code(),
            Some(want),
            "{name}: valgrind reported errors:\n{text}"
        );
        assert!(text.contains(expect), "{name}: {text}");
    }
}

#[test]
fn c_examples_run_clean_under_address_and_undefined_behaviour_sanitizers() {
    // The C side instrumented with ASan + UBSan (the Rust side would need a
    // nightly toolchain for -Zsanitizer); ASan's malloc interceptors also
    // see every block our GMP allocator hands out and wipes.
    let tmp = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let dh_out = tmp.join("asan-dh.pem");
    let rsa_out = tmp.join("asan-rsa.pem");
    let cases: [(&str, Vec<&str>, i32); 5] = [
        ("basics", vec![], 0),
        ("dh_job", vec!["512", "0", "2"], 0),
        ("dh_job", vec!["4096", "200", "2"], 2),
        (
            "rsa_keygen",
            vec!["1024", "2", rsa_out.to_str().unwrap()],
            0,
        ),
        (
            "dh_params",
            vec!["512", "2", "2", dh_out.to_str().unwrap()],
            0,
        ),
    ];
    for (name, args, want) in cases {
        let src = common::manifest_dir().join(format!("c-examples/{name}.c"));
        let exe = common::compile_c(
            &format!("{name}_asan"),
            &[&src],
            &[
                "-fsanitize=address,undefined",
                "-fno-sanitize-recover=all",
                "-fno-omit-frame-pointer",
            ],
        );
        let r = std::process::Command::new(&exe)
            .args(&args)
            .env(
                "ASAN_OPTIONS",
                "detect_leaks=1:abort_on_error=0:exitcode=97",
            )
            .env(
                "UBSAN_OPTIONS",
                "print_stacktrace=1:halt_on_error=1:exitcode=98",
            )
            .output()
            .unwrap();
        let text =
            String::from_utf8_lossy(&r.stdout).into_owned() + &String::from_utf8_lossy(&r.stderr);
        assert_eq!(
            r.status.code(),
            Some(want),
            "{name} under ASan/UBSan:\n{text}"
        );
        assert!(
            !text.contains("ERROR: AddressSanitizer") && !text.contains("runtime error"),
            "{text}"
        );
    }
}
