//! Launching the kernels of `my-kernels`: on a GPU, on the CPU backend, and
//! on the CPU backend with the locality simulator watching.
//!
//! TODO(typed launch): the launches below use today's untyped API
//! (`.arg(..)` chains, the `__clustered_contract_*` statics); switch to the
//! macro's typed handles when they land.

use clustered::host::cpu::{self, CpuLaunch, CpuPlan, Machine, Observer};
use clustered::host::{ClusterOptions, Gpu, LaunchConfig};
use clustered::sim::{CacheModel, CacheStats, DeviceProfile};

/// The kernels' PTX, built by `build.rs`.
pub const PTX: &str = clustered::include_ptx!("my-kernels");

/// Threads per block: 32 columns by 8 rows.
const BLOCK: [u32; 3] = [32, 8, 1];

/// The schedules of `transpose`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// The kernel as written.
    Baseline,
    /// The grouped raster, `transpose_grouped`.
    Grouped,
}

impl Schedule {
    /// Both schedules.
    pub const ALL: [Schedule; 2] = [Schedule::Baseline, Schedule::Grouped];

    /// The kernel's symbol in the PTX.
    pub fn symbol(self) -> &'static str {
        match self {
            Schedule::Baseline => "transpose",
            Schedule::Grouped => "transpose_grouped",
        }
    }
}

/// The original grid of an `n` x `n` transpose.
fn grid(n: u32) -> [u32; 3] {
    [n.div_ceil(BLOCK[0]), n.div_ceil(BLOCK[1]), 1]
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

/// Runs `schedule` on GPU 0.
pub fn transpose_on_gpu(
    gpu: &Gpu,
    schedule: Schedule,
    input: &[f32],
    n: u32,
) -> Result<Vec<f32>, clustered::host::Error> {
    let module = gpu.load_module(PTX)?;
    let a = gpu.htod(input)?;
    let mut b = gpu.zeros::<f32>(input.len())?;
    let original = LaunchConfig::new(grid(n), BLOCK);
    match schedule {
        Schedule::Baseline => {
            let kernel = module.kernel(schedule.symbol())?;
            // SAFETY: `a` and `b` hold n * n floats, what the kernel indexes.
            unsafe {
                gpu.launch(&kernel, original)
                    .arg(&a)
                    .arg(&mut b)
                    .arg(&n)
                    .run()?
            };
        }
        Schedule::Grouped => {
            let kernel = module.clustered_kernel(schedule.symbol())?;
            let plan = gpu.plan_clustered(&kernel, original, ClusterOptions::default())?;
            // SAFETY: as above.
            unsafe { gpu.launch_plan(&plan).arg(&a).arg(&mut b).arg(&n).run()? };
        }
    }
    gpu.dtoh(&b)
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
    let elements = (n as usize)
        .checked_mul(n as usize)
        .ok_or("n * n overflows")?;
    if input.len() != elements {
        return Err(format!(
            "input has {} floats, n * n is {elements}",
            input.len()
        ));
    }
    let mut output = vec![0.0f32; elements];
    let (a, b) = (input.as_ptr(), output.as_mut_ptr());
    let original = CpuLaunch {
        grid: grid(n),
        block: BLOCK,
        dynamic_shared_bytes: 0,
        resident_blocks: resident,
    };
    match schedule {
        Schedule::Baseline => {
            // SAFETY: `a` and `b` hold n * n floats and outlive the run.
            cpu::run(machine, &original, observer, &|| unsafe {
                my_kernels::transpose(a, b, n)
            })
        }
        Schedule::Grouped => {
            let contract = &my_kernels::__clustered_contract_transpose_grouped;
            let mut plan = CpuPlan::new(contract, original, machine, &ClusterOptions::default())
                .map_err(|e| e.to_string())?;
            let parameter = plan.parameter();
            // SAFETY: as above; `plan` outlives the run.
            cpu::run(machine, &plan.launch, observer, &|| unsafe {
                my_kernels::transpose_grouped(a, b, n, parameter)
            })
        }
    }
    .map_err(|e| e.to_string())?;
    Ok(output)
}

/// The locality simulator as an observer: every warp's accesses go through
/// an L1 per SM and a shared L2.
pub struct Locality {
    model: CacheModel,
}

impl Locality {
    /// A cache model of `profile`.
    pub fn new(profile: &DeviceProfile) -> Self {
        Locality {
            model: CacheModel::new(profile),
        }
    }

    /// What the caches saw so far.
    pub fn stats(&self) -> CacheStats {
        self.model.stats()
    }
}

impl Observer for Locality {
    fn warp_access(
        &mut self,
        sm: u32,
        task: u32,
        kind: cpu::AccessKind,
        lanes: &[cpu::LaneAccess],
    ) {
        self.model.warp_access(sm, task, kind, lanes);
    }
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
    let mut observer = Locality::new(&profile);
    let output = transpose_on_cpu(&machine, resident, schedule, input, n, &mut observer)?;
    Ok((output, observer.stats()))
}
