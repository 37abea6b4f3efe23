//! The device runtime of clustered kernels.
//!
//! `no_std`; it builds for `nvptx64-nvidia-cuda` (the kernel side) and for the
//! host. On the host only the portable parts exist: the CTA mapping math
//! ([`mapping`]) and the launch contract ([`abi`]), so that both are unit
//! tested there and the host crate shares their exact layout.
//!
//! Names follow Rust-CUDA's `cuda_std` where it has the same function
//! (`thread::thread_idx_x`, `thread::sync_threads`, `#[kernel]`), so its users
//! feel at home.
#![cfg_attr(not(test), no_std)]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(stdarch_nvptx, asm_experimental_arch, allow_internal_unstable)
)]

pub mod abi;
pub mod cta;
pub mod mapping;
pub mod schedule;

#[cfg(target_arch = "nvptx64")]
pub mod atomic;
#[cfg(target_arch = "nvptx64")]
pub mod math;
#[cfg(target_arch = "nvptx64")]
pub mod memory;
#[cfg(target_arch = "nvptx64")]
pub mod run;
#[cfg(target_arch = "nvptx64")]
pub mod shared;
#[cfg(target_arch = "nvptx64")]
pub mod sm;
#[cfg(target_arch = "nvptx64")]
pub mod thread;

pub use clustered_macros::{clustered, kernel};

/// A panic in a kernel traps: the launch fails and the host gets an error
/// (`CUDA_ERROR_LAUNCH_FAILED`) instead of a wrong result.
#[cfg(all(target_arch = "nvptx64", not(test)))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    thread::trap()
}
