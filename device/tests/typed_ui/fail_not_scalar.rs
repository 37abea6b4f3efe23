use clustered_device::kernel;

pub struct Params {
    pub n: u32,
}

// A by-value parameter must be a `Scalar` (same bytes on host and device).
#[kernel]
pub unsafe fn add(c: *mut f32, params: Params) {
    let _ = (c, params);
}

fn main() {}
