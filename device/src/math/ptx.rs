//! One PTX instruction per function, named for the instruction; on the host
//! the operation that computes the same value (bit for bit where the
//! instruction is exact, which each function says).

/// Defines `pub fn $name(a, ..) -> $ty` as the single PTX instruction
/// `$instruction` on nvptx64, and as `$host` elsewhere.
#[cfg_attr(not(target_arch = "nvptx64"), allow(unused_macro_rules))]
macro_rules! instruction {
    ($(#[$doc:meta])* $name:ident($($arg:ident),+) -> $ty:ident = $instruction:literal, host $host:expr) => {
        $(#[$doc])*
        #[inline(always)]
        pub fn $name($($arg: $ty),+) -> $ty {
            #[cfg(target_arch = "nvptx64")]
            {
                let result: $ty;
                // SAFETY: pure arithmetic on registers.
                unsafe {
                    instruction!(@asm $ty, $instruction, result, $($arg),+);
                }
                result
            }
            #[cfg(not(target_arch = "nvptx64"))]
            {
                $host
            }
        }
    };
    (@asm f32, $instruction:literal, $result:ident, $a:ident) => {
        core::arch::asm!(concat!($instruction, " {r}, {a};"), r = out(reg32) $result,
            a = in(reg32) $a, options(pure, nomem, nostack, preserves_flags))
    };
    (@asm f32, $instruction:literal, $result:ident, $a:ident, $b:ident) => {
        core::arch::asm!(concat!($instruction, " {r}, {a}, {b};"), r = out(reg32) $result,
            a = in(reg32) $a, b = in(reg32) $b, options(pure, nomem, nostack, preserves_flags))
    };
    (@asm f32, $instruction:literal, $result:ident, $a:ident, $b:ident, $c:ident) => {
        core::arch::asm!(concat!($instruction, " {r}, {a}, {b}, {c};"), r = out(reg32) $result,
            a = in(reg32) $a, b = in(reg32) $b, c = in(reg32) $c,
            options(pure, nomem, nostack, preserves_flags))
    };
    (@asm f64, $instruction:literal, $result:ident, $a:ident) => {
        core::arch::asm!(concat!($instruction, " {r}, {a};"), r = out(reg64) $result,
            a = in(reg64) $a, options(pure, nomem, nostack, preserves_flags))
    };
    (@asm f64, $instruction:literal, $result:ident, $a:ident, $b:ident) => {
        core::arch::asm!(concat!($instruction, " {r}, {a}, {b};"), r = out(reg64) $result,
            a = in(reg64) $a, b = in(reg64) $b, options(pure, nomem, nostack, preserves_flags))
    };
    (@asm f64, $instruction:literal, $result:ident, $a:ident, $b:ident, $c:ident) => {
        core::arch::asm!(concat!($instruction, " {r}, {a}, {b}, {c};"), r = out(reg64) $result,
            a = in(reg64) $a, b = in(reg64) $b, c = in(reg64) $c,
            options(pure, nomem, nostack, preserves_flags))
    };
}

instruction!(
    /// `sqrt.rn.f32`: correctly rounded.
    sqrt_rn_f32(x) -> f32 = "sqrt.rn.f32", host x.sqrt()
);
instruction!(
    /// `sqrt.rn.f64`: correctly rounded.
    sqrt_rn_f64(x) -> f64 = "sqrt.rn.f64", host x.sqrt()
);
instruction!(
    /// `rsqrt.approx.f32`: `1/sqrt(x)` within 2 ulp. The host rounds the
    /// f64 quotient (within 0.5 ulp and a hair).
    rsqrt_approx_f32(x) -> f32 = "rsqrt.approx.f32", host (1.0 / f64::from(x).sqrt()) as f32
);
instruction!(
    /// `rsqrt.approx.f64` (ptxas refines the MUFU estimate to 1 ulp). The
    /// host divides by the correctly rounded root and corrects the quotient
    /// once with its residual (within 1 ulp).
    rsqrt_approx_f64(x) -> f64 = "rsqrt.approx.f64", host rsqrt_host_f64(x)
);
instruction!(
    /// `fma.rn.f32`: `a * b + c` with one rounding. Pins `exp_f32`'s steps
    /// to nvcc's `expf` sequence (`math::fma` is LLVM's FMA, which it may move).
    #[cfg(target_arch = "nvptx64")]
    fma_rn_f32(a, b, c) -> f32 = "fma.rn.f32", host a.mul_add(b, c)
);
instruction!(
    /// `abs.f32`: clears the sign bit.
    abs_f32(x) -> f32 = "abs.f32", host x.abs()
);
instruction!(
    /// `abs.f64`: clears the sign bit.
    abs_f64(x) -> f64 = "abs.f64", host x.abs()
);
instruction!(
    /// `min.f32`: a NaN operand yields the other operand; `-0 < +0`.
    min_f32(a, b) -> f32 = "min.f32",
    host if a.is_nan() { b } else if b.is_nan() || a == b && a.is_sign_negative() || a < b { a } else { b }
);
instruction!(
    /// `min.f64`: a NaN operand yields the other operand; `-0 < +0`.
    min_f64(a, b) -> f64 = "min.f64",
    host if a.is_nan() { b } else if b.is_nan() || a == b && a.is_sign_negative() || a < b { a } else { b }
);
instruction!(
    /// `max.f32`: a NaN operand yields the other operand; `-0 < +0`.
    max_f32(a, b) -> f32 = "max.f32",
    host if a.is_nan() { b } else if b.is_nan() || a == b && a.is_sign_positive() || a > b { a } else { b }
);
instruction!(
    /// `max.f64`: a NaN operand yields the other operand; `-0 < +0`.
    max_f64(a, b) -> f64 = "max.f64",
    host if a.is_nan() { b } else if b.is_nan() || a == b && a.is_sign_positive() || a > b { a } else { b }
);
instruction!(
    /// `cvt.rmi.f32.f32`: rounds toward minus infinity (exact).
    cvt_rmi_f32(x) -> f32 = "cvt.rmi.f32.f32", host x.floor()
);
instruction!(
    /// `cvt.rmi.f64.f64`: rounds toward minus infinity (exact).
    cvt_rmi_f64(x) -> f64 = "cvt.rmi.f64.f64", host x.floor()
);
instruction!(
    /// `cvt.rpi.f32.f32`: rounds toward plus infinity (exact).
    cvt_rpi_f32(x) -> f32 = "cvt.rpi.f32.f32", host x.ceil()
);
instruction!(
    /// `cvt.rpi.f64.f64`: rounds toward plus infinity (exact).
    cvt_rpi_f64(x) -> f64 = "cvt.rpi.f64.f64", host x.ceil()
);
instruction!(
    /// `ex2.approx.f32`: `2^x` within 2 ulp, subnormal results kept. The host
    /// uses std's `exp2`.
    ex2_approx_f32(x) -> f32 = "ex2.approx.f32", host x.exp2()
);

instruction!(
    /// `lg2.approx.f32`: `log2(x)`, absolute error `2^-22` on `[0.5, 2]`,
    /// 2 ulp elsewhere, subnormal inputs kept. The host uses std's `log2`.
    lg2_approx_f32(x) -> f32 = "lg2.approx.f32", host x.log2()
);
instruction!(
    /// `div.approx.f32`: `a / b` within 2 ulp for `2^-126 <= |b| <= 2^126`,
    /// subnormals kept. The host divides.
    div_approx_f32(a, b) -> f32 = "div.approx.f32", host a / b
);

// The `-use_fast_math` instructions: `.ftz` flushes subnormal inputs and
// results to zero of the same sign, which the host does around std's
// accurate function.
instruction!(
    /// `ex2.approx.ftz.f32`: `2^x`, 2 ulp.
    ex2_approx_ftz_f32(x) -> f32 = "ex2.approx.ftz.f32", host ftz(ftz(x).exp2())
);
instruction!(
    /// `lg2.approx.ftz.f32`: `log2(x)`, absolute error `2^-22` on
    /// `[0.5, 2]`, 2 ulp elsewhere.
    lg2_approx_ftz_f32(x) -> f32 = "lg2.approx.ftz.f32", host ftz(ftz(x).log2())
);
instruction!(
    /// `sin.approx.ftz.f32`: absolute error `2^-21.41` on `[-pi, pi]`,
    /// larger outside.
    sin_approx_ftz_f32(x) -> f32 = "sin.approx.ftz.f32", host ftz(ftz(x).sin())
);
instruction!(
    /// `cos.approx.ftz.f32`: absolute error `2^-21.19` on `[-pi, pi]`,
    /// larger outside.
    cos_approx_ftz_f32(x) -> f32 = "cos.approx.ftz.f32", host ftz(ftz(x).cos())
);
instruction!(
    /// `sqrt.approx.ftz.f32`.
    sqrt_approx_ftz_f32(x) -> f32 = "sqrt.approx.ftz.f32", host ftz(ftz(x).sqrt())
);
instruction!(
    /// `rsqrt.approx.ftz.f32`: 2 ulp.
    rsqrt_approx_ftz_f32(x) -> f32 = "rsqrt.approx.ftz.f32",
    host ftz((1.0 / f64::from(ftz(x)).sqrt()) as f32)
);
instruction!(
    /// `div.approx.ftz.f32`: `a / b` within 2 ulp for `2^-126 <= |b| <= 2^126`.
    div_approx_ftz_f32(a, b) -> f32 = "div.approx.ftz.f32", host ftz(ftz(a) / ftz(b))
);
instruction!(
    /// `mul.ftz.f32`: a correctly rounded product, subnormals flushed.
    mul_ftz_f32(a, b) -> f32 = "mul.ftz.f32", host ftz(ftz(a) * ftz(b))
);

/// `cvt.sat.f32.f32`: clamps to `[0, 1]`; NaN gives 0.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn saturate_f32(x: f32) -> f32 {
    let result: f32;
    // SAFETY: pure arithmetic on registers.
    unsafe {
        core::arch::asm!("cvt.sat.f32.f32 {r}, {a};", r = out(reg32) result, a = in(reg32) x,
            options(pure, nomem, nostack, preserves_flags));
    }
    result
}

/// A subnormal flushed to zero of its sign, as `.ftz` instructions read and
/// write them.
#[cfg(not(target_arch = "nvptx64"))]
pub fn ftz(x: f32) -> f32 {
    if x.is_subnormal() {
        f32::from_bits(x.to_bits() & 0x8000_0000)
    } else {
        x
    }
}

/// `1/sqrt(x)` in f64 on the host: the quotient `1/s` by the correctly
/// rounded root `s`, corrected by the residual `1 - x y^2` (two `fma`), so
/// that the error of `s` does not add to the quotient's.
#[cfg(not(target_arch = "nvptx64"))]
fn rsqrt_host_f64(x: f64) -> f64 {
    let y = 1.0 / x.sqrt();
    if !y.is_normal() || !x.is_normal() {
        return y;
    }
    // x y^2 = 1 - e exactly up to the rounding of `y * y` (kept in `low`).
    let yy = y * y;
    let low = y.mul_add(y, -yy);
    let e = (-x).mul_add(yy, 1.0) - x * low;
    // 1/sqrt(x) = y (1 - e)^(-1/2) ~ y (1 + e/2).
    (0.5 * y).mul_add(e, y)
}

/// `e^x` as nvcc's `expf` computes it: `x log2(e) = j + f` with `j` an
/// integer in `[-126, 126]` (found by `cvt.sat` and an `fma.rm` into the
/// `1.5 * 2^23` binade) and `f` from two `fma.rn` with `log2(e)` split in
/// two; then `ex2.approx.ftz.f32(f) * 2^j`, whose `mul.f32` keeps subnormal
/// results. CUDA's bound for `expf`: 2 ulp. The host uses std's `exp`.
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        // log2(e) / 252: `t` in [0, 1] covers j in [-126, 126].
        const LOG2E_OVER_252: f32 = f32::from_bits(0x3bbb_989d);
        const LOG2E_HI: f32 = f32::from_bits(0x3fb8_aa3b);
        const LOG2E_LO: f32 = f32::from_bits(0x32a5_7060);
        // 1.5 * 2^23 + 1 and 1.5 * 2^23 + 127.
        const SHIFT: f32 = f32::from_bits(0x4b40_0001);
        const SHIFT_BIAS: f32 = f32::from_bits(0x4b40_007f);
        let t = saturate_f32(fma_rn_f32(x, LOG2E_OVER_252, 0.5));
        let shifted: f32;
        // SAFETY: pure arithmetic on registers.
        unsafe {
            core::arch::asm!("fma.rm.f32 {r}, {a}, {b}, {c};", r = out(reg32) shifted,
                a = in(reg32) t, b = in(reg32) 252.0f32, c = in(reg32) SHIFT,
                options(pure, nomem, nostack, preserves_flags));
        }
        let j = shifted - SHIFT_BIAS;
        let f = fma_rn_f32(x, LOG2E_HI, -j);
        let f = fma_rn_f32(x, LOG2E_LO, f);
        // The low bits of `shifted` are j + 127: shifted into the exponent.
        let scale = f32::from_bits(shifted.to_bits() << 23);
        ex2_approx_ftz_f32(f) * scale
    }
    #[cfg(not(target_arch = "nvptx64"))]
    x.exp()
}
