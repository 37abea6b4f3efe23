//! Rodinia `nn`: the nearest-neighbour distance kernel `euclid`.
//!
//! Source: Rodinia 3.1, `cuda/nn/nn_cuda.cu` (mirror: github
//! `yuhc/gpu-rodinia`). The host launches it once, then sorts the distances
//! on the CPU.

use clustered_device::clustered;
use clustered_device::math::sqrt;
use clustered_device::thread::{block_dim_x, block_idx_x, block_idx_y, grid_dim_x, thread_idx_x};

/// Threads per block (Rodinia's `DEFAULT_THREADS_PER_BLOCK`).
pub const NN_BLOCK: u32 = 256;

/// `distances[i] = sqrt((lat - lat_i)^2 + (lng - lng_i)^2)` for each record
/// `i < num_records`, `locations` holding `(lat_i, lng_i)` pairs (the
/// original's `struct LatLong { float lat, lng; }`), summed as written
/// (`(lat - lat_i) * (lat - lat_i) + (lng - lng_i) * (lng - lng_i)`, no FMA);
/// `sqrt` correctly rounded (`sqrt.rn.f32`, as CUDA's `sqrtf`).
///
/// Launch: block `256`, grid `(grid_x, grid_y)` as the host computes it:
/// `blocks = ceil(n / 256)`, `grid_y = ceil(blocks / max_grid_x)`,
/// `grid_x = ceil(blocks / grid_y)`; on an H100 (`max_grid_x = 2^31 - 1`)
/// a 1D grid. Record `256 (grid_x * by + bx) + tx`.
///
/// Sharing: none (each record is read once): streaming.
///
/// Variants: `_redirect`, `_stride` (grid-stride), `_persistent` (chunks of
/// 8 blocks), `_agents_bypass` (agents, 8 blocks per claim, `locations`
/// loaded past L1).
///
/// # Safety
/// `locations` holds `2 * num_records` floats (more if the grid has spare
/// blocks: only their address is formed), `distances` `num_records`.
#[clustered(auto)]
#[clustered(name = nn_euclid_redirect, binding = redirect)]
#[clustered(name = nn_euclid_stride, binding = stride)]
#[clustered(name = nn_euclid_persistent, binding = persistent, chunk = 8)]
#[clustered(name = nn_euclid_agents_bypass, binding = agents, chunk = 8, bypass(locations))]
pub unsafe fn nn_euclid(
    locations: *const f32,
    distances: *mut f32,
    num_records: u32,
    lat: f32,
    lng: f32,
) {
    let global_id = block_dim_x() * (grid_dim_x() * block_idx_y() + block_idx_x()) + thread_idx_x();
    if global_id < num_records {
        let lat_long = locations.add(2 * global_id as usize);
        let (lat_i, lng_i) = (*lat_long, *lat_long.add(1));
        *distances.add(global_id as usize) =
            sqrt((lat - lat_i) * (lat - lat_i) + (lng - lng_i) * (lng - lng_i));
    }
}
