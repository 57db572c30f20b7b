//! Where an asynchronous signal could arrive, the registers hold no secret.
//!
//! A signal handler's frame receives the interrupted thread's whole
//! register file (general registers and the XSAVE area: every vector
//! register at full width), written to the handler's stack — for a Go
//! program an alternate stack in Go's heap, for a profiler a buffer it
//! keeps. So at every instruction that the library executes on a caller's
//! thread while the caller's asynchronous signals are deliverable, no
//! register may hold 8 consecutive bytes of the seed, the passphrase, p or
//! q (in either byte order).
//!
//! The host (`tests/c/inflight.c`, mode `steps`) runs each entry point in
//! a region ended by a SIGSTOP it sends itself; this test traces it with
//! ptrace: wherever the thread's mask lets SIGPROF through it
//! single-steps and reads every register after every instruction; where
//! the mask blocks it (the library holds signals around its secret work),
//! it runs to the next system call, the only place the mask can change.
//! The first region is the control: the host itself loads the seed into
//! two vector registers, and the trace must see them there.

mod common;

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
const REGIONS: [&str; 9] = [
    "control: the host loads the seed into xmm6 and xmm7",
    "a seeded job on 2 threads: pf_rsa_generate_start, pf_job_wait, pf_job_take_rsa",
    "pf_rsa_generate_ex with a seed and a progress callback, 1 thread",
    "pf_rsa_generate_ex with a seed and a progress callback, 2 threads",
    "pf_rsa_export_encrypted with the passphrase",
    "pf_rsa_import of the encrypted key with the passphrase",
    "pf_buffer_copy of the seed",
    "pf_rsa_component of p",
    "pf_rsa_check, pf_buffer_free, pf_rsa_free",
];

#[test]
fn no_signal_could_find_a_secret_in_the_registers() {
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
    {
        common::skip(
            "ptrace",
            "the register trace reads x86-64 Linux register sets",
        );
    }
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        use common::trace;
        use std::path::PathBuf;
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("signal-frames");
        let bits = "1024";
        let (exe, secrets) = trace::secrets(&dir, bits);
        trace::run_and_judge(
            &exe,
            &["steps", &secrets.path("seed"), &secrets.path("pass"), bits],
            &[],
            &REGIONS,
            &secrets,
            "the seed in xmm6",
        );
    }
}
