use clustered_device::{kernel, launch_bounds};

// A constant the macro cannot read is checked when the bounds are
// evaluated: still a compile error, naming the rule.
const BLOCK: u32 = 4096;

#[kernel]
#[launch_bounds(max_threads = BLOCK)]
pub unsafe fn scale(x: *mut f32) {
    let _ = x;
}

fn main() {}
