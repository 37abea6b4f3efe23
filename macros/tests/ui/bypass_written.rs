use clustered_macros::clustered;

fn index_1d() -> u32 {
    0
}

#[clustered(bypass(a))]
pub unsafe fn accumulate(a: *const f32, b: *const f32, n: u32) {
    let i = index_1d();
    if i < n {
        let i = i as usize;
        *a.add(i) += *b.add(i);
    }
}

fn main() {}
