use clustered_device::clustered;
use clustered_device::thread::index_1d;

// Pointers bound by a tuple pattern and stepped in a loop are still global:
// their loads go through `memory::load` (the simulator sees them).
#[clustered(name = dot_rows_stride, binding = stride)]
pub unsafe fn dot_rows(a: *const f32, b: *const f32, out: *mut f32, n: u32) {
    let row = index_1d();
    let (mut a_k, mut b_k) = (a.add((row * n) as usize), b);
    let mut sum = 0.0;
    for _ in 0..n {
        sum += *a_k * *b_k;
        a_k = a_k.add(1);
        b_k = b_k.add(1);
    }
    *out.add(row as usize) = sum;
}
