//! The CTA a clustered body runs as: its coordinates in the original grid.

/// One CTA of the original kernel: its block index and the original grid.
///
/// Inside a `#[clustered]` body every read of the block index or grid
/// dimension (`block_idx_x()`, `grid_dim_y()`, `index_1d()`, ...) is rewritten
/// to read this instead of the hardware registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cta {
    /// The block index `(x, y, z)` in the original grid.
    pub index: [u32; 3],
    /// The original grid's dimensions.
    pub grid: [u32; 3],
}

impl Cta {
    #[inline(always)]
    pub const fn new(index: [u32; 3], grid: [u32; 3]) -> Self {
        Cta { index, grid }
    }

    #[inline(always)]
    pub const fn block_idx_x(&self) -> u32 {
        self.index[0]
    }
    #[inline(always)]
    pub const fn block_idx_y(&self) -> u32 {
        self.index[1]
    }
    #[inline(always)]
    pub const fn block_idx_z(&self) -> u32 {
        self.index[2]
    }
    #[inline(always)]
    pub const fn grid_dim_x(&self) -> u32 {
        self.grid[0]
    }
    #[inline(always)]
    pub const fn grid_dim_y(&self) -> u32 {
        self.grid[1]
    }
    #[inline(always)]
    pub const fn grid_dim_z(&self) -> u32 {
        self.grid[2]
    }
}

impl Cta {
    /// The CTA's row-major linear id in the original grid: what the CPU
    /// backend's observers call a task.
    #[inline(always)]
    pub const fn linear_id(&self) -> u32 {
        let ([x, y, z], [gx, gy, _]) = (self.index, self.grid);
        (z * gy + y) * gx + x
    }

    /// `index_1d` of this thread as if it ran in this CTA.
    #[inline(always)]
    pub fn index_1d(&self) -> u32 {
        self.index[0] * crate::thread::block_dim_x() + crate::thread::thread_idx_x()
    }

    /// `index_2d` of this thread as if it ran in this CTA.
    #[inline(always)]
    pub fn index_2d(&self) -> (u32, u32) {
        use crate::thread::*;
        (
            self.index[0] * block_dim_x() + thread_idx_x(),
            self.index[1] * block_dim_y() + thread_idx_y(),
        )
    }
}
