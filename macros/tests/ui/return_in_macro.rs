use clustered_macros::clustered;

// Stand-ins for the device built-ins: the macro matches calls by their last
// path segment.
fn index_1d() -> u32 {
    0
}
fn sync_threads() {}

// A `return` the macro cannot see: in a persistent schedule whose body
// waits at barriers it would skip the task's end, so it does not compile
// there. The reorder schedule runs one task a block and keeps it.
macro_rules! leave {
    () => {
        return
    };
}

#[clustered(name = halves_reorder, binding = reorder)]
#[clustered(name = halves_stride, binding = stride)]
pub unsafe fn halves(x: *mut f32, n: u32) {
    let i = index_1d();
    if i >= n {
        leave!();
    }
    sync_threads();
    *x.add(i as usize) *= 0.5;
}

fn main() {}
