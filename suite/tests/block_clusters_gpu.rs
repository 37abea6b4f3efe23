//! Hopper thread block clusters on a GPU: the DSMEM SGEMM in every cluster
//! shape gives the SDK kernel's bits, schedules launched in clusters still
//! run every CTA once, and bad shapes are typed errors. Without a GPU (or
//! before Hopper) each test prints why it skipped and passes.

use clustered_suite::host::{
    Binding, ClusterError, ClusterOptions, Error, Gpu, LaunchConfig, LaunchError, Module,
};
use kernels::coverage::coverage;
use kernels::sgemm::{sgemm_tiled_dsmem, TILE};

mod common;

/// How long one test may take before its watchdog names it as hung (a
/// cluster barrier that some block never reaches).
const HANG: std::time::Duration = std::time::Duration::from_secs(60);

fn hopper() -> Option<(Gpu, Module)> {
    let gpu = match Gpu::new(0) {
        Ok(gpu) => gpu,
        Err(error) => {
            eprintln!("skipped: no GPU ({error})");
            return None;
        }
    };
    if gpu.properties().compute_capability.0 < 9 {
        eprintln!(
            "skipped: {} has no thread block clusters (compute capability {:?})",
            gpu.properties().name,
            gpu.properties().compute_capability
        );
        return None;
    }
    let module = gpu
        .load_module(clustered_suite::PTX)
        .expect("the suite's PTX loads");
    Some((gpu, module))
}

#[test]
fn dsmem_sgemm_in_every_cluster_shape_gives_the_baseline_bits() {
    let Some((gpu, module)) = hopper() else {
        return;
    };
    let _watchdog = common::Watchdog::new(
        "dsmem_sgemm_in_every_cluster_shape_gives_the_baseline_bits",
        HANG,
    );
    // Powers of two on a grid of 16 tiles a side; sides of 3 and 6 (rows
    // per owner rounded up, the last owner short) on one of 24.
    let grids: [(u32, &[[u32; 3]]); 2] = [
        (
            16,
            &[
                [1, 1, 1],
                [2, 1, 1],
                [4, 1, 1],
                [8, 1, 1],
                [1, 2, 1],
                [2, 2, 1],
                [4, 2, 1],
                [2, 4, 1],
            ],
        ),
        (24, &[[3, 1, 1], [1, 3, 1], [6, 1, 1], [3, 2, 1], [2, 3, 1]]),
    ];
    for (tiles, shapes) in grids {
        check_dsmem_shapes(&gpu, &module, tiles * TILE, shapes);
    }
}

/// The DSMEM SGEMM of `n x n` in each of `shapes`, typed and untyped,
/// against sgemm_tiled's bits.
fn check_dsmem_shapes(gpu: &Gpu, module: &Module, n: u32, shapes: &[[u32; 3]]) {
    let len = (n * n) as usize;
    let (a, b, expected) = common::sgemm_tiled_reference(gpu, module, n);
    let config = LaunchConfig::planar(n, n, [TILE, TILE]);
    let options = ClusterOptions::default();
    // SAFETY (every launch below): the kernel reads n x n floats of a and
    // b and writes as many of c, for a grid of n / TILE tiles a side.
    for &cluster in shapes {
        let config = config.with_block_cluster(cluster);
        let kernel = module.kernel("sgemm_tiled_dsmem").unwrap();
        let fit = gpu.max_active_clusters(&kernel, &config).unwrap();
        assert!(fit > 0, "{cluster:?}: no cluster fits");
        // Typed, through the entry.
        let mut c = gpu.zeros::<f32>(len).unwrap();
        unsafe {
            gpu.launch_entry(
                module,
                sgemm_tiled_dsmem::KERNEL,
                config,
                &options,
                (&a, &b, &mut c, n),
            )
        }
        .unwrap_or_else(|e| panic!("{cluster:?}: {e}"));
        assert!(
            gpu.dtoh(&c).unwrap() == expected,
            "cluster {cluster:?}: the DSMEM SGEMM differs from sgemm_tiled"
        );
        // Untyped, through the builder.
        let mut c = gpu.zeros::<f32>(len).unwrap();
        unsafe {
            gpu.launch(&kernel, config)
                .arg(&a)
                .arg(&b)
                .arg(&mut c)
                .arg(&n)
                .run()
        }
        .unwrap_or_else(|e| panic!("{cluster:?}, untyped: {e}"));
        assert!(
            gpu.dtoh(&c).unwrap() == expected,
            "cluster {cluster:?} (untyped launch): differs from sgemm_tiled"
        );
        println!("cluster {cluster:?}: same bits as sgemm_tiled, {fit} clusters fit at once");
    }
}

#[test]
fn schedules_in_block_clusters_run_every_cta_once() {
    let Some((gpu, module)) = hopper() else {
        return;
    };
    let _watchdog = common::Watchdog::new("schedules_in_block_clusters_run_every_cta_once", HANG);
    let grid = [64, 3, 1];
    let n = (grid[0] * grid[1]) as usize;
    for width in [2, 4, 8] {
        let options = ClusterOptions {
            block_cluster: Some(width),
            ..ClusterOptions::default()
        };
        for &entry in coverage::SCHEDULES {
            let (mut runs, mut sms) = (gpu.zeros::<u32>(n).unwrap(), gpu.zeros::<u32>(n).unwrap());
            // SAFETY: the kernel indexes both buffers by the CTA's id, and
            // each holds one word per CTA of the grid.
            unsafe {
                gpu.launch_entry(
                    &module,
                    entry,
                    LaunchConfig::new(grid, [64, 1, 1]),
                    &options,
                    (&mut runs, &mut sms),
                )
            }
            .unwrap_or_else(|e| panic!("{} in clusters of {width}: {e}", entry.name()));
            let runs = gpu.dtoh(&runs).unwrap();
            for (v, &count) in runs.iter().enumerate() {
                assert_eq!(
                    count,
                    1,
                    "{} in clusters of {width}: CTA {v} ran {count} times",
                    entry.name()
                );
            }
        }
    }
}

#[test]
fn bad_cluster_shapes_are_typed_errors() {
    let Some((gpu, module)) = hopper() else {
        return;
    };
    let _watchdog = common::Watchdog::new("bad_cluster_shapes_are_typed_errors", HANG);
    let kernel = module.kernel("sgemm_tiled_dsmem").unwrap();
    let (a, mut c) = (
        gpu.zeros::<f32>(64 * 64).unwrap(),
        gpu.zeros::<f32>(64 * 64).unwrap(),
    );
    let n = 64u32;
    let config = LaunchConfig::planar(n, n, [TILE, TILE]);
    let launch = |cluster: [u32; 3], c: &mut _| unsafe {
        gpu.launch(&kernel, config.with_block_cluster(cluster))
            .arg(&a)
            .arg(&a)
            .arg(c)
            .arg(&n)
            .run()
    };
    match launch([3, 1, 1], &mut c) {
        Err(Error::Launch(LaunchError::ClusterShape { grid, cluster })) => {
            assert_eq!((grid, cluster), ([2, 2, 1], [3, 1, 1]))
        }
        other => panic!("a grid of 2 in clusters of 3: {other:?}"),
    }
    // 4 x 4 tiles in one cluster: whole, but over the portable 8.
    let big = LaunchConfig::planar(4 * TILE, 4 * TILE, [TILE, TILE]).with_block_cluster([4, 4, 1]);
    match unsafe {
        gpu.launch(&kernel, big)
            .arg(&a)
            .arg(&a)
            .arg(&mut c)
            .arg(&n)
            .run()
    } {
        Err(Error::Launch(LaunchError::ClusterTooLarge { blocks: 16, .. })) => {}
        other => panic!("a cluster of 16: {other:?}"),
    }
    // A reorder schedule launches the original grid: 64 x 3 in clusters of 3.
    let options = ClusterOptions {
        block_cluster: Some(3),
        ..ClusterOptions::default()
    };
    let entry = coverage::SCHEDULES
        .iter()
        .find(|e| e.contract().and_then(|c| Binding::from_u32(c.binding)) == Some(Binding::Reorder))
        .expect("coverage has a reorder schedule");
    let (mut runs, mut sms) = (
        gpu.zeros::<u32>(192).unwrap(),
        gpu.zeros::<u32>(192).unwrap(),
    );
    let refused = unsafe {
        gpu.launch_entry(
            &module,
            *entry,
            LaunchConfig::new([64, 3, 1], [64, 1, 1]),
            &options,
            (&mut runs, &mut sms),
        )
    };
    match refused {
        Err(Error::Cluster(ClusterError::BlockClusterWidth {
            width: 3,
            grid_x: 64,
        })) => {}
        other => panic!("{}: {other:?}", entry.name()),
    }
    // Nothing ran: the refused launches left the output zero.
    assert!(gpu.dtoh(&c).unwrap().iter().all(|&x| x == 0.0));
}
