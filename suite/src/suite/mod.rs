//! The kernel suite as data: for each kernel, its inputs at a chosen size,
//! its original launch, and its schedules, each runnable on the CPU backend
//! (by calling the kernel function) and on a GPU (by PTX entry name).
//!
//! Every buffer is a vector of 32-bit words (`f32` bits or integers), so
//! outputs of two schedules compare bit for bit.

mod workloads;

use clustered_device::abi::{ClusterLaunch, KernelContract};
use clustered_host::LaunchConfig;

pub use workloads::{all, select, Build, WORKLOADS};

/// How large to make a problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    /// Small enough for the CPU backend: the whole suite simulates in about
    /// 36 s on a 2-core machine (`cargo run --release --example locality`).
    Simulate,
    /// Tiny: for tests of every schedule on the CPU backend in CI.
    Test,
    /// The benchmark's sizes on a GPU (DESIGN.md section 7).
    Benchmark,
}

/// Why CTAs of a kernel share data (the paper's classification).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// CTAs read the same data by the algorithm (matrix products, stencils).
    Algorithm,
    /// CTAs share cache lines, not values (column passes).
    CacheLine,
    /// Each CTA reads its own data once.
    Streaming,
}

/// A kernel parameter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arg {
    /// A pointer to buffer `index` of the workload.
    Buffer(usize),
    U32(u32),
    F32(f32),
}

/// A buffer of 32-bit words.
#[derive(Clone, Debug)]
pub struct Buffer {
    pub name: &'static str,
    pub words: Vec<u32>,
    /// The kernel writes it; compared between schedules.
    pub output: bool,
}

impl Buffer {
    /// An input of `len` floats, `value(i)` each.
    pub fn floats(name: &'static str, len: usize, value: impl Fn(usize) -> f32) -> Self {
        Buffer {
            name,
            words: (0..len).map(|i| value(i).to_bits()).collect(),
            output: false,
        }
    }

    /// An output of `len` words, zeroed.
    pub fn output(name: &'static str, len: usize) -> Self {
        Buffer {
            name,
            words: vec![0; len],
            output: true,
        }
    }

    /// The words as floats.
    pub fn as_floats(words: &[u32]) -> Vec<f32> {
        words.iter().map(|&w| f32::from_bits(w)).collect()
    }
}

/// A parameter as the CPU backend passes it.
#[derive(Clone, Copy, Debug)]
pub enum ArgValue {
    Pointer(*mut u32),
    U32(u32),
    F32(f32),
}

/// Converts an [`ArgValue`] to the kernel parameter's type, so one generic
/// call site fits every kernel signature.
pub trait FromArg {
    fn from_arg(value: ArgValue) -> Self;
}

macro_rules! pointer_from_arg {
    ($($t:ty),*) => {$(
        impl FromArg for *const $t {
            fn from_arg(value: ArgValue) -> Self {
                match value {
                    ArgValue::Pointer(p) => p.cast(),
                    other => panic!("the kernel takes a pointer here, the workload gives {other:?}"),
                }
            }
        }
        impl FromArg for *mut $t {
            fn from_arg(value: ArgValue) -> Self {
                match value {
                    ArgValue::Pointer(p) => p.cast(),
                    other => panic!("the kernel takes a pointer here, the workload gives {other:?}"),
                }
            }
        }
    )*};
}

pointer_from_arg!(f32, u32, i32);

impl FromArg for u32 {
    fn from_arg(value: ArgValue) -> Self {
        match value {
            ArgValue::U32(v) => v,
            other => panic!("the kernel takes a u32 here, the workload gives {other:?}"),
        }
    }
}

impl FromArg for f32 {
    fn from_arg(value: ArgValue) -> Self {
        match value {
            ArgValue::F32(v) => v,
            other => panic!("the kernel takes an f32 here, the workload gives {other:?}"),
        }
    }
}

/// How the CPU backend calls a schedule's kernel function.
#[derive(Clone, Copy)]
pub enum CpuEntry {
    /// The baseline, a plain kernel.
    Plain(fn(&[ArgValue])),
    /// A schedule of `#[clustered]`: it takes the launch parameter last.
    Clustered(fn(&[ArgValue], ClusterLaunch), &'static KernelContract),
}

/// One schedule of a kernel.
#[derive(Clone, Copy)]
pub struct Variant {
    /// Short name for tables: "baseline", "agents", "raster G=8", ...
    pub label: &'static str,
    /// The PTX entry point.
    pub kernel: &'static str,
    pub cpu: CpuEntry,
}

/// Checks a workload's outputs (the baseline's) against a CPU reference.
pub type Check = fn(&Workload, &[Vec<u32>]) -> Result<(), String>;

/// A kernel of the suite at one size.
pub struct Workload {
    pub name: &'static str,
    pub class: Class,
    /// The problem in words, e.g. "n = 4096".
    pub problem: String,
    pub shape: LaunchConfig,
    pub buffers: Vec<Buffer>,
    pub args: Vec<Arg>,
    /// `variants[0]` is the baseline.
    pub variants: Vec<Variant>,
    /// Whether `check` is affordable at this size; when not, callers skip
    /// it and the bench compares with the nvcc twin (bitwise comparable).
    pub cpu_check: bool,
    /// Checks the baseline's outputs (in buffer order of the outputs)
    /// against the CPU reference.
    pub check: Check,
}

impl Workload {
    /// The outputs' indices in `buffers`.
    pub fn outputs(&self) -> impl Iterator<Item = usize> + '_ {
        self.buffers
            .iter()
            .enumerate()
            .filter(|(_, b)| b.output)
            .map(|(i, _)| i)
    }

    /// The original CTA grid folded to 2D for pictures: (x, y * z).
    pub fn grid_2d(&self) -> [u32; 2] {
        [self.shape.grid[0], self.shape.grid[1] * self.shape.grid[2]]
    }
}

/// Calls `$kernel` with the workload's arguments converted to its parameter
/// types, and `$extra` (the launch parameter) last.
macro_rules! call_kernel {
    ($kernel:path, $args:ident, ($($i:tt),*) $(, $extra:expr)?) => {
        // SAFETY: the workload's arguments match the kernel's parameters
        // (checked by the CPU tests of every workload).
        unsafe { $kernel($($crate::suite::FromArg::from_arg($args[$i])),* $(, $extra)?) }
    };
    (entry $entry:expr, $args:ident, ($($i:tt),*), $launch:expr) => {
        // SAFETY: as above; the launch parameter was planned for this
        // entry's contract.
        unsafe { $entry.call_on_cpu(($($crate::suite::FromArg::from_arg($args[$i]),)*), $launch) }
    };
}

/// The variants of a kernel: the baseline, then each schedule with its
/// label. Each schedule is named by its typed handle (`kernel::schedule`),
/// which carries its PTX name, contract and host function together, so no
/// variant can pair one schedule's function with another's contract.
macro_rules! variants {
    ($module:path; $baseline:ident $args:tt; $($label:literal => $name:ident),* $(,)?) => {{
        use $module as m;
        vec![
            $crate::suite::Variant {
                label: "baseline",
                kernel: m::$baseline::KERNEL.name(),
                cpu: $crate::suite::CpuEntry::Plain(|args| $crate::suite::call_kernel!(m::$baseline, args, $args)),
            },
            $($crate::suite::Variant {
                label: $label,
                kernel: m::$baseline::$name.name(),
                cpu: $crate::suite::CpuEntry::Clustered(
                    |args, launch| $crate::suite::call_kernel!(entry m::$baseline::$name, args, $args, launch),
                    {
                        // A schedule's entry always has a contract: checked
                        // at compile time.
                        const CONTRACT: &::clustered_device::abi::KernelContract =
                            match m::$baseline::$name.contract() {
                                Some(contract) => contract,
                                None => panic!("a schedule's entry has a contract"),
                            };
                        CONTRACT
                    },
                ),
            },)*
        ]
    }};
}

pub(crate) use {call_kernel, variants};
