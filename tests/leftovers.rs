//! What a core dump or a fork() child can learn of a key generated with
//! fresh OS randomness (issue 10): the C host `tests/c/leftovers.c`
//! interposes getrandom(3), so it knows every seed the library draws.
//!
//! - Core dump: the host generates RSA-2048 on 2 threads (and, in a second
//!   run, on 1: on its own thread, on a private stack), keeps the key,
//!   and aborts. The core must hold no 16-byte window of the seed (so no
//!   window of it can be tried as a seed: knowing the seed exactly is the
//!   strongest form of "trying every 32-byte window"), and no 16-byte
//!   window of p, q, d, dP, dQ or qInv in either byte order. Run on a host
//!   linked with lazy binding and one linked with `-z now`.
//! - Fork: a child forked while a generation runs on another thread (at
//!   eleven moments, every other one a one-thread generation), or right
//!   after one finished on a joined thread, finds
//!   no window of any seed in its memory, and every use of a key or buffer
//!   made by the parent returns PF_ERR_FORKED (0 or NULL for the
//!   value-returning functions); freeing them works.
//!
//! Each scan proves itself on an inverted copy of the seed that the host
//! plants on its heap.

mod common;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Command;

const WINDOW: usize = 16;

fn host(link: &str) -> PathBuf {
    let src = common::manifest_dir().join("tests/c/leftovers.c");
    common::compile_c(
        &format!("leftovers-{link}"),
        &[&src],
        &["-rdynamic", "-pthread", &format!("-Wl,-z,{link}")],
    )
}

/// Every WINDOW-byte window of `v`, in both byte orders.
fn windows(v: &[u8], into: &mut HashSet<[u8; WINDOW]>) {
    let rev: Vec<u8> = v.iter().rev().copied().collect();
    for s in [v, &rev[..]] {
        for w in s.windows(WINDOW) {
            into.insert(w.try_into().unwrap());
        }
    }
}

fn count_hits(hay: &[u8], set: &HashSet<[u8; WINDOW]>) -> usize {
    hay.windows(WINDOW)
        .filter(|w| set.contains(<&[u8; WINDOW]>::try_from(*w).unwrap()))
        .count()
}

/// Length-prefixed components as the host wrote them.
fn components(path: &Path) -> Vec<Vec<u8>> {
    let raw = std::fs::read(path).unwrap();
    let mut out = Vec::new();
    let mut at = 0;
    while at < raw.len() {
        let len = u32::from_ne_bytes(raw[at..at + 4].try_into().unwrap()) as usize;
        out.push(raw[at + 4..at + 4 + len].to_vec());
        at += 4 + len;
    }
    out
}

/// Why core files cannot be had here, if they cannot.
fn cores_forbidden() -> Option<String> {
    let pattern = std::fs::read_to_string("/proc/sys/kernel/core_pattern").unwrap_or_default();
    let pattern = pattern.trim();
    if pattern.starts_with('|') || pattern.starts_with('/') || pattern.is_empty() {
        return Some(format!(
            "kernel.core_pattern is {pattern:?}: cores do not land in the working directory"
        ));
    }
    None
}

#[test]
fn core_dump_holds_no_seed_and_no_key_bytes() {
    if let Some(why) = cores_forbidden() {
        eprintln!("SKIPPED core_dump_holds_no_seed_and_no_key_bytes: {why}");
        return;
    }
    for (link, threads) in [("lazy", "2"), ("now", "2"), ("lazy", "1"), ("now", "1")] {
        let exe = host(link);
        let link = &format!("{link}, {threads} thread(s)");
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("core-{threads}-{}", &link[..3]));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let out = Command::new(&exe)
            .arg("core")
            .arg(&dir)
            .arg(threads)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("generated a 2048-bit key"),
            "{link}: host failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let core = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .find(|e| e.file_name().to_string_lossy().starts_with("core"))
            .map(|e| e.path());
        let Some(core) = core else {
            eprintln!("SKIPPED ({link}): the kernel wrote no core file (RLIMIT_CORE or policy)");
            continue;
        };
        let core = std::fs::read(core).unwrap();
        let seeds = std::fs::read(dir.join("seeds")).unwrap();
        assert!(seeds.len() >= 32, "{link}: no seed captured");
        let mut seed_windows = HashSet::new();
        let mut control = HashSet::new();
        for s in seeds.chunks(32) {
            windows(s, &mut seed_windows);
            let inv: Vec<u8> = s.iter().map(|b| !b).collect();
            windows(&inv, &mut control);
        }
        assert!(
            count_hits(&core, &control) > 0,
            "{link}: the planted inverted seed is not in the core: the scan is broken"
        );
        assert_eq!(
            count_hits(&core, &seed_windows),
            0,
            "{link}: the core holds seed bytes"
        );
        let names = ["p", "q", "d", "dP", "dQ", "qInv"];
        let parts = components(&dir.join("secrets"));
        assert_eq!(parts.len(), names.len());
        for (name, part) in names.iter().zip(&parts) {
            let mut set = HashSet::new();
            windows(part, &mut set);
            assert_eq!(
                count_hits(&core, &set),
                0,
                "{link}: the core holds bytes of {name}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn fork_children_find_no_seed_and_refuse_inherited_objects() {
    let exe = host("now");
    for mode in ["fork-during", "fork-after"] {
        let r = common::run(&exe, &[mode]);
        assert_eq!(
            r.code,
            Some(0),
            "{mode}: status {:?} (3 = seed bytes in a child, 4 = an inherited object \
             was not refused, 5 = the scan's control was not found)\n{}",
            r.code,
            r.stderr
        );
    }
}
