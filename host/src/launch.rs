//! Launch configurations, their validation, and typed launches.

use cudarc::driver::{
    CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr, LaunchArgs, PushKernelArg,
};

use crate::{
    Axis, ClusteredPlan, DeviceProperties, Error, Gpu, Kernel, KernelAttributes, LaunchError,
    ThreadLimit,
};

/// Grid, block and dynamic shared memory of one launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Grid size in blocks, `[x, y, z]`.
    pub grid: [u32; 3],
    /// Block size in threads, `[x, y, z]`.
    pub block: [u32; 3],
    /// Dynamic shared memory per block, in bytes.
    pub dynamic_shared_bytes: u32,
    /// Blocks per thread block cluster, `[x, y, z]` (Hopper, compute
    /// capability 9.0): the blocks of a cluster run at the same time on one
    /// GPC and may read each other's shared memory
    /// ([`clustered_device::cluster`]). `[1, 1, 1]`: no clusters.
    pub block_cluster: [u32; 3],
}

impl LaunchConfig {
    /// A launch of `grid` blocks of `block` threads, no dynamic shared memory.
    pub fn new(grid: [u32; 3], block: [u32; 3]) -> Self {
        LaunchConfig {
            grid,
            block,
            dynamic_shared_bytes: 0,
            block_cluster: [1, 1, 1],
        }
    }

    /// A 1D launch covering `total_threads` threads with blocks of
    /// `block_threads`: the grid is `ceil(total_threads / block_threads)`, so
    /// the kernel must bounds-check its index.
    ///
    /// Never panics: a zero block gives a zero grid (refused as
    /// [`LaunchError::EmptyBlock`]), and a grid beyond `u32` saturates
    /// (refused as [`LaunchError::GridTooLarge`]).
    pub fn linear(total_threads: u64, block_threads: u32) -> Self {
        let blocks = if block_threads == 0 {
            0
        } else {
            total_threads.div_ceil(u64::from(block_threads))
        };
        LaunchConfig::new(
            [u32::try_from(blocks).unwrap_or(u32::MAX), 1, 1],
            [block_threads, 1, 1],
        )
    }

    /// A 2D launch covering `width x height` threads with blocks of
    /// `block[0] x block[1]`: the grid rounds up, so the kernel must
    /// bounds-check both indices. A zero block side gives a zero grid side
    /// (refused when launched).
    pub fn planar(width: u32, height: u32, block: [u32; 2]) -> Self {
        let side = |n: u32, b: u32| if b == 0 { 0 } else { n.div_ceil(b) };
        LaunchConfig::new(
            [side(width, block[0]), side(height, block[1]), 1],
            [block[0], block[1], 1],
        )
    }

    /// The same launch with `bytes` of dynamic shared memory per block.
    pub fn with_dynamic_shared(mut self, bytes: u32) -> Self {
        self.dynamic_shared_bytes = bytes;
        self
    }

    /// The same launch in thread block clusters of `cluster` blocks
    /// (`[x, y, z]`, each dividing the grid's; at most
    /// [`PORTABLE_CLUSTER_BLOCKS`] in all). Launched with
    /// `cuLaunchKernelEx`; refused before Hopper.
    pub fn with_block_cluster(mut self, cluster: [u32; 3]) -> Self {
        self.block_cluster = cluster;
        self
    }

    /// Whether this launch asks for thread block clusters (any dimension
    /// other than 1).
    pub fn has_block_clusters(&self) -> bool {
        self.block_cluster != [1, 1, 1]
    }

    /// Threads per block (x * y * z, saturating at `u64::MAX`).
    pub fn block_threads(&self) -> u64 {
        self.block
            .iter()
            .fold(1u64, |acc, &d| acc.saturating_mul(u64::from(d)))
    }

    /// Blocks in the grid (x * y * z, saturating at `u64::MAX`).
    pub fn grid_blocks(&self) -> u64 {
        self.grid
            .iter()
            .fold(1u64, |acc, &d| acc.saturating_mul(u64::from(d)))
    }

    /// Threads in the whole launch.
    pub fn total_threads(&self) -> u128 {
        u128::from(self.block_threads()) * u128::from(self.grid_blocks())
    }

    /// The cudarc form of this configuration.
    pub fn to_cudarc(&self) -> cudarc::driver::LaunchConfig {
        cudarc::driver::LaunchConfig {
            grid_dim: (self.grid[0], self.grid[1], self.grid[2]),
            block_dim: (self.block[0], self.block[1], self.block[2]),
            shared_mem_bytes: self.dynamic_shared_bytes,
        }
    }
}

/// Each dimension of `grid` within `max_grid_dim` (the device's; the CPU
/// backend holds its launches to the GPU's too).
pub(crate) fn check_grid(grid: [u32; 3], max_grid_dim: [u32; 3]) -> Result<(), LaunchError> {
    for axis in Axis::ALL {
        let (dim, limit) = (grid[axis.index()], max_grid_dim[axis.index()]);
        if dim > limit {
            return Err(LaunchError::GridTooLarge { axis, dim, limit });
        }
    }
    Ok(())
}

/// Checks a launch against the device's and the kernel's limits, without
/// the driver. [`Launch::run`] calls it first, so a bad launch is a typed
/// error rather than `CUDA_ERROR_INVALID_VALUE` (or worse) from the driver.
///
/// Checks, in order: no zero grid or block dimension; block threads within
/// the smaller of the device's and the kernel's maximum; each block dimension
/// within `max_block_dim`; each grid dimension within `max_grid_dim`; static
/// plus dynamic shared memory within the opt-in maximum per block; and for
/// a launch in thread block clusters, a device of compute capability 9.0 or
/// later, a grid of whole clusters and at most [`PORTABLE_CLUSTER_BLOCKS`]
/// blocks per cluster. (Whether a cluster fits on one GPC needs the driver:
/// [`Launch::run`] asks it.)
pub fn validate_launch(
    config: &LaunchConfig,
    device: &DeviceProperties,
    kernel: &KernelAttributes,
) -> Result<(), LaunchError> {
    if config.grid.contains(&0) {
        return Err(LaunchError::EmptyGrid { grid: config.grid });
    }
    if config.block.contains(&0) {
        return Err(LaunchError::EmptyBlock {
            block: config.block,
        });
    }
    let threads = config.block_threads();
    let (limit, limited_by) = if kernel.max_threads_per_block < device.max_threads_per_block {
        (kernel.max_threads_per_block, ThreadLimit::Kernel)
    } else {
        (device.max_threads_per_block, ThreadLimit::Device)
    };
    if threads > u64::from(limit) {
        return Err(LaunchError::BlockTooLarge {
            threads,
            limit,
            limited_by,
        });
    }
    for axis in Axis::ALL {
        let (dim, limit) = (
            config.block[axis.index()],
            device.max_block_dim[axis.index()],
        );
        if dim > limit {
            return Err(LaunchError::BlockDimTooLarge { axis, dim, limit });
        }
    }
    check_grid(config.grid, device.max_grid_dim)?;
    let shared = u64::from(config.dynamic_shared_bytes) + u64::from(kernel.static_shared_bytes);
    if shared > u64::from(device.max_shared_memory_per_block_optin) {
        return Err(LaunchError::SharedMemoryTooLarge {
            requested_dynamic: config.dynamic_shared_bytes,
            static_bytes: kernel.static_shared_bytes,
            limit: device.max_shared_memory_per_block_optin,
        });
    }
    if config.has_block_clusters() {
        validate_block_cluster(config, device)?;
    }
    Ok(())
}

/// Blocks per cluster that every cluster-capable device runs (CUDA's
/// portable cluster size); larger ones need an opt-in this crate does not
/// make.
pub const PORTABLE_CLUSTER_BLOCKS: u32 = 8;

fn validate_block_cluster(
    config: &LaunchConfig,
    device: &DeviceProperties,
) -> Result<(), LaunchError> {
    let cluster = config.block_cluster;
    if device.compute_capability.0 < 9 {
        return Err(LaunchError::ClustersUnsupported {
            cluster,
            compute_capability: device.compute_capability,
        });
    }
    let whole = cluster
        .iter()
        .zip(config.grid)
        .all(|(&c, g)| c != 0 && g.is_multiple_of(c));
    if !whole {
        return Err(LaunchError::ClusterShape {
            grid: config.grid,
            cluster,
        });
    }
    let blocks = cluster.iter().map(|&c| u64::from(c)).product::<u64>();
    if blocks > u64::from(PORTABLE_CLUSTER_BLOCKS) {
        return Err(LaunchError::ClusterTooLarge {
            blocks,
            limit: PORTABLE_CLUSTER_BLOCKS,
        });
    }
    Ok(())
}

/// Whether a launch needs the kernel's dynamic shared memory limit raised
/// (static + dynamic over the default 48 KiB per block).
pub fn needs_shared_opt_in(
    config: &LaunchConfig,
    device: &DeviceProperties,
    kernel: &KernelAttributes,
) -> bool {
    u64::from(config.dynamic_shared_bytes) + u64::from(kernel.static_shared_bytes)
        > u64::from(device.max_shared_memory_per_block)
}

pub(crate) mod sealed {
    use crate::block_cluster::RawArg;

    pub trait Sealed {}

    /// An argument as a launch in thread block clusters passes it.
    pub trait Raw<'a> {
        fn raw(self) -> RawArg<'a>;
    }
}

use crate::block_cluster::RawArg;

/// What [`Launch::arg`] takes: a reference to a scalar, or a device buffer
/// (a pointer parameter). Each knows its size, so that a launch compares the
/// arguments with the PTX entry's `.param` list before it runs.
pub trait KernelArg: sealed::Sealed {
    /// Bytes this argument occupies in the parameter list.
    const BYTES: u32;
}

macro_rules! scalar_args {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for &$t {}
        impl<'a, 'b: 'a> sealed::Raw<'a> for &'b $t {
            fn raw(self) -> RawArg<'a> {
                RawArg::value(self)
            }
        }
        impl KernelArg for &$t {
            const BYTES: u32 = std::mem::size_of::<$t>() as u32;
        }
    )*};
}

scalar_args!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize, f32, f64, bool);

macro_rules! buffer_args {
    ($(($($lt:lifetime),*) $t:ty),*) => {$(
        impl<$($lt,)* T> sealed::Sealed for $t {}
        impl<$($lt,)* T> KernelArg for $t {
            /// A device pointer.
            const BYTES: u32 = 8;
        }
    )*};
}

buffer_args!(
    ('b) &'b CudaSlice<T>,
    ('b) &'b mut CudaSlice<T>,
    ('b, 'c) &'b CudaView<'c, T>,
    ('b, 'c) &'b mut CudaViewMut<'c, T>
);

impl<'a, 'b: 'a, T> sealed::Raw<'a> for &'b CudaSlice<T> {
    fn raw(self) -> RawArg<'a> {
        RawArg::Read(self)
    }
}

impl<'a, 'b: 'a, 'c: 'a, T> sealed::Raw<'a> for &'b CudaView<'c, T> {
    fn raw(self) -> RawArg<'a> {
        RawArg::Read(self)
    }
}

impl<'a, 'b: 'a, T> sealed::Raw<'a> for &'b mut CudaSlice<T> {
    fn raw(self) -> RawArg<'a> {
        RawArg::Write(self)
    }
}

impl<'a, 'b: 'a, 'c: 'a, T> sealed::Raw<'a> for &'b mut CudaViewMut<'c, T> {
    fn raw(self) -> RawArg<'a> {
        RawArg::Write(self)
    }
}

/// Checks the argument sizes pushed for `kernel` against its PTX's.
pub(crate) fn check_arguments(kernel: &Kernel, pushed: &[u32]) -> Result<(), Error> {
    match kernel.param_bytes() {
        Some(expected) if expected != pushed => Err(Error::Arguments {
            kernel: kernel.name().to_string(),
            expected: expected.to_vec(),
            pushed: pushed.to_vec(),
        }),
        _ => Ok(()),
    }
}

/// A launch being built: a thin layer over cudarc's [`LaunchArgs`] that
/// validates before launching. Make one with [`Gpu::launch`] or
/// [`Gpu::launch_on`], push arguments with [`Launch::arg`], then
/// [`Launch::run`].
#[derive(Debug)]
pub struct Launch<'a> {
    device: &'a DeviceProperties,
    kernel: &'a Kernel,
    stream: &'a CudaStream,
    config: LaunchConfig,
    args: LaunchArgs<'a>,
    /// The byte size of each argument pushed.
    arg_bytes: Vec<u32>,
    /// Scalars of a typed launch, which `args` points into until `run`.
    pub(crate) scalars: Vec<Box<dyn std::any::Any>>,
    stream_after_args: bool,
    /// A clustered launch: its parameter goes last, its scratch is zeroed.
    cluster: Option<&'a ClusteredPlan>,
    /// The arguments of a launch in thread block clusters, which goes
    /// through `cuLaunchKernelEx` rather than cudarc (then `args` stays
    /// empty).
    raw: Option<Vec<RawArg<'a>>>,
}

impl Gpu {
    /// Starts a launch of `kernel` on [`Gpu::stream`].
    pub fn launch<'a>(&'a self, kernel: &'a Kernel, config: LaunchConfig) -> Launch<'a> {
        self.launch_on(self.stream(), kernel, config)
    }

    /// Starts a launch of `kernel` on `stream` (of this GPU's context).
    pub fn launch_on<'a>(
        &'a self,
        stream: &'a CudaStream,
        kernel: &'a Kernel,
        config: LaunchConfig,
    ) -> Launch<'a> {
        Launch {
            device: self.properties(),
            kernel,
            stream,
            config,
            args: stream.launch_builder(kernel.function()),
            arg_bytes: Vec::new(),
            scalars: Vec::new(),
            stream_after_args: false,
            cluster: None,
            raw: config.has_block_clusters().then(Vec::new),
        }
    }
}

impl<'a> Launch<'a> {
    /// Runs the launch on `stream` instead. Must come before the first
    /// [`Launch::arg`] (cudarc binds buffer synchronisation to the stream as
    /// arguments are pushed); otherwise [`Launch::run`] returns
    /// [`Error::StreamAfterArgs`].
    pub fn on(mut self, stream: &'a CudaStream) -> Self {
        if !self.arg_bytes.is_empty() {
            self.stream_after_args = true;
        } else {
            self.stream = stream;
            self.args = stream.launch_builder(self.kernel.function());
        }
        self
    }

    /// Pushes the next kernel argument: anything cudarc's [`PushKernelArg`]
    /// takes (`&T` for `T: DeviceRepr`, `&CudaSlice<T>`, `&mut CudaSlice<T>`,
    /// views).
    ///
    /// [`Launch::run`] compares the count and sizes of the pushed arguments
    /// with the kernel's `.param` list in its PTX, and refuses a mismatch
    /// with [`Error::Arguments`].
    pub fn arg<T: KernelArg + sealed::Raw<'a>>(mut self, arg: T) -> Self
    where
        LaunchArgs<'a>: PushKernelArg<T>,
    {
        self.push(arg, T::BYTES);
        self
    }

    /// Pushes an argument of `bytes` bytes.
    pub(crate) fn push<T: sealed::Raw<'a>>(&mut self, arg: T, bytes: u32)
    where
        LaunchArgs<'a>: PushKernelArg<T>,
    {
        self.add(arg);
        self.arg_bytes.push(bytes);
    }

    /// Adds an argument to whichever list this launch will pass.
    fn add<T: sealed::Raw<'a>>(&mut self, arg: T)
    where
        LaunchArgs<'a>: PushKernelArg<T>,
    {
        match &mut self.raw {
            Some(raw) => raw.push(arg.raw()),
            None => {
                self.args.arg(arg);
            }
        }
    }

    /// Makes this the launch of a clustered plan.
    pub(crate) fn with_cluster(mut self, plan: &'a ClusteredPlan) -> Self {
        self.cluster = Some(plan);
        self
    }

    /// The configuration of this launch.
    pub fn config(&self) -> &LaunchConfig {
        &self.config
    }

    /// Validates ([`validate_launch`]) and, if it passes, launches. Raises the
    /// kernel's dynamic shared memory limit first when the launch needs more
    /// than the default 48 KiB per block.
    ///
    /// # Safety
    /// As cudarc's `LaunchArgs::launch`: the arguments must match the
    /// kernel's parameters in number, order and type, and the kernel must
    /// stay within its buffers.
    pub unsafe fn run(mut self) -> Result<(), Error> {
        if self.stream_after_args {
            return Err(Error::StreamAfterArgs);
        }
        let attrs = self.kernel.attributes();
        validate_launch(&self.config, self.device, &attrs)?;
        if self.cluster.is_some() {
            self.arg_bytes
                .push(std::mem::size_of::<crate::ClusterLaunch>() as u32);
        }
        check_arguments(self.kernel, &self.arg_bytes)?;
        if self.stream.context() != self.kernel.context() {
            return Err(Error::ContextMismatch {
                what: "the stream and the kernel",
            });
        }
        if let Some(plan) = self.cluster {
            if !std::ptr::eq(self.stream, &*plan.stream) {
                return Err(Error::ContextMismatch {
                    what: "the plan's stream and the launch's stream (a plan runs on the stream it was planned for: plan with ClusterOptions::stream instead of calling .on)",
                });
            }
            if let Some(scratch) = &plan.scratch {
                let bytes = scratch.len() * std::mem::size_of::<u32>();
                let (pointer, _sync) = scratch.device_ptr(self.stream);
                // SAFETY: zeroing the plan's own scratch words, ordered on the
                // plan's stream before the kernel that uses them.
                unsafe {
                    cudarc::driver::result::memset_d8_async(
                        pointer,
                        0,
                        bytes,
                        self.stream.cu_stream(),
                    )
                }
                .map_err(Error::driver("cuMemsetD8Async(scratch)"))?;
            }
            self.add(&plan.parameter);
        }
        if needs_shared_opt_in(&self.config, self.device, &attrs) {
            self.kernel
                .allow_dynamic_shared(self.config.dynamic_shared_bytes)?;
        }
        if let Some(raw) = &mut self.raw {
            // SAFETY: forwarded to the caller.
            return unsafe {
                crate::block_cluster::launch(
                    self.kernel.function(),
                    self.stream,
                    &self.config,
                    attrs.static_shared_bytes,
                    raw,
                )
            };
        }
        // SAFETY: forwarded to the caller.
        unsafe { self.args.launch(self.config.to_cudarc()) }
            .map(|_| ())
            .map_err(Error::driver("cuLaunchKernel"))
    }
}
