//! Hopper thread block clusters (compute capability 9.0): the blocks of a
//! cluster run at the same time on one GPC, wait for each other at a
//! cluster barrier and read each other's shared memory (distributed shared
//! memory, DSMEM). The host launches them with
//! `LaunchConfig::with_block_cluster`.
//!
//! A kernel that uses these is a plain `#[kernel]` (or the baseline of a
//! `#[clustered]` one): a schedule moves tasks between blocks, so the
//! blocks of a hardware cluster would not run the tiles this code expects
//! beside each other, and `clustered-builder` refuses cluster instructions
//! in a scheduled entry.
//!
//! On the CPU backend every block is a cluster of one: rank 0 of 1, the
//! cluster barrier is a block barrier, and asking for another rank's shared
//! memory fails the run. A kernel that splits its work by
//! [`cluster_nctarank`] therefore runs there unchanged.

#[cfg(target_arch = "nvptx64")]
use core::arch::asm;

use crate::shared::{Shared, SharedElement};

// On the CPU backend every block is a cluster of one.
crate::sm::read_u32_register! {
    /// `%cluster_ctarank`: this block's rank in its cluster, `0..cluster_nctarank()`.
    cluster_ctarank => "%cluster_ctarank", 0;
    /// `%cluster_nctarank`: blocks in this block's cluster (1 without clusters).
    cluster_nctarank => "%cluster_nctarank", 1;
    /// `%cluster_ctaid.x`: this block's x position in its cluster.
    cluster_ctaid_x => "%cluster_ctaid.x", 0;
    /// `%cluster_ctaid.y`: this block's y position in its cluster.
    cluster_ctaid_y => "%cluster_ctaid.y", 0;
    /// `%cluster_nctaid.x`: blocks along x in this block's cluster.
    cluster_nctaid_x => "%cluster_nctaid.x", 1;
    /// `%cluster_nctaid.y`: blocks along y in this block's cluster.
    cluster_nctaid_y => "%cluster_nctaid.y", 1;
}

/// Proof that every block of this cluster has started: [`cluster_sync`]
/// returns it and [`Shared::in_block`] asks for it. A block's shared memory
/// exists only once the block runs, so the first access to another block's
/// must follow a cluster barrier (CUDA's rule; compute-sanitizer's racecheck
/// reports such an access as one into "a block that might not have entered
/// yet"). Holding the token is having passed one.
///
/// Another block's shared memory without one does not compile:
///
/// ```compile_fail,E0061
/// use clustered_device::shared::Shared;
/// // SAFETY: only the address is used.
/// let tile = unsafe { Shared::<f32>::from_address(0) };
/// let _ = tile.in_block(1); // no cluster barrier passed yet
/// ```
///
/// and a token cannot be made but by [`cluster_sync`]:
///
/// ```compile_fail,E0423
/// let _ = clustered_device::cluster::ClusterStarted(());
/// ```
#[derive(Clone, Copy, Debug)]
pub struct ClusterStarted(());

/// Waits until every thread of every block of the cluster arrived
/// (`barrier.cluster.arrive` then `.wait`: release then acquire, so shared
/// memory written before it is visible to the cluster's reads after it).
/// Returns the proof that every block of the cluster runs, which another
/// block's shared memory asks for ([`Shared::in_block`]).
///
/// Also the last thing a block does before it exits when others may still
/// read or write its shared memory: a block's shared memory goes away with
/// it. Not `.aligned`, like [`sync_threads`](crate::thread::sync_threads).
///
/// In a cluster of one block it is [`sync_threads`](crate::thread::sync_threads),
/// which orders the same accesses: ptxas lowers the cluster barrier's
/// arrive and wait to `MEMBAR.ALL.GPU` ... `UCGABAR_WAIT` + `CCTL.IVALL`
/// (a GPU-scope fence and an L1 invalidation; `cuobjdump -sass` of
/// `sgemm_tiled_dsmem`), where a block barrier is one `BAR.SYNC`. What that
/// costs in time was not measured apart.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn cluster_sync() -> ClusterStarted {
    #[cfg(target_arch = "nvptx64")]
    if cluster_nctarank() == 1 {
        crate::thread::sync_threads();
    } else {
        // SAFETY: a barrier has no memory-safety preconditions. No `nomem`:
        // memory accesses must not move across it.
        unsafe {
            asm!(
                "barrier.cluster.arrive;",
                "barrier.cluster.wait;",
                options(nostack, preserves_flags)
            );
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    crate::thread::sync_threads();
    ClusterStarted(())
}

/// An address in the shared memory of some block of this cluster.
#[derive(Clone, Copy, Debug)]
pub struct ClusterShared<T> {
    /// `mapa`'s result: an address in the cluster's shared window.
    address: u32,
    _element: core::marker::PhantomData<T>,
}

impl<T: SharedElement> Shared<T> {
    /// The same array in the shared memory of block `rank` of this cluster
    /// (`mapa.shared::cluster`), once a [`cluster_sync`] has shown that
    /// every block of the cluster runs (`started`).
    ///
    /// # Panics
    /// On the CPU backend, for a rank other than 0 (a cluster of one).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn in_block(self, rank: u32, started: ClusterStarted) -> ClusterShared<T> {
        let _ = started;
        #[cfg(target_arch = "nvptx64")]
        {
            let address: u32;
            // SAFETY: maps an address; nothing is accessed.
            unsafe {
                asm!("mapa.shared::cluster.u32 {mapped}, {address}, {rank};",
                     mapped = out(reg32) address, address = in(reg32) self.address(),
                     rank = in(reg32) rank, options(pure, nomem, nostack, preserves_flags));
            }
            ClusterShared {
                address,
                _element: core::marker::PhantomData,
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            assert!(
                rank == 0,
                "shared memory of cluster rank {rank} asked for at {}: the CPU backend runs \
                 every block as a cluster of one (rank 0 of 1); split the work by \
                 `cluster_nctarank()` instead of assuming a cluster size",
                core::panic::Location::caller()
            );
            ClusterShared {
                address: self.address(),
                _element: core::marker::PhantomData,
            }
        }
    }
}

impl<T: SharedElement> ClusterShared<T> {
    /// Stores `value` at element `index` from here: `st.shared::cluster`.
    ///
    /// # Safety
    /// `index` is inside the array; no thread of the cluster reads or
    /// writes the element until a [`cluster_sync`] after this store, and
    /// the owning block does not exit before one.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn write(self, index: u32, value: T) {
        let address = self.address + index * core::mem::size_of::<T>() as u32;
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: forwarded to the caller.
        unsafe {
            T::store_shared_cluster(address, value)
        }
        // The CPU backend's only rank is this block: a local store, checked.
        #[cfg(not(target_arch = "nvptx64"))]
        // SAFETY: forwarded to the caller.
        unsafe {
            Shared::<T>::from_address(address).write(0, value)
        }
    }

    /// Element `index` from here: `ld.shared::cluster`.
    ///
    /// # Safety
    /// `index` is inside the array; the owning block wrote it before a
    /// [`cluster_sync`] that this thread passed, and does not exit before
    /// another one that this thread reaches after reading.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn read(self, index: u32) -> T {
        let address = self.address + index * core::mem::size_of::<T>() as u32;
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: forwarded to the caller.
        return unsafe { T::load_shared_cluster(address) };
        // The CPU backend's only rank is this block: a local read, checked.
        #[cfg(not(target_arch = "nvptx64"))]
        // SAFETY: forwarded to the caller.
        return unsafe { Shared::<T>::from_address(address).read(0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_backend_is_a_cluster_of_one() {
        assert_eq!((cluster_ctarank(), cluster_nctarank()), (0, 1));
        assert_eq!((cluster_ctaid_x(), cluster_ctaid_y()), (0, 0));
        assert_eq!((cluster_nctaid_x(), cluster_nctaid_y()), (1, 1));
        // SAFETY: only the address is used.
        let shared = unsafe { Shared::<f32>::from_address(64) };
        assert_eq!(shared.in_block(0, ClusterStarted(())).address, 64);
    }

    #[test]
    #[should_panic(expected = "runs every block as a cluster of one")]
    fn another_rank_is_refused_by_name() {
        // SAFETY: only the address is used.
        let _ = unsafe { Shared::<f32>::from_address(0) }.in_block(1, ClusterStarted(()));
    }
}
