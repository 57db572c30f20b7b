//! `pf-bench`: primeforge's reference benchmark, with OpenSSL's libcrypto
//! and nettle's libhogweed measured in the same run, in process.
//!
//!     cargo run --release --bin pf-bench -- [--quick|--full] [options]
//!
//! Every sample uses a fixed seed (sample i of a size: seed [i; 32] with
//! the size mixed in), so every thread count does exactly the same work;
//! the output states the seeds. Peers run single-threaded, as their users
//! run them, and are loaded with dlopen: a missing library is skipped with
//! a message.

#![deny(clippy::undocumented_unsafe_blocks)]

use std::ffi::{c_char, c_int, c_uint, c_void, CString};
use std::fmt::Write as _;
use std::time::Instant;

use clap::Parser;

use primeforge::prime::{Options, Stats};

/// primeforge benchmark: RSA and DH generation by size and thread count,
/// beside OpenSSL (libcrypto, EVP_PKEY) and nettle (rsa_generate_keypair),
/// with Markdown tables on stdout and in a results file, and SVG plots.
#[derive(Parser)]
#[command(name = "pf-bench", version)]
struct Cli {
    /// RSA modulus sizes.
    #[arg(long, value_delimiter = ',', default_values_t = [512u32, 1024, 2048, 3072, 4096])]
    rsa: Vec<u32>,
    /// DH prime sizes.
    #[arg(long, value_delimiter = ',', default_values_t = [256u32, 512, 1024, 2048])]
    dh: Vec<u32>,
    /// RSA modulus sizes also run with provable primes (`PF_RSA_PROVABLE`,
    /// as nettle makes its primes), in their own table against the same
    /// peers. None by default.
    #[arg(long, value_delimiter = ',')]
    rsa_provable: Vec<u32>,
    /// Thread counts timed (wall-clock figures are meaningful up to the
    /// machine's core count).
    #[arg(long, value_delimiter = ',', default_values_t = [1u32, 2])]
    threads: Vec<u32>,
    /// Extra thread counts run for the work counters only (waste at many
    /// threads; their wall time on a small machine means nothing).
    #[arg(long, value_delimiter = ',', default_values_t = [4u32, 8, 16])]
    work_threads: Vec<u32>,
    /// Multiply the default sample counts.
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// The seed-sized series: RSA to 8192 and DH to 4096 bits, 100 samples
    /// (hours to days on 2 cores).
    #[arg(long)]
    full: bool,
    /// Skip the peers.
    #[arg(long)]
    no_peers: bool,
    /// Skip the machine reference: by default every sample also runs two
    /// one-thread generations of its seed at once on two OS threads (the
    /// same work with nothing shared), whose thread-seconds show how far
    /// this machine itself lets two busy threads scale.
    #[arg(long)]
    no_reference: bool,
    /// Results file (Markdown).
    #[arg(long, default_value = "target/pf-bench/results.md")]
    out: String,
    /// Directory for the SVG plots.
    #[arg(long, default_value = "target/pf-bench")]
    svg_dir: String,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Rsa,
    Dh,
    RsaProvable,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Rsa => "RSA",
            Kind::Dh => "DH",
            Kind::RsaProvable => "RSA-provable",
        }
    }
}

/// Default samples per size: enough for a mean, finishing in minutes.
fn default_samples(kind: Kind, bits: u32) -> usize {
    match (kind, bits) {
        (Kind::Rsa | Kind::RsaProvable, 0..=512) => 60,
        (Kind::Rsa | Kind::RsaProvable, 513..=1024) => 40,
        (Kind::Rsa | Kind::RsaProvable, 1025..=2048) => 20,
        (Kind::Rsa | Kind::RsaProvable, 2049..=3072) => 12,
        (Kind::Rsa | Kind::RsaProvable, 2049..=4096) => 6,
        (Kind::Rsa | Kind::RsaProvable, _) => 2,
        (Kind::Dh, 0..=256) => 40,
        (Kind::Dh, 257..=512) => 20,
        (Kind::Dh, 513..=1024) => 10,
        (Kind::Dh, 1025..=2048) => 3,
        (Kind::Dh, _) => 1,
    }
}

fn seed(kind: Kind, bits: u32, i: usize) -> [u8; 32] {
    let mut s = [i as u8; 32];
    s[0] = kind as u8;
    s[1..5].copy_from_slice(&bits.to_le_bytes());
    s[5..9].copy_from_slice(&(i as u32).to_le_bytes());
    s
}

// Shared with the timing examples.
#[path = "../../examples/common/timing.rs"]
#[allow(dead_code)]
mod timing;
use timing::{cpu_seconds, pair_seconds};

#[derive(Default, Clone)]
struct Series {
    wall: Vec<f64>,
    cpu: f64,
    work: Stats,
}

impl Series {
    fn n(&self) -> f64 {
        self.wall.len().max(1) as f64
    }
    fn mean(&self) -> f64 {
        self.wall.iter().sum::<f64>() / self.n()
    }
    fn median(&self) -> f64 {
        let mut w = self.wall.clone();
        w.sort_by(f64::total_cmp);
        w.get(w.len() / 2).copied().unwrap_or(f64::NAN)
    }
}

fn ours(kind: Kind, bits: u32, threads: u32, s: &[u8; 32]) -> Stats {
    let mut o = Options {
        threads,
        seed: Some(s),
        progress: None,
        ..Default::default()
    };
    match kind {
        Kind::Rsa | Kind::RsaProvable => {
            o.rsa_provable = kind == Kind::RsaProvable;
            primeforge::rsa::generate(bits, 65537, 2, &mut o)
                .expect("rsa")
                .1
        }
        Kind::Dh => primeforge::dh::generate(bits, 2, 0, &mut o).expect("dh").1,
    }
}

// ---- peers, loaded at run time ----

struct Lib(*mut c_void);

impl Lib {
    fn open(names: &[&str]) -> Option<Lib> {
        for n in names {
            let c = CString::new(*n).unwrap();
            // SAFETY: dlopen with a valid C string.
            let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
            if !h.is_null() {
                return Some(Lib(h));
            }
        }
        None
    }
    fn sym<T: Copy>(&self, name: &str) -> Option<T> {
        let c = CString::new(name).unwrap();
        // SAFETY: dlsym on a live handle; the caller names the right type.
        let p = unsafe { libc::dlsym(self.0, c.as_ptr()) };
        if p.is_null() {
            None
        } else {
            assert_eq!(std::mem::size_of::<T>(), std::mem::size_of::<*mut c_void>());
            // SAFETY: T is a function pointer type of the symbol's (the
            // caller's contract), of a pointer's size (asserted).
            Some(unsafe { std::mem::transmute_copy::<*mut c_void, T>(&p) })
        }
    }
}

type NewFromName = unsafe extern "C" fn(*mut c_void, *const c_char, *const c_char) -> *mut c_void;
type CtxFn = unsafe extern "C" fn(*mut c_void) -> c_int;
type CtxInt = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;
type Generate = unsafe extern "C" fn(*mut c_void, *mut *mut c_void) -> c_int;
type Free = unsafe extern "C" fn(*mut c_void);

struct OpenSsl {
    _lib: Lib,
    version: String,
    new_from_name: NewFromName,
    keygen_init: CtxFn,
    paramgen_init: CtxFn,
    rsa_bits: CtxInt,
    dh_len: CtxInt,
    dh_gen: CtxInt,
    generate: Generate,
    pkey_free: Free,
    ctx_free: Free,
}

impl OpenSsl {
    fn load() -> Option<OpenSsl> {
        let lib = Lib::open(&["libcrypto.so.3", "libcrypto.so"])?;
        type VersionFn = unsafe extern "C" fn(c_int) -> *const c_char;
        let version: VersionFn = lib.sym("OpenSSL_version")?;
        // SAFETY: OpenSSL_version(0) returns a static string.
        let version = unsafe { std::ffi::CStr::from_ptr(version(0)) }
            .to_string_lossy()
            .into_owned();
        Some(OpenSsl {
            new_from_name: lib.sym("EVP_PKEY_CTX_new_from_name")?,
            keygen_init: lib.sym("EVP_PKEY_keygen_init")?,
            paramgen_init: lib.sym("EVP_PKEY_paramgen_init")?,
            rsa_bits: lib.sym("EVP_PKEY_CTX_set_rsa_keygen_bits")?,
            dh_len: lib.sym("EVP_PKEY_CTX_set_dh_paramgen_prime_len")?,
            dh_gen: lib.sym("EVP_PKEY_CTX_set_dh_paramgen_generator")?,
            generate: lib.sym("EVP_PKEY_generate")?,
            pkey_free: lib.sym("EVP_PKEY_free")?,
            ctx_free: lib.sym("EVP_PKEY_CTX_free")?,
            version,
            _lib: lib,
        })
    }

    /// One generation; false if OpenSSL refused (e.g. a size it does not
    /// support).
    fn run(&self, kind: Kind, bits: u32) -> bool {
        // SAFETY: the EVP calls in their documented order; objects freed.
        unsafe {
            let name = CString::new(if kind == Kind::Dh { "DH" } else { "RSA" }).unwrap();
            let ctx = (self.new_from_name)(std::ptr::null_mut(), name.as_ptr(), std::ptr::null());
            if ctx.is_null() {
                return false;
            }
            let ok = match kind {
                Kind::Rsa | Kind::RsaProvable => {
                    (self.keygen_init)(ctx) > 0 && (self.rsa_bits)(ctx, bits as c_int) > 0
                }
                Kind::Dh => {
                    (self.paramgen_init)(ctx) > 0
                        && (self.dh_len)(ctx, bits as c_int) > 0
                        && (self.dh_gen)(ctx, 2) > 0
                }
            };
            let mut pkey = std::ptr::null_mut();
            let ok = ok && (self.generate)(ctx, &mut pkey) > 0;
            if !pkey.is_null() {
                (self.pkey_free)(pkey);
            }
            (self.ctx_free)(ctx);
            ok
        }
    }
}

type RandomFn = unsafe extern "C" fn(*mut c_void, usize, *mut u8);
type KeyInit = unsafe extern "C" fn(*mut c_void);
type NettleGen = unsafe extern "C" fn(
    *mut c_void,
    *mut c_void,
    *mut c_void,
    Option<RandomFn>,
    *mut c_void,
    *mut c_void,
    c_uint,
    c_uint,
) -> c_int;
type MpzSetUi = unsafe extern "C" fn(*mut c_void, libc::c_ulong);

struct Nettle {
    _lib: Lib,
    version: String,
    pub_init: KeyInit,
    key_init: KeyInit,
    pub_clear: KeyInit,
    key_clear: KeyInit,
    generate: NettleGen,
    mpz_set_ui: MpzSetUi,
}

unsafe extern "C" fn os_random(_ctx: *mut c_void, len: usize, dst: *mut u8) {
    let mut done = 0;
    while done < len {
        // SAFETY: dst has len writable bytes (nettle's contract).
        let r = unsafe { libc::getrandom(dst.add(done).cast(), len - done, 0) };
        if r > 0 {
            done += r as usize;
        }
    }
}

impl Nettle {
    fn load() -> Option<Nettle> {
        let lib = Lib::open(&["libhogweed.so.6", "libhogweed.so"])?;
        type VersionFn = unsafe extern "C" fn() -> c_int;
        let major: Option<VersionFn> = lib.sym("nettle_version_major");
        let minor: Option<VersionFn> = lib.sym("nettle_version_minor");
        let version = match (major, minor) {
            // SAFETY: plain getters.
            (Some(a), Some(b)) => unsafe { format!("nettle {}.{}", a(), b()) },
            _ => "nettle".into(),
        };
        Some(Nettle {
            pub_init: lib.sym("nettle_rsa_public_key_init")?,
            key_init: lib.sym("nettle_rsa_private_key_init")?,
            pub_clear: lib.sym("nettle_rsa_public_key_clear")?,
            key_clear: lib.sym("nettle_rsa_private_key_clear")?,
            generate: lib.sym("nettle_rsa_generate_keypair")?,
            // hogweed's own GMP (the system libgmp), found through its
            // dependencies.
            mpz_set_ui: lib.sym("__gmpz_set_ui")?,
            version,
            _lib: lib,
        })
    }

    fn run(&self, bits: u32) -> bool {
        // struct rsa_public_key { size_t size; mpz_t n, e; } and
        // struct rsa_private_key { size_t size; mpz_t d, p, q, a, b, c; }:
        // 40 and 104 bytes on LP64; generous, aligned storage.
        let mut public = [0u64; 16];
        let mut private = [0u64; 32];
        // SAFETY: nettle's documented init / generate / clear sequence; e
        // (the mpz after size and n, at byte 24) is set to 65537 as GnuTLS
        // does, and e_size 0 tells nettle to use it.
        unsafe {
            let p = public.as_mut_ptr().cast::<c_void>();
            let k = private.as_mut_ptr().cast::<c_void>();
            (self.pub_init)(p);
            (self.key_init)(k);
            (self.mpz_set_ui)(p.cast::<u8>().add(24).cast(), 65537);
            let ok = (self.generate)(
                p,
                k,
                std::ptr::null_mut(),
                Some(os_random),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                bits,
                0,
            ) == 1;
            (self.pub_clear)(p);
            (self.key_clear)(k);
            ok
        }
    }
}

// ---- tables and plots ----

fn fmt_s(v: f64) -> String {
    if v.is_nan() {
        "—".into()
    } else if v >= 100.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.3}")
    } else if v >= 0.01 {
        format!("{v:.4}")
    } else {
        format!("{v:.5}")
    }
}

/// The peer's time over ours: the ratio of means with its standard error
/// (independent samples), and the ratio of medians.
fn speed(ours: &Series, peer: &Series) -> String {
    let var = |s: &Series| {
        let m = s.mean();
        s.wall.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (s.n() - 1.0).max(1.0)
    };
    let r = peer.mean() / ours.mean();
    let rel =
        var(ours) / ours.n() / ours.mean().powi(2) + var(peer) / peer.n() / peer.mean().powi(2);
    format!(
        "{r:.2}× ± {:.2} ({:.2}×)",
        r * rel.sqrt(),
        peer.median() / ours.median()
    )
}

struct Results {
    kind: Kind,
    sizes: Vec<u32>,
    threads: Vec<u32>,
    /// [size][threads]
    ours: Vec<Vec<Series>>,
    /// Work counters only, [size][work_threads]
    work: Vec<Vec<Stats>>,
    work_threads: Vec<u32>,
    openssl: Vec<Option<Series>>,
    nettle: Vec<Option<Series>>,
    /// Two one-thread generations at once (wall per pair), per size.
    reference: Vec<Option<Series>>,
    samples: Vec<usize>,
}

fn table(r: &Results, md: &mut String) {
    let k = r.kind.name();
    let head = |md: &mut String, first: &str| {
        let _ = write!(md, "| {first} |");
        for b in &r.sizes {
            let _ = write!(md, " {b} |");
        }
        md.push_str("\n|---|");
        for _ in &r.sizes {
            md.push_str("---|");
        }
        md.push('\n');
    };
    let _ = writeln!(
        md,
        "\n### {k}: wall seconds per generation, mean (median)\n"
    );
    head(md, "threads");
    for (t_i, t) in r.threads.iter().enumerate() {
        let _ = write!(md, "| {t} |");
        for s in &r.ours {
            let _ = write!(
                md,
                " {} ({}) |",
                fmt_s(s[t_i].mean()),
                fmt_s(s[t_i].median())
            );
        }
        md.push('\n');
    }
    let _ = writeln!(
        md,
        "\n### {k}: thread-seconds per generation (wall × threads)\n"
    );
    head(md, "threads");
    for (t_i, t) in r.threads.iter().enumerate() {
        let _ = write!(md, "| {t} |");
        for s in &r.ours {
            let _ = write!(md, " {} |", fmt_s(s[t_i].mean() * *t as f64));
        }
        md.push('\n');
    }
    md.push_str("| spread |");
    for s in &r.ours {
        let ts: Vec<f64> = r
            .threads
            .iter()
            .enumerate()
            .map(|(i, t)| s[i].mean() * *t as f64)
            .collect();
        let lo = ts.iter().copied().fold(f64::MAX, f64::min);
        let hi = ts.iter().copied().fold(0.0, f64::max);
        let _ = write!(md, " {:.2} % |", 100.0 * (hi / lo - 1.0));
    }
    md.push('\n');
    if r.reference.iter().any(Option::is_some) {
        // Two one-thread runs at once: each pair is two generations on two
        // threads, so its wall time is the thread-seconds per generation.
        let one = r.threads.iter().position(|&t| t == 1);
        let two = r.threads.iter().position(|&t| t == 2);
        md.push_str("| machine reference: 2 × 1 thread at once |");
        for p in &r.reference {
            let _ = write!(
                md,
                " {} |",
                p.as_ref().map_or("—".into(), |p| fmt_s(p.mean()))
            );
        }
        md.push('\n');
        md.push_str("| machine's own spread (reference vs 1 thread) |");
        for (si, p) in r.reference.iter().enumerate() {
            match (p, one) {
                (Some(p), Some(o)) => {
                    let _ = write!(
                        md,
                        " {:.2} % |",
                        100.0 * (p.mean() / r.ours[si][o].mean() - 1.0)
                    );
                }
                _ => md.push_str(" — |"),
            }
        }
        md.push('\n');
        md.push_str("| engine's own share (2 threads vs reference) |");
        for (si, p) in r.reference.iter().enumerate() {
            match (p, two) {
                (Some(p), Some(t)) => {
                    let _ = write!(
                        md,
                        " {:+.2} % |",
                        100.0 * (2.0 * r.ours[si][t].mean() / p.mean() - 1.0)
                    );
                }
                _ => md.push_str(" — |"),
            }
        }
        md.push('\n');
    }
    let _ = writeln!(md, "\n### {k}: CPU seconds per generation\n");
    head(md, "threads");
    for (t_i, t) in r.threads.iter().enumerate() {
        let _ = write!(md, "| {t} |");
        for s in &r.ours {
            let _ = write!(md, " {} |", fmt_s(s[t_i].cpu / s[t_i].n()));
        }
        md.push('\n');
    }
    let _ = writeln!(
        md,
        "\n### {k}: work per generation (candidates / survivors / exponentiations), and the waste bound\n"
    );
    head(md, "threads");
    let one = |si: usize| {
        let s = &r.ours[si][0];
        (s.work.exponentiations as f64 / s.n(), s.n())
    };
    for (t_i, t) in r.threads.iter().enumerate() {
        let _ = write!(md, "| {t} |");
        for s in &r.ours {
            let n = s[t_i].n();
            let w = &s[t_i].work;
            let _ = write!(
                md,
                " {:.0} / {:.1} / {:.1} |",
                w.candidates as f64 / n,
                w.survivors as f64 / n,
                w.exponentiations as f64 / n
            );
        }
        md.push('\n');
    }
    for (wt_i, t) in r.work_threads.iter().enumerate() {
        let _ = write!(md, "| {t} (work only) |");
        for (si, w) in r.work.iter().enumerate() {
            let (base, n) = one(si);
            let e = w[wt_i].exponentiations as f64 / n;
            let bound = 1.03 * base + 15.0;
            let _ = write!(
                md,
                " {:.0} / {:.1} / {:.1} {} |",
                w[wt_i].candidates as f64 / n,
                w[wt_i].survivors as f64 / n,
                e,
                if e <= bound {
                    "✓"
                } else {
                    "✗ over 1.03×+15"
                }
            );
        }
        md.push('\n');
    }
    let _ = writeln!(
        md,
        "\n### {k}: against peers (one thread each, in process, same run)\n"
    );
    md.push_str("Faster by: the ratio of means ± its standard error (the ratio of medians).\n\n");
    md.push_str("| bits | samples | primeforge mean s | OpenSSL mean s | primeforge faster by | nettle mean s | primeforge faster by |\n|---|---|---|---|---|---|---|\n");
    for (si, b) in r.sizes.iter().enumerate() {
        let ours = &r.ours[si][0];
        let ourm = ours.mean();
        let peer = |p: &Option<Series>| match p {
            Some(s) if !s.wall.is_empty() => (fmt_s(s.mean()), speed(ours, s)),
            _ => ("—".into(), "—".into()),
        };
        let (om, or) = peer(&r.openssl[si]);
        let (nm, nr) = peer(&r.nettle[si]);
        let _ = writeln!(
            md,
            "| {b} | {} | {} | {om} | {or} | {nm} | {nr} |",
            r.samples[si],
            fmt_s(ourm)
        );
    }
}

/// A named line of (x, y) points; `true` draws it dashed.
type Line = (String, Vec<(f64, f64)>, bool);

/// A minimal line chart as SVG: series of (x, y) with optional log axes.
fn svg_chart(title: &str, xlabel: &str, ylabel: &str, series: &[Line], log_y: bool) -> String {
    let (w, h, m) = (640.0, 420.0, 60.0);
    let pts: Vec<(f64, f64)> = series
        .iter()
        .flat_map(|s| s.1.iter().copied())
        .filter(|p| p.1.is_finite() && p.1 > 0.0)
        .collect();
    let fy = |y: f64| if log_y { y.log10() } else { y };
    let (x0, x1) = pts
        .iter()
        .fold((f64::MAX, f64::MIN), |a, p| (a.0.min(p.0), a.1.max(p.0)));
    let (y0, y1) = pts.iter().fold((f64::MAX, f64::MIN), |a, p| {
        (a.0.min(fy(p.1)), a.1.max(fy(p.1)))
    });
    let (y0, y1) = if log_y {
        (y0.floor(), y1.ceil())
    } else {
        (0.0, y1 * 1.1)
    };
    let sx = |x: f64| m + (x - x0) / (x1 - x0).max(1e-9) * (w - 2.0 * m);
    let sy = |y: f64| h - m - (fy(y) - y0) / (y1 - y0).max(1e-9) * (h - 2.0 * m);
    let colors = [
        "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf",
    ];
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{}\" y=\"20\" text-anchor=\"middle\" font-size=\"15\">{title}</text>\n<line x1=\"{m}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n<line x1=\"{m}\" y1=\"{m}\" x2=\"{m}\" y2=\"{}\" stroke=\"black\"/>\n<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{xlabel}</text>\n<text x=\"15\" y=\"{}\" transform=\"rotate(-90 15 {})\" text-anchor=\"middle\">{ylabel}</text>\n",
        w / 2.0, h - m, w - m, h - m, h - m, w / 2.0, h - 15.0, h / 2.0, h / 2.0
    );
    let mut xs: Vec<f64> = pts.iter().map(|p| p.0).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    for x in xs {
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{x}</text>",
            sx(x),
            h - m + 16.0
        );
    }
    let ticks: Vec<f64> = if log_y {
        (y0 as i32..=y1 as i32).map(|e| 10f64.powi(e)).collect()
    } else {
        (0..=5).map(|i| y1 * i as f64 / 5.0).collect()
    };
    for t in ticks {
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            m - 5.0,
            sy(t) + 4.0,
            if log_y {
                format!("{t:e}")
            } else {
                format!("{t:.2}")
            }
        );
    }
    for (i, (name, data, dashed)) in series.iter().enumerate() {
        let c = colors[i % colors.len()];
        let path: Vec<String> = data
            .iter()
            .filter(|p| p.1.is_finite() && p.1 > 0.0)
            .map(|p| format!("{:.1},{:.1}", sx(p.0), sy(p.1)))
            .collect();
        let dash = if *dashed {
            " stroke-dasharray=\"6 4\""
        } else {
            ""
        };
        let _ = writeln!(
            s,
            "<polyline fill=\"none\" stroke=\"{c}\" stroke-width=\"2\"{dash} points=\"{}\"/>",
            path.join(" ")
        );
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\" fill=\"{c}\">{name}</text>",
            m + 10.0,
            m + 15.0 * i as f64
        );
    }
    s.push_str("</svg>\n");
    s
}

fn main() {
    let mut cli = Cli::parse();
    if cli.full {
        cli.rsa = vec![512, 1024, 2048, 3072, 4096, 8192];
        cli.dh = vec![256, 512, 1024, 2048, 4096];
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get() as u32);
        cli.threads = (1..=cores.max(2)).collect();
    }
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let openssl = if cli.no_peers { None } else { OpenSsl::load() };
    let nettle = if cli.no_peers { None } else { Nettle::load() };
    let mut md = String::new();
    let _ = writeln!(md, "# pf-bench results\n");
    let _ = writeln!(
        md,
        "- command: `cargo run --release --bin pf-bench -- {}`",
        std::env::args().skip(1).collect::<Vec<_>>().join(" ")
    );
    let _ = writeln!(
        md,
        "- primeforge {}; {cores} cores available",
        env!("CARGO_PKG_VERSION")
    );
    if let Ok(cpu) = std::fs::read_to_string("/proc/cpuinfo") {
        if let Some(l) = cpu.lines().find(|l| l.starts_with("model name")) {
            let _ = writeln!(md, "- CPU: {}", l.split(':').nth(1).unwrap_or("").trim());
        }
    }
    match &openssl {
        Some(o) => {
            let _ = writeln!(
                md,
                "- peer: {} (libcrypto, EVP_PKEY keygen / DH paramgen, g = 2)",
                o.version
            );
        }
        None => {
            let msg = "- peer OpenSSL skipped: libcrypto.so.3 not found";
            eprintln!("{msg}");
            let _ = writeln!(md, "{msg}");
        }
    }
    match &nettle {
        Some(n) => {
            let _ = writeln!(
                md,
                "- peer: {} (libhogweed, rsa_generate_keypair, e = 65537)",
                n.version
            );
        }
        None => {
            let msg = "- peer nettle skipped: libhogweed.so.6 not found";
            eprintln!("{msg}");
            let _ = writeln!(md, "{msg}");
        }
    }
    let _ = writeln!(
        md,
        "- seeds: sample i of KIND-BITS uses [i; 32] with byte 0 = kind (0 RSA, 1 DH, 2 RSA with provable primes), bytes 1–4 = bits (LE), bytes 5–8 = i (LE); every thread count runs the same seeds"
    );
    let mut all = Vec::new();
    for kind in [Kind::Rsa, Kind::Dh, Kind::RsaProvable] {
        let sizes = match kind {
            Kind::Rsa => cli.rsa.clone(),
            Kind::Dh => cli.dh.clone(),
            Kind::RsaProvable => cli.rsa_provable.clone(),
        };
        if sizes.is_empty() && kind == Kind::RsaProvable {
            continue;
        }
        let mut r = Results {
            kind,
            sizes: sizes.clone(),
            threads: cli.threads.clone(),
            ours: Vec::new(),
            work: Vec::new(),
            work_threads: cli.work_threads.clone(),
            openssl: Vec::new(),
            nettle: Vec::new(),
            reference: Vec::new(),
            samples: Vec::new(),
        };
        for &bits in &sizes {
            let n = if cli.full {
                100
            } else {
                ((default_samples(kind, bits) as f64 * cli.scale).round() as usize).max(1)
            };
            let mut per_t = vec![Series::default(); cli.threads.len()];
            let mut work = vec![Stats::default(); cli.work_threads.len()];
            let mut os = Series::default();
            let mut ns = Series::default();
            let mut pairs = Series::default();
            let mut os_ok = openssl.is_some();
            let ns_ok = nettle.is_some() && kind != Kind::Dh;
            for i in 0..n {
                let sd = seed(kind, bits, i);
                for (t_i, &t) in cli.threads.iter().enumerate() {
                    let c0 = cpu_seconds();
                    let start = Instant::now();
                    let st = ours(kind, bits, t, &sd);
                    per_t[t_i].wall.push(start.elapsed().as_secs_f64());
                    per_t[t_i].cpu += cpu_seconds() - c0;
                    per_t[t_i].work.add(&st);
                }
                if !cli.no_reference {
                    pairs.wall.push(pair_seconds(|| {
                        ours(kind, bits, 1, &sd);
                    }));
                }
                for (w_i, &t) in cli.work_threads.iter().enumerate() {
                    let st = ours(kind, bits, t, &sd);
                    work[w_i].add(&st);
                }
                if os_ok {
                    let o = openssl.as_ref().unwrap();
                    let start = Instant::now();
                    if o.run(kind, bits) {
                        os.wall.push(start.elapsed().as_secs_f64());
                    } else {
                        eprintln!("OpenSSL refused {}-{bits}; skipped", kind.name());
                        os_ok = false;
                    }
                }
                if ns_ok {
                    let start = Instant::now();
                    if nettle.as_ref().unwrap().run(bits) {
                        ns.wall.push(start.elapsed().as_secs_f64());
                    }
                }
            }
            eprintln!(
                "{}-{bits}: {n} samples, 1 thread mean {:.4} s",
                kind.name(),
                per_t[0].mean()
            );
            r.ours.push(per_t);
            r.work.push(work);
            r.openssl
                .push(if os.wall.is_empty() { None } else { Some(os) });
            r.nettle
                .push(if ns.wall.is_empty() { None } else { Some(ns) });
            r.reference.push(if pairs.wall.is_empty() {
                None
            } else {
                Some(pairs)
            });
            r.samples.push(n);
        }
        table(&r, &mut md);
        all.push(r);
    }
    print!("{md}");
    if let Some(dir) = std::path::Path::new(&cli.out).parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    std::fs::write(&cli.out, &md).expect("results file");
    let _ = std::fs::create_dir_all(&cli.svg_dir);
    for r in &all {
        let k = r.kind.name();
        // Speedup vs threads with the ideal line.
        let mut series: Vec<Line> = r
            .sizes
            .iter()
            .enumerate()
            .map(|(si, b)| {
                let base = r.ours[si][0].mean() * r.threads[0] as f64;
                (
                    format!("{k}-{b}"),
                    r.threads
                        .iter()
                        .enumerate()
                        .map(|(ti, t)| (*t as f64, base / r.ours[si][ti].mean()))
                        .collect(),
                    false,
                )
            })
            .collect();
        series.push((
            "ideal".into(),
            r.threads.iter().map(|t| (*t as f64, *t as f64)).collect(),
            true,
        ));
        let svg = svg_chart(
            &format!("{k}: speedup over 1 thread"),
            "threads",
            "speedup",
            &series,
            false,
        );
        std::fs::write(
            format!("{}/{}-speedup.svg", cli.svg_dir, k.to_lowercase()),
            svg,
        )
        .expect("svg");
        // Time per size against the peers (log scale).
        let mut series = vec![(
            "primeforge, 1 thread".to_string(),
            r.sizes
                .iter()
                .enumerate()
                .map(|(si, b)| (*b as f64, r.ours[si][0].mean()))
                .collect::<Vec<_>>(),
            false,
        )];
        for (name, peer) in [("OpenSSL", &r.openssl), ("nettle", &r.nettle)] {
            let pts: Vec<(f64, f64)> = r
                .sizes
                .iter()
                .zip(peer)
                .filter_map(|(b, s)| s.as_ref().map(|s| (*b as f64, s.mean())))
                .collect();
            if !pts.is_empty() {
                series.push((name.to_string(), pts, false));
            }
        }
        let svg = svg_chart(
            &format!("{k}: mean seconds per generation"),
            "bits",
            "seconds (log)",
            &series,
            true,
        );
        std::fs::write(
            format!("{}/{}-vs-peers.svg", cli.svg_dir, k.to_lowercase()),
            svg,
        )
        .expect("svg");
    }
    eprintln!("results: {}; plots in {}/", cli.out, cli.svg_dir);
}
