//! Black-Scholes option pricing (the CUDA SDK sample's formulas).

use clustered_device::clustered;
use clustered_device::cta::Cta;
use clustered_device::math::{fma, intrinsics};
use clustered_device::memory::prefetch_l2;
use clustered_device::thread::index_1d;

use crate::math::{abs, exp, ln, sqrt};

/// Threads per block of [`black_scholes`](fn@black_scholes) (the CUDA SDK sample's 128).
pub const BLACK_SCHOLES_BLOCK: u32 = 128;

/// The math an option's price is computed with: the exact functions
/// ([`Exact`]) or the GPU's fast intrinsics as the CUDA SDK sample calls
/// them ([`Intrinsics`]). The formulas are one ([`option`], [`cnd_with`]);
/// only these differ.
trait Flavour {
    fn div(a: f32, b: f32) -> f32;
    fn sqrt(x: f32) -> f32;
    fn ln(x: f32) -> f32;
    fn exp(x: f32) -> f32;
}

/// IEEE division and the exact `sqrt`, `ln`, `exp` (`crate::math`).
struct Exact;

impl Flavour for Exact {
    #[inline(always)]
    fn div(a: f32, b: f32) -> f32 {
        a / b
    }
    #[inline(always)]
    fn sqrt(x: f32) -> f32 {
        sqrt(x)
    }
    #[inline(always)]
    fn ln(x: f32) -> f32 {
        ln(x)
    }
    #[inline(always)]
    fn exp(x: f32) -> f32 {
        exp(x)
    }
}

/// `__fdividef`, `sqrt(T)` as `__fdividef(1, rsqrtf(T))`, `__logf`,
/// `__expf` ([`clustered_device::math::intrinsics`], as nvcc compiles them
/// without `-ftz`), as `BlackScholes_kernel.cuh` writes them.
struct Intrinsics;

impl Flavour for Intrinsics {
    #[inline(always)]
    fn div(a: f32, b: f32) -> f32 {
        intrinsics::div(a, b)
    }
    #[inline(always)]
    fn sqrt(x: f32) -> f32 {
        intrinsics::div(1.0, intrinsics::rsqrt(x))
    }
    #[inline(always)]
    fn ln(x: f32) -> f32 {
        intrinsics::log(x)
    }
    #[inline(always)]
    fn exp(x: f32) -> f32 {
        intrinsics::exp(x)
    }
}

/// The cumulative normal distribution by the polynomial approximation of
/// Abramowitz & Stegun 26.2.17 (absolute error below 7.5e-8), as in the SDK
/// sample, with the polynomial in `fma` Horner form.
#[inline(always)]
pub fn cnd(d: f32) -> f32 {
    cnd_with::<Exact>(d)
}

/// [`cnd`] as the CUDA SDK sample writes it for the GPU: `K` by
/// `__fdividef` and the exponential by `__expf` (the special-function
/// unit's `ex2.approx`), the polynomial in the same `fma` Horner form.
#[inline(always)]
pub fn cnd_fast(d: f32) -> f32 {
    cnd_with::<Intrinsics>(d)
}

/// The A&S polynomial of [`cnd`] in the math of `F`.
#[inline(always)]
fn cnd_with<F: Flavour>(d: f32) -> f32 {
    const A1: f32 = 0.319_381_53;
    const A2: f32 = -0.356_563_78;
    const A3: f32 = 1.781_477_9;
    const A4: f32 = -1.821_255_9;
    const A5: f32 = 1.330_274_5;
    const RSQRT_2PI: f32 = 0.398_942_3;
    let k = F::div(1.0, fma(0.231_641_9, abs(d), 1.0));
    let poly = k * fma(k, fma(k, fma(k, fma(k, A5, A4), A3), A2), A1);
    let tail = RSQRT_2PI * F::exp(-0.5 * d * d) * poly;
    if d > 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// `(call, put)` of one option (price `s`, strike `x`, `t` years) by the
/// SDK sample's formulas in the math of `F`; `S / X` is an IEEE division
/// in either.
#[inline(always)]
fn option<F: Flavour>(s: f32, x: f32, t: f32, riskfree: f32, volatility: f32) -> (f32, f32) {
    let sqrt_t = F::sqrt(t);
    let d1 = F::div(
        F::ln(s / x) + (riskfree + 0.5 * volatility * volatility) * t,
        volatility * sqrt_t,
    );
    let d2 = d1 - volatility * sqrt_t;
    let cnd_d1 = cnd_with::<F>(d1);
    let cnd_d2 = cnd_with::<F>(d2);
    let discount = F::exp(-riskfree * t);
    (
        s * cnd_d1 - x * discount * cnd_d2,
        x * discount * (1.0 - cnd_d2) - s * (1.0 - cnd_d1),
    )
}

/// Prefetch hook of `black_scholes_stride_prefetch`: starts bringing the
/// next task's inputs into L2 while this task computes.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn prefetch_next_inputs(
    next: Cta,
    _call: *mut f32,
    _put: *mut f32,
    price: *const f32,
    strike: *const f32,
    years: *const f32,
    _riskfree: f32,
    _volatility: f32,
    n: u32,
) {
    let i = next.index_1d();
    if i < n {
        let i = i as usize;
        prefetch_l2(price.add(i));
        prefetch_l2(strike.add(i));
        prefetch_l2(years.add(i));
    }
}

/// European call and put prices: for option `i < n`, with `S = price[i]`,
/// `X = strike[i]`, `T = years[i]`, `R = riskfree`, `V = volatility`:
///
/// ```text
/// d1 = (ln(S / X) + (R + 0.5 V V) T) / (V sqrt(T)),   d2 = d1 - V sqrt(T)
/// call[i] = S cnd(d1) - X e^(-R T) cnd(d2)
/// put[i]  = X e^(-R T) (1 - cnd(d2)) - S (1 - cnd(d1))
/// ```
///
/// evaluated as written, left to right, with [`crate::math`]'s `exp`, `ln`
/// and `sqrt` (domain: positive prices, strikes, years and volatility).
///
/// Launch: block `128 x 1`, grid `ceil(n / 128)`; one option per thread.
///
/// Sharing: none. Streaming (three loads and two stores per option, each
/// touched once) with a fair amount of arithmetic (2 `exp`, 1 `ln`,
/// 1 `sqrt`, 3 divisions).
///
/// Variants (a 1D grid):
/// - `_redirect`: the paper's redirection.
/// - `_agents`: persistent agents, ACTIVE = MAX.
/// - `_agents_chunked`: agents claiming 8 consecutive CTAs at a time (what
///   won on the streaming vector add in the C++ reference, DESIGN.md
///   section 7).
/// - `_agents_bypass`: the same, with the three read-once inputs loaded past
///   L1 (`ld.global.cg`).
/// - `_persistent`, `_persistent4`: persistent CTAs claiming chunks of 8 or 4
///   from one queue.
/// - `_stride`: persistent CTAs in a grid-stride loop, no atomics;
///   `_stride_prefetch` also prefetches the next task's inputs into L2;
///   `_stride_waves4` launches 4 blocks per resident slot, so that blocks
///   whose warps the scheduler favoured and finished early are replaced
///   (with one wave, 70% of warps were active against the baseline's 88%:
///   `.gpu/ncu-bench.sh OUT black_scholes` on an H100, docs/ncu-why-h100.txt).
#[clustered(auto)]
#[clustered(name = black_scholes_redirect, binding = redirect)]
#[clustered(name = black_scholes_persistent, binding = persistent, chunk = 8)]
#[clustered(name = black_scholes_persistent4, binding = persistent, chunk = 4)]
#[clustered(name = black_scholes_stride, binding = stride)]
#[clustered(name = black_scholes_stride_prefetch, binding = stride, prefetch = prefetch_next_inputs)]
#[clustered(name = black_scholes_stride_waves4, binding = stride, waves = 4)]
#[clustered(name = black_scholes_agents, binding = agents)]
#[clustered(name = black_scholes_agents_chunked, binding = agents, chunk = 8)]
#[clustered(name = black_scholes_agents_bypass, binding = agents, chunk = 8, bypass(price, strike, years))]
#[allow(clippy::too_many_arguments)]
pub unsafe fn black_scholes(
    call: *mut f32,
    put: *mut f32,
    price: *const f32,
    strike: *const f32,
    years: *const f32,
    riskfree: f32,
    volatility: f32,
    n: u32,
) {
    let i = index_1d();
    if i < n {
        let i = i as usize;
        let s = *price.add(i);
        let x = *strike.add(i);
        let t = *years.add(i);
        let (call_value, put_value) = option::<Exact>(s, x, t, riskfree, volatility);
        *call.add(i) = call_value;
        *put.add(i) = put_value;
    }
}

/// [`black_scholes`](fn@black_scholes) as the CUDA SDK sample writes it
/// (`BlackScholes_kernel.cuh`): the same formulas with the GPU's fast
/// intrinsics, `sqrt(T)` as `__fdividef(1, rsqrtf(T))`, `d1`'s division
/// by `__fdividef`, `__logf`, `__expf`
/// ([`clustered_device::math::intrinsics`], as nvcc compiles them without
/// `-ftz`),
/// `S / X` an IEEE division. What a CUDA programmer writes for this
/// kernel: [`black_scholes`](fn@black_scholes)'s exact `exp`, `ln` and
/// `sqrt` cost more instructions than its memory traffic hides.
///
/// The approximations are the hardware's: the CPU backend computes them
/// with the host's math, so the CPU's and the GPU's outputs agree within
/// `reference::black_scholes_fast`'s tolerance, not bit for bit (every
/// schedule still equals the baseline bit for bit on either).
///
/// Launch and sharing as [`black_scholes`](fn@black_scholes).
///
/// Variants: the automatic ones, and `_persistent` (chunks of 8, the
/// exact kernel's fastest schedule).
#[clustered(auto)]
#[clustered(name = black_scholes_fast_persistent, binding = persistent, chunk = 8)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn black_scholes_fast(
    call: *mut f32,
    put: *mut f32,
    price: *const f32,
    strike: *const f32,
    years: *const f32,
    riskfree: f32,
    volatility: f32,
    n: u32,
) {
    let i = index_1d();
    if i < n {
        let i = i as usize;
        let s = *price.add(i);
        let x = *strike.add(i);
        let t = *years.add(i);
        let (call_value, put_value) = option::<Intrinsics>(s, x, t, riskfree, volatility);
        *call.add(i) = call_value;
        *put.add(i) = put_value;
    }
}
