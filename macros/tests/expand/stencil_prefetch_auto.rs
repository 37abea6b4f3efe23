use clustered_device::clustered;
use clustered_device::thread::index_2d;

/// A 5-point stencil whose grid-stride loop prefetches, through the hook the
/// macro writes, the next task's loads: one prefetch for `c`, `n`, `s`, `e`
/// and `w` (same positional part), none for `weights` (it does not move
/// with the CTA).
#[clustered(name = stencil_stride_prefetch, binding = stride, prefetch = auto)]
pub unsafe fn stencil(input: *const f32, weights: *const f32, output: *mut f32, width: u32, height: u32) {
    let (x, y) = index_2d();
    if x > 0 && y > 0 && x + 1 < width && y + 1 < height {
        let at = y * width + x;
        let sum = *input.add(at as usize)
            + *input.add((at - width) as usize)
            + *input.add((at + width) as usize)
            + *input.add((at + 1) as usize)
            + *input.add((at - 1) as usize);
        *output.add(at as usize) = *weights * sum;
    }
}
