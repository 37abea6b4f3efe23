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
//!     --twins target/twins/suite.ptx --tuner PATH]
//! ```

mod report;

use std::path::PathBuf;
use std::process::ExitCode;

use clustered_suite::host::tuner::{Choice, TuneKey, Tuner};
use clustered_suite::host::{Error, Gpu, Module};
use clustered_suite::measure::{measure_with_twin, Measurement};
use clustered_suite::sim::format_table;
use clustered_suite::suite::{self, Class, Size, Workload};
use report::{speedup_chart_svg, ChartBar, ChartGroup};

struct Options {
    only: Option<String>,
    out: PathBuf,
    twins: Option<PathBuf>,
    tuner: PathBuf,
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        only: None,
        out: PathBuf::from("target/bench"),
        twins: ["target/twins/suite.ptx", "twins.ptx"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.exists()),
        tuner: Tuner::default_path(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--only" => options.only = Some(value()?),
            "--out" => options.out = value()?.into(),
            "--twins" => options.twins = Some(value()?.into()),
            "--tuner" => options.tuner = value()?.into(),
            other => {
                return Err(format!(
                    "unknown argument `{other}`; usage: bench [--only KERNEL[,KERNEL...]] [--out DIR] [--twins PTX] [--tuner FILE]"
                ))
            }
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
    let module = gpu
        .load_module(clustered_suite::PTX)
        .map_err(|e| e.to_string())?;
    let twins = load_twins(gpu, &options.twins);
    let mut tuner = Tuner::open(&options.tuner).map_err(|e| e.to_string())?;
    let started = std::time::Instant::now();
    let mut results: Vec<(Workload, Measurement, Choice)> = Vec::new();
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
        // Only schedules with the baseline's output may be chosen.
        let candidates: Vec<&str> = workload.variants.iter().map(|v| v.kernel).collect();
        let samples: Vec<Vec<f32>> = measured
            .timings
            .iter()
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
        results.push((workload, measured, choice));
    }
    println!("measured in {:.0} s", started.elapsed().as_secs_f64());
    print_report(&results);
    write_outputs(&options.out, &p.name, &results)?;
    Ok(ok)
}

fn print_report(results: &[(Workload, Measurement, Choice)]) {
    let headers = [
        "kernel",
        "problem",
        "schedule",
        "median ms",
        "speedup",
        "tuned",
        "same output",
    ];
    let mut rows = Vec::new();
    for (workload, measured, choice) in results {
        let chosen = &choice.schedule;
        let base = measured.timings[0].median_ms;
        for (i, t) in measured.timings.iter().enumerate() {
            rows.push(vec![
                if i == 0 {
                    workload.name.to_string()
                } else {
                    String::new()
                },
                if i == 0 {
                    workload.problem.clone()
                } else {
                    String::new()
                },
                t.label.to_string(),
                format!("{:.3}", t.median_ms),
                format!("{:.3}x", base / t.median_ms),
                if workload.variants[i].kernel == *chosen {
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
    }
    println!("{}", format_table(&headers, &rows));

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

fn write_outputs(
    out: &PathBuf,
    device: &str,
    results: &[(Workload, Measurement, Choice)],
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
            records.push(format!(
                "{{\"kernel\": \"{}\", \"problem\": \"{}\", \"schedule\": \"{}\", \"entry\": \"{entry}\", \"median_ms\": {:.6}, \"speedup\": {:.6}, \"tuned\": {}, \"matches_baseline\": {}, \"samples_ms\": {:?}}}",
                workload.name, workload.problem, t.label, t.median_ms, base / t.median_ms, entry == *chosen, t.matches_baseline, t.samples_ms
            ));
            if i > 0 {
                bars.push(ChartBar {
                    label: t.label.to_string(),
                    speedup: (base / t.median_ms) as f64,
                    marked: entry == *chosen,
                });
            }
        }
        if let Some(twin) = &measured.twin {
            records.push(format!(
                "{{\"kernel\": \"{}\", \"problem\": \"{}\", \"schedule\": \"nvcc twin\", \"median_ms\": {:.6}, \"rust_over_nvcc\": {:.6}, \"samples_ms\": {:?}}}",
                workload.name, workload.problem, twin.median_ms, base / twin.median_ms, twin.samples_ms
            ));
        }
        groups.push(ChartGroup {
            kernel: format!("{} ({})", workload.name, workload.problem),
            bars,
        });
    }
    let json = out.join("bench.json");
    let text = format!(
        "{{\"device\": \"{device}\", \"records\": [\n  {}\n]}}\n",
        records.join(",\n  ")
    );
    std::fs::write(&json, text).map_err(|e| format!("cannot write {}: {e}", json.display()))?;
    let svg = out.join("speedups.svg");
    let chart = speedup_chart_svg(&format!("Speedup over the baseline, {device}"), &groups);
    std::fs::write(&svg, chart).map_err(|e| format!("cannot write {}: {e}", svg.display()))?;
    println!("wrote {} and {}", json.display(), svg.display());
    Ok(())
}
