use clustered_macros::clustered;

#[clustered(name = scale_fast, binding = reorder)]
#[clustered(name = scale_fast, binding = agents, chunk = 4)]
pub unsafe fn scale(x: *mut f32, n: u32) {
    let _ = (x, n);
}

fn main() {}
