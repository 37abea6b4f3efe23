//! What a typed CPU-backend launch of a small grid costs (4 blocks of 32
//! threads, vector_add), per schedule: `cargo run --release --example
//! cpu_launch_cost`. Thread stacks come from a per-host-thread pool after the
//! first launch, so this is the steady cost.

use clustered_suite::host::cpu::{launch_entry, CpuLaunch, Machine, NoObserver};
use clustered_suite::host::ClusterOptions;
use kernels::vector::vector_add;
fn main() {
    let n = 128u32;
    let (a, b) = (vec![1f32; n as usize], vec![2f32; n as usize]);
    let mut c = vec![0f32; n as usize];
    let machine = Machine::new(8);
    let launch = CpuLaunch {
        grid: [4, 1, 1],
        block: [32, 1, 1],
        dynamic_shared_bytes: 0,
        resident_blocks: 2,
    };
    println!(
        "4 blocks of 32 threads, 8 simulated SMs, {} runs each:",
        200
    );
    for entry in std::iter::once(vector_add::KERNEL)
        .chain(vector_add::SCHEDULES.iter().copied())
        .take(3)
    {
        let t = std::time::Instant::now();
        let runs = 200;
        for _ in 0..runs {
            // SAFETY: the kernel guards i < n; each buffer holds n floats.
            unsafe {
                launch_entry(
                    entry,
                    &machine,
                    launch,
                    &ClusterOptions::default(),
                    &mut NoObserver,
                    (&a, &b, &mut c, n),
                )
            }
            .unwrap();
        }
        println!(
            "{}: {:.1} us per launch",
            entry.name(),
            t.elapsed().as_secs_f64() * 1e6 / runs as f64
        );
    }
}
