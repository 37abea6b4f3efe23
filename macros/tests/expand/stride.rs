use clustered_device::clustered;
use clustered_device::thread::index_2d;

/// A grid-stride loop over the original 2D grid, in grouped order.
#[clustered(name = blur_stride, binding = stride, indexing = tile(1, 4))]
pub unsafe fn blur(input: *const f32, output: *mut f32, width: u32, height: u32) {
    let (x, y) = index_2d();
    if x < width && y < height {
        let at = (y * width + x) as usize;
        *output.add(at) = 0.5 * *input.add(at);
    }
}
