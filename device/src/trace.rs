//! Hooks that let the CPU backend follow a clustered kernel's scheduler; on
//! the GPU they compile to nothing.

use crate::cta::Cta;

/// This thread starts running original CTA `cta`. Every schedule's task
/// function calls it first, where the CTA is known whatever the binding
/// and indexing (custom ones included).
#[inline(always)]
pub fn begin_task(_cta: &Cta) {
    #[cfg(not(target_arch = "nvptx64"))]
    crate::cpu::begin_task(_cta.linear_id());
}
