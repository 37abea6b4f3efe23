use clustered_device::{clustered, kernel, launch_bounds};

// Every mistake in the bounds, each at its span.
#[kernel]
#[launch_bounds(max_threads = 2048)]
pub unsafe fn too_many_threads(x: *mut f32) {
    let _ = x;
}

#[kernel]
#[launch_bounds(max_threads = 256, min_blocks_per_sm = 64)]
pub unsafe fn too_many_blocks(x: *mut f32) {
    let _ = x;
}

#[kernel]
#[launch_bounds(max_threads = 1024, min_blocks_per_sm = 4)]
pub unsafe fn more_than_an_sm(x: *mut f32) {
    let _ = x;
}

#[clustered(binding = redirect)]
#[launch_bounds(min_blocks_per_sm = 1)]
pub unsafe fn no_threads(x: *mut f32) {
    let _ = x;
}

#[kernel]
#[launch_bounds(max_threads = 256, registers = 64)]
pub unsafe fn unknown_key(x: *mut f32) {
    let _ = x;
}

#[kernel]
#[launch_bounds(max_threads = 256)]
#[launch_bounds(max_threads = 128)]
pub unsafe fn twice(x: *mut f32) {
    let _ = x;
}

// Not a kernel: the bounds would bind nothing.
#[launch_bounds(max_threads = 256)]
pub unsafe fn not_a_kernel(x: *mut f32) {
    let _ = x;
}

fn main() {}
