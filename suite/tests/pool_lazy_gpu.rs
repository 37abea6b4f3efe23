//! The task pool under lazy module loading (issue 15, item 3): with
//! `CUDA_MODULE_LOADING=LAZY` the driver loads a kernel at its first launch,
//! and that load may wait for every kernel running, a pool's blocks among
//! them, which never return until the pool shuts down. `Gpu::load_module`
//! loads every function of its module at once, so a kernel launched for the
//! first time while a pool runs does not wait for the pool. One test in
//! this binary: the variable must be set before the process's first CUDA
//! call. Without a GPU it prints why it skipped and passes.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use clustered_suite::host::pool::{Outcome, PoolConfig, Shutdown, Task, TaskPool};
use clustered_suite::host::{Gpu, LaunchConfig, Module, ModuleOptions};
use kernels::pool::{EMPTY, KINDS};

/// How long a first launch may take before it counts as waiting for the
/// pool (a launch takes microseconds; the JIT ran at the module's load).
const PATIENCE: Duration = Duration::from_secs(10);

/// Launches `empty_launch` of `module` for the first time in this process,
/// on a stream of its own, while `pool` runs; returns how long it took to
/// finish, or `None` if it had not after [`PATIENCE`] (then the pool is
/// shut down, which lets it finish, so that nothing hangs).
fn first_launch_beside(gpu: &Gpu, module: &Module, pool: &TaskPool) -> Option<Duration> {
    let stream = gpu.new_stream().expect("a stream");
    let (done, finished) = mpsc::channel();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let start = Instant::now();
            // Its attributes are read here: that may load it too.
            let kernel = module.kernel("empty_launch").expect("in the suite's PTX");
            let (first, second) = (0u64, 0u64);
            // SAFETY: `empty_launch` takes two integers and touches nothing.
            unsafe {
                gpu.launch(&kernel, LaunchConfig::new([1, 1, 1], [32, 1, 1]))
                    .on(&stream)
                    .arg(&first)
                    .arg(&second)
                    .run()
                    .expect("the launch is accepted");
            }
            stream.synchronize().expect("the launch finishes");
            let _ = done.send(start.elapsed());
        });
        let took = finished.recv_timeout(PATIENCE).ok();
        if took.is_none() {
            // Unblocks the launch: the pool's blocks return.
            pool.shutdown(Shutdown::Drain).expect("the pool shuts down");
        }
        took
    })
}

#[test]
fn a_kernel_launched_first_while_a_pool_runs_does_not_wait_for_it() {
    // SAFETY: the process's only test, before any CUDA call or other thread.
    unsafe { std::env::set_var("CUDA_MODULE_LOADING", "LAZY") };
    let Some((gpu, module)) = clustered_suite::gpu_or_skip().unwrap() else {
        return;
    };
    // The same PTX loaded as the driver is set (lazily), beside the
    // library's loading; both before any pool runs (loading a module while
    // one runs can wait for it too).
    let lazy = gpu
        .load_module_with(
            clustered_suite::PTX,
            ModuleOptions::default().load_every_function(false),
        )
        .unwrap();
    eprintln!("both modules loaded");
    let pool = start_pool(&gpu, &module);
    // What the first launch does without the library's loading: reported,
    // not asserted (it is the driver's behaviour).
    let pool = match first_launch_beside(&gpu, &lazy, &pool) {
        Some(took) => {
            println!("lazily loaded: the first launch took {took:?} beside the pool");
            pool
        }
        None => {
            println!("lazily loaded: the first launch waited for the pool to end");
            // That pool is gone.
            start_pool(&gpu, &module)
        }
    };
    let took = first_launch_beside(&gpu, &module, &pool);
    pool.shutdown(Shutdown::Drain).unwrap();
    let took = took.expect("the first launch of a loaded module's kernel waited for the pool");
    println!("loaded by Gpu::load_module: the first launch took {took:?} beside the pool");
}

/// A pool whose blocks run (a task went through them).
fn start_pool(gpu: &Gpu, module: &Module) -> TaskPool {
    let config = PoolConfig::new(KINDS).timeout(Duration::from_secs(30));
    let pool = TaskPool::gpu(gpu, &module.kernel("pool_demo").unwrap(), config).unwrap();
    let ticket = pool.push(Task::new(EMPTY, 1, 7u32)).unwrap();
    let done = pool.pop_finished().unwrap();
    assert_eq!(
        (done.ticket, done.outcome),
        (ticket, Outcome::Ran { result: 7 })
    );
    eprintln!("a pool runs");
    pool
}
