//! Tests that need no GPU: validation against the H100 reference profile,
//! launch-config arithmetic, messages, PTX scanning.

use crate::*;

fn h100() -> DeviceProperties {
    DeviceProperties::h100_sxm()
}

/// A made-up kernel: 64 registers per thread limit it to 512 threads per
/// block (below the device's 1024), with 4 KiB of static shared memory.
fn kernel() -> KernelAttributes {
    KernelAttributes {
        max_threads_per_block: 512,
        static_shared_bytes: 4096,
        registers_per_thread: 64,
        local_bytes_per_thread: 0,
        const_bytes: 0,
        ptx_version: 90,
        binary_version: 90,
    }
}

fn roomy_kernel() -> KernelAttributes {
    KernelAttributes {
        max_threads_per_block: 1024,
        static_shared_bytes: 0,
        ..kernel()
    }
}

#[test]
fn h100_profile_is_consistent() {
    let d = h100();
    assert_eq!(d.compute_capability, (9, 0));
    assert_eq!(d.sm_count, 132);
    assert_eq!(d.max_warps_per_sm * d.warp_size, d.max_threads_per_sm);
    assert_eq!(d.max_shared_memory_per_sm, 233_472);
    assert_eq!(d.max_shared_memory_per_block_optin, 232_448);
    assert_eq!(d.l2_cache_bytes, 52_428_800);
    let bw = d.peak_memory_bandwidth_bytes_per_s();
    assert!((3.3e12..3.4e12).contains(&bw), "{bw}");
}

#[test]
fn valid_launch_passes() {
    let cfg = LaunchConfig::linear(1 << 20, 256);
    assert_eq!(validate_launch(&cfg, &h100(), &kernel()), Ok(()));
    let cfg = LaunchConfig::new([132, 65_535, 65_535], [512, 1, 1]).with_dynamic_shared(1024);
    assert_eq!(validate_launch(&cfg, &h100(), &kernel()), Ok(()));
}

#[test]
fn empty_grid_and_block() {
    let cfg = LaunchConfig::new([4, 0, 1], [32, 1, 1]);
    assert_eq!(
        validate_launch(&cfg, &h100(), &kernel()),
        Err(LaunchError::EmptyGrid { grid: [4, 0, 1] })
    );
    let cfg = LaunchConfig::new([4, 1, 1], [32, 1, 0]);
    assert_eq!(
        validate_launch(&cfg, &h100(), &kernel()),
        Err(LaunchError::EmptyBlock { block: [32, 1, 0] })
    );
}

#[test]
fn block_too_large_for_kernel_then_device() {
    // 1024 threads: fine for the device, over this kernel's own 512.
    let cfg = LaunchConfig::new([1, 1, 1], [1024, 1, 1]);
    let e = validate_launch(&cfg, &h100(), &kernel()).unwrap_err();
    assert_eq!(
        e,
        LaunchError::BlockTooLarge {
            threads: 1024,
            limit: 512,
            limited_by: ThreadLimit::Kernel
        }
    );
    assert!(e.to_string().contains("kernel's own"), "{e}");
    // 2048 threads over the device's 1024 (the kernel allows 1024 too).
    let cfg = LaunchConfig::new([1, 1, 1], [32, 32, 2]);
    let e = validate_launch(&cfg, &h100(), &roomy_kernel()).unwrap_err();
    assert_eq!(
        e,
        LaunchError::BlockTooLarge {
            threads: 2048,
            limit: 1024,
            limited_by: ThreadLimit::Device
        }
    );
    assert!(e.to_string().contains("device's maximum"), "{e}");
    // Product overflowing u32 is still caught.
    let cfg = LaunchConfig::new([1, 1, 1], [u32::MAX, u32::MAX, 2]);
    assert!(matches!(
        validate_launch(&cfg, &h100(), &kernel()),
        Err(LaunchError::BlockTooLarge { .. })
    ));
}

#[test]
fn block_dim_too_large() {
    // 128 threads in total, but z = 128 is over the device's 64.
    let cfg = LaunchConfig::new([1, 1, 1], [1, 1, 128]);
    assert_eq!(
        validate_launch(&cfg, &h100(), &kernel()),
        Err(LaunchError::BlockDimTooLarge {
            axis: Axis::Z,
            dim: 128,
            limit: 64
        })
    );
}

#[test]
fn grid_too_large() {
    let cfg = LaunchConfig::new([1, 65_536, 1], [32, 1, 1]);
    let e = validate_launch(&cfg, &h100(), &kernel()).unwrap_err();
    assert_eq!(
        e,
        LaunchError::GridTooLarge {
            axis: Axis::Y,
            dim: 65_536,
            limit: 65_535
        }
    );
    assert!(e.to_string().contains("grid dimension y"), "{e}");
    let cfg = LaunchConfig::new([u32::MAX, 1, 1], [32, 1, 1]);
    assert!(matches!(
        validate_launch(&cfg, &h100(), &kernel()),
        Err(LaunchError::GridTooLarge { axis: Axis::X, .. })
    ));
}

#[test]
fn shared_memory_limits_and_opt_in() {
    let d = h100();
    let k = kernel();
    // Over the default 48 KiB but within the 227 KiB opt-in: valid, and the
    // launch raises the kernel's limit first.
    let cfg = LaunchConfig::linear(1024, 256).with_dynamic_shared(100 * 1024);
    assert_eq!(validate_launch(&cfg, &d, &k), Ok(()));
    assert!(needs_shared_opt_in(&cfg, &d, &k));
    // Static memory counts towards the default limit: 4 KiB + 44 KiB + 1.
    let cfg = LaunchConfig::linear(1024, 256).with_dynamic_shared(44 * 1024 + 1);
    assert!(needs_shared_opt_in(&cfg, &d, &k));
    let cfg = LaunchConfig::linear(1024, 256).with_dynamic_shared(44 * 1024);
    assert!(!needs_shared_opt_in(&cfg, &d, &k));
    // Exactly at the opt-in limit with the static part: valid.
    let cfg = LaunchConfig::linear(1024, 256).with_dynamic_shared(227 * 1024 - 4096);
    assert_eq!(validate_launch(&cfg, &d, &k), Ok(()));
    // One byte over: refused.
    let cfg = cfg.with_dynamic_shared(227 * 1024 - 4096 + 1);
    let e = validate_launch(&cfg, &d, &k).unwrap_err();
    assert_eq!(
        e,
        LaunchError::SharedMemoryTooLarge {
            requested_dynamic: 227 * 1024 - 4096 + 1,
            static_bytes: 4096,
            limit: 232_448
        }
    );
    assert!(e.to_string().contains("smaller tiles"), "{e}");
    // No overflow with huge requests.
    let cfg = cfg.with_dynamic_shared(u32::MAX);
    assert!(matches!(
        validate_launch(&cfg, &d, &k),
        Err(LaunchError::SharedMemoryTooLarge { .. })
    ));
}

#[test]
fn linear_rounds_up() {
    assert_eq!(LaunchConfig::linear(1000, 256).grid, [4, 1, 1]);
    assert_eq!(LaunchConfig::linear(1024, 256).grid, [4, 1, 1]);
    assert_eq!(LaunchConfig::linear(1025, 256).grid, [5, 1, 1]);
    assert_eq!(LaunchConfig::linear(1, 1024).grid, [1, 1, 1]);
    let c = LaunchConfig::linear(1000, 256);
    assert_eq!(c.block, [256, 1, 1]);
    assert_eq!(c.dynamic_shared_bytes, 0);
    assert_eq!(c.total_threads(), 1024);
    // Edge cases give configurations that validation refuses, no panic.
    let zero = LaunchConfig::linear(0, 256);
    assert!(matches!(
        validate_launch(&zero, &h100(), &kernel()),
        Err(LaunchError::EmptyGrid { .. })
    ));
    let no_block = LaunchConfig::linear(1000, 0);
    assert!(matches!(
        validate_launch(&no_block, &h100(), &kernel()),
        Err(LaunchError::EmptyGrid { .. } | LaunchError::EmptyBlock { .. })
    ));
    let huge = LaunchConfig::linear(u64::MAX, 1);
    assert_eq!(huge.grid[0], u32::MAX);
    assert!(matches!(
        validate_launch(&huge, &h100(), &kernel()),
        Err(LaunchError::GridTooLarge { .. })
    ));
    let big = LaunchConfig::linear(u64::MAX, 1024);
    assert!(big.grid[0] > 0);
}

#[test]
fn planar_rounds_up_each_side() {
    let cfg = LaunchConfig::planar(100, 17, [32, 8]);
    assert_eq!((cfg.grid, cfg.block), ([4, 3, 1], [32, 8, 1]));
    assert_eq!(LaunchConfig::planar(64, 16, [32, 8]).grid, [2, 2, 1]);
    // A zero side is refused at launch, not a division by zero here.
    assert_eq!(LaunchConfig::planar(64, 16, [0, 8]).grid, [0, 2, 1]);
}

#[test]
fn messages_name_the_fix() {
    let cases: Vec<(Error, &str)> = vec![
        (Error::NoDriver, "libcuda"),
        (
            Error::NoDevice {
                ordinal: 0,
                count: 0,
            },
            "CUDA_VISIBLE_DEVICES",
        ),
        (
            Error::NoDevice {
                ordinal: 3,
                count: 2,
            },
            "smaller ordinal",
        ),
        (
            Error::KernelNotFound {
                name: "k".into(),
                available: vec!["a".into(), "b".into()],
            },
            "a, b",
        ),
        (Error::InvalidPtx { nul_at: 7 }, "NUL"),
        (Error::StreamAfterArgs, "before the first"),
        (
            Error::Launch(LaunchError::EmptyBlock { block: [0, 1, 1] }),
            "at least 1",
        ),
        (
            Error::Launch(LaunchError::BlockDimTooLarge {
                axis: Axis::X,
                dim: 2000,
                limit: 1024,
            }),
            "reshape",
        ),
        (
            Error::Launch(LaunchError::GridTooLarge {
                axis: Axis::X,
                dim: 1,
                limit: 0,
            }),
            "loop inside the kernel",
        ),
    ];
    for (e, fix) in cases {
        let msg = e.to_string();
        assert!(msg.contains(fix), "`{msg}` should mention `{fix}`");
    }
    let e: Error = LaunchError::EmptyGrid { grid: [0, 1, 1] }.into();
    assert!(std::error::Error::source(&e).is_some());
    assert!(e.to_string().starts_with("launch refused"));
}

#[test]
fn driver_error_display_without_driver_does_not_panic() {
    use cudarc::driver::{sys::CUresult, DriverError};
    let e = Error::Driver {
        context: "cuLaunchKernel",
        source: DriverError(CUresult::CUDA_ERROR_INVALID_VALUE),
    };
    let msg = e.to_string();
    assert!(msg.contains("cuLaunchKernel"), "{msg}");
    assert!(msg.contains("CUDA_ERROR_INVALID_VALUE"), "{msg}");
}

#[test]
fn entry_names_are_scanned() {
    let ptx = "
.version 7.8
.target sm_90
.address_size 64
.visible .entry write_index(
    .param .u64 out
)
{ ret; }
.entry other_kernel ( .param .u32 n ) { ret; }
.func notakernel() { ret; }
// .entrypoint is not a kernel
";
    assert_eq!(ptx_entry_names(ptx), vec!["write_index", "other_kernel"]);
}

/// The `.param` list of each entry, as rustc's nvptx backend writes it.
const ENTRIES: &str = "
.visible .entry vector_add_agents(
	.param .u64 .ptr .align 1 vector_add_agents_param_0,
	.param .u64 .ptr .align 1 vector_add_agents_param_1,
	.param .u32 vector_add_agents_param_3,
	.param .align 8 .b8 vector_add_agents_param_4[184]
)
{
	ret;
}
.visible .entry spin(
	.param .u64 spin_param_0,
	.param .u8 spin_param_1
)
{ ret; }
.visible .entry empty()
{ ret; }
.visible .entry odd(
	.param .weird odd_param_0
)
{ ret; }
";

/// The pool kernels the build marked for a publishing warp are read from
/// its globals (`clustered_abi::pool::PUBLISHING_WARP_PREFIX`); other
/// globals, and the prefix in a comment, are not marks.
#[test]
fn publishing_warp_marks_are_read_from_ptx() {
    let ptx = "
.version 7.8
.address_size 64
.visible .global .align 4 .u32 __clustered_pool_warp_pool_empty = 1;
.visible .global .align 4 .u32 __clustered_pool_warp_pool_light = 1;
.visible .global .align 4 .u32 other = 1;
// __clustered_pool_warp_pool_demo
.visible .entry pool_demo( .param .u64 slots ) { ret; }
";
    assert_eq!(
        ptx_publishing_warp_entries(ptx),
        vec!["pool_empty", "pool_light"]
    );
}

#[test]
fn entry_params_are_read_from_ptx() {
    let params = ptx_entry_params(ENTRIES);
    let of = |name: &str| {
        params
            .iter()
            .find(|(entry, _)| entry == name)
            .map(|(_, p)| p.clone())
    };
    assert_eq!(of("vector_add_agents"), Some(Some(vec![8, 8, 4, 184])));
    assert_eq!(of("spin"), Some(Some(vec![8, 1])));
    assert_eq!(of("empty"), Some(Some(vec![])));
    // A list this scan cannot read is not checked (rather than refused).
    assert_eq!(of("odd"), Some(None));
}

#[test]
fn argument_mismatches_name_the_kernel_and_the_sizes() {
    let missing = Error::Arguments {
        kernel: "vector_add".into(),
        expected: vec![8, 8, 8, 4],
        pushed: vec![8, 8, 8],
    };
    let text = missing.to_string();
    assert!(
        text.contains("takes 4 parameters") && text.contains("3 arguments"),
        "{text}"
    );
    let wrong = Error::Arguments {
        kernel: "vector_add".into(),
        expected: vec![8, 8, 8, 4],
        pushed: vec![8, 8, 8, 8],
    };
    assert!(wrong.to_string().contains("argument 3"), "{wrong}");
    // What `.arg(..)` records for each kind of argument.
    assert_eq!(<&u32 as KernelArg>::BYTES, 4);
    assert_eq!(<&f64 as KernelArg>::BYTES, 8);
    assert_eq!(<&CudaSlice<f32> as KernelArg>::BYTES, 8);
}

#[test]
fn contracts_breaking_the_option_rules_are_refused() {
    use clustered_device::abi::{indexing_kind, Tail};
    let valid = KernelContract::new(Binding::Agents, indexing_kind::ROW_MAJOR, [0, 0], 8, 2);
    assert!(check_contract("k", valid).is_ok());
    // `chunk` on a grid-stride loop, `waves` on agents, an unknown indexing:
    // no #[clustered] makes these.
    let chunked_stride =
        KernelContract::new(Binding::Stride, indexing_kind::ROW_MAJOR, [0, 0], 8, 0);
    let waves_on_agents =
        KernelContract::new(Binding::Agents, indexing_kind::ROW_MAJOR, [0, 0], 1, 0).with_waves(4);
    let bad_indexing = KernelContract::new(Binding::Reorder, 7, [0, 0], 1, 0);
    // A tail on agents, and a tail value that no tail has.
    let stride = KernelContract::new(Binding::Stride, indexing_kind::ROW_MAJOR, [0, 0], 1, 0);
    assert!(check_contract("k", stride.with_tail(Tail::Blocks)).is_ok());
    let tail_on_agents = valid.with_tail(Tail::Claims);
    let unknown_tail = KernelContract { tail: 3, ..stride };
    for contract in [
        chunked_stride,
        waves_on_agents,
        bad_indexing,
        tail_on_agents,
        unknown_tail,
    ] {
        assert!(
            matches!(
                check_contract("k", contract),
                Err(ClusterError::ContractMismatch { .. })
            ),
            "{contract:?}"
        );
    }
}

#[test]
fn a_contract_of_another_size_names_its_abi() {
    use clustered_device::abi::indexing_kind;
    let contract = KernelContract::new(Binding::Stride, indexing_kind::ROW_MAJOR, [0, 0], 1, 0);
    // SAFETY: a repr(C) value of plain u32s, read as its bytes.
    let bytes: Vec<u8> = unsafe {
        std::slice::from_raw_parts(
            (&contract as *const KernelContract).cast::<u8>(),
            std::mem::size_of::<KernelContract>(),
        )
    }
    .to_vec();
    assert!(decode_contract("k", &bytes).is_ok());
    // ABI 3's contract: 40 bytes, version 3 in its second word.
    assert_eq!(bytes.len(), 44);
    let mut old = bytes[..40].to_vec();
    old[4..8].copy_from_slice(&3u32.to_le_bytes());
    let error = decode_contract("k", &old).unwrap_err();
    assert!(
        matches!(error, ClusterError::ContractMismatch { ref found, .. } if found.abi_version == 3),
        "{error:?}"
    );
    assert!(error.to_string().contains("ABI 3"), "{error}");
    // Bytes without the magic are no contract at all.
    assert!(matches!(
        decode_contract("k", &[0u8; 44]),
        Err(ClusterError::NotClustered { .. })
    ));
    assert!(matches!(
        decode_contract("k", &[]),
        Err(ClusterError::NotClustered { .. })
    ));
}

#[test]
fn block_clusters_are_checked_before_the_driver() {
    let grid = LaunchConfig::new([16, 8, 1], [256, 1, 1]);
    for cluster in [
        [1, 1, 1],
        [2, 1, 1],
        [8, 1, 1],
        [2, 4, 1],
        [4, 2, 1],
        [16, 1, 1],
    ] {
        let cfg = grid.with_block_cluster(cluster);
        let blocks: u32 = cluster.iter().product();
        let expected = if blocks > PORTABLE_CLUSTER_BLOCKS {
            Err(LaunchError::ClusterTooLarge {
                blocks: u64::from(blocks),
                limit: PORTABLE_CLUSTER_BLOCKS,
            })
        } else {
            Ok(())
        };
        assert_eq!(
            validate_launch(&cfg, &h100(), &kernel()),
            expected,
            "{cluster:?}"
        );
    }
    // Not whole clusters, or a zero side: named with both shapes.
    for cluster in [[3, 1, 1], [1, 3, 1], [2, 1, 2], [0, 1, 1]] {
        let cfg = grid.with_block_cluster(cluster);
        assert_eq!(
            validate_launch(&cfg, &h100(), &kernel()),
            Err(LaunchError::ClusterShape {
                grid: [16, 8, 1],
                cluster
            })
        );
    }
    // Before Hopper: refused whatever the shape; without clusters, fine.
    let ampere = DeviceProperties {
        compute_capability: (8, 0),
        ..h100()
    };
    let cfg = grid.with_block_cluster([2, 1, 1]);
    let refused = validate_launch(&cfg, &ampere, &kernel()).unwrap_err();
    assert_eq!(
        refused,
        LaunchError::ClustersUnsupported {
            cluster: [2, 1, 1],
            compute_capability: (8, 0)
        }
    );
    assert!(refused.to_string().contains("9.0 (Hopper)"), "{refused}");
    assert_eq!(validate_launch(&grid, &ampere, &kernel()), Ok(()));
    assert!(!grid.has_block_clusters() && cfg.has_block_clusters());
    let message = validate_launch(&grid.with_block_cluster([3, 1, 1]), &h100(), &kernel())
        .unwrap_err()
        .to_string();
    assert!(message.contains("divide the grid's"), "{message}");
}

#[test]
fn block_clusters_shape_the_plan() {
    use crate::cpu::{CpuLaunch, CpuPlan, Machine};
    use clustered_device::abi::indexing_kind;
    let machine = Machine::new(6);
    let original = CpuLaunch {
        grid: [1000, 1, 1],
        block: [64, 1, 1],
        dynamic_shared_bytes: 0,
        resident_blocks: 3,
    };
    let with = |width| ClusterOptions {
        block_cluster: Some(width),
        ..ClusterOptions::default()
    };
    // Agents: whole clusters of agents, never none.
    let agents = KernelContract::new(Binding::Agents, indexing_kind::ROW_MAJOR, [0, 0], 8, 0);
    for width in [1, 2, 4, 8, 64] {
        let plan = CpuPlan::new(&agents, original, &machine, &with(width)).unwrap();
        let blocks = plan.launch.grid[0];
        assert_eq!(blocks % width, 0, "width {width}: {blocks} agents");
        assert!(
            blocks >= width && (width > 18 || blocks <= 18),
            "width {width}: {blocks}"
        );
    }
    // A count of agents the caller chose must be whole clusters.
    let chosen = |total| ClusterOptions {
        total_agents: Some(total),
        ..with(4)
    };
    assert_eq!(
        CpuPlan::new(&agents, original, &machine, &chosen(12)).map(|p| p.launch.grid[0]),
        Ok(12)
    );
    assert_eq!(
        CpuPlan::new(&agents, original, &machine, &chosen(10)).unwrap_err(),
        ClusterError::BlockClusterWidth {
            width: 4,
            grid_x: 10
        }
    );
    // Reorder launches the original grid: the width must divide it.
    let reorder = KernelContract::new(Binding::Reorder, indexing_kind::ROW_MAJOR, [0, 0], 1, 0);
    assert!(CpuPlan::new(&reorder, original, &machine, &with(8)).is_ok());
    for width in [0, 3, 16] {
        let error = CpuPlan::new(&reorder, original, &machine, &with(width)).unwrap_err();
        assert_eq!(
            error,
            ClusterError::BlockClusterWidth {
                width,
                grid_x: 1000
            }
        );
        assert!(error.to_string().contains("divides 1000"), "{error}");
    }
}

#[test]
fn a_raster_band_is_chosen_at_launch() {
    use crate::cpu::{CpuLaunch, CpuPlan, Machine};
    use clustered_device::abi::indexing_kind;
    use clustered_device::mapping::{Delinearize, Indexing};
    const GRID: [u32; 3] = [40, 24, 1];
    let machine = Machine::new(6);
    let original = CpuLaunch {
        grid: GRID,
        block: [64, 1, 1],
        dynamic_shared_bytes: 0,
        resident_blocks: 3,
    };
    let with = |group| ClusterOptions {
        raster_group: Some(group),
        ..ClusterOptions::default()
    };
    let plan = |contract: &KernelContract, group| {
        CpuPlan::new(contract, original, &machine, &with(group)).map(|mut plan| {
            let order = plan.parameter().delinearize;
            (0..960).map(|v| order.cta(v)).collect::<Vec<_>>()
        })
    };
    let order = |indexing| {
        let order = Delinearize::new(indexing, GRID).unwrap();
        Ok((0..960).map(|v| order.cta(v)).collect::<Vec<_>>())
    };
    let tile = KernelContract::new(Binding::Reorder, indexing_kind::TILE, [1, 16], 1, 0);
    // The band given replaces the 16 compiled in; it need not divide 24.
    for g in [1, 5, 24, 100] {
        let banded = Indexing::Tile {
            width: 1,
            height: g,
        };
        assert_eq!(plan(&tile, RasterGroup::Ctas(g)), order(banded), "G = {g}");
    }
    assert_ne!(
        order(Indexing::Tile {
            width: 1,
            height: 5
        }),
        order(Indexing::Tile {
            width: 1,
            height: 16
        })
    );
    // From the occupancy: 6 SMs x 3 blocks = 18 resident, sqrt 4.2 -> 4.
    let four = Indexing::Tile {
        width: 1,
        height: 4,
    };
    assert_eq!(plan(&tile, RasterGroup::FromOccupancy), order(four));
    // The other rasters, and a persistent binding.
    let column = KernelContract::new(Binding::Reorder, indexing_kind::COLUMN_TILE, [32, 1], 1, 0);
    let column_8 = Indexing::ColumnTile {
        width: 8,
        height: 1,
    };
    assert_eq!(plan(&column, RasterGroup::Ctas(8)), order(column_8));
    let sawtooth = KernelContract::new(Binding::Reorder, indexing_kind::SAWTOOTH, [1, 32], 1, 0);
    let sawtooth_8 = Indexing::Sawtooth {
        width: 1,
        height: 8,
    };
    assert_eq!(plan(&sawtooth, RasterGroup::Ctas(8)), order(sawtooth_8));
    let agents = KernelContract::new(Binding::Agents, indexing_kind::TILE, [1, 16], 8, 0);
    assert_eq!(plan(&agents, RasterGroup::FromOccupancy), order(four));
    // No band for what is no raster, and none of 0 CTAs.
    for (kind, tile) in [
        (indexing_kind::ROW_MAJOR, [0, 0]),
        (indexing_kind::TILE, [4, 4]),
        (indexing_kind::CUSTOM, [0, 0]),
    ] {
        let contract = KernelContract::new(Binding::Reorder, kind, tile, 1, 0);
        let error = plan(&contract, RasterGroup::Ctas(8)).unwrap_err();
        assert!(
            matches!(error, ClusterError::NotARaster { .. }),
            "{error:?}"
        );
        assert!(error.to_string().contains("tile(1, G)"), "{error}");
    }
    assert_eq!(
        plan(&tile, RasterGroup::Ctas(0)),
        Err(ClusterError::EmptyRasterGroup)
    );
}

#[test]
fn the_band_from_occupancy_is_the_power_of_two_below_the_root() {
    let band = |resident, across| RasterGroup::FromOccupancy.ctas(resident, across);
    // Naive SGEMM on an H100: 8 blocks of 256 threads x 132 SMs.
    assert_eq!(band(1056, 512), 32);
    // The tiled and register-tiled SGEMMs: 2 blocks per SM.
    assert_eq!(band(264, 256), 16);
    assert_eq!(band(255, 256), 8);
    assert_eq!(band(1, 256), 1);
    assert_eq!(band(0, 256), 1);
    // Never wider than the grid across the bands.
    assert_eq!(band(1056, 6), 6);
    assert_eq!(RasterGroup::Ctas(7).ctas(1056, 3), 7);
}

/// Agents with at most one task each run one queue (no home clusters to
/// steal between: ATAX's column pass, 64 tasks for 132 SMs); with more
/// tasks than working agents, a cluster per SM, or what the caller chose.
#[test]
fn agents_with_a_task_each_run_one_queue() {
    use crate::cpu::{CpuLaunch, CpuPlan, Machine};
    use clustered_device::abi::indexing_kind;
    let machine = Machine::new(132);
    let agents = KernelContract::new(Binding::Agents, indexing_kind::ROW_MAJOR, [0, 0], 1, 0);
    let clusters = |tasks: u32, options: &ClusterOptions| {
        let original = CpuLaunch {
            grid: [tasks, 1, 1],
            block: [256, 1, 1],
            dynamic_shared_bytes: 0,
            resident_blocks: 2,
        };
        let mut plan = CpuPlan::new(&agents, original, &machine, options).unwrap();
        plan.parameter().partition.clusters
    };
    let default = ClusterOptions::default();
    assert_eq!(clusters(64, &default), 1);
    assert_eq!(clusters(264, &default), 1, "2 agents on each of 132 SMs");
    assert_eq!(clusters(265, &default), 132);
    assert_eq!(clusters(1 << 20, &default), 132);
    let chosen = ClusterOptions {
        clusters: Some(8),
        ..ClusterOptions::default()
    };
    assert_eq!(clusters(64, &chosen), 8, "the caller's count stands");
}

/// A pool worker's fence as the device runtime writes it for PTX before
/// ISA 8.6, between two other fences that must stay as they are.
fn fenced_ptx() -> String {
    let mark = clustered_device::abi::ptx::RELEASE_FENCE_GPU_MARKED;
    format!(
        "//\n.version 7.8\n.target sm_90\n.address_size 64\n\
         .visible .entry pool()\n{{\n\tfence.acq_rel.sys;\n\
         \t// begin inline asm\n\t{mark}\n\t// end inline asm\n\
         \tfence.acq_rel.gpu;\n\tret;\n}}\n"
    )
}

#[test]
fn marked_fences_become_release_fences_on_a_driver_that_compiles_them() {
    use crate::module::ptx_with_release_fences as with_release_fences;
    let built = fenced_ptx();
    let built = built.as_str();
    let fenced = with_release_fences(built, 12080).expect("a CUDA 12.8 driver");
    assert!(fenced.contains("\n.version 8.6\n"), "{fenced}");
    assert!(!fenced.contains("7.8"), "{fenced}");
    assert_eq!(fenced.matches("fence.release.gpu;").count(), 1, "{fenced}");
    // The unmarked fences are left as they are, and nothing else moves.
    assert_eq!(fenced.matches("fence.acq_rel.gpu;").count(), 1, "{fenced}");
    assert!(fenced.contains("fence.acq_rel.sys;"));
    assert_eq!(
        fenced
            .replace(
                "fence.release.gpu;",
                clustered_device::abi::ptx::RELEASE_FENCE_GPU_MARKED
            )
            .replace(".version 8.6", ".version 7.8"),
        built
    );
    // Newer PTX keeps its version; older drivers and unmarked PTX load as built.
    let newer = built.replace(".version 7.8", ".version 8.8");
    let fenced = with_release_fences(&newer, 13000).expect("a CUDA 13 driver");
    assert!(fenced.contains("\n.version 8.8\n") && fenced.contains("fence.release.gpu;"));
    assert_eq!(with_release_fences(built, 12060), None);
    assert_eq!(with_release_fences(ENTRIES, 13000), None);
    let versionless = built.replace(".version 7.8\n", "");
    assert_eq!(with_release_fences(&versionless, 13000), None);
    // Only the directive is raised, not an earlier mention of its text.
    let mentioned = format!("// from .version 7.8 PTX\n{built}");
    let fenced = with_release_fences(&mentioned, 12080).expect("a CUDA 12.8 driver");
    assert!(fenced.starts_with("// from .version 7.8 PTX\n"), "{fenced}");
    assert!(fenced.contains("\n.version 8.6\n"), "{fenced}");
}
