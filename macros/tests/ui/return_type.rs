use clustered_macros::clustered;

#[clustered]
pub unsafe fn sum(x: *const f32, n: u32) -> Option<f32> {
    let _ = (x, n);
    None
}

fn main() {}
