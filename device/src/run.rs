//! What a generated clustered kernel calls: which original CTAs this block
//! runs, for each binding. Kept here, small and shared, so the generated code
//! stays short and this logic is written (and reviewed) once.

use crate::abi::{ClusterLaunch, ABI_VERSION};
use crate::atomic::{fetch_add_u32, fetch_inc_wrapping, fetch_or_u32, load_relaxed_gpu_global};
use crate::cta::Cta;
use crate::mapping::{round_robin, Partition};
use crate::schedule::{factoring_claim, fold_sm_id, tail_start, Claim, Claimer, TaskCounters};
use crate::shared::Shared;
use crate::sm::sm_id;
use crate::thread::{thread_idx_x, thread_idx_y, thread_idx_z, trap};

/// What the scheduler reads and waits on, kept apart from what a body reads.
///
/// On the GPU each is one inline-PTX instruction tagged `// clustered:`; the
/// build's PTX check (`clustered-builder`) accepts `%ctaid`/`%nctaid` reads
/// and barriers in a clustered entry only with these tags, so a block-index
/// read or a barrier that the macro could not rewrite (in a helper, behind a
/// function pointer) fails the build instead of running with the physical
/// block's index. On the CPU backend the scheduler reads the simulated
/// registers directly, while the body's getters refuse to answer inside a
/// clustered kernel (`thread::block_idx_x`).
pub(crate) mod hardware {
    #[cfg(target_arch = "nvptx64")]
    macro_rules! special_register {
        ($($name:ident => $register:literal, $host:expr;)*) => {$(
            #[inline(always)]
            pub fn $name() -> u32 {
                let value: u32;
                // SAFETY: reading a special register has no preconditions.
                unsafe {
                    core::arch::asm!(
                        concat!("mov.u32 {value}, ", $register, "; // clustered:scheduler"),
                        value = out(reg32) value,
                        options(pure, nomem, nostack, preserves_flags),
                    );
                }
                value
            }
        )*};
    }
    #[cfg(not(target_arch = "nvptx64"))]
    macro_rules! special_register {
        ($($name:ident => $register:literal, $host:expr;)*) => {$(
            #[inline(always)]
            pub fn $name() -> u32 {
                $host
            }
        )*};
    }

    special_register! {
        block_idx_x => "%ctaid.x", crate::cpu::current_cta().block_idx[0];
        block_idx_y => "%ctaid.y", crate::cpu::current_cta().block_idx[1];
        block_idx_z => "%ctaid.z", crate::cpu::current_cta().block_idx[2];
        grid_dim_x => "%nctaid.x", crate::cpu::current_cta().grid_dim[0];
        grid_dim_y => "%nctaid.y", crate::cpu::current_cta().grid_dim[1];
        block_dim_x => "%ntid.x", crate::cpu::current_cta().block_dim[0];
    }

    /// `bar.sync 1`: the scheduler's own barrier, reached by every thread
    /// of the CTA at the same instruction (it publishes a claim). A body's
    /// barriers use barrier 0 (plain kernels, reorder, redirect) or 2 (the
    /// task barrier of persistent schedules), so they never pair up with it.
    #[inline(always)]
    pub fn scheduler_barrier() {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: every thread of the CTA reaches it (see `agents`).
        unsafe {
            core::arch::asm!(
                "bar.sync 1; // clustered:scheduler",
                options(nostack, preserves_flags)
            );
        }
        #[cfg(not(target_arch = "nvptx64"))]
        crate::cpu::barrier(
            crate::cpu::BarrierKind::Sync,
            core::panic::Location::caller(),
            true,
        );
    }

    /// `bar.sync 2` between the tasks of a persistent body that shares memory
    /// but never returns early: every thread reaches it, at one instruction.
    #[inline(always)]
    pub fn separation_barrier() {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: every thread of the CTA reaches it (the body has no early exit).
        unsafe {
            core::arch::asm!(
                "bar.sync 2; // clustered:separate",
                options(nostack, preserves_flags)
            );
        }
        #[cfg(not(target_arch = "nvptx64"))]
        crate::cpu::barrier(
            crate::cpu::BarrierKind::Sync,
            core::panic::Location::caller(),
            true,
        );
    }

    /// `barrier.red.and.pred` on barrier 2 of the thread's `done`, whose
    /// count operand is `$count` (`""` for every thread of the CTA, or
    /// `"{threads}, "` with `threads = ..` given) and whose tag is `$tag`:
    /// the one instruction of [`task_barrier`] and [`pool_task_barrier`].
    #[cfg(target_arch = "nvptx64")]
    macro_rules! vote_on_barrier_2 {
        ($done:expr, $count:literal, $tag:literal $(, threads = $threads:expr)?) => {{
            let all: u32;
            // SAFETY: a barrier has no memory-safety preconditions.
            unsafe {
                core::arch::asm!(
                    "{{ .reg .pred %clustered_in, %clustered_all;",
                    "setp.ne.u32 %clustered_in, {done}, 0;",
                    concat!(
                        "barrier.red.and.pred %clustered_all, 2, ",
                        $count,
                        "%clustered_in; // ",
                        $tag
                    ),
                    "selp.u32 {all}, 1, 0, %clustered_all; }}",
                    done = in(reg32) $done as u32,
                    $(threads = in(reg32) $threads,)?
                    all = out(reg32) all,
                    options(nostack, preserves_flags),
                );
            }
            all != 0
        }};
    }

    /// `barrier.red.and.pred` on barrier 2, not aligned: the thread arrives
    /// with `done` and gets whether every thread of the CTA arrived with
    /// `done` set. Threads of one warp may arrive from different
    /// instructions (a body's barrier and `end_task`'s), which the
    /// non-aligned form allows.
    ///
    /// On the GPU it is one function, never inlined, so that every thread
    /// arrives at the same instruction wherever it calls from: a warp whose
    /// threads wait at two barrier instructions, even of one barrier, waits
    /// for itself (ptxas reconverges the warp at the instruction), while one
    /// instruction reached through two calls is one arrival per thread.
    #[cfg_attr(target_arch = "nvptx64", inline(never))]
    #[cfg_attr(not(target_arch = "nvptx64"), inline(always))]
    pub fn task_barrier(done: bool) -> bool {
        #[cfg(target_arch = "nvptx64")]
        return vote_on_barrier_2!(done, "", "clustered:task");
        #[cfg(not(target_arch = "nvptx64"))]
        crate::thread::sync_threads_and(done)
    }

    /// [`task_barrier`] for a pool task's CTA: barrier 2 of its first
    /// `threads` threads (`barrier.red.and.pred p, 2, n`, `n` in whole
    /// warps as PTX requires), tagged as the pool's, so a publishing warp
    /// beyond them never comes to it (`clustered_abi::pool`, "A publishing
    /// warp"). One function, never inlined on the GPU, as `task_barrier`.
    #[cfg_attr(target_arch = "nvptx64", inline(never))]
    #[cfg_attr(not(target_arch = "nvptx64"), inline(always))]
    pub fn pool_task_barrier(done: bool, threads: u32) -> bool {
        #[cfg(target_arch = "nvptx64")]
        return vote_on_barrier_2!(
            done,
            "{threads}, ",
            "clustered:pool",
            threads = threads.next_multiple_of(32)
        );
        // One call site for every arrival, as the GPU's one instruction.
        #[cfg(not(target_arch = "nvptx64"))]
        crate::cpu::barrier(
            crate::cpu::BarrierKind::Counted { id: 2, threads },
            core::panic::Location::caller(),
            done,
        )
    }
}

/// A barrier in the body of a persistent schedule (agents, persistent,
/// stride): the macro writes it for the body's `sync_threads()`.
///
/// Like `__syncthreads`, but threads whose task already ended (a `return` in
/// the body) take part too: they wait in [`end_task`], which arrives at the
/// same barrier. On the GPU, a thread that returns from a plain kernel
/// exits, and "if the exiting threads are holding up the barrier, the
/// barrier is released" (PTX ISA, `exit`); a persistent block's threads
/// cannot exit between tasks, so they keep arriving instead.
#[inline(always)]
pub fn body_barrier() {
    hardware::task_barrier(false);
}

/// [`body_barrier`] in a pool task's body: counts the task's threads
/// (`cta`'s), not a publishing warp beside them.
#[inline(always)]
pub fn pool_body_barrier(cta: &Cta) {
    hardware::pool_task_barrier(false, cta.thread_count());
}

/// What the task function of a persistent schedule whose body shares
/// memory or waits at barriers returns, so that a `return` the macro cannot
/// see ends in a compile error instead of a wrong result. (Not a pool's
/// `run_task`: generated for every kernel, pooled or not, it would refuse
/// kernels no pool runs.)
///
/// The macro ends each `return` of such a body with the task protocol
/// ([`end_task`]) where it is written; a `return` inside a macro's
/// expansion (`macro_rules! leave { () => { return } }`) it cannot see, and
/// a thread leaving through it would skip the protocol: it would run ahead
/// into its next task while its block still waits for it at this task's
/// barriers. The task function returns this type, which only the macro's
/// own `return`s give, so such a `return;` does not compile (E0069, "`return;`
/// in a function whose return type is not `()`", at the `return` and the
/// macro call; `macros/tests/ui/return_in_macro.rs`): write the `return` in
/// the kernel's body, or use `binding = reorder` or `redirect`.
#[doc(hidden)]
pub struct NoReturnInAMacro;

/// Separates two tasks of a persistent schedule whose body shares memory or
/// waits at barriers but has no `return`: every thread runs the whole body,
/// so its own barriers stay `sync_threads` as written, and one plain barrier
/// keeps a fast warp from starting the next task while a slow one still
/// reads this task's shared memory. (With early returns the macro uses
/// [`end_task`] instead.)
#[inline(always)]
pub fn separate_tasks() {
    hardware::separation_barrier();
}

/// A call `sync_threads()` in the body of a persistent schedule: the body
/// barrier if `call` is the runtime's `sync_threads` (whatever path or alias
/// named it), else the user's own function of that name, called as written.
#[inline(always)]
pub fn barrier_in_body<F: FnOnce() + 'static>(call: F) {
    if crate::cta::is_function::<F, _>(&crate::thread::sync_threads) {
        body_barrier();
    } else {
        call();
    }
}

/// [`barrier_in_body`] in a pool task's body ([`pool_body_barrier`]).
#[inline(always)]
pub fn pool_barrier_in_body<F: FnOnce() + 'static>(cta: &Cta, call: F) {
    if crate::cta::is_function::<F, _>(&crate::thread::sync_threads) {
        pool_body_barrier(cta);
    } else {
        call();
    }
}

/// [`end_task`] in a pool task: its barrier counts the task's threads
/// (`cta`'s), not a publishing warp beside them.
#[inline(always)]
pub fn pool_end_task(cta: &Cta) {
    let threads = cta.thread_count();
    while !hardware::pool_task_barrier(true, threads) {}
}

/// Ends this thread's task in a persistent schedule whose body shares memory
/// or waits at barriers: returns once every thread of the CTA has ended it.
///
/// Each pass arrives at the task barrier (barrier 2) saying "done": a thread whose task ended
/// early (`return`) arrives once for each barrier that the others' body
/// still reaches, and the reduction tells every thread at once, uniformly,
/// when all are done. So barrier phases never shift between tasks, and a
/// fast warp never starts the next task while a slow one still reads the
/// shared memory of this one.
#[inline(always)]
pub fn end_task() {
    while !hardware::task_barrier(true) {}
}

/// Traps on a launch built for another contract version: a wrong launch must
/// fail loudly, never run with misread parameters.
#[inline(always)]
pub fn check_abi(launch: &ClusterLaunch) {
    if launch.abi_version != ABI_VERSION {
        trap();
    }
    #[cfg(not(target_arch = "nvptx64"))]
    crate::cpu::enter_clustered();
}

/// The hardware's own row-major linear block id.
#[inline(always)]
fn hardware_linear_id() -> u32 {
    use hardware::*;
    (block_idx_z() * grid_dim_y() + block_idx_y()) * grid_dim_x() + block_idx_x()
}

/// Reorder binding: this block runs linear id `v = u` of the chosen
/// indexing, the CTA `to_cta(v)` (worked out once a block: [`mapped_once`]).
#[inline(always)]
pub fn reordered(launch: &ClusterLaunch, to_cta: impl FnOnce(u32) -> Cta) -> Cta {
    check_abi(launch);
    let index = mapped_once(|| to_cta(hardware_linear_id()).index);
    Cta::new(index, launch.delinearize.grid())
}

/// Redirection (round-robin binding): block `u` runs `f^-1(u / M, u % M)`,
/// the CTA `to_cta` of it (worked out once a block: [`mapped_once`]).
#[inline(always)]
pub fn redirected(launch: &ClusterLaunch, to_cta: impl FnOnce(u32) -> Cta) -> Cta {
    check_abi(launch);
    let index = mapped_once(|| {
        let (position, cluster) = round_robin(hardware_linear_id(), launch.clusters);
        to_cta(launch.partition.join(position, cluster)).index
    });
    Cta::new(index, launch.delinearize.grid())
}

/// The block index a block of a reorder or redirect launch runs as, worked
/// out by its first thread alone and handed to the others through shared
/// memory at the scheduler's barrier. Mapping a linear id is a few
/// multiply-high divisions and the indexing's edge cases, about 100
/// instructions (SASS of nn_euclid's raster along y, which `auto` proposed
/// until session 49, against the kernel's 25); every warp paying them took
/// light kernels' rasters to 0.60-0.72x of
/// the kernel. Now one warp pays them, and each other warp a barrier and a
/// shared read: 0.75-0.85x (docs/BENCHMARKS.md, "The CTA mapped once a
/// block"; what is left is the mapping's latency before any warp starts).
#[inline(always)]
pub fn mapped_once(map: impl FnOnce() -> [u32; 3]) -> [u32; 3] {
    let slot = crate::shared_array!(clustered_cta: [u32; 4]);
    // SAFETY: the first thread writes the slot before the barrier, every
    // thread reads it after; nothing else touches it.
    unsafe {
        if thread_idx_x() == 0 && thread_idx_y() == 0 && thread_idx_z() == 0 {
            let [x, y, z] = map();
            slot.write(0, x);
            slot.write(1, y);
            slot.write(2, z);
        }
        hardware::scheduler_barrier();
        [slot.read(0), slot.read(1), slot.read(2)]
    }
}

/// The grid-stride binding: this block runs tasks `block, block + A, ...`
/// with `A` the blocks launched, in the indexing's order. Every block of a grid runs eventually, so every task runs exactly once
/// whatever the dispatcher does; ACTIVE does not apply (all blocks work).
///
/// - `task(v, cta)` runs each task; `cta` is advanced from the last task's
///   with carries (row- and column-major; a full delinearization for tiles).
///   Delinearizing each task put two multiply-high divisions and the tile
///   branch in vector add's loop (its PTX, from `cargo build`).
/// - The steps match on the launch's indexing kind at run time. Compiled
///   for the entry's kind ([`crate::mapping::Delinearize::as_kind`]) the
///   other kinds fold away (`vector_add_stride`: 323 -> 72 SASS
///   instructions, 28 -> 14 registers), but ptxas scheduled ATAX's row
///   loop anew and it ran 6% slower on an H100 (docs/BENCHMARKS.md, "The
///   task loops compiled for their indexing"), so this loop and
///   [`strided_then_claimed`] keep the match; [`strided_then_blocks`] and
///   [`agents`] are compiled for the kind.
/// - A body that shares memory or waits at barriers ends each task with
///   [`end_task`] itself (the macro puts it in the task function).
/// - `prefetch(v + dA, its CTA)` runs before task `v` when the block has a
///   task `d = distance` steps ahead.
///
/// The host guarantees `tasks + A <= 2^32`, so `v + A` never wraps. The
/// exit test stays at the top: tested after the task, LLVM peeled the last
/// task into a second copy of the body (`tests/kernel_resources.rs`).
#[inline(always)]
pub fn strided(
    launch: &ClusterLaunch,
    distance: u32,
    mut task: impl FnMut(u32, Cta),
    mut prefetch: impl FnMut(u32, Cta),
) {
    check_abi(launch);
    let delinearize = &launch.delinearize;
    let grid = delinearize.grid();
    let total = launch.partition.total;
    let agents = hardware::grid_dim_x();
    let split = delinearize.cta(agents);
    // Saturated, it is never below `total - v`: no prefetch, no wrap.
    let ahead = agents.saturating_mul(distance);
    let split_ahead = delinearize.cta(ahead);
    let mut v = hardware::block_idx_x();
    let mut index = delinearize.cta(v);
    while v < total {
        if total - v > ahead {
            let next = delinearize.advance(index, split_ahead, v + ahead);
            prefetch(v + ahead, Cta::new(next, grid));
        }
        task(v, Cta::new(index, grid));
        v = v.wrapping_add(agents);
        index = delinearize.advance(index, split, v);
    }
}

/// The grid-stride binding with `tail = claims`: [`strided`] for the first
/// half of the rounds; the tasks after them (the tail) go out in claims,
/// sized by factoring ([`factoring_claim`]). Every block of a grid runs
/// eventually and claims only what is left, so every task runs exactly once
/// whatever the dispatcher does; ACTIVE does not apply (all blocks work).
///
/// - Why a tail: with the same number of tasks each, the blocks that the
///   warp schedulers serve less finish last, and an SM's warps fall from
///   64 to none over the last 40% of the loop's time (ncu's PM sampling of
///   the staged convolution's and the SDK Black-Scholes' loops on an H200:
///   0.81x and 0.91x of their kernels; docs/BENCHMARKS.md, "Where a
///   grid-stride loop's time goes"). Claimed, the tail goes to the blocks
///   that are free.
/// - It costs a claim (an atomic and a CTA barrier) per run of the tail, a
///   few per block, on one counter; and the loop's state may take ptxas
///   past a register step (measured in that section: parboil's stencil
///   from 32 to 48 registers, 1.16x to 0.90x of its kernel; bpnn's
///   weights, 65535 tiny tasks, 0.83x to 0.63x). Hence an option, and a
///   candidate of `#[clustered(auto)]` beside the plain loop.
/// - Tasks, prefetch and the body's barriers as in [`strided`]; in the
///   tail, `prefetch` gets the next task of the claim.
///
/// # Safety
/// `launch.scratch` holds `scratch_words(sm_slots, 1)` zeroed words private
/// to this launch.
#[inline(always)]
pub unsafe fn strided_then_claimed(
    launch: &ClusterLaunch,
    distance: u32,
    mut task: impl FnMut(u32, Cta),
    mut prefetch: impl FnMut(u32, Cta),
) {
    check_abi(launch);
    let delinearize = &launch.delinearize;
    let grid = delinearize.grid();
    let total = launch.partition.total;
    let agents = hardware::grid_dim_x();
    // Half of the rounds by stride, the rest claimed.
    let strided_end = tail_start(total, agents);
    let tail = total - strided_end;
    // SAFETY: the caller's contract on the scratch (one counter: one queue).
    let counters = GlobalCounters::at(
        unsafe { (launch.scratch as *mut u32).add(launch.sm_slots as usize) },
        1,
    );
    let ticket = crate::shared_array!(clustered_ticket_tail: [u32; 4]);
    let leader = thread_idx_x() == 0 && thread_idx_y() == 0 && thread_idx_z() == 0;
    // A run of tasks `v, v + step, ...` below `end`: first this block's
    // rounds, then each claim's range. One loop runs both, so the body is
    // inlined once (in two loops, ptxas gave most stride entries more
    // registers, up to 32 -> 64).
    let (mut v, mut end, mut step) = (hardware::block_idx_x(), strided_end, agents);
    let mut index = delinearize.cta(v);
    let mut parity = 0;
    loop {
        let split = delinearize.cta(step);
        // Saturated, it is never below `end - v`: no prefetch, no wrap.
        let ahead = step.saturating_mul(distance);
        let split_ahead = delinearize.cta(ahead);
        while v < end {
            if end - v > ahead {
                let next = delinearize.advance(index, split_ahead, v + ahead);
                prefetch(v + ahead, Cta::new(next, grid));
            }
            task(v, Cta::new(index, grid));
            v = v.wrapping_add(step);
            index = delinearize.advance(index, split, v);
        }
        if leader {
            let claim = factoring_claim(counters.next_chunk(0), tail, agents);
            let (first, count) = claim.unwrap_or((0, 0));
            // SAFETY: four words, two per parity.
            unsafe {
                ticket.write(2 * parity, strided_end + first);
                ticket.write(2 * parity + 1, count);
            }
        }
        hardware::scheduler_barrier();
        // SAFETY: written before the barrier.
        let (first, count) = unsafe { (ticket.read(2 * parity), ticket.read(2 * parity + 1)) };
        if count == 0 {
            break;
        }
        (v, end, step) = (first, first + count, 1);
        index = delinearize.cta(v);
        parity ^= 1;
    }
}

/// The grid-stride binding with `tail = blocks`: the first
/// `launch.looping_blocks` blocks run [`strided`] over the tasks before
/// `launch.tail_start` (half of the rounds: `schedule::tail_start`); every
/// block after them runs one task of the tail, `tail_start + (block -
/// looping_blocks)`. The hardware dispatches the tail's blocks in order as
/// the looping blocks leave, so the SMs whose blocks the warp schedulers
/// served most take most of the tail, as with `tail = claims`, without a
/// claim (an atomic on one counter and a CTA barrier) per run of the tail.
/// Measured (docs/BENCHMARKS.md, "A grid-stride loop's tail as blocks"):
/// faster than claims where tasks are tiny or claims cost registers
/// (bpnn's weights 0.68x -> 0.89x of the kernel, Jacobi 5's walk 0.85x ->
/// 0.99x), slower where a long loop's claims cost little (Black-Scholes
/// 1.02x -> 0.95x): hence an option beside it.
///
/// Every block of a grid runs eventually, the looping ones cover
/// `0..tail_start` and the others one task each of `tail_start..`, so every
/// task runs exactly once whatever the dispatcher does (blocks past the
/// last task, which a grid rounded up to whole thread block clusters may
/// have, run none). Tasks, prefetch and the body's barriers as in
/// [`strided`]; a tail block has no next task to prefetch. Its steps are
/// compiled for `INDEXING`, the entry's indexing kind
/// ([`crate::mapping::Delinearize::as_kind`]): a tail block maps its task
/// at its start, and without the other kinds' branches the loops ran 3-4%
/// faster on three of the eight kernels timed on an H100 (vector add,
/// Black-Scholes fast, nn_euclid; the other five -1.6% to +0.7%:
/// docs/BENCHMARKS.md, "The task loops compiled for their indexing").
#[inline(always)]
pub fn strided_then_blocks<const INDEXING: u32>(
    launch: &ClusterLaunch,
    distance: u32,
    mut task: impl FnMut(u32, Cta),
    mut prefetch: impl FnMut(u32, Cta),
) {
    check_abi(launch);
    let delinearize = &launch.delinearize.as_kind::<INDEXING>();
    let grid = delinearize.grid();
    let total = launch.partition.total;
    let agents = launch.looping_blocks;
    let block = hardware::block_idx_x();
    let looping = block < agents;
    // One loop runs both kinds of block, so the body is inlined once (two
    // copies gave stride entries more registers: `strided_then_claimed`).
    let (mut v, end, step) = if looping {
        (block, launch.tail_start, agents)
    } else {
        let v = launch.tail_start + (block - agents);
        (v, (v + 1).min(total), 1)
    };
    let mut index = delinearize.cta(v);
    // A tail block runs one task: it splits no step (a delinearization
    // each, which a block of one task would pay in full).
    let split = if looping {
        delinearize.cta(step)
    } else {
        index
    };
    // Saturated, it is never below `end - v`: no prefetch, no wrap.
    let ahead = step.saturating_mul(distance);
    let split_ahead = if looping {
        delinearize.cta(ahead)
    } else {
        index
    };
    while v < end {
        if end - v > ahead {
            let next = delinearize.advance(index, split_ahead, v + ahead);
            prefetch(v + ahead, Cta::new(next, grid));
        }
        task(v, Cta::new(index, grid));
        v = v.wrapping_add(step);
        index = delinearize.advance(index, split, v);
    }
}

/// The chunk counters of a launch, its drained marks and their count, in
/// its scratch buffer after the SM slots (`abi::scratch_words`).
struct GlobalCounters {
    counters: *mut u32,
    marks: *mut u32,
    count: *mut u32,
}

impl GlobalCounters {
    /// The counters of a launch of `clusters` clusters at `scratch + sm_slots`.
    #[inline(always)]
    fn at(counters: *mut u32, clusters: u32) -> Self {
        let marks = counters.wrapping_add(clusters as usize);
        GlobalCounters {
            counters,
            marks,
            count: marks.wrapping_add(clusters.div_ceil(32) as usize),
        }
    }
}

impl TaskCounters for GlobalCounters {
    #[inline(always)]
    fn next_chunk(&self, cluster: u32) -> u32 {
        // SAFETY: the host allocates `scratch_words` words; cluster < M.
        unsafe { fetch_inc_wrapping(self.counters.add(cluster as usize), u32::MAX - 1) }
    }

    #[inline(always)]
    fn drained_count(&self) -> u32 {
        // SAFETY: the count's word is in the scratch, as above.
        unsafe { load_relaxed_gpu_global(self.count) }
    }

    #[inline(always)]
    fn set_mark(&self, cluster: u32) -> bool {
        let bit = 1 << (cluster % 32);
        // SAFETY: a mark word per 32 clusters, cluster < M.
        unsafe { fetch_or_u32(self.marks.add(cluster as usize / 32), bit) & bit == 0 }
    }

    #[inline(always)]
    fn count_drained(&self) {
        // SAFETY: as above.
        unsafe { fetch_add_u32(self.count, 1) };
    }
}

/// Publishes a claim in ticket slot `parity`: two words, the chunk's first
/// linear id and its task count (0: no more tasks), so that the other
/// threads need not work them out again.
#[inline(always)]
unsafe fn publish(ticket: Shared<u32>, parity: u32, partition: &Partition, claim: Option<Claim>) {
    unsafe {
        let (start, count) = match claim {
            Some(claim) => (
                partition.cluster_start(claim.cluster) + claim.first,
                claim.count,
            ),
            None => (0, 0),
        };
        ticket.write(2 * parity, start);
        ticket.write(2 * parity + 1, count);
    }
}

/// The agent loop (SM binding): runs `task(v, cta)` for every linear id `v`
/// this agent claims (`cta`: its CTA in the indexing, stepped from the
/// previous task's without a division), and `prefetch(v', its CTA)`
/// with the next id of the same chunk first.
///
/// - One thread (the leader) claims; the claim reaches the CTA through a
///   double-buffered shared ticket, so one barrier per chunk both publishes
///   the next claim and separates consecutive chunks. Claims and the exit are
///   therefore uniform across the CTA, and barriers inside `task` stay legal.
/// - The leader claims the next chunk after the current one ran, just before
///   the barrier that publishes it. Claiming it before the chunk, to hide
///   the atomic behind the chunk's work, measured slower on every streaming
///   kernel (H100: persistent Black-Scholes 0.80x of its kernel against
///   1.03x, Jacobi 7 0.87x against 1.06x; docs/BENCHMARKS.md, "The claim
///   after the chunk"). With as many tasks as agents (ATAX's 64) it was
///   worse still (0.38x against 0.74x): an agent held a second claim that
///   an idle agent could have run (c in that section, which claims ahead
///   only from its second chunk on, ran ATAX as fast as the claim after).
/// - Throttling: the first `launch.active_agents` agents to arrive on an SM
///   work; the others exit at once.
/// - A body that uses shared memory or barriers ends each task with
///   [`end_task`] (in its task function, where its early `return`s call it
///   too), so a fast warp never starts the next task while a slow one still
///   reads the last task's shared data.
///
/// # Safety
/// `launch.scratch` holds `scratch_words(sm_slots, M)` zeroed words private
/// to this launch.
#[inline(always)]
pub unsafe fn agents<const INDEXING: u32>(
    launch: &ClusterLaunch,
    chunk: u32,
    mut task: impl FnMut(u32, Cta),
    mut prefetch: impl FnMut(u32, Cta),
) {
    unsafe {
        check_abi(launch);
        let ticket = crate::shared_array!(clustered_ticket: [u32; 4]);
        let leader = thread_idx_x() == 0 && thread_idx_y() == 0 && thread_idx_z() == 0;
        let partition = launch.partition;
        let scratch = launch.scratch as *mut u32;
        let counters =
            GlobalCounters::at(scratch.add(launch.sm_slots as usize), partition.clusters);
        // Claims may be smaller than `chunk` (the host sizes them to the work);
        // `chunk` still bounds the task loop below.
        let claim_chunk = launch.claim_chunk(chunk);
        let sm = sm_id();
        let mut claimer = Claimer::new(sm, partition.clusters);
        // Throttling: the first ACTIVE agents to arrive on an SM work.
        let working = leader && {
            let slot = fold_sm_id(sm, launch.sm_slots);
            fetch_inc_wrapping(scratch.add(slot as usize), u32::MAX - 1) < launch.active_agents
        };
        let delinearize = &launch.delinearize;
        let grid = delinearize.grid();
        let mut parity = 0;
        loop {
            // One claim site (the first claim, then one after each chunk,
            // just before the barrier that publishes it): written twice,
            // the claim's code took more registers.
            if leader {
                let next = if working {
                    claimer.claim(&counters, &partition, claim_chunk)
                } else {
                    None
                };
                publish(ticket, parity, &partition, next);
            }
            hardware::scheduler_barrier();
            let start = ticket.read(2 * parity);
            // Never above `chunk`; saying so keeps LLVM from unrolling the task
            // loop into copies of the body (`tests/kernel_resources.rs`).
            let count = ticket.read(2 * parity + 1).min(chunk);
            if count == 0 {
                break;
            }
            // Stepping costs a compare per task where delinearizing cost two
            // divisions by multiplication (DESIGN.md section 7: no division per
            // task). In H100 bench runs before and after (the session that made
            // the change; its output files were not kept) it took persistent
            // Jacobi from 0.946x to 1.016x of its baseline, vector add from
            // 0.931x to 0.945x. The claim's first CTA is mapped for the
            // entry's kind (`INDEXING`, `Delinearize::as_kind`): k-means'
            // chunks of 8 0.93x -> 1.00x of its kernel, ATAX's 0.88x ->
            // 0.96x (H100, docs/BENCHMARKS.md, "The task loops compiled for
            // their indexing"). The steps keep the launch's kind: compiled
            // for it, LLVM unrolled the task loop into copies of the body.
            let mut index = delinearize.as_kind::<INDEXING>().cta(start);
            for k in 0..count {
                // Stepped here and again after the task (LLVM merges the two):
                // one value live across the task only when a hook uses it.
                if k + 1 < count {
                    let following = delinearize.step(index, start + k + 1);
                    prefetch(start + k + 1, Cta::new(following, grid));
                }
                task(start + k, Cta::new(index, grid));
                index = delinearize.step(index, start + k + 1);
            }
            // The next claim comes after the chunk ran, not before it: see
            // the function's documentation.
            parity ^= 1;
        }
    }
}
