use clustered_device::clustered;
use clustered_device::thread::index_1d;

/// A grid-stride loop whose last rounds are claimed by the blocks that are
/// free (`run::strided_then_claimed`).
#[clustered(name = scale_tail, binding = stride, tail = claims)]
pub unsafe fn scale(x: *mut f32, n: u32) {
    let i = index_1d();
    if i < n {
        *x.add(i as usize) *= 2.0;
    }
}
