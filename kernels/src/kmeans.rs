//! k-means: the assignment step.

use clustered_device::clustered;
use clustered_device::index::at;
use clustered_device::math::fma;
use clustered_device::thread::index_1d;

/// Threads per block of [`kmeans_assign`](fn@kmeans_assign) (Rodinia's choice).
pub const KMEANS_BLOCK: u32 = 256;

/// `membership[i] = argmin over c < nclusters of
/// sum over f < nfeatures of (points[i][f] - centroids[c][f])^2`, row-major
/// `npoints x nfeatures` points and `nclusters x nfeatures` centroids. The
/// squared distance accumulates with `fma(d, d, dist)` in feature order; the
/// first of equal minima wins (strict `<`, starting from `f32::MAX` and
/// index 0, so a point whose distances are all NaN or above `f32::MAX` gets 0).
///
/// Launch: block `256 x 1`, grid `ceil(npoints / 256)`; one point per
/// thread, which re-reads its row of `points` once per centroid (Rodinia's
/// loop order: the row stays in L1 between centroids).
///
/// Sharing: every CTA reads all centroids (warp-uniform loads); a CTA's
/// points are a contiguous block of `256 * nfeatures` floats, so only CTAs
/// next to each other share a line, at their boundary. The L1 must hold the
/// rows of all resident warps (`256 * nfeatures * 4` bytes per CTA: 34 KB
/// at 34 features), or each centroid reloads them.
///
/// Variants (a 1D grid: row- and column-major are the same order):
/// - `_redirect`: the paper's redirection.
/// - `_agents`: persistent agents, ACTIVE = MAX.
/// - `_agents_throttled`: 4 active agents per SM (about half of MAX): the
///   paper's reason for throttling, fewer resident rows for the L1.
/// - `_agents_chunked`: agents claiming 8 consecutive CTAs at a time.
/// - `_stride`, `_stride_waves4`: persistent CTAs in a grid-stride loop, in
///   one or 4 waves of blocks.
#[clustered(auto)]
#[clustered(name = kmeans_assign_redirect, binding = redirect)]
#[clustered(name = kmeans_assign_stride, binding = stride)]
#[clustered(name = kmeans_assign_stride_waves4, binding = stride, waves = 4)]
#[clustered(name = kmeans_assign_agents, binding = agents)]
#[clustered(name = kmeans_assign_agents_throttled, binding = agents, active = 4)]
#[clustered(name = kmeans_assign_agents_chunked, binding = agents, chunk = 8)]
pub unsafe fn kmeans_assign(
    points: *const f32,
    centroids: *const f32,
    membership: *mut u32,
    npoints: u32,
    nfeatures: u32,
    nclusters: u32,
) {
    let i = index_1d();
    if i < npoints {
        let mut best = 0u32;
        let mut best_distance = f32::MAX;
        for c in 0..nclusters {
            // Point i and centroid c, stepped by pointer (see `index_forms`).
            let mut p = points.add(at(i, nfeatures, 0));
            let mut q = centroids.add(at(c, nfeatures, 0));
            let mut distance = 0.0f32;
            for _ in 0..nfeatures {
                let d = *p - *q;
                distance = fma(d, d, distance);
                p = p.add(1);
                q = q.add(1);
            }
            if distance < best_distance {
                best_distance = distance;
                best = c;
            }
        }
        *membership.add(i as usize) = best;
    }
}
