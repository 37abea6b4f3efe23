//! 2D convolution with a 5x5 filter.

use clustered_device::clustered;
use clustered_device::math::fma;
use clustered_device::thread::{block_idx_x, block_idx_y, thread_idx_x, thread_idx_y};

/// Block edge of [`conv5x5`](fn@conv5x5): blocks are `16 x 16` threads.
pub const CONV_BLOCK: u32 = 16;
/// Filter edge: the filter is `5 x 5`, centred (radius 2).
pub const FILTER: u32 = 5;

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
        for dy in 0..FILTER {
            // Wraps below zero, so one unsigned comparison checks both ends.
            let yy = (y + dy).wrapping_sub(FILTER / 2);
            for dx in 0..FILTER {
                let xx = (x + dx).wrapping_sub(FILTER / 2);
                let value = if yy < height && xx < width {
                    *input.add(yy as usize * width as usize + xx as usize)
                } else {
                    0.0
                };
                sum = fma(value, filter[(dy * FILTER + dx) as usize], sum);
            }
        }
        *output.add(y as usize * width as usize + x as usize) = sum;
    }
}
