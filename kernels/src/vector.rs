//! Streaming kernels.

use clustered_device::kernel;
use clustered_device::thread::index_1d;

/// `c[i] = a[i] + b[i]` for `i < n`, one element per thread.
#[kernel]
pub unsafe fn vector_add(a: *const f32, b: *const f32, c: *mut f32, n: u32) {
    let i = index_1d();
    if i < n {
        let i = i as usize;
        *c.add(i) = *a.add(i) + *b.add(i);
    }
}
