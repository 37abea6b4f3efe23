//! Choosing a schedule by measuring it, once per (kernel, device, problem).
//!
//! The tuner times the candidates (the baseline first) interleaved, one
//! launch of each per round, and keeps a schedule only if it beats the
//! baseline in the median *and* in most rounds, so a lucky outlier cannot
//! pick a slower schedule: when in doubt it keeps the baseline. Choices are
//! kept in a small text file, one line per key, and reused afterwards.
//!
//! ```
//! use clustered_host::tuner::{Tuner, TuneKey, TunerError};
//! let path = std::env::temp_dir().join(format!("tuner-doc-{}.tsv", std::process::id()));
//! let mut tuner = Tuner::open(&path).unwrap();
//! let key = TuneKey::new("sgemm_tiled", "NVIDIA H100", "n = 4096");
//! // Milliseconds of each candidate's launches, in rounds (baseline first).
//! let mut fake = [20.0f32, 18.0, 25.0].into_iter().cycle();
//! let choice = tuner
//!     .tune(&key, &["sgemm_tiled", "sgemm_tiled_raster", "sgemm_tiled_agents"], 10, |_| {
//!         Ok::<f32, TunerError>(fake.next().unwrap())
//!     })
//!     .unwrap();
//! assert_eq!(choice.schedule, "sgemm_tiled_raster");
//! assert_eq!(tuner.choice(&key).unwrap().schedule, "sgemm_tiled_raster"); // saved
//! # std::fs::remove_file(path).ok();
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Which schedule a launch uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SchedulePolicy {
    /// This schedule (an entry point's name), always.
    Fixed(String),
    /// The tuner's choice for the problem, measured on first use.
    Tuned,
}

/// What a choice is for.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
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

    fn fields(&self) -> [&str; 3] {
        [&self.kernel, &self.device, &self.problem]
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

/// Why the tuner's file could not be used.
#[derive(Debug)]
#[allow(missing_docs)] // the fields hold what their names say
pub enum TunerError {
    /// The file could not be read or written.
    Io { path: PathBuf, source: io::Error },
    /// A line that is not `kernel<TAB>device<TAB>problem<TAB>schedule<TAB>ms<TAB>ms`.
    Malformed { path: PathBuf, line: usize },
    /// A fixed policy named a schedule that is not a candidate.
    UnknownSchedule {
        schedule: String,
        candidates: Vec<String>,
    },
}

impl fmt::Display for TunerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TunerError::Io { path, source } => write!(f, "tuner cache {}: {source}", path.display()),
            TunerError::Malformed { path, line } => write!(
                f,
                "tuner cache {} line {line} is not `kernel, device, problem, schedule, baseline ms, schedule ms` separated by tabs: fix or delete the file (it is only a cache)",
                path.display()
            ),
            TunerError::UnknownSchedule { schedule, candidates } => write!(
                f,
                "schedule `{schedule}` is not one of this kernel's: {}",
                candidates.join(", ")
            ),
        }
    }
}

impl std::error::Error for TunerError {}

/// Choices on disk. Not shared between processes: the last writer wins,
/// which loses at most a choice (it is measured again).
#[derive(Debug)]
pub struct Tuner {
    path: PathBuf,
    choices: BTreeMap<TuneKey, Choice>,
}

impl Tuner {
    /// `$CLUSTERED_TUNER_CACHE`, else `$XDG_CACHE_HOME/clustered/tuner.tsv`,
    /// else `~/.cache/clustered/tuner.tsv`, else `clustered-tuner.tsv`.
    pub fn default_path() -> PathBuf {
        if let Some(path) = std::env::var_os("CLUSTERED_TUNER_CACHE") {
            return path.into();
        }
        let cache = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")));
        match cache {
            Some(dir) => dir.join("clustered").join("tuner.tsv"),
            None => PathBuf::from("clustered-tuner.tsv"),
        }
    }

    /// Reads the choices at `path` (none if it does not exist yet).
    pub fn open(path: impl AsRef<Path>) -> Result<Self, TunerError> {
        let path = path.as_ref().to_path_buf();
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
            Err(source) => return Err(TunerError::Io { path, source }),
        };
        let mut choices = BTreeMap::new();
        for (index, line) in text.lines().enumerate() {
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            let fields: Vec<&str> = line.split('\t').collect();
            let parsed = match fields[..] {
                [kernel, device, problem, schedule, baseline, chosen] => {
                    baseline.parse().ok().zip(chosen.parse().ok()).map(
                        |(baseline_ms, schedule_ms)| {
                            (
                                TuneKey::new(kernel, device, problem),
                                Choice {
                                    schedule: schedule.into(),
                                    baseline_ms,
                                    schedule_ms,
                                },
                            )
                        },
                    )
                }
                _ => None,
            };
            let (key, choice) = parsed.ok_or(TunerError::Malformed {
                path: path.clone(),
                line: index + 1,
            })?;
            choices.insert(key, choice);
        }
        Ok(Tuner { path, choices })
    }

    /// The saved choice for `key`, if any.
    pub fn choice(&self, key: &TuneKey) -> Option<&Choice> {
        self.choices.get(key)
    }

    /// Forgets a choice (it is measured again on next use).
    pub fn forget(&mut self, key: &TuneKey) -> Result<(), TunerError> {
        self.choices.remove(key);
        self.save()
    }

    /// The choice for `key` among `candidates` (the baseline first): the
    /// saved one if it is still a candidate; else measured with `rounds`
    /// interleaved rounds of `time_one(candidate index)` (milliseconds of
    /// one launch), decided by [`decide`], and saved.
    pub fn tune<E: From<TunerError>>(
        &mut self,
        key: &TuneKey,
        candidates: &[&str],
        rounds: usize,
        mut time_one: impl FnMut(usize) -> Result<f32, E>,
    ) -> Result<Choice, E> {
        if let Some(saved) = self.choices.get(key) {
            if candidates.contains(&saved.schedule.as_str()) {
                return Ok(saved.clone());
            }
        }
        let mut samples = vec![Vec::with_capacity(rounds); candidates.len()];
        for _ in 0..rounds.max(1) {
            for (index, samples) in samples.iter_mut().enumerate() {
                samples.push(time_one(index)?);
            }
        }
        let choice = self.record(key, candidates, &samples)?;
        Ok(choice)
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

    /// Decides from samples already measured (interleaved rounds, baseline
    /// first) and saves the choice.
    pub fn record(
        &mut self,
        key: &TuneKey,
        candidates: &[&str],
        samples: &[Vec<f32>],
    ) -> Result<Choice, TunerError> {
        let winner = decide(samples);
        let choice = Choice {
            schedule: candidates[winner].to_string(),
            baseline_ms: median(&samples[0]),
            schedule_ms: median(&samples[winner]),
        };
        self.choices.insert(key.clone(), choice.clone());
        self.save()?;
        Ok(choice)
    }

    fn save(&self) -> Result<(), TunerError> {
        let io_error = |source| TunerError::Io {
            path: self.path.clone(),
            source,
        };
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io_error)?;
        }
        let mut text = String::from(
            "# clustered tuner: kernel, device, problem, schedule, baseline ms, schedule ms\n",
        );
        for (key, choice) in &self.choices {
            let [kernel, device, problem] = key.fields().map(|f| f.replace(['\t', '\n'], " "));
            text += &format!(
                "{kernel}\t{device}\t{problem}\t{}\t{}\t{}\n",
                choice.schedule, choice.baseline_ms, choice.schedule_ms
            );
        }
        // Written aside, then renamed: a crash never leaves half a file.
        let temporary = self.path.with_extension("tsv.partial");
        std::fs::write(&temporary, text).map_err(io_error)?;
        std::fs::rename(&temporary, &self.path).map_err(io_error)
    }
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

/// The index of the schedule to use, from interleaved samples (`samples[i]`
/// are candidate `i`'s times, round by round; 0 is the baseline): the
/// fastest median among candidates that beat the baseline's median and were
/// faster than the baseline in more than half of the rounds; else 0.
pub fn decide(samples: &[Vec<f32>]) -> usize {
    let Some(baseline) = samples.first() else {
        return 0;
    };
    let baseline_median = median(baseline);
    let mut best = (0, baseline_median);
    for (index, candidate) in samples.iter().enumerate().skip(1) {
        let wins = candidate
            .iter()
            .zip(baseline)
            .filter(|(c, b)| c < b)
            .count();
        let candidate_median = median(candidate);
        let beats_baseline = candidate_median < baseline_median && 2 * wins > baseline.len();
        if beats_baseline && candidate_median < best.1 {
            best = (index, candidate_median);
        }
    }
    best.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("clustered-tuner-{}-{name}.tsv", std::process::id()))
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
        let path = temp("reopen");
        std::fs::remove_file(&path).ok();
        let key = TuneKey::new("k", "GPU\twith tab", "n = 1");
        let mut tuner = Tuner::open(&path).unwrap();
        let mut calls = 0;
        let choice = tuner
            .tune(&key, &["k", "k_fast"], 3, |i| {
                calls += 1;
                Ok::<_, TunerError>(if i == 0 { 2.0 } else { 1.0 })
            })
            .unwrap();
        assert_eq!((choice.schedule.as_str(), calls), ("k_fast", 6));
        assert_eq!(choice.speedup(), 2.0);

        // Reopened: the tab in the device name was replaced, so the key is
        // the sanitised one; the saved choice is used without measuring.
        let mut reopened = Tuner::open(&path).unwrap();
        let saved_key = TuneKey::new("k", "GPU with tab", "n = 1");
        let again = reopened
            .tune(
                &saved_key,
                &["k", "k_fast"],
                3,
                |_| -> Result<f32, TunerError> { panic!("measured again") },
            )
            .unwrap();
        assert_eq!(again.schedule, "k_fast");
        // A candidate list without the saved schedule: measured again.
        let fresh = reopened
            .tune(&saved_key, &["k", "k_other"], 2, |i| {
                Ok::<_, TunerError>(if i == 0 { 1.0 } else { 3.0 })
            })
            .unwrap();
        assert_eq!(fresh.schedule, "k");
        std::fs::remove_file(&path).ok();
    }

    #[test]
    fn policies_pick_a_fixed_schedule_or_the_tuned_one() {
        let path = temp("policies");
        std::fs::remove_file(&path).ok();
        let mut tuner = Tuner::open(&path).unwrap();
        let key = TuneKey::new("k", "gpu", "n = 2");
        let never = |_| -> Result<f32, TunerError> { panic!("a fixed policy measures nothing") };
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
        std::fs::remove_file(&path).ok();
    }

    #[test]
    fn a_malformed_cache_is_an_error_naming_the_line() {
        let path = temp("malformed");
        std::fs::write(&path, "# header\nk\tdev\tn\tk\t1.0\t1.0\nnot a choice\n").unwrap();
        match Tuner::open(&path) {
            Err(TunerError::Malformed { line, .. }) => assert_eq!(line, 3),
            other => panic!("expected a malformed-line error, got {other:?}"),
        }
        std::fs::remove_file(&path).ok();
    }
}
