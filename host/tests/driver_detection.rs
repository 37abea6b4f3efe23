//! `Gpu::new` must never panic: without libcuda it returns `Error::NoDriver`,
//! with a driver but no device `Error::NoDevice`, and on a GPU machine it
//! succeeds. Which case ran is printed.

use clustered_host::{Error, Gpu};

#[test]
fn gpu_new_returns_typed_error_or_succeeds() {
    let result = std::panic::catch_unwind(|| Gpu::new(0));
    let result = result.expect("Gpu::new(0) panicked");
    match result {
        Ok(gpu) => {
            let p = gpu.properties();
            eprintln!(
                "case: GPU present: {} (cc {}.{}, {} SMs)",
                p.name, p.compute_capability.0, p.compute_capability.1, p.sm_count
            );
            assert!(p.sm_count > 0);
            assert!(p.max_threads_per_block > 0);
            assert_eq!(p.max_warps_per_sm * p.warp_size, p.max_threads_per_sm);
            assert!(Gpu::device_count().unwrap() >= 1);
        }
        Err(Error::NoDriver) => {
            eprintln!("case: no NVIDIA driver (libcuda not found): got Error::NoDriver");
            assert!(matches!(Gpu::device_count(), Err(Error::NoDriver)));
            assert!(Error::NoDriver.to_string().contains("no NVIDIA driver"));
        }
        Err(Error::NoDevice { ordinal, count }) => {
            eprintln!("case: driver present but no device: got Error::NoDevice");
            assert_eq!(ordinal, 0);
            assert_eq!(count, 0);
        }
        Err(e) => panic!("unexpected error from Gpu::new(0): {e}"),
    }
}

#[test]
fn out_of_range_ordinal_is_no_device_or_no_driver() {
    match Gpu::new(1 << 20) {
        Err(Error::NoDriver) => eprintln!("case: no driver"),
        Err(Error::NoDevice { ordinal, count }) => {
            eprintln!("case: driver present, {count} device(s)");
            assert_eq!(ordinal, 1 << 20);
        }
        other => panic!("expected NoDevice or NoDriver, got {other:?}"),
    }
}
