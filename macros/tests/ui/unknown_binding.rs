use clustered_macros::clustered;

#[clustered(binding = pinned)]
pub unsafe fn scale(x: *mut f32, n: u32) {
    let _ = (x, n);
}

fn main() {}
