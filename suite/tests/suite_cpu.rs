//! Every suite kernel in every schedule on the CPU backend: each original CTA
//! runs exactly once, the baseline's outputs match a CPU reference, and every
//! schedule's outputs equal the baseline's bit for bit. Run under several
//! dispatchers and machine sizes, including one SM.

use clustered_suite::host::cpu::Dispatch;
use clustered_suite::sim::access::Direction;
use clustered_suite::sim::DeviceProfile;
use clustered_suite::simulate::simulate;
use clustered_suite::suite::{self, Size};

fn check_suite(sms: u32, dispatch: Dispatch) {
    let profile = DeviceProfile::h100_sxm().scaled(sms).unwrap();
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
    check_suite(1, Dispatch::Random(3));
}
