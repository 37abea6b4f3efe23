//! Shared memory: per-CTA arrays, static ([`shared_array!`](crate::shared_array)) or dynamic
//! ([`dynamic_shared_memory`]).
//!
//! Why not references: threads of a CTA write shared memory concurrently, so a
//! Rust `&mut` to it would be a data race by construction. A [`Shared<T>`] is a
//! 32-bit address in the shared window, read and written by `ld.shared` /
//! `st.shared`; ordering between threads comes from
//! [`sync_threads`](crate::thread::sync_threads). The explicit state space
//! also matters for speed: rustc cannot tell LLVM that a pointer is in shared
//! memory, and a generic `ld` through one compiled to `LD` instead of `LDS`
//! (seen in `cuobjdump -sass` of the SDK SGEMM; through this module it gets
//! `LDS` and `LDS.128`, and `tests/kernel_resources.rs` fails on generic
//! `LD`/`ST` in a schedule).
//!
//! Every array is 16-byte aligned, so tiles of `f32` keep their vector loads
//! whatever else the kernel (or the scheduler) declares beside them.

#[cfg(target_arch = "nvptx64")]
use core::arch::asm;
use core::marker::PhantomData;

use crate::memory::F32x4;

mod sealed {
    pub trait Sealed {}
}

/// Element types of shared arrays: those a single `ld.shared` moves.
pub trait SharedElement: Copy + sealed::Sealed {
    #[doc(hidden)]
    unsafe fn load_shared(address: u32) -> Self;
    #[doc(hidden)]
    unsafe fn store_shared(address: u32, value: Self);
    /// `ld.shared::cluster`: a load from any block of the cluster's shared
    /// memory, at an address [`crate::cluster`] mapped there.
    #[doc(hidden)]
    #[cfg(target_arch = "nvptx64")]
    unsafe fn load_shared_cluster(address: u32) -> Self;
    /// `st.shared::cluster`: a store into any block of the cluster.
    #[doc(hidden)]
    #[cfg(target_arch = "nvptx64")]
    unsafe fn store_shared_cluster(address: u32, value: Self);
}

macro_rules! shared_element {
    ($($t:ty => $ptx:literal, $class:ident;)*) => {$(
        impl sealed::Sealed for $t {}
        impl SharedElement for $t {
            #[inline(always)]
            unsafe fn load_shared(address: u32) -> Self { unsafe {
                #[cfg(target_arch = "nvptx64")]
                {
                    let value: $t;
                    asm!(concat!("ld.shared.", $ptx, " {value}, [{address}];"),
                         value = out($class) value, address = in(reg32) address,
                         options(readonly, nostack, preserves_flags));
                    value
                }
                #[cfg(not(target_arch = "nvptx64"))]
                crate::cpu::shared_base().add(address as usize).cast::<$t>().read()
            }}
            #[inline(always)]
            #[cfg(target_arch = "nvptx64")]
            unsafe fn load_shared_cluster(address: u32) -> Self { unsafe {
                let value: $t;
                asm!(concat!("ld.shared::cluster.", $ptx, " {value}, [{address}];"),
                     value = out($class) value, address = in(reg32) address,
                     options(readonly, nostack, preserves_flags));
                value
            }}
            #[inline(always)]
            #[cfg(target_arch = "nvptx64")]
            unsafe fn store_shared_cluster(address: u32, value: Self) { unsafe {
                asm!(concat!("st.shared::cluster.", $ptx, " [{address}], {value};"),
                     value = in($class) value, address = in(reg32) address,
                     options(nostack, preserves_flags));
            }}
            #[inline(always)]
            unsafe fn store_shared(address: u32, value: Self) { unsafe {
                #[cfg(target_arch = "nvptx64")]
                asm!(concat!("st.shared.", $ptx, " [{address}], {value};"),
                     value = in($class) value, address = in(reg32) address,
                     options(nostack, preserves_flags));
                #[cfg(not(target_arch = "nvptx64"))]
                crate::cpu::shared_base().add(address as usize).cast::<$t>().write(value)
            }}
        }
    )*};
}

shared_element! {
    f32 => "f32", reg32;
    u32 => "u32", reg32;
    i32 => "s32", reg32;
    f64 => "f64", reg64;
    u64 => "u64", reg64;
    i64 => "s64", reg64;
}

// Four floats in one `ld.shared.v4.f32` (`LDS.128`): what a register-tiled
// kernel reads per fragment, and a guaranteed vector access where four
// scalar reads are ptxas's guess.
impl sealed::Sealed for F32x4 {}
impl SharedElement for F32x4 {
    #[inline(always)]
    unsafe fn load_shared(address: u32) -> Self {
        unsafe {
            #[cfg(target_arch = "nvptx64")]
            {
                let (x, y, z, w): (f32, f32, f32, f32);
                asm!("ld.shared.v4.f32 {{{x}, {y}, {z}, {w}}}, [{address}];",
                     x = out(reg32) x, y = out(reg32) y, z = out(reg32) z, w = out(reg32) w,
                     address = in(reg32) address, options(readonly, nostack, preserves_flags));
                F32x4([x, y, z, w])
            }
            #[cfg(not(target_arch = "nvptx64"))]
            crate::cpu::shared_base()
                .add(address as usize)
                .cast::<F32x4>()
                .read()
        }
    }
    #[inline(always)]
    unsafe fn store_shared(address: u32, value: Self) {
        unsafe {
            #[cfg(target_arch = "nvptx64")]
            {
                let F32x4([x, y, z, w]) = value;
                asm!("st.shared.v4.f32 [{address}], {{{x}, {y}, {z}, {w}}};",
                     x = in(reg32) x, y = in(reg32) y, z = in(reg32) z, w = in(reg32) w,
                     address = in(reg32) address, options(nostack, preserves_flags));
            }
            #[cfg(not(target_arch = "nvptx64"))]
            crate::cpu::shared_base()
                .add(address as usize)
                .cast::<F32x4>()
                .write(value)
        }
    }
    #[inline(always)]
    #[cfg(target_arch = "nvptx64")]
    unsafe fn load_shared_cluster(address: u32) -> Self {
        unsafe {
            let (x, y, z, w): (f32, f32, f32, f32);
            asm!("ld.shared::cluster.v4.f32 {{{x}, {y}, {z}, {w}}}, [{address}];",
                 x = out(reg32) x, y = out(reg32) y, z = out(reg32) z, w = out(reg32) w,
                 address = in(reg32) address, options(readonly, nostack, preserves_flags));
            F32x4([x, y, z, w])
        }
    }
    #[inline(always)]
    #[cfg(target_arch = "nvptx64")]
    unsafe fn store_shared_cluster(address: u32, value: Self) {
        unsafe {
            let F32x4([x, y, z, w]) = value;
            asm!("st.shared::cluster.v4.f32 [{address}], {{{x}, {y}, {z}, {w}}};",
                 x = in(reg32) x, y = in(reg32) y, z = in(reg32) z, w = in(reg32) w,
                 address = in(reg32) address, options(nostack, preserves_flags));
        }
    }
}

/// A typed address in this CTA's shared memory.
///
/// Copy it freely; it is only an address. Reads and writes are `unsafe`:
/// the caller keeps the index in bounds and orders accesses of different
/// threads with barriers.
#[derive(Clone, Copy, Debug)]
pub struct Shared<T> {
    address: u32,
    _element: PhantomData<T>,
}

impl<T: SharedElement> Shared<T> {
    /// # Safety
    /// `address` is a `T`-aligned address in the shared window.
    #[doc(hidden)]
    #[inline(always)]
    pub const unsafe fn from_address(address: u32) -> Self {
        Shared {
            address,
            _element: PhantomData,
        }
    }

    /// The address in the shared window (what `cvta.to.shared` gives).
    #[inline(always)]
    pub fn address(self) -> u32 {
        self.address
    }

    /// Element `index` from here: `ld.shared`.
    ///
    /// # Safety
    /// `index` is inside the array; no other thread writes the element
    /// concurrently.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn read(self, index: u32) -> T {
        unsafe {
            #[cfg(target_arch = "nvptx64")]
            return T::load_shared(self.element_address(index));
            // The CPU backend checks the bounds and, between barriers, races.
            #[cfg(not(target_arch = "nvptx64"))]
            return crate::cpu::shared_access(
                self.element_address(index),
                core::mem::size_of::<T>() as u32,
                crate::cpu::SharedAccess::Read,
                core::panic::Location::caller(),
            )
            .cast::<T>()
            .read();
        }
    }

    /// Stores `value` at element `index`: `st.shared`.
    ///
    /// # Safety
    /// `index` is inside the array; no other thread reads or writes the
    /// element concurrently.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn write(self, index: u32, value: T) {
        unsafe {
            #[cfg(target_arch = "nvptx64")]
            T::store_shared(self.element_address(index), value);
            #[cfg(not(target_arch = "nvptx64"))]
            crate::cpu::shared_access(
                self.element_address(index),
                core::mem::size_of::<T>() as u32,
                crate::cpu::SharedAccess::Write,
                core::panic::Location::caller(),
            )
            .cast::<T>()
            .write(value);
        }
    }

    /// The address `count` elements further on.
    #[inline(always)]
    pub fn offset(self, count: u32) -> Self {
        Shared {
            address: self.element_address(count),
            _element: PhantomData,
        }
    }

    /// The same address viewed as `U`s: a tile written as `f32`s read four
    /// at a time as [`F32x4`] (`LDS.128`), say. Indices then count `U`s.
    ///
    /// # Safety
    /// The address is a multiple of `U`'s size, as the GPU requires of a
    /// `U` access (the CPU backend checks it at each access).
    #[inline(always)]
    pub unsafe fn cast<U: SharedElement>(self) -> Shared<U> {
        Shared {
            address: self.address,
            _element: PhantomData,
        }
    }

    /// A generic pointer to this address, for code that needs `*mut T`.
    /// Loads through it are generic (`LD`), slower than [`Shared::read`].
    #[inline(always)]
    pub fn as_mut_ptr(self) -> *mut T {
        #[cfg(target_arch = "nvptx64")]
        {
            let generic: u64;
            // SAFETY: converting a shared-window address to a generic one.
            unsafe {
                asm!("cvta.shared.u64 {generic}, {shared};",
                     generic = out(reg64) generic, shared = in(reg64) self.address as u64,
                     options(pure, nomem, nostack, preserves_flags));
            }
            generic as *mut T
        }
        #[cfg(not(target_arch = "nvptx64"))]
        // SAFETY: the address is inside the current CTA's shared memory.
        unsafe {
            crate::cpu::shared_base().add(self.address as usize).cast()
        }
    }

    #[inline(always)]
    fn element_address(self, index: u32) -> u32 {
        self.address + index * core::mem::size_of::<T>() as u32
    }
}

impl Shared<u32> {
    /// Element `index` read with `ld.acquire.cta.shared.u32`: what the
    /// thread that stored it with [`store_release_cta`](Self::store_release_cta)
    /// wrote before that store is visible to this thread's later reads,
    /// without a barrier (a warp that polls while others run).
    ///
    /// # Safety
    /// `index` is inside the array; other threads write the element only
    /// through `store_release_cta`.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn load_acquire_cta(self, index: u32) -> u32 {
        let address = self.element_address(index);
        unsafe {
            #[cfg(target_arch = "nvptx64")]
            {
                let value: u32;
                core::arch::asm!(
                    "ld.acquire.cta.shared.u32 {value}, [{address}];",
                    value = out(reg32) value,
                    address = in(reg32) address,
                    options(nostack, preserves_flags),
                );
                value
            }
            #[cfg(not(target_arch = "nvptx64"))]
            {
                let at = crate::cpu::shared_access(
                    address,
                    4,
                    crate::cpu::SharedAccess::Acquire,
                    core::panic::Location::caller(),
                );
                core::sync::atomic::AtomicU32::from_ptr(at.cast())
                    .load(core::sync::atomic::Ordering::Acquire)
            }
        }
    }

    /// Stores `value` at element `index` with `st.release.cta.shared.u32`
    /// (`MEMBAR.ALL.CTA` and the store in ptxas's `sm_90` code, not the
    /// GPU-scope `MEMBAR.ALL.GPU`: `cuobjdump -sass` of
    /// `scripts/probes/pool-publishing-warp.cu`), for
    /// [`load_acquire_cta`](Self::load_acquire_cta).
    ///
    /// # Safety
    /// `index` is inside the array; other threads read the element only
    /// through `load_acquire_cta`.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn store_release_cta(self, index: u32, value: u32) {
        let address = self.element_address(index);
        unsafe {
            #[cfg(target_arch = "nvptx64")]
            core::arch::asm!(
                "st.release.cta.shared.u32 [{address}], {value};",
                address = in(reg32) address,
                value = in(reg32) value,
                options(nostack, preserves_flags),
            );
            #[cfg(not(target_arch = "nvptx64"))]
            {
                let at = crate::cpu::shared_access(
                    address,
                    4,
                    crate::cpu::SharedAccess::Release,
                    core::panic::Location::caller(),
                );
                core::sync::atomic::AtomicU32::from_ptr(at.cast())
                    .store(value, core::sync::atomic::Ordering::Release);
            }
        }
    }
}

/// Declares a shared-memory array of the CTA and gives its address.
///
/// ```ignore
/// let tile = shared_array!(tile_a: [f32; 32 * 32]);
/// tile.write(thread_idx_y() * 32 + thread_idx_x(), value);
/// ```
///
/// The array is declared once per kernels crate at module scope in PTX (like a
/// file-scope `__shared__` in CUDA C), and 16-byte aligned. Every CTA gets its
/// own copy; a kernel that does not use it does not allocate it. On the CPU
/// backend each simulated CTA places it in its own shared memory on first use.
///
/// Its PTX symbol is `<name>_<line>_<column>_<key>`, the key a hash of the
/// file and module it is in ([`symbol_key`]): ptxas refuses a module with two
/// `.shared` symbols of one name, and name, line and column alone repeat
/// across files. What can still repeat stops the build in
/// `clustered-builder`, which checks the PTX: one place that declares two
/// arrays of one name (a macro of the user's: all its expansions have the
/// line and column of the macro's call; copied into each schedule of a
/// `#[clustered]` kernel, they repeat too).
#[cfg(target_arch = "nvptx64")]
#[macro_export]
#[allow_internal_unstable(asm_experimental_arch)]
macro_rules! shared_array {
    ($name:ident : [$element:ty; $len:expr]) => {{
        #[allow(non_snake_case, unused_imports)]
        mod $name {
            use super::*;
            pub(super) const KEY: u64 = $crate::shared::symbol_key(
                ::core::concat!(::core::file!(), "\0", ::core::module_path!()),
                ::core::line!(),
                ::core::column!(),
            );
            ::core::arch::global_asm!(
                ::core::concat!(
                    ".shared .align 16 .b8 ", ::core::stringify!($name), "_",
                    ::core::line!(), "_", ::core::column!(), "_{key}[{bytes}];"
                ),
                key = const KEY,
                bytes = const ::core::mem::size_of::<[$element; $len]>(),
            );
        }
        let address: u32;
        // SAFETY: takes the address of the array declared just above.
        // (`unused_unsafe`: the macro may be used inside an unsafe block.)
        #[allow(unused_unsafe)]
        let shared = unsafe {
            ::core::arch::asm!(
                ::core::concat!(
                    "mov.u32 {address}, ", ::core::stringify!($name), "_",
                    ::core::line!(), "_", ::core::column!(), "_{key};"
                ),
                key = const $name::KEY,
                address = out(reg32) address,
                options(pure, nomem, nostack, preserves_flags),
            );
            $crate::shared::Shared::<$element>::from_address(address)
        };
        shared
    }};
}

/// The key in a shared array's PTX symbol: FNV-1a (64 bits) of `place` (its
/// file and module), then of `line` and `column`.
#[doc(hidden)]
pub const fn symbol_key(place: &str, line: u32, column: u32) -> u64 {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let place = place.as_bytes();
    let mut i = 0;
    while i < place.len() {
        hash = (hash ^ place[i] as u64).wrapping_mul(PRIME);
        i += 1;
    }
    let position = ((line as u64) << 32) | column as u64;
    let mut shift = 0;
    while shift < 64 {
        hash = (hash ^ ((position >> shift) & 0xff)).wrapping_mul(PRIME);
        shift += 8;
    }
    hash
}

/// The CPU backend's `shared_array!`: the same name and signature.
#[cfg(not(target_arch = "nvptx64"))]
#[macro_export]
macro_rules! shared_array {
    ($name:ident : [$element:ty; $len:expr]) => {{
        let key: &'static str = ::core::concat!(
            ::core::module_path!(),
            "::",
            ::core::stringify!($name),
            ":",
            ::core::line!(),
            ":",
            ::core::column!()
        );
        let bytes = ::core::mem::size_of::<[$element; $len]>() as u32;
        // SAFETY: the offset is inside the current CTA's shared memory.
        // (`unused_unsafe`: the macro may be used inside an unsafe block.)
        #[allow(unused_unsafe)]
        let shared = unsafe {
            $crate::shared::Shared::<$element>::from_address($crate::shared::place_static(
                key, bytes,
            ))
        };
        shared
    }};
}

#[cfg(not(target_arch = "nvptx64"))]
#[doc(hidden)]
pub fn place_static(key: &'static str, bytes: u32) -> u32 {
    crate::cpu::static_shared(key, bytes)
}

#[cfg(target_arch = "nvptx64")]
core::arch::global_asm!(".extern .shared .align 16 .b8 __clustered_dynamic_shared[];");

/// The dynamic shared memory of this launch (the size given at launch time),
/// 16-byte aligned, viewed as `T`s.
#[inline(always)]
pub fn dynamic_shared_memory<T: SharedElement>() -> Shared<T> {
    #[cfg(target_arch = "nvptx64")]
    {
        let address: u32;
        // SAFETY: takes the address of the module's dynamic shared array.
        unsafe {
            asm!("mov.u32 {address}, __clustered_dynamic_shared;", address = out(reg32) address,
                 options(pure, nomem, nostack, preserves_flags));
            Shared::from_address(address)
        }
    }
    // The CPU backend puts the dynamic part first, at offset 0.
    #[cfg(not(target_arch = "nvptx64"))]
    // SAFETY: offset 0 of the current CTA's shared memory.
    unsafe {
        Shared::from_address(0)
    }
}

#[cfg(test)]
mod tests {
    use super::symbol_key;

    #[test]
    fn symbol_keys_tell_functions_and_places_apart() {
        // FNV-1a of "" then the place (0, 0): 8 zero bytes.
        let mut empty: u64 = 0xcbf2_9ce4_8422_2325;
        for _ in 0..8 {
            empty = empty.wrapping_mul(0x0000_0100_0000_01b3);
        }
        assert_eq!(symbol_key("", 0, 0), empty);
        let key = symbol_key("src/a.rs\0kernels::a", 23, 9);
        // One name at one line and column of two files.
        assert_ne!(key, symbol_key("src/b.rs\0kernels::b", 23, 9));
        assert_ne!(key, symbol_key("src/a.rs\0kernels::a", 9, 23));
        assert_ne!(key, symbol_key("src/a.rs\0kernels::a", 23, 10));
        // A constant: the PTX is reproducible.
        assert_eq!(key, symbol_key("src/a.rs\0kernels::a", 23, 9));
    }
}
