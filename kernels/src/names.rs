//! A kernel whose parameters and locals take the names the expansion binds.

use clustered_device::clustered;
use clustered_device::thread::*;

/// `out[t] = f(t, block index, parameters)` for every thread `t` of a 2D
/// grid. The parameters and locals are named like what `#[clustered]`
/// generates (`__cta`, `__launch`, `__v`, `__to_cta`, and `__value`,
/// `__address` of the memory tracing) and like plain words (`cta`, `launch`,
/// `v`); `v` is `mut`. Every schedule must compute what the baseline
/// computes: a generated name that captured a user's would change `out`.
#[clustered(name = generated_names_agents, binding = agents, indexing = tile(2, 2))]
#[clustered(name = generated_names_stride, binding = stride, indexing = tile(2, 3))]
#[clustered(name = generated_names_redirect, binding = redirect, indexing = tile(3, 2))]
#[clustered(name = generated_names_reorder, binding = reorder, indexing = column_major)]
#[clustered(name = generated_names_persistent, binding = persistent, chunk = 2)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn generated_names(
    out: *mut u32,
    __v: u32,
    __cta: u32,
    __launch: u32,
    __to_cta: u32,
    cta: u32,
    launch: u32,
    mut v: u32,
) {
    v += cta;
    let mixed = __v + 3 * __cta + 5 * __launch + 7 * __to_cta + 11 * launch + 13 * v;
    // Locals of the same names, read by the block-index getters' rewrites
    // around them.
    let __cta = block_idx_x();
    let __launch = block_idx_y();
    let __v = grid_dim_x();
    let __to_cta = (__launch * __v + __cta) * block_dim_x() + thread_idx_x();
    let __value = out.add(__to_cta as usize);
    *__value = mixed;
    let __address = __value;
    *__address += 1000 * block_idx_x() + 100_000 * block_idx_y();
}

/// `out[i] = 2 input[i] + 6 i + 4` for `i < n`. The parameter `input` is
/// read at the start and at the end; in between, a `for` loop, a closure, a
/// `match` arm, an `if let` and a `while let` bind the name `input` to
/// pointers into a local array, which read `i`, `i + 1` or `i + 2`. The
/// memory tracing must treat those as the locals they are (on the CPU
/// backend a read of one taken for the parameter's buffer is out of its
/// bounds).
#[clustered(name = pointer_patterns_reorder, binding = reorder)]
#[clustered(name = pointer_patterns_agents, binding = agents, chunk = 2)]
#[clustered(name = pointer_patterns_stride, binding = stride)]
pub unsafe fn pointer_patterns(input: *const u32, out: *mut u32, n: u32) {
    let i = index_1d();
    if i >= n {
        return;
    }
    let local = [i, i + 1, i + 2];
    let mut sum = *input.add(i as usize);
    for input in [local.as_ptr(), local.as_ptr()] {
        sum += *input;
    }
    let second = |input: *const u32| *input.add(1);
    sum += second(local.as_ptr());
    match local.as_ptr() {
        input if i < n / 2 => sum += *input.add(2),
        input => sum += *input.add(2),
    }
    if let Some(input) = Some(local.as_ptr()) {
        sum += *input;
    }
    let mut left = Some(local.as_ptr());
    while let Some(input) = left {
        sum += *input.add(1);
        left = None;
    }
    *out.add(i as usize) = sum + *input.add(i as usize);
}
