//! Naive matrix transpose.

use clustered_device::thread::{
    block_idx_x, block_idx_y, index_2d, sync_threads, thread_idx_x, thread_idx_y,
};
use clustered_device::{clustered, shared_array};

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

/// Side of the square tile of [`transpose_tiled`](fn@transpose_tiled): a
/// block of `32 x 8` threads moves `32 x 32` elements.
pub const TRANSPOSE_TILE: u32 = 32;
/// Threads along y of a [`transpose_tiled`](fn@transpose_tiled) block.
pub const TRANSPOSE_ROWS: u32 = 8;
/// Elements each thread of [`transpose_tiled`](fn@transpose_tiled) moves.
const PER_THREAD: usize = (TRANSPOSE_TILE / TRANSPOSE_ROWS) as usize;
/// Words per row of the shared tile: one more than its side, so that the
/// 32 reads of a tile column fall in 32 banks.
const TILE_PITCH: u32 = TRANSPOSE_TILE + 1;

/// [`transpose_naive`](fn@transpose_naive) as a transpose is written by
/// hand: a block reads a `32 x 32` tile row by row (coalesced) into shared
/// memory and writes it out column by column, so the writes are coalesced
/// too; a tile row padded to 33 words keeps the column reads free of bank
/// conflicts. The same output (every element moved, none computed).
///
/// Launch: block `32 x 8`, grid `ceil(width / 32) x ceil(height / 32)`; each
/// thread moves 4 elements.
#[clustered(auto)]
pub unsafe fn transpose_tiled(input: *const f32, output: *mut f32, width: u32, height: u32) {
    let tile = shared_array!(transpose_tile: [f32; (TRANSPOSE_TILE * TILE_PITCH) as usize]);
    let (tx, ty) = (thread_idx_x(), thread_idx_y());
    let (x0, y0) = (
        block_idx_x() * TRANSPOSE_TILE,
        block_idx_y() * TRANSPOSE_TILE,
    );
    // A thread's 4 loads before its 4 stores, in arrays of constant length:
    // written as a loop of load-then-store, each load waited for the store
    // before it (one in flight: 1.23x the nvcc twin's time on an H100,
    // docs/BENCHMARKS.md, "The transpose through a shared tile").
    let mut values = [0.0f32; PER_THREAD];
    let x = x0 + tx;
    for (i, value) in (0u32..).zip(values.iter_mut()) {
        let y = y0 + ty + i * TRANSPOSE_ROWS;
        if x < width && y < height {
            *value = *input.add(y as usize * width as usize + x as usize);
        }
    }
    for (i, value) in (0u32..).zip(values) {
        tile.write((ty + i * TRANSPOSE_ROWS) * TILE_PITCH + tx, value);
    }
    // The whole tile before any column of it is written out.
    sync_threads();
    // Output row `x` (of `height` elements): this block's tile columns.
    let y = y0 + tx;
    for (i, value) in (0u32..).zip(values.iter_mut()) {
        *value = tile.read(tx * TILE_PITCH + ty + i * TRANSPOSE_ROWS);
    }
    for (i, value) in (0u32..).zip(values) {
        let x = x0 + ty + i * TRANSPOSE_ROWS;
        if x < width && y < height {
            *output.add(x as usize * height as usize + y as usize) = value;
        }
    }
}
