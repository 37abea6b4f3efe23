//! Clustered launches on the CPU backend: the same plan as on a GPU (the
//! kernel's contract, MAX from occupancy, ACTIVE by policy, zeroed scratch),
//! with the simulated machine in place of the device.
//!
//! ```
//! use clustered_host::cpu::{CpuPlan, CpuLaunch, Machine};
//! use clustered_host::{Binding, ClusterOptions, KernelContract};
//! use clustered_device::abi::indexing_kind;
//! let contract = KernelContract::new(Binding::Agents, indexing_kind::ROW_MAJOR, [0, 0], 8, 0);
//! let machine = Machine::new(4);
//! let original = CpuLaunch { grid: [1000, 1, 1], block: [256, 1, 1], dynamic_shared_bytes: 0, resident_blocks: 8 };
//! let mut plan = CpuPlan::new(&contract, original, &machine, &ClusterOptions::default())?;
//! assert_eq!(plan.launch.grid, [4 * 8, 1, 1]); // MAX agents on each of 4 SMs
//! let parameter = plan.parameter(); // pass it last to the clustered kernel
//! // 100 tasks: claims of ceil(100 / 32) = 4 keep 25 agents busy; no more start.
//! let small = CpuLaunch { grid: [100, 1, 1], ..original };
//! assert_eq!(CpuPlan::new(&contract, small, &machine, &ClusterOptions::default())?.launch.grid, [25, 1, 1]);
//! # Ok::<(), clustered_host::ClusterError>(())
//! ```

pub use clustered_device::cpu::{
    run, run_checked, AccessKind, BarrierDivergence, BarrierKind, Buffers, CpuError, CpuLaunch,
    Dispatch, Fault, Host, LaneAccess, Machine, NoObserver, Observer, RunStats, SharedRace,
    TaskOverrun, ThreadAt,
};

/// Fills a constant table (`constant_table!`) for the CPU launches this
/// host thread makes from now on, as `Gpu::write_constant` fills a
/// module's on a GPU.
pub use clustered_device::constant::cpu::write as write_constant;
pub use clustered_device::constant::LengthMismatch;

use std::fmt;

use clustered_device::abi::{indexing_kind::ROW_MAJOR, Binding, ClusterLaunch, KernelContract};
use clustered_device::entry::{Entry, KernelFn};
use clustered_device::mapping::{Grid, Indexing};

use crate::clustered::{check_contract, layout, ClusterError, ClusterOptions};
use crate::error::{LaunchError, ThreadLimit};

/// A clustered launch planned for a simulated machine.
#[derive(Debug)]
pub struct CpuPlan {
    /// The launch of the clustered kernel (agents: one block per agent).
    pub launch: CpuLaunch,
    /// The original kernel's launch.
    pub original: CpuLaunch,
    /// MAX agents per SM (the original launch's resident blocks).
    pub max_agents_per_sm: u32,
    /// ACTIVE agents per SM.
    pub active_agents: u32,
    parameter: ClusterLaunch,
    scratch: Vec<u32>,
}

impl CpuPlan {
    /// Plans `contract`'s kernel for the ORIGINAL launch `original` on
    /// `machine`. `original.resident_blocks` is the kernel's occupancy: MAX.
    pub fn new(
        contract: &KernelContract,
        original: CpuLaunch,
        machine: &Machine,
        options: &ClusterOptions,
    ) -> Result<Self, ClusterError> {
        let contract = check_contract("(cpu)", *contract)?;
        let layout = layout(
            &contract,
            original.grid,
            machine.sm_count(),
            options,
            || Ok::<_, ClusterError>(original.resident_blocks),
        )?;
        let mut plan = CpuPlan {
            launch: original,
            original,
            max_agents_per_sm: 0,
            active_agents: 0,
            parameter: layout.parameter,
            scratch: Vec::new(),
        };
        if let Some(agents) = layout.agents {
            plan.scratch = vec![0; agents.scratch_words];
            plan.launch.grid = [agents.grid, 1, 1];
            plan.max_agents_per_sm = agents.max;
            plan.active_agents = agents.active;
        }
        Ok(plan)
    }

    /// The agents' counters (empty for reorder and redirect), which the
    /// kernel reaches through [`CpuPlan::parameter`].
    pub fn scratch(&self) -> &[u32] {
        &self.scratch
    }

    /// The kernel's last parameter for one run, with its scratch zeroed:
    /// call it once per run, and keep the plan alive while the run lasts.
    pub fn parameter(&mut self) -> ClusterLaunch {
        self.scratch.fill(0);
        let mut parameter = self.parameter;
        if !self.scratch.is_empty() {
            parameter.scratch = self.scratch.as_mut_ptr() as u64;
        }
        parameter
    }
}

/// What a typed CPU launch did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuRun {
    /// Scheduler ticks and hardware CTAs.
    pub stats: RunStats,
    /// The launch that ran (a schedule's agents: one block per agent).
    pub launch: CpuLaunch,
    /// MAX and ACTIVE agents per SM (0 for the other bindings).
    pub max_agents_per_sm: u32,
    /// ACTIVE agents per SM.
    pub active_agents: u32,
}

/// Why a typed CPU launch did not run, or stopped.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum CpuLaunchError {
    /// The schedule could not be planned for this launch.
    Plan(ClusterError),
    /// The run failed (a bad machine or launch, a panic, an access outside
    /// the buffers, a stack overflow).
    Run(CpuError),
    /// A [foreign](clustered_device::entry::Entry::foreign) entry: PTX built
    /// elsewhere, which the CPU backend has no code for.
    Foreign(&'static str),
    /// A launch the GPU would refuse: a block over the kernel's
    /// `#[launch_bounds]`, a grid dimension over the GPU's limit.
    Launch(LaunchError),
}

impl fmt::Display for CpuLaunchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CpuLaunchError::Plan(e) => write!(f, "cannot plan the launch: {e}"),
            CpuLaunchError::Run(e) => write!(f, "the CPU run failed: {e}"),
            CpuLaunchError::Launch(e) => e.fmt(f),
            CpuLaunchError::Foreign(name) => write!(
                f,
                "`{name}` is a foreign entry (PTX built elsewhere): it runs only on a GPU; run the kernel's own entry on the CPU backend"
            ),
        }
    }
}

impl std::error::Error for CpuLaunchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CpuLaunchError::Plan(e) => Some(e),
            CpuLaunchError::Run(e) => Some(e),
            CpuLaunchError::Launch(e) => Some(e),
            CpuLaunchError::Foreign(_) => None,
        }
    }
}

impl From<ClusterError> for CpuLaunchError {
    fn from(e: ClusterError) -> Self {
        CpuLaunchError::Plan(e)
    }
}

impl From<CpuError> for CpuLaunchError {
    fn from(e: CpuError) -> Self {
        CpuLaunchError::Run(e)
    }
}

/// Runs `entry` of a kernel on `machine` for the ORIGINAL launch
/// `original`, with `args` typed from the kernel's signature (`&[T]` for
/// `*const T`, `&mut [T]` for `*mut T`, values for scalars), telling
/// `observer` what happens.
///
/// A baseline entry (`my_kernel::KERNEL`) runs as `original`; a schedule is
/// planned from its own contract and `options` (MAX is
/// `original.resident_blocks`) with scratch memory private to this call.
/// Every global load, store and atomic that the device runtime traces
/// (each `*p` of the kernel's body, the hinted loads, the atomics) is checked
/// against the buffers before it happens: one outside them, or a write into
/// a `*const` buffer, stops the run with [`CpuError::OutOfBounds`].
///
/// # Safety
/// As for a GPU launch, the caller promises that the kernel's accesses stay
/// inside the buffers for the scalars given; here only the accesses that the
/// runtime does not trace rest on that promise: dereferences in functions
/// that the kernel calls (its prefetch hook, its helpers), and pointers that
/// the macro cannot follow to a parameter.
pub unsafe fn launch_entry<K: KernelFn>(
    entry: Entry<K>,
    machine: &Machine,
    original: CpuLaunch,
    options: &ClusterOptions,
    observer: &mut dyn Observer,
    args: K::Args<'_, Host>,
) -> Result<CpuRun, CpuLaunchError> {
    if entry.is_foreign() {
        return Err(CpuLaunchError::Foreign(entry.name()));
    }
    // The machine and the launch as `run` checks them, before a schedule is
    // planned from them: the same error for the kernel and its schedules.
    machine.check().map_err(CpuLaunchError::Run)?;
    original.check().map_err(CpuLaunchError::Run)?;
    if let Some(bounds) = entry.launch_bounds() {
        // What the GPU refuses (`.maxntid`), refused here too.
        let threads = original.block_threads();
        if threads > u64::from(bounds.max_threads) {
            return Err(CpuLaunchError::Launch(LaunchError::BlockTooLarge {
                threads,
                limit: bounds.max_threads,
                limited_by: ThreadLimit::Kernel,
            }));
        }
    }
    // What every CUDA GPU refuses (a grid's y or z above 65535, its x above
    // 2^31 - 1), refused here too where the GPU launches the grid as given
    // (the kernel, a reorder or a redirect; a persistent schedule launches
    // its agents): a launch that runs only here would fail on the GPU.
    if !entry.binding().is_some_and(Binding::is_persistent) {
        let limits = crate::device::DeviceProperties::h100_sxm().max_grid_dim;
        crate::launch::check_grid(original.grid, limits).map_err(CpuLaunchError::Launch)?;
    }
    crate::clustered::check_indexing(&entry, original.grid, true)?;
    let mut buffers = Buffers::new();
    let raw = K::raw(args, &mut buffers);
    let (launch, mut scratch, parameter, max, active) = match entry.contract() {
        None => {
            // A baseline ignores the launch parameter; any valid one does.
            let row_major = KernelContract::new(Binding::Redirect, ROW_MAJOR, [0, 0], 1, 0);
            let unused = ClusterLaunch::new(&row_major, Indexing::RowMajor, [1, 1, 1] as Grid, 1)
                .map_err(ClusterError::Mapping)?;
            (original, Vec::new(), unused, 0, 0)
        }
        Some(contract) => {
            let plan = CpuPlan::new(contract, original, machine, options)?;
            (
                plan.launch,
                plan.scratch,
                plan.parameter,
                plan.max_agents_per_sm,
                plan.active_agents,
            )
        }
    };
    let mut parameter = parameter;
    if !scratch.is_empty() {
        parameter.scratch = buffers.scratch(&mut scratch) as u64;
    }
    let kernel = || {
        // SAFETY: `raw` points into the caller's slices, which outlive this
        // call; `parameter` was planned for this entry's contract and its
        // scratch lives until the run returns; the rest is the caller's
        // promise.
        unsafe { entry.call_on_cpu(raw, parameter) }
    };
    let stats = run_checked(machine, &launch, observer, &buffers, &kernel)?;
    Ok(CpuRun {
        stats,
        launch,
        max_agents_per_sm: max,
        active_agents: active,
    })
}
