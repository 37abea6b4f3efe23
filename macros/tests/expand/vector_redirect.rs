use clustered_device::clustered;
use clustered_device::thread::{block_dim_x, block_idx_x, thread_idx_x};

/// `x[i] *= s`, with the paper's round-robin redirection.
#[clustered(name = scale_redirect, binding = redirect, indexing = row_major)]
pub unsafe fn scale(x: *mut f32, s: f32, n: u32) {
    let i = block_idx_x() * block_dim_x() + thread_idx_x();
    if i < n {
        *x.add(i as usize) *= s;
    }
}
