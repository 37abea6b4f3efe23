//! Times naive SGEMM with its addresses written five ways (four in
//! `kernels::index_forms`, and the suite's `sgemm_naive`) beside the nvcc
//! twin (int indices), interleaved in one run, outputs compared bit for bit:
//! which Rust index arithmetic compiles to what CUDA C++ gets. GPU only; says
//! so and exits without one.
//!
//! `cargo run --release --example index_forms -- [n] [twins.ptx]`

use clustered_suite::host::tuner::median;
use clustered_suite::host::{
    ClusterOptions, Cuda, CudaSlice, Entry, Error, Gpu, GpuTimer, KernelFn, LaunchConfig, Module,
};
use kernels::index_forms::*;
use kernels::sgemm_naive::sgemm_naive;

/// A kernel of naive SGEMM's signature.
trait Sgemm:
    for<'x> KernelFn<
    Args<'x, Cuda> = (
        &'x CudaSlice<f32>,
        &'x CudaSlice<f32>,
        &'x mut CudaSlice<f32>,
        u32,
    ),
>
{
}
impl<
        K: for<'x> KernelFn<
            Args<'x, Cuda> = (
                &'x CudaSlice<f32>,
                &'x CudaSlice<f32>,
                &'x mut CudaSlice<f32>,
                u32,
            ),
        >,
    > Sgemm for K
{
}

/// One problem: its inputs and launch.
struct Problem {
    gpu: Gpu,
    a: CudaSlice<f32>,
    b: CudaSlice<f32>,
    n: u32,
    options: ClusterOptions,
}

type Launch<'a> = Box<dyn Fn(&mut CudaSlice<f32>) -> Result<(), Error> + 'a>;

impl Problem {
    fn launch<'a, K: Sgemm>(&'a self, module: &'a Module, entry: Entry<K>) -> Launch<'a> {
        let config = LaunchConfig::new([self.n / 16, self.n / 16, 1], [16, 16, 1]);
        // SAFETY: a, b and c hold n * n floats, what the kernels index.
        Box::new(move |c| unsafe {
            self.gpu.launch_entry(
                module,
                entry,
                config,
                &self.options,
                (&self.a, &self.b, c, self.n),
            )
        })
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let n: u32 = args.next().map(|s| s.parse()).transpose()?.unwrap_or(4096);
    let twins = args.next().map(std::fs::read_to_string).transpose()?;
    let gpu = match Gpu::new(0) {
        Ok(gpu) => gpu,
        Err(e) => {
            eprintln!("index_forms: skipped, no GPU ({e})");
            return Ok(());
        }
    };
    let module = gpu.load_module(clustered_suite::PTX)?;
    let twins = twins.map(|ptx| gpu.load_module(&ptx)).transpose()?;
    let len = (n * n) as usize;
    let problem = Problem {
        a: gpu.htod(&(0..len).map(|i| (i % 7) as f32 * 0.25).collect::<Vec<_>>())?,
        b: gpu.htod(&(0..len).map(|i| (i % 5) as f32 * 0.5).collect::<Vec<_>>())?,
        gpu,
        n,
        options: ClusterOptions::default(),
    };
    let p = &problem;
    let mut forms: Vec<(&str, Launch)> = vec![
        (
            "u32, widened after (before)",
            p.launch(&module, naive_u32::KERNEL),
        ),
        (
            "usize, widened first",
            p.launch(&module, naive_usize::KERNEL),
        ),
        (
            "index::at (u32, no wrap)",
            p.launch(&module, naive_at::KERNEL),
        ),
        (
            "i32 no-overflow (C int)",
            p.launch(&module, naive_i32::KERNEL),
        ),
        (
            "pointers stepped (sgemm_naive)",
            p.launch(&module, sgemm_naive::KERNEL),
        ),
    ];
    if let Some(twins) = &twins {
        let twin = sgemm_naive::KERNEL.foreign("sgemm_naive_twin");
        forms.push(("nvcc twin (int)", p.launch(twins, twin)));
    }
    let gpu = &problem.gpu;
    let timer = GpuTimer::new(gpu.stream())?;
    let mut c = gpu.zeros::<f32>(len)?;
    let mut outputs = Vec::new();
    for (_, launch) in &forms {
        launch(&mut c)?;
        outputs.push(gpu.dtoh(&c)?);
    }
    let mut samples = vec![Vec::new(); forms.len()];
    for _ in 0..10 {
        for ((_, launch), samples) in forms.iter().zip(&mut samples) {
            timer.start()?;
            launch(&mut c)?;
            timer.stop()?;
            samples.push(timer.elapsed_ms()?);
        }
    }
    let device = &gpu.properties().name;
    println!("naive SGEMM n = {n} on {device}, median of 10 interleaved launches:");
    let before = median(&samples[0]);
    for (((name, _), samples), output) in forms.iter().zip(&samples).zip(&outputs) {
        let ms = median(samples);
        let same = output == &outputs[0];
        println!(
            "  {name:<30} {ms:9.3} ms  {:.3}x of u32  same bits: {same}",
            before / ms
        );
    }
    Ok(())
}
