//! Secret-holding memory: the only place secret bytes live in the core.

pub mod arena;
mod buf;
mod regs;
mod rng;
mod secret_vec;
mod stack;

pub use buf::{SecureBuf, MAX_LEN};
pub use regs::clear_registers;
pub use rng::SecretStream;
pub use secret_vec::SecretVec;
pub use stack::{run_shielded, wipe_stack, with_wiped_stack, STACK_WIPE};
