//! The task pool's protocol (CAGTP, issue 15), version [`POOL_ABI_VERSION`]: each resident
//! worker block owns a ring of [`RING_ENTRIES`] [`Slot`]s in page-locked
//! host memory that the GPU reads through its mapping, and one more block,
//! the publisher, tells the host which tasks finished. The pool kernel is
//! launched with `workers + 1` blocks and one pointer, `slots`:
//!
//! - worker `b < workers` serves the ring
//!   `slots[b * RING_ENTRIES .. (b + 1) * RING_ENTRIES]`;
//! - `slots[workers * RING_ENTRIES]` ([`header_slot`]), read as a
//!   [`Header`], holds the device address of the publication words
//!   ([`Header::words`]);
//! - the [`start_lines`]`(workers)` slots after it ([`start_marks_slot`])
//!   are read as `u32` start marks, one per block (see "Starts"); the host
//!   allocates [`pool_slots`]`(workers)` slots in all;
//! - block `workers` (the last) is the publisher.
//!
//! Defined once, here, so the host, the device runtime and the CPU backend
//! agree on every offset. Bump [`POOL_ABI_VERSION`] on any change.
//!
//! # The ring
//!
//! A block serves its entries in order, `r % RING_ENTRIES` for
//! `r = 0, 1, 2, ...`: it waits for entry `r` to be READY (or EXIT), runs
//! it, publishes FINISHED, and moves on to entry `r + 1` at once. The host
//! fills a ring in the same order and collects FINISHED entries in that
//! order, so while a block runs one task the host can already have put the
//! next ones behind it: a block with queued work never waits for a round
//! trip through the host (version 1 had one slot per block, and a block
//! idled from its FINISHED until the host's next READY reached it).
//! An entry is reused only after the host collected it (back to IDLE), so
//! at most `RING_ENTRIES` tasks of a block are in flight.
//! A block reads the states of its ring from the entry it serves next on,
//! [`FIRST_READ`] at once, then up to twice as far while all it read were
//! READY (to 32, then 64), then copies the READY tasks in a row and runs them:
//! two round trips over the bus per batch, one more per doubling.
//!
//! Because a block runs its ring in order with a CTA barrier between tasks,
//! a task put behind another task in the *same* ring sees that task's
//! writes (same block: every CTA of the earlier task ran on these threads,
//! and the barrier orders their writes before the next task's reads) without
//! the host in between: the host uses that for dependencies.
//!
//! # Shares: a task over several blocks (version 5)
//!
//! A task's CTAs are independent, as a launch's are, so an entry runs a
//! share of them: CTAs `first..first + count` of the task's grid
//! ([`Slot::first`], [`Slot::count`]). The host gives a task of several
//! CTAs one share on each of several idle blocks when it has more idle
//! blocks than ready tasks (a task of 16 CTAs on one block took 16 of its
//! CTAs' times), and collects the task when every share finished; its
//! result is the one of the share that ran CTA `ctas - 1`. A task is spread
//! only from the ready queue (its dependencies finished on the host), and
//! nothing rides behind a spread task: no block saw all of its writes.
//!
//! # States and who writes them (per entry)
//!
//! ```text
//!   host: payload, kind, ctas, share  worker: RUNNING (relaxed)
//!   host ──────────────► READY ──────────────► RUNNING ──┐
//!    ▲  (release store)        (acquire load)            │ worker: status, result;
//!    │                                                   ▼ publisher: FINISHED
//!   IDLE ◄───────────────────────────────────────── FINISHED
//!         host: acquire load of FINISHED, reads status/result, stores IDLE
//!
//!   host, into the entry the block reads next, when it is IDLE and no
//!   task of the block is in flight: EXIT (release) ──► the block leaves
//! ```
//!
//! - The **host** owns an entry in [`IDLE`] and [`FINISHED`]: it writes
//!   `kind`, `ctas`, the share (`first`, `count`) and `payload` with plain
//!   stores, then `state = READY`
//!   with a release store, so the payload is visible before the flag.
//!   It reads `status` and `result` only after an acquire load saw
//!   `FINISHED`, then stores `IDLE` (no other party reads it until the host
//!   itself publishes the entry again: relaxed).
//! - The **device** owns an entry in [`READY`] and [`RUNNING`]: one thread
//!   of the block polls `state` of the entry it serves next with
//!   `ld.acquire.sys` and `nanosleep` back-off; after it saw `READY`, the
//!   block reads the payload (`ld.relaxed.sys`, so no stale L1 line of an
//!   earlier task is used), stores `RUNNING` (relaxed; the block's next
//!   read of its ring, after a barrier, then cannot take an entry it ran
//!   as READY again before FINISHED was stored there, and the host's
//!   timeout diagnostics tell a running task from a waiting one), runs the task's
//!   CTAs, meets at a CTA barrier, and the polling thread stores `status`,
//!   `result` and then counts the task in `done[b]`; the publisher stores
//!   `state = FINISHED` (see "Publication" below): the barrier orders every
//!   thread's writes of the task before the worker's release, and the
//!   chain of releases and acquires makes them visible to the host's.
//!
//! # Publication (version 3)
//!
//! A worker does not store FINISHED itself: a system-scope release costs
//! about 0.7 us on an H200 (it waits for earlier writes to reach the
//! host), once per task on the chain's critical path. It stores `status`
//! and `result` (relaxed), then the count of tasks it finished into its
//! word `done[b]` in device memory under a GPU-scope release (a release
//! fence, then a relaxed store: see "Gates"), and goes on to its next
//! task. The publisher reads `done[..]` relaxed (an acquire load would
//! invalidate the L1 of the workers on its SM at every poll), and for the
//! tasks finished since its last look runs one `fence.acq_rel.sys`, which
//! makes that read an acquire, then stores FINISHED into their entries
//! (relaxed).
//! Release (gpu) -> acquire (gpu) -> fence (sys) -> store -> the host's
//! acquire is a chain of causality in the PTX memory model, so the host
//! sees every write of the task, as with the worker's own release. A task
//! is published within one pass of the publisher, whatever the worker runs
//! next (a batch of fences on the worker instead would hold a finished
//! task back until the next one ended: for ever, if that one waits for the
//! host to see the first).
//!
//! The words, `3 * workers` `u32`s in device memory, zero at the launch
//! (the gate counters follow them, see "Gates"):
//! `done[b]` (tasks worker `b` finished, wrapping), `exited[b]` (1 once it
//! left on EXIT) and `published[b]` (the publisher's own count; nobody else
//! reads it). The publisher ends when every worker exited; a worker exits
//! only when the host collected all its tasks, so nothing is left to
//! publish then.
//!
//! # Gates (version 6)
//!
//! A dependent whose dependencies run on other blocks waited for the host:
//! their FINISHED had to reach it before it published the dependent, two
//! trips over the bus per level of a task graph. Now the publication words
//! are followed by [`gate_counters`]`(workers)` counters, and an entry may
//! name one to add to ([`Slot::signal`]) and one to wait on ([`Slot::gate`],
//! [`Slot::target`]). After the entry's last CTA barrier the worker's
//! thread 0 runs a GPU-scope release fence (`fence.release.gpu` where the
//! driver compiles PTX ISA 8.6, else `fence.acq_rel.gpu`: [`crate::ptx`]),
//! adds 1 to its signal counter
//! (`red.relaxed.gpu`) and counts the task in `done[b]` (the one fence
//! releases both); before the entry's first CTA, thread 0 reads its gate
//! counter with `ld.acquire.gpu` and, while it has not reached the target,
//! polls it relaxed with `nanosleep` and runs a GPU-scope fence after the
//! read that saw it (which makes that read the acquire), and the block
//! meets at a barrier. Release -> acquire -> barrier
//! orders every write of the signalling tasks before every read of the
//! waiting one, as within one ring.
//!
//! The host hands the counters out: every entry it publishes signals a
//! counter of its *group* (the tasks pushed after the same dependencies,
//! such as the assigns of one k-means iteration), and a task whose
//! unfinished dependencies are all in rings and all signal one counter is
//! published at once, gated on that counter reaching every signal handed
//! out on it so far. Once a gate names a counter no new entry signals it
//! (the group takes a fresh one), so the count cannot reach the target
//! through a later task; a counter goes back to the host's free list when
//! no entry in a ring signals or waits on it. Waiting cannot deadlock: an
//! entry waits only for entries published before it (its gate's signallers
//! and the entries before it in its ring), and every block is resident, so
//! the oldest unfinished entry can always run.
//!
//! # A publishing warp (version 8)
//!
//! A worker's thread 0 publishing each task (the stores of `status` and
//! `result`, the GPU-scope fence, the count) holds its warp for the
//! fence's 374-590 cycles (H200s, docs/BENCHMARKS.md, "What a fence
//! costs"), and with it the block's next task: a chained empty task took
//! 781 cycles so and 127 with a warp of its own publishing (H100,
//! `scripts/probes/pool-publishing-warp.cu`). A pool
//! kernel whose tasks meet only at their CTA's own barrier (`barrier.sync
//! 0, n` for the task's `n` threads: `Cta::sync_threads`, what `task_pool!`
//! makes of a body's `sync_threads()`) and read the block's size only from
//! their `Cta` may run with one more warp per block
//! ([`Header::task_threads`] less than the block): the task threads run
//! the tasks, meet at barrier 0 in them and at barrier 1 in the worker's
//! loop, both counted (`barrier.sync 1, task_threads`), so the warp beyond
//! them never waits at either; after a task's last barrier thread 0 writes its
//! `status`, `result` and `signal` into a record in shared memory for its
//! ring position and stores the count of tasks ended (`st.release.cta`),
//! and goes on at once. The publishing warp's first thread polls that
//! count (`ld.acquire.cta`, `nanosleep` back-off) and, for the tasks ended
//! since its last look, stores their `status` and `result` into their
//! entries, runs one GPU-scope release fence, adds their signals and
//! stores `done[b]`. Barrier -> release (cta) -> acquire (cta) -> release
//! (gpu) is a chain of causality, so the publisher and the host see every
//! write of the task as before; a task is published as soon as that
//! thread sees it ended, whatever the task threads run next, and one fence
//! serves every task that ended meanwhile. On EXIT thread 0 stores a flag
//! beside the count, and the publishing warp stores `exited[b]` once it
//! published everything. The build decides which pool kernels may
//! ([`PUBLISHING_WARP_PREFIX`]); the host launches the others as before,
//! where thread 0 publishes.
//!
//! # Starts (version 7)
//!
//! Gates, riders and shares all assume that every block of the pool is
//! resident: a task placed in the ring of a block that never started would
//! never run, and whatever waits on it would wait for ever. A launch does
//! not promise that (another pool, or any kernel, may hold the SMs the
//! last blocks need), so each block's thread 0 stores 1 into its start
//! mark (`u32` `b` of the lines after the header, `st.relaxed.sys`) before
//! anything else, and the host publishes nothing until it saw every mark;
//! if it does not within its timeout, it writes EXIT into every ring (a
//! block that starts later leaves at once) and reports which blocks never
//! started.
//!
//! - [`EXIT`] is written by the host only into an entry it owns (IDLE), and
//!   only into the entry the block reads next, once every task of the ring
//!   was collected: a block never skips a task, and never waits on an entry
//!   the host will not write. The host cannot take back a READY entry (it
//!   belongs to the device), so a task in a ring always runs.

/// The version of the pool protocol (the slot layout, the ring and the
/// states). 8: a warp of each worker block may publish its tasks
/// ([`Header::task_threads`]); 7: every block marks its start ([`start_lines`]), and the host
/// publishes once all did; 6: an entry may wait on a gate and add to a signal counter
/// ([`Slot::gate`], [`Slot::signal`]), so a dependent runs behind
/// dependencies on other blocks without the host; 5: an entry runs a share of its task's CTAs ([`Slot::first`],
/// [`Slot::count`]), so the host spreads a task over idle blocks; 4: rings of 64, their states read in doubling steps from 16
/// (3: 16, read whole); 3: a publisher block stores FINISHED (2: each block did, with
/// a system-scope release per task); 2: a ring of [`RING_ENTRIES`] slots
/// per block (1: one slot).
pub const POOL_ABI_VERSION: u32 = 8;

/// Entries in each block's ring. A power of two (the device wraps with a
/// mask). An entry goes back to the host only after its task ran and was
/// collected, so a chain riding in one ring runs in batches of about a
/// third of it, each batch two or more round trips over the bus: more
/// entries make a chain faster. A block reads the states of its first
/// [`FIRST_READ`] entries per batch and doubles the read only while all it
/// read were READY, so a wide graph (a few tasks per ring) does not pay a
/// read per entry: reading whole rings of 64 made a k-means graph 1.4x
/// slower (H200, `pool_workloads`, "Protocol v3, measured"). 64 (version 4): a chained empty task 0.74-0.96 us against
/// 0.85-1.06 for rings of 32 and 1.07-1.22 for rings of 16 (H100,
/// `pool_overhead 20000`; docs/BENCHMARKS.md, "Bigger rings, read in
/// steps").
pub const RING_ENTRIES: usize = 64;

/// Entries whose states a block reads first in a batch (module doc).
pub const FIRST_READ: usize = 16;

/// The host owns the slot; no task in it.
pub const IDLE: u32 = 0;
/// A task waits in the slot: the device owns it.
pub const READY: u32 = 1;
/// The block took the task and runs it (informative: the device owns the
/// slot from READY on).
pub const RUNNING: u32 = 2;
/// The task ran; `status` and `result` are valid: the host owns the slot.
pub const FINISHED: u32 = 3;
/// The block leaves its serve loop (and the kernel ends when all have).
pub const EXIT: u32 = 4;

/// The task ran to its end.
pub const STATUS_OK: u32 = 0;
/// The task named a kind the kernel does not serve: nothing ran.
pub const STATUS_UNKNOWN_KIND: u32 = 1;
/// The entry's share of the task's grid was empty (the task asked for zero
/// CTAs): nothing ran.
pub const STATUS_EMPTY_GRID: u32 = 2;

/// Bytes of a task's arguments, copied into the slot.
pub const PAYLOAD_BYTES: usize = 64;
/// [`PAYLOAD_BYTES`] in 32-bit words.
pub const PAYLOAD_WORDS: usize = PAYLOAD_BYTES / 4;
/// Words of a slot: the header (`state`, `kind`, `ctas`, `status`,
/// `result`, the share) and the payload, 32 bytes on.
pub const SLOT_WORDS: usize = 32;
/// Where the payload starts, in words.
pub const PAYLOAD_OFFSET_WORDS: usize = 8;
/// Where the share ([`Slot::first`], then [`Slot::count`]) starts, in words.
pub const FIRST_OFFSET_WORDS: usize = 6;
/// Where [`Slot::gate`], [`Slot::target`] and [`Slot::signal`] start, in
/// words.
pub const GATE_OFFSET_WORDS: usize = PAYLOAD_OFFSET_WORDS + PAYLOAD_WORDS;

/// Gate counters of a pool of `workers` rings: two per ring entry, so
/// that the host, which holds a counter only while an entry in a ring
/// signals or waits on it (at most two per entry), never runs out. `u32`s
/// in device memory after the publication words, zero at the launch.
pub const fn gate_counters(workers: u32) -> usize {
    2 * workers as usize * RING_ENTRIES
}

/// The pool's words in device memory, zero at the launch: the publication
/// words (`done`, `exited`, `published`: "Publication"), then the gate
/// counters ("Gates").
pub const fn device_words(workers: u32) -> usize {
    3 * workers as usize + gate_counters(workers)
}

/// Slots after the [`Header`] that hold the start marks of a pool of
/// `workers` rings: one `u32` per block, the publisher's last
/// (`workers + 1` marks, whole 128-byte lines), zero at the launch.
pub const fn start_lines(workers: u32) -> usize {
    (workers as usize + 1).div_ceil(SLOT_WORDS)
}

/// The [`Header`]'s slot in a pool of `workers` rings: after the rings.
pub const fn header_slot(workers: u32) -> usize {
    workers as usize * RING_ENTRIES
}

/// The first slot of the start marks: the line after the header.
pub const fn start_marks_slot(workers: u32) -> usize {
    header_slot(workers) + 1
}

/// Slots of a pool of `workers` rings, the memory the host allocates: the
/// rings, the header and the start marks.
pub const fn pool_slots(workers: u32) -> usize {
    start_marks_slot(workers) + start_lines(workers)
}

/// One entry of a resident block's ring. 128 bytes and 128-byte aligned:
/// one entry per cache line (and PCIe read), so blocks, entries and the
/// host never share one.
#[repr(C, align(128))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    /// [`IDLE`], [`READY`], [`RUNNING`], [`FINISHED`] or [`EXIT`].
    pub state: u32,
    /// Which task body the kernel runs: `0..kinds` of the pool kernel.
    pub kind: u32,
    /// The task's own grid: CTAs with virtual block indices `0..ctas`, of
    /// which this entry runs `first..first + count` (clamped to `ctas`),
    /// one after the other.
    pub ctas: u32,
    /// Written by the device with FINISHED: one of the `STATUS_` codes.
    pub status: u32,
    /// Written by the device with FINISHED: what the body returned
    /// (thread 0 of the block's value after the entry's last CTA; the
    /// host takes the task's from the entry that ran CTA `ctas - 1`).
    pub result: u64,
    /// The entry's share of the task's grid starts at this CTA: 0 for a
    /// task run whole by one block. A task of several CTAs may be spread
    /// over several blocks' rings, one share each (CTAs are independent,
    /// as in a launch); the host collects it when every share finished.
    pub first: u32,
    /// CTAs of the share: `ctas` for a task run whole. An empty share
    /// (`first >= min(first + count, ctas)`) finishes with
    /// [`STATUS_EMPTY_GRID`].
    pub count: u32,
    /// The task's arguments (a `#[repr(C)]` struct of up to 64 bytes).
    pub payload: [u32; PAYLOAD_WORDS],
    /// 0, or a gate counter's index + 1: the entry runs only once that
    /// counter reached [`Slot::target`] (module doc, "Gates").
    pub gate: u32,
    /// The count the gate waits for (wrapping: reached when
    /// `count - target`, as an `i32`, is not negative).
    pub target: u32,
    /// 0, or a gate counter's index + 1 that the entry adds 1 to when it
    /// finished, with a GPU-scope release.
    pub signal: u32,
    /// Pads the slot to its 128-byte line.
    pub padding: [u32; 5],
}

impl Slot {
    /// An idle slot.
    pub const IDLE: Slot = Slot {
        state: IDLE,
        kind: 0,
        ctas: 0,
        status: 0,
        result: 0,
        first: 0,
        count: 0,
        payload: [0; PAYLOAD_WORDS],
        gate: 0,
        target: 0,
        signal: 0,
        padding: [0; 5],
    };
}

impl Default for Slot {
    fn default() -> Self {
        Slot::IDLE
    }
}

/// The line after the rings: what the host tells every block before the
/// launch. 128 bytes, the size and alignment of a [`Slot`], so the host
/// allocates `workers * RING_ENTRIES + 1` slots and writes this into the
/// last.
#[repr(C, align(128))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Device address of the publication words: `3 * workers` `u32`s,
    /// zero at the launch (module doc, "Publication").
    pub words: u64,
    /// The threads that run a task's CTA: the launch's block, or all of it
    /// but the last [`PUBLISHING_WARP_THREADS`], which publish the block's
    /// tasks (module doc, "A publishing warp").
    pub task_threads: u32,
    /// Pads the header to its line. (The ring count is not stored: every
    /// block has it as `grid_dim_x - 1`.)
    pub padding: [u32; 29],
}

impl Header {
    /// The header of a pool publishing through the words at device
    /// address `words`, whose tasks run on `task_threads` threads.
    pub const fn new(words: u64, task_threads: u32) -> Header {
        Header {
            words,
            task_threads,
            padding: [0; 29],
        }
    }
}

/// Threads a worker block has beyond its task's when a warp of its own
/// publishes its tasks (module doc, "A publishing warp").
pub const PUBLISHING_WARP_THREADS: u32 = 32;

/// The block a worker of `task_threads` task threads is launched with
/// when a warp of its own publishes its tasks, or `None` where it cannot
/// have one: the task threads must fill whole warps (beside a partial last
/// warp of theirs, the publishing warp would share it and never reach
/// their barriers). The host launches this block; the device finds its
/// warp by the same rule.
pub const fn block_with_publishing_warp(task_threads: u32) -> Option<u32> {
    if task_threads != 0 && task_threads.is_multiple_of(32) {
        Some(task_threads + PUBLISHING_WARP_THREADS)
    } else {
        None
    }
}

/// The global that the build (`clustered-builder`) writes into a module's
/// PTX for each pool kernel whose tasks may run beside a publishing warp:
/// `__clustered_pool_warp_<entry>`. The host launches such a kernel with
/// [`PUBLISHING_WARP_THREADS`] more threads per block.
pub const PUBLISHING_WARP_PREFIX: &str = "__clustered_pool_warp_";

/// The name of a slot state, for messages.
pub const fn state_name(state: u32) -> &'static str {
    match state {
        IDLE => "IDLE",
        READY => "READY",
        RUNNING => "RUNNING",
        FINISHED => "FINISHED",
        EXIT => "EXIT",
        _ => "(not a state)",
    }
}

// The layout both sides rely on.
const _: () = {
    assert!(core::mem::size_of::<Slot>() == 128);
    assert!(core::mem::align_of::<Slot>() == 128);
    assert!(core::mem::offset_of!(Slot, state) == 0);
    assert!(core::mem::offset_of!(Slot, kind) == 4);
    assert!(core::mem::offset_of!(Slot, ctas) == 8);
    assert!(core::mem::offset_of!(Slot, status) == 12);
    assert!(core::mem::offset_of!(Slot, result) == 16);
    assert!(core::mem::offset_of!(Slot, first) == FIRST_OFFSET_WORDS * 4);
    assert!(core::mem::offset_of!(Slot, count) == FIRST_OFFSET_WORDS * 4 + 4);
    assert!(core::mem::offset_of!(Slot, payload) == PAYLOAD_OFFSET_WORDS * 4);
    assert!(core::mem::offset_of!(Slot, gate) == GATE_OFFSET_WORDS * 4);
    assert!(core::mem::offset_of!(Slot, target) == GATE_OFFSET_WORDS * 4 + 4);
    assert!(core::mem::offset_of!(Slot, signal) == GATE_OFFSET_WORDS * 4 + 8);
    assert!(GATE_OFFSET_WORDS + 3 <= SLOT_WORDS);
    assert!(RING_ENTRIES.is_power_of_two());
    assert!(FIRST_READ <= RING_ENTRIES);
    assert!(core::mem::size_of::<Header>() == core::mem::size_of::<Slot>());
    assert!(core::mem::align_of::<Header>() == core::mem::align_of::<Slot>());
    assert!(core::mem::offset_of!(Header, words) == 0);
};
