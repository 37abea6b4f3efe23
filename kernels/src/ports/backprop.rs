//! Rodinia `backprop`: the two kernels of one training step of the input
//! layer, `bpnn_layerforward_CUDA` and `bpnn_adjust_weights_cuda`.
//!
//! Source: Rodinia 3.1, `cuda/backprop/backprop_cuda_kernel.cu` (constants
//! from `backprop.h`, launches from `backprop_cuda.cu`; mirror: github
//! `yuhc/gpu-rodinia`). The host launches each once per training step, on
//! a grid of `1 x in / 16` blocks: at most 65535 blocks in y, so at most
//! `in = 1048560` inputs, a few tens of microseconds on an H100.

use clustered_device::clustered;
use clustered_device::shared_array;
use clustered_device::thread::{block_idx_y, sync_threads, thread_idx_x, thread_idx_y};

/// Block width (Rodinia's `WIDTH`): one thread per hidden unit; the kernels
/// assume `hid == 16`.
pub const BP_WIDTH: u32 = 16;
/// Block height (Rodinia's `HEIGHT`): input units per block.
pub const BP_HEIGHT: u32 = 16;
/// The learning rate, a `double` constant (`#define ETA 0.3`).
const ETA: f64 = 0.3;
/// The momentum, a `double` constant (`#define MOMENTUM 0.3`).
const MOMENTUM: f64 = 0.3;

/// Block `by`'s share of the forward pass: for its 16 inputs `r` and the 16
/// hidden units `c`, `w[r][c] = input_hidden[r][c] * input[r]`, then a tree
/// sum over `r` in shared memory (step `p = 2, 4, 8, 16`: rows that are
/// multiples of `p` add row `r + p/2`); writes every row's partial sums back
/// into `input_hidden` (as the original does) and the column sums to
/// `hidden_partial_sum[by * hid + c]`. Matrices are `(in + 1) x (hid + 1)`
/// row-major, row 0 and column 0 being the bias; `output_hidden` is unused
/// (as in the original).
///
/// The original's loop bound `__log2f(HEIGHT)` and step `__powf(2, i)` are
/// exactly 4 and `2^i`: a shift here.
///
/// Launch: block `16 x 16`, grid `1 x in / 16`.
///
/// Sharing: none between blocks beyond the lines at their boundaries (each
/// block's 16 rows are its own); streaming.
///
/// Variants: `_redirect`, `_stride` (grid-stride), `_agents_chunked` (8
/// blocks per claim).
///
/// # Safety
/// `hid == 16`; `input` holds `in + 1` floats, `input_hidden` `(in + 1) *
/// (hid + 1)`, `hidden_partial_sum` `in / 16 * hid`; the launch is the one
/// above.
#[clustered(auto)]
#[clustered(name = bpnn_layerforward_redirect, binding = redirect)]
#[clustered(name = bpnn_layerforward_stride, binding = stride)]
#[clustered(name = bpnn_layerforward_agents_chunked, binding = agents, chunk = 8)]
pub unsafe fn bpnn_layerforward(
    input_cuda: *const f32,
    _output_hidden_cuda: *mut f32,
    input_hidden_cuda: *mut f32,
    hidden_partial_sum: *mut f32,
    _in: u32,
    hid: u32,
) {
    let input_node = shared_array!(input_node: [f32; BP_HEIGHT as usize]);
    let weight_matrix = shared_array!(weight_matrix: [f32; (BP_HEIGHT * BP_WIDTH) as usize]);
    let by = block_idx_y();
    let (tx, ty) = (thread_idx_x(), thread_idx_y());
    let index = (hid + 1) * BP_HEIGHT * by + (hid + 1) * ty + tx + 1 + (hid + 1);
    let index_in = BP_HEIGHT * by + ty + 1;
    let cell = ty * BP_WIDTH + tx;

    if tx == 0 {
        input_node.write(ty, *input_cuda.add(index_in as usize));
    }
    sync_threads();
    weight_matrix.write(cell, *input_hidden_cuda.add(index as usize));
    sync_threads();
    weight_matrix.write(cell, weight_matrix.read(cell) * input_node.read(ty));
    sync_threads();
    for i in 1..=BP_HEIGHT.trailing_zeros() {
        let power_two = 1u32 << i;
        if ty % power_two == 0 {
            let below = (ty + power_two / 2) * BP_WIDTH + tx;
            weight_matrix.write(cell, weight_matrix.read(cell) + weight_matrix.read(below));
        }
        sync_threads();
    }
    *input_hidden_cuda.add(index as usize) = weight_matrix.read(cell);
    sync_threads();
    if tx == 0 {
        // `weight_matrix[tx][ty]` with `tx == 0`: row 0, the column sums.
        *hidden_partial_sum.add((by * hid + ty) as usize) = weight_matrix.read(tx * BP_WIDTH + ty);
    }
}

/// The weight update: for input `r = 16 by + ty + 1` and hidden unit
/// `c = tx + 1`, `w[r][c] += ETA * delta[c] * ly[r] + MOMENTUM * oldw[r][c]`
/// and `oldw[r][c]` becomes that step; block 0's first row of threads also
/// updates the bias row (`w[0][c]`, `oldw[0][c]`, with `ly = 1`). As in the
/// original, `ETA` and `MOMENTUM` are `double`, so each step is computed in
/// `double` from the `float` operands and rounded once into `w` (as
/// `w + step`) and once into `oldw`; the second statement re-reads its
/// operands (as the original's does).
///
/// Launch: block `16 x 16`, grid `1 x in / 16`.
///
/// Sharing: none between blocks but `delta` (17 floats, read by all) and
/// the lines at their boundaries; streaming.
///
/// Variants: `_redirect`, `_stride` (grid-stride), `_agents_chunked` (8
/// blocks per claim), `_persistent` (claims of 4); and with the prefetch
/// hook the macro writes (the next task's `w`, `oldw` and `ly` lines into
/// L2), `_stride_prefetch_auto`, `_tail_blocks_prefetch_auto` and
/// `_persistent_prefetch_auto`. Its 65535 tasks are tiny (two dependent
/// trips to memory each): without the prefetch every loop ran 0.69-0.91x
/// of the kernel on an H100, with it 0.96-1.02x (docs/BENCHMARKS.md,
/// "bpnn's loops with the next task prefetched").
///
/// # Safety
/// `hid == 16`; `delta` holds `hid + 1` floats, `ly` `in + 1`, `w` and
/// `oldw` `(in + 1) * (hid + 1)`; the launch is the one above.
#[clustered(auto)]
#[clustered(name = bpnn_adjust_weights_redirect, binding = redirect)]
#[clustered(name = bpnn_adjust_weights_stride, binding = stride)]
#[clustered(name = bpnn_adjust_weights_agents_chunked, binding = agents, chunk = 8)]
#[clustered(name = bpnn_adjust_weights_stride_prefetch_auto, binding = stride, prefetch = auto)]
#[clustered(name = bpnn_adjust_weights_tail_blocks_prefetch_auto, binding = stride, tail = blocks, prefetch = auto)]
#[clustered(name = bpnn_adjust_weights_persistent, binding = persistent, chunk = 4)]
#[clustered(name = bpnn_adjust_weights_persistent_prefetch_auto, binding = persistent, chunk = 4, prefetch = auto)]
pub unsafe fn bpnn_adjust_weights(
    delta: *const f32,
    hid: u32,
    ly: *const f32,
    _in: u32,
    w: *mut f32,
    oldw: *mut f32,
) {
    let by = block_idx_y();
    let (tx, ty) = (thread_idx_x(), thread_idx_y());
    let index = ((hid + 1) * BP_HEIGHT * by + (hid + 1) * ty + tx + 1 + (hid + 1)) as usize;
    let index_y = (BP_HEIGHT * by + ty + 1) as usize;
    let index_x = (tx + 1) as usize;

    *w.add(index) = (f64::from(*w.add(index))
        + (ETA * f64::from(*delta.add(index_x)) * f64::from(*ly.add(index_y))
            + MOMENTUM * f64::from(*oldw.add(index)))) as f32;
    *oldw.add(index) = (ETA * f64::from(*delta.add(index_x)) * f64::from(*ly.add(index_y))
        + MOMENTUM * f64::from(*oldw.add(index))) as f32;

    sync_threads();

    if ty == 0 && by == 0 {
        *w.add(index_x) = (f64::from(*w.add(index_x))
            + (ETA * f64::from(*delta.add(index_x)) + MOMENTUM * f64::from(*oldw.add(index_x))))
            as f32;
        *oldw.add(index_x) = (ETA * f64::from(*delta.add(index_x))
            + MOMENTUM * f64::from(*oldw.add(index_x))) as f32;
    }
}
