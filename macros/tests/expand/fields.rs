use clustered_device::kernel;
use clustered_device::memory::F32x4;
use clustered_device::thread::index_1d;

/// Fields and elements read and written through global pointers are traced
/// like `*p`: a quad read as `(*p).0` loads the whole quad, an element or a
/// field written stores its own bytes, a borrow stays a place.
#[kernel]
pub unsafe fn fields(
    quads: *const F32x4,
    pairs: *mut (f32, u32),
    rows: *mut [f32; 8],
    out: *mut f32,
    n: u32,
) {
    let i = index_1d();
    if i < n {
        let [a, b, _, d] = (*quads.add(i as usize)).0;
        (*pairs.add(i as usize)).0 = a + b;
        (*pairs.add(i as usize)).1 += 1;
        let borrowed = &(*quads.add(i as usize)).0;
        let element = (*rows.add(i as usize))[3] + (*quads.add(i as usize)).0[1];
        (*rows.add(i as usize))[0] = element;
        *out.add(i as usize) = d + borrowed[2] + (*pairs.add(i as usize)).0;
    }
}
