//! [`Gpu`]: one device, its context and a default stream.

use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;

use cudarc::driver::sys::CUresult;
use cudarc::driver::{
    CudaContext, CudaSlice, CudaStream, DeviceRepr, DriverError, ValidAsZeroBits,
};

use clustered_device::constant::{Constant, ConstantSymbol};

use crate::{DeviceProperties, Error, Module};

/// One GPU: its CUDA context (the device's primary context), a stream that
/// the helpers and launches use unless told otherwise, and its properties.
///
/// There is no global state: make as many as needed; two `Gpu`s of the same
/// ordinal share the primary context.
#[derive(Debug, Clone)]
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    props: DeviceProperties,
}

/// Runs `f`, turning a panic into `None` without printing it. cudarc panics
/// when libcuda (or one of its symbols) cannot be loaded; this keeps that
/// panic out of the public API.
fn catch_silently<T>(f: impl FnOnce() -> T) -> Option<T> {
    let previous = panic::take_hook();
    panic::set_hook(Box::new(|_| {}));
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    panic::set_hook(previous);
    result.ok()
}

/// Loads libcuda and initialises the driver; returns the device count.
fn init_driver() -> Result<usize, Error> {
    // SAFETY: only tries to open the library.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(Error::NoDriver);
    }
    match catch_silently(CudaContext::device_count) {
        None => Err(Error::NoDriver),
        Some(Ok(n)) => Ok(usize::try_from(n).unwrap_or(0)),
        Some(Err(DriverError(CUresult::CUDA_ERROR_NO_DEVICE))) => Ok(0),
        Some(Err(source)) => Err(Error::Driver {
            context: "cuInit",
            source,
        }),
    }
}

impl Gpu {
    /// Opens device `ordinal`: loads the driver, retains the primary context
    /// and reads the [`DeviceProperties`].
    ///
    /// Returns [`Error::NoDriver`] when libcuda cannot be loaded and
    /// [`Error::NoDevice`] when the ordinal does not exist; never panics.
    pub fn new(ordinal: usize) -> Result<Gpu, Error> {
        let count = init_driver()?;
        if ordinal >= count {
            return Err(Error::NoDevice { ordinal, count });
        }
        let ctx = CudaContext::new(ordinal).map_err(Error::driver("cuCtxCreate"))?;
        let props = DeviceProperties::query(&ctx)?;
        let stream = ctx.default_stream();
        Ok(Gpu { ctx, stream, props })
    }

    /// The number of CUDA devices; [`Error::NoDriver`] without a driver.
    pub fn device_count() -> Result<usize, Error> {
        init_driver()
    }

    /// The device's properties, read once when the `Gpu` was made.
    pub fn properties(&self) -> &DeviceProperties {
        &self.props
    }

    /// The cudarc context, for anything this crate does not wrap.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The stream that helpers, launches and timing use by default (the
    /// context's default stream).
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// A new non-blocking stream of this context, e.g. for
    /// [`Launch::on`](crate::Launch::on).
    pub fn new_stream(&self) -> Result<Arc<CudaStream>, Error> {
        self.ctx
            .new_stream()
            .map_err(Error::driver("cuStreamCreate"))
    }

    /// Waits until all work on [`Gpu::stream`] is done.
    pub fn synchronize(&self) -> Result<(), Error> {
        self.stream
            .synchronize()
            .map_err(Error::driver("cuStreamSynchronize"))
    }

    fn check_len<T>(n: usize) -> Result<(), Error> {
        n.checked_mul(std::mem::size_of::<T>())
            .map(|_| ())
            .ok_or(Error::SizeOverflow {
                what: "a device allocation",
            })
    }

    /// Copies `data` to a new device buffer (on [`Gpu::stream`]).
    pub fn htod<T: DeviceRepr>(&self, data: &[T]) -> Result<CudaSlice<T>, Error> {
        Self::check_len::<T>(data.len())?;
        self.stream
            .clone_htod(data)
            .map_err(Error::driver("cuMemcpyHtoD"))
    }

    /// A new device buffer of `n` zeroed elements (on [`Gpu::stream`]).
    pub fn zeros<T: DeviceRepr + ValidAsZeroBits>(&self, n: usize) -> Result<CudaSlice<T>, Error> {
        Self::check_len::<T>(n)?;
        self.stream
            .alloc_zeros(n)
            .map_err(Error::driver("cuMemAlloc"))
    }

    /// Copies a device buffer back to the host, waiting for [`Gpu::stream`]
    /// (so for every launch made on it) first.
    pub fn dtoh<T: DeviceRepr>(&self, buf: &CudaSlice<T>) -> Result<Vec<T>, Error> {
        if buf.context() != &self.ctx {
            return Err(Error::ContextMismatch {
                what: "the buffer and this Gpu",
            });
        }
        let v = self
            .stream
            .clone_dtoh(buf)
            .map_err(Error::driver("cuMemcpyDtoH"))?;
        self.synchronize()?;
        Ok(v)
    }

    /// Fills the constant table `table` (declared with
    /// `constant_table!` in the kernels crate) of `module` with `values`,
    /// exactly `table.len()` of them, on [`Gpu::stream`]: launches made
    /// on it afterwards read them; a launch on another stream must wait
    /// for this one first. The table is the module's: every kernel of it
    /// reads the same values.
    ///
    /// [`Error::ConstantSize`] when the number of values is not the
    /// table's length or the module's table has another size (a PTX of
    /// another build); [`Error::ConstantNotFound`] when the module does not
    /// declare it.
    pub fn write_constant<S: ConstantSymbol>(
        &self,
        module: &Module,
        table: Constant<S>,
        values: &[S::Element],
    ) -> Result<(), Error> {
        let name = table.name();
        let bytes = table.bytes_of(values).map_err(|_| Error::ConstantSize {
            name,
            expected: table.bytes(),
            found: std::mem::size_of_val(values),
            module: false,
        })?;
        if module.ctx() != &self.ctx {
            return Err(Error::ContextMismatch {
                what: "the module and this Gpu",
            });
        }
        self.ctx
            .bind_to_thread()
            .map_err(Error::driver("cuCtxSetCurrent"))?;
        let mut symbol = module
            .cuda_module()
            .get_global(name, &self.stream)
            .map_err(|source| match source.0 {
                CUresult::CUDA_ERROR_NOT_FOUND => Error::ConstantNotFound { name },
                _ => Error::Driver {
                    context: "cuModuleGetGlobal",
                    source,
                },
            })?;
        if symbol.len() != table.bytes() {
            return Err(Error::ConstantSize {
                name,
                expected: table.bytes(),
                found: symbol.len(),
                module: true,
            });
        }
        self.stream
            .memcpy_htod(bytes, &mut symbol)
            .map_err(Error::driver("cuMemcpyHtoD"))
    }
}
