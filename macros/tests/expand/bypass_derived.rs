use clustered_device::clustered;
use clustered_device::thread::index_1d;

/// Loads through a pointer made from a bypassed parameter skip L1 too.
#[clustered(name = row_sums_redirect, binding = redirect, bypass(a))]
pub unsafe fn row_sums(a: *const f32, sums: *mut f32, width: u32) {
    let row = a.add((index_1d() * width) as usize);
    let mut sum = 0.0;
    for x in 0..width as usize {
        sum += *row.add(x);
    }
    *sums.add(index_1d() as usize) = sum;
}
