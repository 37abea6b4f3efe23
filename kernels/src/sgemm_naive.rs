//! Naive SGEMM: one element of `C` per thread, straight from global memory.

use clustered_device::clustered;
use clustered_device::index::at;
use clustered_device::math::fma;
use clustered_device::thread::{block_idx_x, block_idx_y, thread_idx_x, thread_idx_y};
use clustered_device::unroll::unroll;

/// Block edge of [`sgemm_naive`](fn@sgemm_naive): blocks are `16 x 16` threads.
pub const NAIVE_BLOCK: u32 = 16;

/// `C = A * B` for row-major `n x n` matrices, `n` a multiple of 16.
///
/// Launch: block `16 x 16`, grid `(n / 16, n / 16)`. Thread `(tx, ty)` of
/// block `(bx, by)` computes `C[row][col]`, `row = 16 by + ty`,
/// `col = 16 bx + tx`, as `sum = fma(A[row][k], B[k][col], sum)` for
/// `k = 0 .. n` in order.
///
/// Sharing: the CTAs of one grid row (same `by`) read the same 16 rows of
/// `A`; the CTAs of one grid column (same `bx`) the same 16 columns of `B`.
/// Each thread reads a whole row and column: the kernel is L1-bound
/// (87% L1 hits in every order: docs/ncu-why-h100.txt).
///
/// Variants:
/// - `_raster16`, `_raster32`: the grouped raster (Triton's GROUP_M order):
///   `tile(1, G)` runs `G` CTAs down a grid column, then the next column,
///   band after band, so `G` rows of `A` and one column panel of `B` stay
///   hot. G = 32 is the tuned schedule at both sizes in Rust (1.18-1.19x
///   at 8192 on an H100 and an H200 over the kernel before its k loop ran
///   8 steps a run, 1.045x after, docs/BENCHMARKS.md); the C++ reference
///   found GROUP 16-32 best (DESIGN.md section 7).
/// - `_sawtooth32`: the raster of G = 32 along x with every other band of
///   rows walked right to left (Sawtooth order), so a band starts on the
///   columns of B the last one ended with.
/// - `_raster32_y`: the same raster along the other axis
///   (`column_tile(32, 1)`: 32 grid columns down the grid, band after band),
///   so a panel of B stays hot while the rows of A stream.
/// - `_redirect_rows`, `_redirect_columns`: the paper's redirection with
///   Y-partitioning (clusters of grid rows: CTAs sharing `A`) and
///   X-partitioning (clusters of grid columns: CTAs sharing `B`).
/// - `_agents`: persistent agents, ACTIVE = MAX, clusters cut from 4x4 tiles
///   of CTAs (the ~8 agents running at once on an SM share 2 `A` panels and
///   4 `B` panels instead of 1 and 8).
/// - `_agents_throttled`: the same with 4 active agents per SM (of about 8):
///   fewer rows and columns in flight for the SM's L1.
/// - `_stride`: a grid-stride loop over the raster of G = 16: persistent
///   blocks without claims, so without the agents' barrier per claim.
/// - `_agents_chunk8`: the agents claiming 8 tasks per atomic (one barrier
///   per 8 tasks instead of per task).
#[clustered(auto)]
#[clustered(name = sgemm_naive_raster16, binding = reorder, indexing = tile(1, 16))]
#[clustered(name = sgemm_naive_raster32, binding = reorder, indexing = tile(1, 32))]
#[clustered(name = sgemm_naive_raster32_y, binding = reorder, indexing = column_tile(32, 1))]
#[clustered(name = sgemm_naive_sawtooth32, binding = reorder, indexing = sawtooth(1, 32))]
#[clustered(name = sgemm_naive_persistent16, binding = persistent, indexing = tile(1, 16), chunk = 4)]
#[clustered(name = sgemm_naive_redirect_rows, binding = redirect, indexing = row_major)]
#[clustered(name = sgemm_naive_redirect_columns, binding = redirect, indexing = column_major)]
#[clustered(name = sgemm_naive_agents, binding = agents, indexing = tile(4, 4))]
#[clustered(name = sgemm_naive_agents_throttled, binding = agents, indexing = tile(4, 4), active = 4)]
#[clustered(name = sgemm_naive_stride, binding = stride, indexing = tile(1, 16))]
#[clustered(name = sgemm_naive_agents_chunk8, binding = agents, indexing = tile(4, 4), chunk = 8)]
pub unsafe fn sgemm_naive(a: *const f32, b: *const f32, c: *mut f32, n: u32) {
    let row = block_idx_y() * NAIVE_BLOCK + thread_idx_y();
    let col = block_idx_x() * NAIVE_BLOCK + thread_idx_x();
    // Row `row` of A and column `col` of B, stepped by pointer: as fast as
    // nvcc's `int` indices (index arithmetic in u32 rebuilt every address:
    // 1.24x slower at n = 8192, `index_forms`).
    let (mut a_k, mut b_k) = (a.add(at(row, n, 0)), b.add(col as usize));
    let mut sum = 0.0f32;
    // 8 steps a run, as nvcc's `#pragma unroll` would give it: ptxas keeps
    // 16 loads in flight where LLVM's own unrolling (16 deep) left it 12;
    // 6.8% faster at n = 8192 on an H200, 0.5% slower at 4096
    // (docs/BENCHMARKS.md, "Naive SGEMM's k loop, 8 steps a run").
    unroll::<8>(n, |_| {
        sum = fma(*a_k, *b_k, sum);
        a_k = a_k.add(1);
        b_k = b_k.add(n as usize);
    });
    *c.add(at(row, n, col)) = sum;
}
