//! The device side of a host-fed task pool (CAGTP): each resident block
//! serves its own ring of [`RING_ENTRIES`] [`Slot`]s, in order, until the
//! host writes [`EXIT`].
//!
//! A pool kernel is an ordinary kernel whose body is one call of [`serve`]:
//!
//! ```ignore
//! #[kernel]
//! pub unsafe fn my_pool(slots: *mut Slot) { // grid_dim_x rings of RING_ENTRIES
//!     serve(slots, KINDS, |task, cta| match task.kind() {
//!         SAXPY => { saxpy(task.args::<Saxpy>(), cta); 0 }
//!         _ => 0,
//!     })
//! }
//! ```
//!
//! `task_pool!` writes that body from ordinary kernels (see [`TaskKernel`]):
//!
//! ```ignore
//! task_pool!(pub unsafe fn my_pool = [saxpy, sgemm64]);
//! // host: the kind comes from the arguments' type
//! pool.push(my_pool::task(ctas, saxpy_args { x, y, a: 2.0, n }))?;
//! ```
//!
//! The protocol (who writes which word, with which ordering) is
//! [`clustered_abi::pool`]'s.

pub use clustered_abi::pool::*;

use crate::atomic::{
    add_relaxed_gpu, fence_acq_rel_gpu, fence_acq_rel_system, fence_release_gpu, load_acquire_gpu,
    load_acquire_system, load_relaxed_gpu, load_relaxed_system, store_relaxed_gpu,
    store_relaxed_system, store_relaxed_system_u64, store_release_gpu,
};
use crate::cta::Cta;
// The pool's own reads of the resident block, tagged as the scheduler's
// (`builder/src/ptx_check.rs`); on the CPU backend they are not the body's.
use crate::run::hardware::{block_dim_x, block_idx_x, grid_dim_x};
use crate::thread::{nanosleep, thread_idx_x};

/// The first back-off of an idle block's poll, in nanoseconds.
pub const MIN_BACKOFF_NS: u32 = 32;
/// The longest back-off: the most a task that arrives at an idle block
/// waits for its poll, on top of the PCIe read.
pub const MAX_BACKOFF_NS: u32 = 1024;

/// The longest back-off of the publisher between passes that found
/// nothing to publish: it adds to the time from a task's end to the host
/// seeing it, so it is kept short (the publisher polls device memory only).
pub const MAX_PUBLISH_BACKOFF_NS: u32 = 256;

/// Words of an entry that a block copies when it takes the task: `kind`,
/// `ctas`, the share (`first`, `count`), the payload, and the gate
/// (`gate`, `target`, `signal`).
const ENTRY_WORDS: usize = 4 + PAYLOAD_WORDS + 3;
/// Words of the block's mailbox in shared memory: the state each entry of
/// the ring showed, from the one served next on, then the copied words of
/// up to [`RING_ENTRIES`] tasks.
const MAILBOX_WORDS: usize = BOOK_AT as usize + 5;
/// The book's words: the address of the block's `done` word, its count of
/// finished tasks, the address of the first gate counter.
const DONE_AT: u32 = BOOK_AT;
const FINISHED_AT: u32 = BOOK_AT + 2;
const COUNTERS_AT: u32 = BOOK_AT + 3;
/// Where the block keeps its book in the mailbox: the address of its
/// `done` word (two words), its count of finished tasks, and the address of
/// the gate counters (two words), read once from the header, then kept
/// here rather than in registers live across every task body.
const BOOK_AT: u32 = (RING_ENTRIES + RING_ENTRIES * ENTRY_WORDS) as u32;
/// Words of a task each thread loads before it stores any: the loads of
/// one copy are in flight together (one PCIe round trip, not one each;
/// a ring's worth, 64 tasks of 23 words, in two with 128 threads).
const LOADS_IN_FLIGHT: usize = 6;

/// Arguments a task may carry: plain data of at most [`PAYLOAD_BYTES`]
/// bytes, laid out alike on the host and the GPU.
///
/// # Safety
/// `#[repr(C)]` (or a primitive), the same layout on the host and on
/// `nvptx64`, no references, and every bit pattern valid (pointers travel
/// as `u64` device addresses).
pub unsafe trait Payload: Copy + 'static {}

macro_rules! payloads {
    ($($t:ty),*) => {$(
        // SAFETY: primitives have the same layout on both sides; any bits are valid.
        unsafe impl Payload for $t {}
    )*};
}

payloads!(u8, u16, u32, u64, i8, i16, i32, i64, f32, f64, ());

// SAFETY: an array of payloads is laid out element by element on both sides.
unsafe impl<T: Payload, const N: usize> Payload for [T; N] {}

/// A kernel that a generated pool (`task_pool!`) can run as a task: what
/// `#[kernel]` and `#[clustered]` implement for every kernel whose
/// parameters are raw pointers and numbers (`u8`..`u64`, `i8`..`i64`,
/// `f32`, `f64`) of at most [`PAYLOAD_BYTES`] bytes in all.
///
/// # Safety
/// `Args` is the kernel's parameters in order, pointers as `u64` device
/// addresses, and `run_task` runs the kernel's body for one CTA of a task
/// (implemented by the macros only).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a pool task",
    label = "not a kernel whose parameters are pointers and numbers of at most 64 bytes in all",
    note = "`#[kernel]` and `#[clustered]` make a kernel a task when all its parameters are raw pointers or `u8`..`u64`, `i8`..`i64`, `f32`, `f64`, and they fit in the 64-byte payload"
)]
pub unsafe trait TaskKernel {
    /// The kernel's parameters as a task's payload (`<kernel>_args`).
    type Args: TaskArgs<Kernel = Self>;
    /// Runs the kernel's body for the task's CTA `cta`: its block-index
    /// reads answer from `cta`, a `return` ends this CTA only.
    ///
    /// # Safety
    /// As for launching the kernel with `args`; every thread of the block
    /// calls it (the body may wait at barriers).
    unsafe fn run_task(args: Self::Args, cta: Cta);
}

/// The payload of one kernel's tasks (`<kernel>_args`): names the kernel,
/// so that a pool finds the kind from the arguments' type.
pub trait TaskArgs: Payload {
    /// The kernel these are the parameters of.
    type Kernel: TaskKernel<Args = Self>;
}

/// A generated pool serves kernel `K` as kind `KIND`: `task_pool!`
/// implements it for each kernel in its list.
#[diagnostic::on_unimplemented(
    message = "the pool `{Self}` does not serve the kernel `{K}`",
    label = "arguments of a kernel that is not in this pool's `task_pool!` list",
    note = "add the kernel to the list of `task_pool!(.. fn {Self} = [..])`"
)]
pub trait Serves<K: TaskKernel> {
    /// The kind of `K`'s tasks: its index in the pool's list.
    const KIND: u32;

    /// A task of kind [`Self::KIND`] over `ctas` CTAs with `args`.
    #[inline(always)]
    fn task(ctas: u32, args: K::Args) -> Task {
        Task::new(Self::KIND, ctas, args)
    }

    /// Runs CTA `cta` of `task`, a task of kind [`Self::KIND`]: the
    /// generated pool's dispatch.
    ///
    /// # Safety
    /// As for [`TaskKernel::run_task`] with `task`'s arguments.
    #[doc(hidden)]
    #[inline(always)]
    unsafe fn __run(task: &Task, cta: Cta) {
        // SAFETY: the caller's promise.
        unsafe { K::run_task(task.args(), cta) }
    }
}

/// One task as the block's threads see it: its kind, its grid, its
/// arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Task {
    kind: u32,
    ctas: u32,
    payload: [u32; PAYLOAD_WORDS],
}

impl Task {
    /// A task of `kind` over `ctas` CTAs with `args`: what the host writes
    /// into a slot.
    pub fn new<P: Payload>(kind: u32, ctas: u32, args: P) -> Task {
        const { assert!(core::mem::size_of::<P>() <= PAYLOAD_BYTES) };
        let mut payload = [0u32; PAYLOAD_WORDS];
        // SAFETY: `P` fits in the payload (checked above) and is plain data.
        unsafe { core::ptr::write_unaligned(payload.as_mut_ptr().cast::<P>(), args) };
        Task {
            kind,
            ctas,
            payload,
        }
    }

    /// Which body the kernel runs.
    #[inline(always)]
    pub fn kind(&self) -> u32 {
        self.kind
    }

    /// CTAs of the task's own grid.
    #[inline(always)]
    pub fn ctas(&self) -> u32 {
        self.ctas
    }

    /// The payload's words.
    #[inline(always)]
    pub fn payload(&self) -> &[u32; PAYLOAD_WORDS] {
        &self.payload
    }

    /// The arguments, read as `P` (the type the host pushed for this kind).
    #[inline(always)]
    pub fn args<P: Payload>(&self) -> P {
        const { assert!(core::mem::size_of::<P>() <= PAYLOAD_BYTES) };
        // SAFETY: `P` fits (checked above) and every bit pattern is a `P`.
        unsafe { core::ptr::read_unaligned(self.payload.as_ptr().cast::<P>()) }
    }
}

/// This thread's index in its block (the host launches a pool's blocks
/// one-dimensional).
#[inline(always)]
fn thread_linear() -> u32 {
    thread_idx_x()
}

/// Threads of the block, read through the pool's own tagged register read:
/// a read of `%ntid` that is not the pool's keeps a publishing warp away
/// (`abi::pool`, "A publishing warp").
#[inline(always)]
fn block_threads() -> u32 {
    block_dim_x()
}

/// The worker's own barrier among its task threads, `barrier.sync 1,
/// threads` (a publishing warp beyond them never waits at it).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn sync_task_threads(threads: u32) {
    crate::thread::sync_first_threads::<1>(threads);
}

/// Words of a task's record for the publishing warp, per ring position:
/// `status`, `result` (low, high), `signal`.
const RECORD_WORDS: u32 = 4;
/// Where the count of tasks ended and the exit flag follow the records.
const ENDED_AT: u32 = RING_ENTRIES as u32 * RECORD_WORDS;
const EXITING_AT: u32 = ENDED_AT + 1;

/// Where the record of the block's task number `task` (counting from 0,
/// wrapping) starts: one per ring position, as the task's entry is.
#[inline(always)]
const fn record_of(task: u32) -> u32 {
    (task & (RING_ENTRIES as u32 - 1)) * RECORD_WORDS
}

/// The publication words of a pool of `workers` rings (`abi::pool`,
/// "Publication"): `done[b]`, `exited[b]`, `published[b]`.
#[derive(Clone, Copy)]
struct Words {
    base: *mut u32,
    workers: u32,
}

impl Words {
    /// The header's `task_threads` (every thread: one line).
    #[inline(always)]
    unsafe fn task_threads(slots: *mut Slot, workers: u32) -> u32 {
        unsafe {
            let header = slots.add(header_slot(workers)).cast::<Header>();
            load_relaxed_system(core::ptr::addr_of!((*header).task_threads))
        }
    }

    /// Reads the header after the rings (every thread: one line).
    #[inline(always)]
    unsafe fn of(slots: *mut Slot, workers: u32) -> Words {
        unsafe {
            let header = slots.add(header_slot(workers)).cast::<Header>();
            let at = core::ptr::addr_of!((*header).words).cast::<u32>();
            let low = u64::from(load_relaxed_system(at));
            let high = u64::from(load_relaxed_system(at.add(1)));
            Words {
                base: ((high << 32) | low) as usize as *mut u32,
                workers,
            }
        }
    }

    #[inline(always)]
    fn done(self, b: u32) -> *mut u32 {
        self.base.wrapping_add(b as usize)
    }

    #[inline(always)]
    fn exited(self, b: u32) -> *mut u32 {
        self.base.wrapping_add((self.workers + b) as usize)
    }

    #[inline(always)]
    fn published(self, b: u32) -> *mut u32 {
        self.base.wrapping_add((2 * self.workers + b) as usize)
    }

    /// The first gate counter (`abi::pool`, "Gates").
    #[inline(always)]
    fn counters(self) -> *mut u32 {
        self.base.wrapping_add(3 * self.workers as usize)
    }
}

/// Gate counter `named - 1` (an entry's `gate` or `signal` word), if it
/// names one of the pool's (`abi::pool`, "Gates"): 0 names none.
///
/// # Safety
/// The mailbox's book holds the counters' address (`work` wrote it).
#[inline(always)]
unsafe fn counter(mailbox: crate::shared::Shared<u32>, named: u32) -> Option<*mut u32> {
    // SAFETY: written before the first task.
    named_counter(unsafe { book_pointer(mailbox, COUNTERS_AT) }, named)
}

/// Gate counter `named - 1` of those at `counters`, if `named` names one.
#[inline(always)]
fn named_counter(counters: *mut u32, named: u32) -> Option<*mut u32> {
    let c = named.wrapping_sub(1);
    (c < gate_counters(grid_dim_x() - 1) as u32).then(|| counters.wrapping_add(c as usize))
}

/// Keeps `pointer` in the mailbox's book at `at` (two words).
///
/// # Safety
/// `at + 1 < MAILBOX_WORDS`; one thread writes it, before a barrier.
#[inline(always)]
unsafe fn write_book_pointer(mailbox: crate::shared::Shared<u32>, at: u32, pointer: *mut u32) {
    let address = pointer as usize as u64;
    unsafe {
        mailbox.write(at, address as u32);
        mailbox.write(at + 1, (address >> 32) as u32);
    }
}

/// The pointer [`write_book_pointer`] kept at `at`.
///
/// # Safety
/// It was written, and a barrier passed since.
#[inline(always)]
unsafe fn book_pointer(mailbox: crate::shared::Shared<u32>, at: u32) -> *mut u32 {
    let (low, high) = unsafe { (mailbox.read(at), mailbox.read(at + 1)) };
    (u64::from(low) | (u64::from(high) << 32)) as usize as *mut u32
}

/// Stores 1 into this block's start mark (`abi::pool`, "Starts"): the host
/// publishes once every block of the pool is resident. Thread 0, once,
/// first thing in [`work`] and [`publish`] (placed there, not in [`serve`]:
/// a branch ahead of the workers' split changed ptxas's code for their
/// loop, and SGEMM64 tasks ran 11% slower).
#[inline(always)]
unsafe fn mark_start(slots: *mut Slot, workers: u32) {
    unsafe {
        let marks = slots.add(start_marks_slot(workers)).cast::<u32>();
        store_relaxed_system(marks.add(block_idx_x() as usize), 1);
    }
}

/// Reads a word with `acquire` until `done` says so, sleeping between
/// reads from [`MIN_BACKOFF_NS`] up to `max_backoff_ns`; returns what it
/// read. The first read is an acquire load (a word already there costs one
/// read); the later ones are relaxed, and `fence` after the read that saw
/// it makes that read the acquire: an acquire load invalidates the SM's L1
/// for every block on it (`CCTL.IVALL`), so a block that polled with them
/// would empty the L1 of the blocks running beside it at each poll (an
/// H200, three blocks per SM: docs/BENCHMARKS.md, "A release fence after
/// each task").
#[inline(always)]
fn poll_until(
    acquire: impl Fn() -> u32,
    relaxed: impl Fn() -> u32,
    fence: fn(),
    done: impl Fn(u32) -> bool,
    max_backoff_ns: u32,
) -> u32 {
    let seen = acquire();
    if done(seen) {
        return seen;
    }
    let mut backoff = MIN_BACKOFF_NS;
    loop {
        nanosleep(backoff);
        backoff = (backoff * 2).min(max_backoff_ns);
        let seen = relaxed();
        if done(seen) {
            fence();
            return seen;
        }
    }
}

/// Polls gate counter `counter` until it reached `target` (wrapping), with
/// `nanosleep` back-off: the signalling tasks run on other blocks, and
/// were all published before this one.
#[inline(always)]
unsafe fn wait_for_gate(counter: *const u32, target: u32) {
    poll_until(
        // SAFETY: a counter of the pool (the caller's promise).
        || unsafe { load_acquire_gpu(counter) },
        // SAFETY: as above.
        || unsafe { load_relaxed_gpu(counter) },
        fence_acq_rel_gpu,
        |count| (count.wrapping_sub(target) as i32) >= 0,
        MAX_PUBLISH_BACKOFF_NS,
    );
}

/// The index of the resident block that runs the task (not the task's
/// CTA, which is `cta.block_idx_x()`): for diagnostics, such as which
/// blocks a spread task ran on.
#[inline(always)]
pub fn resident_block() -> u32 {
    block_idx_x()
}

/// Polls `state` until it is READY or EXIT, backing off with `nanosleep`
/// from [`MIN_BACKOFF_NS`] to [`MAX_BACKOFF_NS`] while the entry stays
/// idle (an entry already READY costs one read: no sleep).
#[inline(always)]
unsafe fn wait_for_command(state: *const u32) -> u32 {
    poll_until(
        // SAFETY: `state` is the slot's state word (the caller's promise).
        || unsafe { load_acquire_system(state) },
        // SAFETY: as above.
        || unsafe { load_relaxed_system(state) },
        fence_acq_rel_system,
        |seen| seen == READY || seen == EXIT,
        MAX_BACKOFF_NS,
    )
}

/// The pool kernel's body: each block first marks its start (`abi::pool`,
/// "Starts"); then the last block of the launch publishes
/// finished tasks to the host, every other block (a worker) serves its
/// ring (`slots[block_idx_x * RING_ENTRIES ..]`) until the host writes
/// EXIT: entries `r % RING_ENTRIES` for `r = 0, 1, ...`, in order. For each
/// task, a worker runs `body(task, cta)` on every thread of the block for
/// each CTA of the entry's share of the task's own grid (`first..first +
/// count` of `0..task.ctas()`: the whole grid unless the host spread the
/// task over several blocks; one after the other, a
/// barrier between them, so a body may use shared memory and
/// `sync_threads`), stores `status` and thread 0's last return value as
/// `result`, counts the task for the publisher (a GPU-scope release, not a
/// system one: `clustered_abi::pool`, "Publication"), and goes on to the
/// next entry at once.
///
/// The ring is read in batches, because each read of mapped host memory is
/// a PCIe round trip (about a microsecond) and a short task is far
/// shorter: one thread per entry reads the states of [`FIRST_READ`]
/// entries at once (and up to twice as far, while all were READY), the
/// block copies the tasks of every READY entry in a row from the next one
/// on at once, and runs them in order. A chain the host queued in one ring
/// then costs two to four round trips per
/// batch of up to [`RING_ENTRIES`] tasks, not two per task
/// (`pool_overhead 20000`, H100: a chained empty task 4.8 us before,
/// 2.4-2.5 us after, with rings of 8). An idle block polls only the
/// entry it serves next (one thread, `nanosleep` back-off), so idle blocks
/// put one read each on the bus, not one per entry.
///
/// An entry with a gate (`abi::pool`, "Gates") waits before its first CTA
/// until thread 0 saw the gate counter reach the target (an acquire),
/// then the block meets at a barrier; an entry with a signal adds 1 to its
/// counter after its last CTA's barrier, under the one release fence
/// ([`fence_release_gpu`]) that also releases the task's `done` count.
///
/// Kinds `kinds..` are not run: the entry finishes with
/// [`STATUS_UNKNOWN_KIND`] (the host refuses them before; this keeps a
/// mismatched host from running a wrong body).
///
/// The body reads the task's block index from `cta` (`cta.block_idx_x()`),
/// never from `block_idx_x()`, which is the resident block's: on the CPU
/// backend a worker block's read of the hardware block index or grid size
/// (through a helper the macro did not rewrite, say) stops the pool with an
/// error that names it. [`resident_block`] is the resident block's index,
/// for diagnostics.
///
/// A task that follows another in the same ring sees its writes: both ran
/// on this block's threads, and the barrier that ends a task orders all of
/// its writes (global, shared or mapped memory) before anything the next
/// task does. No `threadfence` is needed for that: no other block wrote
/// them (the host puts a task behind its dependencies in one ring only when
/// all of them are in that ring; a dependency that ran elsewhere reached
/// the host first, whose READY release orders it before this block's
/// acquire).
///
/// # Safety
/// `slots` points to `(grid_dim_x - 1) * RING_ENTRIES` slots and a
/// [`Header`] after them that the host serves with the protocol of
/// [`clustered_abi::pool`] (at least two blocks), and the body is safe to
/// run with any arguments the host pushes for its kind.
#[inline(always)]
pub unsafe fn serve(slots: *mut Slot, kinds: u32, body: impl FnMut(&Task, Cta) -> u64) {
    unsafe {
        let workers = grid_dim_x() - 1;
        if block_idx_x() == workers {
            publish(slots, Words::of(slots, workers));
        } else {
            work(slots, kinds, workers, body);
        }
    }
}

/// A worker block: serves its ring (see [`serve`]) and counts each
/// finished task in its `done` word for the publisher.
#[inline(always)]
unsafe fn work(
    slots: *mut Slot,
    kinds: u32,
    workers: u32,
    mut body: impl FnMut(&Task, Cta) -> u64,
) {
    #[cfg(not(target_arch = "nvptx64"))]
    crate::cpu::enter_clustered();
    unsafe {
        let mailbox = crate::shared_array!(clustered_pool_mailbox: [u32; MAILBOX_WORDS]);
        // What thread 0 hands a publishing warp (`abi::pool`, "A publishing
        // warp"): a record per ring position, the count ended, the exit flag.
        let records = crate::shared_array!(clustered_pool_records: [u32; RING_ENTRIES * RECORD_WORDS as usize + 2]);
        let ring = slots.add(block_idx_x() as usize * RING_ENTRIES);
        let entry = |served: usize, k: usize| ring.add((served + k) & (RING_ENTRIES - 1));
        let me = thread_linear();
        let block = block_threads();
        let task_threads = Words::task_threads(slots, workers);
        let publishing = block_with_publishing_warp(task_threads) == Some(block);
        let threads = if publishing { task_threads } else { block };
        // SAFETY: a block has a thread, and a publishing warp leaves the
        // task some. Known to the compiler, a task's `Cta` reads its size
        // from `threads` only: no read of the block's size is left in a
        // task (`Cta::block_dim_x`), which would keep the warp away.
        core::hint::assert_unchecked(threads != 0);
        if me == 0 {
            mark_start(slots, workers);
        }
        if publishing {
            // The CPU backend checks what the build checks on the GPU: only
            // counted barriers, no read of the block's size in a task.
            #[cfg(not(target_arch = "nvptx64"))]
            crate::cpu::beside_publishing_warp(threads);
            if me == 0 {
                records.write(ENDED_AT, 0);
                records.write(EXITING_AT, 0);
            }
            // Every thread, the publishing warp's too.
            sync_task_threads(block);
            if me >= threads {
                if me == threads {
                    publish_tasks(slots, workers, records);
                }
                return;
            }
        }
        if me == 0 {
            let words = Words::of(slots, workers);
            write_book_pointer(mailbox, DONE_AT, words.done(block_idx_x()));
            write_book_pointer(mailbox, COUNTERS_AT, words.counters());
            // Tasks this block finished (wrapping).
            mailbox.write(FINISHED_AT, 0);
        }
        // The entry served next: the same on every thread of the block.
        let mut next = 0usize;
        // What thread 0's idle wait saw at `next` (0: it did not wait).
        let mut waited = 0u32;
        loop {
            // The states of entries `from..to` after `next`, one thread per
            // entry, all in flight at once (acquire: each orders the copy
            // below).
            let read_states = |from: u32, to: u32| {
                let mut k = from + me;
                while k < to {
                    let seen = if k == 0 && waited != 0 {
                        waited
                    } else {
                        load_acquire_system(core::ptr::addr_of!((*entry(next, k as usize)).state))
                    };
                    mailbox.write(k, seen);
                    k += threads;
                }
                sync_task_threads(threads);
            };
            // The first FIRST_READ states, then up to twice as far while
            // all read so far were READY (16, 32, 64): a block with a task
            // or two does not put a read per entry on the bus.
            read_states(0, FIRST_READ as u32);
            if mailbox.read(0) == EXIT {
                if me == 0 {
                    if publishing {
                        // The publishing warp stores `exited` once it
                        // published every task counted before this.
                        records.store_release_cta(EXITING_AT, 1);
                    } else {
                        // Every task of the ring was collected: nothing left
                        // for the publisher, which may end once all did.
                        let words = Words::of(slots, workers);
                        store_release_gpu(words.exited(block_idx_x()), 1);
                    }
                }
                return;
            }
            let ready_from = |mut ready: u32, to: u32| {
                while ready < to && mailbox.read(ready) == READY {
                    ready += 1;
                }
                ready
            };
            let mut read = FIRST_READ as u32;
            let mut ready = ready_from(0, read);
            while ready == read && read < RING_ENTRIES as u32 {
                let to = (2 * read).min(RING_ENTRIES as u32);
                read_states(read, to);
                ready = ready_from(ready, to);
                read = to;
            }
            if ready == 0 {
                if me == 0 {
                    waited = wait_for_command(core::ptr::addr_of!((*entry(next, 0)).state));
                }
                // The others read the rest of the ring after thread 0 saw
                // `next` ready (and after everyone read the mailbox).
                sync_task_threads(threads);
                continue;
            }
            waited = 0;
            copy_tasks(
                mailbox,
                |k| entry(next, k).cast::<u32>(),
                ready,
                me,
                threads,
            );
            // The acquires above (and this barrier) order the copies after
            // the host's payload writes; sys scope skips stale L1 lines.
            sync_task_threads(threads);
            for k in 0..ready {
                let slot = entry(next, k as usize);
                let state = core::ptr::addr_of_mut!((*slot).state);
                let at = RING_ENTRIES as u32 + k * ENTRY_WORDS as u32;
                let mut task = Task {
                    kind: mailbox.read(at),
                    ctas: mailbox.read(at + 1),
                    payload: [0; PAYLOAD_WORDS],
                };
                // The entry's share of the task's grid (`abi::pool`, "Shares").
                let first = mailbox.read(at + 2);
                let end = first.saturating_add(mailbox.read(at + 3)).min(task.ctas);
                for (i, word) in task.payload.iter_mut().enumerate() {
                    *word = mailbox.read(at + 4 + i as u32);
                }
                // `abi::pool`, "Gates": indices + 1, 0 for none (read from
                // the mailbox where used: nothing of it stays in registers
                // across the body).
                let gate_at = at + 4 + PAYLOAD_WORDS as u32;
                if let Some(counter) = counter(mailbox, mailbox.read(gate_at)) {
                    if me == 0 {
                        wait_for_gate(counter, mailbox.read(gate_at + 1));
                    }
                    // The other threads read what the signallers wrote
                    // only after thread 0's acquire.
                    sync_task_threads(threads);
                }
                if me == 0 {
                    // Tells the host's diagnostics that the task started.
                    store_relaxed_system(state, RUNNING);
                }
                let mut result = 0;
                let status = if task.kind >= kinds {
                    STATUS_UNKNOWN_KIND
                } else if first >= end {
                    STATUS_EMPTY_GRID
                } else {
                    STATUS_OK
                };
                let end = if status == STATUS_OK { end } else { first };
                let grid = [task.ctas, 1, 1];
                for v in first..end {
                    result = body(&task, Cta::of_task([v, 0, 0], grid, threads));
                    // Separates CTAs of the task (shared memory reuse), and
                    // ends the last: every thread's writes precede the
                    // release below and the next task in the ring.
                    sync_task_threads(threads);
                }
                if first == end {
                    sync_task_threads(threads);
                }
                if me == 0 && publishing {
                    let ended = mailbox.read(FINISHED_AT).wrapping_add(1);
                    mailbox.write(FINISHED_AT, ended);
                    let at = record_of(ended.wrapping_sub(1));
                    records.write(at, status);
                    records.write(at + 1, result as u32);
                    records.write(at + 2, (result >> 32) as u32);
                    records.write(at + 3, mailbox.read(gate_at + 2));
                    // The barrier above ordered every task thread's writes
                    // before this release; the publishing warp's acquire
                    // takes them on to its fence.
                    records.store_release_cta(ENDED_AT, ended);
                } else if me == 0 {
                    store_relaxed_system(core::ptr::addr_of_mut!((*slot).status), status);
                    store_relaxed_system_u64(core::ptr::addr_of_mut!((*slot).result), result);
                    // The barrier above ordered every thread's writes of
                    // the task before this release; the publisher's
                    // acquire and system fence pass them on to the host.
                    let done = book_pointer(mailbox, DONE_AT);
                    let finished = mailbox.read(FINISHED_AT).wrapping_add(1);
                    mailbox.write(FINISHED_AT, finished);
                    // One fence releases both the signal and the count.
                    fence_release_gpu();
                    if let Some(counter) = counter(mailbox, mailbox.read(gate_at + 2)) {
                        add_relaxed_gpu(counter, 1);
                    }
                    store_relaxed_gpu(done, finished);
                }
            }
            next = (next + ready as usize) & (RING_ENTRIES - 1);
        }
    }
}

/// A worker's publishing warp (its first thread; `abi::pool`, "A
/// publishing warp"): for the tasks its block's thread 0 counted as ended
/// in `records` since its last look, stores their `status` and `result`
/// into their entries, runs one GPU-scope release fence, adds their
/// signals and counts them in the block's `done` word; stores `exited`
/// once the task threads left on EXIT and everything is published.
#[inline(always)]
unsafe fn publish_tasks(slots: *mut Slot, workers: u32, records: crate::shared::Shared<u32>) {
    unsafe {
        let words = Words::of(slots, workers);
        let ring = slots.add(block_idx_x() as usize * RING_ENTRIES);
        let done = words.done(block_idx_x());
        let counters = words.counters();
        let mut published = 0u32;
        let mut backoff = MIN_BACKOFF_NS;
        loop {
            // The flag first: thread 0 stored it after its last count.
            let exiting = records.load_acquire_cta(EXITING_AT) != 0;
            let ended = records.load_acquire_cta(ENDED_AT);
            if ended != published {
                let mut task = published;
                while task != ended {
                    let slot = ring.add((task & (RING_ENTRIES as u32 - 1)) as usize);
                    let at = record_of(task);
                    let result =
                        u64::from(records.read(at + 1)) | (u64::from(records.read(at + 2)) << 32);
                    store_relaxed_system(core::ptr::addr_of_mut!((*slot).status), records.read(at));
                    store_relaxed_system_u64(core::ptr::addr_of_mut!((*slot).result), result);
                    task = task.wrapping_add(1);
                }
                // One fence releases every task counted, its signal and
                // the count.
                fence_release_gpu();
                let mut task = published;
                while task != ended {
                    if let Some(signal) = named_counter(counters, records.read(record_of(task) + 3))
                    {
                        add_relaxed_gpu(signal, 1);
                    }
                    task = task.wrapping_add(1);
                }
                store_relaxed_gpu(done, ended);
                published = ended;
                backoff = MIN_BACKOFF_NS;
            } else if exiting {
                store_release_gpu(words.exited(block_idx_x()), 1);
                return;
            } else {
                nanosleep(backoff);
                backoff = (backoff * 2).min(MAX_PUBLISH_BACKOFF_NS);
            }
        }
    }
}

/// The publisher block: stores FINISHED for every task the workers counted
/// in their `done` words since its last look, one system fence per worker
/// with news per pass (`abi::pool`, "Publication"), until every worker
/// exited. Its threads share the workers (`b = thread, thread + threads,
/// ..`) and need no barrier: each owns its workers' `published` words.
#[inline(always)]
unsafe fn publish(slots: *mut Slot, words: Words) {
    unsafe {
        let me = thread_linear();
        if me == 0 {
            mark_start(slots, words.workers);
        }
        let threads = block_threads();
        let mut backoff = MIN_BACKOFF_NS;
        loop {
            let mut news = false;
            let mut live = false;
            let mut b = me;
            while b < words.workers {
                // Relaxed: the pool kernel's acquire loads are followed by
                // an L1 invalidation (`CCTL.IVALL`, cuobjdump of pool_demo),
                // which every poll would do to any worker sharing the SM;
                // the fence below makes it an acquire when it saw news.
                let done = load_relaxed_gpu(words.done(b));
                let mut published = load_relaxed_gpu(words.published(b));
                if done != published {
                    // With the load above, an acquire of the tasks counted
                    // (their writes, status and result); and a release of
                    // the FINISHED stores below, at system scope.
                    fence_acq_rel_system();
                    while published != done {
                        let entry = published as usize & (RING_ENTRIES - 1);
                        let slot = slots.add(b as usize * RING_ENTRIES + entry);
                        store_relaxed_system(core::ptr::addr_of_mut!((*slot).state), FINISHED);
                        published = published.wrapping_add(1);
                    }
                    store_relaxed_gpu(words.published(b), published);
                    news = true;
                } else if load_relaxed_gpu(words.exited(b)) == 0 {
                    live = true;
                }
                b += threads;
            }
            if news {
                backoff = MIN_BACKOFF_NS;
            } else if !live {
                return;
            } else {
                nanosleep(backoff);
                backoff = (backoff * 2).min(MAX_PUBLISH_BACKOFF_NS);
            }
        }
    }
}

/// Copies `kind`, `ctas`, the share, the payload and the gate of the next `ready` entries
/// (`words(k)`: entry `k`'s slot) into the mailbox after the states, the
/// block's threads sharing the words: each loads up to
/// [`LOADS_IN_FLIGHT`] words before it stores one, so a copy of a few
/// tasks is one round trip.
#[inline(always)]
unsafe fn copy_tasks(
    mailbox: crate::shared::Shared<u32>,
    words: impl Fn(usize) -> *const u32,
    ready: u32,
    me: u32,
    threads: u32,
) {
    let total = ready * ENTRY_WORDS as u32;
    // Word `w` of the copy: entry w / ENTRY_WORDS, its kind, ctas, share,
    // then payload.
    let source = |w: u32| {
        let (k, i) = (
            (w / ENTRY_WORDS as u32) as usize,
            (w % ENTRY_WORDS as u32) as usize,
        );
        let word = if i < 2 {
            1 + i
        } else if i < 4 {
            FIRST_OFFSET_WORDS + i - 2
        } else if i < 4 + PAYLOAD_WORDS {
            PAYLOAD_OFFSET_WORDS + i - 4
        } else {
            GATE_OFFSET_WORDS + i - 4 - PAYLOAD_WORDS
        };
        // SAFETY: `k < ready <= RING_ENTRIES`, `word < SLOT_WORDS`.
        unsafe { words(k).add(word) }
    };
    let mut first = me;
    while first < total {
        let mut loaded = [0u32; LOADS_IN_FLIGHT];
        for (i, value) in loaded.iter_mut().enumerate() {
            let w = first + i as u32 * threads;
            if w < total {
                // SAFETY: a word of a READY entry of this block's ring.
                *value = unsafe { load_relaxed_system(source(w)) };
            }
        }
        for (i, value) in loaded.iter().enumerate() {
            let w = first + i as u32 * threads;
            if w < total {
                // SAFETY: inside the mailbox (`w < RING_ENTRIES * ENTRY_WORDS`);
                // each word has one writer, read after the caller's barrier.
                unsafe { mailbox.write(RING_ENTRIES as u32 + w, *value) };
            }
        }
        first += LOADS_IN_FLIGHT as u32 * threads;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Args {
        x: u64,
        a: f32,
        n: u32,
    }
    // SAFETY: repr(C) plain data.
    unsafe impl Payload for Args {}

    #[test]
    fn arguments_round_trip_through_the_payload() {
        let args = Args {
            x: 0xdead_beef_0000_1234,
            a: 2.5,
            n: 77,
        };
        let task = Task::new(3, 9, args);
        assert_eq!((task.kind(), task.ctas()), (3, 9));
        assert_eq!(task.args::<Args>(), args);
        assert_eq!(task.payload()[0], 0x0000_1234);
        let full = Task::new(0, 1, [7u32; PAYLOAD_WORDS]);
        assert_eq!(full.payload(), &[7; PAYLOAD_WORDS]);
    }
}
