use clustered_device::clustered;
use clustered_device::shared_array;
use clustered_device::thread::{block_idx_x, sync_threads, thread_idx_x};

/// Sum of each block's 256 elements, with three schedules.
#[clustered(name = block_sums_raster, binding = reorder, indexing = tile(4, 2))]
#[clustered(name = block_sums_agents, binding = agents, indexing = tile(4, 4), chunk = 2)]
#[clustered(name = block_sums_redirect, binding = redirect, indexing = column_major)]
pub unsafe fn block_sums(x: *const f32, sums: *mut f32) {
    let partial = shared_array!(partial: [f32; 256]);
    let t = thread_idx_x();
    partial.write(t, *x.add((block_idx_x() * 256 + t) as usize));
    sync_threads();
    let mut stride = 128;
    while stride > 0 {
        if t < stride {
            partial.write(t, partial.read(t) + partial.read(t + stride));
        }
        sync_threads();
        stride /= 2;
    }
    if t == 0 {
        *sums.add(block_idx_x() as usize) = partial.read(0);
    }
}
