//! Kernels that leave early and then wait at barriers: the most common
//! kernel shape (a tail guard before shared-memory work), which a persistent
//! schedule must run exactly like the plain kernel.

use clustered_device::clustered;
use clustered_device::shared_array;
use clustered_device::thread::*;

/// Rounds of [`ragged_sum`](fn@ragged_sum)'s exchange: each has two barriers.
pub const RAGGED_ROUNDS: u32 = 3;

/// `out[i] = in[i] + ...`: every live thread of a block adds, in
/// [`RAGGED_ROUNDS`] rounds through shared memory, its live neighbours'
/// values at distances 1, 2, 4 (wrapping among the live threads), then adds
/// its block index. Threads leave at once when `i >= n` (the tail guard,
/// in the last block) and, in block `ragged`, when they are in the upper
/// half (a block with early exits anywhere in the grid).
///
/// Live threads wait at six barriers after some threads of their block
/// have returned: on a GPU, returned threads of a plain kernel have exited
/// and no longer hold barriers up; in a persistent schedule they must keep
/// taking part until the task ends.
#[clustered(name = ragged_sum_reorder, binding = reorder, indexing = column_major)]
#[clustered(name = ragged_sum_redirect, binding = redirect)]
#[clustered(name = ragged_sum_agents, binding = agents)]
#[clustered(name = ragged_sum_agents_chunked, binding = agents, chunk = 3)]
#[clustered(name = ragged_sum_persistent, binding = persistent, indexing = column_major, chunk = 2)]
#[clustered(name = ragged_sum_stride, binding = stride)]
#[clustered(name = ragged_sum_stride_waves, binding = stride, waves = 2)]
#[clustered(name = ragged_sum_stride_tail, binding = stride, tail = claims)]
#[clustered(name = ragged_sum_stride_tail_blocks, binding = stride, tail = blocks)]
pub unsafe fn ragged_sum(input: *const u32, output: *mut u32, n: u32, ragged: u32) {
    let values = shared_array!(values: [u32; 256]);
    let t = thread_idx_x();
    let i = index_1d();
    let block = block_idx_x();
    let width = block_dim_x();
    let half = width / 2;
    if i >= n || (block == ragged && t >= half) {
        return;
    }
    let live = if block == ragged {
        half.min(n - block * width)
    } else {
        width.min(n - block * width)
    };
    let mut value = *input.add(i as usize);
    let mut distance = 1;
    for _ in 0..RAGGED_ROUNDS {
        values.write(t, value);
        sync_threads();
        value = value.wrapping_add(values.read((t + distance) % live));
        sync_threads();
        distance *= 2;
    }
    *output.add(i as usize) = value.wrapping_add(block);
}

/// `out[i] = 1000 x (every live `input[j]` of the block is odd) + block + t`
/// for `i < n`: one vote (`sync_threads_and`) per block, no early return
/// (threads past `n` vote true), so every persistent schedule may run it:
/// its threads all reach the vote, and the macro separates the tasks.
#[clustered(name = block_all_odd_reorder, binding = reorder)]
#[clustered(name = block_all_odd_agents, binding = agents, chunk = 2)]
#[clustered(name = block_all_odd_persistent, binding = persistent, indexing = column_major)]
#[clustered(name = block_all_odd_stride, binding = stride)]
#[clustered(name = block_all_odd_stride_tail, binding = stride, tail = claims)]
#[clustered(name = block_all_odd_stride_tail_blocks, binding = stride, tail = blocks)]
pub unsafe fn block_all_odd(input: *const u32, output: *mut u32, n: u32) {
    let i = index_1d();
    let odd = i >= n || *input.add(i as usize) % 2 == 1;
    let all = sync_threads_and(odd);
    if i < n {
        *output.add(i as usize) = 1000 * all as u32 + block_idx_x() + thread_idx_x();
    }
}
