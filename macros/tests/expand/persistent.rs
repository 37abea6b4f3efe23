use clustered_device::clustered;
use clustered_device::thread::index_1d;

/// One queue for all persistent CTAs, claimed 8 tasks at a time in row order.
#[clustered(name = scale_persistent, binding = persistent, chunk = 8)]
pub unsafe fn scale(x: *mut f32, factor: f32, n: u32) {
    let i = index_1d();
    if i < n {
        *x.add(i as usize) *= factor;
    }
}
