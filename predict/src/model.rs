//! The time model: per-warp instructions along the hot path, occupancy,
//! and five bounds combined.
//!
//! - **issue**: every warp instruction takes an issue slot of its SM's
//!   schedulers, and each class its pipe's rate;
//! - **latency**: a warp's critical path through each block (a list
//!   schedule over register dependencies, loads at the latency their hit
//!   rates give), hidden by the warps resident on the SM;
//! - **dram** and **l2**: bytes moved at the device's achievable bandwidth;
//! - **l1**: the sectors the warps' global loads look up, at the L1's rate.
//!
//! Time = the largest bound + `overlap` x the second largest (memory and
//! compute overlap, but not perfectly), by `1 + task_loop_overhead` where
//! the launch's CTAs loop over tasks, + the wait for each CTA's mapping
//! where a launch maps its CTAs once and its loads set its pace, + the
//! launch overhead.

use std::collections::HashMap;
use std::fmt;

use crate::analysis::{analyse, callees, LaunchContext, Loop};
use crate::device::DeviceModel;
use crate::ptx::{Class, Function, Module};
use crate::ptxas::Resources;

/// Bytes moved through L2 and DRAM, and hit rates for load latency.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Traffic {
    /// Sectors each warp-wide global load looks up in L1 (its distinct
    /// sectors: 4 for a coalesced 4-byte load, 32 for a strided one).
    pub l1_sectors_per_load: f64,
    /// Lines each warp-wide global load looks up in L1 (1 for a coalesced
    /// 4-byte load, 32 for a strided one): the L1 looks up one a clock.
    pub l1_lines_per_load: f64,
    /// Bytes sent from the SMs to L2, whole sectors (partial stores
    /// included, at 32 bytes each), prefetches not included.
    pub l2_bytes: f64,
    /// Bytes the prefetches (`prefetch.global.L1`/`.L2`) request from L2.
    /// No register waits for them and none comes back to the SM: they are
    /// not L2 traffic for the bound, but bytes in flight beside the loads'
    /// (what a prefetch is for), while the loads they cover hit in L2.
    pub l2_prefetch_bytes: f64,
    /// Of those sectors, stores that write only part of their sector: the
    /// L2 takes them at its own rate (`l2_partial_sectors_per_ns`).
    pub l2_partial_store_sectors: f64,
    pub dram_bytes: f64,
    /// Load sectors that hit in L1.
    pub l1_hit_rate: f64,
    /// Sectors requested from L2 that hit there.
    pub l2_hit_rate: f64,
}

impl Traffic {
    /// Without a simulation: every byte once through L2 and DRAM.
    pub fn compulsory(bytes: u64) -> Self {
        Traffic {
            l1_sectors_per_load: 4.0,
            l1_lines_per_load: 1.0,
            l2_bytes: bytes as f64,
            l2_prefetch_bytes: 0.0,
            l2_partial_store_sectors: 0.0,
            dram_bytes: bytes as f64,
            l1_hit_rate: 0.0,
            l2_hit_rate: 0.0,
        }
    }
}

/// What the model is asked about.
#[derive(Clone, Debug)]
pub struct Query<'a> {
    pub entry: &'a str,
    pub launch: LaunchContext,
    pub dynamic_shared_bytes: u32,
    /// From ptxas; `None` assumes 32 registers and no static shared memory.
    pub resources: Option<Resources>,
    pub traffic: Traffic,
}

/// The resource that bounds a prediction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    Issue,
    Latency,
    Dram,
    L2,
    L1,
    /// The SMs starting and retiring the launch's blocks.
    Blocks,
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Bound::Issue => "issue",
            Bound::Latency => "latency",
            Bound::Dram => "dram",
            Bound::L2 => "l2",
            Bound::L1 => "l1",
            Bound::Blocks => "blocks",
        })
    }
}

/// A prediction and its parts.
#[derive(Clone, Debug)]
pub struct Prediction {
    pub entry: String,
    /// Predicted time, milliseconds.
    pub ms: f64,
    /// Each bound, milliseconds.
    pub issue_ms: f64,
    pub latency_ms: f64,
    pub dram_ms: f64,
    pub l2_ms: f64,
    /// The busiest SM's L1 sector lookups (warp loads x sectors each) at
    /// its L1 rate.
    pub l1_ms: f64,
    /// The busiest SM's blocks at the device's `block_launch_ns` each.
    pub blocks_ms: f64,
    /// A launch that maps each CTA once before its body (reorder,
    /// redirect): the busiest SM's rounds of resident blocks, each waiting
    /// for the first thread's mapping with no load in flight. Added to the
    /// time.
    pub mapping_ms: f64,
    pub bound: Bound,
    /// The largest bound over the second largest.
    pub margin: f64,
    /// CTAs launched.
    pub launched_blocks: u64,
    /// The launch's CTAs loop over tasks (agents, persistent, grid-stride:
    /// [`LaunchContext::persistent`](crate::LaunchContext::persistent)).
    pub persistent: bool,
    /// Of `ms`, what the device's `task_loop_overhead` added (0 unless
    /// `persistent`).
    pub task_loop_ms: f64,
    /// Resident CTAs and warps per SM.
    pub blocks_per_sm: u32,
    pub warps_per_sm: u32,
    /// What limits the resident CTAs.
    pub occupancy_limit: &'static str,
    /// Dynamic warp instructions per warp, by [`Class::ALL`] index.
    pub per_warp: Vec<f64>,
    /// Critical-path cycles of one warp.
    pub warp_latency_cycles: f64,
    pub loops: Vec<Loop>,
    /// Registers used (from ptxas, or assumed).
    pub registers: u32,
    /// Assumptions made, in words.
    pub assumptions: Vec<String>,
}

/// Why no prediction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PredictError {
    /// The module has no entry of that name.
    NoEntry(String),
    /// A CTA cannot be resident on an SM of the device.
    DoesNotFit { entry: String, why: &'static str },
    /// The launch has no threads or no CTAs.
    EmptyLaunch,
}

impl fmt::Display for PredictError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PredictError::NoEntry(e) => write!(
                f,
                "no .entry `{e}` in the PTX: pass a kernel's entry name (the schedule's, for a schedule)"
            ),
            PredictError::DoesNotFit { entry, why } => {
                write!(f, "`{entry}`: one CTA does not fit on an SM ({why})")
            }
            PredictError::EmptyLaunch => write!(f, "the launch has no CTAs or no threads"),
        }
    }
}

impl std::error::Error for PredictError {}

/// Resident CTAs per SM and what limits them.
pub fn occupancy(
    device: &DeviceModel,
    block_threads: u32,
    registers: u32,
    shared_bytes: u32,
) -> (u32, &'static str) {
    let warps = block_threads.div_ceil(32).max(1);
    let per_warp_regs = (registers * 32).div_ceil(device.register_unit) * device.register_unit;
    let by_registers = if per_warp_regs == 0 {
        u32::MAX
    } else {
        device.registers_per_sm / (per_warp_regs * warps)
    };
    let shared = (shared_bytes + device.shared_reserved_per_block).div_ceil(device.shared_unit)
        * device.shared_unit;
    let by_shared = device.shared_per_sm / shared.max(1);
    [
        (device.max_blocks_per_sm, "blocks"),
        (device.max_warps_per_sm / warps, "warps"),
        (by_registers, "registers"),
        (by_shared, "shared memory"),
    ]
    .into_iter()
    .min_by_key(|(n, _)| *n)
    .unwrap_or((0, "blocks"))
}

/// Per-thread counts and critical path of a function under a launch.
struct Walk {
    per_warp: Vec<f64>,
    latency_cycles: f64,
    loops: Vec<Loop>,
}

fn walk(
    module: &Module,
    function: &Function,
    launch: &LaunchContext,
    device: &DeviceModel,
    load_latency: f64,
    depth: u32,
) -> Walk {
    let flow = analyse(function, launch);
    let mut per_warp = vec![0.0; Class::ALL.len()];
    let mut latency_cycles = 0.0;
    for (b, block) in function.blocks.iter().enumerate() {
        let runs = flow.executions.get(b).copied().unwrap_or(0.0);
        if runs == 0.0 {
            continue;
        }
        for i in &block.instructions {
            per_warp[i.class.index()] += runs;
        }
        latency_cycles += runs * block_latency(&block.instructions, device, load_latency);
    }
    if depth < 4 {
        for (callee, b) in callees(module, function) {
            let runs = flow.executions.get(b).copied().unwrap_or(0.0);
            if runs == 0.0 {
                continue;
            }
            let unknown = LaunchContext {
                params: Vec::new(),
                tasks_per_block: 1.0,
                tasks_per_claim: 1.0,
                persistent: false,
                ..launch.clone()
            };
            let inner = walk(module, callee, &unknown, device, load_latency, depth + 1);
            for (c, n) in per_warp.iter_mut().zip(&inner.per_warp) {
                *c += runs * n;
            }
            latency_cycles += runs * inner.latency_cycles;
        }
    }
    Walk {
        per_warp,
        latency_cycles,
        loops: flow.loops,
    }
}

/// Cycles of one block's critical path through its register dependencies:
/// each instruction starts when its sources are ready and not before its
/// issue slot (one a cycle, in text order). Not in-order stalls: ptxas
/// schedules independent loads ahead of the arithmetic that uses them, so
/// the loads of an unrolled body are in flight together (memory-level
/// parallelism) and the block pays one load latency, not one per load.
/// Barriers and fences: nothing after one starts before it.
fn block_latency(
    instructions: &[crate::ptx::Instruction],
    device: &DeviceModel,
    load_latency: f64,
) -> f64 {
    let mut ready: HashMap<&str, f64> = HashMap::new();
    let (mut slot, mut fence, mut end) = (0.0f64, 0.0f64, 0.0f64);
    for i in instructions {
        let sources = i
            .operands
            .iter()
            .skip(usize::from(i.destination().is_some()))
            .chain(i.guard.iter().map(|(p, _)| p));
        slot += 1.0;
        let mut start = slot.max(fence);
        for s in sources {
            for register in s
                .split(|c: char| !(c.is_alphanumeric() || c == '%' || c == '_'))
                .filter(|r| r.starts_with('%'))
            {
                if let Some(t) = ready.get(register) {
                    start = start.max(*t);
                }
            }
        }
        let latency = match i.class {
            Class::LoadGlobal => load_latency,
            class => device.class(class).latency,
        };
        if matches!(i.class, Class::Barrier | Class::Fence) {
            // Everything before the barrier (or the fence: the warp's
            // earlier memory operations) completes, then it releases.
            start = start.max(end);
            fence = start + latency;
        }
        end = end.max(start + latency);
        if let Some(d) = i.destination() {
            ready.insert(d, start + latency);
        }
    }
    end
}

/// Cycles from a block's start to the end of the scheduler's barrier
/// (`bar.sync 1`) that hands the other warps the CTA the first thread
/// mapped: the critical paths of the blocks before it in text order (the
/// first thread's path through them), and its own block up to it. `None`
/// where the function has no such barrier.
fn mapping_cycles(function: &Function, device: &DeviceModel, load_latency: f64) -> Option<f64> {
    let is_scheduler_barrier = |i: &crate::ptx::Instruction| {
        i.class == Class::Barrier && i.op() == "bar" && i.operands.first().is_some_and(|o| o == "1")
    };
    let at = function
        .blocks
        .iter()
        .position(|b| b.instructions.iter().any(is_scheduler_barrier))?;
    let before: f64 = function.blocks[..at]
        .iter()
        .map(|b| block_latency(&b.instructions, device, load_latency))
        .sum();
    let upto = &function.blocks[at].instructions;
    let end = upto.iter().position(is_scheduler_barrier)? + 1;
    Some(before + block_latency(&upto[..end], device, load_latency))
}

/// The trip count of `entry`'s data-bounded loops (those whose exit
/// compares with a value read from memory: [`LaunchContext::unknown_trips`])
/// that makes its global loads per task `loads_per_task`, as a run of the
/// kernel at `launch` counted them (the cache simulator's warp loads over the
/// launch's original warps). The loads are linear in that count where such
/// loops are not nested in one another, so two walks solve it. `None`
/// without such loops, or when they load nothing.
pub fn unknown_trips(
    module: &Module,
    entry: &str,
    launch: &LaunchContext,
    device: &DeviceModel,
    loads_per_task: f64,
) -> Option<f64> {
    let function = module.function(entry).filter(|f| f.is_entry)?;
    let loads = |trips: f64| {
        let at = LaunchContext {
            unknown_trips: Some(trips),
            ..launch.clone()
        };
        let walked = walk(module, function, &at, device, 0.0, 0);
        walked.per_warp[Class::LoadGlobal.index()] / launch.tasks_per_block.max(1.0)
    };
    let (one, two) = (loads(1.0), loads(2.0));
    let per_trip = two - one;
    (per_trip > 1e-9 && loads_per_task.is_finite())
        .then(|| (1.0 + (loads_per_task - one) / per_trip).max(0.0))
}

/// Predicts `query` on `device` from `module`'s PTX.
pub fn predict(
    module: &Module,
    query: &Query<'_>,
    device: &DeviceModel,
) -> Result<Prediction, PredictError> {
    let function = module
        .function(query.entry)
        .filter(|f| f.is_entry)
        .ok_or_else(|| PredictError::NoEntry(query.entry.to_string()))?;
    let launch = &query.launch;
    let blocks: u64 = launch.grid.iter().map(|&g| u64::from(g)).product();
    let threads: u32 = launch.block.iter().product();
    if blocks == 0 || threads == 0 {
        return Err(PredictError::EmptyLaunch);
    }
    let mut assumptions = Vec::new();
    let resources = query.resources.unwrap_or_else(|| {
        assumptions.push("no ptxas: assumed 32 registers, no static shared memory".to_string());
        Resources {
            registers: 32,
            ..Resources::default()
        }
    });
    let (per_sm, limit) = occupancy(
        device,
        threads,
        resources.registers,
        resources.shared_bytes + query.dynamic_shared_bytes,
    );
    if per_sm == 0 {
        return Err(PredictError::DoesNotFit {
            entry: query.entry.to_string(),
            why: limit,
        });
    }
    let t = &query.traffic;
    let load_latency = t.l1_hit_rate * device.latency_l1
        + (1.0 - t.l1_hit_rate)
            * (t.l2_hit_rate * device.latency_l2 + (1.0 - t.l2_hit_rate) * device.latency_dram);
    let mut walked = walk(module, function, launch, device, load_latency, 0);
    // A local array that ptxas kept in registers (no stack frame, no
    // spills) costs no memory instruction: its `ld.local`/`st.local` are
    // register moves or vanish (conv5x5_tiled's 25 weights).
    let local = walked.per_warp[Class::Local.index()];
    if local > 0.0 && resources.stack_bytes == Some(0) && resources.spill_bytes == 0 {
        walked.per_warp[Class::Local.index()] = 0.0;
        assumptions.push(format!(
            "{local:.0} local loads and stores per warp not counted: ptxas keeps the arrays in registers (0 bytes of stack)"
        ));
    }
    for l in &walked.loops {
        if let crate::analysis::Trips::Assumed { trips, why } = &l.trips {
            assumptions.push(format!(
                "loop {}: trip count unknown, assumed {trips} ({why})",
                l.label
            ));
        }
    }
    let warps_per_block = threads.div_ceil(32);
    let sms = u64::from(device.sm_count);
    // The busiest SM: CTAs are spread evenly, whole CTAs at a time.
    let blocks_per_sm_total = blocks.div_ceil(sms) as f64;
    let warps_per_sm_total = blocks_per_sm_total * f64::from(warps_per_block);
    let resident_blocks = (blocks_per_sm_total as u32).min(per_sm).max(1);
    let resident_warps = f64::from(resident_blocks * warps_per_block);
    let instructions: f64 = walked.per_warp.iter().sum();
    let issue_slots = f64::from(device.schedulers_per_sm) * device.issue_per_scheduler;
    let mut issue_cycles = warps_per_sm_total * instructions / issue_slots;
    for class in Class::ALL {
        let pipe = warps_per_sm_total * walked.per_warp[class.index()] / device.class(class).rate;
        issue_cycles = issue_cycles.max(pipe);
    }
    // Latency: each warp's critical path, hidden by the resident warps,
    // but no faster than the SM's loads in flight allow (Little's law: the
    // bytes that leave L1 on the busiest SM, each for the L2/DRAM latency,
    // over the bytes one SM keeps in flight). The bytes in flight are the
    // kernel's own where the SASS shows them (its resident warps x the
    // loads its hot loop issues before reading one x the bytes a warp load
    // takes past L1: ptxas's registers decide them, which the PTX does not
    // show; ATAX's column pass, 64 blocks, went 2.27x faster with 64 loads
    // in flight instead of 17), and bind at any occupancy: a loop that
    // keeps few loads in flight is slower than its launch with every SM
    // busy too (docs/PREDICTION.md, "Loads in flight with every SM busy").
    // Else the device's figure (DRAM bandwidth x latency / SMs), which only
    // counts where some SMs are idle: with every SM busy it is the DRAM
    // bound again.
    let path_cycles = warps_per_sm_total * walked.latency_cycles / resident_warps;
    let beyond_l1 = t.l2_hit_rate * device.latency_l2 + (1.0 - t.l2_hit_rate) * device.latency_dram;
    // Little's law on the busiest SM: its share of `bytes`, each waiting
    // `latency` cycles behind `in_flight` bytes.
    let waiting_cycles = |bytes: f64, latency: f64, in_flight: f64| {
        bytes * blocks_per_sm_total / blocks as f64 * latency / in_flight.max(1.0)
    };
    let warp_loads =
        walked.per_warp[Class::LoadGlobal.index()] * blocks as f64 * f64::from(warps_per_block);
    // A task's prefetches are all in flight while it runs (no register
    // waits for them): each resident warp adds its share of a task's.
    let prefetch_in_flight = resident_warps * t.l2_prefetch_bytes
        / (blocks as f64 * f64::from(warps_per_block) * launch.tasks_per_block.max(1.0));
    let sass_in_flight = match resources.loads_in_flight {
        Some(loads) if loads > 0 && warp_loads > 0.0 => {
            Some(resident_warps * f64::from(loads) * t.l2_bytes / warp_loads + prefetch_in_flight)
        }
        _ => None,
    };
    let in_flight = sass_in_flight.or((blocks < sms).then_some(device.load_bytes_in_flight_per_sm));
    let latency_cycles = in_flight.map_or(path_cycles, |bytes| {
        path_cycles.max(waiting_cycles(t.l2_bytes, beyond_l1, bytes))
    });
    let cycle_ms = 1.0 / (device.clock_ghz * 1e6);
    let issue_ms = issue_cycles * cycle_ms;
    let latency_ms = latency_cycles * cycle_ms;
    // DRAM: its bytes at its bandwidth; where the SASS shows the kernel's
    // bytes in flight, also each DRAM byte waiting its latency behind them
    // (the same Little's law as above, DRAM's part alone), the two combined
    // as the length of a vector (`hypot`): near the bandwidth time while
    // the loads in flight cover it, near the wait where they do not, and
    // between them, above both, where the two are alike (a queue's
    // `latency / in flight + 1 / bandwidth` in the limit; the plain sum
    // and the cube norm were tried: docs/PREDICTION.md, "DRAM behind few
    // loads in flight").
    let streaming_ms = t.dram_bytes / (device.dram_gbps * 1e6);
    let dram_ms = sass_in_flight.map_or(streaming_ms, |bytes| {
        streaming_ms.hypot(waiting_cycles(t.dram_bytes, device.latency_dram, bytes) * cycle_ms)
    });
    // L2: whole sectors at its bandwidth, sectors stored in part (merged
    // into what the sector holds) at their own, lower rate.
    let partial = t.l2_partial_store_sectors.min(t.l2_bytes / 32.0);
    let l2_ms = (t.l2_bytes - 32.0 * partial) / (device.l2_gbps * 1e6)
        + partial / (device.l2_partial_sectors_per_ns * 1e6);
    // L1: the busiest SM's lookups at its L1 rate, sectors (32 bytes each)
    // or lines, whichever takes longer (an uncoalesced load looks up one
    // sector, in its own line, per lane, however well it hits).
    let loads = warps_per_sm_total * walked.per_warp[Class::LoadGlobal.index()];
    let l1_cycles = (loads * t.l1_sectors_per_load * 32.0 / device.l1_bytes_per_clock_per_sm)
        .max(loads * t.l1_lines_per_load / device.l1_lines_per_clock_per_sm);
    let l1_ms = l1_cycles * cycle_ms;
    // Blocks: the busiest SM's blocks, each started and retired in the
    // SM's time for an empty block (calibrate's `block_turnover`): a
    // launch of millions of tiny blocks goes no faster, whatever they do
    // (SHOC's triad, 16k blocks of 128 threads an SM, at 97-98% of this
    // bound on both GPUs; docs/PREDICTION.md, "Blocks an SM starts").
    let blocks_ms = blocks_per_sm_total * device.block_launch_ns * 1e-6;
    let mut bounds = [
        (issue_ms, Bound::Issue),
        (latency_ms, Bound::Latency),
        (dram_ms, Bound::Dram),
        (l2_ms, Bound::L2),
        (l1_ms, Bound::L1),
        (blocks_ms, Bound::Blocks),
    ];
    bounds.sort_by(|a, b| b.0.total_cmp(&a.0));
    let (largest, bound) = bounds[0];
    let second = bounds[1].0;
    // A CTA mapped once (reorder, redirect: `run::mapped_once`): its warps
    // wait at the scheduler's barrier while the first thread maps it, with
    // no load in flight, so each round of a slot's blocks adds the wait
    // where the loads in flight set the pace (DRAM at a copy's rate, or
    // Little's law): ncu on an H100 has each warp of a light kernel's
    // redirection living 288-518 cycles longer, the same DRAM bytes and
    // 13-16% more time (docs/BENCHMARKS.md, "a warp's life"). Where L2's
    // or L1's rate bounds the launch, the other blocks' traffic fills the
    // wait (the naive transposes' rasters, 1.15-1.45x faster than their
    // kernel). An issue bound keeps it: the walk counts a light kernel's
    // instructions above what the GPU issues (Jacobi 5's rasters, issue-
    // bound in the model at 1.5 ms, measured at 2.53-2.64 ms), and waived
    // there the wait moved fewer pairs right (docs/PREDICTION.md, session 51).
    let waits_on_loads = !matches!(bound, Bound::L2 | Bound::L1);
    let mapping_ms = if launch.persistent || !waits_on_loads {
        0.0
    } else {
        mapping_cycles(function, device, load_latency).map_or(0.0, |cycles| {
            let rounds = blocks_per_sm_total / f64::from(resident_blocks);
            let ms = rounds * cycles * cycle_ms;
            assumptions.push(format!(
                "each CTA's warps wait {cycles:.0} cycles for the first thread's mapping, {rounds:.0} rounds of resident CTAs: +{ms:.3} ms"
            ));
            ms
        })
    };
    let (ms, task_loop_ms) = timed(
        [issue_ms, latency_ms, dram_ms, l2_ms, l1_ms],
        blocks_ms,
        mapping_ms,
        launch.persistent,
        device,
    );
    Ok(Prediction {
        entry: query.entry.to_string(),
        ms,
        issue_ms,
        latency_ms,
        dram_ms,
        l2_ms,
        l1_ms,
        blocks_ms,
        mapping_ms,
        bound,
        margin: if second > 0.0 {
            largest / second
        } else {
            f64::INFINITY
        },
        launched_blocks: blocks,
        persistent: launch.persistent,
        task_loop_ms,
        blocks_per_sm: per_sm,
        warps_per_sm: per_sm * warps_per_block,
        occupancy_limit: limit,
        per_warp: walked.per_warp,
        warp_latency_cycles: walked.latency_cycles,
        loops: walked.loops,
        registers: resources.registers,
        assumptions,
    })
}

/// The time of a launch whose bounds (ms, any order) are `bounds` on
/// `device` (module doc), and the part of it that the task loops' overhead
/// is: the one place the bounds become a time.
fn timed(
    mut bounds: [f64; 5],
    blocks_ms: f64,
    mapping_ms: f64,
    persistent: bool,
    device: &DeviceModel,
) -> (f64, f64) {
    bounds.sort_by(|a, b| b.total_cmp(a));
    // The SMs start blocks while the resident ones work: the starts hide
    // everything else where they take longer, and add nothing where they
    // do not (triad's launch at 97-98% of them alone; added as the others'
    // second bound, they put the SDK's Black-Scholes launch behind its
    // loops, which the GPUs run the other way round).
    let bounded = (bounds[0] + device.overlap * bounds[1]).max(blocks_ms);
    let task_loop_ms = if persistent {
        bounded * device.task_loop_overhead
    } else {
        0.0
    };
    (
        bounded + task_loop_ms + mapping_ms + device.launch_overhead_us / 1000.0,
        task_loop_ms,
    )
}

impl Prediction {
    /// Its time and its task loops' part ([`Prediction::ms`],
    /// [`Prediction::task_loop_ms`]) on a device with `device`'s figures
    /// for combining the bounds (`overlap`, `task_loop_overhead`, the launch
    /// overhead): what a fit of those figures tries, without predicting
    /// again.
    pub fn timed_on(&self, device: &DeviceModel) -> (f64, f64) {
        timed(
            [
                self.issue_ms,
                self.latency_ms,
                self.dram_ms,
                self.l2_ms,
                self.l1_ms,
            ],
            self.blocks_ms,
            self.mapping_ms,
            self.persistent,
            device,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::ParamValue;

    /// A plain launch of `ctas` CTAs of 256 threads, no parameters known.
    fn blocks_of_256(ctas: u32) -> LaunchContext {
        LaunchContext {
            grid: [ctas, 1, 1],
            block: [256, 1, 1],
            cluster: [1, 1, 1],
            params: Vec::new(),
            tasks_per_block: 1.0,
            tasks_per_claim: 1.0,
            persistent: false,
            unknown_trips: None,
        }
    }

    #[test]
    fn occupancy_limits() {
        let d = DeviceModel::h100_sxm();
        // 256 threads, 32 registers: 8 CTAs = 64 warps.
        assert_eq!(occupancy(&d, 256, 32, 0), (8, "warps"));
        // 64 registers: 65536 / (2048 x 8) = 4 CTAs.
        assert_eq!(occupancy(&d, 256, 64, 0), (4, "registers"));
        // 100 KB of shared memory: 2 CTAs.
        assert_eq!(occupancy(&d, 64, 16, 100 * 1024), (2, "shared memory"));
        // Tiny CTAs: the 32-block limit.
        assert_eq!(occupancy(&d, 32, 16, 0), (32, "blocks"));
    }

    /// atax_columns' unrolled body as LLVM writes it: load, load, FMA,
    /// eight times; the loads do not depend on the FMA chain.
    const INTERLEAVED: &str = r#"
.visible .entry k()
{
	ld.global.f32 	%f1, [%rd1];
	ld.global.f32 	%f2, [%rd2];
	fma.rn.f32 %f3, %f1, %f2, %f0;
	ld.global.f32 	%f4, [%rd1+4];
	ld.global.f32 	%f5, [%rd2+4];
	fma.rn.f32 %f6, %f4, %f5, %f3;
	ld.global.f32 	%f7, [%rd1+8];
	ld.global.f32 	%f8, [%rd2+8];
	fma.rn.f32 %f9, %f7, %f8, %f6;
	ld.global.f32 	%f10, [%rd1+12];
	ld.global.f32 	%f11, [%rd2+12];
	fma.rn.f32 %f12, %f10, %f11, %f9;
	st.global.f32 	[%rd3], %f12;
	ret;
}
"#;

    /// A local array written and read back, as rustc leaves a small one.
    const LOCAL_ARRAY: &str = r#"
.visible .entry k()
{
	st.local.f32 	[%rd1], %f1;
	st.local.f32 	[%rd1+4], %f2;
	ld.local.f32 	%f3, [%rd1];
	ld.local.f32 	%f4, [%rd1+4];
	add.f32 	%f5, %f3, %f4;
	st.global.f32 	[%rd3], %f5;
	ret;
}
"#;

    #[test]
    fn a_local_array_kept_in_registers_costs_no_memory_instruction() {
        let module = Module::parse(LOCAL_ARRAY).unwrap();
        let device = DeviceModel::h100_sxm();
        let local = |stack_bytes: Option<u32>, spill_bytes: u32| {
            let query = Query {
                entry: "k",
                launch: blocks_of_256(132 * 8),
                dynamic_shared_bytes: 0,
                resources: Some(Resources {
                    registers: 16,
                    stack_bytes,
                    spill_bytes,
                    ..Resources::default()
                }),
                traffic: Traffic::compulsory(1 << 20),
            };
            let p = predict(&module, &query, &device).unwrap();
            (p.per_warp[Class::Local.index()], p.assumptions.len())
        };
        // ptxas said 0 bytes of stack: the four are register moves.
        let (kept, notes) = local(Some(0), 0);
        assert_eq!(kept, 0.0);
        assert!(notes >= 1);
        // A stack frame, spills, or no ptxas log: they are memory.
        assert_eq!(local(Some(16), 0).0, 4.0);
        assert_eq!(local(Some(0), 8).0, 4.0);
        assert_eq!(local(None, 0).0, 4.0);
    }

    /// A launch whose CTAs loop over tasks costs the device's
    /// `task_loop_overhead` more than the same launch otherwise; the launch
    /// overhead is not scaled, and a file without it adds nothing.
    #[test]
    fn a_task_loop_pays_the_device_s_loop_overhead() {
        let module = Module::parse(INTERLEAVED).unwrap();
        let mut device = DeviceModel::h100_sxm();
        device.task_loop_overhead = 0.1;
        let time = |persistent: bool, device: &DeviceModel| {
            let query = Query {
                entry: "k",
                launch: LaunchContext {
                    persistent,
                    ..blocks_of_256(132 * 8)
                },
                dynamic_shared_bytes: 0,
                resources: None,
                traffic: Traffic::compulsory(1 << 30),
            };
            let p = predict(&module, &query, device).unwrap();
            (p.ms - device.launch_overhead_us / 1000.0, p.task_loop_ms)
        };
        let (launch, none) = time(false, &device);
        let (looping, added) = time(true, &device);
        assert_eq!(none, 0.0);
        assert!((added - 0.1 * launch).abs() < 1e-12, "{added} {launch}");
        assert!((looping - 1.1 * launch).abs() < 1e-12, "{looping} {launch}");
        device.task_loop_overhead = 0.0;
        assert_eq!(time(true, &device), (launch, 0.0));
    }

    /// A prediction timed again on its own device's figures is itself; on
    /// other figures, what predicting with them gives.
    #[test]
    fn a_prediction_times_again_as_predicting_would() {
        let module = Module::parse(INTERLEAVED).unwrap();
        let device = DeviceModel::h100_sxm();
        let predicted = |device: &DeviceModel| {
            let query = Query {
                entry: "k",
                launch: LaunchContext {
                    persistent: true,
                    ..blocks_of_256(132 * 8)
                },
                dynamic_shared_bytes: 0,
                resources: None,
                traffic: Traffic::compulsory(1 << 30),
            };
            predict(&module, &query, device).unwrap()
        };
        let p = predicted(&device);
        assert_eq!(p.timed_on(&device), (p.ms, p.task_loop_ms));
        let other = DeviceModel {
            overlap: 0.6,
            task_loop_overhead: 0.05,
            ..device.clone()
        };
        let q = predicted(&other);
        assert_eq!(p.timed_on(&other), (q.ms, q.task_loop_ms));
        assert!(q.ms > p.ms && q.task_loop_ms > p.task_loop_ms);
    }

    #[test]
    fn independent_loads_overlap() {
        let module = Module::parse(INTERLEAVED).unwrap();
        let device = DeviceModel::h100_sxm();
        let block = &module.function("k").unwrap().blocks[0];
        let cycles = block_latency(&block.instructions, &device, 500.0);
        // One load latency and the FMA chain, not four load latencies.
        assert!(cycles < 600.0, "{cycles}");
        assert!(cycles >= 500.0 + 4.0 * device.class(Class::Fp32).latency);
    }

    /// `INTERLEAVED` behind a CTA mapped once (`run::mapped_once`): the
    /// first thread computes an index, the others wait at barrier 1.
    const MAPPED_INTERLEAVED: &str = r#"
.visible .entry k()
{
	mov.u32 	%r6, %tid.x;
	setp.eq.b32 	%p2, %r6, 0;
	@%p2 bra 	$L__BB0_2;
	bra.uni 	$L__BB0_3;
$L__BB0_2:
	mul.hi.u32 	%r20, %r7, %r8;
	mul.hi.u32 	%r21, %r20, %r8;
	mul.hi.u32 	%r22, %r21, %r8;
	st.shared.u32 	[%r19], %r22;
$L__BB0_3:
	bar.sync 	1;
	ld.shared.u32 	%r36, [%r19];
	ld.global.f32 	%f1, [%rd1];
	ld.global.f32 	%f2, [%rd2];
	fma.rn.f32 %f3, %f1, %f2, %f0;
	st.global.f32 	[%rd3], %f3;
	ret;
}
"#;

    #[test]
    fn a_cta_mapped_once_waits_for_its_mapping_each_round() {
        let module = Module::parse(MAPPED_INTERLEAVED).unwrap();
        let device = DeviceModel::h100_sxm();
        let function = module.function("k").unwrap();
        let cycles = mapping_cycles(function, &device, 500.0).unwrap();
        // Three dependent integer multiplies, a shared store and the barrier.
        let int = device.class(Class::Int).latency;
        assert!(
            cycles >= 3.0 * int + device.class(Class::Barrier).latency,
            "{cycles}"
        );
        assert!(
            cycles < 500.0,
            "the body's loads are not the mapping's: {cycles}"
        );
        // 64 rounds of 8 resident blocks of 256 threads on each SM.
        let query = |persistent| Query {
            entry: "k",
            launch: LaunchContext {
                persistent,
                ..blocks_of_256(132 * 8 * 64)
            },
            dynamic_shared_bytes: 0,
            resources: None,
            traffic: Traffic::compulsory(132 * 8 * 64 * 256 * 12),
        };
        let p = predict(&module, &query(false), &device).unwrap();
        let expected = 64.0 * cycles / (device.clock_ghz * 1e6);
        assert!((p.mapping_ms - expected).abs() < 1e-12, "{p:?}");
        assert_eq!(p.timed_on(&device).0, p.ms);
        // A task loop maps its tasks as it goes: no such wait.
        let q = predict(&module, &query(true), &device).unwrap();
        assert_eq!(q.mapping_ms, 0.0);
        // Where L2's rate bounds the launch, the other CTAs' traffic fills
        // the wait.
        let l2_bound = Query {
            traffic: Traffic {
                l2_bytes: 1e12,
                ..query(false).traffic
            },
            ..query(false)
        };
        let r = predict(&module, &l2_bound, &device).unwrap();
        assert_eq!((r.bound, r.mapping_ms), (Bound::L2, 0.0));
        // Without the barrier there is nothing to wait for.
        let plain = Module::parse(INTERLEAVED).unwrap();
        assert_eq!(
            mapping_cycles(plain.function("k").unwrap(), &device, 500.0),
            None
        );
    }

    #[test]
    fn millions_of_tiny_blocks_are_bound_by_starting_them() {
        let module = Module::parse(INTERLEAVED).unwrap();
        let device = DeviceModel::h100_sxm();
        // 16384 blocks an SM that each move 64 bytes: the SMs' block
        // starts bound the launch, not their traffic (triad's shape).
        let ctas = 132 * 16384;
        let query = Query {
            entry: "k",
            launch: blocks_of_256(ctas),
            dynamic_shared_bytes: 0,
            resources: None,
            traffic: Traffic::compulsory(u64::from(ctas) * 64),
        };
        let p = predict(&module, &query, &device).unwrap();
        assert_eq!(p.bound, Bound::Blocks, "{p:?}");
        let expected = 16384.0 * device.block_launch_ns * 1e-6;
        assert!((p.blocks_ms - expected).abs() < 1e-9, "{p:?}");
        // A device that starts blocks for free leaves the other bounds.
        let free = DeviceModel {
            block_launch_ns: 0.0,
            ..device.clone()
        };
        let q = predict(&module, &query, &free).unwrap();
        assert_ne!(q.bound, Bound::Blocks);
        assert!(q.ms < p.ms, "{q:?} {p:?}");
    }

    #[test]
    fn few_busy_sms_are_bound_by_loads_in_flight() {
        let module = Module::parse(INTERLEAVED).unwrap();
        let device = DeviceModel::h100_sxm();
        // 64 CTAs moving 1 GB: 64 SMs busy, each with 16 MB to fetch at
        // 5330 bytes in flight per DRAM latency.
        let query = Query {
            entry: "k",
            launch: blocks_of_256(64),
            dynamic_shared_bytes: 0,
            resources: None,
            traffic: Traffic::compulsory(1 << 30),
        };
        let p = predict(&module, &query, &device).unwrap();
        assert_eq!(p.bound, Bound::Latency);
        let per_sm = f64::from(1u32 << 30) / 64.0;
        let expected = per_sm * device.latency_dram
            / device.load_bytes_in_flight_per_sm
            / (device.clock_ghz * 1e6);
        assert!(
            (p.latency_ms - expected).abs() < 1e-9 * expected.max(1.0),
            "{p:?}"
        );
        assert!(p.latency_ms > p.dram_ms);

        // With the SASS's loads in flight, the kernel's own bytes in flight:
        // resident warps x loads x bytes past L1 per warp load. Twice the
        // loads, half the bound (ATAX's column pass under launch bounds).
        let with = |loads: u32| {
            let query = Query {
                resources: Some(Resources {
                    registers: 32,
                    loads_in_flight: Some(loads),
                    ..Resources::default()
                }),
                ..query.clone()
            };
            predict(&module, &query, &device).unwrap().latency_ms
        };
        let (few, many) = (with(1), with(2));
        assert!((few / many - 2.0).abs() < 1e-9, "{few} vs {many}");
        let walked = walk(
            &module,
            module.function("k").unwrap(),
            &query.launch,
            &device,
            device.latency_dram,
            0,
        );
        let warp_loads = walked.per_warp[Class::LoadGlobal.index()] * 64.0 * 8.0;
        let in_flight = 8.0 * f64::from(1u32 << 30) / warp_loads;
        let expected = per_sm * device.latency_dram / in_flight / (device.clock_ghz * 1e6);
        assert!(
            (few - expected).abs() < 1e-9 * expected,
            "{few} vs {expected}"
        );
    }

    #[test]
    fn every_sm_busy_is_bound_by_the_kernels_own_loads_in_flight() {
        let module = Module::parse(INTERLEAVED).unwrap();
        let device = DeviceModel::h100_sxm();
        // 16384 CTAs moving 64 MB: every SM busy, 8 blocks of 8 warps
        // resident, 64 bytes past L1 per warp load.
        let query = |loads_in_flight: Option<u32>| Query {
            entry: "k",
            launch: blocks_of_256(16384),
            dynamic_shared_bytes: 0,
            resources: Some(Resources {
                registers: 32,
                loads_in_flight,
                ..Resources::default()
            }),
            traffic: Traffic::compulsory(1 << 26),
        };
        let predicted = |loads| predict(&module, &query(loads), &device).unwrap();
        // Without the SASS, the critical path alone: the device's figure
        // (DRAM's bandwidth-latency product) says nothing the DRAM bound
        // does not while every SM is busy.
        let unknown = predicted(None);
        let (path_only, streaming) = (unknown.latency_ms, unknown.dram_ms);
        // 64 warps with one load each in flight, 4 KB an SM: a bound above
        // DRAM's and the path's; two loads each halve it.
        let one = predicted(Some(1));
        assert!(one.latency_ms > streaming && one.latency_ms > 2.0 * path_only);
        let two = predicted(Some(2)).latency_ms;
        assert!((one.latency_ms / two - 2.0).abs() < 1e-9, "{one:?} {two}");
        // Enough in flight: the path again.
        assert_eq!(predicted(Some(1 << 20)).latency_ms, path_only);

        // DRAM's bound: the bandwidth time without the SASS; with it, that
        // and each byte's wait behind the loads in flight (here every byte
        // past L1 is DRAM's, so the wait is the latency bound) as a vector.
        let hypot = |p: &Prediction| streaming.hypot(p.latency_ms);
        assert!((one.dram_ms - hypot(&one)).abs() < 1e-12, "{one:?}");
        assert_eq!(one.bound, Bound::Dram);
        let many = predicted(Some(1 << 20));
        assert!(many.dram_ms > streaming && many.dram_ms < 1.001 * streaming);
    }

    #[test]
    fn prefetches_are_bytes_in_flight_not_l2_traffic() {
        let module = Module::parse(INTERLEAVED).unwrap();
        let device = DeviceModel::h100_sxm();
        // As above: every SM busy, one load in flight per warp.
        let query = |l2_prefetch_bytes: f64| Query {
            entry: "k",
            launch: blocks_of_256(16384),
            dynamic_shared_bytes: 0,
            resources: Some(Resources {
                registers: 32,
                loads_in_flight: Some(1),
                ..Resources::default()
            }),
            traffic: Traffic {
                l2_prefetch_bytes,
                ..Traffic::compulsory(1 << 26)
            },
        };
        let predicted = |bytes| predict(&module, &query(bytes), &device).unwrap();
        let without = predicted(0.0);
        // An eighth as many bytes prefetched as loaded: a warp's task
        // prefetches one load's worth (its 8 loads of 64 bytes, above),
        // all in flight beside the load it waits for, so twice the bytes
        // in flight and each byte past L1 waits half as long.
        let with = predicted(f64::from(1u32 << 23));
        assert!(
            (without.latency_ms / with.latency_ms - 2.0).abs() < 1e-9,
            "{without:?} {with:?}"
        );
        assert!(with.dram_ms < without.dram_ms);
        // The SMs receive none of it: the L2 bound is the loads' alone.
        assert_eq!(with.l2_ms, without.l2_ms);
    }

    #[test]
    fn strided_loads_are_bound_by_l1_lookups() {
        let module = Module::parse(INTERLEAVED).unwrap();
        // Sectors first: lines at 4 a clock never bind before them.
        let mut device = DeviceModel::h100_sxm();
        device.l1_lines_per_clock_per_sm = 4.0;
        let query = |l1_sectors_per_load: f64| Query {
            entry: "k",
            launch: blocks_of_256(132 * 64),
            dynamic_shared_bytes: 0,
            resources: None,
            traffic: Traffic {
                l1_sectors_per_load,
                l1_lines_per_load: l1_sectors_per_load / 4.0,
                l2_bytes: 1e6,
                l2_prefetch_bytes: 0.0,
                l2_partial_store_sectors: 0.0,
                dram_bytes: 1e6,
                l1_hit_rate: 0.9,
                l2_hit_rate: 0.9,
            },
        };
        // 32 sectors per warp load that hit in L1: lookups, not bytes moved.
        let strided = predict(&module, &query(32.0), &device).unwrap();
        assert_eq!(strided.bound, Bound::L1);
        // 64 CTAs of 8 warps per SM, 8 loads each, 32 sectors of 32 bytes.
        let expected = (64.0 * 8.0 * 8.0 * 32.0 * 32.0) / 128.0 / (device.clock_ghz * 1e6);
        assert!(
            (strided.l1_ms - expected).abs() < 1e-6 * expected,
            "{strided:?}"
        );
        let coalesced = predict(&module, &query(4.0), &device).unwrap();
        assert_ne!(coalesced.bound, Bound::L1);
        // One line a clock: 32 lines per load take 32 clocks where 32
        // sectors at 128 bytes a clock take 8.
        let mut lines = query(32.0);
        lines.traffic.l1_lines_per_load = 32.0;
        let mut one_line = device.clone();
        one_line.l1_lines_per_clock_per_sm = 1.0;
        let by_lines = predict(&module, &lines, &one_line).unwrap();
        let expected = 64.0 * 8.0 * 8.0 * 32.0 / (device.clock_ghz * 1e6);
        assert!(
            (by_lines.l1_ms - expected).abs() < 1e-6 * expected,
            "{by_lines:?}"
        );
    }

    #[test]
    fn stores_in_part_of_a_sector_take_the_l2_at_their_own_rate() {
        let module = Module::parse(INTERLEAVED).unwrap();
        let mut device = DeviceModel::h100_sxm();
        device.l2_gbps = 6400.0; // 200 sectors per ns
        device.l2_partial_sectors_per_ns = 50.0;
        let mut query = Query {
            entry: "k",
            launch: blocks_of_256(132),
            dynamic_shared_bytes: 0,
            resources: None,
            traffic: Traffic {
                l2_bytes: 32e9,
                dram_bytes: 1e3,
                ..Traffic::compulsory(0)
            },
        };
        // 1e9 whole sectors: 5 ms.
        let whole = predict(&module, &query, &device).unwrap();
        assert!((whole.l2_ms - 5.0).abs() < 1e-9, "{whole:?}");
        // Half of them stored in part: 2.5 ms + 0.5e9 / 50 per ns = 12.5 ms.
        query.traffic.l2_partial_store_sectors = 0.5e9;
        let half = predict(&module, &query, &device).unwrap();
        assert!((half.l2_ms - 12.5).abs() < 1e-9, "{half:?}");
        assert_eq!(half.bound, Bound::L2);
    }

    const STREAM: &str = r#"
.visible .entry k(
	.param .u64 k_param_0,
	.param .u32 k_param_1
)
{
	ld.param.b32 	%r1, [k_param_1];
	mov.b32 	%r2, 0;
$L__BB0_1:
	ld.global.f32 	%f1, [%rd1];
	fma.rn.f32 %f2, %f1, %f1, %f2;
	add.s32 	%r2, %r2, 1;
	setp.lt.u32 	%p1, %r2, %r1;
	@%p1 bra 	$L__BB0_1;
	st.global.f32 	[%rd1], %f2;
	ret;
}
"#;

    #[test]
    fn a_loop_bounded_by_data_runs_as_often_as_the_measured_loads_say() {
        let module = Module::parse(STREAM).unwrap();
        let device = DeviceModel::h100_sxm();
        let launch = |n: ParamValue| LaunchContext {
            params: vec![ParamValue::Unknown, n],
            ..blocks_of_256(132)
        };
        // One load per iteration: 10 loads per task is 10 iterations.
        let data = launch(ParamValue::Unknown);
        let trips = unknown_trips(&module, "k", &data, &device, 10.0).unwrap();
        assert!((trips - 10.0).abs() < 1e-9, "{trips}");
        // The prediction with it: 10 loads per warp, where 1 was assumed.
        let query = |launch: LaunchContext| Query {
            entry: "k",
            launch,
            dynamic_shared_bytes: 0,
            resources: None,
            traffic: Traffic::compulsory(1),
        };
        let assumed = predict(&module, &query(data.clone()), &device).unwrap();
        let measured = predict(
            &module,
            &query(LaunchContext {
                unknown_trips: Some(trips),
                ..data.clone()
            }),
            &device,
        )
        .unwrap();
        let loads = |p: &Prediction| p.per_warp[Class::LoadGlobal.index()];
        assert_eq!((loads(&assumed), loads(&measured)), (1.0, 10.0));
        // A bound from the launch is counted, not solved.
        assert_eq!(
            unknown_trips(&module, "k", &launch(ParamValue::Scalar(4)), &device, 10.0),
            None
        );
    }

    #[test]
    fn more_iterations_take_longer_and_memory_bounds_streams() {
        let module = Module::parse(STREAM).unwrap();
        let device = DeviceModel::h100_sxm();
        let query = |n: u64, bytes: u64| Query {
            entry: "k",
            launch: LaunchContext {
                params: vec![ParamValue::Unknown, ParamValue::Scalar(n)],
                ..blocks_of_256(132 * 8)
            },
            dynamic_shared_bytes: 0,
            resources: Some(Resources {
                registers: 16,
                ..Resources::default()
            }),
            traffic: Traffic::compulsory(bytes),
        };
        let short = predict(&module, &query(10, 1 << 20), &device).unwrap();
        let long = predict(&module, &query(1000, 1 << 20), &device).unwrap();
        assert!(long.ms > 10.0 * short.ms, "{} vs {}", long.ms, short.ms);
        assert_eq!(long.per_warp[Class::Fp32.index()], 1000.0);
        // 8 GB at a few TB/s dwarfs a few instructions per warp.
        let streaming = predict(&module, &query(1, 8 << 30), &device).unwrap();
        assert_eq!(streaming.bound, Bound::Dram);
        assert!(matches!(
            predict(
                &module,
                &Query {
                    entry: "nope",
                    ..query(1, 1)
                },
                &device
            ),
            Err(PredictError::NoEntry(_))
        ));
    }
}
