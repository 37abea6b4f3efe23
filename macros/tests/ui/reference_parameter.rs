use clustered_macros::{clustered, kernel};

// Slices and references: the host passes one device pointer per parameter.
#[kernel]
pub unsafe fn sum(x: &[f32], out: &mut [f32]) {
    out[0] = x[0];
}

#[clustered]
pub unsafe fn copy(x: &f32, out: &mut f32) {
    *out = *x;
}

fn main() {}
