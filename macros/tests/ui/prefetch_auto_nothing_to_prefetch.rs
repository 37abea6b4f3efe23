use clustered_device::clustered;
use clustered_device::thread::index_1d;

// Every load is inside the loop: the next task's addresses depend on `k`,
// which the hook cannot know.
#[clustered(name = row_sums_stride, binding = stride, prefetch = auto)]
pub unsafe fn row_sums(a: *const f32, sums: *mut f32, n: u32) {
    let row = index_1d();
    let mut sum = 0.0;
    for k in 0..n {
        sum += *a.add((row * n + k) as usize);
    }
    *sums.add(row as usize) = sum;
}

fn main() {}
