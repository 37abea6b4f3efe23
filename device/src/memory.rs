//! Loads from global memory with cache hints, and prefetches.
//!
//! - [`load_bypass_l1`] (`ld.global.cg`): caches in L2 only. For data read
//!   once, so it does not evict lines that other CTAs on the SM will reuse.
//! - [`load_read_only`] (`ld.global.nc`): through the non-coherent read-only
//!   path; the data must not be written during the kernel.
//! - [`prefetch_l1`], [`prefetch_l2`]: bring a line closer without waiting.
//! - [`F32x4`]: four floats that move as one 16-byte access.
//! - [`unstepped`]: a loop's offset that LLVM does not split into a
//!   pointer per address.

#[cfg(target_arch = "nvptx64")]
use core::arch::asm;

/// On the CPU backend, tells the simulator about an access of this thread.
/// The site is the kernel's call of the public function (`#[track_caller]`
/// all the way down, on the host only).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn trace<T>(_kind_on_cpu: TraceKind, _address: *const T) {
    #[cfg(not(target_arch = "nvptx64"))]
    {
        crate::cpu::check_aligned(_kind_on_cpu, _address);
        crate::cpu::access(
            _kind_on_cpu,
            _address as u64,
            core::mem::size_of::<T>() as u32,
            core::panic::Location::caller(),
        );
    }
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
        // One access where `T` is 16 bytes aligned to 16 ([`F32x4`]): LLVM
        // copies such a struct as two 8-byte halves, and a `u128` it loads
        // whole (`ld.v2.b64`). Decided at compile time: other loads are
        // exactly `*address`.
        if const { size_of::<T>() == 16 && align_of::<T>() == 16 } {
            core::mem::transmute_copy(&*(address as *const u128))
        } else {
            *address
        }
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
        if const { size_of::<T>() == 16 && align_of::<T>() == 16 && !core::mem::needs_drop::<T>() }
        {
            // One access, as in `load`; nothing to drop at `address`.
            *(address as *mut u128) = core::mem::transmute_copy(&value);
        } else {
            *address = value;
        }
    }
}

/// Four `f32` aligned to 16 bytes: `*p` of a `*const F32x4` in a kernel is
/// one 16-byte access (`ld.global.v2.b64`; a `[f32; 4]`, aligned to 4, may
/// be four). The
/// widest access a thread makes: four times the bytes in flight of a
/// float per thread, what a streaming kernel needs to reach DRAM's
/// bandwidth (CUDA's `float4`). The address must be 16-byte aligned, as a
/// GPU requires: device allocations are; on the CPU backend, back the
/// buffer with `F32x4`s (a `Vec<f32>` need not be). The CPU backend
/// reports a load or store not aligned to its type, as the GPU would
/// fault on it, with the kernel's line.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct F32x4(pub [f32; 4]);

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

/// Types that a [`Constant`](crate::constant::Constant) table holds: what
/// one `ld.const` reads whole (the scalars of [`HintedLoad`], and
/// [`F32x4`]). Plain data: no padding, any bits valid.
pub trait ConstantElement: Copy + sealed::Sealed {
    /// `ld.const` at an address in the `.const` state space.
    #[doc(hidden)]
    #[cfg(target_arch = "nvptx64")]
    unsafe fn load_const(address: u64) -> Self;
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
        impl ConstantElement for $t {
            #[inline(always)]
            #[cfg(target_arch = "nvptx64")]
            unsafe fn load_const(address: u64) -> Self { unsafe {
                let value: $t;
                asm!(concat!("ld.const.", $ptx, " {value}, [{address}];"),
                     value = out($class) value, address = in(reg64) address,
                     options(pure, nomem, nostack, preserves_flags));
                value
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

/// A record of four floats is one constant-table element: one
/// `ld.const.v4` (CUDA's `__constant__ float4`).
impl sealed::Sealed for F32x4 {}
impl ConstantElement for F32x4 {
    #[inline(always)]
    #[cfg(target_arch = "nvptx64")]
    unsafe fn load_const(address: u64) -> Self {
        let (a, b, c, d): (f32, f32, f32, f32);
        unsafe {
            asm!("ld.const.v4.f32 {{{a}, {b}, {c}, {d}}}, [{address}];",
                 a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
                 address = in(reg64) address,
                 options(pure, nomem, nostack, preserves_flags));
        }
        F32x4([a, b, c, d])
    }
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

/// `value`, which the compiler can no longer relate to the values it was
/// computed from (an empty `mov` through a register on the GPU; the
/// identity on the CPU backend). A loop that steps an offset and reads at
/// fixed distances from `base.add(offset)` (`.add(row)`, `.sub(1)`, ...)
/// otherwise gets one induction pointer per distance from LLVM's strength
/// reduction, each a 64-bit register pair live across the loop; with the
/// offset passed through here each iteration, the distances are added to
/// one pointer where they are used, as nvcc does. An offset, not a
/// pointer: the base keeps its global address space (`ld.global`). A loop
/// counter passed through here is one LLVM cannot count, so does not
/// unroll ([`crate::unroll`]).
#[inline(always)]
pub fn unstepped<T: Unstepped>(value: T) -> T {
    value.through_a_move()
}

/// The integers [`unstepped`] takes: `u32` and `usize`.
pub trait Unstepped: Copy + unstepped::Sealed {
    #[doc(hidden)]
    fn through_a_move(self) -> Self;
}

mod unstepped {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for usize {}
}

impl Unstepped for u32 {
    #[inline(always)]
    fn through_a_move(self) -> Self {
        #[cfg(target_arch = "nvptx64")]
        {
            let moved: u32;
            // SAFETY: a register move; no memory is touched.
            unsafe {
                asm!("mov.b32 {moved}, {value};", moved = out(reg32) moved, value = in(reg32) self,
                     options(pure, nomem, nostack, preserves_flags))
            };
            moved
        }
        #[cfg(not(target_arch = "nvptx64"))]
        self
    }
}

impl Unstepped for usize {
    #[inline(always)]
    fn through_a_move(self) -> Self {
        #[cfg(target_arch = "nvptx64")]
        {
            let mut x = self as u64;
            // SAFETY: a register move; no memory is touched.
            unsafe {
                asm!("mov.b64 {x}, {x};", x = inout(reg64) x, options(pure, nomem, nostack, preserves_flags))
            };
            x as usize
        }
        #[cfg(not(target_arch = "nvptx64"))]
        self
    }
}

/// `value`, computed where this is called: a register move the compiler
/// must leave in place (an `mov` with side effects on the GPU; the identity
/// on the CPU backend). LLVM moves the instructions whose only use is under
/// a branch into that branch; where that use is a store under a bounds
/// test, a sum's whole chain goes with it, and the values it shares with
/// other sums stay live across the test. Passed through here first, the sum
/// is complete before the test (the staged 5x5 convolution's four outputs,
/// `kernels/src/conv.rs`).
#[inline(always)]
pub fn settled(value: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let mut bits = value.to_bits();
        // SAFETY: a register move; no memory is touched. Not `pure`: LLVM
        // neither moves nor removes it.
        unsafe {
            asm!("mov.b32 {bits}, {bits};", bits = inout(reg32) bits,
                 options(nomem, nostack, preserves_flags))
        };
        f32::from_bits(bits)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quad_loads_and_stores_whole() {
        let from = [F32x4([1.0, -2.5, 3.25, f32::MIN_POSITIVE]), F32x4([9.0; 4])];
        let mut to = [F32x4::default(); 2];
        for i in 0..2 {
            unsafe { store(to.as_mut_ptr().add(i), load(from.as_ptr().add(i))) };
        }
        assert_eq!(to, from);
    }

    /// A 16-byte value with a destructor is stored as `*address = value`:
    /// the old value is dropped once, the new one not at all.
    #[test]
    fn a_sixteen_byte_value_with_a_destructor_drops_as_an_assignment() {
        use std::cell::Cell;
        thread_local!(static DROPPED: Cell<u32> = const { Cell::new(0) });
        #[repr(C, align(16))]
        struct Counted(u32);
        impl Drop for Counted {
            fn drop(&mut self) {
                DROPPED.with(|d| d.set(d.get() + self.0));
            }
        }
        let mut slot = Counted(1);
        unsafe { store(&mut slot, Counted(10)) };
        assert_eq!(DROPPED.with(Cell::get), 1, "the old value dropped, once");
        assert_eq!(slot.0, 10);
        drop(slot);
        assert_eq!(DROPPED.with(Cell::get), 11);
    }
}
