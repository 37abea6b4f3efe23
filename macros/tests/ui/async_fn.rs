use clustered_macros::clustered;

#[clustered]
pub async unsafe fn scale(x: *mut f32, n: u32) {
    let _ = (x, n);
}

fn main() {}
