//! One sweep of a 7-point Jacobi stencil on a 3D grid.

use clustered_device::memory::{unstepped, F32x4};
use clustered_device::thread::{block_dim_z, block_idx_z, index_2d, thread_idx_z};
use clustered_device::{clustered, launch_bounds};

/// `output = c1 * (z+ + z- + y+ + y- + x+ + x-) - c0 * centre` at every
/// interior point of a `nx x ny x nz` grid stored x-fastest
/// (`index = (z * ny + y) * nx + x`; the six neighbours summed in that
/// order, Parboil's stencil); border points are copied.
/// `nx * ny * nz < 2^32`.
///
/// Launch: block `32 x 8 x 1`, grid `(ceil(nx / 32), ceil(ny / 8), nz)` (a 3D
/// grid, `nz <= 65535`); one point per thread. `32 x 8` for the reasons of
/// [`jacobi5`](crate::jacobi5::jacobi5). Sized to exceed the L2 (50 MB on
/// an H100): `512 x 512 x 512` is 512 MiB per grid, while the three planes
/// one z-plane of CTAs touches (3 MiB) stay in L2 in the hardware's order.
///
/// Sharing: CTAs at the same `(x, y)` in neighbouring z-planes share a plane
/// each way; in a plane as for the 5-point sweep. Row- and column-major
/// orders both go plane by plane (`v = (z * Gy + y) * Gx + x`, resp.
/// `(z * Gx + x) * Gy + y`).
///
/// Variants:
/// - `_redirect_rows`, `_redirect_columns`: the paper's redirection, Y- and
///   X-partitioning within each plane.
/// - `_agents`: persistent agents, ACTIVE = MAX.
/// - `_agents_chunked`: agents claiming 8 CTAs at a time in row order.
/// - `_agents_chunked_throttled`: the same with 4 active agents per SM.
/// - `_persistent`, `_persistent4`: persistent CTAs claiming chunks of 8 or 4
///   in row order from one queue.
/// - `_stride`: persistent CTAs in a grid-stride loop; `_stride_waves4` in
///   4 waves of blocks (blocks finishing early are replaced).
#[clustered(auto)]
#[clustered(name = jacobi7_3d_redirect_rows, binding = redirect, indexing = row_major)]
#[clustered(name = jacobi7_3d_redirect_columns, binding = redirect, indexing = column_major)]
#[clustered(name = jacobi7_3d_persistent, binding = persistent, chunk = 8)]
#[clustered(name = jacobi7_3d_persistent4, binding = persistent, chunk = 4)]
#[clustered(name = jacobi7_3d_stride, binding = stride)]
#[clustered(name = jacobi7_3d_stride_waves4, binding = stride, waves = 4)]
#[clustered(name = jacobi7_3d_agents, binding = agents)]
#[clustered(name = jacobi7_3d_agents_chunked, binding = agents, chunk = 8)]
#[clustered(name = jacobi7_3d_agents_chunked_throttled, binding = agents, chunk = 8, active = 4)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn jacobi7_3d(
    input: *const f32,
    output: *mut f32,
    nx: u32,
    ny: u32,
    nz: u32,
    c0: f32,
    c1: f32,
) {
    let (x, y) = index_2d();
    let z = block_idx_z() * block_dim_z() + thread_idx_z();
    if x < nx && y < ny && z < nz {
        let plane = nx * ny;
        let at = (z * ny + y) * nx + x;
        // `|`, not `||`: six short-circuits were past LLVM's speculation
        // budget, so it branched on them and loaded the centre on two paths
        // (88 SASS instructions, nvcc 80); as one predicate, nvcc's code.
        // H200 (docs/BENCHMARKS.md): Rust/nvcc 1.032 -> 1.012-1.029 (the twin moves).
        let border = (x == 0) | (y == 0) | (z == 0) | (x == nx - 1) | (y == ny - 1) | (z == nz - 1);
        let centre = *input.add(at as usize);
        let value = if border {
            centre
        } else {
            let z_up = *input.add((at + plane) as usize);
            let z_down = *input.add((at - plane) as usize);
            let y_up = *input.add((at + nx) as usize);
            let y_down = *input.add((at - nx) as usize);
            let x_up = *input.add((at + 1) as usize);
            let x_down = *input.add((at - 1) as usize);
            c1 * (z_up + z_down + y_up + y_down + x_up + x_down) - c0 * centre
        };
        *output.add(at as usize) = value;
    }
}

/// The sweep of [`jacobi7_3d`](fn@jacobi7_3d), the same values bit for bit,
/// written as CUDA programmers write a 3D stencil: each thread walks
/// `planes` z-planes at its `(x, y)`, keeping the points below, at
/// and above it in registers, so each point is loaded once as a z-neighbour
/// instead of three times; the four in-plane neighbours are its block's own
/// loads of the plane, from L1. The paper's kernel loads all seven per
/// point and leaves the planes' reuse to L2.
///
/// Launch: block `32 x 8 x 1`, grid `(ceil(nx / 32), ceil(ny / 8),
/// ceil(nz / planes))`, `planes >= 1` (32 at the benchmark's size: 16 walks
/// per column of a 512^3 grid, 16384 blocks). Pointers step by a plane
/// (`usize` arithmetic): no index is rebuilt per plane.
///
/// Sharing: as for [`jacobi7_3d`](fn@jacobi7_3d), along z now within a
/// thread; neighbouring `(x, y)` blocks share their edge rows and columns.
#[clustered(auto)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn jacobi7_3d_march(
    input: *const f32,
    output: *mut f32,
    nx: u32,
    ny: u32,
    nz: u32,
    c0: f32,
    c1: f32,
    planes: u32,
) {
    let (x, y) = index_2d();
    let z0 = block_idx_z() * planes;
    if x < nx && y < ny && z0 < nz {
        let z_end = z0.saturating_add(planes).min(nz);
        let (row, plane) = (nx as usize, nx as usize * ny as usize);
        // As in the paper's kernel: one predicate, no short-circuits.
        let edge = (x == 0) | (y == 0) | (x == nx - 1) | (y == ny - 1);
        let first = (z0 as usize * ny as usize + y as usize) * row + x as usize;
        let (mut from, mut to) = (input.add(first), output.add(first));
        let mut below = if z0 > 0 { *from.sub(plane) } else { 0.0 };
        let mut centre = *from;
        // The z borders are copied: the first plane of the grid before the
        // walk, the last after it, so the walk's body tests only `edge`.
        let mut z = z0;
        if z == 0 {
            *to = centre;
            below = centre;
            centre = if nz > 1 { *from.add(plane) } else { 0.0 };
            (from, to, z) = (from.add(plane), to.add(plane), 1);
        }
        let walk_end = if z_end == nz { nz - 1 } else { z_end };
        // Inside the walk `0 < z < nz - 1`, so every neighbour is inside
        // the grid even at an x or y edge (it wraps to the next row or
        // plane): all are loaded, and the edge only selects the value. A
        // branch around the loads kept LLVM's loop from issuing them
        // together (nvcc predicates them): 10% slower than the twin.
        // The walk steps one offset, hidden from LLVM each step
        // (`unstepped`): stepping the pointers, its strength reduction kept
        // a pointer per neighbour live across the loop, and ptxas, at 32
        // registers, issued a step's x-neighbour loads only after its first
        // load returned (H200: 1.04x the twin's time, now 1.00x; the
        // grid-stride loop 0.75x the kernel's, now 1.00x: docs/BENCHMARKS.md,
        // "The walk's pointers, stepped by one offset"). The other walks
        // did not gain from it (same section).
        let mut walked = 0usize;
        while z < walk_end {
            let step = unstepped(walked);
            let (from, to) = (from.add(step), to.add(step));
            let above = *from.add(plane);
            let y_up = *from.add(row);
            let y_down = *from.sub(row);
            let x_up = *from.add(1);
            let x_down = *from.sub(1);
            let value = c1 * (above + below + y_up + y_down + x_up + x_down) - c0 * centre;
            *to = if edge { centre } else { value };
            below = centre;
            centre = above;
            (walked, z) = (walked + plane, z + 1);
        }
        to = to.add(walked);
        if z < z_end {
            *to = centre;
        }
    }
}

/// `keep` if `edge`, else `value`, chosen by bits (`LOP3`), not by a
/// branch: as `if` expressions, LLVM sank the stencil's arithmetic behind
/// branches in some schedules' copies of the walk and not in the
/// baseline's, and their loops kept 6 loads in flight against its 14
/// (`tests/kernel_resources.rs`).
#[inline(always)]
fn keep_if(edge: bool, keep: f32, value: f32) -> f32 {
    let mask = 0u32.wrapping_sub(u32::from(edge));
    f32::from_bits((keep.to_bits() & mask) | (value.to_bits() & !mask))
}

/// [`jacobi7_3d_march`](fn@jacobi7_3d_march) with four x-columns per
/// thread, the same values bit for bit: the planes above and the rows
/// beside move as 16-byte accesses (CUDA's `float4`), as a CUDA programmer
/// writes a 3D stencil bound by DRAM (a float per thread keeps a quarter of
/// the bytes in flight: `kernels::jacobi5::jacobi5_march4`). Each step
/// loads the plane above, the row before and the row after as quads and
/// only the quad's outer x-neighbours as single floats; the points between
/// take theirs from the centre quad in registers. It walks two planes a
/// step, all ten loads of both before either store: a thread keeps twice
/// the bytes in flight (0.382-0.383 ms at 512^3 on an H100, 93% of a
/// copy, against 0.405-0.419 a plane a step: docs/BENCHMARKS.md).
///
/// Launch: block `32 x 8 x 1`, grid `(ceil(nx / 128), ceil(ny / 8),
/// ceil(nz / planes))`, `planes >= 1`; `nx` a multiple of 4 and both
/// buffers 16-byte aligned (device allocations are).
///
/// Launch bounds of four such blocks an SM, the occupancy its registers
/// give it anyway: told the block's size, ptxas spends the registers up to
/// that occupancy's 64 on issuing a step's ten loads before it reads one
/// (62 registers); not told, it stopped at 56 and issued two of them after
/// the first returned: 0.294-0.296 ms on an H200, 0.280-0.284 with the
/// bounds, 1.006-1.007x its nvcc twin under the same bounds
/// (docs/BENCHMARKS.md, "Launch bounds at the occupancy a kernel has").
#[launch_bounds(max_threads = 256, min_blocks_per_sm = 4)]
#[clustered(auto)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn jacobi7_3d_march4(
    input: *const f32,
    output: *mut f32,
    nx: u32,
    ny: u32,
    nz: u32,
    c0: f32,
    c1: f32,
    planes: u32,
) {
    let (x, y) = index_2d();
    let x = x * 4;
    let z0 = block_idx_z() * planes;
    if x < nx && y < ny && z0 < nz {
        let z_end = z0.saturating_add(planes).min(nz);
        let (row, plane) = (nx as usize, nx as usize * ny as usize);
        // The grid's border points are copied: a whole quad on the first
        // and last rows, its outer points on the first and last columns.
        let edge_row = (y == 0) | (y == ny - 1);
        let first_point_edge = edge_row | (x == 0);
        let last_point_edge = edge_row | (x + 4 == nx);
        let first = (z0 as usize * ny as usize + y as usize) * row + x as usize;
        let (mut from, mut to) = (input.add(first), output.add(first));
        let mut below = if z0 > 0 {
            (*from.sub(plane).cast::<F32x4>()).0
        } else {
            [0.0; 4]
        };
        let mut centre = (*from.cast::<F32x4>()).0;
        // The z borders are copied outside the walk, as in jacobi7_3d_march.
        let mut z = z0;
        if z == 0 {
            *to.cast::<F32x4>() = F32x4(centre);
            below = centre;
            centre = if nz > 1 {
                (*from.add(plane).cast::<F32x4>()).0
            } else {
                [0.0; 4]
            };
            (from, to, z) = (from.add(plane), to.add(plane), 1);
        }
        let walk_end = if z_end == nz { nz - 1 } else { z_end };
        // Inside the walk every neighbour is inside the grid even at an x
        // or y edge (it wraps to the next row or plane): all are loaded,
        // and the edges select.
        let quad = |below: [f32; 4],
                    centre: [f32; 4],
                    above: [f32; 4],
                    y_up: [f32; 4],
                    y_down: [f32; 4],
                    x_up: f32,
                    x_down: f32| {
            let [c_0, c_1, c_2, c_3] = centre;
            let point = |k: usize, x_up: f32, x_down: f32| {
                c1 * (above[k] + below[k] + y_up[k] + y_down[k] + x_up + x_down) - c0 * centre[k]
            };
            [
                keep_if(first_point_edge, c_0, point(0, c_1, x_down)),
                keep_if(edge_row, c_1, point(1, c_2, c_0)),
                keep_if(edge_row, c_2, point(2, c_3, c_1)),
                keep_if(last_point_edge, c_3, point(3, x_up, c_2)),
            ]
        };
        // Two planes a step, all ten loads of both before either store:
        // the stores may alias the loads as far as the compilers know, so
        // neither moves the next plane's loads above this plane's store
        // (nvcc's unrolled loop keeps them apart too); written out, a
        // thread has twice the bytes in flight.
        while z + 1 < walk_end {
            let above = (*from.add(plane).cast::<F32x4>()).0;
            let y_up = (*from.add(row).cast::<F32x4>()).0;
            let y_down = (*from.sub(row).cast::<F32x4>()).0;
            let x_up = *from.add(4);
            let x_down = *from.sub(1);
            let next = from.add(plane);
            let above_next = (*next.add(plane).cast::<F32x4>()).0;
            let y_up_next = (*next.add(row).cast::<F32x4>()).0;
            let y_down_next = (*next.sub(row).cast::<F32x4>()).0;
            let x_up_next = *next.add(4);
            let x_down_next = *next.sub(1);
            let value = quad(below, centre, above, y_up, y_down, x_up, x_down);
            *to.cast::<F32x4>() = F32x4(value);
            let value = quad(
                centre,
                above,
                above_next,
                y_up_next,
                y_down_next,
                x_up_next,
                x_down_next,
            );
            *to.add(plane).cast::<F32x4>() = F32x4(value);
            below = above;
            centre = above_next;
            (from, to, z) = (from.add(2 * plane), to.add(2 * plane), z + 2);
        }
        if z < walk_end {
            let above = (*from.add(plane).cast::<F32x4>()).0;
            let y_up = (*from.add(row).cast::<F32x4>()).0;
            let y_down = (*from.sub(row).cast::<F32x4>()).0;
            let x_up = *from.add(4);
            let x_down = *from.sub(1);
            let value = quad(below, centre, above, y_up, y_down, x_up, x_down);
            *to.cast::<F32x4>() = F32x4(value);
            centre = above;
            (to, z) = (to.add(plane), z + 1);
        }
        if z < z_end {
            *to.cast::<F32x4>() = F32x4(centre);
        }
    }
}
