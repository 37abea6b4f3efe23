//! SYRK: symmetric rank-k update (PolyBench/GPU).

use clustered_device::clustered;
use clustered_device::index::at;
use clustered_device::math::fma;
use clustered_device::thread::{block_idx_x, block_idx_y, thread_idx_x, thread_idx_y};

/// Block edge of [`syrk`](fn@syrk): blocks are `16 x 16` threads.
pub const SYRK_BLOCK: u32 = 16;

/// `C = alpha * A * A^T + beta * C` for a row-major `n x m` matrix `A` and
/// an `n x n` matrix `C`, all of `C` (the full matrix, as PolyBench/GPU
/// computes it; a lower-triangle launch would leave half the CTAs idle).
/// Element `(i, j)`: `sum = fma(A[i][k], A[j][k], sum)` for `k = 0 .. m` in
/// order, then `C[i][j] = fma(alpha, sum, beta * C[i][j])`.
///
/// Launch: block `16 x 16`, grid `(ceil(n / 16), ceil(n / 16))`; thread
/// `(tx, ty)` of block `(bx, by)` computes `i = 16 by + ty`, `j = 16 bx + tx`.
///
/// Sharing: a CTA reads rows `16 by ..` (warp-uniform per `ty`) and rows
/// `16 bx ..` (one row per thread: uncoalesced, L1-bound) of `A`; the CTAs
/// of a grid row share the first, of a grid column the second, and CTA
/// `(x, y)` reads the same rows as `(y, x)`. No schedule gained, in the C++
/// reference (DESIGN.md section 7: L1-bound) nor in Rust (1.000x at best,
/// docs/BENCHMARKS.md).
///
/// Variants:
/// - `_raster16`: the grouped raster, `tile(1, 16)` (as SGEMM, whose
///   sharing pattern it has).
/// - `_redirect_rows`, `_redirect_columns`: the paper's redirection, Y- and
///   X-partitioning.
/// - `_agents`: persistent agents, ACTIVE = MAX, clusters cut from 4x4 tiles.
/// - `_agents_throttled`: the same with 4 active agents per SM: fewer
///   uncoalesced rows competing for the L1.
#[clustered(auto)]
#[clustered(name = syrk_raster16, binding = reorder, indexing = tile(1, 16))]
#[clustered(name = syrk_redirect_rows, binding = redirect, indexing = row_major)]
#[clustered(name = syrk_redirect_columns, binding = redirect, indexing = column_major)]
#[clustered(name = syrk_agents, binding = agents, indexing = tile(4, 4))]
#[clustered(name = syrk_agents_throttled, binding = agents, indexing = tile(4, 4), active = 4)]
pub unsafe fn syrk(a: *const f32, c: *mut f32, alpha: f32, beta: f32, n: u32, m: u32) {
    let i = block_idx_y() * SYRK_BLOCK + thread_idx_y();
    let j = block_idx_x() * SYRK_BLOCK + thread_idx_x();
    if i < n && j < n {
        // Rows i and j of A, stepped by pointer (see `index_forms`).
        let (mut a_ik, mut a_jk) = (a.add(at(i, m, 0)), a.add(at(j, m, 0)));
        let mut sum = 0.0f32;
        for _ in 0..m {
            sum = fma(*a_ik, *a_jk, sum);
            a_ik = a_ik.add(1);
            a_jk = a_jk.add(1);
        }
        let ij = at(i, n, j);
        *c.add(ij) = fma(alpha, sum, beta * *c.add(ij));
    }
}
