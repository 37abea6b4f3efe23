use clustered_macros::clustered;

// `tail = claims` is a grid-stride loop's: not the agents'.
#[clustered(name = scale_agents, binding = agents, tail = claims)]
// `tail` takes `claims` or `blocks` only.
#[clustered(name = scale_stride, binding = stride, tail = 4)]
// Nor does `tail = blocks` apply to a reorder.
#[clustered(name = scale_reorder, binding = reorder, tail = blocks)]
pub unsafe fn scale(x: *mut f32, n: u32) {
    let _ = (x, n);
}

fn main() {}
