//! Kernels of the property test (`tests/property.rs`): the shape most
//! kernels have (a tail guard, then shared-memory work between barriers),
//! in 1D and 2D, with static and dynamic shared memory, each under schedules
//! that together use every binding and every indexing. Their results depend
//! on the block's coordinates, so a task run as the wrong CTA shows, and
//! each counts its runs, so a task run twice or never shows.

use clustered_device::atomic::fetch_add_u32;
use clustered_device::clustered;
use clustered_device::shared::dynamic_shared_memory;
use clustered_device::shared_array;
use clustered_device::thread::*;

/// Threads per block at most: [`tile_exchange`](fn@tile_exchange)'s shared tile in words.
pub const MAX_THREADS: u32 = 256;

/// A bijection of any grid onto itself (the `custom` indexing): row-major,
/// with every other row (over y and z) walked right to left.
#[inline(always)]
pub fn snake(v: u32, grid: [u32; 3]) -> [u32; 3] {
    let row = v / grid[0];
    let x = v % grid[0];
    let x = if row.is_multiple_of(2) {
        x
    } else {
        grid[0] - 1 - x
    };
    [x, row % grid[1], row / grid[1]]
}

/// A 2D stencil-like exchange over a `width` x `height` image, one image per
/// `z` of the grid (so 3D grids work too), in 2D blocks of at most
/// [`MAX_THREADS`] threads.
///
/// Threads outside the image return at once (the tail guard, on both axes,
/// before any barrier). The others load their pixel into a shared tile, then
/// mix it with a mirrored neighbour's (of the block's live part), store the
/// mix, and add another neighbour's mix, with a barrier between every write
/// and the other threads' reads; the result also depends on the block's
/// `(x, y, z)`. The block's first thread counts the CTA's runs in
/// `runs[cta]` (row-major CTA id).
#[clustered(name = tile_exchange_reorder, binding = reorder, indexing = tile(3, 2))]
#[clustered(name = tile_exchange_redirect, binding = redirect, indexing = custom(snake))]
#[clustered(name = tile_exchange_agents, binding = agents, indexing = column_major)]
#[clustered(name = tile_exchange_agents_chunked, binding = agents, indexing = tile(2, 2), chunk = 3, active = 1)]
#[clustered(name = tile_exchange_persistent, binding = persistent, indexing = custom(snake), chunk = 2)]
#[clustered(name = tile_exchange_stride, binding = stride, indexing = tile(2, 3))]
#[clustered(name = tile_exchange_stride_waves, binding = stride, indexing = column_major, waves = 2)]
#[clustered(name = tile_exchange_stride_tail, binding = stride, indexing = tile(2, 3), tail = claims)]
#[clustered(name = tile_exchange_stride_tail_blocks, binding = stride, indexing = tile(2, 3), tail = blocks)]
#[clustered(name = tile_exchange_sawtooth_agents, binding = agents, indexing = sawtooth(2, 2), chunk = 2)]
#[clustered(name = tile_exchange_raster, binding = reorder, indexing = tile(1, 2))]
#[clustered(name = tile_exchange_column_raster_stride, binding = stride, indexing = column_tile(2, 1))]
pub unsafe fn tile_exchange(
    input: *const u32,
    output: *mut u32,
    runs: *mut u32,
    width: u32,
    height: u32,
) {
    let tile = shared_array!(exchange: [u32; 256]);
    let (tx, ty) = (thread_idx_x(), thread_idx_y());
    let (bx, by, bz) = (block_idx_x(), block_idx_y(), block_idx_z());
    let (dx, dy) = (block_dim_x(), block_dim_y());
    let x = bx * dx + tx;
    let y = by * dy + ty;
    if x >= width || y >= height {
        return;
    }
    if tx == 0 && ty == 0 {
        let cta = (bz * grid_dim_y() + by) * grid_dim_x() + bx;
        fetch_add_u32(runs.add(cta as usize), 1);
    }
    // The block's live part: the threads inside the image.
    let live_x = dx.min(width - bx * dx);
    let live_y = dy.min(height - by * dy);
    let at = (bz * height + y) * width + x;
    let value = *input.add(at as usize);
    tile.write(ty * dx + tx, value);
    sync_threads();
    let mirrored = tile.read(((ty + 1) % live_y) * dx + (live_x - 1 - tx));
    let mixed = value.rotate_left(5) ^ mirrored;
    sync_threads();
    tile.write(ty * dx + tx, mixed);
    sync_threads();
    let other = tile.read(((ty + live_y - 1) % live_y) * dx + (tx + 1) % live_x);
    let coordinates = bx.wrapping_mul(0x9e37_79b9) ^ (by << 12) ^ (bz << 24);
    *output.add(at as usize) = mixed.wrapping_add(other) ^ coordinates;
}

/// A segmented inclusive scan in 1D blocks over any grid (CTA `c`,
/// row-major, holds elements `c * block_dim_x ..`): `output[i]` is the sum
/// of the block's live inputs up to `i`, mixed with the CTA id, and the last
/// live thread adds the block's total to `sums[c]` (so a CTA run twice
/// doubles it).
///
/// Threads leave at once when `i >= n` (the tail guard) and, in CTA
/// `ragged`, when `t >= cut` (early exits in any CTA); the others scan
/// through dynamic shared memory (a word per thread: launch it with
/// `4 * block_dim_x` bytes) in rounds of two barriers.
#[clustered(name = segment_scan_reorder, binding = reorder, indexing = column_major)]
#[clustered(name = segment_scan_redirect, binding = redirect, indexing = tile(2, 3))]
#[clustered(name = segment_scan_agents, binding = agents, indexing = custom(snake), chunk = 2)]
#[clustered(name = segment_scan_agents_throttled, binding = agents, active = 1)]
#[clustered(name = segment_scan_persistent, binding = persistent, indexing = tile(3, 1))]
#[clustered(name = segment_scan_persistent_throttled, binding = persistent, chunk = 4, active = 2)]
#[clustered(name = segment_scan_stride, binding = stride, indexing = custom(snake))]
#[clustered(name = segment_scan_stride_tail, binding = stride, indexing = custom(snake), tail = claims)]
#[clustered(name = segment_scan_stride_tail_blocks, binding = stride, indexing = custom(snake), tail = blocks)]
#[clustered(name = segment_scan_stride_waves, binding = stride, indexing = tile(2, 2), waves = 3)]
#[clustered(name = segment_scan_sawtooth_stride, binding = stride, indexing = sawtooth(3, 1))]
#[clustered(name = segment_scan_column_tile_persistent, binding = persistent, indexing = column_tile(2, 1), chunk = 2)]
pub unsafe fn segment_scan(
    input: *const u32,
    output: *mut u32,
    sums: *mut u32,
    n: u32,
    ragged: u32,
    cut: u32,
) {
    let partial = dynamic_shared_memory::<u32>();
    let t = thread_idx_x();
    let width = block_dim_x();
    let cta = (block_idx_z() * grid_dim_y() + block_idx_y()) * grid_dim_x() + block_idx_x();
    let start = cta * width;
    let i = start + t;
    let limit = if cta == ragged { cut } else { width };
    if i >= n || t >= limit {
        return;
    }
    let live = limit.min(n - start);
    let mut value = *input.add(i as usize);
    let mut distance = 1;
    while distance < live {
        partial.write(t, value);
        sync_threads();
        if t >= distance {
            value = value.wrapping_add(partial.read(t - distance));
        }
        sync_threads();
        distance *= 2;
    }
    *output.add(i as usize) = value ^ cta.wrapping_mul(0x85eb_ca6b);
    if t == live - 1 {
        fetch_add_u32(sums.add(cta as usize), value);
    }
}
