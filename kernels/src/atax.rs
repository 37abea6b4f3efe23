//! ATAX: `y = A^T (A x)` (PolyBench/GPU), as its two passes.

use clustered_device::index::at;
use clustered_device::math::fma;
use clustered_device::memory::F32x4;
use clustered_device::thread::{block_idx_x, index_1d, sync_threads, thread_idx_x, thread_idx_y};
use clustered_device::{clustered, launch_bounds, shared_array};

/// Rows of `A` whose loads [`atax_columns`](fn@atax_columns) issues before
/// their FMAs.
const COLUMN_BATCH: usize = 32;

/// Elements of a row each thread of [`atax_rows_gemv`](fn@atax_rows_gemv)
/// loads before their FMAs.
const GEMV_BATCH: usize = 8;

/// Rows of `A` each thread of [`atax_columns_gemv`](fn@atax_columns_gemv)
/// loads (16 bytes of each) before their FMAs.
const GEMVT_BATCH: usize = 8;

/// Row groups of [`atax_columns_gemv`](fn@atax_columns_gemv): a warp each
/// (its block is `32 x GEMVT_GROUPS`).
pub const GEMVT_GROUPS: u32 = 32;

/// Threads of a block of [`atax_columns_gemv`](fn@atax_columns_gemv).
const GEMVT_THREADS: usize = 32 * GEMVT_GROUPS as usize;

/// Columns of `A` one block of [`atax_columns_gemv`](fn@atax_columns_gemv)
/// sums: four per lane (one 16-byte load of a row each).
pub const GEMVT_COLUMNS: u32 = 128;

/// Threads per block of [`atax_rows`](fn@atax_rows) and [`atax_columns`](fn@atax_columns) (PolyBench/GPU's
/// 256 x 1).
pub const ATAX_BLOCK: u32 = 256;

/// The row pass: `tmp[i] = sum over j < ny of A[i][j] * x[j]`
/// (`fma(A[i][j], x[j], sum)` in `j` order), `A` row-major `nx x ny`,
/// `nx * ny < 2^32`.
///
/// Launch: block `256 x 1`, grid `ceil(nx / 256)`; one row of `A` per
/// thread. A warp reads 32 rows at once, one float of each (uncoalesced);
/// each line then serves the same thread for 32 iterations from L1. No
/// launch bounds: with one block per SM, as the column pass has, its time
/// did not change (2.21 ms, 16384^2, H100; its twin's 2.28 -> 2.20, and the
/// twin keeps them: docs/BENCHMARKS.md, "Launch bounds").
///
/// Sharing: only `x`, read by every CTA (warp-uniform). The L1 must hold a
/// 128-byte line per resident thread (256 KB at 2048 threads), which is the
/// case for throttling.
///
/// Variants (a 1D grid):
/// - `_redirect`: the paper's redirection.
/// - `_agents`: persistent agents, ACTIVE = MAX.
/// - `_agents_throttled`: 4 active agents per SM (half the lines in flight).
/// - `_agents_chunked`: agents claiming 8 consecutive CTAs at a time.
///
/// No bypass: the L1 is what serves the other 31 floats of each line a
/// thread's row loads (a lane walks its own row, 4 bytes at a time).
#[clustered(auto)]
#[clustered(name = atax_rows_redirect, binding = redirect)]
#[clustered(name = atax_rows_agents, binding = agents)]
#[clustered(name = atax_rows_agents_throttled, binding = agents, active = 4)]
#[clustered(name = atax_rows_agents_chunked, binding = agents, chunk = 8)]
pub unsafe fn atax_rows(a: *const f32, x: *const f32, tmp: *mut f32, nx: u32, ny: u32) {
    let i = index_1d();
    if i < nx {
        // Row i of A, stepped by pointer (see `index_forms`).
        let mut a_ij = a.add(at(i, ny, 0));
        let mut sum = 0.0f32;
        for j in 0..ny {
            sum = fma(*a_ij, *x.add(j as usize), sum);
            a_ij = a_ij.add(1);
        }
        *tmp.add(i as usize) = sum;
    }
}

/// The row pass as a GEMV is written by hand: `tmp[i] = sum over j < ny of
/// A[i][j] * x[j]`, one block of [`ATAX_BLOCK`] threads per row. Thread `t`
/// sums `fma(A[i][j], x[j], sum)` over `j = t, t + 256, ...` in order, then
/// the block adds its 256 sums in a tree through shared memory (step `s` =
/// 128, 64, ..., 1: thread `t < s` adds `t + s`'s to its own), so the order
/// is fixed by the block size, not by the schedule
/// (`clustered_suite::reference::atax_rows_gemv`).
///
/// Launch: block `256 x 1`, grid `nx`. A warp reads 128 consecutive bytes
/// of its row per load (coalesced), and every element of `A` is read once:
/// streaming, where [`atax_rows`](fn@atax_rows) (a row per thread, 32 rows
/// per warp load) leans on the L1 to serve each line 32 times, the locality
/// that the paper's schedules of it keep. This is the layout an expert
/// gives the pass, beside it so that the suite shows both.
#[clustered(auto)]
pub unsafe fn atax_rows_gemv(a: *const f32, x: *const f32, tmp: *mut f32, nx: u32, ny: u32) {
    let partial = shared_array!(atax_partial: [f32; ATAX_BLOCK as usize]);
    let (row, t) = (block_idx_x(), thread_idx_x());
    if row >= nx {
        return;
    }
    let a_row = a.add(row as usize * ny as usize);
    // usize indices: no wrap to rebuild addresses for (the macro's warning).
    let (block, ny) = (ATAX_BLOCK as usize, ny as usize);
    let mut sum = 0.0f32;
    let mut j = t as usize;
    // Rounds of GEMV_BATCH loads before their FMAs (the same FMAs in the
    // same order): loads in flight, as in `atax_columns`.
    while j + (GEMV_BATCH - 1) * block < ny {
        let mut values = [0.0f32; GEMV_BATCH];
        for (u, value) in values.iter_mut().enumerate() {
            *value = *a_row.add(j + u * block);
        }
        for (u, value) in values.iter().enumerate() {
            sum = fma(*value, *x.add(j + u * block), sum);
        }
        j += GEMV_BATCH * block;
    }
    while j < ny {
        sum = fma(*a_row.add(j), *x.add(j), sum);
        j += block;
    }
    partial.write(t, sum);
    sync_threads();
    let mut s = ATAX_BLOCK / 2;
    while s > 0 {
        if t < s {
            partial.write(t, partial.read(t) + partial.read(t + s));
        }
        sync_threads();
        s /= 2;
    }
    if t == 0 {
        *tmp.add(row as usize) = partial.read(0);
    }
}

/// The column pass: `y[j] = sum over i < nx of A[i][j] * tmp[i]`
/// (`fma(A[i][j], tmp[i], sum)` in `i` order), `A` row-major `nx x ny`,
/// `nx * ny < 2^32`.
///
/// Launch: block `256 x 1`, grid `ceil(ny / 256)`; one column of `A` per
/// thread, so consecutive threads read consecutive addresses of each row
/// (coalesced) and every element of `A` is read once: streaming. Launch
/// bounds of one such block per SM (`#[launch_bounds]`): the grid has
/// fewer blocks than SMs, so ptxas may spend registers on loads in flight.
///
/// Sharing: only `tmp`, read by every CTA (warp-uniform). No schedule
/// gained, in the C++ reference (DESIGN.md section 7: 0.999-1.01x) nor in
/// Rust (docs/BENCHMARKS.md).
///
/// Variants (a 1D grid):
/// - `_redirect`: the paper's redirection.
/// - `_agents`: persistent agents, ACTIVE = MAX.
/// - `_agents_chunked`: agents claiming 8 consecutive CTAs at a time.
/// - `_agents_bypass`: the same, with `A` (read once) loaded past L1
///   (`ld.global.cg`), so it does not evict `tmp`.
#[launch_bounds(max_threads = ATAX_BLOCK, min_blocks_per_sm = 1)]
#[clustered(auto)]
#[clustered(name = atax_columns_redirect, binding = redirect)]
#[clustered(name = atax_columns_agents, binding = agents)]
#[clustered(name = atax_columns_agents_chunked, binding = agents, chunk = 8)]
#[clustered(name = atax_columns_agents_bypass, binding = agents, chunk = 8, bypass(a))]
pub unsafe fn atax_columns(a: *const f32, tmp: *const f32, y: *mut f32, nx: u32, ny: u32) {
    let j = index_1d();
    if j < ny {
        let mut sum = 0.0f32;
        // 64 blocks for 132 SMs: loads in flight per thread are all this
        // kernel's parallelism. Rounds of COLUMN_BATCH rows, all loads of a
        // round before its FMAs (the same FMAs in the same order). Rust has
        // no `#pragma unroll`: an array filled by a loop of constant count
        // is the portable way to ask for it. The launch bounds let ptxas
        // keep a whole round in registers (80 a thread; without them it
        // holds 32 and issues FMAs among the loads): 0.48 ms at 16384^2 on
        // an H100, against 1.09 with rounds of 16 and no bounds, and 1.78
        // with LLVM's own unroll (docs/BENCHMARKS.md, "Launch bounds"). Rounds
        // of 64 put the array on the stack (1.69 ms).
        // Each address from its own index (`at`: u32 that does not wrap,
        // widened per load), as nvcc's `int` indexing gets: a pointer stepped
        // by the row is one 64-bit add chain through the round, and with about
        // one warp per scheduler its latency is exposed. H100, two runs each,
        // rounds of 16 before the launch bounds: this form 1.094-1.096 ms (nvcc 1.062-1.066); the same rounds written
        // `for round in 0..rounds` with `for u in 0..COLUMN_BATCH` and a
        // `for` remainder 1.324 ms, reproducibly, from alike SASS: this
        // kernel's time hangs on ptxas's schedule (docs/BENCHMARKS.md).
        let rounds = nx / COLUMN_BATCH as u32;
        let mut i = 0u32;
        for _ in 0..rounds {
            let mut column = [0.0f32; COLUMN_BATCH];
            for (u, value) in column.iter_mut().enumerate() {
                *value = *a.add(at(i + u as u32, ny, j));
            }
            for (u, value) in column.iter().enumerate() {
                sum = fma(*value, *tmp.add(i as usize + u), sum);
            }
            i += COLUMN_BATCH as u32;
        }
        while i < nx {
            sum = fma(*a.add(at(i, ny, j)), *tmp.add(i as usize), sum);
            i += 1;
        }
        *y.add(j as usize) = sum;
    }
}

/// The column pass as a transposed GEMV is written by hand: `y[j] = sum
/// over i < nx of A[i][j] * tmp[i]`, `A` row-major `nx x ny`, `ny` a
/// multiple of 4. A block of [`GEMVT_GROUPS`] warps sums
/// [`GEMVT_COLUMNS`] columns: lane `l` (`x`) of warp `g` (`y`) takes columns `4l ..
/// 4l + 4` of the block's and rows `i = g, g + 32, ...`, `fma(A[i][j],
/// tmp[i], sum)` in `i` order, one 16-byte load per row; then the block
/// adds its 32 groups' sums in a tree through shared memory (step `s` =
/// 16, 8, ..., 1: group `g < s` adds group `g + s`'s to its own), so the
/// order is fixed by the block, not by the schedule
/// (`clustered_suite::reference::atax_columns_gemv`).
///
/// Launch: block `32 x GEMVT_GROUPS`, grid `ceil(ny / GEMVT_COLUMNS)`.
/// A warp reads 512 consecutive bytes of a row per load and every element
/// of `A` is read once: streaming. Where [`atax_columns`](fn@atax_columns)
/// has a thread per column (64 blocks for 132 SMs at 16384^2, so its loads
/// in flight per thread are all its parallelism, 74% of a copy's
/// bandwidth), this splits the rows over the block's warps: 128 blocks of
/// 32 warps, eight 16-byte loads in flight per thread. The layout an
/// expert gives the pass (cuBLAS's transposed GEMV splits the rows the
/// same way), beside it so that the suite shows both.
#[launch_bounds(max_threads = 32 * GEMVT_GROUPS, min_blocks_per_sm = 1)]
#[clustered(auto)]
pub unsafe fn atax_columns_gemv(a: *const f32, tmp: *const f32, y: *mut f32, nx: u32, ny: u32) {
    // Component-major (`k * GEMVT_THREADS + t`): each access a float per lane,
    // consecutive lanes on consecutive banks.
    let partial = shared_array!(atax_column_partial: [f32; 4 * GEMVT_THREADS]);
    let (lane, group) = (thread_idx_x(), thread_idx_y());
    let t = 32 * group + lane;
    let column = block_idx_x() * GEMVT_COLUMNS + 4 * lane;
    let mut sum = [0.0f32; 4];
    if column < ny {
        // usize indices: no wrap to rebuild addresses for (the macro's warning).
        let (nx, ny, column) = (nx as usize, ny as usize, column as usize);
        let groups = GEMVT_GROUPS as usize;
        let mut i = group as usize;
        // Rounds of GEMVT_BATCH rows, all loads before their FMAs (the same
        // FMAs in the same order).
        while i + (GEMVT_BATCH - 1) * groups < nx {
            let mut rows = [[0.0f32; 4]; GEMVT_BATCH];
            for (u, row) in rows.iter_mut().enumerate() {
                *row = (*a.add((i + u * groups) * ny + column).cast::<F32x4>()).0;
            }
            for (u, row) in rows.iter().enumerate() {
                sum = fma4(*row, *tmp.add(i + u * groups), sum);
            }
            i += GEMVT_BATCH * groups;
        }
        while i < nx {
            let row = (*a.add(i * ny + column).cast::<F32x4>()).0;
            sum = fma4(row, *tmp.add(i), sum);
            i += groups;
        }
    }
    let threads = GEMVT_THREADS as u32;
    for (k, s) in sum.iter().enumerate() {
        partial.write(k as u32 * threads + t, *s);
    }
    sync_threads();
    let mut step = GEMVT_GROUPS / 2;
    while step > 0 {
        if group < step {
            for k in 0..4 {
                let mine = k * threads + t;
                partial.write(mine, partial.read(mine) + partial.read(mine + 32 * step));
            }
        }
        sync_threads();
        step /= 2;
    }
    if group == 0 && column < ny {
        let total = [0, 1, 2, 3].map(|k| partial.read(k * threads + lane));
        *y.add(column as usize).cast::<F32x4>() = F32x4(total);
    }
}

/// `sum + row * weight`, lane by lane: four FMAs.
#[inline(always)]
fn fma4(row: [f32; 4], weight: f32, sum: [f32; 4]) -> [f32; 4] {
    [
        fma(row[0], weight, sum[0]),
        fma(row[1], weight, sum[1]),
        fma(row[2], weight, sum[2]),
        fma(row[3], weight, sum[3]),
    ]
}
