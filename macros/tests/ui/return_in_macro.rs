use clustered_macros::clustered;

// Stand-ins for the device built-ins: the macro matches calls by their last
// path segment.
fn index_1d() -> u32 {
    0
}
fn sync_threads() {}

// A `return` the macro cannot see: in a persistent schedule whose body
// waits at barriers it would skip the task's end, so it does not compile
// there (one error, at the `return` and the macro call).
macro_rules! leave {
    () => {
        return
    };
}

#[clustered(name = halves_stride, binding = stride)]
#[clustered(name = halves_reorder, binding = reorder)]
pub unsafe fn halves(x: *mut f32, n: u32) {
    let i = index_1d();
    if i >= n {
        leave!();
    }
    sync_threads();
    *x.add(i as usize) *= 0.5;
}

// The same body with a block per task only (reorder, redirect) and as a
// plain kernel (its pool task support too): a returned thread exits as in
// CUDA, and it compiles.
#[clustered(name = thirds_reorder, binding = reorder)]
#[clustered(name = thirds_redirect, binding = redirect)]
pub unsafe fn thirds(x: *mut f32, n: u32) {
    let i = index_1d();
    if i >= n {
        leave!();
    }
    sync_threads();
    *x.add(i as usize) /= 3.0;
}

fn main() {}
