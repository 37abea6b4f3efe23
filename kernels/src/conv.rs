//! 2D convolution with a 5x5 filter.

use clustered_device::math::fma;
use clustered_device::thread::{
    block_idx_x, block_idx_y, sync_threads, thread_idx_x, thread_idx_y,
};
use clustered_device::{clustered, shared_array};

/// Block edge of [`conv5x5`](fn@conv5x5): blocks are `16 x 16` threads.
pub const CONV_BLOCK: u32 = 16;
/// Filter edge: the filter is `5 x 5`, centred (radius 2).
pub const FILTER: u32 = 5;
/// Taps on each side of the centre, as an offset from its address.
const HALF: isize = (FILTER / 2) as isize;

/// `output[y][x] = sum over dy, dx in 0..5 of input[y + dy - 2][x + dx - 2] *
/// filter[dy][dx]`, row-major `width x height` images, zero padding outside
/// the image; the 25 terms accumulate with `fma` in `dy`-then-`dx` order
/// (a padded tap still does `fma(0, f, sum)`).
///
/// Launch: block `16 x 16`, grid `(ceil(width / 16), ceil(height / 16))`;
/// thread `(tx, ty)` of block `(bx, by)` computes the pixel
/// `(16 bx + tx, 16 by + ty)` (threads outside the image do nothing). The
/// filter (25 floats) is a parameter, by value: kernel parameters live in
/// the constant bank, so its taps are operands of the FMAs themselves, as
/// CUDA C++ gets from `__constant__` weights (from global memory instead, 50
/// loads per thread against 25: 2.79 ms against C++'s 2.21 at 16384^2 on an
/// H100, docs/BENCHMARKS.md).
///
/// Sharing: each CTA reads a 20x20 window of `input`; horizontal neighbours
/// share 4 of its columns (and, at 64 bytes per 16 pixels, each 128-byte
/// line), vertical neighbours 4 of its rows; every CTA reads the whole filter.
/// Issue-bound (18% of DRAM peak on an H100, docs/ncu-why-h100.txt): no
/// schedule beat the baseline, in the C++ reference (DESIGN.md section 7)
/// nor in Rust (docs/BENCHMARKS.md).
///
/// Variants:
/// - `_redirect_rows`, `_redirect_columns`: the paper's redirection, Y- and
///   X-partitioning.
/// - `_raster2`: the grouped raster with G = 2 (`tile(1, 2)`): the two CTAs
///   stacked over a shared 4-row halo run back to back.
/// - `_agents`: persistent agents, ACTIVE = MAX, clusters of grid rows.
/// - `_agents_throttled`: 4 active agents per SM.
/// - `_agents_chunked`: agents claiming 8 CTAs of a grid row at a time.
/// - `_stride`: persistent CTAs in a grid-stride loop; `_stride_waves4`
///   launches 4 blocks per resident slot (blocks finishing early are
///   replaced).
#[clustered(auto)]
#[clustered(name = conv5x5_redirect_rows, binding = redirect, indexing = row_major)]
#[clustered(name = conv5x5_redirect_columns, binding = redirect, indexing = column_major)]
#[clustered(name = conv5x5_raster2, binding = reorder, indexing = tile(1, 2))]
#[clustered(name = conv5x5_stride, binding = stride)]
#[clustered(name = conv5x5_stride_waves4, binding = stride, waves = 4)]
#[clustered(name = conv5x5_agents, binding = agents)]
#[clustered(name = conv5x5_agents_throttled, binding = agents, active = 4)]
#[clustered(name = conv5x5_agents_chunked, binding = agents, chunk = 8)]
pub unsafe fn conv5x5(
    input: *const f32,
    filter: [f32; 25],
    output: *mut f32,
    width: u32,
    height: u32,
) {
    let x = block_idx_x() * CONV_BLOCK + thread_idx_x();
    let y = block_idx_y() * CONV_BLOCK + thread_idx_y();
    if x < width && y < height {
        let mut sum = 0.0f32;
        // Each tap an offset from the centre's address: a row's five taps
        // share one address and differ by immediates, where indexing
        // `input` with the wrapped `xx` took a 64-bit add per tap (224 SASS
        // instructions against 176; nvcc's twin 200). `wrapping_offset`:
        // a tap past the edge is an address never read.
        let centre = input.add(y as usize * width as usize + x as usize);
        for dy in 0..FILTER {
            // Wraps below zero, so one unsigned comparison checks both ends.
            let yy = (y + dy).wrapping_sub(FILTER / 2);
            let row = centre.wrapping_offset((dy as isize - HALF) * width as isize);
            for dx in 0..FILTER {
                let xx = (x + dx).wrapping_sub(FILTER / 2);
                let value = if yy < height && xx < width {
                    *row.wrapping_offset(dx as isize - HALF)
                } else {
                    0.0
                };
                sum = fma(value, filter[(dy * FILTER + dx) as usize], sum);
            }
        }
        *output.add(y as usize * width as usize + x as usize) = sum;
    }
}

/// Threads of a [`conv5x5_tiled`](fn@conv5x5_tiled) block: 32 x 8.
pub const TILED_THREADS: [u32; 2] = [32, 8];
/// Outputs of a [`conv5x5_tiled`](fn@conv5x5_tiled) block: 32 x 32 (each
/// thread computes 4 of one column).
pub const TILED_OUTPUTS: [u32; 2] = [32, 32];
/// Output rows per thread of [`conv5x5_tiled`](fn@conv5x5_tiled).
const TILED_ROWS: u32 = TILED_OUTPUTS[1] / TILED_THREADS[1];
/// Columns of the shared tile: the block's outputs and two on each side.
const TILE_WIDTH: u32 = TILED_OUTPUTS[0] + FILTER - 1;
/// Rows of the shared tile.
const TILE_HEIGHT: u32 = TILED_OUTPUTS[1] + FILTER - 1;

/// [`conv5x5`](fn@conv5x5) as a stencil is written by hand: a block stages
/// its 32 x 32 outputs' inputs and their halo (36 x 36, zero outside the
/// image, the value the original reads there) in shared memory with
/// coalesced loads, once, and each thread computes 4 outputs of a column
/// from it, each with the original's 25 FMAs in the original's order, so
/// the outputs are the same bits (`clustered_suite::reference::conv5x5`).
///
/// Launch: block `32 x 8`, grid `ceil(width / 32) x ceil(height / 32)`.
/// The original reads each input 25 times through L1 (16 x 16 blocks);
/// this reads it about 1.27 times from global memory (the halo), and the
/// 8 rows of a column's 4 outputs once each from shared memory for all 5
/// filter columns.
///
/// Its nvcc twin stages the tile by rows and is 3% faster (0.91 ms against
/// 0.94 on an H100); the same staging in Rust was slower in every form
/// tried, since LLVM does not unroll the row loop and ptxas's handling of
/// the taps' loop moves with the code before it (docs/BENCHMARKS.md, "The
/// staged convolution's expert twin").
#[clustered(auto)]
pub unsafe fn conv5x5_tiled(
    input: *const f32,
    filter: [f32; 25],
    output: *mut f32,
    width: u32,
    height: u32,
) {
    let tile = shared_array!(conv_tile: [f32; (TILE_WIDTH * TILE_HEIGHT) as usize]);
    let (tx, ty) = (thread_idx_x(), thread_idx_y());
    let x0 = block_idx_x() * TILED_OUTPUTS[0];
    let y0 = block_idx_y() * TILED_OUTPUTS[1];
    let threads = TILED_THREADS[0] * TILED_THREADS[1];
    let mut k = ty * TILED_THREADS[0] + tx;
    while k < TILE_WIDTH * TILE_HEIGHT {
        let (row, column) = (k / TILE_WIDTH, k % TILE_WIDTH);
        // Wraps below zero, so one unsigned comparison checks both ends.
        let yy = (y0 + row).wrapping_sub(FILTER / 2);
        let xx = (x0 + column).wrapping_sub(FILTER / 2);
        let value = if yy < height && xx < width {
            *input.add(yy as usize * width as usize + xx as usize)
        } else {
            0.0
        };
        tile.write(k, value);
        k += threads;
    }
    // Every thread's part of the tile before anyone reads it.
    sync_threads();
    let first = ty * TILED_ROWS;
    let mut sums = [0.0f32; TILED_ROWS as usize];
    for dy in 0..FILTER {
        for dx in 0..FILTER {
            let weight = filter[(dy * FILTER + dx) as usize];
            for (r, sum) in (0u32..).zip(sums.iter_mut()) {
                let value = tile.read((first + r + dy) * TILE_WIDTH + tx + dx);
                *sum = fma(value, weight, *sum);
            }
        }
    }
    let x = x0 + tx;
    for (r, sum) in (0u32..).zip(sums) {
        let y = y0 + first + r;
        if x < width && y < height {
            *output.add(y as usize * width as usize + x as usize) = sum;
        }
    }
}
