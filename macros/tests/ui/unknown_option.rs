use clustered_macros::clustered;

#[clustered(binding = agents, workers = 4, chunk = 2)]
pub unsafe fn scale(x: *mut f32, n: u32) {
    let _ = (x, n);
}

fn main() {}
