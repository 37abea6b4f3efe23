//! The bench's measurements (`bench.json`, written by `cargo run --release
//! --bin bench`): the validation's ground truth.

use serde::Deserialize;

/// One schedule's measured median.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Record {
    pub kernel: String,
    pub problem: String,
    pub schedule: String,
    /// The PTX entry; absent for the nvcc twin (not in the suite's PTX).
    #[serde(default)]
    pub entry: Option<String>,
    pub median_ms: f64,
}

#[derive(Deserialize)]
struct BenchFile {
    device: String,
    records: Vec<Record>,
}

/// The device name and records of a bench JSON file's text.
pub fn records(text: &str) -> Result<(String, Vec<Record>), serde_json::Error> {
    let file: BenchFile = serde_json::from_str(text)?;
    Ok((file.device, file.records))
}

/// The H100 run shipped with the crate (`data/h100-bench.json`, 135
/// records: 120 schedules and 15 nvcc twins).
pub const H100_BENCH: &str = include_str!("../data/h100-bench.json");

/// A newer H100 run of 7 kernels (2026-11-25), with the `*_auto_*`
/// schedules of `#[clustered(auto)]`: one bench file per kernel
/// (`data/h100-2026-11-25/bench-<kernel>.json`), a second validation set
/// that no figure or choice of the model was made on.
pub const H100_2026_11_25: &[&str] = &[
    include_str!("../data/h100-2026-11-25/bench-sgemm_naive.json"),
    include_str!("../data/h100-2026-11-25/bench-sgemm_naive_small.json"),
    include_str!("../data/h100-2026-11-25/bench-sgemm_register.json"),
    include_str!("../data/h100-2026-11-25/bench-sgemm_tiled.json"),
    include_str!("../data/h100-2026-11-25/bench-syrk.json"),
    include_str!("../data/h100-2026-11-25/bench-transpose.json"),
    include_str!("../data/h100-2026-11-25/bench-transpose_wide.json"),
];

/// All 23 suite and ported kernels on an H100 (2026-11-25), one binary,
/// after `#[clustered(auto)]` families took in the explicit schedules (228
/// records: 213 schedules, 15 nvcc twins). The eight ports' first run: no
/// choice of the model saw them. Validate with
/// `cargo run --release -p clustered-suite --example predict -- --all --sim
/// --bench predict/data/h100-2026-11-25-all.json`.
pub const H100_2026_11_25_ALL: &str = include_str!("../data/h100-2026-11-25-all.json");

/// All 23 suite and ported kernels on an H200 (2026-11-26), one binary, two
/// bench calls (253 records: 238 schedules, 15 nvcc twins), measured after
/// every figure and rule of the model was set. Validate with the device
/// file calibrated on the same machine:
/// `cargo run --release -p clustered-suite --example predict -- --all --sim
/// --device predict/devices/h200-calibrated.json --bench
/// predict/data/h200-2026-11-26-all.json`.
pub const H200_2026_11_26_ALL: &str = include_str!("../data/h200-2026-11-26-all.json");

/// All 23 suite and ported kernels on an H100 (2026-11-26), one binary
/// with the loader's register caps and the agents claiming after each chunk,
/// two bench calls (275 records: 260 schedules, 15 nvcc twins): the run of
/// docs/BENCHMARKS.md "The whole suite after the claim change". Validate with
/// `cargo run --release -p clustered-suite --example predict -- --all --sim
/// --bench predict/data/h100-2026-11-26-all.json`.
pub const H100_2026_11_26_ALL: &str = include_str!("../data/h100-2026-11-26-all.json");

/// The same 23 kernels on an H100 (2026-11-26, later), one binary with the
/// agents stopping once every cluster is counted drained, two bench calls
/// (275 records): the run of docs/BENCHMARKS.md "The whole suite in
/// session 12".
/// Validate with `cargo run --release -p clustered-suite --example predict
/// -- --all --sim --bench predict/data/h100-2026-11-26-drained.json`.
pub const H100_2026_11_26_DRAINED: &str = include_str!("../data/h100-2026-11-26-drained.json");

/// The 23 kernels on an H100 (2026-11-26, session 13), one binary with
/// ATAX's column pass under launch bounds, register caps only where the
/// grid needs them and agents with a task each on one queue, two bench
/// calls (275 records): the run of docs/BENCHMARKS.md "The whole suite
/// now". Validate with `cargo run --release -p clustered-suite --example
/// predict -- --all --sim --bench predict/data/h100-2026-11-26-s13.json`.
pub const H100_2026_11_26_S13: &str = include_str!("../data/h100-2026-11-26-s13.json");

/// The hand-written layouts of session 14 (`atax_rows_gemv`,
/// `conv5x5_tiled`, `transpose_tiled` at both sizes: written after the
/// device model was calibrated, so held out) and the paper's kernels beside
/// them, from four bench calls on an H100 (2026-11-26; 75 records, nvcc
/// twins left out): docs/PREDICTION.md "Kernels written after the
/// calibration". Validate with `cargo run --release -p clustered-suite
/// --example predict -- atax_rows,atax_rows_gemv,atax_columns,conv5x5,conv5x5_tiled,transpose,transpose_wide,transpose_tiled,transpose_wide_tiled
/// --sim --bench predict/data/h100-2026-11-26-s14-layouts.json`.
pub const H100_2026_11_26_S14_LAYOUTS: &str =
    include_str!("../data/h100-2026-11-26-s14-layouts.json");

#[cfg(test)]
mod tests {
    use super::*;

    /// The whole-suite runs: their device, records, schedules (records with
    /// an entry; the others are nvcc twins), all 23 kernels, no zero median.
    #[test]
    fn the_runs_of_all_kernels_parse() {
        for (run, on, all, schedules) in [
            (H100_2026_11_25_ALL, "NVIDIA H100 80GB HBM3", 228, 213),
            (H100_2026_11_26_ALL, "NVIDIA H100 80GB HBM3", 275, 260),
            (H100_2026_11_26_DRAINED, "NVIDIA H100 80GB HBM3", 275, 260),
            (H100_2026_11_26_S13, "NVIDIA H100 80GB HBM3", 275, 260),
            (H200_2026_11_26_ALL, "NVIDIA H200", 253, 238),
        ] {
            let (device, records) = records(run).unwrap();
            assert_eq!(device, on);
            assert_eq!(records.len(), all, "{on}");
            let with_entry = records.iter().filter(|r| r.entry.is_some()).count();
            assert_eq!(with_entry, schedules, "{on}");
            let kernels: std::collections::BTreeSet<&str> =
                records.iter().map(|r| r.kernel.as_str()).collect();
            assert_eq!(kernels.len(), 23);
            assert!(records.iter().all(|r| r.median_ms > 0.0));
        }
    }

    #[test]
    fn the_layouts_run_parses() {
        let (device, records) = records(H100_2026_11_26_S14_LAYOUTS).unwrap();
        assert_eq!(device, "NVIDIA H100 80GB HBM3");
        assert_eq!(records.len(), 75);
        assert!(records
            .iter()
            .all(|r| r.entry.is_some() && r.median_ms > 0.0));
        for new in [
            "atax_rows_gemv",
            "conv5x5_tiled",
            "transpose_tiled",
            "transpose_wide_tiled",
        ] {
            assert_eq!(
                records.iter().filter(|r| r.kernel == new).count(),
                4,
                "{new}"
            );
        }
    }

    #[test]
    fn shipped_run_parses() {
        let (device, records) = records(H100_BENCH).unwrap();
        assert!(device.contains("H100"), "{device}");
        assert_eq!(records.len(), 135);
        assert_eq!(records.iter().filter(|r| r.entry.is_some()).count(), 120);
        assert!(records.iter().all(|r| r.median_ms > 0.0));
    }

    #[test]
    fn newer_run_parses() {
        let mut suite = 0;
        for text in H100_2026_11_25 {
            let (device, records) = records(text).unwrap();
            assert!(device.contains("H100"), "{device}");
            suite += records.iter().filter(|r| r.entry.is_some()).count();
        }
        assert_eq!(suite, 80);
    }
}
