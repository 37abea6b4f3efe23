use clustered_device::clustered;

#[clustered(name = schedule, binding = agents)]
pub unsafe fn scale(x: *mut f32) {
    let _ = x;
}

fn main() {}
