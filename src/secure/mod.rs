//! Secret-holding memory: the only place secret bytes live in the core.

mod buf;

pub use buf::{SecureBuf, MAX_LEN};
