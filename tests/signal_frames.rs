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
//!
//! A thread waiting in the kernel is seen at leisure — by a core dump, a
//! debugger, `PTRACE_GETREGSET` from another process — so every thread of
//! the library enters every system call with no 8-byte window of the
//! seed, p, q, d, dP, dQ or qInv in any register: the second test stops
//! each thread at each system call of seeded jobs and generations.

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

/// Every thread, at every system call (entry and exit) of seeded RSA
/// generations — a job on 2 threads, then 1 and 2 threads with a progress
/// callback, eight rounds (which half of the key assembly ends first
/// varies) — and of a plain, two encrypted exports, their imports, a
/// component's copy, a check and the frees, holds no 8-byte window of the
/// seed, the passphrase, p, q, d, dP, dQ or qInv in a register. A
/// caller's worker that finished its half of the key assembly waits for
/// the other half in a futex: it must have cleared the registers its half
/// computed d in; and its hand-off of the other half wakes the pool's
/// idle worker with a futex (made certain by a 20 ms sleep in the
/// two-thread callback at each search's last event): it must have cleared
/// the registers the CRT exponents were computed in before that; a secure
/// buffer is mapped, filled and unmapped with system calls, none of which
/// may find the secret it takes or held. Each size runs twice: as the C
/// library's malloc is, where a heap call enters the kernel only now and
/// then (a thread's heap grows with mprotect, shrinks with madvise), and
/// with `MALLOC_MMAP_THRESHOLD_=0`, where every malloc and free of the
/// library — its own, GMP's outside the secret arena, the encoders' and
/// the ciphers' — is an mmap or munmap: none may find a secret in the
/// registers either. The control: the host's inverted seed in xmm8 and
/// xmm9 at a getppid(2) must be seen.
#[test]
fn no_thread_enters_the_kernel_with_a_secret_in_its_registers() {
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
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("syscall-registers");
        let heaps: [(&str, &[(&str, &str)]); 2] = [
            ("malloc as it is", &[]),
            (
                "every heap call a system call",
                &[("MALLOC_MMAP_THRESHOLD_", "0")],
            ),
        ];
        let mut plain_munmaps = 0;
        for (bits, (heap, env)) in ["3072", "2048"]
            .into_iter()
            .flat_map(|b| heaps.iter().map(move |h| (b, *h)))
        {
            let (exe, secrets) = trace::secrets(&dir, bits);
            let control: Vec<u8> = secrets.seed.iter().map(|b| !b).collect();
            let mut list: Vec<(&'static str, &[u8])> = vec![
                ("the seed", &secrets.seed),
                ("the passphrase", &secrets.pass),
                ("p", &secrets.primes[0]),
                ("q", &secrets.primes[1]),
                ("control", &control),
            ];
            for (name, part) in ["d", "dP", "dQ", "qInv"].into_iter().zip(&secrets.private) {
                list.push((name, part));
            }
            let needles = trace::Needles::new(&list);
            let report = match trace::syscall_stops(
                &exe,
                &[
                    "waits",
                    &secrets.path("seed"),
                    &secrets.path("pass"),
                    bits,
                    "8",
                ],
                env,
                &needles,
            ) {
                Ok(r) => r,
                Err(why) => {
                    common::skip("ptrace", &why);
                    return;
                }
            };
            let _ = std::fs::remove_dir_all(&dir);
            // mmap(2) and munmap(2) stops (entries and exits).
            let maps = [9, 11].map(|nr| report.per_call.get(&nr).copied().unwrap_or(0));
            let mut threads: Vec<_> = report.per_thread.iter().collect();
            threads.sort();
            eprintln!(
                "RSA-{bits}, {heap}: {} system-call stops read, mmap/munmap {maps:?}; per thread: {threads:?}",
                report.stops
            );
            if env.is_empty() {
                plain_munmaps = maps[1];
            } else {
                // Eight rounds of three generations, five encodings and
                // two imports free thousands of heap blocks: as munmaps
                // here, several times the plain run's (mostly secure
                // buffers'). Not so means the C library ignored the
                // setting (not glibc): then this run proves nothing.
                assert!(
                    maps[1] >= 3 * plain_munmaps,
                    "RSA-{bits}: {} munmap stops with MALLOC_MMAP_THRESHOLD_=0, {plain_munmaps} \
                     without: the C library did not make every heap call a system call, so \
                     this run could not test them",
                    maps[1]
                );
            }
            let (controls, leaks): (Vec<_>, Vec<_>) = report
                .hits
                .iter()
                .partition(|(h, _)| h.contains("control in xmm8"));
            assert!(
                !controls.is_empty(),
                "the host's control (the inverted seed in xmm8) was not seen: the trace is broken"
            );
            assert!(
                leaks.is_empty(),
                "RSA-{bits}, {heap}: {} system-call stops found a secret in a register: {leaks:#?}",
                leaks.iter().map(|(_, n)| n).sum::<u64>()
            );
            assert!(
                report
                    .per_thread
                    .keys()
                    .any(|t| t.starts_with("primeforge-job")),
                "the job's thread made no system call: {threads:?}"
            );
        }
    }
}
