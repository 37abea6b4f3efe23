use clustered_device::cpu::Host;
use clustered_device::entry::KernelFn;
use clustered_device::kernel;

#[kernel]
pub unsafe fn add(a: *const f32, c: *mut f32, n: u32) {
    let _ = (a, c, n);
}

fn main() {
    let a = [0u32; 4];
    let mut c = [0f32; 4];
    // A buffer of u32 for a `*const f32`, and an f32 for `n: u32`.
    let _: <add as KernelFn>::Args<'_, Host> = (&a[..], &mut c[..], 4.0f32);
}
