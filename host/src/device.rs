//! Device properties, read from the driver or taken from a reference profile.

use cudarc::driver::sys::CUdevice_attribute as A;
use cudarc::driver::CudaContext;

use crate::Error;

/// The limits and sizes of one GPU that launch validation and occupancy
/// reasoning need. A plain struct so that tests and planners can build one
/// without a GPU (see [`DeviceProperties::h100_sxm`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceProperties {
    /// The device's name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// The device ordinal it was read from.
    pub ordinal: usize,
    /// Compute capability `(major, minor)`; Hopper is `(9, 0)`.
    pub compute_capability: (u32, u32),
    /// Number of streaming multiprocessors.
    pub sm_count: u32,
    /// Maximum threads in one block (all axes together).
    pub max_threads_per_block: u32,
    /// Maximum block dimension per axis.
    pub max_block_dim: [u32; 3],
    /// Maximum grid dimension per axis.
    pub max_grid_dim: [u32; 3],
    /// Threads per warp.
    pub warp_size: u32,
    /// Maximum resident threads per SM.
    pub max_threads_per_sm: u32,
    /// Maximum resident blocks per SM.
    pub max_blocks_per_sm: u32,
    /// Maximum resident warps per SM (`max_threads_per_sm / warp_size`).
    pub max_warps_per_sm: u32,
    /// 32-bit registers per SM.
    pub max_registers_per_sm: u32,
    /// 32-bit registers available to one block.
    pub max_registers_per_block: u32,
    /// Shared memory per SM, in bytes.
    pub max_shared_memory_per_sm: u32,
    /// Shared memory per block without opting in, in bytes (48 KiB). Beyond
    /// this a kernel must set `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`,
    /// which [`Launch::run`](crate::Launch::run) does automatically.
    pub max_shared_memory_per_block: u32,
    /// Shared memory per block with opt-in, in bytes (227 KiB on Hopper).
    pub max_shared_memory_per_block_optin: u32,
    /// L2 cache size, in bytes.
    pub l2_cache_bytes: u32,
    /// Peak SM clock, in kHz.
    pub clock_rate_khz: u32,
    /// Peak memory clock, in kHz.
    pub memory_clock_rate_khz: u32,
    /// Global memory bus width, in bits.
    pub memory_bus_width_bits: u32,
    /// Total global memory, in bytes.
    pub total_memory_bytes: u64,
}

impl DeviceProperties {
    /// A reference profile of the NVIDIA H100 SXM5 80 GB (compute capability
    /// 9.0), with the figures NVIDIA publishes and `cuDeviceGetAttribute`
    /// reports for it. For tests and planning without a GPU; on a real device
    /// use [`Gpu::properties`](crate::Gpu::properties).
    pub fn h100_sxm() -> Self {
        DeviceProperties {
            name: "NVIDIA H100 80GB HBM3 (reference profile)".to_string(),
            ordinal: 0,
            compute_capability: (9, 0),
            sm_count: 132,
            max_threads_per_block: 1024,
            max_block_dim: [1024, 1024, 64],
            max_grid_dim: [2_147_483_647, 65_535, 65_535],
            warp_size: 32,
            max_threads_per_sm: 2048,
            max_blocks_per_sm: 32,
            max_warps_per_sm: 64,
            max_registers_per_sm: 65_536,
            max_registers_per_block: 65_536,
            max_shared_memory_per_sm: 228 * 1024,
            max_shared_memory_per_block: 48 * 1024,
            max_shared_memory_per_block_optin: 227 * 1024,
            l2_cache_bytes: 50 * 1024 * 1024,
            clock_rate_khz: 1_980_000,
            memory_clock_rate_khz: 2_619_000,
            memory_bus_width_bits: 5120,
            total_memory_bytes: 80 * 1024 * 1024 * 1024,
        }
    }

    /// Reads the properties of the context's device with `cuDeviceGetAttribute`.
    pub fn query(ctx: &CudaContext) -> Result<Self, Error> {
        let attr = |a: A| -> Result<u32, Error> {
            ctx.attribute(a)
                .map(|v| u32::try_from(v).unwrap_or(0))
                .map_err(Error::driver("cuDeviceGetAttribute"))
        };
        let name = ctx.name().map_err(Error::driver("cuDeviceGetName"))?;
        let total = ctx.total_mem().map_err(Error::driver("cuDeviceTotalMem"))?;
        let warp_size = attr(A::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?;
        let max_threads_per_sm = attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?;
        Ok(DeviceProperties {
            name,
            ordinal: ctx.ordinal(),
            compute_capability: (
                attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
                attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
            ),
            sm_count: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            max_threads_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            max_block_dim: [
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
            ],
            max_grid_dim: [
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
            ],
            warp_size,
            max_threads_per_sm,
            max_blocks_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)?,
            max_warps_per_sm: max_threads_per_sm.checked_div(warp_size).unwrap_or(0),
            max_registers_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)?,
            max_registers_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)?,
            max_shared_memory_per_sm: attr(
                A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
            )?,
            max_shared_memory_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?,
            max_shared_memory_per_block_optin: attr(
                A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )?,
            l2_cache_bytes: attr(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
            clock_rate_khz: attr(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)?,
            memory_clock_rate_khz: attr(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)?,
            memory_bus_width_bits: attr(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)?,
            total_memory_bytes: total as u64,
        })
    }

    /// Peak DRAM bandwidth in bytes per second, from the memory clock and bus
    /// width (double data rate): a roofline reference, not a measurement.
    pub fn peak_memory_bandwidth_bytes_per_s(&self) -> f64 {
        2.0 * f64::from(self.memory_clock_rate_khz) * 1e3 * f64::from(self.memory_bus_width_bits)
            / 8.0
    }
}
