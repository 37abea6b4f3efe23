//! The main job: every suite kernel in every schedule, on the locality
//! simulator (always) and on the GPU (when there is one).
//!
//! Without a GPU it runs the kernels on the CPU backend, on a scaled-down
//! Hopper (8 SMs by default, per-SM figures unchanged, L2 scaled with the SM
//! count), and prints per kernel and schedule the simulated L1 hit rate, the
//! L1-to-L2 and DRAM sectors relative to the baseline, and how much reuse
//! crosses CTAs. It writes one SVG per kernel: which SM ran each original
//! CTA, baseline beside each schedule. Every schedule's output is checked
//! against the baseline's, bit for bit, and the baseline against a CPU
//! reference.
//!
//! With a GPU it also runs each kernel at its benchmark size and prints the
//! measured speedup of each schedule beside the simulation.
//!
//! ```text
//! cargo run --release --example locality [-- --profile h200 --sms 8
//!     --dispatch round-robin|observed|random --only sgemm_tiled,transpose --out target/locality]
//! ```

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use serde::Serialize;

use clustered_suite::host::cpu::Dispatch;
use clustered_suite::host::{Error as GpuError, Gpu};
use clustered_suite::measure::{measure, Measurement};
use clustered_suite::sim::{format_table, sm_map_svg, DeviceProfile, Progress, SmMapPanel};
use clustered_suite::simulate::{simulate, Simulation};
use clustered_suite::suite::{self, Size, Workload};

struct Options {
    profile: DeviceProfile,
    sms: u32,
    dispatch: Dispatch,
    only: Option<String>,
    out: PathBuf,
    gpu: bool,
    /// Problem sizes on the GPU: the benchmark's (default) or the simulation's
    /// (to compare with the simulator under ncu).
    gpu_size: Size,
    gpu_runs: Option<usize>,
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        profile: DeviceProfile::h100_sxm(),
        sms: 8,
        dispatch: Dispatch::RoundRobin,
        only: None,
        out: PathBuf::from("target/locality"),
        gpu: true,
        gpu_size: Size::Benchmark,
        gpu_runs: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--profile" => {
                let name = value()?;
                options.profile = DeviceProfile::by_name(&name).ok_or(format!(
                    "unknown profile `{name}`; known: {}",
                    DeviceProfile::names().join(", ")
                ))?;
            }
            "--sms" => {
                let sms = value()?;
                options.sms = sms
                    .parse()
                    .map_err(|_| format!("--sms takes a number of SMs, not `{sms}`"))?;
            }
            "--dispatch" => {
                options.dispatch = match value()?.as_str() {
                    "round-robin" => Dispatch::RoundRobin,
                    "observed" => Dispatch::ObservedHopper,
                    "random" => Dispatch::Random(1),
                    other => {
                        return Err(format!(
                            "unknown dispatch `{other}`; use round-robin, observed or random"
                        ))
                    }
                }
            }
            "--only" => options.only = Some(value()?),
            "--out" => options.out = PathBuf::from(value()?),
            "--no-gpu" => options.gpu = false,
            "--gpu-size" => {
                options.gpu_size = match value()?.as_str() {
                    "benchmark" => Size::Benchmark,
                    "simulate" => Size::Simulate,
                    other => {
                        return Err(format!("unknown size `{other}`; use benchmark or simulate"))
                    }
                }
            }
            "--gpu-runs" => {
                let runs = value()?;
                options.gpu_runs = Some(
                    runs.parse()
                        .ok()
                        .filter(|&r| r > 0)
                        .ok_or(format!("--gpu-runs takes a positive number, not `{runs}`"))?,
                );
            }
            "--help" | "-h" => {
                println!("{}", USAGE);
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
        }
    }
    Ok(options)
}

const USAGE: &str = "usage: locality [--profile h100|h200] [--sms N] [--dispatch round-robin|observed|random] [--only KERNEL[,KERNEL...]] [--out DIR] [--no-gpu] [--gpu-size benchmark|simulate] [--gpu-runs N]";

fn main() -> ExitCode {
    let options = match parse_options() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::FAILURE;
        }
    };
    match run(&options) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn selected(size: Size, only: &Option<String>) -> Result<Vec<Workload>, String> {
    let builders = suite::select(only.as_deref())?;
    Ok(builders.iter().map(|(_, build)| build(size)).collect())
}

fn run(options: &Options) -> Result<bool, String> {
    let profile = options
        .profile
        .scaled(options.sms)
        .map_err(|e| e.to_string())?;
    println!(
        "Locality simulator: {} ({} KiB L1 data per SM, {} KiB L2), dispatch {:?}",
        profile.name,
        profile.l1.bytes >> 10,
        profile.l2.bytes >> 10,
        options.dispatch
    );
    let workloads = selected(Size::Simulate, &options.only)?;
    let simulations = simulate_all(&workloads, &profile, &options.dispatch)?;

    let mut ok = true;
    for workload in &workloads {
        ok &= check(workload, &simulations[workload.name]);
    }
    let measured = if options.gpu {
        measure_on_gpu(options)?
    } else {
        None
    };
    print_table(&workloads, &simulations, measured.as_ref());
    std::fs::create_dir_all(&options.out)
        .map_err(|e| format!("cannot create {}: {e}", options.out.display()))?;
    let json = options.out.join("locality.json");
    to_json(&profile, &workloads, &simulations, measured.as_ref())
        .map_err(std::io::Error::from)
        .and_then(|text| std::fs::write(&json, text))
        .map_err(|e| format!("cannot write {}: {e}", json.display()))?;
    println!(
        "wrote {} (every number above, per schedule)",
        json.display()
    );
    for workload in &workloads {
        let path = options.out.join(format!("{}.svg", workload.name));
        let panels: Vec<SmMapPanel> = simulations[workload.name]
            .iter()
            .map(|s| SmMapPanel {
                title: s.variant.to_string(),
                grid: workload.grid_2d(),
                sm_of_task: s.sm_of_task.clone(),
                sm_count: profile.sm_count,
            })
            .collect();
        std::fs::write(&path, sm_map_svg(&panels))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        println!("wrote {} (which SM ran each original CTA)", path.display());
    }
    Ok(ok)
}

/// Simulates every (workload, schedule) on all host cores, one simulation
/// per core at a time (each is single-threaded and deterministic).
fn simulate_all(
    workloads: &[Workload],
    profile: &DeviceProfile,
    dispatch: &Dispatch,
) -> Result<HashMap<&'static str, Vec<Simulation>>, String> {
    let jobs: Vec<(usize, usize)> = workloads
        .iter()
        .enumerate()
        .flat_map(|(w, workload)| (0..workload.variants.len()).map(move |v| (w, v)))
        .collect();
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(jobs.len());
    let (sender, receiver) = mpsc::channel();
    let mut progress = Progress::new(jobs.len() as u64, "simulating");
    let mut results: Vec<Option<Simulation>> = (0..jobs.len()).map(|_| None).collect();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let sender = sender.clone();
            let (jobs, next) = (&jobs, &next);
            scope.spawn(move || loop {
                let job = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(w, v)) = jobs.get(job) else { break };
                let (workload, variant) = (&workloads[w], &workloads[w].variants[v]);
                let result = simulate(workload, variant, profile, dispatch.clone())
                    .map_err(|e| format!("{} / {}: {e}", workload.name, variant.label));
                if sender.send((job, result)).is_err() {
                    break;
                }
            });
        }
        drop(sender);
        for (job, result) in receiver {
            let simulation = result?;
            progress.advance(
                1,
                &format!("{} / {}", simulation.workload, simulation.variant),
            );
            results[job] = Some(simulation);
        }
        Ok::<(), String>(())
    })?;
    progress.finish();
    let mut by_workload: HashMap<&'static str, Vec<Simulation>> = HashMap::new();
    for simulation in results.into_iter().flatten() {
        by_workload
            .entry(simulation.workload)
            .or_default()
            .push(simulation);
    }
    Ok(by_workload)
}

/// Exactly once, the baseline against the CPU reference, every schedule
/// against the baseline. Prints what fails.
fn check(workload: &Workload, simulations: &[Simulation]) -> bool {
    let mut ok = true;
    let baseline = &simulations[0];
    if let Err(message) = (workload.check)(workload, &baseline.outputs) {
        println!("FAIL {} baseline: {message}", workload.name);
        ok = false;
    }
    for s in simulations {
        if let Some(task) = s.task_runs.iter().position(|&runs| runs != 1) {
            println!(
                "FAIL {} / {}: original CTA {task} ran {} times",
                s.workload, s.variant, s.task_runs[task]
            );
            ok = false;
        }
        if s.outputs != baseline.outputs {
            println!(
                "FAIL {} / {}: output differs from the baseline's",
                s.workload, s.variant
            );
            ok = false;
        }
    }
    ok
}

/// With a GPU: every workload at its benchmark size, timed.
fn measure_on_gpu(options: &Options) -> Result<Option<HashMap<&'static str, Measurement>>, String> {
    let gpu = match Gpu::new(0) {
        Ok(gpu) => gpu,
        Err(error @ (GpuError::NoDriver | GpuError::NoDevice { .. })) => {
            println!("No GPU here ({error}): simulation only. On a machine with an NVIDIA GPU this command also times every schedule.");
            return Ok(None);
        }
        Err(error) => return Err(error.to_string()),
    };
    let p = gpu.properties();
    println!(
        "GPU: {} ({} SMs, {} MiB L2): timing every schedule at {} sizes",
        p.name,
        p.sm_count,
        p.l2_cache_bytes >> 20,
        if options.gpu_size == Size::Benchmark {
            "benchmark"
        } else {
            "the simulation's"
        }
    );
    let module = gpu
        .load_module(clustered_suite::PTX)
        .map_err(|e| e.to_string())?;
    let mut measured = HashMap::new();
    // One at a time: at benchmark sizes the inputs take gigabytes.
    for (_, build) in suite::select(options.only.as_deref())? {
        let workload = build(options.gpu_size);
        let measurement =
            measure(&gpu, &module, &workload, options.gpu_runs).map_err(|e| e.to_string())?;
        match &measurement.baseline_check {
            Some(Ok(())) => {}
            Some(Err(message)) => println!("FAIL {} on the GPU: {message}", workload.name),
            // Every schedule still equals the baseline; the bench compares
            // the baseline with its nvcc twin.
            None => println!(
                "{}: not checked against the CPU reference at this size (the bench compares it with its nvcc twin)",
                workload.name
            ),
        }
        measured.insert(workload.name, measurement);
    }
    Ok(Some(measured))
}

fn ratio(value: u64, baseline: u64) -> String {
    if baseline == 0 {
        "-".into()
    } else {
        format!("{:.3}x", value as f64 / baseline as f64)
    }
}

fn print_table(
    workloads: &[Workload],
    simulations: &HashMap<&'static str, Vec<Simulation>>,
    measured: Option<&HashMap<&'static str, Measurement>>,
) {
    let mut headers = vec![
        "kernel",
        "schedule",
        "L1 hit",
        "L1->L2 sectors",
        "DRAM sectors",
        "cross-CTA reuse",
        "sim s",
    ];
    if measured.is_some() {
        headers.extend(["GPU ms", "GPU speedup", "same output"]);
    }
    let mut rows = Vec::new();
    for workload in workloads {
        let runs = &simulations[workload.name];
        let base = &runs[0].stats;
        for (i, s) in runs.iter().enumerate() {
            let stats = &s.stats;
            let mut row = vec![
                if i == 0 {
                    format!("{} ({})", workload.name, workload.problem)
                } else {
                    String::new()
                },
                s.variant.to_string(),
                format!("{:.1}%", 100.0 * stats.l1_hit_rate()),
                ratio(stats.l1_to_l2_sectors, base.l1_to_l2_sectors),
                ratio(stats.dram_sectors(), base.dram_sectors()),
                format!("{:.1}%", 100.0 * stats.cross_cta_reuse_share()),
                format!("{:.1}", s.seconds),
            ];
            if let Some(measured) = measured {
                let timings = &measured[workload.name].timings;
                let t = &timings[i];
                row.push(format!("{:.3}", t.median_ms));
                row.push(format!("{:.3}x", timings[0].median_ms / t.median_ms));
                row.push(if t.matches_baseline { "yes" } else { "NO" }.into());
            }
            rows.push(row);
        }
    }
    println!("{}", format_table(&headers, &rows));
    println!("L1->L2 and DRAM sectors relative to the baseline (below 1x: less traffic). Cross-CTA reuse: the share of reused load sectors last loaded by another original CTA.");
}

/// `locality.json`: the profile, then one flat list of records, one per
/// kernel and schedule (read by scripts/compare-ncu.py).
#[derive(Serialize)]
struct LocalityJson<'a> {
    profile: &'a str,
    records: Vec<LocalityRecord<'a>>,
}

#[derive(Serialize)]
struct LocalityRecord<'a> {
    kernel: &'a str,
    entry: &'a str,
    schedule: &'a str,
    problem: &'a str,
    l1_hit_rate: f64,
    l1_to_l2_sectors: u64,
    /// Part of `l1_to_l2_sectors`.
    l1_to_l2_atomic_sectors: u64,
    dram_sectors: u64,
    l2_hit_rate: f64,
    cross_cta_reuse_share: f64,
    instructions: u64,
    /// Only when the GPU ran the kernels too.
    #[serde(skip_serializing_if = "Option::is_none")]
    gpu_median_ms: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gpu_matches_baseline: Option<bool>,
}

/// The run as JSON.
fn to_json(
    profile: &DeviceProfile,
    workloads: &[Workload],
    simulations: &HashMap<&'static str, Vec<Simulation>>,
    measured: Option<&HashMap<&'static str, Measurement>>,
) -> Result<String, serde_json::Error> {
    let mut records = Vec::new();
    for workload in workloads {
        for (i, s) in simulations[workload.name].iter().enumerate() {
            let st = &s.stats;
            let gpu = measured
                .and_then(|m| m.get(workload.name))
                .map(|m| &m.timings[i]);
            records.push(LocalityRecord {
                kernel: workload.name,
                entry: workload.variants[i].kernel,
                schedule: s.variant,
                problem: &workload.problem,
                l1_hit_rate: st.l1_hit_rate(),
                l1_to_l2_sectors: st.l1_to_l2_sectors,
                l1_to_l2_atomic_sectors: s.atomic_sectors,
                dram_sectors: st.dram_sectors(),
                l2_hit_rate: st.l2_hit_rate(),
                cross_cta_reuse_share: st.cross_cta_reuse_share(),
                instructions: st.instructions,
                gpu_median_ms: gpu.map(|t| t.median_ms),
                gpu_matches_baseline: gpu.map(|t| t.matches_baseline),
            });
        }
    }
    let json = LocalityJson {
        profile: &profile.name,
        records,
    };
    Ok(serde_json::to_string_pretty(&json)? + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// scripts/compare-ncu.py reads `records` and in each `kernel`, `entry`,
    /// `schedule`, `l1_to_l2_sectors` and `l1_to_l2_atomic_sectors`; the GPU
    /// fields appear only with a GPU measurement, as before.
    #[test]
    fn locality_json_keeps_the_fields_the_scripts_read() {
        let record = |gpu: Option<(f32, bool)>| LocalityRecord {
            kernel: "k",
            entry: "k_agents",
            schedule: "agents \"chunk\" 8",
            problem: "n = 1",
            l1_hit_rate: 0.25,
            l1_to_l2_sectors: 10,
            l1_to_l2_atomic_sectors: 2,
            dram_sectors: 3,
            l2_hit_rate: 0.5,
            cross_cta_reuse_share: 0.125,
            instructions: 7,
            gpu_median_ms: gpu.map(|g| g.0),
            gpu_matches_baseline: gpu.map(|g| g.1),
        };
        let text = serde_json::to_string(&LocalityJson {
            profile: "H100 SXM (scaled to 8 SMs)",
            records: vec![record(None), record(Some((1.5, true)))],
        })
        .unwrap();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(json["profile"], "H100 SXM (scaled to 8 SMs)");
        let simulated = serde_json::json!({
            "kernel": "k", "entry": "k_agents", "schedule": "agents \"chunk\" 8",
            "problem": "n = 1", "l1_hit_rate": 0.25, "l1_to_l2_sectors": 10,
            "l1_to_l2_atomic_sectors": 2, "dram_sectors": 3, "l2_hit_rate": 0.5,
            "cross_cta_reuse_share": 0.125, "instructions": 7
        });
        assert_eq!(json["records"][0], simulated);
        let mut measured = simulated;
        measured["gpu_median_ms"] = 1.5.into();
        measured["gpu_matches_baseline"] = true.into();
        assert_eq!(json["records"][1], measured);
    }
}
