use clustered_device::clustered;
use clustered_device::thread::index_1d;

/// `c[i] = a[i] + b[i]` for `i < n`: agents claim 8 tasks at a time, and the
/// loads of `a` and `b` skip L1.
#[clustered(name = vector_add_agents, binding = agents, chunk = 8, bypass(a, b))]
pub unsafe fn vector_add(a: *const f32, b: *const f32, c: *mut f32, n: u32) {
    let i = index_1d();
    if i < n {
        let i = i as usize;
        *c.add(i) = *a.add(i) + *b.add(i);
    }
}
