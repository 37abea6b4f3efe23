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

use clustered_suite::access_report::{render, report};
use clustered_suite::sim::{format_table, DeviceProfile};
use clustered_suite::suite::{self, Size};

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

fn run(options: &Options) -> Result<(), String> {
    let profile = DeviceProfile::h100_sxm()
        .scaled(options.sms)
        .map_err(|e| e.to_string())?;
    let mut reports = Vec::new();
    for (_, build) in suite::select(options.only.as_deref())? {
        let workload = build(options.size);
        if let Some(report) = report(&workload, &profile, options.validate)? {
            print!("{}", render(&report));
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
