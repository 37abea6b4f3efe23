//! Locality-aware CTA clustering for Rust GPU kernels: one dependency for
//! the macros, the device runtime, the host and the CPU backend.
//!
//! Features: `gpu` (the host: `host`), `cpu` (the CPU backend: `host::cpu`,
//! [`device::cpu`]), `sim` (the locality simulator: `sim`). Built for
//! `nvptx64`, only the macros and the device runtime are here.
#![cfg_attr(target_arch = "nvptx64", no_std)]

/// The device runtime, also re-exported at the root (`clustered::thread`, ...).
pub use clustered_device as device;
pub use clustered_device::*;
pub use clustered_macros::include_ptx;

#[cfg(all(any(feature = "gpu", feature = "cpu"), not(target_arch = "nvptx64")))]
pub use clustered_host as host;

#[cfg(all(feature = "sim", not(target_arch = "nvptx64")))]
pub use clustered_sim as sim;
