//! Naive matrix transpose.

use clustered_device::clustered;
use clustered_device::thread::index_2d;

/// `output[x * height + y] = input[y * width + x]`: transposes a row-major
/// `height x width` matrix (`width` columns) into a row-major
/// `width x height` one; `width * height < 2^32`.
///
/// Launch: any 2D block, one element per thread (no loop, no shared
/// memory); the shapes of interest are `32 x 8` and `16 x 16` blocks, grid
/// `(ceil(width / bx), ceil(height / by))`, on `16384 x 16384` (1 GiB per
/// matrix) and on the wide `height = 2048`, `width = 524288` (2^30 floats,
/// 4 GiB per matrix), whose grid row writes 64 MB of output lines, more than
/// the L2 holds. Reads are coalesced
/// (a warp reads 128 contiguous bytes, or two 64-byte halves with 16 x 16
/// blocks); writes are not: consecutive threads write addresses `height`
/// floats apart, and a CTA writes `block x` columns of `block y` floats.
///
/// Sharing: a 128-byte output line holds 32 consecutive `y`: the CTAs
/// stacked in one grid column share it, 4 of them with `32 x 8` blocks,
/// 2 with `16 x 16` blocks. Each CTA writes 32 (or 16) bytes of it, so the
/// line must stay in L2 until all of them have written: the raster order
/// runs them back to back. In Rust, G = 4 (the CTAs sharing a line) gives
/// 1.13x on 16384^2 and 1.42x on the wide shape on an H100
/// (docs/BENCHMARKS.md); the C++ reference found larger groups worse
/// (DESIGN.md section 7).
///
/// Variants:
/// - `_raster4`: the grouped raster `tile(1, 4)`, for `32 x 8` blocks.
/// - `_raster4_y`: the grouped raster along the other axis,
///   `column_tile(4, 1)`: 4 grid columns down the grid, band after band.
/// - `_raster2`: the grouped raster `tile(1, 2)` (the group for `16 x 16`
///   blocks; the suite runs `32 x 8`, where it is half a line's group).
/// - `_redirect_rows`, `_redirect_columns`: the paper's redirection, Y- and
///   X-partitioning (X keeps the CTAs of an output line in one cluster).
/// - `_agents_chunked`: persistent agents claiming 8 CTAs at a time in row
///   order (streaming).
/// - `_agents_bypass`: the same, with `input` (read once) loaded past L1.
#[clustered(auto)]
#[clustered(name = transpose_naive_raster4, binding = reorder, indexing = tile(1, 4))]
#[clustered(name = transpose_naive_raster2, binding = reorder, indexing = tile(1, 2))]
#[clustered(name = transpose_naive_raster4_y, binding = reorder, indexing = column_tile(4, 1))]
#[clustered(name = transpose_naive_persistent4, binding = persistent, indexing = tile(1, 4), chunk = 8)]
#[clustered(name = transpose_naive_stride4, binding = stride, indexing = tile(1, 4))]
#[clustered(name = transpose_naive_redirect_rows, binding = redirect, indexing = row_major)]
#[clustered(name = transpose_naive_redirect_columns, binding = redirect, indexing = column_major)]
#[clustered(name = transpose_naive_agents_chunked, binding = agents, chunk = 8)]
#[clustered(name = transpose_naive_agents_bypass, binding = agents, chunk = 8, bypass(input))]
pub unsafe fn transpose_naive(input: *const f32, output: *mut f32, width: u32, height: u32) {
    let (x, y) = index_2d();
    if x < width && y < height {
        *output.add((x * height + y) as usize) = *input.add((y * width + x) as usize);
    }
}
