use clustered_macros::clustered;

#[clustered(binding = reorder)]
pub unsafe extern "C" fn scale(x: *mut f32, n: u32) {
    let _ = (x, n);
}

fn main() {}
