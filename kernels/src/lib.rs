//! The kernel suite. Built for `nvptx64-nvidia-cuda` only, by the root
//! package's build script; the host embeds the PTX (`clustered::suite::PTX`).
#![no_std]
#![feature(abi_ptx)]

pub mod coverage;
pub mod sgemm;
pub mod vector;
