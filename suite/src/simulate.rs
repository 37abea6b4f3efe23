//! The locality simulator: runs a suite kernel's schedule on the CPU backend
//! and feeds every warp's global accesses to the cache model.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::fmt;
use std::time::Instant;

use clustered_host::cpu::{self, CpuLaunch, CpuPlan, Dispatch, Machine, Observer, RunStats};
use clustered_host::{ClusterError, ClusterOptions};
use clustered_sim::{CacheModel, CacheStats, DeviceProfile};

use crate::suite::{Arg, ArgValue, CpuEntry, Variant, Workload};

/// What one simulated run found.
#[derive(Clone, Debug)]
pub struct Simulation {
    pub workload: &'static str,
    pub variant: &'static str,
    pub stats: CacheStats,
    /// The SM (index) that ran each original CTA, row-major.
    pub sm_of_task: Vec<Option<u32>>,
    /// How many times each original CTA started (exactly once, or a bug).
    pub task_runs: Vec<u32>,
    /// L1->L2 sectors of atomics (the agents' claims), part of
    /// `stats.l1_to_l2_sectors`; separated to compare loads and stores alone.
    pub atomic_sectors: u64,
    /// Lanes of prefetch instructions (a schedule's prefetch hook).
    pub prefetch_lanes: u64,
    /// Of those, lanes whose address is in none of the kernel's buffers: a
    /// hook that prefetches for threads the body's tests would stop. It
    /// cannot fault, but on a GPU a prefetch of unmapped memory is slow
    /// (an unguarded generated hook made hotspot 37x slower on the H100).
    pub stray_prefetch_lanes: u64,
    /// The output buffers' words, in buffer order.
    pub outputs: Vec<Vec<u32>>,
    pub run: RunStats,
    /// Host seconds the simulation took.
    pub seconds: f64,
}

/// Why a simulation failed.
#[derive(Debug)]
pub enum SimulateError {
    Cpu(cpu::CpuError),
    Cluster(ClusterError),
    /// The kernel cannot be resident on an SM of the profile.
    DoesNotFit {
        threads: u32,
        shared_bytes: u32,
    },
}

impl fmt::Display for SimulateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimulateError::Cpu(e) => write!(f, "{e}"),
            SimulateError::Cluster(e) => write!(f, "{e}"),
            SimulateError::DoesNotFit { threads, shared_bytes } => write!(
                f,
                "a block of {threads} threads with {shared_bytes} bytes of dynamic shared memory does not fit on an SM of this profile"
            ),
        }
    }
}

impl std::error::Error for SimulateError {}

/// Global memory of a simulated run: 256-byte aligned like `cudaMalloc`, so
/// that cache lines fall where they fall on a GPU.
struct DeviceWords {
    pointer: *mut u32,
    len: usize,
}

impl DeviceWords {
    const ALIGN: usize = 256;

    fn new(words: &[u32]) -> Self {
        let layout = Self::layout(words.len());
        // SAFETY: the layout has a non-zero size.
        let pointer = unsafe { alloc_zeroed(layout) }.cast::<u32>();
        assert!(
            !pointer.is_null(),
            "out of host memory for a simulated buffer"
        );
        // SAFETY: `pointer` holds at least `words.len()` words.
        unsafe { pointer.copy_from_nonoverlapping(words.as_ptr(), words.len()) };
        DeviceWords {
            pointer,
            len: words.len(),
        }
    }

    fn layout(len: usize) -> Layout {
        Layout::from_size_align((len * 4).max(Self::ALIGN), Self::ALIGN).expect("buffer size")
    }

    fn to_vec(&self) -> Vec<u32> {
        // SAFETY: `len` words live at `pointer`.
        unsafe { std::slice::from_raw_parts(self.pointer, self.len) }.to_vec()
    }
}

impl Drop for DeviceWords {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.pointer.cast(), Self::layout(self.len)) }
    }
}

/// The observer: the cache model, and who ran what.
struct Tracer {
    model: CacheModel,
    sm_of_task: Vec<Option<u32>>,
    task_runs: Vec<u32>,
    atomic_sectors: u64,
    prefetch_lanes: u64,
    stray_prefetch_lanes: u64,
    /// A plain kernel's hardware CTA is its original CTA.
    plain: bool,
    lanes: Vec<cpu::LaneAccess>,
    /// Host range -> simulated address of each buffer (see `place`).
    placement: Vec<(u64, u64, u64)>,
}

/// Simulated global addresses of the buffers: each at a fixed, 2 MiB-aligned
/// place, so results do not depend on where the host's allocator put them
/// (which moved the L1 hit rate by 1-2 points between two runs of
/// `locality`, issue 4's closing note). `ranges`:
/// (host address, bytes) of the buffers, then of the agents' scratch.
fn place(ranges: impl IntoIterator<Item = (u64, u64)>) -> Vec<(u64, u64, u64)> {
    let mut next: u64 = 1 << 40;
    ranges
        .into_iter()
        .map(|(start, bytes)| {
            let placed = (start, start + bytes, next);
            next += bytes.next_multiple_of(2 << 20);
            placed
        })
        .collect()
}

impl Tracer {
    fn record(&mut self, sm: u32, task: u32) {
        self.sm_of_task[task as usize] = Some(sm);
        self.task_runs[task as usize] += 1;
    }
}

impl Observer for Tracer {
    fn block_started(&mut self, sm: u32, block: u32) {
        if self.plain {
            self.record(sm, block);
        }
    }

    fn task_started(&mut self, sm: u32, task: u32) {
        if !self.plain {
            self.record(sm, task);
        }
    }

    fn warp_access(
        &mut self,
        sm: u32,
        task: u32,
        kind: cpu::AccessKind,
        lanes: &[cpu::LaneAccess],
    ) {
        self.lanes.clear();
        let placement = &self.placement;
        if matches!(
            kind,
            cpu::AccessKind::PrefetchL1 | cpu::AccessKind::PrefetchL2
        ) {
            self.prefetch_lanes += lanes.len() as u64;
            self.stray_prefetch_lanes += lanes
                .iter()
                .filter(|l| {
                    !placement
                        .iter()
                        .any(|(start, end, _)| (*start..*end).contains(&l.address))
                })
                .count() as u64;
        }
        self.lanes.extend(lanes.iter().map(|l| {
            let address = placement
                .iter()
                .find(|(start, end, _)| (*start..*end).contains(&l.address))
                .map_or(l.address, |(start, _, placed)| placed + (l.address - start));
            cpu::LaneAccess {
                address,
                bytes: l.bytes,
            }
        }));
        if kind == cpu::AccessKind::Atomic {
            // Distinct sectors, without allocating: a lane counts unless an
            // earlier lane hit its sector (atomics are one lane, or few).
            let sector = |l: &cpu::LaneAccess| l.address / 32;
            self.atomic_sectors += (0..self.lanes.len())
                .filter(|&i| {
                    !self.lanes[..i]
                        .iter()
                        .any(|l| sector(l) == sector(&self.lanes[i]))
                })
                .count() as u64;
        }
        self.model.warp_access(sm, task, kind, &self.lanes);
    }
}

/// Runs `variant` of `workload` on a simulated `profile` GPU whose SMs take
/// their first CTAs in `dispatch` order.
pub fn simulate(
    workload: &Workload,
    variant: &Variant,
    profile: &DeviceProfile,
    dispatch: Dispatch,
) -> Result<Simulation, SimulateError> {
    let started = Instant::now();
    let shape = workload.shape;
    let threads = shape.block_threads() as u32;
    let resident = profile.resident_blocks(threads, shape.dynamic_shared_bytes);
    if resident == 0 {
        return Err(SimulateError::DoesNotFit {
            threads,
            shared_bytes: shape.dynamic_shared_bytes,
        });
    }
    let machine = Machine::new(profile.sm_count).with_dispatch(dispatch);
    let original = CpuLaunch {
        grid: shape.grid,
        block: shape.block,
        dynamic_shared_bytes: shape.dynamic_shared_bytes,
        resident_blocks: resident,
    };
    let memory: Vec<DeviceWords> = workload
        .buffers
        .iter()
        .map(|b| DeviceWords::new(&b.words))
        .collect();
    let ranges: Vec<(u64, u64)> = memory
        .iter()
        .map(|m| (m.pointer as u64, m.len as u64 * 4))
        .collect();
    let args: Vec<ArgValue> = workload
        .args
        .iter()
        .map(|arg| match *arg {
            Arg::Buffer(i) => ArgValue::Pointer(memory[i].pointer),
            Arg::U32(v) => ArgValue::U32(v),
            Arg::F32(v) => ArgValue::F32(v),
            Arg::Filter5x5(v) => ArgValue::Filter5x5(v),
        })
        .collect();
    let mut tracer = Tracer {
        model: CacheModel::new(profile),
        sm_of_task: vec![None; shape.grid_blocks() as usize],
        task_runs: vec![0; shape.grid_blocks() as usize],
        atomic_sectors: 0,
        prefetch_lanes: 0,
        stray_prefetch_lanes: 0,
        plain: matches!(variant.cpu, CpuEntry::Plain(_)),
        lanes: Vec::with_capacity(32),
        placement: place(ranges.iter().copied()),
    };
    let run = match variant.cpu {
        CpuEntry::Plain(kernel) => cpu::run(&machine, &original, &mut tracer, &|| kernel(&args)),
        CpuEntry::Clustered(kernel, contract) => {
            let options = variant.options.over(&ClusterOptions::default());
            let mut plan = CpuPlan::new(contract, original, &machine, &options)
                .map_err(SimulateError::Cluster)?;
            let parameter = plan.parameter();
            // The claim counters too: their atomics reach the model.
            let scratch = plan.scratch();
            let scratch = (scratch.as_ptr() as u64, scratch.len() as u64 * 4);
            tracer.placement = place(ranges.iter().copied().chain([scratch]));
            cpu::run(&machine, &plan.launch, &mut tracer, &|| {
                kernel(&args, parameter)
            })
        }
    }
    .map_err(SimulateError::Cpu)?;
    tracer.model.flush();
    Ok(Simulation {
        workload: workload.name,
        variant: variant.label,
        stats: tracer.model.stats(),
        sm_of_task: tracer.sm_of_task,
        task_runs: tracer.task_runs,
        atomic_sectors: tracer.atomic_sectors,
        prefetch_lanes: tracer.prefetch_lanes,
        stray_prefetch_lanes: tracer.stray_prefetch_lanes,
        outputs: workload.outputs().map(|i| memory[i].to_vec()).collect(),
        run,
        seconds: started.elapsed().as_secs_f64(),
    })
}
