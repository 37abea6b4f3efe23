//! The attributes of clustered kernels.
//!
//! - `#[kernel]` turns an `unsafe fn` into a PTX entry point, like
//!   `cuda_std::kernel`.
//! - `#[clustered(..)]` adds locality-aware schedules of a kernel.
//! - `#[launch_bounds(..)]` gives either one CUDA's launch bounds.
//!
//! Each attribute is parsed, checked and expanded in its own module; errors
//! are collected with their spans and reported together.

#![warn(missing_docs)]

mod access;
mod bounds;
mod clustered;
mod kernel;
mod lint;
mod ptx;
mod registry;
mod runtime;
#[cfg(test)]
mod snapshots;
mod task;
mod trace;

use proc_macro::TokenStream;

/// Marks an `unsafe fn` as a GPU kernel (a PTX `.entry`).
///
/// ```ignore
/// #[kernel]
/// pub unsafe fn vector_add(a: *const f32, b: *const f32, c: *mut f32, n: u32) { ... }
/// ```
///
/// The function must be `unsafe` (the host passes raw pointers that the
/// kernel trusts), not generic, not `async`, and return nothing. Its name is
/// the kernel's symbol in the PTX.
///
/// Each parameter is what the host copies into the PTX `.param` space: a
/// number, a raw pointer (`*const T`, `*mut T`; not `&T`, `&mut T` or a
/// slice), an array of these, or a `Copy` type with a C layout
/// (`#[repr(C)]`, which the attribute cannot check). `impl Trait`, tuples
/// and function pointers are compile errors; `mut` parameters are fine.
/// A kernel is a free function: in an `impl` block rustc reports
/// "cannot find value `<name>_is_a_kernel_move_it_out_of_the_impl_block`" at
/// its name (an attribute cannot see where it is; its expansion checks).
/// `clustered-builder` builds the kernels crate for the GPU with `#![no_std]`
/// and `#![feature(abi_ptx)]` added (and `RUSTC_BOOTSTRAP=1`), so the crate
/// must not declare them itself. On the host the same function is an
/// ordinary `unsafe fn` that the CPU backend runs per thread.
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    kernel::expand(attr.into(), item.into()).into()
}

/// Turns a kernel into clustered kernels: the original stays (the baseline),
/// and each `#[clustered(..)]` on the function adds one kernel that runs the
/// original CTAs in a locality-aware schedule.
///
/// See the crate `clustered-device` for the options and the README for a
/// before/after example.
#[proc_macro_attribute]
pub fn clustered(attr: TokenStream, item: TokenStream) -> TokenStream {
    clustered::expand(attr.into(), item.into()).into()
}

/// Launch bounds of a `#[kernel]` or `#[clustered]` kernel, CUDA's
/// `__launch_bounds__(maxThreadsPerBlock, minBlocksPerMultiprocessor)`:
///
/// ```ignore
/// #[launch_bounds(max_threads = 256, min_blocks_per_sm = 1)]
/// #[clustered(auto)]
/// pub unsafe fn atax_columns(..) { .. }
/// ```
///
/// `max_threads`: the most threads a block of the kernel has (a launch with
/// more is refused, on the GPU and on the CPU backend). `min_blocks_per_sm`
/// (optional, at most `2048 / max_threads`, the threads an SM holds): how
/// many such blocks an SM must hold at once, which lets
/// ptxas give a thread up to `65536 / (max_threads * min_blocks_per_sm)`
/// registers. Without it ptxas keeps about 32, enough for a full SM of
/// blocks: right for a big grid, and a loss for a kernel with fewer blocks
/// than SMs, whose speed is the loads each thread keeps in flight. Bounds
/// at the occupancy a kernel's registers give it anyway can help too:
/// told the block's size, ptxas spends registers up to that occupancy's
/// budget (the Jacobi 7 quad walk: 56 -> 62 registers at four blocks of
/// 256, all ten loads of a step in flight, 4% faster on an H200); the
/// SASS (`ptxas -v`, `cuobjdump -sass`) shows whether a kernel gains.
/// Both hold for the kernel and every schedule of it; `clustered-builder`
/// writes them into the PTX (`.maxntid`, `.minnctapersm`). Values are
/// constant `u32` expressions.
#[proc_macro_attribute]
pub fn launch_bounds(attr: TokenStream, item: TokenStream) -> TokenStream {
    bounds::expand(attr.into(), item.into()).into()
}

/// A task pool kernel from ordinary kernels (issue 15): resident blocks
/// serve tasks the host pushes (`clustered_host::pool::TaskPool`), kind `k`
/// running the `k`-th kernel of the list.
///
/// ```ignore
/// task_pool!(pub unsafe fn my_pool = [saxpy, sgemm64]);
/// // host
/// let pool = TaskPool::cpu(machine, 2, my_pool, PoolConfig::new(my_pool::KINDS))?;
/// pool.push(my_pool::task(ctas, saxpy_args { x, y, a: 2.0, n }))?;
/// ```
///
/// Each listed kernel is a `#[kernel]` or `#[clustered]` function whose
/// parameters are raw pointers and numbers of at most 64 bytes in all: for
/// those the attributes emit `<kernel>_args` (the payload, pointers as `u64`)
/// and `<kernel>::run_task(args, cta)` (the body reading its block index from
/// the task's CTA). The pool is a `#[kernel]` `my_pool(slots: *mut Slot)`;
/// `my_pool::task` takes the kind from the arguments' type, so a kernel not
/// in the list is a compile error, never a wrong kind.
///
/// A function-like macro, not an attribute: the pool has no body to write,
/// only a name and a list.
#[proc_macro]
pub fn task_pool(input: TokenStream) -> TokenStream {
    task::expand_pool(input.into()).into()
}

/// The PTX that `clustered_builder` built for a kernels crate, by its package
/// name, as a `&'static str` (for `Gpu::load_module`).
///
/// ```ignore
/// // build.rs: clustered_builder::build("kernels");
/// const PTX: &str = clustered::include_ptx!("kernels");
/// ```
///
/// A compile error says what to add to `build.rs` when no build script built
/// that crate.
#[proc_macro]
pub fn include_ptx(input: TokenStream) -> TokenStream {
    ptx::expand(input.into()).into()
}
