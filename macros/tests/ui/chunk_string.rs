use clustered_macros::clustered;

#[clustered(chunk = "8")]
pub unsafe fn scale(x: *mut f32, n: u32) {
    let _ = (x, n);
}

fn main() {}
