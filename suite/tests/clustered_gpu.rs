//! End-to-end tests of clustered kernels on a GPU. Without one, each test
//! prints why it skipped and passes.

use std::sync::Arc;

use clustered_suite::host::{
    ActivePolicy, ClusterError, ClusterOptions, CudaSlice, CudaStream, Entry, Error, Gpu,
    LaunchConfig, Module,
};
use kernels::coverage::{coverage, spin};
use kernels::sgemm::sgemm_tiled;
use kernels::vector::{reverse_in_blocks, vector_add};

fn gpu() -> Option<(Gpu, Module)> {
    match Gpu::new(0) {
        Ok(gpu) => {
            let module = gpu
                .load_module(clustered_suite::PTX)
                .expect("the suite's PTX loads");
            Some((gpu, module))
        }
        Err(error) => {
            eprintln!("skipped: no GPU ({error})");
            None
        }
    }
}

mod common;
use common::Watchdog;
use std::time::Duration;

/// How long one test case may take before its watchdog names it as hung.
const HANG: Duration = Duration::from_secs(60);

struct Coverage {
    runs: CudaSlice<u32>,
    sms: CudaSlice<u32>,
}

impl Coverage {
    fn new(stream: &Arc<CudaStream>, grid: [u32; 3]) -> Coverage {
        let n = (grid[0] * grid[1] * grid[2]) as usize;
        Coverage {
            runs: stream.alloc_zeros(n).unwrap(),
            sms: stream.alloc_zeros(n).unwrap(),
        }
    }

    /// Launches `entry` for `grid` (the module caches its plan per launch
    /// shape and stream).
    fn launch(
        &mut self,
        gpu: &Gpu,
        module: &Module,
        entry: Entry<coverage>,
        grid: [u32; 3],
        options: &ClusterOptions,
    ) -> Result<(), Error> {
        let config = LaunchConfig::new(grid, [64, 1, 1]);
        // SAFETY: the kernel indexes both buffers by the CTA's id, and each
        // holds one word per CTA of the grid.
        unsafe {
            gpu.launch_entry(
                module,
                entry,
                config,
                options,
                (&mut self.runs, &mut self.sms),
            )
        }
    }

    /// Asserts every CTA ran once; returns how many distinct SMs ran them.
    fn assert_exactly_once(&self, gpu: &Gpu, case: &str) -> usize {
        let runs = gpu.dtoh(&self.runs).unwrap();
        let sms = gpu.dtoh(&self.sms).unwrap();
        for (v, &count) in runs.iter().enumerate() {
            assert_eq!(count, 1, "{case}: CTA {v} ran {count} times");
        }
        let mut distinct = sms.clone();
        distinct.sort_unstable();
        distinct.dedup();
        distinct.len()
    }
}

#[test]
fn every_cta_runs_exactly_once_in_every_schedule() {
    let Some((gpu, module)) = gpu() else { return };
    let _watchdog = Watchdog::new("every_cta_runs_exactly_once_in_every_schedule", HANG);
    for grid in [[37, 23, 1], [5, 1, 1], [1, 1, 1], [64, 64, 3], [1000, 1, 1]] {
        for &entry in coverage::SCHEDULES {
            let name = entry.name();
            let _watchdog = Watchdog::new(format!("{name} on grid {grid:?}"), HANG);
            let mut coverage = Coverage::new(gpu.stream(), grid);
            coverage
                .launch(&gpu, &module, entry, grid, &ClusterOptions::default())
                .unwrap();
            let sms = coverage.assert_exactly_once(&gpu, &format!("{name} {grid:?}"));
            eprintln!("{name:<26} grid {grid:?}: every CTA once, on {sms} SMs");
        }
    }
}

#[test]
fn exactly_once_with_fewer_agents_than_sms() {
    let Some((gpu, module)) = gpu() else { return };
    let _watchdog = Watchdog::new("exactly_once_with_fewer_agents_than_sms", HANG);
    let sm_count = gpu.properties().sm_count;
    let grid = [300, 7, 1];
    for entry in [coverage::coverage_agents, coverage::coverage_agents_chunked] {
        let name = entry.name();
        for total in [1, 7, sm_count - 1] {
            let mut coverage = Coverage::new(gpu.stream(), grid);
            let options = ClusterOptions {
                total_agents: Some(total),
                ..Default::default()
            };
            coverage
                .launch(&gpu, &module, entry, grid, &options)
                .unwrap();
            let sms = coverage.assert_exactly_once(&gpu, &format!("{name} with {total} agents"));
            assert!(sms <= total as usize, "{total} agents ran on {sms} SMs");
        }
        // One agent per SM.
        let mut coverage = Coverage::new(gpu.stream(), grid);
        let options = ClusterOptions {
            agents_per_sm: Some(1),
            ..Default::default()
        };
        coverage
            .launch(&gpu, &module, entry, grid, &options)
            .unwrap();
        coverage.assert_exactly_once(&gpu, &format!("{name} with one agent per SM"));
    }
}

#[test]
fn exactly_once_while_another_kernel_holds_sms() {
    let Some((gpu, module)) = gpu() else { return };
    let _watchdog = Watchdog::new("exactly_once_while_another_kernel_holds_sms", HANG);
    let props = gpu.properties().clone();
    let busy_stream = gpu.new_stream().unwrap();
    let work_stream = gpu.new_stream().unwrap();
    // Full-size blocks on half the SMs, spinning for ~20 ms: the agents'
    // kernel finds those SMs (mostly) taken.
    let busy_blocks = props.sm_count / 2;
    let mut spun = busy_stream
        .alloc_zeros::<u64>(busy_blocks as usize)
        .unwrap();
    let cycles = props.clock_rate_khz as u64 * 20;
    let spin_config = LaunchConfig::new([busy_blocks, 1, 1], [1024, 1, 1]);
    let grid = [500, 20, 1];
    let mut coverage = Coverage::new(&work_stream, grid);
    let busy = ClusterOptions {
        stream: Some(busy_stream.clone()),
        ..Default::default()
    };
    // SAFETY: each block writes its own word of `spun`, which holds one per
    // block.
    unsafe {
        gpu.launch_entry(
            &module,
            spin::KERNEL,
            spin_config,
            &busy,
            (cycles, &mut spun),
        )
    }
    .unwrap();
    let options = ClusterOptions {
        stream: Some(work_stream.clone()),
        ..Default::default()
    };
    coverage
        .launch(&gpu, &module, coverage::coverage_agents, grid, &options)
        .unwrap();
    work_stream.synchronize().unwrap();
    busy_stream.synchronize().unwrap();
    let sms = coverage.assert_exactly_once(&gpu, "beside a spinning kernel");
    eprintln!("beside a kernel holding {busy_blocks} SMs: every CTA once, on {sms} SMs");
}

#[test]
fn concurrent_launches_on_several_streams_do_not_share_counters() {
    let Some((gpu, module)) = gpu() else { return };
    let _watchdog = Watchdog::new(
        "concurrent_launches_on_several_streams_do_not_share_counters",
        HANG,
    );
    let grid = [400, 9, 1];
    let streams: Vec<_> = (0..4).map(|_| gpu.new_stream().unwrap()).collect();
    let mut coverages: Vec<Coverage> = streams.iter().map(|s| Coverage::new(s, grid)).collect();
    // One plan per stream, cached by the module: each has its own counters.
    let options: Vec<_> = streams
        .iter()
        .map(|s| ClusterOptions {
            stream: Some(s.clone()),
            ..Default::default()
        })
        .collect();
    for round in 0..3 {
        for (options, coverage) in options.iter().zip(&mut coverages) {
            coverage
                .launch(
                    &gpu,
                    &module,
                    coverage::coverage_agents_chunked,
                    grid,
                    options,
                )
                .unwrap();
        }
        for s in &streams {
            s.synchronize().unwrap();
        }
        for (i, coverage) in coverages.iter_mut().enumerate() {
            let runs = gpu.dtoh(&coverage.runs).unwrap();
            assert!(
                runs.iter().all(|&r| r == round + 1),
                "stream {i}, round {round}: {:?}",
                &runs[..8]
            );
        }
    }
}

#[test]
fn schedules_give_the_baseline_bits() {
    let Some((gpu, module)) = gpu() else { return };
    let _watchdog = Watchdog::new("schedules_give_the_baseline_bits", HANG);
    let n = 512u32;
    let len = (n * n) as usize;
    let (a, b, expected) = common::sgemm_tiled_reference(&gpu, &module, n);
    let config = LaunchConfig::new([n / 32, n / 32, 1], [32, 32, 1]);
    let options = ClusterOptions::default();
    // SAFETY (every launch of sgemm_tiled below): the kernel reads a and b
    // and writes c, n x n floats each, for a grid of n / TILE tiles a side.
    for &entry in sgemm_tiled::SCHEDULES {
        let name = entry.name();
        let mut c = gpu.zeros::<f32>(len).unwrap();
        unsafe { gpu.launch_entry(&module, entry, config, &options, (&a, &b, &mut c, n)) }
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            gpu.dtoh(&c).unwrap() == expected,
            "{name} differs from sgemm_tiled"
        );
    }

    let count = len as u32 + 17; // not a multiple of the block
    let x = gpu.htod(&vec![1.5f32; count as usize]).unwrap();
    let config = LaunchConfig::linear(count as u64, 256);
    let mut expected = gpu.zeros::<f32>(count as usize).unwrap();
    // SAFETY (every launch of vector_add below): the kernel guards i < count,
    // and each buffer holds count floats.
    unsafe {
        gpu.launch_entry(
            &module,
            vector_add::KERNEL,
            config,
            &options,
            (&x, &x, &mut expected, count),
        )
    }
    .unwrap();
    let expected = gpu.dtoh(&expected).unwrap();
    for &entry in vector_add::SCHEDULES {
        let name = entry.name();
        let mut out = gpu.zeros::<f32>(count as usize).unwrap();
        unsafe { gpu.launch_entry(&module, entry, config, &options, (&x, &x, &mut out, count)) }
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            gpu.dtoh(&out).unwrap() == expected,
            "{name} differs from vector_add"
        );
    }
}

#[test]
fn bad_clustered_launches_are_typed_errors() {
    let Some((gpu, module)) = gpu() else { return };
    let _watchdog = Watchdog::new("bad_clustered_launches_are_typed_errors", HANG);
    assert!(matches!(
        module.clustered_kernel(vector_add::KERNEL.name()),
        Err(Error::Cluster(ClusterError::NotClustered { .. }))
    ));
    // The planning API itself (the typed launch plans through it).
    let kernel = module
        .clustered_kernel(coverage::coverage_agents.name())
        .unwrap();
    let config = LaunchConfig::new([10, 1, 1], [64, 1, 1]);
    let plan = gpu
        .plan_clustered(&kernel, config, ClusterOptions::default())
        .unwrap();
    let max = plan.max_agents_per_sm;
    assert!(max > 0);
    let refuse =
        |options: ClusterOptions| gpu.plan_clustered(&kernel, config, options).unwrap_err();
    assert!(matches!(
        refuse(ClusterOptions {
            active: ActivePolicy::Fixed(max + 1),
            ..Default::default()
        }),
        Error::Cluster(ClusterError::ActiveOutOfRange { .. })
    ));
    assert!(matches!(
        refuse(ClusterOptions {
            agents_per_sm: Some(max + 1),
            ..Default::default()
        }),
        Error::Cluster(ClusterError::TooManyAgents { .. })
    ));
    assert!(matches!(
        gpu.plan_clustered(
            &kernel,
            LaunchConfig::new([0, 1, 1], [64, 1, 1]),
            ClusterOptions::default()
        ),
        Err(Error::Launch(_))
    ));
}

#[test]
fn dynamic_shared_memory_per_task() {
    let Some((gpu, module)) = gpu() else { return };
    let _watchdog = Watchdog::new("dynamic_shared_memory_per_task", HANG);
    let n = 100_000u32; // not a multiple of the block
    let block = 256u32;
    let input: Vec<f32> = (0..n).map(|i| i as f32).collect();
    // The outputs start zeroed, so elements without a mirror stay 0.
    let mut expected = vec![0.0; n as usize];
    clustered_suite::reference::reverse_in_blocks(&input, &mut expected, block as usize);
    let x = gpu.htod(&input).unwrap();
    let config = LaunchConfig::linear(n as u64, block).with_dynamic_shared(block * 4);
    let options = ClusterOptions::default();
    let mut out = gpu.zeros::<f32>(n as usize).unwrap();
    // SAFETY (every launch below): the kernel guards i < n, each buffer holds
    // n floats, and the launch gives each block `block` floats of dynamic
    // shared memory.
    unsafe {
        gpu.launch_entry(
            &module,
            reverse_in_blocks::KERNEL,
            config,
            &options,
            (&x, &mut out, n),
        )
    }
    .unwrap();
    assert!(
        gpu.dtoh(&out).unwrap() == expected,
        "baseline reverse_in_blocks is wrong"
    );
    for &entry in reverse_in_blocks::SCHEDULES {
        let name = entry.name();
        let mut out = gpu.zeros::<f32>(n as usize).unwrap();
        unsafe { gpu.launch_entry(&module, entry, config, &options, (&x, &mut out, n)) }
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(gpu.dtoh(&out).unwrap() == expected, "{name} differs");
    }
}

/// The typed launch: the baseline and every schedule of `vector_add`,
/// arguments typed from the signature, plans cached by the module, equal
/// outputs; and an untyped launch missing an argument is refused before it
/// reaches the driver (it used to kill the context).
#[test]
fn typed_launches_match_the_baseline_and_untyped_mismatches_are_refused() {
    let Some((gpu, module)) = gpu() else { return };
    let n = 100_000u32;
    let a = gpu
        .htod(&(0..n).map(|i| i as f32).collect::<Vec<_>>())
        .unwrap();
    let b = gpu.htod(&vec![2f32; n as usize]).unwrap();
    let config = LaunchConfig::linear(u64::from(n), 256);
    let options = ClusterOptions::default();
    let expected: Vec<f32> = (0..n).map(|i| i as f32 + 2.0).collect();
    let entries = std::iter::once(vector_add::KERNEL).chain(vector_add::SCHEDULES.iter().copied());
    for entry in entries {
        let mut c = gpu.zeros::<f32>(n as usize).unwrap();
        // Twice: the second launch reuses the cached plan.
        for _ in 0..2 {
            // SAFETY: the kernel guards i < n; each buffer holds n floats.
            unsafe { gpu.launch_entry(&module, entry, config, &options, (&a, &b, &mut c, n)) }
                .unwrap_or_else(|e| panic!("{}: {e}", entry.name()));
        }
        assert_eq!(gpu.dtoh(&c).unwrap(), expected, "{}", entry.name());
    }
}

/// A tuned launch measures its candidates on scratch copies and launches the
/// winner once on the caller's buffers: `c += a` twice (a measuring launch,
/// then a hit) leaves exactly `c0 + 2a`; another size bucket measures again,
/// and a new set of candidates is another key.
#[test]
fn tuned_launches_touch_the_callers_buffers_once() {
    use clustered_suite::host::tuner::Tuner;
    use clustered_suite::host::{TunePolicy, TunedLaunches};
    use kernels::vector::accumulate;
    let Some((gpu, module)) = gpu() else { return };
    let dir = std::env::temp_dir().join(format!("tuned-gpu-{}", std::process::id()));
    let launches = TunedLaunches::new(
        Tuner::open(dir.join("tuner.json")).unwrap(),
        TunePolicy::default(),
    );
    let candidates: Vec<_> = std::iter::once(accumulate::KERNEL)
        .chain(accumulate::SCHEDULES.iter().copied())
        .collect();
    let options = ClusterOptions::default();
    // One tuned launch of `c += a` over n floats.
    let tuned_launch = |a: &CudaSlice<f32>, c: &mut CudaSlice<f32>, n: u32| {
        let config = LaunchConfig::linear(u64::from(n), 256);
        // SAFETY: both buffers hold n floats; every schedule computes c += a.
        unsafe { gpu.launch_tuned(&module, &launches, &candidates, config, &options, (a, c, n)) }
            .unwrap()
    };
    for n in [1u32 << 20, 1 << 22] {
        let a: Vec<f32> = (0..n).map(|i| (i % 97) as f32).collect();
        let (a_gpu, mut c) = (
            gpu.htod(&a).unwrap(),
            gpu.htod(&vec![1.0f32; n as usize]).unwrap(),
        );
        // The measuring launch, the trial's (when a schedule won), then a
        // plain one: each adds `a` to the caller's `c` once.
        let first = tuned_launch(&a_gpu, &mut c, n);
        eprintln!("n = {n}: {} ({:?})", first.schedule, first.choice);
        assert!(first.measured && !first.trial, "n = {n}: {first:?}");
        let mut launched = 1;
        let last = loop {
            let tuned = tuned_launch(&a_gpu, &mut c, n);
            launched += 1;
            assert!(!tuned.measured, "n = {n}: {tuned:?}");
            if !tuned.trial {
                break tuned;
            }
            assert!(
                launched <= 1 + 2 * TunePolicy::default().trial,
                "the trial ends"
            );
        };
        if first.schedule == accumulate::KERNEL.name() {
            assert_eq!(launched, 2, "n = {n}: a baseline choice has no trial");
        }
        eprintln!(
            "n = {n}: after {launched} launches: {} ({:?})",
            last.schedule, last.choice
        );
        let want: Vec<f32> = a.iter().map(|&x| 1.0 + launched as f32 * x).collect();
        assert_eq!(
            gpu.dtoh(&c).unwrap(),
            want,
            "n = {n}: the caller's buffer saw other launches"
        );
    }
    // A choice another process saved (forged here: the agents schedule,
    // whatever the GPU measured) stands the trial in a new process: 2 x
    // trial launches alternating the baseline and it, then plain launches
    // of whichever the trial kept; every launch on the caller's buffer once.
    {
        let n = 1u32 << 22;
        let (key, _) = {
            let tuner = launches.tuner();
            let found = tuner.choices().find(|(k, _)| k.problem.contains("4194304"));
            let (key, choice) = found.expect("the 4 Mi key's choice is on file");
            (key.clone(), choice.clone())
        };
        let forged = clustered_suite::host::tuner::Choice {
            schedule: "accumulate_agents".to_string(),
            baseline_ms: 2.0,
            schedule_ms: 1.0,
        };
        launches.tuner().record_choice(&key, forged).unwrap();
        let policy = TunePolicy::default();
        let fresh =
            TunedLaunches::new(Tuner::open(dir.join("tuner.json")).unwrap(), policy.clone());
        let a: Vec<f32> = (0..n).map(|i| (i % 89) as f32).collect();
        let (a_gpu, mut c) = (gpu.htod(&a).unwrap(), gpu.zeros::<f32>(n as usize).unwrap());
        let config = LaunchConfig::linear(u64::from(n), 256);
        let mut seen = Vec::new();
        for _ in 0..2 * policy.trial + 2 {
            // SAFETY: as above.
            let tuned = unsafe {
                gpu.launch_tuned(
                    &module,
                    &fresh,
                    &candidates,
                    config,
                    &options,
                    (&a_gpu, &mut c, n),
                )
            }
            .unwrap();
            assert!(!tuned.measured, "{tuned:?}");
            seen.push((tuned.schedule, tuned.trial));
        }
        eprintln!("a forged choice's trial: {seen:?}");
        let (base, agents) = (accumulate::KERNEL.name(), "accumulate_agents");
        assert_eq!(seen[0], (agents, false), "the saved choice runs first");
        for (i, &(schedule, trial)) in seen[1..=2 * policy.trial].iter().enumerate() {
            assert!(trial);
            assert_eq!(
                schedule,
                if i % 2 == 0 { base } else { agents },
                "launch {i} of the trial"
            );
        }
        let kept = seen[2 * policy.trial + 1];
        assert!(!kept.1 && (kept.0 == base || kept.0 == agents), "{kept:?}");
        let launched = seen.len() as f32;
        let want: Vec<f32> = a.iter().map(|&x| launched * x).collect();
        assert_eq!(gpu.dtoh(&c).unwrap(), want, "each launch added a to c once");
    }

    // What a hit costs over a plain typed launch of the same entry (host
    // time per call, launches queued; printed, not asserted).
    let n = 1u32 << 20;
    let (a_gpu, mut c) = (
        gpu.zeros::<f32>(n as usize).unwrap(),
        gpu.zeros::<f32>(n as usize).unwrap(),
    );
    let config = LaunchConfig::linear(u64::from(n), 256);
    let winner = tuned_launch(&a_gpu, &mut c, n).schedule;
    let entry = *candidates.iter().find(|e| e.name() == winner).unwrap();
    let mut time = |tuned: bool| {
        gpu.synchronize().unwrap();
        let started = std::time::Instant::now();
        for _ in 0..2000 {
            if tuned {
                tuned_launch(&a_gpu, &mut c, n);
                continue;
            }
            // SAFETY: as above.
            unsafe { gpu.launch_entry(&module, entry, config, &options, (&a_gpu, &mut c, n)) }
                .unwrap();
        }
        let each = started.elapsed() / 2000;
        gpu.synchronize().unwrap();
        each
    };
    let (plain, tuned) = (time(false), time(true));
    eprintln!("host time per launch: launch_entry {plain:?}, launch_tuned (hit) {tuned:?}");

    // Fewer candidates: another checksum, so another key.
    let (a_gpu, mut c) = (
        gpu.zeros::<f32>(1 << 20).unwrap(),
        gpu.zeros::<f32>(1 << 20).unwrap(),
    );
    let tuned = unsafe {
        gpu.launch_tuned(
            &module,
            &launches,
            &candidates[..2],
            LaunchConfig::linear(1 << 20, 256),
            &options,
            (&a_gpu, &mut c, 1 << 20),
        )
    }
    .unwrap();
    assert!(tuned.measured);
    std::fs::remove_dir_all(dir).ok();
}

/// Tuned launches while the stream is captured into a CUDA graph, where
/// nothing may wait for the GPU: a key's first launch, which must measure,
/// is refused with a typed error and the capture goes on; a launch due for
/// its trial runs the choice into the graph, untimed, and the trial resumes
/// outside. Every launch that ran added `a` to the caller's `c` once.
#[test]
fn tuned_launches_inside_a_graph_capture() {
    use clustered_suite::host::cudarc::driver::sys;
    use clustered_suite::host::tuner::{Choice, Tuner, TunerError};
    use clustered_suite::host::{Error, TunePolicy, TunedLaunches};
    use kernels::vector::accumulate;
    let Some((gpu, module)) = gpu() else { return };
    let dir = std::env::temp_dir().join(format!("tuned-capture-{}", std::process::id()));
    let file = dir.join("tuner.json");
    let candidates: Vec<_> = std::iter::once(accumulate::KERNEL)
        .chain(accumulate::SCHEDULES.iter().copied())
        .collect();
    // A stream of its own: the context's default stream cannot be captured.
    let stream = gpu.new_stream().unwrap();
    // cudarc makes a stream wait for a buffer's last write before using it,
    // and a wait for an event recorded outside the capture invalidates the
    // capture (CUDA_ERROR_STREAM_CAPTURE_ISOLATION, on the first run of
    // this test): buffers used in a capture are made without that tracking.
    // SAFETY: this test orders its work itself (it synchronizes before each
    // capture and reads `c` after synchronizing the stream).
    unsafe { gpu.context().disable_event_tracking() };
    let options = ClusterOptions {
        stream: Some(stream.clone()),
        ..ClusterOptions::default()
    };
    let n = 1u32 << 20;
    let a: Vec<f32> = (0..n).map(|i| (i % 83) as f32).collect();
    let (a_gpu, mut c) = (gpu.htod(&a).unwrap(), gpu.zeros::<f32>(n as usize).unwrap());
    gpu.synchronize().unwrap();
    let config = LaunchConfig::linear(u64::from(n), 256);
    let launch = |launches: &TunedLaunches, c: &mut CudaSlice<f32>| {
        // SAFETY: both buffers hold n floats; every schedule computes c += a.
        unsafe {
            gpu.launch_tuned(
                &module,
                launches,
                &candidates,
                config,
                &options,
                (&a_gpu, c, n),
            )
        }
    };
    let capture = || {
        let mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
        stream.begin_capture(mode).unwrap();
    };
    let end_capture = || {
        let flags = sys::CUgraphInstantiate_flags(0);
        stream
            .end_capture(flags)
            .expect("the capture was not invalidated")
    };
    let mut ran = 0;

    // A first launch inside a capture: refused, the capture intact.
    let launches = TunedLaunches::new(Tuner::open(&file).unwrap(), TunePolicy::default());
    capture();
    let refused = launch(&launches, &mut c).unwrap_err();
    assert!(
        matches!(refused, Error::Tuner(TunerError::Capturing { .. })),
        "{refused}"
    );
    eprintln!("refused: {refused}");
    drop(end_capture());
    // Outside, it measures; then a choice on file (forged: the agents)
    // for a new process, whose first launch starts a trial.
    assert!(launch(&launches, &mut c).unwrap().measured);
    ran += 1;
    let key = launches.tuner().choices().next().unwrap().0.clone();
    let forged = Choice {
        schedule: "accumulate_agents".into(),
        baseline_ms: 2.0,
        schedule_ms: 1.0,
    };
    launches.tuner().record_choice(&key, forged).unwrap();
    let fresh = TunedLaunches::new(Tuner::open(&file).unwrap(), TunePolicy::default());
    assert_eq!(
        launch(&fresh, &mut c).unwrap().schedule,
        "accumulate_agents"
    );
    ran += 1;
    // Due for its trial, inside a capture: the choice, untimed.
    capture();
    let captured = launch(&fresh, &mut c).unwrap();
    assert!(
        !captured.trial && captured.schedule == "accumulate_agents",
        "{captured:?}"
    );
    let graph = end_capture().expect("one launch captured");
    for _ in 0..2 {
        graph.launch().unwrap();
        ran += 1;
    }
    // Outside again, the trial runs.
    let outside = launch(&fresh, &mut c).unwrap();
    assert!(outside.trial, "{outside:?}");
    ran += 1;
    stream.synchronize().unwrap();
    let want: Vec<f32> = a.iter().map(|&x| ran as f32 * x).collect();
    assert_eq!(gpu.dtoh(&c).unwrap(), want, "{ran} launches ran");
    std::fs::remove_dir_all(&dir).ok();
}

/// The automatic choice without the candidates a prediction skips: the
/// family it tunes leaves them out, never the baseline, and the pick is one
/// of what is left.
#[test]
fn the_automatic_choice_tunes_without_skipped_candidates() {
    use clustered_suite::host::autotune::TunePolicy;
    use clustered_suite::measure::tune_auto;
    use clustered_suite::suite::{self, Size};
    let Some((gpu, module)) = gpu() else { return };
    let &(_, build) = suite::select(Some("vector_add")).unwrap()[0];
    let workload = build(Size::Test);
    let family = (workload.variants[0].auto_family.unwrap())();
    assert!(family.len() > 2, "{family:?}");
    let dir = std::env::temp_dir().join(format!("clustered-skip-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let policy = TunePolicy {
        rounds: 1,
        ..TunePolicy::default()
    };
    // Everything but the baseline skipped, the baseline named too.
    let all: Vec<String> = family.iter().map(|s| s.to_string()).collect();
    let tuner = dir.join("all.json");
    let auto = tune_auto(&gpu, &module, &workload, &tuner, policy.clone(), &all)
        .unwrap()
        .unwrap();
    assert_eq!(auto.family, [family[0]]);
    assert_eq!(auto.schedule, family[0]);
    // One skipped: the rest tuned, the skipped one never picked.
    let skipped = vec![family[1].to_string()];
    let tuner = dir.join("one.json");
    let auto = tune_auto(&gpu, &module, &workload, &tuner, policy, &skipped)
        .unwrap()
        .unwrap();
    assert_eq!(auto.family.len(), family.len() - 1);
    assert!(!auto.family.contains(&family[1]));
    assert_ne!(auto.schedule, family[1]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A schedule whose loop state pushed ptxas past its kernel's occupancy runs
/// compiled again at it: Black-Scholes' grid-stride loop takes 35 registers
/// (48 warps per H100 SM) where the kernel takes 21 (64). The bench checks
/// its output against the baseline's; here, that loading capped it, and
/// that the cap can be turned off.
#[test]
fn a_schedule_over_its_kernels_occupancy_is_compiled_at_it() {
    use clustered_suite::host::{CapOutcome, ModuleOptions};
    let Some((gpu, module)) = gpu() else {
        return;
    };
    let name = "black_scholes_stride";
    let baseline = module.kernel("black_scholes").unwrap();
    let schedule = module.kernel(name).unwrap();
    let cap = module
        .register_caps()
        .iter()
        .find(|c| c.plan.entry == name)
        .unwrap_or_else(|| {
            panic!(
                "{name} kept its registers ({}): {:?}",
                schedule.attributes().registers_per_thread,
                module.register_caps()
            )
        });
    println!("{cap}");
    assert_eq!(cap.plan.baseline, "black_scholes");
    if let CapOutcome::Applied { registers } = cap.outcome {
        assert_eq!(schedule.attributes().registers_per_thread, registers);
        assert!(registers <= cap.plan.cap);
        assert_eq!(
            schedule.occupancy(256, 0).unwrap(),
            baseline.occupancy(256, 0).unwrap(),
            "blocks of 256 per SM"
        );
        // The capped copy runs where the grid needs the warps; a grid that
        // the schedule's own code holds at once runs that code.
        let clustered = module.clustered_kernel(name).unwrap();
        let planned = |blocks: u64| {
            let original = clustered_suite::host::LaunchConfig::linear(blocks * 256, 256);
            let plan = gpu
                .plan_clustered(&clustered, original, ClusterOptions::default())
                .unwrap();
            plan.kernel().kernel().attributes().registers_per_thread
        };
        assert_eq!(planned(1 << 18), registers, "a big grid runs capped");
        assert_eq!(planned(64), cap.plan.registers, "64 blocks run uncapped");
    }
    let uncapped = gpu
        .load_module_with(
            clustered_suite::PTX,
            ModuleOptions::default().keep_occupancy(false),
        )
        .unwrap();
    assert!(uncapped.register_caps().is_empty());
    assert_eq!(
        uncapped
            .kernel(name)
            .unwrap()
            .attributes()
            .registers_per_thread,
        cap.plan.registers
    );
}

/// The builder's `.maxntid` reaches the driver: every entry of ATAX's
/// column pass (`#[launch_bounds(max_threads = 256, ..)]`) reports 256
/// threads at most, and a typed launch of 512 is the same typed error the
/// CPU backend gives, before the driver sees it; 256 runs and matches.
#[test]
fn launch_bounds_reach_the_driver() {
    use clustered_suite::host::{LaunchError, ThreadLimit};
    use kernels::atax::{atax_columns, ATAX_BLOCK};
    let Some((gpu, module)) = gpu() else { return };
    let (nx, ny) = (64u32, 1024u32);
    let a = gpu.htod(&vec![1.0f32; (nx * ny) as usize]).unwrap();
    let tmp = gpu.htod(&vec![0.5f32; nx as usize]).unwrap();
    let options = ClusterOptions::default();
    for entry in
        std::iter::once(atax_columns::KERNEL).chain(atax_columns::SCHEDULES.iter().copied())
    {
        let name = entry.name();
        let attributes = module.kernel(name).unwrap().attributes();
        assert_eq!(attributes.max_threads_per_block, ATAX_BLOCK, "{name}");
        let mut y = gpu.zeros::<f32>(ny as usize).unwrap();
        let too_big = LaunchConfig::linear(u64::from(ny), 512);
        // SAFETY: refused before it runs; a and tmp hold nx x ny and nx floats.
        let refused = unsafe {
            gpu.launch_entry(
                &module,
                entry,
                too_big,
                &options,
                (&a, &tmp, &mut y, nx, ny),
            )
        };
        match refused {
            Err(Error::Launch(LaunchError::BlockTooLarge {
                threads: 512,
                limit,
                limited_by: ThreadLimit::Kernel,
            })) if limit == ATAX_BLOCK => {}
            other => panic!("{name}: {other:?}"),
        }
        let config = LaunchConfig::linear(u64::from(ny), ATAX_BLOCK);
        // SAFETY: as above, one column per thread.
        unsafe { gpu.launch_entry(&module, entry, config, &options, (&a, &tmp, &mut y, nx, ny)) }
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(gpu.dtoh(&y).unwrap().iter().all(|&v| v == 32.0), "{name}");
    }
}
