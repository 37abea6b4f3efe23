//! One sweep of the 5-point Jacobi iteration on a 2D grid.

use clustered_device::clustered;
use clustered_device::cta::Cta;
use clustered_device::memory::{prefetch_l2, F32x4};
use clustered_device::thread::{block_dim_x, block_idx_x, block_idx_y, index_2d, thread_idx_x};

/// `output = 0.2 * (c + n + s + e + w)` at every interior point of a
/// row-major `width x height` grid (`c` the point, `n`/`s` the rows above
/// and below, `e`/`w` the columns right and left, summed in that order);
/// border points are copied. `width * height < 2^32`.
///
/// Launch: block `32 x 8`, grid `(ceil(width / 32), ceil(height / 8))`; one
/// point per thread. Sized for `32768 x 16384` (2 GiB per grid). Why
/// `32 x 8` and not `128 x 1`: a warp still reads one full 128-byte line
/// per row, and the 8 rows of a CTA reuse each other's `n`/`s` rows from L1,
/// so a CTA fetches 10 rows for 8 outputs (1.25 rows each) where a
/// `128 x 1` CTA fetches 3 for 1 from L2. DRAM traffic is the same either
/// way: the image rows that one grid row of CTAs shares with the next
/// (128 KB each) are still in L2 when it comes.
///
/// Sharing: vertical neighbours share a halo row each way, horizontal ones
/// the 4-byte `e`/`w` edges (same lines). Memory-bound: 58% of DRAM peak on
/// an H100 (docs/ncu-why-h100.txt). The C++ reference (DESIGN.md section 7)
/// won 1.09-1.10x with persistent CTAs claiming ahead in row order; in Rust
/// the grid-stride loops win (docs/BENCHMARKS.md).
///
/// Variants:
/// - `_redirect_rows`, `_redirect_columns`: the paper's redirection, Y- and
///   X-partitioning.
/// - `_raster2`: the grouped raster `tile(1, 2)` (two CTAs sharing a halo
///   row back to back), to measure the loss in Rust.
/// - `_agents`: persistent agents, ACTIVE = MAX, one CTA per claim.
/// - `_agents_chunked`: agents claiming 8 CTAs at a time in row order (what
///   won in the C++ reference).
/// - `_agents_chunked_throttled`: the same with 4 active agents per SM.
/// - `_persistent`, `_persistent4`: persistent CTAs claiming chunks of 8 or 4
///   in row order from one queue.
/// - `_stride`: persistent CTAs in a grid-stride loop (tuned on the H200);
///   `_stride_prefetch` also prefetches the next task's rows into L2 (tuned
///   on the H100), `_stride_prefetch_waves4` in 4 waves of blocks
///   (docs/BENCHMARKS.md); `_stride_prefetch_auto` with the hook the macro
///   writes from the loads' forms and the body's bounds test.
#[clustered(auto)]
#[clustered(name = jacobi5_redirect_rows, binding = redirect, indexing = row_major)]
#[clustered(name = jacobi5_redirect_columns, binding = redirect, indexing = column_major)]
#[clustered(name = jacobi5_raster2, binding = reorder, indexing = tile(1, 2))]
#[clustered(name = jacobi5_persistent, binding = persistent, chunk = 8)]
#[clustered(name = jacobi5_persistent4, binding = persistent, chunk = 4)]
#[clustered(name = jacobi5_stride, binding = stride)]
#[clustered(name = jacobi5_stride_prefetch, binding = stride, prefetch = prefetch_next_rows)]
#[clustered(name = jacobi5_stride_prefetch_waves4, binding = stride, waves = 4, prefetch = prefetch_next_rows)]
#[clustered(name = jacobi5_stride_prefetch_auto, binding = stride, prefetch = auto)]
#[clustered(name = jacobi5_agents, binding = agents)]
#[clustered(name = jacobi5_agents_chunked, binding = agents, chunk = 8)]
#[clustered(name = jacobi5_agents_chunked_throttled, binding = agents, chunk = 8, active = 4)]
pub unsafe fn jacobi5(input: *const f32, output: *mut f32, width: u32, height: u32) {
    let (x, y) = index_2d();
    if x < width && y < height {
        let at = y * width + x;
        let c = *input.add(at as usize);
        let value = if x == 0 || y == 0 || x == width - 1 || y == height - 1 {
            c
        } else {
            let n = *input.add((at - width) as usize);
            let s = *input.add((at + width) as usize);
            let e = *input.add((at + 1) as usize);
            let w = *input.add((at - 1) as usize);
            0.2 * (c + n + s + e + w)
        };
        *output.add(at as usize) = value;
    }
}

/// Prefetch hook of `jacobi5_stride_prefetch`: starts bringing the next
/// task's rows into L2 (its CTA's rows; the halo rows come with its
/// neighbours').
#[inline(always)]
unsafe fn prefetch_next_rows(
    next: Cta,
    input: *const f32,
    _output: *mut f32,
    width: u32,
    height: u32,
) {
    let (x, y) = next.index_2d();
    if x < width && y < height {
        prefetch_l2(input.add((y * width + x) as usize));
    }
}

/// The sweep of [`jacobi5`](fn@jacobi5), the same values bit for bit,
/// written as a CUDA programmer writes a 2D stencil: each thread walks
/// `rows` rows down its column, keeping the points above, at and below it
/// in registers, so each point is loaded once as a vertical neighbour
/// instead of three times; `e` and `w` are the warp's own loads of the
/// row, from L1. The paper's kernel loads all five per point.
///
/// Launch: block `256 x 1`, grid `(ceil(width / 256), ceil(height /
/// rows))`, `rows >= 1` (32 at the benchmark's size: 65536 blocks).
/// Pointers step by a row (`usize` arithmetic).
///
/// Sharing: as for [`jacobi5`](fn@jacobi5), vertically now within a thread;
/// neighbouring blocks share their edge columns' lines and, along y, one
/// row each way.
#[clustered(auto)]
pub unsafe fn jacobi5_march(
    input: *const f32,
    output: *mut f32,
    width: u32,
    height: u32,
    rows: u32,
) {
    let x = block_idx_x() * block_dim_x() + thread_idx_x();
    let y0 = block_idx_y() * rows;
    if x < width && y0 < height {
        let y_end = y0.saturating_add(rows).min(height);
        let row = width as usize;
        let edge = (x == 0) | (x == width - 1);
        let first = y0 as usize * row + x as usize;
        let (mut from, mut to) = (input.add(first), output.add(first));
        let mut north = if y0 > 0 { *from.sub(row) } else { 0.0 };
        let mut centre = *from;
        // The first and last rows of the grid are copied outside the walk.
        let mut y = y0;
        if y == 0 {
            *to = centre;
            north = centre;
            centre = if height > 1 { *from.add(row) } else { 0.0 };
            (from, to, y) = (from.add(row), to.add(row), 1);
        }
        let walk_end = if y_end == height { height - 1 } else { y_end };
        // Inside the walk `0 < y < height - 1`: `e` and `w` are inside the
        // grid even at the edges (they wrap to the next or previous row),
        // so all are loaded and the edge only selects (jacobi7_3d_march:
        // a branch around the loads cost 10% against nvcc).
        while y < walk_end {
            let south = *from.add(row);
            let east = *from.add(1);
            let west = *from.sub(1);
            let value = 0.2 * (centre + north + south + east + west);
            *to = if edge { centre } else { value };
            north = centre;
            centre = south;
            (from, to, y) = (from.add(row), to.add(row), y + 1);
        }
        if y < y_end {
            *to = centre;
        }
    }
}

/// [`jacobi5_march`](fn@jacobi5_march) with four columns per thread, the
/// same values bit for bit: the rows move as 16-byte accesses (CUDA's
/// `float4`), as a CUDA programmer writes a stencil bound by DRAM, since a
/// float per thread keeps too few bytes in flight to reach its bandwidth
/// (the bench's copy: 2380 GB/s a float per thread, 3008 GB/s four). Each
/// thread loads the row below as one quad and only its quad's outer
/// neighbours, `e` of its last point and `w` of its first, as single
/// floats (from L1: the neighbouring lanes' quads); the points between take
/// them from the centre quad in registers. It walks two rows a step, every
/// load of both before either store (1.594-1.599 ms at 32768 x 16384 on an
/// H100 against 1.605-1.623 a row a step: docs/BENCHMARKS.md).
///
/// Launch: block `256 x 1`, grid `(ceil(width / 1024), ceil(height /
/// rows))`, `rows >= 1`; `width` a multiple of 4 and both buffers 16-byte
/// aligned (device allocations are).
#[clustered(auto)]
pub unsafe fn jacobi5_march4(
    input: *const f32,
    output: *mut f32,
    width: u32,
    height: u32,
    rows: u32,
) {
    let x = (block_idx_x() * block_dim_x() + thread_idx_x()) * 4;
    let y0 = block_idx_y() * rows;
    if x < width && y0 < height {
        let y_end = y0.saturating_add(rows).min(height);
        let row = width as usize;
        // The grid's first and last columns are copied.
        let (first_column, last_column) = (x == 0, x + 4 == width);
        let first = y0 as usize * row + x as usize;
        let (mut from, mut to) = (input.add(first), output.add(first));
        let mut north = if y0 > 0 {
            (*from.sub(row).cast::<F32x4>()).0
        } else {
            [0.0; 4]
        };
        let mut centre = (*from.cast::<F32x4>()).0;
        // The first and last rows of the grid are copied outside the walk.
        let mut y = y0;
        if y == 0 {
            *to.cast::<F32x4>() = F32x4(centre);
            north = centre;
            centre = if height > 1 {
                (*from.add(row).cast::<F32x4>()).0
            } else {
                [0.0; 4]
            };
            (from, to, y) = (from.add(row), to.add(row), 1);
        }
        let walk_end = if y_end == height { height - 1 } else { y_end };
        // Inside the walk `0 < y < height - 1`: the outer neighbours are
        // inside the grid even at its edges (the previous row's last point,
        // the next row's first), so all are loaded and the edges select.
        let quad = |north: [f32; 4], centre: [f32; 4], south: [f32; 4], west: f32, east: f32| {
            let [c0, c1, c2, c3] = centre;
            let mut value = [
                0.2 * (c0 + north[0] + south[0] + c1 + west),
                0.2 * (c1 + north[1] + south[1] + c2 + c0),
                0.2 * (c2 + north[2] + south[2] + c3 + c1),
                0.2 * (c3 + north[3] + south[3] + east + c2),
            ];
            if first_column {
                value[0] = c0;
            }
            if last_column {
                value[3] = c3;
            }
            value
        };
        // Two rows a step, all six loads of both before either store (the
        // stores may alias the loads as far as the compilers know, so
        // neither moves the next row's loads above this row's store):
        // twice the bytes in flight per thread.
        while y + 1 < walk_end {
            let south = (*from.add(row).cast::<F32x4>()).0;
            let west = *from.sub(1);
            let east = *from.add(4);
            let next = from.add(row);
            let south_next = (*next.add(row).cast::<F32x4>()).0;
            let west_next = *next.sub(1);
            let east_next = *next.add(4);
            *to.cast::<F32x4>() = F32x4(quad(north, centre, south, west, east));
            *to.add(row).cast::<F32x4>() =
                F32x4(quad(centre, south, south_next, west_next, east_next));
            north = south;
            centre = south_next;
            (from, to, y) = (from.add(2 * row), to.add(2 * row), y + 2);
        }
        if y < walk_end {
            let south = (*from.add(row).cast::<F32x4>()).0;
            let west = *from.sub(1);
            let east = *from.add(4);
            *to.cast::<F32x4>() = F32x4(quad(north, centre, south, west, east));
            centre = south;
            (to, y) = (to.add(row), y + 1);
        }
        if y < y_end {
            *to.cast::<F32x4>() = F32x4(centre);
        }
    }
}
