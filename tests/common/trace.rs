//! A tracer for the signal-frame tests (`tests/signal_frames.rs`,
//! `tests/go.rs`): where a traced thread's mask lets SIGPROF through it
//! single-steps and reads every register after every instruction; where
//! the mask blocks it, it runs to the next system call, the only place the
//! mask can change. The traced program ends each region by sending itself
//! SIGSTOP (thread-directed); the tracer counts them. With
//! `PRIMEFORGE_TRACE_DEBUG` set it prints each mark and every 100 000th
//! step (where a trace seems to hang).
#![cfg(all(target_os = "linux", target_arch = "x86_64"))]
use std::collections::{HashMap, HashSet};
use std::os::unix::process::CommandExt;
use std::path::Path;

/// Every 8-byte window of each secret, in both byte orders, as the
/// little-endian word a register would hold.
pub struct Needles(HashMap<u64, &'static str>);

impl Needles {
    pub fn new(secrets: &[(&'static str, &[u8])]) -> Needles {
        let mut m = HashMap::new();
        for &(name, bytes) in secrets {
            let rev: Vec<u8> = bytes.iter().rev().copied().collect();
            for s in [bytes, &rev[..]] {
                for w in s.windows(8) {
                    m.insert(u64::from_le_bytes(w.try_into().unwrap()), name);
                }
            }
        }
        Needles(m)
    }
}

/// The register an offset of the (standard-format) XSAVE area holds.
fn xsave_name(off: usize) -> String {
    match off {
        32..=159 => format!("st{}", (off - 32) / 16),
        160..=415 => format!("xmm{}", (off - 160) / 16),
        576..=831 => format!("ymm{} (upper half)", (off - 576) / 16),
        1152..=1663 => format!("zmm{} (upper 256 bits)", (off - 1152) / 32),
        1664..=2687 => format!("zmm{}", 16 + (off - 1664) / 64),
        _ => format!("XSAVE byte {off}"),
    }
}

const GPR_NAMES: [&str; 27] = [
    "r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8", "rax", "rcx", "rdx", "rsi",
    "rdi", "orig_rax", "rip", "cs", "eflags", "rsp", "ss", "fs_base", "gs_base", "ds", "es", "fs",
    "gs",
];

enum Stop {
    Exited(i32),
    Killed(i32),
    Step,
    Syscall,
    Signal(i32),
}

fn wait(pid: i32) -> Stop {
    let mut st = 0;
    // SAFETY: waits for our own traced child.
    let r = unsafe { libc::waitpid(pid, &mut st, libc::__WALL) };
    assert_eq!(r, pid, "waitpid");
    if libc::WIFEXITED(st) {
        Stop::Exited(libc::WEXITSTATUS(st))
    } else if libc::WIFSIGNALED(st) {
        Stop::Killed(libc::WTERMSIG(st))
    } else {
        match libc::WSTOPSIG(st) {
            s if s == libc::SIGTRAP | 0x80 => Stop::Syscall,
            libc::SIGTRAP => Stop::Step,
            s => Stop::Signal(s),
        }
    }
}

fn resume(req: libc::c_uint, pid: i32, sig: i32) {
    // SAFETY: resumes our own stopped tracee.
    let r = unsafe { libc::ptrace(req, pid, 0usize, sig as usize) };
    assert_eq!(r, 0, "ptrace resume");
}

/// Whether SIGPROF (standing for every asynchronous signal: the
/// library blocks them all at once) is deliverable to the thread.
fn deliverable(pid: i32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/status")).unwrap();
    let blk = status
        .lines()
        .find_map(|l| l.strip_prefix("SigBlk:"))
        .expect("SigBlk");
    let mask = u64::from_str_radix(blk.trim(), 16).unwrap();
    mask & (1 << (libc::SIGPROF - 1)) == 0
}

/// Where `rip` is: a mapped file and the offset in it.
fn place(pid: i32, rip: u64) -> String {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    for l in maps.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        let (lo, hi) = f[0].split_once('-').unwrap();
        let (lo, hi) = (
            u64::from_str_radix(lo, 16).unwrap(),
            u64::from_str_radix(hi, 16).unwrap(),
        );
        if (lo..hi).contains(&rip) {
            let off = u64::from_str_radix(f[2], 16).unwrap() + rip - lo;
            let file = f.get(5).map_or("anonymous", |p| {
                Path::new(p).file_name().unwrap().to_str().unwrap()
            });
            return format!("{file}+{off:#x}");
        }
    }
    format!("{rip:#x}")
}

pub struct Region {
    pub stepped: u64,
    pub hits: Vec<String>,
    pub hit_count: u64,
}

/// Runs `exe args` (with `env` added), traces its first thread from its exec
/// (`PTRACE_TRACEME`) through `regions` regions, and returns, per region, how many instructions were stepped
/// with signals deliverable and where a secret was found in a register
/// then. `Err` where ptrace is refused; a program that fails fails the
/// test.
pub fn run(
    exe: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    regions: usize,
    needles: &Needles,
) -> Result<Vec<Region>, String> {
    let mut cmd = std::process::Command::new(exe);
    cmd.args(args).envs(env.iter().copied());
    // SAFETY: PTRACE_TRACEME in the child between fork and exec, an
    // async-signal-safe system call.
    unsafe {
        cmd.pre_exec(|| {
            if libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("PTRACE_TRACEME refused: {e}"))?;
    let pid = child.id() as i32;
    match wait(pid) {
        Stop::Step => {}
        _ => return Err("the traced program did not stop at exec".into()),
    }
    let options = libc::PTRACE_O_TRACESYSGOOD | libc::PTRACE_O_EXITKILL;
    // SAFETY: options on our own stopped tracee.
    let r = unsafe { libc::ptrace(libc::PTRACE_SETOPTIONS, pid, 0usize, options as usize) };
    assert_eq!(r, 0, "PTRACE_SETOPTIONS");
    resume(libc::PTRACE_CONT, pid, 0);
    let mut out: Vec<Region> = (0..regions)
        .map(|_| Region {
            stepped: 0,
            hits: Vec::new(),
            hit_count: 0,
        })
        .collect();
    let mut region = 0usize; // 0 before the first mark
    let mut open = false; // deliverable, in a region
    let mut in_syscall = false;
    let mut pending = 0;
    let mut xsave = vec![0u8; 16384];
    loop {
        let stop = wait(pid);
        match stop {
            Stop::Exited(code) => {
                // The tracer's own wait reaped a first thread's process.
                let ok = child.wait().map_or(code == 0, |s| s.success());
                assert!(
                    code == 0 && ok && region == regions + 1,
                    "the traced program exited with {code} after {region} marks"
                );
                return Ok(out);
            }
            Stop::Killed(sig) => {
                let _ = child.wait();
                panic!("the traced program was killed by signal {sig} in region {region}")
            }
            Stop::Signal(libc::SIGSTOP) => {
                region += 1;
                if std::env::var_os("PRIMEFORGE_TRACE_DEBUG").is_some() {
                    eprintln!("DEBUG mark {region}");
                }
                if region > regions {
                    resume(libc::PTRACE_CONT, pid, 0);
                    continue;
                }
                open = deliverable(pid);
            }
            Stop::Signal(sig) => pending = sig,
            Stop::Syscall => {
                in_syscall = !in_syscall;
                if region >= 1 {
                    open = deliverable(pid);
                }
            }
            Stop::Step => {}
        }
        if region == 0 {
            resume(libc::PTRACE_CONT, pid, std::mem::take(&mut pending));
            continue;
        }
        if !open {
            // Nothing can be delivered until the mask changes, which
            // only a system call does.
            resume(libc::PTRACE_SYSCALL, pid, std::mem::take(&mut pending));
            continue;
        }
        // SAFETY: reads the registers of our stopped tracee into
        // buffers of the kernel's layout and size.
        let (regs, xlen) = unsafe {
            let mut regs: libc::user_regs_struct = std::mem::zeroed();
            assert_eq!(
                libc::ptrace(libc::PTRACE_GETREGS, pid, 0usize, &mut regs),
                0,
                "PTRACE_GETREGS"
            );
            let mut iov = libc::iovec {
                iov_base: xsave.as_mut_ptr().cast(),
                iov_len: xsave.len(),
            };
            assert_eq!(
                libc::ptrace(libc::PTRACE_GETREGSET, pid, 0x202usize, &mut iov),
                0,
                "PTRACE_GETREGSET NT_X86_XSTATE"
            );
            (regs, iov.iov_len)
        };
        let r = &mut out[region - 1];
        r.stepped += 1;
        if r.stepped % 100_000 == 0 && std::env::var_os("PRIMEFORGE_TRACE_DEBUG").is_some() {
            eprintln!(
                "DEBUG region {region} stepped {} at {}",
                r.stepped,
                place(pid, regs.rip)
            );
        }
        // SAFETY: user_regs_struct is 27 u64 fields.
        let words: [u64; 27] = unsafe { std::mem::transmute(regs) };
        let mut found: Vec<(String, &str)> = words
            .iter()
            .enumerate()
            .filter_map(|(i, w)| needles.0.get(w).map(|n| (GPR_NAMES[i].to_string(), *n)))
            .collect();
        found.extend(
            xsave[..xlen]
                .chunks_exact(8)
                .enumerate()
                .filter_map(|(i, c)| {
                    needles
                        .0
                        .get(&u64::from_le_bytes(c.try_into().unwrap()))
                        .map(|n| (xsave_name(i * 8), *n))
                }),
        );
        if !found.is_empty() {
            r.hit_count += 1;
            if r.hits.len() < 6 {
                let mut seen = HashSet::new();
                let what: Vec<String> = found
                    .into_iter()
                    .filter(|f| seen.insert(f.clone()))
                    .map(|(reg, name)| format!("{name} in {reg}"))
                    .collect();
                r.hits
                    .push(format!("at {}: {}", place(pid, regs.rip), what.join(", ")));
            }
        }
        if in_syscall {
            resume(libc::PTRACE_SYSCALL, pid, std::mem::take(&mut pending));
            continue;
        }
        // SAFETY: reads a word of the tracee's code.
        let insn = unsafe { libc::ptrace(libc::PTRACE_PEEKTEXT, pid, regs.rip as usize, 0) };
        let req = if insn & 0xffff == 0x050f {
            // A system call: stopped at its entry and exit rather than
            // stepped over (a thread it creates must not inherit the
            // trap flag).
            libc::PTRACE_SYSCALL
        } else {
            libc::PTRACE_SINGLESTEP
        };
        resume(req, pid, std::mem::take(&mut pending));
    }
}

/// Prints the per-region report and fails unless the first region (the
/// control) shows `control` and no other region shows a secret.
pub fn judge(names: &[&str], regions: &[Region], control: &str) {
    let mut report = String::new();
    for (name, r) in names.iter().zip(regions) {
        report += &format!(
            "{name}: {} instructions with signals deliverable, {} with a secret in a register\n",
            r.stepped, r.hit_count
        );
        for h in &r.hits {
            report += &format!("    {h}\n");
        }
    }
    eprintln!("{report}");
    assert!(
        regions[0].hits.iter().any(|h| h.contains(control)),
        "the control ({control}) was not seen: the trace is broken\n{report}"
    );
    assert!(
        regions.iter().all(|r| r.stepped > 0),
        "a region was not traced\n{report}"
    );
    let leaks: Vec<&str> = names[1..]
        .iter()
        .zip(&regions[1..])
        .filter(|(_, r)| r.hit_count > 0)
        .map(|(n, _)| *n)
        .collect();
    assert!(
        leaks.is_empty(),
        "a signal arriving there would have written a secret to its frame: {leaks:?}\n{report}"
    );
}

/// A fresh seed and passphrase (in `dir/seed`, `dir/pass`) and the p and
/// q of the RSA key the seed gives.
pub struct Secrets {
    pub seed: Vec<u8>,
    pub pass: Vec<u8>,
    pub primes: Vec<Vec<u8>>,
    pub dir: std::path::PathBuf,
}

impl Secrets {
    pub fn needles(&self) -> Needles {
        Needles::new(&[
            ("the seed", &self.seed),
            ("the passphrase", &self.pass),
            ("p", &self.primes[0]),
            ("q", &self.primes[1]),
        ])
    }

    pub fn path(&self, name: &str) -> String {
        self.dir.join(name).to_str().unwrap().to_owned()
    }
}

/// Writes a fresh seed and passphrase into `dir` and learns, with the
/// host of `tests/c/inflight.c` (compiled here and returned), the primes
/// of the RSA-`bits` key the seed gives.
pub fn secrets(dir: &Path, bits: &str) -> (std::path::PathBuf, Secrets) {
    use std::io::Read;
    let src = super::manifest_dir().join("tests/c/inflight.c");
    let exe = super::compile_c("inflight-frames", &[&src], &["-pthread", "-Wl,-z,now"]);
    std::fs::create_dir_all(dir).unwrap();
    let mut random = [0u8; 64];
    std::fs::File::open("/dev/urandom")
        .unwrap()
        .read_exact(&mut random)
        .unwrap();
    let (seed, pass) = random.split_at(32);
    std::fs::write(dir.join("seed"), seed).unwrap();
    std::fs::write(dir.join("pass"), pass).unwrap();
    let learned = dir.join("secrets");
    super::run_ok(
        &exe,
        &[
            "learn",
            dir.join("seed").to_str().unwrap(),
            learned.to_str().unwrap(),
            bits,
        ],
    );
    let raw = std::fs::read(&learned).unwrap();
    let mut primes = Vec::new();
    let mut at = 0;
    while at + 4 <= raw.len() && primes.len() < 2 {
        let n = u32::from_ne_bytes(raw[at..at + 4].try_into().unwrap()) as usize;
        primes.push(raw[at + 4..at + 4 + n].to_vec());
        at += 4 + n;
    }
    std::fs::remove_file(&learned).unwrap();
    let secrets = Secrets {
        seed: seed.to_vec(),
        pass: pass.to_vec(),
        primes,
        dir: dir.to_path_buf(),
    };
    (exe, secrets)
}

/// Runs `exe args` (with `env`) under the trace through the regions
/// `names`, with the needles of `secrets`, and judges it ([`judge`]);
/// skips, loudly, where ptrace is refused.
pub fn run_and_judge(
    exe: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    names: &[&str],
    secrets: &Secrets,
    control: &str,
) {
    match run(exe, args, env, names.len(), &secrets.needles()) {
        Ok(regions) => {
            let _ = std::fs::remove_dir_all(&secrets.dir);
            judge(names, &regions, control);
        }
        Err(why) => super::skip("ptrace", &why),
    }
}
