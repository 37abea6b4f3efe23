use clustered_macros::clustered;

#[clustered(binding = redirect, active = 2)]
pub unsafe fn scale(x: *mut f32, n: u32) {
    let _ = (x, n);
}

fn main() {}
