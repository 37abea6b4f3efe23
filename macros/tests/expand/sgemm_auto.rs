use clustered_device::clustered;
use clustered_device::index::at;
use clustered_device::thread::{block_idx_x, block_idx_y, thread_idx_x, thread_idx_y};

const TILE: u32 = 16;

// `auto` next to an explicit schedule that it would propose too: the family
// names the explicit one instead of emitting it twice; and one it would not
// propose, which joins the family at its end.
#[clustered(auto)]
#[clustered(name = sgemm_raster, binding = reorder, indexing = column_tile(8, 1))]
#[clustered(name = sgemm_persistent, binding = persistent, chunk = 4)]
pub unsafe fn sgemm(a: *const f32, b: *const f32, c: *mut f32, n: u32) {
    let row = block_idx_y() * TILE + thread_idx_y();
    let col = block_idx_x() * TILE + thread_idx_x();
    let mut sum = 0.0;
    for k in 0..n {
        sum += *a.add(at(row, n, k)) * *b.add(at(k, n, col));
    }
    *c.add(at(row, n, col)) = sum;
}
