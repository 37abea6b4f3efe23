use clustered_macros::{clustered, kernel};

#[kernel]
pub unsafe fn scale(x: *mut f32, factor: impl Into<f32>) {
    let _ = (x, factor.into());
}

#[clustered]
pub unsafe fn shift(x: *mut f32, by: impl Copy) {
    let _ = (x, by);
}

fn main() {}
