//! Launches in Hopper thread block clusters: `cuLaunchKernelEx` with the
//! cluster dimension attribute, which cudarc exposes only in `sys`.
//!
//! cudarc's [`LaunchArgs`](cudarc::driver::LaunchArgs) keeps its argument
//! pointers private, so a launch in clusters collects its own: each
//! argument as a [`RawArg`], a pointer to a value or a buffer whose device
//! address is read just before the launch. Reading it through cudarc's
//! `DevicePtr` / `DevicePtrMut` keeps cudarc's ordering between streams
//! (the launch waits for the buffer's last writer, and its guard records
//! the launch as the buffer's last reader or writer when dropped).

use std::ffi::c_void;
use std::marker::PhantomData;

use cudarc::driver::sys::{
    self, CUlaunchAttribute, CUlaunchAttributeID, CUlaunchAttributeValue, CUlaunchConfig,
};
use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr, DevicePtrMut,
    DriverError, SyncOnDrop,
};

use crate::{Error, LaunchConfig, LaunchError};

/// One kernel argument of a launch in clusters.
pub enum RawArg<'a> {
    /// A pointer to the argument's value (a scalar, a plan's parameter),
    /// valid for `'a`.
    Value(*mut c_void, PhantomData<&'a ()>),
    /// A buffer the kernel reads.
    Read(&'a dyn ReadBuffer),
    /// A buffer the kernel may write.
    Write(&'a mut dyn WriteBuffer),
}

impl<'a> RawArg<'a> {
    /// The argument whose value is `*value`.
    pub(crate) fn value<T>(value: &'a T) -> Self {
        RawArg::Value(value as *const T as *mut c_void, PhantomData)
    }
}

impl std::fmt::Debug for RawArg<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RawArg::Value(..) => "Value",
            RawArg::Read(_) => "Read",
            RawArg::Write(_) => "Write",
        })
    }
}

/// A device buffer read by a kernel: its address, ordered on a stream.
pub trait ReadBuffer {
    /// The address; the stream waits for the buffer's last writer first.
    fn address<'s>(&'s self, stream: &'s CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'s>);
}

/// A device buffer written by a kernel.
pub trait WriteBuffer {
    /// The address; the stream waits for the buffer's last use first.
    fn address_mut<'s>(&'s mut self, stream: &'s CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'s>);
}

impl<T> ReadBuffer for CudaSlice<T> {
    fn address<'s>(&'s self, stream: &'s CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'s>) {
        self.device_ptr(stream)
    }
}

impl<T> ReadBuffer for CudaView<'_, T> {
    fn address<'s>(&'s self, stream: &'s CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'s>) {
        self.device_ptr(stream)
    }
}

impl<T> WriteBuffer for CudaSlice<T> {
    fn address_mut<'s>(&'s mut self, stream: &'s CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'s>) {
        self.device_ptr_mut(stream)
    }
}

impl<T> WriteBuffer for CudaViewMut<'_, T> {
    fn address_mut<'s>(&'s mut self, stream: &'s CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'s>) {
        self.device_ptr_mut(stream)
    }
}

/// The driver's launch configuration of `config` on `stream`, pointing at
/// `attribute` (which must outlive its use).
fn driver_config(
    config: &LaunchConfig,
    stream: &CudaStream,
    attribute: &mut CUlaunchAttribute,
) -> CUlaunchConfig {
    CUlaunchConfig {
        gridDimX: config.grid[0],
        gridDimY: config.grid[1],
        gridDimZ: config.grid[2],
        blockDimX: config.block[0],
        blockDimY: config.block[1],
        blockDimZ: config.block[2],
        sharedMemBytes: config.dynamic_shared_bytes,
        hStream: stream.cu_stream(),
        attrs: attribute,
        numAttrs: 1,
    }
}

/// The cluster dimension attribute of `config`.
fn cluster_attribute(config: &LaunchConfig) -> CUlaunchAttribute {
    // SAFETY: the value is a union of plain data; all zeros is a value.
    let mut value: CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
    value.clusterDim.x = config.block_cluster[0];
    value.clusterDim.y = config.block_cluster[1];
    value.clusterDim.z = config.block_cluster[2];
    CUlaunchAttribute {
        id: CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
        pad: [0; 4],
        value,
    }
}

impl crate::Gpu {
    /// How many thread block clusters of `config` (its
    /// [`LaunchConfig::block_cluster`]) of `kernel` the device holds at
    /// once (`cuOccupancyMaxActiveClusters`); 0 when one does not fit on a
    /// GPC. A launch checks this itself; ask it to choose a cluster shape.
    pub fn max_active_clusters(
        &self,
        kernel: &crate::Kernel,
        config: &LaunchConfig,
    ) -> Result<u32, Error> {
        crate::validate_launch(config, self.properties(), &kernel.attributes())?;
        max_active_clusters(kernel.function(), self.stream(), config)
    }
}

/// How many clusters of `config` the device holds at once
/// (`cuOccupancyMaxActiveClusters`): 0 when one does not fit on a GPC.
pub(crate) fn max_active_clusters(
    function: &CudaFunction,
    stream: &CudaStream,
    config: &LaunchConfig,
) -> Result<u32, Error> {
    let mut attribute = cluster_attribute(config);
    let driver = driver_config(config, stream, &mut attribute);
    let mut clusters = 0i32;
    stream
        .context()
        .bind_to_thread()
        .map_err(Error::driver("cuCtxSetCurrent"))?;
    // SAFETY: plain out-parameter query on a live function; `driver` and
    // the attribute it points to live across the call.
    unsafe { sys::cuOccupancyMaxActiveClusters(&mut clusters, function.cu_function(), &driver) }
        .result()
        .map_err(Error::driver("cuOccupancyMaxActiveClusters"))?;
    Ok(u32::try_from(clusters).unwrap_or(0))
}

/// Launches `function` with `args` in the thread block clusters of
/// `config`, after asking the driver that one cluster fits.
///
/// # Safety
/// As [`Launch::run`](crate::Launch::run): the arguments match the
/// kernel's parameters, and the kernel stays within its buffers.
pub(crate) unsafe fn launch(
    function: &CudaFunction,
    stream: &CudaStream,
    config: &LaunchConfig,
    static_shared_bytes: u32,
    args: &mut [RawArg<'_>],
) -> Result<(), Error> {
    if max_active_clusters(function, stream, config)? == 0 {
        return Err(LaunchError::ClusterDoesNotFit {
            cluster: config.block_cluster,
            block_threads: config.block_threads(),
            shared_bytes: u64::from(config.dynamic_shared_bytes) + u64::from(static_shared_bytes),
        }
        .into());
    }
    // Values point at themselves; buffers at their address, read first for
    // all of them so that the pointers into `addresses` never move. The
    // guards live until after the launch.
    let mut values: Vec<Option<*mut c_void>> = Vec::with_capacity(args.len());
    let mut addresses: Vec<sys::CUdeviceptr> = Vec::with_capacity(args.len());
    let mut guards: Vec<SyncOnDrop<'_>> = Vec::with_capacity(args.len());
    for arg in args.iter_mut() {
        let (address, guard) = match arg {
            RawArg::Value(pointer, _) => {
                values.push(Some(*pointer));
                continue;
            }
            RawArg::Read(buffer) => buffer.address(stream),
            RawArg::Write(buffer) => buffer.address_mut(stream),
        };
        values.push(None);
        addresses.push(address);
        guards.push(guard);
    }
    let mut next_address = addresses.iter_mut();
    let mut params: Vec<*mut c_void> = values
        .into_iter()
        .map(|value| {
            value.unwrap_or_else(|| {
                next_address.next().map_or(std::ptr::null_mut(), |a| {
                    (a as *mut sys::CUdeviceptr).cast()
                })
            })
        })
        .collect();
    let mut attribute = cluster_attribute(config);
    let driver = driver_config(config, stream, &mut attribute);
    // SAFETY: every parameter pointer points at a value that lives across
    // the call (the caller's scalars, `addresses`); the rest is the
    // caller's promise.
    let result: Result<(), DriverError> = unsafe {
        sys::cuLaunchKernelEx(
            &driver,
            function.cu_function(),
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    }
    .result();
    drop(guards);
    result.map_err(Error::driver("cuLaunchKernelEx"))
}
