//! The kernel suite, one source per kernel.
//!
//! Built for `nvptx64-nvidia-cuda` by the suite's build script (which makes
//! that build `no_std` with the PTX kernel ABI; the suite embeds the PTX as
//! `clustered_suite::PTX`), and for the host as an ordinary crate whose
//! kernels the CPU backend runs.

pub mod atax;
pub mod black_scholes;
pub mod conv;
pub mod coverage;
pub mod device_math;
pub mod early_exit;
pub mod jacobi5;
pub mod jacobi7;
pub mod kmeans;
pub mod math;
pub mod names;
pub mod property;
pub mod sgemm;
pub mod sgemm_naive;
pub mod sgemm_register;
pub mod syrk;
pub mod transpose;
pub mod vector;
