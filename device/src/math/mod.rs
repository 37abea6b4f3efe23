//! Device math for `f32` and `f64`: the functions of CUDA's math library that
//! kernels need, lowered to the PTX that nvcc emits for them, with the same
//! results (within the bound below) on the CPU backend.
//!
//! Each function is generic over [`Float`] (`f32` and `f64`), so
//! `sqrt(x)` works for both, as CUDA C++'s overloads do. The names are
//! CUDA's and `cuda_std::intrinsics`'s (`sqrt`, `rsqrt`, `exp`, `exp2`, `log`,
//! `log2`, `sin`, `cos`, `pow`, `fma`); `abs`, `min`, `max` are CUDA's
//! `fabs`, `fmin`, `fmax` (cuda_std's `GpuFloat` calls them `abs`, `min`,
//! `max`, and `log`/`pow`/`fma` `ln`/`powf`/`mul_add`). The
//! `-use_fast_math` versions are separate functions in [`fast`], and CUDA's
//! intrinsics as nvcc compiles them by default (`__expf`, `__logf`,
//! `__fdividef`, `rsqrtf`, subnormals kept) in [`intrinsics`], so a kernel
//! says where it trades accuracy for speed.
//!
//! | function | PTX (`f32`) | PTX (`f64`) | max error `f32` / `f64` |
//! |---|---|---|---|
//! | [`sqrt`] | `sqrt.rn.f32` | `sqrt.rn.f64` | 0 / 0 ulp |
//! | [`rsqrt`] | `rsqrt.approx.f32` | `rsqrt.approx.f64` | 2 / 1 ulp (CUDA) |
//! | [`exp`] | nvcc's `expf`: 2 `fma.rn`, `fma.rm`, `ex2.approx.ftz.f32`, `mul` | software (libm) | 2 (CUDA) / 1 ulp |
//! | [`exp2`] | `ex2.approx.f32` | software (libm) | 2 (CUDA) / 1 ulp |
//! | [`log`], [`log2`], [`sin`], [`cos`], [`pow`] | software (libm) | software (libm) | 1 / 1 ulp |
//! | [`fma`] | `fma.rn.f32` | `fma.rn.f64` | 0 / 0 ulp |
//! | [`abs`] | `abs.f32` | `abs.f64` | exact |
//! | [`min`], [`max`] | `min.f32`, `max.f32` | `min.f64`, `max.f64` | exact |
//! | [`floor`], [`ceil`] | `cvt.rmi.f32.f32`, `cvt.rpi.f32.f32` | `cvt.rmi.f64.f64`, `cvt.rpi.f64.f64` | exact |
//!
//! Where nvcc (CUDA 13, `-arch=sm_90`, no `-use_fast_math`) emits one
//! instruction or a short sequence, this module emits the same (checked by
//! compiling `sqrtf`, `rsqrtf`, `exp2f`, `expf`, `fmaf`, `fabsf`, `fminf`,
//! `floorf`, `ceilf` and their `double` versions with nvcc and reading the
//! PTX). nvcc's `logf`, `sinf`, `powf` and all its `double` transcendental
//! functions are libdevice routines, which a Rust kernel cannot link; here
//! they are the `libm` crate's Rust ports of musl/FreeBSD (f32 versions
//! evaluate in f64), which rustc compiles to plain PTX like any other Rust
//! code (`sin`/`cos` of large arguments use a Payne-Hanek reduction with a
//! local array: ptxas reports a stack frame of about 600 bytes for a kernel
//! that calls them). Their bound, 1 ulp, is within CUDA's (`logf` 1,
//! `log2f` 1, `sinf`/`cosf` 2, `powf` 4; `exp`, `exp2`, `log`, `log2` 1,
//! `sin`/`cos` 2, `pow` 2 ulp) and is what this module's tests check on the
//! host, with special values (0, -0, infinities, NaN, subnormals, huge
//! arguments). Being the same Rust code on both sides, they compute the
//! same bits on the GPU and on the CPU backend.
//!
//! On the CPU backend the instructions compute their exact value with std
//! (`sqrt`, `fma`, `floor`, ...: the same bits); `rsqrt`, `exp` and `exp2`
//! of `f32`, approximations on the GPU, use std's accurate functions, so the
//! two backends may differ there by up to the GPU's bound (2 ulp). The
//! ulp bounds "(CUDA)" are NVIDIA's, from the CUDA C++ Programming Guide,
//! appendix "Mathematical Functions" (tables "Single-Precision Mathematical
//! Standard Library Functions with Maximum ULP Error", its double-precision
//! counterpart, and "Functions Affected by -use_fast_math"); the host tests
//! cannot check the GPU's approximations.
//!
//! NaN results are NaN on both sides, but their payload may differ.

pub mod fast;
pub mod intrinsics;
mod ptx;
#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests;

mod sealed {
    /// The operations behind the public functions, per type. Sealed: its
    /// methods cannot be named outside this module, so `x.sqrt()` keeps
    /// meaning std's method on the host.
    pub trait Ops: Copy {
        fn sqrt(self) -> Self;
        fn rsqrt(self) -> Self;
        fn exp(self) -> Self;
        fn exp2(self) -> Self;
        fn log(self) -> Self;
        fn log2(self) -> Self;
        fn sin(self) -> Self;
        fn cos(self) -> Self;
        fn pow(self, y: Self) -> Self;
        fn fma(self, b: Self, c: Self) -> Self;
        fn abs(self) -> Self;
        fn min(self, b: Self) -> Self;
        fn max(self, b: Self) -> Self;
        fn floor(self) -> Self;
        fn ceil(self) -> Self;
    }
}

/// `f32` or `f64`: the types the functions of this module take.
pub trait Float: sealed::Ops {}
impl Float for f32 {}
impl Float for f64 {}

impl sealed::Ops for f32 {
    #[inline(always)]
    fn sqrt(self) -> Self {
        ptx::sqrt_rn_f32(self)
    }
    #[inline(always)]
    fn rsqrt(self) -> Self {
        ptx::rsqrt_approx_f32(self)
    }
    #[inline(always)]
    fn exp(self) -> Self {
        ptx::exp_f32(self)
    }
    #[inline(always)]
    fn exp2(self) -> Self {
        ptx::ex2_approx_f32(self)
    }
    #[inline(always)]
    fn log(self) -> Self {
        libm::logf(self)
    }
    #[inline(always)]
    fn log2(self) -> Self {
        libm::log2f(self)
    }
    #[inline(always)]
    fn sin(self) -> Self {
        libm::sinf(self)
    }
    #[inline(always)]
    fn cos(self) -> Self {
        libm::cosf(self)
    }
    #[inline(always)]
    fn pow(self, y: Self) -> Self {
        libm::powf(self, y)
    }
    #[inline(always)]
    fn fma(self, b: Self, c: Self) -> Self {
        // LLVM's `llvm.fma`, not an `asm!` block: see [`fma`](super::fma).
        #[cfg(target_arch = "nvptx64")]
        return core::f32::math::mul_add(self, b, c);
        #[cfg(not(target_arch = "nvptx64"))]
        self.mul_add(b, c)
    }
    #[inline(always)]
    fn abs(self) -> Self {
        ptx::abs_f32(self)
    }
    #[inline(always)]
    fn min(self, b: Self) -> Self {
        ptx::min_f32(self, b)
    }
    #[inline(always)]
    fn max(self, b: Self) -> Self {
        ptx::max_f32(self, b)
    }
    #[inline(always)]
    fn floor(self) -> Self {
        ptx::cvt_rmi_f32(self)
    }
    #[inline(always)]
    fn ceil(self) -> Self {
        ptx::cvt_rpi_f32(self)
    }
}

impl sealed::Ops for f64 {
    #[inline(always)]
    fn sqrt(self) -> Self {
        ptx::sqrt_rn_f64(self)
    }
    #[inline(always)]
    fn rsqrt(self) -> Self {
        ptx::rsqrt_approx_f64(self)
    }
    #[inline(always)]
    fn exp(self) -> Self {
        libm::exp(self)
    }
    #[inline(always)]
    fn exp2(self) -> Self {
        libm::exp2(self)
    }
    #[inline(always)]
    fn log(self) -> Self {
        libm::log(self)
    }
    #[inline(always)]
    fn log2(self) -> Self {
        libm::log2(self)
    }
    #[inline(always)]
    fn sin(self) -> Self {
        libm::sin(self)
    }
    #[inline(always)]
    fn cos(self) -> Self {
        libm::cos(self)
    }
    #[inline(always)]
    fn pow(self, y: Self) -> Self {
        libm::pow(self, y)
    }
    #[inline(always)]
    fn fma(self, b: Self, c: Self) -> Self {
        // LLVM's `llvm.fma`, not an `asm!` block: see [`fma`](super::fma).
        #[cfg(target_arch = "nvptx64")]
        return core::f64::math::mul_add(self, b, c);
        #[cfg(not(target_arch = "nvptx64"))]
        self.mul_add(b, c)
    }
    #[inline(always)]
    fn abs(self) -> Self {
        ptx::abs_f64(self)
    }
    #[inline(always)]
    fn min(self, b: Self) -> Self {
        ptx::min_f64(self, b)
    }
    #[inline(always)]
    fn max(self, b: Self) -> Self {
        ptx::max_f64(self, b)
    }
    #[inline(always)]
    fn floor(self) -> Self {
        ptx::cvt_rmi_f64(self)
    }
    #[inline(always)]
    fn ceil(self) -> Self {
        ptx::cvt_rpi_f64(self)
    }
}

/// `sqrt(x)`, correctly rounded: `sqrt.rn.f32` / `sqrt.rn.f64` (0 ulp).
/// `sqrt(-0) = -0`, negative `x` gives NaN.
#[inline(always)]
pub fn sqrt<T: Float>(x: T) -> T {
    x.sqrt()
}

/// `1/sqrt(x)`: `rsqrt.approx.f32` (2 ulp, CUDA's `rsqrtf`) /
/// `rsqrt.approx.f64` (1 ulp, CUDA's `rsqrt`). `rsqrt(±0) = ±inf`,
/// `rsqrt(+inf) = +0`.
#[inline(always)]
pub fn rsqrt<T: Float>(x: T) -> T {
    x.rsqrt()
}

/// `e^x`. `f32`: nvcc's `expf` sequence around `ex2.approx.ftz.f32`
/// (2 ulp); `f64`: libm's `exp` (1 ulp).
#[inline(always)]
pub fn exp<T: Float>(x: T) -> T {
    x.exp()
}

/// `2^x`. `f32`: `ex2.approx.f32` (2 ulp, as nvcc's `exp2f`); `f64`: libm's
/// `exp2` (1 ulp).
#[inline(always)]
pub fn exp2<T: Float>(x: T) -> T {
    x.exp2()
}

/// `ln(x)`, the natural logarithm: libm's `logf` / `log` (1 ulp).
/// `log(±0) = -inf`, negative `x` gives NaN.
#[inline(always)]
pub fn log<T: Float>(x: T) -> T {
    x.log()
}

/// `log2(x)`: libm's `log2f` / `log2` (1 ulp).
#[inline(always)]
pub fn log2<T: Float>(x: T) -> T {
    x.log2()
}

/// `sin(x)`, `x` in radians, full range (Payne-Hanek reduction for huge
/// `x`): libm's `sinf` / `sin` (1 ulp).
#[inline(always)]
pub fn sin<T: Float>(x: T) -> T {
    x.sin()
}

/// `cos(x)`, `x` in radians, full range: libm's `cosf` / `cos` (1 ulp).
#[inline(always)]
pub fn cos<T: Float>(x: T) -> T {
    x.cos()
}

/// `x^y` with C's special cases (`pow(x, 0) = 1` even for NaN `x`,
/// negative `x` with an integer `y`): libm's `powf` / `pow` (1 ulp).
#[inline(always)]
pub fn pow<T: Float>(x: T, y: T) -> T {
    x.pow(y)
}

/// `a * b + c` with one rounding: `fma.rn.f32` / `fma.rn.f64` (0 ulp).
///
/// rustc does not contract `a * b + c` into an FMA (nvcc does, by default):
/// the SDK SGEMM compiled to FMUL + FADD with no FFMA until it called this
/// (`cuobjdump -sass`; `tests/kernel_resources.rs` prints the counts). The
/// CPU backend computes the same fused result, bit for bit.
///
/// It is LLVM's own `llvm.fma` (`core::f32::math::mul_add`), not an `asm!`
/// block like the other instructions here: LLVM schedules an FMA it knows
/// among the loads as nvcc does, where it sank 512 opaque `asm` FMAs below
/// every shared load of the register-tiled SGEMM, 3% slower than its nvcc
/// twin (docs/BENCHMARKS.md, "The register-tiled SGEMM at nvcc's speed").
#[inline(always)]
pub fn fma<T: Float>(a: T, b: T, c: T) -> T {
    a.fma(b, c)
}

/// `|x|`: `abs.f32` / `abs.f64` (CUDA's `fabsf` / `fabs`).
#[inline(always)]
pub fn abs<T: Float>(x: T) -> T {
    x.abs()
}

/// The smaller of `a` and `b`: `min.f32` / `min.f64` (CUDA's `fminf` /
/// `fmin`). A NaN operand yields the other one; `-0` is below `+0`.
#[inline(always)]
pub fn min<T: Float>(a: T, b: T) -> T {
    a.min(b)
}

/// The larger of `a` and `b`: `max.f32` / `max.f64` (CUDA's `fmaxf` /
/// `fmax`). A NaN operand yields the other one; `+0` is above `-0`.
#[inline(always)]
pub fn max<T: Float>(a: T, b: T) -> T {
    a.max(b)
}

/// The largest integer not above `x`: `cvt.rmi.f32.f32` /
/// `cvt.rmi.f64.f64` (exact).
#[inline(always)]
pub fn floor<T: Float>(x: T) -> T {
    x.floor()
}

/// The smallest integer not below `x`: `cvt.rpi.f32.f32` /
/// `cvt.rpi.f64.f64` (exact).
#[inline(always)]
pub fn ceil<T: Float>(x: T) -> T {
    x.ceil()
}
