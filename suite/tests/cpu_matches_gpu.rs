//! The CPU backend computes what the GPU computes: every suite kernel's
//! outputs, bit for bit, in every schedule (within the reference's
//! tolerance where the kernel uses the GPU's approximate instructions:
//! `Workload::approximate`, read from the PTX). Without a GPU it says so and passes (CI has
//! none; `.gpu/run-all.sh` runs it on one).

use clustered_suite::host::cpu::Dispatch;
use clustered_suite::measure::measure;
use clustered_suite::sim::DeviceProfile;
use clustered_suite::simulate::simulate;
use clustered_suite::suite::{self, Size};

mod common;
use common::Watchdog;
use std::time::Duration;

#[test]
fn every_suite_kernel_computes_the_same_words_on_the_cpu_and_the_gpu() {
    let Some((gpu, module)) = common::suite_on_gpu() else {
        return;
    };
    let profile = DeviceProfile::h100_sxm().scaled(4).unwrap();
    let ptx =
        clustered_predict::Module::parse(clustered_suite::PTX).expect("the suite's PTX parses");
    let mut failures = Vec::new();
    for workload in suite::all(Size::Test) {
        let watchdog = Watchdog::new(
            format!("{} (every schedule, on the GPU)", workload.name),
            Duration::from_secs(120),
        );
        let on_gpu = measure(&gpu, &module, &workload, Some(1))
            .unwrap_or_else(|e| panic!("{}: {e}", workload.name));
        for timing in &on_gpu.timings {
            if !timing.matches_baseline {
                failures.push(format!(
                    "{} / {}: differs from the baseline on the GPU",
                    workload.name, timing.label
                ));
            }
        }
        if let Some(Err(message)) = &on_gpu.baseline_check {
            failures.push(format!("{} on the GPU: {message}", workload.name));
        }
        drop(watchdog);
        for variant in &workload.variants {
            let on_cpu = simulate(&workload, variant, &profile, Dispatch::RoundRobin)
                .unwrap_or_else(|e| panic!("{} / {}: {e}", workload.name, variant.label));
            if workload.approximate(&ptx) {
                // The GPU's approximate instructions against the host's
                // math: both within the reference's tolerance (the GPU's
                // baseline was checked above), not bit for bit.
                if let Err(message) = (workload.check)(&workload, &on_cpu.outputs) {
                    failures.push(format!(
                        "{} / {} on the CPU backend: {message}",
                        workload.name, variant.label
                    ));
                }
            } else if on_cpu.outputs != on_gpu.baseline_outputs {
                let (cpu, gpu) = (&on_cpu.outputs, &on_gpu.baseline_outputs);
                let first = cpu
                    .iter()
                    .flatten()
                    .zip(gpu.iter().flatten())
                    .position(|(a, b)| a != b);
                failures.push(format!(
                    "{} / {}: CPU backend differs from the GPU (first differing word: {first:?})",
                    workload.name, variant.label
                ));
            }
        }
        println!(
            "{}: CPU backend and GPU agree in {} schedules",
            workload.name,
            workload.variants.len()
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
