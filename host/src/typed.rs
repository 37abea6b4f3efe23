//! Typed launches on a GPU: an [`Entry`] made by `#[kernel]` or
//! `#[clustered]`, its arguments typed from the kernel's signature
//! ([`Cuda`]: `&CudaSlice<T>` for `*const T`, `&mut CudaSlice<T>` for
//! `*mut T`, values for scalars), planned and cached per launch shape.
//!
//! ```no_run
//! # use clustered_host::*;
//! # #[allow(non_camel_case_types)] struct vector_add {}
//! # impl clustered_device::entry::KernelFn for vector_add {
//! #     const NAME: &'static str = "vector_add";
//! #     type Args<'a, B: clustered_device::entry::Backend> = (B::In<'a, f32>, B::Out<'a, f32>, u32);
//! #     type Raw = (*const f32, *mut f32, u32);
//! #     fn visit<'a, B: clustered_device::entry::Backend, V: clustered_device::entry::Visitor<'a, B>>(_: Self::Args<'a, B>, _: &mut V) {}
//! #     fn raw(_: Self::Args<'_, clustered_device::cpu::Host>, _: &mut clustered_device::cpu::Buffers) -> Self::Raw { unimplemented!() }
//! # }
//! # fn agents() -> clustered_device::entry::Entry<vector_add> { unimplemented!() }
//! # fn main() -> Result<(), Error> {
//! let gpu = Gpu::new(0)?;
//! # let ptx = "";
//! let module = gpu.load_module(ptx)?;
//! let (a, mut c) = (gpu.htod(&[1.0f32; 1000])?, gpu.zeros::<f32>(1000)?);
//! // `vector_add::vector_add_agents` in a real crate: the entry the macro emits.
//! let entry = agents();
//! // SAFETY: the kernel reads a[..n] and writes c[..n], and both hold n floats.
//! unsafe {
//!     gpu.launch_entry(&module, entry, LaunchConfig::linear(1000, 256), &ClusterOptions::default(), (&a, &mut c, 1000))?
//! };
//! # Ok(()) }
//! ```

use std::sync::Arc;

use clustered_device::entry::{Backend, Entry, KernelFn, Scalar, Visitor};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DeviceRepr};

use crate::clustered::{
    ActivePolicy, ClusterError, ClusterOptions, ClusteredKernel, ClusteredPlan, RasterGroup,
};
use crate::launch::Launch;
use crate::{Error, Gpu, Kernel, LaunchConfig, Module};

/// A GPU's memory for a typed launch: a kernel's `*const T` parameter takes
/// a `&CudaSlice<T>`, a `*mut T` parameter a `&mut CudaSlice<T>`.
pub struct Cuda;

impl Backend for Cuda {
    type In<'a, T: 'a> = &'a CudaSlice<T>;
    type Out<'a, T: 'a> = &'a mut CudaSlice<T>;
}

/// A scalar argument, passed by value.
#[repr(transparent)]
#[derive(Clone, Copy)]
struct ScalarArg<T>(T);

// SAFETY: `Scalar` promises the same layout on both sides and no pointers.
unsafe impl<T: Scalar> DeviceRepr for ScalarArg<T> {}

impl<'a, 'b: 'a, T: Scalar> crate::launch::sealed::Raw<'a> for &'b ScalarArg<T> {
    fn raw(self) -> crate::block_cluster::RawArg<'a> {
        crate::block_cluster::RawArg::value(self)
    }
}

/// Pushes a typed launch's arguments, in order, with their sizes.
struct Pusher<'l, 'p> {
    launch: &'l mut Launch<'p>,
}

impl<'p, 'a: 'p> Visitor<'a, Cuda> for Pusher<'_, 'p> {
    fn input<T: 'a>(&mut self, _name: &'static str, buffer: &'a CudaSlice<T>) {
        self.launch.push(buffer, 8);
    }

    fn output<T: 'a>(&mut self, _name: &'static str, buffer: &'a mut CudaSlice<T>) {
        self.launch.push(buffer, 8);
    }

    fn scalar<T: Scalar>(&mut self, _name: &'static str, value: T) {
        let boxed = Box::new(ScalarArg(value));
        // SAFETY: the box's memory does not move when the box does, and the
        // launch keeps the box (in `scalars`) until it has launched.
        let value: &'p ScalarArg<T> = unsafe { &*(&*boxed as *const ScalarArg<T>) };
        self.launch.scalars.push(boxed);
        self.launch.push(value, std::mem::size_of::<T>() as u32);
    }
}

/// What a module remembers between typed launches: its kernels (with their
/// contracts checked against the host's) and its plans per launch shape.
#[derive(Debug, Default)]
pub(crate) struct Cache {
    kernels: Vec<(&'static str, Kernel)>,
    clustered: Vec<(&'static str, ClusteredKernel)>,
    plans: Vec<(PlanKey, Arc<ClusteredPlan>)>,
}

/// Plans kept per module: enough for the shapes of a factorisation's
/// sweep; the oldest goes first.
const PLANS_KEPT: usize = 256;

/// Everything a plan depends on.
#[derive(Clone, Debug, PartialEq)]
struct PlanKey {
    entry: &'static str,
    original: LaunchConfig,
    active: ActivePolicy,
    stream: Option<usize>,
    agents_per_sm: Option<u32>,
    total_agents: Option<u32>,
    clusters: Option<u32>,
    block_cluster: Option<u32>,
    raster_group: Option<RasterGroup>,
}

impl PlanKey {
    fn new(entry: &'static str, original: LaunchConfig, options: &ClusterOptions) -> Self {
        PlanKey {
            entry,
            original,
            active: options.active,
            stream: options.stream.as_ref().map(|s| Arc::as_ptr(s) as usize),
            agents_per_sm: options.agents_per_sm,
            total_agents: options.total_agents,
            clusters: options.clusters,
            block_cluster: options.block_cluster,
            raster_group: options.raster_group,
        }
    }
}

impl Module {
    fn locked(&self) -> std::sync::MutexGuard<'_, Cache> {
        // A panic while holding the lock left only a cache behind: keep it.
        self.cache
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The kernel of a baseline entry, looked up once.
    fn cached_kernel(&self, name: &'static str) -> Result<Kernel, Error> {
        if let Some((_, kernel)) = self.locked().kernels.iter().find(|(n, _)| *n == name) {
            return Ok(kernel.clone());
        }
        let kernel = self.kernel(name)?;
        self.locked().kernels.push((name, kernel.clone()));
        Ok(kernel)
    }

    /// The plan of a clustered entry for one launch shape, made once.
    fn cached_plan<K: KernelFn>(
        &self,
        gpu: &Gpu,
        entry: Entry<K>,
        original: LaunchConfig,
        options: &ClusterOptions,
    ) -> Result<Arc<ClusteredPlan>, Error> {
        let key = PlanKey::new(entry.name(), original, options);
        if let Some((_, plan)) = self.locked().plans.iter().find(|(k, _)| *k == key) {
            return Ok(plan.clone());
        }
        let name = entry.name();
        let cached = self
            .locked()
            .clustered
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, k)| k.clone());
        let kernel = match cached {
            Some(kernel) => kernel,
            None => {
                let kernel = self.clustered_kernel(name)?;
                // The PTX must be the build of the host's kernels: a stale
                // module would plan with another schedule's contract.
                if Some(kernel.contract()) != entry.contract() {
                    return Err(ClusterError::ContractMismatch {
                        kernel: name.to_string(),
                        found: *kernel.contract(),
                    }
                    .into());
                }
                self.locked().clustered.push((name, kernel.clone()));
                kernel
            }
        };
        crate::clustered::check_indexing(&entry, original.grid, false)?;
        let plan = Arc::new(gpu.plan_clustered(&kernel, original, options.clone())?);
        let mut cache = self.locked();
        if cache.plans.len() >= PLANS_KEPT {
            cache.plans.remove(0);
        }
        cache.plans.push((key, plan.clone()));
        Ok(plan)
    }
}

impl Gpu {
    /// Launches `entry` of a kernel in `module` (loaded from the PTX of the
    /// crate whose host build made `entry`) for the ORIGINAL launch
    /// `original`, with `args` typed from the kernel's signature.
    ///
    /// A baseline entry (`my_kernel::KERNEL`) runs as `original`; a schedule
    /// (`my_kernel::my_schedule`) is planned from its own contract (checked
    /// against the module's), `options` and the kernel's occupancy. Plans are
    /// cached per module and launch shape, so launching over many grid
    /// shapes needs no cache of the caller's own. Before launching, the
    /// arguments are compared with the entry's `.param` list in the PTX.
    ///
    /// # Safety
    /// The caller promises what the kernel assumes of its arguments, which
    /// no type carries: that every access the kernel makes through its
    /// pointer parameters stays inside the buffers given, for the scalars
    /// given (typically, that each buffer holds at least the `n` elements
    /// the kernel indexes up to). Count, order and types of the arguments,
    /// and the pairing of kernel, contract and scratch memory, are checked.
    pub unsafe fn launch_entry<K: KernelFn>(
        &self,
        module: &Module,
        entry: Entry<K>,
        original: LaunchConfig,
        options: &ClusterOptions,
        args: K::Args<'_, Cuda>,
    ) -> Result<(), Error> {
        match entry.contract() {
            None => {
                let kernel = module.cached_kernel(entry.name())?;
                let mut launch = self.launch(&kernel, original);
                if let Some(stream) = &options.stream {
                    launch = launch.on(stream);
                }
                K::visit(
                    args,
                    &mut Pusher {
                        launch: &mut launch,
                    },
                );
                // SAFETY: the arguments match the signature (typed, and
                // checked against the PTX); the rest is the caller's promise.
                unsafe { launch.run() }
            }
            Some(_) => {
                let plan = module.cached_plan(self, entry, original, options)?;
                let mut launch = self.launch_plan(&plan);
                K::visit(
                    args,
                    &mut Pusher {
                        launch: &mut launch,
                    },
                );
                // SAFETY: as above; the plan was made for this entry's
                // contract and its scratch lives in the cached plan.
                unsafe { launch.run() }
            }
        }
    }
}

/// A typed launch's arguments recorded once, so that several entries of the
/// kernel can launch with them (the tuned launch, `autotune.rs`): each
/// buffer's device address and size, and each scalar's value.
pub(crate) struct Recorded {
    pub(crate) params: Vec<Param>,
}

/// One recorded argument.
pub(crate) enum Param {
    /// A buffer: its address, its size in bytes, and whether the kernel
    /// writes it (`*mut T`).
    Buffer {
        address: u64,
        bytes: usize,
        output: bool,
    },
    /// A value.
    Scalar(Box<dyn PushScalar>),
}

/// A scalar that can push itself onto a launch (type-erased [`ScalarArg`]).
pub(crate) trait PushScalar {
    fn push_onto<'p>(&'p self, launch: &mut Launch<'p>);
    /// Its value widened to `u64` if it is an unsigned or signed integer
    /// (the tuned launch buckets integers that size the work).
    fn as_integer(&self) -> Option<u64>;
}

impl<T: Scalar> PushScalar for ScalarArg<T> {
    fn push_onto<'p>(&'p self, launch: &mut Launch<'p>) {
        launch.push(self, std::mem::size_of::<T>() as u32);
    }

    fn as_integer(&self) -> Option<u64> {
        let value: &dyn std::any::Any = &self.0;
        macro_rules! widen {
            ($($t:ty),*) => {$(
                if let Some(v) = value.downcast_ref::<$t>() {
                    return Some(*v as u64);
                }
            )*};
        }
        widen!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize);
        None
    }
}

/// Records a typed launch's arguments (see [`Recorded`]).
struct Recorder<'s> {
    stream: &'s cudarc::driver::CudaStream,
    params: Vec<Param>,
}

impl<'a> Visitor<'a, Cuda> for Recorder<'_> {
    fn input<T: 'a>(&mut self, _name: &'static str, buffer: &'a CudaSlice<T>) {
        let (address, _sync) = buffer.device_ptr(self.stream);
        self.params.push(Param::Buffer {
            address,
            bytes: buffer.num_bytes(),
            output: false,
        });
    }

    fn output<T: 'a>(&mut self, _name: &'static str, buffer: &'a mut CudaSlice<T>) {
        let (address, _sync) = buffer.device_ptr(self.stream);
        self.params.push(Param::Buffer {
            address,
            bytes: buffer.num_bytes(),
            output: true,
        });
    }

    fn scalar<T: Scalar>(&mut self, _name: &'static str, value: T) {
        self.params.push(Param::Scalar(Box::new(ScalarArg(value))));
    }
}

impl Recorded {
    /// Records `args` for launches on `stream` (which waits for the
    /// buffers' uses on other streams). The addresses stay valid while the
    /// caller's borrows of the buffers (which the tuned launch holds) last.
    pub(crate) fn new<K: KernelFn>(stream: &Arc<CudaStream>, args: K::Args<'_, Cuda>) -> Self {
        let mut recorder = Recorder {
            stream,
            params: Vec::new(),
        };
        K::visit(args, &mut recorder);
        Recorded {
            params: recorder.params,
        }
    }
}

impl Gpu {
    /// Launches `entry` with recorded arguments, each output buffer's address
    /// replaced by `outputs[i]` (the i-th output's) where given: the tuned
    /// launch's candidates write into scratch copies.
    ///
    /// # Safety
    /// As [`Gpu::launch_entry`], for the recorded arguments; every address
    /// in `outputs` holds as many bytes as the output it replaces.
    pub(crate) unsafe fn launch_recorded<K: KernelFn>(
        &self,
        module: &Module,
        entry: Entry<K>,
        original: LaunchConfig,
        options: &ClusterOptions,
        recorded: &Recorded,
        outputs: Option<&[u64]>,
    ) -> Result<(), Error> {
        let kernel;
        let plan;
        let mut launch = match entry.contract() {
            None => {
                kernel = if entry.is_foreign() {
                    module.kernel(entry.name())?
                } else {
                    module.cached_kernel(entry.name())?
                };
                let launch = self.launch(&kernel, original);
                match &options.stream {
                    Some(stream) => launch.on(stream),
                    None => launch,
                }
            }
            Some(_) => {
                plan = module.cached_plan(self, entry, original, options)?;
                self.launch_plan(&plan)
            }
        };
        let mut output = 0;
        let addresses: Vec<u64> = recorded
            .params
            .iter()
            .filter_map(|param| match param {
                Param::Buffer {
                    address, output: o, ..
                } => {
                    let replaced = match (o, outputs) {
                        (true, Some(outputs)) => {
                            output += 1;
                            outputs.get(output - 1).copied().unwrap_or(*address)
                        }
                        _ => *address,
                    };
                    Some(replaced)
                }
                Param::Scalar(_) => None,
            })
            .collect();
        let mut next_address = addresses.iter();
        for param in &recorded.params {
            match param {
                Param::Buffer { .. } => {
                    // A buffer is passed as its address: 8 bytes.
                    if let Some(address) = next_address.next() {
                        launch.push(address, 8);
                    }
                }
                Param::Scalar(scalar) => scalar.push_onto(&mut launch),
            }
        }
        // SAFETY: the recorded arguments match the signature (typed when
        // recorded, checked against the PTX by `run`); the rest is the
        // caller's promise.
        unsafe { launch.run() }
    }
}
