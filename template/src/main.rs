//! The locality report of `transpose`'s schedules on a simulated H100 (8
//! SMs), then, if there is a GPU, the same schedules on it.

use clustered::host::Gpu;
use clustered_template::{locality, reference, schedules, transpose_on_gpu};

fn main() -> Result<(), String> {
    let n = 256u32;
    let input: Vec<f32> = (0..n * n).map(|i| i as f32).collect();
    let expected = reference(&input, n as usize);
    println!("transpose {n} x {n} on 8 simulated SMs:");
    println!(
        "{:<18} {:>12} {:>16} {:>13}",
        "schedule", "L1 hit rate", "L1->L2 sectors", "DRAM sectors"
    );
    for schedule in schedules() {
        let name = schedule.name();
        let (output, stats) = locality(schedule, &input, n, 8)?;
        if output != expected {
            return Err(format!("{name} computed a wrong transpose"));
        }
        println!(
            "{:<18} {:>11.1}% {:>16} {:>13}",
            name,
            100.0 * stats.l1_hit_rate(),
            stats.l1_to_l2_sectors,
            stats.dram_sectors()
        );
    }
    match Gpu::new(0) {
        Ok(gpu) => {
            for schedule in schedules() {
                let output = transpose_on_gpu(&gpu, schedule, &input, n)?;
                let verdict = if output == expected {
                    "correct"
                } else {
                    "WRONG"
                };
                println!(
                    "GPU {}: {} {verdict}",
                    gpu.properties().name,
                    schedule.name()
                );
            }
        }
        Err(error) => println!("no GPU ({error}): simulated only"),
    }
    Ok(())
}
