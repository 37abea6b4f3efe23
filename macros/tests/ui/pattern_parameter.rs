use clustered_macros::clustered;

#[clustered]
pub unsafe fn copy(x: *mut f32, [n, m]: [u32; 2]) {
    let _ = (x, n, m);
}

fn main() {}
