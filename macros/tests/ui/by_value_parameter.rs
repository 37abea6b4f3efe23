use clustered_macros::{clustered, kernel};

#[kernel]
pub unsafe fn offset(x: *mut f32, by: (u32, u32), f: fn(u32) -> u32) {
    let _ = (x, by, f);
}

#[clustered]
pub unsafe fn rows(x: *mut f32, shape: [(u32, u32); 2]) {
    let _ = (x, shape);
}

fn main() {}
