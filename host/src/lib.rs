//! Host side of clustered kernels: device properties, modules from PTX,
//! validated launches, occupancy and timing, as a thin layer over
//! [`cudarc`]'s driver API.
//!
//! Kernels are built to PTX by rustc's nvptx64 backend and loaded with
//! [`Gpu::load_module`]. Every launch is checked on the host
//! ([`validate_launch`]) before it reaches the driver. Without an NVIDIA
//! driver, [`Gpu::new`] returns [`Error::NoDriver`] instead of panicking.
//!
//! ```no_run
//! use clustered_host::{Gpu, LaunchConfig};
//! # fn main() -> Result<(), clustered_host::Error> {
//! # let ptx = "";
//! let gpu = Gpu::new(0)?;
//! let kernel = gpu.load_module(ptx)?.kernel("write_index")?;
//! let mut out = gpu.zeros::<u32>(1000)?;
//! let n = 1000u32;
//! let cfg = LaunchConfig::linear(1000, 256);
//! unsafe { gpu.launch(&kernel, cfg).arg(&mut out).arg(&n).run()? };
//! let host = gpu.dtoh(&out)?;
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

pub mod autotune;
mod block_cluster;
mod clustered;
pub mod cpu;
mod device;
mod error;
mod gpu;
mod launch;
mod module;
mod occupancy;
pub mod pool;
mod timing;
mod tools;
pub mod tuner;
mod typed;

pub use autotune::{bucket, candidates_checksum, TunePolicy, Tuned, TunedLaunches};
pub use clustered::{
    check_contract, choose_active, decode_contract, ActivePolicy, ClusterError, ClusterOptions,
    ClusteredKernel, ClusteredPlan, RasterGroup,
};
pub use clustered_device::abi::{Binding, ClusterLaunch, KernelContract};
pub use clustered_device::entry::{Entry, KernelFn, Scalar, UnknownSchedule};
pub use cudarc;
pub use cudarc::driver::{CudaSlice, CudaStream};
pub use device::DeviceProperties;
pub use error::{Axis, Error, LaunchError, ThreadLimit};
pub use gpu::Gpu;
pub use launch::{
    needs_shared_opt_in, validate_launch, KernelArg, Launch, LaunchConfig, PORTABLE_CLUSTER_BLOCKS,
};
pub use module::{
    ptx_entry_names, ptx_entry_params, ptx_publishing_warp_entries, ptx_with_release_fences,
    Kernel, KernelAttributes, Module, ModuleOptions,
};
pub use occupancy::{
    cap_needed, capped_name, plan_register_caps, ptx_baseline_links, ptx_entry_texts,
    ptx_with_register_caps, register_cap, CapOutcome, PlannedCap, RegisterCap, RegisterFile,
};
pub use timing::GpuTimer;
pub use tools::cuda_tool;
pub use typed::Cuda;

#[cfg(test)]
mod tests;
