//! Matrix products.

use clustered_device::cluster::{
    cluster_ctaid_x, cluster_ctaid_y, cluster_nctaid_x, cluster_nctaid_y, cluster_sync,
};
use clustered_device::index::at;
use clustered_device::math::fma;
use clustered_device::shared_array;
use clustered_device::thread::{
    block_idx_x, block_idx_y, sync_threads, thread_idx_x, thread_idx_y,
};
use clustered_device::{clustered, kernel};

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

/// [`sgemm_tiled`](fn@sgemm_tiled) in Hopper thread block clusters, each
/// shared tile loaded from global memory once per cluster: the blocks of a
/// cluster row (same tile row of `C`) share the tile of `A`, those of a
/// cluster column share the tile of `B`. Each block loads its share of the
/// rows of both tiles and stores each value into every sharer's shared
/// memory (DSMEM); one cluster barrier per step then makes the tiles whole.
/// Two tile buffers alternate: a step's stores go to the buffer whose
/// products every block of the cluster finished before the previous
/// step's barrier, so no second barrier is needed.
///
/// Launch with `LaunchConfig::with_block_cluster([cx, cy, 1])`, any
/// cluster up to 8 blocks; without clusters (and on the CPU backend) every
/// block owns all rows, and it is the SDK kernel with double buffering.
#[kernel]
pub unsafe fn sgemm_tiled_dsmem(a: *const f32, b: *const f32, c: *mut f32, n: u32) {
    let tiles_a = shared_array!(dsmem_a: [f32; 2 * (TILE * TILE) as usize]);
    let tiles_b = shared_array!(dsmem_b: [f32; 2 * (TILE * TILE) as usize]);
    let (tx, ty) = (thread_idx_x(), thread_idx_y());
    let row = block_idx_y() * TILE + ty;
    let col = block_idx_x() * TILE + tx;
    let (cx, cy) = (cluster_ctaid_x(), cluster_ctaid_y());
    let (nx, ny) = (cluster_nctaid_x(), cluster_nctaid_y());
    // Row `ty` of the A tile is loaded by the block at x = `ty / rows_a` of
    // this cluster row, row `ty` of the B tile by the one at y =
    // `ty / rows_b` of this cluster column (ranks count x fastest).
    let loads_a = ty / TILE.div_ceil(nx) == cx;
    let loads_b = ty / TILE.div_ceil(ny) == cy;
    let element = ty * TILE + tx;
    let mut sum = 0.0f32;
    let mut k0 = 0;
    let mut buffer = 0;
    // Every block of the cluster runs before any stores into another's
    // shared memory (without it compute-sanitizer's racecheck reported the
    // first step's stores, 2026-11-26).
    let started = cluster_sync();
    while k0 < n {
        let tile_a = tiles_a.offset(buffer * TILE * TILE);
        let tile_b = tiles_b.offset(buffer * TILE * TILE);
        // Both loads in flight before either is stored: one global round
        // trip per step, as in the SDK kernel (loaded and stored in turn,
        // the A and B tiles took two, and the kernel without clusters
        // 1.21x the SDK kernel's time; now 1.15x: `bench --only sgemm_tiled`,
        // H100, docs/BENCHMARKS.md).
        let value_a = if loads_a {
            *a.add(at(row, n, k0 + tx))
        } else {
            0.0
        };
        let value_b = if loads_b {
            *b.add(at(k0 + ty, n, col))
        } else {
            0.0
        };
        // The A and B stores are written out: as one helper taking the rank
        // as a closure, LLVM unrolled its loop further (the entry's SASS grew
        // from 1016 to 1224 lines).
        if loads_a {
            tile_a.write(element, value_a);
            let mut x = 0;
            while x < nx {
                if x != cx {
                    tile_a
                        .in_block(cy * nx + x, started)
                        .write(element, value_a);
                }
                x += 1;
            }
        }
        if loads_b {
            tile_b.write(element, value_b);
            let mut y = 0;
            while y < ny {
                if y != cy {
                    tile_b
                        .in_block(y * nx + cx, started)
                        .write(element, value_b);
                }
                y += 1;
            }
        }
        cluster_sync();
        for k in 0..TILE {
            sum = fma(tile_a.read(ty * TILE + k), tile_b.read(k * TILE + tx), sum);
        }
        buffer ^= 1;
        k0 += TILE;
    }
    *c.add(at(row, n, col)) = sum;
}
