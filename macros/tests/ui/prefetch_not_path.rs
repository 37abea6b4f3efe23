use clustered_macros::clustered;

#[clustered(chunk = 4, prefetch = 3)]
pub unsafe fn scale(x: *mut f32, n: u32) {
    let _ = (x, n);
}

fn main() {}
