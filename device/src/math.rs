//! Floating-point operations with the exact PTX instruction.

use core::arch::asm;

/// `fma.rn.f32`: `a * b + c` with one rounding.
///
/// rustc never contracts `a * b + c` into an FMA on its own (nvcc does, by
/// default), so kernels that accumulate products call this to get `FFMA`.
#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    let result: f32;
    // SAFETY: pure arithmetic.
    unsafe {
        asm!("fma.rn.f32 {result}, {a}, {b}, {c};", result = out(reg32) result,
             a = in(reg32) a, b = in(reg32) b, c = in(reg32) c,
             options(pure, nomem, nostack, preserves_flags));
    }
    result
}
