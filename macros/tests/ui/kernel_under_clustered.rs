use clustered_macros::clustered;

#[clustered(chunk = 4)]
#[clustered_macros::kernel]
pub unsafe fn scale(x: *mut f32, n: u32) {
    let _ = (x, n);
}

fn main() {}
