//! Host checks of each function against std's f64 functions (for `f32`,
//! whose error is measured exactly enough in f64) or std's f64 results
//! (for `f64`, whose libm results must be one of the two floats around
//! glibc's, itself within 1 ulp), over sampled ranges and special values.

use super::*;

/// A small deterministic generator (xorshift64*), so failures reproduce.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// A finite f32 with uniformly random bits (every binade equally likely).
    fn f32(&mut self) -> f32 {
        loop {
            let x = f32::from_bits(self.next() as u32);
            if x.is_finite() {
                return x;
            }
        }
    }
    fn f64(&mut self) -> f64 {
        loop {
            let x = f64::from_bits(self.next());
            if x.is_finite() {
                return x;
            }
        }
    }
    fn uniform(&mut self, low: f64, high: f64) -> f64 {
        low + (high - low) * (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The error of `got` in ulps of f32 at the exact value `exact` (an f64
/// close enough to exact: std's f64 functions are within 1 f64 ulp).
fn ulps_f32(got: f32, exact: f64) -> f64 {
    if exact.is_nan() || got.is_nan() {
        return if exact.is_nan() && got.is_nan() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    let rounded = exact as f32;
    if rounded.is_infinite() || got.is_infinite() {
        // Overflow: the result must be the same infinity (or the largest
        // float, for an exact value just past it).
        return if got == rounded || got.abs() == f32::MAX && rounded.is_infinite() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    let exponent = if exact.abs() < f64::from(f32::MIN_POSITIVE) {
        -126
    } else {
        exact.abs().log2().floor() as i32
    };
    let ulp = 2f64.powi(exponent - 23);
    (f64::from(got) - exact).abs() / ulp
}

/// NVIDIA's measure: the distance in representable f32 between `got` and
/// the correctly rounded `exact`.
fn ulps_from_rounded_f32(got: f32, exact: f64) -> u64 {
    ulps_f64(f64::from(got), f64::from(exact as f32)) >> 29
}

/// The distance in representable f64 between `a` and `b` (0 when both NaN).
fn ulps_f64(a: f64, b: f64) -> u64 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() {
            0
        } else {
            u64::MAX
        };
    }
    // Maps the floats to integers in order (-0 and +0 adjacent is fine).
    let key = |x: f64| {
        let bits = x.to_bits() as i64;
        if bits < 0 {
            i64::MIN - bits
        } else {
            bits
        }
    };
    key(a).abs_diff(key(b))
}

/// Checks `f` against `exact` on `samples` random finite floats and on
/// `specials`; `bound` in ulps.
fn check_f32(
    name: &str,
    f: fn(f32) -> f32,
    exact: fn(f64) -> f64,
    bound: f64,
    domain: fn(f32) -> bool,
) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let specials = [
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MIN_POSITIVE,
        f32::from_bits(1),
        -f32::from_bits(1),
        f32::from_bits(0x007f_ffff),
        1.0,
        -1.0,
        f32::MAX,
        f32::MIN,
        1e30,
        -1e30,
        core::f32::consts::PI,
    ];
    let samples = (0..200_000).map(|_| rng.f32()).filter(|x| domain(*x));
    let mut worst = (0.0f64, 0.0f32);
    for x in specials.into_iter().chain(samples) {
        let error = ulps_f32(f(x), exact(f64::from(x)));
        assert!(
            error <= bound,
            "{name}({x:e}) = {:e}, exact {:e}: {error} ulp > {bound}",
            f(x),
            exact(f64::from(x))
        );
        if error > worst.0 {
            worst = (error, x);
        }
    }
    println!("{name}: worst {:.3} ulp at {:e}", worst.0, worst.1);
}

fn check_f64(
    name: &str,
    f: fn(f64) -> f64,
    reference: fn(f64) -> f64,
    bound: u64,
    domain: fn(f64) -> bool,
) {
    let mut rng = Rng(0xd1b5_4a32_d192_ed03);
    let specials = [
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        f64::MIN_POSITIVE,
        f64::from_bits(1),
        -f64::from_bits(1),
        1.0,
        -1.0,
        f64::MAX,
        f64::MIN,
        1e22,
        -1e300,
        core::f64::consts::PI,
    ];
    let samples = (0..200_000).map(|_| rng.f64()).filter(|x| domain(*x));
    for x in specials.into_iter().chain(samples) {
        let (got, want) = (f(x), reference(x));
        let error = ulps_f64(got, want);
        assert!(
            error <= bound,
            "{name}({x:e}) = {got:e}, std {want:e}: {error} ulp > {bound}"
        );
    }
}

fn any_f32(_: f32) -> bool {
    true
}
fn any_f64(_: f64) -> bool {
    true
}

#[test]
fn f32_functions_are_within_their_bounds_over_all_binades() {
    // Exact instructions: 0 ulp (the host computes their exact value).
    check_f32("sqrt", sqrt, f64::sqrt, 0.5, any_f32);
    check_f32(
        "fma(x, x, 1)",
        |x| fma(x, x, 1.0),
        |x| x.mul_add(x, 1.0),
        0.5,
        any_f32,
    );
    check_f32("floor", floor, f64::floor, 0.0, any_f32);
    check_f32("ceil", ceil, f64::ceil, 0.0, any_f32);
    check_f32("abs", abs, f64::abs, 0.0, any_f32);
    // GPU approximations: std's accurate value on the host, within the
    // GPU's 2 ulp.
    check_f32("rsqrt", rsqrt, |x| 1.0 / x.sqrt(), 1.0, any_f32);
    check_f32("exp", exp, f64::exp, 1.0, any_f32);
    check_f32("exp2", exp2, f64::exp2, 1.0, any_f32);
    // Software (libm): 1 ulp, the same bits on both sides.
    check_f32("log", log, f64::ln, 1.0, any_f32);
    check_f32("log2", log2, f64::log2, 1.0, any_f32);
    check_f32("sin", sin, f64::sin, 1.0, any_f32);
    check_f32("cos", cos, f64::cos, 1.0, any_f32);
}

#[test]
fn f32_sin_cos_exp_log_are_within_their_bounds_where_kernels_use_them() {
    // Random bits rarely land in [-10, 10] or near 1, where most calls are.
    let mut rng = Rng(7);
    for _ in 0..200_000 {
        let x = rng.uniform(-10.0, 10.0) as f32;
        for (name, got, exact) in [
            ("sin", sin(x), f64::from(x).sin()),
            ("cos", cos(x), f64::from(x).cos()),
            ("exp", exp(x), f64::from(x).exp()),
            ("log", log(x.abs()), f64::from(x.abs()).ln()),
            ("log2", log2(x.abs() * 0.2), f64::from(x.abs() * 0.2).log2()),
        ] {
            let error = ulps_f32(got, exact);
            assert!(error <= 1.0, "{name}({x:e}): {error} ulp");
        }
    }
}

#[test]
fn f32_pow_is_within_one_ulp() {
    let mut rng = Rng(11);
    for _ in 0..200_000 {
        let x = rng.uniform(0.0, 4.0) as f32;
        let y = rng.uniform(-40.0, 40.0) as f32;
        let error = ulps_f32(pow(x, y), f64::from(x).powf(f64::from(y)));
        assert!(error <= 1.0, "pow({x:e}, {y:e}): {error} ulp");
        // Negative bases with integer exponents keep their sign.
        let n = y.round();
        let error = ulps_f32(pow(-x, n), f64::from(-x).powf(f64::from(n)));
        assert!(error <= 1.0, "pow({:e}, {n:e}): {error} ulp", -x);
    }
    // A wide sample of both operands.
    for _ in 0..200_000 {
        let (x, y) = (rng.f32().abs(), rng.uniform(-4.0, 4.0) as f32);
        let error = ulps_f32(pow(x, y), f64::from(x).powf(f64::from(y)));
        assert!(error <= 1.0, "pow({x:e}, {y:e}): {error} ulp");
    }
}

#[test]
fn f64_functions_are_within_their_bounds() {
    check_f64("sqrt", sqrt, f64::sqrt, 0, any_f64);
    check_f64("floor", floor, f64::floor, 0, any_f64);
    check_f64("ceil", ceil, f64::ceil, 0, any_f64);
    check_f64("abs", abs, f64::abs, 0, any_f64);
    check_f64(
        "fma(x, x, -1)",
        |x| fma(x, x, -1.0),
        |x| x.mul_add(x, -1.0),
        0,
        any_f64,
    );
    check_f64("exp", exp, f64::exp, 1, any_f64);
    check_f64("exp2", exp2, f64::exp2, 1, any_f64);
    check_f64("log", log, f64::ln, 1, any_f64);
    check_f64("log2", log2, f64::log2, 1, any_f64);
    check_f64("sin", sin, f64::sin, 1, any_f64);
    check_f64("cos", cos, f64::cos, 1, any_f64);
    let mut rng = Rng(3);
    for _ in 0..200_000 {
        let x = rng.uniform(-30.0, 30.0);
        assert!(ulps_f64(exp(x), x.exp()) <= 1, "exp({x:e})");
        assert!(ulps_f64(sin(x), x.sin()) <= 1, "sin({x:e})");
        assert!(ulps_f64(cos(x), x.cos()) <= 1, "cos({x:e})");
        assert!(ulps_f64(log(x.abs()), x.abs().ln()) <= 1, "log({x:e})");
        let (b, e) = (rng.uniform(0.0, 8.0), rng.uniform(-100.0, 100.0));
        assert!(ulps_f64(pow(b, e), b.powf(e)) <= 1, "pow({b:e}, {e:e})");
        let e = e.round();
        assert!(
            ulps_f64(pow(-b, e), (-b).powf(e)) <= 1,
            "pow({:e}, {e:e})",
            -b
        );
    }
}

#[test]
fn f64_rsqrt_is_within_one_ulp() {
    // x = y^2 exactly (y with 26 significant bits), so 1/sqrt(x) = 1/y,
    // whose correctly rounded value is one division.
    let mut rng = Rng(5);
    for _ in 0..200_000 {
        let mantissa = (rng.next() >> 38) | (1 << 25);
        let exponent = (rng.next() % 950) as i32 - 500;
        let y = mantissa as f64 * 2f64.powi(exponent);
        let x = y * y;
        assert!(ulps_f64(rsqrt(x), 1.0 / y) <= 1, "rsqrt({x:e})");
    }
    let mut rng = Rng(6);
    for _ in 0..200_000 {
        let x = rng.f64().abs();
        let y = rsqrt(x);
        // y^2 x = 1 within 3 ulp of 1 (y's error, doubled, and roundings).
        if y.is_normal() && x.is_normal() && (y * y).is_normal() {
            let residual = (y * y * x - 1.0).abs();
            assert!(residual <= 4.0 * f64::EPSILON, "rsqrt({x:e}) = {y:e}");
        }
    }
}

#[test]
fn special_values_follow_cuda() {
    let nan32 = f32::NAN;
    let nan64 = f64::NAN;
    // sqrt, rsqrt
    assert_eq!(sqrt(-0.0f32).to_bits(), (-0.0f32).to_bits());
    assert!(sqrt(-1.0f32).is_nan() && sqrt(-1.0f64).is_nan());
    assert_eq!(rsqrt(0.0f32), f32::INFINITY);
    assert_eq!(rsqrt(-0.0f64), f64::NEG_INFINITY);
    assert_eq!(rsqrt(f64::INFINITY), 0.0);
    assert!(rsqrt(-4.0f32).is_nan());
    // exp, exp2: overflow, underflow into subnormals, infinities
    assert_eq!(exp(89.0f32), f32::INFINITY);
    assert_eq!(exp(f32::NEG_INFINITY), 0.0);
    assert_eq!(exp(-0.0f64), 1.0);
    assert_eq!(exp(710.0f64), f64::INFINITY);
    assert_eq!(exp2(-149.0f32), f32::from_bits(1));
    assert_eq!(exp2(-1074.0f64), f64::from_bits(1));
    assert_eq!(exp2(1024.0f64), f64::INFINITY);
    assert!(exp(nan32).is_nan() && exp2(nan64).is_nan());
    // log, log2
    assert_eq!(log(0.0f32), f32::NEG_INFINITY);
    assert_eq!(log(-0.0f64), f64::NEG_INFINITY);
    assert!(log(-1.0f32).is_nan() && log2(-1e-300f64).is_nan());
    assert_eq!(log(f64::INFINITY), f64::INFINITY);
    assert_eq!(log2(f32::from_bits(1)), -149.0);
    assert_eq!(log2(f64::from_bits(1)), -1074.0);
    assert_eq!(log2(8.0f32), 3.0);
    assert_eq!(log(1.0f64), 0.0);
    // sin, cos: signed zero, infinities, huge arguments
    assert_eq!(sin(-0.0f32).to_bits(), (-0.0f32).to_bits());
    assert_eq!(cos(-0.0f64), 1.0);
    assert!(sin(f32::INFINITY).is_nan() && cos(f64::NEG_INFINITY).is_nan());
    // sin(1e22), exactly reduced (a classic test of the reduction).
    assert!(
        ulps_f64(sin(1e22f64), -0.852_200_849_767_188_8) <= 1,
        "{}",
        sin(1e22f64)
    );
    assert!(ulps_f32(sin(f32::MAX), f64::from(f32::MAX).sin()) <= 1.0);
    assert!(ulps_f32(cos(1e30f32), f64::from(1e30f32).cos()) <= 1.0);
    // pow: C's special cases
    assert_eq!(pow(nan32, 0.0), 1.0);
    assert_eq!(pow(1.0f64, nan64), 1.0);
    assert!(pow(-8.0f32, 1.0 / 3.0).is_nan());
    assert_eq!(pow(-2.0f64, 3.0), -8.0);
    assert_eq!(pow(0.0f32, -1.0), f32::INFINITY);
    assert_eq!(pow(-0.0f64, -1.0), f64::NEG_INFINITY);
    assert_eq!(pow(2.0f32, 0.5), core::f32::consts::SQRT_2);
    // fma: one rounding (a separate product would round to 0 here)
    let e = f32::EPSILON;
    assert_eq!(fma(1.0 + e, 1.0 - e, -1.0f32), -e * e);
    let e = f64::EPSILON;
    assert_eq!(fma(1.0 + e, 1.0 - e, -1.0f64), -e * e);
    // abs clears the sign of zeros and infinities
    assert_eq!(abs(-0.0f32).to_bits(), 0);
    assert_eq!(abs(f64::NEG_INFINITY), f64::INFINITY);
    assert!(abs(nan32).is_nan());
    // min, max: a NaN operand yields the other; -0 < +0 in either order
    assert_eq!(min(nan32, 1.0), 1.0);
    assert_eq!(max(2.0f64, nan64), 2.0);
    assert!(min(nan32, nan32).is_nan());
    assert_eq!(min(0.0f32, -0.0).to_bits(), (-0.0f32).to_bits());
    assert_eq!(min(-0.0f64, 0.0).to_bits(), (-0.0f64).to_bits());
    assert_eq!(max(-0.0f32, 0.0).to_bits(), 0);
    assert_eq!(max(0.0f64, -0.0).to_bits(), 0);
    assert_eq!(min(f32::NEG_INFINITY, -1.0), f32::NEG_INFINITY);
    assert_eq!(max(3.0f64, -7.0), 3.0);
    // floor, ceil: signed zeros, subnormals, integers beyond 2^23
    assert_eq!(ceil(-0.5f32).to_bits(), (-0.0f32).to_bits());
    assert_eq!(floor(-0.5f64), -1.0);
    assert_eq!(floor(f32::from_bits(1)), 0.0);
    assert_eq!(ceil(f32::from_bits(1)), 1.0);
    assert_eq!(floor(-f64::from_bits(1)), -1.0);
    assert_eq!(floor(16_777_215.0f32), 16_777_215.0);
    assert_eq!(ceil(4_503_599_627_370_495.5f64), 4_503_599_627_370_496.0);
    assert!(floor(nan64).is_nan() && ceil(f32::INFINITY).is_infinite());
}

#[test]
fn fast_versions_flush_subnormals_and_stay_within_cuda_bounds() {
    let tiny = f32::from_bits(1);
    // Subnormal inputs read as zero, subnormal results become zero.
    assert_eq!(fast::sqrt(tiny), 0.0);
    assert_eq!(fast::rsqrt(tiny), f32::INFINITY);
    assert_eq!(fast::exp2(-130.0), 0.0);
    assert_eq!(fast::log2(tiny), f32::NEG_INFINITY);
    assert_eq!(fast::div(tiny, 1.0), 0.0);
    assert_eq!(fast::exp2(3.0), 8.0);
    let mut rng = Rng(13);
    for _ in 0..100_000 {
        let x = rng.uniform(-core::f64::consts::PI, core::f64::consts::PI) as f32;
        assert!((f64::from(fast::sin(x)) - f64::from(x).sin()).abs() <= 2f64.powf(-21.41));
        assert!((f64::from(fast::cos(x)) - f64::from(x).cos()).abs() <= 2f64.powf(-21.19));
        let y = rng.uniform(0.5, 2.0) as f32;
        assert!((f64::from(fast::log(y)) - f64::from(y).ln()).abs() <= 2f64.powf(-21.41));
        assert!((f64::from(fast::log2(y)) - f64::from(y).log2()).abs() <= 2f64.powf(-22.0));
        let z = rng.uniform(-80.0, 80.0) as f32;
        let bound = 2.0 + (1.173 * f64::from(z)).abs().floor();
        let error = ulps_from_rounded_f32(fast::exp(z), f64::from(z).exp()) as f64;
        assert!(
            error <= bound,
            "exp({z}) = {}: {error} ulp > {bound}",
            fast::exp(z)
        );
        assert!(ulps_from_rounded_f32(fast::exp2(z), f64::from(z).exp2()) <= 2);
        assert!(ulps_from_rounded_f32(fast::div(z, y), f64::from(z) / f64::from(y)) <= 2);
        assert!(ulps_from_rounded_f32(fast::rsqrt(y), 1.0 / f64::from(y).sqrt()) <= 2);
        assert!(ulps_from_rounded_f32(fast::sqrt(y), f64::from(y).sqrt()) <= 1);
    }
}

#[test]
fn nvcc_default_intrinsics_keep_subnormals_and_stay_within_cuda_bounds() {
    let tiny = f32::from_bits(1);
    // Unlike `fast`'s, subnormal inputs and results are kept.
    assert_eq!(intrinsics::div(tiny, 1.0), tiny);
    assert!(intrinsics::exp(-100.0) > 0.0 && intrinsics::exp(-100.0) < f32::MIN_POSITIVE);
    assert!(intrinsics::log(tiny).is_finite());
    assert!(intrinsics::rsqrt(tiny).is_finite());
    let mut rng = Rng(17);
    for _ in 0..100_000 {
        let y = rng.uniform(0.5, 2.0) as f32;
        assert!((f64::from(intrinsics::log(y)) - f64::from(y).ln()).abs() <= 2f64.powf(-21.41));
        let z = rng.uniform(-80.0, 80.0) as f32;
        let bound = 2.0 + (1.173 * f64::from(z)).abs().floor();
        let error = ulps_from_rounded_f32(intrinsics::exp(z), f64::from(z).exp()) as f64;
        assert!(error <= bound, "exp({z}): {error} ulp > {bound}");
        assert!(ulps_from_rounded_f32(intrinsics::div(z, y), f64::from(z) / f64::from(y)) <= 2);
        assert!(ulps_from_rounded_f32(intrinsics::rsqrt(y), 1.0 / f64::from(y).sqrt()) <= 2);
    }
}
