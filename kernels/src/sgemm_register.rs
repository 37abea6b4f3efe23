//! Register-tiled SGEMM: 128x128 tiles of `C` per CTA, 8x8 per thread.

use clustered_device::math::fma;
use clustered_device::memory::F32x4;
use clustered_device::shared::Shared;
use clustered_device::shared_array;
use clustered_device::thread::{block_idx_x, block_idx_y, sync_threads, thread_idx_x};
use clustered_device::{clustered, launch_bounds};

/// Rows of `C` per CTA of [`sgemm_register`](fn@sgemm_register).
pub const BM: u32 = 128;
/// Columns of `C` per CTA.
pub const BN: u32 = 128;
/// Depth of one k-step: the shared tiles are `BM x BK` of `A`, `BK x BN` of `B`.
pub const BK: u32 = 8;
/// Threads per CTA (one dimension): 16 x 16 threads of 8 x 8 outputs each.
pub const REGISTER_THREADS: u32 = 256;
/// Row stride of the transposed `A` tile in shared memory: `BM + 4`, so the
/// transposing stores are free of bank conflicts (a warp's 16 rows `r` and
/// two column halves `c` land in banks `(4 (c + j) + r) % 32`, all distinct)
/// and rows stay 16-byte aligned for `LDS.128`.
const A_STRIDE: u32 = BM + 4;
// The fragments are read as `F32x4`: rows of both tiles start 16 bytes apart.
const _: () = assert!(A_STRIDE.is_multiple_of(4) && BN.is_multiple_of(4));

/// `C = A * B` for row-major `n x n` matrices, `n` a multiple of 128.
///
/// Launch: block `256 x 1`, grid `(n / 128, n / 128)`; CTA `(bx, by)`
/// computes the 128x128 tile of `C` at rows `128 by ..`, columns `128 bx ..`.
///
/// Per k-step of 8: the CTA stages `A[rows][k0 .. k0+8]` transposed
/// (`a_tile[k][row]`) and `B[k0 .. k0+8][cols]` in shared memory; thread
/// `t` (`tx = t % 16`, `ty = t / 16`) keeps an 8x8 block of `C` in registers:
/// rows `4 ty + {0..3}` and `64 + 4 ty + {0..3}`, columns likewise with `tx`
/// (two 4-wide halves, so the `LDS.128` of a warp hit distinct banks), and
/// per `k` reads 8 `A` and 8 `B` values (4 `LDS.128`) for 64 `fma`s. The
/// next k-step's 8 global values per thread are loaded into registers before
/// the current one is computed (one shared buffer, two barriers per step).
/// ptxas (CUDA 13, `scripts/ptx-report.sh`; `tests/kernel_resources.rs`
/// counts the instructions): 121 registers under its launch bounds (2 CTAs
/// per SM), 512 FFMA and 32 `LDS.128` per k-step, no spills, no local
/// memory.
///
/// Written for the order nvcc gives its twin: the fragments are read as
/// [`F32x4`] (`ld.shared.v4.f32`) and `fma` is LLVM's, so each k's four
/// reads sit before its 64 FMAs (with scalar reads and an `asm` FMA, LLVM
/// hoisted all 128 reads of a k-step above its 512 FMAs: 3% slower than the
/// twin). `launch_bounds(256, 2)` gives every schedule the baseline's
/// register budget: without it ptxas gave the rasters and redirections 115
/// registers and sank the next step's global loads below the FMAs, 7-9%
/// slower than the baseline (docs/BENCHMARKS.md).
/// Each `C` element is `fma(A[row][k], B[k][col], acc)` for `k = 0 .. n` in
/// order, like [`sgemm_naive`](crate::sgemm_naive::sgemm_naive): the same
/// bits.
///
/// Sharing: as for every SGEMM, a grid row of CTAs reads the same 128 rows
/// of `A`, a grid column the same 128 columns of `B`. Register and shared
/// tiling make it far less L1-bound than the naive kernel; whether L2
/// locality then pays is what the variants measure (on the H100 only the
/// agents ever gained, 1.02x, and no longer do: docs/BENCHMARKS.md).
///
/// Variants:
/// - `_raster8`, `_raster16`: the grouped raster, `tile(1, G)` (GROUP_M = G);
///   with 128-wide tiles a grid has 32 (n = 4096) or 64 (8192) rows, so the
///   smaller groups of DESIGN.md's GROUP 16-32 (measured with 32x32 tiles).
/// - `_redirect_rows`, `_redirect_columns`: the paper's redirection, Y- and
///   X-partitioning.
/// - `_agents`: persistent agents, ACTIVE = MAX, clusters cut from 4x4 tiles
///   of CTAs. MAX is 2 per SM at 256 threads only within 128 registers; the
///   agent loop's own state once took this variant to 130 (1 per SM, 0.76x),
///   then to 128 once its ticket carried whole claims (2 per SM, 1.02x on
///   the H100), and to 129 since the leader claims after each chunk; the
///   launch bounds now hold it at 126 (no spills), as the loader's
///   `.maxnreg 128` did before them. Check `scripts/ptx-report.sh` before
///   reading its timings.
#[launch_bounds(max_threads = REGISTER_THREADS, min_blocks_per_sm = 2)]
#[clustered(name = sgemm_register_raster8, binding = reorder, indexing = tile(1, 8))]
#[clustered(name = sgemm_register_raster16, binding = reorder, indexing = tile(1, 16))]
#[clustered(name = sgemm_register_redirect_rows, binding = redirect, indexing = row_major)]
#[clustered(name = sgemm_register_redirect_columns, binding = redirect, indexing = column_major)]
#[clustered(name = sgemm_register_agents, binding = agents, indexing = tile(4, 4))]
// Its loads index in u32 on purpose: the loop runs n / 8 times and each
// address is one add from the last; rewritten with `index::at` and usize it
// ran 2.8% slower on an H100 (28.92 against 28.15 ms at n = 8192, two bench
// runs of one session, docs/BENCHMARKS.md).
#[allow(deprecated)]
#[clustered(auto)]
pub unsafe fn sgemm_register(a: *const f32, b: *const f32, c: *mut f32, n: u32) {
    let a_tile = shared_array!(a_tile: [f32; (BK * A_STRIDE) as usize]);
    let b_tile = shared_array!(b_tile: [f32; (BK * BN) as usize]);
    let t = thread_idx_x();
    let row0 = block_idx_y() * BM;
    let col0 = block_idx_x() * BN;
    // Loading: thread t moves A[row0 + t/2][k0 + 4 (t%2) + j] and
    // B[k0 + t/32][col0 + t%32 + 32 j], j = 0..4: four loads from one base
    // each (immediate offsets, few live registers); a warp's B load is one
    // full line, its A loads cover 16 full sectors.
    let (a_row, a_col) = (t / 2, t % 2 * 4);
    let (b_row, b_col) = (t / 32, t % 32);
    let a_from = (row0 + a_row) * n + a_col;
    let b_from = b_row * n + col0 + b_col;
    // Computing: the thread's 8x8 block of C.
    let (tx, ty) = (t % 16, t / 16);
    // 16-byte aligned: the tiles are, and rows are `A_STRIDE` / `BN` floats.
    let a_rows = a_tile.offset(ty * 4).cast::<F32x4>();
    let b_columns = b_tile.offset(tx * 4).cast::<F32x4>();

    let mut a_next = [0.0f32; 4];
    let mut b_next = [0.0f32; 4];
    for j in 0..4 {
        let j32 = j as u32;
        a_next[j] = *a.add((a_from + j32) as usize);
        b_next[j] = *b.add((b_from + 32 * j32) as usize);
    }
    let mut acc = [[0.0f32; 8]; 8];
    let mut k0 = 0;
    while k0 < n {
        // A goes in transposed: bank (4 (a_col + j) + a_row) % 32 differs
        // for the 32 threads of a warp, as does B's.
        for j in 0..4 {
            let j32 = j as u32;
            a_tile.write((a_col + j32) * A_STRIDE + a_row, a_next[j]);
            b_tile.write(b_row * BN + b_col + 32 * j32, b_next[j]);
        }
        sync_threads();
        // The next k-step's values, loaded before the math so that it hides
        // their latency. Unconditional (the last step reloads its own tile):
        // behind an `if`, ptxas sank the loads below the 512 FFMAs.
        let k1 = k0 + BK;
        let k_next = if k1 < n { k1 } else { k0 };
        for j in 0..4 {
            let j32 = j as u32;
            a_next[j] = *a.add((a_from + k_next + j32) as usize);
            b_next[j] = *b.add((b_from + k_next * n + 32 * j32) as usize);
        }
        // The 8 k of the tile, unrolled by hand (a loop let LLVM step one
        // pointer through the A tile at an offset that hid its 16-byte
        // alignment from ptxas: scalar LDS instead of LDS.128).
        multiply_k(&mut acc, a_rows, b_columns, 0);
        multiply_k(&mut acc, a_rows, b_columns, 1);
        multiply_k(&mut acc, a_rows, b_columns, 2);
        multiply_k(&mut acc, a_rows, b_columns, 3);
        multiply_k(&mut acc, a_rows, b_columns, 4);
        multiply_k(&mut acc, a_rows, b_columns, 5);
        multiply_k(&mut acc, a_rows, b_columns, 6);
        multiply_k(&mut acc, a_rows, b_columns, 7);
        sync_threads();
        k0 = k1;
    }
    for (i, values) in (0u32..).zip(&acc) {
        let row = row0 + (i / 4) * 64 + ty * 4 + i % 4;
        for (j, &value) in (0u32..).zip(values) {
            let col = col0 + (j / 4) * 64 + tx * 4 + j % 4;
            *c.add((row * n + col) as usize) = value;
        }
    }
}

/// One `k` of a shared tile: reads `A[4 ty + {0..3}, 64 + 4 ty + {0..3}][k]`
/// from `a_rows` (the transposed tile from the thread's first row) and
/// `B[k][4 tx + {0..3}, 64 + 4 tx + {0..3}]` from `b_columns`, four floats
/// at a time (4 `LDS.128`), and does the 64 `fma`s of the outer product.
#[inline(always)]
unsafe fn multiply_k(
    acc: &mut [[f32; 8]; 8],
    a_rows: Shared<F32x4>,
    b_columns: Shared<F32x4>,
    k: u32,
) {
    const A4: u32 = A_STRIDE / 4;
    const B4: u32 = BN / 4;
    let (F32x4(a0), F32x4(a1)) = (a_rows.read(k * A4), a_rows.read(k * A4 + 16));
    let (F32x4(b0), F32x4(b1)) = (b_columns.read(k * B4), b_columns.read(k * B4 + 16));
    let av = [a0[0], a0[1], a0[2], a0[3], a1[0], a1[1], a1[2], a1[3]];
    let bv = [b0[0], b0[1], b0[2], b0[3], b1[0], b1[1], b1[2], b1[3]];
    for (values, &a) in acc.iter_mut().zip(&av) {
        for (value, &b) in values.iter_mut().zip(&bv) {
            *value = fma(a, b, *value);
        }
    }
}
