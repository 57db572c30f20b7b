//! Private worker pools. primeforge never touches rayon's global pool: every
//! generation builds its own pool sized by the caller, so a host application
//! that uses rayon itself keeps full control of its pool.

use crate::error::{Error, Result};

/// The largest thread count a caller may ask for.
pub const MAX_THREADS: u32 = 1024;

/// Resolves a caller's thread count: 0 means "all available cores".
pub fn resolve_threads(threads: u32) -> Result<usize> {
    match threads {
        0 => Ok(std::thread::available_parallelism().map_or(1, |n| n.get())),
        n if n > MAX_THREADS => Err(Error::InvalidArgument("threads > 1024")),
        n => Ok(n as usize),
    }
}

/// Builds a private pool with `threads` workers (0 = available cores).
///
/// Fails with [`Error::InvalidArgument`] above [`MAX_THREADS`] and with
/// [`Error::Threads`] when the operating system refuses to start a thread.
pub fn build_pool(threads: u32) -> Result<rayon::ThreadPool> {
    let n = resolve_threads(threads)?;
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .thread_name(|i| format!("primeforge-{i}"))
        .build()
        .map_err(|_| Error::Threads)
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

    #[test]
    fn pool_is_private() {
        let pool = build_pool(2).unwrap();
        let inside = pool.install(|| rayon::current_thread_index().is_some());
        assert!(inside);
        // The calling thread is not one of rayon's global workers.
        assert!(rayon::current_thread_index().is_none());
    }
}
