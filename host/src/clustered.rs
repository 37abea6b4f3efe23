//! Launching clustered kernels: read and check the kernel's contract, size
//! the agents from the kernel's occupancy, pick ACTIVE by policy, give each
//! launch its own zeroed scratch, and pass the [`ClusterLaunch`] parameter.
//!
//! ```no_run
//! # use clustered_host::*;
//! # fn main() -> Result<(), Error> {
//! # let gpu = Gpu::new(0)?; let module = gpu.load_module("")?;
//! # let (a, b, mut c) = (gpu.zeros::<f32>(1)?, gpu.zeros::<f32>(1)?, gpu.zeros::<f32>(1)?);
//! let kernel = module.clustered_kernel("vector_add_agents")?;
//! // The ORIGINAL kernel's grid and block; the plan turns them into agents.
//! let plan = gpu.plan_clustered(&kernel, LaunchConfig::linear(1 << 20, 256), ClusterOptions::default())?;
//! let n = 1u32 << 20;
//! unsafe { gpu.launch_plan(&plan).arg(&a).arg(&b).arg(&mut c).arg(&n).run()? };
//! # Ok(()) }
//! ```

use std::fmt;
use std::sync::Arc;

use clustered_device::abi::{
    scratch_words, Binding, ClusterLaunch, IndexingKind, KernelContract, Tail, ABI_VERSION,
    CONTRACT_MAGIC,
};
use clustered_device::mapping::{grid_size, Indexing, IndexingError, MappingError};
use clustered_device::schedule::tail_start;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DeviceRepr};

use crate::launch::Launch;
use crate::{Error, Gpu, Kernel, LaunchConfig, Module};

/// How many of the agents on each SM work (ACTIVE); the rest exit at once.
/// Throttling trades parallelism for less cache contention.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum ActivePolicy {
    /// The kernel's `active = N` if it has one, else all of them.
    #[default]
    FromKernel,
    /// All MAX agents per SM.
    All,
    /// Exactly this many per SM; more than MAX is an error.
    Fixed(u32),
    /// This fraction of MAX, rounded up, at least one.
    Fraction(f32),
}

/// Options of a clustered launch; the defaults suit normal use.
#[derive(Clone, Debug, Default)]
pub struct ClusterOptions {
    /// ACTIVE agents per SM.
    pub active: ActivePolicy,
    /// The stream to launch on (default: the GPU's stream). One plan runs on
    /// one stream, so launches of one plan never share scratch memory.
    pub stream: Option<Arc<CudaStream>>,
    /// Launch this many agents per SM instead of MAX (at most MAX).
    pub agents_per_sm: Option<u32>,
    /// Launch this many agents in all, e.g. fewer than SMs (tests use it to
    /// starve SMs). Overrides `agents_per_sm` and a grid-stride contract's
    /// `waves`.
    pub total_agents: Option<u32>,
    /// Clusters `M` (default: the SM count).
    pub clusters: Option<u32>,
    /// Launch in Hopper thread block clusters of this many consecutive
    /// blocks along x (`cuLaunchKernelEx`; see
    /// [`LaunchConfig::with_block_cluster`]). A reorder schedule's cluster
    /// holds consecutive tasks of its order, which share data; the grid's x
    /// must be a multiple of it. The persistent bindings launch a multiple
    /// of it agents (at least one cluster); their clusters co-schedule
    /// agents, whatever tasks those claim. Not the paper's clusters `M`.
    pub block_cluster: Option<u32>,
    /// The band of a raster schedule (`tile(1, G)`, `column_tile(G, 1)`,
    /// `sawtooth(1, G)`) chosen at launch instead of the `G` compiled in:
    /// the band travels in the launch parameter, so one entry runs any `G`.
    /// Any other indexing is [`ClusterError::NotARaster`].
    pub raster_group: Option<RasterGroup>,
}

impl ClusterOptions {
    /// The blocks of each thread block cluster a launch with these options
    /// asks for ([`LaunchConfig::block_cluster`]): `block_cluster` blocks
    /// along x, `[1, 1, 1]` without it. (A width of 0 is refused when the
    /// launch is planned.)
    pub fn block_cluster_dims(&self) -> [u32; 3] {
        [self.block_cluster.unwrap_or(1), 1, 1]
    }
}

/// How many CTAs a raster's band holds ([`ClusterOptions::raster_group`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RasterGroup {
    /// This many (at least 1; need not divide the grid: the last band is
    /// short).
    Ctas(u32),
    /// From the CTAs resident at once, `R` = SMs x the kernel's blocks per
    /// SM: the power of two nearest below `sqrt(R)`, at most the grid's
    /// extent across the bands. A wave of `R` CTAs in bands of `G` touches
    /// `G` rows of tiles and `R / G` columns; their sum is least at
    /// `G = sqrt(R)` when a row and a column of tiles share as much (GEMM).
    /// Launched so on an H200 (docs/BENCHMARKS.md, "Bands at launch,
    /// measured"), it is the fastest band of the tiled SGEMM and within 0.7%
    /// of it on the naive and register-tiled ones, and 11-14% slower than the
    /// best band on the transposes, whose rasters win by cache lines, not
    /// reuse (G = 4 there): give those a band.
    FromOccupancy,
}

impl RasterGroup {
    /// The band for `resident` CTAs at once and `across` CTAs of the grid
    /// across the bands.
    pub fn ctas(self, resident: u32, across: u32) -> u32 {
        match self {
            RasterGroup::Ctas(g) => g,
            RasterGroup::FromOccupancy => {
                let root = (f64::from(resident)).sqrt().floor().max(1.0) as u32;
                let power = 1u32 << (31 - root.leading_zeros());
                power.min(across.max(1))
            }
        }
    }
}

/// Why a clustered launch was refused.
#[allow(missing_docs)] // the fields hold what their names say
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ClusterError {
    /// The kernel has no contract global: it was not made by `#[clustered]`.
    NotClustered { kernel: String },
    /// The contract global is not one this crate understands.
    ContractMismatch {
        kernel: String,
        found: KernelContract,
    },
    /// ACTIVE is zero or above MAX.
    ActiveOutOfRange { active: u32, max: u32 },
    /// More agents per SM than fit (MAX).
    TooManyAgents { requested: u32, max: u32 },
    /// The kernel cannot run at this block size and shared memory.
    ZeroOccupancy {
        kernel: String,
        block_threads: u64,
        dynamic_shared_bytes: u32,
    },
    /// The grid, tile or cluster count cannot be mapped.
    Mapping(MappingError),
    /// The schedule's `custom(..)` indexing is not a bijection of the grid.
    NotABijection {
        kernel: String,
        grid: [u32; 3],
        error: IndexingError,
    },
    /// A fraction policy outside (0, 1].
    BadFraction(f32),
    /// A throttling policy for a binding whose CTAs all work (`stride`).
    NoThrottling { policy: ActivePolicy },
    /// A grid-stride loop's last step would pass linear id 2^32 - 1.
    StrideTooLong { tasks: u32, blocks: u32 },
    /// A grid-stride loop's tail as blocks (`tail = blocks`) would take the
    /// grid past the largest grid along x.
    TailTooLong { blocks: u64, limit: u32 },
    /// More clusters than CTAs (or SMs): clusters would be empty.
    TooManyClusters { clusters: u32, limit: u32 },
    /// `total_agents` is zero or above what could ever work (the larger of
    /// the resident agents and the CTAs).
    TotalAgentsOutOfRange { requested: u32, limit: u32 },
    /// A count of the launch does not fit in 32 bits.
    Overflow { what: &'static str },
    /// A thread block cluster width of 0, or one that does not divide the
    /// blocks launched along x (the original grid's, or `total_agents`).
    BlockClusterWidth { width: u32, grid_x: u32 },
    /// A raster band asked of a schedule whose indexing is not a raster.
    NotARaster { indexing: String },
    /// A raster band of 0 CTAs.
    EmptyRasterGroup,
}

impl fmt::Display for ClusterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClusterError::NotClustered { kernel } => write!(
                f,
                "`{kernel}` is not a clustered kernel (its module has no `__clustered_contract_{kernel}`); launch it with `Gpu::launch`, or add #[clustered(..)] to its source"
            ),
            ClusterError::ContractMismatch { kernel, found } => write!(
                f,
                "`{kernel}` was built against another launch contract (ABI {} with a {}-byte parameter; this host speaks ABI {ABI_VERSION} with {} bytes): rebuild the kernels and the host from the same clustered-device",
                found.abi_version,
                found.launch_size,
                std::mem::size_of::<ClusterLaunch>()
            ),
            ClusterError::ActiveOutOfRange { active, max } => write!(
                f,
                "ACTIVE = {active} agents per SM is outside 1..={max} (MAX, from the kernel's occupancy): choose a smaller fixed count or a fraction"
            ),
            ClusterError::TooManyAgents { requested, max } => write!(
                f,
                "{requested} agents per SM requested, but only {max} fit (MAX, from the kernel's occupancy)"
            ),
            ClusterError::ZeroOccupancy { kernel, block_threads, dynamic_shared_bytes } => write!(
                f,
                "`{kernel}` cannot run with {block_threads} threads and {dynamic_shared_bytes} bytes of dynamic shared memory per block (occupancy 0): use smaller blocks or less shared memory"
            ),
            ClusterError::Mapping(error) => write!(f, "cannot cluster this grid: {error}"),
            ClusterError::NotABijection { kernel, grid, error } => write!(
                f,
                "`{kernel}` on grid {grid:?}: {error}; fix the indexing function"
            ),
            ClusterError::BadFraction(fraction) => write!(f, "ACTIVE fraction {fraction} is outside (0, 1]"),
            ClusterError::StrideTooLong { tasks, blocks } => write!(
                f,
                "a grid-stride loop of {blocks} blocks over {tasks} CTAs would step past CTA id 2^32 - 1: launch fewer CTAs or fewer blocks (`total_agents`)"
            ),
            ClusterError::TailTooLong { blocks, limit } => write!(
                f,
                "a grid-stride loop with its tail as blocks (`tail = blocks`) would launch {blocks} blocks, past the {limit} a grid holds along x: use `tail = claims`, or launch fewer CTAs"
            ),
            ClusterError::TooManyClusters { clusters, limit } => write!(
                f,
                "{clusters} clusters requested, but at most {limit} can hold a CTA (the larger of the grid's CTAs and the SMs): ask for fewer clusters or leave `clusters` unset"
            ),
            ClusterError::TotalAgentsOutOfRange { requested, limit } => write!(
                f,
                "total_agents = {requested} is outside 1..={limit} (the larger of the agents that fit at once and the grid's CTAs): ask for fewer agents or leave `total_agents` unset"
            ),
            ClusterError::Overflow { what } => write!(
                f,
                "{what} does not fit in 32 bits: launch a smaller grid or fewer agents"
            ),
            ClusterError::BlockClusterWidth { width, grid_x } => write!(
                f,
                "thread block clusters of {width} blocks cannot tile a grid of {grid_x} blocks along x: choose a width of at least 1 that divides {grid_x}, or leave `block_cluster` unset"
            ),
            ClusterError::NotARaster { indexing } => write!(
                f,
                "`raster_group` sets the band of `tile(1, G)`, `column_tile(G, 1)` or `sawtooth(1, G)`; this schedule's indexing is {indexing}: leave `raster_group` unset, or give the kernel a raster schedule"
            ),
            ClusterError::EmptyRasterGroup => write!(
                f,
                "a raster band of 0 CTAs: ask for at least 1 (RasterGroup::Ctas(g)) or RasterGroup::FromOccupancy"
            ),
            ClusterError::NoThrottling { policy } => write!(
                f,
                "ACTIVE policy {policy:?} does not apply to `binding = stride`: every CTA of a grid-stride loop works; use ActivePolicy::FromKernel or All, or a claiming binding (agents, persistent) to throttle"
            ),
        }
    }
}

impl std::error::Error for ClusterError {}

/// A kernel made by `#[clustered]`, with its checked contract.
#[derive(Debug, Clone)]
pub struct ClusteredKernel {
    kernel: Kernel,
    contract: KernelContract,
    /// Where the module runs `kernel` capped at its kernel's occupancy: its
    /// own code, for launches that do not need the cap
    /// ([`crate::cap_needed`]).
    uncapped: Option<Kernel>,
}

impl ClusteredKernel {
    /// The underlying kernel.
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    /// What the kernel declared about itself.
    pub fn contract(&self) -> &KernelContract {
        &self.contract
    }

    /// Its binding.
    pub fn binding(&self) -> Binding {
        Binding::from_u32(self.contract.binding).expect("checked when the kernel was looked up")
    }

    /// The code a launch of `original` runs: the module's (capped, where
    /// it is) unless the schedule's own code holds the whole grid at once.
    fn for_launch(&self, original: &LaunchConfig, sm_count: u32) -> Result<ClusteredKernel, Error> {
        if let Some(uncapped) = &self.uncapped {
            let fits = uncapped.occupancy(
                original.block_threads() as u32,
                original.dynamic_shared_bytes,
            )?;
            if !crate::cap_needed(original.grid_blocks(), fits, sm_count) {
                return Ok(ClusteredKernel {
                    kernel: uncapped.clone(),
                    contract: self.contract,
                    uncapped: None,
                });
            }
        }
        Ok(self.clone())
    }
}

/// Decodes and checks the bytes of a kernel's contract global. A global of
/// another size with the contract's magic was written by another version
/// of `clustered-device` (the contract grew from 40 to 44 bytes with ABI
/// 4): that is a
/// [`ClusterError::ContractMismatch`] naming its ABI, so the user rebuilds,
/// not a kernel "without a contract".
pub fn decode_contract(kernel: &str, bytes: &[u8]) -> Result<KernelContract, ClusterError> {
    let mut fixed = [0u8; std::mem::size_of::<KernelContract>()];
    let n = bytes.len().min(fixed.len());
    fixed[..n].copy_from_slice(&bytes[..n]);
    // SAFETY: KernelContract is repr(C) plain u32s; any bytes are a value.
    let found: KernelContract = unsafe { std::ptr::read_unaligned(fixed.as_ptr().cast()) };
    if bytes.len() < 8 || found.magic != CONTRACT_MAGIC {
        Err(ClusterError::NotClustered {
            kernel: kernel.to_string(),
        })
    } else if bytes.len() != fixed.len() {
        Err(ClusterError::ContractMismatch {
            kernel: kernel.to_string(),
            found,
        })
    } else {
        check_contract(kernel, found)
    }
}

/// Checks a contract read from a module.
///
/// Besides the magic and the ABI version, the options it records must obey
/// the rules the macro applies ([`Options::violations`]): a contract with
/// `chunk` on a grid-stride loop, say, was not made by `#[clustered]`.
///
/// [`Options::violations`]: clustered_device::abi::Options::violations
pub fn check_contract(kernel: &str, found: KernelContract) -> Result<KernelContract, ClusterError> {
    let options_valid = found
        .options()
        .is_some_and(|options| options.violations().next().is_none());
    let ok = found.magic == CONTRACT_MAGIC
        && found.abi_version == ABI_VERSION
        && found.launch_size as usize == std::mem::size_of::<ClusterLaunch>()
        && options_valid
        && IndexingKind::from_u32(found.indexing).is_some();
    if ok {
        Ok(found)
    } else {
        Err(ClusterError::ContractMismatch {
            kernel: kernel.to_string(),
            found,
        })
    }
}

impl Module {
    /// Looks up a kernel made by `#[clustered]` and checks its contract.
    pub fn clustered_kernel(&self, name: &str) -> Result<ClusteredKernel, Error> {
        let kernel = self.kernel(name)?;
        let symbol = format!("{}{name}", clustered_device::abi::CONTRACT_PREFIX);
        let stream = kernel.context().default_stream();
        let global = match self.cuda_module().get_global(&symbol, &stream) {
            Ok(global) => global,
            Err(_) => {
                return Err(ClusterError::NotClustered {
                    kernel: name.into(),
                }
                .into())
            }
        };
        let mut bytes = vec![0u8; global.len()];
        stream
            .memcpy_dtoh(&global, &mut bytes)
            .map_err(Error::driver("cuMemcpyDtoH(contract)"))?;
        stream
            .synchronize()
            .map_err(Error::driver("cuStreamSynchronize"))?;
        let contract = decode_contract(name, &bytes)?;
        let uncapped = self.uncapped_kernel(name)?;
        Ok(ClusteredKernel {
            kernel,
            contract,
            uncapped,
        })
    }
}

/// The kernel parameter, wrapped so that cudarc may pass it by value.
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct LaunchParameter(pub(crate) ClusterLaunch);

// SAFETY: ClusterLaunch is repr(C), Copy, and made of plain integers.
unsafe impl DeviceRepr for LaunchParameter {}

impl<'a, 'b: 'a> crate::launch::sealed::Raw<'a> for &'b LaunchParameter {
    fn raw(self) -> crate::block_cluster::RawArg<'a> {
        crate::block_cluster::RawArg::value(self)
    }
}

/// Everything a clustered launch needs, computed once: run it any number of
/// times with [`Gpu::launch_plan`].
#[derive(Debug)]
pub struct ClusteredPlan {
    pub(crate) kernel: ClusteredKernel,
    pub(crate) stream: Arc<CudaStream>,
    /// The launch of the new kernel (agents: one block per agent).
    pub config: LaunchConfig,
    /// The original kernel's launch.
    pub original: LaunchConfig,
    pub(crate) parameter: LaunchParameter,
    /// Scratch words of the agent counters; zeroed before every run.
    pub(crate) scratch: Option<CudaSlice<u32>>,
    /// MAX: agents per SM that fit, from the kernel's occupancy.
    pub max_agents_per_sm: u32,
    /// ACTIVE: agents per SM that work.
    pub active_agents: u32,
}

impl ClusteredPlan {
    /// The parameter passed to the kernel.
    pub fn parameter(&self) -> &ClusterLaunch {
        &self.parameter.0
    }

    /// The kernel this plan launches.
    pub fn kernel(&self) -> &ClusteredKernel {
        &self.kernel
    }
}

/// ACTIVE for a policy, given MAX and the kernel's default.
pub fn choose_active(
    policy: ActivePolicy,
    max: u32,
    kernel_default: u32,
) -> Result<u32, ClusterError> {
    let active = match policy {
        ActivePolicy::All => max,
        ActivePolicy::FromKernel if kernel_default == 0 => max,
        ActivePolicy::FromKernel => kernel_default.min(max),
        ActivePolicy::Fixed(n) => n,
        ActivePolicy::Fraction(f) if f > 0.0 && f <= 1.0 => ((max as f32 * f).ceil() as u32).max(1),
        ActivePolicy::Fraction(f) => return Err(ClusterError::BadFraction(f)),
    };
    if active == 0 || active > max {
        return Err(ClusterError::ActiveOutOfRange { active, max });
    }
    Ok(active)
}

/// ACTIVE for a persistent binding: by policy, except that a grid-stride
/// loop cannot throttle (all its CTAs work), so asking it to is an error.
pub(crate) fn active_for(
    binding: Binding,
    policy: ActivePolicy,
    max: u32,
    kernel_default: u32,
) -> Result<u32, ClusterError> {
    if binding == Binding::Stride {
        return match policy {
            ActivePolicy::FromKernel | ActivePolicy::All => Ok(max),
            policy => Err(ClusterError::NoThrottling { policy }),
        };
    }
    choose_active(policy, max, kernel_default)
}

/// The most blocks a grid holds along x (`CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X`
/// on every GPU since compute capability 3.0).
const MAX_GRID_X: u32 = i32::MAX as u32;

/// What a clustered launch needs, decided from the contract alone; the GPU
/// and CPU plans both build on it and only add their memory.
pub(crate) struct Layout {
    /// The kernel's last parameter; its scratch pointer is left for the
    /// caller to set.
    pub parameter: ClusterLaunch,
    /// Blocks per thread block cluster (`[1, 1, 1]`: none).
    pub block_cluster: [u32; 3],
    /// For the persistent bindings: the agents to launch.
    pub agents: Option<AgentLayout>,
}

pub(crate) struct AgentLayout {
    /// Blocks to launch (the new grid's x).
    pub grid: u32,
    /// MAX and ACTIVE agents per SM.
    pub max: u32,
    pub active: u32,
    /// Words of zeroed scratch each run needs.
    pub scratch_words: usize,
}

/// A raster's `indexing` with its band set by `group` (`None`: a custom
/// indexing, which is no raster).
fn with_band<E: From<ClusterError>>(
    indexing: Option<Indexing>,
    grid: [u32; 3],
    group: RasterGroup,
    resident: impl FnOnce() -> Result<u32, E>,
) -> Result<Indexing, E> {
    // The band's extent across the bands, and the raster with a band of g.
    let (across, banded): (u32, fn(u32) -> Indexing) = match indexing {
        Some(Indexing::Tile { width: 1, .. }) => (grid[1], |g| Indexing::Tile {
            width: 1,
            height: g,
        }),
        Some(Indexing::Sawtooth { width: 1, .. }) => (grid[1], |g| Indexing::Sawtooth {
            width: 1,
            height: g,
        }),
        Some(Indexing::ColumnTile { height: 1, .. }) => (grid[0], |g| Indexing::ColumnTile {
            width: g,
            height: 1,
        }),
        other => {
            let indexing = other.map_or("custom".to_string(), |i| format!("{i:?}"));
            return Err(ClusterError::NotARaster { indexing }.into());
        }
    };
    let g = match group {
        RasterGroup::Ctas(0) => return Err(ClusterError::EmptyRasterGroup.into()),
        RasterGroup::Ctas(g) => g,
        RasterGroup::FromOccupancy => group.ctas(resident()?, across),
    };
    Ok(banded(g))
}

/// Lays out a clustered launch of the ORIGINAL grid on `sm_count` SMs, for a
/// contract [`check_contract`] accepted.
/// `max_agents` (the kernel's occupancy: MAX) is asked for only by the
/// persistent bindings and a band from the occupancy.
pub(crate) fn layout<E: From<ClusterError>>(
    contract: &KernelContract,
    grid: [u32; 3],
    sm_count: u32,
    options: &ClusterOptions,
    mut max_agents: impl FnMut() -> Result<u32, E>,
) -> Result<Layout, E> {
    let binding =
        Binding::from_u32(contract.binding).expect("a contract checked by check_contract");
    let tasks = grid_size(grid).ok_or(ClusterError::Mapping(MappingError::GridTooLarge))?;
    // The persistent bindings' agents: MAX per SM, those launched per SM,
    // ACTIVE, and the agents that work.
    let agents = if binding.is_persistent() {
        let max = max_agents()?;
        let per_sm = options.agents_per_sm.unwrap_or(max);
        if per_sm == 0 || per_sm > max {
            return Err(ClusterError::TooManyAgents {
                requested: per_sm,
                max,
            }
            .into());
        }
        let active = active_for(binding, options.active, max, contract.default_active)?;
        let working = active.min(per_sm).saturating_mul(sm_count).max(1);
        Some((max, per_sm, active, working))
    } else {
        None
    };
    let clusters = match (binding.clusters_by_sm(), options.clusters) {
        // One queue: the order itself keeps co-running tasks together.
        (false, _) => 1,
        (true, Some(clusters)) => clusters,
        // Agents with a task or none each: one queue too. Clusters per SM
        // keep an SM's tasks together, and at most one task an agent
        // leaves nothing to keep together, only steals: an agent whose home
        // cluster's task was taken walks the others, two atomics a cluster
        // (ATAX's column pass: 64 tasks for 132 SMs, its agents 0.92x of the
        // kernel).
        (true, None) if agents.is_some_and(|(.., working)| tasks <= working) => 1,
        (true, None) => sm_count,
    };
    // Each cluster costs a word of scratch memory: a count past both the
    // CTAs and the SMs only adds empty clusters (and, at 2^32 - 1, 16 GiB).
    let cluster_limit = tasks.max(sm_count);
    if clusters > cluster_limit {
        return Err(ClusterError::TooManyClusters {
            clusters,
            limit: cluster_limit,
        }
        .into());
    }
    let mut indexing = contract.indexing();
    if let Some(group) = options.raster_group {
        let resident = || -> Result<u32, E> { Ok(max_agents()?.saturating_mul(sm_count)) };
        indexing = Some(with_band(indexing, grid, group, resident)?);
    }
    let indexing = indexing.unwrap_or(Indexing::RowMajor);
    let mut parameter =
        ClusterLaunch::new(contract, indexing, grid, clusters).map_err(ClusterError::Mapping)?;
    let block_cluster = options.block_cluster_dims();
    let width = block_cluster[0];
    if width == 0 || (!binding.is_persistent() && !grid[0].is_multiple_of(width)) {
        return Err(ClusterError::BlockClusterWidth {
            width,
            grid_x: grid[0],
        }
        .into());
    }
    let Some((max, per_sm, active, working)) = agents else {
        return Ok(Layout {
            parameter,
            block_cluster,
            agents: None,
        });
    };
    // Arrival slots per SM id; ids past this share slots (modulo), which
    // only blurs throttling, never correctness.
    let sm_slots = sm_count.checked_mul(2).ok_or(ClusterError::Overflow {
        what: "the SM arrival slots (2 per SM)",
    })?;
    parameter = parameter.with_agents(active, sm_slots, 0);
    let resident = per_sm.checked_mul(sm_count).ok_or(ClusterError::Overflow {
        what: "the agents (agents per SM x SMs)",
    })?;
    let blocks = match binding {
        // More waves than one: blocks that finish early are replaced. More
        // blocks than tasks would only start and stop.
        Binding::Stride => resident.saturating_mul(contract.waves.max(1)).min(tasks),
        _ => {
            // Claims sized to the work: with fewer tasks than `chunk` x the
            // working agents, smaller claims keep every agent busy (a fixed
            // chunk left most of them idle).
            let claim_chunk = tasks.div_ceil(working).clamp(1, contract.chunk.max(1));
            parameter.claim_chunk = claim_chunk;
            // No more agents than claims can keep busy: each extra block only
            // starts and exits, which cost tens of microseconds per launch
            // at MAX x SMs for a grid of a few CTAs. Only ACTIVE of each
            // SM's arrivals work, so scale by MAX / ACTIVE.
            let claims = tasks.div_ceil(claim_chunk);
            let per_working = per_sm.div_ceil(active.min(per_sm).max(1));
            resident.min(claims.saturating_mul(per_working))
        }
    };
    let blocks = match options.total_agents {
        None => blocks,
        Some(requested) => {
            let limit = resident.max(tasks);
            if requested == 0 || requested > limit {
                return Err(ClusterError::TotalAgentsOutOfRange { requested, limit }.into());
            }
            requested
        }
    };
    // Whole clusters: fewer agents only leave claims to the others (a
    // grid-stride loop's blocks step by however many there are). A count
    // the caller chose must be whole clusters itself, on the CPU plan too.
    let blocks = if options.total_agents.is_some() {
        blocks
    } else {
        (blocks / width).max(1) * width
    };
    if !blocks.is_multiple_of(width) {
        return Err(ClusterError::BlockClusterWidth {
            width,
            grid_x: blocks,
        }
        .into());
    }
    // The loop steps to `v + blocks` once past its last task `v < tasks`.
    if binding == Binding::Stride && tasks as u64 + blocks as u64 > 1 << 32 {
        return Err(ClusterError::StrideTooLong { tasks, blocks }.into());
    }
    // `tail = blocks`: after the looping blocks, a block per task of the
    // tail (whole thread block clusters; blocks past the last task run
    // none), which the hardware dispatches as the looping blocks leave.
    let blocks = if binding == Binding::Stride && contract.tail() == Some(Tail::Blocks) {
        let tail_start = tail_start(tasks, blocks);
        // Fewer tasks than two rounds: all tail, and no block that loops
        // over nothing.
        let looping = if tail_start == 0 { 0 } else { blocks };
        parameter.looping_blocks = looping;
        parameter.tail_start = tail_start;
        let tail = u64::from(tasks - tail_start).next_multiple_of(u64::from(width));
        let launched = u64::from(looping) + tail;
        u32::try_from(launched)
            .ok()
            .filter(|&b| b <= MAX_GRID_X)
            .ok_or(ClusterError::TailTooLong {
                blocks: launched,
                limit: MAX_GRID_X,
            })?
    } else {
        blocks
    };
    Ok(Layout {
        parameter,
        block_cluster,
        agents: Some(AgentLayout {
            grid: blocks,
            max,
            active,
            scratch_words: scratch_words(sm_slots, clusters),
        }),
    })
}

impl Gpu {
    /// Plans a clustered launch of `kernel` for the ORIGINAL launch
    /// `original` (its grid and block): checks it, sizes the agents and
    /// allocates the scratch memory.
    pub fn plan_clustered(
        &self,
        kernel: &ClusteredKernel,
        original: LaunchConfig,
        options: ClusterOptions,
    ) -> Result<ClusteredPlan, Error> {
        let props = self.properties();
        crate::validate_launch(&original, props, &kernel.kernel.attributes())?;
        let kernel = &kernel.for_launch(&original, props.sm_count)?;
        let block_threads = original.block_threads();
        let dynamic_shared_bytes = original.dynamic_shared_bytes;
        let Layout {
            mut parameter,
            block_cluster,
            agents,
        } = layout(
            &kernel.contract,
            original.grid,
            props.sm_count,
            &options,
            || match kernel
                .kernel
                .occupancy(block_threads as u32, dynamic_shared_bytes)?
            {
                0 => Err(Error::from(ClusterError::ZeroOccupancy {
                    kernel: kernel.kernel.name().into(),
                    block_threads,
                    dynamic_shared_bytes,
                })),
                max => Ok(max),
            },
        )?;
        let stream = options
            .stream
            .clone()
            .unwrap_or_else(|| self.stream().clone());
        let original = original.with_block_cluster(block_cluster);
        let (config, scratch, max, active) = match agents {
            None => (original, None, 0, 0),
            Some(agents) => {
                let scratch = stream
                    .alloc_zeros::<u32>(agents.scratch_words)
                    .map_err(Error::driver("cuMemAllocAsync(scratch)"))?;
                parameter.scratch = {
                    let (pointer, _sync) = scratch.device_ptr(&stream);
                    pointer
                };
                let config = LaunchConfig {
                    grid: [agents.grid, 1, 1],
                    ..original
                };
                (config, Some(scratch), agents.max, agents.active)
            }
        };
        crate::validate_launch(&config, props, &kernel.kernel.attributes())?;
        Ok(ClusteredPlan {
            kernel: kernel.clone(),
            stream,
            config,
            original,
            parameter: LaunchParameter(parameter),
            scratch,
            max_agents_per_sm: max,
            active_agents: active,
        })
    }

    /// Starts a launch of a plan: push the ORIGINAL kernel's arguments with
    /// [`Launch::arg`], then [`Launch::run`]; the cluster parameter is added
    /// last, and the scratch zeroed, by `run`.
    pub fn launch_plan<'a>(&'a self, plan: &'a ClusteredPlan) -> Launch<'a> {
        self.launch_on(&plan.stream, &plan.kernel.kernel, plan.config)
            .with_cluster(plan)
    }
}

/// Checks a schedule's `custom(..)` indexing on `grid` before a launch:
/// always for grids up to [`CHECKED_INDEXING_CTAS`] CTAs, and in debug
/// builds for any grid (the check takes a bit per CTA and a call per CTA).
pub fn check_indexing<K: clustered_device::entry::KernelFn>(
    entry: &clustered_device::entry::Entry<K>,
    grid: [u32; 3],
    always: bool,
) -> Result<(), ClusterError> {
    use clustered_device::mapping::{check_custom_indexing, CHECKED_INDEXING_CTAS};
    let Some(indexing) = entry.custom_indexing() else {
        return Ok(());
    };
    let small = grid_size(grid).is_some_and(|n| u64::from(n) <= CHECKED_INDEXING_CTAS);
    if always || small || cfg!(debug_assertions) {
        check_custom_indexing(indexing, grid).map_err(|error| ClusterError::NotABijection {
            kernel: entry.name().to_string(),
            grid,
            error,
        })?;
    }
    Ok(())
}
