use clustered_device::clustered;
use clustered_device::thread::index_1d;

/// Parameters named like the locals of the generated entry points (`v`,
/// `to_cta`): each task must still get the kernel's arguments.
#[clustered(name = shift_redirect, binding = redirect)]
#[clustered(name = shift_agents, binding = agents, chunk = 2, prefetch = touch)]
pub unsafe fn shift(v: *mut u32, to_cta: u32, n: u32) {
    let i = index_1d();
    if i < n {
        *v.add(i as usize) += to_cta;
    }
}

pub unsafe fn touch(next: clustered_device::cta::Cta, v: *mut u32, to_cta: u32, n: u32) {
    let _ = (next, v, to_cta, n);
}
