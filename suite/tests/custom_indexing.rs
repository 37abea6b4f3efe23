//! A `custom(..)` indexing that is not a bijection of the grid would run some
//! CTAs twice and others never: every launch refuses it with a typed error
//! naming two linear ids that collide (or one outside the grid), under every
//! binding, before anything runs. A true permutation runs every CTA once.

// The kernels here are written as a user writes them (one unsafe body).
#![allow(unsafe_op_in_unsafe_fn)]

use clustered_device::clustered;
use clustered_device::mapping::IndexingError;
use clustered_device::thread::{block_idx_x, block_idx_y, grid_dim_x, thread_idx_x};
use clustered_suite::host::cpu::{launch_entry, CpuLaunch, CpuLaunchError, Machine, NoObserver};
use clustered_suite::host::{ClusterError, ClusterOptions};

/// Halves x: CTAs (2k, y) and (2k + 1, y) both map to (2k, y).
fn halves_x(v: u32, [gx, _, _]: [u32; 3]) -> [u32; 3] {
    [(v % gx) / 2 * 2, v / gx, 0]
}

/// Column-major order: a permutation.
fn transposed(v: u32, [_, gy, _]: [u32; 3]) -> [u32; 3] {
    [v / gy, v % gy, 0]
}

// Schedule names are PTX symbols (the contracts are `#[no_mangle]`), so each
// kernel's must be its own.
macro_rules! counting_kernel {
    ($name:ident, $indexing:ident, $reorder:ident, $redirect:ident, $agents:ident, $persistent:ident, $stride:ident, $claims:ident, $blocks:ident) => {
        #[clustered(name = $reorder, binding = reorder, indexing = custom($indexing))]
        #[clustered(name = $redirect, binding = redirect, indexing = custom($indexing))]
        #[clustered(name = $agents, binding = agents, indexing = custom($indexing))]
        #[clustered(name = $persistent, binding = persistent, chunk = 2, indexing = custom($indexing))]
        #[clustered(name = $stride, binding = stride, indexing = custom($indexing))]
        #[clustered(name = $claims, binding = stride, tail = claims, indexing = custom($indexing))]
        #[clustered(name = $blocks, binding = stride, tail = blocks, indexing = custom($indexing))]
        pub unsafe fn $name(runs: *mut u32) {
            if thread_idx_x() == 0 {
                let v = block_idx_y() * grid_dim_x() + block_idx_x();
                *runs.add(v as usize) += 1;
            }
        }
    };
}

mod broken {
    use super::*;
    counting_kernel!(
        count,
        halves_x,
        b_reorder,
        b_redirect,
        b_agents,
        b_persistent,
        b_stride,
        b_stride_claims,
        b_stride_blocks
    );
}

mod permuted {
    use super::*;
    counting_kernel!(
        count,
        transposed,
        p_reorder,
        p_redirect,
        p_agents,
        p_persistent,
        p_stride,
        p_stride_claims,
        p_stride_blocks
    );
}

const GRID: [u32; 3] = [6, 5, 1];

fn original() -> CpuLaunch {
    CpuLaunch {
        grid: GRID,
        block: [32, 1, 1],
        dynamic_shared_bytes: 0,
        resident_blocks: 2,
    }
}

#[test]
fn an_indexing_that_is_not_a_bijection_is_refused_by_every_binding() {
    for entry in broken::count::SCHEDULES {
        let mut runs = [0u32; 30];
        // SAFETY: the kernel writes one word per CTA of the grid.
        let result = unsafe {
            launch_entry(
                *entry,
                &Machine::new(2),
                original(),
                &ClusterOptions::default(),
                &mut NoObserver,
                (&mut runs[..],),
            )
        };
        match result {
            Err(CpuLaunchError::Plan(ClusterError::NotABijection {
                kernel,
                grid,
                error,
            })) => {
                assert_eq!(kernel, entry.name());
                assert_eq!(grid, GRID);
                assert_eq!(
                    error,
                    IndexingError::Collision {
                        first: 0,
                        second: 1,
                        cta: [0, 0, 0]
                    }
                );
            }
            other => panic!("{}: {other:?}", entry.name()),
        }
        assert!(
            runs.iter().all(|&r| r == 0),
            "{}: nothing ran",
            entry.name()
        );
    }
}

#[test]
fn a_permutation_runs_every_cta_once_in_every_binding() {
    for entry in permuted::count::SCHEDULES {
        let mut runs = vec![0u32; 30];
        // SAFETY: as above.
        unsafe {
            launch_entry(
                *entry,
                &Machine::new(3),
                original(),
                &ClusterOptions::default(),
                &mut NoObserver,
                (&mut runs[..],),
            )
        }
        .unwrap_or_else(|e| panic!("{}: {e}", entry.name()));
        assert_eq!(runs, vec![1; 30], "{}", entry.name());
    }
}
