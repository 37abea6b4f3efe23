//! Locality-aware CTA clustering for Rust GPU kernels: one dependency for
//! the macros, the device runtime, the host and the CPU backend.
//!
//! Features: `gpu` (the host: `host`), `cpu` (the CPU backend: `host::cpu`,
//! [`device::cpu`]), `sim` (the locality simulator: `sim`). Built for
//! `nvptx64`, only the macros and the device runtime are here.
//!
//! A kernel, run on the CPU backend (feature `cpu`): the same function is a
//! PTX entry point when its crate is built for the GPU.
#![cfg_attr(
    feature = "cpu",
    doc = r#"
```
use clustered::host::cpu::{run, CpuLaunch, Machine, NoObserver};
use clustered::kernel;
use clustered::thread::index_1d;

#[kernel]
pub unsafe fn double(x: *mut f32, n: u32) {
    let i = index_1d();
    if i < n {
        *x.add(i as usize) *= 2.0;
    }
}

let mut data = vec![1.5f32; 100];
let (x, n) = (data.as_mut_ptr(), data.len() as u32);
// 4 blocks of 32 threads on 2 simulated SMs, 2 blocks resident on each.
let launch = CpuLaunch { grid: [4, 1, 1], block: [32, 1, 1], dynamic_shared_bytes: 0, resident_blocks: 2 };
// SAFETY: `x` points to `n` floats, which outlive the run.
run(&Machine::new(2), &launch, &mut NoObserver, &|| unsafe { double(x, n) })?;
assert!(data.iter().all(|&v| v == 3.0));
# Ok::<(), clustered::host::cpu::CpuError>(())
```
"#
)]
#![cfg_attr(target_arch = "nvptx64", no_std)]
#![warn(missing_docs)]

/// The device runtime, also re-exported at the root (`clustered::thread`, ...).
pub use clustered_device as device;
pub use clustered_device::*;
pub use clustered_macros::include_ptx;

#[cfg(all(any(feature = "gpu", feature = "cpu"), not(target_arch = "nvptx64")))]
pub use clustered_host as host;

#[cfg(all(feature = "sim", not(target_arch = "nvptx64")))]
pub use clustered_sim as sim;
