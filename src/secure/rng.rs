//! [`SecretStream`]: a ChaCha20 stream whose whole state (key words,
//! counter, buffered output) is overwritten with zeros when it is dropped,
//! keyed with a key *derived* from the generation seed, never with the
//! seed itself.
//!
//! `rand_chacha`'s generator keeps the 32-byte key in its state and
//! buffered key stream beside it, and neither is wiped on drop. Every
//! stream primeforge draws from a generation seed goes through this
//! wrapper, so no stream state outlives its use.
//!
//! A stream's state travels: the compiler and the C library copy it
//! through vector registers, and a copy left in a register is what a core
//! dump, a debugger or a signal frame sees of a thread that is waiting.
//! So a stream is keyed with ChaCha20(seed, stream id)'s first 32 bytes
//! ([`SecretStream::with_derived`]): ChaCha20's block function is one-way
//! in its key, so no stream state, wherever its bytes went, gives the
//! seed or any other stream. The seed itself is read once per stream, by
//! the derivation, and the stream is built in the frame that uses it and
//! lent out (no by-value moves of the state).

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use zeroize::Zeroize;

/// A seeded ChaCha20 stream, wiped on drop.
pub struct SecretStream(ChaCha20Rng);

impl SecretStream {
    /// Runs `f` with the stream of the key derived from `master` for
    /// `id`: the first 32 bytes of ChaCha20 keyed with `master` on stream
    /// `id` key a ChaCha20 stream (on its stream 0) that `f` borrows. The
    /// derived key passes through one stack array, and the derivation's own
    /// state (which holds `master`) is wiped and the registers cleared
    /// before `f` runs; the stream is wiped and the registers cleared
    /// again when `f` returns.
    pub fn with_derived<R>(
        master: &[u8; 32],
        id: u64,
        f: impl FnOnce(&mut SecretStream) -> R,
    ) -> R {
        let mut key = [0u8; 32];
        {
            let mut kdf = SecretStream(ChaCha20Rng::from_seed(*master));
            kdf.0.set_stream(id);
            kdf.0.fill_bytes(&mut key);
        }
        // The seed's words went through the vector registers, where nothing
        // may overwrite them for the milliseconds the candidate's tests take.
        super::clear_registers();
        let mut rng = SecretStream(ChaCha20Rng::from_seed(key));
        key.zeroize();
        let r = f(&mut rng);
        drop(rng);
        super::clear_registers();
        r
    }

    /// Moves to word `pos` of the stream (see `ChaCha20Rng::set_word_pos`).
    pub fn set_word_pos(&mut self, pos: u128) {
        self.0.set_word_pos(pos);
    }

    /// Moves to word `pos` of the stream as [`SecretStream::set_word_pos`]
    /// does (the same words follow), by reading forward where `pos` lies
    /// at most one buffer (64 words) ahead: the words already computed are
    /// used instead of computed again.
    pub fn seek(&mut self, pos: u128) {
        let at = self.0.get_word_pos();
        match pos.checked_sub(at) {
            Some(ahead) if ahead <= 64 => {
                for _ in 0..ahead {
                    self.0.next_u32();
                }
            }
            _ => self.0.set_word_pos(pos),
        }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
}

impl Drop for SecretStream {
    fn drop(&mut self) {
        // SAFETY: `ChaCha20Rng` is plain data (integer arrays, a counter
        // and an index) with no pointers and no drop glue; the bytes are
        // overwritten in place and never read as a generator again.
        let bytes = unsafe {
            std::slice::from_raw_parts_mut(
                (&mut self.0 as *mut ChaCha20Rng).cast::<u8>(),
                std::mem::size_of::<ChaCha20Rng>(),
            )
        };
        bytes.zeroize();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The derivation as its documentation states it, computed with
    /// `rand_chacha` alone.
    #[test]
    fn derived_stream_is_chacha20_keyed_with_the_first_32_bytes_of_stream_id() {
        let master = [0x42u8; 32];
        let mut kdf = ChaCha20Rng::from_seed(master);
        kdf.set_stream(77);
        let mut key = [0u8; 32];
        kdf.fill_bytes(&mut key);
        let mut b = ChaCha20Rng::from_seed(key);
        SecretStream::with_derived(&master, 77, |a| {
            for _ in 0..100 {
                assert_eq!(a.next_u64(), b.next_u64());
            }
            a.set_word_pos(1000);
            b.set_word_pos(1000);
            assert_eq!(a.next_u64(), b.next_u64());
        });
        // Not the master's own stream: a stream's state never holds it.
        let mut plain = ChaCha20Rng::from_seed(master);
        plain.set_stream(77);
        SecretStream::with_derived(&master, 77, |a| assert_ne!(a.next_u64(), plain.next_u64()));
        // Other ids, other streams.
        let x = SecretStream::with_derived(&master, 78, |a| a.next_u64());
        let y = SecretStream::with_derived(&master, 77, |a| a.next_u64());
        assert_ne!(x, y);
    }

    /// Seeking forward, back, in place and far reads what setting the
    /// position reads.
    #[test]
    fn seeking_reads_what_setting_the_position_reads() {
        let key = [0x17u8; 32];
        let mut a = SecretStream(ChaCha20Rng::from_seed(key));
        let mut b = ChaCha20Rng::from_seed(key);
        for pos in [
            0u128, 0, 3, 12, 13, 36, 63, 64, 65, 130, 129, 200, 200, 7, 1000, 1064, 1065,
        ] {
            a.seek(pos);
            b.set_word_pos(pos);
            for _ in 0..5 {
                assert_eq!(a.next_u64(), b.next_u64(), "at word {pos}");
            }
        }
    }

    /// No word of the master key is in a derived stream's state.
    #[test]
    fn a_derived_stream_holds_no_master_key_word() {
        let master = *b"0123456789abcdef0123456789abcdef";
        let words: Vec<[u8; 4]> = master.chunks(4).map(|c| c.try_into().unwrap()).collect();
        SecretStream::with_derived(&master, 5, |s| {
            s.next_u64();
            // SAFETY: reading the plain-data state of a live value.
            let state = unsafe {
                std::slice::from_raw_parts(
                    (s as *const SecretStream).cast::<u8>(),
                    std::mem::size_of::<SecretStream>(),
                )
            };
            for w in &words {
                assert!(
                    !state.windows(4).any(|x| x == w),
                    "a master key word in the state"
                );
            }
        });
    }

    #[test]
    fn drop_leaves_no_key_words() {
        let key = *b"0123456789abcdef0123456789abcdef";
        let mut slot = std::mem::MaybeUninit::new(SecretStream(ChaCha20Rng::from_seed(key)));
        // SAFETY: initialised just above; dropped in place exactly once.
        unsafe { std::ptr::drop_in_place(slot.as_mut_ptr()) };
        // SAFETY: the bytes of the dropped value are still owned by `slot`.
        let after = unsafe {
            std::slice::from_raw_parts(
                slot.as_ptr().cast::<u8>(),
                std::mem::size_of::<SecretStream>(),
            )
        };
        assert!(after.iter().all(|&b| b == 0));
    }
}
