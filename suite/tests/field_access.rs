//! Fields and elements read and written through a kernel's global pointers are traced
//! like `*p` (`macros/src/trace.rs`): on the CPU backend they reach the
//! cache model and are checked against the launch's buffers, so a quad
//! read as `(*p).0` past the end stops the run instead of reading host
//! memory, and its bytes count in the simulated traffic.

// The kernels here are written as a user writes them (one unsafe body).
#![allow(unsafe_op_in_unsafe_fn)]

use clustered_device::kernel;
use clustered_device::memory::F32x4;
use clustered_device::thread::index_1d;
use clustered_suite::host::cpu::{
    launch_entry, CpuError, CpuLaunch, CpuLaunchError, Machine, NoObserver,
};
use clustered_suite::host::ClusterOptions;

/// `out[i] = quads[i].0[0] + quads[i].0[3]`, and `counts[i].1 += 1`.
#[kernel]
pub unsafe fn quad_ends(quads: *const F32x4, counts: *mut (f32, u32), out: *mut f32, n: u32) {
    let i = index_1d();
    if i < n {
        let [first, _, _, last] = (*quads.add(i as usize)).0;
        (*counts.add(i as usize)).1 += 1;
        (*counts.add(i as usize)).0 = first;
        *out.add(i as usize) = first + last;
    }
}

/// `out[i] = rows[i][0] + rows[i][3]`, element by element.
#[kernel]
pub unsafe fn row_ends(rows: *const [f32; 4], out: *mut f32, n: u32) {
    let i = index_1d();
    if i < n {
        *out.add(i as usize) = (*rows.add(i as usize))[0] + (*rows.add(i as usize))[3];
    }
}

fn launch(threads: u32) -> CpuLaunch {
    CpuLaunch {
        grid: [1, 1, 1],
        block: [threads, 1, 1],
        dynamic_shared_bytes: 0,
        resident_blocks: 1,
    }
}

#[test]
fn fields_through_global_pointers_compute_and_stay_inside_their_buffers() {
    let quads: Vec<F32x4> = (0..8)
        .map(|i| F32x4([i as f32, 0.5, 0.25, 10.0 * i as f32]))
        .collect();
    let mut counts = [(0.0f32, 7u32); 8];
    let mut out = [0.0f32; 8];
    // SAFETY: every buffer holds n = 8 elements.
    unsafe {
        launch_entry(
            quad_ends::KERNEL,
            &Machine::new(1),
            launch(32),
            &ClusterOptions::default(),
            &mut NoObserver,
            (&quads[..], &mut counts[..], &mut out[..], 8u32),
        )
    }
    .unwrap();
    for i in 0..8 {
        assert_eq!(out[i], 11.0 * i as f32, "out[{i}]");
        assert_eq!(counts[i], (i as f32, 8), "counts[{i}]");
    }

    // n past the quads' end: the field read of quad 8 is traced, so the
    // CPU backend stops it (untraced, it read host memory).
    let mut counts = [(0.0f32, 0u32); 9];
    let mut out = [0.0f32; 9];
    // SAFETY: the CPU backend checks every traced access against its buffer.
    let run = unsafe {
        launch_entry(
            quad_ends::KERNEL,
            &Machine::new(1),
            launch(32),
            &ClusterOptions::default(),
            &mut NoObserver,
            (&quads[..], &mut counts[..], &mut out[..], 9u32),
        )
    };
    match run {
        Err(CpuLaunchError::Run(CpuError::OutOfBounds { thread, .. })) => {
            assert_eq!(thread, [8, 0, 0])
        }
        other => panic!("expected thread 8's read past the quads to stop the run: {other:?}"),
    }
}

#[test]
fn elements_through_global_pointers_stay_inside_their_buffers() {
    let rows: Vec<[f32; 4]> = (0..4).map(|i| [i as f32, 0.0, 0.0, 1.0]).collect();
    let mut out = [0.0f32; 5];
    for (n, expect_fault) in [(4u32, false), (5, true)] {
        // SAFETY: the CPU backend checks every traced access against its buffer.
        let run = unsafe {
            launch_entry(
                row_ends::KERNEL,
                &Machine::new(1),
                launch(32),
                &ClusterOptions::default(),
                &mut NoObserver,
                (&rows[..], &mut out[..], n),
            )
        };
        match (run, expect_fault) {
            (Ok(_), false) => {
                for (i, &v) in out.iter().take(4).enumerate() {
                    assert_eq!(v, i as f32 + 1.0, "out[{i}]");
                }
            }
            (Err(CpuLaunchError::Run(CpuError::OutOfBounds { thread, .. })), true) => {
                assert_eq!(thread, [4, 0, 0])
            }
            (other, _) => panic!("n = {n}: {other:?}"),
        }
    }
}
