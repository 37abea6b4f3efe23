//! Matrix products.

use clustered_device::clustered;
use clustered_device::index::at;
use clustered_device::math::fma;
use clustered_device::shared_array;
use clustered_device::thread::{
    block_idx_x, block_idx_y, sync_threads, thread_idx_x, thread_idx_y,
};

/// Tile edge of [`sgemm_tiled`](fn@sgemm_tiled); blocks are `TILE x TILE` threads.
pub const TILE: u32 = 32;

/// `C = A * B` for row-major `n x n` matrices, `n` a multiple of [`TILE`]:
/// the CUDA SDK's shared-memory tiled SGEMM. Block `(x, y)` computes the
/// `TILE x TILE` tile of `C` at tile row `y`, column `x`.
#[clustered(auto)]
#[clustered(name = sgemm_tiled_raster, binding = reorder, indexing = tile(16, 4))]
#[clustered(name = sgemm_tiled_raster16, binding = reorder, indexing = tile(1, 16))]
#[clustered(name = sgemm_tiled_raster8, binding = reorder, indexing = tile(1, 8))]
#[clustered(name = sgemm_tiled_sawtooth8, binding = reorder, indexing = sawtooth(1, 8))]
#[clustered(name = sgemm_tiled_raster32, binding = reorder, indexing = tile(1, 32))]
#[clustered(name = sgemm_tiled_agents, binding = agents, indexing = tile(4, 4))]
#[clustered(name = sgemm_tiled_redirect, binding = redirect, indexing = column_major)]
pub unsafe fn sgemm_tiled(a: *const f32, b: *const f32, c: *mut f32, n: u32) {
    let tile_a = shared_array!(tile_a: [f32; (TILE * TILE) as usize]);
    let tile_b = shared_array!(tile_b: [f32; (TILE * TILE) as usize]);
    let (tx, ty) = (thread_idx_x(), thread_idx_y());
    let row = block_idx_y() * TILE + ty;
    let col = block_idx_x() * TILE + tx;
    let mut sum = 0.0f32;
    let mut k0 = 0;
    while k0 < n {
        tile_a.write(ty * TILE + tx, *a.add(at(row, n, k0 + tx)));
        tile_b.write(ty * TILE + tx, *b.add(at(k0 + ty, n, col)));
        sync_threads();
        for k in 0..TILE {
            sum = fma(tile_a.read(ty * TILE + k), tile_b.read(k * TILE + tx), sum);
        }
        sync_threads();
        k0 += TILE;
    }
    *c.add(at(row, n, col)) = sum;
}
