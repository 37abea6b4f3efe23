//! Atomics on global memory at device (GPU) scope, relaxed ordering; and
//! the system-scope loads and stores (acquire, release) that a task pool's
//! blocks use on memory shared with the host (`abi::pool`).
//!
//! Written as PTX so the instruction is exactly the one named: in particular
//! [`fetch_inc_wrapping`] (`atom.inc`) is left alone by ptxas, which
//! warp-aggregates a one-thread `atom.add` and makes the other lanes wait on a
//! shuffle (DESIGN.md section 7).

#[cfg(target_arch = "nvptx64")]
use core::arch::asm;
#[cfg(not(target_arch = "nvptx64"))]
use core::sync::atomic::{
    AtomicU32, AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};

/// On the CPU backend: checks the address against the launch's buffers, does
/// the atomic, and reports it to the simulator.
#[cfg(not(target_arch = "nvptx64"))]
#[track_caller]
fn traced<T, R>(address: *mut T, atomic: impl FnOnce() -> R) -> R {
    let bytes = core::mem::size_of::<T>() as u32;
    crate::cpu::check_aligned(crate::cpu::AccessKind::Atomic, address);
    crate::cpu::check_access(crate::cpu::AccessKind::Atomic, address as u64, bytes);
    let result = atomic();
    crate::cpu::access(
        crate::cpu::AccessKind::Atomic,
        address as u64,
        core::mem::size_of::<T>() as u32,
        core::panic::Location::caller(),
    );
    result
}

/// Read-modify-write atomics on a `u32` that return the old value, one per
/// line: the named PTX instruction on the GPU; on the CPU backend the
/// `AtomicU32` method of that name, checked against the launch's buffers.
macro_rules! u32_atomics {
    ($($(#[$doc:meta])* $name:ident = $ptx:literal, $method:ident;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// `address` must point to a valid, 4-byte aligned `u32` in global memory.
        #[inline(always)]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn $name(address: *mut u32, value: u32) -> u32 {
            unsafe {
                #[cfg(target_arch = "nvptx64")]
                {
                    let old: u32;
                    asm!(concat!($ptx, " {old}, [{address}], {value};"),
                     old = out(reg32) old, address = in(reg64) address, value = in(reg32) value,
                     options(nostack));
                    old
                }
                #[cfg(not(target_arch = "nvptx64"))]
                traced(address, || AtomicU32::from_ptr(address).$method(value, Relaxed))
            }
        }
    )*};
}

u32_atomics! {
    /// `atom.global.add.u32`: adds `value` to `*address`, returns the old value.
    fetch_add_u32 = "atom.relaxed.gpu.global.add.u32", fetch_add;
    /// `atom.global.or.b32`: `*address |= value`, returns the old value.
    fetch_or_u32 = "atom.relaxed.gpu.global.or.b32", fetch_or;
    /// `atom.global.max.u32`: `*address = max(*address, value)`, returns the
    /// old value.
    fetch_max_u32 = "atom.relaxed.gpu.global.max.u32", fetch_max;
}

/// `atom.global.add.u64`.
///
/// # Safety
/// `address` must point to a valid, 8-byte aligned `u64` in global memory.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn fetch_add_u64(address: *mut u64, value: u64) -> u64 {
    unsafe {
        #[cfg(target_arch = "nvptx64")]
        {
            let old: u64;
            asm!("atom.relaxed.gpu.global.add.u64 {old}, [{address}], {value};",
             old = out(reg64) old, address = in(reg64) address, value = in(reg64) value,
             options(nostack));
            old
        }
        #[cfg(not(target_arch = "nvptx64"))]
        traced(address, || {
            AtomicU64::from_ptr(address).fetch_add(value, Relaxed)
        })
    }
}

/// `atom.global.add.f32`.
///
/// # Safety
/// `address` must point to a valid, 4-byte aligned `f32` in global memory.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn fetch_add_f32(address: *mut f32, value: f32) -> f32 {
    unsafe {
        #[cfg(target_arch = "nvptx64")]
        {
            let old: f32;
            asm!("atom.relaxed.gpu.global.add.f32 {old}, [{address}], {value};",
             old = out(reg32) old, address = in(reg64) address, value = in(reg32) value,
             options(nostack));
            old
        }
        #[cfg(not(target_arch = "nvptx64"))]
        traced(address, || {
            let bits = AtomicU32::from_ptr(address.cast());
            let old = bits.fetch_update(Relaxed, Relaxed, |old| {
                Some((f32::from_bits(old) + value).to_bits())
            });
            f32::from_bits(old.unwrap_or_else(|old| old))
        })
    }
}

/// `atom.global.inc.u32`: `*address = if old >= bound { 0 } else { old + 1 }`,
/// returns `old`. With `bound = u32::MAX - 1` it is a counter that ptxas does
/// not warp-aggregate.
///
/// # Safety
/// `address` must point to a valid, 4-byte aligned `u32` in global memory.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn fetch_inc_wrapping(address: *mut u32, bound: u32) -> u32 {
    unsafe {
        #[cfg(target_arch = "nvptx64")]
        {
            let old: u32;
            asm!("atom.relaxed.gpu.global.inc.u32 {old}, [{address}], {bound};",
             old = out(reg32) old, address = in(reg64) address, bound = in(reg32) bound,
             options(nostack));
            old
        }
        #[cfg(not(target_arch = "nvptx64"))]
        traced(address, || {
            let old = AtomicU32::from_ptr(address).fetch_update(Relaxed, Relaxed, |old| {
                Some(if old >= bound { 0 } else { old + 1 })
            });
            old.unwrap_or_else(|old| old)
        })
    }
}

/// `ld.relaxed.gpu.global.u32`: reads a word that other blocks update with
/// atomics (the count of drained clusters), at GPU scope.
///
/// # Safety
/// `address` must point to a valid, 4-byte aligned `u32` in global memory.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn load_relaxed_gpu_global(address: *const u32) -> u32 {
    unsafe {
        #[cfg(target_arch = "nvptx64")]
        {
            let value: u32;
            asm!("ld.relaxed.gpu.global.u32 {value}, [{address}];",
             value = out(reg32) value, address = in(reg64) address, options(nostack));
            value
        }
        #[cfg(not(target_arch = "nvptx64"))]
        traced(address.cast_mut(), || {
            AtomicU32::from_ptr(address.cast_mut()).load(Relaxed)
        })
    }
}

/// `atom.global.cas.b32`: if `*address == expected` stores `new`; returns the
/// old value.
///
/// # Safety
/// `address` must point to a valid, 4-byte aligned `u32` in global memory.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn compare_and_swap_u32(address: *mut u32, expected: u32, new: u32) -> u32 {
    unsafe {
        #[cfg(target_arch = "nvptx64")]
        {
            let old: u32;
            asm!("atom.relaxed.gpu.global.cas.b32 {old}, [{address}], {expected}, {new};",
             old = out(reg32) old, address = in(reg64) address,
             expected = in(reg32) expected, new = in(reg32) new, options(nostack));
            old
        }
        #[cfg(not(target_arch = "nvptx64"))]
        traced(address, || {
            let old =
                AtomicU32::from_ptr(address).compare_exchange(expected, new, Relaxed, Relaxed);
            old.unwrap_or_else(|old| old)
        })
    }
}

/// On the CPU backend: lets the other simulated threads run after an access
/// to memory shared with the host (a pool's slots), without checking it
/// against the launch's buffers: such memory is no launch buffer.
#[cfg(not(target_arch = "nvptx64"))]
#[track_caller]
fn system_access<T>(address: *const T) {
    crate::cpu::access(
        crate::cpu::AccessKind::Atomic,
        address as u64,
        core::mem::size_of::<T>() as u32,
        core::panic::Location::caller(),
    );
}

/// Scoped loads of a `u32`, one per line: the named PTX instruction on the
/// GPU; on the CPU backend an atomic load of that ordering, reported as an
/// access to memory outside the launch's buffers (mapped host memory, a
/// pool's words).
macro_rules! scoped_loads {
    ($($(#[$doc:meta])* $name:ident = $ptx:literal, $ordering:ident;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn $name(address: *const u32) -> u32 {
            unsafe {
                #[cfg(target_arch = "nvptx64")]
                {
                    let value: u32;
                    asm!(concat!($ptx, " {value}, [{address}];"),
                     value = out(reg32) value, address = in(reg64) address, options(nostack));
                    value
                }
                #[cfg(not(target_arch = "nvptx64"))]
                {
                    let value = AtomicU32::from_ptr(address.cast_mut()).load($ordering);
                    system_access(address);
                    value
                }
            }
        }
    )*};
}

/// Scoped stores of a `u32`, as [`scoped_loads`] for loads.
macro_rules! scoped_stores {
    ($($(#[$doc:meta])* $name:ident = $ptx:literal, $ordering:ident;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn $name(address: *mut u32, value: u32) {
            unsafe {
                #[cfg(target_arch = "nvptx64")]
                asm!(concat!($ptx, " [{address}], {value};"),
                 address = in(reg64) address, value = in(reg32) value, options(nostack));
                #[cfg(not(target_arch = "nvptx64"))]
                {
                    AtomicU32::from_ptr(address).store(value, $ordering);
                    system_access(address);
                }
            }
        }
    )*};
}

scoped_loads! {
    /// `ld.acquire.sys.u32`: reads `*address` at system scope, so that what the
    /// host (or another device) wrote before its release store of this word is
    /// visible to this thread's later reads.
    ///
    /// # Safety
    /// `address` must point to a valid, 4-byte aligned `u32` (global memory or
    /// mapped host memory).
    load_acquire_system = "ld.acquire.sys.u32", Acquire;
    /// `ld.relaxed.sys.u32`: reads `*address` at system scope, never from a line
    /// that L1 kept from an earlier read (a plain `ld` could return the last
    /// task's payload).
    ///
    /// # Safety
    /// As [`load_acquire_system`].
    load_relaxed_system = "ld.relaxed.sys.u32", Relaxed;
    /// `ld.relaxed.gpu.u32`: reads `*address` at GPU scope (a word that blocks
    /// of the launch share outside its buffers, e.g. a pool's publication words).
    ///
    /// # Safety
    /// `address` must point to a valid, 4-byte aligned `u32` in global memory.
    load_relaxed_gpu = "ld.relaxed.gpu.u32", Relaxed;
    /// `ld.acquire.gpu.u32`: reads `*address` at GPU scope; what another
    /// block wrote before its release of this word (or before a fence and
    /// a later write of it) is visible to this thread's later reads.
    ///
    /// # Safety
    /// As [`load_relaxed_gpu`].
    load_acquire_gpu = "ld.acquire.gpu.u32", Acquire;
}

scoped_stores! {
    /// `st.relaxed.sys.u32`: writes `*address` at system scope (ordered for
    /// others only by a later release).
    ///
    /// # Safety
    /// `address` must point to a valid, 4-byte aligned `u32` that this thread
    /// may write.
    store_relaxed_system = "st.relaxed.sys.u32", Relaxed;
    /// `st.release.sys.u32`: writes `*address` at system scope after every
    /// write that this thread made, or saw ordered before it (through a CTA
    /// barrier), became visible: a reader's acquire load of the value sees them.
    ///
    /// # Safety
    /// As [`store_relaxed_system`].
    store_release_system = "st.release.sys.u32", Release;
    /// `st.release.gpu.u32`: writes `*address` at GPU scope after every write
    /// that this thread made, or saw ordered before it (through a CTA barrier
    /// or an acquire), became visible at GPU scope. Far cheaper than
    /// [`store_release_system`] (H200: a chain of pool tasks 1.4 us a task
    /// with it, 2.1 with the system one, `pool_overhead`), because it does not
    /// wait for writes to reach the host.
    ///
    /// # Safety
    /// `address` must point to a valid, 4-byte aligned `u32` in global memory
    /// that this thread may write.
    store_release_gpu = "st.release.gpu.u32", Release;
    /// `st.relaxed.gpu.u32`: writes `*address` at GPU scope.
    ///
    /// # Safety
    /// As [`store_release_gpu`].
    store_relaxed_gpu = "st.relaxed.gpu.u32", Relaxed;
}

/// `st.relaxed.sys.u64`: as [`store_relaxed_system`], for a `u64`.
///
/// # Safety
/// `address` must point to a valid, 8-byte aligned `u64` that this thread
/// may write.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn store_relaxed_system_u64(address: *mut u64, value: u64) {
    unsafe {
        #[cfg(target_arch = "nvptx64")]
        asm!("st.relaxed.sys.u64 [{address}], {value};",
         address = in(reg64) address, value = in(reg64) value, options(nostack));
        #[cfg(not(target_arch = "nvptx64"))]
        {
            AtomicU64::from_ptr(address).store(value, Relaxed);
            system_access(address);
        }
    }
}

/// `red.relaxed.gpu.global.add.u32`: adds `value` to `*address` at GPU
/// scope without reading it back (ordered for others by an earlier fence,
/// as in [`fence_acq_rel_gpu`]).
///
/// # Safety
/// `address` must point to a valid, 4-byte aligned `u32` in global memory.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn add_relaxed_gpu(address: *mut u32, value: u32) {
    unsafe {
        #[cfg(target_arch = "nvptx64")]
        asm!("red.relaxed.gpu.global.add.u32 [{address}], {value};",
         address = in(reg64) address, value = in(reg32) value, options(nostack));
        #[cfg(not(target_arch = "nvptx64"))]
        {
            AtomicU32::from_ptr(address).fetch_add(value, Relaxed);
            system_access(address);
        }
    }
}

/// `fence.acq_rel.gpu`: this thread's later writes become visible at GPU
/// scope only after every write it made, or saw ordered before it (through
/// an acquire or a barrier), did: one fence before several relaxed writes
/// releases them all (a `st.release` is a fence and a store).
#[inline(always)]
pub fn fence_acq_rel_gpu() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a fence touches no memory.
    unsafe {
        asm!("fence.acq_rel.gpu;", options(nostack));
    }
    #[cfg(not(target_arch = "nvptx64"))]
    core::sync::atomic::fence(core::sync::atomic::Ordering::AcqRel);
}

/// A GPU-scope fence of which only the release half is needed: this
/// thread's later writes become visible at GPU scope only after every
/// write it made, or saw ordered before it, did. `fence.release.gpu` where
/// the PTX is ISA 8.6 or newer (`-C target-feature=+ptx86`); before that,
/// `fence.acq_rel.gpu` with a mark that the host turns into
/// `fence.release.gpu` where the driver compiles ISA 8.6
/// ([`crate::abi::ptx`]): the acquire half would invalidate the SM's L1.
#[inline(always)]
pub fn fence_release_gpu() {
    #[cfg(all(target_arch = "nvptx64", target_feature = "ptx86"))]
    // SAFETY: a fence touches no memory.
    unsafe {
        asm!("fence.release.gpu;", options(nostack));
    }
    #[cfg(all(target_arch = "nvptx64", not(target_feature = "ptx86")))]
    // SAFETY: a fence touches no memory.
    unsafe {
        asm!(clustered_abi::release_fence_gpu!(), options(nostack));
    }
    #[cfg(not(target_arch = "nvptx64"))]
    core::sync::atomic::fence(core::sync::atomic::Ordering::Release);
}

/// `fence.acq_rel.sys`: this thread's later writes become visible at system
/// scope only after every write it made, or saw ordered before it (through
/// an acquire or a barrier), did: a fence then relaxed stores publish as
/// many release stores would, for one fence.
#[inline(always)]
pub fn fence_acq_rel_system() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a fence touches no memory.
    unsafe {
        asm!("fence.acq_rel.sys;", options(nostack));
    }
    #[cfg(not(target_arch = "nvptx64"))]
    core::sync::atomic::fence(core::sync::atomic::Ordering::AcqRel);
}
