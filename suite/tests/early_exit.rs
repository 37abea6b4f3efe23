//! A kernel whose threads return before the block's barriers (a tail guard,
//! and half of one block) computes under every schedule, on the CPU backend,
//! exactly what the plain kernel computes: with the early exits in the first,
//! a middle and the last block, on several dispatchers and block sizes.

use clustered_suite::host::cpu::{launch_entry, CpuLaunch, Dispatch, Machine, NoObserver};
use clustered_suite::host::{ClusterOptions, Entry};
use kernels::early_exit::*;

/// What `ragged_sum` computes (`input` is its `n` elements), from the
/// suite's reference.
fn reference(input: &[u32], n: u32, width: u32, ragged: u32) -> Vec<u32> {
    assert_eq!(input.len(), n as usize);
    clustered_suite::reference::ragged_sum(input, width as usize, ragged as usize, 0)
}

fn original(n: u32, width: u32) -> CpuLaunch {
    CpuLaunch {
        grid: [n.div_ceil(width), 1, 1],
        block: [width, 1, 1],
        dynamic_shared_bytes: 0,
        resident_blocks: 2,
    }
}

/// Runs one entry of `ragged_sum` (its baseline or a schedule).
fn run_ragged(
    machine: &Machine,
    entry: Entry<ragged_sum>,
    input: &[u32],
    n: u32,
    width: u32,
    ragged: u32,
) -> Result<Vec<u32>, String> {
    let mut output = vec![0u32; input.len()];
    // SAFETY: the kernel reads input[..n] and writes output[..n], and both
    // hold n words.
    unsafe {
        launch_entry(
            entry,
            machine,
            original(n, width),
            &ClusterOptions::default(),
            &mut NoObserver,
            (input, &mut output[..], n, ragged),
        )
    }
    .map_err(|e| e.to_string())?;
    Ok(output)
}

#[test]
fn early_exits_before_barriers_give_the_plain_kernels_result_under_every_schedule() {
    let machines = [
        ("round-robin", Machine::new(3)),
        (
            "random",
            Machine::new(2).with_dispatch(Dispatch::Random(11)),
        ),
    ];
    // The registry holds each `#[clustered]` of `ragged_sum`: one per binding
    // and variant (an empty one would make this test pass vacuously).
    assert_eq!(ragged_sum::SCHEDULES.len(), 9);
    for (width, n) in [(64u32, 64u32 * 7 - 21), (96, 96 * 5 + 13), (32, 32 * 4)] {
        let blocks = n.div_ceil(width);
        let input: Vec<u32> = (0..n).map(|i| i.wrapping_mul(2_654_435_761)).collect();
        for ragged in [0, blocks / 2, blocks - 1] {
            let expected = reference(&input, n, width, ragged);
            for (machine_name, machine) in &machines {
                let case = |name: &str| {
                    format!("{name} on {machine_name}, {blocks} blocks of {width}, early exits in block {ragged}")
                };
                let plain = run_ragged(machine, ragged_sum::KERNEL, &input, n, width, ragged)
                    .unwrap_or_else(|e| panic!("{}: {e}", case("baseline")));
                assert_eq!(plain, expected, "{}", case("baseline"));
                for &entry in ragged_sum::SCHEDULES {
                    let name = entry.name();
                    let got = run_ragged(machine, entry, &input, n, width, ragged)
                        .unwrap_or_else(|e| panic!("{}: {e}", case(name)));
                    assert_eq!(got, expected, "{}", case(name));
                }
            }
        }
    }
}

mod common;

/// The same on a GPU: every schedule of `ragged_sum` gives the plain
/// kernel's words, each launch under a watchdog (a barrier that never opens
/// hangs, it does not fail). Skips, saying so, without a GPU.
#[test]
fn early_exits_before_barriers_on_the_gpu() {
    use clustered_suite::host::LaunchConfig;
    use std::time::Duration;
    let Some((gpu, module)) = common::suite_on_gpu() else {
        return;
    };
    for (width, n) in [
        (256u32, 256u32 * 300 - 77),
        (96, 96 * 1000 + 13),
        (64, 64 * 7),
    ] {
        let blocks = n.div_ceil(width);
        let input: Vec<u32> = (0..n).map(|i| i.wrapping_mul(2_654_435_761)).collect();
        let device_input = gpu.htod(&input).unwrap();
        let config = LaunchConfig::new([blocks, 1, 1], [width, 1, 1]);
        for ragged in [0, blocks / 2, blocks - 1] {
            let expected = reference(&input, n, width, ragged);
            let case = |name: &str| {
                format!("{name}, {blocks} blocks of {width}, early exits in block {ragged}")
            };
            let options = ClusterOptions::default();
            let mut out = gpu.zeros::<u32>(n as usize).unwrap();
            {
                let _watchdog = Watchdog::new(case("ragged_sum"), Duration::from_secs(20));
                // SAFETY: the kernel reads input[..n] and writes out[..n],
                // and both hold n words.
                unsafe {
                    gpu.launch_entry(
                        &module,
                        ragged_sum::KERNEL,
                        config,
                        &options,
                        (&device_input, &mut out, n, ragged),
                    )
                }
                .unwrap_or_else(|e| panic!("{}: {e}", case("baseline")));
                assert_eq!(gpu.dtoh(&out).unwrap(), expected, "{}", case("baseline"));
            }
            for &entry in ragged_sum::SCHEDULES {
                let name = entry.name();
                let mut out = gpu.zeros::<u32>(n as usize).unwrap();
                eprintln!("{}", case(name));
                let _watchdog = Watchdog::new(case(name), Duration::from_secs(20));
                // SAFETY: as for the baseline.
                unsafe {
                    gpu.launch_entry(
                        &module,
                        entry,
                        config,
                        &options,
                        (&device_input, &mut out, n, ragged),
                    )
                }
                .unwrap_or_else(|e| panic!("{}: {e}", case(name)));
                assert_eq!(gpu.dtoh(&out).unwrap(), expected, "{}", case(name));
            }
        }
    }
}

use common::Watchdog;

/// A vote in a persistent schedule of a body without early returns (the
/// macro refuses it only where threads can return): every schedule gives
/// the plain kernel's words, with all-odd blocks and blocks with one even
/// word, on machines where blocks run several tasks.
#[test]
fn a_vote_without_early_returns_runs_under_every_schedule() {
    assert_eq!(block_all_odd::SCHEDULES.len(), 6);
    let (width, n) = (64u32, 64u32 * 9 - 5);
    let blocks = n.div_ceil(width);
    // Odd words, but one even word in every third block.
    let input: Vec<u32> = (0..n)
        .map(|i| {
            if (i / width) % 3 == 1 && i % width == 7 {
                2 * i
            } else {
                2 * i + 1
            }
        })
        .collect();
    let expected: Vec<u32> = (0..n)
        .map(|i| {
            let (block, t) = (i / width, i % width);
            1000 * u32::from(block % 3 != 1) + block + t
        })
        .collect();
    // Round-robin, random dispatch, and the lanes interleaved at random.
    for machine in [
        Machine::new(2),
        Machine::new(3).with_dispatch(Dispatch::Random(5)),
        Machine::new(2).interleave(7),
    ] {
        for entry in
            std::iter::once(block_all_odd::KERNEL).chain(block_all_odd::SCHEDULES.iter().copied())
        {
            let mut output = vec![0u32; n as usize];
            // SAFETY: the kernel reads input[..n] and writes output[..n].
            unsafe {
                launch_entry(
                    entry,
                    &machine,
                    original(n, width),
                    &ClusterOptions::default(),
                    &mut NoObserver,
                    (&input[..], &mut output[..], n),
                )
            }
            .unwrap_or_else(|e| panic!("{} ({blocks} blocks): {e}", entry.name()));
            assert_eq!(output, expected, "{} ({blocks} blocks)", entry.name());
        }
    }
}
