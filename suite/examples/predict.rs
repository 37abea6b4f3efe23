//! Predicts every schedule's time on an H100 from the suite's PTX, without a
//! GPU, and compares with a bench run.
//!
//! ```text
//! cargo run --release --example predict -- KERNEL[,KERNEL...]   # breakdown per schedule
//! cargo run --release --example predict -- --all --sim          # every kernel, traffic from the simulator
//!     [--device predict/devices/h100-sxm.json] [--bench FILE] [--fit] [--fit-task-loop]
//!     [--skips FILE [--margin 0.25]] [--rerun FILE] [--no-register-cap]
//! ```
//!
//! Per schedule: the launch the host plans (its grid, and whether its CTAs
//! loop over tasks or run one each), registers and resident CTAs,
//! warp instructions, each bound (issue, latency, DRAM, L2, L1, blocks) in ms, the
//! prediction, which bound it is and by how much, and the measured median
//! where the bench has one. With `--all`: MAPE over every record, Spearman's
//! rank correlation per kernel and how many of its schedule pairs measured
//! more than 2% apart the prediction orders right, for training and
//! held-out kernels apart.
//! `--fit` searches the overlap fraction on the training kernels only,
//! `--fit-task-loop` the task loops' overhead (with the file's overlap,
//! or `--fit`'s).
//! `--skips FILE` writes, per kernel, the entries of its automatic family
//! predicted slower than its baseline by more than `--margin` (a fraction):
//! `bench --skip FILE` tunes the automatic choice without them.
//! `--rerun FILE` orders `--bench`'s schedules by a second measured run
//! instead of by the model, kernel by kernel beside the model on the same
//! schedules: how far a run's own orders repeat, the most a prediction of
//! them can reach (`drift`: the second run's MAPE against the first).
//! Registers are those the loader runs (`Gpu::load_module` keeps schedules
//! at their kernel's occupancy); `--no-register-cap` takes ptxas's own, as
//! the bench runs recorded before those caps ran.
//! Building a workload at benchmark size allocates its buffers (up to 3 GiB
//! for vector_add): use `--release`.

use std::collections::BTreeMap;
use std::process::ExitCode;

use clustered_predict::bench::{records, Record, H100_2026_11_25, H100_BENCH};
use clustered_predict::stats::{mape, ordered_pairs, spearman, Between, NEAR};
use clustered_predict::{ptxas, DeviceModel, Module, Prediction};
use clustered_suite::host::cuda_tool;
use clustered_suite::predict::{
    as_loaded, cache_profile, predict_workload, traffic_ratios, LoadedResources, SkipList,
};
use clustered_suite::suite::{self, Size};

/// Kernels kept out of any fitting (`--fit`, `--fit-task-loop`), reported apart: five suite
/// kernels, and the eight ports (Rodinia, Parboil, SHOC), which no
/// measurement of the model's making included (their first bench run is
/// `predict/data/h100-2026-11-25-all.json`).
const HELD_OUT: &[&str] = &[
    "sgemm_register",
    "kmeans_assign",
    "transpose_wide",
    "jacobi7_3d",
    "black_scholes",
    "hotspot",
    "pathfinder",
    "bpnn_layerforward",
    "bpnn_adjust_weights",
    "nn_euclid",
    "triad",
    "parboil_stencil",
    "spmv_jds",
    // Written after the device model's calibration: sessions 14 and 16.
    "atax_rows_gemv",
    "conv5x5_tiled",
    "jacobi5_march",
    "jacobi7_3d_march",
    "transpose_tiled",
    "transpose_wide_tiled",
    // Written in session 17.
    "black_scholes_fast",
    "jacobi5_march4",
    "jacobi7_3d_march4",
    // Written in session 18.
    "atax_columns_gemv",
];

const USAGE: &str = "\
usage: predict [KERNEL[,KERNEL...] | --all] [OPTIONS]
  KERNEL[,KERNEL...]  each schedule's breakdown: bounds, the prediction, the measured median
  --all               every suite kernel (the default): MAPE and rank correlation per kernel
  --sim               L1, L2 and DRAM traffic from the cache simulator (else compulsory bytes)
  --device FILE       the device model (default: the H100 SXM, predict/devices/h100-sxm.json)
  --bench FILE        the measured medians to compare with (default: the shipped H100 run)
  --fit               fit the overlap fraction on the training kernels
  --fit-task-loop     fit the task loops' overhead
  --skips FILE        write the candidates predicted slower than the baseline by --margin
  --margin FRACTION   for --skips (default 0.25: 25% slower)
  --rerun FILE        order --bench's schedules by a second measured run, beside the model
  --no-register-cap   ptxas's own registers, not the loader's occupancy caps
  --help              this text";

struct Row {
    kernel: &'static str,
    /// A candidate of the kernel's automatic family (`<kernel>::AUTO`, the
    /// baseline excepted), as compiled (`Workload::as_compiled`).
    candidate: bool,
    label: &'static str,
    entry: &'static str,
    prediction: Result<Prediction, String>,
    measured: Option<f64>,
    /// In the `--rerun` file.
    rerun: Option<f64>,
    /// In the newer 7-kernel run (`bench::H100_2026_11_25`).
    newer: Option<f64>,
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let mut only = None;
    let (mut sim, mut fit, mut fit_task_loop) = (false, false, false);
    let mut device_path = None;
    let mut bench_path = None;
    let mut skips_path = None;
    let mut rerun_path = None;
    let mut margin = 0.25;
    let mut register_caps = true;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--all" => only = None,
            "--sim" => sim = true,
            "--fit" => fit = true,
            "--fit-task-loop" => fit_task_loop = true,
            "--no-register-cap" => register_caps = false,
            "--device" => device_path = Some(args.next().ok_or("--device needs a file")?),
            "--bench" => bench_path = Some(args.next().ok_or("--bench needs a file")?),
            "--skips" => skips_path = Some(args.next().ok_or("--skips needs a file")?),
            "--rerun" => rerun_path = Some(args.next().ok_or("--rerun needs a bench file")?),
            "--margin" => {
                margin = args
                    .next()
                    .and_then(|m| m.parse::<f64>().ok())
                    .filter(|m| *m >= 0.0)
                    .ok_or("--margin needs a fraction, 0 or more (0.25: 25% slower)")?
            }
            "--help" | "-h" => {
                println!("{USAGE}");
                return Ok(());
            }
            other if !other.starts_with("--") => only = Some(other.to_string()),
            other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
        }
    }
    let mut device = match &device_path {
        Some(path) => DeviceModel::from_json(
            &std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?,
        )
        .map_err(|e| format!("{path}: {e}"))?,
        None => DeviceModel::h100_sxm(),
    };
    let bench_text = match &bench_path {
        Some(path) => std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?,
        None => H100_BENCH.to_string(),
    };
    let (bench_device, bench) = records(&bench_text).map_err(|e| format!("bench file: {e}"))?;
    let rerun = match &rerun_path {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
            Some(records(&text).map_err(|e| format!("{path}: {e}"))?)
        }
        None => None,
    };
    let mut newer_bench = Vec::new();
    for text in H100_2026_11_25 {
        newer_bench.extend(records(text).map_err(|e| format!("newer bench: {e}"))?.1);
    }
    let module = Module::parse(clustered_suite::PTX).map_err(|e| e.to_string())?;
    let resources = match cuda_tool("ptxas") {
        Some(path) => {
            let own = ptxas::resources(&path, clustered_suite::PTX, "sm_90")
                .map_err(|e| e.to_string())?;
            if register_caps {
                let loaded = as_loaded(&path, clustered_suite::PTX, own, &device)
                    .map_err(|e| e.to_string())?;
                println!(
                    "registers as the loader runs them (kept at the kernel's occupancy where a launch's grid needs it; --no-register-cap for bench runs from before 2026-11-26's caps): {}",
                    loaded
                        .capped
                        .iter()
                        .map(|(e, capped)| format!(
                            "{e} {}->{}",
                            loaded.own[e].registers, capped.registers
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                loaded
            } else {
                LoadedResources::uncapped(own)
            }
        }
        None => {
            println!("ptxas not found (pip install nvidia-cuda-nvcc, or set PTXAS): every entry assumed 32 registers");
            LoadedResources::default()
        }
    };
    println!(
        "device model: {} ({} SMs, {} GHz, DRAM {} GB/s, L2 {} GB/s, overlap {}, task loops +{}); measurements: {bench_device}; traffic: {}",
        device.name,
        device.sm_count,
        device.clock_ghz,
        device.dram_gbps,
        device.l2_gbps,
        device.overlap,
        device.task_loop_overhead,
        if sim { "simulated (an 8-SM slice of the device's cache profile, ratios to compulsory bytes)" } else { "compulsory bytes (--sim for the simulator's)" }
    );

    let mut rows = Vec::new();
    for (name, build) in suite::select(only.as_deref())? {
        let small = sim.then(|| build(Size::Simulate));
        let ratios = small.as_ref().map_or(BTreeMap::new(), |small| {
            traffic_ratios(small, &cache_profile(&device))
        });
        // One benchmark-size workload at a time: they allocate their inputs.
        let workload = build(Size::Benchmark);
        let family = workload.variants[0].auto_family.map_or(Vec::new(), |f| f());
        for (i, (label, entry, prediction)) in predict_workload(
            &module,
            &workload,
            small.as_ref(),
            &device,
            &resources,
            &ratios,
        )
        .into_iter()
        .enumerate()
        {
            let measured_here = measured(&bench, name, label);
            rows.push(Row {
                kernel: name,
                candidate: i > 0 && workload.as_compiled(i) && family.contains(&entry),
                label,
                entry,
                prediction,
                measured: measured_here,
                rerun: rerun.as_ref().and_then(|(_, r)| measured(r, name, label)),
                newer: measured(&newer_bench, name, label),
            });
        }
    }
    if fit {
        fit_figure(&mut device, &mut rows, Figure::Overlap);
    }
    if fit_task_loop {
        fit_figure(&mut device, &mut rows, Figure::TaskLoop);
    }
    if let Some(path) = &skips_path {
        let text = skips(&rows, &device.name, margin);
        std::fs::write(path, text).map_err(|e| format!("{path}: {e}"))?;
        println!("wrote {path}: per kernel, the automatic candidates predicted over {:.0}% slower than the baseline", margin * 100.0);
    }
    print_breakdown(&rows);
    if only.is_none() || rows.iter().filter(|r| r.measured.is_some()).count() > 3 {
        print_validation(&rows, &bench, |r| r.measured);
    }
    if let Some((rerun_device, _)) = &rerun {
        print_rerun(&rows, &bench_device, rerun_device);
    }
    // The shipped newer run was measured on an H100: compared only with
    // predictions for one.
    if !device.name.contains("H100") {
        println!(
            "\nthe shipped H100 run (predict/data/h100-2026-11-25) is not compared: the device model is {}",
            device.name
        );
    } else if only.is_none() || rows.iter().filter(|r| r.newer.is_some()).count() > 3 {
        println!("\nthe newer H100 run (predict/data/h100-2026-11-25, 7 kernels with the auto schedules): held out from every choice");
        print_validation(&rows, &newer_bench, |r| r.newer);
    }
    Ok(())
}

/// The `--skips` file: each kernel's automatic candidates whose
/// prediction is above its baseline's (its first row) by more than `margin`.
fn skips(rows: &[Row], device: &str, margin: f64) -> String {
    let mut list = SkipList {
        device: device.to_string(),
        margin,
        ..SkipList::default()
    };
    for (i, baseline) in rows.iter().enumerate() {
        let (true, Ok(base)) = (
            i == 0 || rows[i - 1].kernel != baseline.kernel,
            &baseline.prediction,
        ) else {
            continue;
        };
        let slower = rows[i..]
            .iter()
            .take_while(|r| r.kernel == baseline.kernel)
            .filter(|r| r.candidate)
            .filter(|r| {
                r.prediction
                    .as_ref()
                    .is_ok_and(|p| p.ms > base.ms * (1.0 + margin))
            })
            .map(|r| r.entry.to_string())
            .collect();
        list.kernels.insert(baseline.kernel.to_string(), slower);
    }
    let mut text = serde_json::to_string_pretty(&list).expect("a map of strings serializes");
    text.push('\n');
    text
}

fn measured(bench: &[Record], kernel: &str, label: &str) -> Option<f64> {
    bench
        .iter()
        .find(|r| r.kernel == kernel && r.schedule == label && r.entry.is_some())
        .map(|r| r.median_ms)
}

fn print_breakdown(rows: &[Row]) {
    println!(
        "\n{:<18} {:<34} {:>10} {:>5} {:>4} {:>5} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>9} {:>7}",
        "kernel",
        "schedule",
        "grid",
        "ctas",
        "regs",
        "occ",
        "issue",
        "latency",
        "dram",
        "l2",
        "l1",
        "blocks",
        "predicted",
        "bound",
        "measured",
        "error"
    );
    for r in rows {
        match &r.prediction {
            Ok(p) => {
                let error = r.measured.or(r.newer).map_or(String::new(), |m| {
                    format!("{:+.0}%", 100.0 * (p.ms - m) / m)
                });
                println!(
                    "{:<18} {:<34} {:>10} {:>5} {:>4} {:>5} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>10} {:>9} {:>7}",
                    r.kernel,
                    r.label,
                    p.launched_blocks,
                    if p.persistent { "loop" } else { "one" },
                    p.registers,
                    format!("{}w", p.warps_per_sm),
                    p.issue_ms,
                    p.latency_ms,
                    p.dram_ms,
                    p.l2_ms,
                    p.l1_ms,
                    p.blocks_ms,
                    p.ms,
                    format!("{} x{:.1}", p.bound, p.margin.min(99.9)),
                    r.measured
                        .or(r.newer)
                        .map_or("-".to_string(), |m| format!("{m:.3}")),
                    error
                );
            }
            Err(e) => println!("{:<18} {:<34} no prediction: {e}", r.kernel, r.label),
        }
    }
    // The assumptions, once per entry.
    let mut said = std::collections::BTreeSet::new();
    for r in rows {
        if let Ok(p) = &r.prediction {
            for a in &p.assumptions {
                if said.insert((r.entry, a.clone())) {
                    println!("  {}: {a}", r.entry);
                }
            }
        }
    }
}

fn pairs<'a>(
    rows: impl Iterator<Item = &'a Row>,
    measured: impl Fn(&Row) -> Option<f64>,
) -> Vec<(f64, f64)> {
    pairs_of(rows, |p| p.ms, measured)
}

/// `(predicted, measured)` of each row with both, the prediction's time
/// as `predicted` takes it.
fn pairs_of<'a>(
    rows: impl Iterator<Item = &'a Row>,
    predicted: impl Fn(&Prediction) -> f64,
    measured: impl Fn(&Row) -> Option<f64>,
) -> Vec<(f64, f64)> {
    rows.filter_map(|r| Some((predicted(r.prediction.as_ref().ok()?), measured(r)?)))
        .collect()
}

fn print_validation(rows: &[Row], bench: &[Record], measured: impl Fn(&Row) -> Option<f64>) {
    let suite_records = bench.iter().filter(|r| r.entry.is_some()).count();
    let predicted = rows
        .iter()
        .filter(|r| measured(r).is_some() && r.prediction.is_ok())
        .count();
    println!("\nvalidation: {predicted} of {suite_records} suite records predicted (the {} nvcc twins are not in the suite's PTX)", bench.len() - suite_records);
    println!(
        "{:<18} {:>9} {:>8} {:>9} {:>12}  set",
        "kernel", "schedules", "MAPE", "spearman", "ordered"
    );
    let mut kernels: Vec<&str> = rows
        .iter()
        .filter(|r| measured(r).is_some())
        .map(|r| r.kernel)
        .collect();
    kernels.dedup();
    for k in &kernels {
        let p = pairs(rows.iter().filter(|r| r.kernel == *k), &measured);
        println!(
            "{:<18} {:>9} {:>7.1}% {:>9} {:>12}  {}",
            k,
            p.len(),
            mape(&p).unwrap_or(f64::NAN),
            spearman(&p).map_or("-".to_string(), |s| format!("{s:.2}")),
            ordered_pairs(&p, APART).map_or("-".to_string(), |(right, n)| format!("{right}/{n}")),
            if HELD_OUT.contains(k) {
                "held out"
            } else {
                "training"
            }
        );
    }
    for (set, held) in [("training", false), ("held out", true), ("all", true)] {
        let p = pairs(
            rows.iter()
                .filter(|r| set == "all" || HELD_OUT.contains(&r.kernel) == held),
            &measured,
        );
        let in_set: Vec<Vec<(f64, f64)>> = kernels
            .iter()
            .filter(|k| set == "all" || HELD_OUT.contains(k) == held)
            .map(|k| pairs(rows.iter().filter(|r| r.kernel == *k), &measured))
            .collect();
        let rho: Vec<f64> = in_set.iter().filter_map(|p| spearman(p)).collect();
        // Pairs of one kernel's schedules, summed over its kernels.
        let (right, apart) = in_set
            .iter()
            .filter_map(|p| ordered_pairs(p, APART))
            .fold((0.0, 0), |(r, n), (right, apart)| (r + right, n + apart));
        if p.is_empty() {
            println!("{set:<9}: no measured records");
            continue;
        }
        println!(
            "{set:<9}: MAPE {:.1}% over {} records; median per-kernel spearman {}; schedule pairs more than {:.0}% apart ordered right: {right} of {apart} ({:.0}%)",
            mape(&p).unwrap_or(f64::NAN),
            p.len(),
            median(&rho).map_or("-".to_string(), |m| format!("{m:.2}")),
            APART * 100.0,
            100.0 * right / apart.max(1) as f64
        );
    }
    // Where the orders go wrong: a schedule whose CTAs loop over tasks
    // (agents, persistent, grid-stride) against one launching the kernel's
    // grid, per kernel.
    // Twice: as predicted, and without the task loops' overhead (the
    // evidence for that figure: the pairs the other terms cannot tell).
    let between = |without_task_loop: bool| {
        kernels
            .iter()
            .map(|k| {
                let looping = |r: &Row| r.prediction.as_ref().is_ok_and(|p| p.persistent);
                let of_kernel = rows.iter().filter(|r| r.kernel == *k);
                let predicted = |p: &Prediction| {
                    if without_task_loop {
                        p.ms - p.task_loop_ms
                    } else {
                        p.ms
                    }
                };
                let loops = pairs_of(
                    of_kernel.clone().filter(|r| looping(r)),
                    predicted,
                    &measured,
                );
                let launches = pairs_of(of_kernel.filter(|r| !looping(r)), predicted, &measured);
                Between::of(&loops, &launches, APART)
            })
            .fold(Between::default(), |sum, b| sum + b)
    };
    let (untold, between) = (between(true), between(false));
    if between.pairs > 0 {
        let share = |x: f64| 100.0 * x / between.pairs as f64;
        println!(
            "task loops (agents, persistent, grid-stride) against launches of the grid: {} pairs more than {:.0}% apart; the loop measured slower in {} ({:.0}%), predicted slower in {} ({:.0}%); ordered right {} ({:.0}%)",
            between.pairs,
            APART * 100.0,
            between.first_slower,
            share(between.first_slower as f64),
            between.first_predicted_slower,
            share(between.first_predicted_slower),
            between.ordered,
            share(between.ordered)
        );
        println!(
            "  of them predicted within {:.1}% of each other without the task loops' overhead: {}, the loop measured slower in {}",
            100.0 * NEAR,
            untold.near,
            untold.near_first_slower
        );
    }
}

/// `--rerun`: per kernel, over the schedules measured in both runs, how
/// the second run orders the first's (its Spearman and ordered pairs)
/// beside how the model does on the same schedules.
fn print_rerun(rows: &[Row], first: &str, second: &str) {
    println!("\nthe same schedules measured again (--rerun; {second}) against the model, each against --bench ({first})");
    println!(
        "{:<18} {:>9} {:>8} {:>14} {:>14} {:>14} {:>14}",
        "kernel",
        "schedules",
        "drift",
        "rerun spearman",
        "model spearman",
        "rerun ordered",
        "model ordered"
    );
    let mut kernels: Vec<&str> = rows.iter().map(|r| r.kernel).collect();
    kernels.dedup();
    let (mut rho_rerun, mut rho_model) = (Vec::new(), Vec::new());
    let (mut right_rerun, mut right_model, mut apart) = (0.0, 0.0, 0);
    let show = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.2}"));
    for k in kernels {
        let both: Vec<&Row> = rows
            .iter()
            .filter(|r| {
                r.kernel == k && r.measured.is_some() && r.rerun.is_some() && r.prediction.is_ok()
            })
            .collect();
        if both.len() < 2 {
            continue;
        }
        // The second run in the place of a prediction of the first.
        let rerun: Vec<(f64, f64)> = both
            .iter()
            .filter_map(|r| Some((r.rerun?, r.measured?)))
            .collect();
        let model = pairs(both.iter().copied(), |r| r.measured);
        let (s_rerun, s_model) = (spearman(&rerun), spearman(&model));
        // Both medians over the same kernels.
        if let (Some(a), Some(b)) = (s_rerun, s_model) {
            rho_rerun.push(a);
            rho_model.push(b);
        }
        let ordered = |p: &[(f64, f64)]| ordered_pairs(p, APART);
        if let (Some((r, n)), Some((m, _))) = (ordered(&rerun), ordered(&model)) {
            (right_rerun, right_model, apart) = (right_rerun + r, right_model + m, apart + n);
        }
        println!(
            "{:<18} {:>9} {:>7.1}% {:>14} {:>14} {:>14} {:>14}",
            k,
            both.len(),
            mape(&rerun).unwrap_or(f64::NAN),
            show(s_rerun),
            show(s_model),
            ordered(&rerun).map_or("-".to_string(), |(r, n)| format!("{r}/{n}")),
            ordered(&model).map_or("-".to_string(), |(r, n)| format!("{r}/{n}")),
        );
    }
    let share = |right: f64| 100.0 * right / apart.max(1) as f64;
    println!(
        "median per-kernel spearman: rerun {}, model {}; pairs more than {:.0}% apart in --bench ordered right: rerun {right_rerun} of {apart} ({:.0}%), model {right_model} ({:.0}%)",
        show(median(&rho_rerun)),
        show(median(&rho_model)),
        APART * 100.0,
        share(right_rerun),
        share(right_model)
    );
}

/// Measured times closer than this fraction are an order that a rerun may
/// swap (one machine's runs repeat within about 0.5%, docs/BENCHMARKS.md;
/// the tuner's margin is 1%): `ordered` counts only pairs further apart.
const APART: f64 = 0.02;

fn median(values: &[f64]) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

/// A device figure that `--fit` or `--fit-task-loop` searches.
#[derive(Clone, Copy)]
enum Figure {
    /// `overlap`: 0, 0.05, .. 1.
    Overlap,
    /// `task_loop_overhead`: 0, 0.005, .. 0.15.
    TaskLoop,
}

/// The value of `figure` that minimises the training kernels' MAPE (the
/// first of its steps that does), the device's other figures as they are,
/// applied to every row (the held-out kernels never inform it); prints
/// each step's MAPE.
fn fit_figure(device: &mut DeviceModel, rows: &mut [Row], figure: Figure) {
    let (name, steps): (&str, Vec<f64>) = match figure {
        Figure::Overlap => ("overlap", (0..=20).map(|s| f64::from(s) * 0.05).collect()),
        Figure::TaskLoop => (
            "task_loop_overhead",
            (0..=30).map(|s| f64::from(s) * 0.005).collect(),
        ),
    };
    let with = |value: f64| {
        let mut tried = device.clone();
        match figure {
            Figure::Overlap => tried.overlap = value,
            Figure::TaskLoop => tried.task_loop_overhead = value,
        }
        tried
    };
    let tried: Vec<(f64, f64)> = steps
        .into_iter()
        .map(|value| {
            let tried = with(value);
            let p: Vec<(f64, f64)> = rows
                .iter()
                .filter(|r| !HELD_OUT.contains(&r.kernel))
                .filter_map(|r| Some((r.prediction.as_ref().ok()?.timed_on(&tried).0, r.measured?)))
                .collect();
            (value, mape(&p).unwrap_or(f64::INFINITY))
        })
        .collect();
    let (value, m) = tried
        .iter()
        .copied()
        .fold((0.0, f64::INFINITY), |best, this| {
            if this.1 < best.1 {
                this
            } else {
                best
            }
        });
    let steps: Vec<String> = tried.iter().map(|(v, m)| format!("{v}: {m:.2}%")).collect();
    println!(
        "fit: the training kernels' MAPE by {name}: {}",
        steps.join(", ")
    );
    println!("fit: {name} {value} minimises it ({m:.2}%); put it in the device file to keep it");
    *device = with(value);
    for r in rows.iter_mut() {
        if let Ok(p) = &mut r.prediction {
            (p.ms, p.task_loop_ms) = p.timed_on(device);
        }
    }
}
