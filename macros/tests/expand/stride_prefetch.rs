use clustered_device::clustered;
use clustered_device::cta::Cta;
use clustered_device::memory::prefetch_l2;
use clustered_device::thread::index_1d;

/// Starts bringing the next task's inputs into L2.
unsafe fn prefetch_next(next: Cta, input: *const f32, _output: *mut f32, n: u32) {
    let i = next.index_1d();
    if i < n {
        prefetch_l2(input.add(i as usize));
    }
}

/// A grid-stride loop in two waves that prefetches each next task.
#[clustered(name = scale_stride, binding = stride, waves = 2, prefetch = prefetch_next)]
pub unsafe fn scale(input: *const f32, output: *mut f32, n: u32) {
    let i = index_1d();
    if i < n {
        *output.add(i as usize) = 2.0 * *input.add(i as usize);
    }
}
