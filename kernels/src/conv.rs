//! 2D convolution with a 5x5 filter.

use clustered_device::math::fma;
use clustered_device::memory::settled;
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
/// Staged by rows, as its nvcc twin is: thread `(tx, ty)` loads rows `ty,
/// ty + 8, ..` at column `tx` and, on the first 4 lanes, the halo column
/// `tx + 32` (the first 4 rows of threads a fifth row first, then every
/// thread 4 rows with their 8 loads in flight before its stores); the taps
/// and the 4 stores unrolled, each sum complete before its store's test
/// (`settled`). On an H100 0.845 ms against the literal twin's 0.906 and
/// the linear walk's (`k / 36`, `k % 36`) 0.937 that it replaces
/// (docs/BENCHMARKS.md, "The staged convolution staged by rows, its sums
/// settled"); the twin written the same way runs at its time (0.843
/// against 0.844: session 48's section, "... three twins as the Rust is
/// written ...").
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
    // Staged by rows: column tx of rows ty, ty + 8, .., and on the first 4
    // lanes the halo column tx + 32, 32 floats on from the same address.
    // Wraps below zero, so one unsigned comparison checks both ends.
    let xx = (x0 + tx).wrapping_sub(FILTER / 2);
    let halo_lane = tx < TILE_WIDTH - TILED_OUTPUTS[0];
    let inside = xx < width;
    let halo_inside = halo_lane && xx.wrapping_add(TILED_OUTPUTS[0]) < width;
    // Column xx of row 0 (before the image where xx wrapped: an address
    // only the halo's, 32 on, is read from).
    let column = input.wrapping_offset((x0 + tx) as isize - HALF);
    let mut first_row = ty;
    // 36 rows over 8: the first 4 rows of threads stage a fifth, first.
    if ty < TILE_HEIGHT - 4 * TILED_THREADS[1] {
        let yy = (y0 + ty).wrapping_sub(FILTER / 2);
        let line = column.wrapping_add(yy as usize * width as usize);
        let row_inside = yy < height;
        let value = if row_inside && inside { *line } else { 0.0 };
        let halo = if row_inside && halo_inside {
            *line.wrapping_add(TILED_OUTPUTS[0] as usize)
        } else {
            0.0
        };
        tile.write(ty * TILE_WIDTH + tx, value);
        if halo_lane {
            tile.write(ty * TILE_WIDTH + tx + TILED_OUTPUTS[0], halo);
        }
        first_row += TILED_THREADS[1];
    }
    // The other 4 rows: all 8 loads in flight, then the stores.
    let mut values = [0.0f32; 4];
    let mut halos = [0.0f32; 4];
    for i in 0..4 {
        let yy = (y0 + first_row + i * TILED_THREADS[1]).wrapping_sub(FILTER / 2);
        let line = column.wrapping_add(yy as usize * width as usize);
        let row_inside = yy < height;
        values[i as usize] = if row_inside && inside { *line } else { 0.0 };
        halos[i as usize] = if row_inside && halo_inside {
            *line.wrapping_add(TILED_OUTPUTS[0] as usize)
        } else {
            0.0
        };
    }
    // The halo's stores under one test (interleaved with the column's,
    // LLVM split two of them into a store on each side of the test).
    let at = first_row * TILE_WIDTH + tx;
    for i in 0..4 {
        tile.write(at + i * TILED_THREADS[1] * TILE_WIDTH, values[i as usize]);
    }
    if halo_lane {
        for i in 0..4 {
            let halo_at = at + i * TILED_THREADS[1] * TILE_WIDTH + TILED_OUTPUTS[0];
            tile.write(halo_at, halos[i as usize]);
        }
    }
    // Every thread's part of the tile before anyone reads it.
    sync_threads();
    let first = ty * TILED_ROWS;
    let mut sums = [0.0f32; TILED_ROWS as usize];
    // Each filter row through its own constant `DY`, the twin's order
    // (`dx` outer, the 4 outputs inner): LLVM unrolls each completely and
    // the weights stay kernel parameters (a `dy` loop was left rolled, the
    // filter copied to the stack).
    let base = first * TILE_WIDTH + tx;
    tiled_taps::<0>(tile, &filter, base, &mut sums);
    tiled_taps::<1>(tile, &filter, base, &mut sums);
    tiled_taps::<2>(tile, &filter, base, &mut sums);
    tiled_taps::<3>(tile, &filter, base, &mut sums);
    tiled_taps::<4>(tile, &filter, base, &mut sums);
    // Every sum whole before the stores: left to itself, LLVM moved the
    // first output's 25 FMAs under its store's test, and ptxas then kept
    // the tile values it shares live across the test (39-40 registers).
    for sum in &mut sums {
        *sum = settled(*sum);
    }
    // One address for the column, a row further each store: each store's
    // test guards the store alone, and ptxas predicates the stores (the
    // first store's 64-bit address had been computed under its test).
    let x = x0 + tx;
    let mut at = output.wrapping_add((y0 + first) as usize * width as usize + x as usize);
    for r in 0..TILED_ROWS {
        if (x < width) & (y0 + first + r < height) {
            *at = sums[r as usize];
        }
        at = at.wrapping_add(width as usize);
    }
}

/// The taps of filter row `DY` for the 4 outputs of a
/// [`conv5x5_tiled`](fn@conv5x5_tiled) thread, `base` the tile index of its
/// first output's top-left tap: `dx` outer, the outputs inner.
#[inline(always)]
unsafe fn tiled_taps<const DY: u32>(
    tile: clustered_device::shared::Shared<f32>,
    filter: &[f32; 25],
    base: u32,
    sums: &mut [f32; TILED_ROWS as usize],
) {
    for dx in 0..FILTER {
        let weight = filter[(DY * FILTER + dx) as usize];
        for r in 0..TILED_ROWS {
            let value = tile.read(base + (r + DY) * TILE_WIDTH + dx);
            sums[r as usize] = fma(value, weight, sums[r as usize]);
        }
    }
}
