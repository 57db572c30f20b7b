//! [`SecretVec`]: a fixed-length array of plain integers (limbs) for secret
//! intermediate values, in the secret arena ([`super::arena`]) and wiped
//! when dropped. Falls back to the C heap (still wiped on drop) where the
//! arena is unavailable or the array is larger than its biggest block.

use std::ptr::NonNull;

use zeroize::Zeroize;

use super::arena;

/// Integer types a [`SecretVec`] may hold: plain data for which all-zero
/// bytes are a valid value.
pub(crate) trait Limb: Copy + Default + zeroize::DefaultIsZeroes + 'static {}
impl Limb for u64 {}
impl Limb for i64 {}

/// A wiped-on-drop array of limbs in the secret arena.
pub(crate) struct SecretVec<T: Limb> {
    ptr: NonNull<T>,
    len: usize,
    /// The C-heap fallback that owns the memory, when not in the arena.
    heap: Option<Vec<T>>,
}

// SAFETY: SecretVec owns its memory exclusively, like a Vec<T>.
unsafe impl<T: Limb + Send> Send for SecretVec<T> {}
// SAFETY: shared access only reads, like a Vec<T>.
unsafe impl<T: Limb + Sync> Sync for SecretVec<T> {}

impl<T: Limb> SecretVec<T> {
    /// `len` zeros.
    pub(crate) fn zeroed(len: usize) -> SecretVec<T> {
        let bytes = len.max(1) * std::mem::size_of::<T>();
        if let Some(p) = arena::alloc(bytes) {
            let ptr = p.cast::<T>();
            // SAFETY: the block holds `bytes` ≥ len·size_of::<T>() bytes,
            // 16-byte aligned; zero is a valid T.
            unsafe { std::ptr::write_bytes(ptr.as_ptr(), 0, len) };
            return SecretVec {
                ptr,
                len,
                heap: None,
            };
        }
        arena::note_fallback();
        let mut v = vec![T::default(); len.max(1)];
        let ptr = NonNull::new(v.as_mut_ptr()).expect("Vec pointer");
        SecretVec {
            ptr,
            len,
            heap: Some(v),
        }
    }

    /// A copy of `src`.
    pub(crate) fn from_slice(src: &[T]) -> SecretVec<T> {
        let mut v = SecretVec::zeroed(src.len());
        v.copy_from_slice(src);
        v
    }

    /// Shortens to `len` elements, wiping the rest.
    #[cfg(test)]
    pub(crate) fn truncate(&mut self, len: usize) {
        if len < self.len {
            self[len..].zeroize();
            self.len = len;
        }
    }
}

/// A fixed-length array of words in the secret arena (a [`SecretVec`])
/// that threads read and write at the same time, every access atomic
/// (`Relaxed`: the callers order them, as a sequence lock does with a
/// tag and fences); wiped when dropped.
pub(crate) struct SharedWords {
    /// Owns the memory and wipes it on drop; not read or written through
    /// otherwise once `ptr` is taken.
    _owner: SecretVec<u64>,
    ptr: NonNull<u64>,
    len: usize,
}

// SAFETY: the words are reached only through atomics (`word`); the owner
// is touched again only when dropped, with exclusive access.
unsafe impl Send for SharedWords {}
// SAFETY: as above.
unsafe impl Sync for SharedWords {}

impl SharedWords {
    /// `len` zero words.
    pub(crate) fn zeroed(len: usize) -> SharedWords {
        let mut owner = SecretVec::<u64>::zeroed(len);
        let ptr = NonNull::new(owner.as_mut_ptr()).expect("SecretVec pointer");
        SharedWords {
            _owner: owner,
            ptr,
            len,
        }
    }

    fn word(&self, i: usize) -> &std::sync::atomic::AtomicU64 {
        assert!(i < self.len, "word {i} of {}", self.len);
        // SAFETY: word i lies in the owner's `len` words, 8-byte aligned
        // (arena blocks are 16-byte aligned, a Vec<u64>'s buffer 8), alive
        // as long as `self`; after construction every access to them is
        // atomic (this function) until the owner is dropped.
        unsafe { std::sync::atomic::AtomicU64::from_ptr(self.ptr.as_ptr().add(i)) }
    }

    /// Word `i` (a relaxed atomic load).
    pub(crate) fn load(&self, i: usize) -> u64 {
        self.word(i).load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Sets word `i` (a relaxed atomic store).
    pub(crate) fn store(&self, i: usize, v: u64) {
        self.word(i).store(v, std::sync::atomic::Ordering::Relaxed)
    }
}

impl<T: Limb> Clone for SecretVec<T> {
    fn clone(&self) -> SecretVec<T> {
        SecretVec::from_slice(self)
    }
}

impl<T: Limb> std::ops::Deref for SecretVec<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` holds `len` initialised elements for our lifetime.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Limb> std::ops::DerefMut for SecretVec<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as above, and `&mut self` is exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Limb> Drop for SecretVec<T> {
    fn drop(&mut self) {
        match self.heap.as_mut() {
            Some(v) => v.zeroize(),
            // SAFETY: the block came from `arena::alloc` and is dropped once
            // (`arena::free` wipes the whole block).
            None => unsafe { arena::free(self.ptr.as_ptr().cast()) },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaves_like_a_wiped_array() {
        let mut v = SecretVec::<u64>::zeroed(40);
        assert_eq!(v.len(), 40);
        assert!(v.iter().all(|&x| x == 0));
        v[3] = 7;
        v.truncate(4);
        assert_eq!(&v[..], &[0, 0, 0, 7]);
        assert!(arena::owns(v.as_ptr().cast()));
        let w = SecretVec::from_slice(&[1i64, -2, 3]);
        assert_eq!(&w[..], &[1, -2, 3]);
        let empty = SecretVec::<u64>::zeroed(0);
        assert!(empty.is_empty());
        // Larger than the arena's biggest block: the heap, still usable.
        let big = SecretVec::<u64>::zeroed(1 << 19);
        assert!(!arena::owns(big.as_ptr().cast()));
        assert_eq!(big.len(), 1 << 19);
    }

    #[test]
    fn shared_words_are_read_and_written_from_many_threads() {
        let w = SharedWords::zeroed(64);
        assert!(arena::owns(w.ptr.as_ptr().cast()));
        std::thread::scope(|s| {
            for t in 0..4usize {
                let w = &w;
                s.spawn(move || {
                    for i in (t..64).step_by(4) {
                        w.store(i, (i * i) as u64);
                    }
                });
            }
        });
        assert!((0..64).all(|i| w.load(i) == (i * i) as u64));
    }
}
