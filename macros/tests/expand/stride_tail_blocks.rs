use clustered_device::clustered;
use clustered_device::thread::index_1d;

/// A grid-stride loop whose last rounds run as blocks of one task each,
/// which the hardware dispatches as the looping blocks leave
/// (`run::strided_then_blocks`).
#[clustered(name = scale_tail_blocks, binding = stride, tail = blocks)]
pub unsafe fn scale(x: *mut f32, n: u32) {
    let i = index_1d();
    if i < n {
        *x.add(i as usize) *= 2.0;
    }
}
