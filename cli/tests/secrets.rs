//! Where a passphrase travels in the tool: after `--passout` has been read
//! and the key is being generated, the process's memory (a core dump taken
//! then) holds the passphrase nowhere but in the secure buffer, which core
//! dumps leave out, and — for `env:` — the environment block the process
//! started with. Copies in freed heap (an `OsString` of the variable) or in
//! the standard library's buffer of standard input (which reads 8 KiB at a
//! time and keeps them for the life of the process) fail it.

mod common;
#[path = "../../tests/common/cores.rs"]
mod cores;

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{bin, dir, s};

/// The passphrase: three disjoint 16-byte windows, and long (a freed
/// block of its size is not soon reused by the key generation's
/// allocations, which would hide a copy).
const PASS: &str = "pf-core-passphrase Vx7Q 2f9c1e0b a5d3 TlqZ w8Kd J0ms 4RgH \
    correct horse battery staple, 9 lives, 12 moons; qwfp-arst-zxcv Ostrava \
    Kyiv Lima Quito 3.14159 2.71828 1.41421 ~ all the pleasant rumours of \
    the wide and quiet sea: Yt6 Hb0 Nc1 Mx8 Rp5 Lq2 Wz3 Kv4 Sj9 Fd7 Ga0 Eo1.";
const WINDOW: usize = 16;

/// How often each of three windows of the passphrase (its start, middle
/// and end) occurs in `hay`: the largest of the three counts (a freed
/// copy may have lost its start to the allocator's list pointers).
fn copies(hay: &[u8]) -> usize {
    let p = PASS.as_bytes();
    [0, p.len() / 2 - WINDOW / 2, p.len() - WINDOW]
        .iter()
        .map(|&at| {
            let w = &p[at..at + WINDOW];
            hay.windows(WINDOW).filter(|h| *h == w).count()
        })
        .max()
        .unwrap()
}

/// CPU time of process `pid` so far, in clock ticks (utime + stime).
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command's closing parenthesis: state is field 3,
    // utime and stime fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// The tool, run in `d` by `sh` with core files as large as the hard limit
/// allows (none where it is 0: the tests then skip loudly), after the
/// shell commands `pre`; its arguments are the Command's.
fn with_cores(d: &Path, pre: &str) -> Command {
    let mut cmd = Command::new("sh");
    cmd.current_dir(d)
        .arg("-c")
        .arg(format!(
            "ulimit -c unlimited 2>/dev/null || ulimit -c \"$(ulimit -H -c)\"; {pre} exec \"$@\""
        ))
        .arg("sh")
        .arg(bin().get_program());
    cmd
}

/// Runs `primeforge rsa 8192 --encrypt --passout SOURCE` in `d` with core
/// files allowed, aborts it (SIGABRT) once it has spent 0.1 s of CPU on
/// the key — long after the passphrase was read — and returns the core.
/// `None` when the kernel wrote none.
fn core_while_generating(d: &Path, source: &str, stdin: Stdio, env: bool) -> Option<Vec<u8>> {
    // Descriptor 3 carries the passphrase file for fd:3.
    let mut cmd = with_cores(d, "exec 3< pass.txt;");
    cmd.args([
        "rsa",
        "8192",
        "--threads",
        "1",
        "--encrypt",
        "--passout",
        source,
    ])
    .args(["--out", "key.pem"])
    .stdin(stdin)
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    if env {
        cmd.env("PF_CORE_PASS", PASS);
    }
    let mut child = cmd.spawn().unwrap();
    let pid = child.id();
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            panic!("{source}: the tool ended ({status}) before it was aborted: {err}");
        }
        if cpu_ticks(pid).unwrap_or(0) >= 10 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "{source}: no CPU time after two minutes"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(
        !d.join("key.pem").exists(),
        "{source}: the key was written before the abort"
    );
    // From a descriptor, the first line is all that was read.
    let fd = match source {
        "stdin" => Some(0),
        "fd:3" => Some(3),
        _ => None,
    };
    if let Some(fd) = fd {
        let info = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}")).unwrap();
        let pos = info
            .lines()
            .find_map(|l| l.strip_prefix("pos:"))
            .unwrap()
            .trim();
        assert_eq!(
            pos,
            (PASS.len() + 1).to_string(),
            "{source}: read past the first line"
        );
    }
    // SAFETY: kill only sends a signal to our own child.
    unsafe { libc::kill(pid as i32, libc::SIGABRT) };
    let status = child.wait().unwrap();
    assert!(!status.success(), "{source}: the tool survived SIGABRT");
    core_in(d)
}

/// The core file the kernel wrote in `d`, if it wrote one.
fn core_in(d: &Path) -> Option<Vec<u8>> {
    std::fs::read_dir(d)
        .unwrap()
        .filter_map(|e| e.ok())
        .find(|e| e.file_name().to_string_lossy().starts_with("core"))
        .map(|e| std::fs::read(e.path()).unwrap())
}

#[test]
fn a_passphrase_leaves_no_copy_behind_in_the_process() {
    if let Some(why) = cores::cores_forbidden() {
        common::skip("cores", &why);
        return;
    }
    // (source, standard input from pass.txt, the variable set, copies
    // allowed: the environment block holds env:'s own).
    let cases = [
        ("stdin", true, false, 0),
        ("env:PF_CORE_PASS", false, true, 1),
        ("file:pass.txt", false, false, 0),
        ("fd:3", false, false, 0),
    ];
    for (source, from_stdin, env, allowed) in cases {
        let d = dir(&format!(
            "core-pass-{}",
            &source[..source.find(':').unwrap_or(source.len())]
        ));
        // What follows the first line must not be read either.
        std::fs::write(d.join("pass.txt"), format!("{PASS}\nsecond line\n")).unwrap();
        let stdin = if from_stdin {
            Stdio::from(std::fs::File::open(d.join("pass.txt")).unwrap())
        } else {
            Stdio::null()
        };
        let Some(core) = core_while_generating(&d, source, stdin, env) else {
            common::skip(
                "cores",
                &format!("{source}: the kernel wrote no core file (RLIMIT_CORE or policy)"),
            );
            return;
        };
        // The control: the core is the tool's memory, and the scan finds
        // what is in it (the key's output path, an argument).
        assert!(
            core.windows(7).any(|w| w == b"key.pem"),
            "{source}: the core does not hold the tool's arguments: the scan is broken"
        );
        assert_eq!(
            copies(&core),
            allowed,
            "{source}: the core holds the passphrase {} time(s) ({} allowed), in {}",
            copies(&core),
            allowed,
            s(&d)
        );
    }
}

/// Bytes not yet read from the pipe whose end `fd` is.
fn unread(fd: i32) -> i32 {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int, n.
    assert_eq!(unsafe { libc::ioctl(fd, libc::FIONREAD, &mut n) }, 0);
    n
}

/// A private key read from standard input (`check -`) goes straight into
/// the secure buffer. Through a pipe a read may return less than asked:
/// here 60 000 bytes of text before the key, so the tool's next request is
/// shorter than the standard library's 8 KiB `Stdin` buffer, which then
/// would read the key into its own heap block for good. The tool is
/// aborted while it waits for the rest of the input, the key's text read.
#[test]
fn a_key_read_from_standard_input_leaves_no_copy_behind() {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    if let Some(why) = cores::cores_forbidden() {
        common::skip("cores", &why);
        return;
    }
    let d = dir("core-key-stdin");
    common::ok(&["rsa", "2048", "--out", s(&d.join("key.pem"))]);
    let pem = std::fs::read(d.join("key.pem")).unwrap();
    // Windows of the key's base64 text, from its middle lines.
    let windows: Vec<&[u8]> = [pem.len() / 3, pem.len() / 2, 2 * pem.len() / 3]
        .iter()
        .map(|&at| &pem[at..at + 24])
        .collect();
    let mut child = with_cores(&d, "")
        .args(["check", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut input = child.stdin.take().unwrap();
    let wait_read = |what: &str, input: &std::process::ChildStdin| {
        let start = Instant::now();
        while unread(input.as_raw_fd()) > 0 {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "the tool did not read {what}"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        // The read has returned; let the tool ask for more.
        std::thread::sleep(Duration::from_millis(100));
    };
    input.write_all(&vec![b'#'; 60_000]).unwrap();
    wait_read("the leading text", &input);
    input.write_all(&pem).unwrap();
    wait_read("the key", &input);
    // SAFETY: kill only sends a signal to our own child, which waits for
    // the end of its input.
    unsafe { libc::kill(pid as i32, libc::SIGABRT) };
    let status = child.wait().unwrap();
    drop(input);
    assert!(!status.success(), "the tool survived SIGABRT");
    let Some(core) = core_in(&d) else {
        common::skip(
            "cores",
            "the kernel wrote no core file (RLIMIT_CORE or policy)",
        );
        return;
    };
    // The control: the core is the tool's memory (its arguments are in).
    assert!(
        core.windows(6).any(|w| w == b"check\0"),
        "the core does not hold the tool's arguments: the scan is broken"
    );
    for w in windows {
        assert!(
            !core.windows(w.len()).any(|h| h == w),
            "the core holds the key's text {:?}",
            String::from_utf8_lossy(w)
        );
    }
}
