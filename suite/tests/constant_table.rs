//! Constant tables (`constant_table!`): a kernel reads what the host wrote,
//! in every schedule, on the CPU backend and on a GPU (which this test
//! skips, saying so, when there is none); a table written with the wrong
//! length, never written, or missing from the module is a clear error.

use clustered_device::memory::F32x4;
use clustered_suite::host::cpu::{
    self, launch_entry, CpuLaunch, CpuLaunchError, CpuRun, Machine, NoObserver,
};
use clustered_suite::host::{ClusterOptions, Error, LaunchConfig};
use kernels::vector::{
    cubic_records, horner_constant, horner_global, horner_parameters, lookup_constant,
    lookup_global, polynomial, polynomial_global, COEFFICIENTS, CUBICS, HORNER_TERMS,
};

mod common;

/// A table of 64 coefficients, unlike for each `seed`.
fn coefficients(seed: u32) -> Vec<f32> {
    (0..COEFFICIENTS.len())
        .map(|k| ((k * 37 + seed * 11) % 29) as f32 / 29.0 - 0.5)
        .collect()
}

fn inputs(n: u32) -> Vec<f32> {
    (0..n)
        .map(|i| (i % 97) as f32 / 97.0 * 1.5 - 0.75)
        .collect()
}

/// What `polynomial` computes: Horner from the highest coefficient down.
fn reference(c: &[f32], x: &[f32], degree: u32) -> Vec<f32> {
    let degree = (degree as usize).min(c.len());
    x.iter()
        .map(|&x| {
            c[..degree]
                .iter()
                .rev()
                .fold(0.0f32, |value, &c| value.mul_add(x, c))
        })
        .collect()
}

const N: u32 = 1000;
const BLOCK: u32 = 64;

fn original() -> CpuLaunch {
    CpuLaunch {
        grid: [N.div_ceil(BLOCK), 1, 1],
        block: [BLOCK, 1, 1],
        dynamic_shared_bytes: 0,
        resident_blocks: 3,
    }
}

#[test]
fn every_schedule_reads_the_table_the_host_wrote_on_the_cpu_backend() {
    let x = inputs(N);
    let machines = [Machine::new(3), Machine::new(5).interleave(7)];
    // Two tables in turn: a launch reads the newest.
    for seed in [1, 2] {
        let c = coefficients(seed);
        cpu::write_constant(COEFFICIENTS, &c).unwrap();
        for degree in [1, 37, 64, 200] {
            let expected = reference(&c, &x, degree);
            let entries =
                std::iter::once(polynomial::KERNEL).chain(polynomial::SCHEDULES.iter().copied());
            for entry in entries {
                for machine in &machines {
                    let mut y = vec![f32::NAN; N as usize];
                    // SAFETY: x and y hold N floats; the kernel guards i < N.
                    unsafe {
                        launch_entry(
                            entry,
                            machine,
                            original(),
                            &ClusterOptions::default(),
                            &mut NoObserver,
                            (&x[..], &mut y[..], N, degree),
                        )
                    }
                    .unwrap();
                    assert_eq!(
                        y,
                        expected,
                        "{} of degree {degree}, table {seed}",
                        entry.name()
                    );
                }
            }
        }
    }
}

/// Sixteen records of four floats: one `ld.const.v4` each on a GPU.
fn cubics() -> Vec<F32x4> {
    (0..16)
        .map(|r| {
            F32x4([
                r as f32 * 0.5,
                1.0 - r as f32 * 0.125,
                0.25,
                -0.0625 * r as f32,
            ])
        })
        .collect()
}

fn cubic_reference(records: &[F32x4], x: &[f32]) -> Vec<f32> {
    x.iter()
        .enumerate()
        .map(|(i, &x)| {
            let F32x4([c0, c1, c2, c3]) = records[i / 32 % 16];
            c3.mul_add(x, c2).mul_add(x, c1).mul_add(x, c0)
        })
        .collect()
}

#[test]
fn a_table_of_16_byte_records_reads_whole_records_on_the_cpu_backend() {
    let (records, x) = (cubics(), inputs(N));
    cpu::write_constant(CUBICS, &records).unwrap();
    let mut y = vec![f32::NAN; N as usize];
    // SAFETY: x and y hold N floats; the kernel guards i < N.
    unsafe {
        launch_entry(
            cubic_records::KERNEL,
            &Machine::new(3),
            original(),
            &ClusterOptions::default(),
            &mut NoObserver,
            (&x[..], &mut y[..], N),
        )
    }
    .unwrap();
    assert_eq!(y, cubic_reference(&records, &x));
}

/// The benchmark's kernels (`examples/constant_tables.rs`), each from a
/// table, from global memory and (the fixed-degree one) from parameters,
/// give the same words as the CPU's reference, on shuffled warps and lanes.
#[test]
fn the_benchmark_s_kernels_read_what_their_tables_hold_on_the_cpu_backend() {
    let (c, x) = (coefficients(3), inputs(N));
    cpu::write_constant(COEFFICIENTS, &c).unwrap();
    let indices: Vec<u32> = (0..N).map(|i| i.wrapping_mul(0x9e37_79b9) >> 7).collect();
    let machines = [Machine::new(2), Machine::new(3).interleave(11)];
    let options = ClusterOptions::default();
    let fixed = reference(&c, &x, HORNER_TERMS);
    let terms: [f32; HORNER_TERMS as usize] = c[..HORNER_TERMS as usize].try_into().unwrap();
    let looked_up: Vec<f32> = indices.iter().map(|&k| c[(k % 64) as usize]).collect();
    for machine in &machines {
        // SAFETY (every launch): x, indices and y hold N elements, the
        // table 64; the kernels guard i < N.
        let go = |launch: &dyn Fn(&mut [f32]) -> Result<CpuRun, CpuLaunchError>| {
            let mut y = vec![f32::NAN; N as usize];
            launch(&mut y).unwrap();
            y
        };
        let o = (original(), &options);
        let y = go(&|y| unsafe {
            launch_entry(
                horner_constant::KERNEL,
                machine,
                o.0,
                o.1,
                &mut NoObserver,
                (&x[..], y, N),
            )
        });
        assert_eq!(y, fixed, "horner_constant");
        let y = go(&|y| unsafe {
            launch_entry(
                horner_global::KERNEL,
                machine,
                o.0,
                o.1,
                &mut NoObserver,
                (&x[..], y, N, &c[..]),
            )
        });
        assert_eq!(y, fixed, "horner_global");
        let y = go(&|y| unsafe {
            launch_entry(
                horner_parameters::KERNEL,
                machine,
                o.0,
                o.1,
                &mut NoObserver,
                (&x[..], y, N, terms),
            )
        });
        assert_eq!(y, fixed, "horner_parameters");
        let y = go(&|y| unsafe {
            launch_entry(
                polynomial_global::KERNEL,
                machine,
                o.0,
                o.1,
                &mut NoObserver,
                (&x[..], y, N, 37, &c[..]),
            )
        });
        assert_eq!(y, reference(&c, &x, 37), "polynomial_global");
        let y = go(&|y| unsafe {
            launch_entry(
                lookup_constant::KERNEL,
                machine,
                o.0,
                o.1,
                &mut NoObserver,
                (&indices[..], y, N),
            )
        });
        assert_eq!(y, looked_up, "lookup_constant");
        let y = go(&|y| unsafe {
            launch_entry(
                lookup_global::KERNEL,
                machine,
                o.0,
                o.1,
                &mut NoObserver,
                (&indices[..], y, N, &c[..]),
            )
        });
        assert_eq!(y, looked_up, "lookup_global");
    }
}

#[test]
fn a_table_never_written_on_the_launching_thread_stops_the_run_naming_it() {
    // A thread of its own: tables are per host thread on the CPU backend.
    let message = std::thread::spawn(|| {
        let x = inputs(N);
        let mut y = vec![0.0f32; N as usize];
        // SAFETY: as above.
        let result = unsafe {
            launch_entry(
                polynomial::KERNEL,
                &Machine::new(2),
                original(),
                &ClusterOptions::default(),
                &mut NoObserver,
                (&x[..], &mut y[..], N, 4),
            )
        };
        result.map(|_| ()).unwrap_err().to_string()
    })
    .join()
    .unwrap();
    assert!(
        message.contains("constant table COEFFICIENTS read before it was written")
            && message.contains("write_constant"),
        "{message}"
    );
}

#[test]
fn a_table_takes_exactly_its_length() {
    let error = cpu::write_constant(COEFFICIENTS, &[1.0; 63]).unwrap_err();
    assert_eq!((error.expected, error.given), (64, 63));
    assert!(error.to_string().contains("write exactly 64"), "{error}");
    assert_eq!(COEFFICIENTS.name(), "COEFFICIENTS");
    assert_eq!(COEFFICIENTS.bytes(), 256);
}

// A table the suite's module does not declare (this test crate's own).
clustered_device::constant_table!(NOT_IN_THE_MODULE: [u32; 4]);

#[test]
fn on_a_gpu_every_schedule_reads_the_table_and_bad_writes_are_refused() {
    let Some((gpu, module)) = common::suite_on_gpu() else {
        return;
    };
    let x = inputs(N);
    let x_gpu = gpu.htod(&x).unwrap();
    let launch = LaunchConfig::new([N.div_ceil(BLOCK), 1, 1], [BLOCK, 1, 1]);
    for seed in [1, 2] {
        let c = coefficients(seed);
        gpu.write_constant(&module, COEFFICIENTS, &c).unwrap();
        for degree in [1, 37, 64] {
            let expected = reference(&c, &x, degree);
            let entries =
                std::iter::once(polynomial::KERNEL).chain(polynomial::SCHEDULES.iter().copied());
            for entry in entries {
                let mut y = gpu.zeros::<f32>(N as usize).unwrap();
                // SAFETY: x and y hold N floats; the kernel guards i < N.
                unsafe {
                    gpu.launch_entry(
                        &module,
                        entry,
                        launch,
                        &ClusterOptions::default(),
                        (&x_gpu, &mut y, N, degree),
                    )
                }
                .unwrap();
                assert_eq!(
                    gpu.dtoh(&y).unwrap(),
                    expected,
                    "{} of degree {degree}, table {seed}",
                    entry.name()
                );
            }
        }
    }
    let records = cubics();
    gpu.write_constant(&module, CUBICS, &records).unwrap();
    let mut y = gpu.zeros::<f32>(N as usize).unwrap();
    // SAFETY: x and y hold N floats; the kernel guards i < N.
    unsafe {
        gpu.launch_entry(
            &module,
            cubic_records::KERNEL,
            launch,
            &ClusterOptions::default(),
            (&x_gpu, &mut y, N),
        )
    }
    .unwrap();
    assert_eq!(
        gpu.dtoh(&y).unwrap(),
        cubic_reference(&records, &x),
        "records of 16 bytes"
    );
    match gpu.write_constant(&module, COEFFICIENTS, &[0.0; 65]) {
        Err(Error::ConstantSize {
            expected: 256,
            found: 260,
            module: false,
            ..
        }) => {}
        other => panic!("65 values for 64: {other:?}"),
    }
    match gpu.write_constant(&module, NOT_IN_THE_MODULE, &[0; 4]) {
        Err(
            error @ Error::ConstantNotFound {
                name: "NOT_IN_THE_MODULE",
            },
        ) => {
            assert!(error.to_string().contains("constant_table!"), "{error}");
        }
        other => panic!("a table the module lacks: {other:?}"),
    }
}
