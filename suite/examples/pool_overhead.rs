//! Per-task overhead of the task pool (issue 15) against one launch per task
//! and a CUDA graph of the same launches, on GPU 0:
//! `cargo run --release --example pool_overhead [tasks] [runs] [--blocks=N]`
//! (`--blocks=N`: N worker blocks in each pool, `PoolConfig::blocks`,
//! instead of one per SM but one).
//!
//! Each row runs `runs` times (default 5) and prints the median and the
//! range: a row moves from one run to the next by more than most changes
//! measured with it, and a run of a row costs milliseconds where starting
//! the pools costs seconds.
//!
//! Every task is empty (kind EMPTY, or the `empty_launch` kernel with 16
//! bytes of arguments), so what is measured is dispatch alone, as the host
//! sees it: from the first push (or launch) to the last result (or stream
//! synchronisation). Rows:
//!
//! - `pool independent, P producers, B bytes`: N tasks of B bytes of
//!   arguments pushed by P threads, all popped. (A slot always carries 64
//!   bytes: B changes only what the host writes.)
//! - `pool independent, P producers, batches of 64`: the same with 64
//!   tasks per `push_many` and up to 64 per `pop_finished_many` (one lock
//!   each, where the rows above take one per task).
//! - `pool chain`: each task pushed `after` the previous one. They ride in
//!   one block's ring (up to all of its entries), so a task costs the
//!   block's own poll, run and publish plus the host keeping the ring full,
//!   not a round trip host -> block -> host.
//! - `..., depth 1`: the same on a second pool with one ready task in
//!   flight per block (`PoolConfig::depth(1)`, version 1's dispatch for
//!   independent tasks: a block waits a round trip between them): what the
//!   rings buy. A chain still rides up to a whole ring.
//! - `pool chain ..., no gates`: the chain on a pool with
//!   `PoolConfig::gates(false)`: no entry signals a counter, what a chain
//!   pays for gates it never waits on.
//! - `..., pool_empty`: the 16-byte rows and the chain on a pool of
//!   `kernels::pool::pool_empty`, whose only body is the empty task's,
//!   where `pool_demo` carries nine (96 registers): what the worker's loop
//!   costs with nothing beside it, as a graph of empty launches has none
//!   (its tasks read one payload word, `pool_demo`'s worker all 16). Its
//!   tasks never meet at a barrier, so a warp of each worker block publishes
//!   them (`clustered_abi::pool`, "A publishing warp"); `..., thread 0
//!   publishes` is the same pool with `PoolConfig::publishing_warp(false)`.
//! - `pool chain, ragged_sum (returns early), ...` and `pool independent,
//!   4 producers, ragged_sum ...`: `pool_generated`'s `ragged_sum` tasks of
//!   one CTA, a body that returns early before its barriers (its task
//!   protocol votes on a barrier of the task threads), with a warp
//!   publishing and with thread 0 publishing; their sums are checked.
//! - `launch per task`: N launches of `empty_launch` on one stream, then a
//!   synchronisation (the stream orders them: a chain too).
//! - `graph`: the same N launches captured once into a CUDA graph, then
//!   the graph launched and waited for.
//!
//! Each pool runs one chain untimed before its chain row: a pool's first
//! chain is slower than the ones after it.
//!
//! Without a GPU it prints "no GPU: skipped" and exits 0.

use std::sync::Arc;
use std::time::{Duration, Instant};

use clustered_suite::host::cudarc::driver::{
    sys, CudaStream, DevicePtr, LaunchConfig, PushKernelArg,
};
use clustered_suite::host::pool::{
    Finished, Outcome, PoolConfig, PoolError, Shutdown, Task, TaskPool, Ticket, DEFAULT_DEPTH,
    RING_ENTRIES,
};
use clustered_suite::host::{Gpu, Kernel, Module};
use clustered_suite::measure::{repeat, RowReport};
use kernels::pool::{EMPTY, KINDS};

fn main() {
    let mut arguments: Vec<String> = std::env::args().skip(1).collect();
    let blocks = match clustered_suite::measure::take_blocks_flag(&mut arguments) {
        Ok(blocks) => blocks,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let mut arguments = arguments.into_iter();
    let tasks: u32 = arguments
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(20_000);
    let runs: usize = arguments
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(5)
        .max(1);
    let Some((gpu, module)) = clustered_suite::gpu_or_skip().expect("the suite's PTX loads") else {
        return;
    };
    let report = clustered_suite::measure::per_task_table(&gpu, tasks);
    pool_rows(&gpu, &module, tasks, runs, blocks, &report);
    early_return_rows(&gpu, &module, tasks, runs, blocks, &report);
    launch_rows(&gpu, &module, tasks, runs, &report);
}

fn pool_rows(
    gpu: &Gpu,
    module: &Module,
    tasks: u32,
    runs: usize,
    blocks: Option<u32>,
    report: RowReport,
) {
    // Each pool and the rows it runs: the full rows, version 1's dispatch,
    // the chain alone without gates; then a kernel with no body but the
    // empty one.
    let pools = [
        Rows {
            kernel: "pool_demo",
            depth: DEFAULT_DEPTH,
            gates: true,
            suffix: "",
            bytes: &[16, 32, 64],
            batches: true,
            publishing_warp: true,
        },
        Rows {
            kernel: "pool_demo",
            depth: 1,
            gates: true,
            suffix: ", depth 1",
            bytes: &[16],
            batches: false,
            publishing_warp: true,
        },
        Rows {
            kernel: "pool_demo",
            depth: DEFAULT_DEPTH,
            gates: false,
            suffix: ", no gates",
            bytes: &[],
            batches: false,
            publishing_warp: true,
        },
        Rows {
            kernel: "pool_empty",
            depth: DEFAULT_DEPTH,
            gates: true,
            suffix: ", pool_empty",
            bytes: &[16],
            batches: false,
            publishing_warp: true,
        },
        Rows {
            kernel: "pool_empty",
            depth: DEFAULT_DEPTH,
            gates: true,
            suffix: ", pool_empty, thread 0 publishes",
            bytes: &[16],
            batches: false,
            publishing_warp: false,
        },
    ];
    for Rows {
        kernel,
        depth,
        gates,
        suffix,
        bytes,
        batches,
        publishing_warp,
    } in pools
    {
        let kernel = module
            .kernel(kernel)
            .unwrap_or_else(|e| panic!("{kernel}: {e}"));
        let config = PoolConfig::new(KINDS)
            .block_threads(128)
            .depth(depth)
            .gates(gates)
            .publishing_warp(publishing_warp);
        let Some(pool) = start(gpu, &kernel, config, blocks) else {
            return;
        };
        println!(
            "pool: {} resident blocks, rings of {RING_ENTRIES}, up to {depth} task(s) in flight per block, {}",
            pool.slots(),
            if pool.publishing_warp() {
                "a warp of each publishes its tasks"
            } else {
                "thread 0 publishes each task"
            }
        );
        // Warm up: every block takes a few tasks.
        run_independent(&pool, pool.slots() * 4, 1, 1, empty(16));
        for &bytes in bytes {
            for producers in [1u32, 4] {
                report(
                    &format!("pool independent, {producers} producers, {bytes} B{suffix}"),
                    &repeat(runs, || {
                        run_independent(&pool, tasks, producers, 1, empty(bytes))
                    }),
                );
            }
        }
        if batches {
            for producers in [1u32, 4] {
                report(
                    &format!("pool independent, {producers} producers, batches of {BATCH}"),
                    &repeat(runs, || {
                        run_independent(&pool, tasks, producers, BATCH, empty(16))
                    }),
                );
            }
        }
        // A pool's first chain runs slower than the next (H100, three in a
        // row on each pool: the first 1.1-1.2x the others, which agree;
        // docs/BENCHMARKS.md, "a chain without gates"), so each pool runs
        // one untimed first.
        run_chain(&pool, tasks, empty(16));
        report(
            &format!("pool chain (each after the previous){suffix}"),
            &repeat(runs, || run_chain(&pool, tasks, empty(16))),
        );
        match pool.shutdown(Shutdown::Drain) {
            Ok(_) => {}
            Err(e) => println!("shutdown: {e}"),
        }
    }
}

/// `pool_generated`'s `ragged_sum` tasks of one CTA (a body that returns
/// early before its barriers: half of the block leaves at once, the rest
/// meet at six barriers), whose task protocol votes on a barrier of the task
/// threads only (`run::pool_end_task`), so a warp may publish them: a chain
/// and 4 producers' independent tasks, with the warp and with thread 0
/// publishing. Every task writes the same sums, checked after each pool.
fn early_return_rows(
    gpu: &Gpu,
    module: &Module,
    tasks: u32,
    runs: usize,
    blocks: Option<u32>,
    report: RowReport,
) {
    use kernels::early_exit::ragged_sum_args;
    use kernels::pool::pool_generated;
    const THREADS: u32 = 128;
    let input: Vec<u32> = (0..THREADS).map(|i| i.wrapping_mul(2654435761)).collect();
    let want = clustered_suite::reference::ragged_sum(&input, THREADS as usize, 0, 0);
    let on_gpu = gpu.htod(&input).expect("upload");
    let kernel = module
        .kernel("pool_generated")
        .expect("pool_generated is in the PTX");
    for publishing_warp in [true, false] {
        // A zeroed output for each pool, written before it starts (a memset
        // beside a pool may wait for it), so each pool's sums are its own.
        let output = gpu.zeros::<u32>(THREADS as usize).expect("an output");
        let args = ragged_sum_args {
            input: on_gpu.device_ptr(gpu.stream()).0,
            output: output.device_ptr(gpu.stream()).0,
            n: THREADS,
            ragged: 0,
        };
        gpu.synchronize().expect("the upload and the zeros end");
        let config = PoolConfig::new(pool_generated::KINDS)
            .block_threads(THREADS)
            .publishing_warp(publishing_warp);
        let Some(pool) = start(gpu, &kernel, config, blocks) else {
            return;
        };
        let suffix = if pool.publishing_warp() {
            "a warp publishes"
        } else {
            "thread 0 publishes"
        };
        let task = |_| pool_generated::task(1, args);
        run_chain(&pool, tasks, task);
        report(
            &format!("pool chain, ragged_sum (returns early), {suffix}"),
            &repeat(runs, || run_chain(&pool, tasks, task)),
        );
        report(
            &format!("pool independent, 4 producers, ragged_sum (returns early), {suffix}"),
            &repeat(runs, || run_independent(&pool, tasks, 4, 1, task)),
        );
        if let Err(e) = pool.shutdown(Shutdown::Drain) {
            println!("shutdown: {e}");
        }
        let got = gpu.dtoh(&output).expect("the sums");
        assert!(got == want, "ragged_sum tasks wrote wrong sums ({suffix})");
    }
}

/// One pool of `pool_rows` and what it measures.
struct Rows {
    /// The pool kernel in the suite's PTX.
    kernel: &'static str,
    depth: u32,
    gates: bool,
    /// After each row's name.
    suffix: &'static str,
    /// Payload sizes of the independent rows (1 and 4 producers each).
    bytes: &'static [usize],
    /// The rows of batches of [`BATCH`].
    batches: bool,
    /// `PoolConfig::publishing_warp` (on by default; the build allows it
    /// for `pool_empty` only here).
    publishing_warp: bool,
}

/// Starts a pool of `kernel` with `blocks` worker blocks if given, and
/// waits of up to 30 s; says why where it did not start.
fn start(gpu: &Gpu, kernel: &Kernel, config: PoolConfig, blocks: Option<u32>) -> Option<TaskPool> {
    let mut config = config.timeout(Duration::from_secs(30));
    if let Some(blocks) = blocks {
        config = config.blocks(blocks);
    }
    TaskPool::gpu(gpu, kernel, config)
        .map_err(|e| println!("the pool did not start: {e}"))
        .ok()
}

/// Task `i` of a row of empty tasks with `bytes` (16, 32 or 64) bytes of
/// arguments.
fn empty(bytes: usize) -> impl Fn(u32) -> Task + Copy + Sync {
    move |i| match bytes {
        16 => Task::new(EMPTY, 1, [i; 4]),
        32 => Task::new(EMPTY, 1, [i; 8]),
        _ => Task::new(EMPTY, 1, [i; 16]),
    }
}

/// Pushes a chain of `tasks` tasks (`task(i)`), each after the previous,
/// and pops them all, each of which must have run; returns the time from
/// the first push to the last pop.
fn run_chain(pool: &TaskPool, tasks: u32, task: impl Fn(u32) -> Task) -> Duration {
    let start = Instant::now();
    let mut last: Option<Ticket> = None;
    for i in 0..tasks {
        let after: Vec<Ticket> = last.into_iter().collect();
        last = Some(pool.push_after(task(i), &after).expect("push"));
    }
    for _ in 0..tasks {
        let done = pool.pop_finished().expect("a chain task finishes");
        assert!(matches!(done.outcome, Outcome::Ran { .. }), "{done:?}");
    }
    start.elapsed()
}

/// Tasks per `push_many` and at most per `pop_finished_many` in the
/// batched rows.
const BATCH: usize = 64;

/// Pushes `tasks` tasks (`task(i)`) from `producers` threads and pops them
/// all, each of which must have run; returns the time from the first push
/// to the last pop. With `batch > 1` the producers push `batch` tasks per
/// `push_many` and the consumer pops up to `batch` per `pop_finished_many`.
fn run_independent(
    pool: &TaskPool,
    tasks: u32,
    producers: u32,
    batch: usize,
    task: impl Fn(u32) -> Task + Copy + Send + Sync,
) -> Duration {
    let start = Instant::now();
    std::thread::scope(|scope| {
        for p in 0..producers {
            scope.spawn(move || {
                let share = tasks / producers + u32::from(p < tasks % producers);
                if batch > 1 {
                    let all: Vec<Task> = (0..share).map(task).collect();
                    for chunk in all.chunks(batch) {
                        pool.push_many(chunk).expect("push_many");
                    }
                } else {
                    for i in 0..share {
                        pool.push(task(i)).expect("push");
                    }
                }
            });
        }
        // The producers may not have pushed yet: nothing unfinished then
        // means "not yet", not "never".
        let mut popped = 0;
        while popped < tasks {
            let ran = |f: &Finished| assert!(matches!(f.outcome, Outcome::Ran { .. }), "{f:?}");
            let got = if batch > 1 {
                pool.pop_finished_many(batch).map(|done| {
                    done.iter().for_each(ran);
                    done.len() as u32
                })
            } else {
                pool.pop_finished().map(|done| {
                    ran(&done);
                    1
                })
            };
            match got {
                Ok(n) => popped += n,
                Err(PoolError::NothingUnfinished) => std::thread::yield_now(),
                Err(e) => panic!("a task finishes: {e}"),
            }
        }
    });
    start.elapsed()
}

fn launch_rows(gpu: &Gpu, module: &Module, tasks: u32, runs: usize, report: RowReport) {
    let kernel = module
        .kernel("empty_launch")
        .expect("empty_launch is in the PTX");
    let stream: Arc<CudaStream> = gpu.new_stream().expect("a stream");
    let config = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (128, 1, 1),
        shared_mem_bytes: 0,
    };
    let (first, second) = (1u64, 2u64);
    let launch_all = || {
        for _ in 0..tasks {
            let mut launch = stream.launch_builder(kernel.function());
            launch.arg(&first).arg(&second);
            // SAFETY: the kernel takes two u64 and touches no memory.
            unsafe { launch.launch(config) }.expect("launch");
        }
    };
    launch_all();
    stream.synchronize().expect("sync");
    report(
        "launch per task (one stream)",
        &repeat(runs, || {
            let start = Instant::now();
            launch_all();
            stream.synchronize().expect("sync");
            start.elapsed()
        }),
    );

    stream
        .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .expect("begin capture");
    launch_all();
    let graph = stream
        .end_capture(sys::CUgraphInstantiate_flags(0))
        .expect("end capture")
        .expect("a graph");
    graph.upload().expect("upload");
    graph.launch().expect("graph launch");
    stream.synchronize().expect("sync");
    report(
        "CUDA graph of the launches",
        &repeat(runs, || {
            let start = Instant::now();
            graph.launch().expect("graph launch");
            stream.synchronize().expect("sync");
            start.elapsed()
        }),
    );
}
