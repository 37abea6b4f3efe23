//! The suite's kernels on the CPU backend: every schedule runs every original
//! CTA exactly once, whatever the dispatcher, starved SMs or sparse SM ids;
//! and every schedule computes what the baseline computes, bit for bit.

use clustered_device::abi::Tail;
use clustered_device::mapping::Indexing;
use clustered_device::schedule::{factoring_claim, tail_start};
use clustered_suite::host::cpu::{launch_entry, CpuLaunchError, Host};
use clustered_suite::host::cpu::{
    run, AccessKind, CpuError, CpuLaunch, Dispatch, LaneAccess, Machine, NoObserver, Observer,
};
use clustered_suite::host::{
    ActivePolicy, Binding, ClusterError, ClusterOptions, Entry, KernelFn, RasterGroup,
};
use kernels::coverage::*;

/// A kernel of two `*mut u32` buffers, like `coverage` and `announced`.
trait TwoBuffers: for<'a> KernelFn<Args<'a, Host> = (&'a mut [u32], &'a mut [u32])> {}
impl<K: for<'a> KernelFn<Args<'a, Host> = (&'a mut [u32], &'a mut [u32])>> TwoBuffers for K {}

/// The schedules of `coverage`, as its registry lists them.
fn coverage_schedules() -> &'static [Entry<coverage>] {
    coverage::SCHEDULES
}

/// What one run of a two-buffer schedule (`coverage`, `announced`) left.
#[derive(Debug)]
struct Ran {
    /// The first buffer: runs per CTA.
    runs: Vec<u32>,
    /// The second: %smid per CTA for `coverage`, announcements for `announced`.
    second: Vec<u32>,
    /// Blocks launched, MAX and ACTIVE agents per SM and scheduler ticks.
    blocks: u32,
    max: u32,
    active: u32,
    ticks: u64,
}

/// Runs `kernel` for the original launch `original` on `machine`, its second
/// buffer filled with `second` first.
fn run_schedule<K: TwoBuffers>(
    machine: &Machine,
    entry: Entry<K>,
    original: CpuLaunch,
    options: &ClusterOptions,
    observer: &mut dyn Observer,
    second: u32,
) -> Result<Ran, String> {
    let n = original.grid.iter().product::<u32>() as usize;
    let (mut runs, mut second) = (vec![0u32; n], vec![second; n]);
    // SAFETY: the kernels index both buffers by the CTA's id, below n.
    let ran = unsafe {
        launch_entry(
            entry,
            machine,
            original,
            options,
            observer,
            (&mut runs, &mut second),
        )
    }
    .map_err(|e| e.to_string())?;
    Ok(Ran {
        runs,
        second,
        blocks: ran.launch.grid[0],
        max: ran.max_agents_per_sm,
        active: ran.active_agents,
        ticks: ran.stats.ticks,
    })
}

/// A launch of `grid` in blocks of `threads`, `resident` of them per SM.
fn launch(grid: [u32; 3], threads: u32, resident: u32) -> CpuLaunch {
    CpuLaunch {
        grid,
        block: [threads, 1, 1],
        dynamic_shared_bytes: 0,
        resident_blocks: resident,
    }
}

/// Runs one schedule of `coverage`; returns (runs per CTA, %smid per CTA).
fn run_coverage(
    machine: &Machine,
    entry: Entry<coverage>,
    grid: [u32; 3],
    options: &ClusterOptions,
) -> Result<(Vec<u32>, Vec<u32>), String> {
    let original = launch(grid, 64, 4);
    let ran = run_schedule(machine, entry, original, options, &mut NoObserver, u32::MAX)?;
    Ok((ran.runs, ran.second))
}

fn assert_exactly_once(runs: &[u32], case: &str) {
    for (v, &count) in runs.iter().enumerate() {
        assert_eq!(count, 1, "{case}: CTA {v} ran {count} times");
    }
}

#[test]
fn every_schedule_runs_every_cta_once_under_every_dispatcher() {
    let machines = [
        ("round-robin", Machine::new(4)),
        (
            "observed",
            Machine::new(6).with_dispatch(Dispatch::ObservedHopper),
        ),
        ("random", Machine::new(5).with_dispatch(Dispatch::Random(7))),
        ("one SM", Machine::new(1)),
    ];
    for (machine_name, machine) in &machines {
        for grid in [[1, 1, 1], [7, 1, 1], [5, 3, 1], [4, 3, 2], [40, 1, 1]] {
            for &entry in coverage_schedules() {
                let case = format!("{} on {machine_name}, grid {grid:?}", entry.name());
                let (runs, sms) = run_coverage(machine, entry, grid, &ClusterOptions::default())
                    .unwrap_or_else(|e| panic!("{case}: {e}"));
                assert_exactly_once(&runs, &case);
                assert!(
                    sms.iter().all(|&sm| machine.sm_ids.contains(&sm)),
                    "{case}: {sms:?}"
                );
            }
        }
    }
}

/// `ClusterOptions::block_cluster` changes how many agents a persistent
/// schedule launches (whole clusters) and is refused where the grid is not
/// whole clusters; every schedule it accepts still runs each CTA once,
/// with the engine interleaving threads at random.
#[test]
fn every_schedule_in_block_clusters_runs_every_cta_once() {
    let machine = Machine::new(5).interleave(11);
    for width in [1, 2, 3, 4, 8] {
        let options = ClusterOptions {
            block_cluster: Some(width),
            ..ClusterOptions::default()
        };
        for grid in [[8, 3, 1], [12, 1, 1], [7, 2, 1]] {
            for &entry in coverage_schedules() {
                let case = format!("{} in clusters of {width}, grid {grid:?}", entry.name());
                let persistent = entry
                    .contract()
                    .and_then(|c| Binding::from_u32(c.binding))
                    .is_some_and(|b| b.is_persistent());
                match run_coverage(&machine, entry, grid, &options) {
                    Ok((runs, _)) => assert_exactly_once(&runs, &case),
                    // Only a grid that is not whole clusters may be refused.
                    Err(e) => assert!(
                        !persistent && !grid[0].is_multiple_of(width) && e.contains("cannot tile"),
                        "{case}: {e}"
                    ),
                }
            }
        }
    }
}

/// `ClusterOptions::raster_group` sets the band of the raster schedules at
/// launch (any band, dividing the grid or not, or one from the occupancy)
/// and is refused, naming the indexing, by every other schedule; what it
/// accepts runs each CTA once, with the engine interleaving threads.
#[test]
fn every_raster_band_runs_every_cta_once() {
    let machine = Machine::new(5).interleave(5);
    let groups = [
        RasterGroup::Ctas(1),
        RasterGroup::Ctas(3),
        RasterGroup::Ctas(16),
        RasterGroup::FromOccupancy,
    ];
    let mut rasters = 0;
    for group in groups {
        let options = ClusterOptions {
            raster_group: Some(group),
            ..ClusterOptions::default()
        };
        for grid in [[8, 3, 1], [5, 7, 1], [4, 3, 2]] {
            for &entry in coverage_schedules() {
                let case = format!("{} with band {group:?}, grid {grid:?}", entry.name());
                let raster = matches!(
                    entry.contract().and_then(|c| c.indexing()),
                    Some(
                        Indexing::Tile { width: 1, .. }
                            | Indexing::Sawtooth { width: 1, .. }
                            | Indexing::ColumnTile { height: 1, .. }
                    )
                );
                match run_coverage(&machine, entry, grid, &options) {
                    Ok((runs, _)) => {
                        assert!(raster, "{case}: ran");
                        assert_exactly_once(&runs, &case);
                        rasters += 1;
                    }
                    Err(e) => assert!(!raster && e.contains("raster_group"), "{case}: {e}"),
                }
            }
        }
    }
    assert_eq!(rasters, 3 * 3 * groups.len(), "three raster schedules");
}

#[test]
fn agents_bind_clusters_to_sms_when_every_sm_has_agents() {
    // 4 SMs, 8 clusters of 4 tasks: with every SM's agents present, each
    // SM runs its own cluster first; stealing only evens out the end.
    let machine = Machine::new(4);
    let (runs, sms) = run_coverage(
        &machine,
        coverage::coverage_agents_chunked,
        [64, 1, 1],
        &ClusterOptions::default(),
    )
    .unwrap();
    assert_exactly_once(&runs, "agents");
    // Partition of 64 tasks into 4 clusters: cluster c = tasks 16c..16c+16.
    for cluster in 0..4 {
        let home = &sms[cluster * 16..cluster * 16 + 5];
        assert!(
            home.iter().all(|&sm| sm == cluster as u32),
            "cluster {cluster}: {home:?}"
        );
    }
}

#[test]
fn starved_and_sparse_sms_lose_no_cta() {
    let starved_forever = Machine::new(4).starve(1, u64::MAX).starve(3, u64::MAX);
    let starved_late = Machine::new(4).starve(0, 50);
    let sparse = Machine::new(4).with_sm_ids(vec![0, 5, 9, 200]);
    let cases = [
        (
            "two SMs never free",
            starved_forever,
            ClusterOptions::default(),
        ),
        ("one SM late", starved_late, ClusterOptions::default()),
        ("sparse SM ids", sparse, ClusterOptions::default()),
        (
            "fewer agents than SMs",
            Machine::new(4),
            ClusterOptions {
                total_agents: Some(3),
                ..Default::default()
            },
        ),
        (
            "one active agent per SM",
            Machine::new(3),
            ClusterOptions {
                active: ActivePolicy::Fixed(1),
                ..Default::default()
            },
        ),
    ];
    for (case, machine, options) in &cases {
        for &entry in coverage_schedules() {
            if entry.binding() == Some(Binding::Stride)
                && options.active != ActivePolicy::FromKernel
            {
                continue; // refused: a_grid_stride_loop_refuses_to_be_throttled
            }
            let case = format!("{}, {case}", entry.name());
            let (runs, _) = run_coverage(machine, entry, [37, 1, 1], options)
                .unwrap_or_else(|e| panic!("{case}: {e}"));
            assert_exactly_once(&runs, &case);
        }
    }
}

#[test]
fn throttled_agents_leave_extra_agents_idle() {
    // `coverage_agents_throttled` has `active = 1`: one of the 4 agents per SM
    // works and the others exit at once, so the same tasks take several times
    // the scheduler ticks that all 4 agents need.
    let machine = Machine::new(2);
    let ticks = |active: ActivePolicy| {
        let options = ClusterOptions {
            active,
            ..Default::default()
        };
        let schedule = coverage::coverage_agents_throttled;
        let original = launch([40, 1, 1], 64, 4);
        let ran = run_schedule(&machine, schedule, original, &options, &mut NoObserver, 0).unwrap();
        assert_exactly_once(&ran.runs, &format!("{active:?}"));
        (ran.active, ran.ticks)
    };
    let (one, throttled) = ticks(ActivePolicy::FromKernel);
    let (all, unthrottled) = ticks(ActivePolicy::All);
    assert_eq!((one, all), (1, 4));
    assert!(
        throttled >= 2 * unthrottled,
        "1 active agent per SM took {throttled} ticks, 4 took {unthrottled}"
    );
}

/// Counts what the observer sees.
#[derive(Default)]
struct Counter {
    instructions: Vec<(AccessKind, usize)>,
    tasks: Vec<(u32, u32)>,
}

impl Observer for Counter {
    fn task_started(&mut self, sm: u32, task: u32) {
        self.tasks.push((sm, task));
    }
    fn warp_access(&mut self, _sm: u32, _task: u32, kind: AccessKind, lanes: &[LaneAccess]) {
        self.instructions.push((kind, lanes.len()));
    }
}

#[test]
fn global_accesses_reach_the_observer_as_warp_instructions() {
    use kernels::vector::vector_add;
    let n = 1000u32;
    let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..n).map(|i| (2 * i) as f32).collect();
    let mut c = vec![0f32; n as usize];
    let machine = Machine::new(2);
    let launch = CpuLaunch {
        grid: [8, 1, 1],
        block: [128, 1, 1],
        dynamic_shared_bytes: 0,
        resident_blocks: 4,
    };
    let mut counter = Counter::default();
    let options = ClusterOptions::default();
    // SAFETY: the kernel guards i < n, and each buffer holds n floats.
    let stats = unsafe {
        launch_entry(
            vector_add::KERNEL,
            &machine,
            launch,
            &options,
            &mut counter,
            (&a, &b, &mut c, n),
        )
    }
    .unwrap()
    .stats;
    assert!(c.iter().enumerate().all(|(i, &x)| x == 3.0 * i as f32));
    assert_eq!(stats.blocks, 8, "every hardware CTA ran");
    // 32 warps; the last has 1000 - 31*32 = 8 active lanes, then 24 idle
    // threads (in a 32-thread warp of block 7's fourth warp) do nothing.
    let full = counter
        .instructions
        .iter()
        .filter(|(_, lanes)| *lanes == 32)
        .count();
    let loads = counter
        .instructions
        .iter()
        .filter(|(k, _)| *k == AccessKind::Load)
        .count();
    let stores = counter
        .instructions
        .iter()
        .filter(|(k, _)| *k == AccessKind::Store)
        .count();
    assert_eq!((loads, stores), (2 * 32, 32), "{:?}", counter.instructions);
    assert_eq!(full, 3 * 31);
    assert_eq!(counter.tasks.len(), 0, "a plain kernel announces no tasks");

    // The agents read a and b with ld.global.cg, and announce every task.
    c.fill(0.0);
    let mut counter = Counter::default();
    // SAFETY: as above.
    unsafe {
        launch_entry(
            vector_add::vector_add_agents,
            &machine,
            launch,
            &options,
            &mut counter,
            (&a, &b, &mut c, n),
        )
    }
    .unwrap();
    assert!(c.iter().enumerate().all(|(i, &x)| x == 3.0 * i as f32));
    let bypass = counter
        .instructions
        .iter()
        .filter(|(k, _)| *k == AccessKind::LoadBypassL1)
        .count();
    let sizes: Vec<usize> = counter
        .instructions
        .iter()
        .filter(|(k, _)| *k == AccessKind::LoadBypassL1)
        .map(|(_, l)| *l)
        .collect();
    assert_eq!(bypass, 2 * 32, "{sizes:?}");
    let mut tasks: Vec<u32> = counter.tasks.iter().map(|&(_, t)| t).collect();
    tasks.sort_unstable();
    assert_eq!(tasks, (0..8).collect::<Vec<_>>());
}

#[test]
fn a_panicking_thread_is_a_typed_error() {
    let launch = CpuLaunch {
        grid: [2, 1, 1],
        block: [64, 1, 1],
        dynamic_shared_bytes: 0,
        resident_blocks: 2,
    };
    let error = run(&Machine::new(2), &launch, &mut NoObserver, &|| {
        if clustered_device::thread::thread_idx_x() == 33
            && clustered_device::thread::block_idx_x() == 1
        {
            clustered_device::thread::trap();
        }
    })
    .unwrap_err();
    match error {
        CpuError::Panicked { at, message } => {
            assert_eq!((at.block, at.thread), ([1, 0, 0], [33, 0, 0]));
            assert!(message.contains("trapped"), "{message}");
        }
        other => panic!("expected a panic error, got {other}"),
    }
    let empty = CpuLaunch {
        grid: [0, 1, 1],
        ..launch
    };
    assert!(matches!(
        run(&Machine::new(1), &empty, &mut NoObserver, &|| {}),
        Err(CpuError::BadLaunch(_))
    ));
}

#[test]
fn a_thread_that_overflows_its_stack_is_stopped() {
    /// Recurses until the stack is `depth` bytes below `top`, then waits at
    /// a barrier.
    #[inline(never)]
    fn deep(top: usize, depth: usize) {
        let frame = std::hint::black_box([0u8; 256]);
        let here = frame.as_ptr() as usize;
        if top - here < depth {
            deep(top, depth);
        } else {
            clustered_device::thread::sync_threads();
        }
        std::hint::black_box(frame);
    }
    let kernel = || {
        let top = std::hint::black_box(0u8);
        deep(&top as *const u8 as usize, 48 * 1024);
    };
    let launch = CpuLaunch {
        grid: [2, 1, 1],
        block: [64, 1, 1],
        dynamic_shared_bytes: 0,
        resident_blocks: 2,
    };
    // 48 KiB deep does not fit in 16 KiB of stack.
    let small = Machine::new(1).with_stack_bytes(16 * 1024);
    let error = run(&small, &launch, &mut NoObserver, &kernel).unwrap_err();
    match &error {
        CpuError::StackOverflow { at, stack_bytes } => {
            assert_eq!(
                (at.block, at.thread, *stack_bytes),
                ([0, 0, 0], [0, 0, 0], 16 * 1024)
            );
            assert!(error.to_string().contains("with_stack_bytes"), "{error}");
        }
        other => panic!("expected a stack overflow, got {other}"),
    }
    // It fits in the default 64 KiB, also on this host thread right after
    // an overflow (whose slab went back to the pool).
    run(&Machine::new(1), &launch, &mut NoObserver, &kernel).unwrap();
    let again = run(&small, &launch, &mut NoObserver, &kernel).unwrap_err();
    assert!(matches!(again, CpuError::StackOverflow { .. }), "{again}");
}

/// A local array much larger than the stack: before guard pages, its frame
/// reached below the thread's stack into other memory (heap corruption).
#[test]
fn a_large_local_array_is_a_stack_overflow_not_corruption() {
    #[inline(never)]
    fn big_frame(output: *mut u32) {
        let mut local = std::hint::black_box([0u32; 256 * 1024]); // 1 MiB
        let i = clustered_device::thread::thread_idx_x() as usize;
        local[i] = i as u32;
        let local = std::hint::black_box(local);
        unsafe { clustered_device::memory::store(output.add(i), local[i]) };
    }
    let launch = CpuLaunch {
        grid: [1, 1, 1],
        block: [4, 1, 1],
        dynamic_shared_bytes: 0,
        resident_blocks: 1,
    };
    let mut output = vec![7u32; 4];
    let out = output.as_mut_ptr() as usize;
    let kernel = move || big_frame(out as *mut u32);
    let error = run(&Machine::new(1), &launch, &mut NoObserver, &kernel).unwrap_err();
    assert!(matches!(error, CpuError::StackOverflow { .. }), "{error}");
    // The fix the error names: a larger stack (unoptimised builds copy the
    // array a few times).
    let roomy = Machine::new(1).with_stack_bytes(8 * 1024 * 1024);
    run(&roomy, &launch, &mut NoObserver, &kernel).unwrap();
    assert_eq!(output, [0, 1, 2, 3]);
}

#[test]
fn tasks_sharing_memory_stay_separate_in_persistent_loops() {
    use kernels::vector::*;
    // 10 tasks of 64 threads on 2 SMs: agents and grid-stride CTAs run
    // several tasks each, reusing the same dynamic shared memory (the reorder
    // and redirect schedules one each, beside the mapped index's slot).
    let (n, block) = (640u32, 64u32);
    let input: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut expected = vec![0.0; n as usize];
    clustered_suite::reference::reverse_in_blocks(&input, &mut expected, block as usize);
    let machine = Machine::new(2);
    let original = CpuLaunch {
        grid: [n / block, 1, 1],
        block: [block, 1, 1],
        dynamic_shared_bytes: block * 4,
        resident_blocks: 2,
    };
    for &entry in reverse_in_blocks::SCHEDULES {
        let name = entry.name();
        let mut output = vec![0f32; n as usize];
        // SAFETY: the kernel guards i < n; both buffers hold n floats.
        let ran = unsafe {
            launch_entry(
                entry,
                &machine,
                original,
                &ClusterOptions::default(),
                &mut NoObserver,
                (&input, &mut output, n),
            )
        }
        .unwrap();
        let tasks = original.grid[0];
        if entry.contract().and_then(|c| c.tail()) == Some(Tail::Blocks) {
            // The looping blocks (those resident at once), then a block a
            // task of the tail.
            let looping = machine.sm_ids.len() as u32 * original.resident_blocks;
            assert_eq!(
                ran.launch.grid[0],
                looping + tasks - tail_start(tasks, looping),
                "{name}: the looping blocks and the tail's"
            );
        } else if entry.binding().is_some_and(|b| b.is_persistent()) {
            assert!(ran.launch.grid[0] < tasks, "{name}: fewer CTAs than tasks");
        }
        assert_eq!(output, expected, "{name}");
    }
}

#[test]
fn unroll_runs_every_step_once_in_every_schedule() {
    use kernels::vector::*;
    // 40 rows on 5 CTAs of 8 threads; lengths with no remainder, a
    // remainder only, and both, each row's sum in order (the same bits).
    let (rows, block) = (40u32, 8u32);
    let original = launch([rows / block, 1, 1], block, 2);
    let machines = [
        Machine::new(2),
        Machine::new(3).interleave(5),
        Machine::new(5)
            .with_dispatch(Dispatch::Random(9))
            .interleave(11),
    ];
    for len in [0u32, 3, 4, 13] {
        let input: Vec<f32> = (0..rows * len)
            .map(|i| (i % 7) as f32 * 0.25 + 1.0)
            .collect();
        let expected: Vec<f32> = (0..rows as usize)
            .map(|r| {
                let row = &input[r * len as usize..(r + 1) * len as usize];
                row.iter().fold(0.0f32, |sum, &x| sum + x)
            })
            .collect();
        for entry in std::iter::once(row_sums::KERNEL).chain(row_sums::SCHEDULES.iter().copied()) {
            for machine in &machines {
                let mut sums = vec![f32::NAN; rows as usize];
                // SAFETY: `rows * len` inputs and `rows` sums; the kernel guards i < rows.
                unsafe {
                    launch_entry(
                        entry,
                        machine,
                        original,
                        &ClusterOptions::default(),
                        &mut NoObserver,
                        (&input[..], &mut sums[..], rows, len),
                    )
                }
                .unwrap();
                assert_eq!(sums, expected, "{} with len {len}", entry.name());
            }
        }
    }
}

#[test]
fn a_grid_stride_loop_refuses_to_be_throttled() {
    let launch = CpuLaunch {
        grid: [20, 1, 1],
        block: [64, 1, 1],
        dynamic_shared_bytes: 0,
        resident_blocks: 4,
    };
    let options = ClusterOptions {
        active: ActivePolicy::Fixed(1),
        ..Default::default()
    };
    let error = run_schedule(
        &Machine::new(2),
        coverage::coverage_stride,
        launch,
        &options,
        &mut NoObserver,
        0,
    )
    .unwrap_err();
    assert!(error.contains("binding = stride"), "{error}");
    // The claiming bindings take the same policy.
    run_schedule(
        &Machine::new(2),
        coverage::coverage_persistent,
        launch,
        &options,
        &mut NoObserver,
        0,
    )
    .unwrap();
}

/// Which tasks a schedule announced to its prefetch hook, per grid, on two
/// machines: the hook must see the CTA that runs next in the same block.
#[test]
fn prefetch_hooks_see_each_blocks_next_task() {
    for machine in [
        Machine::new(3),
        Machine::new(2).with_dispatch(Dispatch::Random(3)),
    ] {
        for grid in [[1, 1, 1], [7, 1, 1], [5, 3, 1], [4, 3, 2], [40, 3, 1]] {
            for &entry in announced::SCHEDULES {
                let name = entry.name();
                let case = format!("{name}, grid {grid:?}, {} SMs", machine.sm_ids.len());
                let ran = run_schedule(
                    &machine,
                    entry,
                    launch(grid, 32, 2),
                    &ClusterOptions::default(),
                    &mut NoObserver,
                    0,
                )
                .unwrap_or_else(|e| panic!("{case}: {e}"));
                let (runs, announced, blocks) = (&ran.runs, &ran.second, ran.blocks);
                assert_exactly_once(runs, &case);
                let [gx, gy, _] = grid;
                for (v, &count) in announced.iter().enumerate() {
                    let v = v as u32;
                    let (x, y, z) = (v % gx, v / gx % gy, v / (gx * gy));
                    let expected = match name {
                        // Column-major order; block b runs b, b + A, ...
                        "announced_stride" => ((z * gx + x) * gy + y >= blocks) as u32,
                        // The same, announced two tasks ahead.
                        "announced_stride2" => ((z * gx + x) * gy + y >= 2 * blocks) as u32,
                        // The same for the first half of the rounds, each
                        // task but the first `d` rounds'; then the claims
                        // of the tail, every task but a claim's first `d`
                        // (`d`: the prefetch distance, 1 or 2).
                        "announced_stride_tail" | "announced_stride2_tail" => {
                            let d = if name == "announced_stride2_tail" {
                                2
                            } else {
                                1
                            };
                            let p = (z * gx + x) * gy + y;
                            let total = gx * gy * grid[2];
                            let strided_end = tail_start(total, blocks);
                            if p < strided_end {
                                (p >= d * blocks) as u32
                            } else {
                                let q = p - strided_end;
                                let (first, _) = (0..)
                                    .map_while(|t| factoring_claim(t, total - strided_end, blocks))
                                    .find(|&(first, count)| (first..first + count).contains(&q))
                                    .expect("the claims tile the tail");
                                (q - first >= d) as u32
                            }
                        }
                        // The first half of the rounds by stride, each task
                        // but the first `d` rounds'; the tail's blocks run
                        // one task each, with no next task to announce.
                        "announced_stride_tail_blocks" | "announced_stride2_tail_blocks" => {
                            let d = if name == "announced_stride2_tail_blocks" {
                                2
                            } else {
                                1
                            };
                            let p = (z * gx + x) * gy + y;
                            let total = gx * gy * grid[2];
                            let looping = (ran.max * machine.sm_ids.len() as u32).min(total);
                            (p < tail_start(total, looping) && p >= d * looping) as u32
                        }
                        // Row-major claims from one queue, of 3 tasks (the
                        // chunk) or fewer where 3 per working agent would
                        // leave agents idle: every task but a claim's first
                        // is announced.
                        _ => {
                            let working = ran.active * machine.sm_ids.len() as u32;
                            let claim = (gx * gy * grid[2]).div_ceil(working).clamp(1, 3);
                            !v.is_multiple_of(claim) as u32
                        }
                    };
                    assert_eq!(count, expected, "{case}: CTA {v} announced {count} times");
                }
            }
        }
    }
}

/// Why `entry` cannot launch over a 1-D grid of `tasks` CTAs of 64 threads
/// (4 a SM, two SMs): a grid refused when planned, before any buffer is
/// touched (so the buffers are empty).
fn refused(entry: Entry<coverage>, tasks: u32) -> CpuLaunchError {
    let original = CpuLaunch {
        grid: [tasks, 1, 1],
        block: [64, 1, 1],
        dynamic_shared_bytes: 0,
        resident_blocks: 4,
    };
    // SAFETY: the callers' grids are refused when planned, so no kernel
    // runs over the empty buffers.
    unsafe {
        launch_entry(
            entry,
            &Machine::new(2),
            original,
            &ClusterOptions::default(),
            &mut NoObserver,
            (&mut [], &mut []),
        )
    }
    .expect_err("refused when planned")
}

/// `waves = 3` launches three blocks per resident slot, never more blocks
/// than tasks; one wave is the default.
#[test]
fn a_grid_stride_loop_launches_its_waves() {
    let machine = Machine::new(2);
    let blocks = |entry: Entry<coverage>, tasks: u32| {
        let original = CpuLaunch {
            grid: [tasks, 1, 1],
            block: [64, 1, 1],
            dynamic_shared_bytes: 0,
            resident_blocks: 4,
        };
        run_schedule(
            &machine,
            entry,
            original,
            &ClusterOptions::default(),
            &mut NoObserver,
            0,
        )
        .unwrap()
        .blocks
    };
    assert_eq!(blocks(coverage::coverage_stride, 100), 2 * 4);
    assert_eq!(blocks(coverage::coverage_stride_waves, 100), 3 * 2 * 4);
    assert_eq!(blocks(coverage::coverage_stride_waves, 20), 20);
    // The last step, v + blocks, must not pass id 2^32 - 1: refused when
    // planned, before any buffer is touched.
    let error = refused(coverage::coverage_stride, u32::MAX - 3);
    assert!(
        matches!(
            error,
            CpuLaunchError::Plan(ClusterError::StrideTooLong { .. })
        ),
        "{error}"
    );
    assert!(
        error.to_string().contains("past CTA id 2^32 - 1"),
        "{error}"
    );
}

/// `tail = blocks` launches the looping blocks (a wave or `waves` of
/// them), then a block per task of the tail: half of the rounds loop.
#[test]
fn a_tail_of_blocks_is_launched_after_the_looping_blocks() {
    let machine = Machine::new(2);
    let original = |tasks: u32| CpuLaunch {
        grid: [tasks, 1, 1],
        block: [64, 1, 1],
        dynamic_shared_bytes: 0,
        resident_blocks: 4,
    };
    let plan = |entry: Entry<coverage>, tasks: u32| {
        // SAFETY: no kernel runs for a launch that fails to plan, and the
        // ones that run index both buffers by CTA id, below `tasks`.
        let (mut runs, mut sms) = (vec![0u32; tasks as usize], vec![0u32; tasks as usize]);
        unsafe {
            launch_entry(
                entry,
                &machine,
                original(tasks),
                &ClusterOptions::default(),
                &mut NoObserver,
                (&mut runs, &mut sms),
            )
        }
        .map(|ran| (ran.launch.grid[0], runs))
    };
    // 8 looping blocks over 100 tasks: 6 rounds, 3 of them looped (the
    // first 48 tasks), then 52 blocks of one task.
    let (blocks, runs) = plan(coverage::coverage_stride_tail_blocks, 100).unwrap();
    assert_eq!(blocks, 8 + 100 - 48);
    assert!(runs.iter().all(|&r| r == 1), "{runs:?}");
    // Three waves: 24 looping blocks, 4 rounds, 2 looped (48 tasks).
    let (blocks, _) = plan(coverage::coverage_stride_tail_blocks_waves, 100).unwrap();
    assert_eq!(blocks, 24 + 100 - 48);
    // Fewer tasks than two rounds: every task is a block of its own, and
    // no block loops over nothing.
    let (blocks, runs) = plan(coverage::coverage_stride_tail_blocks, 12).unwrap();
    assert_eq!(blocks, 12);
    assert!(runs.iter().all(|&r| r == 1), "{runs:?}");
    // A tail past the largest grid along x is refused when planned, with
    // the fix, before any buffer is touched.
    let error = refused(coverage::coverage_stride_tail_blocks, u32::MAX - 8);
    assert!(
        matches!(
            error,
            CpuLaunchError::Plan(ClusterError::TailTooLong { .. })
        ),
        "{error}"
    );
    assert!(error.to_string().contains("use `tail = claims`"), "{error}");
}

/// The observer hears of each original CTA once, by its row-major id, on
/// the SM that ran it, whatever the schedule's indexing (the SVG maps and
/// the cross-CTA reuse count rely on it).
#[test]
fn observers_hear_each_task_by_its_row_major_id() {
    let machine = Machine::new(3).with_dispatch(Dispatch::Random(5));
    let grid = [5, 4, 2];
    for &entry in coverage_schedules() {
        let name = entry.name();
        let mut heard = Counter::default();
        let ran = run_schedule(
            &machine,
            entry,
            launch(grid, 32, 2),
            &ClusterOptions::default(),
            &mut heard,
            u32::MAX,
        )
        .unwrap();
        let (runs, sms) = (ran.runs, ran.second);
        let n = runs.len();
        assert_exactly_once(&runs, name);
        let mut on_sm = vec![None; n];
        for &(sm, task) in &heard.tasks {
            assert!(
                on_sm[task as usize].replace(sm).is_none(),
                "{name}: task {task} heard twice"
            );
        }
        for (v, sm) in on_sm.iter().enumerate() {
            // The kernel records %smid under the row-major id it computes.
            let sm = sm.unwrap_or_else(|| panic!("{name}: task {v} never heard"));
            assert_eq!(machine.sm_ids[sm as usize], sms[v], "{name}: task {v}");
        }
    }
}

/// The typed handle's registry: every schedule by its own name, and an
/// unknown name is an error that lists them.
#[test]
fn schedules_are_looked_up_by_name() {
    use kernels::vector::vector_add;
    let names: Vec<&str> = vector_add::SCHEDULES.iter().map(|e| e.name()).collect();
    assert!(names.contains(&"vector_add_agents"), "{names:?}");
    let agents = vector_add::schedule("vector_add_agents").unwrap();
    assert_eq!(agents.contract(), vector_add::vector_add_agents.contract());
    assert_eq!(vector_add::KERNEL.contract(), None);
    let error = vector_add::schedule("vector_add_agent").unwrap_err();
    assert_eq!(error.available, names);
    assert!(
        error.to_string().contains("vector_add_stride_prefetch2"),
        "{error}"
    );
}

/// A kernel that trusts its scalar `n` with buffers shorter than `n`:
/// before, the run wrote past the host slice; now the first access outside
/// the buffers stops it with a typed error naming the buffer, and a write
/// into a `*const` buffer would too.
#[test]
fn an_access_outside_the_buffers_is_a_typed_error() {
    use kernels::vector::vector_add;
    let (a, b) = (vec![1f32; 64], vec![2f32; 64]);
    let mut c = vec![0f32; 32];
    let launch = CpuLaunch {
        grid: [1, 1, 1],
        block: [64, 1, 1],
        dynamic_shared_bytes: 0,
        resident_blocks: 1,
    };
    for entry in [vector_add::KERNEL, vector_add::vector_add_agents] {
        // SAFETY: the accesses the run does not check are none here: the
        // body's loads and stores are all traced.
        let error = unsafe {
            launch_entry(
                entry,
                &Machine::new(1),
                launch,
                &ClusterOptions::default(),
                &mut NoObserver,
                (&a, &b, &mut c, 64),
            )
        }
        .unwrap_err();
        match &error {
            CpuLaunchError::Run(CpuError::OutOfBounds { fault, thread, .. }) => {
                assert_eq!(fault.kind, AccessKind::Store, "{error}");
                assert_eq!(fault.nearest, Some(("c", 0)), "{error}");
                assert_eq!(thread[0], 32, "{error}");
            }
            other => panic!("{}: expected OutOfBounds, got {other}", entry.name()),
        }
        assert!(
            c.iter().all(|&x| x == 3.0),
            "{}: c[..32] was computed",
            entry.name()
        );
        c.fill(0.0);
    }
}

/// Extreme counts are typed errors, not panics, hangs or huge allocations.
#[test]
fn extreme_counts_are_typed_errors() {
    let original = launch([40, 1, 1], 32, 4);
    let refused = |machine: Machine, original: CpuLaunch, options: ClusterOptions| {
        let entry = coverage::coverage_agents;
        run_schedule(&machine, entry, original, &options, &mut NoObserver, 0).unwrap_err()
    };
    let error = refused(
        Machine::new(4),
        original,
        ClusterOptions {
            clusters: Some(u32::MAX),
            ..Default::default()
        },
    );
    assert!(error.contains("clusters requested"), "{error}");
    for total in [0, u32::MAX] {
        let error = refused(
            Machine::new(4),
            original,
            ClusterOptions {
                total_agents: Some(total),
                ..Default::default()
            },
        );
        assert!(error.contains("total_agents"), "{error}");
    }
    // MAX agents per SM from an absurd occupancy: refused as the kernel's
    // launch is, before it is planned or launched.
    let error = refused(
        Machine::new(2),
        CpuLaunch {
            resident_blocks: u32::MAX,
            ..original
        },
        ClusterOptions::default(),
    );
    assert!(error.contains("resident_blocks is 4294967295"), "{error}");
    let error = refused(
        Machine::new(1),
        CpuLaunch {
            resident_blocks: u32::MAX,
            ..original
        },
        ClusterOptions::default(),
    );
    assert!(error.contains("resident_blocks"), "{error}");
    let error = refused(
        Machine::new(2).with_sm_ids(vec![0, u32::MAX]),
        original,
        ClusterOptions::default(),
    );
    assert!(error.contains("SM ids"), "{error}");
    let mut no_burst = Machine::new(2);
    no_burst.warp_burst = 0;
    let error = refused(no_burst, original, ClusterOptions::default());
    assert!(error.contains("warp_burst"), "{error}");
}

/// What a CPU-backend launch of a small grid costs (run by hand:
/// `cargo test --release --test cpu_backend cpu_launch_cost -- --ignored --nocapture`).
#[test]
#[ignore]
fn cpu_launch_cost() {
    use kernels::vector::vector_add;
    let n = 1024u32;
    let (a, b) = (vec![1f32; n as usize], vec![2f32; n as usize]);
    let mut c = vec![0f32; n as usize];
    let machine = Machine::new(4);
    let original = launch([4, 1, 1], 256, 8);
    for entry in [vector_add::KERNEL, vector_add::vector_add_agents] {
        let runs = 50;
        let start = std::time::Instant::now();
        for _ in 0..runs {
            // SAFETY: the kernel guards i < n; the buffers hold n floats.
            unsafe {
                launch_entry(
                    entry,
                    &machine,
                    original,
                    &ClusterOptions::default(),
                    &mut NoObserver,
                    (&a, &b, &mut c, n),
                )
            }
            .unwrap();
        }
        let each = start.elapsed() / runs;
        println!("{}: {each:?} per launch of 4 x 256 threads", entry.name());
    }
}

#[test]
fn generated_names_never_capture_the_users() {
    use kernels::names::*;
    let original = launch([7, 5, 1], 32, 2);
    let threads = 7 * 5 * 32;
    let machine = Machine::new(3);
    // Distinct argument values: a swapped or captured parameter shows.
    let args = [2u32, 3, 5, 7, 11, 13, 17];
    let mut expected = vec![0u32; threads];
    let out = expected.as_mut_ptr();
    run(&machine, &original, &mut NoObserver, &|| unsafe {
        let [a, b, c, d, e, f, g] = args;
        generated_names(out, a, b, c, d, e, f, g)
    })
    .unwrap();
    assert!(
        expected.iter().all(|&x| x != 0),
        "the baseline wrote every element"
    );
    for entry in generated_names::SCHEDULES {
        let name = entry.name();
        let mut output = vec![0u32; threads];
        let [a, b, c, d, e, f, g] = args;
        // SAFETY: the kernel writes one word per thread of the launch.
        unsafe {
            launch_entry(
                *entry,
                &machine,
                original,
                &ClusterOptions::default(),
                &mut NoObserver,
                (&mut output[..], a, b, c, d, e, f, g),
            )
        }
        .unwrap();
        assert_eq!(output, expected, "{name}");
    }
}

/// Names a `for` loop, a closure, a `match` arm, an `if let` and a `while
/// let` bind are locals, not the pointer parameter of the same name: the
/// baseline and every schedule of `pointer_patterns` run on the CPU backend
/// (whose checked loads refuse a read outside the kernel's buffers) and
/// compute `2 input[i] + 6 i + 4`.
#[test]
fn names_bound_by_patterns_shadow_pointer_parameters() {
    use kernels::names::pointer_patterns;
    let n = 200u32;
    let input: Vec<u32> = (0..n).map(|i| i * 7 + 1).collect();
    let expected: Vec<u32> = (0..n).map(|i| 2 * input[i as usize] + 6 * i + 4).collect();
    // Round-robin, random dispatch, and the lanes interleaved at random.
    let machines = [
        Machine::new(3),
        Machine::new(2).with_dispatch(Dispatch::Random(3)),
        Machine::new(2).interleave(11),
    ];
    for machine in &machines {
        for entry in std::iter::once(pointer_patterns::KERNEL)
            .chain(pointer_patterns::SCHEDULES.iter().copied())
        {
            let mut out = vec![0u32; n as usize];
            // SAFETY: the kernel reads input[..n] and writes out[..n].
            unsafe {
                launch_entry(
                    entry,
                    machine,
                    launch([n.div_ceil(64), 1, 1], 64, 2),
                    &ClusterOptions::default(),
                    &mut NoObserver,
                    (&input[..], &mut out[..], n),
                )
            }
            .unwrap_or_else(|e| panic!("{}: {e}", entry.name()));
            assert_eq!(out, expected, "{}", entry.name());
        }
    }
}

/// A foreign entry (another build's PTX under this kernel's signature) has
/// no code on the CPU backend: refused by name, never run as the Rust kernel.
#[test]
fn foreign_entries_are_refused_on_the_cpu_backend() {
    let machine = Machine::new(2);
    let twin = coverage::KERNEL.foreign("coverage_twin");
    assert!(twin.is_foreign() && !coverage::KERNEL.is_foreign());
    assert_eq!(twin.name(), "coverage_twin");
    let (mut runs, mut sms) = (vec![0u32; 4], vec![0u32; 4]);
    // SAFETY: refused before it runs; the buffers hold a CTA each anyway.
    let refused = unsafe {
        launch_entry(
            twin,
            &machine,
            launch([4, 1, 1], 32, 1),
            &ClusterOptions::default(),
            &mut NoObserver,
            (&mut runs, &mut sms),
        )
    };
    assert_eq!(
        refused.unwrap_err(),
        CpuLaunchError::Foreign("coverage_twin")
    );
    assert_eq!(
        runs, [0; 4],
        "the Rust kernel must not have run in its place"
    );
}

/// Runs `entry` of ATAX's column pass over 4 rows of 1024 ones with `tmp`
/// all twos (each column's `y` is 8.0 once it ran); returns how the launch
/// went and `y`.
fn atax_columns_run(
    entry: Entry<kernels::atax::atax_columns>,
    machine: &Machine,
    original: CpuLaunch,
) -> (Result<(), CpuLaunchError>, Vec<f32>) {
    let (nx, ny) = (4u32, 1024u32);
    let a = vec![1.0f32; (nx * ny) as usize];
    let tmp = vec![2.0f32; nx as usize];
    let mut y = vec![0.0f32; ny as usize];
    // SAFETY: `a` holds nx x ny floats, `tmp` nx, `y` ny; the kernel reads
    // and writes no more for a grid that covers at most ny columns.
    let ran = unsafe {
        launch_entry(
            entry,
            machine,
            original,
            &ClusterOptions::default(),
            &mut NoObserver,
            (&a[..], &tmp[..], &mut y[..], nx, ny),
        )
    };
    (ran.map(|_| ()), y)
}

/// A machine or a launch that `run` refuses is refused with the same error
/// for the kernel and every schedule: a persistent schedule is not planned
/// from it first (0 resident blocks gave "0 agents per SM requested, but
/// only 0 fit", 0 SMs "zero clusters").
#[test]
fn a_bad_machine_or_launch_gets_the_kernels_error_under_every_schedule() {
    use kernels::atax::atax_columns;
    let cases = [
        (
            Machine::new(2),
            launch([1, 1, 1], 64, 0),
            "resident_blocks is 0",
        ),
        (Machine::new(0), launch([1, 1, 1], 64, 2), "0 SM ids"),
    ];
    for (machine, original, says) in cases {
        for entry in
            std::iter::once(atax_columns::KERNEL).chain(atax_columns::SCHEDULES.iter().copied())
        {
            let (ran, y) = atax_columns_run(entry, &machine, original);
            let refused = ran.unwrap_err();
            assert!(
                refused.to_string().contains(says),
                "{}: {refused}",
                entry.name()
            );
            assert!(y.iter().all(|&v| v == 0.0), "{}: nothing ran", entry.name());
        }
    }
}

/// A grid the GPU refuses (y or z above 65535) is refused on the CPU
/// backend too, with the GPU's typed error, for the kernel and each
/// schedule that launches its grid as given (reorder, redirect), before
/// anything runs: a launch that ran only here would fail on the user's
/// GPU. (A persistent schedule launches its agents: its grid is virtual.)
#[test]
fn grids_over_the_gpus_limits_are_refused_on_the_cpu_backend() {
    use clustered_suite::host::{Axis, LaunchError};
    use kernels::atax::atax_columns;
    let launched_as_given: Vec<_> = std::iter::once(atax_columns::KERNEL)
        .chain(atax_columns::SCHEDULES.iter().copied())
        .filter(|entry| !entry.binding().is_some_and(|b| b.is_persistent()))
        .collect();
    assert!(
        launched_as_given.len() >= 2,
        "the kernel and its redirection"
    );
    for entry in launched_as_given {
        for (grid, axis) in [([1, 65_536, 1], Axis::Y), ([1, 1, 65_536], Axis::Z)] {
            let (ran, y) = atax_columns_run(entry, &Machine::new(2), launch(grid, 64, 2));
            assert_eq!(
                ran.unwrap_err(),
                CpuLaunchError::Launch(LaunchError::GridTooLarge {
                    axis,
                    dim: 65_536,
                    limit: 65_535
                }),
                "{}",
                entry.name()
            );
            assert!(y.iter().all(|&v| v == 0.0), "{}: nothing ran", entry.name());
        }
    }
}

/// A kernel's `#[launch_bounds]` hold on the CPU backend as on a GPU: a
/// block over `max_threads` is refused, for the kernel and each schedule,
/// with the GPU's typed error; a block within them runs. ATAX's column pass
/// is bounded to 256 threads.
#[test]
fn launch_bounds_refuse_bigger_blocks_on_the_cpu_backend() {
    use clustered_suite::host::{LaunchError, ThreadLimit};
    use kernels::atax::{atax_columns, ATAX_BLOCK};
    let bounds = atax_columns::KERNEL
        .launch_bounds()
        .expect("atax_columns has bounds");
    assert_eq!(
        (bounds.max_threads, bounds.min_blocks_per_sm),
        (ATAX_BLOCK, 1)
    );
    let machine = Machine::new(2);
    for entry in
        std::iter::once(atax_columns::KERNEL).chain(atax_columns::SCHEDULES.iter().copied())
    {
        assert_eq!(entry.launch_bounds(), Some(bounds), "{}", entry.name());
        let (refused, y) = atax_columns_run(entry, &machine, launch([2, 1, 1], 512, 2));
        assert_eq!(
            refused.unwrap_err(),
            CpuLaunchError::Launch(LaunchError::BlockTooLarge {
                threads: 512,
                limit: ATAX_BLOCK,
                limited_by: ThreadLimit::Kernel
            }),
            "{}",
            entry.name()
        );
        assert!(y.iter().all(|&v| v == 0.0), "{}: nothing ran", entry.name());
        // Within the bounds every entry runs, also under random interleavings.
        let random = Machine::new(5).with_dispatch(Dispatch::Random(7));
        for machine in [&machine, &random] {
            // 4 blocks of 256 threads, one column each.
            let (ran, y) = atax_columns_run(entry, machine, launch([4, 1, 1], 256, 2));
            ran.unwrap();
            assert!(y.iter().all(|&v| v == 8.0), "{}", entry.name());
        }
    }
    assert_eq!(
        kernels::vector::vector_add::KERNEL.launch_bounds(),
        None,
        "a kernel without the attribute has none"
    );
}

/// Agents and persistent schedules launch no more blocks than their claims
/// can keep busy, and size claims to the work: a grid of a few CTAs used to
/// start MAX x SMs blocks, and `chunk = 5` left all but one agent idle on
/// five tasks.
#[test]
fn claiming_schedules_launch_for_the_work_not_the_machine() {
    let machine = Machine::new(8);
    for &entry in coverage::SCHEDULES
        .iter()
        .filter(|e| matches!(e.binding(), Some(Binding::Agents | Binding::Persistent)))
    {
        for tasks in [1u32, 5, 16, 200] {
            let case = format!("{}, {tasks} tasks", entry.name());
            let ran = run_schedule(
                &machine,
                entry,
                launch([tasks, 1, 1], 32, 2),
                &ClusterOptions::default(),
                &mut NoObserver,
                0,
            )
            .unwrap_or_else(|e| panic!("{case}: {e}"));
            assert_exactly_once(&ran.runs, &case);
            // ACTIVE of MAX = 2 per SM work; MAX / ACTIVE blocks per claim.
            let per_claim = 2u32.div_ceil(ran.active);
            let most = (16u32).min(tasks * per_claim);
            assert!(
                ran.blocks <= most,
                "{case}: {} blocks, at most {most}",
                ran.blocks
            );
            // Tasks spread over the agents: as many busy agents as there are
            // tasks, up to every working agent.
            let busy = ran.runs.len().min((ran.active * 8) as usize);
            assert!(
                ran.blocks as usize >= busy.min(most as usize),
                "{case}: {} blocks",
                ran.blocks
            );
        }
    }
}

/// The DSMEM SGEMM runs on the CPU backend as clusters of one block (rank 0
/// of 1, the cluster barrier a block barrier) and gives the SDK kernel's
/// bits: the GPU test compares real clusters with the same baseline.
#[test]
fn dsmem_sgemm_is_the_tiled_sgemm_in_clusters_of_one() {
    use kernels::sgemm::{sgemm_tiled, sgemm_tiled_dsmem, TILE};
    let n = 2 * TILE;
    let len = (n * n) as usize;
    let a: Vec<f32> = (0..len)
        .map(|i| ((i * 37) % 101) as f32 / 101.0 - 0.5)
        .collect();
    let b: Vec<f32> = (0..len)
        .map(|i| ((i * 53) % 97) as f32 / 97.0 - 0.5)
        .collect();
    let original = CpuLaunch {
        grid: [n / TILE, n / TILE, 1],
        block: [TILE, TILE, 1],
        dynamic_shared_bytes: 0,
        resident_blocks: 2,
    };
    let machine = Machine::new(2);
    let options = ClusterOptions::default();
    let mut expected = vec![0.0f32; len];
    let mut got = vec![0.0f32; len];
    // SAFETY: both kernels read n x n floats of a and b and write as many
    // of c, for a grid of n / TILE tiles a side.
    unsafe {
        launch_entry(
            sgemm_tiled::KERNEL,
            &machine,
            original,
            &options,
            &mut NoObserver,
            (&a, &b, &mut expected, n),
        )
        .unwrap();
        launch_entry(
            sgemm_tiled_dsmem::KERNEL,
            &machine,
            original,
            &options,
            &mut NoObserver,
            (&a, &b, &mut got, n),
        )
        .unwrap();
    }
    // A product that moved nothing would equal a zeroed baseline.
    assert!(expected.iter().any(|&x| x != 0.0));
    assert!(got == expected, "the DSMEM SGEMM differs from sgemm_tiled");
}

/// The hand-written layouts (`atax_rows_gemv`, `conv5x5_tiled`,
/// `transpose_tiled`: shared tiles, barriers, an early `return`) give the
/// CPU reference's bits in every entry of their automatic family, with the
/// engine interleaving threads at random and checking races, at sizes with
/// partial tiles and rounds.
#[test]
fn hand_written_layouts_match_the_reference_under_interleaving() {
    use clustered_suite::reference;
    use kernels::atax::{atax_rows_gemv, ATAX_BLOCK};
    use kernels::conv::{conv5x5_tiled, TILED_OUTPUTS, TILED_THREADS};
    use kernels::transpose::{transpose_tiled, TRANSPOSE_ROWS, TRANSPOSE_TILE};
    let value = |i: usize| ((i * 37 + 11) % 101) as f32 * 0.013 - 0.6;
    for seed in [3, 17] {
        let machine = Machine::new(3).interleave(seed);
        // SAFETY (every launch below): the buffers hold what the kernel's
        // grid reads and writes, as the reference sizes them.
        let run = |name: &str, result: Result<_, CpuLaunchError>| {
            result.unwrap_or_else(|e| panic!("{name}, seed {seed}: {e}"));
        };
        // A round of 8 loads per thread and a tail (2100 = 8 * 256 + 52).
        let (nx, ny) = (5u32, 2100u32);
        let a: Vec<f32> = (0..(nx * ny) as usize).map(value).collect();
        let x: Vec<f32> = (0..ny as usize).map(|i| value(i + 7)).collect();
        let want = reference::atax_rows_gemv(&a, &x, nx as usize, ny as usize, ATAX_BLOCK as usize);
        for &entry in atax_rows_gemv::AUTO {
            let mut tmp = vec![f32::NAN; nx as usize];
            let shape = launch([nx, 1, 1], ATAX_BLOCK, 2);
            let args = (&a[..], &x[..], &mut tmp[..], nx, ny);
            run(entry.name(), unsafe {
                launch_layout(entry, &machine, shape, args)
            });
            assert_eq!(bits(&tmp), bits(&want), "{}, seed {seed}", entry.name());
        }
        // 40 x 24: one whole tile column and one partial, one partial row.
        let (width, height) = (40u32, 24u32);
        let image: Vec<f32> = (0..(width * height) as usize).map(value).collect();
        let tiles = |outputs: [u32; 2], block: [u32; 2]| CpuLaunch {
            grid: [width.div_ceil(outputs[0]), height.div_ceil(outputs[1]), 1],
            block: [block[0], block[1], 1],
            dynamic_shared_bytes: 0,
            resident_blocks: 2,
        };
        let filter: [f32; 25] = std::array::from_fn(|i| value(i + 3));
        let want = reference::conv5x5(&image, &filter, width as usize, height as usize);
        for &entry in conv5x5_tiled::AUTO {
            let mut output = vec![f32::NAN; image.len()];
            let shape = tiles(TILED_OUTPUTS, TILED_THREADS);
            let args = (&image[..], filter, &mut output[..], width, height);
            run(entry.name(), unsafe {
                launch_layout(entry, &machine, shape, args)
            });
            assert_eq!(bits(&output), bits(&want), "{}, seed {seed}", entry.name());
        }
        let want = reference::transpose(&image, width as usize, height as usize);
        for &entry in transpose_tiled::AUTO {
            let mut output = vec![f32::NAN; image.len()];
            let shape = tiles([TRANSPOSE_TILE; 2], [TRANSPOSE_TILE, TRANSPOSE_ROWS]);
            let args = (&image[..], &mut output[..], width, height);
            run(entry.name(), unsafe {
                launch_layout(entry, &machine, shape, args)
            });
            assert_eq!(bits(&output), bits(&want), "{}, seed {seed}", entry.name());
        }
    }
}

/// `launch_entry` with the default options and no observer.
///
/// # Safety
/// As for `launch_entry`.
unsafe fn launch_layout<K: KernelFn>(
    entry: Entry<K>,
    machine: &Machine,
    shape: CpuLaunch,
    args: K::Args<'_, Host>,
) -> Result<clustered_suite::host::cpu::CpuRun, CpuLaunchError> {
    // SAFETY: the caller's promise.
    unsafe {
        launch_entry(
            entry,
            machine,
            shape,
            &ClusterOptions::default(),
            &mut NoObserver,
            args,
        )
    }
}

/// An `f32` slice's bits, for exact comparisons that also tell NaN apart.
fn bits(values: &[f32]) -> Vec<u32> {
    values.iter().map(|v| v.to_bits()).collect()
}
