//! The suite's kernels, each with its inputs, launch, schedules and check.

use clustered_host::{LaunchConfig, RasterGroup};

use super::{
    block_cluster_variant, schedule_variant, variants, Arg, Buffer, Class, Size, Variant,
    VariantOptions, Workload,
};
use crate::reference;

/// The raster schedule `$raster` of `$module::$baseline` with its band
/// chosen at launch (`ClusterOptions::raster_group`), one variant per
/// `$label => $group`: the bands compiled in beside others, and the rule.
macro_rules! launch_bands {
    ($module:ident, $baseline:ident, $raster:ident, $args:tt; $($label:literal => $group:expr),* $(,)?) => {
        [$(schedule_variant!($label, $module, $baseline, $raster, $args, VariantOptions::band($group))),*]
    };
}

/// Builds a workload at a size.
pub type Build = fn(Size) -> Workload;

/// The suite: each kernel's name and the function that builds it at a size
/// (building allocates and fills its inputs: at benchmark sizes, build one
/// at a time).
pub const WORKLOADS: &[(&str, Build)] = &[
    ("sgemm_naive", |size| sgemm_naive(size, false)),
    ("sgemm_naive_small", |size| sgemm_naive(size, true)),
    ("sgemm_tiled", sgemm_tiled),
    ("sgemm_register", sgemm_register),
    ("conv5x5", conv5x5),
    ("conv5x5_tiled", conv5x5_tiled),
    ("kmeans_assign", kmeans_assign),
    ("syrk", syrk),
    ("atax_rows", |size| atax(size, true)),
    ("atax_rows_gemv", atax_rows_gemv),
    ("atax_columns_gemv", atax_columns_gemv),
    ("atax_columns", |size| atax(size, false)),
    ("vector_add", vector_add),
    ("black_scholes", black_scholes),
    ("black_scholes_fast", black_scholes_fast),
    ("transpose", |size| transpose(size, false)),
    ("transpose_wide", |size| transpose(size, true)),
    ("transpose_tiled", |size| transpose_tiled(size, false)),
    ("transpose_wide_tiled", |size| transpose_tiled(size, true)),
    ("jacobi5", jacobi5),
    ("jacobi5_march", jacobi5_march),
    ("jacobi5_march4", jacobi5_march4),
    ("jacobi7_3d", jacobi7_3d),
    ("jacobi7_3d_march", jacobi7_3d_march),
    ("jacobi7_3d_march4", jacobi7_3d_march4),
    // Ported as their authors wrote them (kernels/src/ports).
    ("hotspot", super::ports::hotspot),
    ("pathfinder", super::ports::pathfinder),
    ("bpnn_layerforward", super::ports::bpnn_layerforward),
    ("bpnn_adjust_weights", super::ports::bpnn_adjust_weights),
    ("nn_euclid", super::ports::nn_euclid),
    ("triad", super::ports::triad),
    ("parboil_stencil", super::ports::parboil_stencil),
    ("spmv_jds", super::ports::spmv_jds),
];

/// Every workload of the suite at `size` (all inputs at once: for the test
/// and simulation sizes).
pub fn all(size: Size) -> Vec<Workload> {
    WORKLOADS.iter().map(|(_, build)| build(size)).collect()
}

/// The builders that `only` selects: all of them without a list, else those
/// named in the comma-separated list `only` (`sgemm_tiled,transpose`), in
/// the suite's order; an unknown name is an error that lists the suite's.
pub fn select(only: Option<&str>) -> Result<Vec<&'static (&'static str, Build)>, String> {
    let Some(only) = only else {
        return Ok(WORKLOADS.iter().collect());
    };
    let wanted: Vec<&str> = only.split(',').map(str::trim).collect();
    let unknown: Vec<&str> = wanted
        .iter()
        .copied()
        .filter(|w| !WORKLOADS.iter().any(|(name, _)| name == w))
        .collect();
    if !unknown.is_empty() {
        let names: Vec<_> = WORKLOADS.iter().map(|(name, _)| *name).collect();
        return Err(format!(
            "no kernel named {}; the suite has {} (--only takes a comma-separated list)",
            unknown
                .iter()
                .map(|u| format!("{u:?}"))
                .collect::<Vec<_>>()
                .join(", "),
            names.join(", ")
        ));
    }
    Ok(WORKLOADS
        .iter()
        .filter(|(name, _)| wanted.contains(name))
        .collect())
}

/// The scalar argument at `index` (the workload's own layout).
pub(super) fn scalar(w: &Workload, index: usize) -> usize {
    match w.args[index] {
        Arg::U32(v) => v as usize,
        other => unreachable!("argument {index} is {other:?}, not a u32"),
    }
}

pub(super) fn float_arg(w: &Workload, index: usize) -> f32 {
    match w.args[index] {
        Arg::F32(v) => v,
        other => unreachable!("argument {index} is {other:?}, not an f32"),
    }
}

/// The 5x5 filter at argument `index`.
fn filter(w: &Workload, index: usize) -> [f32; 25] {
    match w.args[index] {
        Arg::Filter5x5(v) => v,
        other => unreachable!("argument {index} is {other:?}, not a filter"),
    }
}

pub(super) fn floats(w: &Workload, buffer: usize) -> Vec<f32> {
    Buffer::as_floats(&w.buffers[buffer].words)
}

/// Compares every word with the reference's.
pub(super) fn expect_all(what: &str, got: &[u32], want: &[f32]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{what}: {} words, expected {}",
            got.len(),
            want.len()
        ));
    }
    expect_bits(what, got, |i| Some(want[i]))
}

/// Compares every word with the reference's within `tolerance(i)` (for
/// kernels whose GPU instructions are approximate: [`Workload::approximate`]).
fn expect_close(
    what: &str,
    got: &[u32],
    want: &[f32],
    tolerance: impl Fn(usize) -> f32,
) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{what}: {} words, expected {}",
            got.len(),
            want.len()
        ));
    }
    for (i, (&bits, &want)) in got.iter().zip(want).enumerate() {
        let got = f32::from_bits(bits);
        // NaN is never within the tolerance.
        let close = (got - want).abs() <= tolerance(i);
        if !close {
            return Err(format!(
                "{what}[{i}] = {got}, expected {want} within {}",
                tolerance(i)
            ));
        }
    }
    Ok(())
}

/// Deterministic inputs in [-1, 1), different per `seed`.
pub fn random_floats(seed: u64) -> impl Fn(usize) -> f32 {
    // A hash of the index (splitmix64's finaliser), not a sequence: no
    // table, one pass over each buffer.
    let seed = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    move |i| {
        let mut z = (i as u64).wrapping_add(seed);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
}

/// Compares `got` with `want` exactly, naming the first difference.
pub(super) fn expect_bits(
    what: &str,
    got: &[u32],
    want: impl Fn(usize) -> Option<f32>,
) -> Result<(), String> {
    for (i, &bits) in got.iter().enumerate() {
        if let Some(want) = want(i) {
            if bits != want.to_bits() {
                return Err(format!(
                    "{what}[{i}] = {}, expected {want}",
                    f32::from_bits(bits)
                ));
            }
        }
    }
    Ok(())
}

fn vector_add(size: Size) -> Workload {
    let n: u32 = match size {
        Size::Test => 5000,
        Size::Simulate => 1 << 18,
        Size::Benchmark => 1 << 28,
    };
    let len = n as usize;
    Workload {
        name: "vector_add",
        class: Class::Streaming,
        problem: format!("n = {n}"),
        shape: LaunchConfig::linear(n as u64, 256),
        buffers: vec![
            Buffer::floats("a", len, random_floats(1)),
            Buffer::floats("b", len, random_floats(2)),
            Buffer::output("c", len),
        ],
        args: vec![Arg::Buffer(0), Arg::Buffer(1), Arg::Buffer(2), Arg::U32(n)],
        variants: variants!(kernels::vector; vector_add (0, 1, 2, 3);
            "agents chunk 8, bypass" => vector_add_agents,
            "redirect" => vector_add_redirect,
            "persistent chunk 8" => vector_add_persistent,
            "persistent chunk 4" => vector_add_persistent4,
            "grid-stride" => vector_add_stride,
            "grid-stride, prefetch L2" => vector_add_stride_prefetch,
            "grid-stride 4 waves, prefetch L2" => vector_add_stride_prefetch_waves4,
            "grid-stride, prefetch L2 2 ahead" => vector_add_stride_prefetch2,
            "grid-stride, generated prefetch" => vector_add_stride_prefetch_auto,
            "persistent chunk 4, generated prefetch" => vector_add_persistent_prefetch_auto,
        ),
        cpu_check: true,
        check: |w, outputs| {
            let (a, b) = (&w.buffers[0].words, &w.buffers[1].words);
            expect_bits("c", &outputs[0], |i| {
                Some(f32::from_bits(a[i]) + f32::from_bits(b[i]))
            })
        },
    }
}

fn sgemm_tiled(size: Size) -> Workload {
    let n: u32 = match size {
        Size::Test => 64,
        Size::Simulate => 256,
        Size::Benchmark => 8192,
    };
    let len = (n * n) as usize;
    let tile = kernels::sgemm::TILE;
    Workload {
        name: "sgemm_tiled",
        class: Class::Algorithm,
        problem: format!("n = {n}"),
        shape: LaunchConfig::planar(n, n, [tile, tile]),
        buffers: vec![
            Buffer::floats("a", len, random_floats(3)),
            Buffer::floats("b", len, random_floats(4)),
            Buffer::output("c", len),
        ],
        args: vec![Arg::Buffer(0), Arg::Buffer(1), Arg::Buffer(2), Arg::U32(n)],
        variants: variants!(kernels::sgemm; sgemm_tiled (0, 1, 2, 3);
            "raster tile(16,4)" => sgemm_tiled_raster,
            "agents tile(4,4)" => sgemm_tiled_agents,
            "raster G=8" => sgemm_tiled_raster8,
            "sawtooth G=8" => sgemm_tiled_sawtooth8,
            "raster G=16" => sgemm_tiled_raster16,
            "raster G=32" => sgemm_tiled_raster32,
            "redirect columns" => sgemm_tiled_redirect,
        )
        .into_iter()
        .chain({
            use kernels::sgemm as m;
            launch_bands!(m, sgemm_tiled, sgemm_tiled_raster8, (0, 1, 2, 3);
                "raster band 2 at launch" => RasterGroup::Ctas(2),
                "raster band 4 at launch" => RasterGroup::Ctas(4),
                "raster band 64 at launch" => RasterGroup::Ctas(64),
                "raster band from occupancy" => RasterGroup::FromOccupancy,
            )
        })
        .chain(sgemm_tiled_in_block_clusters(n / tile))
        .collect(),
        cpu_check: true,
        check: sgemm_check,
    }
}

/// The tiled SGEMM in Hopper thread block clusters: the baseline and a
/// raster with neighbours co-scheduled on one GPC (they share tiles through
/// L2), and the DSMEM kernel, which loads each shared tile once per cluster
/// (`cluster 1x1`: its double buffering alone). Only the clusters that tile
/// a grid of `tiles x tiles` blocks (the test sizes have 2 a side).
fn sgemm_tiled_in_block_clusters(tiles: u32) -> Vec<Variant> {
    use kernels::sgemm as m;
    /// The DSMEM kernel in clusters of `X x Y`, with its larger side.
    fn dsmem<const X: u32, const Y: u32>(label: &'static str) -> (Variant, u32) {
        let variant = block_cluster_variant!(label, m, sgemm_tiled_dsmem, [X, Y, 1], (0, 1, 2, 3));
        (variant, X.max(Y))
    }
    let baseline = block_cluster_variant!(
        "baseline cluster 2x1",
        m,
        sgemm_tiled,
        [2, 1, 1],
        (0, 1, 2, 3)
    );
    let raster2 = schedule_variant!(
        "raster G=8 cluster 2",
        m,
        sgemm_tiled,
        sgemm_tiled_raster8,
        (0, 1, 2, 3),
        VariantOptions::block_cluster(2)
    );
    let raster8 = schedule_variant!(
        "raster G=8 cluster 8",
        m,
        sgemm_tiled,
        sgemm_tiled_raster8,
        (0, 1, 2, 3),
        VariantOptions::block_cluster(8)
    );
    // Each with its largest cluster side, which must divide the grid's.
    [
        dsmem::<1, 1>("DSMEM cluster 1x1"),
        dsmem::<2, 1>("DSMEM cluster 2x1"),
        dsmem::<4, 1>("DSMEM cluster 4x1"),
        dsmem::<1, 2>("DSMEM cluster 1x2"),
        dsmem::<2, 2>("DSMEM cluster 2x2"),
        dsmem::<4, 2>("DSMEM cluster 4x2"),
        (baseline, 2),
        (raster2, 2),
        (raster8, 8),
    ]
    .into_iter()
    .filter(|&(_, side)| tiles.is_multiple_of(side))
    .map(|(variant, _)| variant)
    .collect()
}

/// C = A B in k order with one fma each, on 16 sampled rows (all of them
/// would be 2n^3 flops on the host).
fn sgemm_check(w: &Workload, outputs: &[Vec<u32>]) -> Result<(), String> {
    let n = scalar(w, 3);
    let (a, b) = (&w.buffers[0].words, &w.buffers[1].words);
    let rows: Vec<usize> = (0..n).step_by((n / 16).max(1)).collect();
    expect_bits("c", &outputs[0], |i| {
        let (row, col) = (i / n, i % n);
        rows.contains(&row).then(|| {
            let (a, b) = (
                |k: usize| f32::from_bits(a[k]),
                |k: usize| f32::from_bits(b[k]),
            );
            reference::sgemm_element(n, row, col, a, b)
        })
    })
}

fn matrices(name: &'static str, n: u32, class: Class) -> (Workload, usize) {
    let len = (n * n) as usize;
    let workload = Workload {
        name,
        class,
        problem: format!("n = {n}"),
        shape: LaunchConfig::planar(n, n, [16, 16]),
        buffers: vec![
            Buffer::floats("a", len, random_floats(3)),
            Buffer::floats("b", len, random_floats(4)),
            Buffer::output("c", len),
        ],
        args: vec![Arg::Buffer(0), Arg::Buffer(1), Arg::Buffer(2), Arg::U32(n)],
        variants: Vec::new(),
        cpu_check: true,
        check: sgemm_check,
    };
    (workload, len)
}

/// The naive SGEMM at 8192 (`small`: 4096), 16x16 CTAs.
fn sgemm_naive(size: Size, small: bool) -> Workload {
    let n: u32 = match (size, small) {
        (Size::Test, false) => 48,
        (Size::Test, true) => 32,
        (Size::Simulate, false) => 256,
        (Size::Simulate, true) => 128,
        (Size::Benchmark, false) => 8192,
        (Size::Benchmark, true) => 4096,
    };
    let name = if small {
        "sgemm_naive_small"
    } else {
        "sgemm_naive"
    };
    let (mut w, _) = matrices(name, n, Class::Algorithm);
    w.variants = variants!(kernels::sgemm_naive; sgemm_naive (0, 1, 2, 3);
        "raster G=16" => sgemm_naive_raster16,
        "raster G=32" => sgemm_naive_raster32,
        "raster G=32 along y" => sgemm_naive_raster32_y,
        "sawtooth G=32" => sgemm_naive_sawtooth32,
        "redirect rows" => sgemm_naive_redirect_rows,
        "redirect columns" => sgemm_naive_redirect_columns,
        "agents tile(4,4)" => sgemm_naive_agents,
        "agents tile(4,4), 4 active" => sgemm_naive_agents_throttled,
        "persistent G=16" => sgemm_naive_persistent16,
        "grid-stride G=16" => sgemm_naive_stride,
        "agents tile(4,4), chunk 8" => sgemm_naive_agents_chunk8,
    );
    use kernels::sgemm_naive as m;
    w.variants.extend(
        launch_bands!(m, sgemm_naive, sgemm_naive_raster16, (0, 1, 2, 3);
            "raster band 4 at launch" => RasterGroup::Ctas(4),
            "raster band 8 at launch" => RasterGroup::Ctas(8),
            "raster band 64 at launch" => RasterGroup::Ctas(64),
            "raster band from occupancy" => RasterGroup::FromOccupancy,
        ),
    );
    // In thread block clusters along x: a raster's consecutive CTAs (one
    // column group, sharing B's columns) co-scheduled on one GPC.
    let grid_x = w.shape.grid[0];
    w.variants.extend(
        [
            (
                block_cluster_variant!(
                    "baseline cluster 4x1",
                    m,
                    sgemm_naive,
                    [4, 1, 1],
                    (0, 1, 2, 3)
                ),
                4,
            ),
            (
                schedule_variant!(
                    "raster G=32 cluster 2",
                    m,
                    sgemm_naive,
                    sgemm_naive_raster32,
                    (0, 1, 2, 3),
                    VariantOptions::block_cluster(2)
                ),
                2,
            ),
            (
                schedule_variant!(
                    "raster G=32 cluster 4",
                    m,
                    sgemm_naive,
                    sgemm_naive_raster32,
                    (0, 1, 2, 3),
                    VariantOptions::block_cluster(4)
                ),
                4,
            ),
        ]
        .into_iter()
        .filter(|&(_, width)| grid_x.is_multiple_of(width))
        .map(|(variant, _)| variant),
    );
    w
}

/// The register-tiled SGEMM: 128x128 per CTA, 8x8 per thread.
fn sgemm_register(size: Size) -> Workload {
    let n: u32 = match size {
        Size::Test => 128,
        Size::Simulate => 256,
        Size::Benchmark => 8192,
    };
    let (mut w, _) = matrices("sgemm_register", n, Class::Algorithm);
    w.name = "sgemm_register";
    w.shape = LaunchConfig::new(
        [
            n / kernels::sgemm_register::BN,
            n / kernels::sgemm_register::BM,
            1,
        ],
        [kernels::sgemm_register::REGISTER_THREADS, 1, 1],
    );
    w.variants = variants!(kernels::sgemm_register; sgemm_register (0, 1, 2, 3);
        "raster G=8" => sgemm_register_raster8,
        "raster G=16" => sgemm_register_raster16,
        "redirect rows" => sgemm_register_redirect_rows,
        "redirect columns" => sgemm_register_redirect_columns,
        "agents tile(4,4)" => sgemm_register_agents,
    );
    use kernels::sgemm_register as m;
    w.variants.extend(
        launch_bands!(m, sgemm_register, sgemm_register_raster8, (0, 1, 2, 3);
            "raster band 2 at launch" => RasterGroup::Ctas(2),
            "raster band 4 at launch" => RasterGroup::Ctas(4),
            "raster band 32 at launch" => RasterGroup::Ctas(32),
            "raster band from occupancy" => RasterGroup::FromOccupancy,
        ),
    );
    w
}

fn conv5x5(size: Size) -> Workload {
    let (width, height): (u32, u32) = match size {
        Size::Test => (40, 24),
        Size::Simulate => (512, 384),
        Size::Benchmark => (16384, 16384),
    };
    let len = (width * height) as usize;
    Workload {
        name: "conv5x5",
        class: Class::Algorithm,
        problem: format!("{width} x {height}"),
        shape: LaunchConfig::planar(width, height, [kernels::conv::CONV_BLOCK; 2]),
        buffers: vec![
            Buffer::floats("input", len, random_floats(5)),
            Buffer::output("output", len),
        ],
        args: vec![
            Arg::Buffer(0),
            Arg::Filter5x5(std::array::from_fn(random_floats(6))),
            Arg::Buffer(1),
            Arg::U32(width),
            Arg::U32(height),
        ],
        variants: variants!(kernels::conv; conv5x5 (0, 1, 2, 3, 4);
            "redirect rows" => conv5x5_redirect_rows,
            "redirect columns" => conv5x5_redirect_columns,
            "raster G=2" => conv5x5_raster2,
            "grid-stride" => conv5x5_stride,
            "grid-stride 4 waves" => conv5x5_stride_waves4,
            "agents" => conv5x5_agents,
            "agents, 4 active" => conv5x5_agents_throttled,
            "agents chunk 8" => conv5x5_agents_chunked,
        ),
        cpu_check: size != Size::Benchmark,
        check: |w, outputs| {
            let want = reference::conv5x5(&floats(w, 0), &filter(w, 1), scalar(w, 3), scalar(w, 4));
            expect_all("output", &outputs[0], &want)
        },
    }
}

/// The 5x5 convolution staged in shared memory
/// (`kernels::conv::conv5x5_tiled`), on `conv5x5`'s image and filter: the
/// same outputs, bit for bit.
fn conv5x5_tiled(size: Size) -> Workload {
    let plain = conv5x5(size);
    let (width, height) = (scalar(&plain, 3) as u32, scalar(&plain, 4) as u32);
    let [tile_x, tile_y] = kernels::conv::TILED_OUTPUTS;
    let [threads_x, threads_y] = kernels::conv::TILED_THREADS;
    Workload {
        name: "conv5x5_tiled",
        shape: LaunchConfig::new(
            [width.div_ceil(tile_x), height.div_ceil(tile_y), 1],
            [threads_x, threads_y, 1],
        ),
        variants: variants!(kernels::conv; conv5x5_tiled (0, 1, 2, 3, 4);),
        ..plain
    }
}

fn kmeans_assign(size: Size) -> Workload {
    let (points, features, clusters): (u32, u32, u32) = match size {
        Size::Test => (1000, 8, 5),
        // The benchmark's features and clusters, fewer points: a point
        // spans a line at 32 features, so each warp load looks up 32 lines
        // as at the benchmark (16 at 16 features: the predictor's L1 bound
        // was half the time ncu measured, docs/PREDICTION.md).
        Size::Simulate => (1 << 14, 32, 16),
        Size::Benchmark => (1 << 21, 32, 16),
    };
    let len = (points * features) as usize;
    let centroids = (clusters * features) as usize;
    Workload {
        name: "kmeans_assign",
        class: Class::Algorithm,
        problem: format!("{points} points x {features} features, k = {clusters}"),
        shape: LaunchConfig::linear(points as u64, kernels::kmeans::KMEANS_BLOCK),
        buffers: vec![
            Buffer::floats("points", len, random_floats(7)),
            Buffer::floats("centroids", centroids, random_floats(8)),
            Buffer::output_u32("membership", points as usize),
        ],
        args: vec![
            Arg::Buffer(0),
            Arg::Buffer(1),
            Arg::Buffer(2),
            Arg::U32(points),
            Arg::U32(features),
            Arg::U32(clusters),
        ],
        variants: variants!(kernels::kmeans; kmeans_assign (0, 1, 2, 3, 4, 5);
            "redirect" => kmeans_assign_redirect,
            "grid-stride" => kmeans_assign_stride,
            "grid-stride 4 waves" => kmeans_assign_stride_waves4,
            "agents" => kmeans_assign_agents,
            "agents, 4 active" => kmeans_assign_agents_throttled,
            "agents chunk 8" => kmeans_assign_agents_chunked,
        ),
        cpu_check: size != Size::Benchmark,
        check: |w, outputs| {
            let want = reference::kmeans_assign(&floats(w, 0), &floats(w, 1), scalar(w, 4));
            if outputs[0] == want {
                Ok(())
            } else {
                let i = outputs[0]
                    .iter()
                    .zip(&want)
                    .position(|(a, b)| a != b)
                    .unwrap_or(0);
                Err(format!(
                    "membership[{i}] = {}, expected {}",
                    outputs[0][i], want[i]
                ))
            }
        },
    }
}

fn syrk(size: Size) -> Workload {
    let (n, m): (u32, u32) = match size {
        Size::Test => (40, 24),
        Size::Simulate => (192, 192),
        Size::Benchmark => (2048, 2048),
    };
    let (alpha, beta) = (1.5f32, 1.2f32);
    Workload {
        name: "syrk",
        class: Class::CacheLine,
        problem: format!("n = {n}, m = {m}"),
        shape: LaunchConfig::planar(n, n, [kernels::syrk::SYRK_BLOCK; 2]),
        buffers: vec![
            Buffer::floats("a", (n * m) as usize, random_floats(9)),
            Buffer {
                output: true,
                ..Buffer::floats("c", (n * n) as usize, random_floats(10))
            },
        ],
        args: vec![
            Arg::Buffer(0),
            Arg::Buffer(1),
            Arg::F32(alpha),
            Arg::F32(beta),
            Arg::U32(n),
            Arg::U32(m),
        ],
        variants: variants!(kernels::syrk; syrk (0, 1, 2, 3, 4, 5);
            "raster G=16" => syrk_raster16,
            "redirect rows" => syrk_redirect_rows,
            "redirect columns" => syrk_redirect_columns,
            "agents tile(4,4)" => syrk_agents,
            "agents tile(4,4), 4 active" => syrk_agents_throttled,
        ),
        cpu_check: size != Size::Benchmark,
        check: |w, outputs| {
            let mut c = floats(w, 1);
            reference::syrk(
                &floats(w, 0),
                &mut c,
                float_arg(w, 2),
                float_arg(w, 3),
                scalar(w, 4),
                scalar(w, 5),
            );
            expect_all("c", &outputs[0], &c)
        },
    }
}

/// The two ATAX passes over one `nx x ny` matrix: `vector` (x or tmp, one
/// element per row) and one output per row (`rows`) or per column.
fn atax(size: Size, rows: bool) -> Workload {
    let (nx, ny) = match size {
        Size::Test => (300, 200),
        Size::Simulate => (2048, 1024),
        Size::Benchmark => (16384, 16384),
    };
    let len = (nx * ny) as usize;
    let (vector_len, outputs) = if rows { (ny, nx) } else { (nx, ny) };
    Workload {
        name: if rows { "atax_rows" } else { "atax_columns" },
        class: Class::CacheLine,
        problem: format!("{nx} x {ny}"),
        shape: LaunchConfig::linear(outputs as u64, kernels::atax::ATAX_BLOCK),
        buffers: vec![
            Buffer::floats("a", len, random_floats(11)),
            Buffer::floats(
                if rows { "x" } else { "tmp" },
                vector_len as usize,
                random_floats(12),
            ),
            Buffer::output(if rows { "tmp" } else { "y" }, outputs as usize),
        ],
        args: vec![
            Arg::Buffer(0),
            Arg::Buffer(1),
            Arg::Buffer(2),
            Arg::U32(nx),
            Arg::U32(ny),
        ],
        variants: if rows {
            variants!(kernels::atax; atax_rows (0, 1, 2, 3, 4);
                "redirect" => atax_rows_redirect,
                "agents" => atax_rows_agents,
                "agents, 4 active" => atax_rows_agents_throttled,
                "agents chunk 8" => atax_rows_agents_chunked,
            )
        } else {
            variants!(kernels::atax; atax_columns (0, 1, 2, 3, 4);
                "redirect" => atax_columns_redirect,
                "agents" => atax_columns_agents,
                "agents chunk 8" => atax_columns_agents_chunked,
                "agents chunk 8, bypass" => atax_columns_agents_bypass,
            )
        },
        cpu_check: true,
        check: check_atax,
    }
}

/// Every ATAX workload's check: its pass's reference, in the order its
/// kernel adds (the GEMVs' blocks fix theirs).
fn check_atax(w: &Workload, outputs: &[Vec<u32>]) -> Result<(), String> {
    let (a, vector, nx, ny) = (floats(w, 0), floats(w, 1), scalar(w, 3), scalar(w, 4));
    let want = match w.name {
        "atax_rows" => reference::atax_rows(&a, &vector, nx, ny),
        "atax_columns" => reference::atax_columns(&a, &vector, nx, ny),
        "atax_rows_gemv" => {
            let block = kernels::atax::ATAX_BLOCK as usize;
            reference::atax_rows_gemv(&a, &vector, nx, ny, block)
        }
        "atax_columns_gemv" => {
            let groups = kernels::atax::GEMVT_GROUPS as usize;
            reference::atax_columns_gemv(&a, &vector, nx, ny, groups)
        }
        other => unreachable!("{other} is not an ATAX workload"),
    };
    expect_all(w.buffers[2].name, &outputs[0], &want)
}

/// ATAX's row pass with a block per row (`kernels::atax::atax_rows_gemv`),
/// on `atax_rows`' matrix and vector.
fn atax_rows_gemv(size: Size) -> Workload {
    let rows = atax(size, true);
    let nx = scalar(&rows, 3);
    let block = kernels::atax::ATAX_BLOCK;
    Workload {
        name: "atax_rows_gemv",
        class: Class::Streaming,
        shape: LaunchConfig::linear(nx as u64 * u64::from(block), block),
        variants: variants!(kernels::atax; atax_rows_gemv (0, 1, 2, 3, 4);),
        ..rows
    }
}

/// ATAX's column pass as a transposed GEMV
/// (`kernels::atax::atax_columns_gemv`), on `atax_columns`' matrix and
/// vector (every size's row length is a multiple of 4).
fn atax_columns_gemv(size: Size) -> Workload {
    let columns = atax(size, false);
    let ny = scalar(&columns, 4) as u32;
    // The kernel reads a row 16 bytes at a time (its precondition).
    assert_eq!(
        ny % 4,
        0,
        "atax_columns_gemv needs ny, the row length, a multiple of 4"
    );
    let (groups, per_block) = (kernels::atax::GEMVT_GROUPS, kernels::atax::GEMVT_COLUMNS);
    Workload {
        name: "atax_columns_gemv",
        class: Class::Streaming,
        shape: LaunchConfig::new([ny.div_ceil(per_block), 1, 1], [32, groups, 1]),
        variants: variants!(kernels::atax; atax_columns_gemv (0, 1, 2, 3, 4);),
        ..columns
    }
}

fn black_scholes(size: Size) -> Workload {
    black_scholes_workload(size, false)
}

fn black_scholes_fast(size: Size) -> Workload {
    black_scholes_workload(size, true)
}

/// Black-Scholes with exact `exp`, `ln`, `sqrt`, or (`fast`) the SDK
/// sample's fast intrinsics: the same options either way.
fn black_scholes_workload(size: Size, fast: bool) -> Workload {
    let n: u32 = match size {
        Size::Test => 3000,
        Size::Simulate => 1 << 17,
        Size::Benchmark => 1 << 26,
    };
    let len = n as usize;
    let (price, strike, years) = (random_floats(14), random_floats(15), random_floats(16));
    let variants = if fast {
        variants!(kernels::black_scholes; black_scholes_fast (0, 1, 2, 3, 4, 5, 6, 7);
            "persistent chunk 8" => black_scholes_fast_persistent,
        )
    } else {
        variants!(kernels::black_scholes; black_scholes (0, 1, 2, 3, 4, 5, 6, 7);
            "redirect" => black_scholes_redirect,
            "agents" => black_scholes_agents,
            "agents chunk 8" => black_scholes_agents_chunked,
            "agents chunk 8, bypass" => black_scholes_agents_bypass,
            "persistent chunk 8" => black_scholes_persistent,
            "persistent chunk 4" => black_scholes_persistent4,
            "grid-stride" => black_scholes_stride,
            "grid-stride, prefetch L2" => black_scholes_stride_prefetch,
            "grid-stride 4 waves" => black_scholes_stride_waves4,
        )
    };
    Workload {
        name: if fast {
            "black_scholes_fast"
        } else {
            "black_scholes"
        },
        class: Class::Streaming,
        problem: format!("{n} options"),
        shape: LaunchConfig::linear(n as u64, kernels::black_scholes::BLACK_SCHOLES_BLOCK),
        buffers: vec![
            Buffer::output("call", len),
            Buffer::output("put", len),
            // The SDK's ranges: price 5..30, strike 1..100, years 0.25..10.
            Buffer::floats("price", len, |i| 17.5 + 12.5 * price(i)),
            Buffer::floats("strike", len, |i| 50.5 + 49.5 * strike(i)),
            Buffer::floats("years", len, |i| 5.125 + 4.875 * years(i)),
        ],
        args: vec![
            Arg::Buffer(0),
            Arg::Buffer(1),
            Arg::Buffer(2),
            Arg::Buffer(3),
            Arg::Buffer(4),
            Arg::F32(0.02),
            Arg::F32(0.30),
            Arg::U32(n),
        ],
        variants,
        cpu_check: size != Size::Benchmark,
        check: if fast {
            |w, outputs| {
                let (price, strike) = (floats(w, 2), floats(w, 3));
                let (call, put) = reference::black_scholes_fast(
                    &price,
                    &strike,
                    &floats(w, 4),
                    float_arg(w, 5),
                    float_arg(w, 6),
                );
                // The GPU's approximations against the host's math: a few
                // ulp in each, at most 5e-5 of the prices' scale in all.
                let tolerance = |i: usize| 5e-5 * (price[i] + strike[i]);
                expect_close("call", &outputs[0], &call, tolerance)?;
                expect_close("put", &outputs[1], &put, tolerance)
            }
        } else {
            |w, outputs| {
                let (call, put) = reference::black_scholes(
                    &floats(w, 2),
                    &floats(w, 3),
                    &floats(w, 4),
                    float_arg(w, 5),
                    float_arg(w, 6),
                );
                expect_all("call", &outputs[0], &call)?;
                expect_all("put", &outputs[1], &put)
            }
        },
    }
}

/// An input image, an output image and `(input, output, width, height)`:
/// the buffers and arguments of the transpose and the 2D stencil.
fn image_in_image_out(width: u32, height: u32, seed: u64) -> (Vec<Buffer>, Vec<Arg>) {
    let len = (width as usize) * (height as usize);
    let buffers = vec![
        Buffer::floats("input", len, random_floats(seed)),
        Buffer::output("output", len),
    ];
    let args = vec![
        Arg::Buffer(0),
        Arg::Buffer(1),
        Arg::U32(width),
        Arg::U32(height),
    ];
    (buffers, args)
}

/// The naive transpose: 16384^2 in 32x8 CTAs, or (`wide`) a 524288-wide,
/// 2048-high matrix whose grid row touches more lines than the L2 holds.
fn transpose(size: Size, wide: bool) -> Workload {
    let (width, height): (u32, u32) = match (size, wide) {
        (Size::Test, false) => (64, 40),
        (Size::Test, true) => (256, 16),
        (Size::Simulate, false) => (1024, 512),
        (Size::Simulate, true) => (65536, 32),
        (Size::Benchmark, false) => (16384, 16384),
        (Size::Benchmark, true) => (524288, 2048),
    };
    let (buffers, args) = image_in_image_out(width, height, 17);
    Workload {
        name: if wide { "transpose_wide" } else { "transpose" },
        class: Class::Algorithm,
        problem: format!("{width} x {height}"),
        shape: LaunchConfig::planar(width, height, [32, 8]),
        buffers,
        args,
        variants: variants!(kernels::transpose; transpose_naive (0, 1, 2, 3);
            "raster G=4" => transpose_naive_raster4,
            "raster G=2" => transpose_naive_raster2,
            "raster G=4 along y" => transpose_naive_raster4_y,
            "redirect rows" => transpose_naive_redirect_rows,
            "redirect columns" => transpose_naive_redirect_columns,
            "agents chunk 8" => transpose_naive_agents_chunked,
            "agents chunk 8, bypass" => transpose_naive_agents_bypass,
            "persistent G=4" => transpose_naive_persistent4,
            "grid-stride G=4" => transpose_naive_stride4,
        )
        .into_iter()
        .chain({
            use kernels::transpose as m;
            launch_bands!(m, transpose_naive, transpose_naive_raster4, (0, 1, 2, 3);
                "raster band 1 at launch" => RasterGroup::Ctas(1),
                "raster band 8 at launch" => RasterGroup::Ctas(8),
                "raster band from occupancy" => RasterGroup::FromOccupancy,
            )
        })
        .collect(),
        cpu_check: size != Size::Benchmark,
        check: |w, outputs| {
            let want = reference::transpose(&floats(w, 0), scalar(w, 2), scalar(w, 3));
            expect_all("output", &outputs[0], &want)
        },
    }
}

/// The transposes staged through shared memory
/// (`kernels::transpose::transpose_tiled`), on `transpose`'s images.
fn transpose_tiled(size: Size, wide: bool) -> Workload {
    let naive = transpose(size, wide);
    let (width, height) = (scalar(&naive, 2) as u32, scalar(&naive, 3) as u32);
    let tile = kernels::transpose::TRANSPOSE_TILE;
    Workload {
        name: if wide {
            "transpose_wide_tiled"
        } else {
            "transpose_tiled"
        },
        shape: LaunchConfig::new(
            [width.div_ceil(tile), height.div_ceil(tile), 1],
            [tile, kernels::transpose::TRANSPOSE_ROWS, 1],
        ),
        variants: variants!(kernels::transpose; transpose_tiled (0, 1, 2, 3);),
        ..naive
    }
}

fn jacobi5(size: Size) -> Workload {
    let (width, height): (u32, u32) = match size {
        Size::Test => (40, 24),
        Size::Simulate => (1024, 256),
        Size::Benchmark => (32768, 16384),
    };
    let (buffers, args) = image_in_image_out(width, height, 18);
    Workload {
        name: "jacobi5",
        class: Class::Algorithm,
        problem: format!("{width} x {height}"),
        shape: LaunchConfig::planar(width, height, [32, 8]),
        buffers,
        args,
        variants: variants!(kernels::jacobi5; jacobi5 (0, 1, 2, 3);
            "redirect rows" => jacobi5_redirect_rows,
            "redirect columns" => jacobi5_redirect_columns,
            "raster G=2" => jacobi5_raster2,
            "agents" => jacobi5_agents,
            "agents chunk 8" => jacobi5_agents_chunked,
            "agents chunk 8, 4 active" => jacobi5_agents_chunked_throttled,
            "persistent chunk 8" => jacobi5_persistent,
            "persistent chunk 4" => jacobi5_persistent4,
            "grid-stride" => jacobi5_stride,
            "grid-stride, prefetch L2" => jacobi5_stride_prefetch,
            "grid-stride 4 waves, prefetch L2" => jacobi5_stride_prefetch_waves4,
            "grid-stride, generated prefetch" => jacobi5_stride_prefetch_auto,
        ),
        cpu_check: size != Size::Benchmark,
        check: |w, outputs| {
            let want = reference::jacobi5(&floats(w, 0), scalar(w, 2), scalar(w, 3));
            expect_all("output", &outputs[0], &want)
        },
    }
}

/// The 5-point sweep with each thread walking rows
/// (`kernels::jacobi5::jacobi5_march`): the paper's image and check; two
/// rows per walk at the test size, so that the tests' walks start and end
/// inside the grid, and the benchmark's 32 at the simulator's.
fn jacobi5_march(size: Size) -> Workload {
    let paper = jacobi5(size);
    let [width, height] = [2, 3].map(|i| scalar(&paper, i) as u32);
    let rows = if size == Size::Test { 2 } else { 32 };
    let mut args = paper.args.clone();
    args.push(Arg::U32(rows));
    Workload {
        name: "jacobi5_march",
        shape: LaunchConfig::new([width.div_ceil(256), height.div_ceil(rows), 1], [256, 1, 1]),
        args,
        variants: variants!(kernels::jacobi5; jacobi5_march (0, 1, 2, 3, 4);),
        ..paper
    }
}

/// The row walk with four columns per thread, 16-byte accesses
/// (`kernels::jacobi5::jacobi5_march4`): the walk's rows, image and check
/// (every size's width is a multiple of 4).
fn jacobi5_march4(size: Size) -> Workload {
    let walk = jacobi5_march(size);
    let [width, height, rows] = [2, 3, 4].map(|i| scalar(&walk, i) as u32);
    // The kernel's quads cover a row whole only then (its precondition).
    assert_eq!(
        width % 4,
        0,
        "jacobi5_march4 needs a width that is a multiple of 4"
    );
    Workload {
        name: "jacobi5_march4",
        shape: LaunchConfig::new(
            [width.div_ceil(4 * 256), height.div_ceil(rows), 1],
            [256, 1, 1],
        ),
        variants: variants!(kernels::jacobi5; jacobi5_march4 (0, 1, 2, 3, 4);),
        ..walk
    }
}

fn jacobi7_3d(size: Size) -> Workload {
    let (nx, ny, nz): (u32, u32, u32) = match size {
        Size::Test => (40, 16, 6),
        Size::Simulate => (128, 64, 24),
        Size::Benchmark => (512, 512, 512),
    };
    let len = (nx * ny * nz) as usize;
    Workload {
        name: "jacobi7_3d",
        class: Class::Algorithm,
        problem: format!("{nx} x {ny} x {nz}"),
        shape: LaunchConfig::new([nx.div_ceil(32), ny.div_ceil(8), nz], [32, 8, 1]),
        buffers: vec![
            Buffer::floats("input", len, random_floats(19)),
            Buffer::output("output", len),
        ],
        args: vec![
            Arg::Buffer(0),
            Arg::Buffer(1),
            Arg::U32(nx),
            Arg::U32(ny),
            Arg::U32(nz),
            Arg::F32(0.4),
            Arg::F32(0.1),
        ],
        variants: variants!(kernels::jacobi7; jacobi7_3d (0, 1, 2, 3, 4, 5, 6);
            "redirect rows" => jacobi7_3d_redirect_rows,
            "redirect columns" => jacobi7_3d_redirect_columns,
            "agents" => jacobi7_3d_agents,
            "agents chunk 8" => jacobi7_3d_agents_chunked,
            "agents chunk 8, 4 active" => jacobi7_3d_agents_chunked_throttled,
            "persistent chunk 8" => jacobi7_3d_persistent,
            "persistent chunk 4" => jacobi7_3d_persistent4,
            "grid-stride" => jacobi7_3d_stride,
            "grid-stride 4 waves" => jacobi7_3d_stride_waves4,
        ),
        cpu_check: size != Size::Benchmark,
        check: |w, outputs| {
            let want = reference::jacobi7_3d(
                &floats(w, 0),
                scalar(w, 2),
                scalar(w, 3),
                scalar(w, 4),
                float_arg(w, 5),
                float_arg(w, 6),
            );
            expect_all("output", &outputs[0], &want)
        },
    }
}

/// The 7-point sweep with each thread walking z-planes
/// (`kernels::jacobi7::jacobi7_3d_march`): the paper's grid and check; two
/// planes per walk at the test size, so that the tests' walks start and
/// end inside the grid, and the benchmark's 32 at the simulator's (the
/// predictor takes the walk's length from its run).
fn jacobi7_3d_march(size: Size) -> Workload {
    let paper = jacobi7_3d(size);
    let [nx, ny, nz] = [2, 3, 4].map(|i| scalar(&paper, i) as u32);
    let planes = if size == Size::Test { 2 } else { 32 };
    let mut args = paper.args.clone();
    args.push(Arg::U32(planes));
    Workload {
        name: "jacobi7_3d_march",
        shape: LaunchConfig::new(
            [nx.div_ceil(32), ny.div_ceil(8), nz.div_ceil(planes)],
            [32, 8, 1],
        ),
        args,
        variants: variants!(kernels::jacobi7; jacobi7_3d_march (0, 1, 2, 3, 4, 5, 6, 7);),
        ..paper
    }
}

/// The z-walk with four x-columns per thread, 16-byte accesses
/// (`kernels::jacobi7::jacobi7_3d_march4`): the walk's planes, grid and
/// check (every size's `nx` is a multiple of 4).
fn jacobi7_3d_march4(size: Size) -> Workload {
    let walk = jacobi7_3d_march(size);
    let [nx, ny, nz, planes] = [2, 3, 4, 7].map(|i| scalar(&walk, i) as u32);
    assert_eq!(
        nx % 4,
        0,
        "jacobi7_3d_march4 needs an nx that is a multiple of 4"
    );
    Workload {
        name: "jacobi7_3d_march4",
        shape: LaunchConfig::new(
            [nx.div_ceil(4 * 32), ny.div_ceil(8), nz.div_ceil(planes)],
            [32, 8, 1],
        ),
        variants: variants!(kernels::jacobi7; jacobi7_3d_march4 (0, 1, 2, 3, 4, 5, 6, 7);),
        ..walk
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(only: Option<&str>) -> Result<Vec<&'static str>, String> {
        select(only).map(|b| b.iter().map(|(name, _)| *name).collect())
    }

    #[test]
    fn only_takes_a_comma_separated_list_in_suite_order() {
        let all = names(None).unwrap();
        assert_eq!(all.len(), WORKLOADS.len());
        let (first, second) = (all[0], all[1]);
        assert_eq!(names(Some(first)).unwrap(), [first]);
        let list = format!("{second}, {first},{second}");
        assert_eq!(names(Some(&list)).unwrap(), [first, second]);
    }

    #[test]
    fn only_names_every_unknown_kernel() {
        let list = format!("{},nope,,also_not", WORKLOADS[0].0);
        let error = names(Some(&list)).unwrap_err();
        assert!(error.contains(r#""nope", "", "also_not""#), "{error}");
        assert!(error.contains(WORKLOADS[0].0), "{error}");
    }

    /// Which kernels the CPU backend holds to a tolerance instead of the
    /// GPU's bits is read from their PTX: only the one written with the
    /// fast intrinsics (the exact kernels' math keeps the bits).
    #[test]
    fn only_the_intrinsics_kernel_is_approximate() {
        let ptx = clustered_predict::Module::parse(crate::PTX).unwrap();
        let approximate: Vec<&str> = all(Size::Test)
            .iter()
            .filter(|w| w.approximate(&ptx))
            .map(|w| w.name)
            .collect();
        assert_eq!(approximate, ["black_scholes_fast"]);
    }

    /// A label names one variant of a workload: the bench's records, the
    /// predictor's measured medians and its simulated traffic are keyed by
    /// it (an entry is not: a band or cluster variant shares its entry).
    #[test]
    fn labels_are_unique_within_a_workload() {
        for size in [Size::Test, Size::Simulate] {
            for (name, build) in WORKLOADS {
                let workload = build(size);
                let mut seen = std::collections::BTreeSet::new();
                for v in &workload.variants {
                    assert!(
                        seen.insert(v.label),
                        "{name} at {size:?}: `{}` twice",
                        v.label
                    );
                }
            }
        }
    }
}
