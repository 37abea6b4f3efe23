//! The kernel suite of this workspace, as PTX, with the host crate.
//!
//! The kernels live in `kernels/` (built for `nvptx64-nvidia-cuda` by
//! `build.rs`); this crate embeds their PTX so examples, tests and the bench
//! load it with [`Gpu::load_module`](clustered_host::Gpu::load_module).

pub use clustered_host as host;

/// The suite's PTX (`.target sm_90`).
pub const PTX: &str = include_str!(env!("CLUSTERED_PTX_KERNELS"));
