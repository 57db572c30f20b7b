//! Clearing the vector registers before an entry point returns.
//!
//! Key material passes through SIMD registers (memcpy, zeroize, GMP's
//! copies). A secret left in them after we return is spilled onto the
//! host's stack by the next code that saves the vector state — with lazy
//! binding, the dynamic loader's resolver on the host's next unresolved
//! call. [`clear_registers`] zeroes every vector register the CPU has
//! (and the caller-saved general registers) so nothing remains to spill.

/// Zeroes the vector registers (x86-64: all of xmm/ymm/zmm 0–15, and
/// zmm16–31 with AVX-512; aarch64: v0–v31) and the caller-saved general
/// registers. A no-op on other architectures.
#[inline(never)]
pub(crate) fn clear_registers() {
    #[cfg(target_arch = "x86_64")]
    x86::clear();
    #[cfg(target_arch = "aarch64")]
    // SAFETY: only zeroes caller-saved registers, declared as clobbered.
    unsafe {
        std::arch::asm!(
            "movi v0.16b, #0", "movi v1.16b, #0", "movi v2.16b, #0", "movi v3.16b, #0",
            "movi v4.16b, #0", "movi v5.16b, #0", "movi v6.16b, #0", "movi v7.16b, #0",
            "movi v16.16b, #0", "movi v17.16b, #0", "movi v18.16b, #0", "movi v19.16b, #0",
            "movi v20.16b, #0", "movi v21.16b, #0", "movi v22.16b, #0", "movi v23.16b, #0",
            "movi v24.16b, #0", "movi v25.16b, #0", "movi v26.16b, #0", "movi v27.16b, #0",
            "movi v28.16b, #0", "movi v29.16b, #0", "movi v30.16b, #0", "movi v31.16b, #0",
            out("v0") _, out("v1") _, out("v2") _, out("v3") _,
            out("v4") _, out("v5") _, out("v6") _, out("v7") _,
            out("v16") _, out("v17") _, out("v18") _, out("v19") _,
            out("v20") _, out("v21") _, out("v22") _, out("v23") _,
            out("v24") _, out("v25") _, out("v26") _, out("v27") _,
            out("v28") _, out("v29") _, out("v30") _, out("v31") _,
            options(nostack, nomem, preserves_flags),
        );
    }
    // v8–v15 are callee-saved on aarch64: their low halves are restored
    // by our own prologues, and the upper halves are cleared here too.
    #[cfg(target_arch = "aarch64")]
    // SAFETY: writes zero to the upper 64 bits of v8–v15 only (the lower
    // halves are callee-saved and left as they are).
    unsafe {
        std::arch::asm!(
            "mov v8.d[1], xzr",
            "mov v9.d[1], xzr",
            "mov v10.d[1], xzr",
            "mov v11.d[1], xzr",
            "mov v12.d[1], xzr",
            "mov v13.d[1], xzr",
            "mov v14.d[1], xzr",
            "mov v15.d[1], xzr",
            options(nostack, nomem, preserves_flags),
        );
    }
}

/// [`clear_registers`] before a step of a generation that may enter the
/// kernel with a futex — a search's lock, a hand-off to the pool, a wait
/// for it — where the registers are seen at leisure (a debugger, a core
/// dump, another process's ptrace). Tests record the registers there,
/// right after the clear ([`probe`]), and look for the secrets in them.
#[inline(always)]
pub(crate) fn clear_before_kernel() {
    clear_registers();
    #[cfg(test)]
    probe::record();
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::sync::atomic::{AtomicU8, Ordering};

    /// 0 = not probed, 1 = SSE only, 2 = AVX, 3 = AVX-512F.
    static LEVEL: AtomicU8 = AtomicU8::new(0);

    fn level() -> u8 {
        match LEVEL.load(Ordering::Relaxed) {
            0 => {
                let l = if std::arch::is_x86_feature_detected!("avx512f") {
                    3
                } else if std::arch::is_x86_feature_detected!("avx") {
                    2
                } else {
                    1
                };
                LEVEL.store(l, Ordering::Relaxed);
                l
            }
            l => l,
        }
    }

    pub(super) fn clear() {
        let l = level();
        // SAFETY: (all blocks) zeroing caller-saved registers (every
        // vector register is caller-saved in the SysV ABI), declared as
        // clobbered; AVX and AVX-512 forms only where the CPU has them.
        unsafe {
            if l >= 2 {
                // vzeroall: all of ymm/zmm 0–15.
                std::arch::asm!(
                    "vzeroall",
                    out("xmm0") _, out("xmm1") _, out("xmm2") _, out("xmm3") _,
                    out("xmm4") _, out("xmm5") _, out("xmm6") _, out("xmm7") _,
                    out("xmm8") _, out("xmm9") _, out("xmm10") _, out("xmm11") _,
                    out("xmm12") _, out("xmm13") _, out("xmm14") _, out("xmm15") _,
                    options(nostack, nomem, preserves_flags),
                );
            } else {
                std::arch::asm!(
                    "xorps xmm0, xmm0", "xorps xmm1, xmm1", "xorps xmm2, xmm2",
                    "xorps xmm3, xmm3", "xorps xmm4, xmm4", "xorps xmm5, xmm5",
                    "xorps xmm6, xmm6", "xorps xmm7, xmm7", "xorps xmm8, xmm8",
                    "xorps xmm9, xmm9", "xorps xmm10, xmm10", "xorps xmm11, xmm11",
                    "xorps xmm12, xmm12", "xorps xmm13, xmm13", "xorps xmm14, xmm14",
                    "xorps xmm15, xmm15",
                    out("xmm0") _, out("xmm1") _, out("xmm2") _, out("xmm3") _,
                    out("xmm4") _, out("xmm5") _, out("xmm6") _, out("xmm7") _,
                    out("xmm8") _, out("xmm9") _, out("xmm10") _, out("xmm11") _,
                    out("xmm12") _, out("xmm13") _, out("xmm14") _, out("xmm15") _,
                    options(nostack, nomem),
                );
            }
            if l >= 3 {
                // zmm16–31 exist only with AVX-512 (glibc's EVEX memcpy
                // uses them); vpxord zeroes the full 512 bits.
                std::arch::asm!(
                    "vpxord zmm16, zmm16, zmm16",
                    "vpxord zmm17, zmm17, zmm17",
                    "vpxord zmm18, zmm18, zmm18",
                    "vpxord zmm19, zmm19, zmm19",
                    "vpxord zmm20, zmm20, zmm20",
                    "vpxord zmm21, zmm21, zmm21",
                    "vpxord zmm22, zmm22, zmm22",
                    "vpxord zmm23, zmm23, zmm23",
                    "vpxord zmm24, zmm24, zmm24",
                    "vpxord zmm25, zmm25, zmm25",
                    "vpxord zmm26, zmm26, zmm26",
                    "vpxord zmm27, zmm27, zmm27",
                    "vpxord zmm28, zmm28, zmm28",
                    "vpxord zmm29, zmm29, zmm29",
                    "vpxord zmm30, zmm30, zmm30",
                    "vpxord zmm31, zmm31, zmm31",
                    options(nostack, nomem, preserves_flags),
                );
            }
            // Caller-saved general registers (rax carries no value here:
            // this function returns nothing).
            std::arch::asm!(
                "xor eax, eax", "xor ecx, ecx", "xor edx, edx", "xor esi, esi",
                "xor edi, edi", "xor r8d, r8d", "xor r9d, r9d", "xor r10d, r10d",
                "xor r11d, r11d",
                out("rax") _, out("rcx") _, out("rdx") _, out("rsi") _, out("rdi") _,
                out("r8") _, out("r9") _, out("r10") _, out("r11") _,
                options(nostack, nomem),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn clearing_returns_and_keeps_working() {
        let x = std::hint::black_box(1.5f64);
        super::clear_registers();
        assert_eq!(std::hint::black_box(x) * 2.0, 3.0);
    }
}

/// Test-only snapshots of the vector registers at the points where a
/// search's worker may enter the kernel (its coordination: locks,
/// wake-ups, hand-offs), taken right after the registers are cleared
/// there: a test runs generations while [`probe::start`]'s guard lives
/// and then looks for its secrets in every snapshot.
#[cfg(test)]
pub(crate) mod probe {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Mutex, MutexGuard};

    /// Bytes of one snapshot: zmm0–31 (or ymm0–15, or xmm0–15, by what
    /// the CPU has), unused tail zero.
    pub(crate) const SNAPSHOT: usize = 32 * 64;

    static ON: AtomicBool = AtomicBool::new(false);
    static SNAPSHOTS: Mutex<Vec<[u8; SNAPSHOT]>> = Mutex::new(Vec::new());
    static ONE_TEST: Mutex<()> = Mutex::new(());

    /// Snapshots are taken while the guard lives (one probing test at a
    /// time; searches of other tests running meanwhile add theirs).
    pub(crate) struct Probing {
        _one: MutexGuard<'static, ()>,
    }

    impl Drop for Probing {
        fn drop(&mut self) {
            ON.store(false, Ordering::SeqCst);
            SNAPSHOTS.lock().unwrap_or_else(|p| p.into_inner()).clear();
        }
    }

    pub(crate) fn start() -> Probing {
        let one = ONE_TEST.lock().unwrap_or_else(|p| p.into_inner());
        SNAPSHOTS.lock().unwrap_or_else(|p| p.into_inner()).clear();
        ON.store(true, Ordering::SeqCst);
        Probing { _one: one }
    }

    /// The snapshots so far.
    pub(crate) fn take() -> Vec<[u8; SNAPSHOT]> {
        std::mem::take(&mut *SNAPSHOTS.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Records the vector registers as they are (while probing).
    #[inline(never)]
    pub(crate) fn record() {
        if !ON.load(Ordering::Relaxed) {
            return;
        }
        // Not initialised first: zeroing it would go through a vector
        // register (the very thing to record).
        let mut snap = std::mem::MaybeUninit::<[u8; SNAPSHOT]>::uninit();
        let at = snap.as_mut_ptr().cast::<u8>();
        #[cfg(target_arch = "x86_64")]
        // SAFETY: stores registers into `snap` (2048 bytes; the widest
        // form writes exactly that), on CPUs that have them.
        let written = unsafe {
            if std::arch::is_x86_feature_detected!("avx512f") {
                std::arch::asm!(
                    "vmovdqu64 [{b}], zmm0", "vmovdqu64 [{b} + 64], zmm1",
                    "vmovdqu64 [{b} + 128], zmm2", "vmovdqu64 [{b} + 192], zmm3",
                    "vmovdqu64 [{b} + 256], zmm4", "vmovdqu64 [{b} + 320], zmm5",
                    "vmovdqu64 [{b} + 384], zmm6", "vmovdqu64 [{b} + 448], zmm7",
                    "vmovdqu64 [{b} + 512], zmm8", "vmovdqu64 [{b} + 576], zmm9",
                    "vmovdqu64 [{b} + 640], zmm10", "vmovdqu64 [{b} + 704], zmm11",
                    "vmovdqu64 [{b} + 768], zmm12", "vmovdqu64 [{b} + 832], zmm13",
                    "vmovdqu64 [{b} + 896], zmm14", "vmovdqu64 [{b} + 960], zmm15",
                    "vmovdqu64 [{b} + 1024], zmm16", "vmovdqu64 [{b} + 1088], zmm17",
                    "vmovdqu64 [{b} + 1152], zmm18", "vmovdqu64 [{b} + 1216], zmm19",
                    "vmovdqu64 [{b} + 1280], zmm20", "vmovdqu64 [{b} + 1344], zmm21",
                    "vmovdqu64 [{b} + 1408], zmm22", "vmovdqu64 [{b} + 1472], zmm23",
                    "vmovdqu64 [{b} + 1536], zmm24", "vmovdqu64 [{b} + 1600], zmm25",
                    "vmovdqu64 [{b} + 1664], zmm26", "vmovdqu64 [{b} + 1728], zmm27",
                    "vmovdqu64 [{b} + 1792], zmm28", "vmovdqu64 [{b} + 1856], zmm29",
                    "vmovdqu64 [{b} + 1920], zmm30", "vmovdqu64 [{b} + 1984], zmm31",
                    b = in(reg) at,
                    options(nostack, preserves_flags),
                );
                2048
            } else if std::arch::is_x86_feature_detected!("avx") {
                std::arch::asm!(
                    "vmovdqu [{b}], ymm0", "vmovdqu [{b} + 32], ymm1",
                    "vmovdqu [{b} + 64], ymm2", "vmovdqu [{b} + 96], ymm3",
                    "vmovdqu [{b} + 128], ymm4", "vmovdqu [{b} + 160], ymm5",
                    "vmovdqu [{b} + 192], ymm6", "vmovdqu [{b} + 224], ymm7",
                    "vmovdqu [{b} + 256], ymm8", "vmovdqu [{b} + 288], ymm9",
                    "vmovdqu [{b} + 320], ymm10", "vmovdqu [{b} + 352], ymm11",
                    "vmovdqu [{b} + 384], ymm12", "vmovdqu [{b} + 416], ymm13",
                    "vmovdqu [{b} + 448], ymm14", "vmovdqu [{b} + 480], ymm15",
                    b = in(reg) at,
                    options(nostack, preserves_flags),
                );
                512
            } else {
                std::arch::asm!(
                    "movdqu [{b}], xmm0", "movdqu [{b} + 16], xmm1",
                    "movdqu [{b} + 32], xmm2", "movdqu [{b} + 48], xmm3",
                    "movdqu [{b} + 64], xmm4", "movdqu [{b} + 80], xmm5",
                    "movdqu [{b} + 96], xmm6", "movdqu [{b} + 112], xmm7",
                    "movdqu [{b} + 128], xmm8", "movdqu [{b} + 144], xmm9",
                    "movdqu [{b} + 160], xmm10", "movdqu [{b} + 176], xmm11",
                    "movdqu [{b} + 192], xmm12", "movdqu [{b} + 208], xmm13",
                    "movdqu [{b} + 224], xmm14", "movdqu [{b} + 240], xmm15",
                    b = in(reg) at,
                    options(nostack, preserves_flags),
                );
                256
            }
        };
        #[cfg(target_arch = "aarch64")]
        // SAFETY: stores v0–v31 (512 bytes) into `snap`.
        let written = unsafe {
            std::arch::asm!(
                "st1 {{v0.16b, v1.16b, v2.16b, v3.16b}}, [{b}], #64",
                "st1 {{v4.16b, v5.16b, v6.16b, v7.16b}}, [{b}], #64",
                "st1 {{v8.16b, v9.16b, v10.16b, v11.16b}}, [{b}], #64",
                "st1 {{v12.16b, v13.16b, v14.16b, v15.16b}}, [{b}], #64",
                "st1 {{v16.16b, v17.16b, v18.16b, v19.16b}}, [{b}], #64",
                "st1 {{v20.16b, v21.16b, v22.16b, v23.16b}}, [{b}], #64",
                "st1 {{v24.16b, v25.16b, v26.16b, v27.16b}}, [{b}], #64",
                "st1 {{v28.16b, v29.16b, v30.16b, v31.16b}}, [{b}], #64",
                b = inout(reg) at => _,
                options(nostack, preserves_flags),
            );
            512
        };
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        let written = 0;
        // SAFETY: `written` bytes were stored above; the rest is zeroed
        // here, so the whole array is initialised.
        let snap = unsafe {
            std::ptr::write_bytes(at.add(written), 0, SNAPSHOT - written);
            snap.assume_init()
        };
        SNAPSHOTS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(snap);
    }
}
