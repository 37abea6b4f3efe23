//! CUDA's `#pragma unroll N` for Rust kernels.
//!
//! LLVM unrolls a counted loop as deep as it likes before ptxas sees it,
//! and ptxas schedules what it is given: naive SGEMM's `k` loop came out of
//! LLVM 16 steps deep, and ptxas kept 12 of its loads in flight (nvcc's
//! loop, 4 deep, 16). Run by [`unroll::<8>`](unroll), 8 steps a run in a
//! loop LLVM cannot count, ptxas kept 16, and the kernel ran 6.8% faster at
//! n = 8192 on an H200, 4.9% ahead of its nvcc twin where it had been 2.1%
//! behind (docs/BENCHMARKS.md, "Naive SGEMM's k loop, 8 steps a run").

/// Runs `body(k)` for `k = 0 .. count`, in order, as a loop of `N` calls at
/// a time that LLVM does not unroll further, then the last `count % N` one
/// by one: the shape nvcc gives a loop under `#pragma unroll N`, which ptxas
/// then schedules, and may unroll, itself.
///
/// ```
/// use clustered_device::unroll::unroll;
/// let (a, b) = ([1.0f32; 10], [2.0f32; 10]);
/// let mut sum = 0.0f32;
/// unroll::<4>(10, |k| sum += a[k as usize] * b[k as usize]);
/// assert_eq!(sum, 20.0);
/// ```
///
/// `N` must be above 0 (a compile error otherwise). Time the depths where a
/// loop is hot: the best depends on the loop and on the code around it
/// (naive SGEMM: 4 and 16 were slower than 8 at n = 4096 and 8192).
///
/// `#[clustered]`'s access analysis reads `unroll::<N>(count, |k| body)`
/// as `for k in 0..count { body }`.
#[inline(always)]
pub fn unroll<const N: u32>(count: u32, mut body: impl FnMut(u32)) {
    const { assert!(N > 0, "unroll::<N> needs N > 0") };
    // The steps of whole runs of N.
    let full = count - count % N;
    let mut k = 0;
    while k < full {
        for step in 0..N {
            body(k + step);
        }
        // Through a move LLVM cannot see into: its trip count unknown, LLVM
        // leaves the loop as it is written.
        k = crate::memory::unstepped(k + N);
    }
    // At most N - 1 steps, one at a time (LLVM leaves it a loop of one
    // step, as nvcc leaves its remainder: naive SGEMM's PTX, both builds).
    for step in 0..count % N {
        body(full + step);
    }
}

#[cfg(test)]
mod tests {
    use super::unroll;

    fn visits<const N: u32>(count: u32) -> Vec<u32> {
        let mut seen = Vec::new();
        unroll::<N>(count, |k| seen.push(k));
        seen
    }

    #[test]
    fn every_step_runs_once_in_order() {
        for count in 0..40 {
            let all: Vec<u32> = (0..count).collect();
            assert_eq!(visits::<1>(count), all);
            assert_eq!(visits::<3>(count), all);
            assert_eq!(visits::<8>(count), all);
        }
    }
}
