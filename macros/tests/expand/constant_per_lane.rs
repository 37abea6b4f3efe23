use clustered_device::kernel;
use clustered_device::thread::{index_1d, thread_idx_x};

clustered_device::constant_table!(pub TAPS: [f32; 32]);

/// A constant table read at each lane's own index (`thread_idx_x() % 32`
/// is opaque to the analysis; `i`, `bx*bdx + tx`, is not): the expansion
/// carries one warning, at `i`'s read, naming the table and the fix.
#[kernel]
pub unsafe fn per_lane(out: *mut f32, n: u32) {
    let i = index_1d();
    if i < n {
        let uniform = TAPS.read(n % 32);
        let opaque = TAPS.read(thread_idx_x() % 32);
        *out.add(i as usize) = TAPS.read(i) + uniform + opaque;
    }
}
