//! The scheduler of the CPU backend, and the per-thread state that the device
//! runtime reads.

use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

use corosensei::{Coroutine, CoroutineResult, Yielder};

use super::buffers::{Buffers, Fault};
use super::machine::{CpuError, CpuLaunch, Machine, MAX_SHARED_BYTES};
use super::stacks::{Slab, SlabStack};
use super::{AccessKind, LaneAccess, Observer};

/// Why a simulated thread handed control back to the scheduler.
enum Event {
    /// It accessed global memory (already done) at source location `site`;
    /// the lanes of a warp at the same site issue together.
    Access(AccessKind, LaneAccess, Site),
    /// It waits at `bar.sync`.
    Barrier,
    /// It read `%clock64`: let time pass.
    Clock,
}

type ThreadCoroutine = Coroutine<(), Event, (), SlabStack>;

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
    pub(crate) lane_id: u32,
    pub(crate) warp: u32,
    cta: *const Cta,
    yielder: Cell<*const Yielder<(), Event>>,
    /// The original CTA this thread's code runs now.
    task: Cell<u32>,
    tasks_begun: Cell<u32>,
    /// The stack pointer (about) at the thread's last suspension.
    stack_pointer: Cell<usize>,
    /// At a `barrier.red.and`: this thread's predicate; after the barrier
    /// opens, the AND over the CTA.
    barrier_and: Cell<Option<bool>>,
    /// The kernel is a clustered schedule: the hardware block index is the
    /// scheduler's alone (see `hardware_cta`).
    clustered: Cell<bool>,
}

impl Lane {
    pub(crate) fn cta(&self) -> &Cta {
        // SAFETY: a lane never outlives its CTA (see `Resident`).
        unsafe { &*self.cta }
    }

    fn suspend(&self, event: Event) {
        let marker = 0u8;
        self.stack_pointer
            .set(std::hint::black_box(&marker) as *const u8 as usize);
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
    tasks_announced: Cell<u32>,
    announcements: RefCell<Vec<u32>>,
    tick: *const Cell<u64>,
    /// The buffers the run may touch; null: unchecked (`run`).
    buffers: *const Buffers,
}

thread_local! {
    /// The simulated thread being run on this host thread, if any.
    static CURRENT: Cell<*const Lane> = const { Cell::new(ptr::null()) };
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

/// `bar.sync`: waits for the whole CTA.
pub(crate) fn barrier() {
    if let Some(lane) = try_current_lane() {
        lane.suspend(Event::Barrier);
    }
}

/// `barrier.red.and.pred`: waits for the whole CTA, and answers whether
/// every thread arrived with `predicate` set. Outside a launch (a helper
/// unit-tested alone) the thread is the whole CTA.
pub(crate) fn barrier_and(predicate: bool) -> bool {
    let Some(lane) = try_current_lane() else {
        return predicate;
    };
    lane.barrier_and.set(Some(predicate));
    lane.suspend(Event::Barrier);
    lane.barrier_and
        .take()
        .expect("the barrier sets the reduction when it opens")
}

/// The current thread runs a clustered schedule's entry point: from now on
/// only the scheduler may read the hardware block index.
pub(crate) fn enter_clustered() {
    if let Some(lane) = try_current_lane() {
        lane.clustered.set(true);
    }
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
    waiting: Vec<bool>,
    pending: Vec<Option<Pending>>,
    /// Accesses issued per lane: the lane furthest behind issues first.
    progress: Vec<u64>,
    live: usize,
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
    stats: RunStats,
    lanes_scratch: Vec<LaneAccess>,
}

/// Runs `kernel` (called once per simulated thread, with that thread's
/// indices current) as `launch` on `machine`, telling `observer` what
/// happens. Returns when every CTA has finished.
///
/// The kernel must treat its CTAs as independent, as CUDA requires: CTAs run
/// interleaved in an order the GPU would not necessarily choose.
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
    let mut scheduler = Scheduler {
        machine,
        launch,
        kernel,
        observer,
        buffers,
        tick: Box::new(Cell::new(0)),
        shared_buffers: Vec::new(),
        stats: RunStats::default(),
        lanes_scratch: Vec::with_capacity(32),
    };
    scheduler.run()
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
                        self.shared_buffers.push(done.shared);
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
            .unwrap_or_else(|| vec![0u128; MAX_SHARED_BYTES as usize / 16]);
        let cta = Box::new(Cta {
            block_idx,
            block_dim,
            grid_dim: self.launch.grid,
            sm_id: self.machine.sm_ids[sm as usize],
            sm_id_bound: self.machine.sm_id_bound,
            shared: shared.as_mut_ptr().cast(),
            shared_end: Cell::new(self.launch.dynamic_shared_bytes.next_multiple_of(16)),
            statics: RefCell::new(Vec::new()),
            tasks_announced: Cell::new(0),
            announcements: RefCell::new(Vec::new()),
            tick: &*self.tick,
            buffers: self.buffers.map_or(ptr::null(), |b| b as *const Buffers),
        });
        let threads = block_dim.iter().product::<u32>() as usize;
        let stacks = Slab::take(threads, self.machine.stack_bytes).ok_or(CpuError::Stack(
            "out of host memory for the simulated threads' stacks".into(),
        ))?;
        let mut lanes = Vec::with_capacity(threads);
        let mut coroutines = Vec::with_capacity(threads);
        for t in 0..threads as u32 {
            let [bx, by, _] = block_dim;
            let lane = Box::new(Lane {
                thread_idx: [t % bx, (t / bx) % by, t / (bx * by)],
                lane_id: t % 32,
                warp: t / 32,
                cta: &*cta,
                yielder: Cell::new(ptr::null()),
                task: Cell::new(linear),
                tasks_begun: Cell::new(0),
                stack_pointer: Cell::new(usize::MAX),
                barrier_and: Cell::new(None),
                clustered: Cell::new(false),
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
                    (*kernel)()
                })
            };
            lanes.push(lane);
            coroutines.push(Some(coroutine));
        }
        Ok(Resident {
            coroutines,
            lanes,
            cta,
            stacks,
            shared,
            waiting: vec![false; threads],
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
    fn step(&mut self, sm: u32, cta: &mut Resident) -> Result<(), CpuError> {
        let threads = cta.lanes.len();
        for warp_start in (0..threads).step_by(32) {
            let warp = warp_start..(warp_start + 32).min(threads);
            for _ in 0..self.machine.warp_burst {
                let mut resumed = false;
                for t in warp.clone() {
                    if cta.waiting[t] || cta.pending[t].is_some() {
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
                    // Cheap each time: is it suspended inside its canary zone?
                    // Thorough once, when it ends: is the whole zone intact?
                    let finished = matches!(result, Ok(CoroutineResult::Return(())));
                    if cta.stacks.in_canary_zone(t, lane.stack_pointer.get())
                        || (finished && cta.stacks.overflowed(t))
                    {
                        let error = CpuError::StackOverflow {
                            block: cta.cta.block_idx,
                            thread: lane.thread_idx,
                            stack_bytes: self.machine.stack_bytes,
                        };
                        // Unwinding threads whose stacks may be damaged would
                        // run on that memory: leak them instead.
                        std::mem::forget(std::mem::take(&mut cta.coroutines));
                        return Err(error);
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
                        Ok(CoroutineResult::Yield(Event::Barrier)) => cta.waiting[t] = true,
                        Ok(CoroutineResult::Yield(Event::Clock)) => {}
                        Ok(CoroutineResult::Return(())) => {
                            cta.coroutines[t] = None;
                            cta.live -= 1;
                        }
                        Err(payload) if payload.is::<Fault>() => {
                            let fault = *payload.downcast::<Fault>().expect("checked");
                            return Err(CpuError::OutOfBounds {
                                block: cta.cta.block_idx,
                                thread: lane.thread_idx,
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
                                block: cta.cta.block_idx,
                                thread: lane.thread_idx,
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
        }
        // A barrier opens when every thread still running waits at it.
        let waiting = cta.waiting.iter().filter(|&&w| w).count();
        if waiting > 0 && waiting == cta.live {
            let waiters = || cta.lanes.iter().zip(&cta.waiting).filter(|(_, &w)| w);
            let all = waiters().all(|(lane, _)| lane.barrier_and.get() != Some(false));
            for (lane, _) in waiters() {
                if lane.barrier_and.get().is_some() {
                    lane.barrier_and.set(Some(all));
                }
            }
            cta.waiting.iter_mut().for_each(|w| *w = false);
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
