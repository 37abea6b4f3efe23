//! Choosing a schedule by measuring it, once per (kernel, device, problem).
//!
//! The tuner times the candidates (the baseline first) interleaved, one
//! launch of each per round, and keeps a schedule only if it beats the
//! baseline in most rounds *and* its median by more than the noise (the
//! larger of 1% and the baseline's interquartile spread: [`noise_margin`]),
//! so neither a lucky outlier nor a win inside the noise picks a schedule:
//! when in doubt it keeps the baseline.
//!
//! # The cache file
//!
//! Choices are kept in a JSON file (format version [`FORMAT_VERSION`]) and
//! reused afterwards. Any number of [`Tuner`]s, in one process or many, may
//! share a file, and none loses another's choices:
//!
//! - A write takes an exclusive lock on a file beside the cache (the cache's
//!   name plus `.lock`; it stays there, as deleting a lock file races with
//!   the next writer), reads what is on disk, applies this tuner's own changes
//!   over it (the latest write of a key wins, every other key is kept),
//!   writes the result to a temporary file of its own in the same directory,
//!   flushes it to disk and renames it over the cache. A crash leaves either
//!   the old file or the new one, never half of one (at worst a stray
//!   `.NAME.PID-N.tmp` beside it).
//! - Reads take no lock: the rename makes every version whole.
//! - Before measuring a key it has no choice for, a tuner reads the file
//!   again, so a choice another process made meanwhile is reused.
//!
//! A cache file that cannot be parsed is never overwritten and never
//! panics: [`Tuner::open`] (and any write that finds it) returns
//! [`TunerError::Corrupt`] naming the line, and the file stays as it was for
//! the user to look at. [`Tuner::open_or_set_aside`] instead renames it
//! aside (to `NAME.corrupt-SECONDS-PID`) and starts empty, reporting the move
//! in its return value. A file of another format version is never touched
//! ([`TunerError::UnsupportedVersion`]). An empty file reads as no choices.
//!
//! ```
//! use clustered_host::tuner::{Tuner, TuneKey, TunerError};
//! let path = std::env::temp_dir().join(format!("tuner-doc-{}.json", std::process::id()));
//! let mut tuner = Tuner::open(&path).unwrap();
//! let key = TuneKey::new("sgemm_tiled", "NVIDIA H100", "n = 4096");
//! // Milliseconds of each candidate's launches, in rounds (baseline first).
//! let mut fake = [20.0f32, 18.0, 25.0].into_iter().cycle();
//! let choice = tuner
//!     .tune(&key, &["sgemm_tiled", "sgemm_tiled_raster", "sgemm_tiled_agents"], 10, |_| {
//!         Ok::<f32, TunerError>(fake.next().unwrap_or(f32::NAN))
//!     })
//!     .unwrap();
//! assert_eq!(choice.schedule, "sgemm_tiled_raster");
//! assert_eq!(tuner.choice(&key).unwrap().schedule, "sgemm_tiled_raster"); // saved
//! # std::fs::remove_file(&path).ok();
//! # std::fs::remove_file(path.with_extension("json.lock")).ok();
//! ```

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The version of the cache file's format this crate reads and writes.
pub const FORMAT_VERSION: u32 = 1;

/// The `format` field of every cache file, so that another JSON file given
/// by mistake is recognised as not a cache.
const FORMAT_NAME: &str = "clustered-tuner";

/// Which schedule a launch uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SchedulePolicy {
    /// This schedule (an entry point's name), always.
    Fixed(String),
    /// The tuner's choice for the problem, measured on first use.
    Tuned,
}

/// What a choice is for. Any strings, tabs, newlines and all: the file
/// keeps them exactly.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TuneKey {
    /// The baseline kernel's name.
    pub kernel: String,
    /// The device's name.
    pub device: String,
    /// The problem size, in words (e.g. "n = 4096").
    pub problem: String,
}

impl TuneKey {
    /// A key from its three parts.
    pub fn new(kernel: &str, device: &str, problem: &str) -> Self {
        TuneKey {
            kernel: kernel.into(),
            device: device.into(),
            problem: problem.into(),
        }
    }
}

/// The schedule chosen for a key, with the medians that chose it.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    /// The entry point to launch (the baseline's name when nothing won).
    pub schedule: String,
    /// The baseline's median, milliseconds.
    pub baseline_ms: f32,
    /// The chosen schedule's median, milliseconds.
    pub schedule_ms: f32,
}

impl Choice {
    /// Baseline time over chosen time (1.0 when the baseline was kept).
    pub fn speedup(&self) -> f32 {
        self.baseline_ms / self.schedule_ms
    }
}

/// Why the tuner could not decide or use its file.
#[non_exhaustive]
#[derive(Debug)]
#[allow(missing_docs)] // the fields hold what their names say
pub enum TunerError {
    /// The file (or its lock, directory or temporary) could not be read or
    /// written.
    Io { path: PathBuf, source: io::Error },
    /// The file is not a tuner cache this crate can parse. It was left as it
    /// was (or set aside by [`Tuner::open_or_set_aside`]).
    Corrupt {
        path: PathBuf,
        /// 1-based; 0 when the problem is not at one place.
        line: usize,
        column: usize,
        reason: String,
    },
    /// The file is a tuner cache of another format version (from another
    /// version of this crate); it was left as it was.
    UnsupportedVersion {
        path: PathBuf,
        found: u64,
        supported: u32,
    },
    /// A fixed policy named a schedule that is not a candidate.
    UnknownSchedule {
        schedule: String,
        candidates: Vec<String>,
    },
    /// There is nothing to choose from (not even a baseline).
    NoCandidates,
    /// The first launch of a key measures its candidates, which waits for
    /// the GPU, and its stream was being captured into a CUDA graph, where
    /// nothing may wait; nothing was launched and the capture goes on.
    Capturing { kernel: String },
    /// The number of sample series differs from the number of candidates.
    SampleCount { candidates: usize, series: usize },
    /// A candidate has no samples.
    NoSamples { candidate: String },
    /// A candidate has a different number of rounds than the baseline, so
    /// rounds cannot be compared one by one.
    RoundCount {
        candidate: String,
        baseline_rounds: usize,
        rounds: usize,
    },
    /// A time that is NaN or negative, or an infinite time of the baseline.
    InvalidTiming {
        candidate: String,
        round: usize,
        value: f32,
    },
}

impl fmt::Display for TunerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TunerError::Io { path, source } => {
                write!(f, "tuner cache {}: {source}", path.display())
            }
            TunerError::Corrupt {
                path,
                line,
                column,
                reason,
            } => {
                write!(f, "tuner cache {} is not a tuner cache", path.display())?;
                if *line > 0 {
                    write!(f, " (line {line}, column {column})")?;
                }
                write!(
                    f,
                    ": {reason}. It was left untouched: delete it or move it aside (it only \
                     caches measurements), or open it with `Tuner::open_or_set_aside`"
                )
            }
            TunerError::UnsupportedVersion {
                path,
                found,
                supported,
            } => write!(
                f,
                "tuner cache {} has format version {found}, this version of clustered reads \
                 {supported}: use the clustered that wrote it, or give this one another file \
                 (CLUSTERED_TUNER_CACHE or the program's option); the file was left untouched",
                path.display()
            ),
            TunerError::UnknownSchedule {
                schedule,
                candidates,
            } => write!(
                f,
                "schedule `{schedule}` is not one of this kernel's: {}",
                candidates.join(", ")
            ),
            TunerError::NoCandidates => write!(
                f,
                "nothing to tune: the candidate list is empty; pass the baseline's name first, \
                 then its schedules"
            ),
            TunerError::Capturing { kernel } => write!(
                f,
                "`{kernel}`'s tuned launch must measure its candidates first, which waits for \
                 the GPU, and its stream is being captured into a graph: launch it once before \
                 capturing (later launches of the same problem are plain launches)"
            ),
            TunerError::SampleCount { candidates, series } => write!(
                f,
                "{series} sample series for {candidates} candidates: pass one series per \
                 candidate, in the candidates' order"
            ),
            TunerError::NoSamples { candidate } => write!(
                f,
                "candidate `{candidate}` has no samples: measure at least one round"
            ),
            TunerError::RoundCount {
                candidate,
                baseline_rounds,
                rounds,
            } => write!(
                f,
                "candidate `{candidate}` has {rounds} samples but the baseline has \
                 {baseline_rounds}: rounds are compared one by one, so every candidate needs \
                 one sample per round"
            ),
            TunerError::InvalidTiming {
                candidate,
                round,
                value,
            } => write!(
                f,
                "candidate `{candidate}` took {value} ms in round {round}: a time must be a \
                 number of milliseconds, at least 0 (infinity marks a schedule that must not be \
                 chosen, and the baseline cannot be one)"
            ),
        }
    }
}

impl std::error::Error for TunerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TunerError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// A corrupt cache file that [`Tuner::open_or_set_aside`] moved out of the
/// way: say so to the user.
#[derive(Debug)]
pub struct SetAside {
    /// Where it now is.
    pub moved_to: PathBuf,
    /// What was wrong with it ([`TunerError::Corrupt`]).
    pub problem: TunerError,
}

/// The file as written: a format name and version, then one record per key.
#[derive(Serialize, Deserialize)]
struct CacheFile {
    format: String,
    version: u64,
    choices: Vec<Entry>,
}

/// Read first, so that a file of another version is told apart from a
/// corrupt one before its records are parsed.
#[derive(Deserialize)]
struct Header {
    format: String,
    version: u64,
}

#[derive(Serialize, Deserialize)]
struct Entry {
    kernel: String,
    device: String,
    problem: String,
    schedule: String,
    baseline_ms: f32,
    schedule_ms: f32,
}

/// Choices on disk, shared safely with other tuners and processes (see the
/// [module's documentation](self)).
#[derive(Debug)]
pub struct Tuner {
    path: PathBuf,
    /// What was on disk at the last read or write, with `pending` applied.
    choices: BTreeMap<TuneKey, Choice>,
    /// This tuner's changes not yet on disk (`None`: forget the key),
    /// applied over what is on disk at the next write.
    pending: BTreeMap<TuneKey, Option<Choice>>,
}

impl Tuner {
    /// `$CLUSTERED_TUNER_CACHE`, else `$XDG_CACHE_HOME/clustered/tuner.json`,
    /// else `~/.cache/clustered/tuner.json`, else `clustered-tuner.json`.
    pub fn default_path() -> PathBuf {
        if let Some(path) = std::env::var_os("CLUSTERED_TUNER_CACHE") {
            return path.into();
        }
        let cache = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")));
        match cache {
            Some(dir) => dir.join("clustered").join("tuner.json"),
            None => PathBuf::from("clustered-tuner.json"),
        }
    }

    /// Reads the choices at `path` (none if it does not exist yet). A file
    /// that cannot be parsed is an error ([`TunerError::Corrupt`]) and is
    /// left as it is.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, TunerError> {
        let path = path.as_ref().to_path_buf();
        let choices = read_cache(&path)?;
        Ok(Tuner {
            path,
            choices,
            pending: BTreeMap::new(),
        })
    }

    /// Like [`Tuner::open`], but a corrupt file is renamed aside (to
    /// `NAME.corrupt-SECONDS-PID` in the same directory) and the tuner
    /// starts empty; the move is returned so the caller can tell the user.
    /// A file of another format version is still an error, never moved.
    pub fn open_or_set_aside(
        path: impl AsRef<Path>,
    ) -> Result<(Self, Option<SetAside>), TunerError> {
        let path = path.as_ref();
        match Tuner::open(path) {
            Err(TunerError::Corrupt { .. }) => {}
            other => return other.map(|tuner| (tuner, None)),
        }
        // Decided again under the lock: another process may have replaced
        // the file with a good one meanwhile, which must not be moved.
        let _lock = lock(path)?;
        match read_cache(path) {
            Err(problem @ TunerError::Corrupt { .. }) => {
                let moved_to = set_aside(path)?;
                let tuner = Tuner {
                    path: path.to_path_buf(),
                    choices: BTreeMap::new(),
                    pending: BTreeMap::new(),
                };
                Ok((tuner, Some(SetAside { moved_to, problem })))
            }
            other => other.map(|choices| {
                let tuner = Tuner {
                    path: path.to_path_buf(),
                    choices,
                    pending: BTreeMap::new(),
                };
                (tuner, None)
            }),
        }
    }

    /// The cache file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The saved choice for `key`, if any (as of the last read or write;
    /// see [`Tuner::refresh`]).
    pub fn choice(&self, key: &TuneKey) -> Option<&Choice> {
        self.choices.get(key)
    }

    /// How many choices are known.
    pub fn len(&self) -> usize {
        self.choices.len()
    }

    /// Whether no choice is known.
    pub fn is_empty(&self) -> bool {
        self.choices.is_empty()
    }

    /// Every known choice, in key order.
    pub fn choices(&self) -> impl Iterator<Item = (&TuneKey, &Choice)> {
        self.choices.iter()
    }

    /// Reads the file again, to see choices other tuners saved since (this
    /// tuner's unsaved changes stay on top).
    pub fn refresh(&mut self) -> Result<(), TunerError> {
        let mut choices = read_cache(&self.path)?;
        apply(&mut choices, &self.pending);
        self.choices = choices;
        Ok(())
    }

    /// Forgets a choice (it is measured again on next use), here and in the
    /// file.
    pub fn forget(&mut self, key: &TuneKey) -> Result<(), TunerError> {
        self.choices.remove(key);
        self.pending.insert(key.clone(), None);
        self.save()
    }

    /// The choice for `key` among `candidates` (the baseline first): the
    /// saved one if it is still a candidate (the file is read again before
    /// measuring, in case another tuner chose meanwhile); else measured with
    /// `rounds` (at least 1) interleaved rounds of `time_one(candidate
    /// index)` (milliseconds of one launch), decided by [`decide`], and
    /// saved. Errors of `time_one` are returned as they are.
    pub fn tune<E: From<TunerError>>(
        &mut self,
        key: &TuneKey,
        candidates: &[&str],
        rounds: usize,
        mut time_one: impl FnMut(usize) -> Result<f32, E>,
    ) -> Result<Choice, E> {
        if candidates.is_empty() {
            return Err(TunerError::NoCandidates.into());
        }
        if let Some(saved) = self.saved_candidate(key, candidates) {
            return Ok(saved);
        }
        self.refresh()?;
        if let Some(saved) = self.saved_candidate(key, candidates) {
            return Ok(saved);
        }
        let rounds = rounds.max(1);
        let mut samples = vec![Vec::with_capacity(rounds); candidates.len()];
        for _ in 0..rounds {
            for (index, samples) in samples.iter_mut().enumerate() {
                samples.push(time_one(index)?);
            }
        }
        Ok(self.record(key, candidates, &samples)?)
    }

    fn saved_candidate(&self, key: &TuneKey, candidates: &[&str]) -> Option<Choice> {
        self.choices
            .get(key)
            .filter(|saved| candidates.contains(&saved.schedule.as_str()))
            .cloned()
    }

    /// The entry point to launch under `policy`: a fixed schedule (which
    /// must be one of `candidates`), or the tuned choice ([`Tuner::tune`]).
    pub fn select<E: From<TunerError>>(
        &mut self,
        policy: &SchedulePolicy,
        key: &TuneKey,
        candidates: &[&str],
        rounds: usize,
        time_one: impl FnMut(usize) -> Result<f32, E>,
    ) -> Result<String, E> {
        match policy {
            SchedulePolicy::Fixed(schedule) if candidates.contains(&schedule.as_str()) => {
                Ok(schedule.clone())
            }
            SchedulePolicy::Fixed(schedule) => Err(TunerError::UnknownSchedule {
                schedule: schedule.clone(),
                candidates: candidates.iter().map(|c| c.to_string()).collect(),
            }
            .into()),
            SchedulePolicy::Tuned => Ok(self.tune(key, candidates, rounds, time_one)?.schedule),
        }
    }

    /// Saves `choice` for `key` as measured elsewhere (the tuned launch,
    /// which decides with a noise margin itself).
    pub fn record_choice(&mut self, key: &TuneKey, choice: Choice) -> Result<(), TunerError> {
        self.choices.insert(key.clone(), choice.clone());
        self.pending.insert(key.clone(), Some(choice));
        self.save()
    }

    /// Decides from samples already measured (by [`decide_over_noise`],
    /// the margin the baseline's [`noise_margin`]) and saves the
    /// choice.
    /// `samples[i]` are candidate `i`'s milliseconds, one per round, the
    /// baseline first; every candidate needs the same number of rounds (at
    /// least one). A time is a number of milliseconds, at least 0, or
    /// infinity for a schedule that must not be chosen (its output was wrong,
    /// say); the baseline's times must be finite.
    pub fn record(
        &mut self,
        key: &TuneKey,
        candidates: &[&str],
        samples: &[Vec<f32>],
    ) -> Result<Choice, TunerError> {
        check_samples(candidates, samples)?;
        let winner = decide_over_noise(samples, 0.0);
        // Both medians are finite: the baseline's times are, and a winner's
        // median is below the baseline's. So the file can hold them (JSON
        // has no infinity).
        let choice = Choice {
            schedule: candidates[winner].to_string(),
            baseline_ms: median(&samples[0]),
            schedule_ms: median(&samples[winner]),
        };
        self.choices.insert(key.clone(), choice.clone());
        self.pending.insert(key.clone(), Some(choice.clone()));
        self.save()?;
        Ok(choice)
    }

    /// Applies this tuner's changes over what is on disk now, under the
    /// lock, and replaces the file whole. On an error the changes stay
    /// pending (and in memory) for the next write.
    fn save(&mut self) -> Result<(), TunerError> {
        if let Some(dir) = directory(&self.path) {
            std::fs::create_dir_all(dir).map_err(io_error(dir))?;
        }
        let _lock = lock(&self.path)?;
        let mut merged = read_cache(&self.path)?;
        apply(&mut merged, &self.pending);
        write_atomically(&self.path, &merged)?;
        self.pending.clear();
        self.choices = merged;
        Ok(())
    }
}

fn check_samples(candidates: &[&str], samples: &[Vec<f32>]) -> Result<(), TunerError> {
    if candidates.is_empty() {
        return Err(TunerError::NoCandidates);
    }
    if samples.len() != candidates.len() {
        return Err(TunerError::SampleCount {
            candidates: candidates.len(),
            series: samples.len(),
        });
    }
    let baseline_rounds = samples[0].len();
    for (index, (name, series)) in candidates.iter().zip(samples).enumerate() {
        let candidate = || name.to_string();
        if series.is_empty() {
            return Err(TunerError::NoSamples {
                candidate: candidate(),
            });
        }
        if series.len() != baseline_rounds {
            return Err(TunerError::RoundCount {
                candidate: candidate(),
                baseline_rounds,
                rounds: series.len(),
            });
        }
        let invalid = |t: f32| t.is_nan() || t < 0.0 || (index == 0 && t.is_infinite());
        if let Some((round, &value)) = series.iter().enumerate().find(|(_, &t)| invalid(t)) {
            return Err(TunerError::InvalidTiming {
                candidate: candidate(),
                round,
                value,
            });
        }
    }
    Ok(())
}

fn apply(choices: &mut BTreeMap<TuneKey, Choice>, pending: &BTreeMap<TuneKey, Option<Choice>>) {
    for (key, change) in pending {
        match change {
            Some(choice) => choices.insert(key.clone(), choice.clone()),
            None => choices.remove(key),
        };
    }
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> TunerError + '_ {
    move |source| TunerError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The directory `path` is in, if it names one (not for a bare file name).
fn directory(path: &Path) -> Option<&Path> {
    path.parent().filter(|d| !d.as_os_str().is_empty())
}

/// `path` with `suffix` appended to its file name.
fn beside(path: &Path, prefix: &str, suffix: &str) -> PathBuf {
    let mut name = OsString::from(prefix);
    name.push(path.file_name().unwrap_or(path.as_os_str()));
    name.push(suffix);
    path.with_file_name(name)
}

/// The exclusive lock of `path`'s writers, held until the file is dropped.
/// It is a file of its own: the cache itself is replaced by renaming, and a
/// lock on a replaced file would exclude no one.
fn lock(path: &Path) -> Result<File, TunerError> {
    let lock_path = beside(path, "", ".lock");
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(io_error(&lock_path))?;
    // Blocks until other writers (tuners of this or another process) are
    // done; the lock belongs to this open file, so it also orders tuners
    // within one process.
    file.lock().map_err(io_error(&lock_path))?;
    Ok(file)
}

/// The choices in the file at `path`; none if it does not exist or is empty.
fn read_cache(path: &Path) -> Result<BTreeMap<TuneKey, Choice>, TunerError> {
    let text = match std::fs::read(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(source) => return Err(io_error(path)(source)),
    };
    if text.iter().all(u8::is_ascii_whitespace) {
        return Ok(BTreeMap::new());
    }
    let corrupt = |e: serde_json::Error| TunerError::Corrupt {
        path: path.to_path_buf(),
        line: e.line(),
        column: e.column(),
        reason: e.to_string(),
    };
    let header: Header = serde_json::from_slice(&text).map_err(corrupt)?;
    if header.format != FORMAT_NAME {
        return Err(TunerError::Corrupt {
            path: path.to_path_buf(),
            line: 0,
            column: 0,
            reason: format!(
                "its format is `{}`, not `{FORMAT_NAME}`",
                header.format.escape_debug()
            ),
        });
    }
    if header.version != u64::from(FORMAT_VERSION) {
        return Err(TunerError::UnsupportedVersion {
            path: path.to_path_buf(),
            found: header.version,
            supported: FORMAT_VERSION,
        });
    }
    let file: CacheFile = serde_json::from_slice(&text).map_err(corrupt)?;
    let mut choices = BTreeMap::new();
    for (index, e) in file.choices.into_iter().enumerate() {
        // A hand-edited time out of `f32`'s range reads as infinity, which
        // could not be written back.
        for ms in [e.baseline_ms, e.schedule_ms] {
            if !(ms.is_finite() && ms >= 0.0) {
                return Err(TunerError::Corrupt {
                    path: path.to_path_buf(),
                    line: 0,
                    column: 0,
                    reason: format!("choice {index} has a time of {ms} ms"),
                });
            }
        }
        let key = TuneKey {
            kernel: e.kernel,
            device: e.device,
            problem: e.problem,
        };
        let choice = Choice {
            schedule: e.schedule,
            baseline_ms: e.baseline_ms,
            schedule_ms: e.schedule_ms,
        };
        choices.insert(key, choice);
    }
    Ok(choices)
}

/// Writes `choices` to a new temporary file beside `path`, flushes it to
/// disk and renames it over `path`: readers see the old file or the new one,
/// whole. The caller holds the lock.
fn write_atomically(path: &Path, choices: &BTreeMap<TuneKey, Choice>) -> Result<(), TunerError> {
    let file = CacheFile {
        format: FORMAT_NAME.into(),
        version: FORMAT_VERSION.into(),
        choices: choices
            .iter()
            .map(|(key, choice)| Entry {
                kernel: key.kernel.clone(),
                device: key.device.clone(),
                problem: key.problem.clone(),
                schedule: choice.schedule.clone(),
                baseline_ms: choice.baseline_ms,
                schedule_ms: choice.schedule_ms,
            })
            .collect(),
    };
    let mut text = serde_json::to_vec_pretty(&file).map_err(|e| TunerError::Io {
        path: path.to_path_buf(),
        source: e.into(),
    })?;
    text.push(b'\n');
    let (temporary, mut out) = create_temporary(path)?;
    let written = out
        .write_all(&text)
        .and_then(|()| out.sync_all())
        .and_then(|()| {
            drop(out);
            std::fs::rename(&temporary, path)
        });
    if let Err(source) = written {
        std::fs::remove_file(&temporary).ok();
        return Err(io_error(&temporary)(source));
    }
    // The rename is durable only once the directory is flushed. Best effort:
    // without it a power cut may bring back the previous file, still whole.
    #[cfg(unix)]
    if let Ok(dir) = File::open(directory(path).unwrap_or(Path::new("."))) {
        dir.sync_all().ok();
    }
    Ok(())
}

/// A new file `.NAME.PID-N.tmp` beside `path`: the process id keeps
/// processes apart, `create_new` and the next `N` skip a stale one left by a
/// crash of a process that had the same id.
fn create_temporary(path: &Path) -> Result<(PathBuf, File), TunerError> {
    let pid = std::process::id();
    let mut attempt = 0u32;
    loop {
        let temporary = beside(path, ".", &format!(".{pid}-{attempt}.tmp"));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temporary)
        {
            Ok(file) => return Ok((temporary, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 1000 => attempt += 1,
            Err(source) => return Err(io_error(&temporary)(source)),
        }
    }
}

/// Renames the corrupt file at `path` to `NAME.corrupt-SECONDS-PID[-N]`,
/// never over another file. The caller holds the lock.
fn set_aside(path: &Path) -> Result<PathBuf, TunerError> {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let stem = format!(".corrupt-{seconds}-{}", std::process::id());
    let mut attempt = 0u32;
    let moved_to = loop {
        let suffix = match attempt {
            0 => stem.clone(),
            n => format!("{stem}-{n}"),
        };
        let candidate = beside(path, "", &suffix);
        // Only writers holding the lock create these names, so checking
        // first does not race.
        match candidate.try_exists() {
            Ok(false) => break candidate,
            Ok(true) if attempt < 1000 => attempt += 1,
            Ok(true) => {
                return Err(io_error(&candidate)(io::Error::from(
                    io::ErrorKind::AlreadyExists,
                )))
            }
            Err(source) => return Err(io_error(&candidate)(source)),
        }
    };
    std::fs::rename(path, &moved_to).map_err(io_error(path))?;
    Ok(moved_to)
}

/// The median of `samples` (the upper one for an even count; infinity for
/// none, so an empty series never wins).
pub fn median(samples: &[f32]) -> f32 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f32::total_cmp);
    sorted
        .get(sorted.len() / 2)
        .copied()
        .unwrap_or(f32::INFINITY)
}

/// The mean of `samples` without the highest and the lowest tenth (none
/// for fewer than 10): one stray launch does not move it, a slow mode that
/// recurs does. Infinity for no samples.
pub fn trimmed_mean(samples: &[f32]) -> f32 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f32::total_cmp);
    let trim = sorted.len() / 10;
    let kept = &sorted[trim..sorted.len() - trim];
    match kept.len() {
        0 => f32::INFINITY,
        n => kept.iter().sum::<f32>() / n as f32,
    }
}

/// The index of the schedule to use, from interleaved samples (`samples[i]`
/// are candidate `i`'s times, round by round; 0 is the baseline): the
/// fastest median among candidates that beat the baseline's median, were
/// faster than the baseline in more than half of the rounds, and beat its
/// [`trimmed_mean`] too; else 0. The mean is there for schedules with two
/// speeds: one fast in 11 rounds of 20 and 8% slower in the others has the
/// better median and the worse throughput (k-means' agents, chunk 8, on an
/// H100). [`Tuner::record`] checks the samples first; given unchecked
/// ones, this never panics, but a NaN never wins a comparison.
pub fn decide(samples: &[Vec<f32>]) -> usize {
    let Some(baseline) = samples.first() else {
        return 0;
    };
    let baseline_median = median(baseline);
    let baseline_mean = trimmed_mean(baseline);
    let mut best = (0, baseline_median);
    for (index, candidate) in samples.iter().enumerate().skip(1) {
        let wins = candidate
            .iter()
            .zip(baseline)
            .filter(|(c, b)| c < b)
            .count();
        let candidate_median = median(candidate);
        let beats_baseline = candidate_median < baseline_median
            && 2 * wins > baseline.len()
            && trimmed_mean(candidate) < baseline_mean;
        if beats_baseline && candidate_median < best.1 {
            best = (index, candidate_median);
        }
    }
    best.0
}

/// The relative spread of `samples`: the interquartile range over the
/// median (0 for fewer than 4 samples' worth of spread, infinity for an
/// empty or zero-median series).
pub fn relative_spread(samples: &[f32]) -> f32 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f32::total_cmp);
    let median = median(&sorted);
    if sorted.is_empty() || median <= 0.0 {
        return f32::INFINITY;
    }
    let quartile = |q: usize| sorted[(sorted.len() - 1) * q / 4];
    (quartile(3) - quartile(1)) / median
}

/// The margin a schedule must win by: the larger of 1% and the baseline's
/// relative interquartile spread in this measurement (capped at 50%).
pub fn noise_margin(baseline: &[f32]) -> f32 {
    relative_spread(baseline).clamp(0.01, 0.5)
}

/// [`decide_with_margin`] by the tuner's margin: the larger of `min_margin`
/// and the baseline's [`noise_margin`] in these samples.
pub fn decide_over_noise(samples: &[Vec<f32>], min_margin: f32) -> usize {
    let noise = samples
        .first()
        .map_or(0.0, |baseline| noise_margin(baseline));
    decide_with_margin(samples, min_margin.max(noise))
}

/// [`decide`], but a candidate must also beat the baseline's median by more
/// than `margin` (a fraction: 0.01 is 1%), so that a schedule within the
/// measurement's noise never displaces the baseline.
pub fn decide_with_margin(samples: &[Vec<f32>], margin: f32) -> usize {
    let Some(baseline) = samples.first() else {
        return 0;
    };
    let winner = decide(samples);
    let (baseline_ms, winner_ms) = (median(baseline), median(&samples[winner]));
    if winner != 0 && winner_ms < baseline_ms * (1.0 - margin) {
        winner
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two speeds: fast in 11 rounds of 20 (its median and most rounds
    /// win), 8% slower in the rest (its throughput loses).
    #[test]
    fn a_schedule_with_a_slow_mode_keeps_the_baseline() {
        let baseline = vec![10.0; 20];
        let bimodal: Vec<f32> = (0..20)
            .map(|i| if i % 2 == 0 || i == 19 { 9.8 } else { 10.8 })
            .collect();
        assert_eq!(median(&bimodal), 9.8);
        assert_eq!(decide(&[baseline.clone(), bimodal]), 0);
        // One stray launch among 20 is trimmed: the schedule still wins.
        let mut stray = vec![9.5; 20];
        stray[7] = 30.0;
        assert_eq!(decide(&[baseline, stray]), 1);
        assert_eq!(trimmed_mean(&[]), f32::INFINITY);
        assert_eq!(trimmed_mean(&[1.0, 3.0]), 2.0);
    }

    #[test]
    fn a_win_inside_the_noise_keeps_the_baseline() {
        // 2% faster in every round.
        let samples = vec![vec![10.0; 9], vec![9.8; 9]];
        assert_eq!(decide(&samples), 1);
        assert_eq!(decide_with_margin(&samples, 0.01), 1);
        assert_eq!(decide_with_margin(&samples, 0.03), 0);
        // The spread of 8, 9, 10, 11, 12 (median 10): (11 - 9) / 10.
        assert!((relative_spread(&[12.0, 8.0, 10.0, 11.0, 9.0]) - 0.2).abs() < 1e-6);
        assert_eq!(relative_spread(&[]), f32::INFINITY);
    }

    /// A directory of its own per test (removed when the test passes), so
    /// tests never share a cache, its lock or its temporaries.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(name: &str) -> Self {
            let dir =
                std::env::temp_dir().join(format!("clustered-tuner-{}-{name}", std::process::id()));
            std::fs::remove_dir_all(&dir).ok();
            std::fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }

        fn cache(&self) -> PathBuf {
            self.0.join("tuner.json")
        }

        /// The names in the directory, sorted.
        fn names(&self) -> Vec<String> {
            let mut names: Vec<String> = std::fs::read_dir(&self.0)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            if !std::thread::panicking() {
                std::fs::remove_dir_all(&self.0).ok();
            }
        }
    }

    fn never(_: usize) -> Result<f32, TunerError> {
        panic!("measured although a choice was saved")
    }

    #[test]
    fn keeps_the_baseline_unless_a_schedule_is_faster_in_median_and_most_rounds() {
        // A faster median, but faster than the baseline of the same round
        // in only 1 of 5 rounds: kept out.
        let drifting = vec![8.0, 8.0, 12.0, 12.0, 12.0];
        let lucky = vec![9.0, 9.0, 11.0, 13.0, 13.0];
        assert_eq!(decide(&[drifting, lucky]), 0);
        let baseline = vec![10.0; 5];
        // Slower: never.
        assert_eq!(decide(&[baseline.clone(), vec![10.5; 5]]), 0);
        // Equal: the baseline.
        assert_eq!(decide(&[baseline.clone(), baseline.clone()]), 0);
        // Two winners: the faster.
        let a = vec![9.0; 5];
        let b = vec![8.0; 5];
        assert_eq!(decide(&[baseline.clone(), a.clone(), b]), 2);
        assert_eq!(decide(&[baseline, a]), 1);
        assert_eq!(decide(&[]), 0);
    }

    #[test]
    fn choices_survive_a_reopen_and_stale_ones_are_measured_again() {
        let dir = TempDir::new("reopen");
        let key = TuneKey::new("k", "gpu", "n = 1");
        let mut tuner = Tuner::open(dir.cache()).unwrap();
        let mut calls = 0;
        let choice = tuner
            .tune(&key, &["k", "k_fast"], 3, |i| {
                calls += 1;
                Ok::<_, TunerError>(if i == 0 { 2.0 } else { 1.0 })
            })
            .unwrap();
        assert_eq!((choice.schedule.as_str(), calls), ("k_fast", 6));
        assert_eq!(choice.speedup(), 2.0);

        // Reopened: the saved choice is used without measuring.
        let mut reopened = Tuner::open(dir.cache()).unwrap();
        let again = reopened.tune(&key, &["k", "k_fast"], 3, never).unwrap();
        assert_eq!(again, choice);
        // A candidate list without the saved schedule: measured again.
        let fresh = reopened
            .tune(&key, &["k", "k_other"], 2, |i| {
                Ok::<_, TunerError>(if i == 0 { 1.0 } else { 3.0 })
            })
            .unwrap();
        assert_eq!(fresh.schedule, "k");
        assert_eq!(Tuner::open(dir.cache()).unwrap().choice(&key), Some(&fresh));
    }

    #[test]
    fn the_file_is_versioned_json() {
        let dir = TempDir::new("format");
        let mut tuner = Tuner::open(dir.cache()).unwrap();
        let key = TuneKey::new("k", "gpu", "n = 1");
        tuner
            .record(&key, &["k", "k_fast"], &[vec![2.5], vec![1.25]])
            .unwrap();
        let text = std::fs::read_to_string(dir.cache()).unwrap();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(json["format"], "clustered-tuner");
        assert_eq!(json["version"], FORMAT_VERSION);
        assert_eq!(
            json["choices"],
            serde_json::json!([{
                "kernel": "k", "device": "gpu", "problem": "n = 1",
                "schedule": "k_fast", "baseline_ms": 2.5, "schedule_ms": 1.25
            }])
        );
        // Only the cache and its lock are left: no temporary.
        assert_eq!(dir.names(), ["tuner.json", "tuner.json.lock"]);
    }

    #[test]
    fn policies_pick_a_fixed_schedule_or_the_tuned_one() {
        let dir = TempDir::new("policies");
        let mut tuner = Tuner::open(dir.cache()).unwrap();
        let key = TuneKey::new("k", "gpu", "n = 2");
        let fixed = SchedulePolicy::Fixed("k_slow".into());
        assert_eq!(
            tuner
                .select(&fixed, &key, &["k", "k_slow"], 3, never)
                .unwrap(),
            "k_slow"
        );
        let unknown = SchedulePolicy::Fixed("k_typo".into());
        let error = tuner
            .select(&unknown, &key, &["k", "k_slow"], 3, never)
            .unwrap_err();
        assert!(error.to_string().contains("k_typo") && error.to_string().contains("k_slow"));
        let tuned = tuner
            .select(&SchedulePolicy::Tuned, &key, &["k", "k_slow"], 3, |i| {
                Ok::<_, TunerError>(if i == 0 { 1.0 } else { 2.0 })
            })
            .unwrap();
        assert_eq!(tuned, "k", "the slower schedule is never chosen");
    }

    fn awkward_keys() -> Vec<TuneKey> {
        vec![
            TuneKey::new("k", "GPU\twith tab", "n = 1"),
            TuneKey::new("k", "GPU with tab", "n = 1"),
            TuneKey::new("k", "dev", "line one\nline two"),
            TuneKey::new("#k", "dev", "n = 1"),
            TuneKey::new("k", "# dev", "#n"),
            TuneKey::new(
                "\u{3bb}\u{2192}k",
                "\u{7d2}\u{2603} GPU",
                "n = 4\u{202f}096",
            ),
            TuneKey::new("", "", ""),
            TuneKey::new("k", "dev\r\n", " "),
            TuneKey::new("k\"quoted\\", "dev", "{\"a\": 1}"),
            TuneKey::new("k\0nul", "dev\u{1f}", "\u{feff}"),
        ]
    }

    #[test]
    fn names_with_tabs_newlines_hashes_unicode_or_nothing_survive_a_reopen() {
        let dir = TempDir::new("awkward");
        let keys = awkward_keys();
        let mut tuner = Tuner::open(dir.cache()).unwrap();
        for (i, key) in keys.iter().enumerate() {
            let fast = format!("fast\t{i}\n#");
            tuner
                .record(key, &["base", &fast], &[vec![2.0; 3], vec![1.0; 3]])
                .unwrap();
        }
        let mut reopened = Tuner::open(dir.cache()).unwrap();
        for (i, key) in keys.iter().enumerate() {
            let choice = reopened
                .choice(key)
                .unwrap_or_else(|| panic!("{key:?} was lost"));
            assert_eq!(choice.schedule, format!("fast\t{i}\n#"));
            assert_eq!((choice.baseline_ms, choice.schedule_ms), (2.0, 1.0));
            let fast = format!("fast\t{i}\n#");
            reopened.tune(key, &["base", &fast], 3, never).unwrap();
        }
        // Keys that differ only where a sanitiser would blur them stay apart.
        assert_eq!(reopened.len(), keys.len());
    }

    #[test]
    fn two_tuners_sharing_a_file_keep_each_others_choices() {
        let dir = TempDir::new("two-tuners");
        let mut a = Tuner::open(dir.cache()).unwrap();
        let mut b = Tuner::open(dir.cache()).unwrap();
        let key_a = TuneKey::new("a", "dev", "n");
        let key_b = TuneKey::new("b", "dev", "n");
        let samples = [vec![1.0; 3], vec![2.0; 3]];
        a.record(&key_a, &["a", "a_slow"], &samples).unwrap();
        b.record(&key_b, &["b", "b_slow"], &samples).unwrap();
        let reopened = Tuner::open(dir.cache()).unwrap();
        assert!(
            reopened.choice(&key_a).is_some(),
            "b's write dropped a's choice"
        );
        assert!(reopened.choice(&key_b).is_some());
        // `a` reuses `b`'s choice instead of measuring it again.
        assert_eq!(
            a.tune(&key_b, &["b", "b_slow"], 3, never).unwrap().schedule,
            "b"
        );
        // The latest write of a key wins; forgetting one key keeps the rest.
        b.record(&key_a, &["a", "a_fast"], &[vec![2.0], vec![1.0]])
            .unwrap();
        a.forget(&key_b).unwrap();
        let reopened = Tuner::open(dir.cache()).unwrap();
        assert_eq!(reopened.choice(&key_a).unwrap().schedule, "a_fast");
        assert_eq!(reopened.choice(&key_b), None);
        assert_eq!(reopened.len(), 1);

        // The same from threads, each with its own tuner, at once.
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let path = dir.cache();
                std::thread::spawn(move || {
                    let mut tuner = Tuner::open(&path).unwrap();
                    for i in 0..20 {
                        let key = TuneKey::new("thread", &t.to_string(), &i.to_string());
                        tuner.record(&key, &["k"], &[vec![1.0]]).unwrap();
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let reopened = Tuner::open(dir.cache()).unwrap();
        assert_eq!(reopened.len(), 1 + 4 * 20);
        assert_eq!(dir.names(), ["tuner.json", "tuner.json.lock"]);
    }

    /// Set in the children of the test below: `path,first key,count,start at (unix ms)`.
    const CHILD: &str = "CLUSTERED_TUNER_TEST_CHILD";
    const TEST_NAME: &str = "tuner::tests::processes_tuning_into_one_file_at_once_lose_nothing";

    fn unix_ms() -> u128 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
    }

    /// Child mode: tune `count` keys, as a process of its own; the parent
    /// runs this test binary again with `CHILD` set.
    fn tune_as_child(spec: &str) {
        let [path, first, count, start]: [&str; 4] =
            spec.split(',').collect::<Vec<_>>().try_into().unwrap();
        let (first, count): (usize, usize) = (first.parse().unwrap(), count.parse().unwrap());
        let start: u128 = start.parse().unwrap();
        // Every child starts writing at the same moment.
        while unix_ms() < start {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let mut tuner = Tuner::open(path).unwrap();
        for i in first..first + count {
            let key = TuneKey::new("k", "dev", &format!("n = {i}"));
            tuner
                .tune(&key, &["k", "k_fast"], 2, |c| {
                    Ok::<_, TunerError>(if c == 0 { 2.0 } else { 1.0 })
                })
                .unwrap();
        }
    }

    #[test]
    fn processes_tuning_into_one_file_at_once_lose_nothing() {
        if let Ok(spec) = std::env::var(CHILD) {
            return tune_as_child(&spec);
        }
        let dir = TempDir::new("processes");
        const PROCESSES: usize = 4;
        const EACH: usize = 40;
        let start = unix_ms() + 500;
        let children: Vec<_> = (0..PROCESSES)
            .map(|p| {
                std::process::Command::new(std::env::current_exe().unwrap())
                    .args(["--exact", TEST_NAME, "--test-threads", "1", "--nocapture"])
                    .env(
                        CHILD,
                        format!("{},{},{EACH},{start}", dir.cache().display(), p * EACH),
                    )
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let child = child.wait_with_output().unwrap();
            assert!(
                child.status.success(),
                "a child failed:\n{}{}",
                String::from_utf8_lossy(&child.stdout),
                String::from_utf8_lossy(&child.stderr)
            );
        }
        let tuner = Tuner::open(dir.cache()).unwrap();
        let missing: Vec<usize> = (0..PROCESSES * EACH)
            .filter(|i| {
                let key = TuneKey::new("k", "dev", &format!("n = {i}"));
                tuner.choice(&key).map(|c| c.schedule.as_str()) != Some("k_fast")
            })
            .collect();
        assert!(
            missing.is_empty(),
            "{} of {} choices lost: {missing:?}",
            missing.len(),
            PROCESSES * EACH
        );
        assert_eq!(tuner.len(), PROCESSES * EACH);
        assert_eq!(dir.names(), ["tuner.json", "tuner.json.lock"]);
    }

    #[test]
    fn a_corrupt_cache_is_an_error_naming_the_place_and_is_left_untouched() {
        let dir = TempDir::new("corrupt");
        let key = TuneKey::new("k", "dev", "n");
        // The old tab-separated format, a truncated file, another JSON file.
        let cases = [
            "# header\nk\tdev\tn\tk\t1.0\t1.0\n",
            "{\"format\": \"clustered-tuner\", \"version\": 1, \"choices\": [{\"kernel\": \"k\"",
            "{\"device\": \"H100\", \"records\": []}",
            "{\"format\": \"bench\", \"version\": 1, \"choices\": []}",
            "{\"format\": \"clustered-tuner\", \"version\": 1, \"choices\": [{\"kernel\": \"k\", \"device\": \"d\", \"problem\": \"p\", \"schedule\": \"s\", \"baseline_ms\": 1e39, \"schedule_ms\": 1}]}",
        ];
        for text in cases {
            std::fs::write(dir.cache(), text).unwrap();
            let error = Tuner::open(dir.cache()).unwrap_err();
            assert!(
                matches!(error, TunerError::Corrupt { .. }),
                "{text}: {error:?}"
            );
            assert!(error.to_string().contains("delete it"), "{error}");
            assert_eq!(std::fs::read_to_string(dir.cache()).unwrap(), text);
        }
        std::fs::write(
            dir.cache(),
            "{\n  \"format\": \"clustered-tuner\",\n  oops\n}",
        )
        .unwrap();
        match Tuner::open(dir.cache()) {
            Err(TunerError::Corrupt { line, column, .. }) => assert_eq!((line, column), (3, 3)),
            other => panic!("expected a corrupt-file error, got {other:?}"),
        }

        // A tuner whose file turns corrupt after it was opened: its write is
        // an error, the file is not overwritten, the choice is kept in memory.
        std::fs::remove_file(dir.cache()).unwrap();
        let mut tuner = Tuner::open(dir.cache()).unwrap();
        std::fs::write(dir.cache(), "garbage").unwrap();
        let error = tuner.record(&key, &["k"], &[vec![1.0]]).unwrap_err();
        assert!(matches!(error, TunerError::Corrupt { .. }), "{error:?}");
        assert_eq!(std::fs::read_to_string(dir.cache()).unwrap(), "garbage");
        assert!(tuner.choice(&key).is_some());
        // Fixed by the user: the pending choice reaches the file.
        std::fs::remove_file(dir.cache()).unwrap();
        tuner
            .record(&TuneKey::new("k2", "dev", "n"), &["k"], &[vec![1.0]])
            .unwrap();
        assert_eq!(Tuner::open(dir.cache()).unwrap().len(), 2);
    }

    #[test]
    fn a_corrupt_cache_can_be_set_aside_and_an_empty_one_is_empty() {
        let dir = TempDir::new("set-aside");
        std::fs::write(dir.cache(), "k\tdev\tn\tk\t1.0\t1.0\n").unwrap();
        let (mut tuner, set_aside) = Tuner::open_or_set_aside(dir.cache()).unwrap();
        let set_aside = set_aside.expect("the corrupt file was set aside");
        assert!(matches!(set_aside.problem, TunerError::Corrupt { .. }));
        assert_eq!(
            std::fs::read_to_string(&set_aside.moved_to).unwrap(),
            "k\tdev\tn\tk\t1.0\t1.0\n"
        );
        let moved = set_aside.moved_to.file_name().unwrap().to_string_lossy();
        assert!(moved.starts_with("tuner.json.corrupt-"), "{moved}");
        assert!(tuner.is_empty());
        tuner
            .record(&TuneKey::new("k", "dev", "n"), &["k"], &[vec![1.0]])
            .unwrap();
        // A good file is opened as it is.
        let (reopened, none) = Tuner::open_or_set_aside(dir.cache()).unwrap();
        assert!(none.is_none());
        assert_eq!(reopened.len(), 1);

        std::fs::write(dir.cache(), "").unwrap();
        assert!(Tuner::open(dir.cache()).unwrap().is_empty());
        std::fs::write(dir.cache(), " \n").unwrap();
        assert!(Tuner::open(dir.cache()).unwrap().is_empty());
    }

    #[test]
    fn a_cache_of_another_version_is_never_touched() {
        let dir = TempDir::new("version");
        let text =
            "{\"format\": \"clustered-tuner\", \"version\": 2, \"choices\": {\"new\": true}}";
        std::fs::write(dir.cache(), text).unwrap();
        for error in [
            Tuner::open(dir.cache()).unwrap_err(),
            Tuner::open_or_set_aside(dir.cache()).unwrap_err(),
        ] {
            match &error {
                TunerError::UnsupportedVersion {
                    found: 2,
                    supported: 1,
                    ..
                } => {}
                other => panic!("expected a version error, got {other:?}"),
            }
            assert!(error.to_string().contains("version 2"), "{error}");
        }
        assert_eq!(std::fs::read_to_string(dir.cache()).unwrap(), text);
        assert_eq!(dir.names(), ["tuner.json"]);
    }

    #[test]
    fn bad_candidates_or_samples_are_typed_errors_and_save_nothing() {
        let dir = TempDir::new("samples");
        let mut tuner = Tuner::open(dir.cache()).unwrap();
        let key = TuneKey::new("k", "dev", "n");
        let two = ["k", "k2"];
        // (candidates, samples, the error's variant and the candidate it names)
        type Case<'a> = (&'a [&'a str], Vec<Vec<f32>>, &'a str);
        let cases: Vec<Case> = vec![
            (&[], vec![], "NoCandidates"),
            (&[], vec![vec![1.0]], "NoCandidates"),
            (&two, vec![vec![1.0]], "SampleCount"),
            (&two, vec![vec![1.0], vec![1.0], vec![1.0]], "SampleCount"),
            (&two, vec![vec![], vec![]], "NoSamples k"),
            (&two, vec![vec![1.0], vec![]], "NoSamples k2"),
            (&two, vec![vec![1.0, 1.0], vec![1.0]], "RoundCount k2"),
            (&two, vec![vec![1.0], vec![1.0, 1.0]], "RoundCount k2"),
            (
                &two,
                vec![vec![1.0, f32::NAN], vec![1.0, 1.0]],
                "InvalidTiming k",
            ),
            (&two, vec![vec![1.0], vec![f32::NAN]], "InvalidTiming k2"),
            (&two, vec![vec![1.0], vec![-1.0]], "InvalidTiming k2"),
            (
                &two,
                vec![vec![f32::INFINITY], vec![1.0]],
                "InvalidTiming k",
            ),
            (
                &two,
                vec![vec![1.0], vec![f32::NEG_INFINITY]],
                "InvalidTiming k2",
            ),
        ];
        for (candidates, samples, expected) in &cases {
            let error = tuner.record(&key, candidates, samples).unwrap_err();
            let found = match &error {
                TunerError::NoCandidates => "NoCandidates".to_string(),
                TunerError::SampleCount {
                    candidates: 2,
                    series,
                } if *series == samples.len() => "SampleCount".to_string(),
                TunerError::NoSamples { candidate } => format!("NoSamples {candidate}"),
                TunerError::RoundCount {
                    candidate,
                    baseline_rounds,
                    rounds,
                } if (*baseline_rounds, *rounds) == (samples[0].len(), samples[1].len()) => {
                    format!("RoundCount {candidate}")
                }
                TunerError::InvalidTiming { candidate, .. } => format!("InvalidTiming {candidate}"),
                other => format!("{other:?}"),
            };
            assert_eq!(&found, expected, "{samples:?}");
            assert!(!error.to_string().is_empty());
        }
        match tuner.record(&key, &two, &[vec![1.0, 1.0], vec![1.0, f32::NAN]]) {
            Err(TunerError::InvalidTiming {
                candidate,
                round: 1,
                value,
            }) => {
                assert_eq!(candidate, "k2");
                assert!(value.is_nan());
            }
            other => panic!("expected an invalid timing, got {other:?}"),
        }
        // Nothing was decided, so nothing was written.
        assert!(tuner.is_empty());
        assert!(!dir.cache().exists());

        // `tune`: no candidates fails before measuring; a NaN measured is an error.
        let error = tuner.tune(&key, &[], 3, never).unwrap_err();
        assert!(matches!(error, TunerError::NoCandidates), "{error:?}");
        let error = tuner
            .tune(&key, &two, 3, |i| {
                Ok::<_, TunerError>(if i == 0 { 1.0 } else { f32::NAN })
            })
            .unwrap_err();
        assert!(
            matches!(error, TunerError::InvalidTiming { round: 0, .. }),
            "{error:?}"
        );
        let error = tuner
            .select(&SchedulePolicy::Tuned, &key, &[], 3, never)
            .unwrap_err();
        assert!(matches!(error, TunerError::NoCandidates), "{error:?}");
        assert!(!dir.cache().exists());
        // The crate's own error carries the tuner's, so GPU timings can be tuned.
        let error = tuner
            .tune(&key, &[], 3, |_| Ok::<f32, crate::Error>(1.0))
            .unwrap_err();
        assert!(
            matches!(error, crate::Error::Tuner(TunerError::NoCandidates)),
            "{error:?}"
        );
        assert!(
            error.to_string().contains("candidate list is empty"),
            "{error}"
        );

        // Infinity marks a candidate that must not be chosen; 0 ms is a time.
        let choice = tuner
            .record(
                &key,
                &["k", "k_wrong", "k_zero"],
                &[vec![1.0], vec![f32::INFINITY], vec![0.0]],
            )
            .unwrap();
        assert_eq!(choice.schedule, "k_zero");
        let choice = tuner
            .record(&key, &["k", "k_wrong"], &[vec![1.0], vec![f32::INFINITY]])
            .unwrap();
        assert_eq!(choice.schedule, "k");
        assert_eq!(
            Tuner::open(dir.cache()).unwrap().choice(&key),
            Some(&choice)
        );
    }
}
