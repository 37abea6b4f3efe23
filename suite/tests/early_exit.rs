//! A kernel whose threads return before the block's barriers (a tail guard,
//! and half of one block) computes under every schedule, on the CPU backend,
//! exactly what the plain kernel computes: with the early exits in the first,
//! a middle and the last block, on several dispatchers and block sizes.

use clustered_suite::host::cpu::{run, CpuLaunch, CpuPlan, Dispatch, Machine, NoObserver};
use clustered_suite::host::{ClusterOptions, KernelContract};
use kernels::early_exit::*;

type Schedule = unsafe fn(*const u32, *mut u32, u32, u32, clustered_suite::host::ClusterLaunch);

fn schedules() -> [(&'static str, Schedule, &'static KernelContract); 7] {
    [
        (
            "reorder",
            ragged_sum_reorder,
            &__clustered_contract_ragged_sum_reorder,
        ),
        (
            "redirect",
            ragged_sum_redirect,
            &__clustered_contract_ragged_sum_redirect,
        ),
        (
            "agents",
            ragged_sum_agents,
            &__clustered_contract_ragged_sum_agents,
        ),
        (
            "agents_chunked",
            ragged_sum_agents_chunked,
            &__clustered_contract_ragged_sum_agents_chunked,
        ),
        (
            "persistent",
            ragged_sum_persistent,
            &__clustered_contract_ragged_sum_persistent,
        ),
        (
            "stride",
            ragged_sum_stride,
            &__clustered_contract_ragged_sum_stride,
        ),
        (
            "stride_waves",
            ragged_sum_stride_waves,
            &__clustered_contract_ragged_sum_stride_waves,
        ),
    ]
}

/// What `ragged_sum` computes, written plainly.
fn reference(input: &[u32], n: u32, width: u32, ragged: u32) -> Vec<u32> {
    let mut output = vec![0u32; input.len()];
    for block in 0..n.div_ceil(width) {
        let start = block * width;
        let live = if block == ragged { width / 2 } else { width }.min(n - start) as usize;
        let mut values: Vec<u32> = (0..live).map(|t| input[start as usize + t]).collect();
        let mut distance = 1;
        for _ in 0..RAGGED_ROUNDS {
            values = (0..live)
                .map(|t| values[t].wrapping_add(values[(t + distance) % live]))
                .collect();
            distance *= 2;
        }
        for (t, value) in values.into_iter().enumerate() {
            output[start as usize + t] = value.wrapping_add(block);
        }
    }
    output
}

fn original(n: u32, width: u32) -> CpuLaunch {
    CpuLaunch {
        grid: [n.div_ceil(width), 1, 1],
        block: [width, 1, 1],
        dynamic_shared_bytes: 0,
        resident_blocks: 2,
    }
}

/// Runs the plain kernel (`schedule: None`) or a schedule.
fn run_ragged(
    machine: &Machine,
    schedule: Option<(Schedule, &KernelContract)>,
    input: &[u32],
    n: u32,
    width: u32,
    ragged: u32,
) -> Result<Vec<u32>, String> {
    let mut output = vec![0u32; input.len()];
    let (i, o) = (input.as_ptr(), output.as_mut_ptr());
    let launch = original(n, width);
    match schedule {
        None => run(machine, &launch, &mut NoObserver, &|| unsafe {
            ragged_sum(i, o, n, ragged)
        }),
        Some((kernel, contract)) => {
            let mut plan = CpuPlan::new(contract, launch, machine, &ClusterOptions::default())
                .map_err(|e| e.to_string())?;
            let parameter = plan.parameter();
            run(machine, &plan.launch, &mut NoObserver, &|| unsafe {
                kernel(i, o, n, ragged, parameter)
            })
        }
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
    for (width, n) in [(64u32, 64u32 * 7 - 21), (96, 96 * 5 + 13), (32, 32 * 4)] {
        let blocks = n.div_ceil(width);
        let input: Vec<u32> = (0..n).map(|i| i.wrapping_mul(2_654_435_761)).collect();
        for ragged in [0, blocks / 2, blocks - 1] {
            let expected = reference(&input, n, width, ragged);
            for (machine_name, machine) in &machines {
                let case = |name: &str| {
                    format!("{name} on {machine_name}, {blocks} blocks of {width}, early exits in block {ragged}")
                };
                let plain = run_ragged(machine, None, &input, n, width, ragged)
                    .unwrap_or_else(|e| panic!("{}: {e}", case("baseline")));
                assert_eq!(plain, expected, "{}", case("baseline"));
                for (name, kernel, contract) in schedules() {
                    let got =
                        run_ragged(machine, Some((kernel, contract)), &input, n, width, ragged)
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
    use clustered_suite::host::{Gpu, LaunchConfig};
    use std::time::Duration;
    let gpu = match Gpu::new(0) {
        Ok(gpu) => gpu,
        Err(error) => {
            eprintln!("skipped: no GPU ({error})");
            return;
        }
    };
    let module = gpu
        .load_module(clustered_suite::PTX)
        .expect("the suite's PTX loads");
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
            let mut out = gpu.zeros::<u32>(n as usize).unwrap();
            let baseline = module.kernel("ragged_sum").unwrap();
            {
                let _watchdog = Watchdog::new(case("ragged_sum"), Duration::from_secs(20));
                unsafe {
                    gpu.launch(&baseline, config)
                        .arg(&device_input)
                        .arg(&mut out)
                        .arg(&n)
                        .arg(&ragged)
                        .run()
                        .unwrap()
                };
                assert_eq!(gpu.dtoh(&out).unwrap(), expected, "{}", case("baseline"));
            }
            for (name, _, _) in schedules() {
                let name = format!("ragged_sum_{name}");
                let kernel = module.clustered_kernel(&name).unwrap();
                let plan = gpu
                    .plan_clustered(&kernel, config, ClusterOptions::default())
                    .unwrap();
                let mut out = gpu.zeros::<u32>(n as usize).unwrap();
                eprintln!("{}", case(&name));
                let _watchdog = Watchdog::new(case(&name), Duration::from_secs(20));
                unsafe {
                    gpu.launch_plan(&plan)
                        .arg(&device_input)
                        .arg(&mut out)
                        .arg(&n)
                        .arg(&ragged)
                        .run()
                        .unwrap()
                };
                assert_eq!(gpu.dtoh(&out).unwrap(), expected, "{}", case(&name));
            }
        }
    }
}

use common::Watchdog;
