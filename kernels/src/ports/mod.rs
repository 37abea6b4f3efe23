//! Kernels ported from public GPU benchmark suites (Rodinia, Parboil, SHOC),
//! as their authors wrote them: the same algorithm, the same thread-to-data
//! indexing, the same block shape and the same launch, translated from CUDA
//! C++ to this crate's Rust (issue 13, item 5: kernels nobody here tuned
//! for). Each file names its source (repository and path) at the top and
//! says where the translation had to differ and why.
//!
//! Common to all of them:
//! - C `int` indices become `u32` (or `i32` where the original goes
//!   negative) and addresses are widened with [`at`](clustered_device::index::at) /
//!   `as usize` only where an `int` expression would have been used;
//!   values the originals keep in `int` and that are never negative
//!   (pathfinder's costs, spmv's column indices) are `u32`, since the suite's
//!   buffers are `f32` or `u32` words.
//! - nvcc contracts `a * b + c` into an FMA by default; rustc contracts
//!   nothing. The ports keep the separate multiply and add (what the
//!   originals' text says), so their CPU references are bitwise comparable.
//! - Where an original computes in `double` because of a `double` literal
//!   (`2.0 * t`, `ETA * x`), the port does too.
//! - Schedules: the baseline plus those a user would plausibly try first
//!   (redirect rows / columns, a raster, grid-stride, agents), none tuned.

pub mod backprop;
pub mod hotspot;
pub mod nn;
pub mod pathfinder;
pub mod spmv_jds;
pub mod stencil;
pub mod triad;
