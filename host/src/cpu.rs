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
//! let original = CpuLaunch { grid: [100, 1, 1], block: [256, 1, 1], dynamic_shared_bytes: 0, resident_blocks: 8 };
//! let mut plan = CpuPlan::new(&contract, original, &machine, &ClusterOptions::default())?;
//! assert_eq!(plan.launch.grid, [4 * 8, 1, 1]); // MAX agents on each of 4 SMs
//! let parameter = plan.parameter(); // pass it last to the clustered kernel
//! # Ok::<(), clustered_host::ClusterError>(())
//! ```

pub use clustered_device::cpu::{
    run, AccessKind, BarrierDivergence, BarrierKind, CpuError, CpuLaunch, Dispatch, LaneAccess,
    Machine, NoObserver, Observer, RunStats, SharedRace, ThreadAt,
};

use clustered_device::abi::{ClusterLaunch, KernelContract};

use crate::clustered::{check_contract, layout, ClusterError, ClusterOptions};

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
