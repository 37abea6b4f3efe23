//! CUDA's fast intrinsics as nvcc compiles them by default (without
//! `-use_fast_math`, so without `-ftz`): `__expf`, `__logf`, `__fdividef`
//! and `rsqrtf` are the PTX that nvcc emits for them (CUDA 13, sm_90:
//! checked by compiling the twin of `kernels::black_scholes_fast` and
//! reading its PTX). Subnormal inputs and results are kept, unlike
//! [`super::fast`]'s, which are the `-use_fast_math` versions; a kernel
//! ported from CUDA C++ that calls the intrinsics gets the same bits with
//! these.
//!
//! On the CPU backend each computes its accurate value with std, which
//! lies within NVIDIA's bounds of the GPU's result (not the same bits).

use super::ptx;

/// `e^x` as `__expf`: `ex2.approx.f32(x * log2(e))`, the product rounded;
/// max error `2 + floor(|1.173 x|)` ulp.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    ptx::ex2_approx_f32(x * core::f32::consts::LOG2_E)
}

/// `ln(x)` as `__logf`: `lg2.approx.f32(x) * ln(2)`; absolute error
/// `2^-21.41` for `x` in `[0.5, 2]`, 3 ulp elsewhere.
#[inline(always)]
pub fn log(x: f32) -> f32 {
    ptx::lg2_approx_f32(x) * core::f32::consts::LN_2
}

/// `a / b` as `__fdividef`: `div.approx.f32`; 2 ulp for
/// `2^-126 <= |b| <= 2^126`.
#[inline(always)]
pub fn div(a: f32, b: f32) -> f32 {
    ptx::div_approx_f32(a, b)
}

/// `1/sqrt(x)` as `rsqrtf`: `rsqrt.approx.f32`, 2 ulp.
#[inline(always)]
pub fn rsqrt(x: f32) -> f32 {
    ptx::rsqrt_approx_f32(x)
}
