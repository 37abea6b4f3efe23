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
    /// The threads that run this CTA, the first of a 1-D block, where they
    /// are fewer than the block's (a task pool's worker with a publishing
    /// warp, `clustered_abi::pool`); 0: every thread of the block.
    pub threads: u32,
}

impl Cta {
    /// The CTA at `index` of `grid`, run by every thread of the block.
    #[inline(always)]
    pub const fn new(index: [u32; 3], grid: [u32; 3]) -> Self {
        Cta {
            index,
            grid,
            threads: 0,
        }
    }

    /// The CTA at `index` of `grid` as a pool task's, run by the block's
    /// first `threads` threads (1-D).
    #[inline(always)]
    pub const fn of_task(index: [u32; 3], grid: [u32; 3], threads: u32) -> Self {
        Cta {
            index,
            grid,
            threads,
        }
    }

    /// Threads of the CTA along x (`blockDim.x`): [`Cta::threads`] where
    /// set, else the block's (the built-in: where `threads` is known to be
    /// 0 or not, as in a schedule or a pool, the other arm folds away).
    #[inline(always)]
    pub fn block_dim_x(&self) -> u32 {
        if self.threads != 0 {
            self.threads
        } else {
            crate::thread::block_dim_x()
        }
    }
    /// Threads of the CTA along y (`blockDim.y`): 1 where
    /// [`Cta::threads`] is set, else the block's.
    #[inline(always)]
    pub fn block_dim_y(&self) -> u32 {
        if self.threads != 0 {
            1
        } else {
            crate::thread::block_dim_y()
        }
    }
    /// Threads of the CTA along z (`blockDim.z`): 1 where
    /// [`Cta::threads`] is set, else the block's.
    #[inline(always)]
    pub fn block_dim_z(&self) -> u32 {
        if self.threads != 0 {
            1
        } else {
            crate::thread::block_dim_z()
        }
    }

    /// The threads that run the CTA: the product of its
    /// [`block_dim_x`](Self::block_dim_x), `_y` and `_z`.
    #[inline(always)]
    pub fn thread_count(&self) -> u32 {
        self.block_dim_x() * self.block_dim_y() * self.block_dim_z()
    }

    /// A barrier of the CTA's threads (`__syncthreads()`): `barrier.sync
    /// 0, n` for its `n` threads ([`thread_count`](Self::thread_count)), one instruction
    /// tagged as the pool's, so a pool task that waits here
    /// (and nowhere else) may run beside a publishing warp, which never
    /// comes to it. Every thread of the CTA must reach it, as
    /// `sync_threads`.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn sync_threads(&self) {
        crate::thread::sync_first_threads::<0>(self.thread_count());
    }

    /// The CTA's index along x in the original grid (`blockIdx.x`).
    #[inline(always)]
    pub const fn block_idx_x(&self) -> u32 {
        self.index[0]
    }
    /// The CTA's index along y in the original grid (`blockIdx.y`).
    #[inline(always)]
    pub const fn block_idx_y(&self) -> u32 {
        self.index[1]
    }
    /// The CTA's index along z in the original grid (`blockIdx.z`).
    #[inline(always)]
    pub const fn block_idx_z(&self) -> u32 {
        self.index[2]
    }
    /// The original grid's size along x (`gridDim.x`).
    #[inline(always)]
    pub const fn grid_dim_x(&self) -> u32 {
        self.grid[0]
    }
    /// The original grid's size along y (`gridDim.y`).
    #[inline(always)]
    pub const fn grid_dim_y(&self) -> u32 {
        self.grid[1]
    }
    /// The original grid's size along z (`gridDim.z`).
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
        self.index[0] * self.block_dim_x() + crate::thread::thread_idx_x()
    }

    /// `index_2d` of this thread as if it ran in this CTA.
    #[inline(always)]
    pub fn index_2d(&self) -> (u32, u32) {
        use crate::thread::{thread_idx_x, thread_idx_y};
        (
            self.index[0] * self.block_dim_x() + thread_idx_x(),
            self.index[1] * self.block_dim_y() + thread_idx_y(),
        )
    }
}

/// Is `F` the type of the function item `_getter`? Both are zero-sized fn
/// item types, so this is a constant that LLVM folds away.
#[inline(always)]
pub(crate) fn is_function<F: 'static, G: 'static>(_getter: &G) -> bool {
    core::any::TypeId::of::<F>() == core::any::TypeId::of::<G>()
}

/// The answers a clustered body gets for the runtime's block-index getters.
///
/// The macro rewrites a call `block_idx_x()` in a schedule's body into
/// `cta.virtual_block_idx_x(block_idx_x)`: if the callee is the runtime's
/// getter (whatever path or alias named it), the answer is the virtual
/// CTA's; a user's own function that merely shares the name runs as
/// written. The test is on types, so it costs nothing at run time.
macro_rules! virtual_reads {
    ($($(#[$doc:meta])* $method:ident => $getter:path, $answer:ident: $ty:ty;)*) => {
        impl Cta {$(
            $(#[$doc])*
            #[inline(always)]
            // A barrier's call site on the CPU backend is the body's.
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            #[allow(clippy::unused_unit)] // `virtual_sync_threads` returns `()`
            pub fn $method<F: FnOnce() -> $ty + 'static>(&self, call: F) -> $ty {
                if is_function::<F, _>(&$getter) {
                    self.$answer()
                } else {
                    call()
                }
            }
        )*}
    };
}

virtual_reads! {
    /// `block_idx_x()` in a clustered body.
    virtual_block_idx_x => crate::thread::block_idx_x, block_idx_x: u32;
    /// `block_idx_y()` in a clustered body.
    virtual_block_idx_y => crate::thread::block_idx_y, block_idx_y: u32;
    /// `block_idx_z()` in a clustered body.
    virtual_block_idx_z => crate::thread::block_idx_z, block_idx_z: u32;
    /// `grid_dim_x()` in a clustered body.
    virtual_grid_dim_x => crate::thread::grid_dim_x, grid_dim_x: u32;
    /// `grid_dim_y()` in a clustered body.
    virtual_grid_dim_y => crate::thread::grid_dim_y, grid_dim_y: u32;
    /// `grid_dim_z()` in a clustered body.
    virtual_grid_dim_z => crate::thread::grid_dim_z, grid_dim_z: u32;
    /// `index_1d()` in a clustered body.
    virtual_index_1d => crate::thread::index_1d, index_1d: u32;
    /// `index_2d()` in a clustered body.
    virtual_index_2d => crate::thread::index_2d, index_2d: (u32, u32);
    /// `block_dim_x()` in a pool task's body.
    virtual_block_dim_x => crate::thread::block_dim_x, block_dim_x: u32;
    /// `block_dim_y()` in a pool task's body.
    virtual_block_dim_y => crate::thread::block_dim_y, block_dim_y: u32;
    /// `block_dim_z()` in a pool task's body.
    virtual_block_dim_z => crate::thread::block_dim_z, block_dim_z: u32;
    /// `sync_threads()` in a pool task's body (without early returns).
    virtual_sync_threads => crate::thread::sync_threads, sync_threads: ();
}
