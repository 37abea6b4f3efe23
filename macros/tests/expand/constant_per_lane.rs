use clustered_device::kernel;
use clustered_device::thread::{index_1d, thread_idx_x};

clustered_device::constant_table!(pub TAPS: [f32; 32]);

/// A constant table read at each lane's own index: `i` (`bx*bdx + tx`) and
/// `thread_idx_x() % 32` (not affine, still made of the lane's index) get
/// a warning each, naming the table and the fix; `n % 32` none.
#[kernel]
pub unsafe fn per_lane(out: *mut f32, n: u32) {
    let i = index_1d();
    if i < n {
        let uniform = TAPS.read(n % 32);
        let opaque = TAPS.read(thread_idx_x() % 32);
        *out.add(i as usize) = TAPS.read(i) + uniform + opaque;
    }
}
