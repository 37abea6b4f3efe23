//! Floating-point operations with the exact PTX instruction.

/// `fma.rn.f32`: `a * b + c` with one rounding.
///
/// rustc does not contract `a * b + c` into an FMA (nvcc does, by default):
/// the SDK SGEMM compiled to FMUL + FADD with no FFMA until it called this
/// (`cuobjdump -sass`; `tests/kernel_resources.rs` prints the counts). The
/// CPU backend computes the same fused result, bit for bit.
#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let result: f32;
        // SAFETY: pure arithmetic.
        unsafe {
            core::arch::asm!("fma.rn.f32 {result}, {a}, {b}, {c};", result = out(reg32) result,
                 a = in(reg32) a, b = in(reg32) b, c = in(reg32) c,
                 options(pure, nomem, nostack, preserves_flags));
        }
        result
    }
    #[cfg(not(target_arch = "nvptx64"))]
    a.mul_add(b, c)
}
