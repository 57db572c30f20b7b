//! Secure buffers through the C ABI: guard pages, locking, dump exclusion,
//! canary, fork behaviour. Crashing checks run in a child process (this test
//! binary re-run on one ignored helper test), so a fault is observed, not
//! suffered.

use std::os::unix::process::ExitStatusExt;
use std::process::Command;

use primeforge::ffi::*;

fn new_buf(len: usize) -> *mut pf_buffer {
    let mut b = std::ptr::null_mut();
    assert_eq!(unsafe { pf_buffer_new(len, &mut b) }, pf_status::PF_OK);
    b
}

/// Runs the ignored helper test `name` in a child process with `mode`, and
/// returns the signal that ended it (None if it exited normally).
fn child_signal(name: &str, mode: &str) -> Option<i32> {
    let status = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            name,
            "--nocapture",
            "--test-threads=1",
        ])
        .env("PF_CHILD_MODE", mode)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    status.signal()
}

/// One mapping of /proc/self/smaps: (start, end, fields text).
fn smaps_entry_for(addr: usize) -> String {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let mut current: Option<(usize, usize)> = None;
    let mut fields = String::new();
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((a, b)) = first.split_once('-') {
            if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) {
                if let Some((s, e)) = current {
                    if s <= addr && addr < e {
                        return fields;
                    }
                }
                current = Some((a, b));
                fields.clear();
                continue;
            }
        }
        fields.push_str(line);
        fields.push('\n');
    }
    match current {
        Some((s, e)) if s <= addr && addr < e => fields,
        _ => panic!("address {addr:#x} not in /proc/self/smaps"),
    }
}

fn smaps_field_kb(fields: &str, name: &str) -> u64 {
    fields
        .lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{name} missing in smaps entry"))
}

#[test]
fn reading_one_byte_past_the_end_faults() {
    assert_eq!(
        child_signal("helper_overread", "overread"),
        Some(libc::SIGSEGV)
    );
    // The same child reading the last valid byte exits normally.
    assert_eq!(child_signal("helper_overread", "lastbyte"), None);
}

#[test]
#[ignore = "helper: run in a child process by reading_one_byte_past_the_end_faults"]
fn helper_overread() {
    let Ok(mode) = std::env::var("PF_CHILD_MODE") else {
        return;
    };
    for len in [1usize, 100, 4096, 5000] {
        let b = new_buf(len);
        let p = unsafe { pf_buffer_data(b) };
        let off = if mode == "overread" { len } else { len - 1 };
        let v = unsafe { p.add(off).read_volatile() };
        std::hint::black_box(v);
        unsafe { pf_buffer_free(b) };
    }
}

#[test]
fn canary_corruption_is_detected() {
    // Non-destructive check, in this process.
    let b = new_buf(48);
    unsafe {
        let p = pf_buffer_data_mut(b);
        assert_eq!(pf_buffer_check(b), pf_status::PF_OK);
        let before = p.sub(1);
        let saved = before.read_volatile();
        before.write_volatile(saved ^ 0xFF);
        assert_eq!(pf_buffer_check(b), pf_status::PF_ERR_CHECK_FAILED);
        before.write_volatile(saved);
        assert_eq!(pf_buffer_check(b), pf_status::PF_OK);
        pf_buffer_free(b);
    }
    // Freeing a corrupted buffer aborts (in a child).
    assert_eq!(
        child_signal("helper_canary", "corrupt"),
        Some(libc::SIGABRT)
    );
    assert_eq!(child_signal("helper_canary", "intact"), None);
}

#[test]
#[ignore = "helper: run in a child process by canary_corruption_is_detected"]
fn helper_canary() {
    let Ok(mode) = std::env::var("PF_CHILD_MODE") else {
        return;
    };
    let b = new_buf(48);
    if mode == "corrupt" {
        unsafe { pf_buffer_data_mut(b).sub(3).write_volatile(0x41) };
    }
    unsafe { pf_buffer_free(b) };
}

#[test]
fn locked_flag_matches_smaps_and_memory_is_not_dumpable() {
    for len in [0usize, 1, 4096, 100_000, 1 << 20] {
        let b = new_buf(len);
        let addr = unsafe { pf_buffer_data(b) } as usize;
        // For len 0 the pointer is one past the region; look just before it.
        let fields = smaps_entry_for(if len == 0 { addr - 1 } else { addr });
        let locked_kb = smaps_field_kb(&fields, "Locked:");
        let flags = fields
            .lines()
            .find(|l| l.starts_with("VmFlags:"))
            .unwrap()
            .to_owned();
        let reported = unsafe { pf_buffer_locked(b) };
        assert_eq!(
            reported,
            locked_kb > 0,
            "len {len}: pf_buffer_locked={reported}, smaps Locked: {locked_kb} kB"
        );
        assert_eq!(reported, flags.contains(" lo"), "len {len}: {flags}");
        assert!(
            flags.contains(" dd"),
            "len {len}: not MADV_DONTDUMP: {flags}"
        );
        if reported {
            let region_kb = (len + 16).div_ceil(4096) as u64 * 4;
            assert!(
                locked_kb >= region_kb,
                "len {len}: only {locked_kb} kB locked"
            );
        }
        unsafe { pf_buffer_free(b) };
    }
}

#[test]
fn fork_child_sees_no_secret_and_can_free() {
    let b = new_buf(256);
    unsafe { pf_buffer_data_mut(b).write_bytes(0xC3, 256) };
    let p = unsafe { pf_buffer_data(b) };
    // SAFETY: the child only reads memory, frees the buffer (munmap) and _exits.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        unsafe {
            let mut any_secret = false;
            for i in 0..256 {
                any_secret |= p.add(i).read_volatile() == 0xC3;
            }
            // The library says the buffer is inherited, and frees it.
            let told = pf_buffer_check(b) == pf_status::PF_ERR_FORKED
                && pf_buffer_data(b).is_null()
                && pf_buffer_len(b) == 0;
            pf_buffer_free(b);
            libc::_exit(if any_secret {
                1
            } else if !told {
                2
            } else {
                0
            });
        }
    }
    let mut status = 0;
    unsafe { libc::waitpid(pid, &mut status, 0) };
    // Exit 0: the child saw zeros (MADV_WIPEONFORK) and freed without
    // aborting. A SIGSEGV would mean MADV_DONTFORK (kernels before 4.14).
    assert!(libc::WIFEXITED(status), "child died: status {status:#x}");
    assert_eq!(
        libc::WEXITSTATUS(status),
        0,
        "1: the child saw the parent's secret; 2: it was not told PF_ERR_FORKED"
    );
    // The parent still has its bytes.
    assert_eq!(unsafe { *pf_buffer_data(b) }, 0xC3);
    unsafe { pf_buffer_free(b) };
}

#[test]
fn sizes_up_to_one_mib_and_more() {
    for len in [0usize, 1, 4095, 4096, 4097, 1 << 20, (1 << 20) + 1, 8 << 20] {
        let b = new_buf(len);
        unsafe {
            assert_eq!(pf_buffer_len(b), len);
            assert!(!pf_buffer_data(b).is_null());
            if len > 0 {
                let p = pf_buffer_data_mut(b);
                p.write(1);
                p.add(len - 1).write(2);
                assert_eq!(*pf_buffer_data(b).add(len - 1), 2);
            }
            pf_buffer_free(b);
        }
    }
}

#[test]
fn a_copy_holds_the_callers_bytes_and_leaves_them_with_the_caller() {
    for len in [0usize, 1, 31, 32, 33, 4096, 70_000] {
        let src: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
        let mut b = std::ptr::null_mut();
        assert_eq!(
            unsafe { pf_buffer_copy(src.as_ptr(), len, &mut b) },
            pf_status::PF_OK
        );
        let got = unsafe { std::slice::from_raw_parts(pf_buffer_data(b), pf_buffer_len(b)) };
        assert_eq!(got, &src[..], "{len} bytes");
        assert_eq!(unsafe { pf_buffer_check(b) }, pf_status::PF_OK);
        unsafe { pf_buffer_free(b) };
    }
    let mut b = std::ptr::null_mut();
    assert_eq!(
        unsafe { pf_buffer_copy(b"x".as_ptr(), (1 << 30) + 1, &mut b) },
        pf_status::PF_ERR_NO_MEMORY,
        "more than 1 GiB (refused before the bytes are read)"
    );
    assert!(b.is_null());
}
