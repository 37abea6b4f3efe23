// The elementary functions of the suite: `exp`, `ln`, `sqrt` (and `abs`) in
// plain `core` Rust over a function `fma(a, b, c)` that must be in scope where
// this file is included:
// - `kernels/src/math.rs` includes it with `clustered_device::math::fma`
//   (`fma.rn.f32`), for the kernels;
// - `suite/src/reference.rs` includes it with `f32::mul_add` (also one rounding),
//   so the CPU reference computes the same bits, and its tests measure the
//   error against `std`.
// `twins/suite.cu` has the same functions in CUDA C++ (`suite_exp`, ...),
// operation for operation. Change all three together.
//
// Every operation is an IEEE-754 f32 operation with round-to-nearest-even
// (`+ - * /` and `fma`), no contraction, no table: the result is the same
// bits on every backend. Accuracy, checked exhaustively on the host over
// every f32 of each domain below against the f64 functions of `std`:
// `exp` < 0.94 ulp, `ln` < 0.84 ulp, `sqrt` < 0.75 ulp, i.e. always one of
// the two floats nearest the exact value (the tests of `suite/src/reference.rs`
// check a sample of it).

/// `|x|`: clears the sign bit.
#[inline(always)]
pub fn abs(x: f32) -> f32 {
    f32::from_bits(x.to_bits() & 0x7fff_ffff)
}

/// `e^x`. Domain: all finite `x`; `exp(x) = +inf` for `x > 88.8`, `0` for
/// `x < -104` (the true value rounds to 0 there), subnormal results below
/// `-87.3`. NaN gives NaN.
///
/// Cody-Waite reduction `x = k ln2 + r`, `|r| <= ln2 / 2`, with `k` rounded
/// by the `1.5 * 2^23` shift; `e^r` by its Taylor polynomial of degree 7
/// (truncation below 6e-9 relative) in Horner form with `fma`; then
/// `e^r * 2^k` as two exact power-of-two factors, so that `k` from -150 to
/// 129 needs no special case.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    const LOG2_E: f32 = core::f32::consts::LOG2_E;
    // ln 2 split in two: `LN2_HI` has 15 significant bits, so `k * LN2_HI`
    // is exact for |k| < 512.
    const LN2_HI: f32 = 6.931_457_5e-1; // 0x3f317200
    const LN2_LO: f32 = 1.428_606_8e-6; // 0x35bfbe8e

    // 1.5 * 2^23: `x + SHIFT - SHIFT` rounds `x` to an integer.
    const SHIFT: f32 = 12_582_912.0;
    // Keeps NaN.
    let x = x.clamp(-104.0, 88.8);
    let shifted = fma(x, LOG2_E, SHIFT);
    let k = shifted - SHIFT;
    let r = fma(-k, LN2_HI, x);
    let r = fma(-k, LN2_LO, r);
    let mut p = 1.984_127e-4; // 1/7!
    p = fma(p, r, 1.388_888_9e-3); // 1/6!
    p = fma(p, r, 8.333_334e-3); // 1/5!
    p = fma(p, r, 4.166_666_8e-2); // 1/4!
    p = fma(p, r, 1.666_666_7e-1); // 1/3!
    p = fma(p, r, 0.5);
    p = fma(p, r, 1.0);
    p = fma(p, r, 1.0);
    // k as an integer, from the bits of `shifted` (SHIFT + k in SHIFT's
    // binade): exact, and no float-to-int conversion (whose saturation
    // rustc spells out in extra instructions).
    let k = shifted.to_bits() as i32 - SHIFT.to_bits() as i32;
    let half = k >> 1;
    let first = f32::from_bits(((half + 127) as u32) << 23);
    let second = f32::from_bits(((k - half + 127) as u32) << 23);
    p * first * second
}

/// `ln x` (natural logarithm). Domain: positive, normal, finite `x`; other
/// inputs give meaningless values (no NaN or infinity handling).
///
/// The algorithm of musl's `logf`: `x = 2^k (1 + f)` with
/// `sqrt(2)/2 <= 1 + f < sqrt(2)`, `s = f / (2 + f)`, and
/// `ln(1 + f) = f - f^2/2 + s (f^2/2 + R(s^2))` with musl's minimax `R`.
#[inline(always)]
pub fn ln(x: f32) -> f32 {
    const LN2_HI: f32 = 6.931_381e-1; // 0x3f317180
    const LN2_LO: f32 = 9.058_001e-6; // 0x3717f7d1
    const LG1: f32 = 0.666_666_6; // 0xaaaaaa.0p-24
    const LG2: f32 = 0.400_009_72; // 0xccce13.0p-25
    const LG3: f32 = 0.284_987_87; // 0x91e9ee.0p-25
    const LG4: f32 = 0.242_790_79; // 0xf89e26.0p-26

    // Moves the mantissa into [sqrt(2)/2, sqrt(2)) and counts the exponent.
    let bits = x.to_bits().wrapping_add(0x3f80_0000 - 0x3f35_04f3);
    let k = (bits >> 23) as i32 - 0x7f;
    let f = f32::from_bits((bits & 0x007f_ffff) + 0x3f35_04f3) - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * fma(w, LG4, LG2);
    let t2 = z * fma(w, LG3, LG1);
    let r = t2 + t1;
    let half_f2 = 0.5 * f * f;
    let dk = k as f32;
    s * (half_f2 + r) + dk * LN2_LO - half_f2 + f + dk * LN2_HI
}

/// `sqrt x`. Domain: `0` and positive normal finite `x`.
///
/// `1/sqrt(x)` from the bit-level estimate (relative error < 3.5e-3), two
/// Newton steps `y (3/2 - x/2 y^2)`, then `s = x y` corrected once with the
/// exact residual `x - s^2` (an `fma`).
#[inline(always)]
pub fn sqrt(x: f32) -> f32 {
    let half = 0.5 * x;
    let mut y = f32::from_bits(0x5f37_5a86 - (x.to_bits() >> 1));
    y = y * fma(-half * y, y, 1.5);
    y = y * fma(-half * y, y, 1.5);
    let s = x * y;
    let residual = fma(-s, s, x);
    fma(residual, 0.5 * y, s)
}
