use clustered_macros::clustered;

// `tail = claims` is a grid-stride loop's: not the agents'.
#[clustered(name = scale_agents, binding = agents, tail = claims)]
// `tail` takes `claims` only.
#[clustered(name = scale_stride, binding = stride, tail = 4)]
pub unsafe fn scale(x: *mut f32, n: u32) {
    let _ = (x, n);
}

fn main() {}
