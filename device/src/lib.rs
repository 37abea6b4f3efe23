//! The device runtime of clustered kernels.
//!
//! `no_std` on `nvptx64-nvidia-cuda` (the kernel side). On the host the same
//! API runs kernels on the CPU backend ([`cpu`]): simulated SMs whose threads
//! are coroutines, with traced global memory for the locality simulator. The
//! CTA mapping math ([`mapping`]) and the launch contract ([`abi`]) are shared
//! by both sides and unit tested on the host.
//!
//! Names follow Rust-CUDA's `cuda_std` where it has the same function
//! (`thread::thread_idx_x`, `thread::sync_threads`, `#[kernel]`), so its users
//! feel at home.
#![warn(missing_docs)]
#![cfg_attr(target_arch = "nvptx64", no_std)]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(
        stdarch_nvptx,
        asm_experimental_arch,
        allow_internal_unstable,
        core_float_math
    )
)]

pub mod abi;
pub mod atomic;
pub mod cluster;
pub mod constant;
#[cfg(not(target_arch = "nvptx64"))]
pub mod cpu;
pub mod cta;
#[cfg(not(target_arch = "nvptx64"))]
pub mod entry;
pub mod index;
pub mod mapping;
pub mod math;
pub mod memory;
pub mod pool;
pub mod run;
pub mod schedule;
pub mod shared;
pub mod sm;
pub mod thread;
pub mod trace;
pub mod unroll;

pub use clustered_macros::{clustered, kernel, launch_bounds, task_pool};

/// A panic in a kernel traps: the launch fails and the host gets an error
/// (`CUDA_ERROR_LAUNCH_FAILED`) instead of a wrong result.
#[cfg(all(target_arch = "nvptx64", not(test)))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    thread::trap()
}

/// A kernel's entry point, as `#[kernel]` and `#[clustered]` emit it: a PTX
/// `.entry` on the GPU; on the host a plain `unsafe fn` (without
/// `#[no_mangle]`, so kernel names cannot clash with C symbols) that the CPU
/// backend calls once per simulated thread.
#[cfg(target_arch = "nvptx64")]
#[doc(hidden)]
#[macro_export]
macro_rules! entry_point {
    ($(#[$attr:meta])* $vis:vis unsafe fn $name:ident($($params:tt)*) $body:block) => {
        $(#[$attr])*
        #[no_mangle]
        $vis unsafe extern "ptx-kernel" fn $name($($params)*) $body
    };
}

#[cfg(not(target_arch = "nvptx64"))]
#[doc(hidden)]
#[macro_export]
macro_rules! entry_point {
    ($(#[$attr:meta])* $vis:vis unsafe fn $name:ident($($params:tt)*) $body:block) => {
        $(#[$attr])*
        $vis unsafe fn $name($($params)*) $body
    };
}
