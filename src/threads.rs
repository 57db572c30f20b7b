//! Private worker pools, kept between generations. primeforge never
//! touches rayon's global pool: every generation runs on a pool of its own
//! sized by the caller, so a host application that uses rayon itself keeps
//! full control of its pool.
//!
//! Starting a pool's threads, shielding their stacks and joining them
//! again costs a few hundred microseconds of CPU per call: a few per cent
//! of an RSA-2048 key on two threads, more at small sizes and high thread
//! counts. So a pool a generation is done with is not joined but parked in
//! a process-wide cache ([`lease`]), keyed by its exact thread count, for
//! the next generation that asks for as many threads; a pool left unused
//! for [`QUIET`] is joined by a reaper thread, which exits itself when no
//! pool is left. A parked pool holds nothing of the generations it ran:
//! every job its workers run ends with the part of the stack it used wiped
//! and the registers cleared (`secure::wipe_stack`), the stacks stay
//! shielded (`MADV_WIPEONFORK`, `MADV_DONTDUMP`) for the thread's whole
//! life, and GMP's blocks of the workers are in the secret arena.
//!
//! The cache never holds more threads than callers asked for at once: a
//! generation that needs a pool of a size nobody parked first joins idle
//! pools until the threads alive, its own included, fit under the most
//! ever leased at one time. Pools above [`KEEP_MAX_THREADS`] and pools of
//! callers that opt out (`Options::per_call_threads`) are joined when the
//! generation ends, as before.
//!
//! Every generation is admitted first ([`admit`]): it is given no more
//! threads than the cores the process may run on, the threads the
//! library's generations run on are counted, and a call that can run on
//! its own thread (RSA up to 4096 bits, DH below 768) is given only the
//! cores those leave free, one thread when they occupy every core
//! (unless the caller asks for its exact count). RSA up to 4096 bits on several
//! threads runs its calling thread as one of them ([`Workers::WithCaller`]).
//!
//! A `fork()` child has none of the parent's threads: a `pthread_atfork`
//! child handler empties the cache (the parked pools are forgotten, never
//! joined: their threads do not exist there), and a pool leased when the
//! process forked is forgotten when its lease ends in the child. The
//! child starts its own pools on first use.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// The largest thread count a caller may ask for.
pub(crate) const MAX_THREADS: u32 = 1024;

/// How long a parked pool waits for its next generation before it is
/// joined.
pub(crate) const QUIET: Duration = Duration::from_secs(2);

/// The largest pool kept between generations; larger ones (hosts that
/// ask for hundreds of threads) are joined when their generation ends.
pub(crate) const KEEP_MAX_THREADS: usize = 64;

/// The most threads parked at once, whatever callers asked for.
const KEEP_MAX_IDLE: usize = 256;

/// Resolves a caller's thread count: 0 means "all available cores".
pub(crate) fn resolve_threads(threads: u32) -> Result<usize> {
    match threads {
        0 => Ok(std::thread::available_parallelism().map_or(1, |n| n.get())),
        n if n > MAX_THREADS => Err(Error::InvalidArgument("threads > 1024")),
        n => Ok(n as usize),
    }
}

/// Threads the library's generations run on now: a leased pool's
/// workers, or one for a generation on its caller's thread. Reset in a
/// `fork()` child (none of the parent's generations runs there).
static RUNNING: AtomicUsize = AtomicUsize::new(0);

/// A generation's claim on the machine's cores, counted in [`RUNNING`]
/// until dropped ([`admit`]).
pub(crate) struct Admission {
    threads: usize,
    epoch: u64,
}

impl Admission {
    /// How many threads the generation runs on.
    pub(crate) fn threads(&self) -> usize {
        self.threads
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        // Admitted before this process forked: the child's count never
        // held it.
        if self.epoch == FORK_EPOCH.load(Ordering::Acquire) {
            RUNNING.fetch_sub(self.threads, Ordering::AcqRel);
        }
    }
}

/// How [`admit`] fits a generation's thread count to the machine.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Fit {
    /// The count asked for, whatever the cores (`Options::exact_threads`).
    Exact,
    /// At most the cores this process may run on ([`cores`]).
    Cores,
    /// At most the cores that the library's generations already running
    /// leave free, and at least one: for a generation that can run on its
    /// calling thread alone.
    FreeCores,
}

/// Admits a generation that asks for `threads` (0 = available cores).
///
/// A generation is given no more threads than the cores this process may
/// run on (`available_parallelism`: the affinity mask and the cgroup
/// quota): threads beyond the cores only take turns on them, and each
/// turn costs CPU that buys nothing — measured on 2 cores, an RSA-2048
/// key on 4, 8 and 16 threads cost 1.13, 1.23 and 1.38 times the CPU of
/// one thread, and the searches ran 2.6, 4.8 and 8.3 % more
/// exponentiations (first tests above the answer run while the thread
/// holding a lower candidate waited for its turn). With
/// [`Fit::FreeCores`] a generation that arrives while the library's
/// generations already running occupy cores is given only the free ones,
/// and one thread when none is free: more would only queue behind the
/// others for the same cores (measured: 8 host threads asking for
/// 2-thread RSA-2048 keys on 2 cores made 12 % fewer keys per second than
/// 2 one-thread callers; 8 one-thread callers made as many). With
/// [`Fit::Exact`] the count asked for is given. The output does not
/// depend on the thread count.
///
/// Fails with [`Error::InvalidArgument`] above [`MAX_THREADS`].
pub(crate) fn admit(threads: u32, fit: Fit) -> Result<Admission> {
    let asked = resolve_threads(threads)?;
    // A fork child must forget the generations running in the parent
    // (they do not run there), even where no pool was ever leased.
    register_fork_handler();
    let cores = cores();
    let epoch = FORK_EPOCH.load(Ordering::Acquire);
    let mut running = RUNNING.load(Ordering::Acquire);
    loop {
        let given = fitted(asked, fit, cores, running);
        match RUNNING.compare_exchange_weak(
            running,
            running + given,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => {
                return Ok(Admission {
                    threads: given,
                    epoch,
                })
            }
            Err(now) => running = now,
        }
    }
}

/// [`admit`] for a generation run with `opts`: exactly its threads when
/// it asks for that ([`Options::exact_threads`]), else at most the cores,
/// and only the free ones when it can run on its calling thread alone
/// (`here_possible`).
///
/// [`Options::exact_threads`]: crate::prime::Options::exact_threads
pub(crate) fn admit_options(
    opts: &crate::prime::Options<'_>,
    here_possible: bool,
) -> Result<Admission> {
    let fit = match (opts.exact_threads, here_possible) {
        (true, _) => Fit::Exact,
        (false, true) => Fit::FreeCores,
        (false, false) => Fit::Cores,
    };
    admit(opts.threads, fit)
}

/// The threads [`admit`] gives a generation that asks for `asked` when
/// the process may run on `cores` and the library's generations run on
/// `running` threads.
fn fitted(asked: usize, fit: Fit, cores: usize, running: usize) -> usize {
    match fit {
        Fit::Exact => asked,
        Fit::Cores => asked.min(cores),
        Fit::FreeCores => asked.min(cores.saturating_sub(running)).max(1),
    }
}

/// The cores this process may run on (`available_parallelism`, which
/// follows the affinity mask and cgroup quota), read once.
fn cores() -> usize {
    static CORES: AtomicUsize = AtomicUsize::new(0);
    match CORES.load(Ordering::Relaxed) {
        0 => {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            CORES.store(n, Ordering::Relaxed);
            n
        }
        n => n,
    }
}

/// Counts the `fork()` children this process is, down its line: a pool
/// records the value it was built at, and one built before a fork is
/// forgotten instead of joined (its threads stayed in the parent).
static FORK_EPOCH: AtomicU64 = AtomicU64::new(0);

/// A generation's pool. Every worker is a thread of our own (rayon's
/// `spawn_handler`) with every asynchronous signal blocked
/// (`secure::signals`): for its whole life the part of its stack its jobs
/// use is shielded ([`crate::secure::run_shielded`]: wiped in a fork
/// child, excluded from core dumps), its GMP blocks are in the secret
/// arena ([`crate::gmp::secret_scope`]), and before it exits it wipes its
/// stack. Dropping the pool joins every worker.
pub(crate) struct Pool {
    pool: Option<rayon::ThreadPool>,
    workers: Vec<std::thread::JoinHandle<()>>,
    epoch: u64,
}

impl std::ops::Deref for Pool {
    type Target = rayon::ThreadPool;
    fn deref(&self) -> &rayon::ThreadPool {
        self.pool.as_ref().expect("pool alive until dropped")
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        if self.epoch != FORK_EPOCH.load(Ordering::Acquire) {
            // Built before this process forked: its threads live on in the
            // parent only. Joining them here would wait for threads that
            // do not exist; the bookkeeping is left as it is.
            std::mem::forget(self.pool.take());
            std::mem::forget(std::mem::take(&mut self.workers));
            return;
        }
        // Dropping rayon's pool tells its threads to finish; each leaves
        // its main loop once idle, wipes its stack and exits.
        drop(self.pool.take());
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

impl Pool {
    fn size(&self) -> usize {
        self.workers.len()
    }
}

/// Pools parked between generations, and what is leased.
struct Cache {
    /// Parked pools with the time each was parked, oldest first.
    idle: Vec<(Pool, Instant)>,
    /// Threads of the pools leased now.
    busy: usize,
    /// The most threads leased at one time so far.
    peak: usize,
    /// The number of the reaper thread that runs, if one does, and its
    /// handle once it has started.
    reaper: Option<u64>,
    reaper_handle: Option<std::thread::JoinHandle<()>>,
    /// Numbers the reapers.
    reapers: u64,
}

impl Cache {
    fn idle_threads(&self) -> usize {
        self.idle.iter().map(|(p, _)| p.size()).sum()
    }

    /// Takes the oldest parked pools out until at most `room` threads are
    /// parked; the caller joins them after the lock is released.
    fn trim_to(&mut self, room: usize, out: &mut Vec<Pool>) {
        let mut idle = self.idle_threads();
        while idle > room && !self.idle.is_empty() {
            let (p, _) = self.idle.remove(0);
            idle -= p.size();
            out.push(p);
        }
    }
}

/// The cache behind a spin lock: held for a few list operations at most
/// (nothing is joined or built under it), and reset by the fork-child
/// handler, which a `std` mutex could not be.
struct Locked {
    lock: AtomicBool,
    cache: UnsafeCell<Cache>,
}

// SAFETY: `cache` is only reached through `with_cache`, under `lock` (or
// in the fork child's handler, where no other thread exists).
unsafe impl Sync for Locked {}

static CACHE: Locked = Locked {
    lock: AtomicBool::new(false),
    cache: UnsafeCell::new(Cache {
        idle: Vec::new(),
        busy: 0,
        peak: 0,
        reaper: None,
        reaper_handle: None,
        reapers: 0,
    }),
};

fn with_cache<T>(f: impl FnOnce(&mut Cache) -> T) -> T {
    struct Unlock;
    impl Drop for Unlock {
        fn drop(&mut self) {
            CACHE.lock.store(false, Ordering::Release);
        }
    }
    while CACHE
        .lock
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        std::thread::yield_now();
    }
    let _unlock = Unlock;
    // SAFETY: the lock is held until `_unlock` drops, after `f` returns.
    f(unsafe { &mut *CACHE.cache.get() })
}

/// The `pthread_atfork` child handler: in the child only the forking
/// thread exists, so the parked pools, the reaper and whatever another
/// thread was doing under the lock are forgotten (never joined, never
/// dropped: the list may have been mid-change), and the next generation
/// starts pools of its own.
extern "C" fn forget_in_child() {
    FORK_EPOCH.fetch_add(1, Ordering::AcqRel);
    let cache = CACHE.cache.get();
    // SAFETY: the child is single-threaded here; the fields are
    // overwritten without reading or dropping what they held.
    unsafe {
        std::ptr::write(std::ptr::addr_of_mut!((*cache).idle), Vec::new());
        std::ptr::write(std::ptr::addr_of_mut!((*cache).reaper_handle), None);
        (*cache).reaper = None;
        (*cache).busy = 0;
        (*cache).peak = 0;
    }
    RUNNING.store(0, Ordering::Release);
    CACHE.lock.store(false, Ordering::Release);
}

fn register_fork_handler() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        #[cfg(unix)]
        // SAFETY: registers a handler that only writes this module's statics.
        unsafe {
            libc::pthread_atfork(None, None, Some(forget_in_child));
        }
    });
}

/// A pool lent to one generation. When the lease ends the pool is parked
/// for the next generation that asks for as many threads, or joined (a
/// caller that opted out, a pool above [`KEEP_MAX_THREADS`], a generation
/// that panicked, a lease that began before this process forked).
pub(crate) struct Lease {
    pool: Option<Pool>,
    keep: bool,
}

impl std::ops::Deref for Lease {
    type Target = rayon::ThreadPool;
    fn deref(&self) -> &rayon::ThreadPool {
        self.pool.as_ref().expect("leased until dropped")
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let Some(pool) = self.pool.take() else {
            return;
        };
        if pool.epoch != FORK_EPOCH.load(Ordering::Acquire) {
            // Leased in the parent; this child's cache never counted it.
            drop(pool);
            return;
        }
        let n = pool.size();
        let keep = self.keep && !std::thread::panicking();
        let mut gone = Vec::new();
        let start_reaper = with_cache(|c| {
            c.busy = c.busy.saturating_sub(n);
            if !keep {
                gone.push(pool);
                return None;
            }
            c.idle.push((pool, Instant::now()));
            c.trim_to(KEEP_MAX_IDLE, &mut gone);
            if c.reaper.is_some() {
                return None;
            }
            c.reapers += 1;
            c.reaper = Some(c.reapers);
            c.reaper
        });
        drop(gone);
        if let Some(id) = start_reaper {
            start_reaper_thread(id);
        }
    }
}

/// A pool of `threads` workers (0 = available cores) for one generation:
/// a parked one of that size if there is one, else a new one (after
/// joining the parked pools that would put more threads alive than were
/// ever leased at once). `per_call`: the pool is joined when the lease
/// ends, never parked.
///
/// Fails with [`Error::InvalidArgument`] above [`MAX_THREADS`] and with
/// [`Error::Threads`] when the operating system refuses to start a thread.
pub(crate) fn lease(threads: u32, per_call: bool) -> Result<Lease> {
    let n = resolve_threads(threads)?;
    register_fork_handler();
    let keep = !per_call && n <= KEEP_MAX_THREADS;
    let mut gone = Vec::new();
    let found = with_cache(|c| {
        c.busy += n;
        c.peak = c.peak.max(c.busy);
        if keep {
            if let Some(i) = c.idle.iter().rposition(|(p, _)| p.size() == n) {
                return Some(c.idle.remove(i).0);
            }
        }
        let room = c.peak - c.busy;
        c.trim_to(room, &mut gone);
        None
    });
    drop(gone);
    let pool = match found {
        Some(pool) => pool,
        None => match build_pool_of(n) {
            Ok(pool) => pool,
            Err(e) => {
                with_cache(|c| c.busy = c.busy.saturating_sub(n));
                return Err(e);
            }
        },
    };
    Ok(Lease {
        pool: Some(pool),
        keep,
    })
}

/// Joins every parked pool now (and the reaper): afterwards no thread of
/// the library is alive but those of generations still running, and the
/// most threads leased at once counts from the pools leased now. Returns
/// the number of worker threads joined.
pub(crate) fn release_idle() -> usize {
    let (pools, reaper) = with_cache(|c| {
        c.reaper = None;
        c.peak = c.busy;
        (std::mem::take(&mut c.idle), c.reaper_handle.take())
    });
    let n = pools.iter().map(|(p, _)| p.size()).sum();
    drop(pools);
    if let Some(h) = reaper {
        h.thread().unpark();
        let _ = h.join();
    }
    n
}

/// Threads of pools leased now and of pools parked.
pub(crate) fn counts() -> (usize, usize) {
    with_cache(|c| (c.busy, c.idle_threads()))
}

/// Starts the reaper number `id` (already recorded as the one that
/// runs): a thread (asynchronous signals blocked, nothing secret on it)
/// that wakes every quarter of [`QUIET`], joins the pools parked for
/// longer, and exits once none is parked, or once it is no longer the
/// recorded reaper ([`release_idle`]). Where the system refuses the thread,
/// parked pools wait for the next lease's trim or [`release_idle`], and
/// the next parked pool tries again.
fn start_reaper_thread(id: u64) {
    let spawned = std::thread::Builder::new()
        .name("primeforge-idle".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            crate::secure::signals::block_for_thread();
            loop {
                std::thread::park_timeout(QUIET / 4);
                let mut gone = Vec::new();
                let done = with_cache(|c| {
                    if c.reaper != Some(id) {
                        return true;
                    }
                    let now = Instant::now();
                    let mut i = 0;
                    while i < c.idle.len() {
                        if now.duration_since(c.idle[i].1) >= QUIET {
                            gone.push(c.idle.remove(i).0);
                        } else {
                            i += 1;
                        }
                    }
                    if c.idle.is_empty() {
                        // This thread ends by itself: its handle detaches.
                        c.reaper = None;
                        c.reaper_handle = None;
                        return true;
                    }
                    false
                });
                drop(gone);
                if done {
                    return;
                }
            }
        });
    let orphan = with_cache(|c| match spawned {
        Ok(h) if c.reaper == Some(id) => {
            c.reaper_handle = Some(h);
            None
        }
        Ok(h) => Some(h),
        Err(_) => {
            if c.reaper == Some(id) {
                c.reaper = None;
            }
            None
        }
    });
    // Released before it was recorded: it sees so at its next wake-up.
    if let Some(h) = orphan {
        h.thread().unpark();
    }
}

/// Where a generation's work runs.
pub(crate) enum Workers {
    /// A private pool of worker threads, leased ([`lease`]).
    Pool(Lease),
    /// The calling thread itself, one worker: a one-thread RSA generation
    /// on a private stack (`secure::fiber::on_private_stack`).
    Here,
    /// The calling thread (on a private stack, as for [`Workers::Here`])
    /// and a leased pool: the caller is worker 0, the pool's threads the
    /// others.
    WithCaller(Lease),
}

impl Workers {
    /// A private pool with `threads` workers (0 = available cores),
    /// joined when dropped if `per_call`, else parked for the next
    /// generation ([`lease`]).
    pub(crate) fn pool(threads: u32, per_call: bool) -> Result<Workers> {
        lease(threads, per_call).map(Workers::Pool)
    }

    /// A private pool with the workers `admitted` gives ([`admit`]).
    pub(crate) fn admitted(admitted: &Admission, per_call: bool) -> Result<Workers> {
        Self::pool(admitted.threads as u32, per_call)
    }

    /// The calling thread and a private pool of one thread fewer than
    /// `admitted` gives (at least two).
    pub(crate) fn with_caller(admitted: &Admission, per_call: bool) -> Result<Workers> {
        debug_assert!(admitted.threads >= 2);
        lease(admitted.threads as u32 - 1, per_call).map(Workers::WithCaller)
    }

    /// How many workers run the searches.
    pub(crate) fn threads(&self) -> usize {
        match self {
            Workers::Pool(pool) => pool.current_num_threads(),
            Workers::Here => 1,
            Workers::WithCaller(pool) => pool.current_num_threads() + 1,
        }
    }
}

#[cfg(test)]
impl Workers {
    /// A pool of `threads` workers, or the calling thread for 0.
    pub(crate) fn for_test(threads: u32) -> Workers {
        match threads {
            0 => Workers::Here,
            n => Workers::pool(n, false).expect("a pool"),
        }
    }
}

/// Builds a pool with `threads` workers (0 = available cores) that is
/// joined when dropped, never parked.
///
/// Fails with [`Error::InvalidArgument`] above [`MAX_THREADS`] and with
/// [`Error::Threads`] when the operating system refuses to start a thread.
pub(crate) fn build_pool(threads: u32) -> Result<Pool> {
    build_pool_of(resolve_threads(threads)?)
}

fn build_pool_of(n: usize) -> Result<Pool> {
    let epoch = FORK_EPOCH.load(Ordering::Acquire);
    let mut workers = Vec::with_capacity(n);
    let built = rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .spawn_handler(|t| {
            let h = std::thread::Builder::new()
                .name(format!("primeforge-{}", t.index()))
                .spawn(move || {
                    crate::secure::signals::block_for_thread();
                    #[cfg(test)]
                    crate::secure::freed::mark_worker();
                    crate::secure::run_shielded(|| crate::gmp::secret_scope(|| t.run()))
                })?;
            workers.push(h);
            Ok(())
        })
        .build();
    match built {
        Ok(pool) => Ok(Pool {
            pool: Some(pool),
            workers,
            epoch,
        }),
        Err(_) => {
            // rayon has told the threads it did start to terminate.
            for w in workers {
                let _ = w.join();
            }
            Err(Error::Threads)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_means_available_cores() {
        let cores = std::thread::available_parallelism().unwrap().get();
        assert_eq!(build_pool(0).unwrap().current_num_threads(), cores);
    }

    #[test]
    fn explicit_counts() {
        assert_eq!(build_pool(1).unwrap().current_num_threads(), 1);
        assert_eq!(build_pool(3).unwrap().current_num_threads(), 3);
        assert_eq!(resolve_threads(1024).unwrap(), 1024);
    }

    /// No more threads than cores unless exact; only the free cores,
    /// and at least one, for a generation that can run alone.
    #[test]
    fn a_generation_gets_no_more_threads_than_cores() {
        assert_eq!(fitted(16, Fit::Exact, 2, 0), 16);
        assert_eq!(fitted(16, Fit::Exact, 2, 5), 16);
        assert_eq!(fitted(16, Fit::Cores, 2, 0), 2);
        assert_eq!(fitted(16, Fit::Cores, 2, 5), 2);
        assert_eq!(fitted(1, Fit::Cores, 2, 0), 1);
        assert_eq!(fitted(16, Fit::FreeCores, 8, 0), 8);
        assert_eq!(fitted(16, Fit::FreeCores, 8, 5), 3);
        assert_eq!(fitted(2, Fit::FreeCores, 8, 5), 2);
        assert_eq!(fitted(2, Fit::FreeCores, 8, 8), 1);
        assert_eq!(fitted(2, Fit::FreeCores, 8, 30), 1);
        // Through admit: this process's cores, whatever was asked.
        let cores = cores();
        assert_eq!(admit(1024, Fit::Cores).unwrap().threads(), cores);
        assert_eq!(admit(0, Fit::Cores).unwrap().threads(), cores);
        assert_eq!(admit(1024, Fit::Exact).unwrap().threads(), 1024);
    }

    #[test]
    fn too_many_threads_refused_before_spawning() {
        assert!(matches!(build_pool(1025), Err(Error::InvalidArgument(_))));
        assert!(matches!(
            build_pool(u32::MAX),
            Err(Error::InvalidArgument(_))
        ));
    }

    /// Every worker has exited when the pool is dropped (a generation
    /// returns with no thread of its own alive).
    #[test]
    #[cfg(target_os = "linux")]
    fn dropping_the_pool_joins_every_worker() {
        let pool = build_pool(64).unwrap();
        // SAFETY: gettid has no preconditions.
        let tids = pool.broadcast(|_| unsafe { libc::gettid() });
        let alive = |tids: &[i32]| {
            tids.iter()
                .filter(|t| std::path::Path::new(&format!("/proc/self/task/{t}")).exists())
                .count()
        };
        assert_eq!(alive(&tids), 64);
        drop(pool);
        assert_eq!(alive(&tids), 0);
    }

    /// A `fork()` child does not count the generations running in the
    /// parent when it admits its own, even in a process that never
    /// leased a pool: the check runs in a fresh process (the helper below,
    /// alone), where nothing registered the fork handler before.
    #[test]
    #[cfg(target_os = "linux")]
    fn a_fork_child_forgets_the_parents_generations() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "threads::tests::fork_child_admission_helper",
                "--ignored",
                "--test-threads=1",
            ])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    #[test]
    #[cfg(target_os = "linux")]
    #[ignore = "run alone in a fresh process by a_fork_child_forgets_the_parents_generations"]
    fn fork_child_admission_helper() {
        // Generations on their callers' threads take every core.
        let held: Vec<Admission> = (0..cores())
            .map(|_| admit(1, Fit::Exact).unwrap())
            .collect();
        assert_eq!(admit(2, Fit::FreeCores).unwrap().threads(), 1);
        // SAFETY: the child only admits and exits.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let ok = admit(2, Fit::FreeCores).is_ok_and(|a| a.threads() == 2.min(cores()));
            // SAFETY: ends the child without running the parent's exit path.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        assert!(pid > 0);
        let mut status = 0;
        // SAFETY: waits for the child just forked.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "the child counted the parent's generations: status {status:#x}"
        );
        drop(held);
    }

    #[test]
    fn pool_is_private() {
        let pool = build_pool(2).unwrap();
        let inside = pool.install(|| rayon::current_thread_index().is_some());
        assert!(inside);
        // The calling thread is not one of rayon's global workers.
        assert!(rayon::current_thread_index().is_none());
    }
}
