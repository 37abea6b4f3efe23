//! Tuned launches: the first launch of a kernel for a key measures its
//! schedules, later launches read the choice.
//!
//! [`Gpu::launch_tuned`] takes a kernel's entries (the baseline first, as
//! `std::iter::once(k::KERNEL).chain(k::SCHEDULES.iter().copied())` lists
//! them) and a [`TunedLaunches`], which holds a [`Tuner`] (the choices, in
//! a file shared between processes) and what this process learnt:
//!
//! - **The key** ([`TuneKey`]) holds the device (name, SMs, L2 size, driver
//!   version), the problem as bucketed sizes (each grid dimension and each
//!   integer scalar rounded up to a power of two, as CubeCL's anchors do,
//!   so one tuning serves nearby sizes; floats do not size the work and are
//!   left out), the block, a checksum of the candidates (names and
//!   contracts) and a hash of the module's PTX: changing the kernel or its
//!   schedules tunes again.
//! - **Measuring** warms each candidate up once, then times
//!   [`TunePolicy::rounds`] interleaved rounds (one launch of each per
//!   round, CUDA events). Candidates write into scratch copies of the
//!   buffers the kernel writes (refreshed from the caller's before every
//!   launch, so kernels that read their outputs see them as the caller left
//!   them); the caller's buffers get one launch, of the winner.
//! - **Deciding**: a schedule wins only if it beats the baseline in most
//!   rounds, in its trimmed mean, and in its median by more than the
//!   noise: the larger of [`TunePolicy::min_margin`] (1%) and the
//!   baseline's relative interquartile range in this measurement
//!   ([`decide_over_noise`]). Otherwise the baseline runs.
//! - **A trial on your launches**: a measurement on scratch buffers is a
//!   sample, and a schedule that won it can lose on your launches (it may
//!   have a slow mode the rounds missed, or run otherwise where your data
//!   sits and after what you ran). So after a schedule is chosen
//!   (measured here, or read from the file), the key's next 2 x
//!   [`TunePolicy::trial`] launches alternate the baseline and the winner
//!   on your buffers, each timed (the launch waits for the GPU); if the
//!   winner does not beat the baseline by the margin there, the baseline
//!   is recorded and launched from then on. A choice of the baseline has no
//!   trial. The verdict goes into the file at the key's next launch, before
//!   that launch runs: a launch that fails for the file has not touched
//!   your buffers.
//! - **Revalidating**: every [`TunePolicy::revalidate_every`] launches of a
//!   key whose winner is not the baseline (10 000 by default), a trial runs
//!   again.
//! - **In a graph capture** (the launch's stream capturing): nothing may
//!   wait for the GPU, so a key's first launch, which must measure, is
//!   refused with [`TunerError::Capturing`](crate::tuner::TunerError)
//!   before anything is captured (launch the key once before capturing; a
//!   choice another process saved needs no measuring and is launched), and
//!   a launch due for a trial launches the choice untimed: the trial goes
//!   on at the next launch outside a capture. As for any cudarc launch
//!   into a graph, the buffers must be made with cudarc's event tracking
//!   off (`CudaContext::disable_event_tracking`, [`Gpu::context`]): with
//!   it, the stream waits for each buffer's last write, an event recorded
//!   outside the capture, and the driver invalidates the capture
//!   (`CUDA_ERROR_STREAM_CAPTURE_ISOLATION`).
//! - **Once per key**: launches that share a [`TunedLaunches`] (it is
//!   `Sync`) tune a key once; the others wait for its choice.
//! - **A hit** is a hash of the key's parts looked up in memory, with no
//!   allocation, before the launch itself (`cargo test --release -p
//!   clustered-host tuned_hit_cost -- --nocapture` prints its cost).

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use clustered_device::entry::{Entry, KernelFn};
use cudarc::driver::{CudaSlice, CudaStream};

use crate::tuner::{decide_over_noise, median, Choice, TuneKey, Tuner};
use crate::typed::{Param, Recorded};
use crate::{ClusterOptions, Cuda, Error, Gpu, GpuTimer, LaunchConfig, Module};

/// How a tuned launch measures.
#[derive(Clone, Debug, PartialEq)]
pub struct TunePolicy {
    /// Interleaved rounds per measurement (at least 1).
    pub rounds: usize,
    /// The least margin by which a schedule must beat the baseline's
    /// median (a fraction).
    pub min_margin: f32,
    /// Launches of a tuned key between revalidations of its winner (0:
    /// never).
    pub revalidate_every: u64,
    /// Launches of each of the baseline and the winner in a trial on the
    /// caller's buffers (0: no trials, and so no revalidation).
    pub trial: usize,
}

impl Default for TunePolicy {
    fn default() -> Self {
        TunePolicy {
            rounds: 10,
            min_margin: 0.01,
            revalidate_every: 10_000,
            trial: 5,
        }
    }
}

/// What a tuned launch did.
#[derive(Clone, Debug, PartialEq)]
pub struct Tuned {
    /// The entry launched on the caller's buffers.
    pub schedule: &'static str,
    /// Whether this launch measured every candidate (a miss).
    pub measured: bool,
    /// Whether this launch was a timed trial launch on the caller's buffers
    /// (then `schedule` may be the baseline).
    pub trial: bool,
    /// The choice as recorded: the schedule and the medians that chose it.
    pub choice: Choice,
}

/// A process's tuned launches: the tuner's file and the choices in memory.
pub struct TunedLaunches {
    tuner: Mutex<Tuner>,
    policy: TunePolicy,
    state: Mutex<State>,
    tuned: Condvar,
}

#[derive(Default)]
struct State {
    /// Hash of a key's parts -> its choice and launches since validated.
    hits: HashMap<u64, Hit>,
    /// Keys being measured now (by hash).
    measuring: HashSet<u64>,
}

#[derive(Clone)]
struct Hit {
    schedule: &'static str,
    choice: Choice,
    launches: u64,
    /// The trial under way, if any.
    trial: Option<Trial>,
    /// A trial's verdict not yet in the tuner's file: the launch that
    /// reached it had run, so it is saved before the next launch, which
    /// fails, with the caller's buffers untouched, if the file cannot be
    /// written.
    unsaved: bool,
}

impl Hit {
    /// The hit of a choice measured or read from the file, among the
    /// candidates' `names` (the baseline first): its trial starts at once
    /// unless it is the baseline or trials are off.
    fn chosen(
        names: impl IntoIterator<Item = &'static str>,
        choice: &Choice,
        policy: &TunePolicy,
    ) -> Hit {
        let names: Vec<&'static str> = names.into_iter().collect();
        let index = names.iter().position(|&name| name == choice.schedule);
        let trial = policy.trial != 0 && index.is_some_and(|i| i != 0);
        Hit {
            schedule: names[index.unwrap_or(0)],
            choice: choice.clone(),
            launches: 0,
            trial: trial.then(Trial::default),
            unsaved: false,
        }
    }
}

/// What the next launch of a key does; every variant but `Run` holds the
/// key's claim, released when dropped unless its hit is published.
enum Next<'t> {
    /// Launch the known choice.
    Run(Hit),
    /// Time one trial launch of the baseline (or of the choice) on the
    /// caller's buffers.
    Trial {
        hit: Hit,
        baseline: bool,
        claim: Claim<'t>,
    },
    /// Measure every candidate.
    Measure(Claim<'t>),
    /// Save a trial's verdict, then launch it.
    Save(Hit, Claim<'t>),
}

/// A chosen schedule timed against the baseline on the caller's launches,
/// alternating, the baseline first: `samples[0]` the baseline's times,
/// `samples[1]` the schedule's, as [`decide_over_noise`] takes them.
#[derive(Clone, Debug, Default, PartialEq)]
struct Trial {
    samples: [Vec<f32>; 2],
}

impl Trial {
    fn next_is_baseline(&self) -> bool {
        self.samples[0].len() <= self.samples[1].len()
    }

    /// Adds one launch's time. When both sides have `launches` times, the
    /// verdict: whether the schedule beat the baseline as a measurement's
    /// winner must, by more than the larger of `min_margin` and the noise.
    fn add(&mut self, baseline: bool, ms: f32, launches: usize, min_margin: f32) -> Option<bool> {
        self.samples[usize::from(!baseline)].push(ms);
        if self.samples.iter().any(|side| side.len() < launches) {
            return None;
        }
        Some(decide_over_noise(&self.samples, min_margin) == 1)
    }
}

impl TunedLaunches {
    /// Tuned launches recording their choices in `tuner`.
    pub fn new(tuner: Tuner, policy: TunePolicy) -> Self {
        TunedLaunches {
            tuner: Mutex::new(tuner),
            policy,
            state: Mutex::default(),
            tuned: Condvar::new(),
        }
    }

    /// The tuner, for its choices and file.
    pub fn tuner(&self) -> MutexGuard<'_, Tuner> {
        self.tuner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What the next launch of `hash` does, counting it. Waits while
    /// another thread measures or trials the key; claims it when this
    /// launch must measure, trial or save.
    fn next(&self, hash: u64) -> Next<'_> {
        let mut state = self.state();
        loop {
            if state.measuring.contains(&hash) {
                state = self.tuned.wait(state).unwrap_or_else(|p| p.into_inner());
                continue;
            }
            let (every, trial) = (self.policy.revalidate_every, self.policy.trial);
            let Some(hit) = state.hits.get_mut(&hash) else {
                return Next::Measure(self.claim(&mut state, hash));
            };
            hit.launches += 1;
            if hit.unsaved {
                let hit = hit.clone();
                return Next::Save(hit, self.claim(&mut state, hash));
            }
            let due = every != 0
                && trial != 0
                && hit.launches >= every
                && hit.choice.schedule_ms < hit.choice.baseline_ms;
            if due && hit.trial.is_none() {
                hit.trial = Some(Trial::default());
            }
            let Some(baseline) = hit.trial.as_ref().map(Trial::next_is_baseline) else {
                return Next::Run(hit.clone());
            };
            let hit = hit.clone();
            let claim = self.claim(&mut state, hash);
            return Next::Trial {
                hit,
                baseline,
                claim,
            };
        }
    }

    /// Claims `hash` for this thread: the others wait until it is published.
    fn claim(&self, state: &mut State, hash: u64) -> Claim<'_> {
        state.measuring.insert(hash);
        Claim {
            launches: self,
            hash,
            done: false,
        }
    }

    /// Publishes the choice for `hash` (or only releases the claim).
    fn publish(&self, hash: u64, hit: Option<Hit>) {
        let mut state = self.state();
        state.measuring.remove(&hash);
        if let Some(hit) = hit {
            state.hits.insert(hash, hit);
        }
        drop(state);
        self.tuned.notify_all();
    }
}

/// A key this thread measures, trials or saves: published with its new
/// hit, or released as it was when dropped (a failure), so waiters do not
/// hang.
struct Claim<'t> {
    launches: &'t TunedLaunches,
    hash: u64,
    done: bool,
}

impl Claim<'_> {
    /// Publishes `hit` as the key's and releases the claim.
    fn publish(mut self, hit: Hit) {
        self.launches.publish(self.hash, Some(hit));
        self.done = true;
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.launches.publish(self.hash, None);
        }
    }
}

/// The stream a launch with `options` runs on: the tuned launch records
/// its buffers, times and copies there, since events on another stream
/// would not bracket the launch.
fn launch_stream<'a>(gpu: &'a Gpu, options: &'a ClusterOptions) -> &'a Arc<CudaStream> {
    options.stream.as_ref().unwrap_or(gpu.stream())
}

/// Whether `stream` is being captured into a graph.
fn capturing(stream: &CudaStream) -> Result<bool, Error> {
    use cudarc::driver::sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    let status = stream
        .capture_status()
        .map_err(Error::driver("cuStreamIsCapturing"))?;
    Ok(status != CU_STREAM_CAPTURE_STATUS_NONE)
}

/// `v` rounded up to a power of two (0 stays 0): problems within a factor
/// of two share a tuning.
pub fn bucket(v: u64) -> u64 {
    if v == 0 {
        0
    } else {
        v.checked_next_power_of_two().unwrap_or(u64::MAX)
    }
}

/// FNV-1a, for keys that must be the same in every process (the standard
/// hasher is seeded per process).
#[derive(Clone, Copy)]
pub(crate) struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// A checksum of the candidates: their names and contracts.
pub fn candidates_checksum<K: KernelFn>(candidates: &[Entry<K>]) -> u64 {
    let mut h = Fnv::default();
    for entry in candidates {
        entry.name().hash(&mut h);
        match entry.contract() {
            None => 0u8.hash(&mut h),
            Some(c) => {
                let c = *c;
                (
                    c.binding,
                    c.indexing,
                    c.tile,
                    c.chunk,
                    c.default_active,
                    c.waves,
                )
                    .hash(&mut h);
            }
        }
    }
    h.finish()
}

/// The problem's part of a key: bucketed grid, the block, bucketed integer
/// scalars.
fn problem_parts(original: &LaunchConfig, recorded: &Recorded) -> ([u64; 3], [u32; 3], Vec<u64>) {
    let grid = original.grid.map(|g| bucket(u64::from(g)));
    let scalars = recorded
        .params
        .iter()
        .filter_map(|p| match p {
            Param::Scalar(s) => s.as_integer().map(bucket),
            Param::Buffer { .. } => None,
        })
        .collect();
    (grid, original.block, scalars)
}

impl Gpu {
    /// Launches the fastest of `candidates` (`candidates[0]` the baseline)
    /// for this problem, measuring them on the first launch of a key; see
    /// the [module](self) docs. `original` and `args` are as for
    /// [`Gpu::launch_entry`].
    ///
    /// # Safety
    /// As for [`Gpu::launch_entry`], for every candidate: each must compute
    /// what the baseline computes (the macro's schedules do), since any of
    /// them may run on the caller's buffers.
    pub unsafe fn launch_tuned<K: KernelFn>(
        &self,
        module: &Module,
        launches: &TunedLaunches,
        candidates: &[Entry<K>],
        original: LaunchConfig,
        options: &ClusterOptions,
        args: K::Args<'_, Cuda>,
    ) -> Result<Tuned, Error> {
        if candidates.is_empty() {
            return Err(crate::tuner::TunerError::NoCandidates.into());
        }
        let stream = launch_stream(self, options);
        let recorded = Recorded::new::<K>(stream, args);
        let (grid, block, scalars) = problem_parts(&original, &recorded);
        let checksum = candidates_checksum(candidates);
        let mut h = Fnv::default();
        (
            K::NAME,
            self.properties().ordinal,
            grid,
            block,
            &scalars,
            checksum,
            module.ptx_hash(),
        )
            .hash(&mut h);
        let hash = h.finish();
        let index_of = |name: &str| candidates.iter().position(|e| e.name() == name);
        // SAFETY (every launch below): the caller's promise; the recorded
        // arguments are theirs, borrowed for this call.
        let launch = |entry: Entry<K>| unsafe {
            self.launch_recorded(module, entry, original, options, &recorded, None)
        };
        let key = || self.tune_key(K::NAME, grid, block, &scalars, checksum, module.ptx_hash());
        let policy = &launches.policy;

        // A stream being captured into a graph cannot wait for the GPU:
        // there a trial's launch runs the choice untimed (the trial goes on
        // at the next launch outside a capture), and a measurement is
        // refused before anything is captured.
        let next = match launches.next(hash) {
            Next::Trial {
                hit,
                baseline,
                claim,
            } => match capturing(stream) {
                Ok(false) => Next::Trial {
                    hit,
                    baseline,
                    claim,
                },
                capturing => {
                    drop(claim);
                    capturing?;
                    Next::Run(hit)
                }
            },
            next => next,
        };
        let tuned = match next {
            Next::Save(mut hit, claim) => {
                launches.tuner().record_choice(&key(), hit.choice.clone())?;
                hit.unsaved = false;
                claim.publish(hit.clone());
                Tuned {
                    schedule: hit.schedule,
                    measured: false,
                    trial: false,
                    choice: hit.choice,
                }
            }
            Next::Run(hit) => {
                launch(candidates[index_of(hit.schedule).unwrap_or(0)])?;
                return Ok(Tuned {
                    schedule: hit.schedule,
                    measured: false,
                    trial: false,
                    choice: hit.choice,
                });
            }
            Next::Trial {
                mut hit,
                baseline,
                claim,
            } => {
                let entry = match baseline {
                    true => candidates[0],
                    false => candidates[index_of(hit.schedule).unwrap_or(0)],
                };
                let timer = GpuTimer::new(stream)?;
                timer.start()?;
                launch(entry)?;
                timer.stop()?;
                let ms = timer.elapsed_ms()?;
                let trial = hit.trial.get_or_insert_with(Trial::default);
                if let Some(kept) = trial.add(baseline, ms, policy.trial, policy.min_margin) {
                    let [b, s] = trial.samples.each_ref().map(|side| median(side));
                    if !kept {
                        hit.schedule = candidates[0].name();
                    }
                    hit.choice = Choice {
                        schedule: hit.schedule.to_string(),
                        baseline_ms: b,
                        schedule_ms: if kept { s } else { b },
                    };
                    hit.trial = None;
                    hit.launches = 0;
                    hit.unsaved = true;
                }
                let choice = hit.choice.clone();
                claim.publish(hit);
                return Ok(Tuned {
                    schedule: entry.name(),
                    measured: false,
                    trial: true,
                    choice,
                });
            }
            Next::Measure(claim) => {
                // Another process's choice on file, or measuring all
                // candidates.
                let key = key();
                let saved = launches.tuner().choice(&key).cloned();
                let (choice, measured) = match saved {
                    Some(saved) if index_of(&saved.schedule).is_some() => (saved, false),
                    _ if capturing(stream)? => {
                        let kernel = K::NAME.to_string();
                        return Err(crate::tuner::TunerError::Capturing { kernel }.into());
                    }
                    _ => {
                        // SAFETY: as above; candidates write into scratch.
                        let choice = unsafe {
                            self.measure(module, candidates, original, options, &recorded, policy)?
                        };
                        launches.tuner().record_choice(&key, choice.clone())?;
                        (choice, true)
                    }
                };
                let hit = Hit::chosen(candidates.iter().map(|e| e.name()), &choice, policy);
                claim.publish(hit.clone());
                Tuned {
                    schedule: hit.schedule,
                    measured,
                    trial: false,
                    choice,
                }
            }
        };
        launch(candidates[index_of(tuned.schedule).unwrap_or(0)])?;
        Ok(tuned)
    }

    /// The key's strings (made only when a key is measured, read from the
    /// file or its trial ends).
    fn tune_key(
        &self,
        kernel: &str,
        grid: [u64; 3],
        block: [u32; 3],
        scalars: &[u64],
        checksum: u64,
        ptx: u64,
    ) -> TuneKey {
        let p = self.properties();
        let driver = self.driver_version().unwrap_or(0);
        let device = format!(
            "{} | {} SMs | {} MiB L2 | driver {driver}",
            p.name,
            p.sm_count,
            p.l2_cache_bytes >> 20
        );
        let problem = format!(
            "grid <= {grid:?} | block {block:?} | integers <= {scalars:?} | candidates {checksum:016x} | ptx {ptx:016x}"
        );
        TuneKey::new(kernel, &device, &problem)
    }

    /// Times `candidates` (the baseline first) on scratch copies of the
    /// outputs and decides with the policy's margin.
    unsafe fn measure<K: KernelFn>(
        &self,
        module: &Module,
        candidates: &[Entry<K>],
        original: LaunchConfig,
        options: &ClusterOptions,
        recorded: &Recorded,
        policy: &TunePolicy,
    ) -> Result<Choice, Error> {
        let stream = launch_stream(self, options);
        let outputs: Vec<(u64, usize)> = recorded
            .params
            .iter()
            .filter_map(|p| match p {
                Param::Buffer {
                    address,
                    bytes,
                    output: true,
                } => Some((*address, *bytes)),
                _ => None,
            })
            .collect();
        let mut scratch: Vec<CudaSlice<u8>> = outputs
            .iter()
            .map(|&(_, bytes)| {
                stream
                    .alloc_zeros::<u8>(bytes.max(1))
                    .map_err(Error::driver("cuMemAllocAsync(tuning scratch)"))
            })
            .collect::<Result<_, _>>()?;
        let addresses: Vec<u64> = scratch
            .iter_mut()
            .map(|s| {
                use cudarc::driver::DevicePtr;
                s.device_ptr(stream).0
            })
            .collect();
        let refresh = || -> Result<(), Error> {
            for (&(from, bytes), &to) in outputs.iter().zip(&addresses) {
                // SAFETY: both ranges hold `bytes` bytes on this context.
                unsafe {
                    cudarc::driver::result::memcpy_dtod_async(to, from, bytes, stream.cu_stream())
                }
                .map_err(|source| Error::Driver {
                    context: "cuMemcpyDtoDAsync(tuning scratch)",
                    source,
                })?;
            }
            Ok(())
        };
        let timer = GpuTimer::new(stream)?;
        let run = |entry: Entry<K>| -> Result<f32, Error> {
            refresh()?;
            timer.start()?;
            // SAFETY: the caller's promise; the scratch copies hold as many
            // bytes as the outputs they stand for.
            unsafe {
                self.launch_recorded(module, entry, original, options, recorded, Some(&addresses))?
            };
            timer.stop()?;
            timer.elapsed_ms()
        };
        for &entry in candidates {
            run(entry)?;
        }
        let rounds = policy.rounds.max(1);
        let mut samples = vec![Vec::with_capacity(rounds); candidates.len()];
        for _ in 0..rounds {
            for (entry, samples) in candidates.iter().zip(&mut samples) {
                samples.push(run(*entry)?);
            }
        }
        let winner = decide_over_noise(&samples, policy.min_margin);
        Ok(Choice {
            schedule: candidates[winner].name().to_string(),
            baseline_ms: median(&samples[0]),
            schedule_ms: median(&samples[winner]),
        })
    }

    /// The CUDA driver's version (e.g. 13000 for 13.0).
    pub fn driver_version(&self) -> Result<i32, Error> {
        let mut version = 0;
        // SAFETY: writes one int; the driver is loaded (this context exists).
        unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut version) }
            .result()
            .map_err(|source| Error::Driver {
                context: "cuDriverGetVersion",
                source,
            })?;
        Ok(version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measures(next: Next) -> bool {
        matches!(next, Next::Measure(_))
    }

    /// The claim of a launch that must measure.
    fn to_measure(next: Next) -> Claim {
        match next {
            Next::Measure(claim) => claim,
            _ => panic!("not a measurement"),
        }
    }

    fn plain(next: Next) -> bool {
        matches!(next, Next::Run(_))
    }

    /// Launches whose tuner file is never written: these tests publish
    /// and claim in memory only.
    fn launches(tag: &str, policy: TunePolicy) -> TunedLaunches {
        let file = std::env::temp_dir().join(format!("tuned-{tag}-{}.json", std::process::id()));
        TunedLaunches::new(Tuner::open(file).unwrap(), policy)
    }

    fn hit(schedule: &'static str, baseline_ms: f32, schedule_ms: f32) -> Hit {
        Hit {
            schedule,
            choice: Choice {
                schedule: schedule.into(),
                baseline_ms,
                schedule_ms,
            },
            launches: 0,
            trial: None,
            unsaved: false,
        }
    }

    #[test]
    fn sizes_within_a_factor_of_two_share_a_bucket() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(1), 1);
        assert_eq!(bucket(3000), 4096);
        assert_eq!(bucket(4096), 4096);
        assert_eq!(bucket(4097), 8192);
        assert_eq!(bucket(u64::MAX), u64::MAX);
    }

    /// One key measured once, whatever the threads: the others wait for its
    /// choice and then hit.
    #[test]
    fn concurrent_launches_of_one_key_measure_once() {
        let launches = launches("once", TunePolicy::default());
        let measured = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| {
                    if let Next::Measure(claim) = launches.next(7) {
                        measured.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        std::thread::sleep(std::time::Duration::from_millis(20));
                        claim.publish(hit("k_fast", 2.0, 1.0));
                    }
                });
            }
        });
        assert_eq!(measured.into_inner(), 1);
    }

    /// A failed measurement releases its claim: the next launch measures.
    #[test]
    fn a_failed_measurement_does_not_block_the_key() {
        let launches = launches("fail", TunePolicy::default());
        let failed = launches.next(9);
        assert!(matches!(failed, Next::Measure(_)));
        assert!(launches.state().measuring.contains(&9), "claimed");
        drop(failed);
        assert!(measures(launches.next(9)), "claimable again");
    }

    /// A winner is tried again after `revalidate_every` launches; a
    /// baseline choice never is.
    #[test]
    fn winners_are_revalidated_on_schedule() {
        let policy = TunePolicy {
            revalidate_every: 3,
            ..TunePolicy::default()
        };
        let launches = launches("reval", policy);
        to_measure(launches.next(1)).publish(hit("fast", 2.0, 1.0));
        to_measure(launches.next(2)).publish(hit("base", 2.0, 2.0));
        let launched: Vec<bool> = (0..3).map(|_| plain(launches.next(1))).collect();
        assert_eq!(
            launched,
            [true, true, false],
            "the third launch starts a trial"
        );
        launches.publish(1, Some(hit("fast", 2.0, 1.0)));
        assert!(plain(launches.next(1)), "and the count starts again");
        assert!(
            (0..10).all(|_| plain(launches.next(2))),
            "baselines are not revalidated"
        );
    }

    /// A trial alternates the baseline and the winner, claiming the key for
    /// each launch, until both have `trial` launches.
    #[test]
    fn a_trial_alternates_and_claims_each_launch() {
        let launches = launches("trial", TunePolicy::default());
        let mut h = hit("fast", 2.0, 1.0);
        h.trial = Some(Trial::default());
        to_measure(launches.next(4)).publish(h);
        let mut order = Vec::new();
        for _ in 0..4 {
            let Next::Trial {
                mut hit,
                baseline,
                claim,
            } = launches.next(4)
            else {
                panic!("not a trial launch");
            };
            assert!(launches.state().measuring.contains(&4), "claimed");
            order.push(baseline);
            let trial = hit.trial.as_mut().unwrap();
            assert_eq!(trial.add(baseline, 1.0, 5, 0.01), None);
            claim.publish(hit);
        }
        assert_eq!(order, [true, false, true, false]);
    }

    /// A trial's verdict is saved by the launch after the one that reached
    /// it, under a claim, before that launch runs: a file that cannot be
    /// written fails a launch that has not touched the caller's buffers.
    #[test]
    fn a_verdict_is_saved_before_the_next_launch() {
        let launches = launches("save", TunePolicy::default());
        let mut h = hit("base", 2.0, 2.0);
        h.unsaved = true;
        to_measure(launches.next(6)).publish(h);
        let Next::Save(mut saving, claim) = launches.next(6) else {
            panic!("not a save");
        };
        assert!(launches.state().measuring.contains(&6), "claimed");
        saving.unsaved = false;
        claim.publish(saving);
        assert!(plain(launches.next(6)), "saved once");
    }

    /// A choice's trial starts with it unless it is the baseline, and with
    /// `trial: 0` there are no trials, so no revalidation either.
    #[test]
    fn trials_start_with_a_winner_unless_turned_off() {
        let names = ["base", "fast"];
        let choice = |schedule: &str| Choice {
            schedule: schedule.into(),
            baseline_ms: 2.0,
            schedule_ms: 1.0,
        };
        let on = TunePolicy::default();
        let off = TunePolicy {
            trial: 0,
            revalidate_every: 3,
            ..TunePolicy::default()
        };
        assert!(Hit::chosen(names, &choice("fast"), &on).trial.is_some());
        assert!(Hit::chosen(names, &choice("base"), &on).trial.is_none());
        assert!(Hit::chosen(names, &choice("fast"), &off).trial.is_none());
        let unknown = Hit::chosen(names, &choice("gone"), &on);
        assert_eq!((unknown.schedule, unknown.trial), ("base", None));
        let launches = launches("off", off.clone());
        to_measure(launches.next(3)).publish(Hit::chosen(names, &choice("fast"), &off));
        assert!(
            (0..10).all(|_| plain(launches.next(3))),
            "no trial, however many launches"
        );
    }

    /// The trial's verdict: a winner keeps its place only while it beats
    /// the baseline by the margin on the caller's launches.
    #[test]
    fn a_trial_keeps_a_winner_only_if_it_still_wins() {
        let verdict = |baseline: f32, schedule: f32| {
            let mut trial = Trial::default();
            let mut last = None;
            for i in 0..3 {
                // A little noise, the same on both sides.
                let jitter = 1.0 + 0.001 * i as f32;
                assert_eq!(last, None, "a verdict before the last launch");
                last = trial.add(true, baseline * jitter, 3, 0.01);
                assert_eq!(last, None, "a verdict before the schedule's launch");
                last = trial.add(false, schedule * jitter, 3, 0.01);
            }
            last.expect("a verdict after both sides' last launch")
        };
        assert!(verdict(2.0, 1.0), "twice as fast");
        assert!(!verdict(2.0, 2.1), "slower on the caller's buffers");
        assert!(!verdict(2.0, 1.99), "inside the 1% margin");
    }

    /// What a hit costs before its launch: hashing the key's parts and the
    /// lookup (the launch itself is the driver's).
    #[test]
    fn tuned_hit_cost() {
        let launches = launches(
            "cost",
            TunePolicy {
                revalidate_every: 0,
                ..TunePolicy::default()
            },
        );
        to_measure(launches.next(5)).publish(hit("s", 1.0, 1.0));
        let runs = 100_000u32;
        let started = std::time::Instant::now();
        for i in 0..runs {
            let mut h = Fnv::default();
            (
                "sgemm_tiled",
                0usize,
                [256u64, 256, 1],
                [32u32, 32, 1],
                [8192u64],
                0x1234u64,
                std::hint::black_box(u64::from(i)),
            )
                .hash(&mut h);
            let _ = h.finish();
            assert!(plain(launches.next(5)));
        }
        let each = started.elapsed() / runs;
        eprintln!("a tuned launch's hit costs {each:?} before the launch (hash + lookup)");
    }
}
