//! The calibration microbenchmarks (`kernels::calibrate`) on the CPU
//! backend, through the typed CPU launch: each computes what the host says
//! (the chase ends where the host's walk ends, the chains' values, the
//! bandwidth kernel's sums), so on the GPU their timings are of the work
//! intended. The timings themselves need a GPU (`examples/calibrate`).

use clustered_suite::calibrate::{
    chase, chase_cycle, rate_per_sm, read_sum_expected, sm_spans, Chain, ChaseLayout,
};
use clustered_suite::host::cpu::{
    launch_entry, CpuLaunch, CpuLaunchError, CpuRun, Host, Machine, NoObserver,
};
use clustered_suite::host::{ClusterOptions, Entry, KernelFn};
use kernels::calibrate::*;

/// Runs a calibration kernel as the GPU's calibration launches it: `grid`
/// blocks of `block` threads (x only), no cluster options, nothing
/// observed.
///
/// # Safety
/// As [`launch_entry`]'s: the arguments are the buffers the kernel reads
/// and writes, as long as it indexes them.
unsafe fn run_kernel<K: KernelFn>(
    entry: Entry<K>,
    machine: &Machine,
    grid: u32,
    block: u32,
    args: K::Args<'_, Host>,
) -> Result<CpuRun, CpuLaunchError> {
    let launch = CpuLaunch {
        grid: [grid, 1, 1],
        block: [block, 1, 1],
        dynamic_shared_bytes: 0,
        resident_blocks: 4,
    };
    // SAFETY: the caller's.
    unsafe {
        launch_entry(
            entry,
            machine,
            launch,
            &ClusterOptions::default(),
            &mut NoObserver,
            args,
        )
    }
}

#[test]
fn the_pointer_chases_end_where_the_hosts_walk_ends() {
    let machine = Machine::new(1);
    // Two lines per slot's stride: the slots sit at random lines of theirs.
    let layout = ChaseLayout {
        len: 8192,
        stride: 64,
        group: 1024,
    };
    let Chain { next, start: first } = chase_cycle(&layout, 11).unwrap();
    let slots = layout.slots() as u32;
    let second = next[first as usize];
    for (past_l1, start, warm, steps) in [
        (false, first, slots, 100),
        (true, first, slots, 100),
        (false, second, 0, 37),
        (true, next[second as usize], 5, 1000),
    ] {
        let mut out = [0u64; 2];
        // SAFETY: every index of the chain is a slot below next's length,
        // start is one, and out holds 2 words.
        let run = unsafe {
            if past_l1 {
                run_kernel(
                    pointer_chase_l2::KERNEL,
                    &machine,
                    1,
                    1,
                    (&next, start, warm, steps, &mut out),
                )
            } else {
                run_kernel(
                    pointer_chase::KERNEL,
                    &machine,
                    1,
                    1,
                    (&next, start, warm, steps, &mut out),
                )
            }
        };
        run.unwrap_or_else(|e| panic!("past L1 {past_l1}, start {start}: {e}"));
        let expected = chase(&next, start, u64::from(warm + steps)).unwrap();
        assert_eq!(
            out[1],
            u64::from(expected),
            "past L1 {past_l1}, start {start}"
        );
    }
}

#[test]
fn a_chase_outside_its_array_stops_the_run() {
    // A chain whose second slot points past the end: the CPU backend's
    // bounds check names it instead of reading out of bounds.
    let next = [1u32, 64];
    let mut out = [0u64; 2];
    // SAFETY: the CPU backend checks every traced load against the buffer.
    let run = unsafe {
        run_kernel(
            pointer_chase::KERNEL,
            &Machine::new(1),
            1,
            1,
            (&next[..], 0, 0, 3, &mut out[..]),
        )
    };
    assert!(run.is_err(), "{run:?}");
}

#[test]
fn the_chains_compute_the_hosts_values() {
    let machine = Machine::new(1);
    let (iters, a, b) = (3u32, 0.999_9f32, 1e-4f32);
    let (mut out, mut cycles) = (vec![0f32; 32], vec![0u64; 32]);
    // SAFETY: 32 threads, both buffers hold 32 elements.
    unsafe {
        run_kernel(
            fp32_chain::KERNEL,
            &machine,
            1,
            32,
            (iters, a, b, &mut out, &mut cycles),
        )
    }
    .unwrap();
    for (t, &value) in out.iter().enumerate() {
        let mut x = fp32_chain_seed(t as u32);
        for _ in 0..iters * FP32_CHAIN_PER_ITERATION {
            x = x.mul_add(a, b);
        }
        assert_eq!(value.to_bits(), x.to_bits(), "thread {t}");
    }

    let (ia, ib) = (0x9E37_79B9u32, 0x7F4A_7C15u32);
    let (mut out, mut cycles) = (vec![0u32; 32], vec![0u64; 32]);
    // SAFETY: as above.
    unsafe {
        run_kernel(
            int_chain::KERNEL,
            &machine,
            1,
            32,
            (iters, ia, ib, &mut out, &mut cycles),
        )
    }
    .unwrap();
    for (t, &value) in out.iter().enumerate() {
        let mut x = t as u32;
        // 32 instructions per iteration: 16 steps of an xor and an add.
        for _ in 0..iters * INT_CHAIN_PER_ITERATION / 2 {
            x = (x ^ ia).wrapping_add(ib);
        }
        assert_eq!(value, x, "thread {t}");
    }
}

#[test]
fn the_throughput_kernel_computes_and_stamps_every_warp() {
    let machine = Machine::new(3);
    let (blocks, block, iters) = (5u32, 64u32, 2u32);
    let threads = (blocks * block) as usize;
    let (a, b) = (0.999_9f32, 1e-4f32);
    let mut out = vec![0f32; threads];
    let mut stamps = vec![u64::MAX; threads / 32 * STAMP_WORDS];
    // SAFETY: out holds one element per thread, stamps 3 per warp.
    unsafe {
        run_kernel(
            fp32_throughput::KERNEL,
            &machine,
            blocks,
            block,
            (iters, a, b, &mut out, &mut stamps),
        )
    }
    .unwrap();
    for (t, &value) in out.iter().enumerate() {
        let mut acc: Vec<f32> = (0..FP32_THROUGHPUT_ACCUMULATORS)
            .map(|k| fp32_throughput_seed(t as u32, k))
            .collect();
        for _ in 0..iters * FP32_THROUGHPUT_PER_ITERATION / FP32_THROUGHPUT_ACCUMULATORS {
            for acc in &mut acc {
                *acc = acc.mul_add(a, b);
            }
        }
        let sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
        assert_eq!(value.to_bits(), sum.to_bits(), "thread {t}");
    }
    // Every warp wrote its SM (one of the machine's) and its clocks in
    // order. (The CPU backend's clock is the scheduler's tick, which FMAs do
    // not advance: a span may be empty here, and the rate is the GPU's to
    // measure.)
    for (w, stamp) in stamps.chunks_exact(STAMP_WORDS).enumerate() {
        assert!(
            stamp.iter().all(|&word| word != u64::MAX),
            "warp {w}: not written"
        );
        assert!(
            machine.sm_ids.contains(&(stamp[0] as u32)),
            "warp {w}: SM {}",
            stamp[0]
        );
        assert!(stamp[2] >= stamp[1], "warp {w}: {stamp:?}");
    }
    // The host's reading of the stamps: warps with a span, per SM.
    let spans = sm_spans(&stamps);
    let with_span = stamps
        .chunks_exact(STAMP_WORDS)
        .filter(|s| s[2] > s[1])
        .count() as u64;
    assert_eq!(spans.values().map(|s| s.warps).sum::<u64>(), with_span);
    if with_span > 0 {
        let rate = rate_per_sm(
            &spans,
            f64::from(iters) * f64::from(FP32_THROUGHPUT_PER_ITERATION),
        );
        assert!(rate.is_some_and(|r| r.is_finite() && r > 0.0), "{rate:?}");
    }
}

#[test]
fn the_bandwidth_kernel_reads_every_element_once_per_pass() {
    let machine = Machine::new(2);
    let data: Vec<u32> = (0..1000u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    // 3 blocks of 32: 96 threads, so the 4-load loop runs and the remainder
    // loop takes the last 1000 - 4 * 96 * 2 = 232 elements.
    for (grid, passes) in [(3u32, 3u32), (1, 1), (8, 2)] {
        let threads = (grid * 32) as usize;
        let mut sums = vec![0u32; threads];
        // SAFETY: data holds n elements, sums one per thread.
        unsafe {
            run_kernel(
                read_sum::KERNEL,
                &machine,
                grid,
                32,
                (&data, data.len() as u32, passes, &mut sums),
            )
        }
        .unwrap();
        let total = sums.iter().fold(0u32, |s, &x| s.wrapping_add(x));
        assert_eq!(
            total,
            read_sum_expected(&data, passes),
            "grid {grid}, passes {passes}"
        );
    }
}

#[test]
fn the_scattered_loads_sum_what_the_host_sums_and_span_the_lines_said() {
    use clustered_suite::calibrate::{scattered_lines, scattered_sum_expected};
    let machine = Machine::new(2);
    let (blocks, block, iters) = (3u32, 64u32, 3u32);
    let threads = (blocks * block) as usize;
    let data: Vec<u32> = (0..SCATTER_WORDS)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    for stride in [32u32, 128, 1] {
        let mut sums = vec![0u32; threads];
        let mut stamps = vec![u64::MAX; threads / 32 * STAMP_WORDS];
        // SAFETY: data holds SCATTER_WORDS elements, sums one per thread,
        // stamps 3 per warp; blocks of 64 threads.
        unsafe {
            run_kernel(
                l1_scattered_loads::KERNEL,
                &machine,
                blocks,
                block,
                (&data, stride, iters, &mut sums, &mut stamps),
            )
        }
        .unwrap();
        for (t, &sum) in sums.iter().enumerate() {
            let expected = scattered_sum_expected(&data, t as u32 % 32, stride, iters);
            assert_eq!(sum, expected, "stride {stride}, thread {t}");
        }
        assert!(
            stamps.iter().all(|&w| w != u64::MAX),
            "a warp did not stamp"
        );
    }
    // What the rate divides by: a line per lane at strides of a line or
    // more, one or two lines for a coalesced load (its base moves 33 words
    // a step: on a line's start once in 32 steps).
    let loads = u64::from(1024 * SCATTER_LOADS_PER_ITERATION);
    assert_eq!(scattered_lines(32, 1024), 32 * loads);
    assert_eq!(scattered_lines(128, 1024), 32 * loads);
    assert_eq!(scattered_lines(1, 1024), 2 * loads - loads / 32);
}

#[test]
fn the_scattered_stores_write_every_word_a_sector_in_part_per_lane() {
    use clustered_suite::calibrate::scattered_rows;
    let machine = Machine::new(2);
    // 64 rows of 32 words; 2 blocks of 32 threads = 64 lanes: every row.
    let (rows, passes) = (64u32, 32u32);
    let mut data = vec![0u32; rows as usize * 32];
    // SAFETY: data holds rows x 32 elements, rows is a power of two.
    unsafe {
        run_kernel(
            scattered_stores::KERNEL,
            &machine,
            2,
            32,
            (&mut data, rows, passes),
        )
    }
    .unwrap();
    for (w, &value) in data.iter().enumerate() {
        assert_eq!(value, scattered_value(w as u32), "word {w}");
    }
    // Each warp store: 32 lanes, 32 lines, one 4-byte word each.
    for (warp, pass) in [(0, 0), (1, 7), (5, 31)] {
        let mut lines: Vec<u32> = (0..32)
            .map(|lane| stored_word(warp, lane, pass, rows) / 32)
            .collect();
        lines.sort_unstable();
        lines.dedup();
        assert_eq!(lines.len(), 32, "warp {warp}, pass {pass}");
    }
    // The GPU buffer: a power of two of lines, 8 MiB or a quarter of L2.
    assert_eq!(scattered_rows(50 << 20), 65536);
    assert_eq!(scattered_rows(60 << 20), 65536);
    assert_eq!(scattered_rows(4 << 20), 8192);
    assert_eq!(scattered_rows(0), 32);
}

#[test]
fn the_other_classes_kernels_compute_the_hosts_values() {
    use clustered_suite::calibrate::{int_throughput_expected, shared_sum_expected};
    let machine = Machine::new(2);
    let iters = 3u32;

    // The special-function chain: rsqrt iterated, settling at 1.
    let (mut out, mut cycles) = (vec![0f32; 32], vec![0u64; 32]);
    // SAFETY: 32 threads, both buffers hold 32 elements.
    unsafe {
        run_kernel(
            sfu_chain::KERNEL,
            &machine,
            1,
            32,
            (iters, &mut out, &mut cycles),
        )
    }
    .unwrap();
    for (t, &value) in out.iter().enumerate() {
        let want = sfu_chain_value(sfu_seed(t as u32, 0), iters);
        assert_eq!(value.to_bits(), want.to_bits(), "thread {t}");
        assert!((value - 1.0).abs() < 1e-3, "thread {t}: {value}");
    }

    // The throughput kernels, two blocks of 64 threads.
    let (blocks, block) = (2u32, 64u32);
    let threads = (blocks * block) as usize;
    let written = |stamps: &[u64]| {
        stamps
            .chunks_exact(STAMP_WORDS)
            .all(|s| machine.sm_ids.contains(&(s[0] as u32)) && s[2] >= s[1])
    };
    let mut sums = vec![0f32; threads];
    let mut stamps = vec![u64::MAX; threads / 32 * STAMP_WORDS];
    // SAFETY: one element per thread, 3 stamps per warp.
    unsafe {
        run_kernel(
            sfu_throughput::KERNEL,
            &machine,
            blocks,
            block,
            (iters, &mut sums, &mut stamps),
        )
    }
    .unwrap();
    for (t, &value) in sums.iter().enumerate() {
        let x: Vec<f32> = (0..THROUGHPUT_CHAINS)
            .map(|k| sfu_chain_value(sfu_seed(t as u32, k), iters))
            .collect();
        let want = ((x[0] + x[1]) + (x[2] + x[3])) + ((x[4] + x[5]) + (x[6] + x[7]));
        assert_eq!(value.to_bits(), want.to_bits(), "sfu_throughput thread {t}");
    }
    assert!(written(&stamps), "sfu_throughput's stamps: {stamps:?}");

    let (a, b) = (0x9E37_79B9u32, 0x7F4A_7C15u32);
    let mut out = vec![0u32; threads];
    let mut stamps = vec![u64::MAX; threads / 32 * STAMP_WORDS];
    // SAFETY: as above.
    unsafe {
        run_kernel(
            int_throughput::KERNEL,
            &machine,
            blocks,
            block,
            (iters, a, b, &mut out, &mut stamps),
        )
    }
    .unwrap();
    for (t, &value) in out.iter().enumerate() {
        assert_eq!(
            value,
            int_throughput_expected(t as u32, a, b, iters),
            "int_throughput thread {t}"
        );
    }
    assert!(written(&stamps), "int_throughput's stamps: {stamps:?}");

    let mut out = vec![0u32; threads];
    let mut stamps = vec![u64::MAX; threads / 32 * STAMP_WORDS];
    // The base wraps within the array after 16 iterations: run past it.
    let shared_iters = 20u32;
    // SAFETY: as above; blocks of a multiple of 32 threads.
    unsafe {
        run_kernel(
            shared_throughput::KERNEL,
            &machine,
            blocks,
            block,
            (shared_iters, &mut out, &mut stamps),
        )
    }
    .unwrap();
    for (t, &value) in out.iter().enumerate() {
        assert_eq!(
            value,
            shared_sum_expected(t as u32 % 32, shared_iters),
            "shared_throughput thread {t}"
        );
    }
    assert!(written(&stamps), "shared_throughput's stamps: {stamps:?}");
}

#[test]
fn the_shared_and_atomic_chases_end_where_the_hosts_walk_ends() {
    let machine = Machine::new(1);
    let layout = ChaseLayout {
        len: SHARED_WORDS as usize,
        stride: 1,
        group: SHARED_WORDS as usize,
    };
    let Chain { next, start } = chase_cycle(&layout, 5).unwrap();
    for steps in [1u32, 37, 5000] {
        let mut out = [0u64; 2];
        // SAFETY: next holds SHARED_WORDS indices below SHARED_WORDS, out 2
        // words; the block's 64 threads share the copy.
        unsafe {
            run_kernel(
                shared_chase::KERNEL,
                &machine,
                1,
                64,
                (&next, start, steps, &mut out),
            )
        }
        .unwrap();
        assert_eq!(
            Some(out[1] as u32),
            chase(&next, start, u64::from(steps)),
            "shared, {steps} steps"
        );
    }

    let layout = ChaseLayout {
        len: 8192,
        stride: 32,
        group: 1024,
    };
    let Chain { next, start } = chase_cycle(&layout, 9).unwrap();
    let mut chain = next.clone();
    let mut out = [0u64; 2];
    // SAFETY: every index of the chain is a slot below its length, out
    // holds 2 words.
    unsafe {
        run_kernel(
            atom_chase::KERNEL,
            &machine,
            1,
            1,
            (&mut chain, start, 300u32, &mut out),
        )
    }
    .unwrap();
    assert_eq!(Some(out[1] as u32), chase(&next, start, 300), "atomics");
    assert_eq!(chain, next, "the atomics added 0: the chain is unchanged");
}

#[test]
fn the_barrier_chain_counts_every_barrier_of_every_thread() {
    let machine = Machine::new(1);
    let mut out = [0u64; 2];
    // SAFETY: out holds 2 words.
    unsafe { run_kernel(barrier_chain::KERNEL, &machine, 1, 96, (5u32, &mut out)) }.unwrap();
    assert_eq!(out[1], 5 * u64::from(CHAIN_PER_ITERATION));
}

/// `cluster_barrier_chain`: every block counts its own barriers into its
/// own two words (the GPU's median is over every block).
#[test]
fn the_cluster_barrier_chain_counts_every_block_s_barriers() {
    let machine = Machine::new(2);
    let mut out = [0u64; 6];
    // SAFETY: out holds 2 words per block.
    unsafe {
        run_kernel(
            cluster_barrier_chain::KERNEL,
            &machine,
            3,
            64,
            (5u32, &mut out),
        )
    }
    .unwrap();
    for block in out.chunks(2) {
        assert_eq!(block[1], 5 * u64::from(CHAIN_PER_ITERATION), "{out:?}");
    }
}

/// `fence_chain` in every mode counts its rounds, leaves each thread's last
/// store (none without stores) and thread 0's flag of the last round: the
/// rounds the GPU times are the ones intended, whatever the fence.
#[test]
fn the_fence_chain_runs_every_round_in_every_mode() {
    let machine = Machine::new(1);
    let (threads, rounds) = (128u32, 7u32);
    for fence in [
        FENCE_NONE,
        FENCE_RELEASE_GPU,
        FENCE_ACQ_REL_GPU,
        FENCE_ACQ_REL_SYS,
    ] {
        for stores in [true, false] {
            let mode = if stores {
                fence
            } else {
                fence | FENCE_WITHOUT_STORES
            };
            let mut scratch = vec![u32::MAX; threads as usize + 1];
            let mut out = [0u64; 2];
            // SAFETY: scratch holds threads + 1 words, out 2.
            unsafe {
                run_kernel(
                    fence_chain::KERNEL,
                    &machine,
                    1,
                    threads,
                    (mode, rounds, &mut scratch, &mut out),
                )
            }
            .unwrap();
            assert_eq!(out[1], u64::from(rounds), "mode {mode:#x}");
            let last = rounds - 1;
            for t in 0..threads {
                let want = if stores { last ^ t } else { u32::MAX };
                assert_eq!(scratch[t as usize], want, "mode {mode:#x}, thread {t}");
            }
            assert_eq!(scratch[threads as usize], last, "mode {mode:#x}: the flag");
        }
    }
}

/// `block_turnover`: every block leaves its mark (`b + 1` at `b`), whether
/// its warps wait or not, so the GPU's rounds run the blocks intended.
#[test]
fn block_turnover_marks_every_block() {
    let machine = Machine::new(2);
    for spin in [0u32, 50] {
        let mut done = [0u32; 5];
        // SAFETY: done holds a word per block.
        unsafe { run_kernel(block_turnover::KERNEL, &machine, 5, 64, (spin, &mut done)) }.unwrap();
        assert_eq!(done, [1, 2, 3, 4, 5], "spin {spin}");
    }
}
