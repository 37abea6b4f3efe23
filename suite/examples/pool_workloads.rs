//! Two workloads on the task pool (issue 15) against ordinary launches, on
//! GPU 0: `cargo run --release --example pool_workloads [matrices] [reps]
//! [--no-spread] [--no-gates] [--no-publishing-warp] [--blocks=N]`
//! (`--no-spread`: every task runs whole on one block,
//! `PoolConfig::spread(false)`; by default a task of several CTAs spreads
//! over idle blocks; `--no-gates`: a dependent on other blocks waits for the
//! host, `PoolConfig::gates(false)`; `--no-publishing-warp`: thread 0
//! publishes each task, `PoolConfig::publishing_warp(false)`; `--blocks=N`:
//! N worker blocks, `PoolConfig::blocks`, instead of one per SM but one).
//!
//! `pool_overhead` measures empty tasks; this measures tasks that work, with
//! every output checked bit for bit against the CPU reference
//! (`clustered_suite::reference`: the same `f32` operations in the same
//! order, so any difference is a bug, not rounding):
//!
//! 1. Batched small SGEMM: `matrices` (10,000) independent 64x64 products,
//!    each its own A, B and C, as pool tasks of kind SGEMM64 (4 CTAs) pushed
//!    from 1 and from 4 producer threads, as one `sgemm64_launch` per matrix
//!    (grid 4) on one stream, and as one `sgemm64_batched` launch (grid
//!    4 * matrices). All three run the same device body.
//! 2. k-means with dependencies: 64K 2-D points, 16 clusters, 20 iterations.
//!    In the pool each iteration is one KMEANS_ASSIGN task per chunk of
//!    points (labels and partial sums) and one KMEANS_UPDATE task pushed
//!    `after` all of them; the next iteration's assigns are pushed after
//!    that update. The whole graph is pushed up front. Against it: per
//!    iteration one `kmeans_assign_launch` over all points and one
//!    `kmeans_update_launch`, on one stream. Chunks of 4096 points (16
//!    tasks of 16 CTAs per iteration) and of 256 (256 tasks of one CTA).
//!    Then, to see where an iteration's time goes (into scratch buffers,
//!    not checked): the same graph with empty tasks, with real assigns and
//!    an empty join, with empty assigns and the real update; the update
//!    alone, 20 in a chain on the pool; and each kernel alone as launches.
//!
//! Times are host wall clock, first push (or launch) to last pop (or stream
//! synchronisation); medians of `reps` (5) runs after one warm-up. Every
//! buffer is uploaded before the pool starts and read back after it shut
//! down (the pool's blocks hold the GPU while it runs), and the launch rows
//! run after the pool shut down, with the whole GPU to themselves.
//!
//! Without a GPU it prints "no GPU: skipped" and exits 0.

use std::sync::Arc;
use std::time::{Duration, Instant};

use clustered_suite::host::cudarc::driver::{
    CudaSlice, CudaStream, DevicePtr, LaunchConfig, PushKernelArg,
};
use clustered_suite::host::pool::{Outcome, PoolConfig, PoolError, Shutdown, Task, TaskPool};
use clustered_suite::host::{Gpu, Kernel, Module};
use clustered_suite::reference;
use kernels::pool::{
    KmeansAssign, KmeansUpdate, Sgemm64, EMPTY, KINDS, KMEANS_ASSIGN, KMEANS_SUB, KMEANS_UPDATE,
    SGEMM64, SGEMM64_CTAS,
};

/// Threads per block of the pool and of every launch.
const THREADS: u32 = 128;
/// Elements of one 64x64 matrix.
const TILE: usize = 64 * 64;
/// k-means sizes: points, clusters, iterations.
const POINTS: u32 = 64 * 1024;
const CLUSTERS: u32 = 16;
const ITERATIONS: u32 = 20;
/// Points per assignment task, each a multiple of [`KMEANS_SUB`].
const CHUNKS: [u32; 2] = [4096, 256];

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let spread = !args.iter().any(|a| a == "--no-spread");
    let gates = !args.iter().any(|a| a == "--no-gates");
    let publishing_warp = !args.iter().any(|a| a == "--no-publishing-warp");
    let blocks = match clustered_suite::measure::take_blocks_flag(&mut args) {
        Ok(blocks) => blocks,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    args.retain(|a| a != "--no-spread" && a != "--no-gates" && a != "--no-publishing-warp");
    let mut args = args.into_iter();
    let matrices: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(10_000);
    let reps: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(5).max(1);
    let Some((gpu, module)) = clustered_suite::gpu_or_skip().expect("the suite's PTX loads") else {
        return;
    };
    let props = gpu.properties();
    println!(
        "device: {} ({} SMs); medians of {reps} runs after a warm-up, {THREADS} threads per block",
        props.name, props.sm_count
    );

    let gemm = GemmData::new(&gpu, matrices);
    let kmeans = KmeansData::new(&gpu, reps);
    gpu.synchronize().expect("uploads finish");

    // The pool rows first, then the launches once the pool has gone.
    let mut config = PoolConfig::new(KINDS)
        .block_threads(THREADS)
        .spread(spread)
        .gates(gates)
        .publishing_warp(publishing_warp)
        .timeout(Duration::from_secs(60));
    if let Some(blocks) = blocks {
        config = config.blocks(blocks);
    }
    let kernel = module.kernel("pool_demo").expect("pool_demo is in the PTX");
    let pool = TaskPool::gpu(&gpu, &kernel, config).expect("the pool starts");
    println!(
        "pool: {} resident blocks, up to {} tasks in flight per block, tasks {}, {}, {}",
        pool.slots(),
        pool.depth(),
        if spread {
            "spread over idle blocks"
        } else {
            "whole on one block (--no-spread)"
        },
        if gates {
            "dependents gated on the GPU"
        } else {
            "dependents wait for the host (--no-gates)"
        },
        if pool.publishing_warp() {
            "a warp of each block publishes its tasks"
        } else {
            "thread 0 publishes each task"
        }
    );
    let gemm_pool: Vec<(u32, Duration)> = [1u32, 4]
        .iter()
        .map(|&producers| {
            let target = gemm.target(&gpu, if producers == 1 { 0 } else { 1 });
            let time = median(reps, || gemm_on_pool(&pool, &gemm, target, producers));
            (producers, time)
        })
        .collect();
    let kmeans_pool: Vec<(u32, Duration)> = CHUNKS
        .iter()
        .enumerate()
        .map(|(which, &chunk)| {
            let mut rep = 0;
            let time = median(reps, || {
                // Each run from the same initial centroids, in a buffer of
                // its own (the warm-up's is 0).
                let centroids = kmeans.centroids_at(&gpu, which, rep);
                rep += 1;
                kmeans_on_pool(&pool, &gpu, &kmeans, centroids, chunk)
            });
            (chunk, time)
        })
        .collect();
    // Where an iteration's time goes: the graph's shape with empty tasks
    // (dispatch and the waits for the host alone), and the update alone in
    // a chain (each rides behind the previous: no host between them).
    let shape_pool: Vec<(u32, [Duration; 3])> = CHUNKS
        .iter()
        .map(|&chunk| {
            let graphs = kmeans_parts(&gpu, &kmeans, chunk);
            let time = |(tasks, join): &(Vec<Task>, Task)| {
                median(reps, || graph_on_pool(&pool, tasks, *join))
            };
            (chunk, graphs.each_ref().map(time))
        })
        .collect();
    let scratch = address(&gpu, &kmeans.scratch);
    let updates_pool = median(reps, || updates_on_pool(&pool, &gpu, &kmeans, scratch));
    let rest = pool.shutdown(Shutdown::Drain).expect("the pool shuts down");
    assert!(rest.is_empty(), "every task was popped");

    let stream = gpu.stream().clone();
    let launch_one = median(reps, || {
        gemm_launch_per_matrix(&module, &stream, &gpu, &gemm)
    });
    let launch_batched = median(reps, || gemm_batched(&module, &stream, &gpu, &gemm));
    let mut rep = 0;
    let kmeans_launch = median(reps, || {
        let centroids = kmeans.centroids_at(&gpu, CHUNKS.len(), rep);
        rep += 1;
        kmeans_launches(&module, &stream, &gpu, &kmeans, centroids)
    });
    stream.synchronize().expect("sync");

    // Checks: every output against the CPU reference, bit for bit.
    gemm.check(&gpu);
    kmeans.check(&gpu, reps);
    println!("checked: every C, every run's centroids and the labels equal the CPU reference");

    println!();
    println!("batched SGEMM: {matrices} independent 64x64 products");
    let gemm_table = Table {
        per: "per matrix us",
        units: matrices,
        speedup: "speed-up vs 1/matrix",
        baseline: launch_one,
    };
    gemm_table.header();
    for (producers, time) in &gemm_pool {
        gemm_table.row(&format!("pool SGEMM64 tasks, {producers} producers"), *time);
    }
    gemm_table.row("launch per matrix (grid 4, one stream)", launch_one);
    gemm_table.row("one batched launch (grid 4 * matrices)", launch_batched);

    println!();
    println!("k-means: {POINTS} 2-D points, {CLUSTERS} clusters, {ITERATIONS} iterations");
    let kmeans_table = Table {
        per: "per iter us",
        units: ITERATIONS as usize,
        speedup: "speed-up vs launches",
        baseline: kmeans_launch,
    };
    kmeans_table.header();
    for (chunk, time) in &kmeans_pool {
        let tasks = POINTS.div_ceil(*chunk);
        kmeans_table.row(
            &format!("pool DAG, {tasks} assigns of {chunk} + 1 update"),
            *time,
        );
    }
    kmeans_table.row("launches (assign + update, one stream)", kmeans_launch);
    for (chunk, [empty, assigns, update]) in &shape_pool {
        let tasks = POINTS.div_ceil(*chunk);
        kmeans_table.row(
            &format!("same graph, empty tasks ({tasks} x {chunk})"),
            *empty,
        );
        kmeans_table.row("  assigns real, join empty", *assigns);
        kmeans_table.row("  assigns empty, update real", *update);
    }
    kmeans_table.row("pool: the update alone, 20 in a chain", updates_pool);
    let assign_kernel = module.kernel("kmeans_assign_launch").expect("in the PTX");
    let update_kernel = module.kernel("kmeans_update_launch").expect("in the PTX");
    let assign = kmeans.scratch_assign(&gpu, CHUNKS.len(), 0);
    let update = kmeans.update(&gpu, scratch);
    let assigns_alone = median(reps, || {
        timed_launches(&stream, || {
            launch_assign(&stream, &assign_kernel, &assign, update.subs)
        })
    });
    let updates_alone = median(reps, || {
        timed_launches(&stream, || launch_update(&stream, &update_kernel, &update))
    });
    kmeans_table.row("launches: the assign alone, 20 in a row", assigns_alone);
    kmeans_table.row("launches: the update alone, 20 in a row", updates_alone);
}

/// A table of timed rows: total, per unit of work, speed-up over a baseline.
struct Table {
    per: &'static str,
    units: usize,
    speedup: &'static str,
    baseline: Duration,
}

impl Table {
    fn header(&self) {
        println!(
            "{:<40} {:>10} {:>14} {:>21}",
            "row", "total ms", self.per, self.speedup
        );
    }

    fn row(&self, row: &str, time: Duration) {
        println!(
            "{row:<40} {:>10.3} {:>14.3} {:>20.2}x",
            time.as_secs_f64() * 1e3,
            time.as_secs_f64() * 1e6 / self.units as f64,
            self.baseline.as_secs_f64() / time.as_secs_f64()
        );
    }
}

/// Runs `run` once to warm up, then `reps` times; the median time.
fn median(reps: usize, mut run: impl FnMut() -> Duration) -> Duration {
    run();
    let mut times = clustered_suite::measure::repeat(reps, run);
    times.sort();
    times[reps / 2]
}

/// A device buffer's address, for a task's payload or a launch argument.
fn address<T>(gpu: &Gpu, buffer: &CudaSlice<T>) -> u64 {
    let (pointer, _sync) = buffer.device_ptr(gpu.stream());
    pointer
}

/// A small deterministic generator (the inputs need no quality, only
/// reproducibility): 32 bits of an LCG as an `f32` in `[0, 1)`.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 40) as u32) as f32 / (1u32 << 24) as f32
    }
}

/// The SGEMM inputs, their reference products, and one C per way of
/// computing them (so that no way can pass on another's results).
struct GemmData {
    matrices: usize,
    a: CudaSlice<f32>,
    b: CudaSlice<f32>,
    /// Pool with 1 producer, pool with 4, launch per matrix, batched.
    c: [CudaSlice<f32>; 4],
    expected: Vec<f32>,
}

impl GemmData {
    fn new(gpu: &Gpu, matrices: usize) -> GemmData {
        let mut random = Lcg(15);
        let a: Vec<f32> = (0..matrices * TILE).map(|_| random.next() - 0.5).collect();
        let b: Vec<f32> = (0..matrices * TILE).map(|_| random.next() - 0.5).collect();
        // The reference, on every core (2.6 GFLOP at 10,000 matrices).
        let mut expected = vec![0f32; matrices * TILE];
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let per = matrices.div_ceil(cores).max(1) * TILE;
        std::thread::scope(|scope| {
            for (m, out) in expected.chunks_mut(per).enumerate() {
                let (a, b) = (&a, &b);
                scope.spawn(move || {
                    for (i, c) in out.chunks_mut(TILE).enumerate() {
                        let at = (m * per / TILE + i) * TILE;
                        c.copy_from_slice(&reference::sgemm64(
                            &a[at..at + TILE],
                            &b[at..at + TILE],
                        ));
                    }
                });
            }
        });
        let zeros = || gpu.zeros::<f32>(matrices * TILE).expect("alloc C");
        GemmData {
            matrices,
            a: gpu.htod(&a).expect("upload A"),
            b: gpu.htod(&b).expect("upload B"),
            c: [zeros(), zeros(), zeros(), zeros()],
            expected,
        }
    }

    /// Addresses of A, B and output `which`.
    fn target(&self, gpu: &Gpu, which: usize) -> [u64; 3] {
        [
            address(gpu, &self.a),
            address(gpu, &self.b),
            address(gpu, &self.c[which]),
        ]
    }

    fn check(&self, gpu: &Gpu) {
        let ways = ["pool, 1 producer", "pool, 4 producers", "launch", "batched"];
        for (c, way) in self.c.iter().zip(ways) {
            let got = gpu.dtoh(c).expect("download C");
            if let Some(i) =
                (0..got.len()).find(|&i| got[i].to_bits() != self.expected[i].to_bits())
            {
                panic!(
                    "SGEMM {way}: matrix {} element {}: {} != reference {}",
                    i / TILE,
                    i % TILE,
                    got[i],
                    self.expected[i]
                );
            }
        }
    }
}

/// Every matrix as one SGEMM64 task, pushed by `producers` threads; returns
/// the time from the first push to the last pop.
fn gemm_on_pool(pool: &TaskPool, gemm: &GemmData, [a, b, c]: [u64; 3], producers: u32) -> Duration {
    let matrices = gemm.matrices as u32;
    let start = Instant::now();
    std::thread::scope(|scope| {
        for p in 0..producers {
            scope.spawn(move || {
                for m in (p..matrices).step_by(producers as usize) {
                    let offset = u64::from(m) * (TILE * 4) as u64;
                    let args = Sgemm64 {
                        a: a + offset,
                        b: b + offset,
                        c: c + offset,
                    };
                    pool.push(Task::new(SGEMM64, SGEMM64_CTAS, args))
                        .expect("push");
                }
            });
        }
        pop(pool, matrices as usize);
    });
    start.elapsed()
}

/// Pops `tasks` tasks, each of which must have run. The producers may not
/// have pushed yet: nothing unfinished then means "not yet", not "never".
fn pop(pool: &TaskPool, tasks: usize) {
    let mut popped = 0;
    while popped < tasks {
        match pool.pop_finished() {
            Ok(done) => {
                assert!(
                    matches!(done.outcome, Outcome::Ran { .. }),
                    "a task did not run: {done:?}"
                );
                popped += 1;
            }
            Err(PoolError::NothingUnfinished) => std::thread::yield_now(),
            Err(e) => panic!("a task finishes: {e}"),
        }
    }
}

/// A launch configuration of `blocks` blocks of [`THREADS`].
fn blocks(blocks: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}

fn gemm_launch_per_matrix(
    module: &Module,
    stream: &Arc<CudaStream>,
    gpu: &Gpu,
    gemm: &GemmData,
) -> Duration {
    let kernel = module.kernel("sgemm64_launch").expect("in the PTX");
    let [a, b, c] = gemm.target(gpu, 2);
    let start = Instant::now();
    for m in 0..gemm.matrices as u64 {
        let offset = m * (TILE * 4) as u64;
        let (a, b, c) = (a + offset, b + offset, c + offset);
        let mut launch = stream.launch_builder(kernel.function());
        launch.arg(&a).arg(&b).arg(&c);
        // SAFETY: three addresses of 64x64 matrices inside A, B and C.
        unsafe { launch.launch(blocks(SGEMM64_CTAS)) }.expect("launch");
    }
    stream.synchronize().expect("sync");
    start.elapsed()
}

fn gemm_batched(module: &Module, stream: &Arc<CudaStream>, gpu: &Gpu, gemm: &GemmData) -> Duration {
    let kernel = module.kernel("sgemm64_batched").expect("in the PTX");
    let [a, b, c] = gemm.target(gpu, 3);
    let count = gemm.matrices as u32;
    let start = Instant::now();
    let mut launch = stream.launch_builder(kernel.function());
    launch.arg(&a).arg(&b).arg(&c).arg(&count);
    // SAFETY: A, B and C hold `count` matrices each.
    unsafe { launch.launch(blocks(SGEMM64_CTAS * count)) }.expect("launch");
    stream.synchronize().expect("sync");
    start.elapsed()
}

/// The k-means inputs and outputs: points, labels, partials, and one
/// centroid buffer per run (each starts from the same initial centroids,
/// and none is written from the host while the pool runs).
struct KmeansData {
    points_host: Vec<f32>,
    initial: Vec<f32>,
    points: CudaSlice<f32>,
    /// One per way (each pool chunk size, the launches): the last run's.
    labels: Vec<CudaSlice<u32>>,
    partials: CudaSlice<f32>,
    /// Centroids and labels the timing-only rows write (not checked).
    scratch: CudaSlice<f32>,
    scratch_labels: CudaSlice<u32>,
    /// `[way][run]`, run 0 the warm-up.
    centroids: Vec<Vec<CudaSlice<f32>>>,
}

impl KmeansData {
    fn new(gpu: &Gpu, reps: usize) -> KmeansData {
        // Points around CLUSTERS centres on a 4x4 grid, spread so that
        // clusters touch and labels move between iterations.
        let mut random = Lcg(2024);
        let points_host: Vec<f32> = (0..POINTS)
            .flat_map(|_| {
                let centre = (random.next() * CLUSTERS as f32) as u32 % CLUSTERS;
                let (cx, cy) = ((centre % 4) as f32, (centre / 4) as f32);
                [cx + random.next() - 0.5, cy + random.next() - 0.5]
            })
            .collect();
        // The first CLUSTERS points as the initial centroids.
        let initial = points_host[..2 * CLUSTERS as usize].to_vec();
        let subs = POINTS.div_ceil(KMEANS_SUB) as usize;
        let ways = CHUNKS.len() + 1;
        KmeansData {
            points: gpu.htod(&points_host).expect("upload points"),
            labels: (0..ways)
                .map(|_| gpu.zeros::<u32>(POINTS as usize).expect("alloc labels"))
                .collect(),
            partials: gpu
                .zeros::<f32>(subs * 3 * CLUSTERS as usize)
                .expect("alloc partials"),
            scratch: gpu.htod(&initial).expect("upload centroids"),
            scratch_labels: gpu.zeros::<u32>(POINTS as usize).expect("alloc labels"),
            centroids: (0..ways)
                .map(|_| {
                    (0..=reps)
                        .map(|_| gpu.htod(&initial).expect("upload centroids"))
                        .collect()
                })
                .collect(),
            points_host,
            initial,
        }
    }

    /// The centroid buffer of `way`'s run `run`.
    fn centroids_at(&self, gpu: &Gpu, way: usize, run: usize) -> u64 {
        address(gpu, &self.centroids[way][run])
    }

    fn assign(&self, gpu: &Gpu, way: usize, centroids: u64, first: u32) -> KmeansAssign {
        KmeansAssign {
            points: address(gpu, &self.points),
            centroids,
            labels: address(gpu, &self.labels[way]),
            partials: address(gpu, &self.partials),
            first,
            n: POINTS,
            k: CLUSTERS,
        }
    }

    /// An assign into the scratch centroids and labels (the timing-only rows).
    fn scratch_assign(&self, gpu: &Gpu, way: usize, first: u32) -> KmeansAssign {
        KmeansAssign {
            labels: address(gpu, &self.scratch_labels),
            ..self.assign(gpu, way, address(gpu, &self.scratch), first)
        }
    }

    fn update(&self, gpu: &Gpu, centroids: u64) -> KmeansUpdate {
        KmeansUpdate {
            partials: address(gpu, &self.partials),
            centroids,
            subs: POINTS.div_ceil(KMEANS_SUB),
            k: CLUSTERS,
        }
    }

    fn check(&self, gpu: &Gpu, reps: usize) {
        let mut centroids = self.initial.clone();
        let mut labels = Vec::new();
        for _ in 0..ITERATIONS {
            labels = reference::kmeans_pool_iteration(&self.points_host, &mut centroids);
        }
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for way in 0..=CHUNKS.len() {
            let name = CHUNKS
                .get(way)
                .map_or("launches".to_string(), |c| format!("pool, chunks of {c}"));
            for run in 0..=reps {
                let got = gpu.dtoh(&self.centroids[way][run]).expect("download");
                assert_eq!(
                    bits(&got),
                    bits(&centroids),
                    "k-means {name}, run {run}: centroids {got:?} != reference {centroids:?}"
                );
            }
            let got = gpu.dtoh(&self.labels[way]).expect("download labels");
            assert!(
                got == labels,
                "k-means {name}: labels differ from the reference"
            );
        }
    }
}

/// The whole k-means graph pushed up front: per iteration one assign per
/// chunk, after the previous update, and one update after every assign.
fn kmeans_on_pool(
    pool: &TaskPool,
    gpu: &Gpu,
    kmeans: &KmeansData,
    centroids: u64,
    chunk: u32,
) -> Duration {
    let way = CHUNKS.iter().position(|&c| c == chunk).expect("a chunk");
    // The payloads first: the timed part is pushes and pops only.
    let assigns: Vec<Task> = (0..POINTS)
        .step_by(chunk as usize)
        .map(|first| {
            let ctas = chunk.min(POINTS - first).div_ceil(KMEANS_SUB);
            let args = kmeans.assign(gpu, way, centroids, first);
            Task::new(KMEANS_ASSIGN, ctas, args)
        })
        .collect();
    let update = Task::new(KMEANS_UPDATE, 1, kmeans.update(gpu, centroids));
    graph_on_pool(pool, &assigns, update)
}

/// ITERATIONS levels of `tasks`, each task after the previous level's
/// join, and `join` after every task of its level: the k-means graph's
/// shape, pushed up front; the time from the first push to the last pop.
fn graph_on_pool(pool: &TaskPool, tasks: &[Task], join: Task) -> Duration {
    let start = Instant::now();
    let mut after = Vec::new();
    for _ in 0..ITERATIONS {
        let level: Vec<_> = tasks
            .iter()
            .map(|&task| pool.push_after(task, &after).expect("push"))
            .collect();
        after = vec![pool.push_after(join, &level).expect("push join")];
    }
    pop(pool, ITERATIONS as usize * (tasks.len() + 1));
    start.elapsed()
}

/// The k-means graph's shape (per iteration one task per chunk of as many
/// CTAs as its assign, after the previous join, and a join after them),
/// each level's tasks real (into the scratch centroids) or empty, as
/// (tasks, join) for [`graph_on_pool`]: `[empty both, real assigns + empty
/// join, empty assigns + real update]`, the pool's dispatch and host waits
/// without the work, then with each half.
fn kmeans_parts(gpu: &Gpu, kmeans: &KmeansData, chunk: u32) -> [(Vec<Task>, Task); 3] {
    let way = CHUNKS.iter().position(|&c| c == chunk).expect("a chunk");
    let (empty, real): (Vec<Task>, Vec<Task>) = (0..POINTS)
        .step_by(chunk as usize)
        .map(|first| {
            let ctas = chunk.min(POINTS - first).div_ceil(KMEANS_SUB);
            (
                Task::new(EMPTY, ctas, first),
                Task::new(KMEANS_ASSIGN, ctas, kmeans.scratch_assign(gpu, way, first)),
            )
        })
        .unzip();
    let no_join = Task::new(EMPTY, 1, 0u32);
    let update = Task::new(
        KMEANS_UPDATE,
        1,
        kmeans.update(gpu, address(gpu, &kmeans.scratch)),
    );
    [(empty.clone(), no_join), (real, no_join), (empty, update)]
}

/// ITERATIONS k-means updates on the pool, each after the previous (they
/// ride in one ring), into the scratch centroids.
fn updates_on_pool(pool: &TaskPool, gpu: &Gpu, kmeans: &KmeansData, scratch: u64) -> Duration {
    let update = Task::new(KMEANS_UPDATE, 1, kmeans.update(gpu, scratch));
    let start = Instant::now();
    let mut after = Vec::new();
    for _ in 0..ITERATIONS {
        after = vec![pool.push_after(update, &after).expect("push update")];
    }
    pop(pool, ITERATIONS as usize);
    start.elapsed()
}

/// ITERATIONS calls of `launch` on `stream` (one launch each), timed to
/// the stream's end.
fn timed_launches(stream: &Arc<CudaStream>, mut launch: impl FnMut()) -> Duration {
    let start = Instant::now();
    for _ in 0..ITERATIONS {
        launch();
    }
    stream.synchronize().expect("sync");
    start.elapsed()
}

/// `kmeans_assign_launch` over every point on `stream`, `subs` blocks (one
/// partial each).
fn launch_assign(stream: &Arc<CudaStream>, kernel: &Kernel, assign: &KmeansAssign, subs: u32) {
    let mut launch = stream.launch_builder(kernel.function());
    launch
        .arg(&assign.points)
        .arg(&assign.centroids)
        .arg(&assign.labels)
        .arg(&assign.partials)
        .arg(&assign.n)
        .arg(&assign.k);
    // SAFETY: the buffers hold n points, k centroids, n labels and one
    // partial per block.
    unsafe { launch.launch(blocks(subs)) }.expect("launch assign");
}

/// `kmeans_update_launch` on `stream`, one block.
fn launch_update(stream: &Arc<CudaStream>, kernel: &Kernel, update: &KmeansUpdate) {
    let mut launch = stream.launch_builder(kernel.function());
    launch
        .arg(&update.partials)
        .arg(&update.centroids)
        .arg(&update.subs)
        .arg(&update.k);
    // SAFETY: `subs` partials of `k` clusters, `k` centroids.
    unsafe { launch.launch(blocks(1)) }.expect("launch update");
}

fn kmeans_launches(
    module: &Module,
    stream: &Arc<CudaStream>,
    gpu: &Gpu,
    kmeans: &KmeansData,
    centroids: u64,
) -> Duration {
    let assign_kernel = module.kernel("kmeans_assign_launch").expect("in the PTX");
    let update_kernel = module.kernel("kmeans_update_launch").expect("in the PTX");
    let assign = kmeans.assign(gpu, CHUNKS.len(), centroids, 0);
    let update = kmeans.update(gpu, centroids);
    let start = Instant::now();
    for _ in 0..ITERATIONS {
        launch_assign(stream, &assign_kernel, &assign, update.subs);
        // The stream orders it after the assignment.
        launch_update(stream, &update_kernel, &update);
    }
    stream.synchronize().expect("sync");
    start.elapsed()
}
