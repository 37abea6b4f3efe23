//! Tests on a real GPU. Each skips (with a visible message) when
//! `Gpu::new(0)` fails, so they pass on machines without one.

use clustered_host::{Error, Gpu, GpuTimer, LaunchConfig, LaunchError};

/// A hand-written sm_90 kernel: `out[i] = i` for the global thread index
/// `i < n`.
const WRITE_INDEX_PTX: &str = r#".version 7.8
.target sm_90
.address_size 64

.visible .entry write_index(
    .param .u64 out_param,
    .param .u32 n_param
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<5>;

    ld.param.u64 %rd1, [out_param];
    ld.param.u32 %r1, [n_param];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.u32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r5, 4;
    add.s64 %rd4, %rd2, %rd3;
    st.global.u32 [%rd4], %r5;
DONE:
    ret;
}
"#;

fn gpu() -> Option<Gpu> {
    match Gpu::new(0) {
        Ok(g) => Some(g),
        Err(e) => {
            eprintln!("skipped: no GPU ({e})");
            None
        }
    }
}

/// Needs no GPU: checks the inline PTX with ptxas where it is installed.
#[test]
fn inline_ptx_assembles_for_sm_90() {
    let Some(ptxas) = clustered_host::cuda_tool("ptxas") else {
        eprintln!(
            "skipped: ptxas not found (set PTXAS, put it on PATH, or pip install nvidia-cuda-nvcc)"
        );
        return;
    };
    // And as a CUDA 12.8 driver loads it with a marked release fence.
    let fenced = clustered_host::ptx_with_release_fences(&with_marked_fence(), 12080)
        .expect("a marked fence to rewrite");
    let path = std::env::temp_dir().join(format!("clustered_host_{}.ptx", std::process::id()));
    for text in [WRITE_INDEX_PTX, fenced.as_str()] {
        std::fs::write(&path, text).unwrap();
        let out = std::process::Command::new(&ptxas)
            .args(["-arch=sm_90", "-o", "/dev/null"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}\n{text}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let _ = std::fs::remove_file(&path);
}

/// [`WRITE_INDEX_PTX`] with a release fence marked as the device runtime
/// marks it (`clustered_device::abi::ptx`) before its `ret`.
fn with_marked_fence() -> String {
    let mark = clustered_device::abi::ptx::RELEASE_FENCE_GPU_MARKED;
    WRITE_INDEX_PTX.replace("DONE:\n    ret;", &format!("DONE:\n    {mark}\n    ret;"))
}

#[test]
fn launch_writes_thread_indices() {
    let Some(gpu) = gpu() else { return };
    let module = gpu.load_module(WRITE_INDEX_PTX).unwrap();
    assert_eq!(module.entry_names(), ["write_index"]);
    let kernel = module.kernel("write_index").unwrap();
    let attrs = kernel.attributes();
    eprintln!("write_index attributes: {attrs:?}");
    assert!(attrs.max_threads_per_block >= 256);
    assert!(attrs.registers_per_thread > 0);
    assert_eq!(attrs.static_shared_bytes, 0);

    let n = 1000u32;
    assert_eq!(write_indices(&gpu, &kernel, n), (0..n).collect::<Vec<_>>());

    // Too few arguments for the PTX's `.param` list: refused, nothing runs,
    // and the context still works.
    let mut short = gpu.zeros::<u32>(n as usize).unwrap();
    // SAFETY: refused before launching.
    let error = unsafe {
        gpu.launch(&kernel, LaunchConfig::linear(u64::from(n), 256))
            .arg(&mut short)
            .run()
    }
    .unwrap_err();
    assert!(matches!(error, Error::Arguments { .. }), "{error}");
    assert_eq!(gpu.dtoh(&short).unwrap(), vec![0; n as usize]);

    // Same on a separate stream, with more than 48 KiB of dynamic shared
    // memory (the launch opts in automatically).
    let stream = gpu.new_stream().unwrap();
    let mut out2 = gpu.htod(&vec![u32::MAX; n as usize]).unwrap();
    let cfg = LaunchConfig::linear(u64::from(n), 128).with_dynamic_shared(100 * 1024);
    unsafe {
        gpu.launch(&kernel, cfg)
            .on(&stream)
            .arg(&mut out2)
            .arg(&n)
            .run()
            .unwrap();
    }
    stream.synchronize().unwrap();
    assert!(kernel.max_dynamic_shared_bytes().unwrap() >= 100 * 1024);
    assert_eq!(gpu.dtoh(&out2).unwrap(), (0..n).collect::<Vec<_>>());
}

#[test]
fn bad_launches_are_refused_before_the_driver() {
    let Some(gpu) = gpu() else { return };
    let kernel = gpu
        .load_module(WRITE_INDEX_PTX)
        .unwrap()
        .kernel("write_index")
        .unwrap();
    let n = 16u32;
    let mut out = gpu.zeros::<u32>(16).unwrap();
    let r = unsafe {
        gpu.launch(&kernel, LaunchConfig::new([1, 1, 1], [2048, 1, 1]))
            .arg(&mut out)
            .arg(&n)
            .run()
    };
    assert!(
        matches!(r, Err(Error::Launch(LaunchError::BlockTooLarge { .. }))),
        "{r:?}"
    );
    let too_much_smem = LaunchConfig::linear(16, 32)
        .with_dynamic_shared(gpu.properties().max_shared_memory_per_block_optin + 1);
    let r = unsafe {
        gpu.launch(&kernel, too_much_smem)
            .arg(&mut out)
            .arg(&n)
            .run()
    };
    assert!(
        matches!(
            r,
            Err(Error::Launch(LaunchError::SharedMemoryTooLarge { .. }))
        ),
        "{r:?}"
    );
    let stream = gpu.new_stream().unwrap();
    let r = unsafe {
        gpu.launch(&kernel, LaunchConfig::linear(16, 32))
            .arg(&mut out)
            .on(&stream)
            .arg(&n)
            .run()
    };
    assert!(matches!(r, Err(Error::StreamAfterArgs)), "{r:?}");
}

#[test]
fn module_errors_are_typed() {
    let Some(gpu) = gpu() else { return };
    let module = gpu.load_module(WRITE_INDEX_PTX).unwrap();
    match module.kernel("no_such_kernel") {
        Err(Error::KernelNotFound { name, available }) => {
            assert_eq!(name, "no_such_kernel");
            assert_eq!(available, ["write_index"]);
        }
        other => panic!("expected KernelNotFound, got {other:?}"),
    }
    let broken = WRITE_INDEX_PTX.replace("mad.lo.u32", "mad.lo.bogus");
    match gpu.load_module(&broken) {
        Err(e @ Error::ModuleLoad { .. }) => eprintln!("broken PTX refused: {e}"),
        other => panic!("expected ModuleLoad, got {other:?}"),
    }
    assert!(matches!(
        gpu.load_module("a\0b"),
        Err(Error::InvalidPtx { nul_at: 1 })
    ));
}

#[test]
fn occupancy_and_timing() {
    let Some(gpu) = gpu() else { return };
    let kernel = gpu
        .load_module(WRITE_INDEX_PTX)
        .unwrap()
        .kernel("write_index")
        .unwrap();
    let occ = kernel.occupancy(256, 0).unwrap();
    eprintln!("occupancy at 256 threads: {occ} blocks/SM");
    assert!(occ > 0);
    assert!(occ <= gpu.properties().max_blocks_per_sm);

    let n = 1u32 << 24;
    let mut out = gpu.zeros::<u32>(n as usize).unwrap();
    let ms = gpu
        .time_ms(|| unsafe {
            gpu.launch(&kernel, LaunchConfig::linear(u64::from(n), 256))
                .arg(&mut out)
                .arg(&n)
                .run()
        })
        .unwrap();
    eprintln!("write_index over {n} elements: {ms} ms");
    assert!(ms > 0.0);

    let timer = GpuTimer::new(gpu.stream()).unwrap();
    timer.start().unwrap();
    unsafe {
        gpu.launch(&kernel, LaunchConfig::linear(u64::from(n), 256))
            .arg(&mut out)
            .arg(&n)
            .run()
            .unwrap();
    }
    timer.stop().unwrap();
    assert!(timer.elapsed_ms().unwrap() > 0.0);
}

/// A kernel with a marked release fence (`clustered_device::abi::ptx`)
/// loads with `fence.release.gpu` (as PTX ISA 8.6) where the driver
/// compiles it, as built with `ModuleOptions::release_fences(false)` or on
/// an older driver, and runs either way. (The function's `ptx_version`
/// attribute is its virtual architecture, 90 on an H100 or H200 either
/// way, so the module says which it loaded.)
#[test]
fn marked_fences_load_as_release_fences_where_the_driver_compiles_them() {
    use clustered_device::abi::ptx::{RELEASE_FENCE_DRIVER, RELEASE_FENCE_GPU_MARKED};
    use clustered_host::ModuleOptions;
    let Some(gpu) = gpu() else { return };
    let ptx = with_marked_fence();
    assert!(ptx.contains(RELEASE_FENCE_GPU_MARKED));
    let driver = gpu.driver_version().unwrap();
    let n = 1000u32;
    for (options, want) in [
        (ModuleOptions::default(), driver >= RELEASE_FENCE_DRIVER),
        (ModuleOptions::default().release_fences(false), false),
    ] {
        let module = gpu.load_module_with(&ptx, options).unwrap();
        assert_eq!(
            module.release_fences(),
            want,
            "driver {driver}, {options:?}"
        );
        let kernel = module.kernel("write_index").unwrap();
        assert_eq!(write_indices(&gpu, &kernel, n), (0..n).collect::<Vec<_>>());
    }
}

/// What `write_index` writes for `n` threads in blocks of 256.
fn write_indices(gpu: &Gpu, kernel: &clustered_host::Kernel, n: u32) -> Vec<u32> {
    let mut out = gpu.zeros::<u32>(n as usize).unwrap();
    // SAFETY: `write_index` takes a u32 buffer of `n` and `n`.
    unsafe {
        gpu.launch(kernel, LaunchConfig::linear(u64::from(n), 256))
            .arg(&mut out)
            .arg(&n)
            .run()
            .unwrap();
    }
    gpu.dtoh(&out).unwrap()
}
