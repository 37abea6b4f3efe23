//! Kernels that check the scheduler itself.

use clustered_device::atomic::fetch_add_u32;
use clustered_device::clustered;
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
pub unsafe fn coverage(runs: *mut u32, sms: *mut u32) {
    if thread_idx_x() == 0 {
        let v = (block_idx_z() * grid_dim_y() + block_idx_y()) * grid_dim_x() + block_idx_x();
        fetch_add_u32(runs.add(v as usize), 1);
        *sms.add(v as usize) = sm_id();
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
