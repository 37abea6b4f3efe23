//! Block-index reads the macro cannot rewrite never give a wrong result: on
//! the CPU backend they stop the run with an error that names the fix (the
//! build's PTX check, `clustered_builder::ptx_check`, stops them on the
//! GPU); reads it can rewrite, in macros too, see the task's CTA; and a
//! user's own function that shares a getter's name keeps its meaning.

// The kernels here are written as a user writes them (one unsafe body).
#![allow(unsafe_op_in_unsafe_fn)]

use clustered_device::clustered;
use clustered_device::thread::{self, block_idx_x, grid_dim_x, thread_idx_x};
use clustered_suite::host::cpu::{launch_entry, CpuLaunch, Host, Machine, NoObserver};
use clustered_suite::host::{ClusterOptions, Entry, KernelFn};

/// Reads the block index where the macro cannot see it.
fn helper_reads_block() -> u32 {
    block_idx_x()
}

/// Its own function named like the runtime's getter.
mod mine {
    pub fn block_idx_x() -> u32 {
        7
    }
}

#[clustered(name = through_helper_stride, binding = stride)]
#[clustered(name = through_helper_reorder, binding = reorder, indexing = column_major)]
#[clustered(name = through_helper_agents, binding = agents)]
pub unsafe fn through_helper(out: *mut u32) {
    if thread_idx_x() == 0 {
        *out.add(block_idx_x() as usize) = helper_reads_block();
    }
}

#[clustered(name = through_alias_stride, binding = stride)]
pub unsafe fn through_alias(out: *mut u32) {
    use clustered_device::thread::block_idx_x as bx;
    if thread_idx_x() == 0 {
        *out.add(block_idx_x() as usize) = bx();
    }
}

#[clustered(name = through_pointer_persistent, binding = persistent, chunk = 2)]
pub unsafe fn through_pointer(out: *mut u32) {
    let read: fn() -> u32 = block_idx_x;
    if thread_idx_x() == 0 {
        *out.add(block_idx_x() as usize) = read();
    }
}

#[clustered(name = own_getter_stride, binding = stride)]
#[clustered(name = own_getter_reorder, binding = reorder, indexing = column_major)]
pub unsafe fn own_getter(out: *mut u32) {
    if thread_idx_x() == 0 {
        *out.add(thread::block_idx_x() as usize) = mine::block_idx_x();
    }
}

#[clustered(name = in_macros_stride, binding = stride)]
#[clustered(name = in_macros_agents, binding = agents, chunk = 2)]
pub unsafe fn in_macros(out: *mut u32) {
    assert!(
        block_idx_x() < grid_dim_x(),
        "block {} of {}",
        block_idx_x(),
        grid_dim_x()
    );
    if thread_idx_x() == 0 {
        *out.add(block_idx_x() as usize) = core::convert::identity(block_idx_x()) + 1;
    }
}

/// A kernel of one `*mut u32` buffer, like every kernel here.
trait OneBuffer: for<'a> KernelFn<Args<'a, Host> = (&'a mut [u32],)> {}
impl<K: for<'a> KernelFn<Args<'a, Host> = (&'a mut [u32],)>> OneBuffer for K {}

const BLOCKS: u32 = 13;

/// Runs a schedule over `BLOCKS` CTAs; returns what it wrote per CTA.
fn run_schedule<K: OneBuffer>(entry: Entry<K>) -> Result<Vec<u32>, String> {
    let machine = Machine::new(3);
    let original = CpuLaunch {
        grid: [BLOCKS, 1, 1],
        block: [32, 1, 1],
        dynamic_shared_bytes: 0,
        resident_blocks: 2,
    };
    let mut out = vec![u32::MAX; BLOCKS as usize];
    // SAFETY: every kernel here writes out[block], block < BLOCKS.
    unsafe {
        launch_entry(
            entry,
            &machine,
            original,
            &ClusterOptions::default(),
            &mut NoObserver,
            (&mut out,),
        )
    }
    .map_err(|e| e.to_string())?;
    Ok(out)
}

#[test]
fn hidden_reads_stop_the_run_with_the_fix() {
    let hidden = [
        (
            "helper, stride",
            run_schedule(through_helper::through_helper_stride),
        ),
        (
            "helper, reorder",
            run_schedule(through_helper::through_helper_reorder),
        ),
        (
            "helper, agents",
            run_schedule(through_helper::through_helper_agents),
        ),
        (
            "renamed import",
            run_schedule(through_alias::through_alias_stride),
        ),
        (
            "function pointer",
            run_schedule(through_pointer::through_pointer_persistent),
        ),
    ];
    for (case, ran) in hidden {
        let error = ran.expect_err(case);
        assert!(
            error.contains("read the hardware block index inside a clustered schedule")
                && error.contains("let bx = block_idx_x(); helper(bx)"),
            "{case}: {error}"
        );
    }
}

#[test]
fn a_users_function_named_like_a_getter_keeps_its_meaning() {
    for ran in [
        run_schedule(own_getter::own_getter_stride),
        run_schedule(own_getter::own_getter_reorder),
    ] {
        assert_eq!(ran.unwrap(), vec![7; BLOCKS as usize]);
    }
}

#[test]
fn reads_inside_macro_arguments_see_the_tasks_cta() {
    let expected: Vec<u32> = (1..=BLOCKS).collect();
    for ran in [
        run_schedule(in_macros::in_macros_stride),
        run_schedule(in_macros::in_macros_agents),
    ] {
        assert_eq!(ran.unwrap(), expected);
    }
}
