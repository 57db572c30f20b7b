//! Background generations ("jobs"): one RSA or DH generation on
//! library-owned threads, so that the caller's thread — an event loop's —
//! is free at once.
//!
//! A job owns a driver thread, which plays the caller's part of a blocking
//! generation (it waits, takes progress reports and holds the result), and
//! the generation's private pool as usual. The driver's stack is shielded
//! and wiped like a pool worker's (`secure::run_shielded`). Progress
//! reports land in a snapshot the owner reads with [`Job::poll`]; a cancel
//! request is answered at the driver's next report (every
//! [`JOB_REPORT_INTERVAL`], 10 ms) and the workers stop at their next
//! check, at most 64 squarings away (a quarter of a Miller–Rabin round
//! for RSA primes above 4096 bits): at most 23 ms here at any size. When
//! the job ends its descriptor
//! ([`Job::fd`]) becomes readable and stays so.
//!
//! In a `fork()` child an inherited job has no threads (only the forking
//! thread survives) and its result's secure memory reads as zeros:
//! [`Job::is_inherited`] says so, and the job must not be used; dropping it
//! there closes its descriptor and releases nothing else.

mod notify;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::dh::{self, DhParams};
use crate::error::{Error, Result};
use crate::prime::{Options, Progress, Stats, Threading};
use crate::rsa::{self, RsaKey};
use crate::secure::SecureBuf;

use notify::Notifier;

/// How often a job's driver takes a progress report (and so looks at the
/// cancel flag).
pub const JOB_REPORT_INTERVAL: Duration = Duration::from_millis(10);

/// What a job generates: a validated request.
#[derive(Debug, Clone)]
pub enum Work {
    /// An RSA key.
    Rsa(rsa::Request),
    /// DH parameters.
    Dh(dh::Request),
    /// FIPS 186-4 domain parameters (a DH result).
    Fips186(dh::fips186::Request),
}

/// The two kinds of result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An RSA key.
    Rsa,
    /// DH parameters.
    Dh,
}

/// A finished job's result.
pub enum Output {
    /// An RSA key (secret components in secure memory).
    Rsa(RsaKey),
    /// DH parameters.
    Dh(DhParams),
}

/// Where a job stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Still running.
    Pending,
    /// Ended; `Ok` if it made its result (taken or not), else why not.
    Done(Result<()>),
}

/// Why [`Job::take`] gave nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TakeError {
    /// The job is still running.
    Pending,
    /// The job makes the other kind of result.
    WrongKind,
    /// The result was taken before.
    AlreadyTaken,
    /// The job ended without a result.
    Failed(Error),
}

enum State {
    Running,
    Finished(Result<Output>),
    Taken,
}

struct Inner {
    cancel: AtomicBool,
    /// The latest progress report (the final counters once done).
    progress: Mutex<Progress>,
    state: Mutex<State>,
    done: Condvar,
    notifier: Notifier,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// One background generation. Dropping it cancels the generation if it
/// still runs, joins every thread it started, and wipes and frees the
/// result if it was not taken.
pub struct Job {
    inner: Arc<Inner>,
    kind: Kind,
    driver: Option<JoinHandle<()>>,
    /// The process that started the job (see the module docs on fork).
    owner_pid: libc::pid_t,
}

impl Job {
    /// Starts `work` on `threads` pool workers (0 = all cores), with a
    /// 32-byte `seed` (copied into secure memory before this returns) or
    /// fresh OS randomness. Everything that can be checked is checked
    /// before a thread starts: the thread count and the seed's length
    /// ([`Error::InvalidArgument`]); then [`Error::NoMemory`] (no secure
    /// memory or no file descriptor left) or [`Error::Threads`].
    pub fn start(work: Work, threads: u32, seed: Option<&[u8]>) -> Result<Job> {
        Job::start_with(work, threads, seed, Threading::default())
    }

    /// [`Job::start`], with the generation's workers started for it and
    /// joined before it ends when `threading.per_call_threads` is set
    /// ([`Options::per_call_threads`]), and on exactly `threads` workers
    /// when `threading.exact_threads` is ([`Options::exact_threads`]).
    pub fn start_with(
        work: Work,
        threads: u32,
        seed: Option<&[u8]>,
        threading: Threading,
    ) -> Result<Job> {
        crate::threads::resolve_threads(threads)?;
        let seed = match seed {
            Some(s) if s.len() != crate::prime::SEED_LEN => {
                return Err(Error::InvalidArgument("seed must be 32 bytes"))
            }
            Some(s) => Some(SecureBuf::from_slice(s)?),
            None => None,
        };
        let inner = Arc::new(Inner {
            cancel: AtomicBool::new(false),
            progress: Mutex::new(Progress {
                primes_needed: match work {
                    Work::Rsa(r) => r.primes() as usize,
                    Work::Dh(_) | Work::Fips186(_) => 1,
                },
                ..Progress::default()
            }),
            state: Mutex::new(State::Running),
            done: Condvar::new(),
            notifier: Notifier::new()?,
        });
        let kind = match work {
            Work::Rsa(_) => Kind::Rsa,
            Work::Dh(_) | Work::Fips186(_) => Kind::Dh,
        };
        let shared = Arc::clone(&inner);
        let driver = std::thread::Builder::new()
            .name("primeforge-job".into())
            .spawn(move || {
                crate::secure::signals::block_for_thread();
                crate::secure::run_shielded(|| drive(&shared, work, threads, seed, threading));
            })
            .map_err(|_| Error::Threads)?;
        Ok(Job {
            inner,
            kind,
            driver: Some(driver),
            // SAFETY: getpid has no preconditions.
            owner_pid: unsafe { libc::getpid() },
        })
    }

    /// Whether this job was started by the parent of this `fork()` child:
    /// it then has no threads here and nothing usable (see the module docs).
    pub fn is_inherited(&self) -> bool {
        // SAFETY: getpid has no preconditions.
        unsafe { libc::getpid() != self.owner_pid }
    }

    /// What the job makes.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// A descriptor that becomes readable when the job ends and stays
    /// readable; owned by the job (closed when it is dropped).
    pub fn fd(&self) -> std::os::fd::RawFd {
        self.inner.notifier.fd()
    }

    /// Where the job stands, and its latest progress report (the final
    /// work counters once it is done). Never blocks on the generation.
    pub fn poll(&self) -> (Status, Progress) {
        let status = match &*lock(&self.inner.state) {
            State::Running => Status::Pending,
            State::Finished(Ok(_)) | State::Taken => Status::Done(Ok(())),
            State::Finished(Err(e)) => Status::Done(Err(*e)),
        };
        (status, *lock(&self.inner.progress))
    }

    /// Waits until the job ends or `timeout` passes (`None`: no limit);
    /// returns whether it has ended.
    pub fn wait(&self, timeout: Option<Duration>) -> bool {
        // A timeout too long to represent is no limit.
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        let mut st = lock(&self.inner.state);
        loop {
            if !matches!(*st, State::Running) {
                return true;
            }
            st = match deadline {
                None => self.inner.done.wait(st).unwrap_or_else(|p| p.into_inner()),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return false;
                    }
                    self.inner
                        .done
                        .wait_timeout(st, d - now)
                        .unwrap_or_else(|p| p.into_inner())
                        .0
                }
            };
        }
    }

    /// Asks the job to stop; returns at once. A job that has not finished
    /// yet ends with [`Error::Cancelled`] (its partial work is wiped); a
    /// finished one is unaffected. Thread-safe.
    pub fn cancel(&self) {
        self.inner.cancel.store(true, Ordering::Release);
    }

    /// Moves the result out, once.
    pub fn take(&self, kind: Kind) -> std::result::Result<Output, TakeError> {
        if kind != self.kind {
            return Err(TakeError::WrongKind);
        }
        let mut st = lock(&self.inner.state);
        match &*st {
            State::Running => Err(TakeError::Pending),
            State::Taken => Err(TakeError::AlreadyTaken),
            State::Finished(Err(e)) => Err(TakeError::Failed(*e)),
            State::Finished(Ok(_)) => match std::mem::replace(&mut *st, State::Taken) {
                State::Finished(Ok(out)) => Ok(out),
                _ => unreachable!("matched above"),
            },
        }
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        if self.is_inherited() {
            // A fork child: the driver and the pool do not exist here, a
            // lock may be held by a thread that no longer exists, and the
            // result's secure memory reads as zeros. Close the child's copy
            // of the descriptor and leave everything else alone.
            self.inner.notifier.close_inherited();
            if let Some(d) = self.driver.take() {
                std::mem::forget(d);
            }
            // A forgotten extra reference keeps the count above zero, so
            // the field's own drop does not run Inner's destructor (the
            // parent's copy of the memory is leaked in the child).
            std::mem::forget(Arc::clone(&self.inner));
            return;
        }
        self.cancel();
        if let Some(d) = self.driver.take() {
            let _ = d.join();
        }
    }
}

/// The driver thread's body: runs the generation as its caller.
fn drive(inner: &Inner, work: Work, threads: u32, seed: Option<SecureBuf>, threading: Threading) {
    let mut report = |p: &Progress| {
        *lock(&inner.progress) = *p;
        inner.cancel.load(Ordering::Acquire)
    };
    let mut opts = Options {
        threads,
        seed: seed.as_ref().map(|s| s.as_slice()),
        progress: Some(&mut report),
        rsa_fips: false,
        rsa_provable: false,
        // A cancel is seen at the next report: report often (each report
        // only stores a snapshot).
        progress_interval: Some(JOB_REPORT_INTERVAL),
        per_call_threads: threading.per_call_threads,
        exact_threads: threading.exact_threads,
    };
    let outcome = catch_unwind(AssertUnwindSafe(|| -> Result<(Output, Stats)> {
        match work {
            Work::Rsa(req) => {
                rsa::generate_request(&req, &mut opts).map(|(k, s)| (Output::Rsa(k), s))
            }
            Work::Dh(req) => dh::generate_request(&req, &mut opts).map(|(p, s)| (Output::Dh(p), s)),
            Work::Fips186(req) => {
                dh::fips186::generate(&req, &mut opts).map(|(p, s)| (Output::Dh(p), s))
            }
        }
    }))
    .unwrap_or(Err(Error::Internal));
    drop(seed);
    let mut st = lock(&inner.state);
    let result = match outcome {
        // A cancel that came before the result was recorded wins: the
        // caller asked for no result, and gets none.
        Ok(_) if inner.cancel.load(Ordering::Acquire) => Err(Error::Cancelled),
        Ok((out, stats)) => {
            let mut p = lock(&inner.progress);
            p.candidates = stats.candidates;
            p.survivors = stats.survivors;
            p.exponentiations = stats.exponentiations;
            p.elapsed = stats.elapsed;
            p.primes_found = p.primes_needed;
            Ok(out)
        }
        Err(e) => Err(e),
    };
    *st = State::Finished(result);
    drop(st);
    inner.done.notify_all();
    inner.notifier.signal();
}
