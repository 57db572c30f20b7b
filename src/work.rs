//! How far an exponentiation had got when it was given up.
//!
//! The search gives up rounds whose verdict can no longer matter (see
//! `prime::search`). Its work counter counts what was done: a round that
//! ran to its end counts whole, one given up counts the share of its
//! exponent the loop had processed. Every exponentiation loop that reads a
//! stop flag records that share here, on its own thread, just before it
//! returns without a verdict; the search reads it after the round.
//!
//! The share is public: the position in an exponent whose length is the
//! candidate's public size.

use std::cell::Cell;

thread_local! {
    static GIVEN_UP_AT: Cell<Option<f64>> = const { Cell::new(None) };
}

/// Records that the exponentiation loop on this thread stops after
/// `done` of its `total` steps (bits or windows of the exponent).
pub(crate) fn given_up(done: u64, total: u64) {
    let share = if total == 0 {
        1.0
    } else {
        (done.min(total) as f64) / (total as f64)
    };
    GIVEN_UP_AT.with(|c| c.set(Some(share)));
}

/// The share recorded by the last loop given up on this thread since the
/// last call, and forgets it; `None` when none was given up.
pub(crate) fn take_given_up() -> Option<f64> {
    GIVEN_UP_AT.with(|c| c.take())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_is_read_once_and_clamped() {
        let _ = take_given_up();
        assert_eq!(take_given_up(), None);
        given_up(16, 64);
        assert_eq!(take_given_up(), Some(0.25));
        assert_eq!(take_given_up(), None);
        given_up(70, 64);
        assert_eq!(take_given_up(), Some(1.0));
        given_up(0, 0);
        assert_eq!(take_given_up(), Some(1.0));
    }
}
