use clustered_macros::clustered;

#[clustered(indexing = hilbert)]
pub unsafe fn scale(x: *mut f32, n: u32) {
    let _ = (x, n);
}

fn main() {}
