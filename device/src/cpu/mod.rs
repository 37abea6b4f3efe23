//! The CPU backend: runs a kernel, unchanged, on simulated SMs of the host.
//!
//! Every CUDA thread of a CTA is a coroutine with its own stack and indices;
//! one host thread drives them all, so a run is deterministic and needs no
//! locks. The device runtime's functions (indices, barriers, shared memory,
//! atomics, `%smid`, traced loads and stores) read the state of the coroutine
//! being run from a thread-local, and suspend it where a GPU thread would wait
//! or touch global memory:
//!
//! - a barrier suspends the thread until every live thread of its CTA is
//!   waiting at one, then releases them all; they must all wait at the same
//!   barrier (one call site of `sync_threads`, or `sync_threads_and` at any),
//!   else the run stops with [`CpuError::BarrierDivergence`] (what
//!   compute-sanitizer's synccheck looks for on a GPU); a task pool's
//!   counted barriers ([`BarrierKind::Counted`]) wait for the CTA's first
//!   threads only, while a publishing warp beyond them runs on;
//! - a global load, store, atomic or prefetch suspends it after the access;
//!   the scheduler runs the other lanes of the warp to their own next access
//!   and reports the warp's accesses together to an [`Observer`], which is how
//!   the locality simulator sees coalesced warp instructions.
//!
//! The scheduler ([`run`]) dispatches CTAs like the hardware: a first wave in a
//! [`Machine`]'s fill order, breadth first, up to the resident-block limit per
//! SM; afterwards each finished CTA's SM takes the next CTA in launch order.
//! Each tick, every SM advances each of its resident CTAs by one warp
//! instruction per warp, so co-resident CTAs interleave as they would on a
//! GPU (the timing is idealised: every memory instruction takes one tick).
//!
//! A fixed order of threads can hide a kernel that depends on it. So a run
//! can shuffle the order of warps and lanes from a seed
//! ([`Machine::interleave`]), and it checks shared memory for races between
//! barriers, or for a thread that barriers leave out, between its acquires
//! of other threads' releases ([`Machine::check_races`], on by default):
//! both turn a result
//! that would depend on timing on a GPU into an error. Each thread's stack
//! has a guard page: an overflow is [`CpuError::StackOverflow`], not memory
//! corruption.

mod buffers;
mod engine;
mod machine;
mod stacks;
mod trap;

pub use buffers::{Buffers, Fault};
pub use engine::{run, run_checked, RunStats};
pub use machine::{
    BarrierDivergence, BarrierKind, CpuError, CpuLaunch, Dispatch, Machine, SharedRace,
    TaskOverrun, ThreadAt, MAX_BLOCK_THREADS, MAX_RESIDENT_BLOCKS,
};

pub(crate) use engine::{
    access, barrier, barriers_opened, begin_task, beside_publishing_warp, block_size, check_access,
    check_aligned, clock, current_cta, current_lane, enter_clustered, hardware_cta, shared_access,
    shared_base, static_shared, SharedAccess,
};

/// What a warp instruction does to global memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccessKind {
    /// `ld.global` (through L1).
    Load,
    /// `ld.global.cg`: cached in L2 only.
    LoadBypassL1,
    /// `st.global`.
    Store,
    /// `atom.global`: performed at L2.
    Atomic,
    /// `prefetch.global.L1`.
    PrefetchL1,
    /// `prefetch.global.L2`.
    PrefetchL2,
}

/// One lane's part of a warp instruction: `bytes` bytes from `address`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaneAccess {
    /// The first byte's global address (on the CPU backend, a host address).
    pub address: u64,
    /// Bytes accessed (4 for an `f32`); 0 touches nothing.
    pub bytes: u32,
}

/// Receives what a CPU run does, as it happens.
///
/// `sm` is the simulated SM's index (0..machine.sm_count()), not its `%smid`.
/// `task` is the original CTA (row-major linear id in the original grid) whose
/// code the threads run: the hardware CTA for a plain kernel, the task a
/// clustered kernel's scheduler mapped it to otherwise.
pub trait Observer {
    /// Hardware CTA `block` (row-major linear id in the launched grid) became
    /// resident on `sm`. For a plain kernel it is also the original CTA.
    fn block_started(&mut self, _sm: u32, _block: u32) {}
    /// A clustered kernel's scheduler starts original CTA `task` on `sm`.
    fn task_started(&mut self, _sm: u32, _task: u32) {}
    /// One warp instruction's accesses, one entry per active lane.
    fn warp_access(&mut self, _sm: u32, _task: u32, _kind: AccessKind, _lanes: &[LaneAccess]) {}
}

/// An observer that ignores everything: for runs that only want results.
pub struct NoObserver;

impl Observer for NoObserver {}

/// The CPU backend's memory for a typed launch: a kernel's `*const T`
/// parameter takes a `&[T]`, a `*mut T` parameter a `&mut [T]`.
pub struct Host;

impl crate::entry::Backend for Host {
    type In<'a, T: 'a> = &'a [T];
    type Out<'a, T: 'a> = &'a mut [T];
}
