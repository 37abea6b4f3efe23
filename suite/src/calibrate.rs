//! Calibration of the static predictor's device model from microbenchmarks
//! run on the GPU (issue 16): `cargo run --release -p clustered-suite
//! --example calibrate` measures a device's latencies, FP32 rate, clock and
//! bandwidths with the kernels of `kernels::calibrate` and writes a device
//! file in `clustered_predict::DeviceModel`'s format, each measured figure
//! with its provenance.
//!
//! The pure part (the pointer chase's permutation, cycles and times turned
//! into figures, the sanity checks, the merge into a [`DeviceModel`], the
//! command line) is here and tested without a GPU; [`measure`] runs the
//! microbenchmarks; the example only prints and writes.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use clustered_host::{ClusterOptions, CudaSlice, Gpu, LaunchConfig, Module};
use clustered_predict::device::{ClassFigures, DeviceError};
use clustered_predict::DeviceModel;
use kernels::calibrate::{
    atom_chase, barrier_chain, block_turnover, cluster_barrier_chain, fence_chain, fp32_chain,
    fp32_throughput, int_chain, int_throughput, l1_scattered_loads, pointer_chase,
    pointer_chase_l2, read_sum, scattered_stores, scattered_value, scattered_word, sfu_chain,
    sfu_throughput, shared_base, shared_chase, shared_throughput, shared_word, xor_add8,
    CHAIN_PER_ITERATION, FENCE_ACQ_REL_GPU, FENCE_ACQ_REL_SYS, FENCE_NONE, FENCE_RELEASE_GPU,
    FENCE_WITHOUT_STORES, FP32_CHAIN_PER_ITERATION, FP32_THROUGHPUT_PER_ITERATION,
    INT_CHAIN_PER_ITERATION, INT_THROUGHPUT_PER_ITERATION, SCATTER_LOADS_PER_ITERATION,
    SCATTER_WORDS, SFU_THROUGHPUT_PER_ITERATION, SHARED_WORDS, STAMP_WORDS, THROUGHPUT_CHAINS,
};

/// Why calibration stopped.
#[derive(Debug)]
#[non_exhaustive]
pub enum CalibrateError {
    /// The command line is not understood (the message says what to write).
    Usage(String),
    /// A file could not be read or written.
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The `--base` file is not a device file.
    Base {
        /// The file.
        path: PathBuf,
        /// Why `DeviceModel::from_json` refused it.
        error: DeviceError,
    },
    /// The calibrated model does not pass `DeviceModel::from_json` (a bug:
    /// figures that it would refuse are not written).
    Model(DeviceError),
    /// A microbenchmark's buffer cannot be laid out (a pointer chase's
    /// layout, a buffer beyond u32 indices; the message says why).
    Layout(String),
    /// A microbenchmark computed something other than what the host
    /// expects (a chase that ended elsewhere, sums that differ): its timing
    /// would not be of the intended work.
    WrongResult(String),
    /// The GPU refused an allocation, a copy or a launch.
    Gpu(clustered_host::Error),
}

impl fmt::Display for CalibrateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CalibrateError::Usage(message) => write!(f, "{message}\n{USAGE}"),
            CalibrateError::Io { path, error } => write!(f, "{}: {error}", path.display()),
            CalibrateError::Base { path, error } => {
                write!(f, "--base {}: {error}", path.display())
            }
            CalibrateError::Model(error) => {
                write!(
                    f,
                    "the calibrated model is not a valid device file: {error}"
                )
            }
            CalibrateError::Layout(message) => write!(f, "buffer layout: {message}"),
            CalibrateError::WrongResult(message) => write!(f, "wrong result: {message}"),
            CalibrateError::Gpu(error) => write!(f, "GPU: {error}"),
        }
    }
}

impl std::error::Error for CalibrateError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CalibrateError::Io { error, .. } => Some(error),
            CalibrateError::Base { error, .. } | CalibrateError::Model(error) => Some(error),
            CalibrateError::Gpu(error) => Some(error),
            CalibrateError::Usage(_)
            | CalibrateError::Layout(_)
            | CalibrateError::WrongResult(_) => None,
        }
    }
}

impl From<clustered_host::Error> for CalibrateError {
    fn from(error: clustered_host::Error) -> Self {
        CalibrateError::Gpu(error)
    }
}

// ---------------------------------------------------------------------------
// The command line.

/// The example's usage text.
pub const USAGE: &str = "usage: calibrate [--base DEVICE.json] [--out PATH] [--runs N]\n  \
--base  the device file to start from (default: the shipped H100 SXM model)\n  \
--out   where to write the calibrated device file (default: target/calibrated-<device>.json, \
relative to the current directory)\n  \
--runs  timed runs of each microbenchmark, the median is kept (default 5, 1 to 100)";

/// The example's options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Args {
    /// `--base`: the device file to start from.
    pub base: Option<PathBuf>,
    /// `--out`: where to write the calibrated file.
    pub out: Option<PathBuf>,
    /// `--runs`: timed runs per microbenchmark.
    pub runs: usize,
    /// `--help` / `-h`.
    pub help: bool,
}

impl Default for Args {
    fn default() -> Self {
        Args {
            base: None,
            out: None,
            runs: 5,
            help: false,
        }
    }
}

/// Parses the example's arguments (without the program name). Accepts
/// `--flag value` and `--flag=value`.
pub fn parse_args<I: IntoIterator<Item = String>>(args: I) -> Result<Args, CalibrateError> {
    let mut parsed = Args::default();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag.to_string(), Some(value)),
            _ => (arg.clone(), None),
        };
        let mut value = |name: &str| -> Result<String, CalibrateError> {
            match inline {
                Some(value) => Ok(value.to_string()),
                None => args
                    .next()
                    .ok_or_else(|| CalibrateError::Usage(format!("{name} needs a value"))),
            }
        };
        match flag.as_str() {
            "-h" | "--help" => parsed.help = true,
            "--base" => parsed.base = Some(PathBuf::from(value("--base")?)),
            "--out" => parsed.out = Some(PathBuf::from(value("--out")?)),
            "--runs" => {
                let text = value("--runs")?;
                parsed.runs = match text.parse::<usize>() {
                    Ok(n @ 1..=100) => n,
                    _ => {
                        return Err(CalibrateError::Usage(format!(
                            "--runs takes a number from 1 to 100, not `{text}`"
                        )))
                    }
                };
            }
            other => return Err(CalibrateError::Usage(format!("unknown argument `{other}`"))),
        }
    }
    Ok(parsed)
}

/// The device model to start from: `path`'s, or the shipped H100 SXM's.
pub fn load_base(path: Option<&Path>) -> Result<DeviceModel, CalibrateError> {
    let Some(path) = path else {
        return Ok(DeviceModel::h100_sxm());
    };
    let text = std::fs::read_to_string(path).map_err(|error| CalibrateError::Io {
        path: path.to_path_buf(),
        error,
    })?;
    DeviceModel::from_json(&text).map_err(|error| CalibrateError::Base {
        path: path.to_path_buf(),
        error,
    })
}

/// A file-name form of a device name: `NVIDIA H100 80GB HBM3` ->
/// `nvidia-h100-80gb-hbm3`.
pub fn slug(name: &str) -> String {
    let mut slug = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    while slug.ends_with('-') {
        slug.pop();
    }
    if slug.is_empty() {
        slug.push_str("gpu");
    }
    slug
}

/// Where the calibrated file goes without `--out`:
/// `target/calibrated-<slug>.json`, relative to the current directory.
pub fn default_out(device: &str) -> PathBuf {
    Path::new("target").join(format!("calibrated-{}.json", slug(device)))
}

/// `YYYY-MM-DD` (UTC) of `unix_seconds`.
pub fn date_of(unix_seconds: u64) -> String {
    // Howard Hinnant's days-to-civil algorithm.
    let days = (unix_seconds / 86_400) as i64 + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// Today's date, UTC.
pub fn today() -> String {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    date_of(seconds)
}

// ---------------------------------------------------------------------------
// The pointer chase's chain.

/// Where a pointer chase's loads go: `len` elements (`u32`), one visited
/// slot in every `stride` elements (at a random 128-byte line of the stride
/// where it spans several, so the addresses do not all share their low bits
/// and map to a few DRAM channels or L2 slices), the slots visited one group
/// of `group` elements after another (each group's slots in random order,
/// the groups in random order), so that consecutive loads share a 2 MiB page
/// where the group is one: the chase then measures the cache level, not TLB
/// misses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChaseLayout {
    /// Elements of the array.
    pub len: usize,
    /// Elements between two slots (32 = a 128-byte line).
    pub stride: usize,
    /// Elements per group: a multiple of `stride`.
    pub group: usize,
}

impl ChaseLayout {
    /// The slots the chain visits: one per `stride` elements.
    pub fn slots(&self) -> usize {
        self.len.checked_div(self.stride).unwrap_or(0)
    }

    /// The array's bytes.
    pub fn bytes(&self) -> usize {
        self.len * std::mem::size_of::<u32>()
    }

    fn check(&self) -> Result<(), CalibrateError> {
        let fail = |why: String| Err(CalibrateError::Layout(why));
        if self.stride == 0 || self.group == 0 {
            return fail(format!("stride and group must be positive: {self:?}"));
        }
        if !self.group.is_multiple_of(self.stride) {
            return fail(format!(
                "group ({}) must be a multiple of stride ({})",
                self.group, self.stride
            ));
        }
        if self.len < self.stride {
            return fail(format!(
                "the array ({} elements) holds no slot of stride {}",
                self.len, self.stride
            ));
        }
        if self.len > 1 << 32 {
            return fail(format!(
                "{} elements: indices must fit in u32 (at most 2^32 elements)",
                self.len
            ));
        }
        Ok(())
    }
}

/// SplitMix64: a small deterministic generator (no dependency), enough to
/// shuffle a chain.
#[derive(Clone, Debug)]
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number below `bound` (> 0); the bias is below 2^-32 for the
    /// bounds used here.
    fn below(&mut self, bound: usize) -> usize {
        ((u128::from(self.next()) * bound as u128) >> 64) as usize
    }

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }
}

/// The slots of `layout` (element indices) in the order the chain visits
/// them, in `seed`'s random order.
fn visit_order(layout: &ChaseLayout, seed: u64) -> Vec<u32> {
    let mut rng = SplitMix(seed);
    let per_group = layout.group / layout.stride;
    let slots = layout.slots();
    let mut groups: Vec<usize> = (0..slots.div_ceil(per_group)).collect();
    rng.shuffle(&mut groups);
    let mut order = Vec::with_capacity(slots);
    let mut within: Vec<usize> = Vec::with_capacity(per_group);
    // The lines of a stride: the slot's line is one of them.
    let lines = (layout.stride / LINE_ELEMENTS).max(1);
    for g in groups {
        within.clear();
        within.extend(g * per_group..((g + 1) * per_group).min(slots));
        rng.shuffle(&mut within);
        for &slot in &within {
            let line = if lines > 1 { rng.below(lines) } else { 0 };
            order.push((slot * layout.stride + line * LINE_ELEMENTS) as u32);
        }
    }
    order
}

/// A pointer chase's array and where to start it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chain {
    /// `next[s]` is the slot visited after slot `s`: one cycle through every
    /// slot (so a chase from any slot visits each slot once before it comes
    /// back); the elements that are not slots are 0.
    pub next: Vec<u32>,
    /// The first slot of the cycle (a slot: element 0 need not be one, and a
    /// chase from an element that is not one stays there).
    pub start: u32,
}

/// The chain of `layout`, in `seed`'s random order.
pub fn chase_cycle(layout: &ChaseLayout, seed: u64) -> Result<Chain, CalibrateError> {
    layout.check()?;
    let order = visit_order(layout, seed);
    let mut next = vec![0u32; layout.len];
    for (i, &slot) in order.iter().enumerate() {
        next[slot as usize] = order[(i + 1) % order.len()];
    }
    Ok(Chain {
        next,
        start: order[0],
    })
}

/// The index a chase of `steps` loads from `start` ends at (what
/// `pointer_chase` writes as `out[1]`), or `None` if it leaves `next`.
pub fn chase(next: &[u32], start: u32, steps: u64) -> Option<u32> {
    let mut j = start;
    for _ in 0..steps {
        j = *next.get(j as usize)?;
    }
    Some(j)
}

// ---------------------------------------------------------------------------
// Cycles and times into figures.

/// The median of `values` (the mean of the two middle ones for an even
/// count); `None` when empty or when any is NaN.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() || values.iter().any(|v| v.is_nan()) {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    Some(if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    })
}

/// Cycles per step: `cycles / steps`, `None` for no steps.
pub fn per_step(cycles: u64, steps: u64) -> Option<f64> {
    (steps > 0).then(|| cycles as f64 / steps as f64)
}

/// GB/s (10^9 bytes per second) of `bytes` in `ms` milliseconds.
pub fn gbps(bytes: f64, ms: f64) -> Option<f64> {
    let rate = bytes / (ms * 1e-3) / 1e9;
    (ms > 0.0 && rate.is_finite()).then_some(rate)
}

/// The rate of a quantity between two runs of different length: `(x2 - x1)
/// / (t2 - t1)`, which cancels what both runs pay alike (a launch, a first
/// pass from DRAM). `None` unless the second run is longer in both.
pub fn slope(x1: f64, t1: f64, x2: f64, t2: f64) -> Option<f64> {
    let rate = (x2 - x1) / (t2 - t1);
    (t2 > t1 && x2 > x1 && rate.is_finite()).then_some(rate)
}

/// What one SM's warps of `fp32_throughput` recorded: how many there were,
/// the earliest start and the latest end (its `%clock64`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmSpan {
    /// Warps that ran on the SM.
    pub warps: u64,
    /// The first warp's first clock.
    pub first: u64,
    /// The last warp's last clock.
    pub last: u64,
}

impl SmSpan {
    /// Cycles from the first warp's start to the last warp's end.
    pub fn cycles(&self) -> u64 {
        self.last.saturating_sub(self.first)
    }
}

/// Per SM id, the span of `fp32_throughput`'s stamps (3 words per warp: SM
/// id, first and last clock). A warp whose last clock is before its first
/// (a stamp never written) is skipped.
pub fn sm_spans(stamps: &[u64]) -> BTreeMap<u32, SmSpan> {
    let mut spans: BTreeMap<u32, SmSpan> = BTreeMap::new();
    for stamp in stamps.chunks_exact(STAMP_WORDS) {
        let (sm, first, last) = (stamp[0], stamp[1], stamp[2]);
        let Ok(sm) = u32::try_from(sm) else { continue };
        if last <= first {
            continue;
        }
        spans
            .entry(sm)
            .and_modify(|s| {
                s.warps += 1;
                s.first = s.first.min(first);
                s.last = s.last.max(last);
            })
            .or_insert(SmSpan {
                warps: 1,
                first,
                last,
            });
    }
    spans
}

/// Warp instructions per clock per SM: per SM, its warps x
/// `instructions_per_warp` over its span; the median over SMs.
pub fn rate_per_sm(spans: &BTreeMap<u32, SmSpan>, instructions_per_warp: f64) -> Option<f64> {
    let rates: Vec<f64> = spans
        .values()
        .filter(|s| s.cycles() > 0)
        .map(|s| s.warps as f64 * instructions_per_warp / s.cycles() as f64)
        .collect();
    median(&rates)
}

/// The mean span over SMs, in cycles.
pub fn mean_span(spans: &BTreeMap<u32, SmSpan>) -> Option<f64> {
    let cycles: Vec<f64> = spans.values().map(|s| s.cycles() as f64).collect();
    (!cycles.is_empty()).then(|| cycles.iter().sum::<f64>() / cycles.len() as f64)
}

/// The bytes of loads in flight per SM that Little's law gives for these
/// figures (`load_bytes_in_flight_per_sm`'s derivation in the shipped file):
/// DRAM bandwidth x DRAM latency over the clock and the SMs.
pub fn little_bytes_in_flight(dram_gbps: f64, latency_dram: f64, clock_ghz: f64, sms: u32) -> f64 {
    dram_gbps * latency_dram / clock_ghz / f64::from(sms.max(1))
}

// ---------------------------------------------------------------------------
// Figures and the device model.

/// A figure of [`DeviceModel`] that calibration measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Field {
    /// `clock_ghz`.
    ClockGhz,
    /// `latency_l1`.
    LatencyL1,
    /// `latency_l2`.
    LatencyL2,
    /// `latency_dram`.
    LatencyDram,
    /// `dram_gbps`.
    DramGbps,
    /// `l2_gbps`.
    L2Gbps,
    /// `classes.fp32.latency`.
    Fp32Latency,
    /// `classes.fp32.rate`.
    Fp32Rate,
    /// `classes.int.latency`.
    IntLatency,
    /// `l1_lines_per_clock_per_sm`.
    L1LinesPerClock,
    /// `l2_partial_sectors_per_ns`.
    L2PartialSectors,
    /// `classes.sfu.latency`.
    SfuLatency,
    /// `classes.sfu.rate`.
    SfuRate,
    /// `classes.ld.shared.latency`.
    SharedLatency,
    /// `classes.ld.shared.rate`.
    SharedRate,
    /// `classes.atom.latency`.
    AtomLatency,
    /// `classes.bar.latency`.
    BarLatency,
    /// `classes.fence.latency`.
    FenceLatency,
    /// `block_launch_ns`.
    BlockLaunchNs,
}

impl Field {
    /// Every field, in the table's order.
    pub const ALL: [Field; 19] = [
        Field::ClockGhz,
        Field::LatencyL1,
        Field::LatencyL2,
        Field::LatencyDram,
        Field::Fp32Latency,
        Field::IntLatency,
        Field::SfuLatency,
        Field::SharedLatency,
        Field::AtomLatency,
        Field::BarLatency,
        Field::FenceLatency,
        Field::Fp32Rate,
        Field::SfuRate,
        Field::SharedRate,
        Field::L1LinesPerClock,
        Field::L2Gbps,
        Field::L2PartialSectors,
        Field::DramGbps,
        Field::BlockLaunchNs,
    ];

    /// Its path in the device file, and its provenance key.
    pub fn key(self) -> &'static str {
        match self {
            Field::ClockGhz => "clock_ghz",
            Field::LatencyL1 => "latency_l1",
            Field::LatencyL2 => "latency_l2",
            Field::LatencyDram => "latency_dram",
            Field::DramGbps => "dram_gbps",
            Field::L2Gbps => "l2_gbps",
            Field::Fp32Latency => "classes.fp32.latency",
            Field::Fp32Rate => "classes.fp32.rate",
            Field::IntLatency => "classes.int.latency",
            Field::L1LinesPerClock => "l1_lines_per_clock_per_sm",
            Field::L2PartialSectors => "l2_partial_sectors_per_ns",
            Field::SfuLatency => "classes.sfu.latency",
            Field::SfuRate => "classes.sfu.rate",
            Field::SharedLatency => "classes.ld.shared.latency",
            Field::SharedRate => "classes.ld.shared.rate",
            Field::AtomLatency => "classes.atom.latency",
            Field::BarLatency => "classes.bar.latency",
            Field::FenceLatency => "classes.fence.latency",
            Field::BlockLaunchNs => "block_launch_ns",
        }
    }

    /// Its unit.
    pub fn unit(self) -> &'static str {
        match self {
            Field::ClockGhz => "GHz",
            Field::LatencyL1
            | Field::LatencyL2
            | Field::LatencyDram
            | Field::Fp32Latency
            | Field::IntLatency
            | Field::SfuLatency
            | Field::SharedLatency
            | Field::AtomLatency
            | Field::BarLatency
            | Field::FenceLatency => "cycles",
            Field::DramGbps | Field::L2Gbps => "GB/s",
            Field::Fp32Rate | Field::SfuRate | Field::SharedRate => "warp instr / clock / SM",
            Field::L1LinesPerClock => "lines / clock / SM",
            Field::L2PartialSectors => "sectors / ns",
            Field::BlockLaunchNs => "ns / block / SM",
        }
    }

    /// The shipped file's provenance group that covers it.
    pub fn group(self) -> &'static str {
        match self {
            Field::ClockGhz => "clock",
            Field::LatencyL1
            | Field::LatencyL2
            | Field::LatencyDram
            | Field::Fp32Latency
            | Field::IntLatency
            | Field::SfuLatency
            | Field::SharedLatency
            | Field::AtomLatency
            | Field::BarLatency
            | Field::FenceLatency => "latencies",
            Field::DramGbps | Field::L2Gbps | Field::L2PartialSectors => "bandwidth",
            Field::Fp32Rate | Field::SfuRate | Field::SharedRate => "rates",
            Field::L1LinesPerClock => "l1",
            Field::BlockLaunchNs => "launch",
        }
    }

    /// Its value in `model`.
    pub fn get(self, model: &DeviceModel) -> f64 {
        match self {
            Field::ClockGhz => model.clock_ghz,
            Field::LatencyL1 => model.latency_l1,
            Field::LatencyL2 => model.latency_l2,
            Field::LatencyDram => model.latency_dram,
            Field::DramGbps => model.dram_gbps,
            Field::L2Gbps => model.l2_gbps,
            Field::Fp32Latency => class(model, "fp32").latency,
            Field::Fp32Rate => class(model, "fp32").rate,
            Field::IntLatency => class(model, "int").latency,
            Field::L1LinesPerClock => model.l1_lines_per_clock_per_sm,
            Field::L2PartialSectors => model.l2_partial_sectors_per_ns,
            Field::SfuLatency => class(model, "sfu").latency,
            Field::SfuRate => class(model, "sfu").rate,
            Field::SharedLatency => class(model, "ld.shared").latency,
            Field::SharedRate => class(model, "ld.shared").rate,
            Field::AtomLatency => class(model, "atom").latency,
            Field::BarLatency => class(model, "bar").latency,
            Field::FenceLatency => class(model, "fence").latency,
            Field::BlockLaunchNs => model.block_launch_ns,
        }
    }

    /// Sets it in `model`.
    pub fn set(self, model: &mut DeviceModel, value: f64) {
        match self {
            Field::ClockGhz => model.clock_ghz = value,
            Field::LatencyL1 => model.latency_l1 = value,
            Field::LatencyL2 => model.latency_l2 = value,
            Field::LatencyDram => model.latency_dram = value,
            Field::DramGbps => model.dram_gbps = value,
            Field::L2Gbps => model.l2_gbps = value,
            Field::Fp32Latency => class_mut(model, "fp32").latency = value,
            Field::Fp32Rate => class_mut(model, "fp32").rate = value,
            Field::IntLatency => class_mut(model, "int").latency = value,
            Field::L1LinesPerClock => model.l1_lines_per_clock_per_sm = value,
            Field::L2PartialSectors => model.l2_partial_sectors_per_ns = value,
            Field::SfuLatency => class_mut(model, "sfu").latency = value,
            Field::SfuRate => class_mut(model, "sfu").rate = value,
            Field::SharedLatency => class_mut(model, "ld.shared").latency = value,
            Field::SharedRate => class_mut(model, "ld.shared").rate = value,
            Field::AtomLatency => class_mut(model, "atom").latency = value,
            Field::BarLatency => class_mut(model, "bar").latency = value,
            Field::FenceLatency => class_mut(model, "fence").latency = value,
            Field::BlockLaunchNs => model.block_launch_ns = value,
        }
    }
}

/// The figures of class `name` in `model`, to change (made if missing, as
/// `DeviceModel::class` falls back).
fn class_mut<'m>(model: &'m mut DeviceModel, name: &str) -> &'m mut ClassFigures {
    model
        .classes
        .entry(name.to_string())
        .or_insert(ClassFigures {
            rate: 1.0,
            latency: 4.0,
        })
}

fn class(model: &DeviceModel, name: &str) -> ClassFigures {
    model.classes.get(name).copied().unwrap_or(ClassFigures {
        rate: f64::NAN,
        latency: f64::NAN,
    })
}

/// One measured figure.
#[derive(Clone, Debug, PartialEq)]
pub struct Measurement {
    /// The figure.
    pub field: Field,
    /// Its value (the median of `samples`).
    pub value: f64,
    /// How it was measured, for the provenance.
    pub method: String,
    /// Every run's value.
    pub samples: Vec<f64>,
}

/// A figure printed for information, not written to the device file.
#[derive(Clone, Debug, PartialEq)]
pub struct Extra {
    /// What it is.
    pub name: String,
    /// Its value.
    pub value: f64,
    /// Its unit.
    pub unit: String,
    /// Why it is shown, or how it was measured.
    pub note: String,
}

/// What a calibration run measured on one device.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Calibration {
    /// The device's name (the driver's).
    pub device: String,
    /// Its SMs (the driver's).
    pub sm_count: u32,
    /// Its highest SM clock, GHz (the driver's `CLOCK_RATE`), 0 if unknown.
    pub boost_ghz: f64,
    /// The date of the run, `YYYY-MM-DD`.
    pub date: String,
    /// The figures written to the device file.
    pub measurements: Vec<Measurement>,
    /// Figures shown but not written.
    pub extras: Vec<Extra>,
    /// What went wrong while measuring (a figure left out, a wrong result).
    pub warnings: Vec<String>,
}

impl Calibration {
    /// The measurement of `field`, if there is one.
    pub fn get(&self, field: Field) -> Option<&Measurement> {
        self.measurements.iter().find(|m| m.field == field)
    }
}

/// The shipped value's range that a measurement is expected in, as a factor
/// either way: outside it the table warns.
const PLAUSIBLE_FACTOR: f64 = 3.0;

/// Warnings about figures that do not look right, each naming the figure:
/// values that are not positive (they are not written), latencies out of
/// order (L1 < L2 < DRAM), an L2 bandwidth not above DRAM's, a clock out of
/// range, an FP32 rate above what the schedulers can issue, and figures more
/// than 3x off the base model's.
pub fn sanity(calibration: &Calibration, base: &DeviceModel) -> Vec<String> {
    let mut warnings = Vec::new();
    let value = |field: Field| {
        calibration
            .get(field)
            .map(|m| m.value)
            .filter(|v| v.is_finite() && *v > 0.0)
    };
    for m in &calibration.measurements {
        if !(m.value.is_finite() && m.value > 0.0) {
            warnings.push(format!(
                "{}: measured {} is not a positive number: not written",
                m.field.key(),
                m.value
            ));
            continue;
        }
        let shipped = m.field.get(base);
        if shipped.is_finite() && shipped > 0.0 {
            let ratio = m.value / shipped;
            if !(1.0 / PLAUSIBLE_FACTOR..=PLAUSIBLE_FACTOR).contains(&ratio) {
                warnings.push(format!(
                    "{}: measured {:.4} is {ratio:.2}x the base file's {shipped} {}",
                    m.field.key(),
                    m.value,
                    m.field.unit()
                ));
            }
        }
    }
    let order = [Field::LatencyL1, Field::LatencyL2, Field::LatencyDram];
    for pair in order.windows(2) {
        if let (Some(lower), Some(higher)) = (value(pair[0]), value(pair[1])) {
            if lower >= higher {
                warnings.push(format!(
                    "{} ({lower:.1} cycles) is not below {} ({higher:.1} cycles): the latencies should rise L1 < L2 < DRAM",
                    pair[0].key(),
                    pair[1].key()
                ));
            }
        }
    }
    if let (Some(l2), Some(dram)) = (value(Field::L2Gbps), value(Field::DramGbps)) {
        if l2 <= dram {
            warnings.push(format!(
                "l2_gbps ({l2:.0} GB/s) is not above dram_gbps ({dram:.0} GB/s)"
            ));
        }
    }
    if let Some(clock) = value(Field::ClockGhz) {
        if !(0.3..=3.5).contains(&clock) {
            warnings.push(format!(
                "clock_ghz: {clock:.3} GHz is outside 0.3 to 3.5 GHz"
            ));
        } else if calibration.boost_ghz > 0.0 && clock > calibration.boost_ghz * 1.05 {
            warnings.push(format!(
                "clock_ghz: {clock:.3} GHz is above the device's highest clock ({:.3} GHz)",
                calibration.boost_ghz
            ));
        }
    }
    let issue = f64::from(base.schedulers_per_sm) * base.issue_per_scheduler;
    for field in [Field::Fp32Rate, Field::SfuRate, Field::SharedRate] {
        if let Some(rate) = value(field) {
            if rate > issue * 1.05 {
                warnings.push(format!(
                    "{}: {rate:.2} warp instructions per clock is above what {} schedulers issue ({issue})",
                    field.key(),
                    base.schedulers_per_sm
                ));
            }
        }
    }
    // A pipeline's dependent latency is a few to a few tens of cycles; an
    // atomic's is an L2 round trip, a fence's one or two; a barrier's, tens
    // of cycles.
    for (field, range) in [
        (Field::Fp32Latency, 1.0..=64.0),
        (Field::IntLatency, 1.0..=64.0),
        (Field::SfuLatency, 1.0..=64.0),
        (Field::SharedLatency, 1.0..=64.0),
        (Field::AtomLatency, 50.0..=5000.0),
        (Field::BarLatency, 1.0..=1000.0),
        (Field::FenceLatency, 50.0..=5000.0),
    ] {
        if let Some(latency) = value(field) {
            if !range.contains(&latency) {
                warnings.push(format!(
                    "{}: {latency:.2} cycles is outside {} to {}",
                    field.key(),
                    range.start(),
                    range.end()
                ));
            }
        }
    }
    warnings
}

const GROUP_PREFIX: &str = "calibrated by `calibrate` (see their own entries): ";
const GROUP_REST: &str = "; the rest as shipped: ";

/// A provenance group's text once `keys` of its fields are calibrated: the
/// keys (with those an earlier calibration listed), then the text as
/// shipped, so running on an already calibrated file does not nest.
fn group_text(original: &str, keys: &BTreeSet<&str>) -> String {
    let (earlier, shipped) = match original
        .strip_prefix(GROUP_PREFIX)
        .and_then(|rest| rest.split_once(GROUP_REST))
    {
        Some((earlier, shipped)) => (earlier.split(", ").collect::<BTreeSet<_>>(), shipped),
        None => (BTreeSet::new(), original),
    };
    let all: Vec<&str> = keys
        .iter()
        .chain(&earlier)
        .copied()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    format!("{GROUP_PREFIX}{}{GROUP_REST}{shipped}", all.join(", "))
}

/// `base` with `calibration`'s figures: each measured field replaced (those
/// that are not positive numbers are left as they were), its provenance
/// entry (`provenance[field.key()]`) saying `measured by calibrate on
/// DEVICE, DATE, METHOD`, the groups' entries listing the calibrated
/// fields, the name the device's, and the SM count the device's where it
/// differs. Checked by `DeviceModel::from_json`.
pub fn calibrated_model(
    base: &DeviceModel,
    calibration: &Calibration,
) -> Result<DeviceModel, CalibrateError> {
    let mut model = base.clone();
    let mut groups: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for m in &calibration.measurements {
        if !(m.value.is_finite() && m.value > 0.0) {
            continue;
        }
        m.field.set(&mut model, m.value);
        model.provenance.insert(
            m.field.key().to_string(),
            format!(
                "measured by `calibrate` on {}, {}, {}",
                calibration.device, calibration.date, m.method
            ),
        );
        groups
            .entry(m.field.group())
            .or_default()
            .insert(m.field.key());
    }
    for (group, keys) in &groups {
        let original = model.provenance.get(*group).cloned().unwrap_or_default();
        model
            .provenance
            .insert(group.to_string(), group_text(&original, keys));
    }
    if !calibration.device.is_empty() {
        model.name = calibration.device.clone();
    }
    if calibration.sm_count > 0 && calibration.sm_count != model.sm_count {
        model.provenance.insert(
            "sm_count".to_string(),
            format!(
                "from the driver on {}, {} (the base file said {})",
                calibration.device, calibration.date, model.sm_count
            ),
        );
        model.sm_count = calibration.sm_count;
    }
    DeviceModel::from_json(&model.to_json()).map_err(CalibrateError::Model)
}

/// Writes `model` to `path` (creating its folder) and reads it back through
/// `DeviceModel::from_json`.
pub fn write_model(path: &Path, model: &DeviceModel) -> Result<(), CalibrateError> {
    let io = |error| CalibrateError::Io {
        path: path.to_path_buf(),
        error,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let mut text = model.to_json();
    text.push('\n');
    std::fs::write(path, &text).map_err(io)?;
    let back = std::fs::read_to_string(path).map_err(io)?;
    DeviceModel::from_json(&back).map_err(CalibrateError::Model)?;
    Ok(())
}

/// The table: per figure, measured, the base file's value, the ratio and
/// the unit; then the extras.
pub fn render_table(calibration: &Calibration, base: &DeviceModel) -> String {
    let mut text = format!(
        "{:<22} {:>12} {:>12} {:>7}  {}\n",
        "figure", "measured", "shipped", "ratio", "unit"
    );
    for field in Field::ALL {
        let shipped = field.get(base);
        match calibration.get(field) {
            Some(m) => text.push_str(&format!(
                "{:<22} {:>12.4} {:>12.4} {:>7.2}  {}\n",
                field.key(),
                m.value,
                shipped,
                m.value / shipped,
                field.unit()
            )),
            None => text.push_str(&format!(
                "{:<22} {:>12} {:>12.4} {:>7}  {} (not measured: kept)\n",
                field.key(),
                "-",
                shipped,
                "-",
                field.unit()
            )),
        }
    }
    for extra in &calibration.extras {
        text.push_str(&format!(
            "{:<22} {:>12.4} {:>12} {:>7}  {} ({})\n",
            extra.name, extra.value, "", "", extra.unit, extra.note
        ));
    }
    text
}

// ---------------------------------------------------------------------------
// The microbenchmarks on a GPU.

/// Threads per block of the many-warp kernels.
const BLOCK: u32 = 256;
/// A 2 MiB page, in `u32` elements: the chases' group.
const PAGE_ELEMENTS: usize = (2 << 20) / 4;
/// A 128-byte line, in `u32` elements.
const LINE_ELEMENTS: usize = 32;

/// Runs every microbenchmark `runs` times on `gpu` (the suite's `module`
/// loaded), keeping the medians; `log` hears what runs. A microbenchmark
/// that fails leaves its figure out (with a warning), not the others.
pub fn measure(
    gpu: &Gpu,
    module: &Module,
    runs: usize,
    log: &mut dyn FnMut(&str),
) -> Result<Calibration, CalibrateError> {
    let props = gpu.properties();
    let runs = runs.max(1);
    let mut calibration = Calibration {
        device: props.name.clone(),
        sm_count: props.sm_count,
        boost_ghz: f64::from(props.clock_rate_khz) / 1e6,
        date: today(),
        ..Calibration::default()
    };
    let l2 = if props.l2_cache_bytes > 0 {
        props.l2_cache_bytes as usize
    } else {
        50 << 20
    };
    let total = props.total_memory_bytes as usize;

    log("pointer chases (L1, L2, DRAM)");
    // L1: 16 KiB, one slot per line, after a warm pass.
    let l1 = ChaseLayout {
        len: (16 << 10) / 4,
        stride: LINE_ELEMENTS,
        group: (16 << 10) / 4,
    };
    record(
        &mut calibration,
        chase_latency(gpu, module, &l1, false, true, 4096, runs),
        Field::LatencyL1,
        "a one-thread pointer chase (`next = p[next]`, ld.global, cached in L1) over 16 KiB, \
         one slot per 128-byte line in random order, after a warm pass; %clock64 over 4096 \
         dependent loads, each with its address computation (one IMAD.WIDE)",
    );
    // L2: 8 MiB (a quarter of L2 at most), past L1, after a warm pass.
    let l2_len = ((8 << 20).min(l2 / 4) / 4 / LINE_ELEMENTS).max(1) * LINE_ELEMENTS;
    let l2_layout = ChaseLayout {
        len: l2_len,
        stride: LINE_ELEMENTS,
        group: PAGE_ELEMENTS.min(l2_len),
    };
    record(
        &mut calibration,
        chase_latency(gpu, module, &l2_layout, true, true, 8192, runs),
        Field::LatencyL2,
        &format!(
            "a one-thread pointer chase past L1 (ld.global.cg) over {} MiB, one slot per \
             128-byte line, random order within each 2 MiB page, after a warm pass; %clock64 \
             over 8192 dependent loads, each with its address computation",
            l2_layout.bytes() >> 20
        ),
    );
    // DRAM: 1 GiB (at most an eighth of the memory, at least 8x L2), one
    // slot per 4 KiB, never revisited, no warm pass.
    let dram_bytes = (1usize << 30).min(total / 8).max(8 * l2);
    let dram_layout = ChaseLayout {
        len: dram_bytes / 4 / PAGE_ELEMENTS * PAGE_ELEMENTS,
        stride: 1024,
        group: PAGE_ELEMENTS,
    };
    // Every run continues the chain: no slot is loaded twice (it could
    // still be in L2) while the runs' steps fit in the slots.
    let dram_steps = (dram_layout.slots() / (runs + 1)).clamp(1, 8192) as u32;
    record(
        &mut calibration,
        chase_latency(gpu, module, &dram_layout, true, false, dram_steps, runs),
        Field::LatencyDram,
        &format!(
            "a one-thread pointer chase past L1 (ld.global.cg) over {} MiB, one slot per 4 KiB \
             (at a random 128-byte line of it), random order within each 2 MiB page (few TLB \
             misses), no slot visited twice; %clock64 over {dram_steps} dependent loads, each \
             with its address computation",
            dram_layout.bytes() >> 20
        ),
    );

    log("dependent FP32 and integer chains");
    record(
        &mut calibration,
        fp32_latency(gpu, module, runs),
        Field::Fp32Latency,
        "one warp, a chain of 32768 dependent fma.rn.f32 per thread, %clock64 over the chain",
    );
    record(
        &mut calibration,
        int_latency(gpu, module, runs),
        Field::IntLatency,
        "one warp, a chain of 32768 dependent integer instructions per thread (xor.b32, \
         add.s32 alternating: LOP3 and VIADD in sm_90 SASS), %clock64 over the chain",
    );

    log("the other classes: special functions, shared memory, atomics, barriers");
    record(
        &mut calibration,
        sfu_latency(gpu, module, runs),
        Field::SfuLatency,
        "one warp, a chain of 8192 dependent rsqrt.approx.ftz.f32 per thread (MUFU.RSQ), \
         %clock64 over the chain",
    );
    record(
        &mut calibration,
        shared_latency(gpu, module, runs),
        Field::SharedLatency,
        "a one-thread pointer chase through 16 KiB of shared memory (`j = s[j]`, ld.shared.u32, \
         one word per slot in random order), %clock64 over 4096 dependent loads, each with its \
         address computation",
    );
    record(
        &mut calibration,
        atom_latency(gpu, module, &l2_layout, runs),
        Field::AtomLatency,
        &format!(
            "a one-thread chase of atom.global.add.u32 of 0 (each atomic's old value the next \
             address) over the L2 chase's {} MiB, one slot per 128-byte line, after a run that \
             brings it into L2; %clock64 over 4096 dependent atomics",
            l2_layout.bytes() >> 20
        ),
    );
    record(
        &mut calibration,
        bar_latency(gpu, module, runs),
        Field::BarLatency,
        &format!(
            "one block of {BLOCK} threads, 8192 bar.sync back to back, %clock64 over them: a \
             barrier with every warp present"
        ),
    );
    let (fences, fence_extras) = match fence_costs(gpu, module, runs) {
        Ok((fences, extras)) => (Ok(fences), extras),
        Err(e) => (Err(e), Vec::new()),
    };
    record(
        &mut calibration,
        fences,
        Field::FenceLatency,
        &format!(
            "one block of {FENCE_BLOCK} threads (a pool worker's), 1024 rounds of: every thread \
             stores a word, bar.sync, thread 0 runs fence.acq_rel.gpu and stores a flag, \
             bar.sync; %clock64 over them, less the same rounds without the fence"
        ),
    );
    calibration.extras.extend(fence_extras);
    // Printed, not written: the model costs a cluster barrier as its
    // arrive's fence and a barrier (docs/PREDICTION.md, "Thread block
    // clusters as launch dimensions"); these say what a round takes.
    match cluster_barrier_costs(gpu, module, runs, props.sm_count) {
        Ok(extras) => calibration.extras.extend(extras),
        Err(e) => calibration
            .warnings
            .push(format!("cluster barriers: not measured: {e}")),
    }
    let blocks_per_sm = (props.max_threads_per_sm / BLOCK).max(1);
    // Printed, not written: ptxas spreads PTX's integer class over pipes
    // (IMAD on the FMA pipe; ISETP, LEA, SHF, LOP3 on the ALU pipe) in
    // proportions of its own per kernel, so one mix's rate is not the
    // kernels'; the file keeps the ALU pipe's 64 lanes a clock.
    match int_rate(gpu, module, runs).map(|s| median(&s)) {
        Ok(Some(value)) => calibration.extras.push(Extra {
            name: "int rate (LOP3 + VIADD)".to_string(),
            value,
            unit: "warp instr / clock / SM".to_string(),
            note: format!(
                "{blocks_per_sm} blocks of {BLOCK} threads per SM, 8 chains of xor and add per \
                 thread (LOP3 and VIADD); not written: the kernels' integer mix differs"
            ),
        }),
        Ok(None) => {}
        Err(e) => calibration
            .warnings
            .push(format!("integer rate: not measured: {e}")),
    }
    record(
        &mut calibration,
        sfu_rate(gpu, module, runs),
        Field::SfuRate,
        &format!(
            "{blocks_per_sm} blocks of {BLOCK} threads per SM, 8 independent chains of \
             rsqrt.approx.ftz.f32 per thread; per SM its warps' instructions over %clock64 \
             from its first warp's start to its last warp's end, median over SMs"
        ),
    );
    record(
        &mut calibration,
        shared_rate(gpu, module, runs),
        Field::SharedRate,
        &format!(
            "{blocks_per_sm} blocks of {BLOCK} threads per SM, each thread 8 independent \
             ld.shared.u32 per iteration (a warp's lanes on consecutive words: no bank \
             conflict); per SM its warps' instructions over %clock64 from its first warp's \
             start to its last warp's end, median over SMs"
        ),
    );

    log("FP32 throughput and the clock under load");
    match fp32_rate_and_clock(gpu, module, runs) {
        Ok((rate, clock)) => {
            record(
                &mut calibration,
                Ok(rate),
                Field::Fp32Rate,
                &format!(
                    "{blocks_per_sm} blocks of {BLOCK} threads per SM, 8 independent chains of \
                     fma.rn.f32 per thread; per SM its warps' FMAs over %clock64 from its first \
                     warp's start to its last warp's end, median over SMs"
                ),
            );
            record(
                &mut calibration,
                Ok(clock),
                Field::ClockGhz,
                "the FP32 throughput kernel, after 100 ms of it, at two lengths (4x apart): the \
                 SMs' mean %clock64 span over the launch's event time, difference of the two (launch cost \
                 cancels): the clock under FP32 load",
            );
        }
        Err(e) => {
            calibration.warnings.push(format!(
                "classes.fp32.rate and clock_ghz: not measured: {e}"
            ));
        }
    }

    log("L2 and DRAM bandwidth");
    let l2_bw_bytes = (16usize << 20).min(l2 / 3);
    record(
        &mut calibration,
        l2_bandwidth(gpu, module, l2_bw_bytes, runs),
        Field::L2Gbps,
        &format!(
            "every SM full of threads reading a {} MiB buffer past L1 (ld.global.cg, 4 loads in \
             flight per thread), 20 and 120 passes: bytes over event time, difference of the \
             two (launch and first pass cancel)",
            l2_bw_bytes >> 20
        ),
    );
    log("uncoalesced loads in L1, partial-sector stores in L2");
    record(
        &mut calibration,
        l1_line_rate(gpu, module, 32, runs),
        Field::L1LinesPerClock,
        &format!(
            "every SM full of threads ({BLOCK} per block) loading a 16 KiB buffer (L1 hits), \
             each lane of a warp in its own 128-byte line, 32 consecutive lines per load \
             ({SCATTER_LOADS_PER_ITERATION} independent loads per thread per iteration, 1024 \
             iterations): per SM its warps' line lookups over %clock64 from its first warp's \
             start to its last warp's end, median over SMs"
        ),
    );
    // The same at other lane strides: whether the rate depends on which
    // lines (a bank per line address bit, say) or on how many.
    for (stride, what) in [
        (128u32, "lanes in lines 4 apart"),
        (64, "lanes in lines 2 apart"),
        (1, "coalesced, across 2 lines"),
    ] {
        match l1_line_rate(gpu, module, stride, runs).map(|s| median(&s)) {
            Ok(Some(value)) => calibration.extras.push(Extra {
                name: format!("L1 lines, stride {stride}"),
                value,
                unit: "lines / clock / SM".to_string(),
                note: format!("{what}; not written"),
            }),
            Ok(None) => {}
            Err(e) => calibration
                .warnings
                .push(format!("L1 lines at stride {stride}: not measured: {e}")),
        }
    }
    let store_rows = scattered_rows(l2);
    record(
        &mut calibration,
        partial_store_rate(gpu, module, store_rows, runs),
        Field::L2PartialSectors,
        &format!(
            "every SM full of threads storing into a {} MiB buffer (fits L2), each lane of a \
             warp one 4-byte word in its own line (32 sectors per warp store, 4 of 32 bytes \
             written, as a naive transpose stores), 64 and 320 passes: sectors over event \
             time, difference of the two (launch and first pass cancel)",
            (store_rows * 128) >> 20
        ),
    );
    match dram_read(gpu, module, dram_bytes, runs) {
        Ok(samples) => {
            if let Some(value) = median(&samples) {
                calibration.extras.push(Extra {
                    name: "DRAM read".to_string(),
                    value,
                    unit: "GB/s".to_string(),
                    note: format!(
                        "one pass over {} MiB, ld.global.cg; not written: dram_gbps is a copy's",
                        dram_bytes >> 20
                    ),
                });
            }
        }
        Err(e) => calibration
            .warnings
            .push(format!("DRAM read bandwidth: not measured: {e}")),
    }
    let copies: Result<Vec<f64>, CalibrateError> = (0..runs.min(3))
        .map(|_| {
            crate::measure::copy_bandwidth(gpu, module, crate::measure::CopyWidth::Quad)
                .map_err(CalibrateError::from)
        })
        .collect();
    record(
        &mut calibration,
        copies,
        Field::DramGbps,
        "kernels::vector::copy_quads of 256 Mi floats (1 GiB read + 1 GiB written, 16 bytes \
         per access), median of 20 launches (measure::copy_bandwidth, the bench's roofline), itself repeated up to 3 \
         times: bytes read + written over event time",
    );

    // What a launch pays per block that a loop over tasks does not
    // (docs/PREDICTION.md, "Block turnover"): the empty blocks' rate is
    // written (the predictor's `blocks` bound), the rest printed.
    log("block turnover");
    let clock = calibration
        .get(Field::ClockGhz)
        .map_or(calibration.boost_ghz, |m| m.value);
    let turnover = block_turnover_costs(gpu, module, runs, clock);
    let (samples, extras) = match turnover {
        Ok((samples, extras)) => (Ok(samples), extras),
        Err(e) => (Err(e), Vec::new()),
    };
    calibration.extras.extend(extras);
    record(
        &mut calibration,
        samples,
        Field::BlockLaunchNs,
        &format!(
            "kernels::calibrate::block_turnover, every SM full of empty {TURNOVER_BLOCK}-thread \
             blocks, 16 and 128 rounds of them, difference over event time, per run: ns per \
             block and resident slot over the slots an SM holds"
        ),
    );

    if let (Some(bw), Some(lat), Some(clock)) = (
        calibration.get(Field::DramGbps).map(|m| m.value),
        calibration.get(Field::LatencyDram).map(|m| m.value),
        calibration.get(Field::ClockGhz).map(|m| m.value),
    ) {
        calibration.extras.push(Extra {
            name: "bytes in flight / SM".to_string(),
            value: little_bytes_in_flight(bw, lat, clock, props.sm_count),
            unit: "bytes".to_string(),
            note: "Little's law with the measured DRAM figures and clock; \
                   load_bytes_in_flight_per_sm is not changed"
                .to_string(),
        });
    }
    Ok(calibration)
}

/// Adds the median of `samples` as `field`'s measurement, or a warning
/// naming the field.
fn record(
    calibration: &mut Calibration,
    samples: Result<Vec<f64>, CalibrateError>,
    field: Field,
    method: &str,
) {
    match samples {
        Ok(samples) => match median(&samples) {
            Some(value) => calibration.measurements.push(Measurement {
                field,
                value,
                method: method.to_string(),
                samples,
            }),
            None => calibration
                .warnings
                .push(format!("{}: no valid run: not measured", field.key())),
        },
        Err(e) => calibration
            .warnings
            .push(format!("{}: not measured: {e}", field.key())),
    }
}

/// One thread (the chases), or one warp (the dependent chains).
fn one_thread() -> LaunchConfig {
    LaunchConfig::new([1, 1, 1], [1, 1, 1])
}

fn one_warp() -> LaunchConfig {
    LaunchConfig::new([1, 1, 1], [32, 1, 1])
}

/// Cycles per load of a pointer chase over `layout`: `runs` timed runs
/// after an untimed one (see [`timed_chase`]).
fn chase_latency(
    gpu: &Gpu,
    module: &Module,
    layout: &ChaseLayout,
    past_l1: bool,
    warm: bool,
    steps: u32,
    runs: usize,
) -> Result<Vec<f64>, CalibrateError> {
    let Chain { next, start } = chase_cycle(layout, 0x5EED ^ layout.len as u64)?;
    let slots = u32::try_from(layout.slots())
        .map_err(|_| CalibrateError::Layout("the chase has more than 2^32 slots".to_string()))?;
    let warm = if warm { slots } else { 0 };
    let buffer = gpu.htod(&next)?;
    let options = ClusterOptions::default();
    timed_chase(gpu, &next, start, warm, steps, runs, |start, out| {
        // SAFETY: every index the chain holds is a slot below next's length
        // (chase_cycle), start is one (timed_chase checks where each run
        // ended), and out holds 2 words.
        unsafe {
            if past_l1 {
                gpu.launch_entry(
                    module,
                    pointer_chase_l2::KERNEL,
                    one_thread(),
                    &options,
                    (&buffer, start, warm, steps, out),
                )
            } else {
                gpu.launch_entry(
                    module,
                    pointer_chase::KERNEL,
                    one_thread(),
                    &options,
                    (&buffer, start, warm, steps, out),
                )
            }
        }
    })
}

/// Runs a chase `runs + 1` times through `launch(start, out)` (a kernel
/// that walks `warm` untimed and `steps` timed steps of `next` from
/// `start`, writing its cycles and its last index to `out`), each run from
/// where the last ended (so a chase without a warm pass never revisits a
/// slot while there are slots left), each end checked against the host's
/// walk; returns the cycles per timed step of every run but the first
/// (which warms the instruction cache, the TLB, or brings the chain in).
fn timed_chase(
    gpu: &Gpu,
    next: &[u32],
    start: u32,
    warm: u32,
    steps: u32,
    runs: usize,
    mut launch: impl FnMut(u32, &mut CudaSlice<u64>) -> Result<(), clustered_host::Error>,
) -> Result<Vec<f64>, CalibrateError> {
    let mut out = gpu.zeros::<u64>(2)?;
    let mut start = start;
    let mut samples = Vec::new();
    for run in 0..=runs {
        launch(start, &mut out)?;
        let result = gpu.dtoh(&out)?;
        let expected = chase(next, start, u64::from(warm) + u64::from(steps));
        let ended = u32::try_from(result[1]).ok();
        if ended != expected {
            return Err(CalibrateError::WrongResult(format!(
                "the chase ended at {:?}, the host's walk at {expected:?}: the kernel did not follow the chain",
                result[1]
            )));
        }
        start = result[1] as u32;
        if run > 0 {
            samples.extend(per_step(result[0], u64::from(steps)));
        }
    }
    Ok(samples)
}

/// Cycles per dependent FMA, one warp.
fn fp32_latency(gpu: &Gpu, module: &Module, runs: usize) -> Result<Vec<f64>, CalibrateError> {
    let (a, b) = (0.999_9f32, 1e-4f32);
    let mut out = gpu.zeros::<f32>(32)?;
    chain_latency(gpu, runs, FP32_CHAIN_PER_ITERATION, |iters, cycles| {
        // SAFETY: 32 threads, out and cycles hold 32 elements.
        unsafe {
            gpu.launch_entry(
                module,
                fp32_chain::KERNEL,
                one_warp(),
                &ClusterOptions::default(),
                (iters, a, b, &mut out, cycles),
            )
        }
    })
}

/// Cycles per dependent integer instruction, one warp.
fn int_latency(gpu: &Gpu, module: &Module, runs: usize) -> Result<Vec<f64>, CalibrateError> {
    let mut out = gpu.zeros::<u32>(32)?;
    chain_latency(gpu, runs, INT_CHAIN_PER_ITERATION, |iters, cycles| {
        // SAFETY: 32 threads, out and cycles hold 32 elements.
        unsafe {
            gpu.launch_entry(
                module,
                int_chain::KERNEL,
                one_warp(),
                &ClusterOptions::default(),
                (iters, 0x9E37_79B9u32, 0x7F4A_7C15u32, &mut out, cycles),
            )
        }
    })
}

/// Runs a one-warp chain `runs + 1` times (the first untimed) through
/// `launch(iterations, cycles)`, and returns the cycles per chained
/// instruction of each timed run (`per_iteration` instructions per
/// iteration).
fn chain_latency(
    gpu: &Gpu,
    runs: usize,
    per_iteration: u32,
    mut launch: impl FnMut(u32, &mut CudaSlice<u64>) -> Result<(), clustered_host::Error>,
) -> Result<Vec<f64>, CalibrateError> {
    let iters = 1024u32;
    let mut cycles = gpu.zeros::<u64>(32)?;
    let mut samples = Vec::new();
    for run in 0..=runs {
        launch(iters, &mut cycles)?;
        let result = gpu.dtoh(&cycles)?;
        if run > 0 {
            samples.extend(per_step(
                result[0],
                u64::from(iters) * u64::from(per_iteration),
            ));
        }
    }
    Ok(samples)
}

/// One launch of `fp32_throughput`: its event time (ms) and per-SM spans.
fn throughput_launch(
    gpu: &Gpu,
    module: &Module,
    config: LaunchConfig,
    iters: u32,
    out: &mut CudaSlice<f32>,
    stamps: &mut CudaSlice<u64>,
) -> Result<(f64, BTreeMap<u32, SmSpan>), CalibrateError> {
    // SAFETY: out holds one element per thread, stamps 3 per warp.
    let ms = f64::from(gpu.time_ms(|| unsafe {
        gpu.launch_entry(
            module,
            fp32_throughput::KERNEL,
            config,
            &ClusterOptions::default(),
            (iters, 0.999_9f32, 1e-4f32, &mut *out, &mut *stamps),
        )
    })?);
    let spans = sm_spans(&gpu.dtoh(stamps)?);
    Ok((ms, spans))
}

/// FP32 warp instructions per clock per SM, and the clock (GHz) under that
/// load.
fn fp32_rate_and_clock(
    gpu: &Gpu,
    module: &Module,
    runs: usize,
) -> Result<(Vec<f64>, Vec<f64>), CalibrateError> {
    let (config, threads) = full_grid(gpu);
    let mut out = gpu.zeros::<f32>(threads)?;
    let mut stamps = gpu.zeros::<u64>(threads / 32 * STAMP_WORDS)?;
    let (short, long) = (1024u32, 4096u32);
    let (mut rates, mut clocks) = (Vec::new(), Vec::new());
    // Warm up for 100 ms of GPU time (at most 100 launches): the clocks
    // settle under the load before the two lengths are compared.
    let mut warm_ms = 0.0;
    for _ in 0..100 {
        warm_ms += throughput_launch(gpu, module, config, long, &mut out, &mut stamps)?.0;
        if warm_ms >= 100.0 {
            break;
        }
    }
    for _ in 0..runs {
        let (ms1, spans1) = throughput_launch(gpu, module, config, short, &mut out, &mut stamps)?;
        let (ms2, spans2) = throughput_launch(gpu, module, config, long, &mut out, &mut stamps)?;
        let per_warp = f64::from(long) * f64::from(FP32_THROUGHPUT_PER_ITERATION);
        rates.extend(rate_per_sm(&spans2, per_warp));
        if let (Some(c1), Some(c2)) = (mean_span(&spans1), mean_span(&spans2)) {
            // cycles per millisecond / 1e6 = GHz.
            clocks.extend(slope(c1, ms1, c2, ms2).map(|per_ms| per_ms / 1e6));
        }
    }
    Ok((rates, clocks))
}

/// The wrapping sum of `data` read `passes` times: what `read_sum`'s sums
/// add up to.
pub fn read_sum_expected(data: &[u32], passes: u32) -> u32 {
    data.iter()
        .fold(0u32, |s, &x| s.wrapping_add(x))
        .wrapping_mul(passes)
}

/// One launch of `read_sum` over `data` (`n` elements), `passes` passes, on
/// every SM full of threads: its event time (ms) and the sum of its sums.
fn read_sum_launch(
    gpu: &Gpu,
    module: &Module,
    data: &CudaSlice<u32>,
    n: u32,
    passes: u32,
    sums: &mut CudaSlice<u32>,
    config: LaunchConfig,
) -> Result<(f64, u32), CalibrateError> {
    // SAFETY: data holds n elements, sums one per launched thread.
    let ms = f64::from(gpu.time_ms(|| unsafe {
        gpu.launch_entry(
            module,
            read_sum::KERNEL,
            config,
            &ClusterOptions::default(),
            (data, n, passes, &mut *sums),
        )
    })?);
    let total = gpu.dtoh(sums)?.iter().fold(0u32, |s, &x| s.wrapping_add(x));
    Ok((ms, total))
}

fn full_grid(gpu: &Gpu) -> (LaunchConfig, usize) {
    let props = gpu.properties();
    let blocks = props.sm_count * (props.max_threads_per_sm / BLOCK).max(1);
    (
        LaunchConfig::new([blocks, 1, 1], [BLOCK, 1, 1]),
        (blocks * BLOCK) as usize,
    )
}

/// L2 read bandwidth (GB/s) over a buffer of `bytes`.
fn l2_bandwidth(
    gpu: &Gpu,
    module: &Module,
    bytes: usize,
    runs: usize,
) -> Result<Vec<f64>, CalibrateError> {
    let n = bytes / 4;
    let host: Vec<u32> = (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let n32 = u32::try_from(n)
        .map_err(|_| CalibrateError::Layout("the L2 buffer has more than 2^32 elements".into()))?;
    let data = gpu.htod(&host)?;
    let (config, threads) = full_grid(gpu);
    let mut sums = gpu.zeros::<u32>(threads)?;
    let (short, long) = (20u32, 120u32);
    read_sum_launch(gpu, module, &data, n32, short, &mut sums, config)?;
    let mut samples = Vec::new();
    for _ in 0..runs {
        let (ms1, sum1) = read_sum_launch(gpu, module, &data, n32, short, &mut sums, config)?;
        let (ms2, sum2) = read_sum_launch(gpu, module, &data, n32, long, &mut sums, config)?;
        if sum1 != read_sum_expected(&host, short) || sum2 != read_sum_expected(&host, long) {
            return Err(CalibrateError::WrongResult(
                "read_sum's sums differ from the host's: the kernel did not read every element"
                    .to_string(),
            ));
        }
        let b1 = bytes as f64 * f64::from(short);
        let b2 = bytes as f64 * f64::from(long);
        // bytes per ms / 1e6 = GB/s.
        samples.extend(slope(b1, ms1, b2, ms2).map(|per_ms| per_ms / 1e6));
    }
    Ok(samples)
}

/// DRAM read bandwidth (GB/s): one pass over `bytes`.
fn dram_read(
    gpu: &Gpu,
    module: &Module,
    bytes: usize,
    runs: usize,
) -> Result<Vec<f64>, CalibrateError> {
    let n = bytes / 4;
    let n32 = u32::try_from(n).map_err(|_| {
        CalibrateError::Layout("the DRAM buffer has more than 2^32 elements".into())
    })?;
    let data = gpu.zeros::<u32>(n)?;
    let (config, threads) = full_grid(gpu);
    let mut sums = gpu.zeros::<u32>(threads)?;
    read_sum_launch(gpu, module, &data, n32, 1, &mut sums, config)?;
    let mut samples = Vec::new();
    for _ in 0..runs {
        let (ms, _) = read_sum_launch(gpu, module, &data, n32, 1, &mut sums, config)?;
        samples.extend(gbps(bytes as f64, ms));
    }
    Ok(samples)
}

/// The sum a thread in lane `lane` of `l1_scattered_loads` computes over
/// `data` in `iters` iterations at lane stride `stride`.
pub fn scattered_sum_expected(data: &[u32], lane: u32, stride: u32, iters: u32) -> u32 {
    (0..iters * SCATTER_LOADS_PER_ITERATION).fold(0u32, |sum, step| {
        sum.wrapping_add(data[scattered_word(lane, step, stride) as usize])
    })
}

/// The distinct 128-byte lines of each warp load of `l1_scattered_loads`,
/// summed over a warp's `iters` iterations at lane stride `stride`.
pub fn scattered_lines(stride: u32, iters: u32) -> u64 {
    (0..iters * SCATTER_LOADS_PER_ITERATION)
        .map(|step| {
            let mut lines: Vec<u32> = (0..32)
                .map(|lane| scattered_word(lane, step, stride) / 32)
                .collect();
            lines.sort_unstable();
            lines.dedup();
            lines.len() as u64
        })
        .sum()
}

/// L1 lines looked up per clock per SM by warp loads at lane stride
/// `stride` (words), all hits.
fn l1_line_rate(
    gpu: &Gpu,
    module: &Module,
    stride: u32,
    runs: usize,
) -> Result<Vec<f64>, CalibrateError> {
    let host: Vec<u32> = (0..SCATTER_WORDS)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let data = gpu.htod(&host)?;
    let (config, threads) = full_grid(gpu);
    let mut sums = gpu.zeros::<u32>(threads)?;
    let mut stamps = gpu.zeros::<u64>(threads / 32 * STAMP_WORDS)?;
    let iters = 1024u32;
    let expected: Vec<u32> = (0..32)
        .map(|lane| scattered_sum_expected(&host, lane, stride, iters))
        .collect();
    let lines_per_warp = scattered_lines(stride, iters) as f64;
    let mut samples = Vec::new();
    for run in 0..=runs {
        // SAFETY: data holds SCATTER_WORDS elements, sums one per thread,
        // stamps 3 per warp; blocks of BLOCK (a multiple of 32).
        unsafe {
            gpu.launch_entry(
                module,
                l1_scattered_loads::KERNEL,
                config,
                &ClusterOptions::default(),
                (&data, stride, iters, &mut sums, &mut stamps),
            )?;
        }
        let got = gpu.dtoh(&sums)?;
        if let Some(t) = (0..threads).find(|&t| got[t] != expected[t % 32]) {
            return Err(CalibrateError::WrongResult(format!(
                "l1_scattered_loads: thread {t} summed {}, the host {}",
                got[t],
                expected[t % 32]
            )));
        }
        // The first run warms the instruction cache.
        if run > 0 {
            samples.extend(rate_per_sm(&sm_spans(&gpu.dtoh(&stamps)?), lines_per_warp));
        }
    }
    Ok(samples)
}

/// Lines of `scattered_stores`' buffer: a power of two, 8 MiB or a quarter
/// of L2 if less, at least 32.
pub fn scattered_rows(l2_bytes: usize) -> u32 {
    let bytes = (8usize << 20).min(l2_bytes / 4).max(32 * 128);
    let rows = (bytes / 128) as u32;
    1 << (31 - rows.leading_zeros())
}

/// Partial-sector stores the L2 takes per nanosecond (the whole GPU).
fn partial_store_rate(
    gpu: &Gpu,
    module: &Module,
    rows: u32,
    runs: usize,
) -> Result<Vec<f64>, CalibrateError> {
    let words = rows as usize * 32;
    let mut data = gpu.zeros::<u32>(words)?;
    let (config, threads) = full_grid(gpu);
    let mut launch = |passes: u32| -> Result<f64, CalibrateError> {
        // SAFETY: data holds rows x 32 elements, rows is a power of two.
        let ms = gpu.time_ms(|| unsafe {
            gpu.launch_entry(
                module,
                scattered_stores::KERNEL,
                config,
                &ClusterOptions::default(),
                (&mut data, rows, passes),
            )
        })?;
        Ok(f64::from(ms))
    };
    let (short, long) = (64u32, 320u32);
    launch(short)?;
    let mut samples = Vec::new();
    for _ in 0..runs {
        let (ms1, ms2) = (launch(short)?, launch(long)?);
        let sectors = |passes: u32| threads as f64 * f64::from(passes);
        // sectors per ms / 1e6 = per ns.
        samples.extend(slope(sectors(short), ms1, sectors(long), ms2).map(|per_ms| per_ms / 1e6));
    }
    let got = gpu.dtoh(&data)?;
    // Every warp covers 32 rows, every row gets all 32 columns over 32
    // passes: with enough warps every word is stored.
    let covered = threads >= rows as usize;
    if let Some(w) = (0..words).find(|&w| {
        let want = scattered_value(w as u32);
        got[w] != want && (covered || got[w] != 0)
    }) {
        return Err(CalibrateError::WrongResult(format!(
            "scattered_stores: word {w} holds {}, not {}",
            got[w],
            scattered_value(w as u32)
        )));
    }
    Ok(samples)
}

/// Fails unless every value is within `tolerance` of `want`: what the
/// special-function chains settle to (`rsqrt` iterated tends to 1).
fn check_settled(
    got: &[f32],
    want: f32,
    tolerance: f32,
    kernel: &str,
) -> Result<(), CalibrateError> {
    // NaN is never within the tolerance.
    let settled = |v: &f32| (v - want).abs() <= tolerance;
    match got.iter().position(|v| !settled(v)) {
        Some(t) => Err(CalibrateError::WrongResult(format!(
            "{kernel}: thread {t} ended at {}, not within {tolerance} of {want}",
            got[t]
        ))),
        None => Ok(()),
    }
}

/// Cycles per dependent `rsqrt.approx.ftz.f32` (`MUFU.RSQ`), one warp.
fn sfu_latency(gpu: &Gpu, module: &Module, runs: usize) -> Result<Vec<f64>, CalibrateError> {
    let mut out = gpu.zeros::<f32>(32)?;
    let samples = chain_latency(gpu, runs, CHAIN_PER_ITERATION, |iters, cycles| {
        // SAFETY: 32 threads, out and cycles hold 32 elements.
        unsafe {
            gpu.launch_entry(
                module,
                sfu_chain::KERNEL,
                one_warp(),
                &ClusterOptions::default(),
                (iters, &mut out, cycles),
            )
        }
    })?;
    check_settled(&gpu.dtoh(&out)?, 1.0, 1e-3, "sfu_chain")?;
    Ok(samples)
}

/// Runs a stamped throughput kernel over the full grid `runs + 1` times
/// (the first untimed) through `launch(stamps)`, checking each run with
/// `check`, and returns per run the median over SMs of its warps'
/// `per_warp` instructions per clock.
fn stamped_rate(
    gpu: &Gpu,
    runs: usize,
    per_warp: f64,
    mut launch: impl FnMut(&mut CudaSlice<u64>) -> Result<(), CalibrateError>,
) -> Result<Vec<f64>, CalibrateError> {
    let (_, threads) = full_grid(gpu);
    let mut stamps = gpu.zeros::<u64>(threads / 32 * STAMP_WORDS)?;
    let mut samples = Vec::new();
    for run in 0..=runs {
        launch(&mut stamps)?;
        // The first run warms the instruction cache and the clocks.
        if run > 0 {
            samples.extend(rate_per_sm(&sm_spans(&gpu.dtoh(&stamps)?), per_warp));
        }
    }
    Ok(samples)
}

/// What thread `t` of `int_throughput` writes after `iters` iterations.
pub fn int_throughput_expected(t: u32, a: u32, b: u32, iters: u32) -> u32 {
    (0..THROUGHPUT_CHAINS).fold(0u32, |sum, k| {
        let x = (0..iters).fold(t.wrapping_add(k), |x, _| xor_add8(x, a, b));
        sum.wrapping_add(x)
    })
}

/// Integer warp instructions (`LOP3`, `VIADD`) per clock per SM.
fn int_rate(gpu: &Gpu, module: &Module, runs: usize) -> Result<Vec<f64>, CalibrateError> {
    let (config, threads) = full_grid(gpu);
    let (a, b, iters) = (0x9E37_79B9u32, 0x7F4A_7C15u32, 512u32);
    let mut out = gpu.zeros::<u32>(threads)?;
    let per_warp = f64::from(iters) * f64::from(INT_THROUGHPUT_PER_ITERATION);
    stamped_rate(gpu, runs, per_warp, |stamps| {
        // SAFETY: out holds one element per thread, stamps 3 per warp.
        unsafe {
            gpu.launch_entry(
                module,
                int_throughput::KERNEL,
                config,
                &ClusterOptions::default(),
                (iters, a, b, &mut out, stamps),
            )?;
        }
        let got = gpu.dtoh(&out)?;
        // A thread in a thousand: the host's chains take a while.
        match (0..threads as u32)
            .step_by(997)
            .find(|&t| got[t as usize] != int_throughput_expected(t, a, b, iters))
        {
            Some(t) => Err(CalibrateError::WrongResult(format!(
                "int_throughput: thread {t} wrote {}, the host {}",
                got[t as usize],
                int_throughput_expected(t, a, b, iters)
            ))),
            None => Ok(()),
        }
    })
}

/// Special-function warp instructions (`MUFU.RSQ`) per clock per SM.
fn sfu_rate(gpu: &Gpu, module: &Module, runs: usize) -> Result<Vec<f64>, CalibrateError> {
    let (config, threads) = full_grid(gpu);
    let iters = 512u32;
    let mut out = gpu.zeros::<f32>(threads)?;
    let per_warp = f64::from(iters) * f64::from(SFU_THROUGHPUT_PER_ITERATION);
    stamped_rate(gpu, runs, per_warp, |stamps| {
        // SAFETY: out holds one element per thread, stamps 3 per warp.
        unsafe {
            gpu.launch_entry(
                module,
                sfu_throughput::KERNEL,
                config,
                &ClusterOptions::default(),
                (iters, &mut out, stamps),
            )?;
        }
        // Eight chains, each settled at 1.
        check_settled(
            &gpu.dtoh(&out)?,
            THROUGHPUT_CHAINS as f32,
            1e-2,
            "sfu_throughput",
        )
    })
}

/// What a thread in lane `lane` of `shared_throughput` sums in `iters`
/// iterations.
pub fn shared_sum_expected(lane: u32, iters: u32) -> u32 {
    (0..iters).fold(0u32, |sum, i| {
        let base = shared_base(i, lane);
        (0..8).fold(sum, |sum, k| sum.wrapping_add(shared_word(base + 32 * k)))
    })
}

/// Shared-memory warp loads (`LDS`, 32 bits, no bank conflict) per clock
/// per SM.
fn shared_rate(gpu: &Gpu, module: &Module, runs: usize) -> Result<Vec<f64>, CalibrateError> {
    let (config, threads) = full_grid(gpu);
    let iters = 1024u32;
    let mut sums = gpu.zeros::<u32>(threads)?;
    let expected: Vec<u32> = (0..32)
        .map(|lane| shared_sum_expected(lane, iters))
        .collect();
    let per_warp = f64::from(iters) * 8.0;
    stamped_rate(gpu, runs, per_warp, |stamps| {
        // SAFETY: sums holds one element per thread, stamps 3 per warp;
        // blocks of BLOCK threads, a multiple of 32.
        unsafe {
            gpu.launch_entry(
                module,
                shared_throughput::KERNEL,
                config,
                &ClusterOptions::default(),
                (iters, &mut sums, stamps),
            )?;
        }
        let got = gpu.dtoh(&sums)?;
        match (0..threads).find(|&t| got[t] != expected[t % 32]) {
            Some(t) => Err(CalibrateError::WrongResult(format!(
                "shared_throughput: thread {t} summed {}, the host {}",
                got[t],
                expected[t % 32]
            ))),
            None => Ok(()),
        }
    })
}

/// Cycles per dependent `ld.shared` of a chase through 16 KiB of shared
/// memory, each with its address computation.
fn shared_latency(gpu: &Gpu, module: &Module, runs: usize) -> Result<Vec<f64>, CalibrateError> {
    let layout = ChaseLayout {
        len: SHARED_WORDS as usize,
        stride: 1,
        group: SHARED_WORDS as usize,
    };
    let Chain { next, start } = chase_cycle(&layout, 0x5A4ED)?;
    let buffer = gpu.htod(&next)?;
    let steps = 4096u32;
    timed_chase(gpu, &next, start, 0, steps, runs, |start, out| {
        // SAFETY: next holds SHARED_WORDS indices below SHARED_WORDS
        // (chase_cycle over that many slots), start is one, out 2 words.
        unsafe {
            gpu.launch_entry(
                module,
                shared_chase::KERNEL,
                LaunchConfig::new([1, 1, 1], [BLOCK, 1, 1]),
                &ClusterOptions::default(),
                (&buffer, start, steps, out),
            )
        }
    })
}

/// Cycles per dependent `atom.global.add.u32` on a chain in L2 (`layout`),
/// one thread; the chain must come back unchanged (every add is of 0).
fn atom_latency(
    gpu: &Gpu,
    module: &Module,
    layout: &ChaseLayout,
    runs: usize,
) -> Result<Vec<f64>, CalibrateError> {
    let Chain { next, start } = chase_cycle(layout, 0xA70B ^ layout.len as u64)?;
    let mut buffer = gpu.htod(&next)?;
    let steps = 4096u32;
    let samples = timed_chase(gpu, &next, start, 0, steps, runs, |start, out| {
        // SAFETY: every index of the chain is a slot below next's length,
        // start is one, out holds 2 words.
        unsafe {
            gpu.launch_entry(
                module,
                atom_chase::KERNEL,
                one_thread(),
                &ClusterOptions::default(),
                (&mut buffer, start, steps, out),
            )
        }
    })?;
    if gpu.dtoh(&buffer)? != next {
        return Err(CalibrateError::WrongResult(
            "atom_chase changed its chain: its atomics added something other than 0".to_string(),
        ));
    }
    Ok(samples)
}

/// Cycles per step of a one-block kernel that writes `out[0]` = its
/// cycles and `out[1]` = the steps it counted, which must be `steps`:
/// `launch` runs it once per run, after one run untimed (the module's
/// first launch, cold caches).
fn counted_steps(
    gpu: &Gpu,
    kernel: &str,
    steps: u64,
    runs: usize,
    launch: impl FnMut(&mut CudaSlice<u64>) -> Result<(), clustered_host::Error>,
) -> Result<Vec<f64>, CalibrateError> {
    counted_steps_per_block(gpu, kernel, 1, steps, runs, launch)
}

/// [`counted_steps`] of a kernel of `blocks` blocks, each writing its two
/// words at `out[2 * block]`: every block's cycles per step.
fn counted_steps_per_block(
    gpu: &Gpu,
    kernel: &str,
    blocks: usize,
    steps: u64,
    runs: usize,
    mut launch: impl FnMut(&mut CudaSlice<u64>) -> Result<(), clustered_host::Error>,
) -> Result<Vec<f64>, CalibrateError> {
    let mut out = gpu.zeros::<u64>(2 * blocks)?;
    let mut samples = Vec::new();
    for run in 0..=runs {
        launch(&mut out)?;
        for block in gpu.dtoh(&out)?.chunks(2) {
            if block[1] != steps {
                return Err(CalibrateError::WrongResult(format!(
                    "{kernel} counted {} steps, not {steps}",
                    block[1]
                )));
            }
            if run > 0 {
                samples.extend(per_step(block[0], steps));
            }
        }
    }
    Ok(samples)
}

/// Cycles per `bar.sync` of one block of [`BLOCK`] threads, back to back.
fn bar_latency(gpu: &Gpu, module: &Module, runs: usize) -> Result<Vec<f64>, CalibrateError> {
    let iters = 1024u32;
    let barriers = u64::from(iters) * u64::from(CHAIN_PER_ITERATION);
    counted_steps(gpu, "barrier_chain", barriers, runs, |out| {
        // SAFETY: out holds 2 words.
        unsafe {
            gpu.launch_entry(
                module,
                barrier_chain::KERNEL,
                LaunchConfig::new([1, 1, 1], [BLOCK, 1, 1]),
                &ClusterOptions::default(),
                (iters, out),
            )
        }
    })
}

/// Threads of [`cluster_barrier_chain`](fn@cluster_barrier_chain)'s
/// blocks: the DSMEM SGEMM's (32 x 32), two to an SM.
const CLUSTER_BLOCK: u32 = 1024;

/// Cycles per `cluster_sync()` round of
/// [`cluster_barrier_chain`](fn@cluster_barrier_chain), median over every
/// block and run, in clusters of 2, 4 and 8 blocks along x: one cluster
/// alone, and clusters on every SM (two blocks of [`CLUSTER_BLOCK`]
/// threads each, as the DSMEM SGEMM runs).
fn cluster_barrier_costs(
    gpu: &Gpu,
    module: &Module,
    runs: usize,
    sms: u32,
) -> Result<Vec<Extra>, CalibrateError> {
    let iters = 256u32;
    let steps = u64::from(iters) * u64::from(CHAIN_PER_ITERATION);
    let mut extras = Vec::new();
    for size in [2u32, 4, 8] {
        for (blocks, place) in [
            (size, "one cluster alone"),
            (2 * sms / size * size, "every SM"),
        ] {
            let samples = counted_steps_per_block(
                gpu,
                "cluster_barrier_chain",
                blocks as usize,
                steps,
                runs,
                |out| {
                    // SAFETY: out holds 2 words per block.
                    unsafe {
                        gpu.launch_entry(
                            module,
                            cluster_barrier_chain::KERNEL,
                            LaunchConfig::new([blocks, 1, 1], [CLUSTER_BLOCK, 1, 1])
                                .with_block_cluster([size, 1, 1]),
                            &ClusterOptions::default(),
                            (iters, out),
                        )
                    }
                },
            )?;
            if let Some(value) = median(&samples) {
                extras.push(Extra {
                    name: format!("cluster barrier, clusters of {size}, {place}"),
                    value,
                    unit: "cycles".to_string(),
                    note: format!(
                        "{blocks} blocks of {CLUSTER_BLOCK} threads, {steps} cluster_sync() back \
                         to back (arrive with its fence, then wait); not written"
                    ),
                });
            }
        }
    }
    Ok(extras)
}

/// Threads of [`fence_chain`](fn@fence_chain)'s block: a pool worker's.
const FENCE_BLOCK: u32 = 128;

/// What a fence adds to a round of [`fence_chain`](fn@fence_chain) (a
/// pool task's publication), in cycles: each run's `fence.acq_rel.gpu`
/// rounds less the median of the rounds without a fence (the class's
/// figure), and, printed beside it, the round itself, the release-only and
/// system-scope fences, and the fence in rounds without stores.
fn fence_costs(
    gpu: &Gpu,
    module: &Module,
    runs: usize,
) -> Result<(Vec<f64>, Vec<Extra>), CalibrateError> {
    let rounds = 1024u32;
    let mut scratch = gpu.zeros::<u32>(FENCE_BLOCK as usize + 1)?;
    let mut per_round = |fence: u32| {
        counted_steps(gpu, "fence_chain", u64::from(rounds), runs, |out| {
            // SAFETY: scratch holds FENCE_BLOCK + 1 words, out 2.
            unsafe {
                gpu.launch_entry(
                    module,
                    fence_chain::KERNEL,
                    LaunchConfig::new([1, 1, 1], [FENCE_BLOCK, 1, 1]),
                    &ClusterOptions::default(),
                    (fence, rounds, &mut scratch, out),
                )
            }
        })
    };
    let mut bare = |fence: u32| {
        median(&per_round(fence)?)
            .ok_or_else(|| CalibrateError::WrongResult("fence_chain: no rounds timed".into()))
    };
    let (bare, storeless) = (bare(FENCE_NONE)?, bare(FENCE_NONE | FENCE_WITHOUT_STORES)?);
    let added = |samples: Vec<f64>| samples.into_iter().map(|s| s - bare).collect::<Vec<_>>();
    let class = added(per_round(FENCE_ACQ_REL_GPU)?);
    let mut extras = vec![Extra {
        name: "round without a fence".to_string(),
        value: bare,
        unit: "cycles".to_string(),
        note: format!(
            "fence_chain: {FENCE_BLOCK} threads store a word each, bar.sync, thread 0 stores a \
             flag, bar.sync; what classes.fence.latency and the fences below add to"
        ),
    }];
    // The marked fence is a release fence only where the loader rewrote it.
    let release = if module.release_fences() {
        "fence.release.gpu"
    } else {
        "fence.acq_rel.gpu, marked release (loaded as built)"
    };
    for (fence, name, note) in [
        (
            FENCE_RELEASE_GPU,
            release,
            "a pool worker's after each task",
        ),
        (
            FENCE_ACQ_REL_SYS,
            "fence.acq_rel.sys",
            "a pool publisher's before FINISHED",
        ),
    ] {
        if let Some(value) = median(&added(per_round(fence)?)) {
            extras.push(Extra {
                name: name.to_string(),
                value,
                unit: "cycles".to_string(),
                note: format!(
                    "added to fence_chain's round, as the class's figure: {note}; not written"
                ),
            });
        }
    }
    if let Some(with) = median(&per_round(FENCE_ACQ_REL_GPU | FENCE_WITHOUT_STORES)?) {
        extras.push(Extra {
            name: "fence.acq_rel.gpu, no stores".to_string(),
            value: with - storeless,
            unit: "cycles".to_string(),
            note: format!(
                "added to a round whose threads store nothing ({storeless:.0} cycles without \
                 the fence): the fence with no write of the round to wait for; not written"
            ),
        });
    }
    Ok((class, extras))
}

/// Threads per block of `block_turnover`: the suite's usual block.
const TURNOVER_BLOCK: u32 = 256;
/// Cycles each of `block_turnover`'s warps waits in the second measurement:
/// about a short kernel's block (Jacobi 5's at its DRAM share).
const TURNOVER_WORK: u32 = 2000;

/// Per block and resident slot, what starting and retiring a block takes
/// beyond its own work: `block_turnover` on every SM full of 256-thread
/// blocks, 16 and 128 rounds of them (the difference cancels the launch and
/// the first and last rounds), the blocks empty and then waiting
/// [`TURNOVER_WORK`] cycles (`clock_ghz`, which must be known, turns them
/// into ns); every block's mark is checked. Returns each run's empty
/// blocks in ns per block per SM (the slot's time over an SM's slots), and
/// the medians per slot to print.
fn block_turnover_costs(
    gpu: &Gpu,
    module: &Module,
    runs: usize,
    clock_ghz: f64,
) -> Result<(Vec<f64>, Vec<Extra>), CalibrateError> {
    if clock_ghz.is_nan() || clock_ghz <= 0.0 {
        return Err(CalibrateError::WrongResult(
            "block_turnover: no clock to count its waiting in".into(),
        ));
    }
    let props = gpu.properties();
    let per_sm = (props.max_threads_per_sm / TURNOVER_BLOCK).max(1);
    let slots = props.sm_count * per_sm;
    let (short, long) = (16u32, 128u32);
    let mut done = gpu.zeros::<u32>((slots * long) as usize)?;
    let launch = |rounds: u32, spin: u32, done: &mut CudaSlice<u32>| {
        let config = LaunchConfig::new([slots * rounds, 1, 1], [TURNOVER_BLOCK, 1, 1]);
        // SAFETY: done holds a word for each of slots * long >= the launch's blocks.
        gpu.time_ms(|| unsafe {
            gpu.launch_entry(
                module,
                block_turnover::KERNEL,
                config,
                &ClusterOptions::default(),
                (spin, &mut *done),
            )
        })
        .map(f64::from)
        .map_err(CalibrateError::from)
    };
    launch(long, TURNOVER_WORK, &mut done)?;
    let marks = gpu.dtoh(&done)?;
    if let Some(block) = (0..slots * long).find(|&b| marks[b as usize] != b + 1) {
        return Err(CalibrateError::WrongResult(format!(
            "block_turnover: block {block} left no mark"
        )));
    }
    // Each run's ns per round of every slot's block, and their median.
    let mut per_round = |spin: u32| -> Result<(Vec<f64>, f64), CalibrateError> {
        let mut samples = Vec::new();
        for _ in 0..runs {
            let t1 = launch(short, spin, &mut done)?;
            let t2 = launch(long, spin, &mut done)?;
            samples.extend(slope(t1, f64::from(short), t2, f64::from(long)).map(|ms| ms * 1e6));
        }
        let middle = median(&samples)
            .ok_or_else(|| CalibrateError::WrongResult("block_turnover: no rounds timed".into()))?;
        Ok((samples, middle))
    };
    let (empty_runs, empty) = per_round(0)?;
    let beyond = per_round(TURNOVER_WORK)?.1 - f64::from(TURNOVER_WORK) / clock_ghz;
    let per_block_per_sm = empty_runs.iter().map(|ns| ns / f64::from(per_sm)).collect();
    let per_slot = format!(
        "{slots} blocks of {TURNOVER_BLOCK} threads resident ({per_sm} per SM), 16 and 128 \
         rounds of them, difference over event time"
    );
    let extras = vec![
        Extra {
            name: "block turnover, empty blocks".to_string(),
            value: empty,
            unit: "ns".to_string(),
            note: format!(
                "per block and resident slot ({:.0} cycles at {clock_ghz:.3} GHz): \
                 {per_slot}; written over the {per_sm} slots of an SM as block_launch_ns",
                empty * clock_ghz
            ),
        },
        Extra {
            name: format!("block turnover beyond {TURNOVER_WORK} cycles of work"),
            value: beyond,
            unit: "ns".to_string(),
            note: format!(
                "per block and resident slot ({:.0} cycles): each warp waits {TURNOVER_WORK} \
                 cycles of %clock64, {per_slot}; not written",
                beyond * clock_ghz
            ),
        },
    ];
    Ok((per_block_per_sm, extras))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(len: usize, stride: usize, group: usize) -> ChaseLayout {
        ChaseLayout { len, stride, group }
    }

    #[test]
    fn the_chain_is_one_cycle_through_every_slot() {
        for l in [
            layout(4096, 32, 4096),
            layout(1 << 16, 64, 1 << 12),
            layout(1000, 8, 64),
            layout(1 << 16, 1024, 1 << 13),
        ] {
            let Chain { next, start } = chase_cycle(&l, 7).unwrap();
            assert_eq!(next.len(), l.len);
            // Each stride holds one slot, at a line boundary.
            let mut seen = vec![false; l.slots()];
            let mut j = start;
            for _ in 0..l.slots() {
                let stride = j as usize / l.stride;
                assert!(!seen[stride], "{l:?}: stride {stride} visited twice");
                assert_eq!(j as usize % l.stride.min(LINE_ELEMENTS), 0, "{l:?}: {j}");
                seen[stride] = true;
                j = next[j as usize];
            }
            assert_eq!(j, start, "{l:?}: the chain does not close after every slot");
            assert!(seen.iter().all(|&s| s), "{l:?}");
        }
        // Where a stride spans several lines, the slots are not all at its
        // start.
        let l = layout(1 << 16, 1024, 1 << 13);
        let chain = chase_cycle(&l, 7).unwrap();
        let mut j = chain.start;
        let mut offsets = BTreeSet::new();
        for _ in 0..l.slots() {
            offsets.insert(j as usize % l.stride);
            j = chain.next[j as usize];
        }
        assert!(offsets.len() > 8, "{offsets:?}");
    }

    #[test]
    fn the_chain_stays_in_a_group_until_it_has_visited_it() {
        let l = layout(1 << 14, 16, 1 << 10);
        let order = visit_order(&l, 3);
        let per_group = l.group / l.stride;
        for chunk in order.chunks(per_group) {
            let group = chunk[0] as usize / l.group;
            assert!(chunk.iter().all(|&s| s as usize / l.group == group));
        }
        // Random within a group, not in address order.
        assert!(order.windows(2).any(|w| w[1] < w[0]));
        // Seeds differ, and the same seed gives the same chain.
        assert_eq!(chase_cycle(&l, 3).unwrap(), chase_cycle(&l, 3).unwrap());
        assert_ne!(chase_cycle(&l, 3).unwrap(), chase_cycle(&l, 4).unwrap());
        let chain = chase_cycle(&l, 3).unwrap();
        assert_eq!(chain.start, order[0]);
    }

    #[test]
    fn bad_layouts_are_errors_not_panics() {
        for l in [
            layout(100, 0, 100),
            layout(100, 8, 12),
            layout(4, 8, 8),
            layout(0, 1, 1),
            layout((1 << 32) + 1, 1 << 20, 1 << 20),
        ] {
            assert!(
                matches!(chase_cycle(&l, 1), Err(CalibrateError::Layout(_))),
                "{l:?}"
            );
        }
        assert_eq!(chase(&[5], 0, 2), None);
    }

    #[test]
    fn figures_from_cycles_and_times() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[1.0, f64::NAN]), None);
        assert_eq!(per_step(4096 * 33, 4096), Some(33.0));
        assert_eq!(per_step(5, 0), None);
        assert_eq!(gbps(2e9, 1000.0), Some(2.0));
        assert_eq!(gbps(1.0, 0.0), None);
        // 1.755e6 cycles per ms = 1.755 GHz.
        let per_ms = slope(1.0e6, 1.0, 1.0e6 + 3.0 * 1.755e6, 4.0).unwrap();
        assert!((per_ms / 1e6 - 1.755).abs() < 1e-12);
        assert_eq!(slope(1.0, 2.0, 3.0, 2.0), None);
        assert_eq!(slope(3.0, 1.0, 1.0, 2.0), None);
    }

    #[test]
    fn spans_and_rates_per_sm() {
        // SM 0: two warps over 0..1000; SM 4: one warp over 10..510; a
        // stamp never written (zeros) is skipped.
        let stamps = [0, 0, 800, 0, 200, 1000, 4, 10, 510, 0, 0, 0];
        let spans = sm_spans(&stamps);
        assert_eq!(spans.len(), 2);
        assert_eq!(
            spans[&0],
            SmSpan {
                warps: 2,
                first: 0,
                last: 1000
            }
        );
        assert_eq!(spans[&4].cycles(), 500);
        // 2000 instructions per warp: SM 0 4.0, SM 4 4.0.
        assert_eq!(rate_per_sm(&spans, 2000.0), Some(4.0));
        assert_eq!(mean_span(&spans), Some(750.0));
        assert_eq!(rate_per_sm(&BTreeMap::new(), 1.0), None);
        let little = little_bytes_in_flight(2375.0, 520.0, 1.755, 132);
        assert!((little - 5330.0).abs() < 2.0, "{little}");
    }

    #[test]
    fn dates_slugs_and_paths() {
        assert_eq!(date_of(0), "1970-01-01");
        assert_eq!(date_of(951_782_400), "2000-02-29");
        assert_eq!(date_of(1_767_225_599), "2025-12-31");
        assert_eq!(date_of(1_772_323_200), "2026-03-01");
        assert_eq!(slug("NVIDIA H100 80GB HBM3"), "nvidia-h100-80gb-hbm3");
        assert_eq!(slug("  NVIDIA  H200 (x)  "), "nvidia-h200-x");
        assert_eq!(slug("***"), "gpu");
        assert_eq!(
            default_out("NVIDIA H100 80GB HBM3"),
            Path::new("target/calibrated-nvidia-h100-80gb-hbm3.json")
        );
    }

    #[test]
    fn the_command_line() {
        let parse = |args: &[&str]| parse_args(args.iter().map(|s| s.to_string()));
        assert_eq!(parse(&[]).unwrap(), Args::default());
        let args = parse(&["--out", "a.json", "--base=b.json", "--runs", "3"]).unwrap();
        assert_eq!(args.out.as_deref(), Some(Path::new("a.json")));
        assert_eq!(args.base.as_deref(), Some(Path::new("b.json")));
        assert_eq!(args.runs, 3);
        assert!(parse(&["-h"]).unwrap().help);
        for bad in [
            &["--runs", "0"][..],
            &["--runs", "x"],
            &["--out"],
            &["--frob"],
        ] {
            let err = parse(bad).unwrap_err();
            assert!(matches!(err, CalibrateError::Usage(_)), "{bad:?}");
            assert!(err.to_string().contains("usage: calibrate"), "{err}");
        }
    }

    #[test]
    fn a_missing_or_bad_base_file_is_an_error() {
        let dir = std::env::temp_dir().join(format!("calibrate-base-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("missing.json");
        assert!(matches!(
            load_base(Some(&missing)),
            Err(CalibrateError::Io { .. })
        ));
        let bad = dir.join("bad.json");
        std::fs::write(&bad, "{\"name\": 3}").unwrap();
        let err = load_base(Some(&bad)).unwrap_err();
        assert!(matches!(err, CalibrateError::Base { .. }), "{err}");
        assert_eq!(load_base(None).unwrap(), DeviceModel::h100_sxm());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A calibration as an H100 might give it.
    fn sample() -> Calibration {
        let m = |field, value: f64| Measurement {
            field,
            value,
            method: format!("method of {}", field.key()),
            samples: vec![value],
        };
        Calibration {
            device: "NVIDIA H100 80GB HBM3".to_string(),
            sm_count: 132,
            boost_ghz: 1.98,
            date: "2026-03-01".to_string(),
            measurements: vec![
                m(Field::ClockGhz, 1.83),
                m(Field::LatencyL1, 33.5),
                m(Field::LatencyL2, 273.0),
                m(Field::LatencyDram, 610.0),
                m(Field::Fp32Latency, 4.02),
                m(Field::IntLatency, 4.5),
                m(Field::Fp32Rate, 3.9),
                m(Field::L2Gbps, 6100.0),
                m(Field::DramGbps, 2400.0),
            ],
            extras: Vec::new(),
            warnings: Vec::new(),
        }
    }

    #[test]
    fn the_written_file_round_trips_with_the_measured_fields_changed_and_the_rest_kept() {
        let base = DeviceModel::h100_sxm();
        let calibration = sample();
        let model = calibrated_model(&base, &calibration).unwrap();
        let dir = std::env::temp_dir().join(format!("calibrate-out-{}", std::process::id()));
        let path = dir.join("nested").join("calibrated.json");
        write_model(&path, &model).unwrap();
        let back = DeviceModel::from_json(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(back, model);
        for m in &calibration.measurements {
            assert_eq!(m.field.get(&back), m.value, "{}", m.field.key());
            let provenance = &back.provenance[m.field.key()];
            assert!(
                provenance.starts_with(
                    "measured by `calibrate` on NVIDIA H100 80GB HBM3, 2026-03-01, method of"
                ),
                "{provenance}"
            );
        }
        // Everything else as in the base: put the measured fields back and
        // the provenance groups aside, and the two are equal.
        let mut restored = back.clone();
        for m in &calibration.measurements {
            m.field.set(&mut restored, m.field.get(&base));
        }
        restored.provenance = base.provenance.clone();
        assert_eq!(restored, base);
        // The groups list what was calibrated and keep the shipped text.
        let latencies = &back.provenance["latencies"];
        assert!(latencies.starts_with(GROUP_PREFIX), "{latencies}");
        assert!(latencies.contains("latency_dram"), "{latencies}");
        assert!(
            latencies.ends_with(&base.provenance["latencies"]),
            "{latencies}"
        );
        // The other classes' figures are the base's.
        assert_eq!(back.classes["sfu"], base.classes["sfu"]);
        assert_eq!(back.classes["fp32"].rate, 3.9);
        assert_eq!(back.classes["int"].rate, base.classes["int"].rate);
    }

    #[test]
    fn calibrating_a_calibrated_file_does_not_nest_the_provenance() {
        let base = DeviceModel::h100_sxm();
        let once = calibrated_model(&base, &sample()).unwrap();
        let mut only_l1 = sample();
        only_l1.measurements.retain(|m| m.field == Field::LatencyL1);
        let twice = calibrated_model(&once, &only_l1).unwrap();
        assert_eq!(twice.provenance["latencies"], once.provenance["latencies"]);
        assert_eq!(
            twice.provenance["latencies"].matches(GROUP_PREFIX).count(),
            1
        );
    }

    #[test]
    fn values_the_model_would_refuse_are_not_written_and_are_named() {
        let base = DeviceModel::h100_sxm();
        let mut calibration = sample();
        calibration.measurements[0].value = f64::NAN; // clock
        calibration.measurements[7].value = -1.0; // l2_gbps
        let model = calibrated_model(&base, &calibration).unwrap();
        assert_eq!(model.clock_ghz, base.clock_ghz);
        assert_eq!(model.l2_gbps, base.l2_gbps);
        // The base's own provenance stays: nothing measured was written.
        assert_eq!(
            model.provenance.get("clock_ghz"),
            base.provenance.get("clock_ghz")
        );
        let warnings = sanity(&calibration, &base);
        assert!(
            warnings.iter().any(|w| w.starts_with("clock_ghz")),
            "{warnings:?}"
        );
        assert!(
            warnings.iter().any(|w| w.starts_with("l2_gbps")),
            "{warnings:?}"
        );
    }

    #[test]
    fn sanity_names_the_figure_that_is_off() {
        let base = DeviceModel::h100_sxm();
        assert_eq!(sanity(&sample(), &base), Vec::<String>::new());
        let mut c = sample();
        c.measurements[1].value = 300.0; // L1 above L2
        let w = sanity(&c, &base);
        assert!(
            w.iter()
                .any(|w| w.starts_with("latency_l1 (300.0 cycles) is not below latency_l2")),
            "{w:?}"
        );
        let mut c = sample();
        c.measurements[7].value = 2000.0; // L2 below DRAM
        c.measurements[0].value = 2.5; // above the boost clock
        c.measurements[6].value = 8.0; // above 4 schedulers
        let w = sanity(&c, &base);
        for key in ["l2_gbps", "clock_ghz", "classes.fp32.rate"] {
            assert!(w.iter().any(|w| w.starts_with(key)), "{key}: {w:?}");
        }
    }

    #[test]
    fn every_field_is_its_own_figure_of_the_model() {
        let base = DeviceModel::h100_sxm();
        let mut model = base.clone();
        // Distinct values: a field that wrote another's figure would read
        // back the wrong one.
        for (k, field) in Field::ALL.into_iter().enumerate() {
            field.set(&mut model, 1000.0 + k as f64);
        }
        for (k, field) in Field::ALL.into_iter().enumerate() {
            assert_eq!(field.get(&model), 1000.0 + k as f64, "{}", field.key());
            assert!(field.get(&base).is_finite(), "{}", field.key());
        }
        let keys: BTreeSet<&str> = Field::ALL.iter().map(|f| f.key()).collect();
        assert_eq!(keys.len(), Field::ALL.len());
    }

    #[test]
    fn sanity_knows_each_class_figures_range() {
        let base = DeviceModel::h100_sxm();
        let m = |field, value: f64| Measurement {
            field,
            value,
            method: String::new(),
            samples: vec![value],
        };
        let plausible = Calibration {
            measurements: vec![
                m(Field::SfuLatency, 17.0),
                m(Field::SharedLatency, 29.0),
                m(Field::AtomLatency, 385.0),
                m(Field::BarLatency, 28.0),
                m(Field::FenceLatency, 580.0),
                m(Field::SfuRate, 0.5),
                m(Field::SharedRate, 1.0),
            ],
            ..Calibration::default()
        };
        assert_eq!(sanity(&plausible, &base), Vec::<String>::new());
        let off = Calibration {
            measurements: vec![
                m(Field::AtomLatency, 20.0),
                m(Field::BarLatency, 3000.0),
                m(Field::FenceLatency, 20.0),
                m(Field::SharedLatency, 90.0),
                m(Field::SfuRate, 5.0),
            ],
            ..Calibration::default()
        };
        let w = sanity(&off, &base);
        for key in [
            "classes.atom.latency: 20.00 cycles is outside 50 to 5000",
            "classes.bar.latency: 3000.00 cycles is outside 1 to 1000",
            "classes.fence.latency: 20.00 cycles is outside 50 to 5000",
            "classes.ld.shared.latency: 90.00 cycles is outside 1 to 64",
            "classes.sfu.rate: 5.00 warp instructions per clock is above",
        ] {
            assert!(w.iter().any(|w| w.starts_with(key)), "{key}: {w:?}");
        }
    }

    #[test]
    fn a_different_sm_count_is_taken_from_the_device() {
        let base = DeviceModel::h100_sxm();
        let mut c = sample();
        c.sm_count = 114;
        c.device = "NVIDIA H100 PCIe".to_string();
        let model = calibrated_model(&base, &c).unwrap();
        assert_eq!(model.sm_count, 114);
        assert_eq!(model.name, "NVIDIA H100 PCIe");
        assert!(model.provenance["sm_count"].contains("the base file said 132"));
    }

    #[test]
    fn the_table_shows_measured_shipped_and_unmeasured() {
        let base = DeviceModel::h100_sxm();
        let mut c = sample();
        c.measurements.retain(|m| m.field != Field::L2Gbps);
        c.extras.push(Extra {
            name: "DRAM read".into(),
            value: 3000.0,
            unit: "GB/s".into(),
            note: "not written".into(),
        });
        let table = render_table(&c, &base);
        assert!(table.contains("latency_l1"), "{table}");
        let l2 = table.lines().find(|l| l.starts_with("l2_gbps")).unwrap();
        assert!(l2.contains("not measured: kept"), "{table}");
        assert!(table.contains("DRAM read"), "{table}");
        assert_eq!(table.lines().count(), 1 + Field::ALL.len() + 1);
    }
}
