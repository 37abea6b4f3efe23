//! The scheduler of the CPU backend, and the per-thread state that the device
//! runtime reads.

use std::cell::{Cell, RefCell};
use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe, Location};
use std::ptr;

use corosensei::trap::{CoroutineTrapHandler, TrapHandlerRegs};
use corosensei::{Coroutine, CoroutineResult, Yielder};

use super::buffers::{Buffers, Fault};
use super::machine::{
    splitmix64, BarrierDivergence, BarrierKind, CpuError, CpuLaunch, Machine, SharedRace,
    TaskOverrun, ThreadAt, MAX_SHARED_BYTES,
};
use super::stacks::{Slab, SlabStack};
use super::trap::{self, Ended};
use super::{AccessKind, LaneAccess, Observer};

/// Why a simulated thread handed control back to the scheduler.
enum Event {
    /// It accessed global memory (already done) at source location `site`;
    /// the lanes of a warp at the same site issue together.
    Access(AccessKind, LaneAccess, Site),
    /// It waits at a barrier.
    Barrier(Wait),
    /// It read `%clock64`: let time pass.
    Clock,
}

/// A thread waiting at a barrier: which one, and its predicate.
#[derive(Clone, Copy)]
struct Wait {
    kind: BarrierKind,
    site: &'static Location<'static>,
    predicate: bool,
}

type ThreadCoroutine = Coroutine<(), Event, Ended, SlabStack>;

/// Where in the kernel's source an access is: the address of its
/// `core::panic::Location` (from `#[track_caller]`), unique per call site.
pub(crate) type Site = usize;

/// An access a lane made and its warp has not issued yet.
#[derive(Clone, Copy)]
struct Pending {
    task: u32,
    kind: AccessKind,
    access: LaneAccess,
    site: Site,
}

/// One simulated CUDA thread.
pub(crate) struct Lane {
    pub(crate) thread_idx: [u32; 3],
    /// The linear thread index in the CTA.
    index: u16,
    pub(crate) lane_id: u32,
    pub(crate) warp: u32,
    cta: *const Cta,
    yielder: Cell<*const Yielder<(), Event>>,
    /// The original CTA this thread's code runs now.
    task: Cell<u32>,
    tasks_begun: Cell<u32>,
    /// What the last barrier it waited at returned (`sync_threads_and`).
    barrier_result: Cell<bool>,
    /// Its stack's guard page, and how to end its coroutine from a fault
    /// there (see `trap`).
    guard: Range<usize>,
    trap: Cell<Option<CoroutineTrapHandler<Ended>>>,
    /// The kernel is a clustered schedule: the hardware block index is the
    /// scheduler's alone (see `hardware_cta`).
    clustered: Cell<bool>,
    /// The CTA's epoch when this thread last left a barrier: behind the
    /// CTA's where barriers that do not count it opened since (a pool's
    /// publishing warp).
    passed: Cell<u32>,
    /// Release stores to shared memory this thread made.
    releases: Cell<u32>,
    /// Per other thread, how many of its releases this thread's acquires
    /// have seen: its writes before them are ordered before this thread's
    /// accesses after.
    acquired: RefCell<Vec<(u16, u32)>>,
}

impl Lane {
    pub(crate) fn cta(&self) -> &Cta {
        // SAFETY: a lane never outlives its CTA (see `Resident`).
        unsafe { &*self.cta }
    }

    /// Whether `thread`'s access made when it had made `releases` release
    /// stores is ordered before this thread's next one by an acquire.
    fn acquired_after(&self, thread: u16, releases: u32) -> bool {
        self.acquired
            .borrow()
            .iter()
            .any(|&(t, seen)| t == thread && seen > releases)
    }

    fn suspend(&self, event: Event) {
        let yielder = self.yielder.get();
        // SAFETY: set when the coroutine started; valid while it runs, and
        // a lane is current only while its coroutine runs.
        unsafe { (*yielder).suspend(event) }
    }
}

/// One simulated CTA.
pub(crate) struct Cta {
    pub(crate) block_idx: [u32; 3],
    pub(crate) block_dim: [u32; 3],
    pub(crate) grid_dim: [u32; 3],
    pub(crate) sm_id: u32,
    pub(crate) sm_id_bound: u32,
    shared: *mut u8,
    /// Where the next `shared_array!` goes: after the dynamic part.
    shared_end: Cell<u32>,
    statics: RefCell<Vec<(&'static str, u32)>>,
    /// The bytes a kernel may touch: the dynamic part `[0, dynamic bytes)`
    /// and each `shared_array!`, without the padding that aligns the next
    /// one (the GPU lays them out in another order, so padding is no
    /// memory of the kernel's).
    regions: RefCell<Vec<(u32, u32)>>,
    tasks_announced: Cell<u32>,
    announcements: RefCell<Vec<u32>>,
    tick: *const Cell<u64>,
    /// The buffers the run may touch; null: unchecked (`run`).
    buffers: *const Buffers,
    /// Barriers this CTA has passed, plus 1: the race detector's clock.
    epoch: Cell<u32>,
    /// Who last touched each 4-byte word of shared memory, when race
    /// checking is on (else empty and unused).
    shadow: RefCell<Vec<Word>>,
    check_races: bool,
    /// The first race found, for the scheduler to report.
    race: RefCell<Option<CpuError>>,
    seed: Option<u64>,
    /// Nonzero: the CTA is a pool worker whose first this many threads run
    /// tasks beside a publishing warp (see [`beside_publishing_warp`]).
    task_threads: Cell<u32>,
    /// Per shared word, the last release store to it: (word, thread, that
    /// thread's releases so far).
    released: RefCell<Vec<(u32, u16, u32)>>,
}

/// No thread (a [`Word`]'s empty reader slot).
const NOBODY: u16 = u16::MAX;

/// The race detector's view of one 4-byte word of shared memory (every
/// `SharedElement` is 4 or 8 bytes and aligned, so words are exact): the
/// last writer and up to two readers in the epochs they accessed it, and
/// how many release stores the writer and first reader had made then.
#[derive(Clone, Copy)]
struct Word {
    write_epoch: u32,
    read_epoch: u32,
    writer: u16,
    reader: u16,
    other_reader: u16,
    writer_releases: u32,
    reader_releases: u32,
    writer_site: Option<&'static Location<'static>>,
    reader_site: Option<&'static Location<'static>>,
}

impl Word {
    const UNTOUCHED: Word = Word {
        write_epoch: 0,
        read_epoch: 0,
        writer: NOBODY,
        reader: NOBODY,
        other_reader: NOBODY,
        writer_releases: 0,
        reader_releases: 0,
        writer_site: None,
        reader_site: None,
    };
}

impl Cta {
    fn at(&self, thread: u16) -> ThreadAt {
        let t = thread as u32;
        let [bx, by, _] = self.block_dim;
        ThreadAt {
            block: self.block_idx,
            thread: [t % bx, (t / bx) % by, t / (bx * by)],
            seed: self.seed,
        }
    }

    /// Records an access of `lane` to shared bytes `offset..offset + bytes`
    /// and remembers the first race it makes.
    ///
    /// Two accesses race where neither is ordered before the other: by a
    /// barrier both passed (the CTA's epoch moved between them), or by a
    /// release store to a word that the later one's thread acquired after.
    /// A thread that barriers left out (a pool's publishing warp, which
    /// counted barriers never wait for) is ordered with the others only by
    /// the barriers it passed and its acquires. Acquires and releases
    /// (`Shared::load_acquire_cta`, `store_release_cta`) are the
    /// synchronisation itself and do not race with each other.
    fn check_race(
        &self,
        lane: &Lane,
        offset: u32,
        bytes: u32,
        how: SharedAccess,
        site: &'static Location<'static>,
    ) {
        if self.race.borrow().is_some() {
            return;
        }
        let me = lane.index;
        match how {
            SharedAccess::Release => {
                let releases = lane.releases.get() + 1;
                lane.releases.set(releases);
                let mut released = self.released.borrow_mut();
                match released.iter_mut().find(|(word, ..)| *word == offset / 4) {
                    Some(last) => *last = (offset / 4, me, releases),
                    None => released.push((offset / 4, me, releases)),
                }
                return;
            }
            SharedAccess::Acquire => {
                let released = self.released.borrow();
                let Some(&(_, thread, releases)) =
                    released.iter().find(|(word, ..)| *word == offset / 4)
                else {
                    return;
                };
                let mut acquired = lane.acquired.borrow_mut();
                match acquired.iter_mut().find(|(t, _)| *t == thread) {
                    Some((_, seen)) => *seen = (*seen).max(releases),
                    None => acquired.push((thread, releases)),
                }
                return;
            }
            SharedAccess::Read | SharedAccess::Write => {}
        }
        let wrote = how == SharedAccess::Write;
        let epoch = self.epoch.get();
        // Accesses in epochs from this on are not ordered before this one
        // by a barrier this thread passed.
        let since = lane.passed.get();
        let words = offset as usize / 4..(offset as usize + bytes as usize).div_ceil(4);
        let mut shadow = self.shadow.borrow_mut();
        if shadow.len() < words.end {
            shadow.resize(words.end, Word::UNTOUCHED);
        }
        for index in words {
            let word = &mut shadow[index];
            // (thread, it wrote, its site) of an earlier conflicting access.
            let mut conflict = None;
            if word.write_epoch >= since
                && word.writer != me
                && !lane.acquired_after(word.writer, word.writer_releases)
            {
                conflict = Some((word.writer, true, word.writer_site));
            } else if wrote && word.read_epoch >= since {
                if word.reader != me {
                    if !lane.acquired_after(word.reader, word.reader_releases) {
                        conflict = Some((word.reader, false, word.reader_site));
                    }
                } else if word.other_reader != NOBODY {
                    conflict = Some((word.other_reader, false, None));
                }
            }
            if let Some((thread, first_wrote, first_site)) = conflict {
                *self.race.borrow_mut() = Some(CpuError::SharedRace(Box::new(SharedRace {
                    first: self.at(thread),
                    first_wrote,
                    first_site: first_site.map(ToString::to_string),
                    second: self.at(me),
                    second_wrote: wrote,
                    second_site: site.to_string(),
                    offset: index as u32 * 4,
                })));
                return;
            }
            if wrote {
                word.write_epoch = epoch;
                word.writer = me;
                word.writer_releases = lane.releases.get();
                word.writer_site = Some(site);
            } else if word.read_epoch != epoch {
                word.read_epoch = epoch;
                word.reader = me;
                word.reader_releases = lane.releases.get();
                word.reader_site = Some(site);
                word.other_reader = NOBODY;
            } else if word.reader != me && word.other_reader == NOBODY {
                word.other_reader = me;
            }
        }
    }
}

thread_local! {
    /// The simulated thread being run on this host thread, if any.
    static CURRENT: Cell<*const Lane> = const { Cell::new(ptr::null()) };
    /// CTA barriers opened on this host thread so far: a sign that some
    /// simulated block makes progress (see [`barriers_opened`]).
    static BARRIERS_OPENED: Cell<u64> = const { Cell::new(0) };
}

/// How many CTA barriers the launches on this host thread have opened.
/// `nanosleep` gives the host core away only while this stays still: the
/// engine runs every block of a launch on this one thread, so sleeping it
/// while another block works stalls that block too.
pub(crate) fn barriers_opened() -> u64 {
    BARRIERS_OPENED.with(Cell::get)
}

/// The simulated thread being run. Device functions that need one (indices,
/// shared memory) call this; outside a CPU launch it is a clear panic.
pub(crate) fn current_lane() -> &'static Lane {
    let lane = CURRENT.with(Cell::get);
    assert!(
        !lane.is_null(),
        "a kernel function was called outside a launch: run kernels through clustered_device::cpu::run"
    );
    // SAFETY: non-null only while the lane's coroutine runs, which is within
    // `run`, which owns the lane.
    unsafe { &*lane }
}

pub(crate) fn current_cta() -> &'static Cta {
    current_lane().cta()
}

fn try_current_lane() -> Option<&'static Lane> {
    let lane = CURRENT.with(Cell::get);
    // SAFETY: as in `current_lane`.
    (!lane.is_null()).then(|| unsafe { &*lane })
}

/// Reports a global-memory access of the current thread and lets the rest of
/// its warp catch up. Outside a launch it does nothing, so a kernel's helper
/// can be unit-tested by calling it directly.
pub(crate) fn access(
    kind: AccessKind,
    address: u64,
    bytes: u32,
    site: &'static core::panic::Location<'static>,
) {
    if let Some(lane) = try_current_lane() {
        if !matches!(kind, AccessKind::Atomic) {
            // Atomics check before they act (`atomic.rs`).
            check_access(kind, address, bytes);
        }
        let site = site as *const _ as Site;
        lane.suspend(Event::Access(kind, LaneAccess { address, bytes }, site));
    }
}

/// Stops the current thread at an access of a `T` not aligned to `T`: the
/// GPU faults on one (a misaligned address) where the host's loads, stores
/// and atomics just work. A prefetch names a line and cannot fault.
#[track_caller]
pub(crate) fn check_aligned<T>(kind: AccessKind, address: *const T) {
    let align = align_of::<T>();
    let prefetch = matches!(kind, AccessKind::PrefetchL1 | AccessKind::PrefetchL2);
    if !prefetch && !(address as usize).is_multiple_of(align) {
        let what = match kind {
            AccessKind::Store => "a store",
            AccessKind::Atomic => "an atomic",
            _ => "a load",
        };
        let name = core::any::type_name::<T>();
        panic!(
            "{what} of `{name}` at {address:p} is not aligned to {align} bytes, as the GPU \
             requires (it faults with a misaligned address): offset the pointer by whole \
             elements, and back a buffer read as `{name}` with values of that type"
        );
    }
}

/// Stops the current thread, before it touches memory, when the run checks
/// its accesses and `address..address + bytes` is not inside a buffer that
/// the access may touch (any for loads, an output for writes). Prefetches
/// need no valid address.
pub(crate) fn check_access(kind: AccessKind, address: u64, bytes: u32) {
    let Some(lane) = try_current_lane() else {
        return;
    };
    let buffers = lane.cta().buffers;
    if buffers.is_null() || matches!(kind, AccessKind::PrefetchL1 | AccessKind::PrefetchL2) {
        return;
    }
    // SAFETY: set from a reference that `run_checked` holds while it runs.
    if let Err(fault) = unsafe { &*buffers }.check(kind, address, bytes) {
        // Unwinds to the scheduler, which turns it into `CpuError::OutOfBounds`.
        std::panic::panic_any(fault);
    }
}

/// A CTA barrier of `kind` at `site`: waits for every live thread of the
/// CTA (a counted one: of its first threads); returns the AND of their
/// predicates (`true` outside a launch).
///
/// Beside a publishing warp ([`beside_publishing_warp`]) every barrier
/// must be counted: a plain one would wait for that warp, which never
/// comes, and hang the GPU's block (the build launches such a kernel
/// without the warp: `clustered_builder`'s `publishing_warp_pools`).
pub(crate) fn barrier(
    kind: BarrierKind,
    site: &'static Location<'static>,
    predicate: bool,
) -> bool {
    let Some(lane) = try_current_lane() else {
        return predicate;
    };
    let task_threads = lane.cta().task_threads.get();
    match kind {
        BarrierKind::Counted { threads, .. } if u32::from(lane.index) >= threads => panic!(
            "thread {} reached a barrier of the first {threads} threads at {site}, which does \
             not wait for it: only a pool's task threads may reach the pool's barriers",
            lane.index
        ),
        BarrierKind::Sync | BarrierKind::And if task_threads != 0 => panic!(
            "{} at {site} waits for every thread of a pool block whose tasks run beside a \
             publishing warp, which never comes to it (on the GPU the block hangs). The build \
             runs a kernel with such a barrier without the warp: run this pool so too \
             (`PoolConfig::cpu_publishing_warp(false)`, or whether the build marked the \
             kernel); or have the task wait only at `sync_threads()` in a body that \
             `task_pool!` rewrites and that does not return early (`Cta::sync_threads`)",
            if kind == BarrierKind::Sync {
                "a plain `sync_threads()`"
            } else {
                "`sync_threads_and()`"
            }
        ),
        _ => {}
    }
    lane.suspend(Event::Barrier(Wait {
        kind,
        site,
        predicate,
    }));
    lane.barrier_result.get()
}

/// How a thread touches shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SharedAccess {
    /// `ld.shared`.
    Read,
    /// `st.shared`.
    Write,
    /// `ld.acquire.cta.shared`.
    Acquire,
    /// `st.release.cta.shared`.
    Release,
}

/// A shared-memory access of the current thread: checks it is inside the
/// CTA's shared memory and, if the machine checks races, records it.
/// Returns where the bytes are.
pub(crate) fn shared_access(
    offset: u32,
    bytes: u32,
    how: SharedAccess,
    site: &'static Location<'static>,
) -> *mut u8 {
    let wrote = matches!(how, SharedAccess::Write | SharedAccess::Release);
    let lane = current_lane();
    let cta = lane.cta();
    let end = offset as u64 + bytes as u64;
    let inside = cta
        .regions
        .borrow()
        .iter()
        .any(|&(start, stop)| offset >= start && end <= stop as u64);
    if !inside {
        let regions = cta.regions.borrow();
        let declared: Vec<String> = regions.iter().map(|(a, b)| format!("{a}..{b}")).collect();
        panic!(
            "shared memory {} at byte {offset} ({bytes} bytes) at {site}, outside the bytes \
             this block declared (dynamic shared memory, then each shared_array!: {}): check \
             the index, and the dynamic shared bytes of the launch",
            if wrote { "written" } else { "read" },
            if declared.is_empty() {
                "none".to_string()
            } else {
                declared.join(", ")
            }
        );
    }
    // The GPU faults on a misaligned `ld.shared` (`cudaErrorMisalignedAddress`);
    // every access is 4, 8 or 16 bytes.
    if !offset.is_multiple_of(bytes) {
        panic!(
            "shared memory {} at byte {offset} ({bytes} bytes) at {site} is not aligned to \
             {bytes} bytes, as the GPU requires: cast a `Shared` only at an address that is a \
             multiple of the element's size",
            if wrote { "written" } else { "read" },
        );
    }
    if cta.check_races {
        cta.check_race(lane, offset, bytes, how, site);
    }
    // SAFETY: inside the CTA's buffer of MAX_SHARED_BYTES >= shared_end.
    unsafe { cta.shared.add(offset as usize) }
}

/// Called by the `SIGSEGV` handler (`trap`): if `address` is the guard page
/// of the thread running on this host thread, and its stack pointer is on
/// its stack, ends its coroutine with `Ended::StackOverflow`.
#[cfg_attr(
    not(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    )),
    allow(dead_code)
)]
pub(super) fn overflow_trap(address: usize, stack_pointer: usize) -> Option<TrapHandlerRegs> {
    // A const-initialised thread-local without destructor: a plain TLS
    // read, safe in a signal handler.
    let lane = CURRENT.with(Cell::get);
    if lane.is_null() {
        return None;
    }
    // SAFETY: non-null only while its coroutine runs (`current_lane`).
    let lane = unsafe { &*lane };
    let handler = lane.trap.get()?;
    if !lane.guard.contains(&address) || !handler.stack_ptr_in_bounds(stack_pointer) {
        return None;
    }
    // SAFETY: the fault is on this coroutine's stack, whose frames are
    // abandoned; the handler writes the registers it returns.
    Some(unsafe { handler.setup_trap_handler(|| Ended::StackOverflow) })
}

/// The current thread runs a clustered schedule's entry point: from now on
/// only the scheduler may read the hardware block index.
pub(crate) fn enter_clustered() {
    if let Some(lane) = try_current_lane() {
        lane.clustered.set(true);
    }
}

/// The current thread's block is a pool worker whose first `task_threads`
/// threads run its tasks beside a publishing warp (`clustered_abi::pool`,
/// "A publishing warp"): from now on its barriers must be counted ones,
/// and only the pool may read the block's size (see [`block_size`]).
pub(crate) fn beside_publishing_warp(task_threads: u32) {
    if let Some(lane) = try_current_lane() {
        lane.cta().task_threads.set(task_threads);
    }
}

/// The simulated CTA, for a read of the block's size by a kernel
/// (`thread::block_dim_x` and its kind): beside a publishing warp that
/// size counts the warp, which a task does not run on.
pub(crate) fn block_size(getter: &str) -> [u32; 3] {
    let cta = current_cta();
    let task_threads = cta.task_threads.get();
    if task_threads != 0 {
        panic!(
            "`{getter}()` read the block's size in a pool task that runs beside a publishing \
             warp: it counts the warp's threads, which do not run the task ({task_threads} \
             do). Read it in the body `task_pool!` rewrites, or from the task's `Cta` \
             (`cta.block_dim_x()`); or run this pool without the warp \
             (`PoolConfig::cpu_publishing_warp(false)`, as the build does for a kernel that \
             reads it)"
        );
    }
    cta.block_dim
}

/// The simulated CTA, for a read of the hardware block index or grid size
/// by a body (`thread::block_idx_x` and its kind). Inside a clustered
/// schedule that read would see the persistent block, not the task's CTA:
/// the macro rewrites the body's reads, so one that arrives here came
/// through code the macro could not see.
pub(crate) fn hardware_cta(getter: &str) -> &'static Cta {
    let lane = current_lane();
    if lane.clustered.get() {
        panic!(
            "`{getter}()` read the hardware block index inside a clustered schedule, where it \
             is the persistent block's, not the task's CTA: it was called through code that \
             #[clustered] cannot rewrite (a helper function, a function pointer, a renamed \
             import or a macro). Read it in the kernel body and pass the value on \
             (`let bx = block_idx_x(); helper(bx)`), or pass the task's `Cta`"
        );
    }
    lane.cta()
}

/// `%clock64`: the scheduler's tick, after letting one pass.
pub(crate) fn clock() -> u64 {
    let lane = current_lane();
    lane.suspend(Event::Clock);
    // SAFETY: the tick cell lives in `run`'s frame, which outlives the lanes.
    unsafe { (*lane.cta().tick).get() }
}

/// The clustered scheduler says which original CTA the thread runs next.
pub(crate) fn begin_task(task: u32) {
    let Some(lane) = try_current_lane() else {
        return;
    };
    lane.task.set(task);
    let begun = lane.tasks_begun.get() + 1;
    lane.tasks_begun.set(begun);
    let cta = lane.cta();
    // The first thread of the CTA to reach its k-th task announces it.
    if begun > cta.tasks_announced.get() {
        cta.tasks_announced.set(begun);
        cta.announcements.borrow_mut().push(task);
    }
}

/// The current CTA's shared memory.
pub(crate) fn shared_base() -> *mut u8 {
    current_cta().shared
}

/// The offset of the `shared_array!` named `key` in the current CTA's shared
/// memory, placed on first use (16-byte aligned, like the PTX declaration).
pub(crate) fn static_shared(key: &'static str, bytes: u32) -> u32 {
    let cta = current_cta();
    let mut statics = cta.statics.borrow_mut();
    if let Some(&(_, offset)) = statics.iter().find(|(k, _)| *k == key) {
        return offset;
    }
    let offset = cta.shared_end.get();
    let end = (offset as u64 + bytes as u64).next_multiple_of(16);
    assert!(
        end <= MAX_SHARED_BYTES as u64,
        "shared memory of this CTA exceeds {MAX_SHARED_BYTES} bytes at `{key}`"
    );
    cta.shared_end.set(end as u32);
    statics.push((key, offset));
    cta.regions.borrow_mut().push((offset, offset + bytes));
    offset
}

/// What a run did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunStats {
    /// Scheduler ticks (each warp issues up to `Machine::warp_burst`
    /// instructions per tick).
    pub ticks: u64,
    /// Hardware CTAs run.
    pub blocks: u64,
}

/// A CTA resident on an SM. Field order matters: coroutines drop (and unwind)
/// before the lanes and the CTA they point to, and the stacks they run on.
#[allow(clippy::vec_box)] // the coroutines hold the lanes' addresses
struct Resident {
    coroutines: Vec<Option<ThreadCoroutine>>,
    lanes: Vec<Box<Lane>>,
    cta: Box<Cta>,
    stacks: Slab,
    shared: Vec<u128>,
    /// The barrier each thread waits at, if it does.
    waiting: Vec<Option<Wait>>,
    pending: Vec<Option<Pending>>,
    /// Accesses issued per lane: the lane furthest behind issues first.
    progress: Vec<u64>,
    live: usize,
}

/// Shared-memory buffers kept for later runs on this host thread: a fresh
/// one is 227 KiB to zero, which dominated a small grid's launch.
const SHARED_POOL_BUFFERS: usize = 64;

thread_local! {
    /// Every buffer here is all zeros (zeroed where its CTA wrote).
    static SHARED_POOL: RefCell<Vec<Vec<u128>>> = const { RefCell::new(Vec::new()) };
}

/// The state of one run.
struct Scheduler<'a> {
    machine: &'a Machine,
    launch: &'a CpuLaunch,
    kernel: &'a dyn Fn(),
    observer: &'a mut dyn Observer,
    buffers: Option<&'a Buffers>,
    tick: Box<Cell<u64>>,
    shared_buffers: Vec<Vec<u128>>,
    shadows: Vec<Vec<Word>>,
    stats: RunStats,
    lanes_scratch: Vec<LaneAccess>,
    /// The interleaving's random state, if the machine shuffles threads.
    shuffle: Option<u64>,
    warp_order: Vec<usize>,
}

/// Runs `kernel` (called once per simulated thread, with that thread's
/// indices current) as `launch` on `machine`, telling `observer` what
/// happens. Returns when every CTA has finished.
///
/// The kernel must treat its CTAs as independent, as CUDA requires: CTAs run
/// interleaved in an order the GPU would not necessarily choose.
///
/// Errors instead of wrong results: a thread that panics or overflows its
/// stack, threads of a CTA waiting at different barriers, and (with
/// [`Machine::check_races`], the default) two threads of a CTA touching
/// the same shared-memory word between barriers, one of them writing.
pub fn run(
    machine: &Machine,
    launch: &CpuLaunch,
    observer: &mut dyn Observer,
    kernel: &dyn Fn(),
) -> Result<RunStats, CpuError> {
    schedule(machine, launch, observer, None, kernel)
}

/// [`run`], with every global load, store and atomic that the device runtime
/// traces checked against `buffers` before it happens: an access outside
/// them (or a write to an input) stops the run with
/// [`CpuError::OutOfBounds`] instead of touching host memory.
pub fn run_checked(
    machine: &Machine,
    launch: &CpuLaunch,
    observer: &mut dyn Observer,
    buffers: &Buffers,
    kernel: &dyn Fn(),
) -> Result<RunStats, CpuError> {
    schedule(machine, launch, observer, Some(buffers), kernel)
}

fn schedule(
    machine: &Machine,
    launch: &CpuLaunch,
    observer: &mut dyn Observer,
    buffers: Option<&Buffers>,
    kernel: &dyn Fn(),
) -> Result<RunStats, CpuError> {
    machine.check()?;
    launch.check()?;
    trap::prepare();
    let mut scheduler = Scheduler {
        machine,
        launch,
        kernel,
        observer,
        buffers,
        tick: Box::new(Cell::new(0)),
        shared_buffers: Vec::new(),
        shadows: Vec::new(),
        stats: RunStats::default(),
        lanes_scratch: Vec::with_capacity(32),
        shuffle: machine.interleave,
        warp_order: Vec::new(),
    };
    scheduler.run()
}

/// Shuffles `items` in place (Fisher-Yates) from the random state `state`.
fn shuffle<T>(state: &mut u64, items: &mut [T]) {
    for i in (1..items.len()).rev() {
        *state = splitmix64(*state);
        items.swap(i, (*state % (i as u64 + 1)) as usize);
    }
}

impl Drop for Scheduler<'_> {
    fn drop(&mut self) {
        SHARED_POOL.with(|pool| {
            let mut pool = pool.borrow_mut();
            let room = SHARED_POOL_BUFFERS.saturating_sub(pool.len());
            pool.extend(self.shared_buffers.drain(..).take(room));
        });
    }
}

impl Scheduler<'_> {
    fn run(&mut self) -> Result<RunStats, CpuError> {
        let sm_count = self.machine.sm_count() as usize;
        let total: u64 = self.launch.grid.iter().map(|&d| d as u64).product();
        let fill_order = self.machine.dispatch.fill_order(sm_count as u32);
        let mut resident: Vec<Vec<Resident>> = (0..sm_count).map(|_| Vec::new()).collect();
        let mut next: u64 = 0;
        loop {
            let tick = self.tick.get();
            // Dispatch, breadth first in fill order, into free slots.
            let mut dispatched = true;
            while dispatched && next < total {
                dispatched = false;
                for &sm in &fill_order {
                    let sm = sm as usize;
                    if next < total
                        && resident[sm].len() < self.launch.resident_blocks as usize
                        && self.machine.available_from[sm] <= tick
                    {
                        let cta = self.start(sm as u32, next as u32)?;
                        self.observer.block_started(sm as u32, next as u32);
                        resident[sm].push(cta);
                        next += 1;
                        dispatched = true;
                    }
                }
            }
            if resident.iter().all(Vec::is_empty) {
                if next == total {
                    break;
                }
                // Nothing runs until a starved SM becomes available.
                let wake = self
                    .machine
                    .available_from
                    .iter()
                    .copied()
                    .filter(|&t| t > tick)
                    .min()
                    .unwrap_or(u64::MAX);
                self.tick.set(wake);
                continue;
            }
            for (sm, ctas) in resident.iter_mut().enumerate() {
                let mut index = 0;
                while index < ctas.len() {
                    self.step(sm as u32, &mut ctas[index])?;
                    if ctas[index].live == 0 {
                        let done = ctas.remove(index);
                        let mut shared = done.shared;
                        // The next CTA starts from zeros, like the first:
                        // clear what this one could reach.
                        let used = (done.cta.shared_end.get() as usize).div_ceil(16);
                        shared[..used].fill(0);
                        self.shared_buffers.push(shared);
                        self.shadows
                            .push(std::mem::take(&mut *done.cta.shadow.borrow_mut()));
                        done.stacks.give_back();
                        self.stats.blocks += 1;
                    } else {
                        index += 1;
                    }
                }
            }
            self.tick.set(tick + 1);
        }
        self.stats.ticks = self.tick.get();
        Ok(self.stats)
    }

    /// Makes hardware CTA `linear` resident on `sm`.
    fn start(&mut self, sm: u32, linear: u32) -> Result<Resident, CpuError> {
        let [gx, gy, _] = self.launch.grid;
        let block_idx = [linear % gx, (linear / gx) % gy, linear / (gx * gy)];
        let block_dim = self.launch.block;
        let mut shared = self
            .shared_buffers
            .pop()
            .or_else(|| SHARED_POOL.with(|pool| pool.borrow_mut().pop()))
            .unwrap_or_else(|| vec![0u128; MAX_SHARED_BYTES as usize / 16]);
        let mut shadow = self.shadows.pop().unwrap_or_default();
        shadow.clear();
        let cta = Box::new(Cta {
            block_idx,
            block_dim,
            grid_dim: self.launch.grid,
            sm_id: self.machine.sm_ids[sm as usize],
            sm_id_bound: self.machine.sm_id_bound,
            shared: shared.as_mut_ptr().cast(),
            shared_end: Cell::new(self.launch.dynamic_shared_bytes.next_multiple_of(16)),
            statics: RefCell::new(Vec::new()),
            regions: RefCell::new(if self.launch.dynamic_shared_bytes > 0 {
                vec![(0, self.launch.dynamic_shared_bytes)]
            } else {
                Vec::new()
            }),
            tasks_announced: Cell::new(0),
            announcements: RefCell::new(Vec::new()),
            tick: &*self.tick,
            buffers: self.buffers.map_or(ptr::null(), |b| b as *const Buffers),
            epoch: Cell::new(1),
            shadow: RefCell::new(shadow),
            check_races: self.machine.check_races,
            race: RefCell::new(None),
            seed: self.machine.interleave,
            task_threads: Cell::new(0),
            released: RefCell::new(Vec::new()),
        });
        let threads = block_dim.iter().product::<u32>() as usize;
        let stacks = Slab::take(threads, self.machine.stack_bytes).map_err(CpuError::Stack)?;
        let mut lanes = Vec::with_capacity(threads);
        let mut coroutines = Vec::with_capacity(threads);
        for t in 0..threads as u32 {
            let [bx, by, _] = block_dim;
            let lane = Box::new(Lane {
                thread_idx: [t % bx, (t / bx) % by, t / (bx * by)],
                // At most 1024 threads (`CpuLaunch::check`).
                index: t as u16,
                lane_id: t % 32,
                warp: t / 32,
                cta: &*cta,
                yielder: Cell::new(ptr::null()),
                task: Cell::new(linear),
                tasks_begun: Cell::new(0),
                barrier_result: Cell::new(true),
                guard: stacks.guard(t as usize),
                trap: Cell::new(None),
                clustered: Cell::new(false),
                passed: Cell::new(1),
                releases: Cell::new(0),
                acquired: RefCell::new(Vec::new()),
            });
            // SAFETY: the slab is dropped after the coroutines (`Resident`).
            let stack = unsafe { stacks.stack(t as usize) };
            let lane_pointer: *const Lane = &*lane;
            let kernel: *const dyn Fn() = self.kernel;
            // SAFETY: the coroutine borrows the lane and the kernel; `run`
            // drives every coroutine to completion or drops it before
            // returning, and the lane is dropped after its coroutine.
            let coroutine = unsafe {
                Coroutine::with_stack_unchecked(stack, move |yielder: &Yielder<(), Event>, ()| {
                    (*lane_pointer).yielder.set(yielder);
                    (*kernel)();
                    Ended::Returned
                })
            };
            lane.trap.set(Some(coroutine.trap_handler()));
            lanes.push(lane);
            coroutines.push(Some(coroutine));
        }
        Ok(Resident {
            coroutines,
            lanes,
            cta,
            stacks,
            shared,
            waiting: vec![None; threads],
            pending: vec![None; threads],
            progress: vec![0; threads],
            live: threads,
        })
    }

    /// Advances every warp of `cta` by one global-memory instruction (or to
    /// a barrier, or to its end).
    ///
    /// Like a SIMT warp after divergence, the lanes do not all issue at
    /// once: the lanes at the source site that the fewest lanes wait at issue
    /// first (ties: the lanes furthest behind), as a divergent branch runs
    /// while the rest of the warp waits at the reconvergence point. So a
    /// leader's extra access (an atomic claim) issues alone, and the leader
    /// joins its warp at the next common access.
    ///
    /// With `Machine::interleave`, the warps, and the lanes of a warp, run
    /// in an order shuffled afresh each time.
    fn step(&mut self, sm: u32, cta: &mut Resident) -> Result<(), CpuError> {
        let threads = cta.lanes.len();
        let mut warp_order = std::mem::take(&mut self.warp_order);
        warp_order.clear();
        warp_order.extend(0..threads.div_ceil(32));
        if let Some(state) = self.shuffle.as_mut() {
            shuffle(state, &mut warp_order);
        }
        let result = warp_order.iter().try_for_each(|&warp| {
            self.step_warp(sm, cta, warp * 32..(warp * 32 + 32).min(threads))
        });
        self.warp_order = warp_order;
        result?;
        // A barrier opens when every thread still running that it counts
        // waits at it: every one of the CTA's, or of its first `threads`.
        let mut waits = cta.waiting.iter().flatten();
        let Some(first) = waits.next() else {
            return Ok(());
        };
        let waiting = 1 + waits.count();
        let counted = match first.kind {
            BarrierKind::Counted { threads, .. } => cta.coroutines
                [..(threads as usize).min(cta.coroutines.len())]
                .iter()
                .filter(|c| c.is_some())
                .count(),
            BarrierKind::Sync | BarrierKind::And => cta.live,
        };
        if waiting >= counted {
            let released = self.check_barrier(cta)?;
            let epoch = &cta.cta.epoch;
            epoch.set(epoch.get().wrapping_add(1));
            for (wait, lane) in cta.waiting.iter_mut().zip(&cta.lanes) {
                if wait.take().is_some() {
                    lane.barrier_result.set(released);
                    lane.passed.set(epoch.get());
                }
            }
            BARRIERS_OPENED.with(|opened| opened.set(opened.get() + 1));
        }
        Ok(())
    }

    /// Checks that the threads waiting at a barrier all wait at the same
    /// one: one kind, and one call site for `sync_threads` and counted
    /// barriers. Returns the AND of their predicates.
    fn check_barrier(&self, cta: &Resident) -> Result<bool, CpuError> {
        let mut waits = cta
            .waiting
            .iter()
            .enumerate()
            .filter_map(|(t, w)| Some((t, (*w)?)));
        let (first_thread, first) = waits.next().expect("a thread waits");
        let mut all = first.predicate;
        let begun = |t: usize| cta.lanes[t].tasks_begun.get();
        for (thread, wait) in waits {
            // In different tasks: one left its task early without the
            // block, whatever barrier each waits at.
            if begun(thread) != begun(first_thread) {
                let (ahead, behind) = if begun(thread) > begun(first_thread) {
                    ((thread, wait), (first_thread, first))
                } else {
                    ((first_thread, first), (thread, wait))
                };
                return Err(CpuError::TaskOverrun(Box::new(TaskOverrun {
                    ahead: cta.cta.at(ahead.0 as u16),
                    ahead_task: cta.lanes[ahead.0].task.get(),
                    ahead_barrier: (ahead.1.kind, ahead.1.site.to_string()),
                    behind: cta.cta.at(behind.0 as u16),
                    behind_task: cta.lanes[behind.0].task.get(),
                    behind_barrier: (behind.1.kind, behind.1.site.to_string()),
                })));
            }
            let diverges = wait.kind != first.kind
                || (wait.kind != BarrierKind::And && !ptr::eq(wait.site, first.site));
            if diverges {
                return Err(CpuError::BarrierDivergence(Box::new(BarrierDivergence {
                    first: cta.cta.at(first_thread as u16),
                    first_barrier: (first.kind, first.site.to_string()),
                    second: cta.cta.at(thread as u16),
                    second_barrier: (wait.kind, wait.site.to_string()),
                })));
            }
            all &= wait.predicate;
        }
        Ok(all)
    }

    /// Runs the lanes `warp` of `cta` for up to `warp_burst` instructions.
    fn step_warp(
        &mut self,
        sm: u32,
        cta: &mut Resident,
        warp: Range<usize>,
    ) -> Result<(), CpuError> {
        let mut order: [u8; 32] = std::array::from_fn(|i| i as u8);
        let order = &mut order[..warp.len()];
        for _ in 0..self.machine.warp_burst {
            if let Some(state) = self.shuffle.as_mut() {
                shuffle(state, order);
            }
            let mut resumed = false;
            for &offset in order.iter() {
                let t = warp.start + offset as usize;
                if cta.waiting[t].is_some() || cta.pending[t].is_some() {
                    continue;
                }
                let Some(coroutine) = cta.coroutines[t].as_mut() else {
                    continue;
                };
                resumed = true;
                let lane: &Lane = &cta.lanes[t];
                CURRENT.with(|current| current.set(lane));
                let result = catch_unwind(AssertUnwindSafe(|| coroutine.resume(())));
                CURRENT.with(|current| current.set(ptr::null()));
                if cta.cta.check_races {
                    if let Some(race) = cta.cta.race.borrow_mut().take() {
                        return Err(race);
                    }
                }
                match result {
                    Ok(CoroutineResult::Yield(Event::Access(kind, access, site))) => {
                        let task = lane.task.get();
                        cta.pending[t] = Some(Pending {
                            task,
                            kind,
                            access,
                            site,
                        });
                    }
                    Ok(CoroutineResult::Yield(Event::Barrier(wait))) => cta.waiting[t] = Some(wait),
                    Ok(CoroutineResult::Yield(Event::Clock)) => {}
                    Ok(CoroutineResult::Return(Ended::Returned)) => {
                        cta.coroutines[t] = None;
                        cta.live -= 1;
                    }
                    Ok(CoroutineResult::Return(Ended::StackOverflow)) => {
                        return Err(CpuError::StackOverflow {
                            at: cta.cta.at(lane.index),
                            stack_bytes: self.machine.stack_bytes,
                        });
                    }
                    Err(payload) if payload.is::<Fault>() => {
                        let fault = *payload.downcast::<Fault>().expect("checked");
                        let at = cta.cta.at(lane.index);
                        return Err(CpuError::OutOfBounds {
                            block: at.block,
                            thread: at.thread,
                            fault,
                        });
                    }
                    Err(payload) => {
                        let message = payload
                            .downcast_ref::<&str>()
                            .map(|s| s.to_string())
                            .or_else(|| payload.downcast_ref::<String>().cloned())
                            .unwrap_or_else(|| "a panic without a message".into());
                        return Err(CpuError::Panicked {
                            message,
                            at: cta.cta.at(lane.index),
                        });
                    }
                }
            }
            for task in cta.cta.announcements.borrow_mut().drain(..) {
                self.observer.task_started(sm, task);
            }
            let issued = self.issue(
                sm,
                &mut cta.pending[warp.clone()],
                &mut cta.progress[warp.clone()],
            );
            if !resumed && !issued {
                break;
            }
        }
        Ok(())
    }

    /// Issues one instruction of a warp (see `step` for which): one report
    /// per task and kind, which differ only when lanes of the warp run
    /// different tasks.
    fn issue(&mut self, sm: u32, pending: &mut [Option<Pending>], progress: &mut [u64]) -> bool {
        let Some(any) = pending.iter().flatten().next().map(|p| p.site) else {
            return false;
        };
        // Usually the whole warp waits at one site; only after divergence
        // does choosing among sites (and counting lanes per site) matter.
        let site = if pending.iter().flatten().all(|p| p.site == any) {
            any
        } else {
            let lanes_at = |site: Site| pending.iter().flatten().filter(|p| p.site == site).count();
            let (_, _, first) = (0..pending.len())
                .filter_map(|t| pending[t].map(|p| (lanes_at(p.site), progress[t], t)))
                .min()
                .expect("a lane is pending");
            pending[first].expect("pending").site
        };
        while let Some(head) = pending.iter().flatten().find(|p| p.site == site).copied() {
            self.lanes_scratch.clear();
            for (slot, count) in pending.iter_mut().zip(progress.iter_mut()) {
                if let Some(p) = *slot {
                    if p.site == site && p.task == head.task && p.kind == head.kind {
                        self.lanes_scratch.push(p.access);
                        *slot = None;
                        *count += 1;
                    }
                }
            }
            self.observer
                .warp_access(sm, head.task, head.kind, &self.lanes_scratch);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::{Machine, NoObserver};

    #[test]
    fn each_opened_barrier_is_counted_on_the_host_thread_that_ran_it() {
        // `nanosleep` gives the core away only while this count stands
        // still: it must move once per barrier of every CTA, and only then.
        let launch = CpuLaunch {
            grid: [3, 1, 1],
            block: [64, 1, 1],
            dynamic_shared_bytes: 0,
            resident_blocks: 2,
        };
        let before = barriers_opened();
        run(&Machine::new(1), &launch, &mut NoObserver, &|| {
            crate::thread::sync_threads();
            crate::thread::sync_threads();
        })
        .expect("the launch runs");
        assert_eq!(barriers_opened() - before, 3 * 2);
        let quiet = barriers_opened();
        run(&Machine::new(1), &launch, &mut NoObserver, &|| {}).expect("the launch runs");
        assert_eq!(barriers_opened(), quiet);
    }

    /// One block of 64 threads.
    const BLOCK: CpuLaunch = CpuLaunch {
        grid: [1, 1, 1],
        block: [64, 1, 1],
        dynamic_shared_bytes: 0,
        resident_blocks: 1,
    };
    const ROUNDS: u32 = 4;

    /// A pool worker's shape: threads 0..32 meet at a barrier of the first
    /// 32 each round, after which thread 0 writes the round's record and
    /// stores the count of rounds with a release; thread 32 (the
    /// publishing warp's first) polls the count, with an acquire or a
    /// plain read, and copies the records out; the warp's other threads
    /// leave.
    fn publisher(out: &[std::sync::atomic::AtomicU32], acquire: bool) -> impl Fn() + '_ {
        use crate::thread::{nanosleep, sync_first_threads, thread_idx_x};
        move || unsafe {
            let records = crate::shared_array!(test_records: [u32; 1 + ROUNDS as usize]);
            let t = thread_idx_x();
            beside_publishing_warp(32);
            if t == 0 {
                records.write(0, 0);
            }
            sync_first_threads::<1>(64);
            if t > 32 {
                return;
            }
            if t == 32 {
                loop {
                    let ended = if acquire {
                        records.load_acquire_cta(0)
                    } else {
                        records.read(0)
                    };
                    if ended == ROUNDS {
                        for (round, slot) in out.iter().enumerate() {
                            let record = records.read(round as u32 + 1);
                            slot.store(record, std::sync::atomic::Ordering::Relaxed);
                        }
                        return;
                    }
                    nanosleep(100);
                }
            }
            for round in 1..=ROUNDS {
                sync_first_threads::<1>(32);
                if t == 0 {
                    records.write(round, 10 * round);
                    records.store_release_cta(0, round);
                }
            }
        }
    }

    #[test]
    fn a_counted_barrier_opens_while_a_thread_beyond_it_polls() {
        for machine in [Machine::new(1), Machine::new(1).interleave(7)] {
            let out: Vec<_> = (0..ROUNDS)
                .map(|_| std::sync::atomic::AtomicU32::new(0))
                .collect();
            run(&machine, &BLOCK, &mut NoObserver, &publisher(&out, true))
                .expect("the publisher acquires what thread 0 released");
            let seen: Vec<u32> = out
                .iter()
                .map(|v| v.load(std::sync::atomic::Ordering::Relaxed))
                .collect();
            assert_eq!(seen, [10, 20, 30, 40]);
        }
    }

    #[test]
    fn a_thread_that_barriers_leave_out_races_without_an_acquire() {
        // No barrier orders thread 0's records before thread 32's reads:
        // the barriers it waits at do not count thread 32.
        let out: Vec<_> = (0..ROUNDS)
            .map(|_| std::sync::atomic::AtomicU32::new(0))
            .collect();
        let error = run(
            &Machine::new(1),
            &BLOCK,
            &mut NoObserver,
            &publisher(&out, false),
        )
        .expect_err("a plain read of a word written after the last shared barrier races");
        let CpuError::SharedRace(race) = &error else {
            panic!("expected a race, got {error}");
        };
        assert_eq!(
            (race.first.thread[0], race.second.thread[0]),
            (0, 32),
            "{error}"
        );
    }

    #[test]
    fn beside_a_publishing_warp_a_plain_barrier_or_the_block_size_is_an_error() {
        let plain = || {
            beside_publishing_warp(32);
            if crate::thread::thread_idx_x() < 32 {
                crate::thread::sync_threads();
            }
        };
        let size = || {
            beside_publishing_warp(32);
            let _ = crate::thread::block_dim_x();
        };
        let beyond = || {
            crate::thread::sync_first_threads::<1>(32);
        };
        for (kernel, expected) in [
            (&plain as &dyn Fn(), "a plain `sync_threads()`"),
            (&size, "`block_dim_x()` read the block's size"),
            (&beyond, "reached a barrier of the first 32 threads"),
        ] {
            let error = run(&Machine::new(1), &BLOCK, &mut NoObserver, kernel).unwrap_err();
            let CpuError::Panicked { message, .. } = &error else {
                panic!("expected a panic, got {error}");
            };
            assert!(message.contains(expected), "{message}");
        }
    }
}
