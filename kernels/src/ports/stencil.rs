//! Parboil `stencil`: the 7-point 3D Jacobi step `block2D_hybrid_coarsen_x`.
//!
//! Source: Parboil 2.5, `benchmarks/stencil/src/cuda/kernels.cu` and
//! `main.cu` (mirror: github `yuhc/gpu-parboil`). One launch of the host's
//! loop, which launches it once per iteration, swapping the two grids.

use clustered_device::clustered;
use clustered_device::index::at3;
use clustered_device::shared::dynamic_shared_memory;
use clustered_device::thread::{
    block_dim_x, block_dim_y, block_idx_x, block_idx_y, sync_threads, thread_idx_x, thread_idx_y,
};

/// Block width (Parboil's `tx`); each thread computes two columns.
pub const STENCIL_TX: u32 = 32;
/// Block height (Parboil's `ty`).
pub const STENCIL_TY: u32 = 4;
/// Dynamic shared memory per block: one `2 tx x ty` plane of floats
/// (Parboil's `sh_size`).
pub const STENCIL_SHARED_BYTES: u32 = 2 * STENCIL_TX * STENCIL_TY * 4;

/// `next[i][j][k] = (a[k+1] + a[k-1] + a[j+1] + a[j-1] + a[i+1] + a[i-1]) *
/// c1 - a[i][j][k] * c0` at every interior point of the x-fastest `nx x ny x
/// nz` grid `a0` (summed in that order, no FMA); other points of `anext`
/// are left as they are (the host copies `a0` into it first).
///
/// Thread `(tx, ty)` of block `(bx, by)` owns the columns `i = 2 tx bx +
/// tx` and `i2 = i + tx_dim` of row `j = ty_dim by + ty` and walks them up
/// through `k`, the current plane in shared memory (the block's halo from
/// global memory), the planes below and above in registers.
///
/// Launch: block `32 x 4`, grid `ceil(nx / 64) x ceil(ny / 4)`, 1 KB of
/// dynamic shared memory.
///
/// Sharing: neighbouring blocks read each other's edge rows (y) and edge
/// columns (x) of every plane.
///
/// Variants: `_redirect_rows`, `_redirect_columns` (the paper's
/// redirection, Y- and X-partitioning), `_raster2` (`tile(1, 2)`: two blocks
/// stacked over shared halo rows back to back), `_stride` (grid-stride),
/// `_agents`.
///
/// # Safety
/// `a0` and `anext` hold `nx * ny * nz` floats (`< 2^32`), `nx, ny, nz >=
/// 2`; the launch is the one above.
#[clustered(auto)]
#[clustered(name = parboil_stencil_redirect_rows, binding = redirect, indexing = row_major)]
#[clustered(name = parboil_stencil_redirect_columns, binding = redirect, indexing = column_major)]
#[clustered(name = parboil_stencil_raster2, binding = reorder, indexing = tile(1, 2))]
#[clustered(name = parboil_stencil_stride, binding = stride)]
#[clustered(name = parboil_stencil_agents, binding = agents)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn parboil_stencil(
    c0: f32,
    c1: f32,
    a0: *const f32,
    anext: *mut f32,
    nx: u32,
    ny: u32,
    nz: u32,
) {
    let (tx, ty) = (thread_idx_x(), thread_idx_y());
    let (dim_x, dim_y) = (block_dim_x(), block_dim_y());
    // Thread coarsening along x: two columns per thread.
    let i = block_idx_x() * dim_x * 2 + tx;
    let i2 = block_idx_x() * dim_x * 2 + tx + dim_x;
    let j = block_idx_y() * dim_y + ty;
    let sh_id = tx + ty * dim_x * 2;
    let sh_id2 = tx + dim_x + ty * dim_x * 2;
    // Parboil's `Index3D(nx, ny, i, j, k)`: `i + nx * (j + ny * k)`.
    let index = |i: u32, j: u32, k: u32| at3(k, ny, j, nx, i);

    let sh_a0 = dynamic_shared_memory::<f32>();
    sh_a0.write(sh_id, 0.0);
    sh_a0.write(sh_id2, 0.0);
    sync_threads();

    // Where this thread writes.
    let w_region = i > 0 && j > 0 && i < nx - 1 && j < ny - 1;
    let w_region2 = j > 0 && i2 < nx - 1 && j < ny - 1;
    let x_l_bound = tx == 0;
    let x_h_bound = tx + dim_x == dim_x * 2 - 1;
    let y_l_bound = ty == 0;
    let y_h_bound = ty == dim_y - 1;

    // The planes below and above, in registers (two columns each).
    let (mut bottom, mut bottom2, mut top, mut top2) = (0.0f32, 0.0f32, 0.0f32, 0.0f32);
    if i < nx && j < ny {
        bottom = *a0.add(index(i, j, 0));
        sh_a0.write(sh_id, *a0.add(index(i, j, 1)));
    }
    if i2 < nx && j < ny {
        bottom2 = *a0.add(index(i2, j, 0));
        sh_a0.write(sh_id2, *a0.add(index(i2, j, 1)));
    }
    sync_threads();

    for k in 1..nz - 1 {
        if i < nx && j < ny {
            top = *a0.add(index(i, j, k + 1));
        }
        if w_region {
            let a_up = if y_h_bound {
                *a0.add(index(i, j + 1, k))
            } else {
                sh_a0.read(sh_id + 2 * dim_x)
            };
            let a_down = if y_l_bound {
                *a0.add(index(i, j - 1, k))
            } else {
                sh_a0.read(sh_id - 2 * dim_x)
            };
            let a_left = if x_l_bound {
                *a0.add(index(i - 1, j, k))
            } else {
                sh_a0.read(sh_id - 1)
            };
            *anext.add(index(i, j, k)) =
                (top + bottom + a_up + a_down + sh_a0.read(sh_id + 1) + a_left) * c1
                    - sh_a0.read(sh_id) * c0;
        }

        if i2 < nx && j < ny {
            top2 = *a0.add(index(i2, j, k + 1));
        }
        if w_region2 {
            let a_up = if y_h_bound {
                *a0.add(index(i2, j + 1, k))
            } else {
                sh_a0.read(sh_id2 + 2 * dim_x)
            };
            let a_down = if y_l_bound {
                *a0.add(index(i2, j - 1, k))
            } else {
                sh_a0.read(sh_id2 - 2 * dim_x)
            };
            let a_right = if x_h_bound {
                *a0.add(index(i2 + 1, j, k))
            } else {
                sh_a0.read(sh_id2 + 1)
            };
            *anext.add(index(i2, j, k)) =
                (top2 + bottom2 + a_up + a_down + a_right + sh_a0.read(sh_id2 - 1)) * c1
                    - sh_a0.read(sh_id2) * c0;
        }

        // Move up one plane.
        sync_threads();
        bottom = sh_a0.read(sh_id);
        sh_a0.write(sh_id, top);
        bottom2 = sh_a0.read(sh_id2);
        sh_a0.write(sh_id2, top2);
        sync_threads();
    }
}
