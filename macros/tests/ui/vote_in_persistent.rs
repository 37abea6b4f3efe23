use clustered_macros::clustered;

// Stand-ins for the device built-ins: the macro matches calls by their last
// path segment.
fn index_1d() -> u32 {
    0
}
fn sync_threads_and(predicate: bool) -> bool {
    predicate
}

// A vote is fine where a block runs one task (reorder), refused where
// threads whose task returned early stay in the block's barriers.
#[clustered(name = all_positive_reorder, binding = reorder)]
#[clustered(name = all_positive_agents, binding = agents)]
#[clustered(name = all_positive_stride, binding = stride)]
pub unsafe fn all_positive(x: *const f32, flags: *mut u32, n: u32) {
    let i = index_1d();
    if i >= n {
        return;
    }
    let all = sync_threads_and(*x.add(i as usize) > 0.0);
    *flags.add(i as usize) = all as u32;
}

fn main() {}
