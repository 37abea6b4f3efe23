//! The kernel suite, one source per kernel.
//!
//! Built for `nvptx64-nvidia-cuda` by the root package's build script (the
//! host embeds the PTX as `clustered::PTX`), and for the host as an ordinary
//! crate whose kernels the CPU backend runs (`clustered::cpu`).
#![cfg_attr(target_arch = "nvptx64", no_std, feature(abi_ptx))]

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
