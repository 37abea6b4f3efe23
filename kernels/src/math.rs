//! Elementary functions for kernels: `exp`, `ln`, `sqrt`, `abs`.
//!
//! `core` has no `f32::exp`, `ln` or `sqrt` (they live in `std`), and a
//! kernel must compute the same bits on the GPU, on the CPU backend and in
//! the CPU reference. So they are written here, in plain `core` Rust over
//! `fma`, without tables or special instructions. The functions themselves
//! are in `math/functions.rs`, shared word for word with the CPU reference
//! (`suite/src/reference.rs`, which includes that file over `f32::mul_add`); see
//! there for the algorithms, domains and measured accuracy (within 1 ulp).

use clustered_device::math::fma;

include!("math/functions.rs");
