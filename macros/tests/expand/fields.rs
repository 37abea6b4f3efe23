use clustered_device::kernel;
use clustered_device::memory::F32x4;
use clustered_device::thread::index_1d;

/// Fields read and written through global pointers are traced like `*p`:
/// a quad read as `(*p).0` loads the whole quad, a field written stores
/// its own bytes, a borrow stays a place.
#[kernel]
pub unsafe fn fields(quads: *const F32x4, pairs: *mut (f32, u32), out: *mut f32, n: u32) {
    let i = index_1d();
    if i < n {
        let [a, b, _, d] = (*quads.add(i as usize)).0;
        (*pairs.add(i as usize)).0 = a + b;
        (*pairs.add(i as usize)).1 += 1;
        let borrowed = &(*quads.add(i as usize)).0;
        *out.add(i as usize) = d + borrowed[2] + (*pairs.add(i as usize)).0;
    }
}
