//! The CUDA SDK's shared-memory tiled SGEMM (32x32 tiles), `C = A * B` for
//! `n x n` matrices, as written and in its clustered schedules. Sampled rows
//! are checked against the CPU (in f64); every schedule must equal the
//! baseline bit for bit.
//!
//! `cargo run --release --example sgemm [-- --n 4096]`

mod common;

use std::process::ExitCode;

use clustered::host::{ClusterOptions, Error, Gpu, LaunchConfig};

const TILE: u32 = 32;

fn main() -> ExitCode {
    let gpu = match common::gpu_or_explain() {
        Ok(gpu) => gpu,
        Err(code) => return code,
    };
    let n = common::arg_n(4096) as u32;
    if n == 0 || !n.is_multiple_of(TILE) {
        eprintln!("error: n = {n} must be a positive multiple of {TILE}");
        return ExitCode::FAILURE;
    }
    match run(&gpu, n) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run(gpu: &Gpu, n: u32) -> Result<bool, Error> {
    let module = gpu.load_module(clustered::PTX)?;
    let len = (n * n) as usize;
    let (a_host, b_host) = (common::inputs(len, 3), common::inputs(len, 4));
    let a = gpu.htod(&a_host)?;
    let b = gpu.htod(&b_host)?;
    let mut c = gpu.zeros::<f32>(len)?;
    let config = LaunchConfig::new([n / TILE, n / TILE, 1], [TILE, TILE, 1]);
    let flops = 2.0 * (n as f64).powi(3);
    let runs = if n >= 4096 { 10 } else { 20 };
    println!("tiled SGEMM, n = {n}: median of {runs} launches");

    let baseline = module.kernel("sgemm_tiled")?;
    let ms = common::median_ms(gpu, runs, || unsafe {
        gpu.launch(&baseline, config)
            .arg(&a)
            .arg(&b)
            .arg(&mut c)
            .arg(&n)
            .run()
    })?;
    let reference = gpu.dtoh(&c)?;
    let cpu_ok = check_against_cpu(&a_host, &b_host, &reference, n);
    println!(
        "  {:<22} {ms:8.2} ms  {:7.0} GFLOP/s  {}",
        "baseline",
        flops / ms as f64 / 1e6,
        if cpu_ok {
            "matches the CPU"
        } else {
            "WRONG against the CPU"
        }
    );
    let mut all_ok = cpu_ok;

    for name in [
        "sgemm_tiled_raster",
        "sgemm_tiled_agents",
        "sgemm_tiled_redirect",
    ] {
        let kernel = module.clustered_kernel(name)?;
        let plan = gpu.plan_clustered(&kernel, config, ClusterOptions::default())?;
        // A fresh output, so a schedule cannot pass on the last one's result.
        c = gpu.zeros::<f32>(len)?;
        let ms = common::median_ms(gpu, runs, || unsafe {
            gpu.launch_plan(&plan)
                .arg(&a)
                .arg(&b)
                .arg(&mut c)
                .arg(&n)
                .run()
        })?;
        let same = gpu.dtoh(&c)? == reference;
        all_ok &= same;
        println!(
            "  {name:<22} {ms:8.2} ms  {:7.0} GFLOP/s  {}",
            flops / ms as f64 / 1e6,
            if same {
                "identical to baseline"
            } else {
                "DIFFERS from baseline"
            }
        );
    }
    Ok(all_ok)
}

/// Recomputes every 61st row (and the last) in f64 and compares with a
/// tolerance that scales with n.
fn check_against_cpu(a: &[f32], b: &[f32], c: &[f32], n: u32) -> bool {
    let n = n as usize;
    let tolerance = 1e-5 * n as f64;
    let rows: Vec<usize> = (0..n).step_by(61).chain([n - 1]).collect();
    let mut row_sums = vec![0f64; n];
    for &i in &rows {
        row_sums.iter_mut().for_each(|s| *s = 0.0);
        for k in 0..n {
            let aik = a[i * n + k] as f64;
            let b_row = &b[k * n..(k + 1) * n];
            for (s, &bkj) in row_sums.iter_mut().zip(b_row) {
                *s += aik * bkj as f64;
            }
        }
        for j in 0..n {
            if (c[i * n + j] as f64 - row_sums[j]).abs() > tolerance {
                eprintln!(
                    "  C[{i}][{j}] = {} but the CPU says {}",
                    c[i * n + j],
                    row_sums[j]
                );
                return false;
            }
        }
    }
    true
}
