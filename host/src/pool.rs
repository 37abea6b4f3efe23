//! A host-fed persistent task pool (CAGTP, issue 15): resident blocks of a
//! pool kernel ([`clustered_device::pool::serve`]) run small tasks that the
//! host pushes while the kernel runs, without a launch per task.
//!
//! ```ignore
//! let pool = TaskPool::gpu(&gpu, &module.kernel("pool_demo")?, PoolConfig::new(KINDS))?;
//! let a = pool.push(Task::new(SAXPY, ctas, Saxpy { x, y, a: 2.0, n }))?;
//! let c = pool.push_after(Task::new(SAXPY, ctas, Saxpy { x: y, y: z, a: 1.0, n }), &[a])?;
//! let done = pool.pop_finished()?; // `a`, then `c`
//! pool.shutdown(Shutdown::Drain)?;
//! ```
//!
//! - Each resident block owns a ring of [`RING_ENTRIES`] [`Slot`]s in
//!   page-locked host memory that the GPU reads through its mapping (on the
//!   CPU backend, plain host memory) and serves them in order; one more
//!   block, the publisher, stores FINISHED for them; the protocol is
//!   [`clustered_device::pool`]'s (version 7, defined in `clustered_abi::pool`).
//! - One scheduler thread moves pushed tasks into the rings and finished
//!   ones into the output queue, in batches: pushes wait in an inbox in
//!   shards by pushing thread, each under a lock of its own, which the
//!   scheduler empties under all their locks at once per pass, taking in at
//!   most 128 of them per pass between its collections (a backlog of
//!   thousands left the rings empty for milliseconds), and the
//!   finished tasks it saw go to the poppers under one lock per pass. It fills the rings level by level (every
//!   block with nothing in flight gets a task before any gets a second), up
//!   to [`PoolConfig::depth`] tasks per block, so a block finds its next
//!   task already there when it finishes one. While tasks are in flight it
//!   polls without sleeping for [`PoolConfig::spin`], then sleeps 50 us
//!   between polls. Any number of threads may push and pop (`TaskPool` is
//!   `Send + Sync`); pushes wake only the scheduler, and poppers are woken
//!   only when something finished.
//! - A task pushed after tasks that are all in one block's ring (or finished)
//!   goes into that ring behind them (with gates and spread on, only a task
//!   of one CTA: a rider runs whole on its block, so a bigger one is gated
//!   and split instead), without waiting for them to come back
//!   to the host: the block runs its ring in order with a barrier between
//!   tasks, so it sees their writes. A task rides behind at most one such
//!   follower per dependency (the first pushed): a chain runs in one ring
//!   with no host round trip per task (up to a whole ring of it in flight,
//!   whatever the depth).
//! - A dependent whose unfinished dependencies are all in rings and signal
//!   one gate counter (they were pushed after the same tasks: a fan-out's
//!   other branches, a join after one level of a graph) goes into a ring at
//!   once, gated on that counter: the block waits on the GPU until every
//!   one of them ended ([`PoolConfig::gates`]; `clustered_abi::pool`,
//!   "Gates"). Any other dependent waits on the host until its
//!   dependencies finished, and then spreads over idle blocks.
//! - A ready task of several CTAs is spread over idle blocks, a share of
//!   its CTAs on each, when there are more idle blocks than ready tasks
//!   (as a launch spreads its grid over the SMs); it finishes when every
//!   share did ([`PoolConfig::spread`]).
//! - Every pushed task comes out of [`TaskPool::pop_finished`] exactly once,
//!   as run, refused by the kernel, or cancelled: none is lost, and
//!   [`TaskPool::shutdown`] hands back those not popped yet. A task in a
//!   ring belongs to the device until it finished, so [`Shutdown::Cancel`]
//!   cancels only tasks not yet in a ring (at most `depth` per block run,
//!   or a ring-full of a chain).
//! - Waiting never hangs the process: a wait longer than the pool's
//!   timeout is [`PoolError::Timeout`] naming the tasks still in rings. A
//!   task that never ends keeps its block (and the tasks behind it in its
//!   ring); the pool then never frees the rings' memory (the block may still
//!   read it) and does not join its threads on drop.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use clustered_device::pool::{
    block_with_publishing_warp, device_words, header_slot, pool_slots, start_lines,
    start_marks_slot, state_name, Header, Payload, Slot, Task, EXIT, FINISHED, IDLE, PAYLOAD_BYTES,
    POOL_ABI_VERSION, PUBLISHING_WARP_THREADS, READY, RING_ENTRIES, RUNNING, STATUS_EMPTY_GRID,
    STATUS_OK, STATUS_UNKNOWN_KIND,
};

use clustered_device::cpu::{MAX_BLOCK_THREADS, MAX_RESIDENT_BLOCKS};
use clustered_device::pool::gate_counters;

use crate::cpu::{CpuLaunch, Machine, NoObserver};

/// Names one pushed task; unique within its pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ticket(pub u64);

/// What [`TaskPool::shutdown`] does with tasks not started yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shutdown {
    /// Runs every pushed task, then stops the blocks.
    Drain,
    /// Drops queued tasks (they finish as [`Outcome::Cancelled`]), lets the
    /// running ones end, then stops the blocks.
    Cancel,
}

/// How a task ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It ran; `result` is what the body returned (thread 0, last CTA).
    Ran {
        /// The body's value.
        result: u64,
    },
    /// The kernel does not serve its kind: nothing ran.
    UnknownKind,
    /// It asked for zero CTAs: nothing ran.
    EmptyGrid,
    /// Cancelled by [`Shutdown::Cancel`] before it started.
    Cancelled,
    /// The slot came back with a status this host does not know.
    Status(u32),
}

/// A task that left the pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Finished {
    /// The ticket [`TaskPool::push`] returned.
    pub ticket: Ticket,
    /// The task's kind.
    pub kind: u32,
    /// How it ended.
    pub outcome: Outcome,
}

/// A task in a ring when a wait timed out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InSlot {
    /// The resident block whose ring holds it.
    pub slot: u32,
    /// Its entry in that ring (`0..RING_ENTRIES`).
    pub entry: u32,
    /// The task's ticket.
    pub ticket: Ticket,
    /// The entry's state when the wait gave up (READY: the block has not
    /// taken it yet, e.g. it is behind a running task; RUNNING: the block
    /// runs it).
    pub state: &'static str,
}

/// Why a pool call failed.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum PoolError {
    /// The pool was shut down: it takes no more tasks.
    ShutDown,
    /// The task's kind is not one the pool kernel serves.
    UnknownKind {
        /// The kind pushed.
        kind: u32,
        /// The kernel serves `0..kinds` ([`PoolConfig::new`]).
        kinds: u32,
    },
    /// The task asks for no CTA at all.
    EmptyGrid {
        /// Its kind.
        kind: u32,
    },
    /// A dependency names no task pushed to this pool.
    UnknownDependency(Ticket),
    /// More blocks than the device keeps resident at once: a block that
    /// never starts would never serve its ring.
    TooLarge {
        /// Blocks the launch needs: the rings asked for and the publisher.
        blocks: u32,
        /// Blocks that fit (resident per SM times SMs).
        resident: u32,
    },
    /// The configuration cannot run (zero blocks or threads, a depth
    /// outside `1..=RING_ENTRIES`): what, with the value given.
    Config(String),
    /// Nothing to wait for: no pushed task is unfinished or unpopped.
    NothingUnfinished,
    /// A wait passed the pool's timeout; the tasks still in rings are
    /// named. The pool keeps going: a later wait gets them if they end.
    Timeout {
        /// How long the call waited.
        waited: Duration,
        /// Tasks pushed and not finished.
        unfinished: usize,
        /// The tasks in rings (started or not), by block and entry.
        in_slots: Vec<InSlot>,
    },
    /// Not every block of the pool started within the pool's timeout:
    /// something else on the device (another pool, a long kernel) holds the
    /// SMs the rest need. The pool published nothing and told its blocks to
    /// leave (one that starts later leaves at once).
    NotResident {
        /// The blocks that never started (the publisher is `blocks - 1`).
        missing: Vec<u32>,
        /// Blocks of the launch: the rings and the publisher.
        blocks: u32,
        /// How long the start waited.
        waited: Duration,
    },
    /// The pool kernel failed or ended before it was told to exit.
    Device(String),
}

impl fmt::Display for PoolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PoolError::ShutDown => write!(f, "the pool was shut down: push before `shutdown`, or make a new pool"),
            PoolError::UnknownKind { kind, kinds } => write!(
                f,
                "task kind {kind} is not served by the pool kernel (it serves 0..{kinds}): use one of its kinds, or raise `PoolConfig::new(kinds)` to what the kernel's `serve` call says"
            ),
            PoolError::EmptyGrid { kind } => write!(f, "a task of kind {kind} asks for 0 CTAs: give it at least one"),
            PoolError::UnknownDependency(t) => write!(f, "dependency {t:?} was not pushed to this pool"),
            PoolError::TooLarge { blocks, resident } => {
                write!(
                    f,
                    "a pool of {rings} rings needs {blocks} co-resident blocks (one more publishes finished tasks), at most {resident} fit: ",
                    rings = blocks.saturating_sub(1),
                )?;
                match resident.checked_sub(1).filter(|&most| most > 0) {
                    Some(most) => write!(f, "ask for at most {most} blocks, or let more stay resident"),
                    None => write!(f, "a pool needs 2 at least (a worker and the publisher), so let more stay resident"),
                }?;
                write!(f, " (fewer threads or less shared memory per block; on the CPU backend, more resident blocks per SM)")
            }
            PoolError::Config(what) => write!(f, "bad pool configuration: {what}"),
            PoolError::NothingUnfinished => write!(f, "no task is unfinished: waiting would never end (push first)"),
            PoolError::Timeout { waited, unfinished, in_slots } => {
                write!(f, "waited {waited:?} and {unfinished} task(s) are unfinished; in rings:")?;
                for s in in_slots {
                    write!(f, " block {} entry {} {:?} {}", s.slot, s.entry, s.ticket, s.state)?;
                }
                write!(f, " (a task that never returns keeps its block; raise `PoolConfig::timeout` if it is only slow)")
            }
            PoolError::NotResident { missing, blocks, waited } => write!(
                f,
                "{} of the pool's {blocks} blocks did not start within {waited:?} (blocks {}): another pool or a long kernel holds the SMs they need, and a task in their rings would never run; shut the other pool down (one pool per GPU at a time) or wait for the kernel, ask for fewer blocks (`PoolConfig::blocks`), or raise `PoolConfig::timeout` if the device is only busy for a while",
                missing.len(),
                list_blocks(missing),
            ),
            PoolError::Device(why) => write!(f, "the pool kernel failed: {why}"),
        }
    }
}

impl std::error::Error for PoolError {}

/// `0, 1, 2, ...`, at most eight, then how many more.
fn list_blocks(blocks: &[u32]) -> String {
    let shown: Vec<String> = blocks.iter().take(8).map(u32::to_string).collect();
    match blocks.len().saturating_sub(8) {
        0 => shown.join(", "),
        more => format!("{}, and {more} more", shown.join(", ")),
    }
}

/// The scheduler's default polling window: see [`PoolConfig::spin`].
pub const DEFAULT_SPIN: Duration = Duration::from_millis(2);

/// Ready tasks queued per block by default ([`PoolConfig::depth`]): enough
/// to cover a round trip through the host with short tasks, few enough
/// that a block with long tasks does not hoard work that idle blocks could
/// run, and that [`Shutdown::Cancel`] still reaches most of a backlog.
pub const DEFAULT_DEPTH: u32 = 8;

/// Pushes the scheduler takes in per pass at most, between its collections
/// and dispatches: a few tens of microseconds of bookkeeping.
const INTAKE_PER_PASS: usize = 128;

/// How long the scheduler sleeps between polls once the polling window
/// passed with tasks in flight and nothing finished.
const SLOW_POLL: Duration = Duration::from_micros(50);

/// How often the scheduler asks the driver whether the pool kernel ended
/// by itself (a fault), while it polls.
const DEVICE_POLL: Duration = Duration::from_millis(1);

/// How long the scheduler sleeps, with nothing queued or in flight, before
/// it looks at the device again (a push or a shutdown wakes it at once).
const IDLE_POLL: Duration = Duration::from_millis(50);

/// How many worker blocks a pool asked for ([`PoolConfig::blocks`],
/// [`PoolConfig::blocks_per_sm`]).
#[derive(Clone, Copy, Debug)]
enum Blocks {
    Total(u32),
    PerSm(u32),
}

/// How to build a pool.
#[derive(Clone, Debug)]
pub struct PoolConfig {
    kinds: u32,
    blocks: Option<Blocks>,
    block_threads: u32,
    timeout: Duration,
    spin: Duration,
    depth: u32,
    spread: bool,
    gates: bool,
    publishing_warp: bool,
    cpu_publishing_warp: bool,
}

impl PoolConfig {
    /// A pool whose kernel serves task kinds `0..kinds`: blocks of 128
    /// threads, one per SM, up to [`DEFAULT_DEPTH`] ready tasks in flight
    /// per block, a polling window of [`DEFAULT_SPIN`], waits of at most
    /// 10 s.
    pub fn new(kinds: u32) -> Self {
        PoolConfig {
            kinds,
            blocks: None,
            block_threads: 128,
            timeout: Duration::from_secs(10),
            spin: DEFAULT_SPIN,
            depth: DEFAULT_DEPTH,
            spread: true,
            gates: true,
            publishing_warp: true,
            cpu_publishing_warp: false,
        }
    }

    /// Whether a pool on the GPU runs each worker block with one more warp
    /// that publishes its tasks, where the build found the kernel's tasks
    /// can run beside it (default `true`; `clustered_abi::pool`, "A
    /// publishing warp", and [`Kernel::publishing_warp`](crate::Kernel::publishing_warp)):
    /// the task threads then go on to their next task while that warp runs
    /// the fence that publishes the last, and one fence serves every task
    /// that ended meanwhile. `false` has thread 0 publish each task, as a
    /// kernel whose tasks wait at plain barriers or read the block's size
    /// always does (and a block of threads that are not whole warps).
    pub fn publishing_warp(mut self, publishing_warp: bool) -> Self {
        self.publishing_warp = publishing_warp;
        self
    }

    /// Whether the CPU backend ([`TaskPool::cpu`]) runs the kernel as the
    /// GPU runs one that the build marked for a publishing warp (default
    /// `false`: a function carries no mark). Pass whether the build marked
    /// it, from the module's PTX
    /// ([`ptx_publishing_warp_entries`](crate::ptx_publishing_warp_entries)):
    /// `ptx_publishing_warp_entries(PTX).iter().any(|e| e == "my_pool")`.
    /// The engine then reports what would keep the build from marking it
    /// as the run's error, naming the call: a plain `sync_threads()` in a
    /// task (on the GPU, a hang beside the warp) or a read of the block's
    /// size. Needs [`PoolConfig::publishing_warp`] and task threads in
    /// whole warps, as on the GPU.
    pub fn cpu_publishing_warp(mut self, marked: bool) -> Self {
        self.cpu_publishing_warp = marked;
        self
    }

    /// Whether a task whose dependencies run on other blocks may be put
    /// into a ring before they finished, gated on a counter they add to on
    /// the GPU (default `true`; `clustered_abi::pool`, "Gates"): a level
    /// of a task graph (a k-means iteration's assigns after its update,
    /// the update after every assign) then starts as soon as the last task
    /// before it ended on the GPU, not after the host saw them all end.
    /// The gated task waits on its block (which runs nothing else
    /// meanwhile); it is gated only when every unfinished dependency is
    /// already in a ring. `false` keeps such a task on the host until its
    /// dependencies finished.
    pub fn gates(mut self, gates: bool) -> Self {
        self.gates = gates;
        self
    }

    /// Whether a ready task of several CTAs may run on several blocks at
    /// once, a share of its CTAs on each (default `true`): the scheduler
    /// gives each ready task an equal part of the blocks with nothing in
    /// flight, at most one per CTA, so a task of 16 CTAs with idle blocks
    /// to spare takes the time of a few CTAs, not of 16 in a row on one
    /// block. `false` runs every task whole on one block. The task's CTAs
    /// must be independent, as a launch's are; its result is thread 0's
    /// value after its last CTA either way. A task that rides behind its
    /// dependency in one ring (a chain) runs whole there.
    pub fn spread(mut self, spread: bool) -> Self {
        self.spread = spread;
        self
    }

    /// How long the scheduler thread keeps polling the rings (spinning,
    /// then yielding its core) after the last task finished or was
    /// dispatched while others are in flight, before it falls back to
    /// sleeping 50 us between polls: a task that ends within the window is
    /// seen at the next poll, one that ends later after a sleep (the
    /// default window is not tuned: `pool_overhead` measures the pool at
    /// it). The window costs one busy core while tasks run. Default [`DEFAULT_SPIN`] (2 ms);
    /// `Duration::ZERO` sleeps at once.
    pub fn spin(mut self, window: Duration) -> Self {
        self.spin = window;
        self
    }

    /// Ready tasks in flight per block at most, `1..=RING_ENTRIES`
    /// (default [`DEFAULT_DEPTH`]): how many the scheduler puts into a
    /// block's ring ahead of the block. More hides the host's round trip
    /// behind the running task; fewer keeps queued tasks on the host, where
    /// [`Shutdown::Cancel`] can still drop them and an idle block can still
    /// take them (a task in a ring waits for the tasks before it, however
    /// long they run). 1 is the protocol of version 1: one task per block.
    /// Use 1 also for tasks that wait on other tasks (not on the host): one
    /// queued behind the waiting task in its ring could never run.
    ///
    /// The steps of a chain riding behind their predecessor are not
    /// bounded by the depth but by the ring ([`RING_ENTRIES`]): they could
    /// run nowhere else first, and a full ring is what makes a chain fast.
    pub fn depth(mut self, depth: u32) -> Self {
        self.depth = depth;
        self
    }

    /// Worker blocks, each serving a ring of [`RING_ENTRIES`] slots; the
    /// pool launches one more, the publisher, and all must fit at once.
    /// Default: one per SM but one, so that with the publisher every SM
    /// holds one block of the pool.
    pub fn blocks(mut self, blocks: u32) -> Self {
        self.blocks = Some(Blocks::Total(blocks));
        self
    }

    /// `per_sm` blocks of the pool on every SM, the publisher one of them:
    /// `per_sm * SMs - 1` worker blocks. Tasks whose CTAs wait on memory
    /// run faster with more than the default one per SM, and dispatch is
    /// slower with them (an H200: 10,000 SGEMM64 tasks at 0.30-0.35 us each
    /// with 3 per SM against 0.70 with 1; empty tasks up to 1.7x slower;
    /// docs/BENCHMARKS.md, "Blocks per SM"). At
    /// most the blocks of the pool kernel that the device keeps resident
    /// per SM, else [`PoolError::TooLarge`].
    ///
    /// At that most the pool may leave no room on any SM: every other
    /// kernel, the memset behind [`Gpu::zeros`](crate::Gpu::zeros)
    /// included, then waits until the pool shut down (on an H200 the
    /// memset did; a copy to the device, which the copy engines run, did
    /// not: `suite/tests/pool_gpu.rs`,
    /// `a_pool_at_full_occupancy_runs_every_task_once`). Allocate before
    /// such a pool starts, and never wait for a kernel on the thread that
    /// is to shut it down; one block per SM less leaves each SM room for a
    /// block as large as the pool's.
    pub fn blocks_per_sm(mut self, per_sm: u32) -> Self {
        self.blocks = Some(Blocks::PerSm(per_sm));
        self
    }

    /// Threads per block (1-D).
    pub fn block_threads(mut self, threads: u32) -> Self {
        self.block_threads = threads;
        self
    }

    /// How long [`TaskPool::pop_finished`] and [`TaskPool::shutdown`] wait
    /// before [`PoolError::Timeout`], and the pool's start for all of its
    /// blocks to be resident before [`PoolError::NotResident`].
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Threads per block of a pool of a kernel that the build marked for a
    /// publishing warp (`marked`) or not: [`PoolConfig::block_threads`],
    /// and one more warp where the config allows it and the task threads
    /// fill whole warps ([`block_with_publishing_warp`]).
    fn launch_threads(&self, marked: bool) -> u32 {
        match block_with_publishing_warp(self.block_threads) {
            Some(block) if self.publishing_warp && marked => block,
            _ => self.block_threads,
        }
    }

    /// Checks the configuration against `resident_per_sm` blocks of the
    /// kernel on each of `sms` SMs; returns the rings (the launch has one
    /// block more).
    fn plan(&self, resident_per_sm: u32, sms: u32) -> Result<u32, PoolError> {
        if self.block_threads == 0 {
            return Err(PoolError::Config("blocks of 0 threads".into()));
        }
        if self.block_threads > MAX_BLOCK_THREADS {
            return Err(PoolError::Config(format!(
                "blocks of {} threads: a block has at most {MAX_BLOCK_THREADS}",
                self.block_threads
            )));
        }
        if self.depth == 0 || self.depth > RING_ENTRIES as u32 {
            return Err(PoolError::Config(format!(
                "a depth (tasks in flight per block) of {}: it must be in 1..={RING_ENTRIES}",
                self.depth
            )));
        }
        let resident = resident_per_sm.saturating_mul(sms);
        let blocks = match self.blocks {
            None => sms.min(resident).saturating_sub(1).max(1),
            Some(Blocks::Total(blocks)) => blocks,
            // The publisher is one of them.
            Some(Blocks::PerSm(per_sm)) => match per_sm.saturating_mul(sms).saturating_sub(1) {
                0 => {
                    return Err(PoolError::Config(
                        "blocks_per_sm leaves no worker beside the publisher: ask for 2 blocks or more in all".into(),
                    ))
                }
                workers => workers,
            },
        };
        if blocks == 0 {
            return Err(PoolError::Config("a pool of 0 blocks".into()));
        }
        // The rings' blocks and the publisher (`abi::pool`, "Publication").
        let launched = blocks.saturating_add(1);
        if launched > resident {
            return Err(PoolError::TooLarge {
                blocks: launched,
                resident,
            });
        }
        Ok(blocks)
    }
}

/// A pushed task on its way to the scheduler.
struct Queued {
    ticket: Ticket,
    task: Task,
    /// Its dependencies as pushed (the scheduler drops finished ones).
    after: Vec<Ticket>,
}

/// Whether the device side still runs.
enum DeviceState {
    Running,
    /// Ended after EXIT (`Ok`) or by itself (`Err`: why).
    Ended(Result<(), String>),
}

/// Shards of the inbox; a pushing thread always uses the same one.
const INBOXES: usize = 8;

/// A shard of the pushes on their way to the scheduler, under a lock of
/// its own: a producer contends only with the scheduler's look at every
/// shard, never with other threads' pushes, poppers or the hand-over of
/// finished tasks (with one lock for all, the scheduler waited 1.3-3.6 us
/// for it per pass while producers pushed; H100, `pool_overhead`).
struct Inbox {
    /// Pushed since the scheduler's last look, in ticket order: it moves
    /// them out (the vector keeps its capacity, so pushing does not
    /// allocate in the steady state).
    queued: Vec<Queued>,
    /// Set first thing by `shutdown`: later pushes fail.
    closed: bool,
}

/// What poppers, `shutdown` and the scheduler share, under one mutex. The
/// scheduler's own bookkeeping (rings, dependencies, queues) is
/// [`Dispatch`], outside the lock.
struct State {
    /// Tasks handed to `finished` (cancelled ones included) since the
    /// start: `Shared::pushed` minus this is the unfinished count.
    retired: u64,
    finished: VecDeque<Finished>,
    shutdown: Option<Shutdown>,
    /// The scheduler wrote EXIT into every ring.
    exited: bool,
    device: DeviceState,
    /// Threads waiting on `Shared::done`: the scheduler signals only if
    /// there are any (a wake per pass is a system call where a pass is a
    /// few loads; not measured).
    waiters: usize,
}

/// The rings' memory: a host address the scheduler writes, valid until the
/// device side ended (see `Memory`).
struct Slots {
    host: *mut Slot,
    /// Resident blocks; each has `RING_ENTRIES` slots.
    blocks: usize,
}

// SAFETY: the slots are only touched through atomics (state words) and by
// the single party that owns a slot by the protocol.
unsafe impl Send for Slots {}
// SAFETY: as above.
unsafe impl Sync for Slots {}

impl Slots {
    fn count(&self) -> usize {
        self.blocks * RING_ENTRIES
    }

    fn state(&self, slot: usize) -> &AtomicU32 {
        debug_assert!(slot < self.count());
        // SAFETY: in bounds, aligned, alive while the pool's `Shared` is.
        unsafe { AtomicU32::from_ptr(std::ptr::addr_of_mut!((*self.host.add(slot)).state)) }
    }

    /// Block `b`'s start mark (`abi::pool`, "Starts"), the publisher's at
    /// `b = blocks`.
    fn started(&self, b: usize) -> bool {
        debug_assert!(b <= self.blocks);
        // SAFETY: the marks follow the header (`start_marks_slot`), `u32`s
        // in whole slots; alive while the pool's `Shared` is.
        let mark = unsafe {
            AtomicU32::from_ptr(
                self.host
                    .add(start_marks_slot(self.blocks as u32))
                    .cast::<u32>()
                    .add(b),
            )
        };
        mark.load(Ordering::Relaxed) != 0
    }

    /// Writes `task` with its share `share` of CTAs and its gate words into
    /// an IDLE slot and publishes it READY (release).
    fn publish(&self, slot: usize, task: &Task, share: Range<u32>, gate: GateWords) {
        let target = self.host.wrapping_add(slot);
        // SAFETY: the host owns an IDLE slot: nobody reads these words until
        // the release store below makes them visible with READY.
        unsafe {
            std::ptr::addr_of_mut!((*target).kind).write_volatile(task.kind());
            std::ptr::addr_of_mut!((*target).ctas).write_volatile(task.ctas());
            std::ptr::addr_of_mut!((*target).first).write_volatile(share.start);
            std::ptr::addr_of_mut!((*target).count).write_volatile(share.len() as u32);
            std::ptr::addr_of_mut!((*target).payload).write_volatile(*task.payload());
            std::ptr::addr_of_mut!((*target).gate).write_volatile(gate.gate);
            std::ptr::addr_of_mut!((*target).target).write_volatile(gate.target);
            std::ptr::addr_of_mut!((*target).signal).write_volatile(gate.signal);
        }
        self.state(slot).store(READY, Ordering::Release);
    }

    /// Takes a FINISHED slot's status and result and makes it IDLE.
    fn collect(&self, slot: usize) -> (u32, u64) {
        let target = self.host.wrapping_add(slot);
        // SAFETY: the caller's acquire load saw FINISHED: the device wrote
        // these before and owns the slot no more.
        let answer = unsafe {
            (
                std::ptr::addr_of!((*target).status).read_volatile(),
                std::ptr::addr_of!((*target).result).read_volatile(),
            )
        };
        self.state(slot).store(IDLE, Ordering::Relaxed);
        answer
    }
}

/// Who frees the slots' memory and the publication words, once the device
/// side ended.
enum Memory {
    Cpu {
        slots: *mut [Slot],
        words: *mut [u32],
    },
    Gpu(gpu::Pinned, gpu::Words),
}

/// Writes the header after `rings` rings at `slots`.
///
/// # Safety
/// `slots` holds [`pool_slots`]`(rings)` slots, not yet shared.
unsafe fn write_header(slots: *mut Slot, rings: u32, words: u64, task_threads: u32) {
    // SAFETY: the last slot, the size and alignment of a `Header`.
    unsafe {
        slots
            .add(header_slot(rings))
            .cast::<Header>()
            .write(Header::new(words, task_threads))
    };
}

// SAFETY: `Memory` only owns the allocation; see `Slots`.
unsafe impl Send for Memory {}
// SAFETY: as above.
unsafe impl Sync for Memory {}

struct Shared {
    state: Mutex<State>,
    /// Pushes, in shards by pushing thread: producers on different threads
    /// take different locks.
    inboxes: [Mutex<Inbox>; INBOXES],
    /// Tickets handed out: the next push's ticket. Taken under the lock of
    /// the shard the push goes into, so a snapshot of all shards holds
    /// every ticket below any it holds.
    pushed: AtomicU64,
    /// The scheduler sleeps on `work`: a push or a shutdown must wake it
    /// (`Shared::announce`).
    scheduler_asleep: AtomicBool,
    /// The device side ended (`State::device` says how; both set by
    /// `Shared::end_device`): pushes check it without the state's lock.
    device_gone: AtomicBool,
    /// Poppers and `shutdown` wait here: signalled when tasks finished, the
    /// blocks were told to exit, or the device ended.
    done: Condvar,
    /// The scheduler sleeps here when nothing is queued or in flight:
    /// signalled by a push, a shutdown or the CPU engine's end.
    work: Condvar,
    /// Bumped by every push, by `shutdown` and by the CPU engine's end: the
    /// scheduler takes the state's lock only when it moved (or when it has
    /// finished tasks to hand over).
    news: AtomicU64,
    slots: Slots,
    /// For timeout messages only: the ticket + 1 of the task in each slot,
    /// 0 for none (written by the scheduler, read by a timed-out wait).
    tickets: Box<[AtomicU64]>,
    kinds: u32,
    timeout: Duration,
    spin: Duration,
    depth: u32,
    spread: bool,
    gates: bool,
    /// Each worker block has a warp that publishes its tasks.
    publishing_warp: bool,
    /// Freed when the last owner (the scheduler thread, the CPU engine,
    /// the pool) lets go, which the scheduler does only after the device
    /// side ended.
    memory: Mutex<Option<Memory>>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        let device_ended = matches!(
            self.state.get_mut().map(|s| &s.device),
            Ok(DeviceState::Ended(_))
        );
        if !device_ended {
            // A block may still read the slots: keep them forever.
            if let Ok(memory) = self.memory.get_mut() {
                std::mem::forget(memory.take());
            }
            return;
        }
        match self.memory.get_mut().ok().and_then(Option::take) {
            // SAFETY: made by `Box::into_raw` in `TaskPool::cpu`; the engine
            // ended, so nothing else points into them.
            Some(Memory::Cpu { slots, words }) => unsafe {
                drop(Box::from_raw(slots));
                drop(Box::from_raw(words));
            },
            Some(Memory::Gpu(pinned, words)) => drop((pinned, words)),
            None => {}
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves consistent queues (each
        // update is one push or pop): keep going.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// This thread's shard of the inbox, locked.
    fn lock_inbox(&self) -> MutexGuard<'_, Inbox> {
        thread_local! {
            static SHARD: usize = {
                static NEXT: AtomicUsize = AtomicUsize::new(0);
                NEXT.fetch_add(1, Ordering::Relaxed) % INBOXES
            };
        }
        let shard = SHARD.with(|s| *s);
        self.inboxes[shard]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Every shard of the inbox locked at once: a push that finished before
    /// a push that finished after (on any threads) is not left out of a
    /// snapshot that holds the later one.
    fn lock_inboxes(&self) -> [MutexGuard<'_, Inbox>; INBOXES] {
        std::array::from_fn(|i| self.inboxes[i].lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Tells the scheduler that something changed, and wakes it if it
    /// sleeps. It sets `scheduler_asleep`, then compares `news`, under the
    /// state's lock until it waits; here `news` moves first, then the flag
    /// is read, and the notification is sent under that lock: either the
    /// scheduler sees the news or this call sees it asleep and wakes it.
    /// (The flag is read before it is swapped: a swap is a write to a line
    /// that every producer and the scheduler share, once per push.)
    fn announce(&self) {
        self.news.fetch_add(1, Ordering::SeqCst);
        if self.scheduler_asleep.load(Ordering::SeqCst)
            && self.scheduler_asleep.swap(false, Ordering::SeqCst)
        {
            let _state = self.lock();
            self.work.notify_one();
        }
    }

    /// Records that the device side ended, in the state and in the flag
    /// pushes read without the state's lock.
    fn end_device(&self, state: &mut State, end: Result<(), String>) {
        state.device = DeviceState::Ended(end);
        self.device_gone.store(true, Ordering::Release);
    }

    /// Pushed and not finished (queued, blocked, in a ring).
    fn unfinished(&self, state: &State) -> usize {
        (self.pushed.load(Ordering::Acquire) - state.retired) as usize
    }

    /// Waits on `done` until woken or `timeout`.
    fn wait_done<'a>(
        &self,
        mut state: MutexGuard<'a, State>,
        timeout: Duration,
    ) -> MutexGuard<'a, State> {
        state.waiters += 1;
        let mut state = self
            .done
            .wait_timeout(state, timeout)
            .unwrap_or_else(|e| e.into_inner())
            .0;
        state.waiters -= 1;
        state
    }

    fn device_error(state: &State) -> Option<PoolError> {
        match &state.device {
            DeviceState::Ended(Err(why)) => Some(PoolError::Device(why.clone())),
            DeviceState::Ended(Ok(())) if !state.exited => Some(PoolError::Device(
                "the pool kernel returned before it was told to exit".into(),
            )),
            _ => None,
        }
    }

    fn timeout(&self, state: &State, waited: Duration) -> PoolError {
        PoolError::Timeout {
            waited,
            unfinished: self.unfinished(state),
            in_slots: self.in_rings(),
        }
    }

    fn in_rings(&self) -> Vec<InSlot> {
        self.tickets
            .iter()
            .enumerate()
            .filter_map(|(i, held)| match held.load(Ordering::Relaxed) {
                0 => None,
                ticket => Some(InSlot {
                    slot: (i / RING_ENTRIES) as u32,
                    entry: (i % RING_ENTRIES) as u32,
                    ticket: Ticket(ticket - 1),
                    state: state_name(self.slots.state(i).load(Ordering::Acquire)),
                }),
            })
            .collect()
    }
}

/// A pool of resident blocks serving tasks pushed from the host.
pub struct TaskPool {
    shared: Arc<Shared>,
    scheduler: Mutex<Option<JoinHandle<()>>>,
}

impl fmt::Debug for TaskPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskPool")
            .field("blocks", &self.shared.slots.blocks)
            .field("depth", &self.shared.depth)
            .field("kinds", &self.shared.kinds)
            .field("publishing_warp", &self.shared.publishing_warp)
            .field("unfinished", &self.unfinished())
            .finish()
    }
}

impl TaskPool {
    /// A pool on the CPU backend: `kernel` (a pool kernel's host function,
    /// e.g. `kernels::pool::pool_demo`) runs on `machine` on a host thread
    /// of its own, its blocks standing in for the GPU's resident blocks
    /// (`resident_per_sm` of them per simulated SM, at most
    /// [`MAX_RESIDENT_BLOCKS`]).
    pub fn cpu(
        machine: Machine,
        resident_per_sm: u32,
        kernel: unsafe fn(*mut Slot),
        config: PoolConfig,
    ) -> Result<TaskPool, PoolError> {
        if resident_per_sm == 0 || resident_per_sm > MAX_RESIDENT_BLOCKS {
            return Err(PoolError::Config(format!(
                "{resident_per_sm} resident blocks per SM: it must be in 1..={MAX_RESIDENT_BLOCKS}"
            )));
        }
        let blocks = config.plan(resident_per_sm, machine.sm_count())?;
        let raw = Box::into_raw(vec![Slot::IDLE; pool_slots(blocks)].into_boxed_slice());
        let words = Box::into_raw(vec![0u32; device_words(blocks)].into_boxed_slice());
        let host = raw.cast::<Slot>();
        // SAFETY: just allocated with the header's slot; no block runs yet.
        unsafe {
            write_header(
                host,
                blocks,
                words.cast::<u32>() as u64,
                config.block_threads,
            )
        };
        let threads = config.launch_threads(config.cpu_publishing_warp);
        let shared = Self::shared(
            &config,
            blocks,
            host,
            Memory::Cpu { slots: raw, words },
            threads != config.block_threads,
        );
        let launch = CpuLaunch {
            // The rings' blocks and the publisher.
            grid: [blocks + 1, 1, 1],
            block: [threads, 1, 1],
            dynamic_shared_bytes: 0,
            resident_blocks: resident_per_sm,
        };
        let engine_shared = Arc::clone(&shared);
        let address = host as usize;
        // The engine thread runs the blocks: it reads the constant tables
        // this thread wrote, as a GPU pool reads its module's.
        let constants = clustered_device::constant::cpu::tables();
        std::thread::Builder::new()
            .name("clustered-pool-cpu".into())
            .spawn(move || {
                clustered_device::constant::cpu::install(constants);
                let body = || {
                    // SAFETY: one ring per block, alive while `Shared` is
                    // (held by this thread), served by the scheduler.
                    unsafe { kernel(address as *mut Slot) }
                };
                let ended = crate::cpu::run(&machine, &launch, &mut NoObserver, &body)
                    .map(|_| ())
                    .map_err(|e| e.to_string());
                let mut state = engine_shared.lock();
                engine_shared.end_device(&mut state, ended);
                drop(state);
                engine_shared.announce();
                engine_shared.work.notify_all();
                engine_shared.done.notify_all();
            })
            .map_err(|e| PoolError::Device(format!("cannot start the CPU engine thread: {e}")))?;
        Self::start(shared, None)?.await_blocks()
    }

    fn shared(
        config: &PoolConfig,
        blocks: u32,
        host: *mut Slot,
        memory: Memory,
        publishing_warp: bool,
    ) -> Arc<Shared> {
        let count = blocks as usize * RING_ENTRIES;
        Arc::new(Shared {
            state: Mutex::new(State {
                retired: 0,
                finished: VecDeque::new(),
                shutdown: None,
                exited: false,
                device: DeviceState::Running,
                waiters: 0,
            }),
            inboxes: std::array::from_fn(|_| {
                Mutex::new(Inbox {
                    queued: Vec::new(),
                    closed: false,
                })
            }),
            pushed: AtomicU64::new(0),
            scheduler_asleep: AtomicBool::new(false),
            device_gone: AtomicBool::new(false),
            done: Condvar::new(),
            work: Condvar::new(),
            news: AtomicU64::new(0),
            slots: Slots {
                host,
                blocks: blocks as usize,
            },
            tickets: (0..count).map(|_| AtomicU64::new(0)).collect(),
            kinds: config.kinds,
            timeout: config.timeout,
            spin: config.spin,
            publishing_warp,
            depth: config.depth,
            spread: config.spread,
            gates: config.gates,
            memory: Mutex::new(Some(memory)),
        })
    }

    /// Returns the pool once every block of its launch marked its start
    /// (`abi::pool`, "Starts"; nobody could push before, so nothing was
    /// published). Gates, riders and shares wait on tasks in other blocks'
    /// rings, so a block that never starts would hang them: if the marks
    /// are not all there within the pool's timeout, the pool is abandoned
    /// (its scheduler writes EXIT and frees the rings once the kernel ended,
    /// a block that starts late leaving at once) and the error names the
    /// blocks that did not start.
    fn await_blocks(self) -> Result<TaskPool, PoolError> {
        let start = Instant::now();
        let slots = &self.shared.slots;
        let mut pause = Duration::from_micros(10);
        loop {
            let missing: Vec<u32> = (0..=slots.blocks)
                .filter(|&b| !slots.started(b))
                .map(|b| b as u32)
                .collect();
            if missing.is_empty() {
                return Ok(self);
            }
            // A kernel that failed before its blocks started.
            if let Some(e) = Shared::device_error(&self.shared.lock()) {
                return Err(e);
            }
            let waited = start.elapsed();
            if waited >= self.shared.timeout {
                let blocks = slots.blocks as u32 + 1;
                self.abandon();
                return Err(PoolError::NotResident {
                    missing,
                    blocks,
                    waited,
                });
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(1));
        }
    }

    /// Shuts the pool down ([`Shutdown::Cancel`]) without waiting for its
    /// kernel: the scheduler, detached, writes EXIT into every ring and
    /// frees the rings once the kernel ended.
    fn abandon(self) {
        for mut inbox in self.shared.lock_inboxes() {
            inbox.closed = true;
        }
        self.shared.lock().shutdown = Some(Shutdown::Cancel);
        self.shared.announce();
        // Dropping the handle detaches the thread; `Drop` then finds no
        // scheduler to wait for.
        drop(
            self.scheduler
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take(),
        );
    }

    fn start(shared: Arc<Shared>, device: Option<gpu::Running>) -> Result<TaskPool, PoolError> {
        let scheduler_shared = Arc::clone(&shared);
        let scheduler = std::thread::Builder::new()
            .name("clustered-pool-scheduler".into())
            .spawn(move || schedule(&scheduler_shared, device))
            .map_err(|e| PoolError::Device(format!("cannot start the scheduler thread: {e}")))?;
        Ok(TaskPool {
            shared,
            scheduler: Mutex::new(Some(scheduler)),
        })
    }

    /// Rings of the pool, one per worker block, of [`RING_ENTRIES`] slots
    /// each (the publisher block, which has none, not counted).
    pub fn slots(&self) -> u32 {
        self.shared.slots.blocks as u32
    }

    /// Tasks in flight per block at most ([`PoolConfig::depth`]).
    pub fn depth(&self) -> u32 {
        self.shared.depth
    }

    /// Whether each worker block has a warp that publishes its tasks
    /// ([`PoolConfig::publishing_warp`]; on the CPU backend,
    /// [`PoolConfig::cpu_publishing_warp`]).
    pub fn publishing_warp(&self) -> bool {
        self.shared.publishing_warp
    }

    /// Queues `task`; returns its ticket.
    pub fn push(&self, task: Task) -> Result<Ticket, PoolError> {
        self.push_after(task, &[])
    }

    /// Queues `task` to start only after every task of `after` finished
    /// (whatever its outcome): "run c after a", without the caller polling.
    ///
    /// If every unfinished task of `after` is in one block's ring (or will
    /// be: behind it there), `task` goes into that ring behind them and the
    /// block runs it right after them, its writes visible (same block, a
    /// barrier between tasks), with no host round trip; only the first such
    /// dependent of a task rides along (see the module doc).
    pub fn push_after(&self, task: Task, after: &[Ticket]) -> Result<Ticket, PoolError> {
        self.enqueue(std::slice::from_ref(&task), after).map(Ticket)
    }

    /// Queues every task of `tasks` under one lock, in order, and returns
    /// their tickets (consecutive): [`TaskPool::push`] for many, where the
    /// lock per push is what producers on several threads contend for.
    /// All or nothing: a task of an unknown kind or with no CTAs is refused
    /// before any is queued.
    pub fn push_many(&self, tasks: &[Task]) -> Result<Vec<Ticket>, PoolError> {
        let first = self.enqueue(tasks, &[])?;
        Ok((first..first + tasks.len() as u64).map(Ticket).collect())
    }

    /// Checks `tasks`, then queues them in order under the lock of this
    /// thread's shard of the inbox, each after `after`; returns the first
    /// one's ticket (the others follow it).
    fn enqueue(&self, tasks: &[Task], after: &[Ticket]) -> Result<u64, PoolError> {
        for task in tasks {
            self.check(task)?;
        }
        // Before the inbox's lock: the scheduler takes the state's lock,
        // then the inbox's shards', never the reverse.
        if self.shared.device_gone.load(Ordering::Acquire) {
            if let Some(e) = Shared::device_error(&self.shared.lock()) {
                return Err(e);
            }
        }
        let mut inbox = self.shared.lock_inbox();
        if inbox.closed {
            return Err(PoolError::ShutDown);
        }
        if let Some(&unknown) = after
            .iter()
            .find(|t| t.0 >= self.shared.pushed.load(Ordering::Acquire))
        {
            return Err(PoolError::UnknownDependency(unknown));
        }
        let first = self
            .shared
            .pushed
            .fetch_add(tasks.len() as u64, Ordering::AcqRel);
        inbox
            .queued
            .extend(tasks.iter().enumerate().map(|(i, &task)| Queued {
                ticket: Ticket(first + i as u64),
                task,
                after: after.to_vec(),
            }));
        drop(inbox);
        self.shared.announce();
        Ok(first)
    }

    fn check(&self, task: &Task) -> Result<(), PoolError> {
        if task.kind() >= self.shared.kinds {
            return Err(PoolError::UnknownKind {
                kind: task.kind(),
                kinds: self.shared.kinds,
            });
        }
        if task.ctas() == 0 {
            return Err(PoolError::EmptyGrid { kind: task.kind() });
        }
        Ok(())
    }

    /// Tasks pushed and not finished yet (queued, blocked or in a ring).
    /// After the device failed (a kernel fault, the CPU backend's checks)
    /// its tasks stay unfinished: a loop that waits for this to reach 0
    /// should also pop, which returns the failure ([`TaskPool::pop_finished`]).
    pub fn unfinished(&self) -> usize {
        self.shared.unfinished(&self.shared.lock())
    }

    /// The tasks in the blocks' rings now (dispatched, not yet collected),
    /// in block and entry order, with each entry's state: what a timeout
    /// names, for diagnostics and tests. A snapshot: the scheduler and the
    /// blocks move on while it is read.
    pub fn in_rings(&self) -> Vec<InSlot> {
        self.shared.in_rings()
    }

    /// A finished task, if one is waiting; never blocks. `None` also after
    /// the device failed: [`TaskPool::pop_finished`] says why.
    pub fn try_pop_finished(&self) -> Option<Finished> {
        self.shared.lock().finished.pop_front()
    }

    /// The next finished task, in the order the scheduler saw them finish;
    /// waits up to the pool's timeout.
    pub fn pop_finished(&self) -> Result<Finished, PoolError> {
        self.pop_finished_timeout(self.shared.timeout)
    }

    /// Waits for a finished task as [`TaskPool::pop_finished`] does, then
    /// takes it and up to `max - 1` more that are already waiting, under
    /// the one lock, in the order they finished (at least one, at most
    /// `max`; `max` 0 counts as 1).
    pub fn pop_finished_many(&self, max: usize) -> Result<Vec<Finished>, PoolError> {
        let (first, mut state) = self.wait_finished(self.shared.timeout)?;
        let more = state.finished.len().min(max.saturating_sub(1));
        let mut out = Vec::with_capacity(1 + more);
        out.push(first);
        out.extend(state.finished.drain(..more));
        Ok(out)
    }

    /// [`TaskPool::pop_finished`], waiting at most `timeout`.
    pub fn pop_finished_timeout(&self, timeout: Duration) -> Result<Finished, PoolError> {
        self.wait_finished(timeout).map(|(done, _)| done)
    }

    /// Waits up to `timeout` for a finished task; returns it with the lock
    /// still held, so that a caller can take more under the same lock.
    fn wait_finished(
        &self,
        timeout: Duration,
    ) -> Result<(Finished, MutexGuard<'_, State>), PoolError> {
        let start = Instant::now();
        let mut state = self.shared.lock();
        loop {
            if let Some(done) = state.finished.pop_front() {
                return Ok((done, state));
            }
            if let Some(e) = Shared::device_error(&state) {
                return Err(e);
            }
            if self.shared.unfinished(&state) == 0 {
                return Err(PoolError::NothingUnfinished);
            }
            let waited = start.elapsed();
            if waited >= timeout {
                return Err(self.shared.timeout(&state, waited));
            }
            state = self.shared.wait_done(state, timeout - waited);
        }
    }

    /// Stops taking tasks, runs (Drain) or drops (Cancel) the queued ones,
    /// waits for the running ones and for the blocks to exit, and returns
    /// every finished task not popped yet.
    ///
    /// Cancel drops the tasks the scheduler still holds; a task already in
    /// a block's ring belongs to the device and runs (at most
    /// [`PoolConfig::depth`] per block). On [`PoolError::Timeout`] the pool
    /// keeps its finished tasks (pop them, or call `shutdown` again later).
    /// Calling it again after success returns an empty list. Other threads'
    /// pushes fail with [`PoolError::ShutDown`] from the first call on.
    pub fn shutdown(&self, mode: Shutdown) -> Result<Vec<Finished>, PoolError> {
        let start = Instant::now();
        // Closed before the mode is set: once the scheduler sees the mode,
        // every push that will ever succeed is in the inbox.
        for mut inbox in self.shared.lock_inboxes() {
            inbox.closed = true;
        }
        let mut state = self.shared.lock();
        // Cancel may follow a Drain that timed out; never the reverse.
        if state.shutdown != Some(Shutdown::Cancel) {
            state.shutdown = Some(mode);
        }
        drop(state);
        self.shared.announce();
        let mut state = self.shared.lock();
        loop {
            match &state.device {
                DeviceState::Ended(Ok(())) if state.exited => break,
                _ => {}
            }
            if let Some(e) = Shared::device_error(&state) {
                return Err(e);
            }
            let waited = start.elapsed();
            if waited >= self.shared.timeout {
                return Err(self.shared.timeout(&state, waited));
            }
            state = self.shared.wait_done(state, self.shared.timeout - waited);
        }
        let rest = state.finished.drain(..).collect();
        drop(state);
        let handle = self
            .scheduler
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(handle) = handle {
            // It ends right after the device did.
            let _ = handle.join();
        }
        Ok(rest)
    }
}

/// Dropping a pool drains it ([`Shutdown::Drain`]); finished tasks not
/// popped are dropped with it (call [`TaskPool::shutdown`] to get them).
/// If the drain times out, the threads are left running and the rings'
/// memory is never freed: a block may still use it.
impl Drop for TaskPool {
    fn drop(&mut self) {
        let detached = self
            .scheduler
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none();
        // No scheduler: shut down already, or abandoned at its start.
        if !detached {
            let _ = self.shutdown(Shutdown::Drain);
        }
    }
}

/// The scheduler thread: collects finished entries, hands them and takes
/// new pushes under one lock per pass, moves tasks into the rings, and
/// writes EXIT once shut down and empty; then waits for the device side to
/// end.
fn schedule(shared: &Shared, mut device: Option<gpu::Running>) {
    let slots = &shared.slots;
    let mut dispatch = Dispatch::new(slots.blocks, shared.depth, shared.spread, shared.gates);
    // Both reused from pass to pass: no allocation per pass. `incoming`
    // holds pushes taken from the inbox and not yet taken in, in ticket
    // order where any has dependencies.
    let mut incoming: VecDeque<Queued> = VecDeque::new();
    let mut done: Vec<Finished> = Vec::new();
    let mut seen_news = 0u64;
    let mut mode: Option<Shutdown> = None;
    let mut last_progress = Instant::now();
    let mut last_device_poll = last_progress;
    loop {
        dispatch.collect(slots, &shared.tickets, &mut done);
        let mut progressed = !done.is_empty();
        for finished in &done {
            dispatch.finish(finished.ticket);
        }
        let now = Instant::now();
        let mut device_end = None;
        if let Some(gpu) = &device {
            if now.duration_since(last_device_poll) >= DEVICE_POLL {
                last_device_poll = now;
                device_end = gpu.ended();
            }
        }
        let mut ended = false;
        if progressed || device_end.is_some() || shared.news.load(Ordering::Acquire) != seen_news {
            let mut state = shared.lock();
            seen_news = shared.news.load(Ordering::SeqCst);
            if let Some(end) = device_end {
                shared.end_device(&mut state, end);
            }
            mode = state.shutdown;
            // After the mode: a shutdown closed the inbox before setting it.
            let held = incoming.len();
            for mut inbox in shared.lock_inboxes() {
                incoming.extend(inbox.queued.drain(..));
            }
            // Shards interleave, and a dependency must be taken in before
            // its dependents: then in ticket order. (Sorting every pass
            // moved 100-byte entries around: 4 producers pushing batches
            // ran 1.6x slower; H100, `pool_overhead 20000`,
            // docs/BENCHMARKS.md, "Pushes under a lock of their own".)
            // What was held from earlier passes is in order already.
            let new = held.saturating_sub(1)..incoming.len();
            if incoming
                .range(new.clone())
                .any(|queued| !queued.after.is_empty())
                && !incoming.range(new).is_sorted_by_key(|queued| queued.ticket)
            {
                incoming
                    .make_contiguous()
                    .sort_unstable_by_key(|queued| queued.ticket);
            }
            if mode == Some(Shutdown::Cancel) {
                // Nothing of these reached a ring: they finish cancelled.
                let first = done.len();
                done.extend(incoming.drain(..).map(|queued| Finished {
                    ticket: queued.ticket,
                    kind: queued.task.kind(),
                    outcome: Outcome::Cancelled,
                }));
                dispatch.cancel(&mut done);
                done[first..].sort_by_key(|f| f.ticket);
            }
            let handed = !done.is_empty();
            state.retired += done.len() as u64;
            state.finished.extend(done.drain(..));
            ended = matches!(state.device, DeviceState::Ended(_));
            let wake = (handed || ended) && state.waiters > 0;
            drop(state);
            if wake {
                shared.done.notify_all();
            }
        }
        if ended {
            // The kernel is gone: nothing will finish any more.
            shared.done.notify_all();
            return;
        }
        progressed |= !incoming.is_empty();
        // A bounded share per pass: taking in thousands of pushes at once
        // (a chain pushed faster than taken in) kept finished entries
        // uncollected and the rings empty for milliseconds.
        let intake = incoming.len().min(INTAKE_PER_PASS);
        for queued in incoming.drain(..intake) {
            dispatch.intake(queued);
        }
        progressed |= dispatch.dispatch(slots, &shared.tickets) > 0;
        if mode.is_some() && incoming.is_empty() && dispatch.is_empty() {
            // Told before the kernel is: once EXIT is written it may end at
            // once, and a thread that saw it ended before `exited` took a
            // clean shutdown for a kernel that returned on its own.
            let mut state = shared.lock();
            state.exited = true;
            drop(state);
            dispatch.exit(slots);
            shared.done.notify_all();
            wait_for_device_end(shared, &mut device);
            return;
        }
        if progressed {
            last_progress = now;
            continue;
        }
        if dispatch.in_flight() > 0 {
            // A task may end any moment: poll, spinning for the first
            // quarter of the window, then yielding the core to others,
            // then sleeping.
            let idle = now.duration_since(last_progress);
            if idle < shared.spin / 4 {
                std::hint::spin_loop();
            } else if idle < shared.spin {
                std::thread::yield_now();
            } else {
                std::thread::sleep(SLOW_POLL);
            }
            continue;
        }
        // Nothing queued and nothing in flight (a queued task with nothing
        // in flight would have been dispatched): sleep until a push, a
        // shutdown or the CPU engine's end, looking at the GPU now and then.
        let state = shared.lock();
        shared.scheduler_asleep.store(true, Ordering::SeqCst);
        if shared.news.load(Ordering::SeqCst) != seen_news {
            shared.scheduler_asleep.store(false, Ordering::SeqCst);
            continue;
        }
        let state = shared
            .work
            .wait_timeout(state, IDLE_POLL)
            .unwrap_or_else(|e| e.into_inner())
            .0;
        shared.scheduler_asleep.store(false, Ordering::SeqCst);
        drop(state);
        last_device_poll = now.checked_sub(DEVICE_POLL).unwrap_or(now);
        last_progress = Instant::now();
    }
}

/// After EXIT: waits (forever, sleeping) until the device side ended, so
/// that the rings' memory is freed only when no block can read it.
fn wait_for_device_end(shared: &Shared, device: &mut Option<gpu::Running>) {
    loop {
        let mut state = shared.lock();
        if let Some(gpu) = device.as_ref() {
            if let Some(ended) = gpu.ended() {
                shared.end_device(&mut state, ended);
            }
        }
        if matches!(state.device, DeviceState::Ended(_)) {
            drop(state);
            shared.done.notify_all();
            // The kernel is done: its stream and event may go.
            *device = None;
            return;
        }
        let _ = shared
            .work
            .wait_timeout(state, Duration::from_millis(1))
            .unwrap_or_else(|e| e.into_inner());
    }
}

/// Hashes tickets and words with one multiplication each: the scheduler
/// hashes every task's dependencies into its group and looks groups up per
/// publication, and SipHash's protection against chosen keys buys nothing
/// for its own numbers.
#[derive(Default)]
struct WordHasher(u64);

impl Hasher for WordHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

/// The unfinished tasks by ticket. Tickets are handed out in order and
/// mostly finish in order, so the map is a window of tickets from the
/// oldest unfinished one on, each naming its node's place in a slab: a
/// lookup is two indexings, and tasks pushed together sit together in
/// memory. (A hash map of 20,000 chained tasks cost the scheduler about a
/// microsecond per task in lookups and rehashing, more than the GPU's
/// step: docs/BENCHMARKS.md, "The scheduler's bookkeeping".) A task that
/// outlives thousands pushed after it (a long one beside a stream of short
/// ones) would hold the window open, 4 bytes per later ticket for as long
/// as it runs: once the window is mostly holes, its oldest nodes move to a
/// map of their own (`old`), so memory stays in proportion to the tasks
/// unfinished.
#[derive(Default)]
struct Nodes {
    /// The ticket of `window[0]`; every ticket in `old` is below it.
    base: u64,
    /// Per ticket from `base` on: its node's index in `slab`, or [`NO_NODE`].
    window: VecDeque<u32>,
    /// Slab indices of the nodes older than the window.
    old: HashMap<u64, u32, BuildHasherDefault<WordHasher>>,
    slab: Vec<Node>,
    /// Indices of `slab` whose node was removed, for reuse.
    free: Vec<u32>,
}

/// A ticket of the window without a node (finished, or not pushed yet).
const NO_NODE: u32 = u32::MAX;

/// Holes the window may hold beyond twice its nodes before its oldest
/// nodes move to `Nodes::old`.
const WINDOW_SLACK: usize = 4096;

impl Nodes {
    fn index_of(&self, ticket: Ticket) -> Option<usize> {
        let Some(i) = ticket.0.checked_sub(self.base) else {
            return self.old.get(&ticket.0).map(|&at| at as usize);
        };
        let at = *self.window.get(usize::try_from(i).ok()?)?;
        (at != NO_NODE).then_some(at as usize)
    }

    fn get(&self, ticket: &Ticket) -> Option<&Node> {
        Some(&self.slab[self.index_of(*ticket)?])
    }

    fn get_mut(&mut self, ticket: &Ticket) -> Option<&mut Node> {
        let at = self.index_of(*ticket)?;
        Some(&mut self.slab[at])
    }

    fn contains_key(&self, ticket: &Ticket) -> bool {
        self.index_of(*ticket).is_some()
    }

    fn is_empty(&self) -> bool {
        self.slab.len() == self.free.len()
    }

    /// Adds `ticket`'s node (it has none).
    fn insert(&mut self, ticket: Ticket, node: Node) {
        let at = match self.free.pop() {
            Some(at) => {
                self.slab[at as usize] = node;
                at
            }
            None => {
                self.slab.push(node);
                (self.slab.len() - 1) as u32
            }
        };
        if self.window.is_empty() && ticket.0 >= self.base {
            self.base = ticket.0;
        }
        if ticket.0 < self.base {
            // Taken in after the window moved past it (another producer's
            // push, a pass late).
            let before = self.old.insert(ticket.0, at);
            debug_assert!(before.is_none(), "a ticket pushed twice");
            return;
        }
        let i = (ticket.0 - self.base) as usize;
        if i >= self.window.len() {
            self.window.resize(i + 1, NO_NODE);
        }
        debug_assert_eq!(self.window[i], NO_NODE, "a ticket pushed twice");
        self.window[i] = at;
    }

    /// Removes `ticket`'s node and returns its dependents: what a finished
    /// task leaves to do (the rest of the node stays in its slab place
    /// until reused, rather than moved out).
    fn remove(&mut self, ticket: &Ticket) -> Option<Vec<Ticket>> {
        let at = match ticket.0.checked_sub(self.base) {
            None => self.old.remove(&ticket.0)? as usize,
            Some(i) => {
                let at = self.index_of(*ticket)?;
                self.window[i as usize] = NO_NODE;
                at
            }
        };
        let dependents = std::mem::take(&mut self.slab[at].dependents);
        self.free.push(at as u32);
        self.trim();
        Some(dependents)
    }

    /// Drops the window's leading holes, and moves its oldest nodes to
    /// `old` while it is mostly holes.
    fn trim(&mut self) {
        loop {
            while self.window.front() == Some(&NO_NODE) {
                self.window.pop_front();
                self.base += 1;
            }
            let in_window = self.slab.len() - self.free.len() - self.old.len();
            if self.window.len() <= 2 * in_window + WINDOW_SLACK {
                break;
            }
            if let Some(at) = self.window.pop_front() {
                self.old.insert(self.base, at);
                self.base += 1;
            }
        }
        if self.is_empty() {
            // Nothing unfinished: start the slab afresh.
            self.slab.clear();
            self.free.clear();
        }
    }

    fn retain(&mut self, mut keep: impl FnMut(&Ticket, &mut Node) -> bool) {
        for i in 0..self.window.len() {
            let at = self.window[i];
            if at != NO_NODE && !keep(&Ticket(self.base + i as u64), &mut self.slab[at as usize]) {
                self.window[i] = NO_NODE;
                self.slab[at as usize] = Node::vacant();
                self.free.push(at);
            }
        }
        let (slab, free) = (&mut self.slab, &mut self.free);
        self.old.retain(|&ticket, &mut at| {
            let kept = keep(&Ticket(ticket), &mut slab[at as usize]);
            if !kept {
                slab[at as usize] = Node::vacant();
                free.push(at);
            }
            kept
        });
        self.trim();
    }
}

impl std::ops::Index<&Ticket> for Nodes {
    type Output = Node;

    fn index(&self, ticket: &Ticket) -> &Node {
        self.get(ticket).expect("an unfinished task")
    }
}

/// Where an unfinished task is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// In the ready queue: its dependencies finished.
    Ready,
    /// Waiting on the host for dependencies.
    Blocked,
    /// Bound to block `b`'s ring behind its dependencies, waiting for room
    /// there.
    Riding(u32),
    /// In block `b`'s ring: the device owns it until it finished.
    Ring(u32),
    /// Its CTAs in shares over several blocks' rings (`abi::pool`,
    /// "Shares"): nothing rides behind it.
    Spread,
}

/// An unfinished task in the scheduler's bookkeeping.
struct Node {
    task: Task,
    /// Its dependencies that were unfinished when it was pushed (some may
    /// have finished since: no longer in `Dispatch::nodes`).
    deps: Vec<Ticket>,
    /// How many of `deps` have not finished yet.
    waiting: usize,
    /// How many of those are not yet whole in rings: it may be gated only
    /// at 0 (counted, so that a join after n tasks is not scanned at each
    /// of their n publications).
    unplaced: usize,
    /// Unfinished tasks pushed after it.
    dependents: Vec<Ticket>,
    place: Place,
    /// A dependent rides behind it in its ring already: others wait for it
    /// to finish and may then run on any block (a fan-out spreads).
    followed: bool,
    /// Its entries in rings not collected yet (one unless spread).
    shares: u32,
    /// What its collected entries told: the first that did not run, else
    /// the result of the share that ran the task's last CTA.
    outcome: Outcome,
    /// Its group: a hash of the dependencies it was pushed after (the
    /// tasks of one group signal one counter while it is open).
    group: u64,
    /// The counter its entries signal, from its first entry on.
    signal: Option<u32>,
    /// The counter and count its entries wait for, if it was put into the
    /// ready queue before its dependencies finished.
    gate: Option<(u32, u32)>,
}

impl Node {
    /// What a removed node's slab slot holds until it is reused.
    fn vacant() -> Node {
        Node {
            task: Task::new(0, 0, ()),
            deps: Vec::new(),
            waiting: 0,
            unplaced: 0,
            dependents: Vec::new(),
            place: Place::Blocked,
            followed: false,
            shares: 0,
            outcome: Outcome::Cancelled,
            group: 0,
            signal: None,
            gate: None,
        }
    }
}

/// An entry's gate words as the slot holds them: counter index + 1, 0 for
/// none (`abi::pool`, "Gates").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct GateWords {
    gate: u32,
    target: u32,
    signal: u32,
}

/// The gate counters as the host hands them out (`abi::pool`, "Gates").
/// A counter is taken by a group when its first task is published, and
/// is free again when no entry in a ring signals or waits on it; the
/// device's count only grows, so `handed` (what was handed out on it, ever)
/// is the count once all of those signalled.
struct Counters {
    handed: Vec<u32>,
    /// Entries in rings that signal or wait on the counter.
    uses: Vec<u32>,
    /// Of them, those that signal it: a gate on the counter waits for
    /// every one of them, so it may stand for "after these dependencies"
    /// only while all of them are the dependencies'.
    signalling: Vec<u32>,
    /// The group whose open counter it is, if it is one.
    group: Vec<Option<u64>>,
    /// Each group's open counter: its new tasks signal it.
    open: HashMap<u64, u32, BuildHasherDefault<WordHasher>>,
    free: Vec<u32>,
}

impl Counters {
    fn new(count: usize) -> Counters {
        Counters {
            handed: vec![0; count],
            uses: vec![0; count],
            signalling: vec![0; count],
            group: vec![None; count],
            open: HashMap::default(),
            free: (0..count as u32).rev().collect(),
        }
    }

    /// The counter a task of `group` signals: the group's open one, or a
    /// free one opened for it. There are two per ring entry and an entry in
    /// a ring holds at most two, so one is free whenever an entry is (else
    /// the task would signal nothing, and its dependents wait for the
    /// host).
    fn open_for(&mut self, group: u64) -> Option<u32> {
        if let Some(&c) = self.open.get(&group) {
            return Some(c);
        }
        let c = self.free.pop()?;
        self.open.insert(group, c);
        self.group[c as usize] = Some(group);
        Some(c)
    }

    /// A gate on `c` from now on: no new task signals it (its group opens
    /// another), so nothing published later can count towards the target.
    fn seal(&mut self, c: u32) {
        if let Some(group) = self.group[c as usize].take() {
            self.open.remove(&group);
        }
    }

    /// One more entry in a ring uses `c`.
    fn take(&mut self, c: u32) {
        self.uses[c as usize] += 1;
    }

    /// An entry that used `c` was collected.
    fn release(&mut self, c: u32) {
        let uses = &mut self.uses[c as usize];
        *uses -= 1;
        if *uses == 0 {
            self.seal(c);
            self.free.push(c);
        }
    }
}

/// A task's entry in a ring.
#[derive(Clone, Copy)]
struct Held {
    ticket: Ticket,
    /// The entry's share runs the task's last CTA: its result is the
    /// task's.
    last: bool,
    /// The counters it waits on and signals, given back when collected.
    gate: Option<u32>,
    signal: Option<u32>,
}

/// One block's ring as the host sees it. Entries `tail..head` (mod
/// `RING_ENTRIES`) hold tasks in flight, in the order the block runs them.
struct Ring {
    head: u64,
    tail: u64,
    held: [Held; RING_ENTRIES],
    /// Tasks bound to this ring behind their dependencies, in order.
    riders: VecDeque<Ticket>,
}

impl Ring {
    fn in_flight(&self) -> u32 {
        (self.head - self.tail) as u32
    }

    /// The task the block will run last of those placed in this ring: the
    /// last rider, else the newest published entry.
    fn newest(&self) -> Option<Ticket> {
        self.riders.back().copied().or_else(|| {
            (self.head > self.tail)
                .then(|| self.held[((self.head - 1) % RING_ENTRIES as u64) as usize].ticket)
        })
    }
}

/// The scheduler's bookkeeping, owned by its thread (no lock): the tasks
/// not finished, their dependencies, the ready queue and the rings.
struct Dispatch {
    depth: u32,
    /// Ready tasks of several CTAs may take several idle blocks.
    spread: bool,
    /// Tasks may be published gated on dependencies in rings.
    gates: bool,
    counters: Counters,
    rings: Vec<Ring>,
    nodes: Nodes,
    ready: VecDeque<Ticket>,
    /// Tasks in all riders' queues.
    riding: usize,
    /// Tasks in all rings.
    in_flight: usize,
    /// Where the level-by-level fill starts, moved on every pass so that
    /// ties do not always go to block 0.
    cursor: usize,
    /// Blocks with room, by tasks in flight: reused every pass.
    levels: Vec<Vec<u32>>,
    /// Tasks whose ride to check: reused.
    work: Vec<Ticket>,
}

impl Dispatch {
    fn new(blocks: usize, depth: u32, spread: bool, gates: bool) -> Dispatch {
        Dispatch {
            depth,
            spread,
            gates,
            counters: Counters::new(gate_counters(blocks as u32)),
            rings: (0..blocks)
                .map(|_| Ring {
                    head: 0,
                    tail: 0,
                    held: [Held {
                        ticket: Ticket(0),
                        last: false,
                        gate: None,
                        signal: None,
                    }; RING_ENTRIES],
                    riders: VecDeque::new(),
                })
                .collect(),
            nodes: Nodes::default(),
            ready: VecDeque::new(),
            riding: 0,
            in_flight: 0,
            cursor: 0,
            levels: vec![Vec::new(); depth as usize],
            work: Vec::new(),
        }
    }

    /// No task unfinished anywhere (queued, blocked, riding or in a ring).
    fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Takes a pushed task: ready, or blocked on its unfinished
    /// dependencies (a ticket the scheduler no longer knows finished: all
    /// earlier tickets reached it before this one), then perhaps riding.
    fn intake(&mut self, queued: Queued) {
        let Queued {
            ticket,
            task,
            mut after,
        } = queued;
        after.sort_unstable();
        after.dedup();
        // Before finished dependencies drop out: siblings pushed after the
        // same tasks share a group whenever they were pushed.
        let group = BuildHasherDefault::<WordHasher>::default().hash_one(&after);
        after.retain(|t| self.nodes.contains_key(t));
        let in_rings = |t: &Ticket| {
            self.nodes
                .get(t)
                .is_some_and(|n| matches!(n.place, Place::Ring(_) | Place::Spread))
        };
        let unplaced = after.iter().filter(|t| !in_rings(t)).count();
        for dep in &after {
            if let Some(node) = self.nodes.get_mut(dep) {
                node.dependents.push(ticket);
            }
        }
        let place = if after.is_empty() {
            self.ready.push_back(ticket);
            Place::Ready
        } else {
            Place::Blocked
        };
        self.nodes.insert(
            ticket,
            Node {
                task,
                waiting: after.len(),
                unplaced,
                deps: after,
                dependents: Vec::new(),
                place,
                followed: false,
                shares: 0,
                outcome: Outcome::Ran { result: 0 },
                group,
                signal: None,
                gate: None,
            },
        );
        if place == Place::Blocked {
            self.work.push(ticket);
            self.settle_rides();
        }
    }

    /// The ring a blocked task may ride in: the one block whose ring holds
    /// (or will hold) all of its unfinished dependencies, none of which has
    /// a follower yet, the newest of the ring among them (so the task runs
    /// right after them, not behind unrelated tasks placed there since).
    fn ride_target(&self, ticket: Ticket) -> Option<u32> {
        let node = self.nodes.get(&ticket)?;
        // More unfinished dependencies than a ring holds are rarely all in
        // one; not looking spares a task after thousands of others a scan
        // of its list at each one's end.
        if node.place != Place::Blocked || node.waiting > RING_ENTRIES {
            return None;
        }
        // A rider runs whole on its block: a task of several CTAs is gated
        // and spread instead where it can be (a k-means assign of 16 CTAs
        // riding behind its update took 16 CTAs' times in a row, 67 us of
        // a 79 us iteration).
        if node.task.ctas() > 1 && self.spread && self.gates {
            return None;
        }
        let mut target = None;
        for dep in &node.deps {
            let Some(dep) = self.nodes.get(dep) else {
                continue; // finished
            };
            if dep.followed {
                return None;
            }
            let (Place::Ring(b) | Place::Riding(b)) = dep.place else {
                return None;
            };
            if target.is_some_and(|t| t != b) {
                return None;
            }
            target = Some(b);
        }
        let b = target?;
        let newest = self.rings[b as usize].newest()?;
        node.deps.contains(&newest).then_some(b)
    }

    /// Puts the blocked task `ticket` into the ready queue gated on its
    /// dependencies' counter, if every unfinished one is in a ring and all
    /// signal one counter (`abi::pool`, "Gates"): its target is every
    /// signal handed out on that counter, which is sealed from now on.
    ///
    /// Only where every entry that has yet to signal the counter is one of
    /// the dependencies': a counter is shared by a group (the tasks pushed
    /// after the same tasks, or after none), and a gate that also waited
    /// for a groupmate still running would make "after `a`" mean "after `a`
    /// and whatever ran beside it", which hangs a host that frees the
    /// groupmate only once the dependent has finished. Such a task stays
    /// blocked, and the host releases it when its dependencies finish.
    fn try_gate(&mut self, ticket: Ticket) {
        if !self.gates {
            return;
        }
        let Some(node) = self.nodes.get(&ticket) else {
            return;
        };
        if node.place != Place::Blocked || node.waiting == 0 || node.unplaced > 0 {
            return;
        }
        // The one counter the unfinished dependencies signal, and how many
        // of their entries have yet to.
        let (mut counter, mut owed) = (None, 0);
        for dep in &node.deps {
            let Some(dep) = self.nodes.get(dep) else {
                continue; // finished
            };
            if !matches!(dep.place, Place::Ring(_) | Place::Spread) {
                return;
            }
            match (dep.signal, counter) {
                (None, _) => return,
                (Some(c), Some(seen)) if c != seen => return,
                (Some(c), _) => counter = Some(c),
            }
            owed += dep.shares;
        }
        let Some(c) = counter else {
            return;
        };
        if owed != self.counters.signalling[c as usize] {
            return;
        }
        self.counters.seal(c);
        let target = self.counters.handed[c as usize];
        if let Some(node) = self.nodes.get_mut(&ticket) {
            node.gate = Some((c, target));
            node.place = Place::Ready;
            node.deps = Vec::new();
            self.ready.push_back(ticket);
        }
    }

    /// Lets the tasks of `self.work` ride where they can (or else be gated
    /// on their dependencies' counter), and then their dependents (a chain
    /// pushed ahead binds to one ring in one go).
    fn settle_rides(&mut self) {
        let mut i = 0;
        while i < self.work.len() {
            let ticket = self.work[i];
            i += 1;
            let Some(b) = self.ride_target(ticket) else {
                self.try_gate(ticket);
                continue;
            };
            let Some(node) = self.nodes.get_mut(&ticket) else {
                continue;
            };
            node.place = Place::Riding(b);
            self.work.extend_from_slice(&node.dependents);
            // A rider's dependencies are read no more (`ride_target` takes
            // only blocked tasks): taken, they mark who has a follower.
            for dep in std::mem::take(&mut node.deps) {
                if let Some(dep) = self.nodes.get_mut(&dep) {
                    dep.followed = true;
                }
            }
            self.rings[b as usize].riders.push_back(ticket);
            self.riding += 1;
        }
        self.work.clear();
    }

    /// Collects the FINISHED entries at the rings' tails, in ring order,
    /// and puts the tasks whose last share that was into `out`.
    fn collect(&mut self, slots: &Slots, tickets: &[AtomicU64], out: &mut Vec<Finished>) {
        if self.in_flight == 0 {
            return;
        }
        for (b, ring) in self.rings.iter_mut().enumerate() {
            while ring.tail < ring.head {
                let entry = (ring.tail % RING_ENTRIES as u64) as usize;
                let slot = b * RING_ENTRIES + entry;
                if slots.state(slot).load(Ordering::Acquire) != FINISHED {
                    break;
                }
                let (status, result) = slots.collect(slot);
                tickets[slot].store(0, Ordering::Relaxed);
                let Held {
                    ticket,
                    last,
                    gate,
                    signal,
                } = ring.held[entry];
                for c in gate.into_iter().chain(signal) {
                    self.counters.release(c);
                }
                if let Some(c) = signal {
                    self.counters.signalling[c as usize] -= 1;
                }
                ring.tail += 1;
                self.in_flight -= 1;
                let Some(node) = self.nodes.get_mut(&ticket) else {
                    debug_assert!(false, "a collected entry of no task");
                    continue;
                };
                let outcome = match status {
                    STATUS_OK => Outcome::Ran { result },
                    STATUS_UNKNOWN_KIND => Outcome::UnknownKind,
                    STATUS_EMPTY_GRID => Outcome::EmptyGrid,
                    other => Outcome::Status(other),
                };
                // A share that did not run names the task's outcome;
                // otherwise the share that ran its last CTA does.
                let ran = |o: &Outcome| matches!(o, Outcome::Ran { .. });
                if ran(&node.outcome) && (last || !ran(&outcome)) {
                    node.outcome = outcome;
                }
                node.shares -= 1;
                if node.shares == 0 {
                    out.push(Finished {
                        ticket,
                        kind: node.task.kind(),
                        outcome: node.outcome,
                    });
                }
            }
        }
    }

    /// Forgets a finished task; its dependents become ready when nothing
    /// else holds them, or may ride now.
    fn finish(&mut self, ticket: Ticket) {
        let Some(dependents) = self.nodes.remove(&ticket) else {
            return;
        };
        for dependent in dependents {
            let Some(waiting) = self.nodes.get_mut(&dependent) else {
                continue;
            };
            waiting.waiting -= 1;
            if waiting.place != Place::Blocked {
                // A rider keeps its ring: it waits there for room, which
                // comes no later than its dependencies' end.
                continue;
            }
            if waiting.waiting == 0 {
                waiting.deps = Vec::new();
                waiting.place = Place::Ready;
                self.ready.push_back(dependent);
            } else {
                // Drops finished dependencies from the list once they are
                // most of it, so that looking for a ride (a scan of the
                // list at each dependency's end) stays linear in all: a
                // join after 256 tasks scanned 256 entries at each of its
                // last 64 ends.
                if waiting.deps.len() > 2 * waiting.waiting {
                    let mut deps = std::mem::take(&mut waiting.deps);
                    deps.retain(|dep| self.nodes.contains_key(dep));
                    if let Some(waiting) = self.nodes.get_mut(&dependent) {
                        waiting.deps = deps;
                    }
                }
                self.work.push(dependent);
                self.settle_rides();
            }
        }
    }

    /// Moves tasks into rings with room: riders into their own ring first,
    /// then the ready queue level by level (a block with nothing in flight
    /// before any block gets a second task, and so on up to the depth).
    /// Returns the tasks moved.
    fn dispatch(&mut self, slots: &Slots, tickets: &[AtomicU64]) -> usize {
        let mut sent = 0;
        if self.riding > 0 {
            for b in 0..self.rings.len() {
                // A chain fills the ring whatever the depth: its steps
                // could run nowhere else before their predecessors.
                while self.rings[b].in_flight() < RING_ENTRIES as u32 {
                    let Some(ticket) = self.rings[b].riders.pop_front() else {
                        break;
                    };
                    self.riding -= 1;
                    self.publish(slots, tickets, b, ticket, 0, 1);
                    sent += 1;
                }
            }
        }
        let blocks = self.rings.len();
        if self.ready.is_empty() {
            return sent;
        }
        for level in &mut self.levels {
            level.clear();
        }
        for k in 0..blocks {
            let b = (self.cursor + k) % blocks;
            let in_flight = self.rings[b].in_flight();
            if in_flight < self.depth {
                self.levels[in_flight as usize].push(b as u32);
            }
        }
        self.cursor = (self.cursor + 1) % blocks;
        'levels: for level in 0..self.depth as usize {
            let mut k = 0;
            while k < self.levels[level].len() {
                let Some(ticket) = self.ready.pop_front() else {
                    break 'levels;
                };
                let shares = self.shares_for(ticket, level, self.levels[level].len() - k);
                for share in 0..shares {
                    let b = self.levels[level][k] as usize;
                    k += 1;
                    self.publish(slots, tickets, b, ticket, share, shares);
                    if level + 1 < self.depth as usize {
                        self.levels[level + 1].push(b as u32);
                    }
                }
                sent += 1;
            }
        }
        sent
    }

    /// How many blocks the ready task `ticket`, just taken from the ready
    /// queue, runs on, with `left` blocks left that have `level` tasks in
    /// flight: its part of them beside the tasks still ready, at most one
    /// per CTA (`PoolConfig::spread`). Blocks with nothing in flight split
    /// any task; the blocks of other levels only a gated one, which starts
    /// when its dependencies end, about when those blocks come free.
    fn shares_for(&self, ticket: Ticket, level: usize, left: usize) -> u32 {
        let Some(node) = self.nodes.get(&ticket) else {
            return 1;
        };
        if !self.spread || (level > 0 && node.gate.is_none()) {
            return 1;
        }
        let part = left / (self.ready.len() + 1);
        (part.min(node.task.ctas() as usize) as u32).max(1)
    }

    /// Writes share `share` of `shares` of `ticket`'s task into the next
    /// entry of block `b`'s ring (the caller checked there is room, so the
    /// entry is IDLE). Share `i` of `n` runs CTAs `i * ctas / n ..
    /// (i + 1) * ctas / n`: the whole grid for one share.
    fn publish(
        &mut self,
        slots: &Slots,
        tickets: &[AtomicU64],
        b: usize,
        ticket: Ticket,
        share: u32,
        shares: u32,
    ) {
        let Some(node) = self.nodes.get_mut(&ticket) else {
            return;
        };
        let ring = &mut self.rings[b];
        debug_assert!(ring.in_flight() < RING_ENTRIES as u32);
        let entry = (ring.head % RING_ENTRIES as u64) as usize;
        let slot = b * RING_ENTRIES + entry;
        let ctas = u64::from(node.task.ctas());
        let cut = |i: u32| (ctas * u64::from(i) / u64::from(shares)) as u32;
        // With gates, every entry signals its group's counter (a dependent
        // pushed later may gate on it); one whose dependencies all finished
        // since it was gated waits for nothing.
        if node.signal.is_none() && self.gates {
            node.signal = self.counters.open_for(node.group);
        }
        let gate = node.gate.filter(|_| node.waiting > 0);
        let counters = &mut self.counters;
        for c in gate.map(|(c, _)| c).into_iter().chain(node.signal) {
            counters.take(c);
        }
        if let Some(c) = node.signal {
            counters.handed[c as usize] = counters.handed[c as usize].wrapping_add(1);
            counters.signalling[c as usize] += 1;
        }
        let words = GateWords {
            gate: gate.map_or(0, |(c, _)| c + 1),
            target: gate.map_or(0, |(_, target)| target),
            signal: node.signal.map_or(0, |c| c + 1),
        };
        slots.publish(slot, &node.task, cut(share)..cut(share + 1), words);
        tickets[slot].store(ticket.0 + 1, Ordering::Relaxed);
        ring.held[entry] = Held {
            ticket,
            last: share + 1 == shares,
            gate: gate.map(|(c, _)| c),
            signal: node.signal,
        };
        ring.head += 1;
        self.in_flight += 1;
        node.shares += 1;
        let place = if shares == 1 {
            Place::Ring(b as u32)
        } else {
            Place::Spread
        };
        node.place = place;
        if share + 1 == shares {
            // In rings whole: its dependents may ride behind it, or be
            // gated on its counter, now (after its last share, so that a
            // gate counts every share's signal).
            self.work.extend_from_slice(&node.dependents);
            let dependents = std::mem::take(&mut node.dependents);
            for dependent in &dependents {
                if let Some(waiting) = self.nodes.get_mut(dependent) {
                    waiting.unplaced = waiting.unplaced.saturating_sub(1);
                }
            }
            if let Some(node) = self.nodes.get_mut(&ticket) {
                node.dependents = dependents;
            }
            self.settle_rides();
        }
    }

    /// Cancels every task not in a ring (queued, blocked, riding) into
    /// `out`; tasks in rings run, as the device owns them.
    fn cancel(&mut self, out: &mut Vec<Finished>) {
        self.ready.clear();
        for ring in &mut self.rings {
            ring.riders.clear();
        }
        self.riding = 0;
        self.nodes.retain(|&ticket, node| {
            if matches!(node.place, Place::Ring(_) | Place::Spread) {
                return true;
            }
            out.push(Finished {
                ticket,
                kind: node.task.kind(),
                outcome: Outcome::Cancelled,
            });
            false
        });
    }

    /// Writes EXIT into the entry each block reads next. Only with nothing
    /// in flight: every entry is then IDLE, and the one the block reads
    /// next is the ring's head.
    fn exit(&mut self, slots: &Slots) {
        debug_assert_eq!(self.in_flight, 0);
        for (b, ring) in self.rings.iter().enumerate() {
            let entry = (ring.head % RING_ENTRIES as u64) as usize;
            slots
                .state(b * RING_ENTRIES + entry)
                .store(EXIT, Ordering::Release);
        }
    }
}

mod gpu {
    //! The pool on a GPU: the rings in page-locked, device-mapped host
    //! memory, and the pool kernel running on a stream of its own.

    use std::sync::Arc;

    use cudarc::driver::sys;
    use cudarc::driver::{CudaContext, CudaEvent, CudaStream};

    use cudarc::driver::DevicePtr;

    use super::{PoolConfig, PoolError, Slot, TaskPool};
    use crate::{Gpu, Kernel, LaunchConfig};

    /// Page-locked host memory mapped into the device's address space.
    pub(super) struct Pinned {
        pub(super) host: *mut Slot,
        pub(super) device: u64,
        ctx: Arc<CudaContext>,
    }

    impl Pinned {
        pub(super) fn new(ctx: &Arc<CudaContext>, count: usize) -> Result<Pinned, PoolError> {
            let driver = |what: &'static str| {
                move |e: cudarc::driver::DriverError| PoolError::Device(format!("{what}: {e:?}"))
            };
            ctx.bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
            let bytes = count * std::mem::size_of::<Slot>();
            let flags = sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE;
            // SAFETY: a fresh allocation of `bytes`, page-aligned (so each
            // slot keeps its 128-byte alignment).
            let host = unsafe { cudarc::driver::result::malloc_host(bytes, flags) }
                .map_err(driver("cuMemHostAlloc(DEVICEMAP)"))?
                .cast::<Slot>();
            for i in 0..count {
                // SAFETY: inside the allocation.
                unsafe { host.add(i).write(Slot::IDLE) };
            }
            let mut device: sys::CUdeviceptr = 0;
            // SAFETY: `host` was allocated with DEVICEMAP in this context.
            let got = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device, host.cast(), 0) };
            let pinned = Pinned {
                host,
                device,
                ctx: Arc::clone(ctx),
            };
            if got != sys::CUresult::CUDA_SUCCESS {
                return Err(PoolError::Device(format!(
                    "cuMemHostGetDevicePointer: {got:?}"
                )));
            }
            Ok(pinned)
        }
    }

    impl Drop for Pinned {
        fn drop(&mut self) {
            if self.ctx.bind_to_thread().is_ok() {
                // SAFETY: allocated by `malloc_host`; the kernel ended.
                let _ = unsafe { cudarc::driver::result::free_host(self.host.cast()) };
            }
        }
    }

    /// The publication words in device memory, owned until the kernel ended.
    pub(super) struct Words {
        _owned: cudarc::driver::CudaSlice<u32>,
    }

    /// The running pool kernel: an event recorded after it on its stream.
    pub(super) struct Running {
        _stream: Arc<CudaStream>,
        done: CudaEvent,
    }

    // SAFETY: cudarc's stream and event are used from the scheduler thread
    // only after the pool moved them there; they bind their context.
    unsafe impl Send for Running {}

    impl Running {
        /// `Some` once the kernel ended: `Ok` if it ran to its end.
        pub(super) fn ended(&self) -> Option<Result<(), String>> {
            match self.done.try_is_complete() {
                Ok(true) => Some(Ok(())),
                Ok(false) => None,
                Err(e) => Some(Err(format!("the pool kernel failed: {e:?}"))),
            }
        }
    }

    impl TaskPool {
        /// Threads per block of a pool of `kernel` with `config` on a GPU:
        /// [`PoolConfig::block_threads`], and one more warp where that warp
        /// publishes the tasks (the build marked the kernel, the config
        /// allows it, and the task threads fill whole warps: `abi::pool`,
        /// "A publishing warp"). The kernel's occupancy at this size is how
        /// many of its blocks an SM keeps resident
        /// ([`PoolConfig::blocks_per_sm`]).
        pub fn launch_threads(kernel: &Kernel, config: &PoolConfig) -> u32 {
            config.launch_threads(kernel.publishing_warp())
        }

        /// A pool on `gpu`: `kernel` (a pool kernel, one `*mut Slot`
        /// parameter, e.g. `pool_demo` of the suite's module) runs on a
        /// stream of its own with one block per ring of
        /// [`RING_ENTRIES`](super::RING_ENTRIES) slots and one more that
        /// publishes finished tasks, every block co-resident (from the
        /// kernel's occupancy).
        ///
        /// Load every module the program will use before this: loading a
        /// module or a function while a kernel never returns can wait for
        /// it. [`Gpu::load_module`](crate::Gpu::load_module) loads every
        /// function of its module at once whatever `CUDA_MODULE_LOADING`
        /// says ([`ModuleOptions::load_every_function`](crate::ModuleOptions::load_every_function)),
        /// so a kernel of such a module launched for the first time while
        /// the pool runs does not wait for the pool (`suite/tests/pool_lazy_gpu.rs`).
        /// The pool kernel itself is loaded here (`cuFuncLoad`) before it
        /// starts.
        pub fn gpu(gpu: &Gpu, kernel: &Kernel, config: PoolConfig) -> Result<TaskPool, PoolError> {
            let host_error = |e: crate::Error| PoolError::Device(e.to_string());
            let threads = TaskPool::launch_threads(kernel, &config);
            let per_sm = kernel.occupancy(threads, 0).map_err(host_error)?;
            let blocks = config.plan(per_sm, gpu.properties().sm_count)?;
            crate::module::load_on_device(kernel.function()).map_err(host_error)?;
            let pinned = Pinned::new(gpu.context(), super::pool_slots(blocks))?;
            let stream = gpu.new_stream().map_err(host_error)?;
            // Zeroed on the kernel's stream, before it.
            let words = stream
                .alloc_zeros::<u32>(super::device_words(blocks))
                .map_err(|e| {
                    PoolError::Device(format!("cuMemAlloc(the pool's device words): {e:?}"))
                })?;
            let words_address = words.device_ptr(&stream).0;
            // SAFETY: allocated with the header's slot; no block runs yet.
            unsafe {
                super::write_header(pinned.host, blocks, words_address, config.block_threads)
            };
            let address = pinned.device;
            // The rings' blocks and the publisher.
            let launch = LaunchConfig::new([blocks + 1, 1, 1], [threads, 1, 1]);
            // SAFETY: the kernel takes one pointer to `blocks` rings and the
            // header after them, which live (with the words) until it ended
            // (`Shared` frees them only then).
            unsafe {
                gpu.launch(kernel, launch)
                    .on(&stream)
                    .arg(&address)
                    .run()
                    .map_err(host_error)?;
            }
            let done = stream
                .record_event(None)
                .map_err(|e| PoolError::Device(format!("cuEventRecord: {e:?}")))?;
            let host = pinned.host;
            let shared = TaskPool::shared(
                &config,
                blocks,
                host,
                super::Memory::Gpu(pinned, Words { _owned: words }),
                threads > config.block_threads,
            );
            TaskPool::start(
                shared,
                Some(Running {
                    _stream: stream,
                    done,
                }),
            )?
            .await_blocks()
        }
    }
}

#[cfg(test)]
mod tests {
    //! The scheduler's bookkeeping without threads: the test plays the
    //! device, writing FINISHED into the slots by hand.

    use super::*;

    /// `blocks` rings in a buffer of idle slots, and their tickets.
    struct Rings {
        _memory: Box<[Slot]>,
        slots: Slots,
        tickets: Box<[AtomicU64]>,
    }

    impl Rings {
        fn new(blocks: usize) -> Rings {
            let mut memory = vec![Slot::IDLE; blocks * RING_ENTRIES].into_boxed_slice();
            let slots = Slots {
                host: memory.as_mut_ptr(),
                blocks,
            };
            Rings {
                _memory: memory,
                slots,
                tickets: (0..blocks * RING_ENTRIES)
                    .map(|_| AtomicU64::new(0))
                    .collect(),
            }
        }

        /// Each block's tickets in ring order, oldest first.
        fn held(&self, d: &Dispatch) -> Vec<Vec<u64>> {
            d.rings
                .iter()
                .map(|r| {
                    (r.tail..r.head)
                        .map(|i| r.held[(i % RING_ENTRIES as u64) as usize].ticket.0)
                        .collect()
                })
                .collect()
        }

        /// Each block's entries in flight, oldest first: the ticket and the
        /// slot as the device reads it.
        fn entries(&self, d: &Dispatch) -> Vec<Vec<(u64, Slot)>> {
            let slot = |b: usize, i: u64| {
                let entry = (i % RING_ENTRIES as u64) as usize;
                // SAFETY: in bounds; the test plays the device.
                let slot = unsafe { *self.slots.host.add(b * RING_ENTRIES + entry) };
                (d.rings[b].held[entry].ticket.0, slot)
            };
            let block = |(b, r): (usize, &Ring)| (r.tail..r.head).map(|i| slot(b, i)).collect();
            d.rings.iter().enumerate().map(block).collect()
        }

        /// The device finishes the oldest task of block `b` with `result`.
        fn finish(&self, d: &Dispatch, b: usize, result: u64) {
            self.finish_nth(d, b, 0, result);
        }

        /// The device finishes the `nth` oldest task of block `b`.
        fn finish_nth(&self, d: &Dispatch, b: usize, nth: u64, result: u64) {
            self.finish_as(d, b, nth, STATUS_OK, result);
        }

        /// The device finishes the `nth` oldest task of block `b` with
        /// `status`.
        fn finish_as(&self, d: &Dispatch, b: usize, nth: u64, status: u32, result: u64) {
            let ring = &d.rings[b];
            assert!(ring.tail + nth < ring.head, "block {b} has no task {nth}");
            let slot = b * RING_ENTRIES + ((ring.tail + nth) % RING_ENTRIES as u64) as usize;
            let state = self.slots.state(slot);
            assert_eq!(state.load(Ordering::Relaxed), READY);
            // SAFETY: the test owns the buffer and plays the device.
            unsafe {
                (*self.slots.host.add(slot)).status = status;
                (*self.slots.host.add(slot)).result = result;
            }
            state.store(FINISHED, Ordering::Release);
        }

        fn collect(&self, d: &mut Dispatch) -> Vec<u64> {
            let mut out = Vec::new();
            d.collect(&self.slots, &self.tickets, &mut out);
            for f in &out {
                d.finish(f.ticket);
            }
            out.iter().map(|f| f.ticket.0).collect()
        }
    }

    fn push(d: &mut Dispatch, ticket: u64, after: &[u64]) {
        push_ctas(d, ticket, 1, after);
    }

    /// A task of `ctas` CTAs.
    fn push_ctas(d: &mut Dispatch, ticket: u64, ctas: u32, after: &[u64]) {
        d.intake(Queued {
            ticket: Ticket(ticket),
            task: Task::new(0, ctas, ticket as u32),
            after: after.iter().map(|&t| Ticket(t)).collect(),
        });
    }

    #[test]
    fn the_ready_queue_fills_the_rings_level_by_level() {
        let rings = Rings::new(3);
        let mut d = Dispatch::new(3, 4, true, true);
        for t in 0..8 {
            push(&mut d, t, &[]);
        }
        assert_eq!(d.dispatch(&rings.slots, &rings.tickets), 8);
        let held = rings.held(&d);
        // Tickets 0..3 on three different blocks, then 3..6, then the rest.
        let mut firsts: Vec<u64> = held.iter().map(|h| h[0]).collect();
        firsts.sort();
        assert_eq!(firsts, [0, 1, 2]);
        let mut sizes: Vec<usize> = held.iter().map(Vec::len).collect();
        sizes.sort();
        assert_eq!(sizes, [2, 3, 3]);
        // Each ring in ticket order; the depth caps it.
        for h in &held {
            assert!(h.windows(2).all(|w| w[0] < w[1]), "{held:?}");
        }
        for t in 8..20 {
            push(&mut d, t, &[]);
        }
        d.dispatch(&rings.slots, &rings.tickets);
        assert!(rings.held(&d).iter().all(|h| h.len() == 4));
        assert_eq!(d.ready.len(), 8);
        // A block that finishes two gets the next two.
        let b = 1;
        rings.finish(&d, b, 0);
        rings.finish_nth(&d, b, 1, 0);
        assert_eq!(rings.collect(&mut d).len(), 2);
        assert_eq!(d.dispatch(&rings.slots, &rings.tickets), 2);
        assert_eq!(rings.held(&d)[b][2..], [12, 13]);
        // The tickets a timeout names follow the rings.
        let named = rings
            .tickets
            .iter()
            .filter(|t| t.load(Ordering::Relaxed) != 0)
            .count();
        assert_eq!(named, 12);
    }

    #[test]
    fn a_chain_binds_to_its_head_s_ring_and_waits_there_for_room() {
        const RING: u64 = RING_ENTRIES as u64;
        let rings = Rings::new(4);
        let mut d = Dispatch::new(4, 4, true, true);
        // Pushed before anything was dispatched: the head is ready, the
        // rest blocked until the head has a ring.
        push(&mut d, 0, &[]);
        for t in 1..RING + 6 {
            push(&mut d, t, &[t - 1]);
        }
        assert_eq!(d.dispatch(&rings.slots, &rings.tickets), 1);
        // The head's ring is known only now: the next dispatch pass puts
        // the riders behind it, up to the ring's capacity (not the depth,
        // 4 here: the steps could run nowhere else).
        assert_eq!(d.riding, RING as usize + 5);
        d.dispatch(&rings.slots, &rings.tickets);
        let held = rings.held(&d);
        let b = held.iter().position(|h| !h.is_empty()).unwrap();
        assert_eq!(held[b], (0..RING).collect::<Vec<_>>());
        assert!(held.iter().enumerate().all(|(i, h)| i == b || h.is_empty()));
        // A step pushed now rides behind the last one too.
        push(&mut d, RING + 6, &[RING + 5]);
        assert_eq!(d.riding, 7);
        // Room comes as the block finishes: the riders take it in order,
        // before anything in the ready queue, which goes to an idle block.
        push(&mut d, RING + 7, &[]);
        rings.finish(&d, b, 0);
        assert_eq!(rings.collect(&mut d), [0]);
        d.dispatch(&rings.slots, &rings.tickets);
        assert_eq!(rings.held(&d)[b], (1..=RING).collect::<Vec<_>>());
        assert!(rings.held(&d).iter().any(|h| h == &[RING + 7]));
    }

    #[test]
    fn a_dependent_does_not_ride_behind_unrelated_tasks() {
        // One block, so the two independent tasks share its ring; no gates,
        // so that 2 stays on the host.
        let rings = Rings::new(1);
        let mut d = Dispatch::new(1, 4, true, false);
        push(&mut d, 0, &[]);
        push(&mut d, 1, &[]);
        d.dispatch(&rings.slots, &rings.tickets);
        assert_eq!(rings.held(&d)[0], [0, 1]);
        // After 0, but 1 was placed since: riding would queue it behind 1.
        push(&mut d, 2, &[0]);
        assert_eq!(d.riding, 0);
        // After 1, the ring's newest: it rides.
        push(&mut d, 3, &[1]);
        assert_eq!(d.riding, 1);
        d.dispatch(&rings.slots, &rings.tickets);
        assert_eq!(rings.held(&d)[0], [0, 1, 3]);
    }

    #[test]
    fn only_the_first_dependent_rides_and_two_rings_do_not_mix() {
        // Without gates: the others wait on the host (see the gate tests).
        let rings = Rings::new(4);
        let mut d = Dispatch::new(4, 8, true, false);
        push(&mut d, 0, &[]);
        push(&mut d, 1, &[]);
        d.dispatch(&rings.slots, &rings.tickets);
        let held = rings.held(&d);
        let b0 = held.iter().position(|h| h == &[0]).unwrap();
        let b1 = held.iter().position(|h| h == &[1]).unwrap();
        // A fan-out of 0: only 2 rides.
        push(&mut d, 2, &[0]);
        push(&mut d, 3, &[0]);
        push(&mut d, 4, &[0]);
        // After tasks in two rings: blocked on the host.
        push(&mut d, 5, &[0, 1]);
        // 6 rides behind 1; 7 (after 6 and 1) does not, as 1 has its
        // follower.
        push(&mut d, 6, &[1]);
        push(&mut d, 7, &[6, 1]);
        d.dispatch(&rings.slots, &rings.tickets);
        let held = rings.held(&d);
        assert_eq!(held[b0], [0, 2]);
        assert_eq!(held[b1], [1, 6]);
        assert_eq!(d.riding, 0);
        assert_eq!(
            d.nodes[&Ticket(7)].place,
            Place::Blocked,
            "1 has a follower"
        );
        // 0 finishes: 3 and 4 are ready and go to idle blocks first; 5 still
        // waits for 1.
        rings.finish(&d, b0, 0);
        assert_eq!(rings.collect(&mut d), [0]);
        d.dispatch(&rings.slots, &rings.tickets);
        let held = rings.held(&d);
        assert_eq!(held[b0], [2]);
        let others: Vec<&Vec<u64>> = held
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != b0 && i != b1)
            .map(|(_, h)| h)
            .collect();
        let mut spread: Vec<u64> = others.iter().flat_map(|h| h.iter().copied()).collect();
        spread.sort();
        assert_eq!(spread, [3, 4]);
        assert!(others.iter().all(|h| h.len() == 1));
        assert_eq!(d.nodes[&Ticket(5)].place, Place::Blocked);
        // 1 finishes: 5 (after 0 and 1) is ready; 7 now waits only on 6,
        // which has no follower: it rides behind 6.
        rings.finish(&d, b1, 0);
        assert_eq!(rings.collect(&mut d), [1]);
        assert_eq!(d.nodes[&Ticket(7)].place, Place::Riding(b1 as u32));
        assert_eq!(d.nodes[&Ticket(5)].place, Place::Ready);
    }

    #[test]
    fn exit_goes_into_the_entry_each_block_reads_next() {
        let rings = Rings::new(2);
        let mut d = Dispatch::new(2, 8, true, true);
        for t in 0..11 {
            push(&mut d, t, &[]);
        }
        d.dispatch(&rings.slots, &rings.tickets);
        for b in 0..2 {
            while !rings.held(&d)[b].is_empty() {
                rings.finish(&d, b, 0);
                rings.collect(&mut d);
            }
        }
        assert!(d.is_empty());
        d.exit(&rings.slots);
        let states: Vec<u32> = (0..2 * RING_ENTRIES)
            .map(|i| rings.slots.state(i).load(Ordering::Relaxed))
            .collect();
        // Block 0 ran 6 tasks (entries 0..6), block 1 ran 5, or the other
        // way round: EXIT sits right after each one's last.
        let next: Vec<usize> = d.rings.iter().map(|r| r.head as usize).collect();
        for (i, &s) in states.iter().enumerate() {
            let (b, e) = (i / RING_ENTRIES, i % RING_ENTRIES);
            let want = if e == next[b] % RING_ENTRIES {
                EXIT
            } else {
                IDLE
            };
            assert_eq!(s, want, "block {b} entry {e}: {states:?}");
        }
        assert_eq!(next.iter().sum::<usize>(), 11);
    }

    #[test]
    fn cancel_keeps_the_tasks_in_rings() {
        let rings = Rings::new(1);
        let mut d = Dispatch::new(1, 2, true, true);
        push(&mut d, 0, &[]);
        push(&mut d, 1, &[]);
        push(&mut d, 2, &[]);
        push(&mut d, 3, &[1]);
        d.dispatch(&rings.slots, &rings.tickets);
        assert_eq!(rings.held(&d)[0], [0, 1]);
        let mut out = Vec::new();
        d.cancel(&mut out);
        let mut cancelled: Vec<u64> = out.iter().map(|f| f.ticket.0).collect();
        cancelled.sort();
        assert_eq!(cancelled, [2, 3]);
        assert!(out.iter().all(|f| f.outcome == Outcome::Cancelled));
        assert_eq!(d.dispatch(&rings.slots, &rings.tickets), 0);
        rings.finish(&d, 0, 5);
        rings.finish_nth(&d, 0, 1, 0);
        assert_eq!(rings.collect(&mut d), [0, 1]);
        assert!(d.is_empty());
    }

    /// The share (first CTA, CTAs) and ticket of each block's oldest entry.
    fn shares(rings: &Rings, d: &Dispatch) -> Vec<Option<(u64, u32, u32)>> {
        let oldest = |e: Vec<(u64, Slot)>| e.first().map(|(t, s)| (*t, s.first, s.count));
        rings.entries(d).into_iter().map(oldest).collect()
    }

    #[test]
    fn a_task_of_many_ctas_spreads_over_idle_blocks_and_ends_with_its_last_share() {
        let rings = Rings::new(8);
        let mut d = Dispatch::new(8, 4, true, false);
        // Two ready tasks, 8 idle blocks: the first takes half, but at most
        // a block per CTA (it has 3), the second the other five (and 2, not
        // gated, waits for 1 on the host).
        push_ctas(&mut d, 0, 3, &[]);
        push_ctas(&mut d, 1, 16, &[]);
        push(&mut d, 2, &[1]);
        assert_eq!(d.dispatch(&rings.slots, &rings.tickets), 2);
        let mut taken: Vec<(u64, u32, u32)> = shares(&rings, &d).into_iter().flatten().collect();
        taken.sort();
        assert_eq!(
            taken,
            [
                (0, 0, 1),
                (0, 1, 1),
                (0, 2, 1),
                (1, 0, 3),
                (1, 3, 3),
                (1, 6, 3),
                (1, 9, 3),
                (1, 12, 4)
            ]
        );
        // Nothing rides behind a spread task.
        assert_eq!(d.nodes[&Ticket(2)].place, Place::Blocked);
        let block_of = |first: u32| {
            shares(&rings, &d)
                .iter()
                .position(|s| s.is_some_and(|s| s.0 == 1 && s.1 == first))
                .unwrap()
        };
        // Task 1 ends with its last share (CTAs 12..16), whose result is
        // the task's, whatever order the shares end in.
        let last = block_of(12);
        let others = [block_of(0), block_of(3), block_of(6), block_of(9)];
        rings.finish(&d, last, 77);
        rings.finish(&d, others[0], 1);
        assert!(rings.collect(&mut d).is_empty());
        for (i, &b) in others[1..].iter().enumerate() {
            rings.finish(&d, b, i as u64);
        }
        let mut out = Vec::new();
        d.collect(&rings.slots, &rings.tickets, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].ticket, Ticket(1));
        assert_eq!(out[0].outcome, Outcome::Ran { result: 77 });
        d.finish(Ticket(1));
        // Its dependent is ready now, and runs whole (one CTA).
        assert_eq!(d.dispatch(&rings.slots, &rings.tickets), 1);
        assert_eq!(
            shares(&rings, &d)
                .iter()
                .flatten()
                .filter(|s| s.0 == 2)
                .count(),
            1
        );
    }

    #[test]
    fn a_share_that_did_not_run_names_the_task_s_outcome() {
        let rings = Rings::new(2);
        let mut d = Dispatch::new(2, 1, true, true);
        push_ctas(&mut d, 0, 2, &[]);
        d.dispatch(&rings.slots, &rings.tickets);
        rings.finish(&d, 0, 5);
        // The device refused one share's kind.
        rings.finish_as(&d, 1, 0, STATUS_UNKNOWN_KIND, 0);
        let mut out = Vec::new();
        d.collect(&rings.slots, &rings.tickets, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].outcome, Outcome::UnknownKind);
    }

    #[test]
    fn without_spread_every_task_runs_whole_on_one_block() {
        let rings = Rings::new(8);
        let mut d = Dispatch::new(8, 4, false, true);
        push_ctas(&mut d, 0, 16, &[]);
        d.dispatch(&rings.slots, &rings.tickets);
        let taken: Vec<_> = shares(&rings, &d).into_iter().flatten().collect();
        assert_eq!(taken, [(0, 0, 16)]);
    }

    #[test]
    fn a_join_forgets_its_finished_dependencies() {
        // A join after 300 tasks on 300 rings: as they end, the list it
        // scans for a ride keeps at most twice its unfinished ones.
        let rings = Rings::new(300);
        let mut d = Dispatch::new(300, 1, true, true);
        for t in 0..300 {
            push(&mut d, t, &[]);
        }
        push(&mut d, 300, &(0..300).collect::<Vec<_>>());
        d.dispatch(&rings.slots, &rings.tickets);
        for b in 0..290 {
            rings.finish(&d, b, 0);
        }
        assert_eq!(rings.collect(&mut d).len(), 290);
        let join = &d.nodes[&Ticket(300)];
        assert_eq!(join.waiting, 10);
        assert!(
            join.deps.len() <= 20,
            "{} dependencies kept",
            join.deps.len()
        );
        for b in 290..300 {
            rings.finish(&d, b, 0);
        }
        assert_eq!(rings.collect(&mut d).len(), 10);
        assert_eq!(d.nodes[&Ticket(300)].place, Place::Ready);
    }

    /// Each block's entries in ring order as (ticket, gate, target,
    /// signal), the slot's gate words.
    fn gate_words(rings: &Rings, d: &Dispatch) -> Vec<Vec<(u64, u32, u32, u32)>> {
        let words = |(t, s): (u64, Slot)| (t, s.gate, s.target, s.signal);
        let block = |e: Vec<(u64, Slot)>| e.into_iter().map(words).collect();
        rings.entries(d).into_iter().map(block).collect()
    }

    /// The gate words of `ticket`'s entries, wherever they are.
    fn gates_of(rings: &Rings, d: &Dispatch, ticket: u64) -> Vec<(u32, u32, u32)> {
        let all = gate_words(rings, d).into_iter().flatten();
        all.filter(|e| e.0 == ticket)
            .map(|(_, gate, target, signal)| (gate, target, signal))
            .collect()
    }

    #[test]
    fn a_join_over_rings_is_published_gated_on_its_dependencies_counter() {
        let rings = Rings::new(4);
        let mut d = Dispatch::new(4, 4, true, true);
        push(&mut d, 0, &[]);
        push(&mut d, 1, &[]);
        d.dispatch(&rings.slots, &rings.tickets);
        // Both independent: one group, one counter, two signals.
        let [(_, _, a)] = gates_of(&rings, &d, 0)[..] else {
            panic!("0 has one entry")
        };
        assert_ne!(a, 0);
        assert_eq!(gates_of(&rings, &d, 1), [(0, 0, a)]);
        // After both, which run on two blocks: into a ring at once, gated on
        // both signals.
        push(&mut d, 2, &[0, 1]);
        d.dispatch(&rings.slots, &rings.tickets);
        let [(gate, target, signal)] = gates_of(&rings, &d, 2)[..] else {
            panic!("2 is in a ring: {:?}", rings.held(&d))
        };
        assert_eq!((gate, target), (a, 2));
        assert!(
            signal != 0 && signal != a,
            "2 signals its own group's counter"
        );
        // The gate sealed `a`: a new independent task signals another
        // counter, so it cannot open 2's gate before 0 or 1 ended.
        push(&mut d, 3, &[]);
        d.dispatch(&rings.slots, &rings.tickets);
        let [(0, 0, fresh)] = gates_of(&rings, &d, 3)[..] else {
            panic!("3 is in a ring, ungated")
        };
        assert!(fresh != a && fresh != 0);
        // Every counter goes back once nothing in a ring uses it.
        for t in 0..4 {
            let b = rings.held(&d).iter().position(|h| h.first() == Some(&t));
            rings.finish(&d, b.expect("oldest somewhere"), t);
            assert_eq!(rings.collect(&mut d), [t]);
        }
        assert!(d.counters.uses.iter().all(|&u| u == 0));
        assert_eq!(d.counters.free.len(), gate_counters(4));
    }

    #[test]
    fn a_gate_waits_for_its_dependencies_only_not_for_their_groupmates() {
        // 0 and 1 are independent: one group, one counter. 2 (four CTAs,
        // spread: it does not ride) is after 1 alone. A gate on that
        // counter would wait for 0 too, and a host that lets 0 end only
        // once 2 has ended would hang: 2 waits on the host instead.
        let rings = Rings::new(4);
        let mut d = Dispatch::new(4, 4, true, true);
        push(&mut d, 0, &[]);
        push(&mut d, 1, &[]);
        d.dispatch(&rings.slots, &rings.tickets);
        push_ctas(&mut d, 2, 4, &[1]);
        d.dispatch(&rings.slots, &rings.tickets);
        assert!(
            gates_of(&rings, &d, 2).is_empty(),
            "2 is not published gated on 0's counter: {:?}",
            gate_words(&rings, &d)
        );
        let b1 = rings.held(&d).iter().position(|h| h.first() == Some(&1));
        rings.finish(&d, b1.expect("1 in a ring"), 1);
        assert_eq!(rings.collect(&mut d), [1]);
        d.dispatch(&rings.slots, &rings.tickets);
        let shares = gates_of(&rings, &d, 2);
        assert!(!shares.is_empty(), "2 is published once 1 ended");
        assert!(
            shares.iter().all(|g| g.0 == 0),
            "and waits for nothing: {shares:?}"
        );
        // 2 ends while 0 still runs.
        for (b, held) in rings.held(&d).iter().enumerate() {
            for (nth, &t) in held.iter().enumerate() {
                if t == 2 {
                    rings.finish_nth(&d, b, nth as u64, 2);
                }
            }
        }
        assert_eq!(rings.collect(&mut d), [2]);
        assert!(
            rings.held(&d).iter().any(|h| h.contains(&0)),
            "0 still runs"
        );
    }

    #[test]
    fn a_fan_out_rides_once_and_gates_the_rest_on_the_one_dependency() {
        let rings = Rings::new(4);
        let mut d = Dispatch::new(4, 4, true, true);
        push(&mut d, 0, &[]);
        d.dispatch(&rings.slots, &rings.tickets);
        for t in 1..4 {
            push(&mut d, t, &[0]);
        }
        d.dispatch(&rings.slots, &rings.tickets);
        let b0 = rings
            .held(&d)
            .iter()
            .position(|h| h.first() == Some(&0))
            .unwrap();
        assert_eq!(rings.held(&d)[b0], [0, 1], "1 rides behind 0");
        let [(0, 0, a)] = gates_of(&rings, &d, 0)[..] else {
            panic!("0 ungated")
        };
        assert_eq!(gates_of(&rings, &d, 1)[0].0, 0, "a rider needs no gate");
        for t in [2, 3] {
            let [(gate, target, _)] = gates_of(&rings, &d, t)[..] else {
                panic!("{t} is in a ring")
            };
            assert_eq!((gate, target), (a, 1));
        }
        // Siblings share a group: 1, 2 and 3 signal one counter.
        let signals: Vec<u32> = (1..4).map(|t| gates_of(&rings, &d, t)[0].2).collect();
        assert!(
            signals.iter().all(|&s| s == signals[0] && s != a),
            "{signals:?}"
        );
    }

    #[test]
    fn a_gate_on_a_spread_task_counts_every_share() {
        let rings = Rings::new(4);
        let mut d = Dispatch::new(4, 4, true, true);
        push_ctas(&mut d, 0, 3, &[]);
        push(&mut d, 1, &[0]);
        d.dispatch(&rings.slots, &rings.tickets);
        let shares = gates_of(&rings, &d, 0);
        assert_eq!(shares.len(), 3, "spread over three blocks");
        let a = shares[0].2;
        assert!(shares.iter().all(|&e| e == (0, 0, a)));
        let [(gate, target, _)] = gates_of(&rings, &d, 1)[..] else {
            panic!("1 is in a ring: {:?}", rings.held(&d))
        };
        assert_eq!((gate, target), (a, 3), "waits for all three shares");
    }

    #[test]
    fn a_fan_out_of_many_ctas_is_gated_and_split_not_ridden_whole() {
        let rings = Rings::new(8);
        let mut d = Dispatch::new(8, 4, true, true);
        push(&mut d, 0, &[]);
        d.dispatch(&rings.slots, &rings.tickets);
        for t in 1..=2 {
            push_ctas(&mut d, t, 16, &[0]);
        }
        d.dispatch(&rings.slots, &rings.tickets);
        assert_eq!(d.riding, 0, "a task of 16 CTAs does not ride");
        let taken: Vec<(u64, u32, u32)> = shares(&rings, &d).into_iter().flatten().collect();
        // Seven idle blocks: three shares for 1, four for 2.
        for t in 1..=2 {
            let mine: Vec<_> = taken.iter().filter(|e| e.0 == t).collect();
            assert!(mine.len() > 1, "{t} split over blocks: {taken:?}");
            assert_eq!(
                mine.iter().map(|e| e.2).sum::<u32>(),
                16,
                "{t}: every CTA once"
            );
            assert!(
                gates_of(&rings, &d, t).iter().all(|g| g.0 != 0),
                "{t} gated"
            );
        }
    }

    /// What the scheduler's bookkeeping costs per entry without a GPU: the
    /// host's share of a task (`Dispatch` alone: publishing into the rings,
    /// collecting, the graph; no locks, no output queue), with this test
    /// playing a device that finishes entries at once. Two shapes, each
    /// with gates on and off: independent tasks with up to 8 in flight on
    /// each of 131 rings (`pool_overhead`'s rows), and `pool_workloads`'
    /// k-means graph (16 tasks of 32 CTAs, then their join, 500
    /// iterations), where the device finishes each ring's oldest entry in
    /// turn. It prints (no timing is asserted) and checks that every task
    /// came out once:
    /// `cargo test --release -p clustered-host speed_of_the_scheduler -- --ignored --nocapture`.
    #[test]
    #[ignore = "a measurement: run it with --ignored --nocapture"]
    fn speed_of_the_scheduler_s_bookkeeping() {
        const BLOCKS: usize = 131;
        const DEPTH: u32 = 8;
        const TASKS: u64 = 500_000;
        const ITERATIONS: u64 = 500;
        for gates in [true, false] {
            let rings = Rings::new(BLOCKS);
            let mut d = Dispatch::new(BLOCKS, DEPTH, true, gates);
            let (mut pushed, mut done) = (0u64, 0u64);
            let start = Instant::now();
            while done < TASKS {
                while pushed < TASKS && pushed - done < BLOCKS as u64 * u64::from(DEPTH) {
                    push(&mut d, pushed, &[]);
                    pushed += 1;
                }
                d.dispatch(&rings.slots, &rings.tickets);
                for b in 0..BLOCKS {
                    for nth in 0..d.rings[b].head - d.rings[b].tail {
                        rings.finish_nth(&d, b, nth, 0);
                    }
                }
                done += rings.collect(&mut d).len() as u64;
            }
            let ns = start.elapsed().as_nanos() as f64 / TASKS as f64;
            assert_eq!((done, d.in_flight), (TASKS, 0));
            println!("independent tasks, gates {gates}: {ns:.0} ns a task");

            let rings = Rings::new(BLOCKS);
            let mut d = Dispatch::new(BLOCKS, DEPTH, true, gates);
            let mut t = 0u64;
            let mut join: Vec<u64> = Vec::new();
            for _ in 0..ITERATIONS {
                let level: Vec<u64> = (t..t + 16).collect();
                for &task in &level {
                    push_ctas(&mut d, task, 32, &join);
                }
                t += 16;
                push(&mut d, t, &level);
                join = vec![t];
                t += 1;
            }
            let (mut done, mut entries) = (0u64, 0u64);
            let start = Instant::now();
            while done < t {
                d.dispatch(&rings.slots, &rings.tickets);
                for b in 0..BLOCKS {
                    if d.rings[b].head > d.rings[b].tail {
                        rings.finish(&d, b, 0);
                        entries += 1;
                    }
                }
                done += rings.collect(&mut d).len() as u64;
            }
            let elapsed = start.elapsed().as_nanos() as f64;
            assert_eq!(done, t, "every task of the graph came out once");
            println!(
                "k-means graph, gates {gates}: {:.1} us an iteration, {:.0} entries an iteration, {:.0} ns an entry",
                elapsed / 1e3 / ITERATIONS as f64,
                entries as f64 / ITERATIONS as f64,
                elapsed / entries as f64
            );
        }
    }

    #[test]
    fn a_dependent_waits_on_the_host_when_its_dependencies_signal_two_counters() {
        let rings = Rings::new(4);
        let mut d = Dispatch::new(4, 4, true, true);
        push(&mut d, 0, &[]);
        push(&mut d, 1, &[0]);
        push(&mut d, 2, &[0]);
        d.dispatch(&rings.slots, &rings.tickets);
        // 0's group and 1's differ: a task after 0 and 1 is not gated.
        push(&mut d, 3, &[0, 2]);
        d.dispatch(&rings.slots, &rings.tickets);
        assert!(gates_of(&rings, &d, 3).is_empty());
        assert_eq!(d.nodes[&Ticket(3)].place, Place::Blocked);
    }

    #[test]
    fn configuration_errors_name_the_value_and_the_limit() {
        let message = |config: PoolConfig, per_sm: u32, sms: u32| {
            config.plan(per_sm, sms).unwrap_err().to_string()
        };
        let threads = message(PoolConfig::new(1).block_threads(1 << 20), 2, 4);
        assert!(
            threads.contains("1048576 threads") && threads.contains("at most 1024"),
            "{threads}"
        );
        let depth = message(PoolConfig::new(1).depth(65), 2, 4);
        assert!(
            depth.contains("of 65") && depth.contains(&format!("1..={RING_ENTRIES}")),
            "{depth}"
        );
        // One block fits: no "at most 0 blocks".
        let one = message(PoolConfig::new(1), 1, 1);
        assert!(
            one.contains("needs 2 at least") && !one.contains("at most 0"),
            "{one}"
        );
    }

    #[test]
    fn a_depth_outside_the_ring_is_refused() {
        for depth in [0, RING_ENTRIES as u32 + 1] {
            assert!(matches!(
                PoolConfig::new(1).depth(depth).plan(1, 1),
                Err(PoolError::Config(_))
            ));
        }
        assert_eq!(PoolConfig::new(1).depth(1).plan(2, 1), Ok(1));
    }

    #[test]
    fn the_publisher_takes_a_resident_block_of_its_own() {
        // Default: a ring per SM but one, whose SM the publisher gets.
        assert_eq!(PoolConfig::new(1).plan(2, 4), Ok(3));
        assert_eq!(PoolConfig::new(1).plan(1, 4), Ok(3));
        assert_eq!(PoolConfig::new(1).plan(1, 2), Ok(1));
        assert_eq!(
            PoolConfig::new(1).plan(1, 1),
            Err(PoolError::TooLarge {
                blocks: 2,
                resident: 1
            })
        );
        assert_eq!(PoolConfig::new(1).blocks(7).plan(2, 4), Ok(7));
        let refused = PoolConfig::new(1).blocks(8).plan(2, 4).unwrap_err();
        assert_eq!(
            refused,
            PoolError::TooLarge {
                blocks: 9,
                resident: 8
            }
        );
        assert!(
            refused.to_string().contains("ask for at most 7 blocks"),
            "{refused}"
        );
    }

    /// One more warp only for a marked kernel, where the config allows it
    /// and the task threads are whole warps.
    #[test]
    fn a_publishing_warp_is_launched_only_beside_whole_warps_of_a_marked_kernel() {
        let config = PoolConfig::new(1);
        assert_eq!(config.launch_threads(true), 128 + PUBLISHING_WARP_THREADS);
        assert_eq!(config.launch_threads(false), 128);
        assert_eq!(
            config.clone().publishing_warp(false).launch_threads(true),
            128
        );
        assert_eq!(config.clone().block_threads(100).launch_threads(true), 100);
        assert_eq!(config.block_threads(32).launch_threads(true), 64);
    }

    #[test]
    fn blocks_per_sm_count_the_publisher_and_stay_within_residency() {
        // Three per SM on 4 SMs: 12 blocks, the publisher one of them.
        assert_eq!(PoolConfig::new(1).blocks_per_sm(3).plan(3, 4), Ok(11));
        assert_eq!(PoolConfig::new(1).blocks_per_sm(1).plan(2, 4), Ok(3));
        assert_eq!(
            PoolConfig::new(1).blocks_per_sm(4).plan(3, 4),
            Err(PoolError::TooLarge {
                blocks: 16,
                resident: 12
            })
        );
        assert!(matches!(
            PoolConfig::new(1).blocks_per_sm(0).plan(3, 4),
            Err(PoolError::Config(m)) if m.contains("no worker beside the publisher")
        ));
        // One SM, one block: the publisher alone.
        assert!(matches!(
            PoolConfig::new(1).blocks_per_sm(1).plan(3, 1),
            Err(PoolError::Config(m)) if m.contains("no worker beside the publisher")
        ));
        assert_eq!(PoolConfig::new(1).blocks_per_sm(2).plan(3, 1), Ok(1));
        // The last setting wins.
        assert_eq!(
            PoolConfig::new(1).blocks(5).blocks_per_sm(2).plan(3, 4),
            Ok(7)
        );
        assert_eq!(
            PoolConfig::new(1).blocks_per_sm(2).blocks(5).plan(3, 4),
            Ok(5)
        );
    }

    #[test]
    fn a_long_chain_rides_one_ring_and_finishes_in_order() {
        // 20,000 chained tasks taken in before any ran, as a producer that
        // pushes faster than the scheduler takes in leaves them.
        let rings = Rings::new(8);
        let mut d = Dispatch::new(8, DEFAULT_DEPTH, true, true);
        let n = 20_000u64;
        for t in 0..n {
            let after: Vec<u64> = t.checked_sub(1).into_iter().collect();
            push(&mut d, t, &after);
        }
        let mut order = Vec::new();
        while order.len() < n as usize {
            d.dispatch(&rings.slots, &rings.tickets);
            let busy: Vec<usize> = (0..8).filter(|&b| d.rings[b].in_flight() > 0).collect();
            assert_eq!(busy.len(), 1, "a chain keeps to one ring");
            // The device finishes a few of the ring's entries, oldest first
            // (all the others are READY: the finished ones were collected).
            let b = busy[0];
            let finish = (1 + order.len() as u32 % 7).min(d.rings[b].in_flight());
            for k in 0..finish {
                rings.finish_nth(&d, b, u64::from(k), 0);
            }
            order.extend(rings.collect(&mut d));
        }
        assert!(order.iter().copied().eq(0..n));
        assert!(d.is_empty());
        assert!(d.nodes.window.is_empty() && d.nodes.slab.is_empty());
    }

    fn node(kind: u32) -> Node {
        Node {
            task: Task::new(kind, 1, ()),
            ..Node::vacant()
        }
    }

    #[test]
    fn nodes_keep_tickets_in_a_window_from_the_oldest_unfinished() {
        let mut nodes = Nodes::default();
        for t in [5, 7, 6, 9] {
            nodes.insert(Ticket(t), node(t as u32));
        }
        assert_eq!((nodes.base, nodes.window.len()), (5, 5));
        for t in [5, 6, 7, 9] {
            assert_eq!(nodes[&Ticket(t)].task.kind(), t as u32);
        }
        assert!(!nodes.contains_key(&Ticket(8)) && !nodes.contains_key(&Ticket(4)));
        assert!(!nodes.contains_key(&Ticket(10)));
        // Removing from the middle leaves a hole; from the front moves the
        // window past every hole behind it.
        assert!(nodes.remove(&Ticket(6)).is_some());
        assert!(!nodes.contains_key(&Ticket(6)) && nodes.remove(&Ticket(6)).is_none());
        assert_eq!((nodes.base, nodes.window.len()), (5, 5));
        nodes.remove(&Ticket(5));
        assert_eq!((nodes.base, nodes.window.len()), (7, 3));
        // A ticket older than the window (another producer's, taken in a
        // pass later) is kept beside it.
        nodes.insert(Ticket(3), node(3));
        assert_eq!(nodes.get(&Ticket(3)).map(|n| n.task.kind()), Some(3));
        assert_eq!((nodes.base, nodes.window.len()), (7, 3));
        // A freed slab place is reused.
        let slab = nodes.slab.len();
        nodes.insert(Ticket(12), node(12));
        assert_eq!(nodes.slab.len(), slab);
        assert_eq!(nodes.get_mut(&Ticket(12)).map(|n| n.task.kind()), Some(12));
        nodes.retain(|t, _| t.0 != 7 && t.0 != 3);
        assert!(!nodes.contains_key(&Ticket(3)) && !nodes.contains_key(&Ticket(7)));
        assert_eq!((nodes.base, nodes.window.len()), (9, 4));
        assert!(!nodes.is_empty());
        nodes.retain(|_, _| false);
        assert!(nodes.is_empty() && nodes.window.is_empty() && nodes.slab.is_empty());
    }

    #[test]
    fn a_task_that_never_ends_does_not_hold_the_window_open() {
        let mut nodes = Nodes::default();
        nodes.insert(Ticket(0), node(7));
        let later = 100_000;
        for t in 1..=later {
            nodes.insert(Ticket(t), node(1));
            if t > 1 {
                nodes.remove(&Ticket(t - 1));
            }
        }
        // The window holds about the tasks alive now, not every ticket
        // since the one that never ended, which is still found.
        assert!(
            nodes.window.len() <= WINDOW_SLACK + 4,
            "{}",
            nodes.window.len()
        );
        assert!(nodes.slab.len() <= 3);
        assert_eq!(nodes.get(&Ticket(0)).map(|n| n.task.kind()), Some(7));
        assert!(nodes.remove(&Ticket(0)).is_some());
        nodes.remove(&Ticket(later));
        assert!(nodes.is_empty() && nodes.window.is_empty() && nodes.old.is_empty());
    }

    #[test]
    fn a_task_older_than_the_window_still_holds_its_dependents() {
        // One block runs a long task; 10,000 short ones pass it on the
        // other, so the window moves on and the long one's node goes to
        // `Nodes::old`. A task pushed after it must still wait for it.
        let rings = Rings::new(2);
        let mut d = Dispatch::new(2, 1, true, true);
        push(&mut d, 0, &[]);
        d.dispatch(&rings.slots, &rings.tickets);
        let long = (0..2)
            .find(|&b| d.rings[b].in_flight() == 1)
            .expect("placed");
        let short = 1 - long;
        for t in 1..=10_000 {
            push(&mut d, t, &[]);
            d.dispatch(&rings.slots, &rings.tickets);
            rings.finish(&d, short, 0);
            assert_eq!(rings.collect(&mut d), [t]);
        }
        assert!(
            d.nodes.old.contains_key(&0),
            "the long task left the window"
        );
        assert!(d.nodes.window.len() <= WINDOW_SLACK + 2);
        push(&mut d, 10_001, &[0]);
        d.dispatch(&rings.slots, &rings.tickets);
        assert_eq!(
            rings.held(&d)[long],
            [0, 10_001],
            "it rides behind the long task"
        );
        rings.finish(&d, long, 0);
        assert_eq!(rings.collect(&mut d), [0]);
        rings.finish(&d, long, 0);
        assert_eq!(rings.collect(&mut d), [10_001]);
        assert!(d.is_empty() && d.nodes.old.is_empty());
    }

    /// The host-only replay that docs/BENCHMARKS.md ("The scheduler's
    /// bookkeeping") quotes: the scheduler's `Dispatch` takes in 20,000
    /// chained tasks, then 20,000 independent ones in bursts of 256, with
    /// this test playing 132 blocks that finish whatever is READY. It
    /// prints the time per task (no timing is asserted) and checks that
    /// every task came out once, the chain in order:
    /// `cargo test --release -p clustered-host --lib replay -- --ignored --nocapture`.
    #[test]
    #[ignore = "a measurement: run it with --ignored --nocapture"]
    fn replay_of_the_scheduler_on_the_host() {
        let blocks = 132;
        let n = 20_000u64;
        let run = |d: &mut Dispatch, rings: &Rings, out: &mut Vec<u64>| {
            d.dispatch(&rings.slots, &rings.tickets);
            for (b, ring) in d.rings.iter().enumerate() {
                for k in ring.tail..ring.head {
                    let slot = b * RING_ENTRIES + (k % RING_ENTRIES as u64) as usize;
                    if rings.slots.state(slot).load(Ordering::Relaxed) == READY {
                        rings.slots.state(slot).store(FINISHED, Ordering::Release);
                    }
                }
            }
            out.extend(rings.collect(d));
        };
        let rings = Rings::new(blocks);
        let mut d = Dispatch::new(blocks, DEFAULT_DEPTH, true, true);
        let start = std::time::Instant::now();
        for t in 0..n {
            let after: Vec<u64> = t.checked_sub(1).into_iter().collect();
            push(&mut d, t, &after);
        }
        let intake = start.elapsed();
        let start = std::time::Instant::now();
        let mut chain = Vec::new();
        while chain.len() < n as usize {
            run(&mut d, &rings, &mut chain);
        }
        let through = start.elapsed();
        assert!(chain.iter().copied().eq(0..n), "the chain in order");
        let start = std::time::Instant::now();
        let mut independent = Vec::new();
        for burst in (n..2 * n).collect::<Vec<_>>().chunks(256) {
            for &t in burst {
                push(&mut d, t, &[]);
            }
            run(&mut d, &rings, &mut independent);
        }
        while independent.len() < n as usize {
            run(&mut d, &rings, &mut independent);
        }
        let all = start.elapsed();
        independent.sort_unstable();
        assert!(independent.iter().copied().eq(n..2 * n), "each once");
        let per = |t: std::time::Duration| t / n as u32;
        eprintln!(
            "a chain: {:?} per task to take in, {:?} to run through; independent tasks: {:?} per task",
            per(intake),
            per(through),
            per(all)
        );
    }
}
