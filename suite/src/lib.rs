//! The kernel suite of this workspace: its PTX for GPUs, the same kernels on
//! the CPU backend, and the locality simulator that runs them there.
//!
//! The kernels live in `kernels/`: this crate's `build.rs` builds them for
//! `nvptx64-nvidia-cuda` ([`PTX`]), and they are linked for the host too, so
//! [`simulate`] runs every schedule of every [`suite`] kernel on simulated SMs.

pub use clustered_host as host;
pub use clustered_sim as sim;

pub mod measure;
pub mod predict;
pub mod reference;
pub mod simulate;
pub mod suite;

/// The suite's PTX (`.target sm_90`).
pub const PTX: &str = clustered::include_ptx!("kernels");
