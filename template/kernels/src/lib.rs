//! The kernels: ordinary Rust, built for the GPU by `build.rs` and for the
//! host (where the CPU backend runs them) as a plain dependency.

use clustered::clustered;
use clustered::thread::index_2d;

/// `out = inᵀ` for an `n` x `n` matrix, one element per thread, in blocks of
/// 32 x 8 threads (`[x, y]` = `[column, row]` of `in`).
///
/// The function itself stays the baseline kernel; the attribute adds a
/// second kernel, `transpose_grouped`, that runs the same CTAs in a grouped
/// raster: 4 block rows at a time, so the columns of `out` that neighbouring
/// CTAs write are still in L2 when the next CTA writes beside them.
#[clustered(name = transpose_grouped, binding = reorder, indexing = tile(1, 4))]
pub unsafe fn transpose(input: *const f32, output: *mut f32, n: u32) {
    let (x, y) = index_2d();
    if x < n && y < n {
        let (x, y, n) = (x as usize, y as usize, n as usize);
        *output.add(x * n + y) = *input.add(y * n + x);
    }
}

clustered::constant_table!(
    /// One weight per row of 8: the host writes them before a launch
    /// (`Gpu::write_constant`, or `clustered::host::cpu::write_constant` on
    /// the CPU backend).
    pub WEIGHTS: [f32; 8]
);

/// `output[i] = input[i] * WEIGHTS[i / 32 % 8]`: each warp reads one weight,
/// what constant memory serves in one request.
#[clustered::kernel]
pub unsafe fn weigh(input: *const f32, output: *mut f32, n: u32) {
    let i = clustered::thread::index_1d();
    if i < n {
        *output.add(i as usize) = *input.add(i as usize) * WEIGHTS.read(i / 32 % WEIGHTS.len());
    }
}
