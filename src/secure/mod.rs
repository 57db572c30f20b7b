//! Secret-holding memory: the only place secret bytes live in the core.

mod buf;
mod stack;

pub use buf::{SecureBuf, MAX_LEN};
pub use stack::{wipe_stack, STACK_WIPE};
