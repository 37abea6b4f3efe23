//! The simulated GPU: its SMs, their `%smid`s, and how CTAs are dispatched.

use std::fmt;

/// How the first wave of CTAs is spread over the SMs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dispatch {
    /// SM 0, 1, 2, ...: the textbook assumption, under which the paper's
    /// redirection binds clusters to SMs.
    RoundRobin,
    /// An approximation of what an H200 was seen to do (DESIGN.md section 7):
    /// the last eighth of the SMs first, then pairs of SMs striding across
    /// the chip (0-1, then half-way, 2-3, ...).
    ObservedHopper,
    /// A shuffled order from a seed.
    Random(u64),
}

impl Dispatch {
    /// The order in which `sm_count` SMs receive the first wave.
    pub fn fill_order(&self, sm_count: u32) -> Vec<u32> {
        match self {
            Dispatch::RoundRobin => (0..sm_count).collect(),
            Dispatch::ObservedHopper => {
                let first = (sm_count / 16).max(1).min(sm_count);
                let mut order: Vec<u32> = (sm_count - first..sm_count).collect();
                let rest = sm_count - first;
                let half = rest / 2;
                // Pairs (2k, 2k+1) from the first half, each followed by its
                // counterpart half-way across the chip.
                let pairs = half.div_ceil(2);
                for k in 0..pairs {
                    for base in [2 * k, half + 2 * k] {
                        for sm in [base, base + 1] {
                            if sm < rest && !order.contains(&sm) {
                                order.push(sm);
                            }
                        }
                    }
                }
                order.extend(
                    (0..rest)
                        .filter(|sm| !order.contains(sm))
                        .collect::<Vec<_>>(),
                );
                order
            }
            Dispatch::Random(seed) => {
                let mut order: Vec<u32> = (0..sm_count).collect();
                let mut state = *seed;
                for i in (1..order.len()).rev() {
                    state = splitmix64(state);
                    order.swap(i, (state % (i as u64 + 1)) as usize);
                }
                order
            }
        }
    }
}

/// A step of splitmix64: the seeded shuffles need no `rand`.
pub(crate) fn splitmix64(state: u64) -> u64 {
    let mut z = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The simulated GPU a CPU run uses.
#[derive(Clone, Debug)]
pub struct Machine {
    /// `%smid` of each simulated SM (ids need not be contiguous).
    pub sm_ids: Vec<u32>,
    /// `%nsmid`: above every id.
    pub sm_id_bound: u32,
    /// Who gets the first wave.
    pub dispatch: Dispatch,
    /// The tick from which each SM accepts CTAs; `u64::MAX`: never (an SM
    /// busy with another kernel, to starve agents in tests).
    pub available_from: Vec<u64>,
    /// Stack bytes per simulated thread.
    pub stack_bytes: usize,
    /// Warp instructions a warp issues in a row before the next warp's turn
    /// (a GPU warp also issues independent loads back to back). Larger is
    /// faster to simulate, because the threads' stacks stay in the host's
    /// caches (1 -> 8 took the tiled SGEMM at n = 384 from about 6 s to
    /// 2.2 s per schedule in `examples/locality`), and interleaves warps more
    /// coarsely.
    pub warp_burst: u32,
    /// `Some(seed)`: resume the warps of a CTA, and the lanes of a warp, in
    /// an order shuffled afresh at every step from `seed`, so a kernel whose
    /// result depends on the order of its threads shows it. `None` (the
    /// default): a fixed order, warp 0 lane 0 first.
    pub interleave: Option<u64>,
    /// Stop a run at the first shared-memory race: a 4-byte word written by
    /// one thread and read or written by another between two barriers of
    /// their CTA. On by default.
    pub check_races: bool,
}

impl Machine {
    /// `sm_count` SMs with ids `0..sm_count`, all available, round-robin.
    pub fn new(sm_count: u32) -> Self {
        Machine {
            sm_ids: (0..sm_count).collect(),
            sm_id_bound: sm_count,
            dispatch: Dispatch::RoundRobin,
            available_from: vec![0; sm_count as usize],
            stack_bytes: 64 * 1024,
            warp_burst: 8,
            interleave: None,
            check_races: true,
        }
    }

    /// The same machine resuming threads in an order shuffled from `seed`
    /// (see [`Machine::interleave`](Machine#structfield.interleave)): the
    /// same seed gives the same order, so a failure can be replayed.
    pub fn interleave(mut self, seed: u64) -> Self {
        self.interleave = Some(seed);
        self
    }

    /// The same machine with the shared-memory race detector on or off.
    pub fn check_races(mut self, on: bool) -> Self {
        self.check_races = on;
        self
    }

    /// The same machine with `bytes` of stack per simulated thread.
    pub fn with_stack_bytes(mut self, bytes: usize) -> Self {
        self.stack_bytes = bytes;
        self
    }

    /// The same machine with another dispatch order.
    pub fn with_dispatch(mut self, dispatch: Dispatch) -> Self {
        self.dispatch = dispatch;
        self
    }

    /// The same machine with these `%smid`s (one per SM, distinct).
    pub fn with_sm_ids(mut self, ids: Vec<u32>) -> Self {
        // An id of u32::MAX has no bound above it: `check` refuses it.
        self.sm_id_bound = ids.iter().max().map_or(0, |m| m.saturating_add(1));
        self.sm_ids = ids;
        self
    }

    /// SM `sm` takes no CTA before `tick` (`u64::MAX`: never).
    pub fn starve(mut self, sm: u32, tick: u64) -> Self {
        if let Some(slot) = self.available_from.get_mut(sm as usize) {
            *slot = tick;
        }
        self
    }

    /// Simulated SMs.
    pub fn sm_count(&self) -> u32 {
        self.sm_ids.len() as u32
    }

    /// What [`run`](super::run) refuses in this machine, without running:
    /// `CpuError::BadMachine`.
    pub fn check(&self) -> Result<(), CpuError> {
        let count = self.sm_ids.len();
        if count == 0 || self.available_from.len() != count {
            return Err(CpuError::BadMachine(format!(
                "{count} SM ids and {} availability entries: give one of each per SM, at least one SM",
                self.available_from.len()
            )));
        }
        let mut ids = self.sm_ids.clone();
        ids.sort_unstable();
        ids.dedup();
        if ids.len() != count || ids.last().is_some_and(|&max| max >= self.sm_id_bound) {
            return Err(CpuError::BadMachine(
                "SM ids must be distinct and below sm_id_bound".into(),
            ));
        }
        if u32::try_from(count).is_err() {
            return Err(CpuError::BadMachine(format!(
                "{count} SMs; at most 2^32 - 1"
            )));
        }
        if self.warp_burst == 0 {
            return Err(CpuError::BadMachine(
                "warp_burst is 0: a warp must issue at least one instruction per turn".into(),
            ));
        }
        if self.available_from.iter().all(|&t| t == u64::MAX) {
            return Err(CpuError::BadMachine(
                "every SM is starved forever: nothing could run".into(),
            ));
        }
        Ok(())
    }
}

/// One launch on the CPU backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuLaunch {
    /// Blocks in the grid (x, y, z).
    pub grid: [u32; 3],
    /// Threads per block (x, y, z).
    pub block: [u32; 3],
    /// Dynamic shared memory per block.
    pub dynamic_shared_bytes: u32,
    /// CTAs resident at once on one SM (the occupancy).
    pub resident_blocks: u32,
}

/// CTAs resident on one SM at most (the Hopper limit).
pub const MAX_RESIDENT_BLOCKS: u32 = 32;

/// Threads in one block at most (every CUDA GPU's limit).
pub const MAX_BLOCK_THREADS: u32 = 1024;

/// Shared memory a CTA may use on the CPU backend (the Hopper limit).
pub const MAX_SHARED_BYTES: u32 = 227 * 1024;

/// Where a simulated thread was: its CTA, its thread index and, for a run
/// with [`Machine::interleave`], the seed that reproduces the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadAt {
    /// The hardware CTA (`%ctaid`).
    pub block: [u32; 3],
    /// The thread (`%tid`).
    pub thread: [u32; 3],
    /// The interleaving seed, if the run shuffled its threads.
    pub seed: Option<u64>,
}

impl fmt::Display for ThreadAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "thread {:?} of block {:?}", self.thread, self.block)
    }
}

/// Which barrier instruction a thread waits at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BarrierKind {
    /// `barrier.sync 0` ([`sync_threads`](crate::thread::sync_threads)): every
    /// thread of the CTA at one call site.
    Sync,
    /// `barrier.cta.red.and.pred 0`
    /// ([`sync_threads_and`](crate::thread::sync_threads_and)): any call
    /// sites, no mixing with `Sync`.
    And,
    /// `barrier.sync id, threads`: the CTA's first `threads` threads at one
    /// call site (a task pool's barriers, which a publishing warp beyond
    /// them never reaches: `clustered_abi::pool`, "A publishing warp").
    Counted {
        /// The barrier's number.
        id: u32,
        /// The threads it waits for: the CTA's first ones.
        threads: u32,
    },
}

/// Why a CPU run failed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CpuError {
    /// The machine description is inconsistent.
    BadMachine(String),
    /// The launch cannot run: empty grid or block, too many threads, ...
    BadLaunch(String),
    /// A simulated thread panicked (an out-of-bounds index, `trap()`, ...).
    Panicked {
        /// The panic message.
        message: String,
        /// The hardware CTA and thread.
        at: ThreadAt,
    },
    /// No memory for the simulated threads' stacks.
    Stack(String),
    /// A simulated thread used more than its stack (`Machine::stack_bytes`):
    /// it reached the guard page below it.
    StackOverflow {
        /// The thread.
        at: ThreadAt,
        /// Its stack's size.
        stack_bytes: usize,
    },
    /// A checked run ([`run_checked`](super::run_checked)) stopped a thread
    /// before an access outside the kernel's buffers.
    OutOfBounds {
        /// The hardware CTA.
        block: [u32; 3],
        /// The thread in it.
        thread: [u32; 3],
        /// What it tried.
        fault: super::Fault,
    },
    /// Threads of one CTA wait at different barriers: two call sites of
    /// `sync_threads`, or `sync_threads` mixed with `sync_threads_and`. On a
    /// GPU the barrier's arrival count mixes them up: a hang or a barrier
    /// that opens early.
    BarrierDivergence(Box<BarrierDivergence>),
    /// Threads of one persistent block wait at a barrier in different tasks:
    /// one left its task without ending it for the block (a `return` the
    /// macro did not see) and ran ahead into its next task, where its
    /// barriers pair with the last task's. On a GPU: a wrong result or a
    /// hang.
    TaskOverrun(Box<TaskOverrun>),
    /// Two threads of a CTA touched the same shared-memory word between two
    /// barriers, at least one of them writing: the result depends on the
    /// order in which they run.
    SharedRace(Box<SharedRace>),
}

/// Two threads of a CTA waiting at different barriers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BarrierDivergence {
    /// One waiting thread and where it waits (`file:line:column`).
    pub first: ThreadAt,
    /// The barrier the first waits at, and its call site.
    pub first_barrier: (BarrierKind, String),
    /// Another waiting at a different barrier.
    pub second: ThreadAt,
    /// The barrier the second waits at, and its call site.
    pub second_barrier: (BarrierKind, String),
}

/// A thread waiting at a barrier of a later task than another thread of its
/// block ([`CpuError::TaskOverrun`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskOverrun {
    /// The thread in the later task.
    pub ahead: ThreadAt,
    /// Its task (the original CTA's linear id) and the barrier it waits at.
    pub ahead_task: u32,
    /// That barrier and its call site.
    pub ahead_barrier: (BarrierKind, String),
    /// A thread still in an earlier task.
    pub behind: ThreadAt,
    /// Its task.
    pub behind_task: u32,
    /// The barrier it waits at and its call site.
    pub behind_barrier: (BarrierKind, String),
}

/// Two accesses to one shared-memory word, with no barrier between.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedRace {
    /// The earlier access: its thread, whether it wrote, and where
    /// (`file:line:column`, if known).
    pub first: ThreadAt,
    /// Whether the earlier access wrote.
    pub first_wrote: bool,
    /// Where the earlier access is in the source, if known.
    pub first_site: Option<String>,
    /// The later access, the one that found the race.
    pub second: ThreadAt,
    /// Whether the later access wrote.
    pub second_wrote: bool,
    /// Where the later access is in the source.
    pub second_site: String,
    /// Byte offset of the word in the CTA's shared memory.
    pub offset: u32,
}

/// Tells how to replay a shuffled run.
fn seed_note(f: &mut fmt::Formatter<'_>, at: &ThreadAt) -> fmt::Result {
    match at.seed {
        Some(seed) => write!(
            f,
            " (threads interleaved with seed {seed}: Machine::interleave({seed}) replays it)"
        ),
        None => Ok(()),
    }
}

fn access(wrote: bool) -> &'static str {
    if wrote {
        "wrote"
    } else {
        "read"
    }
}

fn barrier(f: &mut fmt::Formatter<'_>, (kind, site): &(BarrierKind, String)) -> fmt::Result {
    match kind {
        BarrierKind::Sync => write!(f, "sync_threads() at {site}"),
        BarrierKind::And => write!(f, "sync_threads_and() at {site}"),
        BarrierKind::Counted { id, threads } => {
            write!(
                f,
                "the pool's barrier {id} of the first {threads} threads at {site}"
            )
        }
    }
}

impl fmt::Display for CpuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CpuError::BadMachine(why) => write!(f, "bad simulated machine: {why}"),
            CpuError::BadLaunch(why) => write!(f, "bad launch: {why}"),
            CpuError::Panicked { message, at } => {
                write!(f, "the kernel panicked in {at}: {message}")?;
                seed_note(f, at)
            }
            CpuError::Stack(why) => write!(f, "{why}: simulate fewer SMs"),
            CpuError::StackOverflow { at, stack_bytes } => {
                write!(
                    f,
                    "{at} overflowed its {stack_bytes}-byte stack (a deep recursion or a large \
                     local array): give it more with Machine::with_stack_bytes, or move the \
                     array to shared or global memory"
                )?;
                seed_note(f, at)
            }
            CpuError::BarrierDivergence(divergence) => {
                let BarrierDivergence {
                    first,
                    first_barrier,
                    second,
                    second_barrier,
                } = &**divergence;
                write!(f, "barrier divergence: {first} waits at ")?;
                barrier(f, first_barrier)?;
                write!(f, " while {second} waits at ")?;
                barrier(f, second_barrier)?;
                write!(
                    f,
                    "; every live thread of a CTA must reach the same barrier (threads that \
                     return early may skip it): make the branch around the barrier uniform \
                     across the block, or move the barrier out of it"
                )?;
                seed_note(f, first)
            }
            CpuError::TaskOverrun(overrun) => {
                let TaskOverrun {
                    ahead,
                    ahead_task,
                    ahead_barrier,
                    behind,
                    behind_task,
                    behind_barrier,
                } = &**overrun;
                write!(
                    f,
                    "a thread ran ahead into its next task: {ahead} waits at "
                )?;
                barrier(f, ahead_barrier)?;
                write!(f, " in task {ahead_task} while {behind} waits at ")?;
                barrier(f, behind_barrier)?;
                write!(
                    f,
                    " in task {behind_task}; in a persistent schedule (agents, persistent, \
                     stride) a thread must leave its task by a way #[clustered] sees: a `return` \
                     written in the kernel's body, not one inside a macro or a helper function"
                )?;
                seed_note(f, ahead)
            }
            CpuError::SharedRace(race) => {
                let SharedRace {
                    first,
                    first_wrote,
                    first_site,
                    second,
                    second_wrote,
                    second_site,
                    offset,
                } = &**race;
                write!(
                    f,
                    "shared-memory race at byte {offset}: {first} {} it",
                    access(*first_wrote)
                )?;
                if let Some(site) = first_site {
                    write!(f, " at {site}")?;
                }
                write!(
                    f,
                    " and {second} {} it at {second_site} with no sync_threads() between: \
                     put a barrier between the write and the other thread's access (for a \
                     thread that the barriers do not count, such as a pool's publishing \
                     warp: a release store after the write that it acquires before), or give \
                     each thread its own element",
                    access(*second_wrote)
                )?;
                seed_note(f, first)
            }
            CpuError::OutOfBounds {
                block,
                thread,
                fault,
            } => write!(f, "thread {thread:?} of block {block:?}: {fault}"),
        }
    }
}

impl std::error::Error for CpuError {}

impl CpuLaunch {
    /// Threads per block (x * y * z).
    pub fn block_threads(&self) -> u64 {
        self.block.iter().map(|&d| d as u64).product()
    }

    /// What [`run`](super::run) refuses in this launch, without running:
    /// `CpuError::BadLaunch`.
    pub fn check(&self) -> Result<(), CpuError> {
        let threads = self.block_threads();
        let blocks: u64 = self.grid.iter().map(|&d| d as u64).product();
        if threads == 0 || blocks == 0 {
            return Err(CpuError::BadLaunch(format!(
                "grid {:?} and block {:?} must have no zero dimension",
                self.grid, self.block
            )));
        }
        if threads > u64::from(MAX_BLOCK_THREADS) {
            return Err(CpuError::BadLaunch(format!(
                "{threads} threads per block; at most {MAX_BLOCK_THREADS}"
            )));
        }
        if blocks > u32::MAX as u64 {
            return Err(CpuError::BadLaunch(format!(
                "{blocks} blocks; at most 2^32 - 1"
            )));
        }
        if self.dynamic_shared_bytes > MAX_SHARED_BYTES {
            return Err(CpuError::BadLaunch(format!(
                "{} bytes of dynamic shared memory; at most {MAX_SHARED_BYTES}",
                self.dynamic_shared_bytes
            )));
        }
        if self.resident_blocks == 0 || self.resident_blocks > MAX_RESIDENT_BLOCKS {
            return Err(CpuError::BadLaunch(format!(
                "resident_blocks is {}: between 1 and {MAX_RESIDENT_BLOCKS} CTAs fit on an SM",
                self.resident_blocks
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_permutation(order: &[u32], n: u32) -> bool {
        let mut sorted = order.to_vec();
        sorted.sort_unstable();
        sorted == (0..n).collect::<Vec<_>>()
    }

    #[test]
    fn every_fill_order_is_a_permutation() {
        for n in [1, 2, 3, 7, 8, 16, 33, 132] {
            for dispatch in [
                Dispatch::RoundRobin,
                Dispatch::ObservedHopper,
                Dispatch::Random(n as u64),
            ] {
                let order = dispatch.fill_order(n);
                assert!(is_permutation(&order, n), "{dispatch:?} {n}: {order:?}");
            }
        }
    }

    #[test]
    fn observed_order_starts_with_the_last_sms_then_pairs() {
        let order = Dispatch::ObservedHopper.fill_order(132);
        assert_eq!(&order[..8], &[124, 125, 126, 127, 128, 129, 130, 131]);
        assert_eq!(&order[8..12], &[0, 1, 62, 63]);
    }

    #[test]
    fn bad_machines_are_refused() {
        assert!(Machine::new(4).check().is_ok());
        assert!(Machine::new(0).check().is_err());
        assert!(Machine::new(2).with_sm_ids(vec![3, 3]).check().is_err());
        let starved = Machine::new(2).starve(0, u64::MAX).starve(1, u64::MAX);
        assert!(starved.check().is_err());
        // Extreme values are errors, not panics or hangs.
        let top_id = Machine::new(2).with_sm_ids(vec![0, u32::MAX]);
        assert!(matches!(top_id.check(), Err(CpuError::BadMachine(_))));
        let mut no_burst = Machine::new(1);
        no_burst.warp_burst = 0;
        assert!(matches!(no_burst.check(), Err(CpuError::BadMachine(_))));
        let launch = CpuLaunch {
            grid: [1, 1, 1],
            block: [32, 1, 1],
            dynamic_shared_bytes: 0,
            resident_blocks: u32::MAX,
        };
        assert!(matches!(launch.check(), Err(CpuError::BadLaunch(_))));
    }
}
