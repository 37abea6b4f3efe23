//! Loads from global memory with cache hints, and prefetches.
//!
//! - [`load_bypass_l1`] (`ld.global.cg`): caches in L2 only. For data read
//!   once, so it does not evict lines that other CTAs on the SM will reuse.
//! - [`load_read_only`] (`ld.global.nc`): through the non-coherent read-only
//!   path; the data must not be written during the kernel.
//! - [`prefetch_l1`], [`prefetch_l2`]: bring a line closer without waiting.

#[cfg(target_arch = "nvptx64")]
use core::arch::asm;

/// On the CPU backend, tells the simulator about an access of this thread.
/// The site is the kernel's call of the public function (`#[track_caller]`
/// all the way down, on the host only).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn trace<T>(_kind_on_cpu: TraceKind, _address: *const T) {
    #[cfg(not(target_arch = "nvptx64"))]
    crate::cpu::access(
        _kind_on_cpu,
        _address as u64,
        core::mem::size_of::<T>() as u32,
        core::panic::Location::caller(),
    );
}

#[cfg(not(target_arch = "nvptx64"))]
use crate::cpu::AccessKind as TraceKind;
/// On the GPU nothing is traced; the kinds exist so the calls type-check.
#[cfg(target_arch = "nvptx64")]
#[derive(Clone, Copy)]
#[allow(dead_code)]
enum TraceKind {
    Load,
    LoadBypassL1,
    Store,
    PrefetchL1,
    PrefetchL2,
}

/// `*address`: a plain global load. `#[clustered]` and `#[kernel]` write every
/// `*pointer` read of a kernel body as this call, so that the CPU backend sees
/// it; on the GPU it is exactly `*address`.
///
/// # Safety
/// As for `*address`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn load<T: Copy>(address: *const T) -> T {
    unsafe {
        trace(TraceKind::Load, address);
        *address
    }
}

/// `*address = value`: a plain global store, traced like [`load`].
///
/// # Safety
/// As for `*address = value`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn store<T>(address: *mut T, value: T) {
    unsafe {
        trace(TraceKind::Store, address);
        *address = value;
    }
}

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
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn load_cg(address: *const Self) -> Self { unsafe {
                #[cfg(target_arch = "nvptx64")]
                {
                    let value: $t;
                    asm!("{{", ".reg .u64 %global;",
                         "cvta.to.global.u64 %global, {address};",
                         concat!("ld.global.cg.", $ptx, " {value}, [%global];"),
                         "}}",
                         value = out($class) value, address = in(reg64) address,
                         options(readonly, nostack, preserves_flags));
                    value
                }
                #[cfg(not(target_arch = "nvptx64"))]
                {
                    trace(TraceKind::LoadBypassL1, address);
                    *address
                }
            }}
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn load_nc(address: *const Self) -> Self { unsafe {
                #[cfg(target_arch = "nvptx64")]
                {
                    let value: $t;
                    asm!("{{", ".reg .u64 %global;",
                         "cvta.to.global.u64 %global, {address};",
                         concat!("ld.global.nc.", $ptx, " {value}, [%global];"),
                         "}}",
                         value = out($class) value, address = in(reg64) address,
                         options(pure, readonly, nostack, preserves_flags));
                    value
                }
                #[cfg(not(target_arch = "nvptx64"))]
                {
                    trace(TraceKind::Load, address);
                    *address
                }
            }}
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
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn load_bypass_l1<T: HintedLoad>(address: *const T) -> T {
    unsafe { T::load_cg(address) }
}

/// `ld.global.nc`: loads `*address` through the read-only data path.
///
/// # Safety
/// As [`load_bypass_l1`], and nothing may write `*address` while the kernel
/// runs.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn load_read_only<T: HintedLoad>(address: *const T) -> T {
    unsafe { T::load_nc(address) }
}

macro_rules! prefetch {
    ($($(#[$doc:meta])* $name:ident => $level:literal, $kind:ident;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn $name<T>(address: *const T) {
            #[cfg(target_arch = "nvptx64")]
            asm!("{{", ".reg .u64 %global;",
                 "cvta.to.global.u64 %global, {address};",
                 concat!("prefetch.global.", $level, " [%global];"),
                 "}}",
                 address = in(reg64) address, options(nostack, preserves_flags));
            #[cfg(not(target_arch = "nvptx64"))]
            trace(TraceKind::$kind, address);
        }
    )*};
}

prefetch! {
    /// `prefetch.global.L1`: starts bringing the line of `address` into L1
    /// (and L2) without waiting for it.
    ///
    /// # Safety
    /// `address` must be a global-memory address (it need not be valid).
    prefetch_l1 => "L1", PrefetchL1;
    /// `prefetch.global.L2`: starts bringing the line of `address` into L2
    /// without waiting for it.
    ///
    /// # Safety
    /// `address` must be a global-memory address (it need not be valid).
    prefetch_l2 => "L2", PrefetchL2;
}
