use clustered_macros::clustered;

#[clustered(binding = stride, prefetch_distance = 2)]
pub unsafe fn scale(x: *mut f32, n: u32) {
    let _ = (x, n);
}

#[clustered(name = scale_agents, binding = agents, chunk = 4, prefetch = warm, prefetch_distance = 2)]
pub unsafe fn scale_too(x: *mut f32, n: u32) {
    let _ = (x, n);
}

fn main() {}
