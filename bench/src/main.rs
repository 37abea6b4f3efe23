//! The benchmark: every suite kernel in every schedule at its benchmark size
//! on the GPU, in one run. Per kernel, schedules are timed interleaved (one
//! launch of each per round; 20 rounds, 6 for launches over 100 ms) with CUDA
//! events, every output is checked bit for bit against the baseline's and
//! the baseline against a CPU reference. The nvcc-built twin of each
//! baseline (`scripts/build-twins.sh`) is timed in the same rounds.
//!
//! The tuner picks, per kernel, the schedule that beat the baseline in the
//! median and in most rounds (else the baseline) and keeps it on disk.
//!
//! Prints the device and a table; writes `bench.json` and `speedups.svg`.
//!
//! ```text
//! cargo run --release --bin bench [-- --only KERNEL[,KERNEL...] --out target/bench
//!     --twins target/twins/suite.ptx --tuner PATH --ptx PTX --no-auto
//!     --skip SKIPS.json --list]
//!
//! With `--skip` (written by `predict --skips`), each kernel's automatic
//! choice is tuned twice from a cold cache, with its whole family and
//! without the candidates predicted slower: the launches saved, and whether
//! the pick changed, measured side by side.
//! ```

mod report;

use std::path::PathBuf;
use std::process::ExitCode;

use serde::Serialize;

use clustered_suite::host::autotune::TunePolicy;
use clustered_suite::host::tuner::{Choice, TuneKey, Tuner};
use clustered_suite::host::{Error, Gpu, Module, ModuleOptions};
use clustered_suite::measure::{
    copy_bandwidth, measure_with_twin, tune_auto, AutoChoice, CopyWidth, Measurement,
};
use clustered_suite::predict::SkipList;
use clustered_suite::sim::format_table;
use clustered_suite::suite::{self, Class, Size, Workload};
use report::{speedup_chart_svg, ChartBar, ChartGroup};

struct Options {
    only: Option<String>,
    out: PathBuf,
    twins: Option<PathBuf>,
    tuner: PathBuf,
    /// PTX to load instead of the suite's own: an experiment on what
    /// ptxas does with edited PTX (a `.maxnreg` added, say). Its entries
    /// must be the built suite's, with the same parameters.
    ptx: Option<PathBuf>,
    /// Print the suite's kernels, one per line, and stop.
    list: bool,
    /// Skip the automatic choice's tuning (a cold-cache tuning per kernel,
    /// a third of a run's time on the large kernels).
    no_auto: bool,
    /// The predictor's skip list (`predict --skips FILE`): tune the
    /// automatic choice a second time without the candidates it names.
    skip: Option<PathBuf>,
    /// Load the suite without keeping schedules at their kernels'
    /// occupancy (`ModuleOptions::keep_occupancy(false)`): to measure what
    /// the register caps do.
    no_register_cap: bool,
    /// Print the usage and stop.
    help: bool,
}

const USAGE: &str = "\
usage: bench [OPTIONS]
  --only KERNEL[,KERNEL...]  these suite kernels only (--list names them)
  --out DIR                  where bench.json and speedups.svg go (default target/bench)
  --twins PTX                the nvcc twins (default target/twins/suite.ptx or ./twins.ptx)
  --tuner FILE               the tuner's cache of automatic choices
  --ptx PTX                  load this PTX instead of the suite's own (same entries)
  --no-auto                  skip tuning each kernel's automatic choice
  --skip FILE                tune a second time without the candidates `predict --skips` wrote
  --no-register-cap          ptxas's own registers, not the kernels' occupancy caps
  --list                     print the suite's kernels and stop
  --help                     this text";

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        only: None,
        out: PathBuf::from("target/bench"),
        twins: ["target/twins/suite.ptx", "twins.ptx"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.exists()),
        tuner: Tuner::default_path(),
        ptx: None,
        list: false,
        no_auto: false,
        skip: None,
        no_register_cap: false,
        help: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--only" => options.only = Some(value()?),
            "--out" => options.out = value()?.into(),
            "--twins" => options.twins = Some(value()?.into()),
            "--tuner" => options.tuner = value()?.into(),
            "--ptx" => options.ptx = Some(value()?.into()),
            "--list" => options.list = true,
            "--no-auto" => options.no_auto = true,
            "--skip" => options.skip = Some(value()?.into()),
            "--no-register-cap" => options.no_register_cap = true,
            "--help" | "-h" => options.help = true,
            other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
        }
    }
    Ok(options)
}

fn main() -> ExitCode {
    let options = match parse_options() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::FAILURE;
        }
    };
    if options.help {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    if options.list {
        // Each kernel, then each schedule's label and PTX entry (the names
        // that bench.json, the tuner and `--only` use), tab-separated.
        for (name, build) in suite::select(None).unwrap_or_default() {
            println!("{name}");
            for variant in &build(suite::Size::Test).variants {
                println!("\t{}\t{}", variant.label, variant.kernel);
            }
        }
        return ExitCode::SUCCESS;
    }
    // A misspelt `--only` is an error before anything runs.
    if let Err(message) = suite::select(options.only.as_deref()) {
        eprintln!("error: {message}");
        return ExitCode::FAILURE;
    }
    let gpu = match Gpu::new(0) {
        Ok(gpu) => gpu,
        Err(error @ (Error::NoDriver | Error::NoDevice { .. })) => {
            println!("No GPU here ({error}): the benchmark needs one. Without a GPU, `cargo run --release --example locality` simulates the same kernels.");
            return ExitCode::SUCCESS;
        }
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    match run(&gpu, &options) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn load_twins(gpu: &Gpu, path: &Option<PathBuf>) -> Option<Module> {
    let path = path.as_ref()?;
    // PTX, JIT-compiled by the same driver as the Rust kernels: the
    // comparison is of the front ends (rustc's LLVM against nvcc's NVVM).
    let loaded = std::fs::read_to_string(path)
        .map_err(|e| e.to_string())
        .and_then(|ptx| gpu.load_module(&ptx).map_err(|e| e.to_string()));
    match loaded {
        Ok(module) => {
            println!("nvcc twins: {}", path.display());
            Some(module)
        }
        Err(error) => {
            println!("nvcc twins not loaded from {}: {error}", path.display());
            None
        }
    }
}

fn run(gpu: &Gpu, options: &Options) -> Result<bool, String> {
    let p = gpu.properties();
    println!(
        "device: {} ({} SMs, {} MiB L2, compute capability {}.{})",
        p.name,
        p.sm_count,
        p.l2_cache_bytes >> 20,
        p.compute_capability.0,
        p.compute_capability.1
    );
    let module_options = ModuleOptions::default().keep_occupancy(!options.no_register_cap);
    let loading = std::time::Instant::now();
    let module = match &options.ptx {
        Some(path) => {
            let ptx = std::fs::read_to_string(path)
                .map_err(|e| format!("--ptx {}: {e}", path.display()))?;
            println!("PTX: {} (not the built suite's)", path.display());
            gpu.load_module_with(&ptx, module_options)
        }
        None => gpu.load_module_with(clustered_suite::PTX, module_options),
    }
    .map_err(|e| e.to_string())?;
    println!(
        "module loaded in {:.2} s; schedules kept at their kernel's occupancy: {}",
        loading.elapsed().as_secs_f64(),
        if options.no_register_cap {
            "off (--no-register-cap)"
        } else if module.register_caps().is_empty() {
            "none needed"
        } else {
            ""
        }
    );
    for cap in module.register_caps() {
        println!("  {cap}");
    }
    let twins = load_twins(gpu, &options.twins);
    // The tuner's file is only a cache: a corrupt one is moved aside (and
    // said so) rather than stopping the benchmark.
    let (mut tuner, set_aside) =
        Tuner::open_or_set_aside(&options.tuner).map_err(|e| e.to_string())?;
    if let Some(set_aside) = set_aside {
        println!(
            "warning: {}; moved to {}, starting with no saved choices",
            set_aside.problem,
            set_aside.moved_to.display()
        );
    }
    let copy = |width| copy_bandwidth(gpu, &module, width).map_err(|e| format!("copy: {e}"));
    let (copy_gbps, float_copy_gbps) = (copy(CopyWidth::Quad)?, copy(CopyWidth::Float)?);
    println!(
        "memory roofline: a copy moves {copy_gbps:.0} GB/s on this device (1 GiB in, 1 GiB out, 16 bytes per access; {float_copy_gbps:.0} GB/s a float per thread)"
    );
    let started = std::time::Instant::now();
    let mut results: Vec<(Workload, Measurement, Choice)> = Vec::new();
    let mut autos: Vec<AutoRow> = Vec::new();
    let mut skipping: Vec<AutoRow> = Vec::new();
    let skips = match &options.skip {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("--skip {}: {e}", path.display()))?;
            let skips: SkipList = serde_json::from_str(&text)
                .map_err(|e| format!("--skip {}: {e}", path.display()))?;
            skips
                .check()
                .map_err(|e| format!("--skip {}: {e}", path.display()))?;
            println!(
                "skip list: {} (predicted on {}, margin {:.0}%)",
                path.display(),
                skips.device,
                skips.margin * 100.0
            );
            if skips.device != p.name {
                println!(
                    "warning: the skip list was predicted for {}, this GPU is {}: write one with `predict --device` for it",
                    skips.device, p.name
                );
            }
            if options.no_auto {
                println!(
                    "warning: --skip does nothing with --no-auto (it prunes the automatic choice)"
                );
            }
            Some(skips)
        }
        None => None,
    };
    // The automatic choice tunes from a cold cache of its own.
    std::fs::create_dir_all(&options.out)
        .map_err(|e| format!("cannot create {}: {e}", options.out.display()))?;
    let auto_tuner = options.out.join("auto-tuner.json");
    let mut ok = true;
    for (_, build) in suite::select(options.only.as_deref())? {
        let workload = build(Size::Benchmark);
        let measured = measure_with_twin(gpu, &module, &workload, None, twins.as_ref())
            .map_err(|e| format!("{}: {e}", workload.name))?;
        // The CPU reference where it is affordable; else the nvcc twin,
        // whose order of operations is the same (bitwise comparable).
        match (&measured.baseline_check, &measured.twin) {
            (Some(Ok(())), _) => {}
            (Some(Err(message)), _) => {
                println!(
                    "FAIL {}: the baseline's output is wrong: {message}",
                    workload.name
                );
                ok = false;
            }
            (None, Some(twin)) if twin.matches_baseline => println!(
                "{}: too large for the CPU reference; equals its nvcc twin bit for bit",
                workload.name
            ),
            (None, Some(_)) => {
                println!(
                    "FAIL {}: the baseline differs from its nvcc twin",
                    workload.name
                );
                ok = false;
            }
            (None, None) => println!(
                "{}: unchecked: too large for the CPU reference, and no nvcc twin loaded",
                workload.name
            ),
        }
        for t in measured.timings.iter().filter(|t| !t.matches_baseline) {
            println!(
                "FAIL {} / {}: output differs from the baseline's",
                workload.name, t.label
            );
            ok = false;
        }
        // Only schedules with the baseline's output may be chosen, and
        // only entries as compiled: the tuner keeps an entry's name, so a
        // variant that launches an entry with options of its own (a band
        // at launch, thread block clusters) is not a candidate.
        let compiled: Vec<usize> = (0..workload.variants.len())
            .filter(|&i| workload.as_compiled(i))
            .collect();
        let candidates: Vec<&str> = compiled
            .iter()
            .map(|&i| workload.variants[i].kernel)
            .collect();
        let samples: Vec<Vec<f32>> = compiled
            .iter()
            .map(|&i| &measured.timings[i])
            .map(|t| {
                if t.matches_baseline {
                    t.samples_ms.clone()
                } else {
                    vec![f32::INFINITY; t.samples_ms.len()]
                }
            })
            .collect();
        let key = TuneKey::new(workload.name, &p.name, &workload.problem);
        let choice = tuner
            .record(&key, &candidates, &samples)
            .map_err(|e| e.to_string())?;
        println!(
            "{:<16} {:>7.3} ms baseline; tuned: {} ({:.3}x)",
            workload.name,
            measured.timings[0].median_ms,
            choice.schedule,
            choice.speedup()
        );
        let _ = std::fs::remove_file(&auto_tuner);
        let auto = if options.no_auto {
            None
        } else {
            tune_auto(
                gpu,
                &module,
                &workload,
                &auto_tuner,
                TunePolicy::default(),
                &[],
            )
            .map_err(|e| format!("{}: automatic choice: {e}", workload.name))?
        };
        if let Some(row) = auto.and_then(|auto| AutoRow::new(&workload, &measured, auto)) {
            println!(
                "{:<16} automatic choice ({} candidates): {}{} ({:.3}x the baseline, {:.3}x the fastest schedule), tuned in {:.2} s, {} launches; a cached launch {:.1} us",
                "",
                row.family.len(),
                row.pick,
                row.trial_note(),
                row.of_baseline,
                row.of_best,
                row.tuning_seconds,
                row.launches,
                row.hit_micros
            );
            autos.push(row);
        }
        if let Some(skip) = skips
            .as_ref()
            .and_then(|s| s.kernels.get(workload.name))
            .filter(|_| !options.no_auto)
        {
            let _ = std::fs::remove_file(&auto_tuner);
            let auto = tune_auto(
                gpu,
                &module,
                &workload,
                &auto_tuner,
                TunePolicy::default(),
                skip,
            )
            .map_err(|e| format!("{}: automatic choice with skips: {e}", workload.name))?;
            if let Some(row) = auto.and_then(|auto| AutoRow::new(&workload, &measured, auto)) {
                println!(
                    "{:<16} without the {} predicted slower: {} candidates, {} ({:.3}x the baseline, {:.3}x the fastest schedule), {} launches",
                    "",
                    skip.len(),
                    row.family.len(),
                    row.pick,
                    row.of_baseline,
                    row.of_best,
                    row.launches
                );
                skipping.push(row);
            }
        }
        // Each kernel's table as it is measured, and every output so far
        // on disk: a run cut short keeps what it measured.
        println!(
            "{}",
            format_table(&REPORT_HEADERS, &report_rows(&workload, &measured, &choice))
        );
        results.push((workload, measured, choice));
        let roofline = roofline(results.iter().map(|(w, m, _)| (w, m)), copy_gbps);
        write_outputs(
            &options.out,
            &p.name,
            &results,
            (copy_gbps, float_copy_gbps),
            &roofline,
            (&autos, &skipping),
        )?;
    }
    println!("measured in {:.0} s", started.elapsed().as_secs_f64());
    print_report(&results);
    print_auto(
        "automatic choice (#[clustered(auto)], tuned from a cold cache) against the exhaustive run, same medians:",
        &autos,
    );
    if !skipping.is_empty() {
        print_auto(
            "the same without the candidates predicted slower (--skip):",
            &skipping,
        );
    }
    let roofline = roofline(results.iter().map(|(w, m, _)| (w, m)), copy_gbps);
    print_roofline(&roofline, copy_gbps);
    println!(
        "wrote {} and {} (after each kernel)",
        options.out.join("bench.json").display(),
        options.out.join("speedups.svg").display()
    );
    Ok(ok)
}

const REPORT_HEADERS: [&str; 7] = [
    "kernel",
    "problem",
    "schedule",
    "median ms",
    "speedup",
    "tuned",
    "same output",
];

/// One kernel's rows of the report: each schedule, then the nvcc twin.
fn report_rows(workload: &Workload, measured: &Measurement, choice: &Choice) -> Vec<Vec<String>> {
    let chosen = &choice.schedule;
    let base = measured.timings[0].median_ms;
    let mut rows = Vec::new();
    for (i, t) in measured.timings.iter().enumerate() {
        let first = |text: &str| {
            if i == 0 {
                text.to_string()
            } else {
                String::new()
            }
        };
        rows.push(vec![
            first(workload.name),
            first(&workload.problem),
            t.label.to_string(),
            format!("{:.3}", t.median_ms),
            format!("{:.3}x", base / t.median_ms),
            if workload.variants[i].kernel == *chosen && workload.as_compiled(i) {
                "<-"
            } else {
                ""
            }
            .into(),
            if t.matches_baseline { "yes" } else { "NO" }.into(),
        ]);
    }
    if let Some(twin) = &measured.twin {
        rows.push(vec![
            String::new(),
            String::new(),
            "nvcc twin of the baseline".into(),
            format!("{:.3}", twin.median_ms),
            format!("{:.3}x", base / twin.median_ms),
            format!("Rust/nvcc {:.3}", base / twin.median_ms),
            if twin.matches_baseline {
                "yes"
            } else {
                "differs"
            }
            .into(),
        ]);
    }
    rows
}

fn print_report(results: &[(Workload, Measurement, Choice)]) {
    let rows: Vec<Vec<String>> = results
        .iter()
        .flat_map(|(w, m, c)| report_rows(w, m, c))
        .collect();
    println!("{}", format_table(&REPORT_HEADERS, &rows));

    let tuned: Vec<(Class, f64)> = results
        .iter()
        .map(|(w, _, choice)| (w.class, choice.speedup() as f64))
        .collect();
    let locality: Vec<f64> = tuned
        .iter()
        .filter(|(c, _)| *c != Class::Streaming)
        .map(|(_, s)| *s)
        .collect();
    if !locality.is_empty() {
        let geomean = (locality.iter().map(|s| s.ln()).sum::<f64>() / locality.len() as f64).exp();
        println!(
            "tuned speedup, geometric mean over the {} algorithm- and cache-line-related kernels: {geomean:.3}x",
            locality.len()
        );
    }
}

/// A kernel's fastest schedule against the memory roofline: the traffic it
/// cannot avoid (each buffer once) over its time.
#[derive(Serialize)]
struct Roofline {
    kernel: &'static str,
    compulsory_bytes: u64,
    best_schedule: &'static str,
    best_ms: f32,
    gbps: f64,
    of_copy: f64,
}

fn roofline<'a>(
    results: impl IntoIterator<Item = (&'a Workload, &'a Measurement)>,
    copy_gbps: f64,
) -> Vec<Roofline> {
    results
        .into_iter()
        .filter_map(|(workload, measured)| {
            let best = measured
                .timings
                .iter()
                .filter(|t| t.matches_baseline)
                .min_by(|a, b| a.median_ms.total_cmp(&b.median_ms))?;
            let bytes = workload.compulsory_bytes();
            let gbps = bytes as f64 / (f64::from(best.median_ms) * 1e-3) / 1e9;
            Some(Roofline {
                kernel: workload.name,
                compulsory_bytes: bytes,
                best_schedule: best.label,
                best_ms: best.median_ms,
                gbps,
                of_copy: gbps / copy_gbps,
            })
        })
        .collect()
}

fn print_roofline(rows: &[Roofline], copy_gbps: f64) {
    println!("\nmemory roofline (copy: {copy_gbps:.0} GB/s): each kernel's fastest schedule, moving each buffer once");
    let headers = [
        "kernel",
        "compulsory MB",
        "fastest",
        "ms",
        "GB/s",
        "of copy",
    ];
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.kernel.to_string(),
                format!("{:.0}", r.compulsory_bytes as f64 / 1e6),
                r.best_schedule.to_string(),
                format!("{:.3}", r.best_ms),
                format!("{:.0}", r.gbps),
                format!("{:.0}%", 100.0 * r.of_copy),
            ]
        })
        .collect();
    println!("{}", format_table(&headers, &rows));
}

/// `bench.json`: the device, the copy's bandwidth, one record per schedule
/// (and per nvcc twin) of every kernel, and each kernel's roofline row.
#[derive(Serialize)]
struct BenchJson<'a> {
    device: &'a str,
    /// The roofline: a copy of 16 bytes per access.
    copy_gbps: f64,
    /// The same copy a float per thread.
    float_copy_gbps: f64,
    records: Vec<BenchRecord<'a>>,
    roofline: &'a [Roofline],
    /// The automatic choice per kernel.
    auto: &'a [AutoRow],
    /// The same without the candidates the predictor's skip list names.
    #[serde(skip_serializing_if = "<[AutoRow]>::is_empty")]
    auto_skipping: &'a [AutoRow],
}

/// A kernel's automatic choice (`#[clustered(auto)]` + `Gpu::launch_tuned`
/// from a cold cache) beside the exhaustive run of every schedule.
#[derive(Serialize)]
struct AutoRow {
    kernel: &'static str,
    family: Vec<&'static str>,
    pick: &'static str,
    /// What measuring on scratch buffers picked, before the trial on the
    /// workload's buffers.
    measured_pick: &'static str,
    pick_ms: f32,
    baseline_ms: f32,
    best_schedule: &'static str,
    best_ms: f32,
    /// Baseline over pick, fastest over pick (both from the exhaustive run).
    of_baseline: f32,
    of_best: f32,
    launches: usize,
    tuning_seconds: f64,
    hit_micros: f64,
}

impl AutoRow {
    /// What the trial did, when it changed the pick.
    fn trial_note(&self) -> String {
        match self.measured_pick == self.pick {
            true => String::new(),
            false => format!(" (the trial dropped {})", self.measured_pick),
        }
    }

    fn new(workload: &Workload, measured: &Measurement, auto: AutoChoice) -> Option<Self> {
        let timing = |name: &str| {
            workload
                .variants
                .iter()
                .zip(&measured.timings)
                .find(|(v, _)| v.kernel == name)
                .map(|(_, t)| t)
        };
        let pick = timing(auto.schedule)?;
        let baseline = &measured.timings[0];
        let (best_variant, best) = workload
            .variants
            .iter()
            .zip(&measured.timings)
            .filter(|(_, t)| t.matches_baseline)
            .min_by(|a, b| a.1.median_ms.total_cmp(&b.1.median_ms))?;
        Some(AutoRow {
            kernel: workload.name,
            pick: auto.schedule,
            measured_pick: auto.measured_pick,
            pick_ms: pick.median_ms,
            baseline_ms: baseline.median_ms,
            best_schedule: best_variant.kernel,
            best_ms: best.median_ms,
            of_baseline: baseline.median_ms / pick.median_ms,
            of_best: best.median_ms / pick.median_ms,
            launches: auto.launches,
            tuning_seconds: auto.tuning_seconds,
            hit_micros: auto.hit_micros,
            family: auto.family,
        })
    }
}

fn print_auto(title: &str, rows: &[AutoRow]) {
    println!("\n{title}");
    let headers = [
        "kernel",
        "candidates",
        "pick",
        "ms",
        "x baseline",
        "fastest of all",
        "ms",
        "x fastest",
        "tuning s",
        "launches",
    ];
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.kernel.to_string(),
                r.family.len().to_string(),
                format!("{}{}", r.pick, r.trial_note()),
                format!("{:.3}", r.pick_ms),
                format!("{:.3}", r.of_baseline),
                r.best_schedule.to_string(),
                format!("{:.3}", r.best_ms),
                format!("{:.3}", r.of_best),
                format!("{:.2}", r.tuning_seconds),
                r.launches.to_string(),
            ]
        })
        .collect();
    println!("{}", format_table(&headers, &table));
    let below = rows.iter().filter(|r| r.of_baseline < 0.99).count();
    let off = rows.iter().filter(|r| r.of_best < 0.98).count();
    println!(
        "{} of {} kernels below 0.99x of the baseline; {} more than 2% off the fastest schedule",
        below,
        rows.len(),
        off
    );
}

/// A schedule's record has `entry`, `speedup`, `tuned` and
/// `matches_baseline`; an nvcc twin's has `rust_over_nvcc` instead.
#[derive(Serialize)]
struct BenchRecord<'a> {
    kernel: &'a str,
    problem: &'a str,
    schedule: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    entry: Option<&'a str>,
    median_ms: f32,
    #[serde(skip_serializing_if = "Option::is_none")]
    speedup: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tuned: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    matches_baseline: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rust_over_nvcc: Option<f32>,
    samples_ms: &'a [f32],
}

fn write_outputs(
    out: &PathBuf,
    device: &str,
    results: &[(Workload, Measurement, Choice)],
    (copy_gbps, float_copy_gbps): (f64, f64),
    roofline: &[Roofline],
    (auto, auto_skipping): (&[AutoRow], &[AutoRow]),
) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let mut records = Vec::new();
    let mut groups = Vec::new();
    for (workload, measured, choice) in results {
        let chosen = &choice.schedule;
        let base = measured.timings[0].median_ms;
        let mut bars = Vec::new();
        for (i, t) in measured.timings.iter().enumerate() {
            let entry = workload.variants[i].kernel;
            records.push(BenchRecord {
                kernel: workload.name,
                problem: &workload.problem,
                schedule: t.label,
                entry: Some(entry),
                median_ms: t.median_ms,
                speedup: Some(base / t.median_ms),
                tuned: Some(entry == *chosen && workload.as_compiled(i)),
                matches_baseline: Some(t.matches_baseline),
                rust_over_nvcc: None,
                samples_ms: &t.samples_ms,
            });
            if i > 0 {
                bars.push(ChartBar {
                    label: t.label.to_string(),
                    speedup: (base / t.median_ms) as f64,
                    marked: entry == *chosen && workload.as_compiled(i),
                });
            }
        }
        if let Some(twin) = &measured.twin {
            records.push(BenchRecord {
                kernel: workload.name,
                problem: &workload.problem,
                schedule: "nvcc twin",
                entry: None,
                median_ms: twin.median_ms,
                speedup: None,
                tuned: None,
                matches_baseline: None,
                rust_over_nvcc: Some(base / twin.median_ms),
                samples_ms: &twin.samples_ms,
            });
        }
        groups.push(ChartGroup {
            kernel: format!("{} ({})", workload.name, workload.problem),
            bars,
        });
    }
    let json = out.join("bench.json");
    let mut text = serde_json::to_string_pretty(&BenchJson {
        device,
        copy_gbps,
        float_copy_gbps,
        records,
        roofline,
        auto,
        auto_skipping,
    })
    .map_err(|e| format!("cannot write {}: {e}", json.display()))?;
    text.push('\n');
    std::fs::write(&json, text).map_err(|e| format!("cannot write {}: {e}", json.display()))?;
    let svg = out.join("speedups.svg");
    let chart = speedup_chart_svg(&format!("Speedup over the baseline, {device}"), &groups);
    std::fs::write(&svg, chart).map_err(|e| format!("cannot write {}: {e}", svg.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fields are the ones the hand-written JSON had, and a name with
    /// quotes or a backslash (which that JSON did not escape) reads back.
    #[test]
    fn bench_json_keeps_its_fields_and_escapes_names() {
        let samples = [1.5f32, 2.0];
        let schedule = BenchRecord {
            kernel: "k",
            problem: "n = \"4\\096\"",
            schedule: "grid-stride",
            entry: Some("k_stride"),
            median_ms: 1.5,
            speedup: Some(2.0),
            tuned: Some(true),
            matches_baseline: Some(true),
            rust_over_nvcc: None,
            samples_ms: &samples,
        };
        let twin = BenchRecord {
            schedule: "nvcc twin",
            entry: None,
            speedup: None,
            tuned: None,
            matches_baseline: None,
            rust_over_nvcc: Some(0.5),
            ..schedule
        };
        let text = serde_json::to_string(&BenchJson {
            device: "GPU \"x\"\n",
            copy_gbps: 3000.0,
            float_copy_gbps: 2500.0,
            records: vec![schedule, twin],
            roofline: &[],
            auto: &[],
            auto_skipping: &[],
        })
        .unwrap();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(json["device"], "GPU \"x\"\n");
        let keys = |i: usize| -> Vec<&str> {
            let mut keys: Vec<&str> = json["records"][i]
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            keys.sort();
            keys
        };
        assert_eq!(
            keys(0),
            [
                "entry",
                "kernel",
                "matches_baseline",
                "median_ms",
                "problem",
                "samples_ms",
                "schedule",
                "speedup",
                "tuned"
            ]
        );
        assert_eq!(
            keys(1),
            [
                "kernel",
                "median_ms",
                "problem",
                "rust_over_nvcc",
                "samples_ms",
                "schedule"
            ]
        );
        assert_eq!(json["records"][0]["problem"], "n = \"4\\096\"");
        assert_eq!(
            json["records"][0]["samples_ms"],
            serde_json::json!([1.5, 2.0])
        );
        assert_eq!(json["records"][1]["rust_over_nvcc"], 0.5);
    }

    /// The roofline row takes the fastest schedule with the baseline's
    /// output, never a faster wrong one, and counts every buffer once.
    #[test]
    fn roofline_uses_the_fastest_correct_schedule() {
        use clustered_suite::measure::Timing;
        let workload = suite::WORKLOADS
            .iter()
            .find(|(name, _)| *name == "vector_add")
            .map(|(_, build)| build(Size::Test))
            .unwrap();
        let timing = |label, median_ms, matches_baseline| Timing {
            label,
            median_ms,
            samples_ms: vec![median_ms],
            matches_baseline,
        };
        let measured = Measurement {
            workload: workload.name,
            timings: vec![
                timing("baseline", 2.0, true),
                timing("wrong", 0.5, false),
                timing("fast", 1.0, true),
            ],
            baseline_check: None,
            baseline_outputs: Vec::new(),
            twin: None,
        };
        let rows = roofline([(&workload, &measured)], 30.0);
        // a, b and c: 5000 floats each.
        assert_eq!(rows[0].compulsory_bytes, 3 * 5000 * 4);
        assert_eq!(rows[0].best_schedule, "fast");
        let gbps = 60_000.0 / 1e-3 / 1e9;
        assert!((rows[0].gbps - gbps).abs() < 1e-9 && (rows[0].of_copy - gbps / 30.0).abs() < 1e-9);
    }
}
