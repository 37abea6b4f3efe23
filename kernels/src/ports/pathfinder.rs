//! Rodinia `pathfinder`: the dynamic-programming kernel `dynproc_kernel`.
//!
//! Source: Rodinia 3.1, `cuda/pathfinder/pathfinder.cu` (mirror: github
//! `yuhc/gpu-rodinia`). One launch of the host loop of `calc_path`, which
//! launches this kernel once per `pyramid_height` rows, swapping the two
//! result buffers.

use clustered_device::clustered;
use clustered_device::shared_array;
use clustered_device::thread::{block_idx_x, sync_threads, thread_idx_x};

/// Threads per block (Rodinia's `BLOCK_SIZE`).
pub const PATHFINDER_BLOCK: u32 = 256;
/// Halo width along one direction per row (Rodinia's `HALO`).
pub const HALO: u32 = 1;

/// Rodinia's `IN_RANGE(x, min, max)`.
#[inline(always)]
fn in_range(x: i32, min: i32, max: i32) -> bool {
    x >= min && x <= max
}

/// `iteration` rows of the minimum-cost path: `results[x]` is
/// `src[x]` advanced `iteration` rows, each row
/// `next[x] = min(prev[x-1], prev[x], prev[x+1]) + wall[(start_step + i) * cols + x]`
/// with the neighbours clamped at the edges, by pyramids in shared memory:
/// block `bx` loads the 256 columns from `small * bx - border` (`small = 256
/// - 2 * iteration`), and writes its `small` inner columns.
///
/// The original's costs are `int`; they are never negative (walls are
/// `rand() % 10`), so `u32` computes the same minima and sums.
///
/// Launch: block `256`, grid `ceil(cols / small)`, `border = iteration`,
/// `iteration >= 1`.
///
/// Sharing: neighbouring blocks overlap by `2 * iteration` columns of `src`
/// and of each wall row (the same lines).
///
/// Variants: `_redirect` (the paper's redirection), `_stride`
/// (grid-stride), `_agents`, `_agents_chunked` (8 blocks per claim).
///
/// # Safety
/// `wall` holds `(start_step + iteration) * cols` words, `src` and
/// `results` `cols`; the launch is the one above.
#[clustered(auto)]
#[clustered(name = pathfinder_redirect, binding = redirect)]
#[clustered(name = pathfinder_stride, binding = stride)]
#[clustered(name = pathfinder_agents, binding = agents)]
#[clustered(name = pathfinder_agents_chunked, binding = agents, chunk = 8)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn pathfinder(
    iteration: u32,
    wall: *const u32,
    src: *const u32,
    results: *mut u32,
    cols: u32,
    _rows: u32,
    start_step: u32,
    border: u32,
) {
    const B: i32 = PATHFINDER_BLOCK as i32;
    let prev = shared_array!(prev: [u32; PATHFINDER_BLOCK as usize]);
    let result = shared_array!(result: [u32; PATHFINDER_BLOCK as usize]);

    let bx = block_idx_x() as i32;
    let tx = thread_idx_x() as i32;
    let (iteration, cols) = (iteration as i32, cols as i32);

    let small_block_cols = B - iteration * HALO as i32 * 2;
    let blk_x = small_block_cols * bx - border as i32;
    let blk_x_max = blk_x + B - 1;
    let xidx = blk_x + tx;

    // The block's columns inside the grid.
    let valid_x_min = if blk_x < 0 { -blk_x } else { 0 };
    let valid_x_max = if blk_x_max > cols - 1 {
        B - 1 - (blk_x_max - cols + 1)
    } else {
        B - 1
    };

    let w = (tx - 1).max(valid_x_min);
    let e = (tx + 1).min(valid_x_max);
    let is_valid = in_range(tx, valid_x_min, valid_x_max);

    if in_range(xidx, 0, cols - 1) {
        prev.write(tx as u32, *src.add(xidx as usize));
    }
    sync_threads();
    let mut computed = false;
    let mut i = 0;
    while i < iteration {
        computed = false;
        if in_range(tx, i + 1, B - i - 2) && is_valid {
            computed = true;
            let left = prev.read(w as u32);
            let up = prev.read(tx as u32);
            let right = prev.read(e as u32);
            let shortest = left.min(up).min(right);
            let index = cols * (start_step as i32 + i) + xidx;
            result.write(tx as u32, shortest + *wall.add(index as usize));
        }
        sync_threads();
        if i == iteration - 1 {
            break;
        }
        if computed {
            prev.write(tx as u32, result.read(tx as u32));
        }
        sync_threads();
        i += 1;
    }

    // After the last row only the small block's columns are `computed`.
    if computed {
        *results.add(xidx as usize) = result.read(tx as u32);
    }
}
