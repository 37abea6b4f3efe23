//! A task-pool kernel (CAGTP, issue 15): resident blocks serving mixed task
//! kinds pushed from the host (`clustered_host::pool::TaskPool`).

use clustered_device::atomic::{
    fetch_add_u32, load_acquire_system, load_relaxed_system, store_relaxed_system_u64,
    store_release_system,
};
use clustered_device::cta::Cta;
use clustered_device::math::fma;
use clustered_device::pool::{
    resident_block, serve, Payload, Slot, EXIT, FINISHED, PAYLOAD_OFFSET_WORDS, PAYLOAD_WORDS,
    READY,
};
use clustered_device::thread::{block_idx_x, grid_dim_x, nanosleep, sync_threads, thread_idx_x};
use clustered_device::{kernel, shared_array, task_pool};

/// `y[i] = a * x[i] + y[i]` over [`Saxpy`]'s range, one element per thread
/// of each of the task's CTAs.
pub const SAXPY: u32 = 0;
/// `C = A * B` for one 64x64 tile ([`Sgemm64`]): 4 CTAs of 16 rows each.
pub const SGEMM64: u32 = 1;
/// Nothing: the dispatch overhead alone. `result` is the payload's first
/// word.
pub const EMPTY: u32 = 2;
/// Counts its run in `runs[index]` ([`Mark`]) and returns `index`: the
/// exactly-once tests' task.
pub const MARK: u32 = 3;
/// Waits until `*flag != 0` ([`Wait`]): a task that does not finish until
/// the host lets it (the timeout tests).
pub const WAIT: u32 = 4;
/// One k-means assignment step over a chunk of 2-D points
/// ([`KmeansAssign`]): labels, and per CTA of [`KMEANS_SUB`] points the
/// partial sums and counts of each cluster. One CTA per `KMEANS_SUB` points.
pub const KMEANS_ASSIGN: u32 = 5;
/// The k-means update ([`KmeansUpdate`]): reduces every partial into new
/// centroids. One CTA.
pub const KMEANS_UPDATE: u32 = 6;
/// Records when it ran ([`Order`]): `order[index]` gets the next value of
/// `*counter`, and the result is the resident block's index (its ring):
/// the ring-order tests' task.
pub const ORDER: u32 = 7;
/// One step of a chain over a block-wide buffer ([`Step`]): thread `t`
/// reads `buf[(t + 1) % threads]`, meets the others at a barrier, and
/// writes that value + 1 into `buf[t]`; thread 0 also stores what it read
/// in `seen[index]`. Run in order after `index` earlier steps, every thread
/// reads `index` (written by another thread in the previous task); the
/// result is `(block << 32) | value read`. One CTA.
pub const STEP: u32 = 8;
/// Records which resident block ran each of its CTAs ([`Record`]): CTA
/// `v` counts its run in `runs[v]` and stores the block in `blocks[v]`;
/// returns `v` (so the task's result names its last CTA): the spread
/// tests' task.
pub const RECORD: u32 = 9;
/// Kinds `pool_demo` serves: `0..KINDS`.
pub const KINDS: u32 = 10;

/// CTAs of an [`SGEMM64`] task.
pub const SGEMM64_CTAS: u32 = 4;

/// Points per CTA of a k-means assignment, and so per partial: the
/// granularity of the partial sums is fixed by the data, not by the block
/// size or the task size, so that the pool, the launches and the CPU
/// reference sum in the same order (bitwise comparable results).
pub const KMEANS_SUB: u32 = 256;

/// [`SAXPY`]'s arguments (device addresses as `u64`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Saxpy {
    /// `*const f32`, `n` elements.
    pub x: u64,
    /// `*mut f32`, `n` elements.
    pub y: u64,
    /// The scale.
    pub a: f32,
    /// Elements.
    pub n: u32,
}
// SAFETY: repr(C) plain data, the same layout on both sides.
unsafe impl Payload for Saxpy {}

/// [`SGEMM64`]'s arguments: three 64x64 row-major matrices.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Sgemm64 {
    /// `*const f32`.
    pub a: u64,
    /// `*const f32`.
    pub b: u64,
    /// `*mut f32`.
    pub c: u64,
}
// SAFETY: as for `Saxpy`.
unsafe impl Payload for Sgemm64 {}

/// [`MARK`]'s arguments.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Mark {
    /// `*mut u32`: one counter per task.
    pub runs: u64,
    /// This task's counter.
    pub index: u32,
}
// SAFETY: as for `Saxpy`.
unsafe impl Payload for Mark {}

/// [`WAIT`]'s arguments.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Wait {
    /// `*const u32` in memory the host writes (mapped, or on the CPU
    /// backend, any host memory).
    pub flag: u64,
    /// `*mut u32` set to 1 when the task starts (0: none), so that a test
    /// knows the task holds its block.
    pub started: u64,
}
// SAFETY: as for `Saxpy`.
unsafe impl Payload for Wait {}

/// [`ORDER`]'s arguments.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Order {
    /// `*mut u32`: the run counter, shared by the tasks.
    pub counter: u64,
    /// `*mut u32`: one word per task.
    pub order: u64,
    /// This task's word of `order`.
    pub index: u32,
}
// SAFETY: as for `Saxpy`.
unsafe impl Payload for Order {}

/// [`STEP`]'s arguments.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Step {
    /// `*mut u32`: one word per thread of the pool's blocks.
    pub buf: u64,
    /// `*mut u32`: one word per step.
    pub seen: u64,
    /// This step's word of `seen`.
    pub index: u32,
}
// SAFETY: as for `Saxpy`.
unsafe impl Payload for Step {}

/// [`RECORD`]'s arguments.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Record {
    /// `*mut u32`: one counter per CTA of the task.
    pub runs: u64,
    /// `*mut u32`: one word per CTA of the task.
    pub blocks: u64,
}
// SAFETY: as for `Saxpy`.
unsafe impl Payload for Record {}

/// [`KMEANS_ASSIGN`]'s arguments. The task's CTA `b` covers points
/// `first + b * KMEANS_SUB ..` (at most `KMEANS_SUB`, none at or past `n`)
/// and writes partial `first / KMEANS_SUB + b`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct KmeansAssign {
    /// `*const f32`: `n` points as `(x, y)` pairs.
    pub points: u64,
    /// `*const f32`: `k` centroids as `(x, y)` pairs.
    pub centroids: u64,
    /// `*mut u32`: `n` labels.
    pub labels: u64,
    /// `*mut f32`: `(sum x, sum y, count)` per partial and cluster,
    /// `[partial][cluster][3]`.
    pub partials: u64,
    /// The task's first point: a multiple of [`KMEANS_SUB`].
    pub first: u32,
    /// Points in all.
    pub n: u32,
    /// Clusters.
    pub k: u32,
}
// SAFETY: as for `Saxpy`.
unsafe impl Payload for KmeansAssign {}

/// [`KMEANS_UPDATE`]'s arguments.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct KmeansUpdate {
    /// `*const f32`: `subs` partials as [`KmeansAssign::partials`].
    pub partials: u64,
    /// `*mut f32`: `k` centroids as `(x, y)` pairs.
    pub centroids: u64,
    /// Partials: `ceil(n / KMEANS_SUB)`.
    pub subs: u32,
    /// Clusters.
    pub k: u32,
}
// SAFETY: as for `Saxpy`.
unsafe impl Payload for KmeansUpdate {}

/// # Safety
/// `x` and `y` hold `n` elements.
#[inline(always)]
unsafe fn saxpy(args: Saxpy, cta: Cta) {
    let i = cta.index_1d();
    if i < args.n {
        let (x, y) = (args.x as *const f32, args.y as *mut f32);
        let i = i as usize;
        *y.add(i) = args.a * *x.add(i) + *y.add(i);
    }
}

/// # Safety
/// `a`, `b` and `c` hold 64x64 elements each.
#[inline(always)]
unsafe fn sgemm64(args: Sgemm64, cta: Cta) {
    let (a, b, c) = (
        args.a as *const f32,
        args.b as *const f32,
        args.c as *mut f32,
    );
    let rows = 64 / SGEMM64_CTAS;
    let mut o = thread_idx_x();
    while o < rows * 64 {
        let (row, col) = (cta.block_idx_x() * rows + o / 64, o % 64);
        let mut sum = 0.0f32;
        for k in 0..64 {
            sum += *a.add((row * 64 + k) as usize) * *b.add((k * 64 + col) as usize);
        }
        *c.add((row * 64 + col) as usize) = sum;
        o += cta.block_dim_x();
    }
}

/// The index of the centroid nearest to the point `(x, y)`: squared
/// distance as `fma(dy, dy, fma(dx, dx, 0))` (the suite's `kmeans_assign`
/// order for two features), the first of equal minima, starting from
/// `f32::MAX` and 0.
///
/// # Safety
/// `centroids` holds `k` centroids.
#[inline(always)]
unsafe fn nearest(x: f32, y: f32, centroids: *const f32, k: u32) -> u32 {
    let mut best = 0u32;
    let mut best_distance = f32::MAX;
    for c in 0..k {
        let dx = x - *centroids.add(2 * c as usize);
        let dy = y - *centroids.add(2 * c as usize + 1);
        let distance = fma(dy, dy, fma(dx, dx, 0.0));
        if distance < best_distance {
            best_distance = distance;
            best = c;
        }
    }
    best
}

/// One CTA of a k-means assignment: labels its points (one per thread,
/// strided), then, after a barrier, one thread per cluster sums that
/// cluster's points in point order into the CTA's partial. Sequential sums
/// over a fixed [`KMEANS_SUB`] points keep the order independent of block
/// size and schedule.
///
/// Every thread of the block must call it (it has a barrier).
///
/// # Safety
/// The arguments are valid as [`KmeansAssign`] documents; the CTA's partial
/// exists.
#[inline(always)]
unsafe fn kmeans_assign(args: KmeansAssign, cta: Cta) {
    let points = args.points as *const f32;
    let labels = args.labels as *mut u32;
    let sub = args.first / KMEANS_SUB + cta.block_idx_x();
    let start = sub * KMEANS_SUB;
    let end = if args.n - start.min(args.n) < KMEANS_SUB {
        args.n
    } else {
        start + KMEANS_SUB
    };
    // The CTA's labels and points, kept for the sums below: they read them
    // from shared memory, where a walk over global memory was one thread's
    // chain of 256 dependent loads (the launch baseline 26.0 -> 20.6-21.8 us
    // per k-means iteration with this, H200: docs/BENCHMARKS.md).
    let near = shared_array!(kmeans_labels: [u32; KMEANS_SUB as usize]);
    let xy = shared_array!(kmeans_points: [f32; 2 * KMEANS_SUB as usize]);
    let mut i = start + thread_idx_x();
    while i < end {
        let (x, y) = (*points.add(2 * i as usize), *points.add(2 * i as usize + 1));
        let label = nearest(x, y, args.centroids as *const f32, args.k);
        *labels.add(i as usize) = label;
        near.write(i - start, label);
        xy.write(2 * (i - start), x);
        xy.write(2 * (i - start) + 1, y);
        i += cta.block_dim_x();
    }
    // The labels and points of the CTA's other threads are read below.
    cta.sync_threads();
    let partial = (args.partials as *mut f32).add(3 * (sub * args.k) as usize);
    let mut c = thread_idx_x();
    while c < args.k {
        let (mut sum_x, mut sum_y, mut count) = (0.0f32, 0.0f32, 0.0f32);
        for p in 0..end - start {
            // Every point's coordinates are read, the cluster's or not, and
            // added as 0.0 where not (which leaves a sum as it was: it is
            // never -0.0). No compare guards these loads, so ptxas issued
            // the unrolled loop's loads ahead of its adds, in the pool as in
            // the launch, in each of three builds. Guarded by the compare,
            // they got one schedule in one build of the pool kernel and,
            // from the same PTX, one with a load in flight at a time in
            // another: this loop took 6.1 us a CTA instead of 3.0, and 4.8
            // unguarded (H100, docs/BENCHMARKS.md, "The k-means assign's
            // loads, unguarded").
            let (x, y) = (xy.read(2 * p), xy.read(2 * p + 1));
            let mine = near.read(p) == c;
            sum_x += if mine { x } else { 0.0 };
            sum_y += if mine { y } else { 0.0 };
            count += if mine { 1.0 } else { 0.0 };
        }
        *partial.add(3 * c as usize) = sum_x;
        *partial.add(3 * c as usize + 1) = sum_y;
        *partial.add(3 * c as usize + 2) = count;
        c += cta.block_dim_x();
    }
}

/// The k-means update: one thread per cluster sums its partials in partial
/// order and divides; a cluster without points keeps its centroid.
///
/// # Safety
/// The arguments are valid as [`KmeansUpdate`] documents.
#[inline(always)]
unsafe fn kmeans_update(args: KmeansUpdate, cta: Cta) {
    let (partials, centroids) = (args.partials as *const f32, args.centroids as *mut f32);
    let mut c = thread_idx_x();
    while c < args.k {
        let (mut sum_x, mut sum_y, mut count) = (0.0f32, 0.0f32, 0.0f32);
        for s in 0..args.subs {
            let partial = partials.add(3 * (s * args.k + c) as usize);
            sum_x += *partial;
            sum_y += *partial.add(1);
            count += *partial.add(2);
        }
        if count > 0.0 {
            *centroids.add(2 * c as usize) = sum_x / count;
            *centroids.add(2 * c as usize + 1) = sum_y / count;
        }
        c += cta.block_dim_x();
    }
}

/// The CTA of an ordinary launch's block: the launch bodies below run the
/// pool's bodies with the hardware's block index.
#[inline(always)]
fn launch_cta() -> Cta {
    Cta::new([block_idx_x(), 0, 0], [grid_dim_x(), 1, 1])
}

/// # Safety
/// `runs` holds more than `index` counters.
#[inline(always)]
unsafe fn mark(args: Mark) -> u64 {
    if thread_idx_x() == 0 {
        fetch_add_u32((args.runs as *mut u32).add(args.index as usize), 1);
    }
    args.index as u64
}

/// # Safety
/// `flag` is a valid `u32`, and `started` one or 0.
#[inline(always)]
unsafe fn wait(args: Wait) -> u64 {
    if thread_idx_x() == 0 {
        if args.started != 0 {
            store_release_system(args.started as *mut u32, 1);
        }
        while load_acquire_system(args.flag as *const u32) == 0 {
            nanosleep(1024);
        }
    }
    1
}

/// # Safety
/// `counter` is a valid `u32`, `order` holds more than `index` words.
#[inline(always)]
unsafe fn order(args: Order) -> u64 {
    if thread_idx_x() == 0 {
        let at = fetch_add_u32(args.counter as *mut u32, 1);
        *(args.order as *mut u32).add(args.index as usize) = at;
    }
    resident_block() as u64
}

/// # Safety
/// `runs` and `blocks` hold a word per CTA of the task.
#[inline(always)]
unsafe fn record(args: Record, cta: Cta) -> u64 {
    let v = cta.block_idx_x();
    if thread_idx_x() == 0 {
        fetch_add_u32((args.runs as *mut u32).add(v as usize), 1);
        *(args.blocks as *mut u32).add(v as usize) = resident_block();
    }
    v as u64
}

/// Every thread of the block calls it (it has a barrier).
///
/// # Safety
/// `buf` holds a word per thread of the task, `seen` more than `index`.
#[inline(always)]
unsafe fn step(args: Step, cta: Cta) -> u64 {
    let (buf, t) = (args.buf as *mut u32, thread_idx_x());
    let value = *buf.add(((t + 1) % cta.block_dim_x()) as usize);
    // Every read above before any write below.
    cta.sync_threads();
    *buf.add(t as usize) = value + 1;
    if t == 0 {
        *(args.seen as *mut u32).add(args.index as usize) = value;
    }
    ((resident_block() as u64) << 32) | value as u64
}

/// The demo pool: every resident block but the last serves its ring of
/// `slots` with the kinds above (1-D blocks); the last publishes.
///
/// # Safety
/// `slots` holds one ring of `RING_ENTRIES` slots per block of the grid but
/// the last, and the pool's header after them, served by a `TaskPool`; each
/// task's arguments are valid for its kind.
#[kernel]
pub unsafe fn pool_demo(slots: *mut Slot) {
    serve(slots, KINDS, |task, cta| match task.kind() {
        SAXPY => {
            saxpy(task.args(), cta);
            0
        }
        SGEMM64 => {
            sgemm64(task.args(), cta);
            0
        }
        KMEANS_ASSIGN => {
            kmeans_assign(task.args(), cta);
            0
        }
        KMEANS_UPDATE => {
            kmeans_update(task.args(), cta);
            0
        }
        MARK => mark(task.args()),
        WAIT => wait(task.args()),
        ORDER => order(task.args()),
        STEP => step(task.args(), cta),
        RECORD => record(task.args(), cta),
        _ => task.payload()[0] as u64,
    });
}

/// A pool whose every task is empty, whatever its kind: the worker's loop
/// with no body beside it (`pool_demo` holds nine, 96 registers and about
/// 1900 SASS instructions), for `pool_overhead`'s rows that ask what a
/// task costs the loop alone, as a CUDA graph of [`empty_launch`] does.
/// A task's result is its payload's first word, so the worker reads one
/// payload word where `pool_demo`'s reads all 16 for its bodies: on an
/// H200 most of what a chained task costs less here (docs/BENCHMARKS.md,
/// "A pool of empty tasks alone").
///
/// # Safety
/// As [`pool_demo`](fn@pool_demo).
#[kernel]
pub unsafe fn pool_empty(slots: *mut Slot) {
    serve(slots, KINDS, |task, _| task.payload()[0] as u64);
}

/// Does nothing with 16 bytes of arguments: the launch-per-task baseline
/// of the pool's overhead benchmark (`suite/examples/pool_overhead.rs`).
///
/// # Safety
/// None needed; `unsafe` as every kernel.
#[kernel]
pub unsafe fn empty_launch(_first: u64, _second: u64) {}

/// The other device side issue 15 asks to compare: one **shared queue**
/// with claims instead of a ring per block. `queue` holds `capacity` slots
/// in mapped host memory that the host fills in task order (task `t` in
/// slot `t % capacity`, its number in `first` (this protocol has no
/// shares: a task runs whole on the block that claims it), then READY with a
/// release store); each block's thread 0 claims the next task number with
/// an atomic add on `counter` (device memory), waits until its slot is
/// READY with that number (or EXIT), the block copies the payload, runs it
/// (an empty task: the result is the task number), and thread 0 publishes
/// FINISHED with a release store. No task is bound to a block, so no
/// dependent can ride behind another: a chain waits for the host at every
/// step. `suite/examples/pool_claim_queue.rs` measures it beside the rings.
///
/// # Safety
/// `queue` holds `capacity` slots served by that protocol, `counter` one
/// zeroed word in device memory.
#[kernel]
pub unsafe fn claim_queue_demo(queue: *mut Slot, capacity: u32, counter: *mut u32) {
    let mailbox = clustered_device::shared_array!(claim_mailbox: [u32; 4 + PAYLOAD_WORDS]);
    let leader = thread_idx_x() == 0;
    loop {
        if leader {
            let t = fetch_add_u32(counter, 1);
            let slot = queue.add((t % capacity) as usize);
            let state = core::ptr::addr_of_mut!((*slot).state);
            let number = core::ptr::addr_of!((*slot).first);
            let mut backoff = 32;
            let seen = loop {
                let seen = load_acquire_system(state);
                // The number is written before the release of READY, so
                // after the acquire it names this publication's task.
                if (seen == READY || seen == EXIT) && load_relaxed_system(number) == t {
                    break seen;
                }
                nanosleep(backoff);
                backoff = (backoff * 2).min(1024);
            };
            mailbox.write(0, seen);
            mailbox.write(1, t);
        }
        sync_threads();
        let (seen, t) = (mailbox.read(0), mailbox.read(1));
        if seen == EXIT {
            return;
        }
        // The block copies kind, ctas and the payload, as `serve` does
        // (one round trip, a word per thread).
        let slot = queue.add((t % capacity) as usize);
        let me = thread_idx_x();
        if me < 2 + PAYLOAD_WORDS as u32 {
            let word = if me < 2 {
                1 + me
            } else {
                PAYLOAD_OFFSET_WORDS as u32 + me - 2
            };
            let value = load_relaxed_system(slot.cast::<u32>().add(word as usize));
            mailbox.write(2 + me, value);
        }
        sync_threads();
        if leader {
            // An empty task: its result is its payload's first word.
            let result = mailbox.read(4) as u64;
            store_relaxed_system_u64(core::ptr::addr_of_mut!((*slot).result), result);
            store_release_system(core::ptr::addr_of_mut!((*slot).state), FINISHED);
        }
        // Everyone read the mailbox before thread 0 claims again.
        sync_threads();
    }
}

/// One 64x64 `C = A * B` per launch, grid [`SGEMM64_CTAS`] blocks: the
/// launch-per-matrix baseline of `suite/examples/pool_workloads.rs`, the
/// same body (and so the same arithmetic) as an [`SGEMM64`] task.
///
/// # Safety
/// `a`, `b` and `c` hold 64x64 elements each.
#[kernel]
pub unsafe fn sgemm64_launch(a: *const f32, b: *const f32, c: *mut f32) {
    let args = Sgemm64 {
        a: a as u64,
        b: b as u64,
        c: c as u64,
    };
    sgemm64(args, launch_cta());
}

/// `count` independent 64x64 products in one launch, grid
/// `SGEMM64_CTAS * count` blocks: block `b` is CTA `b % 4` of matrix
/// `b / 4` (matrix `m` at offset `m * 4096` of `a`, `b` and `c`). The
/// batched baseline of `suite/examples/pool_workloads.rs`, the
/// [`SGEMM64`] body again.
///
/// # Safety
/// `a`, `b` and `c` hold `count` 64x64 matrices each.
#[kernel]
pub unsafe fn sgemm64_batched(a: *const f32, b: *const f32, c: *mut f32, count: u32) {
    let matrix = block_idx_x() / SGEMM64_CTAS;
    if matrix < count {
        let offset = matrix as usize * 64 * 64;
        let args = Sgemm64 {
            a: a.add(offset) as u64,
            b: b.add(offset) as u64,
            c: c.add(offset) as u64,
        };
        let cta = Cta::new([block_idx_x() % SGEMM64_CTAS, 0, 0], [SGEMM64_CTAS, 1, 1]);
        sgemm64(args, cta);
    }
}

/// A k-means assignment over all `n` points in one launch, grid
/// `ceil(n / KMEANS_SUB)` blocks: the [`KMEANS_ASSIGN`] body with block `b`
/// as CTA `b` of a task starting at point 0.
///
/// # Safety
/// As [`KmeansAssign`] documents, with `ceil(n / KMEANS_SUB)` partials.
#[kernel]
pub unsafe fn kmeans_assign_launch(
    points: *const f32,
    centroids: *const f32,
    labels: *mut u32,
    partials: *mut f32,
    n: u32,
    k: u32,
) {
    let args = KmeansAssign {
        points: points as u64,
        centroids: centroids as u64,
        labels: labels as u64,
        partials: partials as u64,
        first: 0,
        n,
        k,
    };
    kmeans_assign(args, launch_cta());
}

/// The k-means update in one launch of one block: the [`KMEANS_UPDATE`]
/// body.
///
/// # Safety
/// As [`KmeansUpdate`] documents.
#[kernel]
pub unsafe fn kmeans_update_launch(partials: *const f32, centroids: *mut f32, subs: u32, k: u32) {
    let args = KmeansUpdate {
        partials: partials as u64,
        centroids: centroids as u64,
        subs,
        k,
    };
    kmeans_update(args, launch_cta());
}

task_pool! {
    /// The demo pool written by `task_pool!` from ordinary kernels: kind 0
    /// runs [`vector_add`](fn@crate::vector::vector_add) (a `#[clustered]`
    /// kernel, one element per thread of each CTA), kind 1
    /// [`ragged_sum`](fn@crate::early_exit::ragged_sum) (early `return`s
    /// before six barriers over shared memory), kind 2
    /// [`accumulate`](fn@crate::vector::accumulate) (`c[i] += a[i]`: a task
    /// run twice would show). Push tasks with
    /// `pool_generated::task(ctas, vector_add_args { .. })`.
    pub unsafe fn pool_generated = [
        crate::vector::vector_add,
        crate::early_exit::ragged_sum,
        crate::vector::accumulate,
    ];
}

/// `output[i] = input[i + 1]` within each block-sized chunk, the last
/// element of a chunk taking its first (a rotation by one), through a
/// shared tile: each CTA reads its block's size (`block_dim_x()`,
/// `index_1d()`) and waits at one barrier. Zero past `n`. At most
/// [`ROTATE_MAX_THREADS`] threads a block.
///
/// # Safety
/// `input` and `output` hold `n` elements.
#[kernel]
pub unsafe fn rotate_in_blocks(input: *const u32, output: *mut u32, n: u32) {
    let tile = shared_array!(rotate_tile: [u32; ROTATE_MAX_THREADS as usize]);
    let (t, width, i) = (
        thread_idx_x(),
        clustered_device::thread::block_dim_x(),
        clustered_device::thread::index_1d(),
    );
    tile.write(t, if i < n { *input.add(i as usize) } else { 0 });
    // Every thread's element before any neighbour's is read.
    sync_threads();
    if i < n {
        *output.add(i as usize) = tile.read((t + 1) % width);
    }
}

/// The most threads a block of [`rotate_in_blocks`](fn@rotate_in_blocks) has.
pub const ROTATE_MAX_THREADS: u32 = 1024;

task_pool! {
    /// A pool of a task that waits at a barrier and reads its block's size
    /// ([`rotate_in_blocks`](fn@rotate_in_blocks)): `task_pool!` rewrites
    /// both to the task's CTA, so the build marks it for a publishing warp
    /// (`clustered_abi::pool`, "A publishing warp"), and the CPU backend
    /// runs the same rewritten body.
    pub unsafe fn pool_barriers = [rotate_in_blocks];
}

task_pool! {
    /// A pool whose one kind, [`polynomial`](fn@crate::vector::polynomial),
    /// reads a constant table ([`COEFFICIENTS`](crate::vector::COEFFICIENTS)):
    /// the tables written before the pool starts are what its tasks read.
    pub unsafe fn pool_tables = [crate::vector::polynomial];
}
