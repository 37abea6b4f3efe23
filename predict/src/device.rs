//! A GPU's figures for the model, as data: one JSON file per device model
//! (`devices/*.json`), each figure with where it comes from.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::ptx::Class;

/// Issue rate and dependent latency of one instruction class.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClassFigures {
    /// Warp instructions per clock per SM (lanes per clock / 32).
    pub rate: f64,
    /// Cycles until a dependent instruction can use the result (global
    /// loads: 0 here, their latency comes from the cache levels).
    pub latency: f64,
}

/// A device model: the limits that set occupancy, issue rates and
/// latencies per class, cache latencies, bandwidths and overheads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceModel {
    pub name: String,
    /// Where each group of figures comes from.
    pub provenance: BTreeMap<String, String>,
    pub sm_count: u32,
    pub clock_ghz: f64,
    pub schedulers_per_sm: u32,
    /// Warp instructions one scheduler issues per clock.
    pub issue_per_scheduler: f64,
    pub max_warps_per_sm: u32,
    pub max_blocks_per_sm: u32,
    pub registers_per_sm: u32,
    /// Registers are allocated per warp in units of this many.
    pub register_unit: u32,
    pub shared_per_sm: u32,
    pub shared_reserved_per_block: u32,
    pub shared_unit: u32,
    /// Keyed by [`Class::name`].
    pub classes: BTreeMap<String, ClassFigures>,
    pub latency_l1: f64,
    pub latency_l2: f64,
    pub latency_dram: f64,
    /// Bytes of loads one SM keeps in flight beyond L1 (Little's law: DRAM
    /// bandwidth x DRAM latency / SMs); bounds memory-level parallelism.
    pub load_bytes_in_flight_per_sm: f64,
    /// Achievable DRAM bandwidth, GB/s (a copy's, not the datasheet's).
    pub dram_gbps: f64,
    /// L1 bytes (sectors of 32 looked up) per clock per SM.
    pub l1_bytes_per_clock_per_sm: f64,
    /// Lines (tags) the L1 looks up per clock per SM: what bounds a load
    /// whose lanes are in many lines, however few sectors each.
    pub l1_lines_per_clock_per_sm: f64,
    /// Achievable L2 bandwidth, GB/s.
    pub l2_gbps: f64,
    /// Sectors written in part (fewer than 32 of their bytes by one warp
    /// store) that the L2 takes per nanosecond, the whole GPU.
    pub l2_partial_sectors_per_ns: f64,
    pub launch_overhead_us: f64,
    /// Nanoseconds an SM takes to start and retire one block, as a stream
    /// of empty blocks measures it: the fastest an SM goes through a
    /// launch's blocks, however little each does (0: not modelled, what a
    /// device file written before the figure existed reads as).
    #[serde(default)]
    pub block_launch_ns: f64,
    /// Fraction of the second-largest bound added to the largest.
    pub overlap: f64,
    /// Fraction added to the time of a launch whose CTAs loop over tasks
    /// (agents, persistent, grid-stride): what such a loop costs beyond
    /// the model's terms (docs/PREDICTION.md, "Loops the model cannot
    /// tell from their launch"). Fitted on the training kernels, not
    /// measured.
    pub task_loop_overhead: f64,
}

/// Why a device file could not be used.
#[derive(Debug)]
pub enum DeviceError {
    /// Not valid JSON, or a field is missing or mistyped.
    Json(serde_json::Error),
    /// An instruction class has no figures.
    MissingClass(&'static str),
    /// A figure that must be positive is not.
    NotPositive(&'static str),
    /// A figure outside the range it must lie in (`what`, the range).
    OutOfRange(String, &'static str),
}

impl fmt::Display for DeviceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceError::Json(e) => write!(f, "device file: {e}"),
            DeviceError::MissingClass(c) => write!(
                f,
                "device file: no figures for instruction class `{c}`: add \"{c}\": {{ \"rate\": .., \"latency\": .. }} to `classes`"
            ),
            DeviceError::NotPositive(what) => {
                write!(f, "device file: `{what}` must be positive")
            }
            DeviceError::OutOfRange(what, range) => {
                write!(f, "device file: `{what}` must be {range}")
            }
        }
    }
}

impl std::error::Error for DeviceError {}

impl DeviceModel {
    /// Reads and checks a device file's text.
    pub fn from_json(text: &str) -> Result<Self, DeviceError> {
        let model: DeviceModel = serde_json::from_str(text).map_err(DeviceError::Json)?;
        for class in Class::ALL {
            match model.classes.get(class.name()) {
                None => return Err(DeviceError::MissingClass(class.name())),
                Some(f) if f.rate <= 0.0 => return Err(DeviceError::NotPositive("rate")),
                Some(_) => {}
            }
        }
        for (value, what) in [
            (model.clock_ghz, "clock_ghz"),
            (model.dram_gbps, "dram_gbps"),
            (model.l2_gbps, "l2_gbps"),
            (model.l1_bytes_per_clock_per_sm, "l1_bytes_per_clock_per_sm"),
            (model.l1_lines_per_clock_per_sm, "l1_lines_per_clock_per_sm"),
            (model.l2_partial_sectors_per_ns, "l2_partial_sectors_per_ns"),
            (
                model.load_bytes_in_flight_per_sm,
                "load_bytes_in_flight_per_sm",
            ),
            (model.issue_per_scheduler, "issue_per_scheduler"),
            (f64::from(model.sm_count), "sm_count"),
            (f64::from(model.schedulers_per_sm), "schedulers_per_sm"),
            (f64::from(model.register_unit), "register_unit"),
            (f64::from(model.shared_unit), "shared_unit"),
        ] {
            if value <= 0.0 || !value.is_finite() {
                return Err(DeviceError::NotPositive(what));
            }
        }
        // Latencies may be zero (a load's is its cache level's), never
        // negative or not a number: a calibration gone wrong must not load.
        let latencies = [
            (model.latency_l1, "latency_l1".to_string()),
            (model.latency_l2, "latency_l2".to_string()),
            (model.latency_dram, "latency_dram".to_string()),
            (model.launch_overhead_us, "launch_overhead_us".to_string()),
            (model.block_launch_ns, "block_launch_ns".to_string()),
        ]
        .into_iter()
        .chain(model.classes.iter().flat_map(|(name, f)| {
            [
                (f.latency, format!("classes.{name}.latency")),
                (f.rate, format!("classes.{name}.rate")),
            ]
        }));
        for (value, what) in latencies {
            if value < 0.0 || !value.is_finite() {
                return Err(DeviceError::OutOfRange(what, "a finite number >= 0"));
            }
        }
        if !(0.0..=1.0).contains(&model.overlap) {
            return Err(DeviceError::OutOfRange("overlap".into(), "between 0 and 1"));
        }
        if !(0.0..=1.0).contains(&model.task_loop_overhead) {
            return Err(DeviceError::OutOfRange(
                "task_loop_overhead".into(),
                "between 0 and 1",
            ));
        }
        Ok(model)
    }

    /// The H100 SXM's file, shipped with the crate.
    pub fn h100_sxm() -> Self {
        Self::from_json(include_str!("../devices/h100-sxm.json"))
            .expect("devices/h100-sxm.json is checked by its test")
    }

    /// The figures of `class` (checked present by [`DeviceModel::from_json`]).
    pub fn class(&self, class: Class) -> ClassFigures {
        self.classes
            .get(class.name())
            .copied()
            .unwrap_or(ClassFigures {
                rate: 1.0,
                latency: 4.0,
            })
    }

    /// The file's text.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_files_are_complete() {
        for (text, name) in [
            (
                include_str!("../devices/h100-sxm.json"),
                "NVIDIA H100 80GB HBM3",
            ),
            (
                include_str!("../devices/h200-calibrated.json"),
                "NVIDIA H200",
            ),
        ] {
            let model = DeviceModel::from_json(text).unwrap();
            assert_eq!((model.name.as_str(), model.sm_count), (name, 132));
            assert_eq!(DeviceModel::from_json(&model.to_json()).unwrap(), model);
        }
    }

    #[test]
    fn a_broken_figure_is_named() {
        let mut model = DeviceModel::h100_sxm();
        model.latency_dram = -1.0;
        let err = DeviceModel::from_json(&model.to_json()).unwrap_err();
        assert!(err.to_string().contains("`latency_dram`"), "{err}");
        let mut model = DeviceModel::h100_sxm();
        model.overlap = 1.5;
        let err = DeviceModel::from_json(&model.to_json()).unwrap_err();
        assert!(err.to_string().contains("`overlap`"), "{err}");
        model.overlap = 0.2;
        model.task_loop_overhead = -0.01;
        let err = DeviceModel::from_json(&model.to_json()).unwrap_err();
        assert!(err.to_string().contains("`task_loop_overhead`"), "{err}");
        model.task_loop_overhead = 0.0;
        model.classes.get_mut("fp32").unwrap().latency = f64::NAN;
        // NaN is written as null, which serde refuses: either way it fails.
        assert!(DeviceModel::from_json(&model.to_json()).is_err());
    }

    #[test]
    fn a_file_from_before_block_starts_loads_without_them() {
        let mut json: serde_json::Value =
            serde_json::from_str(&DeviceModel::h100_sxm().to_json()).unwrap();
        json.as_object_mut().unwrap().remove("block_launch_ns");
        let model = DeviceModel::from_json(&json.to_string()).unwrap();
        assert_eq!(model.block_launch_ns, 0.0);
        // Any other figure missing is still an error that names it.
        json.as_object_mut().unwrap().remove("overlap");
        let err = DeviceModel::from_json(&json.to_string()).unwrap_err();
        assert!(err.to_string().contains("overlap"), "{err}");
    }

    #[test]
    fn missing_class_is_named() {
        let mut model = DeviceModel::h100_sxm();
        model.classes.remove("sfu");
        let err = DeviceModel::from_json(&model.to_json()).unwrap_err();
        assert!(err.to_string().contains("`sfu`"), "{err}");
    }
}
