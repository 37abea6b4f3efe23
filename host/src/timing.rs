//! GPU-side timing with CUDA events.

use std::sync::Arc;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaStream};

use crate::{Error, Gpu};

/// A pair of timing events on one stream: [`GpuTimer::start`], enqueue work,
/// [`GpuTimer::stop`], then [`GpuTimer::elapsed_ms`]. Measures GPU time
/// between the two points of the stream, not host time.
#[derive(Debug)]
pub struct GpuTimer {
    stream: Arc<CudaStream>,
    start: CudaEvent,
    stop: CudaEvent,
}

impl GpuTimer {
    /// Two timing events on `stream`'s context.
    pub fn new(stream: &Arc<CudaStream>) -> Result<Self, Error> {
        let ctx = stream.context();
        // `None` would make cudarc disable timing on the events.
        let flags = Some(CUevent_flags::CU_EVENT_DEFAULT);
        let start = ctx
            .new_event(flags)
            .map_err(Error::driver("cuEventCreate"))?;
        let stop = ctx
            .new_event(flags)
            .map_err(Error::driver("cuEventCreate"))?;
        Ok(GpuTimer {
            stream: stream.clone(),
            start,
            stop,
        })
    }

    /// Records the start event on the stream.
    pub fn start(&self) -> Result<(), Error> {
        self.start
            .record(&self.stream)
            .map_err(Error::driver("cuEventRecord"))
    }

    /// Records the stop event on the stream.
    pub fn stop(&self) -> Result<(), Error> {
        self.stop
            .record(&self.stream)
            .map_err(Error::driver("cuEventRecord"))
    }

    /// Waits for the stop event and returns the milliseconds between the two
    /// events (resolution about 0.5 µs, per `cuEventElapsedTime`'s docs).
    /// cudarc's `elapsed_ms` synchronizes both events itself.
    pub fn elapsed_ms(&self) -> Result<f32, Error> {
        self.start
            .elapsed_ms(&self.stop)
            .map_err(Error::driver("cuEventElapsedTime"))
    }
}

impl Gpu {
    /// Times the work that `f` enqueues on [`Gpu::stream`], in milliseconds
    /// of GPU time. `f`'s error is returned as is.
    pub fn time_ms<F>(&self, f: F) -> Result<f32, Error>
    where
        F: FnOnce() -> Result<(), Error>,
    {
        let timer = GpuTimer::new(self.stream())?;
        timer.start()?;
        f()?;
        timer.stop()?;
        timer.elapsed_ms()
    }
}
