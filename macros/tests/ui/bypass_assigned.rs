use clustered_macros::clustered;

fn index_1d() -> u32 {
    0
}

// `*b.add(i) = ..` also fails to compile on its own (`b` is `*const`); the
// macro says which option to change.
#[clustered(bypass(b))]
pub unsafe fn copy(a: *mut f32, b: *const f32, n: u32) {
    let i = index_1d();
    if i < n {
        *b.add(i as usize) = *a.add(i as usize);
    }
}

fn main() {}
