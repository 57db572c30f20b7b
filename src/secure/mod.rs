//! Secret-holding memory: the only place secret bytes live in the core.

pub(crate) mod arena;
mod buf;
pub(crate) mod fiber;
pub(crate) mod os;
mod regs;
mod rng;
mod secret_vec;
mod stack;
pub(crate) mod valgrind;

pub use buf::SecureBuf;
pub(crate) use regs::clear_registers;
pub(crate) use rng::SecretStream;
pub(crate) use secret_vec::SecretVec;
pub(crate) use stack::{run_shielded, wipe_stack, with_wiped_stack};
