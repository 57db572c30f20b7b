//! The first words of sixteen derived streams at once: for ids `first`
//! to `first + 15`, the words [`SecretStream::with_derived`] would give
//! (ChaCha20 keyed with the first 32 bytes of ChaCha20(master, stream
//! id), read from its start), computed in the sixteen 32-bit lanes of
//! AVX-512 registers, one stream per lane.
//!
//! A prime search draws one short stream per candidate (an RSA-2048
//! prime's candidate takes 17 words). Through `rand_chacha` each draw
//! computes two batches of four blocks — one for the derived key, of which
//! it reads 32 bytes, one for the candidate, of which it reads 2⅛ blocks —
//! and each batch is bound by the latency of ChaCha's 20 rounds, so
//! sixteen candidates cost 32 such batches. In the lanes, the sixteen
//! derived keys are one batch and every three blocks of the sixteen
//! streams are three more; the keys stay in registers between the two.
//!
//! The same streams as `rand_chacha`'s (tests below compare every lane's
//! words with [`SecretStream::with_derived`]): ChaCha20 with the original
//! 64-bit block counter in words 12–13 and the 64-bit stream id in words
//! 14–15; a stream's 64-bit words are its 32-bit words paired low first.
//!
//! The registers that held the master key and the derived keys are
//! cleared when the pass ends ([`super::clear_registers`]), and the
//! kernel's frame is overwritten; the words then pass through registers
//! once more on their way into the caller's buffer, which the caller
//! wipes, clearing the registers after its copies (`prime::stream`'s
//! batches do).
//!
//! [`SecretStream::with_derived`]: super::SecretStream::with_derived

// The AVX-512 intrinsics are stable from Rust 1.89, above the crate's MSRV
// (1.85): build.rs sets `pf_avx512` only for a compiler that has them, and
// without it the kernel is not compiled (`available()` is false).
#![allow(clippy::incompatible_msrv)]

/// Streams per call.
pub(crate) const LANES: usize = 16;

/// Most 64-bit words per stream a call draws (five ChaCha blocks: the
/// candidates of primes up to 2048 bits, RSA-4096's, take at most 33).
pub(crate) const MAX_WORDS: usize = 5 * 8;

/// Whether [`derived_words`] runs on this CPU (AVX-512F).
pub(crate) fn available() -> bool {
    #[cfg(all(target_arch = "x86_64", pf_avx512))]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(all(target_arch = "x86_64", pf_avx512)))]
    {
        false
    }
}

/// Writes the first `words` 64-bit words of the derived stream of id
/// `first + i` to `out[i * words..(i + 1) * words]`, for i < [`LANES`].
/// False (and `out` untouched) where the lanes do not apply: no AVX-512F,
/// `words` above [`MAX_WORDS`], `out` shorter than `LANES * words`, or
/// the ids would pass 2^64.
pub(crate) fn derived_words(master: &[u8; 32], first: u64, words: usize, out: &mut [u64]) -> bool {
    if !available()
        || words == 0
        || words > MAX_WORDS
        || out.len() < LANES * words
        || first.checked_add(LANES as u64 - 1).is_none()
    {
        return false;
    }
    #[cfg(all(target_arch = "x86_64", pf_avx512))]
    {
        let blocks = (2 * words).div_ceil(16);
        let mut buf = [[[0u32; LANES]; 16]; MAX_WORDS / 8];
        // SAFETY: AVX-512F is present (checked above); `blocks` ≤ 5, the
        // blocks `buf` has room for.
        unsafe { avx512::streams(master, first, blocks, &mut buf) };
        super::clear_registers();
        for (lane, dst) in out.chunks_exact_mut(words).take(LANES).enumerate() {
            for (j, w) in dst.iter_mut().enumerate() {
                let (lo, hi) = (2 * j, 2 * j + 1);
                *w = u64::from(buf[lo / 16][lo % 16][lane])
                    | (u64::from(buf[hi / 16][hi % 16][lane]) << 32);
            }
        }
        zeroize::Zeroize::zeroize(buf.as_flattened_mut().as_flattened_mut());
        true
    }
    #[cfg(not(all(target_arch = "x86_64", pf_avx512)))]
    {
        let _ = (master, first, out);
        false
    }
}

#[cfg(all(target_arch = "x86_64", pf_avx512))]
mod avx512 {
    use std::arch::x86_64::*;

    /// "expand 32-byte k".
    const SIGMA: [u32; 4] = [0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574];

    /// ChaCha20's 20 rounds on sixteen states (word w of lane i in
    /// `x[w]`'s lane i), plus the input: the sixteen output blocks.
    #[inline(always)]
    unsafe fn block(input: &[__m512i; 16]) -> [__m512i; 16] {
        let mut x = *input;
        macro_rules! qr {
            ($a:expr, $b:expr, $c:expr, $d:expr) => {
                x[$a] = _mm512_add_epi32(x[$a], x[$b]);
                x[$d] = _mm512_rol_epi32::<16>(_mm512_xor_si512(x[$d], x[$a]));
                x[$c] = _mm512_add_epi32(x[$c], x[$d]);
                x[$b] = _mm512_rol_epi32::<12>(_mm512_xor_si512(x[$b], x[$c]));
                x[$a] = _mm512_add_epi32(x[$a], x[$b]);
                x[$d] = _mm512_rol_epi32::<8>(_mm512_xor_si512(x[$d], x[$a]));
                x[$c] = _mm512_add_epi32(x[$c], x[$d]);
                x[$b] = _mm512_rol_epi32::<7>(_mm512_xor_si512(x[$b], x[$c]));
            };
        }
        for _ in 0..10 {
            qr!(0, 4, 8, 12);
            qr!(1, 5, 9, 13);
            qr!(2, 6, 10, 14);
            qr!(3, 7, 11, 15);
            qr!(0, 5, 10, 15);
            qr!(1, 6, 11, 12);
            qr!(2, 7, 8, 13);
            qr!(3, 4, 9, 14);
        }
        for (o, i) in x.iter_mut().zip(input) {
            *o = _mm512_add_epi32(*o, *i);
        }
        x
    }

    /// Blocks 0 to `blocks − 1` of the derived streams of ids `first` to
    /// `first + 15` (lane i: id `first + i`) into `out[b][w][i]`.
    ///
    /// # Safety
    /// The CPU has AVX-512F; `blocks ≤ out.len()`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn streams(
        master: &[u8; 32],
        first: u64,
        blocks: usize,
        out: &mut [[[u32; 16]; 16]],
    ) {
        let ids = _mm512_add_epi64(
            _mm512_set1_epi64(first as i64),
            _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0),
        );
        let ids_hi8 = _mm512_add_epi64(ids, _mm512_set1_epi64(8));
        // Low and high 32-bit halves of the sixteen ids, lane i = id
        // first + i.
        let idx_lo = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
        let idx_hi = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
        let id_lo = _mm512_permutex2var_epi32(ids, idx_lo, ids_hi8);
        let id_hi = _mm512_permutex2var_epi32(ids, idx_hi, ids_hi8);
        let zero = _mm512_setzero_si512();
        let mut input = [zero; 16];
        for (w, s) in SIGMA.iter().enumerate() {
            input[w] = _mm512_set1_epi32(*s as i32);
        }
        for (w, k) in master.chunks_exact(4).enumerate() {
            input[4 + w] = _mm512_set1_epi32(u32::from_le_bytes(k.try_into().unwrap()) as i32);
        }
        // Counter 0 (words 12, 13), stream id (words 14, 15).
        input[14] = id_lo;
        input[15] = id_hi;
        let mut kdf = block(&input);
        // Each lane's derived key: the first 32 bytes (8 words) of its
        // block; its stream is number 0.
        input[4..12].copy_from_slice(&kdf[..8]);
        input[14] = zero;
        input[15] = zero;
        for (b, dst) in out.iter_mut().take(blocks).enumerate() {
            input[12] = _mm512_set1_epi32(b as i32);
            let x = block(&input);
            for (w, v) in x.iter().enumerate() {
                _mm512_storeu_si512(dst[w].as_mut_ptr().cast(), *v);
            }
        }
        // The state (the derived keys; before them the seed) and the key
        // block, wherever the compiler kept them in this frame.
        for r in input.iter_mut().chain(kdf.iter_mut()) {
            // SAFETY: a valid, aligned place of this type; volatile so the
            // store is kept.
            std::ptr::write_volatile(r, zero);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secure::SecretStream;

    fn reference(master: &[u8; 32], id: u64, words: usize) -> Vec<u64> {
        SecretStream::with_derived(master, id, |s| (0..words).map(|_| s.next_u64()).collect())
    }

    /// Every lane gives the words of its id's derived stream, for every
    /// length up to the most a call draws, for ids whose halves carry
    /// (a low half about to wrap) and for purpose-tagged ids.
    #[test]
    fn lanes_give_the_derived_streams() {
        if !available() {
            crate::capability::skip(
                "avx512",
                "AVX-512F is not in use here (not on this CPU, or not in this build): the sixteen-lane streams are not exercised",
            );
            return;
        }
        let master: [u8; 32] = std::array::from_fn(|i| (i as u8).wrapping_mul(37) ^ 0xa5);
        for first in [
            0u64,
            16,
            (1 << 32) - 5,
            (1 << 56) | 4096,
            (2 << 56) | 0xffff_fff0,
        ] {
            for words in [1, 2, 8, 9, 16, 17, 25, 33, MAX_WORDS] {
                let mut out = vec![0u64; LANES * words];
                assert!(derived_words(&master, first, words, &mut out));
                for (i, got) in out.chunks(words).enumerate() {
                    assert_eq!(
                        got,
                        reference(&master, first + i as u64, words),
                        "id {first} + {i}, {words} words"
                    );
                }
            }
        }
    }

    #[test]
    fn what_the_lanes_cannot_do_is_declined() {
        let master = [7u8; 32];
        let mut out = vec![0x55u64; LANES * (MAX_WORDS + 1)];
        assert!(!derived_words(&master, 0, MAX_WORDS + 1, &mut out));
        assert!(!derived_words(&master, 0, 0, &mut out));
        assert!(!derived_words(&master, u64::MAX - 3, 4, &mut out));
        assert!(!derived_words(&master, 0, 4, &mut out[..LANES * 4 - 1]));
        assert!(out.iter().all(|&w| w == 0x55), "a declined call wrote");
    }
}
