//! Platform-specific calls live in one place each, behind `cfg` gates, so
//! that the crate builds on systems other than Linux: memory advice and
//! allocator queries only in `src/secure/os.rs`, the eventfd only in
//! `src/job/notify.rs`, thread-stack queries only in `src/secure/stack.rs`.

mod common;

use std::path::Path;

fn sources(dir: &Path, out: &mut Vec<(String, String)>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let rel = p
                .strip_prefix(common::manifest_dir())
                .unwrap()
                .display()
                .to_string();
            out.push((rel, std::fs::read_to_string(&p).unwrap()));
        }
    }
}

#[test]
fn platform_calls_stay_in_their_modules() {
    let mut files = Vec::new();
    sources(&common::manifest_dir().join("src"), &mut files);
    let rules: [(&str, &str); 8] = [
        ("libc::madvise", "src/secure/os.rs"),
        ("libc::MADV_", "src/secure/os.rs"),
        ("libc::minherit", "src/secure/os.rs"),
        ("libc::malloc_usable_size", "src/secure/os.rs"),
        ("libc::malloc_size", "src/secure/os.rs"),
        ("libc::MAP_NORESERVE", "src/secure/os.rs"),
        ("libc::eventfd", "src/job/notify.rs"),
        ("libc::pthread_getattr_np", "src/secure/stack.rs"),
    ];
    let mut wrong = Vec::new();
    for (file, text) in &files {
        for (i, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for (call, home) in rules {
                if line.contains(call) && file != home {
                    wrong.push(format!("{file}:{}: {call} (belongs in {home})", i + 1));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// In `src/secure/os.rs` every Linux-only name sits on a line right after
/// a `cfg` that selects Linux or Android.
#[test]
fn linux_only_names_are_gated() {
    let text = std::fs::read_to_string(common::manifest_dir().join("src/secure/os.rs")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut checked = 0;
    for (i, line) in lines.iter().enumerate() {
        if line.trim_start().starts_with("//") {
            continue;
        }
        if [
            "MADV_WIPEONFORK",
            "MADV_DONTFORK",
            "MADV_DONTDUMP",
            "MADV_KEEPONFORK",
            "MADV_DODUMP",
        ]
        .iter()
        .any(|n| line.contains(&format!("libc::{n}")))
        {
            let gate = lines[..i]
                .iter()
                .rev()
                .find(|l| l.trim_start().starts_with("#[cfg"))
                .expect("a cfg above");
            assert!(
                gate.contains("target_os = \"linux\"") && !gate.contains("not("),
                "line {}: {line} under {gate}",
                i + 1
            );
            checked += 1;
        }
    }
    assert!(checked >= 5);
}
