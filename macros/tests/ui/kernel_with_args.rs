use clustered_macros::kernel;

#[kernel(foo)]
pub unsafe fn scale(x: *mut f32, n: u32) {
    let _ = (x, n);
}

fn main() {}
