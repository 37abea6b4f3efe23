use clustered_macros::clustered;

#[clustered(bypass(a))]
pub unsafe fn clear(a: *const (f32, f32), n: u32) {
    let pairs = a.cast_mut();
    (*pairs.add(n as usize)).1 = 0.0;
}

fn main() {}
