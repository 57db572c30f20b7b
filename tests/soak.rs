//! 1,000 small generations in a loop: resident memory must not grow
//! beyond a stated bound (no leak per call). Alone in its test binary so
//! that nothing else moves the process's RSS.

use primeforge::ffi::*;

fn rss_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = s.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4
}

#[test]
fn a_thousand_generations_do_not_grow_memory() {
    let run = |n: usize| {
        for i in 0..n {
            let mut k = std::ptr::null_mut();
            assert_eq!(
                unsafe { pf_rsa_generate(512, (i % 3) as u32, &mut k) },
                pf_status::PF_OK
            );
            let mut b = std::ptr::null_mut();
            assert_eq!(unsafe { pf_rsa_export(k, 1, &mut b) }, pf_status::PF_OK);
            unsafe { pf_buffer_free(b) };
            unsafe { pf_rsa_free(k) };
            if i % 10 == 0 {
                let mut d = std::ptr::null_mut();
                assert_eq!(
                    unsafe { pf_dh_generate(256, 2, 1, &mut d) },
                    pf_status::PF_OK
                );
                unsafe { pf_dh_free(d) };
            }
        }
    };
    run(100); // warm up: allocator arenas, thread stacks, caches
    let before = rss_kib();
    run(1000);
    let after = rss_kib();
    // Bound: 4 MiB for the whole loop (allocator fragmentation and arena
    // growth), i.e. under 4 KiB per generation; a leaked key alone would be
    // several KiB each (mmap'd secure buffers are whole pages).
    assert!(
        after <= before + 4096,
        "RSS grew from {before} KiB to {after} KiB over 1000 generations"
    );
    eprintln!("RSS {before} KiB -> {after} KiB over 1000 generations");
}
