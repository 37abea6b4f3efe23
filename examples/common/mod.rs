//! What the examples share: finding the GPU, timing, reading `--n`.
#![allow(dead_code)]

use std::process::ExitCode;

use clustered::host::{Error, Gpu, GpuTimer};

/// The GPU, or `Err(exit code)` after saying why there is none.
pub fn gpu_or_explain() -> Result<Gpu, ExitCode> {
    match Gpu::new(0) {
        Ok(gpu) => {
            let p = gpu.properties();
            println!(
                "device: {} (compute capability {}.{}, {} SMs, {} MiB L2)",
                p.name,
                p.compute_capability.0,
                p.compute_capability.1,
                p.sm_count,
                p.l2_cache_bytes >> 20
            );
            Ok(gpu)
        }
        Err(error @ (Error::NoDriver | Error::NoDevice { .. })) => {
            println!("No GPU here: {error}.");
            println!("This example runs its kernels on an NVIDIA GPU; see README.md, \"Running on a GPU\".");
            Err(ExitCode::SUCCESS)
        }
        Err(error) => {
            eprintln!("error: {error}");
            Err(ExitCode::FAILURE)
        }
    }
}

/// Median milliseconds of `runs` timed launches (after one warm-up).
pub fn median_ms(
    gpu: &Gpu,
    runs: usize,
    mut launch: impl FnMut() -> Result<(), Error>,
) -> Result<f32, Error> {
    launch()?;
    let timer = GpuTimer::new(gpu.stream())?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        timer.start()?;
        launch()?;
        timer.stop()?;
        times.push(timer.elapsed_ms()?);
    }
    times.sort_by(f32::total_cmp);
    Ok(times[times.len() / 2])
}

/// `--n N` from the command line, or `default`.
pub fn arg_n(default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == "--n")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Deterministic inputs in [-1, 1).
pub fn inputs(n: usize, seed: u64) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}
