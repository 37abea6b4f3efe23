use clustered_device::clustered;
use clustered_device::thread::{block_idx_x, block_idx_y, thread_idx_x};

/// Visits the grid in a snake order: even rows left to right, odd rows right
/// to left.
pub fn snake(linear_id: u32, grid: [u32; 3]) -> [u32; 3] {
    let y = linear_id / grid[0];
    let x = linear_id % grid[0];
    let x = if y % 2 == 0 { x } else { grid[0] - 1 - x };
    [x, y, 0]
}

#[clustered(name = rows_snake, binding = agents, indexing = custom(snake), chunk = 2)]
pub unsafe fn row_sums(m: *const f32, sums: *mut f32, width: u32) {
    let row = block_idx_y();
    let column = block_idx_x() * 32 + thread_idx_x();
    if column < width {
        let value = *m.add((row * width + column) as usize);
        clustered_device::atomic::fetch_add_f32(sums.add(row as usize), value);
    }
}
