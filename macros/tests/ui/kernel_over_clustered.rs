use clustered_macros::kernel;

#[kernel]
#[clustered_macros::clustered(chunk = 4)]
pub unsafe fn scale(x: *mut f32, n: u32) {
    let _ = (x, n);
}

fn main() {}
