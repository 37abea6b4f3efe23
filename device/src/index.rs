//! Index arithmetic that compiles to what CUDA C++ gets.
//!
//! CUDA C++ kernels index with `int`: signed overflow is undefined, so nvcc
//! may assume `row * n + k` does not overflow and step a loop's addresses.
//! The same expression in `u32` may wrap, by definition, so the compiler
//! must rebuild every address. [`at`] computes it in `u32` with the same
//! promise (LLVM's `nuw`: no unsigned wrap) and widens it; the CPU backend
//! checks the promise and stops the kernel where it breaks.
//!
//! Measured on an H100 (one run each, docs/BENCHMARKS.md, "Index
//! arithmetic"): naive SGEMM at n = 8192 took 264 ms with u32 indices, 233
//! ms with `at`, 219 ms with pointers stepped by hand, as fast as nvcc with
//! `int` (214 ms), and 349 ms computed in `usize`; ATAX's column pass took
//! 1.97 ms in u32, 1.66 ms stepping a pointer by the row length and 1.06 ms
//! in `usize`. No form wins everywhere: use `at`, and time the others where
//! a loop is hot (`cargo run --release --example index_forms`).
//!
//! ```
//! use clustered_device::index::at;
//! # let (row, col, n) = (1u32, 2u32, 4u32);
//! # let (a, b) = ([1.0f32; 16], [2.0f32; 16]);
//! let mut sum = 0.0f32;
//! for k in 0..n {
//!     // SAFETY: row, k, col < n and n * n fits in u32.
//!     sum += a[unsafe { at(row, n, k) }] * b[unsafe { at(k, n, col) }];
//! }
//! # assert_eq!(sum, 8.0);
//! ```

/// `row * width + col` as an index: the element at (`row`, `col`) of a
/// row-major matrix `width` elements wide.
///
/// # Safety
/// `row * width + col` fits in `u32` (as C++ `int` indices must not
/// overflow): the GPU build assumes it and may step addresses across loop
/// iterations; the CPU backend checks it and panics where it does not.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn at(row: u32, width: u32, col: u32) -> usize {
    #[cfg(target_arch = "nvptx64")]
    {
        // SAFETY: no wrap, the caller's promise.
        unsafe { row.unchecked_mul(width).unchecked_add(col) as usize }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    match row.checked_mul(width).and_then(|p| p.checked_add(col)) {
        Some(index) => index as usize,
        None => panic!(
            "index::at({row}, {width}, {col}): {row} * {width} + {col} does not fit in u32; \
             compute this index in usize (`row as usize * width as usize + col as usize`)"
        ),
    }
}

/// `(z * height + y) * width + x` as an index: the element at (`x`, `y`,
/// `z`) of a row-major `width x height x depth` volume.
///
/// # Safety
/// As for [`at`]: every step fits in `u32`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn at3(z: u32, height: u32, y: u32, width: u32, x: u32) -> usize {
    // SAFETY: the caller's promise covers both steps.
    unsafe { at(at(z, height, y) as u32, width, x) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_are_row_major() {
        // SAFETY: small values.
        unsafe {
            assert_eq!(at(3, 5, 2), 17);
            assert_eq!(at3(1, 2, 1, 3, 2), 11);
        }
    }

    #[test]
    #[should_panic(expected = "does not fit in u32")]
    fn a_broken_promise_stops_the_cpu_backend() {
        // 70 000^2 is past 2^32.
        // SAFETY: deliberately broken; the host build checks it.
        let _ = unsafe { at(70_000, 70_000, 1) };
    }
}
