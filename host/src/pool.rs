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
//! - Each resident block owns one [`Slot`] in page-locked host memory that
//!   the GPU reads through its mapping (on the CPU backend, plain host
//!   memory); the protocol is [`clustered_device::pool`]'s.
//! - One scheduler thread moves tasks from the input queue into idle slots
//!   and finished ones into the output queue. Any number of threads may
//!   push and pop (`TaskPool` is `Send + Sync`).
//! - Every pushed task comes out of [`TaskPool::pop_finished`] exactly once,
//!   as run, refused by the kernel, or cancelled: none is lost, and
//!   [`TaskPool::shutdown`] hands back those not popped yet.
//! - Waiting never hangs the process: a wait longer than the pool's
//!   timeout is [`PoolError::Timeout`] naming the tasks still in slots. A
//!   task that never ends keeps its block; the pool then never frees the
//!   slots' memory (the block may still read it) and does not join its
//!   threads on drop.

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use clustered_device::pool::{
    state_name, Payload, Slot, Task, EXIT, FINISHED, IDLE, PAYLOAD_BYTES, POOL_ABI_VERSION, READY,
    RUNNING, STATUS_EMPTY_GRID, STATUS_OK, STATUS_UNKNOWN_KIND,
};

use clustered_device::cpu::MAX_RESIDENT_BLOCKS;

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

/// A task in a slot when a wait timed out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InSlot {
    /// The slot (= the resident block's index).
    pub slot: u32,
    /// The task's ticket.
    pub ticket: Ticket,
    /// The slot's state when the wait gave up (READY: no block took it;
    /// RUNNING: the block runs it).
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
    /// never starts would never serve its slot.
    TooLarge {
        /// Blocks asked for.
        blocks: u32,
        /// Blocks that fit (resident per SM times SMs).
        resident: u32,
    },
    /// The configuration cannot run (zero blocks or threads).
    Config(&'static str),
    /// Nothing to wait for: no pushed task is unfinished or unpopped.
    NothingUnfinished,
    /// A wait passed the pool's timeout; the tasks still in slots are
    /// named. The pool keeps going: a later wait gets them if they end.
    Timeout {
        /// How long the call waited.
        waited: Duration,
        /// Tasks pushed and not finished.
        unfinished: usize,
        /// The tasks in slots (started or not).
        in_slots: Vec<InSlot>,
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
            PoolError::TooLarge { blocks, resident } => write!(
                f,
                "a pool of {blocks} blocks cannot be co-resident (at most {resident} fit): ask for at most {resident} blocks, or fewer threads per block"
            ),
            PoolError::Config(what) => write!(f, "bad pool configuration: {what}"),
            PoolError::NothingUnfinished => write!(f, "no task is unfinished: waiting would never end (push first)"),
            PoolError::Timeout { waited, unfinished, in_slots } => {
                write!(f, "waited {waited:?} and {unfinished} task(s) are unfinished; in slots:")?;
                for s in in_slots {
                    write!(f, " slot {} {:?} {}", s.slot, s.ticket, s.state)?;
                }
                write!(f, " (a task that never returns keeps its block; raise `PoolConfig::timeout` if it is only slow)")
            }
            PoolError::Device(why) => write!(f, "the pool kernel failed: {why}"),
        }
    }
}

impl std::error::Error for PoolError {}

/// How to build a pool.
#[derive(Clone, Debug)]
pub struct PoolConfig {
    kinds: u32,
    blocks: Option<u32>,
    block_threads: u32,
    timeout: Duration,
}

impl PoolConfig {
    /// A pool whose kernel serves task kinds `0..kinds`: blocks of 128
    /// threads, one per SM, waits of at most 10 s.
    pub fn new(kinds: u32) -> Self {
        PoolConfig {
            kinds,
            blocks: None,
            block_threads: 128,
            timeout: Duration::from_secs(10),
        }
    }

    /// Resident blocks (= slots); all must fit at once. Default: one per SM.
    pub fn blocks(mut self, blocks: u32) -> Self {
        self.blocks = Some(blocks);
        self
    }

    /// Threads per block (1-D).
    pub fn block_threads(mut self, threads: u32) -> Self {
        self.block_threads = threads;
        self
    }

    /// How long [`TaskPool::pop_finished`] and [`TaskPool::shutdown`] wait
    /// before [`PoolError::Timeout`].
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Checks the configuration against `resident_per_sm` blocks of the
    /// kernel on each of `sms` SMs; returns the blocks to launch.
    fn plan(&self, resident_per_sm: u32, sms: u32) -> Result<u32, PoolError> {
        if self.block_threads == 0 {
            return Err(PoolError::Config("blocks of 0 threads"));
        }
        let blocks = self.blocks.unwrap_or(sms);
        if blocks == 0 {
            return Err(PoolError::Config("a pool of 0 blocks"));
        }
        let resident = resident_per_sm.saturating_mul(sms);
        if blocks > resident {
            return Err(PoolError::TooLarge { blocks, resident });
        }
        Ok(blocks)
    }
}

/// A task waiting in the input queue.
struct Queued {
    ticket: Ticket,
    task: Task,
    after: Vec<Ticket>,
}

/// Whether the device side still runs.
enum DeviceState {
    Running,
    /// Ended after EXIT (`Ok`) or by itself (`Err`: why).
    Ended(Result<(), String>),
}

struct State {
    next_ticket: u64,
    /// Dependencies met: in push order.
    ready: VecDeque<Queued>,
    /// Waiting for a dependency.
    blocked: Vec<Queued>,
    /// Pushed and not finished.
    unfinished: HashSet<Ticket>,
    finished: VecDeque<Finished>,
    /// What each slot holds (the scheduler's bookkeeping, here so that a
    /// timeout can name them).
    slots: Vec<Option<(Ticket, u32)>>,
    shutdown: Option<Shutdown>,
    /// The scheduler wrote EXIT into every slot.
    exited: bool,
    device: DeviceState,
}

/// The slots' memory: a host address the scheduler writes, valid until the
/// device side ended (see `Memory`).
struct Slots {
    host: *mut Slot,
    count: usize,
}

// SAFETY: the slots are only touched through atomics (state words) and by
// the single party that owns a slot by the protocol.
unsafe impl Send for Slots {}
// SAFETY: as above.
unsafe impl Sync for Slots {}

impl Slots {
    fn state(&self, slot: usize) -> &AtomicU32 {
        debug_assert!(slot < self.count);
        // SAFETY: in bounds, aligned, alive while the pool's `Shared` is.
        unsafe { AtomicU32::from_ptr(std::ptr::addr_of_mut!((*self.host.add(slot)).state)) }
    }

    /// Writes `task` into an IDLE slot and publishes it READY (release).
    fn publish(&self, slot: usize, task: &Task) {
        let target = self.host.wrapping_add(slot);
        // SAFETY: the host owns an IDLE slot: nobody reads these words until
        // the release store below makes them visible with READY.
        unsafe {
            std::ptr::addr_of_mut!((*target).kind).write_volatile(task.kind());
            std::ptr::addr_of_mut!((*target).ctas).write_volatile(task.ctas());
            std::ptr::addr_of_mut!((*target).payload).write_volatile(*task.payload());
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

/// Who frees the slots' memory, once the device side ended.
enum Memory {
    Cpu(*mut [Slot]),
    Gpu(gpu::Pinned),
}

// SAFETY: `Memory` only owns the allocation; see `Slots`.
unsafe impl Send for Memory {}
// SAFETY: as above.
unsafe impl Sync for Memory {}

struct Shared {
    state: Mutex<State>,
    /// Signalled on every push, finish, shutdown and device end.
    changed: Condvar,
    slots: Slots,
    kinds: u32,
    timeout: Duration,
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
            // ended, so nothing else points into it.
            Some(Memory::Cpu(raw)) => drop(unsafe { Box::from_raw(raw) }),
            Some(Memory::Gpu(pinned)) => drop(pinned),
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
        let in_slots = state
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, held)| {
                held.map(|(ticket, _)| InSlot {
                    slot: i as u32,
                    ticket,
                    state: state_name(self.slots.state(i).load(Ordering::Acquire)),
                })
            })
            .collect();
        PoolError::Timeout {
            waited,
            unfinished: state.unfinished.len(),
            in_slots,
        }
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
            .field("slots", &self.shared.slots.count)
            .field("kinds", &self.shared.kinds)
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
            return Err(PoolError::Config(
                "resident blocks per SM must be in 1..=MAX_RESIDENT_BLOCKS",
            ));
        }
        let blocks = config.plan(resident_per_sm, machine.sm_count())?;
        let raw = Box::into_raw(vec![Slot::IDLE; blocks as usize].into_boxed_slice());
        let host = raw.cast::<Slot>();
        let shared = Self::shared(&config, blocks, host, Memory::Cpu(raw));
        let launch = CpuLaunch {
            grid: [blocks, 1, 1],
            block: [config.block_threads, 1, 1],
            dynamic_shared_bytes: 0,
            resident_blocks: resident_per_sm,
        };
        let engine_shared = Arc::clone(&shared);
        let address = host as usize;
        std::thread::Builder::new()
            .name("clustered-pool-cpu".into())
            .spawn(move || {
                let body = || {
                    // SAFETY: one slot per block, alive while `Shared` is
                    // (held by this thread), served by the scheduler.
                    unsafe { kernel(address as *mut Slot) }
                };
                let ended = crate::cpu::run(&machine, &launch, &mut NoObserver, &body)
                    .map(|_| ())
                    .map_err(|e| e.to_string());
                engine_shared.lock().device = DeviceState::Ended(ended);
                engine_shared.changed.notify_all();
            })
            .map_err(|e| PoolError::Device(format!("cannot start the CPU engine thread: {e}")))?;
        Self::start(shared, None)
    }

    fn shared(config: &PoolConfig, blocks: u32, host: *mut Slot, memory: Memory) -> Arc<Shared> {
        Arc::new(Shared {
            state: Mutex::new(State {
                next_ticket: 0,
                ready: VecDeque::new(),
                blocked: Vec::new(),
                unfinished: HashSet::new(),
                finished: VecDeque::new(),
                slots: vec![None; blocks as usize],
                shutdown: None,
                exited: false,
                device: DeviceState::Running,
            }),
            changed: Condvar::new(),
            slots: Slots {
                host,
                count: blocks as usize,
            },
            kinds: config.kinds,
            timeout: config.timeout,
            memory: Mutex::new(Some(memory)),
        })
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

    /// Slots (= resident blocks) of the pool.
    pub fn slots(&self) -> u32 {
        self.shared.slots.count as u32
    }

    /// Queues `task`; returns its ticket.
    pub fn push(&self, task: Task) -> Result<Ticket, PoolError> {
        self.push_after(task, &[])
    }

    /// Queues `task` to start only after every task of `after` finished
    /// (whatever its outcome): "run c after a", without the caller polling.
    pub fn push_after(&self, task: Task, after: &[Ticket]) -> Result<Ticket, PoolError> {
        if task.kind() >= self.shared.kinds {
            return Err(PoolError::UnknownKind {
                kind: task.kind(),
                kinds: self.shared.kinds,
            });
        }
        if task.ctas() == 0 {
            return Err(PoolError::EmptyGrid { kind: task.kind() });
        }
        let mut state = self.shared.lock();
        if state.shutdown.is_some() {
            return Err(PoolError::ShutDown);
        }
        if let Some(e) = Shared::device_error(&state) {
            return Err(e);
        }
        if let Some(&unknown) = after.iter().find(|t| t.0 >= state.next_ticket) {
            return Err(PoolError::UnknownDependency(unknown));
        }
        let ticket = Ticket(state.next_ticket);
        state.next_ticket += 1;
        state.unfinished.insert(ticket);
        let after: Vec<Ticket> = after
            .iter()
            .copied()
            .filter(|t| state.unfinished.contains(t))
            .collect();
        let queued = Queued {
            ticket,
            task,
            after,
        };
        if queued.after.is_empty() {
            state.ready.push_back(queued);
        } else {
            state.blocked.push(queued);
        }
        drop(state);
        self.shared.changed.notify_all();
        Ok(ticket)
    }

    /// Tasks pushed and not finished yet (queued, blocked or in a slot).
    pub fn unfinished(&self) -> usize {
        self.shared.lock().unfinished.len()
    }

    /// A finished task, if one is waiting; never blocks.
    pub fn try_pop_finished(&self) -> Option<Finished> {
        self.shared.lock().finished.pop_front()
    }

    /// The next finished task, in the order they finished; waits up to the
    /// pool's timeout.
    pub fn pop_finished(&self) -> Result<Finished, PoolError> {
        self.pop_finished_timeout(self.shared.timeout)
    }

    /// [`TaskPool::pop_finished`], waiting at most `timeout`.
    pub fn pop_finished_timeout(&self, timeout: Duration) -> Result<Finished, PoolError> {
        let start = Instant::now();
        let mut state = self.shared.lock();
        loop {
            if let Some(done) = state.finished.pop_front() {
                return Ok(done);
            }
            if let Some(e) = Shared::device_error(&state) {
                return Err(e);
            }
            if state.unfinished.is_empty() {
                return Err(PoolError::NothingUnfinished);
            }
            let waited = start.elapsed();
            if waited >= timeout {
                return Err(self.shared.timeout(&state, waited));
            }
            state = self
                .shared
                .changed
                .wait_timeout(state, timeout - waited)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Stops taking tasks, runs (Drain) or drops (Cancel) the queued ones,
    /// waits for the running ones and for the blocks to exit, and returns
    /// every finished task not popped yet.
    ///
    /// On [`PoolError::Timeout`] the pool keeps its finished tasks (pop them,
    /// or call `shutdown` again later). Calling it again after success
    /// returns an empty list. Other threads' pushes fail with
    /// [`PoolError::ShutDown`] from the first call on.
    pub fn shutdown(&self, mode: Shutdown) -> Result<Vec<Finished>, PoolError> {
        let start = Instant::now();
        let mut state = self.shared.lock();
        // Cancel may follow a Drain that timed out; never the reverse.
        if state.shutdown != Some(Shutdown::Cancel) {
            state.shutdown = Some(mode);
        }
        self.shared.changed.notify_all();
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
            state = self
                .shared
                .changed
                .wait_timeout(state, self.shared.timeout - waited)
                .unwrap_or_else(|e| e.into_inner())
                .0;
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
/// If the drain times out, the threads are left running and the slots'
/// memory is never freed: a block may still use it.
impl Drop for TaskPool {
    fn drop(&mut self) {
        let _ = self.shutdown(Shutdown::Drain);
    }
}

/// The scheduler thread: fills idle slots, collects finished ones, and
/// writes EXIT once shut down and empty; then waits for the device side to
/// end.
fn schedule(shared: &Shared, mut device: Option<gpu::Running>) {
    let slots = &shared.slots;
    let mut finished = Vec::new();
    let mut idle_passes = 0u32;
    loop {
        // Collect: only slots holding a task can be FINISHED.
        let held: Vec<usize> = {
            let state = shared.lock();
            (0..slots.count)
                .filter(|&i| state.slots[i].is_some())
                .collect()
        };
        for &i in &held {
            if slots.state(i).load(Ordering::Acquire) == FINISHED {
                let (status, result) = slots.collect(i);
                finished.push((i, status, result));
            }
        }
        let mut state = shared.lock();
        let mut progressed = !finished.is_empty();
        for (i, status, result) in finished.drain(..) {
            let Some((ticket, kind)) = state.slots[i].take() else {
                continue;
            };
            let outcome = match status {
                STATUS_OK => Outcome::Ran { result },
                STATUS_UNKNOWN_KIND => Outcome::UnknownKind,
                STATUS_EMPTY_GRID => Outcome::EmptyGrid,
                other => Outcome::Status(other),
            };
            finish(&mut state, ticket, kind, outcome);
        }
        if state.shutdown == Some(Shutdown::Cancel) {
            let blocked = std::mem::take(&mut state.blocked);
            let cancelled: Vec<Queued> = state.ready.drain(..).chain(blocked).collect();
            progressed |= !cancelled.is_empty();
            for queued in cancelled {
                finish(
                    &mut state,
                    queued.ticket,
                    queued.task.kind(),
                    Outcome::Cancelled,
                );
            }
        }
        // Dispatch into idle slots.
        for i in 0..slots.count {
            if state.ready.is_empty() {
                break;
            }
            if state.slots[i].is_none() {
                if let Some(queued) = state.ready.pop_front() {
                    slots.publish(i, &queued.task);
                    state.slots[i] = Some((queued.ticket, queued.task.kind()));
                    progressed = true;
                }
            }
        }
        if let Some(gpu) = &device {
            if let Some(ended) = gpu.ended() {
                state.device = DeviceState::Ended(ended);
            }
        }
        let in_flight = state.slots.iter().any(Option::is_some);
        let empty = state.ready.is_empty() && state.blocked.is_empty() && !in_flight;
        if progressed {
            shared.changed.notify_all();
        }
        if matches!(state.device, DeviceState::Ended(_)) {
            // The kernel is gone: nothing will finish any more.
            shared.changed.notify_all();
            break;
        }
        if state.shutdown.is_some() && empty {
            for i in 0..slots.count {
                slots.state(i).store(EXIT, Ordering::Release);
            }
            state.exited = true;
            drop(state);
            wait_for_device_end(shared, &mut device);
            return;
        }
        if progressed {
            idle_passes = 0;
            continue;
        }
        if !in_flight && state.ready.is_empty() && state.shutdown.is_none() {
            // Nothing to do until a push or a shutdown.
            let _ = shared
                .changed
                .wait_timeout(state, Duration::from_millis(50))
                .unwrap_or_else(|e| e.into_inner());
            continue;
        }
        drop(state);
        // Tasks in flight: poll, spinning first (a task may end within
        // microseconds), then yielding, then sleeping.
        idle_passes = idle_passes.saturating_add(1);
        if idle_passes < 64 {
            std::hint::spin_loop();
        } else if idle_passes < 256 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}

/// Records `ticket`'s end and unblocks the tasks that waited for it.
fn finish(state: &mut State, ticket: Ticket, kind: u32, outcome: Outcome) {
    state.unfinished.remove(&ticket);
    state.finished.push_back(Finished {
        ticket,
        kind,
        outcome,
    });
    let mut i = 0;
    while i < state.blocked.len() {
        let queued = &mut state.blocked[i];
        queued.after.retain(|&t| t != ticket);
        if queued.after.is_empty() {
            let queued = state.blocked.remove(i);
            state.ready.push_back(queued);
        } else {
            i += 1;
        }
    }
}

/// After EXIT: waits (forever, sleeping) until the device side ended, so
/// that the slots' memory is freed only when no block can read it.
fn wait_for_device_end(shared: &Shared, device: &mut Option<gpu::Running>) {
    loop {
        let mut state = shared.lock();
        if let Some(gpu) = device.as_ref() {
            if let Some(ended) = gpu.ended() {
                state.device = DeviceState::Ended(ended);
            }
        }
        if matches!(state.device, DeviceState::Ended(_)) {
            drop(state);
            shared.changed.notify_all();
            // The kernel is done: its stream and event may go.
            *device = None;
            return;
        }
        let _ = shared
            .changed
            .wait_timeout(state, Duration::from_millis(1))
            .unwrap_or_else(|e| e.into_inner());
    }
}

mod gpu {
    //! The pool on a GPU: slots in page-locked, device-mapped host memory,
    //! and the pool kernel running on a stream of its own.

    use std::sync::Arc;

    use cudarc::driver::sys;
    use cudarc::driver::{CudaContext, CudaEvent, CudaStream};

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
        /// A pool on `gpu`: `kernel` (a pool kernel, one `*mut Slot`
        /// parameter, e.g. `pool_demo` of the suite's module) runs on a
        /// stream of its own with one block per slot, every block
        /// co-resident (from the kernel's occupancy).
        ///
        /// Load every module the program will use before this: loading one
        /// (a lazily loaded function, `CUDA_MODULE_LOADING=LAZY`) while a
        /// kernel never returns can deadlock the context. The pool kernel
        /// itself is loaded here (`cuFuncLoad`) before it starts.
        pub fn gpu(gpu: &Gpu, kernel: &Kernel, config: PoolConfig) -> Result<TaskPool, PoolError> {
            let host_error = |e: crate::Error| PoolError::Device(e.to_string());
            let per_sm = kernel
                .occupancy(config.block_threads, 0)
                .map_err(host_error)?;
            let blocks = config.plan(per_sm, gpu.properties().sm_count)?;
            // SAFETY: a function of a loaded module.
            let loaded = unsafe { sys::cuFuncLoad(kernel.function().cu_function()) };
            if loaded != sys::CUresult::CUDA_SUCCESS {
                return Err(PoolError::Device(format!("cuFuncLoad: {loaded:?}")));
            }
            let pinned = Pinned::new(gpu.context(), blocks as usize)?;
            let stream = gpu.new_stream().map_err(host_error)?;
            let address = pinned.device;
            let launch = LaunchConfig::new([blocks, 1, 1], [config.block_threads, 1, 1]);
            // SAFETY: the kernel takes one pointer to `blocks` slots, which
            // live until it ended (`Shared` frees them only then).
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
            let shared = TaskPool::shared(&config, blocks, host, super::Memory::Gpu(pinned));
            TaskPool::start(
                shared,
                Some(Running {
                    _stream: stream,
                    done,
                }),
            )
        }
    }
}
