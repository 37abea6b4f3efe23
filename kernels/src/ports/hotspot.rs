//! Rodinia `hotspot`: the thermal simulation's `calculate_temp` kernel.
//!
//! Source: Rodinia 3.1, `cuda/hotspot/hotspot.cu` (mirror: github
//! `yuhc/gpu-rodinia`). One launch of the host loop of
//! `compute_tran_temp`, which launches this kernel `total_iterations /
//! pyramid_height` times, swapping the two temperature buffers.

use clustered_device::clustered;
use clustered_device::shared_array;
use clustered_device::thread::{
    block_idx_x, block_idx_y, sync_threads, thread_idx_x, thread_idx_y,
};

/// Block edge (Rodinia's `BLOCK_SIZE`): blocks are `16 x 16` threads.
pub const HOTSPOT_BLOCK: u32 = 16;

/// Ambient temperature, a `float` constant of the kernel.
const AMB_TEMP: f32 = 80.0;

/// Rodinia's `IN_RANGE(x, min, max)`.
#[inline(always)]
fn in_range(x: i32, min: i32, max: i32) -> bool {
    x >= min && x <= max
}

/// `iteration` time steps of the 5-point thermal stencil over the row-major
/// `grid_cols x grid_rows` chip, by pyramids in shared memory: block
/// `(bx, by)` loads a `16 x 16` tile whose top-left cell is
/// `(small * bx - border_cols, small * by - border_rows)` (`small = 16 - 2 *
/// iteration`), steps it `iteration` times, each step valid on a tile one
/// cell smaller on every side, and writes its inner `small x small` cells.
/// A neighbour outside the chip is the cell itself (clamped). Each step
/// computes, as the original does (its `2.0` is a `double`):
/// `t + step/Cap * (p + (ts + tn - 2.0 t) * (1/Ry) + (te + tw - 2.0 t) *
/// (1/Rx) + (80 - t) * (1/Rz))` in `double` from the `float` sums `ts + tn`,
/// `te + tw`, the `float` reciprocals and the `float` product
/// `(80 - t) * (1/Rz)`, rounded to `float`.
///
/// Launch: block `16 x 16`, grid `ceil(grid_cols / small) x ceil(grid_rows /
/// small)`; `iteration >= 1`, `border_* = iteration`. `time_elapsed` is
/// unused (as in the original).
///
/// Sharing: neighbouring blocks overlap by `2 * iteration` rows or columns
/// of `temp_src` and `power` (the pyramids' halos), so horizontal neighbours
/// share lines and vertical ones rows.
///
/// Variants: `_redirect_rows`, `_redirect_columns` (the paper's
/// redirection, Y- and X-partitioning), `_raster2` (`tile(1, 2)`: the two
/// blocks over a shared halo run back to back), `_stride` (grid-stride) and
/// `_agents`.
///
/// # Safety
/// The three buffers hold `grid_cols * grid_rows` floats and the launch is
/// the one above.
#[clustered(auto)]
#[clustered(name = hotspot_redirect_rows, binding = redirect, indexing = row_major)]
#[clustered(name = hotspot_redirect_columns, binding = redirect, indexing = column_major)]
#[clustered(name = hotspot_raster2, binding = reorder, indexing = tile(1, 2))]
#[clustered(name = hotspot_stride, binding = stride)]
#[clustered(name = hotspot_agents, binding = agents)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn hotspot(
    iteration: u32,
    power: *const f32,
    temp_src: *const f32,
    temp_dst: *mut f32,
    grid_cols: u32,
    grid_rows: u32,
    border_cols: u32,
    border_rows: u32,
    cap: f32,
    rx: f32,
    ry: f32,
    rz: f32,
    step: f32,
    _time_elapsed: f32,
) {
    const B: i32 = HOTSPOT_BLOCK as i32;
    let temp_on_cuda = shared_array!(temp_on_cuda: [f32; (HOTSPOT_BLOCK * HOTSPOT_BLOCK) as usize]);
    let power_on_cuda =
        shared_array!(power_on_cuda: [f32; (HOTSPOT_BLOCK * HOTSPOT_BLOCK) as usize]);
    let temp_t = shared_array!(temp_t: [f32; (HOTSPOT_BLOCK * HOTSPOT_BLOCK) as usize]);
    let cell = |row: i32, col: i32| (row * B + col) as u32;

    let (bx, by) = (block_idx_x() as i32, block_idx_y() as i32);
    let (tx, ty) = (thread_idx_x() as i32, thread_idx_y() as i32);
    let (iteration, grid_cols, grid_rows) = (iteration as i32, grid_cols as i32, grid_rows as i32);

    let step_div_cap = step / cap;
    let (rx_1, ry_1, rz_1) = (1.0 / rx, 1.0 / ry, 1.0 / rz);

    let small_block_rows = B - iteration * 2;
    let small_block_cols = B - iteration * 2;
    let blk_y = small_block_rows * by - border_rows as i32;
    let blk_x = small_block_cols * bx - border_cols as i32;
    let blk_y_max = blk_y + B - 1;
    let blk_x_max = blk_x + B - 1;
    let yidx = blk_y + ty;
    let xidx = blk_x + tx;
    let index = grid_cols * yidx + xidx;

    if in_range(yidx, 0, grid_rows - 1) && in_range(xidx, 0, grid_cols - 1) {
        temp_on_cuda.write(cell(ty, tx), *temp_src.add(index as usize));
        power_on_cuda.write(cell(ty, tx), *power.add(index as usize));
    }
    sync_threads();

    // The tile's cells inside the chip.
    let valid_y_min = if blk_y < 0 { -blk_y } else { 0 };
    let valid_y_max = if blk_y_max > grid_rows - 1 {
        B - 1 - (blk_y_max - grid_rows + 1)
    } else {
        B - 1
    };
    let valid_x_min = if blk_x < 0 { -blk_x } else { 0 };
    let valid_x_max = if blk_x_max > grid_cols - 1 {
        B - 1 - (blk_x_max - grid_cols + 1)
    } else {
        B - 1
    };

    let n = (ty - 1).max(valid_y_min);
    let s = (ty + 1).min(valid_y_max);
    let w = (tx - 1).max(valid_x_min);
    let e = (tx + 1).min(valid_x_max);

    let mut computed = false;
    let mut i = 0;
    while i < iteration {
        computed = false;
        if in_range(tx, i + 1, B - i - 2)
            && in_range(ty, i + 1, B - i - 2)
            && in_range(tx, valid_x_min, valid_x_max)
            && in_range(ty, valid_y_min, valid_y_max)
        {
            computed = true;
            let t = temp_on_cuda.read(cell(ty, tx));
            let north_south = temp_on_cuda.read(cell(s, tx)) + temp_on_cuda.read(cell(n, tx));
            let east_west = temp_on_cuda.read(cell(ty, e)) + temp_on_cuda.read(cell(ty, w));
            let t64 = f64::from(t);
            let flux = f64::from(power_on_cuda.read(cell(ty, tx)))
                + (f64::from(north_south) - 2.0 * t64) * f64::from(ry_1)
                + (f64::from(east_west) - 2.0 * t64) * f64::from(rx_1)
                + f64::from((AMB_TEMP - t) * rz_1);
            temp_t.write(cell(ty, tx), (t64 + f64::from(step_div_cap) * flux) as f32);
        }
        sync_threads();
        if i == iteration - 1 {
            break;
        }
        if computed {
            temp_on_cuda.write(cell(ty, tx), temp_t.read(cell(ty, tx)));
        }
        sync_threads();
        i += 1;
    }

    // After the last step only the small block's cells are `computed`.
    if computed {
        *temp_dst.add(index as usize) = temp_t.read(cell(ty, tx));
    }
}
