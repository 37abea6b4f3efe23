use clustered_device::thread::index_1d;
use clustered_device::{clustered, kernel, launch_bounds};

const BLOCK: u32 = 256;

/// Bounds written above the schedules (expanded first, put back below them)
/// hold for the kernel and every schedule: a global each, for the builder,
/// and the typed handle's `LAUNCH_BOUNDS`.
#[launch_bounds(max_threads = BLOCK, min_blocks_per_sm = 1)]
#[clustered(name = column_sums_redirect, binding = redirect)]
#[clustered(name = column_sums_agents, binding = agents, chunk = 8)]
pub unsafe fn column_sums(a: *const f32, sums: *mut f32, rows: u32, columns: u32) {
    let j = index_1d();
    if j < columns {
        let mut sum = 0.0f32;
        for i in 0..rows {
            sum += *a.add((i * columns + j) as usize);
        }
        *sums.add(j as usize) = sum;
    }
}

/// Below `#[kernel]`, without `min_blocks_per_sm` (ptxas chooses).
#[kernel]
#[launch_bounds(max_threads = 128)]
pub unsafe fn scale(x: *mut f32, factor: f32, n: u32) {
    let i = index_1d();
    if i < n {
        *x.add(i as usize) *= factor;
    }
}
