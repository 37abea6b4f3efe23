//! The kernels on the CPU backend: every schedule computes the transpose,
//! and the locality simulator sees every access.

use clustered::host::cpu::{Dispatch, Machine, NoObserver};
use clustered_template::{locality, reference, schedules, transpose, transpose_on_cpu};

fn input(n: u32) -> Vec<f32> {
    (0..n * n).map(|i| i as f32).collect()
}

#[test]
fn every_schedule_transposes_under_every_dispatcher() {
    // 40 is not a multiple of the block: the edge blocks must stay in bounds.
    let n = 40;
    let input = input(n);
    let expected = reference(&input, n as usize);
    // The baseline and `transpose_grouped`, from the macro's registry.
    assert_eq!(schedules().count(), 2);
    for dispatch in [Dispatch::RoundRobin, Dispatch::Random(7)] {
        let name = format!("{dispatch:?}");
        let machine = Machine::new(4).with_dispatch(dispatch);
        for schedule in schedules() {
            let output =
                transpose_on_cpu(&machine, 2, schedule, &input, n, &mut NoObserver).unwrap();
            assert_eq!(output, expected, "{} under {name}", schedule.name());
        }
    }
}

#[test]
fn a_wrong_input_length_is_an_error() {
    let machine = Machine::new(4);
    let error = transpose_on_cpu(
        &machine,
        2,
        transpose::KERNEL,
        &[0.0; 3],
        2,
        &mut NoObserver,
    )
    .unwrap_err();
    assert!(error.contains("n * n is 4"), "{error}");
}

#[test]
fn the_simulator_counts_every_access() {
    let n = 64;
    let input = input(n);
    for schedule in schedules() {
        let (output, stats) = locality(schedule, &input, n, 4).unwrap();
        assert_eq!(output, reference(&input, n as usize));
        // Every float is read once and written once: 64 * 64 * 4 bytes in
        // 32-byte sectors at least, both ways.
        let sectors = u64::from(n * n) * 4 / 32;
        assert!(
            stats.l1_to_l2_sectors >= 2 * sectors,
            "{schedule:?}: {stats:?}"
        );
        assert!(stats.dram_sectors() >= sectors, "{schedule:?}: {stats:?}");
    }
}
