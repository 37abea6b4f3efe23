use clustered_macros::clustered;

pub struct Scaler;

impl Scaler {
    #[clustered]
    pub unsafe fn scale(x: *mut f32, n: u32) {
        let _ = (x, n);
    }
}

fn main() {}
