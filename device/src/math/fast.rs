//! The `-use_fast_math` versions (`f32` only: the flag leaves `double`
//! alone): the PTX that nvcc emits for `sqrtf`, `rsqrtf`, `expf`, `exp2f`,
//! `logf`, `log2f`, `sinf`, `cosf`, `powf` and `/` under `-use_fast_math`
//! (CUDA 13, sm_90: checked by compiling them and reading the PTX), i.e.
//! CUDA's intrinsics `__expf`, `__logf`, `__log2f`, `__sinf`, `__cosf`,
//! `__powf`, `__fdividef`. All flush subnormal inputs and results to zero
//! (`.ftz`).
//!
//! Error bounds are NVIDIA's (CUDA C++ Programming Guide, "Mathematical
//! Functions", table "Functions Affected by -use_fast_math" and the
//! intrinsic functions' table). On the CPU backend each function flushes
//! subnormals like the GPU and computes the accurate value with std, which
//! lies within those bounds of the GPU's result (not the same bits).

use super::ptx;

/// `sqrt(x)`: `sqrt.approx.ftz.f32` (`sqrtf` with `-prec-sqrt=false`).
#[inline(always)]
pub fn sqrt(x: f32) -> f32 {
    ptx::sqrt_approx_ftz_f32(x)
}

/// `1/sqrt(x)`: `rsqrt.approx.ftz.f32` (2 ulp).
#[inline(always)]
pub fn rsqrt(x: f32) -> f32 {
    ptx::rsqrt_approx_ftz_f32(x)
}

/// `e^x` as `__expf`: `ex2.approx.ftz.f32(x * log2(e))`; max error
/// `2 + floor(|1.173 x|)` ulp (the product's rounding, magnified by `x`).
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    ptx::ex2_approx_ftz_f32(ptx::mul_ftz_f32(x, core::f32::consts::LOG2_E))
}

/// `2^x`: `ex2.approx.ftz.f32` (2 ulp).
#[inline(always)]
pub fn exp2(x: f32) -> f32 {
    ptx::ex2_approx_ftz_f32(x)
}

/// `ln(x)` as `__logf`: `lg2.approx.ftz.f32(x) * ln(2)`; absolute error
/// `2^-21.41` for `x` in `[0.5, 2]`, 3 ulp elsewhere.
#[inline(always)]
pub fn log(x: f32) -> f32 {
    ptx::mul_ftz_f32(ptx::lg2_approx_ftz_f32(x), core::f32::consts::LN_2)
}

/// `log2(x)` as `__log2f`: `lg2.approx.ftz.f32`; absolute error `2^-22`
/// for `x` in `[0.5, 2]`, 2 ulp elsewhere.
#[inline(always)]
pub fn log2(x: f32) -> f32 {
    ptx::lg2_approx_ftz_f32(x)
}

/// `sin(x)` as `__sinf`: `sin.approx.ftz.f32`; absolute error `2^-21.41`
/// for `x` in `[-pi, pi]`, larger outside (no range reduction).
#[inline(always)]
pub fn sin(x: f32) -> f32 {
    ptx::sin_approx_ftz_f32(x)
}

/// `cos(x)` as `__cosf`: `cos.approx.ftz.f32`; absolute error `2^-21.19`
/// for `x` in `[-pi, pi]`, larger outside.
#[inline(always)]
pub fn cos(x: f32) -> f32 {
    ptx::cos_approx_ftz_f32(x)
}

/// `x^y` as `__powf`: `ex2.approx.ftz(y * lg2.approx.ftz(x))`, for `x > 0`
/// (a negative `x` gives NaN); its error is that of `exp2` of a product
/// whose absolute error is `|y|` times `log2`'s.
#[inline(always)]
pub fn pow(x: f32, y: f32) -> f32 {
    ptx::ex2_approx_ftz_f32(ptx::mul_ftz_f32(y, ptx::lg2_approx_ftz_f32(x)))
}

/// `a / b` as `__fdividef`: `div.approx.ftz.f32`; 2 ulp for
/// `2^-126 <= |b| <= 2^126` (for `2^126 < |b| < 2^128` the GPU returns 0,
/// the host the quotient).
#[inline(always)]
pub fn div(a: f32, b: f32) -> f32 {
    ptx::div_approx_ftz_f32(a, b)
}
