//! What the host may rewrite in a module's PTX when it loads it: fences that
//! need only their release half.
//!
//! A block that publishes its writes to another (a pool worker telling the
//! publisher a task finished) needs a release fence: its later flag writes
//! must not become visible before its earlier data writes. PTX before ISA
//! 8.6 has no release-only fence, so such a fence is `fence.acq_rel.gpu`,
//! whose acquire half also invalidates the SM's L1 (`CCTL.IVALL` after the
//! `MEMBAR.ALL.GPU`, `cuobjdump -sass`): the next task's loads of data it
//! could have kept miss. `fence.release.gpu` (PTX ISA 8.6, `sm_90`) is the
//! same `MEMBAR` without the invalidation.
//!
//! The PTX is built at the oldest version the code needs (7.8 for `sm_90`),
//! so that drivers before CUDA 12.8 load it; the device runtime writes such
//! a fence as [`release_fence_gpu!`](crate::release_fence_gpu), an `acq_rel` fence with a mark, and
//! the host, on a driver that compiles ISA 8.6 ([`RELEASE_FENCE_DRIVER`]),
//! replaces each mark with [`RELEASE_FENCE_GPU`] and raises the module's
//! `.version` to [`RELEASE_FENCE_ISA`]. (The whole suite's SASS is the same
//! at 7.8 and 8.6 but for these fences: `ptxas -arch=sm_90`, CUDA 13, in
//! `suite/tests/kernel_resources.rs`,
//! `release_fences_drop_only_the_l1_invalidation`.)

/// The PTX of a GPU-scope fence of which only the release half is needed,
/// for PTX without `fence.release` (before ISA 8.6): `fence.acq_rel.gpu`
/// and the mark the host looks for. A macro, so that `asm!` can take it
/// as its template.
#[macro_export]
macro_rules! release_fence_gpu {
    () => {
        "fence.acq_rel.gpu; // clustered: release suffices"
    };
}

/// [`release_fence_gpu!`](crate::release_fence_gpu) as a string, for the host's search.
pub const RELEASE_FENCE_GPU_MARKED: &str = release_fence_gpu!();

/// What the host writes in its place.
pub const RELEASE_FENCE_GPU: &str = "fence.release.gpu;";

/// The first PTX ISA version with `fence.release` (major, minor).
pub const RELEASE_FENCE_ISA: (u32, u32) = (8, 6);

/// The first driver (`cuDriverGetVersion`) that compiles PTX ISA 8.6:
/// CUDA 12.8's (r570), the first release with an ISA past 8.5 (8.7; 8.6
/// came with none), as NVIDIA CCCL's table of ISA versions by CUDA
/// release has it (`__cccl_ptx_isa`).
pub const RELEASE_FENCE_DRIVER: i32 = 12080;
