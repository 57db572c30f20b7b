//! One module per subcommand.

pub(crate) mod check;
pub(crate) mod dhparam;
pub(crate) mod moduli;
pub(crate) mod pubkey;
pub(crate) mod rsa;
