//! Where this thread runs: SM, warp and lane ids.

use core::arch::asm;

macro_rules! read_u32_register {
    ($($(#[$doc:meta])* $name:ident => $reg:literal;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name() -> u32 {
            let value: u32;
            // SAFETY: reading a special register has no preconditions.
            unsafe {
                asm!(concat!("mov.u32 {}, ", $reg, ";"), out(reg32) value,
                     options(nomem, nostack, preserves_flags));
            }
            value
        }
    )*};
}

read_u32_register! {
    /// `%smid`: the id of the SM this thread runs on. Ids need not be
    /// contiguous; they are below [`sm_id_bound`].
    sm_id => "%smid";
    /// `%nsmid`: an upper bound on SM ids (not the number of SMs).
    sm_id_bound => "%nsmid";
    /// `%warpid`: the warp's slot on its SM (changes under preemption).
    warp_slot => "%warpid";
    /// `%laneid`: this thread's lane in its warp, 0..32.
    lane_id => "%laneid";
}

/// `%clock64`: this SM's cycle counter.
#[inline(always)]
pub fn clock64() -> u64 {
    let value: u64;
    // SAFETY: reading a special register has no preconditions.
    unsafe {
        asm!("mov.u64 {}, %clock64;", out(reg64) value, options(nomem, nostack, preserves_flags));
    }
    value
}
