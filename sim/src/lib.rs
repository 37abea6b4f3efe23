//! The locality simulator's models, std only.
//!
//! CTA clustering (see `DESIGN.md`) is worth only what it saves in cache
//! traffic. A CPU execution backend runs a kernel's CTAs on a few simulated
//! SMs, in the order a schedule dictates, and reports every warp-level global
//! memory instruction to a [`CacheModel`], which answers: how many sectors hit
//! in each SM's L1, how many reached L2 and DRAM, and how much of the reuse
//! crossed CTA boundaries (the reuse that only clustering can turn into L1
//! hits).
//!
//! - [`profile`]: the figures of real GPUs (H100 SXM, H200), where each comes
//!   from and which are assumptions, scaled down to a CPU-sized simulation.
//! - [`cache`]: the sectored L1/L2 model and its counters.
//! - [`svg`]: a map of which SM ran each original CTA.
//! - [`progress`] and [`table`]: terminal output for long runs and reports.
//!
//! It depends only on the CPU backend's event types (`clustered_device::cpu`):
//! it builds wherever the workspace does, without a GPU or CUDA toolkit.
#![warn(missing_docs)]

pub mod access;
pub mod cache;
pub mod profile;
pub mod progress;
mod reuse;
mod sectored;
pub mod svg;
pub mod table;

pub use cache::{AccessKind, CacheModel, CacheStats, LaneAccess, SetIndexing};
pub use profile::{CacheGeometry, DeviceProfile, ProfileError};
pub use progress::Progress;
pub use svg::{sm_map_svg, SmMapPanel};
pub use table::format_table;
