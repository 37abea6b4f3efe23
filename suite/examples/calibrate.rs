//! Calibrates the static predictor's device model on GPU 0 (issue 16):
//! `cargo run --release -p clustered-suite --example calibrate -- [--base
//! DEVICE.json] [--out PATH] [--runs N]`.
//!
//! Runs the microbenchmarks of `kernels::calibrate` (pointer chases for the
//! L1, L2 and DRAM latencies; dependent FP32 and integer chains; FP32
//! throughput and the clock under load; L2 and DRAM bandwidth; the SMs'
//! rate of starting empty blocks; and, printed only, the other fences,
//! cluster barriers and the turnover of blocks that work), prints per
//! figure the measured value beside the base file's, warns about figures
//! that look wrong, and writes the base device file (the shipped H100 SXM
//! model, or `--base`) with the measured figures and their provenance to
//! `--out` (default `target/calibrated-<device>.json`, relative to the
//! current directory). docs/PREDICTION.md, "Calibration", says what each
//! microbenchmark measures.
//!
//! Without a GPU it prints "no GPU: skipped" and exits 0.

use std::process::ExitCode;

use clustered_suite::calibrate::{
    calibrated_model, default_out, load_base, measure, parse_args, render_table, sanity,
    write_model, USAGE,
};

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("calibrate: {e}");
            return ExitCode::from(2);
        }
    };
    if args.help {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let base = match load_base(args.base.as_deref()) {
        Ok(base) => base,
        Err(e) => {
            eprintln!("calibrate: {e}");
            return ExitCode::from(2);
        }
    };
    let (gpu, module) = match clustered_suite::gpu_or_skip() {
        Ok(Some(found)) => found,
        Ok(None) => {
            println!("calibrate: nothing measured, no device file written");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("calibrate: the suite's PTX does not load: {e}");
            return ExitCode::FAILURE;
        }
    };
    let props = gpu.properties();
    println!(
        "device: {} ({} SMs, sm_{}{}); base: {}; {} runs per figure",
        props.name,
        props.sm_count,
        props.compute_capability.0,
        props.compute_capability.1,
        args.base
            .as_deref()
            .map_or("the shipped H100 SXM model".to_string(), |p| p
                .display()
                .to_string()),
        args.runs
    );
    let started = std::time::Instant::now();
    let calibration = match measure(&gpu, &module, args.runs, &mut |step| {
        eprintln!("calibrate: {step}")
    }) {
        Ok(calibration) => calibration,
        Err(e) => {
            eprintln!("calibrate: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("measured in {:.1} s\n", started.elapsed().as_secs_f64());
    print!("{}", render_table(&calibration, &base));
    let warnings: Vec<String> = calibration
        .warnings
        .iter()
        .cloned()
        .chain(sanity(&calibration, &base))
        .collect();
    for warning in &warnings {
        println!("warning: {warning}");
    }
    let model = match calibrated_model(&base, &calibration) {
        Ok(model) => model,
        Err(e) => {
            eprintln!("calibrate: {e}");
            return ExitCode::FAILURE;
        }
    };
    let out = args.out.unwrap_or_else(|| default_out(&calibration.device));
    if let Err(e) = write_model(&out, &model) {
        eprintln!("calibrate: {e}");
        return ExitCode::FAILURE;
    }
    println!(
        "\nwrote {} ({} measured figures, {} warnings); predict with it: \
         cargo run --release -p clustered-suite --example predict -- --all --sim --device {}",
        out.display(),
        calibration.measurements.len(),
        warnings.len(),
        out.display()
    );
    ExitCode::SUCCESS
}
