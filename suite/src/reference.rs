//! CPU references of the suite's kernels (`kernels/src/`), to check GPU and
//! CPU-backend results.
//!
//! Plain Rust over slices, one function per kernel computation, with the
//! kernel's `f32` operations in the kernel's order: `f32::mul_add` (one
//! rounding, like `fma.rn.f32`) exactly where the kernel calls `fma`, and
//! separate `*` and `+` everywhere else (rustc contracts nothing, on either
//! side). The elementary functions of Black-Scholes are the kernels' own
//! text (`kernels/src/math/functions.rs`), compiled here over `mul_add`.
//!
//! **Bitwise comparable** (every function here): the result must equal the
//! kernel's bit for bit, for every schedule of it, the CPU backend and the
//! CUDA twins (`twins/suite.cu`, built with `-fmad=false`), given the same
//! inputs. This holds because IEEE-754 `+ - * /` and `fma` are correctly
//! rounded everywhere, neither side flushes subnormals, and the orders agree.
//! Compare with `to_bits()` (or NaN-aware equality); a mismatch is a bug,
//! not noise. The one place where a tolerance is right is against a
//! *different* formula, as the tests below do: `black_scholes` against the
//! textbook prices (the Abramowitz-Stegun normal CDF errs by up to 7.5e-8
//! absolute), `exp`/`ln`/`sqrt` against `std` (within 1 ulp).
//!
//! Layouts and shapes are the kernels' (see their documentation): matrices
//! row-major, images `width` pixels per row, 3D grids x-fastest.

/// The suite's `exp`, `ln`, `sqrt` and `abs`, over `f32::mul_add`: the same
/// text as `kernels/src/math.rs` compiles over `fma.rn.f32`.
#[path = "reference/ports.rs"]
pub mod ports;

pub mod math {
    #[inline(always)]
    fn fma(a: f32, b: f32, c: f32) -> f32 {
        a.mul_add(b, c)
    }

    include!("../../kernels/src/math/functions.rs");
}

/// `reverse_in_blocks` launched with `block` threads per block: each block's
/// slice of `input` reversed in place of the block; in a last, partial block
/// only the elements whose mirror image exists are written, the others keep
/// `output`'s value (passed in). Bitwise comparable (it moves values).
pub fn reverse_in_blocks(input: &[f32], output: &mut [f32], block: usize) {
    let n = input.len();
    assert_eq!(output.len(), n);
    for (i, out) in output.iter_mut().enumerate() {
        let (start, t) = (i / block * block, i % block);
        let from = start + (block - 1 - t);
        if from < n {
            *out = input[from];
        }
    }
}

/// `rotate_in_blocks` launched with `block` threads per block: element `i`
/// takes the next of its block's chunk, the chunk's last its first; in a
/// last, partial chunk the elements whose next is past the end take 0.
/// Bitwise comparable (it moves values).
pub fn rotate_in_blocks(input: &[u32], block: usize) -> Vec<u32> {
    let n = input.len();
    (0..n)
        .map(|i| {
            let from = i / block * block + (i % block + 1) % block;
            if from < n {
                input[from]
            } else {
                0
            }
        })
        .collect()
}

/// `ragged_sum` launched with `block` threads per block
/// (`kernels::early_exit`): each live thread's element plus its live
/// neighbours' at distances 1, 2 and 4 through the rounds, wrapping among
/// the live threads, plus its block index; the upper half of block
/// `ragged` and the threads past the end leave at once, and their
/// elements keep `untouched`. Bitwise comparable (wrapping sums).
pub fn ragged_sum(input: &[u32], block: usize, ragged: usize, untouched: u32) -> Vec<u32> {
    let n = input.len();
    let mut output = vec![untouched; n];
    for (b, chunk) in input.chunks(block).enumerate() {
        let live = if b == ragged {
            (block / 2).min(chunk.len())
        } else {
            chunk.len()
        };
        let mut values = chunk[..live].to_vec();
        let mut distance = 1;
        for _ in 0..kernels::early_exit::RAGGED_ROUNDS {
            values = (0..live)
                .map(|t| values[t].wrapping_add(values[(t + distance) % live]))
                .collect();
            distance *= 2;
        }
        for (t, value) in values.into_iter().enumerate() {
            output[b * block + t] = value.wrapping_add(b as u32);
        }
    }
    output
}

/// `C = A B` for `n x n` matrices, each element summed as
/// `sum = fma(A[i][k], B[k][j], sum)` for `k = 0 .. n` in order: the order
/// of `sgemm_naive`, `sgemm_tiled` (tiles of k in order, k in order inside)
/// and `sgemm_register` (one accumulator per element, k-steps in order).
/// Bitwise comparable with all three.
pub fn sgemm(a: &[f32], b: &[f32], n: usize) -> Vec<f32> {
    assert_eq!((a.len(), b.len()), (n * n, n * n));
    (0..n * n)
        .map(|i| sgemm_element(n, i / n, i % n, |k| a[k], |k| b[k]))
        .collect()
}

/// One element `C[row][col]` of [`sgemm`], reading `A` and `B` (row-major,
/// `n x n`) through `a` and `b`: for checking sampled elements of matrices
/// too large to copy.
pub fn sgemm_element(
    n: usize,
    row: usize,
    col: usize,
    a: impl Fn(usize) -> f32,
    b: impl Fn(usize) -> f32,
) -> f32 {
    (0..n).fold(0.0f32, |sum, k| a(row * n + k).mul_add(b(k * n + col), sum))
}

/// `conv5x5`: the 25 taps in `dy`-then-`dx` order, `fma(value, filter, sum)`,
/// `value = 0` outside the image (still accumulated). Bitwise comparable.
pub fn conv5x5(input: &[f32], filter: &[f32], width: usize, height: usize) -> Vec<f32> {
    assert_eq!((input.len(), filter.len()), (width * height, 25));
    let mut output = vec![0.0f32; width * height];
    for y in 0..height {
        for x in 0..width {
            let mut sum = 0.0f32;
            for dy in 0..5 {
                for dx in 0..5 {
                    let (yy, xx) = ((y + dy).wrapping_sub(2), (x + dx).wrapping_sub(2));
                    let value = if yy < height && xx < width {
                        input[yy * width + xx]
                    } else {
                        0.0
                    };
                    sum = value.mul_add(filter[dy * 5 + dx], sum);
                }
            }
            output[y * width + x] = sum;
        }
    }
    output
}

/// `kmeans_assign`: for each point the index of the nearest centroid by
/// `fma(d, d, dist)` over features in order; first minimum wins, starting
/// from `f32::MAX` and index 0. Bitwise comparable (exactly equal indices).
pub fn kmeans_assign(points: &[f32], centroids: &[f32], nfeatures: usize) -> Vec<u32> {
    assert!(nfeatures > 0);
    assert_eq!(points.len() % nfeatures, 0);
    assert_eq!(centroids.len() % nfeatures, 0);
    points
        .chunks_exact(nfeatures)
        .map(|point| {
            let mut best = 0u32;
            let mut best_distance = f32::MAX;
            for (c, centroid) in centroids.chunks_exact(nfeatures).enumerate() {
                let mut distance = 0.0f32;
                for (p, q) in point.iter().zip(centroid) {
                    let d = p - q;
                    distance = d.mul_add(d, distance);
                }
                if distance < best_distance {
                    best_distance = distance;
                    best = c as u32;
                }
            }
            best
        })
        .collect()
}

/// The task pool's 64x64 product (`kernels::pool`'s `SGEMM64` task,
/// `sgemm64_launch`, `sgemm64_batched`): `sum = sum + A[row][k] * B[k][col]`
/// with a separate `*` and `+` (that body calls no `fma`), `k` in order.
/// Bitwise comparable.
pub fn sgemm64(a: &[f32], b: &[f32]) -> Vec<f32> {
    assert_eq!((a.len(), b.len()), (64 * 64, 64 * 64));
    (0..64 * 64)
        .map(|i| {
            let (row, col) = (i / 64, i % 64);
            (0..64).fold(0.0f32, |sum, k| sum + a[row * 64 + k] * b[k * 64 + col])
        })
        .collect()
}

/// One iteration of the task pool's k-means (`kernels::pool`'s
/// `KMEANS_ASSIGN` over every point, then `KMEANS_UPDATE`) on 2-D points
/// (`(x, y)` pairs): the labels as [`kmeans_assign`] computes them, then per
/// run of [`KMEANS_SUB`](kernels::pool::KMEANS_SUB) points and per cluster
/// `(sum x, sum y, count)` in point order, then per cluster those partials
/// summed in partial order and divided (a cluster without points keeps its
/// centroid). Updates `centroids` in place and returns the labels.
/// Bitwise comparable.
pub fn kmeans_pool_iteration(points: &[f32], centroids: &mut [f32]) -> Vec<u32> {
    let sub = kernels::pool::KMEANS_SUB as usize;
    let k = centroids.len() / 2;
    let labels = kmeans_assign(points, centroids, 2);
    let partials: Vec<Vec<[f32; 3]>> = labels
        .chunks(sub)
        .zip(points.chunks(2 * sub))
        .map(|(labels, points)| {
            let mut partial = vec![[0.0f32; 3]; k];
            for (&label, point) in labels.iter().zip(points.chunks_exact(2)) {
                let sums = &mut partial[label as usize];
                sums[0] += point[0];
                sums[1] += point[1];
                sums[2] += 1.0;
            }
            partial
        })
        .collect();
    for (c, centroid) in centroids.chunks_exact_mut(2).enumerate() {
        let mut sums = [0.0f32; 3];
        for partial in &partials {
            for (sum, part) in sums.iter_mut().zip(partial[c]) {
                *sum += part;
            }
        }
        if sums[2] > 0.0 {
            centroid[0] = sums[0] / sums[2];
            centroid[1] = sums[1] / sums[2];
        }
    }
    labels
}

/// `syrk`: `C[i][j] = fma(alpha, sum, beta * C[i][j])` with
/// `sum = fma(A[i][k], A[j][k], sum)` over `k` in order, for all `i, j < n`;
/// `A` is `n x m`. Updates `c` in place. Bitwise comparable.
pub fn syrk(a: &[f32], c: &mut [f32], alpha: f32, beta: f32, n: usize, m: usize) {
    assert_eq!((a.len(), c.len()), (n * m, n * n));
    for i in 0..n {
        for j in 0..n {
            let mut sum = 0.0f32;
            for k in 0..m {
                sum = a[i * m + k].mul_add(a[j * m + k], sum);
            }
            c[i * n + j] = alpha.mul_add(sum, beta * c[i * n + j]);
        }
    }
}

/// `atax_rows`: `tmp[i] = fma-sum over j of A[i][j] x[j]`, `A` is
/// `nx x ny`. Bitwise comparable.
pub fn atax_rows(a: &[f32], x: &[f32], nx: usize, ny: usize) -> Vec<f32> {
    assert_eq!((a.len(), x.len()), (nx * ny, ny));
    (0..nx)
        .map(|i| {
            let mut sum = 0.0f32;
            for j in 0..ny {
                sum = a[i * ny + j].mul_add(x[j], sum);
            }
            sum
        })
        .collect()
}

/// `atax_rows_gemv`: `atax_rows` in the order of one block of `block`
/// threads (a power of two) per row: thread `t` fma-sums `j = t, t + block,
/// ...` in order, then the block's sums are added in a tree (step `s` =
/// `block / 2`, ..., 1: sum `t < s` plus sum `t + s`). Bitwise comparable.
pub fn atax_rows_gemv(a: &[f32], x: &[f32], nx: usize, ny: usize, block: usize) -> Vec<f32> {
    assert_eq!((a.len(), x.len()), (nx * ny, ny));
    assert!(block.is_power_of_two());
    (0..nx)
        .map(|i| {
            let row = &a[i * ny..(i + 1) * ny];
            let mut partial: Vec<f32> = (0..block)
                .map(|t| {
                    (t..ny)
                        .step_by(block)
                        .fold(0.0f32, |sum, j| row[j].mul_add(x[j], sum))
                })
                .collect();
            tree_sum(&mut partial)
        })
        .collect()
}

/// The sum of `partial` (a power of two long) as a block adds it through
/// shared memory: step `s` = `len / 2`, ..., 1, element `t < s` plus
/// element `t + s`.
fn tree_sum(partial: &mut [f32]) -> f32 {
    let mut s = partial.len() / 2;
    while s > 0 {
        for t in 0..s {
            partial[t] += partial[t + s];
        }
        s /= 2;
    }
    partial[0]
}

/// `atax_columns`: `y[j] = fma-sum over i of A[i][j] tmp[i]`, `A` is
/// `nx x ny`. Bitwise comparable.
pub fn atax_columns(a: &[f32], tmp: &[f32], nx: usize, ny: usize) -> Vec<f32> {
    assert_eq!((a.len(), tmp.len()), (nx * ny, nx));
    (0..ny)
        .map(|j| {
            let mut sum = 0.0f32;
            for i in 0..nx {
                sum = a[i * ny + j].mul_add(tmp[i], sum);
            }
            sum
        })
        .collect()
}

/// `atax_columns_gemv`: `atax_columns` in the order of a block of
/// `groups` row groups (a power of two): group `g` fma-sums rows
/// `i = g, g + groups, ...` in order, then the groups' sums are added in a
/// tree (step `s` = `groups / 2`, ..., 1: sum `g < s` plus sum `g + s`).
/// Bitwise comparable.
pub fn atax_columns_gemv(a: &[f32], tmp: &[f32], nx: usize, ny: usize, groups: usize) -> Vec<f32> {
    assert_eq!((a.len(), tmp.len()), (nx * ny, nx));
    assert!(groups.is_power_of_two());
    (0..ny)
        .map(|j| {
            let mut partial: Vec<f32> = (0..groups)
                .map(|g| {
                    (g..nx)
                        .step_by(groups)
                        .fold(0.0f32, |sum, i| a[i * ny + j].mul_add(tmp[i], sum))
                })
                .collect();
            tree_sum(&mut partial)
        })
        .collect()
}

/// The kernel's cumulative normal distribution (`black_scholes::cnd`),
/// operation for operation.
pub fn cnd(d: f32) -> f32 {
    cnd_with(d, |v| 1.0 / v, math::exp)
}

/// The A&S polynomial of [`cnd`] with the reciprocal and the exponential
/// given (`black_scholes::cnd_with`).
fn cnd_with(d: f32, reciprocal: impl Fn(f32) -> f32, exp: impl Fn(f32) -> f32) -> f32 {
    const A1: f32 = 0.319_381_53;
    const A2: f32 = -0.356_563_78;
    const A3: f32 = 1.781_477_9;
    const A4: f32 = -1.821_255_9;
    const A5: f32 = 1.330_274_5;
    const RSQRT_2PI: f32 = 0.398_942_3;
    let k = reciprocal(0.231_641_9f32.mul_add(math::abs(d), 1.0));
    let poly = k * k.mul_add(k.mul_add(k.mul_add(k.mul_add(A5, A4), A3), A2), A1);
    let tail = RSQRT_2PI * exp(-0.5 * d * d) * poly;
    if d > 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// `black_scholes`: `(call, put)` per option. Bitwise comparable (the same
/// `exp`, `ln`, `sqrt`, `cnd` and order as the kernel).
pub fn black_scholes(
    price: &[f32],
    strike: &[f32],
    years: &[f32],
    riskfree: f32,
    volatility: f32,
) -> (Vec<f32>, Vec<f32>) {
    assert!(price.len() == strike.len() && price.len() == years.len());
    price
        .iter()
        .zip(strike)
        .zip(years)
        .map(|((&s, &x), &t)| {
            let sqrt_t = math::sqrt(t);
            let d1 = (math::ln(s / x) + (riskfree + 0.5 * volatility * volatility) * t)
                / (volatility * sqrt_t);
            let d2 = d1 - volatility * sqrt_t;
            let cnd_d1 = cnd(d1);
            let cnd_d2 = cnd(d2);
            let discount = math::exp(-riskfree * t);
            let call = s * cnd_d1 - x * discount * cnd_d2;
            let put = x * discount * (1.0 - cnd_d2) - s * (1.0 - cnd_d1);
            (call, put)
        })
        .unzip()
}

/// `black_scholes::cnd_fast` with the host's math for the GPU's
/// approximations (`clustered_device::math::intrinsics` on the host).
fn cnd_fast(d: f32) -> f32 {
    use clustered_device::math::intrinsics;
    cnd_with(d, |v| intrinsics::div(1.0, v), intrinsics::exp)
}

/// `black_scholes_fast`: `(call, put)` per option, the SDK sample's
/// formulation with the host's math for the GPU's approximate
/// instructions: bitwise equal to the CPU backend's run, within a few ulp
/// per approximation of the GPU's.
pub fn black_scholes_fast(
    price: &[f32],
    strike: &[f32],
    years: &[f32],
    riskfree: f32,
    volatility: f32,
) -> (Vec<f32>, Vec<f32>) {
    use clustered_device::math::intrinsics;
    assert!(price.len() == strike.len() && price.len() == years.len());
    price
        .iter()
        .zip(strike)
        .zip(years)
        .map(|((&s, &x), &t)| {
            let sqrt_t = intrinsics::div(1.0, intrinsics::rsqrt(t));
            let d1 = intrinsics::div(
                intrinsics::log(s / x) + (riskfree + 0.5 * volatility * volatility) * t,
                volatility * sqrt_t,
            );
            let d2 = d1 - volatility * sqrt_t;
            let cnd_d1 = cnd_fast(d1);
            let cnd_d2 = cnd_fast(d2);
            let discount = intrinsics::exp(-riskfree * t);
            let call = s * cnd_d1 - x * discount * cnd_d2;
            let put = x * discount * (1.0 - cnd_d2) - s * (1.0 - cnd_d1);
            (call, put)
        })
        .unzip()
}

/// `transpose_naive`: `output[x * height + y] = input[y * width + x]`.
/// Bitwise comparable (it moves values).
pub fn transpose(input: &[f32], width: usize, height: usize) -> Vec<f32> {
    assert_eq!(input.len(), width * height);
    let mut output = vec![0.0f32; width * height];
    for y in 0..height {
        for x in 0..width {
            output[x * height + y] = input[y * width + x];
        }
    }
    output
}

/// `jacobi5`: `0.2 * (c + n + s + e + w)` inside (summed in that order),
/// the border copied. Bitwise comparable.
pub fn jacobi5(input: &[f32], width: usize, height: usize) -> Vec<f32> {
    assert_eq!(input.len(), width * height);
    let mut output = vec![0.0f32; width * height];
    for y in 0..height {
        for x in 0..width {
            let at = y * width + x;
            let c = input[at];
            output[at] = if x == 0 || y == 0 || x == width - 1 || y == height - 1 {
                c
            } else {
                let (n, s) = (input[at - width], input[at + width]);
                let (e, w) = (input[at + 1], input[at - 1]);
                0.2 * (c + n + s + e + w)
            };
        }
    }
    output
}

/// `jacobi7_3d`: `c1 * (z+ + z- + y+ + y- + x+ + x-) - c0 * centre` inside
/// (summed in that order), the border copied; x-fastest layout. Bitwise
/// comparable.
pub fn jacobi7_3d(input: &[f32], nx: usize, ny: usize, nz: usize, c0: f32, c1: f32) -> Vec<f32> {
    assert_eq!(input.len(), nx * ny * nz);
    let plane = nx * ny;
    let mut output = vec![0.0f32; input.len()];
    for z in 0..nz {
        for y in 0..ny {
            for x in 0..nx {
                let at = (z * ny + y) * nx + x;
                let centre = input[at];
                let border =
                    x == 0 || y == 0 || z == 0 || x == nx - 1 || y == ny - 1 || z == nz - 1;
                output[at] = if border {
                    centre
                } else {
                    let sum = input[at + plane]
                        + input[at - plane]
                        + input[at + nx]
                        + input[at - nx]
                        + input[at + 1]
                        + input[at - 1];
                    c1 * sum - c0 * centre
                };
            }
        }
    }
    output
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Small integers: every sum and product below is exact in `f32`, so the
    /// straightforward formula and the reference must agree exactly.
    fn ramp(len: usize, modulo: usize, offset: f32) -> Vec<f32> {
        (0..len).map(|i| (i % modulo) as f32 - offset).collect()
    }

    #[test]
    fn reverse_in_blocks_reverses_each_full_block() {
        let input: Vec<f32> = (0..10).map(|i| i as f32).collect();
        let mut output = vec![-1.0; 10];
        reverse_in_blocks(&input, &mut output, 4);
        // Blocks [0..4), [4..8) reversed; in [8..12) only 8 and 9 exist, and
        // their mirrors 11 and 10 do not.
        assert_eq!(output, [3.0, 2.0, 1.0, 0.0, 7.0, 6.0, 5.0, 4.0, -1.0, -1.0]);
    }

    #[test]
    fn sgemm_matches_the_definition_and_the_identity() {
        let n = 5;
        let a = ramp(n * n, 7, 3.0);
        let b = ramp(n * n, 5, 2.0);
        let c = sgemm(&a, &b, n);
        for i in 0..n {
            for j in 0..n {
                let expected: f32 = (0..n).map(|k| a[i * n + k] * b[k * n + j]).sum();
                assert_eq!(c[i * n + j], expected, "({i}, {j})");
            }
        }
        let identity: Vec<f32> = (0..n * n)
            .map(|i| if i / n == i % n { 1.0 } else { 0.0 })
            .collect();
        assert_eq!(sgemm(&a, &identity, n), a);
        assert_eq!(sgemm(&identity, &b, n), b);
    }

    #[test]
    fn conv5x5_with_a_centre_tap_copies_and_with_ones_sums_the_window() {
        let (width, height) = (6, 4);
        let input = ramp(width * height, 9, 4.0);
        let mut centre = vec![0.0; 25];
        centre[12] = 1.0;
        assert_eq!(conv5x5(&input, &centre, width, height), input);
        let ones = vec![1.0; 25];
        let sums = conv5x5(&input, &ones, width, height);
        for y in 0..height as i64 {
            for x in 0..width as i64 {
                let mut expected = 0.0;
                for yy in (y - 2).max(0)..=(y + 2).min(height as i64 - 1) {
                    for xx in (x - 2).max(0)..=(x + 2).min(width as i64 - 1) {
                        expected += input[(yy * width as i64 + xx) as usize];
                    }
                }
                assert_eq!(
                    sums[(y * width as i64 + x) as usize],
                    expected,
                    "({x}, {y})"
                );
            }
        }
        // A tap off the centre shifts the image, with zeros coming in.
        let mut right = vec![0.0; 25];
        right[13] = 2.0; // dx = 3: reads x + 1
        let shifted = conv5x5(&input, &right, width, height);
        for y in 0..height {
            for x in 0..width {
                let expected = if x + 1 < width {
                    2.0 * input[y * width + x + 1]
                } else {
                    0.0
                };
                assert_eq!(shifted[y * width + x], expected);
            }
        }
    }

    #[test]
    fn kmeans_assign_picks_the_nearest_and_the_first_of_ties() {
        let centroids = [0.0, 0.0, 10.0, 10.0, -10.0, 5.0];
        let points = [1.0, -1.0, 9.0, 12.0, -8.0, 4.0, 5.0, 5.0, -5.0, 2.5];
        // (5, 5) is as far from (0, 0) as from (10, 10): the first wins.
        // (-5, 2.5): 31.25 from (0, 0), 31.25 from (-10, 5): the first again.
        assert_eq!(kmeans_assign(&points, &centroids, 2), [0, 1, 2, 0, 0]);
        assert_eq!(kmeans_assign(&[f32::NAN, 0.0], &centroids, 2), [0]);
    }

    #[test]
    fn syrk_matches_the_definition() {
        let (n, m) = (4, 3);
        let a = ramp(n * m, 5, 2.0);
        let c0 = ramp(n * n, 3, 1.0);
        let (alpha, beta) = (2.0, -0.5);
        let mut c = c0.clone();
        syrk(&a, &mut c, alpha, beta, n, m);
        for i in 0..n {
            for j in 0..n {
                let dot: f32 = (0..m).map(|k| a[i * m + k] * a[j * m + k]).sum();
                assert_eq!(c[i * n + j], alpha * dot + beta * c0[i * n + j]);
            }
        }
        // alpha A A^T is symmetric: with beta = 0, so is C.
        let mut c = vec![7.0; n * n];
        syrk(&a, &mut c, 1.0, 0.0, n, m);
        for i in 0..n {
            for j in 0..n {
                assert_eq!(c[i * n + j], c[j * n + i]);
            }
        }
    }

    #[test]
    fn atax_passes_compute_a_transpose_a_x() {
        let (nx, ny) = (3, 4);
        let a = ramp(nx * ny, 7, 3.0);
        let x = [1.0, -2.0, 0.5, 3.0];
        let tmp = atax_rows(&a, &x, nx, ny);
        for i in 0..nx {
            let expected: f32 = (0..ny).map(|j| a[i * ny + j] * x[j]).sum();
            assert_eq!(tmp[i], expected);
        }
        let y = atax_columns(&a, &tmp, nx, ny);
        for j in 0..ny {
            let expected: f32 = (0..nx).map(|i| a[i * ny + j] * tmp[i]).sum();
            assert_eq!(y[j], expected);
        }
    }

    #[test]
    fn transpose_swaps_indices() {
        let (width, height) = (3, 2);
        let input = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(
            transpose(&input, width, height),
            [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
        );
        assert_eq!(
            transpose(&transpose(&input, width, height), height, width),
            input
        );
    }

    #[test]
    fn jacobi5_averages_inside_and_copies_the_border() {
        let (width, height) = (4, 3);
        let input = ramp(width * height, 12, 0.0); // input[i] = i
        let output = jacobi5(&input, width, height);
        for y in 0..height {
            for x in 0..width {
                let at = y * width + x;
                let border = x == 0 || y == 0 || x == width - 1 || y == height - 1;
                // The 5-point mean of a linear function is its centre value
                // (up to rounding of 0.2 * 5 i).
                let expected = if border {
                    input[at]
                } else {
                    0.2 * (5.0 * at as f32)
                };
                assert_eq!(output[at], expected, "({x}, {y})");
            }
        }
        // A constant field stays constant.
        assert!(jacobi5(&[2.5; 20], 5, 4).iter().all(|&v| v == 2.5));
    }

    #[test]
    fn jacobi7_3d_matches_the_definition_and_copies_the_border() {
        let (nx, ny, nz) = (4, 3, 3);
        let input = ramp(nx * ny * nz, 11, 5.0);
        let (c0, c1) = (0.5, 0.25);
        let output = jacobi7_3d(&input, nx, ny, nz, c0, c1);
        let at = |x: usize, y: usize, z: usize| (z * ny + y) * nx + x;
        for z in 0..nz {
            for y in 0..ny {
                for x in 0..nx {
                    let border =
                        x == 0 || y == 0 || z == 0 || x == nx - 1 || y == ny - 1 || z == nz - 1;
                    let expected = if border {
                        input[at(x, y, z)]
                    } else {
                        let neighbours = [
                            at(x, y, z + 1),
                            at(x, y, z - 1),
                            at(x, y + 1, z),
                            at(x, y - 1, z),
                            at(x + 1, y, z),
                            at(x - 1, y, z),
                        ];
                        let sum: f32 = neighbours.iter().map(|&i| input[i]).sum();
                        c1 * sum - c0 * input[at(x, y, z)]
                    };
                    assert_eq!(output[at(x, y, z)], expected, "({x}, {y}, {z})");
                }
            }
        }
    }

    /// The distance in units in the last place between an `f32` and the
    /// exact value (an `f64`), at the `f32` result's binade.
    fn ulps(got: f32, exact: f64) -> f64 {
        let rounded = exact as f32;
        let ulp = (f32::from_bits(rounded.abs().to_bits() + 1) - rounded.abs()) as f64;
        (got as f64 - exact).abs() / ulp
    }

    /// Sample points: a dense sweep plus every 97th `f32` bit pattern in a
    /// range, so all binades and mantissa patterns get their turn.
    fn samples(from: f32, to: f32) -> impl Iterator<Item = f32> {
        let (low, high) = (from as f64, to as f64);
        let dense = (0..=20_000).map(move |i| (low + (high - low) * i as f64 / 20_000.0) as f32);
        let (a, b) = (from.to_bits(), to.to_bits());
        let bits = if from >= 0.0 {
            (a..=b).step_by(97).map(f32::from_bits).collect::<Vec<_>>()
        } else {
            Vec::new()
        };
        dense.chain(bits)
    }

    #[test]
    fn exp_is_within_1_ulp() {
        let mut worst = 0.0f64;
        for x in samples(-87.0, 88.0).chain(samples(0.0, 88.0).map(|x| -x)) {
            let error = ulps(math::exp(x), (x as f64).exp());
            assert!(error <= 1.0, "exp({x}) = {} ({error} ulp)", math::exp(x));
            worst = worst.max(error);
        }
        println!("exp: worst {worst:.3} ulp");
        assert_eq!(math::exp(0.0), 1.0);
        assert_eq!(math::exp(89.0), f32::INFINITY);
        assert_eq!(math::exp(-200.0), 0.0);
        assert!(math::exp(f32::NAN).is_nan());
        // Subnormal results are computed, not flushed.
        let tiny = math::exp(-100.0);
        assert!(tiny > 0.0 && tiny < f32::MIN_POSITIVE);
        assert!(ulps(tiny, (-100.0f64).exp()) <= 1.0);
    }

    #[test]
    fn ln_is_within_1_ulp() {
        let mut worst = 0.0f64;
        for x in samples(f32::MIN_POSITIVE, f32::MAX).chain(samples(0.5, 2.0)) {
            let exact = (x as f64).ln();
            if exact == 0.0 {
                assert_eq!(math::ln(x), 0.0);
                continue;
            }
            let error = ulps(math::ln(x), exact);
            assert!(error <= 1.0, "ln({x}) = {} ({error} ulp)", math::ln(x));
            worst = worst.max(error);
        }
        println!("ln: worst {worst:.3} ulp");
    }

    #[test]
    fn sqrt_is_within_1_ulp() {
        let mut worst = 0.0f64;
        // The domain: 0 and normal numbers (subnormals are not).
        let domain = samples(f32::MIN_POSITIVE, f32::MAX)
            .chain(samples(0.0, 4.0))
            .filter(|&x| x == 0.0 || x >= f32::MIN_POSITIVE);
        for x in domain {
            let exact = (x as f64).sqrt();
            if exact == 0.0 {
                assert_eq!(math::sqrt(x), 0.0);
                continue;
            }
            let error = ulps(math::sqrt(x), exact);
            assert!(error <= 1.0, "sqrt({x}) = {} ({error} ulp)", math::sqrt(x));
            worst = worst.max(error);
        }
        println!("sqrt: worst {worst:.3} ulp");
        assert_eq!(math::sqrt(4.0), 2.0);
        assert_eq!(math::sqrt(0.0), 0.0);
    }

    #[test]
    fn cnd_is_the_normal_distribution() {
        // Phi at a few points (from tables), and Phi(-d) = 1 - Phi(d).
        for (d, phi) in [
            (0.0f32, 0.5f64),
            (1.0, 0.841_344_746),
            (-1.0, 0.158_655_254),
            (1.96, 0.975_002_105),
            (-3.0, 0.001_349_898),
        ] {
            assert!((cnd(d) as f64 - phi).abs() < 2e-7, "cnd({d}) = {}", cnd(d));
        }
        for d in [0.3f32, 1.7, 2.9] {
            assert!((cnd(d) + cnd(-d) - 1.0).abs() < 2e-7);
        }
    }

    #[test]
    fn black_scholes_matches_textbook_prices_and_parity() {
        // S = 100, X = 100, T = 1, r = 5%, sigma = 20%: call 10.4506,
        // put 5.5735 (Hull).
        let (call, put) = black_scholes(&[100.0, 100.0], &[100.0, 90.0], &[1.0, 0.5], 0.05, 0.2);
        assert!((call[0] - 10.450_58).abs() < 1e-3, "call {}", call[0]);
        assert!((put[0] - 5.573_53).abs() < 1e-3, "put {}", put[0]);
        // Put-call parity: C - P = S - X e^(-rT).
        for (i, (s, x, t)) in [(100.0f64, 100.0f64, 1.0f64), (100.0, 90.0, 0.5)]
            .into_iter()
            .enumerate()
        {
            let parity = s - x * (-0.05 * t).exp();
            assert!(((call[i] - put[i]) as f64 - parity).abs() < 1e-3);
        }
    }
}
