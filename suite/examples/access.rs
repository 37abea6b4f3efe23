//! The static locality report: for each suite kernel, what the access
//! analysis of `#[clustered]` read in its body (each global access's affine
//! form and the paper's class), what that predicts at one launch (sectors
//! per request, per-CTA footprint, reuse, L1 and L2 hit rates), and the
//! schedules it proposes and why; without running the kernel.
//!
//! With `--validate` it also runs each baseline on the locality simulator
//! (the same launch, CPU backend) and prints predicted beside simulated.
//!
//! ```text
//! cargo run --release --example access [-- --only sgemm_naive,transpose --validate
//!     --size simulate|test|benchmark --sms 8 --out target/access]
//! ```
//!
//! No GPU needed. The JSON (`<out>/access.json`) holds every number printed.

use std::path::PathBuf;
use std::process::ExitCode;

use serde::Serialize;

use clustered_suite::host::cpu::Dispatch;
use clustered_suite::sim::access::{estimate, sharing_text, StaticEstimate, StaticLaunch};
use clustered_suite::sim::{format_table, DeviceProfile};
use clustered_suite::simulate::simulate;
use clustered_suite::suite::{self, Arg, Size, Workload};

/// Warp requests enumerated per kernel at most (about a second each).
const BUDGET: u64 = 20_000_000;

struct Options {
    only: Option<String>,
    size: Size,
    validate: bool,
    sms: u32,
    out: PathBuf,
}

const USAGE: &str = "usage: access [--only KERNEL[,KERNEL...]] [--size simulate|test|benchmark] [--validate] [--sms N] [--out DIR]";

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        only: None,
        size: Size::Simulate,
        validate: false,
        sms: 8,
        out: PathBuf::from("target/access"),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--only" => options.only = Some(value()?),
            "--validate" => options.validate = true,
            "--out" => options.out = PathBuf::from(value()?),
            "--sms" => {
                let sms = value()?;
                options.sms = sms
                    .parse()
                    .ok()
                    .filter(|&s| s > 0)
                    .ok_or(format!("--sms takes a number of SMs, not `{sms}`"))?;
            }
            "--size" => {
                options.size = match value()?.as_str() {
                    "simulate" => Size::Simulate,
                    "test" => Size::Test,
                    "benchmark" => Size::Benchmark,
                    other => {
                        return Err(format!(
                            "unknown size `{other}`; use simulate, test or benchmark"
                        ))
                    }
                }
            }
            "--help" | "-h" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
        }
    }
    if options.validate && options.size == Size::Benchmark {
        return Err("--validate simulates the kernel: use --size simulate or test".into());
    }
    Ok(options)
}

/// A kernel's report, as JSON.
#[derive(Serialize)]
struct Report {
    kernel: &'static str,
    problem: String,
    grid: [u32; 3],
    block: [u32; 3],
    ctas_enumerated: u64,
    accesses: Vec<AccessRow>,
    predicted: Rates,
    simulated: Option<Rates>,
    /// What the analysis proposes with this launch's values.
    proposals: Vec<ProposalRow>,
    /// What `#[clustered(auto)]` generated at compile time (no values
    /// known), the baseline first: the tuned launch's candidates.
    auto_family: Vec<&'static str>,
}

#[derive(Serialize)]
struct AccessRow {
    line: u32,
    source: String,
    direction: &'static str,
    form: String,
    class: &'static str,
    sharing: String,
    sectors_per_request: f64,
    footprint_bytes: u64,
}

#[derive(Serialize, Clone, Copy)]
struct Rates {
    /// Load sector accesses that an infinite cache would hit.
    reuse: f64,
    /// Of those, the share another CTA loaded last.
    cross_cta_share: f64,
    l1_hit: f64,
    l2_hit: f64,
}

#[derive(Serialize)]
struct ProposalRow {
    schedule: String,
    why: &'static str,
}

/// L1 and L2 hit rates from the infinite-cache counts and the caches'
/// sizes: reuse within a CTA hits L1 while the CTAs resident on an SM fit
/// in it; the rest of the reuse hits L2 while the CTAs in flight fit in it.
/// Stores go to L2 and count as misses there (as the simulator counts
/// write allocations).
fn rates(e: &StaticEstimate, profile: &DeviceProfile, resident: u32) -> Rates {
    let loads = e.load_sectors.max(1) as f64;
    let intra = e.reused_sectors.saturating_sub(e.cross_cta_reused_sectors) as f64;
    let footprint: u64 = e
        .accesses
        .iter()
        .filter(|a| a.direction == clustered_suite::sim::access::Direction::Load)
        .map(|a| a.footprint_bytes)
        .sum();
    let fits =
        |cache: u64, ctas: u64| (cache as f64 / (footprint.max(1) * ctas.max(1)) as f64).min(1.0);
    let l1_hits = intra * fits(profile.l1.bytes, u64::from(resident));
    let in_flight = u64::from(resident) * u64::from(profile.sm_count);
    let l2_hits = (e.reused_sectors as f64 - l1_hits).max(0.0) * fits(profile.l2.bytes, in_flight);
    let stores: u64 = e
        .accesses
        .iter()
        .filter(|a| a.direction != clustered_suite::sim::access::Direction::Load)
        .map(|a| a.sectors)
        .sum();
    Rates {
        reuse: e.reuse(),
        cross_cta_share: if e.reused_sectors == 0 {
            0.0
        } else {
            e.cross_cta_reused_sectors as f64 / e.reused_sectors as f64
        },
        l1_hit: l1_hits / loads,
        l2_hit: l2_hits / ((loads - l1_hits) + stores as f64).max(1.0),
    }
}

fn report(
    workload: &Workload,
    options: &Options,
    profile: &DeviceProfile,
) -> Result<Option<Report>, String> {
    let baseline = &workload.variants[0];
    let Some(accesses) = baseline.accesses else {
        return Ok(None);
    };
    // Integer parameters by name, from the workload's arguments.
    let scalars: Vec<(&str, i64)> = accesses
        .parameters
        .iter()
        .zip(&workload.args)
        .filter_map(|(name, arg)| match arg {
            Arg::U32(v) => Some((*name, i64::from(*v))),
            _ => None,
        })
        .collect();
    let shape = workload.shape;
    let (grid, block) = (shape.grid, shape.block);
    let launch = StaticLaunch {
        grid,
        block,
        scalars: &scalars,
    };
    let e = estimate(accesses, &launch, BUDGET);
    let resident =
        profile.resident_blocks(shape.block_threads() as u32, shape.dynamic_shared_bytes);
    let predicted = rates(&e, profile, resident);
    let simulated = if options.validate {
        let sim = simulate(workload, baseline, profile, Dispatch::RoundRobin)
            .map_err(|err| format!("{}: {err}", workload.name))?;
        let s = sim.stats;
        Some(Rates {
            reuse: s.reuse_share(),
            cross_cta_share: s.cross_cta_reuse_share(),
            l1_hit: s.l1_hit_rate(),
            l2_hit: s.l2_hit_rate(),
        })
    } else {
        None
    };
    Ok(Some(Report {
        kernel: workload.name,
        problem: workload.problem.clone(),
        grid,
        block,
        ctas_enumerated: e.ctas_enumerated,
        accesses: e
            .accesses
            .iter()
            .map(|a| AccessRow {
                line: a.line,
                source: a.source.clone(),
                direction: a.direction.name(),
                form: a.form.clone(),
                class: a.class.name(),
                sharing: sharing_text(a.sharing, accesses),
                sectors_per_request: a.sectors_per_request,
                footprint_bytes: a.footprint_bytes,
            })
            .collect(),
        predicted,
        simulated,
        proposals: e
            .proposals
            .iter()
            .map(|p| ProposalRow {
                schedule: format!("{}_auto_{}", workload.variants[0].kernel, p.tag),
                why: p.why,
            })
            .collect(),
        auto_family: baseline
            .auto_family
            .map(|family| family())
            .unwrap_or_default(),
    }))
}

fn print(report: &Report) {
    println!(
        "\n{} ({}), grid {:?}, block {:?}{}",
        report.kernel,
        report.problem,
        report.grid,
        report.block,
        if report.ctas_enumerated < report.grid.iter().map(|&g| u64::from(g)).product() {
            format!(", first {} CTAs enumerated", report.ctas_enumerated)
        } else {
            String::new()
        }
    );
    let rows: Vec<Vec<String>> = report
        .accesses
        .iter()
        .map(|a| {
            vec![
                a.line.to_string(),
                a.direction.into(),
                a.source.chars().take(40).collect(),
                a.form.clone(),
                a.class.into(),
                a.sharing.clone(),
                format!("{:.1}", a.sectors_per_request),
                format!("{}", a.footprint_bytes),
            ]
        })
        .collect();
    println!(
        "{}",
        format_table(
            &[
                "line",
                "",
                "access",
                "affine form (elements)",
                "class",
                "CTAs share",
                "sectors/req",
                "bytes/CTA"
            ],
            &rows
        )
    );
    let rate = |r: &Rates| {
        format!(
            "reuse {:.1}% (cross-CTA {:.1}% of it), L1 hit {:.1}%, L2 hit {:.1}%",
            100.0 * r.reuse,
            100.0 * r.cross_cta_share,
            100.0 * r.l1_hit,
            100.0 * r.l2_hit
        )
    };
    println!("predicted: {}", rate(&report.predicted));
    if let Some(simulated) = &report.simulated {
        println!("simulated: {}", rate(simulated));
    }
    if report.proposals.is_empty() {
        println!("proposes: the baseline only (nothing the analysis can exploit)");
    }
    for p in &report.proposals {
        println!("proposes {}: {}", p.schedule, p.why);
    }
    println!(
        "#[clustered(auto)] built (compile time): {}",
        report.auto_family.join(", ")
    );
}

fn run(options: &Options) -> Result<(), String> {
    let profile = DeviceProfile::h100_sxm()
        .scaled(options.sms)
        .map_err(|e| e.to_string())?;
    let mut reports = Vec::new();
    for (_, build) in suite::select(options.only.as_deref())? {
        let workload = build(options.size);
        if let Some(report) = report(&workload, options, &profile)? {
            print(&report);
            reports.push(report);
        }
    }
    if options.validate {
        let rows: Vec<Vec<String>> = reports
            .iter()
            .filter_map(|r| {
                let s = r.simulated?;
                let p = r.predicted;
                let pct = |v: f64| format!("{:.1}", 100.0 * v);
                Some(vec![
                    r.kernel.to_string(),
                    format!("{} / {}", pct(p.reuse), pct(s.reuse)),
                    format!("{} / {}", pct(p.cross_cta_share), pct(s.cross_cta_share)),
                    format!("{} / {}", pct(p.l1_hit), pct(s.l1_hit)),
                    format!("{} / {}", pct(p.l2_hit), pct(s.l2_hit)),
                ])
            })
            .collect();
        println!(
            "\npredicted / simulated, % ({}, {} SMs):\n{}",
            profile.name,
            profile.sm_count,
            format_table(
                &["kernel", "reuse", "cross-CTA share", "L1 hit", "L2 hit"],
                &rows
            )
        );
    }
    std::fs::create_dir_all(&options.out)
        .map_err(|e| format!("cannot create {}: {e}", options.out.display()))?;
    let path = options.out.join("access.json");
    let json = serde_json::to_string_pretty(&reports).map_err(|e| e.to_string())?;
    std::fs::write(&path, json).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    println!("\nwrote {}", path.display());
    Ok(())
}

fn main() -> ExitCode {
    match parse_options().and_then(|options| run(&options)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}
