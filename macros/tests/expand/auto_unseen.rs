use clustered_device::clustered;
use clustered_device::thread::index_1d;

/// `#[clustered(auto)]` over a kernel whose load sits in a closure: the
/// analysis does not read it, so the expansion carries a warning naming
/// the closure (the `#[deprecated]` struct at the end) and the closure in
/// `ACCESSES.unseen`.
#[clustered(auto)]
pub unsafe fn gather(input: *const f32, out: *mut f32, n: u32) {
    let i = index_1d();
    let load = |j: u32| *input.add(j as usize);
    if i < n {
        *out.add(i as usize) = load(i) * 2.0;
    }
}
