//! Naive SGEMM with its addresses written four ways (the fifth, pointers
//! stepped by hand, is the suite's `sgemm_naive` itself), to measure which index
//! arithmetic compiles to what CUDA C++ gets (issue 14; the example
//! `index_forms` times them beside the nvcc twin). Same algorithm, same
//! `fma` order, same bits as [`sgemm_naive`](fn@crate::sgemm_naive::sgemm_naive).

use clustered_device::index::at;
use clustered_device::kernel;
use clustered_device::math::fma;
use clustered_device::thread::{block_idx_x, block_idx_y, thread_idx_x, thread_idx_y};

/// `row * n + k` in u32, widened after: it may wrap, so every address is
/// rebuilt (the suite's form before issue 14).
#[kernel]
#[allow(deprecated)]
pub unsafe fn naive_u32(a: *const f32, b: *const f32, c: *mut f32, n: u32) {
    let row = block_idx_y() * 16 + thread_idx_y();
    let col = block_idx_x() * 16 + thread_idx_x();
    let mut sum = 0.0f32;
    for k in 0..n {
        sum = fma(
            *a.add((row * n + k) as usize),
            *b.add((k * n + col) as usize),
            sum,
        );
    }
    *c.add((row * n + col) as usize) = sum;
}

/// In usize: each operand widened first.
#[kernel]
pub unsafe fn naive_usize(a: *const f32, b: *const f32, c: *mut f32, n: u32) {
    let row = (block_idx_y() * 16 + thread_idx_y()) as usize;
    let col = (block_idx_x() * 16 + thread_idx_x()) as usize;
    let n = n as usize;
    let mut sum = 0.0f32;
    for k in 0..n {
        sum = fma(*a.add(row * n + k), *b.add(k * n + col), sum);
    }
    *c.add(row * n + col) = sum;
}

/// `index::at`: u32 that may not wrap (LLVM's `nuw`), as C++ `int` may not
/// overflow.
#[kernel]
pub unsafe fn naive_at(a: *const f32, b: *const f32, c: *mut f32, n: u32) {
    let row = block_idx_y() * 16 + thread_idx_y();
    let col = block_idx_x() * 16 + thread_idx_x();
    let mut sum = 0.0f32;
    for k in 0..n {
        sum = fma(*a.add(at(row, n, k)), *b.add(at(k, n, col)), sum);
    }
    *c.add(at(row, n, col)) = sum;
}

/// In i32 that may not overflow, sign-extended: C++ `int` exactly.
#[kernel]
pub unsafe fn naive_i32(a: *const f32, b: *const f32, c: *mut f32, n: u32) {
    let row = (block_idx_y() * 16 + thread_idx_y()) as i32;
    let col = (block_idx_x() * 16 + thread_idx_x()) as i32;
    let n = n as i32;
    let mut sum = 0.0f32;
    let mut k = 0i32;
    while k < n {
        sum = fma(
            *a.offset(row.unchecked_mul(n).unchecked_add(k) as isize),
            *b.offset(k.unchecked_mul(n).unchecked_add(col) as isize),
            sum,
        );
        k = k.unchecked_add(1);
    }
    *c.add(at(row as u32, n as u32, col as u32)) = sum;
}
