//! Shared by the timing examples: CPU time and a one-line summary.

/// User + system CPU seconds of this process so far.
pub fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Prints mean, median, sd, min and max of `times`; returns the mean.
pub fn summary(label: &str, times: &[f64]) -> f64 {
    let mut t = times.to_vec();
    t.sort_by(f64::total_cmp);
    let n = t.len() as f64;
    let mean = t.iter().sum::<f64>() / n;
    let sd = (t.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
    println!(
        "  {label:<16} mean {mean:.4} s  median {:.4} s  sd {sd:.4}  min {:.4}  max {:.4}",
        t[t.len() / 2],
        t[0],
        t[t.len() - 1]
    );
    mean
}
