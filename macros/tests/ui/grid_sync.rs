use clustered_macros::clustered;

// Stand-ins for the device built-ins: the macro matches calls by their last
// path segment.
fn index_1d() -> u32 {
    0
}
fn sync_grid() {}

#[clustered(chunk = 4)]
pub unsafe fn two_phases(x: *mut f32, n: u32) {
    let i = index_1d();
    if i < n {
        *x.add(i as usize) *= 2.0;
    }
    sync_grid();
    if i < n {
        *x.add(i as usize) += 1.0;
    }
}

fn main() {}
