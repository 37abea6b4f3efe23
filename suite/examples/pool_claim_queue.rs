//! The two device sides of a host-fed pool that issue 15 asks to compare,
//! on GPU 0, in one run: `cargo run --release --example pool_claim_queue [tasks]`.
//!
//! - **rings** (what `TaskPool` ships): each resident block serves its own
//!   ring of `RING_ENTRIES` slots, filled by the pool's scheduler thread
//!   (`pool_demo`, empty tasks through `TaskPool::push`).
//! - **claim queue**: one shared queue of slots; a block claims the next
//!   task number with a device-memory atomic and waits for that slot
//!   (`kernels::pool::claim_queue_demo`). The host side here is one thread
//!   that fills the queue in task order and collects finished slots in the
//!   same order: the least a host can do for it (no dependencies, no
//!   producers beside it, no locks), so its rows are a lower bound for a
//!   full pool built on it.
//!
//! Rows, every empty task's result checked (each slot returns its task's
//! number): independent tasks (the host keeps the queue full), and a chain
//! (the host publishes task `t + 1` only after `t` came back: a shared
//! queue has no ring to put a dependent behind its dependency). Without a
//! GPU it prints "no GPU: skipped" and exits 0.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use clustered_suite::host::cudarc::driver::{result, sys, LaunchConfig, PushKernelArg};
use clustered_suite::host::pool::{
    Outcome, PoolConfig, PoolError, Shutdown, Slot, Task, TaskPool, Ticket, EXIT, FINISHED, IDLE,
    READY, RING_ENTRIES,
};
use clustered_suite::host::{Gpu, Module};
use clustered_suite::measure::RowReport;
use kernels::pool::{EMPTY, KINDS};

/// Resident blocks of both pools (the ring pool's own choice on an H100
/// is one per SM; the queue gets the same).
const THREADS: u32 = 128;

fn main() {
    let tasks: u32 = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(20_000);
    let Some((gpu, module)) = clustered_suite::gpu_or_skip().expect("the suite's PTX loads") else {
        return;
    };
    let report = clustered_suite::measure::per_task_table(&gpu, tasks);
    let blocks = ring_rows(&gpu, &module, tasks, &report);
    for capacity in [blocks * 8, blocks * 32] {
        match queue_rows(&gpu, &module, tasks, blocks, capacity, &report) {
            Ok(()) => {}
            Err(e) => println!("claim queue of {capacity} slots: {e}"),
        }
    }
}

/// The shipped pool's rows; returns its resident block count.
fn ring_rows(gpu: &Gpu, module: &Module, tasks: u32, report: RowReport) -> u32 {
    let kernel = module.kernel("pool_demo").expect("pool_demo is in the PTX");
    let config = PoolConfig::new(KINDS)
        .block_threads(THREADS)
        .timeout(Duration::from_secs(30));
    let pool = TaskPool::gpu(gpu, &kernel, config).expect("the ring pool starts");
    let blocks = pool.slots();
    let run = |chain: bool| {
        let start = Instant::now();
        let mut last: Option<Ticket> = None;
        let mut first = None;
        for i in 0..tasks {
            let task = Task::new(EMPTY, 1, [i; 4]);
            let after: Vec<Ticket> = if chain {
                last.into_iter().collect()
            } else {
                Vec::new()
            };
            let ticket = pool.push_after(task, &after).expect("push");
            first.get_or_insert(ticket.0);
            last = Some(ticket);
        }
        // Tickets count on from the run's first: task i has ticket first + i.
        let first = first.unwrap_or(0);
        for _ in 0..tasks {
            let done = pool.pop_finished().expect("an empty task finishes");
            let expected = done.ticket.0 - first;
            assert_eq!(
                done.outcome,
                Outcome::Ran { result: expected },
                "rings: task {expected}"
            );
        }
        start.elapsed()
    };
    run(false);
    report(
        &format!("rings ({blocks} blocks of {RING_ENTRIES}), independent"),
        &[run(false)],
    );
    report(
        &format!("rings ({blocks} blocks of {RING_ENTRIES}), a chain"),
        &[run(true)],
    );
    match pool.shutdown(Shutdown::Drain) {
        Ok(_) | Err(PoolError::NothingUnfinished) => {}
        Err(e) => println!("shutdown: {e}"),
    }
    blocks
}

/// Page-locked, device-mapped slots (freed on drop).
struct Queue {
    host: *mut Slot,
    device: u64,
    capacity: u32,
}

impl Queue {
    fn new(gpu: &Gpu, capacity: u32) -> Result<Queue, String> {
        gpu.context()
            .bind_to_thread()
            .map_err(|e| format!("{e:?}"))?;
        let bytes = capacity as usize * std::mem::size_of::<Slot>();
        let flags = sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE;
        // SAFETY: a fresh page-aligned allocation of `bytes`.
        let host = unsafe { result::malloc_host(bytes, flags) }
            .map_err(|e| format!("cuMemHostAlloc: {e:?}"))?
            .cast::<Slot>();
        for i in 0..capacity as usize {
            // SAFETY: inside the allocation.
            unsafe { host.add(i).write(Slot::IDLE) };
        }
        let mut device: sys::CUdeviceptr = 0;
        // SAFETY: `host` was allocated with DEVICEMAP in this context.
        let got = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device, host.cast(), 0) };
        let queue = Queue {
            host,
            device,
            capacity,
        };
        if got != sys::CUresult::CUDA_SUCCESS {
            return Err(format!("cuMemHostGetDevicePointer: {got:?}"));
        }
        Ok(queue)
    }

    /// Slot `t % capacity`'s state word, shared with the device.
    fn state(&self, t: u64) -> &AtomicU32 {
        let slot = self.slot(t);
        // SAFETY: an aligned u32 inside the allocation, only accessed atomically.
        unsafe { AtomicU32::from_ptr(std::ptr::addr_of_mut!((*slot).state)) }
    }

    fn slot(&self, t: u64) -> *mut Slot {
        // SAFETY: inside the allocation.
        unsafe { self.host.add((t % self.capacity as u64) as usize) }
    }

    /// Writes task `t` (or EXIT) into its slot, which must be IDLE.
    fn publish(&self, t: u64, state: u32) {
        let slot = self.slot(t);
        // SAFETY: the host owns an IDLE slot; the release below publishes.
        unsafe {
            (*slot).kind = EMPTY;
            (*slot).ctas = 1;
            (*slot).first = t as u32;
            (*slot).payload[0] = t as u32;
        }
        self.state(t).store(state, Ordering::Release);
    }

    /// Collects task `t` if it finished: checks its result, frees the slot.
    fn collect(&self, t: u64) -> bool {
        if self.state(t).load(Ordering::Acquire) != FINISHED {
            return false;
        }
        // SAFETY: FINISHED: the device is done with the slot.
        let result = unsafe { (*self.slot(t)).result };
        assert_eq!(result, t & 0xffff_ffff, "claim queue: task {t}'s result");
        self.state(t).store(IDLE, Ordering::Relaxed);
        true
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        // SAFETY: allocated by `malloc_host`; the kernel ended before.
        let _ = unsafe { result::free_host(self.host.cast()) };
    }
}

fn queue_rows(
    gpu: &Gpu,
    module: &Module,
    tasks: u32,
    blocks: u32,
    capacity: u32,
    report: RowReport,
) -> Result<(), String> {
    let kernel = module
        .kernel("claim_queue_demo")
        .map_err(|e| e.to_string())?;
    let queue = Queue::new(gpu, capacity)?;
    let counter = gpu.zeros::<u32>(1).map_err(|e| e.to_string())?;
    let stream = gpu.new_stream().map_err(|e| e.to_string())?;
    let config = LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut launch = stream.launch_builder(kernel.function());
    launch.arg(&queue.device).arg(&capacity).arg(&counter);
    // SAFETY: the kernel's parameters: the mapped queue, its capacity and
    // a zeroed device word; it returns once every block took an EXIT.
    unsafe { launch.launch(config) }.map_err(|e| format!("launch: {e:?}"))?;

    let timeout = Duration::from_secs(30);
    // Tasks numbered on from `first`; returns the time of `tasks` of them.
    let run = |first: u64, chain: bool| -> Result<Duration, String> {
        let (end, start) = (first + tasks as u64, Instant::now());
        let (mut published, mut collected) = (first, first);
        while collected < end {
            if start.elapsed() > timeout {
                return Err(format!("claim queue stalled at task {collected}"));
            }
            while collected < published && queue.collect(collected) {
                collected += 1;
            }
            let room = if chain { 1 } else { capacity as u64 };
            while published < end && published - collected < room {
                queue.publish(published, READY);
                published += 1;
            }
            std::hint::spin_loop();
        }
        Ok(start.elapsed())
    };
    run(0, false)?; // warm-up
    let independent = run(tasks as u64, false)?;
    let chain = run(2 * tasks as u64, true)?;
    // One EXIT per block, numbered after the last task, each into a free slot.
    let first_exit = 3 * tasks as u64;
    for t in first_exit..first_exit + blocks as u64 {
        queue.publish(t, EXIT);
    }
    stream
        .synchronize()
        .map_err(|e| format!("the queue kernel: {e:?}"))?;
    report(
        &format!("claim queue ({capacity} slots), independent"),
        &[independent],
    );
    report(
        &format!("claim queue ({capacity} slots), a chain"),
        &[chain],
    );
    Ok(())
}
