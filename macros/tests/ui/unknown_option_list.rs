use clustered_macros::clustered;

// The list after an unknown option is skipped, and the options after it are
// still checked: `chunk = 0` is reported too.
#[clustered(threads(4, 2), chunk = 0)]
pub unsafe fn scale(x: *mut f32, n: u32) {
    let _ = (x, n);
}

fn main() {}
