//! Launching the kernels of `my-kernels`: on a GPU, on the CPU backend, and
//! on the CPU backend with the locality simulator watching.
//!
//! Each launch goes through the typed handle that `#[clustered]` emits next
//! to the kernel: `transpose::KERNEL` (the kernel as written),
//! `transpose::transpose_grouped` (the schedule) and `transpose::SCHEDULES`
//! (every schedule). The arguments are a tuple typed from the kernel's
//! signature, so a missing or mistyped argument does not compile.

use clustered::host::cpu::{self, CpuLaunch, Machine, Observer};
use clustered::host::{ClusterOptions, Entry, Gpu, LaunchConfig};
use clustered::sim::{CacheModel, CacheStats, DeviceProfile};

pub use my_kernels::transpose;

/// The kernels' PTX, built by `build.rs`.
pub const PTX: &str = clustered::include_ptx!("my-kernels");

/// Threads per block: 32 columns by 8 rows.
const BLOCK: [u32; 3] = [32, 8, 1];

/// A way to run `transpose`: the kernel as written or one of its schedules.
pub type Schedule = Entry<transpose>;

/// The kernel as written, then every schedule that `#[clustered]` added.
pub fn schedules() -> impl Iterator<Item = Schedule> {
    std::iter::once(transpose::KERNEL).chain(transpose::SCHEDULES.iter().copied())
}

/// The original grid of an `n` x `n` transpose.
fn grid(n: u32) -> [u32; 3] {
    [n.div_ceil(BLOCK[0]), n.div_ceil(BLOCK[1]), 1]
}

/// Checks that `input` is an `n` x `n` matrix: what the kernel indexes.
fn check_len(input: &[f32], n: u32) -> Result<usize, String> {
    let elements = (n as usize)
        .checked_mul(n as usize)
        .ok_or("n * n overflows")?;
    if input.len() != elements {
        return Err(format!(
            "input has {} floats, n * n is {elements}",
            input.len()
        ));
    }
    Ok(elements)
}

/// `inᵀ`, computed on the host: what every schedule must produce.
pub fn reference(input: &[f32], n: usize) -> Vec<f32> {
    let mut out = vec![0.0; n * n];
    for y in 0..n {
        for x in 0..n {
            out[x * n + y] = input[y * n + x];
        }
    }
    out
}

/// Runs `schedule` on `gpu`.
pub fn transpose_on_gpu(
    gpu: &Gpu,
    schedule: Schedule,
    input: &[f32],
    n: u32,
) -> Result<Vec<f32>, String> {
    let elements = check_len(input, n)?;
    let run = || -> Result<Vec<f32>, clustered::host::Error> {
        let module = gpu.load_module(PTX)?;
        let a = gpu.htod(input)?;
        let mut b = gpu.zeros::<f32>(elements)?;
        let original = LaunchConfig::new(grid(n), BLOCK);
        // SAFETY: `a` and `b` hold n * n floats (checked above), what the
        // kernel indexes. A schedule is planned from its own contract.
        unsafe {
            gpu.launch_entry(
                &module,
                schedule,
                original,
                &ClusterOptions::default(),
                (&a, &mut b, n),
            )?
        };
        gpu.dtoh(&b)
    };
    run().map_err(|e| format!("{}: {e}", schedule.name()))
}

/// Runs `schedule` on the CPU backend's simulated `machine`, `resident`
/// blocks per SM, reporting every warp's accesses to `observer`.
pub fn transpose_on_cpu(
    machine: &Machine,
    resident: u32,
    schedule: Schedule,
    input: &[f32],
    n: u32,
    observer: &mut dyn Observer,
) -> Result<Vec<f32>, String> {
    let elements = check_len(input, n)?;
    let mut output = vec![0.0f32; elements];
    let original = CpuLaunch {
        grid: grid(n),
        block: BLOCK,
        dynamic_shared_bytes: 0,
        resident_blocks: resident,
    };
    // SAFETY: `input` and `output` hold n * n floats (checked above); the
    // CPU backend also checks each access against them.
    unsafe {
        cpu::launch_entry(
            schedule,
            machine,
            original,
            &ClusterOptions::default(),
            observer,
            (input, &mut output[..], n),
        )
    }
    .map_err(|e| format!("{}: {e}", schedule.name()))?;
    Ok(output)
}

/// Runs `schedule` on an H100 scaled to `sms` SMs with the cache model
/// watching; returns the output and the caches' counts.
pub fn locality(
    schedule: Schedule,
    input: &[f32],
    n: u32,
    sms: u32,
) -> Result<(Vec<f32>, CacheStats), String> {
    let profile = DeviceProfile::h100_sxm()
        .scaled(sms)
        .map_err(|e| e.to_string())?;
    let resident = profile.resident_blocks(BLOCK[0] * BLOCK[1], 0);
    let machine = Machine::new(profile.sm_count);
    // The cache model is an observer: every warp's accesses go through an
    // L1 per SM and a shared L2.
    let mut caches = CacheModel::new(&profile);
    let output = transpose_on_cpu(&machine, resident, schedule, input, n, &mut caches)?;
    Ok((output, caches.stats()))
}
