use clustered_macros::task_pool;

// The pool is a kernel: `unsafe fn`; each kernel is one kind: listed once.
task_pool!(pub fn pool = [scale, scale]);

fn main() {}
