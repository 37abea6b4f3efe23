//! A kernel that calls every function of `clustered_device::math`, accurate
//! and fast, for `f32` and `f64`: it is not part of the suite (no schedule,
//! nothing measures it); it is here so that the suite's PTX build compiles
//! these functions for nvptx64 and `tests/kernel_resources.rs` (ptxas)
//! assembles them, so a function whose PTX ptxas rejects (an undefined
//! `__nv_*` call, a misspelt instruction) fails the build's tests.

use clustered_device::kernel;
use clustered_device::math::{
    abs, ceil, cos, exp, exp2, fast, floor, fma, log, log2, max, min, pow, rsqrt, sin, sqrt,
};
use clustered_device::thread::index_1d;

/// Results per element of [`device_math`](fn@device_math): 15 accurate functions of `f32`,
/// 10 fast ones, 15 of `f64`.
pub const DEVICE_MATH_F32_RESULTS: usize = 25;
/// Results per element of [`device_math`](fn@device_math) in `out64`.
pub const DEVICE_MATH_F64_RESULTS: usize = 15;

/// For `i < n`: `out32[25 i ..]` = the accurate `f32` functions of `x[i]`
/// (with `y[i]` as the second operand), then the fast ones;
/// `out64[15 i ..]` = the `f64` functions of `x[i]` and `y[i]` widened.
/// Launch: any 1D grid covering `n`.
#[kernel]
pub unsafe fn device_math(x: *const f32, y: *const f32, out32: *mut f32, out64: *mut f64, n: u32) {
    let i = index_1d();
    if i >= n {
        return;
    }
    let (a, b) = (*x.add(i as usize), *y.add(i as usize));
    let o = out32.add(i as usize * DEVICE_MATH_F32_RESULTS);
    let results32 = [
        sqrt(a),
        rsqrt(a),
        exp(a),
        exp2(a),
        log(a),
        log2(a),
        sin(a),
        cos(a),
        pow(a, b),
        fma(a, b, 1.0),
        abs(a),
        min(a, b),
        max(a, b),
        floor(a),
        ceil(a),
        fast::sqrt(a),
        fast::rsqrt(a),
        fast::exp(a),
        fast::exp2(a),
        fast::log(a),
        fast::log2(a),
        fast::sin(a),
        fast::cos(a),
        fast::pow(a, b),
        fast::div(a, b),
    ];
    for (k, r) in results32.into_iter().enumerate() {
        *o.add(k) = r;
    }
    let (a, b) = (f64::from(a), f64::from(b));
    let o = out64.add(i as usize * DEVICE_MATH_F64_RESULTS);
    let results64 = [
        sqrt(a),
        rsqrt(a),
        exp(a),
        exp2(a),
        log(a),
        log2(a),
        sin(a),
        cos(a),
        pow(a, b),
        fma(a, b, 1.0),
        abs(a),
        min(a, b),
        max(a, b),
        floor(a),
        ceil(a),
    ];
    for (k, r) in results64.into_iter().enumerate() {
        *o.add(k) = r;
    }
}
