use clustered_macros::{kernel, task_pool};

/// Fits a payload: a task.
#[kernel]
pub unsafe fn scale(x: *mut f32, n: u32) {
    let _ = (x, n);
}

/// Nine pointers: 72 bytes, more than a task's 64-byte payload.
#[kernel]
pub unsafe fn nine(
    a: *const f32,
    b: *const f32,
    c: *const f32,
    d: *const f32,
    e: *const f32,
    f: *const f32,
    g: *const f32,
    h: *const f32,
    out: *mut f32,
) {
    let _ = (a, b, c, d, e, f, g, h, out);
}

// A kernel that does not exist and one whose arguments do not fit are
// reported where they are listed, once each.
task_pool!(pub unsafe fn pool = [scale, missing, nine]);

fn main() {}
