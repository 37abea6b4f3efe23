use clustered_device::clustered;
use clustered_device::thread::index_1d;

/// No options: one agents schedule named `fill_clustered`, row-major, one
/// task at a time.
#[clustered]
pub unsafe fn fill(x: *mut u32, value: u32, n: u32) {
    let i = index_1d();
    if i < n {
        *x.add(i as usize) = value;
    }
}
