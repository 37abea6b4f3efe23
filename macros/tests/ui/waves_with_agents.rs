use clustered_macros::clustered;

#[clustered(binding = agents, waves = 4)]
pub unsafe fn scale(x: *mut f32, n: u32) {
    let _ = (x, n);
}

fn main() {}
