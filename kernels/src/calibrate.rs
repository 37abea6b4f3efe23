//! Calibration microbenchmarks: the kernels behind
//! `cargo run --release -p clustered-suite --example calibrate`, which
//! measures a GPU's figures for the static predictor (`clustered-predict`'s
//! device file). Not part of the suite: no schedule, nothing the bench times.
//!
//! Each kernel times itself with `%clock64` where a latency is wanted (one
//! thread or one warp, nothing else running), or records per warp which SM
//! it ran on and when, so the host can count cycles per SM; the host's
//! library (`clustered_suite::calibrate`) turns what they write into figures.
//! Every result a kernel computes is written out, so no load or arithmetic
//! can be removed by the compiler.

use clustered_device::kernel;
use clustered_device::math::fma;
use clustered_device::memory::load_bypass_l1;
use clustered_device::sm::{clock64, lane_id, sm_id};
use clustered_device::thread::{block_dim_x, block_idx_x, grid_dim_x, index_1d, thread_idx_x};

/// Dependent FMAs per iteration of [`fp32_chain`](fn@fp32_chain)'s loop.
pub const FP32_CHAIN_PER_ITERATION: u32 = 32;
/// Dependent integer instructions (an `xor`, then an `add`, 16 times) per
/// iteration of [`int_chain`](fn@int_chain)'s loop.
pub const INT_CHAIN_PER_ITERATION: u32 = 32;
/// Independent accumulators of [`fp32_throughput`](fn@fp32_throughput).
pub const FP32_THROUGHPUT_ACCUMULATORS: u32 = 8;
/// FMAs per thread per iteration of [`fp32_throughput`](fn@fp32_throughput)'s
/// loop (16 on each accumulator).
pub const FP32_THROUGHPUT_PER_ITERATION: u32 = 16 * FP32_THROUGHPUT_ACCUMULATORS;
/// `u64` words per warp in the stamps of
/// [`fp32_throughput`](fn@fp32_throughput): SM id, first clock, last clock.
pub const STAMP_WORDS: usize = 3;

/// Pointer chase through `next` (one thread: launch one block of one
/// thread): from `start`, `warm` dependent loads `j = next[j]` untimed (they
/// bring the chain into the caches), then `steps` more timed with
/// `%clock64`. Writes `out[0]` = the timed steps' cycles and `out[1]` = the
/// last index, which depends on every load.
///
/// Plain loads (`ld.global`, cached in L1): the L1 latency where the chain
/// fits L1. [`pointer_chase_l2`](fn@pointer_chase_l2) loads past L1.
///
/// # Safety
/// Every index the chain reaches from `start` is below `next`'s length, and
/// `out` holds 2 words.
#[kernel]
pub unsafe fn pointer_chase(next: *const u32, start: u32, warm: u32, steps: u32, out: *mut u64) {
    if index_1d() != 0 {
        return;
    }
    let mut j = start;
    for _ in 0..warm {
        j = *next.add(j as usize);
    }
    let begin = clock64();
    for _ in 0..steps {
        j = *next.add(j as usize);
    }
    // The store waits for the last load, so the clock below is read after it.
    *out.add(1) = u64::from(j);
    let end = clock64();
    *out = end - begin;
}

/// [`pointer_chase`](fn@pointer_chase) with every load past L1
/// (`ld.global.cg`): the L2 latency where the chain fits L2, the DRAM latency
/// where it does not.
///
/// # Safety
/// As [`pointer_chase`](fn@pointer_chase).
#[kernel]
pub unsafe fn pointer_chase_l2(next: *const u32, start: u32, warm: u32, steps: u32, out: *mut u64) {
    if index_1d() != 0 {
        return;
    }
    let mut j = start;
    for _ in 0..warm {
        j = load_bypass_l1(next.add(j as usize));
    }
    let begin = clock64();
    for _ in 0..steps {
        j = load_bypass_l1(next.add(j as usize));
    }
    *out.add(1) = u64::from(j);
    let end = clock64();
    *out = end - begin;
}

/// Eight dependent `fma.rn.f32`s: `x = x * a + b`.
#[inline(always)]
fn fma8(mut x: f32, a: f32, b: f32) -> f32 {
    x = fma(x, a, b);
    x = fma(x, a, b);
    x = fma(x, a, b);
    x = fma(x, a, b);
    x = fma(x, a, b);
    x = fma(x, a, b);
    x = fma(x, a, b);
    fma(x, a, b)
}

/// The value one thread of [`fp32_chain`](fn@fp32_chain) starts from.
#[inline(always)]
pub fn fp32_chain_seed(thread: u32) -> f32 {
    1.0 + thread as f32 / 64.0
}

/// A chain of `iters x 32` dependent `fma.rn.f32` per thread, timed with
/// `%clock64`: `cycles[t]` = its cycles, `out[t]` = the chain's value (from
/// [`fp32_chain_seed`]`(t)`). Launch one warp: nothing else competes for the
/// pipe, so the cycles per FMA are its dependent latency.
///
/// # Safety
/// `out` and `cycles` hold one element per launched thread.
#[kernel]
pub unsafe fn fp32_chain(iters: u32, a: f32, b: f32, out: *mut f32, cycles: *mut u64) {
    let t = index_1d();
    let mut x = fp32_chain_seed(t);
    let begin = clock64();
    for _ in 0..iters {
        x = fma8(fma8(fma8(fma8(x, a, b), a, b), a, b), a, b);
    }
    *out.add(t as usize) = x;
    let end = clock64();
    *cycles.add(t as usize) = end - begin;
}

/// Eight dependent integer steps `x = (x ^ a) + b`: 16 instructions, each
/// waiting for the one before (LLVM cannot fold an `xor` into a sum, nor
/// ptxas an `add` into a `LOP3`).
#[inline(always)]
pub fn xor_add8(mut x: u32, a: u32, b: u32) -> u32 {
    for _ in 0..8 {
        x = (x ^ a).wrapping_add(b);
    }
    x
}

/// A chain of `iters x 32` dependent integer instructions per thread
/// (`xor`, `add`, alternating), timed with `%clock64`: `cycles[t]` = its
/// cycles, `out[t]` = the chain's value (from `t`). Launch one warp.
///
/// # Safety
/// `out` and `cycles` hold one element per launched thread.
#[kernel]
pub unsafe fn int_chain(iters: u32, a: u32, b: u32, out: *mut u32, cycles: *mut u64) {
    let t = index_1d();
    let mut x = t;
    let begin = clock64();
    for _ in 0..iters {
        x = xor_add8(xor_add8(x, a, b), a, b);
    }
    *out.add(t as usize) = x;
    let end = clock64();
    *cycles.add(t as usize) = end - begin;
}

/// The value accumulator `k` of thread `t` of
/// [`fp32_throughput`](fn@fp32_throughput) starts from.
#[inline(always)]
pub fn fp32_throughput_seed(thread: u32, k: u32) -> f32 {
    (thread % 1024) as f32 / 1024.0 + k as f32
}

/// FP32 throughput: every thread runs [`FP32_THROUGHPUT_ACCUMULATORS`]
/// independent chains of `fma.rn.f32` (`acc = acc * a + b`), `iters x 16`
/// on each. `out[t]` = the sum of thread t's accumulators. Lane 0 of each
/// warp writes `stamps[3 w ..]` = its SM id, its first and its last
/// `%clock64` (warp `w` = global thread / 32: launch blocks of a multiple of
/// 32 threads). Launch enough warps to fill every SM: the host counts, per
/// SM, the warps' FMAs over the cycles from its first warp's start to its
/// last warp's end, and the clock from those cycles over the launch's time.
///
/// # Safety
/// `out` holds one element per launched thread, `stamps` 3 per warp.
#[kernel]
pub unsafe fn fp32_throughput(iters: u32, a: f32, b: f32, out: *mut f32, stamps: *mut u64) {
    let begin = clock64();
    let t = index_1d();
    let mut acc = [0.0f32; FP32_THROUGHPUT_ACCUMULATORS as usize];
    for (k, acc) in acc.iter_mut().enumerate() {
        *acc = fp32_throughput_seed(t, k as u32);
    }
    for _ in 0..iters {
        for _ in 0..16 {
            acc[0] = fma(acc[0], a, b);
            acc[1] = fma(acc[1], a, b);
            acc[2] = fma(acc[2], a, b);
            acc[3] = fma(acc[3], a, b);
            acc[4] = fma(acc[4], a, b);
            acc[5] = fma(acc[5], a, b);
            acc[6] = fma(acc[6], a, b);
            acc[7] = fma(acc[7], a, b);
        }
    }
    let sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    *out.add(t as usize) = sum;
    let end = clock64();
    if lane_id() == 0 {
        let stamp = stamps.add((t / 32) as usize * STAMP_WORDS);
        *stamp = u64::from(sm_id());
        *stamp.add(1) = begin;
        *stamp.add(2) = end;
    }
}

/// Bandwidth: all threads read `data[..n]` `passes` times, grid-stride,
/// past L1 (`ld.global.cg`, so repeated passes are served by L2, not by each
/// SM's L1), four independent loads in flight per thread. `sums[t]` = the
/// wrapping sum of what thread `t` read. On a buffer that fits L2, with
/// several passes, the L2 bandwidth; on one far larger than L2, one pass, the
/// DRAM read bandwidth.
///
/// # Safety
/// `data` holds `n` elements and `sums` one per launched thread.
#[kernel]
pub unsafe fn read_sum(data: *const u32, n: u32, passes: u32, sums: *mut u32) {
    let t = index_1d() as usize;
    let total = (grid_dim_x() * block_dim_x()) as usize;
    let n = n as usize;
    let (mut s0, mut s1, mut s2, mut s3) = (0u32, 0u32, 0u32, 0u32);
    for _ in 0..passes {
        let mut i = t;
        while i + 3 * total < n {
            s0 = s0.wrapping_add(load_bypass_l1(data.add(i)));
            s1 = s1.wrapping_add(load_bypass_l1(data.add(i + total)));
            s2 = s2.wrapping_add(load_bypass_l1(data.add(i + 2 * total)));
            s3 = s3.wrapping_add(load_bypass_l1(data.add(i + 3 * total)));
            i += 4 * total;
        }
        while i < n {
            s0 = s0.wrapping_add(load_bypass_l1(data.add(i)));
            i += total;
        }
    }
    *sums.add(t) = s0.wrapping_add(s1).wrapping_add(s2.wrapping_add(s3));
}

/// Words (4 bytes) of [`l1_scattered_loads`](fn@l1_scattered_loads)'s
/// buffer: 16 KiB (128 lines), which every SM's L1 holds.
pub const SCATTER_WORDS: u32 = 4096;
/// Loads per thread per iteration of
/// [`l1_scattered_loads`](fn@l1_scattered_loads)'s loop, independent of each
/// other.
pub const SCATTER_LOADS_PER_ITERATION: u32 = 8;

/// The word lane `lane` of a warp loads in step `step` of
/// [`l1_scattered_loads`](fn@l1_scattered_loads): lanes `stride` words
/// apart, from a base that moves 33 words a step (so it is rarely at a
/// line's start). `stride` 32 puts the lanes in 32 consecutive lines, 128
/// in lines 4 apart, 1 makes a coalesced load across 2 lines.
#[inline(always)]
pub fn scattered_word(lane: u32, step: u32, stride: u32) -> u32 {
    step.wrapping_mul(33)
        .wrapping_add(lane.wrapping_mul(stride))
        % SCATTER_WORDS
}

/// L1 lookups of loads whose lanes are in many lines: every thread loads
/// `iters x 8` words of `data` (`SCATTER_WORDS`, 16 KiB) with plain
/// `ld.global`, at [`scattered_word`]`(lane, step, stride)`, so they hit L1
/// after the first pass. `sums[t]` = the wrapping sum of what thread `t`
/// loaded; lane 0 of each warp writes `stamps[3 w ..]` = its SM id, first
/// and last `%clock64` (as [`fp32_throughput`](fn@fp32_throughput)).
/// Launch every SM full of warps: per SM, the warps' line lookups over its
/// cycles are the lines its L1 looks up per clock.
///
/// # Safety
/// `data` holds `SCATTER_WORDS` elements, `sums` one per launched thread,
/// `stamps` 3 per warp; blocks are a multiple of 32 threads.
#[kernel]
pub unsafe fn l1_scattered_loads(
    data: *const u32,
    stride: u32,
    iters: u32,
    sums: *mut u32,
    stamps: *mut u64,
) {
    let begin = clock64();
    let t = index_1d();
    let lane = lane_id();
    let mut sum = 0u32;
    for i in 0..iters {
        for u in 0..SCATTER_LOADS_PER_ITERATION {
            let word = scattered_word(lane, i * SCATTER_LOADS_PER_ITERATION + u, stride);
            sum = sum.wrapping_add(*data.add(word as usize));
        }
    }
    *sums.add(t as usize) = sum;
    let end = clock64();
    if lane == 0 {
        let stamp = stamps.add((t / 32) as usize * STAMP_WORDS);
        *stamp = u64::from(sm_id());
        *stamp.add(1) = begin;
        *stamp.add(2) = end;
    }
}

/// The word lane `lane` of warp `warp` stores in pass `pass` of
/// [`scattered_stores`](fn@scattered_stores), in a buffer of `rows` lines
/// (a power of two) of 32 words: 32 lanes in 32 different lines, one word
/// (4 bytes of a 32-byte sector) each, as a naive transpose stores.
#[inline(always)]
pub fn stored_word(warp: u32, lane: u32, pass: u32, rows: u32) -> u32 {
    let row = warp.wrapping_mul(32).wrapping_add(lane) & (rows - 1);
    let column = warp.wrapping_add(pass) % 32;
    row * 32 + column
}

/// The value [`scattered_stores`](fn@scattered_stores) stores at `word`,
/// whoever stores it: the buffer's final state does not depend on the
/// order of the stores.
#[inline(always)]
pub fn scattered_value(word: u32) -> u32 {
    word.wrapping_mul(0x9E37_79B9)
}

/// Partial-sector stores: every thread stores `passes` words of `data`
/// (`rows` lines of 32 words, `rows` a power of two), each lane of a warp in
/// its own line ([`stored_word`]): every warp store sends 32 sectors to
/// L2 with 4 of their 32 bytes written. On a buffer that fits L2, the time
/// per pass over many passes is what L2 takes per partial sector.
///
/// # Safety
/// `data` holds `rows x 32` elements; `rows` is a power of two.
#[kernel]
pub unsafe fn scattered_stores(data: *mut u32, rows: u32, passes: u32) {
    let t = index_1d();
    let (warp, lane) = (t / 32, lane_id());
    for pass in 0..passes {
        let word = stored_word(warp, lane, pass, rows);
        *data.add(word as usize) = scattered_value(word);
    }
}

/// Lane 0 of each warp writes `stamps[3 w ..]` = its SM id, `begin` and
/// `end` (warp `w` = global thread `t` / 32), as
/// [`fp32_throughput`](fn@fp32_throughput) does.
#[inline(always)]
unsafe fn stamp(stamps: *mut u64, t: u32, begin: u64, end: u64) {
    if lane_id() == 0 {
        let stamp = unsafe { stamps.add((t / 32) as usize * STAMP_WORDS) };
        unsafe {
            *stamp = u64::from(sm_id());
            *stamp.add(1) = begin;
            *stamp.add(2) = end;
        }
    }
}

/// Dependent instructions per iteration of the other classes' chains
/// ([`sfu_chain`](fn@sfu_chain), [`shared_chase`](fn@shared_chase),
/// [`atom_chase`](fn@atom_chase), [`barrier_chain`](fn@barrier_chain)).
pub const CHAIN_PER_ITERATION: u32 = 8;
/// Independent chains per thread of the throughput kernels
/// ([`int_throughput`](fn@int_throughput),
/// [`sfu_throughput`](fn@sfu_throughput),
/// [`shared_throughput`](fn@shared_throughput)).
pub const THROUGHPUT_CHAINS: u32 = 8;
/// Instructions of the class per thread per iteration of
/// [`int_throughput`](fn@int_throughput) (an `xor` and an `add`, 8 times
/// on each chain) and [`sfu_throughput`](fn@sfu_throughput) (8 on each).
pub const INT_THROUGHPUT_PER_ITERATION: u32 = 16 * THROUGHPUT_CHAINS;
/// See [`INT_THROUGHPUT_PER_ITERATION`].
pub const SFU_THROUGHPUT_PER_ITERATION: u32 = 8 * THROUGHPUT_CHAINS;
/// Words of the shared arrays of [`shared_chase`](fn@shared_chase) and
/// [`shared_throughput`](fn@shared_throughput): 16 KiB.
pub const SHARED_WORDS: u32 = 4096;

/// Eight dependent `rsqrt.approx.ftz.f32` (one `MUFU.RSQ` each): `x`
/// moves towards 1 and stays a normal number.
#[inline(always)]
fn rsqrt8(mut x: f32) -> f32 {
    use clustered_device::math::fast::rsqrt;
    x = rsqrt(x);
    x = rsqrt(x);
    x = rsqrt(x);
    x = rsqrt(x);
    x = rsqrt(x);
    x = rsqrt(x);
    x = rsqrt(x);
    rsqrt(x)
}

/// The value chain `k` of thread `t` of [`sfu_chain`](fn@sfu_chain) and
/// [`sfu_throughput`](fn@sfu_throughput) starts from.
#[inline(always)]
pub fn sfu_seed(thread: u32, k: u32) -> f32 {
    2.0 + (thread % 1024) as f32 / 256.0 + k as f32
}

/// What [`sfu_chain`](fn@sfu_chain) computes from `x` in `iters`
/// iterations (and each chain of [`sfu_throughput`](fn@sfu_throughput)).
#[inline(always)]
pub fn sfu_chain_value(mut x: f32, iters: u32) -> f32 {
    for _ in 0..iters {
        x = rsqrt8(x);
    }
    x
}

/// A chain of `iters x 8` dependent `rsqrt.approx.ftz.f32` per thread (the
/// special-function unit), timed with `%clock64`: `cycles[t]` = its
/// cycles, `out[t]` = the chain's value (from [`sfu_seed`]`(t, 0)`).
/// Launch one warp.
///
/// # Safety
/// `out` and `cycles` hold one element per launched thread.
#[kernel]
pub unsafe fn sfu_chain(iters: u32, out: *mut f32, cycles: *mut u64) {
    let t = index_1d();
    let mut x = sfu_seed(t, 0);
    let begin = clock64();
    for _ in 0..iters {
        x = rsqrt8(x);
    }
    *out.add(t as usize) = x;
    let end = clock64();
    *cycles.add(t as usize) = end - begin;
}

/// Special-function throughput: every thread runs [`THROUGHPUT_CHAINS`]
/// independent chains of `rsqrt.approx.ftz.f32`, `iters x 8` on each;
/// `out[t]` = the sum of thread t's chains, stamps as
/// [`fp32_throughput`](fn@fp32_throughput)'s. Launch every SM full.
///
/// # Safety
/// `out` holds one element per launched thread, `stamps` 3 per warp.
#[kernel]
pub unsafe fn sfu_throughput(iters: u32, out: *mut f32, stamps: *mut u64) {
    let begin = clock64();
    let t = index_1d();
    let mut x = [0.0f32; THROUGHPUT_CHAINS as usize];
    for (k, x) in x.iter_mut().enumerate() {
        *x = sfu_seed(t, k as u32);
    }
    for _ in 0..iters {
        x[0] = rsqrt8(x[0]);
        x[1] = rsqrt8(x[1]);
        x[2] = rsqrt8(x[2]);
        x[3] = rsqrt8(x[3]);
        x[4] = rsqrt8(x[4]);
        x[5] = rsqrt8(x[5]);
        x[6] = rsqrt8(x[6]);
        x[7] = rsqrt8(x[7]);
    }
    *out.add(t as usize) = ((x[0] + x[1]) + (x[2] + x[3])) + ((x[4] + x[5]) + (x[6] + x[7]));
    let end = clock64();
    stamp(stamps, t, begin, end);
}

/// Integer throughput: every thread runs [`THROUGHPUT_CHAINS`] independent
/// chains of `x = (x ^ a) + b` (`LOP3` and `VIADD` in sm_90 SASS), `iters x 16`
/// instructions on each; `out[t]` = the wrapping sum of thread t's chains
/// (chain `k` from `t + k`), stamps as
/// [`fp32_throughput`](fn@fp32_throughput)'s. Launch every SM full.
///
/// # Safety
/// `out` holds one element per launched thread, `stamps` 3 per warp.
#[kernel]
pub unsafe fn int_throughput(iters: u32, a: u32, b: u32, out: *mut u32, stamps: *mut u64) {
    let begin = clock64();
    let t = index_1d();
    let mut x = [0u32; THROUGHPUT_CHAINS as usize];
    for (k, x) in x.iter_mut().enumerate() {
        *x = t.wrapping_add(k as u32);
    }
    for _ in 0..iters {
        x[0] = xor_add8(x[0], a, b);
        x[1] = xor_add8(x[1], a, b);
        x[2] = xor_add8(x[2], a, b);
        x[3] = xor_add8(x[3], a, b);
        x[4] = xor_add8(x[4], a, b);
        x[5] = xor_add8(x[5], a, b);
        x[6] = xor_add8(x[6], a, b);
        x[7] = xor_add8(x[7], a, b);
    }
    *out.add(t as usize) = x.iter().fold(0u32, |s, &v| s.wrapping_add(v));
    let end = clock64();
    stamp(stamps, t, begin, end);
}

/// Pointer chase through shared memory: the block copies `next[..4096]`
/// (a chain over [`SHARED_WORDS`] slots) into a shared array, then thread
/// 0 follows it from `start`, `steps` dependent `ld.shared` (`j = s[j]`,
/// each with its address computation) timed with `%clock64`: `out[0]` = the cycles, `out[1]` = the last index.
/// Launch one block (any threads: they share the copy).
///
/// # Safety
/// `next` holds [`SHARED_WORDS`] indices below [`SHARED_WORDS`], and `out`
/// 2 words.
#[kernel]
pub unsafe fn shared_chase(next: *const u32, start: u32, steps: u32, out: *mut u64) {
    let slots = clustered_device::shared_array!(calibrate_chase: [u32; SHARED_WORDS as usize]);
    let mut i = index_1d();
    while i < SHARED_WORDS {
        slots.write(i, *next.add(i as usize));
        i += block_dim_x();
    }
    clustered_device::thread::sync_threads();
    if index_1d() != 0 {
        return;
    }
    let mut j = start;
    let begin = clock64();
    for _ in 0..steps {
        j = slots.read(j);
    }
    *out.add(1) = u64::from(j);
    let end = clock64();
    *out = end - begin;
}

/// What slot `i` of [`shared_throughput`](fn@shared_throughput)'s array
/// holds.
#[inline(always)]
pub fn shared_word(i: u32) -> u32 {
    i.wrapping_mul(0x9E37_79B9) >> 7
}

/// The slot lane `lane` loads first in iteration `i` of
/// [`shared_throughput`](fn@shared_throughput) (then 7 more, 32 words
/// apart): 256 words a step within the array, a power of two, so one `and`.
#[inline(always)]
pub fn shared_base(i: u32, lane: u32) -> u32 {
    (i.wrapping_mul(256) & (SHARED_WORDS - 256)) + lane
}

/// Shared-memory load throughput: each block fills a [`SHARED_WORDS`]
/// array with [`shared_word`], then every thread loads `iters x 8` of its
/// words (`ld.shared.u32`, the lanes of a warp on consecutive words: no
/// bank conflict), 8 independent loads per iteration at offsets 32 words
/// apart from a base that moves 256 words an iteration. `sums[t]` = the
/// wrapping sum of what thread `t` loaded, stamps as
/// [`fp32_throughput`](fn@fp32_throughput)'s (from after the fill). Launch
/// every SM full, blocks of a multiple of 32 threads.
///
/// # Safety
/// `sums` holds one element per launched thread, `stamps` 3 per warp.
#[kernel]
pub unsafe fn shared_throughput(iters: u32, sums: *mut u32, stamps: *mut u64) {
    let words = clustered_device::shared_array!(calibrate_words: [u32; SHARED_WORDS as usize]);
    let local = clustered_device::thread::thread_idx_x();
    let mut i = local;
    while i < SHARED_WORDS {
        words.write(i, shared_word(i));
        i += block_dim_x();
    }
    clustered_device::thread::sync_threads();
    let begin = clock64();
    let t = index_1d();
    let lane = lane_id();
    let mut sum = 0u32;
    for i in 0..iters {
        let base = shared_base(i, lane);
        sum = sum
            .wrapping_add(words.read(base))
            .wrapping_add(words.read(base + 32))
            .wrapping_add(words.read(base + 64))
            .wrapping_add(words.read(base + 96))
            .wrapping_add(words.read(base + 128))
            .wrapping_add(words.read(base + 160))
            .wrapping_add(words.read(base + 192))
            .wrapping_add(words.read(base + 224));
    }
    *sums.add(t as usize) = sum;
    let end = clock64();
    stamp(stamps, t, begin, end);
}

/// Atomic chase: one thread follows a chain through `next` with
/// `atom.global.add.u32` of 0 (`j = atomicAdd(&next[j], 0)`: each atomic's
/// old value is the next address, so they are dependent and the chain is
/// left as it was), `steps` of them timed with `%clock64`: `out[0]` = the
/// cycles, `out[1]` = the last index. Atomics are performed in L2, so on a
/// chain that fits L2 this is an atomic's round trip.
///
/// # Safety
/// As [`pointer_chase`](fn@pointer_chase).
#[kernel]
pub unsafe fn atom_chase(next: *mut u32, start: u32, steps: u32, out: *mut u64) {
    if index_1d() != 0 {
        return;
    }
    let mut j = start;
    let begin = clock64();
    for _ in 0..steps {
        j = clustered_device::atomic::fetch_add_u32(next.add(j as usize), 0);
    }
    *out.add(1) = u64::from(j);
    let end = clock64();
    *out = end - begin;
}

/// What [`fence_chain`](fn@fence_chain) runs after each round's stores:
/// nothing (the baseline its fences are measured against).
pub const FENCE_NONE: u32 = 0;
/// `fence.release.gpu` where the module is loaded at PTX ISA 8.6
/// (`clustered_device::atomic::fence_release_gpu`), as a pool worker
/// releases each task.
pub const FENCE_RELEASE_GPU: u32 = 1;
/// `fence.acq_rel.gpu`: a release with the acquire half (`CCTL.IVALL`).
pub const FENCE_ACQ_REL_GPU: u32 = 2;
/// `fence.acq_rel.sys`: as a pool's publisher runs it before FINISHED.
pub const FENCE_ACQ_REL_SYS: u32 = 3;
/// Or'ed into [`fence_chain`](fn@fence_chain)'s `fence`: the threads
/// store nothing before the barrier, so the fence has no write of the
/// round to wait for.
pub const FENCE_WITHOUT_STORES: u32 = 0x100;

/// Cluster barriers: every thread of every block runs `iters x 8`
/// `cluster_sync()` (`barrier.cluster.arrive` and `.wait` in a cluster of
/// more than one block: a GPU-scope fence, then the wait for every block of
/// the cluster; `bar.sync` in a cluster of one) with nothing between them;
/// each block's first thread writes `out[2 * block]` = the cycles and
/// `out[2 * block + 1]` = the barriers it counted. What a DSMEM kernel's
/// step pays for its cluster.
///
/// # Safety
/// `out` holds 2 words per block.
#[kernel]
pub unsafe fn cluster_barrier_chain(iters: u32, out: *mut u64) {
    use clustered_device::cluster::cluster_sync;
    use clustered_device::thread::{block_idx_x, thread_idx_x};
    let (cycles, count) = barriers_back_to_back(iters, || {
        cluster_sync();
    });
    if thread_idx_x() == 0 {
        let at = 2 * block_idx_x() as usize;
        *out.add(at) = cycles;
        *out.add(at + 1) = count;
    }
}

/// A fence as a pool task's publication runs it: per round every thread
/// of one block stores a word into `scratch` (relaxed, as a task's
/// results; not with [`FENCE_WITHOUT_STORES`]), the block meets at a
/// barrier, thread 0 runs the fence that `fence` names ([`FENCE_NONE`]
/// for none) and stores the round into `scratch[block_dim]`, and the
/// block meets again, so the next round waits for thread 0 as a worker's
/// next task does. Thread 0 writes `out[0]` = the cycles of `rounds`
/// rounds and `out[1]` = the rounds.
///
/// # Safety
/// `scratch` holds `block_dim + 1` words, `out` 2.
#[kernel]
pub unsafe fn fence_chain(fence: u32, rounds: u32, scratch: *mut u32, out: *mut u64) {
    use clustered_device::atomic::{fence_acq_rel_gpu, fence_acq_rel_system, fence_release_gpu};
    use clustered_device::thread::sync_threads;
    let t = index_1d();
    let flag = scratch.add(block_dim_x() as usize);
    let begin = clock64();
    let mut count = 0u64;
    for round in 0..rounds {
        if fence & FENCE_WITHOUT_STORES == 0 {
            core::ptr::write_volatile(scratch.add(t as usize), round ^ t);
        }
        sync_threads();
        if t == 0 {
            match fence & !FENCE_WITHOUT_STORES {
                FENCE_RELEASE_GPU => fence_release_gpu(),
                FENCE_ACQ_REL_GPU => fence_acq_rel_gpu(),
                FENCE_ACQ_REL_SYS => fence_acq_rel_system(),
                _ => {}
            }
            core::ptr::write_volatile(flag, round);
        }
        sync_threads();
        count += 1;
    }
    let end = clock64();
    if t == 0 {
        *out = end - begin;
        *out.add(1) = count;
    }
}

/// Barriers: every thread of one block runs `iters x 8` `bar.sync` with
/// nothing between them; thread 0 writes `out[0]` = the cycles and
/// `out[1]` = the barriers it counted. The cost of one barrier of the
/// block's warps, all present.
///
/// # Safety
/// `out` holds 2 words.
#[kernel]
pub unsafe fn barrier_chain(iters: u32, out: *mut u64) {
    use clustered_device::thread::sync_threads;
    let (cycles, count) = barriers_back_to_back(iters, sync_threads);
    if index_1d() == 0 {
        *out = cycles;
        *out.add(1) = count;
    }
}

/// `iters x` [`CHAIN_PER_ITERATION`] `barrier`s with nothing between
/// them: the cycles they took and the barriers counted.
#[inline(always)]
fn barriers_back_to_back(iters: u32, barrier: impl Fn()) -> (u64, u64) {
    let begin = clock64();
    let mut count = 0u64;
    for _ in 0..iters {
        barrier();
        barrier();
        barrier();
        barrier();
        barrier();
        barrier();
        barrier();
        barrier();
        count += u64::from(CHAIN_PER_ITERATION);
    }
    (clock64() - begin, count)
}

/// Block turnover: every warp waits until `spin` cycles of `%clock64` have
/// passed since it started, then thread 0 of block `b` writes `done[b] =
/// b + 1`. Launched with many more blocks than the SMs keep resident, the
/// time per block per resident slot less `spin` is what starting and
/// retiring a block costs: the dispatch a launch pays per block and a loop
/// over tasks does not.
///
/// # Safety
/// `done` holds one word per launched block.
#[kernel]
pub unsafe fn block_turnover(spin: u32, done: *mut u32) {
    let begin = clock64();
    while clock64().wrapping_sub(begin) < u64::from(spin) {}
    if thread_idx_x() == 0 {
        let block = block_idx_x();
        *done.add(block as usize) = block + 1;
    }
}
