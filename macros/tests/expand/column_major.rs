use clustered_device::clustered;
use clustered_device::thread::{grid_dim_x, index_2d, thread_idx_x, thread_idx_y};

/// A 5-point stencil; neighbouring columns of blocks share halos, so they are
/// clustered column by column. No barrier: agents need no barrier between
/// tasks.
#[clustered(name = stencil_columns, indexing = column_major, bypass(input), active = 4)]
pub unsafe fn stencil(input: *const f32, output: *mut f32, width: u32, height: u32) {
    let (x, y) = index_2d();
    let _ = (thread_idx_x(), thread_idx_y(), grid_dim_x());
    if x == 0 || y == 0 || x + 1 >= width || y + 1 >= height {
        return;
    }
    let at = |x: u32, y: u32| (y * width + x) as usize;
    let sum = *input.add(at(x - 1, y))
        + *input.add(at(x + 1, y))
        + *input.add(at(x, y - 1))
        + *input.add(at(x, y + 1));
    *output.add(at(x, y)) = 0.25 * sum;
}
