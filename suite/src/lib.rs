//! The kernel suite of this workspace: its PTX for GPUs, the same kernels on
//! the CPU backend, and the locality simulator that runs them there.
//!
//! The kernels live in `kernels/`: this crate's `build.rs` builds them for
//! `nvptx64-nvidia-cuda` ([`PTX`]), and they are linked for the host too, so
//! [`simulate`] runs every schedule of every [`suite`] kernel on simulated SMs.

pub use clustered_host as host;
pub use clustered_sim as sim;

pub mod access_report;
pub mod calibrate;
pub mod measure;
pub mod predict;
pub mod reference;
pub mod simulate;
pub mod suite;

/// The suite's PTX (`.target sm_90`).
pub const PTX: &str = clustered::include_ptx!("kernels");

/// The GPU and the suite's module for a GPU example, `Ok(None)` after
/// printing "no GPU: skipped (why)" (examples exit 0 without a GPU), or the
/// error when there is a GPU and the PTX does not load on it. The module is
/// loaded here, before any pool kernel starts (a module loaded while a kernel
/// never exits can deadlock the context: `TaskPool::gpu`).
pub fn gpu_or_skip() -> Result<Option<(host::Gpu, host::Module)>, host::Error> {
    let gpu = match host::Gpu::new(0) {
        Ok(gpu) => gpu,
        Err(e) => {
            println!("no GPU: skipped ({e})");
            return Ok(None);
        }
    };
    let module = gpu.load_module(PTX)?;
    Ok(Some((gpu, module)))
}
