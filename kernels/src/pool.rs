//! A task-pool kernel (CAGTP, issue 15): resident blocks serving mixed task
//! kinds pushed from the host (`clustered_host::pool::TaskPool`).

use clustered_device::atomic::{fetch_add_u32, load_acquire_system, store_release_system};
use clustered_device::cta::Cta;
use clustered_device::kernel;
use clustered_device::pool::{serve, Payload, Slot};
use clustered_device::thread::{block_dim_x, nanosleep, thread_idx_x};

/// `y[i] = a * x[i] + y[i]` over [`Saxpy`]'s range, one element per thread
/// of each of the task's CTAs.
pub const SAXPY: u32 = 0;
/// `C = A * B` for one 64x64 tile ([`Sgemm64`]): 4 CTAs of 16 rows each.
pub const SGEMM64: u32 = 1;
/// Nothing: the dispatch overhead alone. `result` is the payload's first
/// word.
pub const EMPTY: u32 = 2;
/// Counts its run in `runs[index]` ([`Mark`]) and returns `index`: the
/// exactly-once tests' task.
pub const MARK: u32 = 3;
/// Waits until `*flag != 0` ([`Wait`]): a task that does not finish until
/// the host lets it (the timeout tests).
pub const WAIT: u32 = 4;
/// Kinds `pool_demo` serves: `0..KINDS`.
pub const KINDS: u32 = 5;

/// CTAs of an [`SGEMM64`] task.
pub const SGEMM64_CTAS: u32 = 4;

/// [`SAXPY`]'s arguments (device addresses as `u64`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Saxpy {
    /// `*const f32`, `n` elements.
    pub x: u64,
    /// `*mut f32`, `n` elements.
    pub y: u64,
    /// The scale.
    pub a: f32,
    /// Elements.
    pub n: u32,
}
// SAFETY: repr(C) plain data, the same layout on both sides.
unsafe impl Payload for Saxpy {}

/// [`SGEMM64`]'s arguments: three 64x64 row-major matrices.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Sgemm64 {
    /// `*const f32`.
    pub a: u64,
    /// `*const f32`.
    pub b: u64,
    /// `*mut f32`.
    pub c: u64,
}
// SAFETY: as for `Saxpy`.
unsafe impl Payload for Sgemm64 {}

/// [`MARK`]'s arguments.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Mark {
    /// `*mut u32`: one counter per task.
    pub runs: u64,
    /// This task's counter.
    pub index: u32,
}
// SAFETY: as for `Saxpy`.
unsafe impl Payload for Mark {}

/// [`WAIT`]'s arguments.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Wait {
    /// `*const u32` in memory the host writes (mapped, or on the CPU
    /// backend, any host memory).
    pub flag: u64,
    /// `*mut u32` set to 1 when the task starts (0: none), so that a test
    /// knows the task holds its block.
    pub started: u64,
}
// SAFETY: as for `Saxpy`.
unsafe impl Payload for Wait {}

/// # Safety
/// `x` and `y` hold `n` elements.
#[inline(always)]
unsafe fn saxpy(args: Saxpy, cta: Cta) {
    let i = cta.index_1d();
    if i < args.n {
        let (x, y) = (args.x as *const f32, args.y as *mut f32);
        let i = i as usize;
        *y.add(i) = args.a * *x.add(i) + *y.add(i);
    }
}

/// # Safety
/// `a`, `b` and `c` hold 64x64 elements each.
#[inline(always)]
unsafe fn sgemm64(args: Sgemm64, cta: Cta) {
    let (a, b, c) = (
        args.a as *const f32,
        args.b as *const f32,
        args.c as *mut f32,
    );
    let rows = 64 / SGEMM64_CTAS;
    let mut o = thread_idx_x();
    while o < rows * 64 {
        let (row, col) = (cta.block_idx_x() * rows + o / 64, o % 64);
        let mut sum = 0.0f32;
        for k in 0..64 {
            sum += *a.add((row * 64 + k) as usize) * *b.add((k * 64 + col) as usize);
        }
        *c.add((row * 64 + col) as usize) = sum;
        o += block_dim_x();
    }
}

/// # Safety
/// `runs` holds more than `index` counters.
#[inline(always)]
unsafe fn mark(args: Mark) -> u64 {
    if thread_idx_x() == 0 {
        fetch_add_u32((args.runs as *mut u32).add(args.index as usize), 1);
    }
    args.index as u64
}

/// # Safety
/// `flag` is a valid `u32`, and `started` one or 0.
#[inline(always)]
unsafe fn wait(args: Wait) -> u64 {
    if thread_idx_x() == 0 {
        if args.started != 0 {
            store_release_system(args.started as *mut u32, 1);
        }
        while load_acquire_system(args.flag as *const u32) == 0 {
            nanosleep(1024);
        }
    }
    1
}

/// The demo pool: every resident block serves its slot of `slots` with the
/// kinds above (1-D blocks).
///
/// # Safety
/// `slots` holds one slot per block of the grid, served by a `TaskPool`;
/// each task's arguments are valid for its kind.
#[kernel]
pub unsafe fn pool_demo(slots: *mut Slot) {
    serve(slots, KINDS, |task, cta| match task.kind() {
        SAXPY => {
            saxpy(task.args(), cta);
            0
        }
        SGEMM64 => {
            sgemm64(task.args(), cta);
            0
        }
        MARK => mark(task.args()),
        WAIT => wait(task.args()),
        _ => task.payload()[0] as u64,
    });
}

/// Does nothing with 16 bytes of arguments: the launch-per-task baseline
/// of the pool's overhead benchmark (`suite/examples/pool_overhead.rs`).
///
/// # Safety
/// None needed; `unsafe` as every kernel.
#[kernel]
pub unsafe fn empty_launch(_first: u64, _second: u64) {}
