//! Where this thread runs: SM, warp and lane ids.
//!
//! On the CPU backend these are the simulated SM's `%smid`, the thread's warp
//! within its CTA, its lane, and the scheduler's tick as the clock.

#[cfg(target_arch = "nvptx64")]
use core::arch::asm;

/// A `u32` special register on the GPU; on the CPU backend, `$host`.
macro_rules! read_u32_register {
    ($($(#[$doc:meta])* $name:ident => $reg:literal, $host:expr;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name() -> u32 {
            #[cfg(target_arch = "nvptx64")]
            {
                let value: u32;
                // SAFETY: reading a special register has no preconditions.
                unsafe {
                    asm!(concat!("mov.u32 {}, ", $reg, ";"), out(reg32) value,
                         options(nomem, nostack, preserves_flags));
                }
                value
            }
            #[cfg(not(target_arch = "nvptx64"))]
            return $host;
        }
    )*};
}

pub(crate) use read_u32_register;

read_u32_register! {
    /// `%smid`: the id of the SM this thread runs on. Ids need not be
    /// contiguous; they are below [`sm_id_bound`].
    sm_id => "%smid", crate::cpu::current_cta().sm_id;
    /// `%nsmid`: an upper bound on SM ids (not the number of SMs).
    sm_id_bound => "%nsmid", crate::cpu::current_cta().sm_id_bound;
    /// `%warpid`: the warp's slot on its SM (changes under preemption).
    warp_slot => "%warpid", crate::cpu::current_lane().warp;
    /// `%laneid`: this thread's lane in its warp, 0..32.
    lane_id => "%laneid", crate::cpu::current_lane().lane_id;
}

/// `%clock64`: this SM's cycle counter.
#[inline(always)]
pub fn clock64() -> u64 {
    #[cfg(target_arch = "nvptx64")]
    {
        let value: u64;
        // SAFETY: reading a special register has no preconditions.
        unsafe {
            asm!("mov.u64 {}, %clock64;", out(reg64) value, options(nomem, nostack, preserves_flags));
        }
        value
    }
    #[cfg(not(target_arch = "nvptx64"))]
    crate::cpu::clock()
}
