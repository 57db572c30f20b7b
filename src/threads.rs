//! Private worker pools. primeforge never touches rayon's global pool: every
//! generation builds its own pool sized by the caller, so a host application
//! that uses rayon itself keeps full control of its pool.

use crate::error::{Error, Result};

/// The largest thread count a caller may ask for.
pub(crate) const MAX_THREADS: u32 = 1024;

/// Resolves a caller's thread count: 0 means "all available cores".
pub(crate) fn resolve_threads(threads: u32) -> Result<usize> {
    match threads {
        0 => Ok(std::thread::available_parallelism().map_or(1, |n| n.get())),
        n if n > MAX_THREADS => Err(Error::InvalidArgument("threads > 1024")),
        n => Ok(n as usize),
    }
}

/// A generation's private pool. Every worker is a thread of our own
/// (rayon's `spawn_handler`) with every asynchronous signal blocked
/// (`secure::signals`): while it runs, the part of its stack its
/// jobs use is shielded ([`crate::secure::run_shielded`]: wiped in a fork
/// child, excluded from core dumps), its GMP blocks are in the secret
/// arena ([`crate::gmp::secret_scope`]), and before it exits it wipes its
/// stack.
/// Dropping the pool joins every worker, so when a generation returns no
/// thread of it is alive and no stack of it holds anything.
pub(crate) struct Pool {
    pool: Option<rayon::ThreadPool>,
    workers: Vec<std::thread::JoinHandle<()>>,
}

impl std::ops::Deref for Pool {
    type Target = rayon::ThreadPool;
    fn deref(&self) -> &rayon::ThreadPool {
        self.pool.as_ref().expect("pool alive until dropped")
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        // Dropping rayon's pool tells its threads to finish; each leaves
        // its main loop once idle, wipes its stack and exits.
        drop(self.pool.take());
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

/// Where a generation's work runs.
pub(crate) enum Workers {
    /// A private pool of worker threads ([`build_pool`]).
    Pool(Pool),
    /// The calling thread itself, one worker: a one-thread RSA generation
    /// on a private stack (`secure::fiber::on_private_stack`).
    Here,
}

impl Workers {
    /// A private pool with `threads` workers (0 = available cores).
    pub(crate) fn pool(threads: u32) -> Result<Workers> {
        build_pool(threads).map(Workers::Pool)
    }

    /// How many workers run the searches.
    pub(crate) fn threads(&self) -> usize {
        match self {
            Workers::Pool(pool) => pool.current_num_threads(),
            Workers::Here => 1,
        }
    }
}

#[cfg(test)]
impl Workers {
    /// A pool of `threads` workers, or the calling thread for 0.
    pub(crate) fn for_test(threads: u32) -> Workers {
        match threads {
            0 => Workers::Here,
            n => Workers::pool(n).expect("a pool"),
        }
    }
}

/// Builds a private pool with `threads` workers (0 = available cores).
///
/// Fails with [`Error::InvalidArgument`] above [`MAX_THREADS`] and with
/// [`Error::Threads`] when the operating system refuses to start a thread.
pub(crate) fn build_pool(threads: u32) -> Result<Pool> {
    let n = resolve_threads(threads)?;
    let mut workers = Vec::with_capacity(n);
    let built = rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .spawn_handler(|t| {
            let h = std::thread::Builder::new()
                .name(format!("primeforge-{}", t.index()))
                .spawn(move || {
                    crate::secure::signals::block_for_thread();
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

    #[test]
    fn pool_is_private() {
        let pool = build_pool(2).unwrap();
        let inside = pool.install(|| rayon::current_thread_index().is_some());
        assert!(inside);
        // The calling thread is not one of rayon's global workers.
        assert!(rayon::current_thread_index().is_none());
    }
}
