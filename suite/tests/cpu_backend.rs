//! The suite's kernels on the CPU backend: every schedule runs every original
//! CTA exactly once, whatever the dispatcher, starved SMs or sparse SM ids;
//! and every schedule computes what the baseline computes, bit for bit.

use clustered_suite::host::cpu::{
    run, AccessKind, CpuError, CpuLaunch, CpuPlan, Dispatch, LaneAccess, Machine, NoObserver,
    Observer,
};
use clustered_suite::host::{ActivePolicy, ClusterOptions, KernelContract};
use kernels::coverage::*;

type CoverageKernel = unsafe fn(*mut u32, *mut u32, clustered_suite::host::ClusterLaunch);

/// The schedules of `coverage`, with their contracts.
fn coverage_schedules() -> [(&'static str, CoverageKernel, &'static KernelContract); 8] {
    [
        (
            "reorder",
            coverage_reorder,
            &__clustered_contract_coverage_reorder,
        ),
        (
            "redirect",
            coverage_redirect,
            &__clustered_contract_coverage_redirect,
        ),
        (
            "agents",
            coverage_agents,
            &__clustered_contract_coverage_agents,
        ),
        (
            "agents_chunked",
            coverage_agents_chunked,
            &__clustered_contract_coverage_agents_chunked,
        ),
        (
            "agents_throttled",
            coverage_agents_throttled,
            &__clustered_contract_coverage_agents_throttled,
        ),
        (
            "persistent",
            coverage_persistent,
            &__clustered_contract_coverage_persistent,
        ),
        (
            "stride",
            coverage_stride,
            &__clustered_contract_coverage_stride,
        ),
        (
            "stride_waves",
            coverage_stride_waves,
            &__clustered_contract_coverage_stride_waves,
        ),
    ]
}

/// What one run of a two-buffer schedule (`coverage`, `announced`) left.
struct Ran {
    /// The first buffer: runs per CTA.
    runs: Vec<u32>,
    /// The second: %smid per CTA for `coverage`, announcements for `announced`.
    second: Vec<u32>,
    /// Blocks launched, ACTIVE agents per SM and scheduler ticks.
    blocks: u32,
    active: u32,
    ticks: u64,
}

/// Runs `kernel` for the original launch `original` on `machine`, its second
/// buffer filled with `second` first.
fn run_schedule(
    machine: &Machine,
    (kernel, contract): (CoverageKernel, &KernelContract),
    original: CpuLaunch,
    options: &ClusterOptions,
    observer: &mut dyn Observer,
    second: u32,
) -> Result<Ran, String> {
    let n = original.grid.iter().product::<u32>() as usize;
    let (mut runs, mut second) = (vec![0u32; n], vec![second; n]);
    let mut plan = CpuPlan::new(contract, original, machine, options).map_err(|e| e.to_string())?;
    let parameter = plan.parameter();
    let (r, s) = (runs.as_mut_ptr(), second.as_mut_ptr());
    let stats = run(machine, &plan.launch, observer, &|| unsafe {
        kernel(r, s, parameter)
    })
    .map_err(|e| e.to_string())?;
    Ok(Ran {
        runs,
        second,
        blocks: plan.launch.grid[0],
        active: plan.active_agents,
        ticks: stats.ticks,
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
    kernel: CoverageKernel,
    contract: &KernelContract,
    grid: [u32; 3],
    options: &ClusterOptions,
) -> Result<(Vec<u32>, Vec<u32>), String> {
    let original = launch(grid, 64, 4);
    let ran = run_schedule(
        machine,
        (kernel, contract),
        original,
        options,
        &mut NoObserver,
        u32::MAX,
    )?;
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
            for (name, kernel, contract) in coverage_schedules() {
                let case = format!("{name} on {machine_name}, grid {grid:?}");
                let (runs, sms) =
                    run_coverage(machine, kernel, contract, grid, &ClusterOptions::default())
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

#[test]
fn agents_bind_clusters_to_sms_when_every_sm_has_agents() {
    // 4 SMs, 8 clusters of 4 tasks: with every SM's agents present, each
    // SM runs its own cluster first; stealing only evens out the end.
    let machine = Machine::new(4);
    let (runs, sms) = run_coverage(
        &machine,
        coverage_agents_chunked,
        &__clustered_contract_coverage_agents_chunked,
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
        for (name, kernel, contract) in coverage_schedules() {
            if name.starts_with("stride") && options.active != ActivePolicy::FromKernel {
                continue; // refused: a_grid_stride_loop_refuses_to_be_throttled
            }
            let case = format!("{name}, {case}");
            let (runs, _) = run_coverage(machine, kernel, contract, [37, 1, 1], options)
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
        let schedule = (
            coverage_agents_throttled as CoverageKernel,
            &__clustered_contract_coverage_agents_throttled,
        );
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
    use kernels::vector::{__clustered_contract_vector_add_agents, vector_add, vector_add_agents};
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
    let (pa, pb, pc) = (a.as_ptr(), b.as_ptr(), c.as_mut_ptr());
    let mut counter = Counter::default();
    let stats = run(&machine, &launch, &mut counter, &|| unsafe {
        vector_add(pa, pb, pc, n)
    })
    .unwrap();
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
    let mut plan = CpuPlan::new(
        &__clustered_contract_vector_add_agents,
        launch,
        &machine,
        &ClusterOptions::default(),
    )
    .unwrap();
    let parameter = plan.parameter();
    let pc = c.as_mut_ptr();
    let mut counter = Counter::default();
    run(&machine, &plan.launch, &mut counter, &|| unsafe {
        vector_add_agents(pa, pb, pc, n, parameter)
    })
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
        CpuError::Panicked {
            block,
            thread,
            message,
        } => {
            assert_eq!((block, thread), ([1, 0, 0], [33, 0, 0]));
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
    /// a barrier (where the scheduler checks the stack).
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
        deep(&top as *const u8 as usize, 6 * 1024);
    };
    // One thread (below it: the slab's spare stack) with 8 KiB of stack:
    // 6 KiB deep is inside the 4 KiB canary zone at its bottom.
    let mut machine = Machine::new(1);
    machine.stack_bytes = 8 * 1024;
    let launch = CpuLaunch {
        grid: [1, 1, 1],
        block: [1, 1, 1],
        dynamic_shared_bytes: 0,
        resident_blocks: 1,
    };
    let error = run(&machine, &launch, &mut NoObserver, &kernel).unwrap_err();
    assert!(matches!(error, CpuError::StackOverflow { .. }), "{error}");
    // The same depth fits in the default 64 KiB.
    run(&Machine::new(1), &launch, &mut NoObserver, &kernel).unwrap();
}

#[test]
fn tasks_sharing_memory_stay_separate_in_persistent_loops() {
    use kernels::vector::*;
    // 10 tasks of 64 threads on 2 SMs: agents and grid-stride CTAs run
    // several tasks each, reusing the same dynamic shared memory.
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
    type Reverse = unsafe fn(*const f32, *mut f32, u32, clustered_suite::host::ClusterLaunch);
    let schedules: [(&str, Reverse, &KernelContract); 2] = [
        (
            "agents",
            reverse_in_blocks_agents,
            &__clustered_contract_reverse_in_blocks_agents,
        ),
        (
            "stride",
            reverse_in_blocks_stride,
            &__clustered_contract_reverse_in_blocks_stride,
        ),
    ];
    for (name, kernel, contract) in schedules {
        let mut output = vec![0f32; n as usize];
        let mut plan =
            CpuPlan::new(contract, original, &machine, &ClusterOptions::default()).unwrap();
        assert!(
            plan.launch.grid[0] < original.grid[0],
            "{name}: fewer CTAs than tasks"
        );
        let parameter = plan.parameter();
        let (pi, po) = (input.as_ptr(), output.as_mut_ptr());
        run(&machine, &plan.launch, &mut NoObserver, &|| unsafe {
            kernel(pi, po, n, parameter)
        })
        .unwrap();
        assert_eq!(output, expected, "{name}");
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
    let error = CpuPlan::new(
        &__clustered_contract_coverage_stride,
        launch,
        &Machine::new(2),
        &options,
    )
    .unwrap_err();
    assert!(error.to_string().contains("binding = stride"), "{error}");
    // The claiming bindings take the same policy.
    CpuPlan::new(
        &__clustered_contract_coverage_persistent,
        launch,
        &Machine::new(2),
        &options,
    )
    .unwrap();
}

/// Which tasks a schedule announced to its prefetch hook, per grid, on two
/// machines: the hook must see the CTA that runs next in the same block.
#[test]
fn prefetch_hooks_see_each_blocks_next_task() {
    let schedules: [(&str, CoverageKernel, &KernelContract); 3] = [
        (
            "stride",
            announced_stride,
            &__clustered_contract_announced_stride,
        ),
        (
            "stride2",
            announced_stride2,
            &__clustered_contract_announced_stride2,
        ),
        (
            "persistent",
            announced_persistent,
            &__clustered_contract_announced_persistent,
        ),
    ];
    for machine in [
        Machine::new(3),
        Machine::new(2).with_dispatch(Dispatch::Random(3)),
    ] {
        for grid in [[1, 1, 1], [7, 1, 1], [5, 3, 1], [4, 3, 2], [40, 3, 1]] {
            for (name, kernel, contract) in schedules {
                let case = format!("{name}, grid {grid:?}, {} SMs", machine.sm_ids.len());
                let ran = run_schedule(
                    &machine,
                    (kernel, contract),
                    launch(grid, 32, 2),
                    &ClusterOptions::default(),
                    &mut NoObserver,
                    0,
                )
                .unwrap_or_else(|e| panic!("{case}: {e}"));
                let (runs, announced, blocks) = (ran.runs, ran.second, ran.blocks);
                assert_exactly_once(&runs, &case);
                let [gx, gy, _] = grid;
                for (v, &count) in announced.iter().enumerate() {
                    let v = v as u32;
                    let (x, y, z) = (v % gx, v / gx % gy, v / (gx * gy));
                    let expected = match name {
                        // Column-major order; block b runs b, b + A, ...
                        "stride" => ((z * gx + x) * gy + y >= blocks) as u32,
                        // The same, announced two tasks ahead.
                        "stride2" => ((z * gx + x) * gy + y >= 2 * blocks) as u32,
                        // Row-major chunks of 3 from one queue: every task
                        // but a chunk's first is announced.
                        _ => !v.is_multiple_of(3) as u32,
                    };
                    assert_eq!(count, expected, "{case}: CTA {v} announced {count} times");
                }
            }
        }
    }
}

/// `waves = 3` launches three blocks per resident slot, never more blocks
/// than tasks; one wave is the default.
#[test]
fn a_grid_stride_loop_launches_its_waves() {
    let machine = Machine::new(2);
    let blocks = |contract: &KernelContract, tasks: u32| {
        let original = CpuLaunch {
            grid: [tasks, 1, 1],
            block: [64, 1, 1],
            dynamic_shared_bytes: 0,
            resident_blocks: 4,
        };
        CpuPlan::new(contract, original, &machine, &ClusterOptions::default())
            .unwrap()
            .launch
            .grid[0]
    };
    assert_eq!(blocks(&__clustered_contract_coverage_stride, 100), 2 * 4);
    assert_eq!(
        blocks(&__clustered_contract_coverage_stride_waves, 100),
        3 * 2 * 4
    );
    assert_eq!(blocks(&__clustered_contract_coverage_stride_waves, 20), 20);
    // The last step, v + blocks, must not pass id 2^32 - 1.
    let huge = CpuLaunch {
        grid: [u32::MAX - 3, 1, 1],
        block: [64, 1, 1],
        dynamic_shared_bytes: 0,
        resident_blocks: 4,
    };
    let error = CpuPlan::new(
        &__clustered_contract_coverage_stride,
        huge,
        &machine,
        &ClusterOptions::default(),
    )
    .unwrap_err();
    assert!(
        error.to_string().contains("past CTA id 2^32 - 1"),
        "{error}"
    );
}

/// The observer hears of each original CTA once, by its row-major id, on
/// the SM that ran it, whatever the schedule's indexing (the SVG maps and
/// the cross-CTA reuse count rely on it).
#[test]
fn observers_hear_each_task_by_its_row_major_id() {
    let machine = Machine::new(3).with_dispatch(Dispatch::Random(5));
    let grid = [5, 4, 2];
    for (name, kernel, contract) in coverage_schedules() {
        let mut heard = Counter::default();
        let ran = run_schedule(
            &machine,
            (kernel, contract),
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
