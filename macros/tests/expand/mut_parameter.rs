use clustered_device::clustered;
use clustered_device::thread::index_1d;

/// A `mut` parameter: the task function keeps `mut` (its body is the
/// kernel's), the entry point only forwards the value.
#[clustered(name = countdown_tiles, binding = agents, indexing = tile(2, 2))]
pub unsafe fn countdown(out: *mut u32, mut n: u32) {
    let i = index_1d();
    while n > i {
        n -= 1;
    }
    *out.add(i as usize) = n;
}
