//! The ported kernels (`kernels/src/ports/`) as workloads: inputs made the
//! way their hosts make them (random where they read files), their
//! original launches, their schedules and their checks.
//!
//! Each runs one launch of its host's loop. Every check is exact: the
//! kernels' `f32` (and `f64`) operations are mirrored in the references
//! (`reference::ports`), integers compare as integers. The benchmark sizes
//! take 0.5 ms or more on an H100 except backprop's two kernels, whose grid
//! is `1 x in / 16` blocks and so stops at 65535 blocks (as in Rodinia).

use clustered_host::LaunchConfig;

use super::workloads::{expect_all, expect_bits, float_arg, floats, random_floats, scalar};
use super::{variants, Arg, Buffer, Class, Elem, Size, Workload};
use crate::reference::ports as reference;

/// Deterministic words, different per `seed` (splitmix64's finaliser over
/// the index, as `random_floats`).
fn random_words(seed: u64) -> impl Fn(usize) -> u32 {
    let seed = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    move |i| {
        let mut z = (i as u64).wrapping_add(seed);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 32) as u32
    }
}

/// An input of `u32` words.
fn words(name: &'static str, words: Vec<u32>) -> Buffer {
    Buffer {
        name,
        words,
        elem: Elem::U32,
        output: false,
    }
}

/// An output that starts as `initial` (read and written by the kernel).
fn in_out(initial: Buffer) -> Buffer {
    Buffer {
        output: true,
        ..initial
    }
}

/// Compares integer outputs, naming the first difference.
fn expect_words(what: &str, got: &[u32], want: &[u32]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{what}: {} words, expected {}",
            got.len(),
            want.len()
        ));
    }
    match got.iter().zip(want).position(|(a, b)| a != b) {
        None => Ok(()),
        Some(i) => Err(format!("{what}[{i}] = {}, expected {}", got[i], want[i])),
    }
}

/// Rodinia hotspot: one launch with a pyramid of 2 steps (Rodinia's
/// `run` script: `hotspot 512 2 2 ..`).
pub(super) fn hotspot(size: Size) -> Workload {
    let (cols, rows): (u32, u32) = match size {
        Size::Test => (40, 28),
        Size::Simulate => (256, 256),
        Size::Benchmark => (16384, 16384),
    };
    let pyramid: u32 = 2;
    let block = kernels::ports::hotspot::HOTSPOT_BLOCK;
    let small = block - 2 * pyramid;
    let len = (cols * rows) as usize;
    let (cap, rx, ry, rz, step) = reference::hotspot_constants(cols as usize, rows as usize);
    let (temp, power) = (random_floats(40), random_floats(41));
    Workload {
        name: "hotspot",
        class: Class::Algorithm,
        problem: format!("{cols} x {rows}, pyramid {pyramid}"),
        shape: LaunchConfig::new(
            [cols.div_ceil(small), rows.div_ceil(small), 1],
            [block, block, 1],
        ),
        buffers: vec![
            // Rodinia's inputs: temperatures around 323-343 K, power up to
            // a few mW per cell.
            Buffer::floats("power", len, move |i| 0.002 * (1.0 + power(i))),
            Buffer::floats("temp_src", len, move |i| 333.0 + 10.0 * temp(i)),
            Buffer::output("temp_dst", len),
        ],
        args: vec![
            Arg::U32(pyramid),
            Arg::Buffer(0),
            Arg::Buffer(1),
            Arg::Buffer(2),
            Arg::U32(cols),
            Arg::U32(rows),
            Arg::U32(pyramid),
            Arg::U32(pyramid),
            Arg::F32(cap),
            Arg::F32(rx),
            Arg::F32(ry),
            Arg::F32(rz),
            Arg::F32(step),
            Arg::F32(0.001),
        ],
        variants: variants!(kernels::ports::hotspot; hotspot (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13);
            "redirect rows" => hotspot_redirect_rows,
            "redirect columns" => hotspot_redirect_columns,
            "raster G=2" => hotspot_raster2,
            "grid-stride" => hotspot_stride,
            "agents" => hotspot_agents,
        ),
        cpu_check: true,
        check: |w, outputs| {
            let constants = (
                float_arg(w, 8),
                float_arg(w, 9),
                float_arg(w, 10),
                float_arg(w, 11),
                float_arg(w, 12),
            );
            let want = reference::hotspot(
                &floats(w, 0),
                &floats(w, 1),
                scalar(w, 4),
                scalar(w, 5),
                scalar(w, 0),
                constants,
            );
            expect_all("temp_dst", &outputs[0], &want)
        },
    }
}

/// Rodinia pathfinder: one launch with a pyramid of 20 rows (Rodinia's
/// `run` script: `pathfinder 100000 100 20`).
pub(super) fn pathfinder(size: Size) -> Workload {
    let (cols, pyramid): (u32, u32) = match size {
        Size::Test => (1000, 5),
        Size::Simulate => (100_000, 20),
        Size::Benchmark => (1 << 24, 20),
    };
    let block = kernels::ports::pathfinder::PATHFINDER_BLOCK;
    let small = block - 2 * pyramid * kernels::ports::pathfinder::HALO;
    // Rodinia's walls: `rand() % 10`; the first row is the source.
    let wall = random_words(42);
    Workload {
        name: "pathfinder",
        class: Class::Algorithm,
        problem: format!("{cols} columns, pyramid {pyramid}"),
        shape: LaunchConfig::new([cols.div_ceil(small), 1, 1], [block, 1, 1]),
        buffers: vec![
            words(
                "wall",
                (0..(pyramid * cols) as usize)
                    .map(|i| wall(i + cols as usize) % 10)
                    .collect(),
            ),
            words("src", (0..cols as usize).map(|i| wall(i) % 10).collect()),
            Buffer::output_u32("results", cols as usize),
        ],
        args: vec![
            Arg::U32(pyramid),
            Arg::Buffer(0),
            Arg::Buffer(1),
            Arg::Buffer(2),
            Arg::U32(cols),
            Arg::U32(pyramid + 1),
            Arg::U32(0),
            Arg::U32(pyramid),
        ],
        variants: variants!(kernels::ports::pathfinder; pathfinder (0, 1, 2, 3, 4, 5, 6, 7);
            "redirect" => pathfinder_redirect,
            "grid-stride" => pathfinder_stride,
            "agents" => pathfinder_agents,
            "agents chunk 8" => pathfinder_agents_chunked,
        ),
        cpu_check: true,
        check: |w, outputs| {
            let want = reference::pathfinder(
                &w.buffers[0].words,
                &w.buffers[1].words,
                scalar(w, 4),
                scalar(w, 0),
            );
            expect_words("results", &outputs[0], &want)
        },
    }
}

/// Input units of backprop at a size: a multiple of 16, at most 65535 * 16
/// (the grid is `1 x in / 16`).
fn backprop_inputs(size: Size) -> u32 {
    match size {
        Size::Test => 16 * 8,
        Size::Simulate => 16 * 2048,
        Size::Benchmark => 16 * 65535,
    }
}

/// The launch of both backprop kernels.
fn backprop_shape(n_in: u32) -> LaunchConfig {
    let b = kernels::ports::backprop::BP_WIDTH;
    LaunchConfig::new(
        [1, n_in / b, 1],
        [b, kernels::ports::backprop::BP_HEIGHT, 1],
    )
}

/// Rodinia backprop's forward pass of the input layer (16 hidden units).
pub(super) fn bpnn_layerforward(size: Size) -> Workload {
    let n_in = backprop_inputs(size);
    let hid = kernels::ports::backprop::BP_WIDTH;
    Workload {
        name: "bpnn_layerforward",
        class: Class::Streaming,
        problem: format!("{n_in} inputs x {hid} hidden"),
        shape: backprop_shape(n_in),
        buffers: vec![
            // Rodinia's inputs and weights: `rand()` scaled to [0, 1].
            Buffer::floats("input", n_in as usize + 1, |i| {
                0.5 + 0.5 * random_floats(43)(i)
            }),
            Buffer::floats("output_hidden", hid as usize + 1, |_| 0.0),
            in_out(Buffer::floats(
                "input_hidden",
                (n_in as usize + 1) * (hid as usize + 1),
                |i| 0.5 + 0.5 * random_floats(44)(i),
            )),
            Buffer::output("hidden_partial_sum", (n_in / 16 * hid) as usize),
        ],
        args: vec![
            Arg::Buffer(0),
            Arg::Buffer(1),
            Arg::Buffer(2),
            Arg::Buffer(3),
            Arg::U32(n_in),
            Arg::U32(hid),
        ],
        variants: variants!(kernels::ports::backprop; bpnn_layerforward (0, 1, 2, 3, 4, 5);
            "redirect" => bpnn_layerforward_redirect,
            "grid-stride" => bpnn_layerforward_stride,
            "agents chunk 8" => bpnn_layerforward_agents_chunked,
        ),
        cpu_check: true,
        check: |w, outputs| {
            let mut weights = floats(w, 2);
            let sums = reference::bpnn_layerforward(&floats(w, 0), &mut weights, scalar(w, 4));
            expect_all("input_hidden", &outputs[0], &weights)?;
            expect_all("hidden_partial_sum", &outputs[1], &sums)
        },
    }
}

/// Rodinia backprop's weight update of the input layer.
pub(super) fn bpnn_adjust_weights(size: Size) -> Workload {
    let n_in = backprop_inputs(size);
    let hid = kernels::ports::backprop::BP_WIDTH;
    let weights = (n_in as usize + 1) * (hid as usize + 1);
    Workload {
        name: "bpnn_adjust_weights",
        class: Class::Streaming,
        problem: format!("{n_in} inputs x {hid} hidden"),
        shape: backprop_shape(n_in),
        buffers: vec![
            Buffer::floats("delta", hid as usize + 1, random_floats(45)),
            Buffer::floats("ly", n_in as usize + 1, |i| {
                0.5 + 0.5 * random_floats(46)(i)
            }),
            in_out(Buffer::floats("w", weights, random_floats(47))),
            in_out(Buffer::floats("oldw", weights, |i| {
                0.1 * random_floats(48)(i)
            })),
        ],
        args: vec![
            Arg::Buffer(0),
            Arg::U32(hid),
            Arg::Buffer(1),
            Arg::U32(n_in),
            Arg::Buffer(2),
            Arg::Buffer(3),
        ],
        variants: variants!(kernels::ports::backprop; bpnn_adjust_weights (0, 1, 2, 3, 4, 5);
            "redirect" => bpnn_adjust_weights_redirect,
            "grid-stride" => bpnn_adjust_weights_stride,
            "agents chunk 8" => bpnn_adjust_weights_agents_chunked,
            "grid-stride, generated prefetch" => bpnn_adjust_weights_stride_prefetch_auto,
            "tail as blocks, generated prefetch" => bpnn_adjust_weights_tail_blocks_prefetch_auto,
            "persistent chunk 4" => bpnn_adjust_weights_persistent,
            "persistent chunk 4, generated prefetch" => bpnn_adjust_weights_persistent_prefetch_auto,
        ),
        cpu_check: true,
        check: |w, outputs| {
            let (mut weights, mut old) = (floats(w, 2), floats(w, 3));
            reference::bpnn_adjust_weights(
                &floats(w, 0),
                &floats(w, 1),
                &mut weights,
                &mut old,
                scalar(w, 3),
            );
            expect_all("w", &outputs[0], &weights)?;
            expect_all("oldw", &outputs[1], &old)
        },
    }
}

/// Rodinia nn: distances of `n` records to one point.
pub(super) fn nn_euclid(size: Size) -> Workload {
    let n: u32 = match size {
        Size::Test => 5000,
        Size::Simulate => 1 << 18,
        Size::Benchmark => 1 << 27,
    };
    let block = kernels::ports::nn::NN_BLOCK;
    // The host's grid: at most `maxGridSize[0]` blocks in x (2^31 - 1 on
    // an H100, so one row of blocks).
    let blocks = n.div_ceil(block);
    let max_grid_x = i32::MAX as u32;
    let grid_y = blocks.div_ceil(max_grid_x);
    let grid_x = blocks.div_ceil(grid_y);
    let coordinate = random_floats(49);
    Workload {
        name: "nn_euclid",
        class: Class::Streaming,
        problem: format!("{n} records"),
        shape: LaunchConfig::new([grid_x, grid_y, 1], [block, 1, 1]),
        buffers: vec![
            // Hurricane records: latitude 0..90, longitude 0..360.
            Buffer::floats("locations", 2 * n as usize, move |i| {
                let unit = 0.5 + 0.5 * coordinate(i);
                if i % 2 == 0 {
                    90.0 * unit
                } else {
                    360.0 * unit
                }
            }),
            Buffer::output("distances", n as usize),
        ],
        args: vec![
            Arg::Buffer(0),
            Arg::Buffer(1),
            Arg::U32(n),
            Arg::F32(30.0),
            Arg::F32(90.0),
        ],
        variants: variants!(kernels::ports::nn; nn_euclid (0, 1, 2, 3, 4);
            "redirect" => nn_euclid_redirect,
            "grid-stride" => nn_euclid_stride,
            "persistent chunk 8" => nn_euclid_persistent,
            "agents chunk 8, bypass" => nn_euclid_agents_bypass,
        ),
        cpu_check: true,
        check: |w, outputs| {
            let want = reference::nn_euclid(&floats(w, 0), float_arg(w, 3), float_arg(w, 4));
            expect_all("distances", &outputs[0], &want)
        },
    }
}

/// SHOC triad over `n` floats (a multiple of the block).
pub(super) fn triad(size: Size) -> Workload {
    let block = kernels::ports::triad::TRIAD_BLOCK;
    let n: u32 = match size {
        Size::Test => block * 40,
        Size::Simulate => 1 << 18,
        Size::Benchmark => 1 << 28,
    };
    let (a, b) = (random_floats(50), random_floats(51));
    Workload {
        name: "triad",
        class: Class::Streaming,
        problem: format!("n = {n}"),
        shape: LaunchConfig::new([n / block, 1, 1], [block, 1, 1]),
        buffers: vec![
            // SHOC's inputs: `drand48() * 10`.
            Buffer::floats("a", n as usize, move |i| 5.0 + 5.0 * a(i)),
            Buffer::floats("b", n as usize, move |i| 5.0 + 5.0 * b(i)),
            Buffer::output("c", n as usize),
        ],
        args: vec![
            Arg::Buffer(0),
            Arg::Buffer(1),
            Arg::Buffer(2),
            Arg::F32(1.75),
        ],
        variants: variants!(kernels::ports::triad; triad (0, 1, 2, 3);
            "redirect" => triad_redirect,
            "grid-stride" => triad_stride,
            "persistent chunk 8" => triad_persistent,
            "agents chunk 8, bypass" => triad_agents_bypass,
        ),
        cpu_check: true,
        check: |w, outputs| {
            let want = reference::triad(&floats(w, 0), &floats(w, 1), float_arg(w, 3));
            expect_all("c", &outputs[0], &want)
        },
    }
}

/// Parboil stencil: one 7-point step of an `nx x ny x nz` grid.
pub(super) fn parboil_stencil(size: Size) -> Workload {
    let (nx, ny, nz): (u32, u32, u32) = match size {
        Size::Test => (70, 14, 5),
        Size::Simulate => (512, 128, 8),
        Size::Benchmark => (1024, 1024, 256),
    };
    use kernels::ports::stencil::{STENCIL_SHARED_BYTES, STENCIL_TX, STENCIL_TY};
    let len = (nx * ny * nz) as usize;
    let input = Buffer::floats("a0", len, random_floats(52));
    // The host copies `a0` into `anext` first: the border keeps it.
    let next = in_out(Buffer {
        name: "anext",
        ..input.clone()
    });
    Workload {
        name: "parboil_stencil",
        class: Class::Algorithm,
        problem: format!("{nx} x {ny} x {nz}"),
        shape: LaunchConfig::new(
            [nx.div_ceil(2 * STENCIL_TX), ny.div_ceil(STENCIL_TY), 1],
            [STENCIL_TX, STENCIL_TY, 1],
        )
        .with_dynamic_shared(STENCIL_SHARED_BYTES),
        buffers: vec![input, next],
        args: vec![
            Arg::F32(1.0 / 6.0),
            Arg::F32(1.0 / 6.0 / 6.0),
            Arg::Buffer(0),
            Arg::Buffer(1),
            Arg::U32(nx),
            Arg::U32(ny),
            Arg::U32(nz),
        ],
        variants: variants!(kernels::ports::stencil; parboil_stencil (0, 1, 2, 3, 4, 5, 6);
            "redirect rows" => parboil_stencil_redirect_rows,
            "redirect columns" => parboil_stencil_redirect_columns,
            "raster G=2" => parboil_stencil_raster2,
            "grid-stride" => parboil_stencil_stride,
            "agents" => parboil_stencil_agents,
        ),
        cpu_check: true,
        check: |w, outputs| {
            let want = reference::parboil_stencil(
                &floats(w, 0),
                scalar(w, 4),
                scalar(w, 5),
                scalar(w, 6),
                float_arg(w, 0),
                float_arg(w, 1),
            );
            expect_all("anext", &outputs[0], &want)
        },
    }
}

/// Nonzeros per row of the spmv matrix: 1 to this many.
const SPMV_MAX_ROW: u32 = 64;

/// Row `r`'s nonzeros, `(column, value)` in order: a length in `1 ..=
/// SPMV_MAX_ROW` and random columns (repeats allowed) of a `dim`-column
/// matrix.
fn spmv_row(dim: u32, r: usize) -> impl Iterator<Item = (u32, f32)> {
    let len = 1 + random_words(53)(r) % SPMV_MAX_ROW;
    let base = r * SPMV_MAX_ROW as usize;
    (0..len as usize).map(move |k| {
        (
            random_words(54)(base + k) % dim,
            random_floats(55)(base + k),
        )
    })
}

/// A `dim x dim` random sparse matrix in Parboil's JDS layout (rows sorted
/// by length, longest first; diagonal `k` holds the `k`-th nonzero of every
/// row that has one, padded with zeros to a multiple of 32 rows).
fn spmv_jds_matrix(dim: u32) -> Jds {
    let length = |r: usize| 1 + random_words(53)(r) % SPMV_MAX_ROW;
    // A stable counting sort by length, longest first.
    let mut perm: Vec<u32> = (0..dim).collect();
    perm.sort_by_key(|&r| std::cmp::Reverse(length(r as usize)));
    let depth = length(perm[0] as usize) as usize;
    let mut jds_ptr = Vec::with_capacity(depth);
    let mut counts = Vec::with_capacity(depth);
    let mut total = 0u32;
    for k in 0..depth as u32 {
        let rows = perm.partition_point(|&r| length(r as usize) > k) as u32;
        jds_ptr.push(total);
        counts.push(rows);
        total += rows.div_ceil(32) * 32;
    }
    let (mut data, mut index) = (vec![0.0f32; total as usize], vec![0u32; total as usize]);
    for (position, &r) in perm.iter().enumerate() {
        for (k, (column, value)) in spmv_row(dim, r as usize).enumerate() {
            let at = jds_ptr[k] as usize + position;
            data[at] = value;
            index[at] = column;
        }
    }
    let warps = dim.div_ceil(32) as usize;
    let zcnt = (0..warps).map(|w| length(perm[32 * w] as usize)).collect();
    Jds {
        data,
        index,
        perm,
        jds_ptr,
        zcnt,
    }
}

/// A matrix in JDS layout, as Parboil's `spmv` keeps it.
struct Jds {
    /// The values, diagonal after diagonal.
    data: Vec<f32>,
    /// Their columns.
    index: Vec<u32>,
    /// The original row of each sorted row.
    perm: Vec<u32>,
    /// Where each diagonal starts.
    jds_ptr: Vec<u32>,
    /// Each warp's diagonal count (its longest row's length).
    zcnt: Vec<u32>,
}

/// Parboil spmv (JDS): `y = A x` for a random `dim x dim` matrix of 1 to
/// 64 nonzeros per row.
pub(super) fn spmv_jds(size: Size) -> Workload {
    // At the simulator's size the gathered vector must outgrow L1 and fit
    // L2, as at the benchmark's (16 MiB against an SM's L1 of at most 256
    // KiB and a 50 MiB L2): 2^17 rows give 512 KiB against the simulated
    // L1's 156 KiB and the 8-SM slice's 3 MiB of L2. At 2^15 (128 KiB) it
    // fit in L1, and the predictor, reading that traffic, was 49% fast
    // (27-30% at this size; docs/PREDICTION.md).
    let dim: u32 = match size {
        Size::Test => 1000,
        Size::Simulate => 1 << 17,
        Size::Benchmark => 1 << 22,
    };
    let Jds {
        data,
        index,
        perm,
        jds_ptr,
        zcnt,
    } = spmv_jds_matrix(dim);
    // Parboil's `compute_active_thread` for compute capability >= 2 (1536
    // threads per SM, 8 blocks), with an H100's 132 SMs.
    let (pad, sms, max_thread, max_block) = (32u32, 132u32, 1536u32, 8u32);
    let task = zcnt.len() as u32;
    let (block, grid) = if task * pad > sms * max_thread {
        let block = max_thread / max_block;
        (block, (task * pad).div_ceil(block))
    } else {
        (pad, task)
    };
    Workload {
        name: "spmv_jds",
        class: Class::Data,
        problem: format!("{dim} rows, 1-{SPMV_MAX_ROW} nonzeros each"),
        shape: LaunchConfig::new([grid, 1, 1], [block, 1, 1]),
        buffers: vec![
            Buffer::output("dst_vector", dim as usize),
            Buffer::floats("data", data.len(), |i| data[i]),
            words("index", index),
            words("perm", perm),
            Buffer::floats("x_vec", dim as usize, random_floats(56)),
            words("nzcnt", zcnt.clone()),
            words("jds_ptr", jds_ptr),
            words("sh_zcnt", zcnt),
        ],
        args: vec![
            Arg::Buffer(0),
            Arg::Buffer(1),
            Arg::Buffer(2),
            Arg::Buffer(3),
            Arg::Buffer(4),
            Arg::Buffer(5),
            Arg::U32(dim),
            Arg::Buffer(6),
            Arg::Buffer(7),
        ],
        variants: variants!(kernels::ports::spmv_jds; spmv_jds (0, 1, 2, 3, 4, 5, 6, 7, 8);
            "redirect" => spmv_jds_redirect,
            "grid-stride" => spmv_jds_stride,
            "agents" => spmv_jds_agents,
            "agents, 4 active" => spmv_jds_agents_throttled,
        ),
        cpu_check: true,
        check: |w, outputs| {
            let dim = scalar(w, 6) as u32;
            if outputs[0].len() != dim as usize {
                return Err(format!(
                    "dst_vector: {} words, expected {dim}",
                    outputs[0].len()
                ));
            }
            let x = floats(w, 4);
            expect_bits("dst_vector", &outputs[0], |r| {
                Some(reference::spmv_row(spmv_row(dim, r), &x))
            })
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every port's check passes the baseline's outputs (run on the CPU
    /// backend) and rejects them with any one output word changed, and
    /// rejects outputs of the wrong length: a passing check in
    /// `tests/suite_cpu.rs` means something.
    #[test]
    fn every_port_check_rejects_one_wrong_word() {
        use crate::host::cpu::Dispatch;
        use crate::sim::DeviceProfile;
        let ports: [fn(Size) -> Workload; 8] = [
            hotspot,
            pathfinder,
            bpnn_layerforward,
            bpnn_adjust_weights,
            nn_euclid,
            triad,
            parboil_stencil,
            spmv_jds,
        ];
        let profile = DeviceProfile::h100_sxm().scaled(2).unwrap();
        for build in ports {
            let w = build(Size::Test);
            let run = crate::simulate::simulate(&w, &w.variants[0], &profile, Dispatch::RoundRobin)
                .unwrap_or_else(|e| panic!("{}: {e}", w.name));
            (w.check)(&w, &run.outputs).unwrap_or_else(|e| panic!("{}: {e}", w.name));
            for (o, output) in run.outputs.iter().enumerate() {
                // The last word, and one in the middle.
                for at in [output.len() - 1, output.len() / 2] {
                    let mut wrong = run.outputs.clone();
                    wrong[o][at] ^= 1;
                    assert!(
                        (w.check)(&w, &wrong).is_err(),
                        "{}: output {o} word {at} flipped passes",
                        w.name
                    );
                }
            }
            let short: Vec<Vec<u32>> = run.outputs.iter().map(|_| Vec::new()).collect();
            assert!(
                (w.check)(&w, &short).is_err(),
                "{}: empty outputs pass",
                w.name
            );
        }
    }

    /// The JDS layout holds every row's nonzeros where the kernel looks for
    /// them, its diagonals shrink, and each warp's count is its longest row.
    #[test]
    fn jds_matrix_holds_every_row() {
        let dim = 300;
        let Jds {
            data,
            index,
            perm,
            jds_ptr,
            zcnt,
        } = spmv_jds_matrix(dim);
        for (position, &r) in perm.iter().enumerate() {
            let row: Vec<_> = spmv_row(dim, r as usize).collect();
            assert!(row.len() as u32 <= zcnt[position / 32], "row {r}");
            for (k, (column, value)) in row.into_iter().enumerate() {
                let at = jds_ptr[k] as usize + position;
                assert_eq!(
                    (index[at], data[at]),
                    (column, value),
                    "row {r}, nonzero {k}"
                );
            }
        }
        assert!(jds_ptr.windows(3).all(|p| p[2] - p[1] <= p[1] - p[0]));
        assert_eq!(zcnt.len(), 10);
    }
}
