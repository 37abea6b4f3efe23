//! SHOC `triad`: the STREAM triad kernel.
//!
//! Source: SHOC, `src/cuda/level1/triad/Triad.cu` (github `vetter/shoc`).
//! The host pipelines launches over 2 streams with copies; here one launch
//! over the whole vectors.

use clustered_device::clustered;
use clustered_device::thread::{block_dim_x, block_idx_x, thread_idx_x};

/// Threads per block (SHOC's `blockSize`).
pub const TRIAD_BLOCK: u32 = 128;

/// `c[i] = a[i] + s * b[i]` (multiply, then add: no FMA), one element per
/// thread and no bounds check (as in the original: the vectors are a
/// multiple of the block).
///
/// Launch: block `128`, grid `n / 128`.
///
/// Sharing: none: streaming.
///
/// Variants: `_redirect`, `_stride` (grid-stride), `_persistent` (chunks of
/// 8 blocks), `_agents_bypass` (agents, 8 blocks per claim, `a` and `b`
/// loaded past L1).
///
/// # Safety
/// The three vectors hold `128 * grid` floats.
#[clustered(auto)]
#[clustered(name = triad_redirect, binding = redirect)]
#[clustered(name = triad_stride, binding = stride)]
#[clustered(name = triad_persistent, binding = persistent, chunk = 8)]
#[clustered(name = triad_agents_bypass, binding = agents, chunk = 8, bypass(a, b))]
pub unsafe fn triad(a: *const f32, b: *const f32, c: *mut f32, s: f32) {
    let gid = (thread_idx_x() + block_idx_x() * block_dim_x()) as usize;
    *c.add(gid) = *a.add(gid) + s * *b.add(gid);
}
