//! Parboil `spmv`: sparse matrix times vector in the JDS format, `spmv_jds`.
//!
//! Source: Parboil 2.5, `benchmarks/spmv/src/cuda/jds_kernels.cu`, launch
//! from `main.cu` and `gpu_info.cc` (mirror: github `yuhc/gpu-parboil`).
//! The host launches it once per iteration, on the same data.
//!
//! The original keeps two tables in `__constant__` memory (`jds_ptr_int`,
//! the start of each jagged diagonal, and `sh_zcnt_int`, each warp's
//! diagonal count), read warp-uniformly through the constant cache. The
//! port passes them as pointers, read from global memory (through L1): at
//! the suite's size the warps' counts are 512 KiB, over a module's 64 KiB
//! of constant memory (`constant_table!`, docs/PORTS.md).

use clustered_device::clustered;
use clustered_device::thread::{block_dim_x, block_idx_x, thread_idx_x};

/// `log2` of the warp size (Parboil's `WARP_BITS`).
pub const WARP_BITS: u32 = 5;

/// `dst_vector[perm[r]] = sum over k < sh_zcnt[r / 32] of
/// data[jds_ptr[k] + r] * x_vec[index[jds_ptr[k] + r]]` for each row `r <
/// dim` of the JDS matrix (rows sorted by length, `perm` their original
/// order, diagonal `k` stored contiguously from `jds_ptr[k]`, padded with
/// zeros to whole warps), summed in `k` order as `sum += d * t` (no FMA),
/// with the original's software pipelining (the loads of step `k` issued
/// before the product of step `k - 2`). Column indices are `u32` (the
/// original's `int`, never negative); `nzcnt` is unused (as in the
/// original).
///
/// Launch (Parboil's `compute_active_thread`, 32 rows per warp): with `w =
/// ceil(dim / 32)` warps, block 192 and grid `ceil(32 w / 192)` when `32 w`
/// exceeds `1536` threads per SM times the SMs, else block 32 and grid `w`.
///
/// Sharing: data-related: every block gathers from `x_vec` at the columns
/// of its rows (random here), and reads the same `jds_ptr` entries.
///
/// Variants: `_redirect`, `_stride` (grid-stride), `_agents`,
/// `_agents_throttled` (4 active agents per SM: fewer rows' lines of
/// `x_vec` competing for L1).
///
/// # Safety
/// The JDS arrays are consistent (every diagonal that a row's warp reads
/// holds that row), `x_vec` holds every column index; the launch is the one
/// above.
#[clustered(auto)]
#[clustered(name = spmv_jds_redirect, binding = redirect)]
#[clustered(name = spmv_jds_stride, binding = stride)]
#[clustered(name = spmv_jds_agents, binding = agents)]
#[clustered(name = spmv_jds_agents_throttled, binding = agents, active = 4)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn spmv_jds(
    dst_vector: *mut f32,
    d_data: *const f32,
    d_index: *const u32,
    d_perm: *const u32,
    x_vec: *const f32,
    _d_nzcnt: *const u32,
    dim: u32,
    jds_ptr_int: *const u32,
    sh_zcnt_int: *const u32,
) {
    let ix = block_idx_x() * block_dim_x() + thread_idx_x();
    let warp_id = ix >> WARP_BITS;
    if ix < dim {
        let mut sum = 0.0f32;
        let bound = *sh_zcnt_int.add(warp_id as usize);
        // Prefetch diagonal 0.
        let mut j = *jds_ptr_int + ix;
        let mut d = *d_data.add(j as usize);
        let mut i = *d_index.add(j as usize);
        let mut t = *x_vec.add(i as usize);
        if bound > 1 {
            // Prefetch diagonal 1.
            j = *jds_ptr_int.add(1) + ix;
            i = *d_index.add(j as usize);
            for k in 2..bound {
                // Diagonal k - 1's value, diagonal k's column.
                let dn = *d_data.add(j as usize);
                j = *jds_ptr_int.add(k as usize) + ix;
                let in_ = *d_index.add(j as usize);
                let tn = *x_vec.add(i as usize);
                // Diagonal k - 2's product.
                sum += d * t;
                i = in_;
                d = dn;
                t = tn;
            }
            // The last diagonal's value.
            let dn = *d_data.add(j as usize);
            let tn = *x_vec.add(i as usize);
            sum += d * t;
            d = dn;
            t = tn;
        }
        sum += d * t;
        *dst_vector.add(*d_perm.add(ix as usize) as usize) = sum;
    }
}
