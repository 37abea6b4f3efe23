//! Thread, block and grid indices, barriers: the CUDA built-ins.
//!
//! Names and signatures follow `cuda_std::thread`.

#[cfg(target_arch = "nvptx64")]
use core::arch::nvptx;

/// A special register on the GPU; on the CPU backend, the simulated
/// thread's value of it.
macro_rules! special_register {
    ($($(#[$doc:meta])* $name:ident => $intrinsic:ident, $host:expr;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name() -> u32 {
            #[cfg(target_arch = "nvptx64")]
            // SAFETY: reading a special register has no preconditions.
            return unsafe { nvptx::$intrinsic() as u32 };
            #[cfg(not(target_arch = "nvptx64"))]
            return $host;
        }
    )*};
}

special_register! {
    /// `%tid.x`: this thread's index in its block, x.
    thread_idx_x => _thread_idx_x, crate::cpu::current_lane().thread_idx[0];
    /// `%tid.y`: this thread's index in its block, y.
    thread_idx_y => _thread_idx_y, crate::cpu::current_lane().thread_idx[1];
    /// `%tid.z`: this thread's index in its block, z.
    thread_idx_z => _thread_idx_z, crate::cpu::current_lane().thread_idx[2];
    /// `%ctaid.x`: this block's index in the grid, x.
    block_idx_x => _block_idx_x, crate::cpu::hardware_cta("block_idx_x").block_idx[0];
    /// `%ctaid.y`: this block's index in the grid, y.
    block_idx_y => _block_idx_y, crate::cpu::hardware_cta("block_idx_y").block_idx[1];
    /// `%ctaid.z`: this block's index in the grid, z.
    block_idx_z => _block_idx_z, crate::cpu::hardware_cta("block_idx_z").block_idx[2];
    /// `%ntid.x`: threads per block, x.
    block_dim_x => _block_dim_x, crate::cpu::block_size("block_dim_x")[0];
    /// `%ntid.y`: threads per block, y.
    block_dim_y => _block_dim_y, crate::cpu::block_size("block_dim_y")[1];
    /// `%ntid.z`: threads per block, z.
    block_dim_z => _block_dim_z, crate::cpu::block_size("block_dim_z")[2];
    /// `%nctaid.x`: blocks in the grid, x.
    grid_dim_x => _grid_dim_x, crate::cpu::hardware_cta("grid_dim_x").grid_dim[0];
    /// `%nctaid.y`: blocks in the grid, y.
    grid_dim_y => _grid_dim_y, crate::cpu::hardware_cta("grid_dim_y").grid_dim[1];
    /// `%nctaid.z`: blocks in the grid, z.
    grid_dim_z => _grid_dim_z, crate::cpu::hardware_cta("grid_dim_z").grid_dim[2];
}

/// The global x index of this thread: `block_idx_x * block_dim_x + thread_idx_x`.
///
/// The product is written size first: LLVM then reads `%ntid` before
/// `%ctaid`, and ptxas gives the size the uniform load (`ULDC`) and the block
/// index a plain `S2R`, the prologue nvcc's `blockIdx.x * blockDim.x` gets.
#[inline(always)]
pub fn index_1d() -> u32 {
    block_dim_x() * block_idx_x() + thread_idx_x()
}

/// The global (x, y) index of this thread (size first, as in [`index_1d`]).
#[inline(always)]
pub fn index_2d() -> (u32, u32) {
    (
        block_dim_x() * block_idx_x() + thread_idx_x(),
        block_dim_y() * block_idx_y() + thread_idx_y(),
    )
}

/// `barrier.sync 0`: waits until every thread of the block arrives, and
/// makes their shared and global memory writes visible to each other.
///
/// Like `__syncthreads`, it must be reached by all threads of the block or by
/// none (threads that have returned do not count), from one call site: on
/// the CPU backend every waiting thread must be at this same call site, else
/// the run fails with `CpuError::BarrierDivergence`.
///
/// Not `.aligned` (`bar.sync` is): LLVM may duplicate a call into the
/// branches before it (tail duplication; Rodinia's hotspot and pathfinder
/// got a copy for the threads that computed and one for those that did not),
/// and an aligned barrier reached by one warp at two instructions hangs the
/// block. ptxas emits the same `BAR.SYNC` where the warp is provably
/// converged, and reconverges it first where not.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn sync_threads() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a barrier has no memory-safety preconditions; reaching it
    // non-uniformly is a hang, not undefined behaviour in Rust's sense. No
    // `nomem`: memory accesses must not move across it.
    unsafe {
        core::arch::asm!("barrier.sync 0;", options(nostack, preserves_flags))
    }
    #[cfg(not(target_arch = "nvptx64"))]
    crate::cpu::barrier(
        crate::cpu::BarrierKind::Sync,
        core::panic::Location::caller(),
        true,
    );
}

/// `barrier.sync ID, n`: waits until the block's first `threads` threads
/// arrive (`n` is `threads` rounded up to whole warps, as PTX requires: a
/// warp arrives once all its live threads did; the warps after never come
/// to it), tagged
/// as the task pool's for the build's check (`clustered_abi::pool`, "A
/// publishing warp"): a pool worker's own barrier (1) and a pool task's
/// (0, `Cta::sync_threads`). Not `.aligned`, as [`sync_threads`]. The CPU
/// backend waits for the first `threads` threads, as the GPU does for a
/// block whose task threads are whole warps.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) fn sync_first_threads<const ID: u32>(threads: u32) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a barrier has no memory-safety preconditions; the caller's
    // `threads` threads reach it.
    unsafe {
        core::arch::asm!(
            "barrier.sync {id}, {threads}; // clustered:pool",
            id = const ID,
            threads = in(reg32) threads.next_multiple_of(32),
            options(nostack, preserves_flags)
        );
    }
    #[cfg(not(target_arch = "nvptx64"))]
    crate::cpu::barrier(
        crate::cpu::BarrierKind::Counted { id: ID, threads },
        core::panic::Location::caller(),
        true,
    );
}

/// `barrier.cta.red.and.pred 0`: waits like [`sync_threads`] and returns
/// whether `predicate` holds in every live thread of the block
/// (`__syncthreads_and`).
///
/// `#[clustered]` refuses it in the body of a persistent schedule (agents,
/// persistent, stride): there, threads whose task returned early keep
/// arriving at the body's barriers and could not tell the vote from the
/// task's end.
///
/// Not `.aligned`: the threads of a warp may reach it from different call
/// sites (a scheduler loop and a body that returned early). It is CTA
/// barrier 0, like `sync_threads`: the block must not wait at both at once
/// (PTX ISA, `barrier`: mixing `bar.red` with `bar.sync` on one barrier is
/// unpredictable); the CPU backend reports it as a divergence.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn sync_threads_and(predicate: bool) -> bool {
    #[cfg(target_arch = "nvptx64")]
    {
        let all: u32;
        // SAFETY: a barrier has no memory-safety preconditions.
        unsafe {
            core::arch::asm!(
                "{{ .reg .pred p, q;",
                "setp.ne.u32 p, {predicate}, 0;",
                "barrier.cta.red.and.pred q, 0, p;",
                "selp.u32 {all}, 1, 0, q; }}",
                predicate = in(reg32) predicate as u32,
                all = out(reg32) all,
                options(nostack, preserves_flags),
            );
        }
        all != 0
    }
    #[cfg(not(target_arch = "nvptx64"))]
    crate::cpu::barrier(
        crate::cpu::BarrierKind::And,
        core::panic::Location::caller(),
        predicate,
    )
}

/// `trap`: aborts the kernel; the launch reports an error to the host.
#[inline(always)]
pub fn trap() -> ! {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: trap ends the kernel.
    unsafe {
        nvptx::trap()
    }
    #[cfg(not(target_arch = "nvptx64"))]
    panic!("the kernel trapped")
}

/// `nanosleep.u32`: suspends this thread for about `nanoseconds` (at most
/// about a millisecond; the hardware may wake it earlier or later). A
/// polling loop backs off with it so that waiting warps leave the SM's
/// issue slots (and the memory system) to working ones.
///
/// On the CPU backend it lets the other simulated threads run, and gives the
/// host core away: briefly (a yield) for short sleeps, and for the time
/// asked from a microsecond on once no block of the launches on this host
/// thread has opened a barrier for a millisecond, so that an idle pool does
/// not spin a core. (The engine runs every block on one host
/// thread: a sleep for each idle block's poll stalled the working ones, and
/// a chained pool task took 9-15 ms instead of 0.1-0.4.)
#[inline(always)]
pub fn nanosleep(nanoseconds: u32) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: sleeping has no memory-safety preconditions.
    unsafe {
        core::arch::asm!("nanosleep.u32 {ns};", ns = in(reg32) nanoseconds,
            options(nomem, nostack, preserves_flags));
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        use std::time::{Duration, Instant};
        /// How long no barrier may open before a sleep gives the core away.
        const QUIET: Duration = Duration::from_millis(1);
        thread_local! {
            /// `barriers_opened` as last seen here, and when it last moved.
            static SEEN: core::cell::Cell<(u64, Option<Instant>)> =
                const { core::cell::Cell::new((0, None)) };
        }
        crate::cpu::clock();
        let opened = crate::cpu::barriers_opened();
        let now = Instant::now();
        let quiet_since = SEEN.with(|seen| match seen.get() {
            (count, Some(since)) if count == opened => since,
            _ => {
                seen.set((opened, Some(now)));
                now
            }
        });
        if nanoseconds >= 1000 && now.duration_since(quiet_since) >= QUIET {
            std::thread::sleep(Duration::from_nanos(nanoseconds as u64));
        } else {
            std::thread::yield_now();
        }
    }
}
