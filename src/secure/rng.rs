//! [`SecretStream`]: a ChaCha20 stream whose whole state (key words,
//! counter, buffered output) is overwritten with zeros when it is dropped.
//!
//! `rand_chacha`'s generator keeps the 32-byte key in its state and
//! buffered key stream beside it, and neither is wiped on drop. Every
//! stream primeforge derives from a generation seed goes through this
//! wrapper, so no stream state outlives its use.

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use zeroize::Zeroize;

/// A seeded ChaCha20 stream, wiped on drop.
pub struct SecretStream(ChaCha20Rng);

impl SecretStream {
    /// The ChaCha20 stream `stream` of `key`. The key's bytes pass through
    /// one stack array, wiped before returning.
    pub fn new(key: &[u8; 32], stream: u64) -> SecretStream {
        let mut k = *key;
        let mut rng = SecretStream(ChaCha20Rng::from_seed(k));
        k.zeroize();
        rng.0.set_stream(stream);
        rng
    }

    /// Moves to word `pos` of the stream (see `ChaCha20Rng::set_word_pos`).
    pub fn set_word_pos(&mut self, pos: u128) {
        self.0.set_word_pos(pos);
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

    #[test]
    fn same_output_as_rand_chacha() {
        let key = [0x42u8; 32];
        let mut a = SecretStream::new(&key, 77);
        let mut b = ChaCha20Rng::from_seed(key);
        b.set_stream(77);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        a.set_word_pos(1000);
        b.set_word_pos(1000);
        assert_eq!(a.next_u64(), b.next_u64());
    }

    #[test]
    fn drop_leaves_no_key_words() {
        let key = *b"0123456789abcdef0123456789abcdef";
        let mut slot = std::mem::MaybeUninit::new(SecretStream::new(&key, 3));
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
