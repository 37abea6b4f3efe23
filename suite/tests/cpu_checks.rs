//! What the CPU backend checks so that a kernel that would depend on timing
//! on a GPU fails instead of giving a plausible result: shuffled thread
//! orders (`Machine::interleave`), barriers that every thread must reach at
//! the same place (synccheck), and shared-memory races between barriers.
//!
//! The kernels are plain closures over the device API, run once per
//! simulated thread.

use clustered_device::atomic::fetch_add_u32;
use clustered_device::memory::{load, store, F32x4};
use clustered_device::shared::dynamic_shared_memory;
use clustered_device::shared_array;
use clustered_device::thread::{sync_threads, sync_threads_and, thread_idx_x};
use clustered_suite::host::cpu::{
    run, BarrierDivergence, BarrierKind, CpuError, CpuLaunch, Machine, NoObserver, SharedRace,
    TaskOverrun,
};
use clustered_suite::host::ClusterOptions;

/// One block of `threads` threads.
fn block(threads: u32) -> CpuLaunch {
    CpuLaunch {
        grid: [1, 1, 1],
        block: [threads, 1, 1],
        dynamic_shared_bytes: 0,
        resident_blocks: 1,
    }
}

/// A raw pointer a `Fn` kernel may capture (kernels only use it through
/// the device API's loads and stores).
#[derive(Clone, Copy)]
struct Buffer(*mut u32);
unsafe impl Sync for Buffer {}

/// Thread 0 writes a shared word that every thread reads, with no barrier
/// between: thread 1's read races with thread 0's write.
fn racy(output: Buffer) -> impl Fn() {
    move || {
        let cell = shared_array!(cell: [u32; 1]);
        let t = thread_idx_x();
        unsafe {
            if t == 0 {
                cell.write(0, 42);
            }
            store(output.0.add(t as usize), cell.read(0));
        }
    }
}

#[test]
fn a_shared_memory_race_is_reported_under_every_seed() {
    let mut output = vec![0u32; 64];
    let kernel = racy(Buffer(output.as_mut_ptr()));
    let machines =
        std::iter::once(Machine::new(1)).chain((0..20).map(|s| Machine::new(1).interleave(s)));
    for machine in machines {
        let error = run(&machine, &block(64), &mut NoObserver, &kernel).unwrap_err();
        let CpuError::SharedRace(race) = &error else {
            panic!("expected a race, got {error}");
        };
        let SharedRace {
            first,
            first_wrote,
            second,
            second_wrote,
            offset,
            second_site,
            ..
        } = &**race;
        assert_eq!(*offset, 0);
        assert_ne!(first.thread, second.thread);
        // Thread 0's write is one side; the other read.
        let writer = if *first_wrote {
            first.thread
        } else {
            second.thread
        };
        assert_eq!(writer, [0, 0, 0], "{error}");
        assert!(first_wrote != second_wrote, "{error}");
        assert!(second_site.contains("cpu_checks.rs"), "{error}");
        assert_eq!(first.seed, machine.interleave);
        let message = error.to_string();
        assert!(message.contains("sync_threads()"), "{message}");
        if let Some(seed) = machine.interleave {
            assert!(
                message.contains(&format!("Machine::interleave({seed})")),
                "{message}"
            );
        }
    }
}

#[test]
fn interleaving_exposes_an_order_dependence_reproducibly() {
    // Without the race detector, the fixed order always lets thread 0 write
    // first; shuffled orders sometimes let thread 1 read before.
    let read_by_thread_1 = |machine: Machine| {
        let mut output = vec![0u32; 64];
        let kernel = racy(Buffer(output.as_mut_ptr()));
        run(
            &machine.check_races(false),
            &block(64),
            &mut NoObserver,
            &kernel,
        )
        .unwrap();
        output[1]
    };
    assert_eq!(read_by_thread_1(Machine::new(1)), 42);
    let seen: Vec<u32> = (0..20)
        .map(|s| read_by_thread_1(Machine::new(1).interleave(s)))
        .collect();
    assert!(seen.contains(&0) && seen.contains(&42), "{seen:?}");
    // The same seed, the same order.
    let again: Vec<u32> = (0..20)
        .map(|s| read_by_thread_1(Machine::new(1).interleave(s)))
        .collect();
    assert_eq!(seen, again);
}

#[test]
#[allow(clippy::if_same_then_else)] // the two call sites are the point
fn half_a_warp_at_another_sync_threads_is_a_divergence() {
    let kernel = || {
        if thread_idx_x() < 16 {
            sync_threads();
        } else {
            sync_threads();
        }
    };
    for machine in [Machine::new(1), Machine::new(1).interleave(3)] {
        let error = run(&machine, &block(32), &mut NoObserver, &kernel).unwrap_err();
        let CpuError::BarrierDivergence(divergence) = &error else {
            panic!("expected a barrier divergence, got {error}");
        };
        let BarrierDivergence {
            first,
            first_barrier,
            second,
            second_barrier,
        } = &**divergence;
        assert!(first.thread[0] < 16 && second.thread[0] >= 16, "{error}");
        assert_eq!(
            (first_barrier.0, second_barrier.0),
            (BarrierKind::Sync, BarrierKind::Sync)
        );
        assert_ne!(first_barrier.1, second_barrier.1, "{error}");
        assert!(first_barrier.1.contains("cpu_checks.rs"), "{error}");
        assert!(error.to_string().contains("uniform"), "{error}");
    }
}

#[test]
fn a_warp_that_skips_a_barrier_is_a_divergence_not_a_hang() {
    let mut output = vec![0u32; 64];
    let out = Buffer(output.as_mut_ptr());
    let kernel = move || {
        let tile = shared_array!(tile: [u32; 64]);
        let t = thread_idx_x();
        unsafe {
            tile.write(t, t);
            // Warp 1 skips the first barrier and waits at the second.
            if t < 32 {
                sync_threads();
            }
            sync_threads();
            store(out.0.add(t as usize), tile.read(63 - t));
        }
    };
    let error = run(&Machine::new(1), &block(64), &mut NoObserver, &kernel).unwrap_err();
    match &error {
        CpuError::BarrierDivergence(d) => {
            assert!(
                d.first.thread[0] < 32 && d.second.thread[0] >= 32,
                "{error}"
            )
        }
        other => panic!("expected a barrier divergence, got {other}"),
    }
}

/// A persistent block runs its tasks one after another, and every thread
/// must end each task with the block. Threads 32.. leave task 0 before its
/// barrier (as a `return` hidden from #[clustered] would) and wait at the
/// same `sync_threads()` in task 1: the call sites match, so only the tasks
/// tell the two barriers apart.
#[test]
fn a_thread_that_runs_ahead_into_its_next_task_is_named() {
    use clustered_device::cta::Cta;
    use clustered_device::trace::begin_task;
    let kernel = || {
        let t = thread_idx_x();
        for task in 0..2u32 {
            begin_task(&Cta::new([task, 0, 0], [2, 1, 1]));
            if task == 0 && t >= 32 {
                continue;
            }
            sync_threads();
        }
    };
    for machine in [Machine::new(1), Machine::new(1).interleave(5)] {
        let error = run(&machine, &block(64), &mut NoObserver, &kernel).unwrap_err();
        let CpuError::TaskOverrun(overrun) = &error else {
            panic!("expected a task overrun, got {error}");
        };
        let TaskOverrun {
            ahead,
            ahead_task,
            behind,
            behind_task,
            ..
        } = &**overrun;
        assert!(ahead.thread[0] >= 32 && behind.thread[0] < 32, "{error}");
        assert_eq!((*ahead_task, *behind_task), (1, 0), "{error}");
        assert!(
            error.to_string().contains("ran ahead into its next task"),
            "{error}"
        );
    }
}

#[test]
fn threads_that_return_early_release_a_barrier() {
    // The tail guard of most kernels: on hardware, exited threads do not
    // hold a barrier up. Threads 40.. return; the rest reverse their tile.
    let mut output = vec![u32::MAX; 64];
    let out = Buffer(output.as_mut_ptr());
    let kernel = move || {
        let tile = shared_array!(tile: [u32; 64]);
        let t = thread_idx_x();
        if t >= 40 {
            return;
        }
        unsafe {
            tile.write(t, t * 10);
            sync_threads();
            store(out.0.add(t as usize), tile.read(39 - t));
        }
    };
    for machine in [Machine::new(1), Machine::new(1).interleave(9)] {
        run(&machine, &block(64), &mut NoObserver, &kernel).unwrap();
        let expected: Vec<u32> = (0..64)
            .map(|t| if t < 40 { (39 - t) * 10 } else { u32::MAX })
            .collect();
        assert_eq!(output, expected);
    }
}

#[test]
#[allow(clippy::if_same_then_else)] // the two call sites are the point
fn sync_threads_and_is_the_and_over_live_threads_from_any_call_site() {
    let mut output = vec![0u32; 3 * 64];
    let out = Buffer(output.as_mut_ptr());
    let kernel = move || {
        let t = thread_idx_x();
        // Not aligned: even and odd lanes arrive from different sites.
        let all_true = if t.is_multiple_of(2) {
            sync_threads_and(true)
        } else {
            sync_threads_and(true)
        };
        let one_false = sync_threads_and(t != 17);
        unsafe {
            store(out.0.add(t as usize), all_true as u32);
            store(out.0.add(64 + t as usize), one_false as u32);
        }
        if t == 5 {
            return; // Exited threads do not vote.
        }
        let live_vote = sync_threads_and(t != 5);
        unsafe { store(out.0.add(128 + t as usize), live_vote as u32) };
    };
    for machine in [Machine::new(1), Machine::new(1).interleave(4)] {
        output.fill(9);
        run(&machine, &block(64), &mut NoObserver, &kernel).unwrap();
        assert!(output[..64].iter().all(|&v| v == 1), "{output:?}");
        assert!(output[64..128].iter().all(|&v| v == 0), "{output:?}");
        let live: Vec<u32> = (0..64).map(|t| if t == 5 { 9 } else { 1 }).collect();
        assert_eq!(output[128..], live[..]);
    }
    // Mixing it with sync_threads on one barrier is an error.
    let mixed = || {
        if thread_idx_x() < 32 {
            sync_threads();
        } else {
            sync_threads_and(true);
        }
    };
    let error = run(&Machine::new(1), &block(64), &mut NoObserver, &mixed).unwrap_err();
    match &error {
        CpuError::BarrierDivergence(d) => assert_eq!(
            (d.first_barrier.0, d.second_barrier.0),
            (BarrierKind::Sync, BarrierKind::And)
        ),
        other => panic!("expected a barrier divergence, got {other}"),
    }
}

#[test]
fn a_correct_kernel_gives_the_same_result_under_every_seed() {
    // Loads, a shared tile reversed across warps, and a tree reduction:
    // barriers between every write and the other threads' reads.
    const N: u32 = 128;
    let input: Vec<u32> = (0..2 * N)
        .map(|i| i.wrapping_mul(2_654_435_761) >> 7)
        .collect();
    let run_with = |machine: Machine| {
        let mut output = vec![0u32; 2 * N as usize + 2];
        let (inp, out) = (
            Buffer(input.as_ptr() as *mut u32),
            Buffer(output.as_mut_ptr()),
        );
        let kernel = move || {
            let tile = shared_array!(tile: [u32; N as usize]);
            let sums = shared_array!(sums: [u32; N as usize]);
            let t = thread_idx_x();
            let base = clustered_device::thread::block_idx_x() * N;
            unsafe {
                let value = load(inp.0.add((base + t) as usize));
                tile.write(t, value);
                sums.write(t, value);
                sync_threads();
                store(out.0.add((base + t) as usize), tile.read(N - 1 - t));
                let mut stride = N / 2;
                while stride > 0 {
                    if t < stride {
                        sums.write(t, sums.read(t).wrapping_add(sums.read(t + stride)));
                    }
                    sync_threads();
                    stride /= 2;
                }
                if t == 0 {
                    let block = clustered_device::thread::block_idx_x();
                    store(out.0.add((2 * N + block) as usize), sums.read(0));
                }
            }
        };
        let launch = CpuLaunch {
            grid: [2, 1, 1],
            block: [N, 1, 1],
            dynamic_shared_bytes: 0,
            resident_blocks: 2,
        };
        run(&machine, &launch, &mut NoObserver, &kernel).unwrap();
        output
    };
    let expected = run_with(Machine::new(1));
    for b in 0..2 {
        let slice = &input[(b * N) as usize..((b + 1) * N) as usize];
        assert_eq!(
            expected[(2 * N + b) as usize],
            slice.iter().fold(0u32, |a, &v| a.wrapping_add(v))
        );
    }
    for seed in 0..20 {
        assert_eq!(
            run_with(Machine::new(2).interleave(seed)),
            expected,
            "seed {seed}"
        );
    }
}

#[test]
fn clustered_schedules_with_shared_memory_pass_the_checks_under_shuffled_orders() {
    use kernels::vector::*;
    let (n, block) = (640u32, 64u32);
    let input: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut expected = vec![0.0; n as usize];
    clustered_suite::reference::reverse_in_blocks(&input, &mut expected, block as usize);
    let original = CpuLaunch {
        grid: [n / block, 1, 1],
        block: [block, 1, 1],
        dynamic_shared_bytes: block * 4,
        resident_blocks: 2,
    };
    for seed in 0..5 {
        let machine = Machine::new(2).interleave(seed);
        for entry in reverse_in_blocks::SCHEDULES {
            let name = entry.name();
            let mut output = vec![0f32; n as usize];
            // SAFETY: the kernel reads input[..n] and writes output[..n].
            unsafe {
                clustered_suite::host::cpu::launch_entry(
                    *entry,
                    &machine,
                    original,
                    &ClusterOptions::default(),
                    &mut NoObserver,
                    (&input, &mut output, n),
                )
            }
            .unwrap_or_else(|e| panic!("{name}, seed {seed}: {e}"));
            assert_eq!(output, expected, "{name}, seed {seed}");
        }
    }
}

#[test]
fn a_shared_access_past_the_declared_memory_is_an_error() {
    let kernel = || {
        let tile = shared_array!(small: [u32; 4]);
        unsafe { tile.write(thread_idx_x() * 1000, 1) };
    };
    let error = run(&Machine::new(1), &block(32), &mut NoObserver, &kernel).unwrap_err();
    match &error {
        CpuError::Panicked { message, at } => {
            assert_eq!(at.thread, [1, 0, 0]);
            assert!(
                message.contains("outside the bytes") && message.contains("0..16"),
                "{message}"
            );
        }
        other => panic!("expected a panic error, got {other}"),
    }
}

/// A tile of floats read four at a time: aligned reads give the floats
/// written; a cast one float off 16 bytes is the GPU's misaligned-address
/// fault, reported with the site, not a read of the neighbouring bytes.
#[test]
fn a_four_float_shared_read_must_be_16_byte_aligned() {
    let mut output = [F32x4::default(); 2];
    let out = Buffer(output.as_mut_ptr().cast());
    let aligned = move || {
        let tile = shared_array!(floats: [f32; 8]);
        let t = thread_idx_x();
        unsafe {
            tile.write(t, t as f32 + 0.5);
            sync_threads();
            if t < 2 {
                let quad = tile.cast::<F32x4>().read(t);
                store((out.0 as *mut F32x4).add(t as usize), quad);
            }
        }
    };
    run(&Machine::new(1), &block(8), &mut NoObserver, &aligned).unwrap();
    assert_eq!(output[0], F32x4([0.5, 1.5, 2.5, 3.5]));
    assert_eq!(output[1], F32x4([4.5, 5.5, 6.5, 7.5]));

    // The other way: an array of quads written whole, read as floats, under
    // shuffled orders (the race check sees the 16-byte stores).
    let mut floats = [0.0f32; 8];
    let out = Buffer(floats.as_mut_ptr().cast());
    let quads = move || {
        let tile = shared_array!(quads: [F32x4; 2]);
        let t = thread_idx_x();
        unsafe {
            if t < 2 {
                let f = (4 * t) as f32;
                tile.write(t, F32x4([f, f + 1.0, f + 2.0, f + 3.0]));
            }
            sync_threads();
            store(
                (out.0 as *mut f32).add(t as usize),
                tile.cast::<f32>().read(t),
            );
        }
    };
    for seed in 0..3 {
        run(
            &Machine::new(1).interleave(seed),
            &block(8),
            &mut NoObserver,
            &quads,
        )
        .unwrap();
        assert_eq!(
            floats,
            [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
            "seed {seed}"
        );
    }

    let misaligned = || {
        let tile = shared_array!(skewed: [f32; 8]);
        unsafe { tile.offset(1).cast::<F32x4>().read(0) };
    };
    match run(&Machine::new(1), &block(1), &mut NoObserver, &misaligned).unwrap_err() {
        CpuError::Panicked { message, .. } => assert!(
            message.contains("not aligned to 16 bytes") && message.contains("cpu_checks.rs"),
            "{message}"
        ),
        other => panic!("expected a panic error, got {other}"),
    }
}

/// A global access not aligned to its type: the GPU faults on it (a
/// misaligned address), the host would just read; the CPU backend reports
/// it at the kernel's line. A quad read from a float buffer one float in.
#[test]
fn a_misaligned_global_access_is_an_error() {
    let floats = [F32x4([1.0, 2.0, 3.0, 4.0]); 2];
    let base = Buffer(floats.as_ptr() as *mut u32);
    let run_at = |offset: usize| {
        let kernel = move || unsafe {
            let quad = load((base.0 as *const f32).add(offset).cast::<F32x4>());
            assert!(quad.0[0] > 0.0);
        };
        run(&Machine::new(1), &block(1), &mut NoObserver, &kernel)
    };
    assert!(run_at(4).is_ok(), "an aligned quad reads");
    match run_at(1).unwrap_err() {
        CpuError::Panicked { message, .. } => assert!(
            message.contains("not aligned to 16 bytes") && message.contains("F32x4"),
            "{message}"
        ),
        other => panic!("expected a panic error, got {other}"),
    }
    // An atomic two bytes into a word.
    let mut words = [0u32; 2];
    let counter = Buffer(words.as_mut_ptr());
    let kernel = move || unsafe {
        fetch_add_u32(counter.0.cast::<u8>().add(2).cast(), 1);
    };
    match run(&Machine::new(1), &block(1), &mut NoObserver, &kernel).unwrap_err() {
        CpuError::Panicked { message, .. } => assert!(
            message.contains("an atomic of `u32`") && message.contains("not aligned to 4 bytes"),
            "{message}"
        ),
        other => panic!("expected a panic error, got {other}"),
    }
    assert_eq!(words, [0, 0], "the misaligned atomic did not run");
}

/// The dynamic part ends where the launch says, not at the 16-byte boundary
/// that aligns the next array: a word just past it is an error.
#[test]
fn a_word_past_the_dynamic_shared_bytes_is_an_error() {
    let launch = CpuLaunch {
        dynamic_shared_bytes: 4,
        ..block(32)
    };
    let past = || unsafe {
        if thread_idx_x() == 0 {
            dynamic_shared_memory::<u32>().write(1, 7);
        }
    };
    let error = run(&Machine::new(1), &launch, &mut NoObserver, &past).unwrap_err();
    match &error {
        CpuError::Panicked { message, .. } => {
            assert!(
                message.contains("at byte 4") && message.contains("0..4"),
                "{message}"
            );
        }
        other => panic!("expected a panic error, got {other}"),
    }
    let inside = || unsafe {
        if thread_idx_x() == 0 {
            dynamic_shared_memory::<u32>().write(0, 7);
        }
    };
    run(&Machine::new(1), &launch, &mut NoObserver, &inside).unwrap();
}

/// Shared memory buffers are reused, within a run and across runs: every
/// CTA must still start from zeros, never from another CTA's words (which
/// would make a kernel's result depend on what ran before it).
#[test]
fn every_cta_starts_from_zeroed_shared_memory() {
    use std::sync::atomic::{AtomicU32, Ordering};
    let dirtiest = AtomicU32::new(0);
    let kernel = || {
        let tile = shared_array!(fresh: [u32; 64]);
        let t = thread_idx_x();
        // SAFETY: t < 64 threads; each thread reads and writes its word.
        let before = unsafe { tile.read(t) };
        dirtiest.fetch_max(before, Ordering::Relaxed);
        unsafe { tile.write(t, 0xdead_beef) };
    };
    // One SM, one resident CTA: eight CTAs in turn on one buffer, twice.
    let launch = CpuLaunch {
        grid: [8, 1, 1],
        ..block(64)
    };
    for _ in 0..2 {
        run(&Machine::new(1), &launch, &mut NoObserver, &kernel).unwrap();
    }
    assert_eq!(dirtiest.load(Ordering::Relaxed), 0);
}

/// `F32x4` on the CPU backend: `copy_quads` copies exactly under shuffled
/// thread orders, and a quad reaching past its buffer is stopped before it
/// touches memory (the check covers all 16 bytes, not the first word). The
/// buffers are `F32x4`s, so 16-byte aligned as device allocations are.
#[test]
fn a_quad_copy_is_exact_and_bounds_checked_in_every_order() {
    use clustered_device::memory::F32x4;
    use clustered_suite::host::cpu::{run_checked, Buffers};
    use kernels::vector::copy_quads;
    let quads = 3 * 64;
    let input: Vec<F32x4> = (0..quads)
        .map(|i| F32x4([0, 1, 2, 3].map(|k| (4 * i + k) as f32 * 0.5 - 7.0)))
        .collect();
    let launch = CpuLaunch {
        grid: [3, 1, 1],
        block: [64, 1, 1],
        dynamic_shared_bytes: 0,
        resident_blocks: 2,
    };
    let machines =
        std::iter::once(Machine::new(2)).chain((0..5).map(|s| Machine::new(2).interleave(s)));
    for machine in machines {
        let mut output = vec![F32x4::default(); quads];
        let mut buffers = Buffers::new();
        let a = buffers.input("input", &input).cast::<f32>();
        let c = buffers.output("output", &mut output).cast::<f32>();
        // SAFETY: both buffers hold `quads` quads, what the kernel indexes.
        run_checked(&machine, &launch, &mut NoObserver, &buffers, &|| unsafe {
            copy_quads(a, c, quads as u32)
        })
        .unwrap();
        assert_eq!(output, input, "{machine:?}");
    }
    // The output registered 4 bytes short: the last quad's store is refused.
    let mut output = vec![F32x4::default(); quads];
    let mut buffers = Buffers::new();
    let a = buffers.input("input", &input).cast::<f32>();
    let c = output.as_mut_ptr().cast::<f32>();
    // SAFETY: registered as its first 4 * quads - 1 floats only.
    let short = unsafe { std::slice::from_raw_parts_mut(c, 4 * quads - 1) };
    buffers.output("output", short);
    let error = run_checked(
        &Machine::new(2),
        &launch,
        &mut NoObserver,
        &buffers,
        &|| unsafe { copy_quads(a, c, quads as u32) },
    )
    .unwrap_err();
    assert!(matches!(error, CpuError::OutOfBounds { .. }), "{error}");
    assert_eq!(
        output[quads - 1],
        F32x4::default(),
        "nothing stored past the check"
    );
}
