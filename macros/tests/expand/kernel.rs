use clustered_device::kernel;
use clustered_device::thread::index_1d;

/// A plain kernel: `#[kernel]` only makes it a PTX entry point.
#[kernel]
#[inline(never)]
pub unsafe fn saxpy(a: f32, x: *const f32, y: *mut f32, n: u32) {
    let i = index_1d();
    if i < n {
        *y.add(i as usize) = a * *x.add(i as usize) + *y.add(i as usize);
    }
}
