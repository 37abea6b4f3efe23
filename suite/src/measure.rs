//! Runs a suite kernel's schedules on a GPU: checks each schedule's outputs
//! against the baseline's, bit for bit, then times them interleaved (one
//! launch of each schedule per round, so drift in clocks or temperature hits
//! every schedule alike) with CUDA events.

use clustered_host::autotune::{TunePolicy, TunedLaunches};
use clustered_host::tuner::{median, Tuner};
use clustered_host::{ClusterOptions, Error, Gpu, GpuTimer, Module};

use crate::suite::{DeviceBuffer, GpuEntry, GpuTarget, Workload};

/// One schedule's measurement.
#[derive(Clone, Debug)]
pub struct Timing {
    pub label: &'static str,
    /// Median of the timed launches, milliseconds.
    pub median_ms: f32,
    /// Every timed launch, milliseconds, in order.
    pub samples_ms: Vec<f32>,
    /// Its outputs equal the baseline's bit for bit.
    pub matches_baseline: bool,
}

/// A workload's schedules measured in one run.
#[derive(Clone, Debug)]
pub struct Measurement {
    pub workload: &'static str,
    pub timings: Vec<Timing>,
    /// The baseline's outputs passed the workload's CPU check.
    /// `None` where the reference is too slow at this size
    /// (`Workload::cpu_check`): then the nvcc twin is the check.
    pub baseline_check: Option<Result<(), String>>,
    /// The baseline's output buffers, in buffer order.
    pub baseline_outputs: Vec<Vec<u32>>,
    /// The nvcc-built twin of the baseline, timed in the same rounds, when
    /// a twin module was given and has `<baseline>_twin`.
    pub twin: Option<Timing>,
}

/// How many timed launches: at least 20, 6 for launches over 100 ms.
pub fn runs_for(estimate_ms: f32) -> usize {
    if estimate_ms > 100.0 {
        6
    } else {
        20
    }
}

/// Measures every schedule of `workload` (`runs` timed launches each, or
/// [`runs_for`] the baseline's first launch when `runs` is `None`).
pub fn measure(
    gpu: &Gpu,
    module: &Module,
    workload: &Workload,
    runs: Option<usize>,
) -> Result<Measurement, Error> {
    measure_with_twin(gpu, module, workload, runs, None)
}

/// [`measure`], plus the baseline's CUDA C++ twin from `twins` (its entry
/// `<baseline>_twin`, same parameters), timed in the same rounds.
pub fn measure_with_twin(
    gpu: &Gpu,
    module: &Module,
    workload: &Workload,
    runs: Option<usize>,
    twins: Option<&Module>,
) -> Result<Measurement, Error> {
    let mut buffers: Vec<DeviceBuffer> = workload
        .buffers
        .iter()
        .map(|b| b.upload(gpu))
        .collect::<Result<_, _>>()?;
    let options = ClusterOptions::default();
    let target = |module| GpuTarget {
        gpu,
        module,
        original: workload.shape,
        options: &options,
    };
    // Each schedule launches typed, through its entry; the twin (CUDA C++,
    // same parameters) through the baseline's entry made foreign.
    let mut launchers: Vec<(GpuEntry, GpuTarget<'_>)> = workload
        .variants
        .iter()
        .map(|variant| (variant.gpu, target(module)))
        .collect();
    let baseline = &workload.variants[0];
    let twin_name = format!("{}_twin", baseline.kernel);
    let has_twin = match (twins, baseline.twin) {
        (Some(twins), Some(twin)) if twins.kernel(&twin_name).is_ok() => {
            launchers.push((twin, target(twins)));
            true
        }
        _ => false,
    };
    let launch = |(entry, target): &(GpuEntry, GpuTarget<'_>), buffers: &mut [DeviceBuffer]| {
        entry(target, buffers, &workload.args)
    };

    // Correctness first: each schedule on fresh outputs (their initial
    // words: some kernels read them, like SYRK's C), compared with the
    // baseline's words.
    let outputs: Vec<usize> = workload.outputs().collect();
    let mut baseline_outputs: Option<Vec<Vec<u32>>> = None;
    let mut matches = Vec::new();
    let mut first_ms = 0.0;
    let timer = GpuTimer::new(gpu.stream())?;
    let labels: Vec<&str> = workload
        .variants
        .iter()
        .map(|v| v.label)
        .chain(has_twin.then_some("nvcc twin"))
        .collect();
    for (index, launcher) in launchers.iter().enumerate() {
        // Progress on stderr: a launch that never returns names itself.
        eprintln!("{}: checking {}", workload.name, labels[index]);
        // The first launcher runs on the buffers as uploaded above.
        for &i in outputs.iter().filter(|_| index > 0) {
            buffers[i].reset(gpu, &workload.buffers[i])?;
        }
        timer.start()?;
        launch(launcher, &mut buffers)?;
        timer.stop()?;
        if baseline_outputs.is_none() {
            first_ms = timer.elapsed_ms()?;
        }
        let words: Vec<Vec<u32>> = outputs
            .iter()
            .map(|&i| buffers[i].download(gpu))
            .collect::<Result<_, _>>()?;
        match &baseline_outputs {
            None => {
                matches.push(true);
                baseline_outputs = Some(words);
            }
            Some(expected) => matches.push(&words == expected),
        }
    }
    let baseline_outputs = baseline_outputs.expect("a workload has a baseline");
    if workload.cpu_check {
        eprintln!(
            "{}: checking the baseline against the CPU reference",
            workload.name
        );
    }
    let baseline_check = workload
        .cpu_check
        .then(|| (workload.check)(workload, &baseline_outputs));

    let runs = runs.unwrap_or_else(|| runs_for(first_ms));
    eprintln!(
        "{}: timing {} rounds of {} launches",
        workload.name,
        runs,
        launchers.len()
    );
    let mut samples = vec![Vec::with_capacity(runs); launchers.len()];
    for _ in 0..runs {
        for (launcher, samples) in launchers.iter().zip(&mut samples) {
            timer.start()?;
            launch(launcher, &mut buffers)?;
            timer.stop()?;
            samples.push(timer.elapsed_ms()?);
        }
    }
    let mut timings: Vec<Timing> = labels
        .into_iter()
        .zip(samples)
        .zip(matches)
        .map(|((label, samples_ms), matches_baseline)| Timing {
            label,
            median_ms: median(&samples_ms),
            samples_ms,
            matches_baseline,
        })
        .collect();
    let twin = has_twin.then(|| timings.pop()).flatten();
    Ok(Measurement {
        workload: workload.name,
        timings,
        baseline_check,
        baseline_outputs,
        twin,
    })
}

/// How a copy kernel moves its floats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyWidth {
    /// One float per thread (`kernels::vector::copy`): how the suite's
    /// streaming kernels move data.
    Float,
    /// Four floats per thread in one 16-byte access
    /// (`kernels::vector::copy_quads`): how CUDA programmers write a copy,
    /// and the memory roofline.
    Quad,
}

/// The memory roofline of this run: a copy of 256 Mi floats (1 GiB read,
/// 1 GiB written) at `width`, median of 20 launches, in GB/s (10^9 bytes)
/// of traffic.
pub fn copy_bandwidth(gpu: &Gpu, module: &Module, width: CopyWidth) -> Result<f64, Error> {
    use clustered_host::LaunchConfig;
    use kernels::vector::{copy, copy_quads};
    let n: u32 = 1 << 28;
    let input = gpu.zeros::<f32>(n as usize)?;
    let mut output = gpu.zeros::<f32>(n as usize)?;
    let options = ClusterOptions::default();
    let timer = GpuTimer::new(gpu.stream())?;
    let mut samples = Vec::new();
    for run in 0..21 {
        timer.start()?;
        // SAFETY: both buffers hold n floats, what the kernels index (n / 4
        // quads of 16-byte aligned device memory for `copy_quads`).
        unsafe {
            match width {
                CopyWidth::Float => gpu.launch_entry(
                    module,
                    copy::KERNEL,
                    LaunchConfig::linear(u64::from(n), 256),
                    &options,
                    (&input, &mut output, n),
                )?,
                CopyWidth::Quad => gpu.launch_entry(
                    module,
                    copy_quads::KERNEL,
                    LaunchConfig::linear(u64::from(n / 4), 256),
                    &options,
                    (&input, &mut output, n / 4),
                )?,
            }
        };
        timer.stop()?;
        // The first launch warms up (module load, clocks).
        if run > 0 {
            samples.push(timer.elapsed_ms()?);
        }
    }
    let bytes = 2.0 * f64::from(n) * 4.0;
    Ok(bytes / (f64::from(median(&samples)) * 1e-3) / 1e9)
}

/// What the automatic choice did for one workload: its tuned launch over
/// the kernel's family (`<kernel>::AUTO`), from a cold cache.
#[derive(Clone, Debug)]
pub struct AutoChoice {
    /// The entry it launches once tuned (after the trial on the
    /// workload's buffers).
    pub schedule: &'static str,
    /// What measuring on scratch buffers picked (the trial may have put
    /// the baseline in its place).
    pub measured_pick: &'static str,
    /// The family's entries (the baseline first).
    pub family: Vec<&'static str>,
    /// Launches the tuning took: each candidate once to warm up and once
    /// per round, then the winner on the caller's buffers, then the trial's
    /// launches of the baseline and the winner.
    pub launches: usize,
    /// Wall-clock seconds of that first (measuring) launch, synchronised.
    pub tuning_seconds: f64,
    /// Wall-clock microseconds of a later launch of the same key (a cache
    /// hit), synchronised: the plain launch plus the lookup.
    pub hit_micros: f64,
}

/// Runs `workload`'s tuned launch once cold (it measures the family and
/// records its choice in a tuner file at `tuner`, which must not exist
/// yet), then until its trial on the workload's buffers ends, and once
/// more warm, on fresh copies of its buffers. The family's entries
/// named in `skip` are left out (never the baseline): candidates a
/// prediction says are slower.
pub fn tune_auto(
    gpu: &Gpu,
    module: &Module,
    workload: &Workload,
    tuner: &std::path::Path,
    policy: TunePolicy,
    skip: &[String],
) -> Result<Option<AutoChoice>, Error> {
    let baseline = &workload.variants[0];
    let (Some(tuned), Some(family)) = (baseline.tuned, baseline.auto_family) else {
        return Ok(None);
    };
    let keep = |name: &str| name == baseline.kernel || !skip.iter().any(|s| s == name);
    let family: Vec<&'static str> = family().into_iter().filter(|e| keep(e)).collect();
    let mut buffers: Vec<DeviceBuffer> = workload
        .buffers
        .iter()
        .map(|b| b.upload(gpu))
        .collect::<Result<_, _>>()?;
    let options = ClusterOptions::default();
    let target = GpuTarget {
        gpu,
        module,
        original: workload.shape,
        options: &options,
    };
    let (rounds, trial) = (policy.rounds.max(1), policy.trial);
    let launches = TunedLaunches::new(Tuner::open(tuner)?, policy);
    gpu.synchronize()?;
    let started = std::time::Instant::now();
    eprintln!(
        "{}: tuning its {} automatic candidates",
        workload.name,
        family.len()
    );
    let first = tuned(&target, &launches, &mut buffers, &workload.args, &keep)?;
    gpu.synchronize()?;
    let tuning_seconds = started.elapsed().as_secs_f64();
    // The trial's launches, then the one that saves its verdict.
    let mut trial_launches = 0;
    while tuned(&target, &launches, &mut buffers, &workload.args, &keep)?.trial {
        trial_launches += 1;
        if trial_launches > 2 * trial {
            break;
        }
    }
    gpu.synchronize()?;
    let started = std::time::Instant::now();
    let again = tuned(&target, &launches, &mut buffers, &workload.args, &keep)?;
    gpu.synchronize()?;
    let hit_micros = started.elapsed().as_secs_f64() * 1e6;
    debug_assert!(!again.measured && !again.trial, "{again:?}");
    Ok(Some(AutoChoice {
        schedule: again.schedule,
        measured_pick: first.schedule,
        launches: family.len() * (1 + rounds) + 1 + trial_launches,
        family,
        tuning_seconds,
        hit_micros,
    }))
}

/// What each of `runs` calls of `run` took (the pool examples time a row
/// several times: one run of a row moves by more than what it measures).
pub fn repeat(
    runs: usize,
    mut run: impl FnMut() -> std::time::Duration,
) -> Vec<std::time::Duration> {
    (0..runs).map(|_| run()).collect()
}

/// Takes the pool examples' `--blocks=N` (worker blocks,
/// `PoolConfig::blocks`) out of `args`: `Ok(None)` without it, an error
/// that names the flag when N is not a count above 0.
pub fn take_blocks_flag(args: &mut Vec<String>) -> Result<Option<u32>, String> {
    let mut blocks = None;
    let mut bad = None;
    args.retain(|a| match a.strip_prefix("--blocks=") {
        Some(n) => {
            match n.parse::<u32>() {
                Ok(n) if n > 0 => blocks = Some(n),
                _ => bad = Some(a.clone()),
            }
            false
        }
        None => true,
    });
    match bad {
        Some(a) => Err(format!(
            "{a}: --blocks=N takes a count of worker blocks above 0"
        )),
        None => Ok(blocks),
    }
}

/// Prints one row of [`per_task_table`] from what each of its runs took.
pub type RowReport<'a> = &'a dyn Fn(&str, &[std::time::Duration]);

/// The per-task table of the pool examples (`pool_overhead`,
/// `pool_claim_queue`): prints the device line and the header for `tasks`
/// tasks per row, and returns the function that prints a row from its
/// runs: the median's total ms and ns per task, and the runs' range of ns
/// per task (rows vary from run to run by more than the changes measured
/// with them: docs/BENCHMARKS.md, the task pool's sections).
pub fn per_task_table(gpu: &Gpu, tasks: u32) -> impl Fn(&str, &[std::time::Duration]) {
    let props = gpu.properties();
    println!(
        "device: {} ({} SMs); {tasks} empty tasks per row",
        props.name, props.sm_count
    );
    println!(
        "{:<52} {:>4} {:>10} {:>12} {:>17}",
        "row", "runs", "total ms", "per task ns", "range ns"
    );
    move |row: &str, runs: &[std::time::Duration]| {
        let ns: Vec<f64> = runs
            .iter()
            .map(|t| t.as_secs_f64() * 1e9 / f64::from(tasks))
            .collect();
        let Some(median) = crate::calibrate::median(&ns) else {
            println!("{row:<52} no runs");
            return;
        };
        let (low, high) = ns
            .iter()
            .fold((f64::INFINITY, 0.0f64), |(l, h), &v| (l.min(v), h.max(v)));
        println!(
            "{row:<52} {:>4} {:>10.3} {:>12.1} {:>17}",
            ns.len(),
            median * f64::from(tasks) * 1e-6,
            median,
            format!("{low:.0}-{high:.0}")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::take_blocks_flag;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn the_blocks_flag_is_taken_out_and_the_rest_kept_in_order() {
        let mut list = args(&["2000", "--blocks=393", "5"]);
        assert_eq!(take_blocks_flag(&mut list), Ok(Some(393)));
        assert_eq!(list, args(&["2000", "5"]));
        let mut none = args(&["2000"]);
        assert_eq!(take_blocks_flag(&mut none), Ok(None));
        assert_eq!(none, args(&["2000"]));
    }

    #[test]
    fn a_blocks_flag_without_a_count_is_an_error_that_names_it() {
        for bad in ["--blocks=", "--blocks=0", "--blocks=many", "--blocks=-3"] {
            let mut list = args(&[bad, "7"]);
            let error = take_blocks_flag(&mut list).unwrap_err();
            assert!(
                error.starts_with(bad) && error.contains("--blocks=N"),
                "{error}"
            );
            assert_eq!(list, args(&["7"]));
        }
    }
}
