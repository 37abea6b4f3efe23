use clustered_device::kernel;
use clustered_device::shared_array;
use clustered_device::task_pool;
use clustered_device::thread::{block_idx_x, sync_threads, thread_idx_x};

/// Scales one element per thread: `block_idx_x` becomes the task's CTA.
#[kernel]
pub unsafe fn scale(x: *mut f32, a: f32, n: u32) {
    let i = block_idx_x() * 32 + thread_idx_x();
    if i < n {
        *x.add(i as usize) *= a;
    }
}

/// Returns early before a barrier: the task protocol ends its CTA.
#[kernel]
pub unsafe fn halves(out: *mut u32) {
    let seen = shared_array!(seen: [u32; 32]);
    if thread_idx_x() >= 16 {
        return;
    }
    seen.write(thread_idx_x(), block_idx_x());
    sync_threads();
    *out.add(thread_idx_x() as usize) = seen.read(15 - thread_idx_x());
}

/// The same with the hardware's barrier called by its intrinsic's name: in a
/// pool task it becomes the task's barrier too (`run::pool_body_barrier`),
/// not one that would wait for a publishing warp.
#[kernel]
pub unsafe fn halves_intrinsic(out: *mut u32) {
    let seen = shared_array!(seen: [u32; 32]);
    if thread_idx_x() >= 16 {
        return;
    }
    seen.write(thread_idx_x(), block_idx_x());
    core::arch::nvptx::_syncthreads();
    *out.add(thread_idx_x() as usize) = seen.read(15 - thread_idx_x());
}

task_pool!(pub unsafe fn small_pool = [scale, halves, halves_intrinsic]);
