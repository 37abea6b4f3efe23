//! Loads from global memory with cache hints, and prefetches.
//!
//! - [`load_bypass_l1`] (`ld.global.cg`): caches in L2 only. For data read
//!   once, so it does not evict lines that other CTAs on the SM will reuse.
//! - [`load_read_only`] (`ld.global.nc`): through the non-coherent read-only
//!   path; the data must not be written during the kernel.
//! - [`prefetch_l1`], [`prefetch_l2`]: bring a line closer without waiting.

use core::arch::asm;

mod sealed {
    pub trait Sealed {}
}

/// Types that a single cache-hinted PTX load can read.
pub trait HintedLoad: Copy + sealed::Sealed {
    #[doc(hidden)]
    unsafe fn load_cg(address: *const Self) -> Self;
    #[doc(hidden)]
    unsafe fn load_nc(address: *const Self) -> Self;
}

macro_rules! hinted_load {
    ($($t:ty => $ptx:literal, $class:ident;)*) => {$(
        impl sealed::Sealed for $t {}
        impl HintedLoad for $t {
            #[inline(always)]
            unsafe fn load_cg(address: *const Self) -> Self {
                let value: $t;
                asm!("{{", ".reg .u64 %global;",
                     "cvta.to.global.u64 %global, {address};",
                     concat!("ld.global.cg.", $ptx, " {value}, [%global];"),
                     "}}",
                     value = out($class) value, address = in(reg64) address,
                     options(readonly, nostack, preserves_flags));
                value
            }
            #[inline(always)]
            unsafe fn load_nc(address: *const Self) -> Self {
                let value: $t;
                asm!("{{", ".reg .u64 %global;",
                     "cvta.to.global.u64 %global, {address};",
                     concat!("ld.global.nc.", $ptx, " {value}, [%global];"),
                     "}}",
                     value = out($class) value, address = in(reg64) address,
                     options(pure, readonly, nostack, preserves_flags));
                value
            }
        }
    )*};
}

hinted_load! {
    f32 => "f32", reg32;
    u32 => "u32", reg32;
    i32 => "s32", reg32;
    f64 => "f64", reg64;
    u64 => "u64", reg64;
    i64 => "s64", reg64;
}

/// `ld.global.cg`: loads `*address` caching it in L2 only (bypassing L1).
///
/// # Safety
/// `address` must be valid for reads, aligned, and point to global memory.
#[inline(always)]
pub unsafe fn load_bypass_l1<T: HintedLoad>(address: *const T) -> T {
    T::load_cg(address)
}

/// `ld.global.nc`: loads `*address` through the read-only data path.
///
/// # Safety
/// As [`load_bypass_l1`], and nothing may write `*address` while the kernel
/// runs.
#[inline(always)]
pub unsafe fn load_read_only<T: HintedLoad>(address: *const T) -> T {
    T::load_nc(address)
}

macro_rules! prefetch {
    ($($(#[$doc:meta])* $name:ident => $level:literal;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// `address` must point into a global-memory allocation.
        #[inline(always)]
        pub unsafe fn $name<T>(address: *const T) {
            asm!("{{", ".reg .u64 %global;",
                 "cvta.to.global.u64 %global, {address};",
                 concat!("prefetch.global.", $level, " [%global];"),
                 "}}",
                 address = in(reg64) address, options(nostack, preserves_flags));
        }
    )*};
}

prefetch! {
    /// `prefetch.global.L1`: starts bringing the line of `address` into L1
    /// (and L2) without waiting for it.
    prefetch_l1 => "L1";
    /// `prefetch.global.L2`: starts bringing the line of `address` into L2
    /// without waiting for it.
    prefetch_l2 => "L2";
}
