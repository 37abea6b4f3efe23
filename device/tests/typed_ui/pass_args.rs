use clustered_device::cpu::Host;
use clustered_device::entry::KernelFn;
use clustered_device::{clustered, kernel};

#[kernel]
pub unsafe fn add(a: *const f32, c: *mut f32, n: u32) {
    let _ = (a, c, n);
}

#[clustered(name = scale_agents, binding = agents)]
pub unsafe fn scale(x: *mut f32, factor: f32) {
    let _ = (x, factor);
}

fn main() {
    let a = [0f32; 4];
    let mut c = [0f32; 4];
    let _: <add as KernelFn>::Args<'_, Host> = (&a[..], &mut c[..], 4);
    let _: <scale as KernelFn>::Args<'_, Host> = (&mut c[..], 2.0);
    assert_eq!(scale::SCHEDULES.len(), 1);
    assert_eq!(scale::scale_agents.name(), "scale_agents");
    assert!(add::SCHEDULES.is_empty());
}
