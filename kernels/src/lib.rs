//! The kernel suite, one source per kernel.
//!
//! Built for `nvptx64-nvidia-cuda` by the suite's build script (which makes
//! that build `no_std` with the PTX kernel ABI; the suite embeds the PTX as
//! `clustered_suite::PTX`), and for the host as an ordinary crate whose
//! kernels the CPU backend runs.

// Kernels are written as CUDA programmers write them: a kernel is one
// `unsafe fn` whose safety condition (documented on each) covers its whole
// body of pointer arithmetic, so its body is one unsafe region. The rest of
// the workspace marks each unsafe operation.
#![allow(unsafe_op_in_unsafe_fn)]

pub mod atax;
pub mod black_scholes;
pub mod calibrate;
pub mod conv;
pub mod coverage;
pub mod device_math;
pub mod early_exit;
pub mod index_forms;
pub mod jacobi5;
pub mod jacobi7;
pub mod kmeans;
pub mod math;
pub mod names;
pub mod pool;
pub mod ports;
pub mod property;
pub mod sgemm;
pub mod sgemm_naive;
pub mod sgemm_register;
pub mod syrk;
pub mod transpose;
pub mod vector;
