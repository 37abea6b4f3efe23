//! Static time prediction for kernels from their PTX (issue 16).
//!
//! - [`ptx`]: the PTX text as functions, basic blocks and classified
//!   instructions;
//! - [`analysis`]: loops, their trip counts from the launch's values, and
//!   which blocks run;
//! - [`model`]: occupancy (from ptxas's registers and shared memory) and the
//!   issue, latency, DRAM, L2 and L1 bounds, combined;
//! - [`device`]: the per-GPU figures, read from `devices/*.json`;
//! - [`ptxas`]: registers and shared memory from `ptxas -v`;
//! - [`sass`]: what ptxas's schedule keeps in flight, from `cuobjdump -sass`;
//! - [`stats`]: MAPE and Spearman's rank correlation for validation.
//!
//! No GPU, host crate or CUDA toolkit is needed (ptxas is optional). The
//! suite's `examples/predict.rs` runs it on every suite kernel and schedule,
//! and `docs/PREDICTION.md` reports how close it comes to an H100.
#![warn(missing_docs)]
#![allow(missing_docs)] // fields are named for what they hold; see the types' docs

pub mod analysis;
pub mod bench;
pub mod device;
pub mod model;
pub mod ptx;
pub mod ptxas;
pub mod sass;
pub mod stats;

pub use analysis::{Assumption, LaunchContext, ParamValue, Trips};
pub use device::DeviceModel;
pub use model::{predict, unknown_trips, Bound, Prediction, Query, Traffic};
pub use ptx::{Class, Module};
