//! Vector add, `c = a + b`, as written and in its clustered schedules; every
//! result is checked against the CPU.
//!
//! `cargo run --release --example vector_add [-- --n 268435456]`

mod common;

use std::process::ExitCode;

use clustered::host::{ClusterOptions, Error, Gpu, LaunchConfig};

fn main() -> ExitCode {
    let gpu = match common::gpu_or_explain() {
        Ok(gpu) => gpu,
        Err(code) => return code,
    };
    match run(&gpu, common::arg_n(1 << 28) as u32) {
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
    let (a_host, b_host) = (common::inputs(n as usize, 1), common::inputs(n as usize, 2));
    let expected: Vec<f32> = a_host.iter().zip(&b_host).map(|(a, b)| a + b).collect();
    let a = gpu.htod(&a_host)?;
    let b = gpu.htod(&b_host)?;
    let mut c = gpu.zeros::<f32>(n as usize)?;
    let config = LaunchConfig::linear(n as u64, 256);
    let bytes = 3.0 * 4.0 * n as f64;
    println!(
        "vector add, n = {n}: {:.1} MB moved per launch",
        bytes / 1e6
    );

    let mut all_ok = true;
    let baseline = module.kernel("vector_add")?;
    let ms = common::median_ms(gpu, 20, || unsafe {
        gpu.launch(&baseline, config)
            .arg(&a)
            .arg(&b)
            .arg(&mut c)
            .arg(&n)
            .run()
    })?;
    all_ok &= report("baseline", ms, bytes, &gpu.dtoh(&c)?, &expected);

    for name in ["vector_add_agents", "vector_add_redirect"] {
        let kernel = module.clustered_kernel(name)?;
        let plan = gpu.plan_clustered(&kernel, config, ClusterOptions::default())?;
        // A fresh output, so a schedule cannot pass on the last one's result.
        c = gpu.zeros::<f32>(n as usize)?;
        let ms = common::median_ms(gpu, 20, || unsafe {
            gpu.launch_plan(&plan)
                .arg(&a)
                .arg(&b)
                .arg(&mut c)
                .arg(&n)
                .run()
        })?;
        all_ok &= report(name, ms, bytes, &gpu.dtoh(&c)?, &expected);
    }
    Ok(all_ok)
}

fn report(name: &str, ms: f32, bytes: f64, got: &[f32], expected: &[f32]) -> bool {
    let wrong = got
        .iter()
        .zip(expected)
        .filter(|(g, e)| g.to_bits() != e.to_bits())
        .count();
    let verdict = if wrong == 0 {
        "correct".to_string()
    } else {
        format!("WRONG in {wrong} elements")
    };
    println!(
        "  {name:<22} {ms:8.3} ms  {:7.1} GB/s  {verdict}",
        bytes / ms as f64 / 1e6
    );
    wrong == 0
}
