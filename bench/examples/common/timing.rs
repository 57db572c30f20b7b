//! Shared by the timing examples: CPU time and a one-line summary.

/// User + system CPU seconds of this process so far.
pub fn cpu_seconds() -> f64 {
    // SAFETY: rusage is plain integers, for which zero is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes the struct we pass.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Seconds for `f` run twice at once, on two new OS threads, from the
/// start to the later of the two returns: a machine's ceiling for two
/// independent generations. Returns only when both threads have left the
/// process (on Linux, `/proc/self/task/TID`): the kernel adds a thread's
/// last stretch of CPU to the process's clock (`getrusage`) as the thread
/// goes away, which happens after `join` returns and after a
/// `thread::scope` ends, so a pair still ending would have its CPU counted
/// in whatever is measured next.
pub fn pair_seconds(f: impl Fn() + Sync) -> f64 {
    let start = std::time::Instant::now();
    let ends = std::thread::scope(|s| {
        let run = || {
            f();
            // SAFETY: gettid has no preconditions.
            (std::time::Instant::now(), unsafe { libc::gettid() })
        };
        let (a, b) = (s.spawn(run), s.spawn(run));
        [
            a.join().expect("first of the pair"),
            b.join().expect("second of the pair"),
        ]
    });
    let t = (ends[0].0.max(ends[1].0) - start).as_secs_f64();
    // Both threads gone (at most a second: a thread's end takes
    // microseconds; where /proc is not mounted, nothing to wait on).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
    while ends
        .iter()
        .any(|(_, tid)| std::path::Path::new(&format!("/proc/self/task/{tid}")).exists())
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_micros(50));
    }
    t
}

/// Prints mean, median, sd, min and max of `times`; returns the mean.
pub fn summary(label: &str, times: &[f64]) -> f64 {
    let mut t = times.to_vec();
    t.sort_by(f64::total_cmp);
    let n = t.len() as f64;
    let mean = t.iter().sum::<f64>() / n;
    let sd = (t.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
    println!(
        "  {label:<16} mean {mean:.5} s  median {:.5} s  sd {sd:.5}  min {:.5}  max {:.5}",
        t[t.len() / 2],
        t[0],
        t[t.len() - 1]
    );
    mean
}

/// `BITS N THREADS...` from the remaining arguments.
pub fn parse_counts(args: &[String], usage: &str) -> (u32, u32, Vec<u32>) {
    let nums: Vec<u32> = args.iter().map(|a| a.parse().expect(usage)).collect();
    assert!(nums.len() >= 3, "{usage}");
    assert!(nums[1] <= 256, "at most 256 seeds");
    (nums[0], nums[1], nums[2..].to_vec())
}

/// One series: per thread count, the wall times, CPU seconds and work
/// counters of generations run for the same seeds, interleaved.
pub struct Series {
    pub threads: Vec<u32>,
    pub times: Vec<Vec<f64>>,
    cpu: Vec<f64>,
    work: Vec<(u64, u64, u64)>,
}

impl Series {
    pub fn new(threads: &[u32]) -> Series {
        Series {
            threads: threads.to_vec(),
            times: vec![Vec::new(); threads.len()],
            cpu: vec![0.0; threads.len()],
            work: vec![(0, 0, 0); threads.len()],
        }
    }

    /// Runs `generate` once per thread count with `seed`, timing each.
    pub fn run(
        &mut self,
        seed: &[u8; 32],
        mut generate: impl FnMut(&mut primeforge::prime::Options<'_>) -> primeforge::prime::Stats,
    ) {
        for (j, &t) in self.threads.iter().enumerate() {
            let mut o = primeforge::prime::Options {
                threads: t,
                seed: Some(seed),
                ..Default::default()
            };
            let start = std::time::Instant::now();
            let cpu0 = cpu_seconds();
            let st = generate(&mut o);
            self.times[j].push(start.elapsed().as_secs_f64());
            self.cpu[j] += cpu_seconds() - cpu0;
            self.work[j].0 += st.candidates;
            self.work[j].1 += st.survivors;
            self.work[j].2 += st.exponentiations;
        }
    }

    /// Prints each thread count's summary and work per item (`per`, with
    /// the names of the first two counters), then the speedups; returns
    /// the mean times.
    pub fn report(&self, per: &str, names: (&str, &str)) -> Vec<f64> {
        let mut means = Vec::new();
        for (j, &t) in self.threads.iter().enumerate() {
            means.push(summary(&format!("{t} thread(s)"), &self.times[j]));
            let (c, s, e) = self.work[j];
            let nf = self.times[j].len() as f64;
            println!(
                "  {:<16} per {per}: {} {:.0}, {} {:.1}, exponentiations {:.1}, CPU {:.5} s; busy {:.1}% of {t} thread(s); CPU per exponentiation {:.2} ms",
                "",
                names.0,
                c as f64 / nf,
                names.1,
                s as f64 / nf,
                e as f64 / nf,
                self.cpu[j] / nf,
                100.0 * self.cpu[j] / (t as f64 * self.times[j].iter().sum::<f64>()),
                1e3 * self.cpu[j] / e as f64
            );
        }
        for (j, &t) in self.threads.iter().enumerate().skip(1) {
            println!(
                "  speedup {} → {t} threads: {:.2}×",
                self.threads[0],
                means[0] / means[j]
            );
        }
        means
    }
}

/// Times one run of the `openssl` command with `args` (one thread, as
/// users run it, process start included).
pub fn time_openssl(args: &[String]) -> f64 {
    let start = std::time::Instant::now();
    let ok = std::process::Command::new("openssl")
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("openssl")
        .success();
    assert!(ok, "openssl {args:?} failed");
    start.elapsed().as_secs_f64()
}

/// Prints the OpenSSL series and its ratio to the first thread count.
pub fn report_openssl(what: &str, times: &[f64], threads: &[u32], means: &[f64]) {
    let m = summary(what, times);
    println!(
        "  primeforge ({} thread) vs {what}: {:.2}× faster",
        threads[0],
        m / means[0]
    );
}

#[cfg(test)]
mod tests {
    use super::pair_seconds;

    /// The threads this process has (Linux: `/proc/self/task`); `None`
    /// where that cannot be read.
    fn threads() -> Option<usize> {
        std::fs::read_dir("/proc/self/task").ok().map(|d| d.count())
    }

    /// [`pair_seconds`] returns only after both threads of the pair have
    /// left the process: none is left to finish ending (and have the
    /// kernel add its last stretch of CPU to the process's clock) while
    /// the next thing is measured. Neither a scope's end nor `join` waits
    /// that long.
    #[test]
    fn a_pair_is_over_when_both_threads_have_gone() {
        let Some(before) = threads() else {
            panic!("/proc/self/task cannot be read: the pair's end is not checked here");
        };
        for round in 0..2000 {
            pair_seconds(|| {
                std::hint::black_box((0..1000u64).sum::<u64>());
            });
            assert_eq!(
                threads(),
                Some(before),
                "round {round}: a thread of the pair was still ending"
            );
        }
    }
}
