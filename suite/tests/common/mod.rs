//! What the end-to-end tests share.

use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::time::Duration;

/// The first GPU and the suite's module loaded on it; `None`, saying so on
/// stderr, where there is no GPU (CI has none), so that the test passes
/// there and runs where there is one.
#[allow(dead_code)] // not every test binary that shares this module uses it
pub fn suite_on_gpu() -> Option<(clustered_suite::host::Gpu, clustered_suite::host::Module)> {
    let gpu = match clustered_suite::host::Gpu::new(0) {
        Ok(gpu) => gpu,
        Err(error) => {
            eprintln!("skipped: no GPU ({error})");
            return None;
        }
    };
    let module = gpu
        .load_module(clustered_suite::PTX)
        .expect("the suite's PTX loads");
    Some((gpu, module))
}

/// Aborts the test process, naming `what`, if it is not dropped within
/// `limit`: a GPU launch that hangs (a barrier that never opens) fails the
/// run with the launch's name instead of blocking CI until its time limit.
#[allow(dead_code)] // not every test binary that shares this module uses it
pub struct Watchdog {
    done: Option<Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

#[allow(dead_code)]
impl Watchdog {
    pub fn new(what: impl Into<String>, limit: Duration) -> Watchdog {
        let what = what.into();
        let (done, wait) = channel::<()>();
        let thread = std::thread::spawn(move || {
            if let Err(RecvTimeoutError::Timeout) = wait.recv_timeout(limit) {
                eprintln!("HUNG: {what} did not finish within {limit:?}");
                // Not `exit`: its handlers would wait for the hung kernel.
                std::process::abort();
            }
        });
        Watchdog {
            done: Some(done),
            thread: Some(thread),
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        drop(self.done.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Two `n x n` matrices on the GPU (deterministic, A and B unlike) and
/// `sgemm_tiled`'s product of them, which the schedule and cluster tests
/// compare with bit for bit.
#[allow(dead_code)] // not every test binary that shares this module uses it
pub fn sgemm_tiled_reference(
    gpu: &clustered_suite::host::Gpu,
    module: &clustered_suite::host::Module,
    n: u32,
) -> (
    clustered_suite::host::CudaSlice<f32>,
    clustered_suite::host::CudaSlice<f32>,
    Vec<f32>,
) {
    use clustered_suite::host::{ClusterOptions, LaunchConfig};
    use kernels::sgemm::{sgemm_tiled, TILE};
    let len = (n * n) as usize;
    let values: Vec<f32> = (0..len)
        .map(|i| ((i * 7919) % 1013) as f32 / 1013.0 - 0.5)
        .collect();
    let a = gpu.htod(&values).unwrap();
    let b = gpu
        .htod(&values.iter().rev().copied().collect::<Vec<_>>())
        .unwrap();
    let mut c = gpu.zeros::<f32>(len).unwrap();
    let config = LaunchConfig::planar(n, n, [TILE, TILE]);
    // SAFETY: the kernel reads a and b and writes c, n x n floats each, for
    // a grid of n / TILE tiles a side.
    unsafe {
        gpu.launch_entry(
            module,
            sgemm_tiled::KERNEL,
            config,
            &ClusterOptions::default(),
            (&a, &b, &mut c, n),
        )
    }
    .unwrap();
    let product = gpu.dtoh(&c).unwrap();
    assert!(
        product.iter().any(|&x| x != 0.0),
        "sgemm_tiled wrote nothing"
    );
    (a, b, product)
}
