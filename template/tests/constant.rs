//! A constant table declared in the kernels crate, written by the host and
//! read by a kernel on the CPU backend.

use clustered::host::cpu::{self, launch_entry, CpuLaunch, Machine, NoObserver};
use clustered::host::ClusterOptions;
use my_kernels::{weigh, WEIGHTS};

#[test]
fn a_kernel_reads_the_weights_the_host_wrote() {
    let weights: Vec<f32> = (1..=8).map(|w| w as f32).collect();
    cpu::write_constant(WEIGHTS, &weights).unwrap();
    let n = 1000u32;
    let input: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let mut output = vec![0.0f32; n as usize];
    let launch = CpuLaunch {
        grid: [n.div_ceil(128), 1, 1],
        block: [128, 1, 1],
        dynamic_shared_bytes: 0,
        resident_blocks: 2,
    };
    // SAFETY: both buffers hold n floats; the kernel guards i < n.
    unsafe {
        launch_entry(
            weigh::KERNEL,
            &Machine::new(2),
            launch,
            &ClusterOptions::default(),
            &mut NoObserver,
            (&input, &mut output, n),
        )
    }
    .unwrap();
    for (i, (&out, &x)) in output.iter().zip(&input).enumerate() {
        assert_eq!(out, x * weights[i / 32 % 8], "element {i}");
    }
    // Seven weights for eight: refused, naming the table.
    let error = cpu::write_constant(WEIGHTS, &weights[..7]).unwrap_err();
    assert!(error.to_string().contains("WEIGHTS"), "{error}");
}
