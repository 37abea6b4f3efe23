use clustered_device::pool::Task;
use clustered_macros::{kernel, task_pool};

#[kernel]
pub unsafe fn scale(x: *mut f32, n: u32) {
    let _ = (x, n);
}

#[kernel]
pub unsafe fn shift(x: *mut u32, by: u32) {
    let _ = (x, by);
}

/// A task, but not in the pool.
#[kernel]
pub unsafe fn other(x: *mut u32) {
    let _ = x;
}

task_pool!(pub unsafe fn pool = [scale, shift]);

// The kind comes from the arguments' type: a kernel the pool does not
// serve cannot be pushed to it.
fn push() -> Task {
    pool::task(1, other_args { x: 0 })
}

fn main() {
    let _ = push();
}
