//! Index arithmetic that compiles to what CUDA C++ gets.
//!
//! CUDA C++ kernels index with `int`: signed overflow is undefined, so nvcc
//! may widen `row * n + k` to 64 bits and turn a loop's addresses into
//! pointer steps. The same expression in `u32` may wrap, by definition, so
//! neither rustc nor nvcc (for `unsigned`) may do that: the address is
//! rebuilt every iteration, a 32-bit multiply-add and a widening multiply
//! per load (naive SGEMM's inner loop, before: `docs/BENCHMARKS.md`). In
//! `usize` the arithmetic cannot wrap for any buffer that fits in memory,
//! and LLVM steps the pointer. The macros warn where a loop builds an
//! address in `u32`.
//!
//! ```
//! use clustered_device::index::at;
//! // unsafe fn sgemm_naive(a: *const f32, b: *const f32, c: *mut f32, n: u32)
//! # let (row, col, n) = (1u32, 2u32, 4u32);
//! # let (a, b) = ([1.0f32; 16], [2.0f32; 16]);
//! let mut sum = 0.0f32;
//! for k in 0..n {
//!     sum += a[at(row, n, k)] * b[at(k, n, col)];
//! }
//! # assert_eq!(sum, 8.0);
//! ```

/// `row * width + col`, in `usize`: the element at (`row`, `col`) of a
/// row-major matrix `width` elements wide.
#[inline(always)]
pub fn at(row: u32, width: u32, col: u32) -> usize {
    row as usize * width as usize + col as usize
}

/// `(z * height + y) * width + x`, in `usize`: the element at (`x`, `y`,
/// `z`) of a row-major `width x height x depth` volume.
#[inline(always)]
pub fn at3(z: u32, height: u32, y: u32, width: u32, x: u32) -> usize {
    (z as usize * height as usize + y as usize) * width as usize + x as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_past_u32_do_not_wrap() {
        assert_eq!(at(3, 5, 2), 17);
        assert_eq!(at3(1, 2, 1, 3, 2), 11);
        // 70 000^2 is past 2^32: a u32 product would wrap.
        assert_eq!(at(70_000, 70_000, 1), 4_900_000_001);
    }
}
