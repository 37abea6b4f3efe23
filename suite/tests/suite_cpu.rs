//! Every suite kernel in every schedule on the CPU backend: each original CTA
//! runs exactly once, the baseline's outputs match a CPU reference, and every
//! schedule's outputs equal the baseline's bit for bit. Run under several
//! dispatchers and machine sizes, including one SM.

use clustered_suite::host::cpu::Dispatch;
use clustered_suite::sim::access::Direction;
use clustered_suite::sim::DeviceProfile;
use clustered_suite::simulate::simulate;
use clustered_suite::suite::{self, Size};

/// Returns the prefetch lanes the schedules issued (all in the buffers).
fn check_suite(sms: u32, dispatch: Dispatch) -> u64 {
    let profile = DeviceProfile::h100_sxm().scaled(sms).unwrap();
    let mut prefetch_lanes = 0;
    for workload in suite::all(Size::Test) {
        let mut baseline = None;
        for variant in &workload.variants {
            let case = format!(
                "{} / {} on {sms} SMs, {dispatch:?}",
                workload.name, variant.label
            );
            let run = simulate(&workload, variant, &profile, dispatch.clone())
                .unwrap_or_else(|e| panic!("{case}: {e}"));
            for (task, &runs) in run.task_runs.iter().enumerate() {
                assert_eq!(runs, 1, "{case}: original CTA {task} ran {runs} times");
            }
            assert!(
                run.stats.instructions > 0,
                "{case}: no global access reached the cache model"
            );
            // A kernel whose body loads global memory (as its access
            // analysis reads it) must show loads to the cache model: a
            // pointer form the tracer misses would make every locality
            // number silently wrong.
            let loads = workload.variants[0]
                .accesses
                .is_some_and(|a| a.accesses.iter().any(|x| x.direction == Direction::Load));
            assert!(
                !loads || run.stats.load_sectors > 0,
                "{case}: the kernel loads global memory but no load reached the cache model"
            );
            assert_eq!(
                run.stray_prefetch_lanes, 0,
                "{case}: {} of {} prefetch lanes address none of the kernel's buffers: \
                 guard the prefetch hook with the body's bounds test",
                run.stray_prefetch_lanes, run.prefetch_lanes
            );
            prefetch_lanes += run.prefetch_lanes;
            match &baseline {
                None => {
                    (workload.check)(&workload, &run.outputs)
                        .unwrap_or_else(|e| panic!("{case}: wrong result: {e}"));
                    baseline = Some(run.outputs);
                }
                Some(expected) => assert!(
                    &run.outputs == expected,
                    "{case}: differs from the baseline's output"
                ),
            }
        }
    }
    prefetch_lanes
}

#[test]
fn suite_on_four_sms_round_robin() {
    check_suite(4, Dispatch::RoundRobin);
}

#[test]
fn suite_on_seven_sms_in_the_observed_order() {
    check_suite(7, Dispatch::ObservedHopper);
}

#[test]
fn suite_on_one_sm() {
    // A hook runs only where a block has a next task: at the test sizes,
    // on one SM, the stray-prefetch check sees the stride schedules'.
    let prefetch_lanes = check_suite(1, Dispatch::Random(3));
    assert!(prefetch_lanes > 0, "no schedule prefetched on one SM");
}

/// The column walks (`jacobi5_march`, `jacobi7_3d_march` and their quad
/// forms) take their walk's length as an argument: the suite's test size
/// walks 2 rows or planes, so every walk there starts or ends inside the
/// grid. Here each runs, in every schedule, with walks of 1 to 5 rows or
/// planes (the quad walks take two a step: every length gives an even and
/// an odd count of steps somewhere in the grid, so the paired loop, its
/// single remainder and both together all run, and some lengths leave the
/// last walk short) and with one walk over the whole grid (which starts
/// and ends at its borders): the same bits as the reference.
#[test]
fn the_walks_are_right_at_every_walk_length() {
    use clustered_suite::suite::Arg;
    let profile = DeviceProfile::h100_sxm().scaled(4).unwrap();
    // (workload, the grid axis it walks, the argument holding that extent)
    let walks = [
        ("jacobi5_march", 1, 3),
        ("jacobi5_march4", 1, 3),
        ("jacobi7_3d_march", 2, 4),
        ("jacobi7_3d_march4", 2, 4),
    ];
    let mut checked = 0;
    for (name, build) in suite::WORKLOADS {
        let Some(&(_, axis, extent_arg)) = walks.iter().find(|w| w.0 == *name) else {
            continue;
        };
        let Arg::U32(extent) = build(Size::Test).args[extent_arg] else {
            panic!("{name}: argument {extent_arg} is the walked extent");
        };
        // 1 to 5 per walk, one walk over the whole grid.
        for length in [1, 2, 3, 4, 5, extent] {
            let mut walked = build(Size::Test);
            *walked.args.last_mut().unwrap() = Arg::U32(length);
            walked.shape.grid[axis] = extent.div_ceil(length);
            for variant in &walked.variants {
                let case = format!("{name} / {} walking {length}", variant.label);
                let run = simulate(&walked, variant, &profile, Dispatch::Random(7))
                    .unwrap_or_else(|e| panic!("{case}: {e}"));
                (walked.check)(&walked, &run.outputs)
                    .unwrap_or_else(|e| panic!("{case}: wrong result: {e}"));
                checked += 1;
            }
        }
    }
    assert!(
        checked >= 2 * 6 * 8 + 2 * 6 * 4,
        "checked only {checked} runs"
    );
}
