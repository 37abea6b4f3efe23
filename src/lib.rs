//! Locality-aware CTA clustering for Rust GPU kernels: one dependency for
//! the macros, the device runtime, the host and the CPU backend.
//!
//! Features: `gpu` (the host: `host`), `cpu` (the CPU backend: `host::cpu`,
//! [`device::cpu`]), `sim` (the locality simulator: `sim`). Built for
//! `nvptx64`, only the macros and the device runtime are here.
//!
//! A kernel and one schedule, run on the CPU backend (feature `cpu`): the same
//! functions are PTX entry points when their crate is built for the GPU.
#![cfg_attr(
    feature = "cpu",
    doc = r#"
```
use clustered::host::cpu::{launch_entry, CpuLaunch, Machine, NoObserver};
use clustered::host::ClusterOptions;
use clustered::clustered;
use clustered::thread::index_1d;

#[clustered(name = double_agents, binding = agents, chunk = 2)]
pub unsafe fn double(x: *mut f32, n: u32) {
    let i = index_1d();
    if i < n {
        *x.add(i as usize) *= 2.0;
    }
}

// 4 blocks of 32 threads on 2 simulated SMs, 2 blocks resident on each:
// the kernel as written, then its schedule, through their typed handles.
let launch = CpuLaunch { grid: [4, 1, 1], block: [32, 1, 1], dynamic_shared_bytes: 0, resident_blocks: 2 };
let mut data = vec![1.5f32; 128];
for entry in [double::KERNEL, double::double_agents] {
    // SAFETY: `data` holds the n = 128 floats the kernel indexes.
    unsafe {
        launch_entry(entry, &Machine::new(2), launch, &ClusterOptions::default(),
                     &mut NoObserver, (&mut data, 128))?
    };
}
assert!(data.iter().all(|&v| v == 6.0));
# Ok::<(), clustered::host::cpu::CpuLaunchError>(())
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
