//! The kernel suite as data: for each kernel, its inputs at a chosen size,
//! its original launch, and its schedules, each runnable on the CPU backend
//! (by calling the kernel function) and on a GPU (by PTX entry name).
//!
//! Every buffer is a vector of 32-bit words (`f32` bits or integers), so
//! outputs of two schedules compare bit for bit.

mod ports;
mod workloads;

use clustered_device::abi::access::Accesses;
use clustered_device::abi::{ClusterLaunch, KernelContract};
use clustered_host::autotune::{Tuned, TunedLaunches};
use clustered_host::{ClusterOptions, CudaSlice, Error, Gpu, LaunchConfig, Module, RasterGroup};

pub use workloads::{all, select, Build, WORKLOADS};

/// How large to make a problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    /// Small enough for the CPU backend: the whole suite (27 kernels)
    /// simulates in about 90 s on a 2-core machine (`cargo run --release
    /// --example locality`). Large enough that each kernel's data sits in
    /// the cache level it sits in at the benchmark's size (spmv's gathered
    /// vector outgrows L1 and fits L2).
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
    /// CTAs read the same data through indices they load (gathers: sparse
    /// matrix times vector).
    Data,
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
    /// A 5x5 filter passed by value (kernel parameters live in the
    /// constant bank: what CUDA C++ gets from `__constant__` weights).
    Filter5x5([f32; 25]),
}

/// What a buffer's words are, as the kernel's parameter types them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem {
    F32,
    U32,
}

/// A buffer of 32-bit words.
#[derive(Clone, Debug)]
pub struct Buffer {
    pub name: &'static str,
    pub words: Vec<u32>,
    /// The element type the kernel's pointer parameter has (a GPU launch
    /// uploads the words as that type).
    pub elem: Elem,
    /// The kernel writes it; compared between schedules.
    pub output: bool,
}

impl Buffer {
    /// An input of `len` floats, `value(i)` each.
    pub fn floats(name: &'static str, len: usize, value: impl Fn(usize) -> f32) -> Self {
        Buffer {
            name,
            words: (0..len).map(|i| value(i).to_bits()).collect(),
            elem: Elem::F32,
            output: false,
        }
    }

    /// An output of `len` floats, zeroed.
    pub fn output(name: &'static str, len: usize) -> Self {
        Buffer {
            name,
            words: vec![0; len],
            elem: Elem::F32,
            output: true,
        }
    }

    /// An output of `len` unsigned integers, zeroed.
    pub fn output_u32(name: &'static str, len: usize) -> Self {
        Buffer {
            elem: Elem::U32,
            ..Buffer::output(name, len)
        }
    }

    /// Uploads the words as the kernel's element type.
    pub fn upload(&self, gpu: &Gpu) -> Result<DeviceBuffer, Error> {
        Ok(match self.elem {
            Elem::F32 => DeviceBuffer::F32(gpu.htod(&Buffer::as_floats(&self.words))?),
            Elem::U32 => DeviceBuffer::U32(gpu.htod(&self.words)?),
        })
    }

    /// The words as floats.
    pub fn as_floats(words: &[u32]) -> Vec<f32> {
        words.iter().map(|&w| f32::from_bits(w)).collect()
    }
}

/// A workload's buffer on a GPU, typed as its kernel takes it.
pub enum DeviceBuffer {
    F32(CudaSlice<f32>),
    U32(CudaSlice<u32>),
}

impl DeviceBuffer {
    /// Its contents as words (`f32` bits or integers), for bitwise comparison.
    pub fn download(&self, gpu: &Gpu) -> Result<Vec<u32>, Error> {
        Ok(match self {
            DeviceBuffer::F32(slice) => gpu.dtoh(slice)?.into_iter().map(f32::to_bits).collect(),
            DeviceBuffer::U32(slice) => gpu.dtoh(slice)?,
        })
    }

    /// Overwrites it, in place, with `buffer`'s words (its initial
    /// contents).
    pub fn reset(&mut self, gpu: &Gpu, buffer: &Buffer) -> Result<(), Error> {
        let copied = match self {
            DeviceBuffer::F32(slice) => gpu
                .stream()
                .memcpy_htod(&Buffer::as_floats(&buffer.words), slice),
            DeviceBuffer::U32(slice) => gpu.stream().memcpy_htod(&buffer.words, slice),
        };
        copied.map_err(|source| Error::Driver {
            context: "cuMemcpyHtoD(output)",
            source,
        })
    }
}

/// A parameter as a GPU launch passes it: a buffer (handed out once) or a
/// value.
pub enum DeviceArg<'a> {
    Buffer(&'a mut DeviceBuffer),
    U32(u32),
    F32(f32),
    Filter5x5([f32; 25]),
}

/// The workload's arguments over its GPU buffers, each buffer handed to one
/// parameter at most (so `*mut` parameters get exclusive references).
pub fn device_args<'a>(
    buffers: &'a mut [DeviceBuffer],
    args: &[Arg],
) -> Vec<Option<DeviceArg<'a>>> {
    let mut slots: Vec<Option<&'a mut DeviceBuffer>> = buffers.iter_mut().map(Some).collect();
    args.iter()
        .map(|arg| match *arg {
            Arg::Buffer(i) => slots[i].take().map(DeviceArg::Buffer),
            Arg::U32(v) => Some(DeviceArg::U32(v)),
            Arg::F32(v) => Some(DeviceArg::F32(v)),
            Arg::Filter5x5(v) => Some(DeviceArg::Filter5x5(v)),
        })
        .collect()
}

/// Converts a [`DeviceArg`] to the typed launch's argument type for the
/// kernel's parameter (`&CudaSlice<T>`, `&mut CudaSlice<T>`, a value).
pub trait FromDeviceArg<'a>: Sized {
    fn from_device_arg(value: DeviceArg<'a>) -> Self;
}

macro_rules! device_buffer_arg {
    ($($t:ty => $variant:ident),*) => {$(
        impl<'a> FromDeviceArg<'a> for &'a CudaSlice<$t> {
            fn from_device_arg(value: DeviceArg<'a>) -> Self {
                match value {
                    DeviceArg::Buffer(DeviceBuffer::$variant(slice)) => slice,
                    _ => panic!(concat!("the kernel takes a buffer of ", stringify!($t), " here; the workload gives another argument")),
                }
            }
        }
        impl<'a> FromDeviceArg<'a> for &'a mut CudaSlice<$t> {
            fn from_device_arg(value: DeviceArg<'a>) -> Self {
                match value {
                    DeviceArg::Buffer(DeviceBuffer::$variant(slice)) => slice,
                    _ => panic!(concat!("the kernel takes a buffer of ", stringify!($t), " here; the workload gives another argument")),
                }
            }
        }
    )*};
}

device_buffer_arg!(f32 => F32, u32 => U32);

impl FromDeviceArg<'_> for u32 {
    fn from_device_arg(value: DeviceArg<'_>) -> Self {
        match value {
            DeviceArg::U32(v) => v,
            _ => panic!("the kernel takes a u32 here; the workload gives another argument"),
        }
    }
}

impl FromDeviceArg<'_> for [f32; 25] {
    fn from_device_arg(value: DeviceArg<'_>) -> Self {
        match value {
            DeviceArg::Filter5x5(v) => v,
            _ => panic!("the kernel takes a 5x5 filter here; the workload gives another argument"),
        }
    }
}

impl FromDeviceArg<'_> for f32 {
    fn from_device_arg(value: DeviceArg<'_>) -> Self {
        match value {
            DeviceArg::F32(v) => v,
            _ => panic!("the kernel takes an f32 here; the workload gives another argument"),
        }
    }
}

/// Takes argument `i` of `values` for a parameter (each once).
pub fn take_device_arg<'a, T: FromDeviceArg<'a>>(
    values: &mut [Option<DeviceArg<'a>>],
    i: usize,
) -> T {
    match values[i].take() {
        Some(value) => T::from_device_arg(value),
        None => panic!("argument {i} is a buffer that another parameter already takes"),
    }
}

/// Where a schedule launches on a GPU.
pub struct GpuTarget<'a> {
    pub gpu: &'a Gpu,
    pub module: &'a Module,
    pub original: LaunchConfig,
    pub options: &'a ClusterOptions,
}

/// Launches one schedule (typed, through its entry) with a workload's
/// arguments.
pub type GpuEntry = for<'a> fn(&GpuTarget<'_>, &'a mut [DeviceBuffer], &[Arg]) -> Result<(), Error>;

/// Launches a kernel's automatic family through `Gpu::launch_tuned`.
/// The last argument keeps a candidate of the family by entry name (the
/// baseline is always kept).
pub type TunedEntry = for<'a> fn(
    &GpuTarget<'_>,
    &TunedLaunches,
    &'a mut [DeviceBuffer],
    &[Arg],
    &dyn Fn(&str) -> bool,
) -> Result<Tuned, Error>;

/// A parameter as the CPU backend passes it.
#[derive(Clone, Copy, Debug)]
pub enum ArgValue {
    Pointer(*mut u32),
    U32(u32),
    F32(f32),
    Filter5x5([f32; 25]),
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

impl FromArg for [f32; 25] {
    fn from_arg(value: ArgValue) -> Self {
        match value {
            ArgValue::Filter5x5(v) => v,
            other => panic!("the kernel takes a 5x5 filter here, the workload gives {other:?}"),
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

/// The launch options a [`Variant`] sets; the rest are the caller's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VariantOptions {
    /// [`ClusterOptions::raster_group`].
    pub raster_group: Option<RasterGroup>,
    /// [`ClusterOptions::block_cluster`].
    pub block_cluster: Option<u32>,
    /// A plain kernel launched in thread block clusters of `[x, y, z]`
    /// blocks ([`clustered_host::LaunchConfig::with_block_cluster`]; the CPU
    /// backend runs every block as a cluster of one).
    pub plain_cluster: Option<[u32; 3]>,
}

impl VariantOptions {
    /// As compiled: no option set.
    pub const NONE: VariantOptions = VariantOptions {
        raster_group: None,
        block_cluster: None,
        plain_cluster: None,
    };

    /// A raster's band chosen at launch.
    pub const fn band(group: RasterGroup) -> VariantOptions {
        VariantOptions {
            raster_group: Some(group),
            ..Self::NONE
        }
    }

    /// Thread block clusters of `width` blocks along x.
    pub const fn block_cluster(width: u32) -> VariantOptions {
        VariantOptions {
            block_cluster: Some(width),
            ..Self::NONE
        }
    }

    /// A plain kernel in thread block clusters of `cluster` blocks.
    pub const fn plain_cluster(cluster: [u32; 3]) -> VariantOptions {
        VariantOptions {
            plain_cluster: Some(cluster),
            ..Self::NONE
        }
    }

    /// The blocks of each thread block cluster the launch asks for
    /// (`[1, 1, 1]`: none): a plain kernel's clusters, or what the host
    /// makes of a schedule's options ([`ClusterOptions::block_cluster_dims`]).
    pub fn cluster_dims(&self) -> [u32; 3] {
        self.plain_cluster
            .unwrap_or_else(|| self.over(&ClusterOptions::default()).block_cluster_dims())
    }

    /// `base` with these options set over it.
    pub fn over(self, base: &ClusterOptions) -> ClusterOptions {
        ClusterOptions {
            raster_group: self.raster_group.or(base.raster_group),
            block_cluster: self.block_cluster.or(base.block_cluster),
            ..base.clone()
        }
    }
}

/// One schedule of a kernel.
#[derive(Clone, Copy)]
pub struct Variant {
    /// Short name for tables: "baseline", "agents", "raster G=8", ...
    pub label: &'static str,
    /// The PTX entry point.
    pub kernel: &'static str,
    /// Launch options it sets over the caller's: the same schedule at
    /// another band, or in thread block clusters. The GPU launch, the
    /// simulator and the predictor all read them from here.
    pub options: VariantOptions,
    pub cpu: CpuEntry,
    /// Its typed launch on a GPU.
    pub gpu: GpuEntry,
    /// For the baseline: the typed launch of its CUDA C++ twin (entry
    /// `<kernel>_twin` of the twins' module, same parameters).
    pub twin: Option<GpuEntry>,
    /// For the baseline: the tuned launch over the kernel's automatic
    /// family (`<kernel>::AUTO`: the baseline, what `#[clustered(auto)]`
    /// proposed and the schedules written beside it).
    pub tuned: Option<TunedEntry>,
    /// For the baseline: what the access analysis read in its body.
    pub accesses: Option<&'static Accesses<'static>>,
    /// For the baseline: the entry names of its automatic family
    /// (`<kernel>::AUTO`, the baseline first).
    pub auto_family: Option<fn() -> Vec<&'static str>>,
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
    /// Whether the baseline's entry, or a function it calls, uses one of
    /// the GPU's approximate instructions (the special-function unit's
    /// `ex2.approx`, `div.approx`, `rsqrt.approx`...), which the CPU
    /// backend computes with the host's math: its outputs then agree with
    /// the GPU's within `check`'s tolerance, not bit for bit (every schedule
    /// still equals its baseline bit for bit on either). Read from the
    /// suite's PTX (`ptx`, parsed once by the caller), so no workload can
    /// say otherwise.
    pub fn approximate(&self, ptx: &clustered_predict::Module) -> bool {
        let uses = |f: &clustered_predict::ptx::Function| {
            f.blocks
                .iter()
                .flat_map(|b| &b.instructions)
                .any(|i| i.opcode.contains(".approx"))
        };
        ptx.function(self.variants[0].kernel).is_some_and(|entry| {
            uses(entry)
                || clustered_predict::analysis::callees(ptx, entry)
                    .iter()
                    .any(|(callee, _)| uses(callee))
        })
    }

    /// Whether `variants[i]` is the first with its entry: the entry as
    /// compiled, the one a tuner may choose by name. Later variants launch
    /// the same entry with options of their own (a band at launch, thread
    /// block clusters).
    pub fn as_compiled(&self, i: usize) -> bool {
        self.variants[..i]
            .iter()
            .all(|v| v.kernel != self.variants[i].kernel)
    }

    /// The outputs' indices in `buffers`.
    pub fn outputs(&self) -> impl Iterator<Item = usize> + '_ {
        self.buffers
            .iter()
            .enumerate()
            .filter(|(_, b)| b.output)
            .map(|(i, _)| i)
    }

    /// Bytes the kernel must move at least: each buffer read or written once
    /// (its memory roofline's traffic; kernels that reuse data from caches
    /// can beat it, kernels bound by compute stay far below).
    pub fn compulsory_bytes(&self) -> u64 {
        self.buffers.iter().map(|b| b.words.len() as u64 * 4).sum()
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

/// Launches `$entry` on a GPU, typed, with the workload's arguments.
macro_rules! launch_gpu {
    ($entry:expr, $target:ident, $buffers:ident, $args:ident, ($($i:tt),*)) => {{
        let mut values = $crate::suite::device_args($buffers, $args);
        let typed = ($($crate::suite::take_device_arg(&mut values, $i),)*);
        // SAFETY: the workload's buffers are sized for its scalars (the CPU
        // backend, which checks every traced access, runs the same lists).
        unsafe {
            $target.gpu.launch_entry($target.module, $entry, $target.original, $target.options, typed)
        }
    }};
}

/// `$family`'s tuned launch, typed, with the workload's arguments.
macro_rules! launch_tuned {
    ($family:expr, $target:ident, $launches:ident, $buffers:ident, $args:ident, $keep:ident, ($($i:tt),*)) => {{
        let mut values = $crate::suite::device_args($buffers, $args);
        let typed = ($($crate::suite::take_device_arg(&mut values, $i),)*);
        let family: Vec<_> = $family
            .iter()
            .enumerate()
            .filter(|(i, e)| *i == 0 || $keep(e.name()))
            .map(|(_, e)| *e)
            .collect();
        // SAFETY: as for `launch_gpu!`, for every entry of the family (each
        // computes what the baseline computes: the suite's CPU tests check
        // every schedule).
        unsafe {
            $target.gpu.launch_tuned($target.module, $launches, &family, $target.original, $target.options, typed)
        }
    }};
}

/// The `i`th entry of a kernel's automatic family (at run time: the
/// family's length depends on what the analysis proposed).
pub fn auto_entry<K: clustered_device::entry::KernelFn>(
    family: &[clustered_device::entry::Entry<K>],
    i: usize,
) -> clustered_device::entry::Entry<K> {
    family[i]
}

/// `<kernel>_auto_<tag>` as `<tag>`.
pub fn auto_label(name: &'static str) -> &'static str {
    name.split_once("_auto_").map_or(name, |(_, tag)| tag)
}

/// Appends the `$i`th entry of `$kernel::AUTO`, unless it is listed.
macro_rules! auto_variant {
    ($variants:ident, $kernel:path, $args:tt, $i:literal) => {{
        use $kernel as k;
        if let Some(entry) = k::AUTO.get($i) {
            if !$variants.iter().any(|v: &$crate::suite::Variant| v.kernel == entry.name()) {
                $variants.push($crate::suite::Variant {
                    label: $crate::suite::auto_label(entry.name()),
                    kernel: entry.name(),
                    options: $crate::suite::VariantOptions::NONE,
                    cpu: $crate::suite::CpuEntry::Clustered(
                        |args, launch| $crate::suite::call_kernel!(entry $crate::suite::auto_entry(k::AUTO, $i), args, $args, launch),
                        match entry.contract() {
                            Some(contract) => contract,
                            None => panic!("a schedule's entry has a contract"),
                        },
                    ),
                    gpu: |target, buffers, args| $crate::suite::launch_gpu!($crate::suite::auto_entry(k::AUTO, $i), target, buffers, args, $args),
                    twin: None,
                    tuned: None,
                    accesses: None,
                    auto_family: None,
                });
            }
        }
    }};
}

/// The variants of a kernel: the baseline, then each schedule with its
/// label, then the automatic family's schedules that are not listed. Each schedule is named by its typed handle (`kernel::schedule`),
/// which carries its PTX name, contract and host function together, so no
/// variant can pair one schedule's function with another's contract.
macro_rules! variants {
    ($module:path; $baseline:ident $args:tt; $($label:literal => $name:ident),* $(,)?) => {{
        use $module as m;
        #[allow(unused_mut)]
        let mut variants = vec![
            $crate::suite::Variant {
                label: "baseline",
                kernel: m::$baseline::KERNEL.name(),
                options: $crate::suite::VariantOptions::NONE,
                cpu: $crate::suite::CpuEntry::Plain(|args| $crate::suite::call_kernel!(m::$baseline, args, $args)),
                gpu: |target, buffers, args| $crate::suite::launch_gpu!(m::$baseline::KERNEL, target, buffers, args, $args),
                twin: Some(|target, buffers, args| {
                    let twin = m::$baseline::KERNEL.foreign(concat!(stringify!($baseline), "_twin"));
                    $crate::suite::launch_gpu!(twin, target, buffers, args, $args)
                }),
                tuned: Some(|target, launches, buffers, args, keep| {
                    $crate::suite::launch_tuned!(m::$baseline::AUTO, target, launches, buffers, args, keep, $args)
                }),
                accesses: Some(&m::$baseline::ACCESSES),
                auto_family: Some(|| m::$baseline::AUTO.iter().map(|e| e.name()).collect()),
            },
            $($crate::suite::schedule_variant!($label, m, $baseline, $name, $args, $crate::suite::VariantOptions::NONE),)*
        ];
        // At most `clustered_device::abi::access::MAX_PROPOSALS` (9).
        $crate::suite::auto_variant!(variants, m::$baseline, $args, 1);
        $crate::suite::auto_variant!(variants, m::$baseline, $args, 2);
        $crate::suite::auto_variant!(variants, m::$baseline, $args, 3);
        $crate::suite::auto_variant!(variants, m::$baseline, $args, 4);
        $crate::suite::auto_variant!(variants, m::$baseline, $args, 5);
        $crate::suite::auto_variant!(variants, m::$baseline, $args, 6);
        $crate::suite::auto_variant!(variants, m::$baseline, $args, 7);
        $crate::suite::auto_variant!(variants, m::$baseline, $args, 8);
        $crate::suite::auto_variant!(variants, m::$baseline, $args, 9);
        variants
    }};
}
const _: () = assert!(clustered_device::abi::access::MAX_PROPOSALS == 9);

/// The variant of schedule `$name` of `$module::$baseline`, launched with
/// `$options` (a [`VariantOptions`]) set over the caller's.
macro_rules! schedule_variant {
    ($label:expr, $module:ident, $baseline:ident, $name:ident, $args:tt, $options:expr) => {
        $crate::suite::Variant {
            label: $label,
            kernel: $module::$baseline::$name.name(),
            options: $options,
            cpu: $crate::suite::CpuEntry::Clustered(
                |args, launch| $crate::suite::call_kernel!(entry $module::$baseline::$name, args, $args, launch),
                {
                    // A schedule's entry always has a contract: checked
                    // at compile time.
                    const CONTRACT: &::clustered_device::abi::KernelContract =
                        match $module::$baseline::$name.contract() {
                            Some(contract) => contract,
                            None => panic!("a schedule's entry has a contract"),
                        };
                    CONTRACT
                },
            ),
            gpu: |target, buffers, args| {
                let options: $crate::suite::VariantOptions = $options;
                if options == $crate::suite::VariantOptions::NONE {
                    $crate::suite::launch_gpu!($module::$baseline::$name, target, buffers, args, $args)
                } else {
                    let options = options.over(target.options);
                    let target = $crate::suite::GpuTarget { options: &options, ..*target };
                    $crate::suite::launch_gpu!($module::$baseline::$name, target, buffers, args, $args)
                }
            },
            twin: None,
            tuned: None,
            accesses: None,
            auto_family: None,
        }
    };
}

/// A plain kernel with the parameters of a workload's baseline, launched in
/// thread block clusters of `$cluster` blocks (`[x, y, z]`; the CPU backend
/// runs every block as a cluster of one).
macro_rules! block_cluster_variant {
    ($label:expr, $module:ident, $kernel:ident, $cluster:expr, $args:tt) => {
        $crate::suite::Variant {
            label: $label,
            kernel: $module::$kernel::KERNEL.name(),
            options: $crate::suite::VariantOptions::plain_cluster($cluster),
            cpu: $crate::suite::CpuEntry::Plain(|args| {
                $crate::suite::call_kernel!($module::$kernel, args, $args)
            }),
            gpu: |target, buffers, args| {
                let options = $crate::suite::VariantOptions::plain_cluster($cluster);
                let target = $crate::suite::GpuTarget {
                    original: target.original.with_block_cluster(options.cluster_dims()),
                    ..*target
                };
                $crate::suite::launch_gpu!($module::$kernel::KERNEL, target, buffers, args, $args)
            },
            twin: None,
            tuned: None,
            accesses: None,
            auto_family: None,
        }
    };
}

pub(crate) use {
    auto_variant, block_cluster_variant, call_kernel, launch_gpu, launch_tuned, schedule_variant,
    variants,
};
