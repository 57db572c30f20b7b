//! Background jobs: `pf_job_*`, started by `pf_rsa_generate_start` and
//! `pf_dh_generate_start`.

use std::time::Duration;

use super::dh::{boxed as boxed_params, pf_dh_params};
use super::options::{check_options, pf_options, pf_progress, CheckedOptions};
use super::rsa::{boxed_key, pf_rsa_key};
use super::{free_handle, guard, guard_value, pf_status, write_out};
use crate::job::{Job, Kind, Output, Status, TakeError, Work};

/// A background generation (an RSA key or DH parameters) running on
/// library-owned threads. Opaque; made by `pf_rsa_generate_start` or
/// `pf_dh_generate_start`, released with `pf_job_free`.
///
/// Thread safety: `pf_job_fd`, `pf_job_poll`, `pf_job_wait`,
/// `pf_job_cancel` and `pf_job_take_*` may be called on one job from any
/// threads at once; `pf_job_free` must not run concurrently with any other
/// call on the same job.
///
/// After `fork()`: the child inherits none of the job's threads, and its
/// result's secure memory reads as zeros there. In the child every
/// `pf_job_*` call on an inherited job returns `PF_ERR_FORKED` (`pf_job_fd`
/// returns -1), and `pf_job_free` only closes the child's copy of the
/// descriptor (the parent's job is unaffected).
pub struct pf_job {
    inner: Job,
}

/// The body of both `pf_*_generate_start` functions: checks `out` and
/// `opts`, lets `work` check the request, starts the job and hands it out.
///
/// # Safety
/// `opts` as for `check_options`; `out` NULL or writable.
pub(super) unsafe fn start_job(
    opts: *const pf_options,
    out: *mut *mut pf_job,
    work: impl FnOnce(&CheckedOptions<'_>) -> Result<Work, pf_status>,
) -> pf_status {
    if out.is_null() {
        return pf_status::PF_ERR_NULL_ARGUMENT;
    }
    // SAFETY: per this function's contract.
    let checked = match unsafe { check_options(opts) } {
        Ok(c) => c,
        Err(st) => return st,
    };
    let work = match work(&checked) {
        Ok(w) => w,
        Err(st) => return st,
    };
    match Job::start_with(work, checked.threads, checked.seed, checked.threading()) {
        Ok(job) => {
            let boxed = Box::into_raw(Box::new(pf_job { inner: job }));
            // SAFETY: `out` checked for NULL.
            unsafe { write_out(out, boxed) };
            pf_status::PF_OK
        }
        Err(e) => e.into(),
    }
}

/// The job behind a C pointer: `PF_ERR_NULL_ARGUMENT` for NULL,
/// `PF_ERR_FORKED` for one inherited through `fork()`.
///
/// # Safety
/// `job` is NULL or a live `pf_job`.
unsafe fn job_ref<'a>(job: *const pf_job) -> Result<&'a Job, pf_status> {
    // SAFETY: per this function's contract.
    match unsafe { job.as_ref() } {
        None => Err(pf_status::PF_ERR_NULL_ARGUMENT),
        Some(j) if j.inner.is_inherited() => Err(pf_status::PF_ERR_FORKED),
        Some(j) => Ok(&j.inner),
    }
}

fn status_of(s: Status) -> pf_status {
    match s {
        Status::Pending => pf_status::PF_PENDING,
        Status::Done(Ok(())) => pf_status::PF_OK,
        Status::Done(Err(e)) => e.into(),
    }
}

/// Returns a file descriptor that becomes readable when the job ends (an
/// eventfd on Linux, a pipe's read end elsewhere) and stays readable: use
/// it with poll(2), epoll, kqueue or an event loop (asyncio's
/// `add_reader`, libuv's `uv_poll_t`), then call `pf_job_poll` or a
/// `pf_job_take_*` function. Never read from it, and never close it: the
/// job owns it and `pf_job_free` closes it. It is close-on-exec.
///
/// Returns -1 if `job` is NULL or was inherited through `fork()`.
/// Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn pf_job_fd(job: *const pf_job) -> i32 {
    guard_value(-1, || {
        // SAFETY: the caller passes NULL or a live job.
        match unsafe { job_ref(job) } {
            Ok(j) => j.fd(),
            Err(_) => -1,
        }
    })
}

/// Where the job stands, without waiting: `PF_PENDING` while it runs;
/// once it has ended, `PF_OK` if it made its result (taken or not) or the
/// status it failed with (`PF_ERR_CANCELLED` after `pf_job_cancel`, and
/// otherwise the statuses of the blocking generate function).
///
/// `snapshot` may be NULL; if set, it receives the latest progress report
/// (updated every 10 ms while the job runs and whenever a prime is found;
/// once the job has succeeded, its final work counters). Returns
/// `PF_ERR_NULL_ARGUMENT` (job NULL, snapshot untouched) or `PF_ERR_FORKED`.
/// Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn pf_job_poll(job: *const pf_job, snapshot: *mut pf_progress) -> pf_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a live job.
        let j = match unsafe { job_ref(job) } {
            Ok(j) => j,
            Err(st) => return st,
        };
        let (status, p) = j.poll();
        if !snapshot.is_null() {
            // SAFETY: documented as writable when set.
            unsafe { write_out(snapshot, super::options::progress_event(&p)) };
        }
        status_of(status)
    })
}

/// Waits until the job ends or `timeout_ms` milliseconds pass (0: do not
/// wait; `UINT64_MAX`: no limit), then returns what `pf_job_poll` would:
/// `PF_PENDING` if the time ran out. Blocks the calling thread: event loops
/// should use `pf_job_fd` instead. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn pf_job_wait(job: *const pf_job, timeout_ms: u64) -> pf_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a live job.
        let j = match unsafe { job_ref(job) } {
            Ok(j) => j,
            Err(st) => return st,
        };
        let timeout = (timeout_ms != u64::MAX).then(|| Duration::from_millis(timeout_ms));
        j.wait(timeout);
        status_of(j.poll().0)
    })
}

/// Asks the job to stop and returns at once. A job still running ends
/// with `PF_ERR_CANCELLED` (its descriptor becomes readable) within a few
/// milliseconds of work at any size: its workers look at the flag every 64
/// squarings (the RSA base-2 filter, DH's exponentiations, the strong Lucas
/// test) or between quarter-rounds (Miller–Rabin on primes above 4096
/// bits), its driver every 10 ms; measured here up to 23 ms after the
/// cancel (`bench/examples/cancel_latency`). Its partial work is wiped. A job that has
/// already ended is unaffected. Returns `PF_OK`, `PF_ERR_NULL_ARGUMENT` or
/// `PF_ERR_FORKED`. Thread-safe; may be called any number of times.
#[no_mangle]
pub unsafe extern "C" fn pf_job_cancel(job: *const pf_job) -> pf_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a live job.
        match unsafe { job_ref(job) } {
            Ok(j) => {
                j.cancel();
                pf_status::PF_OK
            }
            Err(st) => st,
        }
    })
}

/// The body of both `pf_job_take_*` functions: moves the result of a job
/// of `kind` out through `out`, boxed by `boxed`.
///
/// # Safety
/// `job` is NULL or a live job; `out` NULL or writable.
unsafe fn take_into<T>(
    job: *const pf_job,
    out: *mut *mut T,
    kind: Kind,
    boxed: impl FnOnce(Output) -> Option<*mut T>,
) -> pf_status {
    if out.is_null() {
        return pf_status::PF_ERR_NULL_ARGUMENT;
    }
    // SAFETY: per this function's contract.
    let j = match unsafe { job_ref(job) } {
        Ok(j) => j,
        Err(st) => return st,
    };
    match j.take(kind) {
        Ok(output) => match boxed(output) {
            Some(p) => {
                // SAFETY: `out` checked for NULL.
                unsafe { write_out(out, p) };
                pf_status::PF_OK
            }
            None => pf_status::PF_ERR_INTERNAL,
        },
        Err(TakeError::Pending) => pf_status::PF_PENDING,
        Err(TakeError::WrongKind) => pf_status::PF_ERR_WRONG_KIND,
        Err(TakeError::AlreadyTaken) => pf_status::PF_ERR_ALREADY_TAKEN,
        Err(TakeError::Failed(e)) => e.into(),
    }
}

/// Moves the RSA key out of a finished job started by
/// `pf_rsa_generate_start`. On success `*out` receives a key the caller
/// owns (free with `pf_rsa_free`); the job keeps no copy and may be freed
/// at any time. On failure `*out` is untouched: `PF_PENDING` (still
/// running), `PF_ERR_WRONG_KIND` (a DH job), `PF_ERR_ALREADY_TAKEN`, the
/// status the job failed with, `PF_ERR_NULL_ARGUMENT` or `PF_ERR_FORKED`.
/// Thread-safe: of concurrent calls, one gets the key.
#[no_mangle]
pub unsafe extern "C" fn pf_job_take_rsa(job: *mut pf_job, out: *mut *mut pf_rsa_key) -> pf_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a live job, and NULL or a
        // writable `out`.
        unsafe {
            take_into(job, out, Kind::Rsa, |o| match o {
                Output::Rsa(key) => Some(boxed_key(key)),
                Output::Dh(_) => None,
            })
        }
    })
}

/// Moves the DH parameters out of a finished job started by
/// `pf_dh_generate_start`: as `pf_job_take_rsa` (free the result with
/// `pf_dh_free`; `PF_ERR_WRONG_KIND` for an RSA job). Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn pf_job_take_dh(
    job: *mut pf_job,
    out: *mut *mut pf_dh_params,
) -> pf_status {
    guard(|| {
        // SAFETY: as in pf_job_take_rsa.
        unsafe {
            take_into(job, out, Kind::Dh, |o| match o {
                Output::Dh(params) => Some(boxed_params(params)),
                Output::Rsa(_) => None,
            })
        }
    })
}

/// Releases a job: cancels it if it still runs, waits for its thread to
/// exit and for every worker to end its work (as after `pf_job_cancel`),
/// wipes and frees a result that was not taken, and closes the
/// descriptor. When this returns, no thread of the job is alive and its
/// workers are parked holding nothing of it, or joined
/// (`PF_THREADS_PER_CALL`; see `pf_options.threads`). NULL is a no-op. Must not run
/// concurrently with another call on the same job. In a `fork()` child, on
/// an inherited job, it only closes the child's copy of the descriptor.
#[no_mangle]
pub unsafe extern "C" fn pf_job_free(job: *mut pf_job) {
    // SAFETY: the caller passes NULL or a live job, freed once.
    unsafe { free_handle(job) }
}
