//! Secret-holding memory: the only place secret bytes live in the core.

pub(crate) mod arena;
mod buf;
mod clearing;
pub(crate) mod fiber;
#[cfg(test)]
pub(crate) mod freed;
pub(crate) mod os;
mod regs;
mod rng;
pub(crate) mod rng_wide;
mod secret_vec;
pub(crate) mod signals;
mod stack;
pub(crate) mod valgrind;

pub use buf::SecureBuf;
pub(crate) use buf::MAX_LEN as SECURE_BUF_MAX_LEN;
pub use clearing::ClearingAllocator;
pub(crate) use clearing::{clear_if_secret_work, secret_work};
#[cfg(test)]
pub(crate) use regs::probe;
pub(crate) use regs::{clear_before_kernel, clear_registers};
pub(crate) use rng::SecretStream;
pub(crate) use secret_vec::{SecretVec, SharedWords};
#[cfg(test)]
pub(crate) use stack::STACK_WIPE;
pub(crate) use stack::{run_shielded, wipe_stack, with_wiped_stack};

/// Whether the secret arena is usable in this process (reserving it on the
/// first call), and how many blocks of secret limbs went to the C heap so
/// far.
pub(crate) fn memory_status() -> (bool, u64) {
    (arena::usable(), arena::fallbacks())
}
