//! Constant memory: small read-only tables that every thread reads, CUDA's
//! `__constant__`.
//!
//! [`constant_table!`](crate::constant_table) declares one at module scope
//! of a kernels crate; kernels read it with [`Constant::read`], the host
//! fills it before a launch (`Gpu::write_constant` on a GPU,
//! `clustered::host::cpu::write_constant` on the CPU backend). On a GPU a
//! table is a `.const` array of the module (64 KiB for all of them): a read
//! goes through the SM's constant cache, which serves a warp whose threads
//! read one address in one request and is built for exactly that (a
//! warp-uniform index: filter taps, a table of offsets, polynomial
//! coefficients); threads of a warp that read different addresses are
//! served one address after another, so a per-thread lookup belongs in
//! global memory (2.9x slower from a table on an H200: docs/BENCHMARKS.md,
//! "Constant tables"). At an index ptxas knows, a read becomes a uniform
//! register the instruction takes (`ULDC UR6, c[0x3][0xc]`, `FFMA R5, R0,
//! R0, UR6`), with no load per thread.
//!
//! Small tables fixed for every launch can also be kernel parameters (an
//! array passed by value, as `kernels::conv::conv5x5` takes its filter),
//! which also live in the constant bank (as fast as a table where the
//! indices are known: docs/BENCHMARKS.md, "Constant tables"); a table is
//! for data that outgrows the parameters, or that many kernels share
//! without passing it.

use core::marker::PhantomData;

use crate::memory::ConstantElement;

/// The symbol behind a [`Constant`] table: what
/// [`constant_table!`](crate::constant_table) generates. Not for
/// implementing by hand.
pub trait ConstantSymbol: Copy + 'static {
    /// The type of one element.
    type Element: ConstantElement;
    /// Elements in the table.
    const LEN: u32;
    /// The table's PTX symbol (its name as declared).
    const NAME: &'static str;
    /// Where the table starts in the `.const` state space.
    #[doc(hidden)]
    fn address() -> u64;
}

/// A table in constant memory, declared with
/// [`constant_table!`](crate::constant_table): `S::LEN` values of
/// `S::Element`. It is only a name: copy it freely.
pub struct Constant<S> {
    _symbol: PhantomData<S>,
}

impl<S> Clone for Constant<S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for Constant<S> {}

impl<S: ConstantSymbol> core::fmt::Debug for Constant<S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "Constant({}: [{}; {}])",
            S::NAME,
            core::any::type_name::<S::Element>(),
            S::LEN
        )
    }
}

impl<S: ConstantSymbol> Constant<S> {
    /// The handle of the table `S` (what the macro's constant holds).
    #[doc(hidden)]
    pub const fn new() -> Self {
        Constant {
            _symbol: PhantomData,
        }
    }

    /// The table's PTX symbol: its name as declared.
    pub const fn name(self) -> &'static str {
        S::NAME
    }

    /// Elements in the table.
    pub const fn len(self) -> u32 {
        S::LEN
    }

    /// Whether the table has no elements (never: the macro refuses that).
    pub const fn is_empty(self) -> bool {
        S::LEN == 0
    }

    /// Bytes in the table: what the host writes.
    pub const fn bytes(self) -> usize {
        S::LEN as usize * core::mem::size_of::<S::Element>()
    }

    /// `values` as the bytes the host copies into the table: exactly
    /// `self.len()` of them, else [`LengthMismatch`]. The one check both
    /// backends' writes make.
    #[cfg(not(target_arch = "nvptx64"))]
    pub fn bytes_of(self, values: &[S::Element]) -> Result<&[u8], LengthMismatch> {
        if values.len() != S::LEN as usize {
            return Err(LengthMismatch {
                name: S::NAME,
                expected: S::LEN,
                given: values.len(),
            });
        }
        // SAFETY: the elements are plain data (`ConstantElement` is sealed
        // to numbers and `F32x4`): no padding, every byte initialised.
        Ok(unsafe {
            std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), std::mem::size_of_val(values))
        })
    }

    /// Element `index`: `ld.const`.
    ///
    /// # Safety
    /// `index < self.len()`. On a GPU a read past the end returns whatever
    /// follows in the constant bank; the CPU backend stops the thread with a
    /// message naming the table, the index and the length (as it does if the
    /// host has not written the table on the thread that launches).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn read(self, index: u32) -> S::Element {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: `index` is inside the table (the caller's promise).
        unsafe {
            // Told, LLVM folds the steps of a loop's index into one base and
            // immediate offsets, as nvcc does from `int` indices that may not
            // overflow (`LDC R, c[0x3][R+-0x4]`), instead of an address each.
            core::hint::assert_unchecked(index < S::LEN);
            S::Element::load_const(
                S::address() + u64::from(index) * core::mem::size_of::<S::Element>() as u64,
            )
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            cpu::read::<S>(index)
        }
    }
}

#[cfg(not(target_arch = "nvptx64"))]
/// Why a table could not be written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LengthMismatch {
    /// The table.
    pub name: &'static str,
    /// Its elements.
    pub expected: u32,
    /// The values given.
    pub given: usize,
}

#[cfg(not(target_arch = "nvptx64"))]
impl std::fmt::Display for LengthMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "constant table {} holds {} elements, {} were given: write exactly {}",
            self.name, self.expected, self.given, self.expected
        )
    }
}

#[cfg(not(target_arch = "nvptx64"))]
impl std::error::Error for LengthMismatch {}

/// Declares a table in constant memory at module scope, CUDA's
/// `__constant__ T NAME[LEN]`, and a [`Constant`] of the same name to read
/// and write it:
///
/// ```
/// use clustered_device::constant_table;
///
/// constant_table!(pub TAPS: [f32; 25]);
///
/// // In a kernel (the index must be below 25):
/// // let weight = unsafe { TAPS.read(dy * 5 + dx) };
/// assert_eq!((TAPS.name(), TAPS.len(), TAPS.bytes()), ("TAPS", 25, 100));
/// ```
///
/// The element is one of the types a PTX load reads whole (`f32`, `u32`,
/// `i32`, `f64`, `u64`, `i64`), or a 16-byte record of four floats
/// ([`F32x4`](crate::memory::F32x4), CUDA's `float4`: one `ld.const.v4`,
/// which ptxas splits into two 8-byte `LDC`s). The name is the table's PTX symbol, the
/// name the host finds it by, so it is unique in the kernels crate: a
/// second table of the same name anywhere in it stops the build
/// (`clustered-builder` checks the PTX). All of a module's tables share
/// the GPU's 64 KiB of constant memory; a module over it does not load.
///
/// On the CPU backend the same names and types; the tables live in
/// [`cpu`]. (The expansion's `cfg`s are the calling crate's: a kernels
/// crate is built for the GPU and for the host, each with its half.)
#[macro_export]
#[cfg_attr(
    target_arch = "nvptx64",
    allow_internal_unstable(asm_experimental_arch)
)]
macro_rules! constant_table {
    ($(#[$attr:meta])* $vis:vis $name:ident : [$element:ty; $len:expr]) => {
        $(#[$attr])*
        #[allow(non_upper_case_globals)]
        $vis const $name: $crate::constant::Constant<$name::Symbol> = $crate::constant::Constant::new();

        #[allow(non_snake_case)]
        #[doc(hidden)]
        $vis mod $name {
            #[allow(unused_imports)]
            use super::*;

            #[cfg(target_arch = "nvptx64")]
            ::core::arch::global_asm!(
                ::core::concat!(".visible .const .align 16 .b8 ", ::core::stringify!($name), "[{bytes}];"),
                bytes = const ::core::mem::size_of::<[$element; $len]>(),
            );

            #[derive(Clone, Copy, Debug)]
            pub struct Symbol;

            impl $crate::constant::ConstantSymbol for Symbol {
                type Element = $element;
                const LEN: u32 = {
                    let len: u32 = $len;
                    ::core::assert!(len > 0, "a constant table needs at least one element");
                    len
                };
                const NAME: &'static str = ::core::stringify!($name);
                #[inline(always)]
                fn address() -> u64 {
                    #[cfg(target_arch = "nvptx64")]
                    {
                        let address: u64;
                        // SAFETY: the address of the table declared above.
                        unsafe {
                            ::core::arch::asm!(
                                ::core::concat!("mov.u64 {address}, ", ::core::stringify!($name), ";"),
                                address = out(reg64) address,
                                options(pure, nomem, nostack, preserves_flags),
                            );
                        }
                        address
                    }
                    // The CPU backend finds a table by its name.
                    #[cfg(not(target_arch = "nvptx64"))]
                    0
                }
            }
        }
    };
}

/// The CPU backend's constant memory: the tables written on this host
/// thread, which is the thread that runs its launches (a GPU module's
/// tables are the module's; here each host thread has its own, so tests
/// that run in parallel do not see each other's). A task pool on the CPU
/// backend runs its blocks on a thread of its own, which gets the tables
/// of the thread that starts the pool, as they are then ([`cpu::tables`],
/// [`cpu::install`]); on a GPU too, write the tables before a pool starts:
/// the constant cache does not see writes during a kernel.
#[cfg(not(target_arch = "nvptx64"))]
pub mod cpu {
    use std::any::TypeId;
    use std::cell::RefCell;
    use std::collections::HashMap;

    use super::{Constant, ConstantSymbol, LengthMismatch};

    thread_local! {
        /// By the table's own type: two tables of one name in different
        /// crates stay apart (the builder keeps names unique in one).
        static TABLES: RefCell<HashMap<TypeId, Vec<u8>>> = RefCell::new(HashMap::new());
    }

    /// Fills `table` for the launches this host thread makes from now on:
    /// exactly `table.len()` values.
    pub fn write<S: ConstantSymbol>(
        table: Constant<S>,
        values: &[S::Element],
    ) -> Result<(), LengthMismatch> {
        let bytes = table.bytes_of(values)?.to_vec();
        TABLES.with(|tables| tables.borrow_mut().insert(TypeId::of::<S>(), bytes));
        Ok(())
    }

    /// Every table written on this thread, for [`install`] on another.
    #[derive(Clone, Debug, Default)]
    pub struct Tables(HashMap<TypeId, Vec<u8>>);

    /// The tables written on this thread so far.
    pub fn tables() -> Tables {
        TABLES.with(|tables| Tables(tables.borrow().clone()))
    }

    /// Makes `tables` this thread's, in place of any it had: for a thread
    /// that runs launches for another (a task pool's engine).
    pub fn install(tables: Tables) {
        TABLES.with(|mine| *mine.borrow_mut() = tables.0);
    }

    /// Element `index` of `S` as written on this thread; a panic (the CPU
    /// backend's error for the thread) naming the table when the index is
    /// past its end or the table was never written here.
    #[track_caller]
    pub(super) fn read<S: ConstantSymbol>(index: u32) -> S::Element {
        assert!(
            index < S::LEN,
            "constant table {} read at index {index}, past its {} elements",
            S::NAME,
            S::LEN
        );
        let size = std::mem::size_of::<S::Element>();
        TABLES.with(|tables| {
            let tables = tables.borrow();
            let Some(bytes) = tables.get(&TypeId::of::<S>()) else {
                panic!(
                    "constant table {} read before it was written: write it on the launching thread first (clustered::host::cpu::write_constant)",
                    S::NAME
                );
            };
            let at = index as usize * size;
            // SAFETY: `write` stored exactly `S::LEN` elements of `S`'s type
            // under `S`'s key; any bits are an element (plain data).
            unsafe { bytes[at..at + size].as_ptr().cast::<S::Element>().read_unaligned() }
        })
    }
}
