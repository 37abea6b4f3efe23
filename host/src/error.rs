//! Errors of the host crate.
//!
//! Every message names the problem and, where there is one, the fix. Launch
//! configurations are checked on the host before the driver sees them
//! ([`LaunchError`]), so a bad launch is a typed error, never a driver abort or
//! a silently wrong result.

use std::fmt;

use cudarc::driver::DriverError;

/// Any error of this crate.
#[non_exhaustive]
#[derive(Debug)]
pub enum Error {
    /// The NVIDIA driver library (`libcuda.so` / `nvcuda.dll`) could not be
    /// loaded, so no GPU work is possible on this machine.
    NoDriver,
    /// The driver loaded but there is no device with this ordinal.
    NoDevice {
        /// The ordinal that was asked for.
        ordinal: usize,
        /// How many devices the driver reports.
        count: usize,
    },
    /// A driver call failed.
    Driver {
        /// What this crate was doing (usually the driver function's name).
        context: &'static str,
        /// The driver's error code.
        source: DriverError,
    },
    /// The PTX text could not be loaded or JIT-compiled for the device.
    ModuleLoad {
        /// The driver's error code.
        source: DriverError,
        /// The JIT compiler's error log (empty when the driver gave none).
        log: String,
    },
    /// The PTX text cannot be passed to the driver at all (it contains a NUL
    /// byte, which the driver's C API reads as the end of the text).
    InvalidPtx {
        /// Byte offset of the first NUL.
        nul_at: usize,
    },
    /// The module has no kernel (`.entry`) with this name.
    KernelNotFound {
        /// The name that was asked for.
        name: String,
        /// The `.entry` names found in the module's PTX text.
        available: Vec<String>,
    },
    /// The launch configuration does not fit the device or the kernel; it was
    /// refused before reaching the driver.
    Launch(LaunchError),
    /// A clustered launch was refused (contract, agents, ACTIVE, mapping).
    Cluster(crate::ClusterError),
    /// A stream, kernel or buffer of one CUDA context was used with another.
    ContextMismatch {
        /// What was mismatched.
        what: &'static str,
    },
    /// [`Launch::on`](crate::Launch::on) was called after arguments were
    /// pushed; the arguments were bound to the previous stream.
    StreamAfterArgs,
    /// The arguments pushed for a launch do not match the kernel's
    /// parameters as its PTX declares them; nothing was launched.
    Arguments {
        /// The kernel.
        kernel: String,
        /// Byte size of each `.param` of the PTX entry.
        expected: Vec<u32>,
        /// Byte size of each argument pushed (a buffer is a pointer, 8).
        pushed: Vec<u32>,
    },
    /// A size computation overflowed (for example `n * size_of::<T>()` of an
    /// allocation).
    SizeOverflow {
        /// What was being sized.
        what: &'static str,
    },
    /// The module has no constant table of this name
    /// ([`Gpu::write_constant`](crate::Gpu::write_constant)).
    ConstantNotFound {
        /// The table's name.
        name: &'static str,
    },
    /// The values given for a constant table, or the module's table, do not
    /// have the table's size; nothing was written.
    ConstantSize {
        /// The table's name.
        name: &'static str,
        /// Bytes of the table as the kernels crate declares it.
        expected: usize,
        /// Bytes given (`module: false`) or declared in the module's PTX
        /// (`module: true`).
        found: usize,
        /// Whether `found` is the module's table (its PTX is another build's).
        module: bool,
    },
    /// The tuner could not decide or use its cache file; with this variant a
    /// [`Tuner`](crate::tuner::Tuner) can time launches that fail with
    /// [`Error`].
    Tuner(crate::tuner::TunerError),
}

impl Error {
    pub(crate) fn driver(context: &'static str) -> impl FnOnce(DriverError) -> Error {
        move |source| Error::Driver { context, source }
    }
}

/// Which limit bounds the threads of one block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadLimit {
    /// The device's `CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK` (1024 on all
    /// current GPUs).
    Device,
    /// The kernel's own `CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`, lower than
    /// the device's because of its register use or `.maxntid`.
    Kernel,
}

/// An axis of a grid or block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis {
    /// The x axis (index 0).
    X,
    /// The y axis (index 1).
    Y,
    /// The z axis (index 2).
    Z,
}

impl Axis {
    /// The three axes, in index order.
    pub const ALL: [Axis; 3] = [Axis::X, Axis::Y, Axis::Z];

    /// The array index of this axis (x = 0).
    pub fn index(self) -> usize {
        match self {
            Axis::X => 0,
            Axis::Y => 1,
            Axis::Z => 2,
        }
    }
}

impl fmt::Display for Axis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Axis::X => "x",
            Axis::Y => "y",
            Axis::Z => "z",
        })
    }
}

/// Why a launch configuration was refused by
/// [`validate_launch`](crate::validate_launch).
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LaunchError {
    /// A grid dimension is 0.
    EmptyGrid {
        /// The grid, in blocks.
        grid: [u32; 3],
    },
    /// A block dimension is 0.
    EmptyBlock {
        /// The block, in threads.
        block: [u32; 3],
    },
    /// The block has more threads than the kernel may run in one block.
    BlockTooLarge {
        /// Threads per block asked for (x * y * z).
        threads: u64,
        /// The effective limit: the smaller of the device's and the kernel's.
        limit: u32,
        /// Which of the two limits is the smaller one.
        limited_by: ThreadLimit,
    },
    /// One block dimension is over the device's maximum for that axis.
    BlockDimTooLarge {
        /// The axis.
        axis: Axis,
        /// The dimension asked for.
        dim: u32,
        /// The device's maximum.
        limit: u32,
    },
    /// One grid dimension is over the device's maximum for that axis.
    GridTooLarge {
        /// The axis.
        axis: Axis,
        /// The dimension asked for.
        dim: u32,
        /// The device's maximum.
        limit: u32,
    },
    /// Static plus dynamic shared memory is over the per-block opt-in maximum.
    SharedMemoryTooLarge {
        /// Dynamic shared memory asked for, in bytes.
        requested_dynamic: u32,
        /// The kernel's static shared memory, in bytes.
        static_bytes: u32,
        /// The device's opt-in maximum per block, in bytes.
        limit: u32,
    },
    /// A thread block cluster asked of a device before Hopper (compute
    /// capability 9.0).
    ClustersUnsupported {
        /// The cluster, in blocks.
        cluster: [u32; 3],
        /// The device's compute capability.
        compute_capability: (u32, u32),
    },
    /// A cluster dimension is 0, or the grid is not a whole number of
    /// clusters along some axis.
    ClusterShape {
        /// The grid, in blocks.
        grid: [u32; 3],
        /// The cluster, in blocks.
        cluster: [u32; 3],
    },
    /// More blocks in one cluster than the portable maximum.
    ClusterTooLarge {
        /// Blocks per cluster (x * y * z).
        blocks: u64,
        /// The portable maximum ([`PORTABLE_CLUSTER_BLOCKS`](crate::PORTABLE_CLUSTER_BLOCKS)).
        limit: u32,
    },
    /// The driver found no GPC that can hold one cluster of these blocks
    /// at once (their shared memory or registers together are too many).
    ClusterDoesNotFit {
        /// The cluster, in blocks.
        cluster: [u32; 3],
        /// Threads per block.
        block_threads: u64,
        /// Static plus dynamic shared memory per block, in bytes.
        shared_bytes: u64,
    },
}

fn driver_message(e: &DriverError) -> String {
    // Formatting a `DriverError` with cudarc calls into libcuda; only do that
    // when the library is there, so that printing an error never panics.
    // SAFETY: only tries to open the library.
    if unsafe { cudarc::driver::sys::is_culib_present() } {
        if let Ok(s) = e.error_string() {
            return format!("{:?}: {}", e.0, s.to_string_lossy());
        }
    }
    format!("{:?}", e.0)
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoDriver => write!(
                f,
                "no NVIDIA driver found: libcuda could not be loaded. Run on a machine with an \
                 NVIDIA GPU and its driver installed, or add the driver's directory to \
                 LD_LIBRARY_PATH"
            ),
            Error::NoDevice { ordinal, count: 0 } => write!(
                f,
                "no CUDA device: the NVIDIA driver loaded but reports no GPU (asked for device \
                 {ordinal}). Check `nvidia-smi` and CUDA_VISIBLE_DEVICES"
            ),
            Error::NoDevice { ordinal, count } => write!(
                f,
                "no CUDA device {ordinal}: the driver reports {count} device(s), ordinals 0..{count}. \
                 Use a smaller ordinal or check CUDA_VISIBLE_DEVICES"
            ),
            Error::Driver { context, source } => {
                write!(f, "CUDA driver call failed in {context}: {}", driver_message(source))
            }
            Error::ModuleLoad { source, log } => {
                write!(
                    f,
                    "the PTX module failed to load: {}. Check that the PTX ISA version and \
                     .target are supported by this driver and device",
                    driver_message(source)
                )?;
                if !log.is_empty() {
                    write!(f, "; JIT log:\n{log}")?;
                }
                Ok(())
            }
            Error::InvalidPtx { nul_at } => write!(
                f,
                "the PTX text contains a NUL byte at offset {nul_at}; pass the PTX as text \
                 without NULs (e.g. `include_str!` of the .ptx file)"
            ),
            Error::KernelNotFound { name, available } => {
                write!(f, "kernel `{name}` not found in the module")?;
                if available.is_empty() {
                    write!(f, "; the module declares no .entry kernels")
                } else {
                    write!(
                        f,
                        "; it has: {}. Check the name and that the kernel is `#[no_mangle]`",
                        available.join(", ")
                    )
                }
            }
            Error::Launch(e) => write!(f, "launch refused: {e}"),
            Error::Cluster(e) => write!(f, "clustered launch refused: {e}"),
            Error::ContextMismatch { what } => write!(
                f,
                "{what} belong to different CUDA contexts; use a stream, kernel and buffers \
                 created from the same `Gpu`"
            ),
            Error::Arguments {
                kernel,
                expected,
                pushed,
            } => {
                if expected.len() != pushed.len() {
                    write!(
                        f,
                        "`{kernel}` takes {} parameters (sizes {expected:?} in its PTX), but {} arguments were pushed (sizes {pushed:?})",
                        expected.len(),
                        pushed.len()
                    )?;
                } else {
                    let at = expected.iter().zip(pushed).position(|(e, p)| e != p).unwrap_or(0);
                    write!(
                        f,
                        "argument {at} of `{kernel}` has {} bytes, but the PTX parameter has {} (sizes {expected:?} expected, {pushed:?} pushed)",
                        pushed.get(at).copied().unwrap_or(0),
                        expected.get(at).copied().unwrap_or(0)
                    )?;
                }
                write!(f, ": push one argument per kernel parameter, in order, or use the typed launch that the kernel's #[kernel]/#[clustered] emits")
            }
            Error::StreamAfterArgs => write!(
                f,
                "`Launch::on` was called after `.arg(..)`: the arguments are bound to the \
                 previous stream. Call `.on(&stream)` before the first `.arg(..)`"
            ),
            Error::SizeOverflow { what } => write!(
                f,
                "size overflow computing {what}; use a smaller length"
            ),
            Error::ConstantNotFound { name } => write!(
                f,
                "the module has no constant table `{name}`: load the PTX of the kernels crate \
                 that declares it with `constant_table!` (`include_ptx!` of that crate)"
            ),
            Error::ConstantSize {
                name,
                expected,
                found,
                module: false,
            } => write!(
                f,
                "constant table `{name}` holds {expected} bytes, {found} were given: write \
                 exactly its length in elements"
            ),
            Error::ConstantSize {
                name,
                expected,
                found,
                module: true,
            } => write!(
                f,
                "constant table `{name}` is {expected} bytes in the kernels crate but {found} in \
                 the module: the PTX is from another build of the crate; rebuild, and load the \
                 PTX that `include_ptx!` gives"
            ),
            Error::Tuner(e) => write!(f, "tuner: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Driver { source, .. } | Error::ModuleLoad { source, .. } => Some(source),
            Error::Launch(e) => Some(e),
            Error::Cluster(e) => Some(e),
            Error::Tuner(e) => Some(e),
            _ => None,
        }
    }
}

impl From<crate::ClusterError> for Error {
    fn from(e: crate::ClusterError) -> Self {
        Error::Cluster(e)
    }
}

impl From<crate::tuner::TunerError> for Error {
    fn from(e: crate::tuner::TunerError) -> Self {
        Error::Tuner(e)
    }
}

impl From<LaunchError> for Error {
    fn from(e: LaunchError) -> Self {
        Error::Launch(e)
    }
}

impl fmt::Display for LaunchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LaunchError::EmptyGrid { grid } => write!(
                f,
                "grid {grid:?} has a zero dimension, so nothing would run; every grid dimension \
                 must be at least 1 (skip the launch when the problem is empty)"
            ),
            LaunchError::EmptyBlock { block } => write!(
                f,
                "block {block:?} has a zero dimension; every block dimension must be at least 1"
            ),
            LaunchError::BlockTooLarge {
                threads,
                limit,
                limited_by,
            } => {
                let by = match limited_by {
                    ThreadLimit::Device => "the device's maximum threads per block",
                    ThreadLimit::Kernel => {
                        "this kernel's own maximum threads per block \
                         (CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, lowered by its register use \
                         or its #[launch_bounds])"
                    }
                };
                write!(
                    f,
                    "block of {threads} threads is over {by}, {limit}; use blocks of at most \
                     {limit} threads and more blocks"
                )
            }
            LaunchError::BlockDimTooLarge { axis, dim, limit } => write!(
                f,
                "block dimension {axis} = {dim} is over the device's maximum {limit}; \
                 reshape the block"
            ),
            LaunchError::GridTooLarge { axis, dim, limit } => write!(
                f,
                "grid dimension {axis} = {dim} is over the device's maximum {limit}; use a \
                 larger block, move blocks to another axis, or loop inside the kernel"
            ),
            LaunchError::SharedMemoryTooLarge {
                requested_dynamic,
                static_bytes,
                limit,
            } => write!(
                f,
                "shared memory per block of {} bytes ({requested_dynamic} dynamic + \
                 {static_bytes} static) is over the device's opt-in maximum of {limit} bytes; \
                 use smaller tiles or fewer threads per block",
                u64::from(*requested_dynamic) + u64::from(*static_bytes)
            ),
            LaunchError::ClustersUnsupported {
                cluster,
                compute_capability: (major, minor),
            } => write!(
                f,
                "thread block cluster {cluster:?} asked of a device of compute capability \
                 {major}.{minor}; clusters need 9.0 (Hopper) or later: launch with cluster \
                 [1, 1, 1] on this device"
            ),
            LaunchError::ClusterShape { grid, cluster } => write!(
                f,
                "grid {grid:?} is not a whole number of clusters {cluster:?}: every cluster \
                 dimension must be at least 1 and divide the grid's (pad the grid, with the \
                 kernel bounds-checking, or choose a cluster that divides it)"
            ),
            LaunchError::ClusterTooLarge { blocks, limit } => write!(
                f,
                "a cluster of {blocks} blocks is over the portable maximum of {limit}; use a \
                 smaller cluster"
            ),
            LaunchError::ClusterDoesNotFit {
                cluster,
                block_threads,
                shared_bytes,
            } => write!(
                f,
                "no GPC of this device can hold a cluster {cluster:?} of blocks of \
                 {block_threads} threads and {shared_bytes} bytes of shared memory at once \
                 (cuOccupancyMaxActiveClusters is 0); use a smaller cluster, fewer threads or \
                 less shared memory per block"
            ),
        }
    }
}

impl std::error::Error for LaunchError {}
