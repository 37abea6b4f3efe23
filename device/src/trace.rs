//! Hooks that let the CPU backend follow a clustered kernel's scheduler; on
//! the GPU they compile to nothing.

/// The scheduler starts running original CTA `task` (its row-major linear
/// id) in this thread.
#[inline(always)]
pub fn begin_task(_task: u32) {
    #[cfg(not(target_arch = "nvptx64"))]
    crate::cpu::begin_task(_task);
}
