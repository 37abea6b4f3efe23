//! The static time predictor (`clustered-predict`) applied to the suite:
//! each schedule's launch as the host would plan it on a named GPU, its
//! scalars, its ptxas resources, and its memory traffic (from the cache
//! simulator when asked, else compulsory bytes).

use std::collections::BTreeMap;

use clustered_host::cpu::{CpuLaunch, CpuPlan, Dispatch, Machine};
use clustered_host::ClusterOptions;
use clustered_predict::model::occupancy;
use clustered_predict::ptxas::Resources;
use clustered_predict::{
    predict, unknown_trips, DeviceModel, LaunchContext, Module, ParamValue, Prediction, Query,
    Traffic,
};
use clustered_sim::DeviceProfile;

use crate::simulate::simulate;
use crate::suite::{Arg, CpuEntry, Variant, Workload};

/// Each entry's ptxas resources as the loader runs it.
#[derive(Clone, Debug, Default)]
pub struct LoadedResources {
    /// As ptxas gave them for the module's own code.
    pub own: BTreeMap<String, Resources>,
    /// The capped copy's, for each schedule the loader caps at its kernel's
    /// occupancy ([`as_loaded`]).
    pub capped: BTreeMap<String, Resources>,
}

impl LoadedResources {
    /// The module's own resources, nothing capped.
    pub fn uncapped(own: BTreeMap<String, Resources>) -> Self {
        LoadedResources {
            own,
            capped: BTreeMap::new(),
        }
    }

    /// What `entry` runs with for a launch of `shape` on `device`: the
    /// capped copy's, unless the entry's own code holds the whole grid at
    /// once (`clustered_host::cap_needed`, as `Gpu::plan_clustered`
    /// decides).
    pub fn for_launch(
        &self,
        entry: &str,
        shape: &clustered_host::LaunchConfig,
        device: &DeviceModel,
    ) -> Option<Resources> {
        let own = self.own.get(entry).copied();
        let (Some(capped), Some(mine)) = (self.capped.get(entry).copied(), own) else {
            return own;
        };
        let (fits, _) = occupancy(
            device,
            shape.block_threads() as u32,
            mine.registers,
            mine.shared_bytes + shape.dynamic_shared_bytes,
        );
        Some(
            if clustered_host::cap_needed(shape.grid_blocks(), fits, device.sm_count) {
                capped
            } else {
                mine
            },
        )
    }
}

/// The resources each entry runs with once `Gpu::load_module` has kept the
/// schedules at their kernel's occupancy (`clustered_host::register_cap`):
/// `own` as ptxas gave them for `ptx`, with each schedule's capped copy's
/// where the loader would use that copy (no more spills), judged by ptxas
/// at `ptxas` on `device`'s register file.
pub fn as_loaded(
    ptxas: &std::path::Path,
    ptx: &str,
    own: BTreeMap<String, Resources>,
    device: &DeviceModel,
) -> Result<LoadedResources, clustered_predict::ptxas::PtxasError> {
    let registers = clustered_host::RegisterFile {
        registers_per_sm: device.registers_per_sm,
        max_warps_per_sm: device.max_warps_per_sm,
        warp_size: 32,
    };
    let planned = clustered_host::plan_register_caps(ptx, &registers, |name| {
        Ok::<_, std::convert::Infallible>(own.get(name).map(|r| r.registers))
    })
    .unwrap_or_else(|never| match never {});
    let caps: Vec<(&str, u32)> = planned.iter().map(|p| (p.entry.as_str(), p.cap)).collect();
    let text = match clustered_host::ptx_with_register_caps(ptx, &caps) {
        Some(text) if !planned.is_empty() => text,
        _ => return Ok(LoadedResources::uncapped(own)),
    };
    let copies = clustered_predict::ptxas::resources(ptxas, &text, "sm_90")?;
    let mut capped = BTreeMap::new();
    for p in &planned {
        let Some(copy) = copies.get(&clustered_host::capped_name(&p.entry)) else {
            continue;
        };
        // ptxas's spill bytes stand for the local memory the loader compares.
        let outcome = clustered_host::CapOutcome::judge(
            copy.registers,
            own[&p.entry].spill_bytes,
            copy.spill_bytes,
        );
        if outcome.is_applied() {
            capped.insert(p.entry.clone(), *copy);
        }
    }
    Ok(LoadedResources { own, capped })
}

/// Memory traffic relative to compulsory bytes, from a simulation at the
/// simulator's size: applied to the benchmark's compulsory bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrafficRatio {
    /// L1 sector lookups per warp load instruction (both load kinds; a
    /// bypassing load looks up none): how coalesced the loads are,
    /// independent of the size.
    pub l1_sectors_per_load: f64,
    /// L1 lines looked up per warp load instruction, likewise.
    pub l1_lines_per_load: f64,
    /// L1-to-L2 bytes / compulsory bytes, prefetches not included.
    pub l2: f64,
    /// Bytes the prefetches request from L2 / compulsory bytes.
    pub l2_prefetch: f64,
    /// Sectors stored in part (32 bytes each) / compulsory bytes.
    pub l2_partial_stores: f64,
    /// DRAM bytes (reads and write-backs) / compulsory bytes.
    pub dram: f64,
    pub l1_hit_rate: f64,
    pub l2_hit_rate: f64,
    /// Warp global loads per warp of the original launch (CTAs as
    /// written): what the loops bounded by data ran, measured.
    pub loads_per_task: f64,
}

impl TrafficRatio {
    /// The traffic at `compulsory` bytes.
    pub fn at(&self, compulsory: u64) -> Traffic {
        Traffic {
            l1_sectors_per_load: self.l1_sectors_per_load,
            l1_lines_per_load: self.l1_lines_per_load,
            l2_bytes: self.l2 * compulsory as f64,
            l2_prefetch_bytes: self.l2_prefetch * compulsory as f64,
            l2_partial_store_sectors: self.l2_partial_stores * compulsory as f64 / 32.0,
            dram_bytes: self.dram * compulsory as f64,
            l1_hit_rate: self.l1_hit_rate,
            l2_hit_rate: self.l2_hit_rate,
        }
    }
}

/// The predictor's skip list (`predict --skips FILE` writes it, `bench
/// --skip FILE` reads it): per kernel, the candidates of its automatic
/// family, by entry, predicted slower than its baseline by more than
/// `margin` (a fraction).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SkipList {
    /// The device model the predictions were for.
    pub device: String,
    pub margin: f64,
    pub kernels: BTreeMap<String, Vec<String>>,
}

impl SkipList {
    /// Checks the list against this build's suite: every kernel it names is
    /// a suite kernel, every entry a candidate of that kernel's automatic
    /// family (never its baseline). A list written by another build may
    /// name entries this one does not have; skipping nothing where it says
    /// to skip would measure a different family than the one reported.
    pub fn check(&self) -> Result<(), String> {
        for (kernel, entries) in &self.kernels {
            let (_, build) = crate::suite::select(Some(kernel))?[0];
            let workload = build(crate::suite::Size::Test);
            let baseline = workload.variants[0].kernel;
            let family = workload.variants[0].auto_family.map_or(Vec::new(), |f| f());
            let wrong: Vec<&str> = entries
                .iter()
                .map(String::as_str)
                .filter(|e| *e == baseline || !family.contains(e))
                .collect();
            if !wrong.is_empty() {
                return Err(format!(
                    "{kernel}: {} not a candidate of its automatic family ({}); write the list again with `predict --skips` from this build",
                    wrong.join(", "),
                    if family.is_empty() {
                        "it has none".to_string()
                    } else {
                        format!("its candidates: {}", family.join(", "))
                    }
                ));
            }
        }
        Ok(())
    }
}

/// CTAs of a grid.
fn ctas(grid: [u32; 3]) -> f64 {
    grid.iter().map(|&x| f64::from(x)).product()
}

/// The simulator's cache profile for `device`: the H200's (its 60 MB L2)
/// for an H200 model, else the H100 SXM's.
pub fn cache_profile(device: &DeviceModel) -> DeviceProfile {
    if device.name.contains("H200") {
        DeviceProfile::h200()
    } else {
        DeviceProfile::h100_sxm()
    }
}

/// Simulates every schedule of `small` (a workload at [`crate::suite::Size::Simulate`])
/// on an 8-SM slice of `profile` (see [`cache_profile`]) and returns each
/// schedule's traffic ratio, by label (variants of one entry with other
/// launch options differ).
pub fn traffic_ratios(
    small: &Workload,
    profile: &DeviceProfile,
) -> BTreeMap<&'static str, TrafficRatio> {
    let Ok(profile) = profile.scaled(8) else {
        return BTreeMap::new();
    };
    let compulsory = small.compulsory_bytes().max(1) as f64;
    let original_warps =
        ctas(small.shape.grid) * f64::from(small.shape.block.iter().product::<u32>().div_ceil(32));
    small
        .variants
        .iter()
        .filter_map(|v| {
            let s = simulate(small, v, &profile, Dispatch::RoundRobin)
                .ok()?
                .stats;
            let sector = 32.0;
            // Per warp load; a schedule without loads as a coalesced one.
            let per_load = |lookups: u64, coalesced: f64| {
                if s.load_instructions == 0 {
                    coalesced
                } else {
                    lookups as f64 / s.load_instructions as f64
                }
            };
            let dram = (s.l2_sector_misses + s.dram_write_sectors) as f64 * sector;
            // What the SMs wait for and receive: the prefetches apart.
            let requested = s.l1_to_l2_sectors - s.l2_prefetch_sectors;
            let hits = s.l2_sector_hits - s.l2_prefetch_sector_hits;
            Some((
                v.label,
                TrafficRatio {
                    l1_sectors_per_load: per_load(s.l1_sector_lookups, 4.0),
                    l1_lines_per_load: per_load(s.l1_line_lookups, 1.0),
                    l2: requested as f64 * sector / compulsory,
                    l2_prefetch: s.l2_prefetch_sectors as f64 * sector / compulsory,
                    l2_partial_stores: s.l2_partial_store_sectors as f64 * sector / compulsory,
                    dram: dram / compulsory,
                    l1_hit_rate: s.l1_hit_rate(),
                    loads_per_task: s.load_instructions as f64 / original_warps.max(1.0),
                    l2_hit_rate: if requested == 0 {
                        0.0
                    } else {
                        hits as f64 / requested as f64
                    },
                },
            ))
        })
        .collect()
}

/// The launch a schedule runs on `device` for the workload's original
/// launch: the plan the host makes (agents and grid-stride loops launch
/// fewer CTAs), with MAX from the predictor's occupancy.
pub fn planned_launch(
    workload: &Workload,
    variant: &Variant,
    device: &DeviceModel,
    resources: Option<Resources>,
) -> Result<LaunchContext, String> {
    let shape = workload.shape;
    let params = workload
        .args
        .iter()
        .map(|a| match *a {
            Arg::U32(v) => ParamValue::Scalar(u64::from(v)),
            _ => ParamValue::Unknown,
        })
        .collect();
    let mut launch = LaunchContext {
        grid: shape.grid,
        block: shape.block,
        cluster: variant.options.cluster_dims(),
        params,
        tasks_per_block: 1.0,
        tasks_per_claim: 1.0,
        persistent: false,
        unknown_trips: None,
    };
    let CpuEntry::Clustered(_, contract) = variant.cpu else {
        return Ok(launch);
    };
    let r = resources.unwrap_or(Resources {
        registers: 32,
        ..Resources::default()
    });
    let threads = shape.block.iter().product();
    let (max, _) = occupancy(
        device,
        threads,
        r.registers,
        r.shared_bytes + shape.dynamic_shared_bytes,
    );
    let original = CpuLaunch {
        grid: shape.grid,
        block: shape.block,
        dynamic_shared_bytes: shape.dynamic_shared_bytes,
        resident_blocks: max.max(1),
    };
    let mut plan = CpuPlan::new(
        contract,
        original,
        &Machine::new(device.sm_count),
        &variant.options.over(&ClusterOptions::default()),
    )
    .map_err(|e| format!("{}: {e}", variant.kernel))?;
    launch.grid = plan.launch.grid;
    // Throttled agents: only ACTIVE of each SM's MAX agents work, the others
    // exit at once, so the launch runs as ACTIVE agents per SM (fewer warps
    // resident to hide latency, more tasks each).
    if contract.binding == clustered_host::Binding::Agents as u32
        && plan.active_agents < plan.max_agents_per_sm
    {
        let working = plan
            .active_agents
            .max(1)
            .saturating_mul(device.sm_count)
            .min(plan.launch.grid[0]);
        launch.grid = [working, 1, 1];
    }
    // The ClusterLaunch parameter, last, as the kernel reads it: its
    // indexing kind and divisors fold the scheduler's branches.
    launch
        .params
        .push(ParamValue::Bytes(plan.parameter().to_bytes().to_vec()));
    launch.tasks_per_block = ctas(shape.grid) / ctas(launch.grid).max(1.0);
    launch.tasks_per_claim = f64::from(contract.chunk.max(1));
    // A tail as blocks (`tail = blocks`) needs nothing more: its launch has
    // the looping blocks and a block per task of the tail, and the tasks
    // per block above average the two (a loop of few trips and one task).
    if contract.tail() == Some(clustered_device::abi::Tail::Claims) {
        // A claimed tail runs its tasks in runs (the strided rounds, then
        // one per claim), inside one loop of runs with the claim code: as
        // a claim loop with `tasks / runs` tasks per claim.
        launch.tasks_per_claim =
            launch.tasks_per_block / tail_runs(ctas(shape.grid), launch.grid[0]);
    }
    launch.persistent =
        clustered_host::Binding::from_u32(contract.binding).is_some_and(|b| b.is_persistent());
    Ok(launch)
}

/// Runs per block of a grid-stride loop with a claimed tail
/// (`run::strided_then_claimed`) over `tasks` on `blocks` blocks: its
/// strided rounds, then its share of the factoring's claims, one a batch,
/// and the last claim that finds the tail empty.
fn tail_runs(tasks: f64, blocks: u32) -> f64 {
    let (tasks, blocks) = (tasks as u32, blocks.max(1));
    let tail = tasks - clustered_device::schedule::tail_start(tasks, blocks);
    let claims = clustered_device::schedule::factoring_claims(tail, blocks) as f64;
    1.0 + claims / f64::from(blocks) + 1.0
}

/// Predicts every schedule of `workload`; `ratios` from [`traffic_ratios`]
/// of `small` (absent: compulsory bytes, and loops bounded by data assumed
/// to run once). With both, each data-bounded loop runs as often as makes
/// the simulated run's loads per task ([`clustered_predict::unknown_trips`],
/// solved at `small`'s launch, whose data the simulation ran).
pub fn predict_workload(
    module: &Module,
    workload: &Workload,
    small: Option<&Workload>,
    device: &DeviceModel,
    resources: &LoadedResources,
    ratios: &BTreeMap<&'static str, TrafficRatio>,
) -> Vec<(&'static str, &'static str, Result<Prediction, String>)> {
    let compulsory = workload.compulsory_bytes();
    workload
        .variants
        .iter()
        .map(|v| {
            let r = resources.for_launch(v.kernel, &workload.shape, device);
            let measured = |ratio: &TrafficRatio| {
                let small = small?;
                let sv = small.variants.iter().find(|s| s.label == v.label)?;
                let r = resources.for_launch(v.kernel, &small.shape, device);
                let at = planned_launch(small, sv, device, r).ok()?;
                unknown_trips(module, v.kernel, &at, device, ratio.loads_per_task)
            };
            let trips = ratios.get(v.label).and_then(measured);
            let result = planned_launch(workload, v, device, r).and_then(|mut launch| {
                launch.unknown_trips = trips;
                let traffic = ratios
                    .get(v.label)
                    .map_or(Traffic::compulsory(compulsory), |t| t.at(compulsory));
                let query = Query {
                    entry: v.kernel,
                    launch,
                    dynamic_shared_bytes: workload.shape.dynamic_shared_bytes,
                    resources: r,
                    traffic,
                };
                predict(module, &query, device).map_err(|e| e.to_string())
            });
            (v.label, v.kernel, result)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::tail_runs;

    #[test]
    fn a_claimed_tail_runs_its_rounds_then_a_few_claims() {
        // The SDK Black-Scholes' loop: 524288 tasks on 2112 blocks, 248
        // rounds, 124 of them claimed in batches that halve: 62, 31, ...
        let runs = tail_runs(524_288.0, 2112);
        assert!((8.0..14.0).contains(&runs), "{runs}");
        // Fewer tasks than blocks: no strided rounds, one claim each, and
        // the one that finds the tail empty.
        assert_eq!(tail_runs(100.0, 1000), 1.0 + 0.1 + 1.0);
    }
}
