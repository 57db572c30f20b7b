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

/// Starts `exe args` (with `env` added) traced from its exec
/// (`PTRACE_TRACEME`), stopped there with `PTRACE_O_TRACESYSGOOD`,
/// `PTRACE_O_EXITKILL` and `options` set, in a process group of its own
/// with `own_group`. `Err` where ptrace is refused.
fn spawn_traced(
    exe: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    options: libc::c_int,
    own_group: bool,
) -> Result<(std::process::Child, i32), String> {
    let mut cmd = std::process::Command::new(exe);
    cmd.args(args).envs(env.iter().copied());
    if own_group {
        cmd.process_group(0);
    }
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
    let child = cmd
        .spawn()
        .map_err(|e| format!("PTRACE_TRACEME refused: {e}"))?;
    let pid = child.id() as i32;
    match wait(pid) {
        Stop::Step => {}
        _ => return Err("the traced program did not stop at exec".into()),
    }
    let options = libc::PTRACE_O_TRACESYSGOOD | libc::PTRACE_O_EXITKILL | options;
    // SAFETY: options on our own stopped tracee.
    let r = unsafe { libc::ptrace(libc::PTRACE_SETOPTIONS, pid, 0usize, options as usize) };
    assert_eq!(r, 0, "PTRACE_SETOPTIONS");
    Ok((child, pid))
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
    let (mut child, pid) = spawn_traced(exe, args, env, 0, false)?;
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
        let (_, rip, found) = needles_in_registers(pid, needles, &mut xsave);
        let r = &mut out[region - 1];
        r.stepped += 1;
        if r.stepped % 100_000 == 0 && std::env::var_os("PRIMEFORGE_TRACE_DEBUG").is_some() {
            eprintln!(
                "DEBUG region {region} stepped {} at {}",
                r.stepped,
                place(pid, rip)
            );
        }
        if !found.is_empty() {
            r.hit_count += 1;
            if r.hits.len() < 6 {
                r.hits
                    .push(format!("at {}: {}", place(pid, rip), found.join(", ")));
            }
        }
        if in_syscall {
            resume(libc::PTRACE_SYSCALL, pid, std::mem::take(&mut pending));
            continue;
        }
        // SAFETY: reads a word of the tracee's code.
        let insn = unsafe { libc::ptrace(libc::PTRACE_PEEKTEXT, pid, rip as usize, 0) };
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
    /// d, dP, dQ and qInv.
    pub private: Vec<Vec<u8>>,
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
    let mut parts = Vec::new();
    let mut at = 0;
    while at + 4 <= raw.len() {
        let n = u32::from_ne_bytes(raw[at..at + 4].try_into().unwrap()) as usize;
        parts.push(raw[at + 4..at + 4 + n].to_vec());
        at += 4 + n;
    }
    assert_eq!(parts.len(), 6, "the host wrote p, q, d, dP, dQ and qInv");
    let private = parts.split_off(2);
    std::fs::remove_file(&learned).unwrap();
    let secrets = Secrets {
        seed: seed.to_vec(),
        pass: pass.to_vec(),
        primes: parts,
        private,
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

/// What [`syscall_stops`] saw.
pub struct SyscallReport {
    /// System-call stops (entries and exits) whose registers were read.
    pub stops: u64,
    /// Per thread name, how many stops.
    pub per_thread: HashMap<String, u64>,
    /// Per system-call number, how many stops.
    pub per_call: HashMap<u64, u64>,
    /// Each distinct stop where a register held a needle (the thread's
    /// name, the system call, where it was made, which registers held
    /// what), with how many times it was seen.
    pub hits: Vec<(String, u64)>,
}

/// Reads the general registers and the XSAVE area of a stopped tracee and
/// lists which needle each register holding one holds ("p in zmm17", each
/// once); with the system call number (orig_rax) and rip.
fn needles_in_registers(tid: i32, needles: &Needles, xsave: &mut [u8]) -> (u64, u64, Vec<String>) {
    // SAFETY: reads the registers of our stopped tracee into buffers of
    // the kernel's layout and size.
    let (regs, xlen) = unsafe {
        let mut regs: libc::user_regs_struct = std::mem::zeroed();
        assert_eq!(
            libc::ptrace(libc::PTRACE_GETREGS, tid, 0usize, &mut regs),
            0,
            "PTRACE_GETREGS"
        );
        let mut iov = libc::iovec {
            iov_base: xsave.as_mut_ptr().cast(),
            iov_len: xsave.len(),
        };
        assert_eq!(
            libc::ptrace(libc::PTRACE_GETREGSET, tid, 0x202usize, &mut iov),
            0,
            "PTRACE_GETREGSET NT_X86_XSTATE"
        );
        (regs, iov.iov_len)
    };
    // SAFETY: user_regs_struct is 27 u64 fields.
    let words: [u64; 27] = unsafe { std::mem::transmute(regs) };
    let mut found: Vec<String> = words
        .iter()
        .enumerate()
        .filter_map(|(i, w)| needles.0.get(w).map(|n| format!("{n} in {}", GPR_NAMES[i])))
        .collect();
    found.extend(
        xsave[..xlen]
            .chunks_exact(8)
            .enumerate()
            .filter_map(|(i, c)| {
                needles
                    .0
                    .get(&u64::from_le_bytes(c.try_into().unwrap()))
                    .map(|n| format!("{n} in {}", xsave_name(i * 8)))
            }),
    );
    let mut seen = HashSet::new();
    found.retain(|f| seen.insert(f.clone()));
    (regs.orig_rax, regs.rip, found)
}

/// Runs `exe args` (with `env`) and stops every thread it has or creates
/// (`PTRACE_O_TRACECLONE`) at the entry and the exit of every system call,
/// reading all its registers there: a thread waiting in the kernel (a
/// futex, a park, a read) is what a core dump, a debugger or a
/// `PTRACE_GETREGSET` from another process sees at leisure. `Err` where
/// ptrace is refused; a program that fails fails the test.
pub fn syscall_stops(
    exe: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    needles: &Needles,
) -> Result<SyscallReport, String> {
    // In a process group of its own: the waits below take only its
    // threads' stops, not those of another test's tracee or child.
    let (mut child, pid) = spawn_traced(exe, args, env, libc::PTRACE_O_TRACECLONE, true)?;
    resume(libc::PTRACE_SYSCALL, pid, 0);
    let mut report = SyscallReport {
        stops: 0,
        per_thread: HashMap::new(),
        per_call: HashMap::new(),
        hits: Vec::new(),
    };
    let mut known: HashSet<i32> = HashSet::from([pid]);
    let mut xsave = vec![0u8; 16384];
    loop {
        let mut st = 0;
        // SAFETY: waits for any traced thread of the child's process
        // group (its pid).
        let tid = unsafe { libc::waitpid(-pid, &mut st, libc::__WALL) };
        assert!(tid > 0, "waitpid: {}", std::io::Error::last_os_error());
        if libc::WIFEXITED(st) || libc::WIFSIGNALED(st) {
            known.remove(&tid);
            if tid == pid {
                let ok = child.wait().map_or(true, |s| s.success());
                assert!(
                    libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0 && ok,
                    "the traced program ended with wait status {st:#x}"
                );
                return Ok(report);
            }
            continue;
        }
        let sig = libc::WSTOPSIG(st);
        let mut deliver = 0;
        if known.insert(tid) && sig == libc::SIGSTOP {
            // A new thread's first stop.
        } else if sig == libc::SIGTRAP | 0x80 {
            report.stops += 1;
            let name = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
                .unwrap_or_default()
                .trim()
                .to_string();
            let (nr, rip, found) = needles_in_registers(tid, needles, &mut xsave);
            if !found.is_empty() {
                let hit = format!(
                    "{name} at system call {nr} from {}: {}",
                    place(pid, rip),
                    found.join(", ")
                );
                match report.hits.iter_mut().find(|(h, _)| *h == hit) {
                    Some((_, n)) => *n += 1,
                    None => {
                        if std::env::var_os("PRIMEFORGE_TRACE_DEBUG").is_some() {
                            eprintln!("DEBUG {hit}\n{}", return_addresses(pid, tid));
                        }
                        report.hits.push((hit, 1));
                    }
                }
            }
            *report.per_thread.entry(name).or_default() += 1;
            *report.per_call.entry(nr).or_default() += 1;
        } else if sig != libc::SIGTRAP {
            // A signal for the program (a clone event is a plain SIGTRAP
            // stop with the event in the high bits).
            deliver = sig;
        }
        // SAFETY: resumes our own stopped tracee; a thread that vanished
        // meanwhile (killed by an exit_group) reports ESRCH, which is fine.
        unsafe { libc::ptrace(libc::PTRACE_SYSCALL, tid, 0usize, deliver as usize) };
    }
}

/// With `PRIMEFORGE_TRACE_DEBUG`: the words on a stopped thread's stack
/// (its first 32 KiB from rsp) that point into a mapped file's code, as
/// file+offset — a rough backtrace (stale words included). The offsets
/// are file offsets: for `addr2line`, add the code segment's virtual
/// address minus its file offset (`readelf -l`).
fn return_addresses(pid: i32, tid: i32) -> String {
    // SAFETY: reads the registers of our stopped tracee.
    let rsp = unsafe {
        let mut regs: libc::user_regs_struct = std::mem::zeroed();
        libc::ptrace(libc::PTRACE_GETREGS, tid, 0usize, &mut regs);
        regs.rsp
    };
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    let code: Vec<(u64, u64)> = maps
        .lines()
        .filter(|l| l.split_whitespace().nth(1).is_some_and(|p| p.contains('x')))
        .map(|l| {
            let (lo, hi) = l
                .split_whitespace()
                .next()
                .unwrap()
                .split_once('-')
                .unwrap();
            (
                u64::from_str_radix(lo, 16).unwrap(),
                u64::from_str_radix(hi, 16).unwrap(),
            )
        })
        .collect();
    let mut out = String::new();
    for i in 0..4096u64 {
        // SAFETY: reads a word of the tracee's stack; errors end the scan.
        let w = unsafe {
            *libc::__errno_location() = 0;
            let w = libc::ptrace(libc::PTRACE_PEEKDATA, tid, (rsp + 8 * i) as usize, 0);
            if w == -1 && *libc::__errno_location() != 0 {
                break;
            }
            w as u64
        };
        if code.iter().any(|&(lo, hi)| (lo..hi).contains(&w)) {
            out += &format!("  {}\n", place(pid, w));
        }
    }
    out
}
