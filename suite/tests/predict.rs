//! The static predictor on every suite kernel and schedule, without a GPU:
//! every schedule gets a prediction, every bench record names a schedule the
//! predictor covers, and the loops whose bound is a parameter are counted.
//! (Prediction quality against the GPU is reported by `examples/predict`
//! and docs/PREDICTION.md, not asserted.)

use std::collections::BTreeMap;

use clustered_predict::bench::{records, H100_2026_11_25, H100_2026_11_26_S14_LAYOUTS, H100_BENCH};
use clustered_predict::{ptxas, DeviceModel, Module, Trips};
use clustered_suite::host::cuda_tool;
use clustered_suite::predict::{predict_workload, LoadedResources};
use clustered_suite::suite::{all, Size};

#[test]
fn every_schedule_gets_a_prediction_and_every_record_a_schedule() {
    let module = Module::parse(clustered_suite::PTX).unwrap();
    let device = DeviceModel::h100_sxm();
    let resources = LoadedResources::uncapped(
        cuda_tool("ptxas")
            .and_then(|path| ptxas::resources(&path, clustered_suite::PTX, "sm_90").ok())
            .unwrap_or_else(|| {
                eprintln!("ptxas not found: predicting with assumed registers");
                BTreeMap::new()
            }),
    );
    let mut predicted = Vec::new();
    for workload in all(Size::Test) {
        for (label, entry, result) in predict_workload(
            &module,
            &workload,
            None,
            &device,
            &resources,
            &BTreeMap::new(),
        ) {
            let p = result.unwrap_or_else(|e| panic!("{} {label}: {e}", workload.name));
            assert!(p.ms.is_finite() && p.ms > 0.0, "{entry}: {} ms", p.ms);
            assert!(
                p.per_warp.iter().sum::<f64>() > 0.0,
                "{entry}: no instructions"
            );
            predicted.push((workload.name, label, entry, p));
        }
    }
    // The bench's records: each suite schedule is one the predictor covers,
    // in the shipped run, the newer 7-kernel run (auto schedules) and the
    // hand-written layouts' run.
    let (_, mut bench) = records(H100_BENCH).unwrap();
    for text in H100_2026_11_25.iter().chain([&H100_2026_11_26_S14_LAYOUTS]) {
        bench.extend(records(text).unwrap().1);
    }
    let mut covered = 0;
    for r in bench.iter().filter(|r| r.entry.is_some()) {
        assert!(
            predicted.iter().any(|(k, l, e, _)| *k == r.kernel
                && *l == r.schedule
                && Some(*e) == r.entry.as_deref()),
            "bench record {} / {} ({:?}) has no prediction",
            r.kernel,
            r.schedule,
            r.entry
        );
        covered += 1;
    }
    assert_eq!(covered, 120 + 80 + 75);
    // The naive SGEMM's k loop is bounded by its parameter n: counted, not assumed.
    let (_, _, _, naive) = predicted
        .iter()
        .find(|(k, l, _, _)| *k == "sgemm_naive" && *l == "baseline")
        .unwrap();
    assert!(
        naive
            .loops
            .iter()
            .any(|l| matches!(l.trips, Trips::Known(n) if n > 1)),
        "{:?}",
        naive.loops
    );
    // The loops that ran once before issue 16's fixes: the k loops of the
    // register-tiled SGEMM (a copy of the induction variable) and of
    // kmeans_assign (its cluster loop), and syrk's and atax_rows' inner
    // products are all counted now.
    for (kernel, label) in [
        ("sgemm_register", "baseline"),
        ("kmeans_assign", "baseline"),
        ("syrk", "baseline"),
        ("atax_rows", "baseline"),
    ] {
        let (_, _, entry, p) = predicted
            .iter()
            .find(|(k, l, _, _)| *k == kernel && *l == label)
            .unwrap();
        assert!(
            p.loops.iter().all(|l| matches!(l.trips, Trips::Known(_))),
            "{entry}: {:?}",
            p.loops
        );
    }
}

/// The simulator's counts behind the L1 line and partial-store terms, at
/// the test size: a naive transpose stores 4 bytes of each sector it sends
/// (8 partial sectors' bytes per stored byte, half its compulsory bytes
/// stored) and reads coalesced; vector add stores whole sectors; kmeans'
/// point loads span several lines per warp (at this size, points of 32
/// bytes: 8 lines, and 1 for the centroid's load), where a coalesced load
/// looks up one.
#[test]
fn the_simulated_traffic_counts_partial_stores_and_line_lookups() {
    use clustered_suite::predict::traffic_ratios;
    use clustered_suite::suite::select;
    let ratios = |name: &str| {
        let (_, build) = select(Some(name)).unwrap()[0];
        let workload = build(Size::Test);
        traffic_ratios(&workload, &clustered_suite::sim::DeviceProfile::h100_sxm())["baseline"]
    };
    let transpose = ratios("transpose");
    assert!(
        (transpose.l2_partial_stores - 4.0).abs() < 0.01,
        "{transpose:?}"
    );
    assert!(
        (transpose.l1_lines_per_load - 1.0).abs() < 0.01,
        "{transpose:?}"
    );
    let vector = ratios("vector_add");
    assert_eq!(vector.l2_partial_stores, 0.0, "{vector:?}");
    let kmeans = ratios("kmeans_assign");
    assert!(kmeans.l1_lines_per_load > 2.0, "{kmeans:?}");
    assert_eq!(kmeans.l2_partial_stores, 0.0, "{kmeans:?}");
}

/// Throttled agents: only ACTIVE of each SM's MAX agents work (the others
/// exit at once), so the predictor sees ACTIVE agents per SM, each with
/// more tasks; unthrottled agents keep MAX.
#[test]
fn throttled_agents_are_predicted_as_the_agents_that_work() {
    use clustered_suite::predict::planned_launch;
    use clustered_suite::suite::select;
    let device = DeviceModel::h100_sxm();
    let (_, build) = select(Some("jacobi5")).unwrap()[0];
    let workload = build(Size::Benchmark);
    let launch = |label: &str| {
        let v = workload.variants.iter().find(|v| v.label == label).unwrap();
        planned_launch(&workload, v, &device, None).unwrap()
    };
    let all = launch("agents chunk 8");
    let four = launch("agents chunk 8, 4 active");
    assert_eq!(four.grid[0], 4 * device.sm_count, "{four:?}");
    assert!(all.grid[0] > four.grid[0], "{all:?}");
    let tasks = |l: &clustered_predict::LaunchContext| l.tasks_per_block * f64::from(l.grid[0]);
    assert!((tasks(&all) - tasks(&four)).abs() < 1e-6 * tasks(&all));
}

/// A skip list names suite kernels and candidates of their automatic
/// families; the shipped lists match this build.
#[test]
fn a_skip_list_is_checked_against_the_suite() {
    use clustered_suite::predict::SkipList;
    for text in [
        include_str!("../../predict/data/h200-skips-25.json"),
        include_str!("../../predict/data/h100-skips-25.json"),
    ] {
        let list: SkipList = serde_json::from_str(text).unwrap();
        assert!(!list.kernels.is_empty());
        list.check().unwrap();
    }
    let list = |kernel: &str, entry: &str| SkipList {
        device: "test".to_string(),
        margin: 0.25,
        kernels: [(kernel.to_string(), vec![entry.to_string()])].into(),
    };
    let err = list("no_such_kernel", "x").check().unwrap_err();
    assert!(err.contains("no_such_kernel"), "{err}");
    let err = list("jacobi5", "jacobi5_typo").check().unwrap_err();
    assert!(
        err.contains("jacobi5_typo") && err.contains("predict --skips"),
        "{err}"
    );
    // The baseline is never skipped.
    let err = list("jacobi5", "jacobi5").check().unwrap_err();
    assert!(err.contains("not a candidate"), "{err}");
}

/// The simulator's cache follows the device model: an H200 model's
/// traffic comes from the H200's 60 MB L2, an H100's from its 50 MB.
#[test]
fn the_cache_profile_follows_the_device_model() {
    use clustered_suite::predict::cache_profile;
    let h200 =
        DeviceModel::from_json(include_str!("../../predict/devices/h200-calibrated.json")).unwrap();
    let h100 = DeviceModel::h100_sxm();
    let (a, b) = (cache_profile(&h200), cache_profile(&h100));
    assert_eq!((a.name.as_str(), b.name.as_str()), ("H200", "H100 SXM"));
    assert!(a.l2.bytes > b.l2.bytes);
}

/// The predictor takes registers as `Gpu::load_module` and the launch run
/// them: a schedule over its kernel's occupancy with its capped copy's
/// (Black-Scholes' grid-stride loop, 35 registers from ptxas 13, 32 capped)
/// where the grid needs the warps, its own where its own code holds the
/// grid at once (64 blocks of ATAX's column pass); its kernel and a
/// schedule already within it as ptxas gave them.
#[test]
fn registers_are_the_loaders() {
    let Some(path) = cuda_tool("ptxas") else {
        if std::env::var_os("CI").is_some() {
            panic!("ptxas not found under CI");
        }
        eprintln!("skipped: ptxas not found (pip install nvidia-cuda-nvcc)");
        return;
    };
    let device = DeviceModel::h100_sxm();
    let own = ptxas::resources(&path, clustered_suite::PTX, "sm_90").unwrap();
    let loaded =
        clustered_suite::predict::as_loaded(&path, clustered_suite::PTX, own.clone(), &device)
            .unwrap();
    let stride = "black_scholes_stride";
    assert!(own[stride].registers > 32, "{:?}", own[stride]);
    assert!(
        loaded.capped[stride].registers <= 32,
        "{:?}",
        loaded.capped[stride]
    );
    for (entry, capped) in &loaded.capped {
        assert!(capped.registers < own[entry].registers, "{entry}");
        assert!(capped.spill_bytes <= own[entry].spill_bytes, "{entry}");
    }
    for unchanged in ["black_scholes", "black_scholes_redirect"] {
        assert!(!loaded.capped.contains_key(unchanged), "{unchanged}");
    }
    assert_eq!(loaded.own, own);

    let big = clustered_suite::host::LaunchConfig::linear(1 << 26, 256);
    assert_eq!(
        loaded.for_launch(stride, &big, &device),
        Some(loaded.capped[stride])
    );
    let atax = "atax_columns_auto_stride";
    let few = clustered_suite::host::LaunchConfig::linear(64 * 256, 256);
    assert!(loaded.capped.contains_key(atax), "{:?}", own[atax]);
    assert_eq!(loaded.for_launch(atax, &few, &device), Some(own[atax]));
    assert_eq!(
        loaded.for_launch("atax_columns", &few, &device),
        Some(own["atax_columns"])
    );
}

/// Thread block clusters are launch dimensions: each DSMEM schedule's
/// planned launch carries its clusters, the kernel's loops over the
/// cluster's blocks are counted from them, and a larger cluster costs more
/// (its stores into other blocks and its cluster barrier's fence; the bench
/// measured 1x1 < 2x1 < 4x2 on both GPUs, docs/PREDICTION.md).
#[test]
fn thread_block_clusters_are_launch_dimensions() {
    use clustered_suite::predict::planned_launch;
    use clustered_suite::suite::select;
    let module = Module::parse(clustered_suite::PTX).unwrap();
    let device = DeviceModel::h100_sxm();
    let (_, build) = select(Some("sgemm_tiled")).unwrap()[0];
    let workload = build(Size::Benchmark);
    let variant = |label: &str| workload.variants.iter().find(|v| v.label == label).unwrap();
    for (label, cluster) in [
        ("baseline", [1, 1, 1]),
        ("DSMEM cluster 4x2", [4, 2, 1]),
        ("raster G=8 cluster 8", [8, 1, 1]),
    ] {
        let launch = planned_launch(&workload, variant(label), &device, None).unwrap();
        assert_eq!(launch.cluster, cluster, "{label}");
    }
    let predicted: BTreeMap<_, _> = predict_workload(
        &module,
        &workload,
        None,
        &device,
        &LoadedResources::uncapped(BTreeMap::new()),
        &BTreeMap::new(),
    )
    .into_iter()
    .map(|(label, _, p)| (label, p.unwrap()))
    .collect();
    let dsmem = |side: &str| &predicted[format!("DSMEM cluster {side}").as_str()];
    for side in ["1x1", "2x1", "4x2"] {
        assert!(
            dsmem(side)
                .loops
                .iter()
                .all(|l| matches!(l.trips, Trips::Known(_))),
            "{side}: {:?}",
            dsmem(side).loops
        );
    }
    assert!(
        dsmem("1x1").ms < dsmem("2x1").ms,
        "{} {}",
        dsmem("1x1").ms,
        dsmem("2x1").ms
    );
    assert!(
        dsmem("2x1").ms < dsmem("4x2").ms,
        "{} {}",
        dsmem("2x1").ms,
        dsmem("4x2").ms
    );
}
