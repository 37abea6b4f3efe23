use clustered_device::cpu::Host;
use clustered_device::entry::KernelFn;
use clustered_device::kernel;

#[kernel]
pub unsafe fn add(a: *const f32, c: *mut f32, n: u32) {
    let _ = (a, c, n);
}

fn main() {
    let a = [0f32; 4];
    let c = [0f32; 4];
    // `c` is written by the kernel: it takes `&mut [f32]`.
    let _: <add as KernelFn>::Args<'_, Host> = (&a[..], &c[..], 4);
}
