use clustered_macros::clustered;

// Only the repetition is reported: the first `binding` counts, so `chunk`
// (which needs `binding = agents`) is not blamed as well.
#[clustered(binding = agents, chunk = 4, binding = reorder)]
pub unsafe fn scale(x: *mut f32, n: u32) {
    let _ = (x, n);
}

fn main() {}
