//! Kernels that check the scheduler itself.

use clustered_device::atomic::fetch_add_u32;
use clustered_device::clustered;
use clustered_device::cta::Cta;
use clustered_device::kernel;
use clustered_device::sm::{clock64, sm_id};
use clustered_device::thread::*;

/// Records which original CTA ran, how often, and on which SM:
/// `runs[v] += 1`, `sms[v] = %smid`, with `v` the CTA's row-major id.
/// The exactly-once test runs every schedule of it.
#[clustered(name = coverage_reorder, binding = reorder, indexing = tile(3, 2))]
#[clustered(name = coverage_redirect, binding = redirect, indexing = column_major)]
#[clustered(name = coverage_agents, binding = agents, indexing = tile(2, 2))]
#[clustered(name = coverage_agents_chunked, binding = agents, chunk = 5)]
#[clustered(name = coverage_agents_throttled, binding = agents, active = 1)]
#[clustered(name = coverage_persistent, binding = persistent, indexing = column_major, chunk = 3)]
#[clustered(name = coverage_stride, binding = stride, indexing = tile(2, 3))]
#[clustered(name = coverage_stride_waves, binding = stride, waves = 3)]
#[clustered(name = coverage_stride_tail, binding = stride, indexing = tile(2, 3), tail = claims)]
#[clustered(name = coverage_stride_tail_blocks, binding = stride, indexing = tile(2, 3), tail = blocks)]
#[clustered(name = coverage_stride_tail_waves, binding = stride, waves = 3, tail = claims)]
#[clustered(name = coverage_stride_tail_blocks_waves, binding = stride, waves = 3, tail = blocks)]
#[clustered(name = coverage_sawtooth, binding = reorder, indexing = sawtooth(1, 2))]
#[clustered(name = coverage_raster_agents, binding = agents, indexing = tile(1, 2))]
#[clustered(name = coverage_column_raster_stride, binding = stride, indexing = column_tile(2, 1))]
pub unsafe fn coverage(runs: *mut u32, sms: *mut u32) {
    if thread_idx_x() == 0 {
        let v = (block_idx_z() * grid_dim_y() + block_idx_y()) * grid_dim_x() + block_idx_x();
        fetch_add_u32(runs.add(v as usize), 1);
        *sms.add(v as usize) = sm_id();
    }
}

/// Like [`coverage`](fn@coverage) for the schedules that announce each block's next task
/// to a prefetch hook: `runs[v] += 1` when CTA `v` runs, and
/// `announced[v] += 1` when [`announce`] is called with it. The test checks
/// that the hook sees exactly the tasks that follow another in their block.
#[clustered(name = announced_stride, binding = stride, indexing = column_major, prefetch = announce)]
#[clustered(name = announced_stride2, binding = stride, indexing = column_major, prefetch = announce, prefetch_distance = 2)]
#[clustered(name = announced_stride_tail, binding = stride, indexing = column_major, prefetch = announce, tail = claims)]
#[clustered(name = announced_stride_tail_blocks, binding = stride, indexing = column_major, prefetch = announce, tail = blocks)]
#[clustered(name = announced_stride2_tail, binding = stride, indexing = column_major, prefetch = announce, prefetch_distance = 2, tail = claims)]
#[clustered(name = announced_stride2_tail_blocks, binding = stride, indexing = column_major, prefetch = announce, prefetch_distance = 2, tail = blocks)]
#[clustered(name = announced_persistent, binding = persistent, chunk = 3, prefetch = announce)]
pub unsafe fn announced(runs: *mut u32, announced: *mut u32) {
    if thread_idx_x() == 0 {
        let v = (block_idx_z() * grid_dim_y() + block_idx_y()) * grid_dim_x() + block_idx_x();
        fetch_add_u32(runs.add(v as usize), 1);
    }
    let _ = announced;
}

/// The prefetch hook of [`announced`](fn@announced)'s schedules.
unsafe fn announce(next: Cta, _runs: *mut u32, announced: *mut u32) {
    if thread_idx_x() == 0 {
        let [x, y, z] = next.index;
        let [gx, gy, _] = next.grid;
        fetch_add_u32(announced.add(((z * gy + y) * gx + x) as usize), 1);
    }
}

/// Keeps its SM busy for `cycles` clock cycles: starves SMs of agents in the
/// tests.
#[kernel]
pub unsafe fn spin(cycles: u64, out: *mut u64) {
    let start = clock64();
    let mut now = start;
    while now - start < cycles {
        now = clock64();
    }
    if thread_idx_x() == 0 {
        *out.add(block_idx_x() as usize) = now - start;
    }
}
