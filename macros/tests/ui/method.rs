use clustered_macros::kernel;

pub struct Scaler;

// A kernel is a free function: in an `impl` block the attributes cannot
// see where they are, so their expansion makes rustc say where the kernel
// must go, at its name.
impl Scaler {
    #[kernel]
    pub unsafe fn scale(x: *mut f32, n: u32) {
        let _ = (x, n);
    }
}

fn main() {}
