//! Registers and shared memory per entry, from `ptxas -v` (PTX is not SASS:
//! ptxas allocates registers, and registers set occupancy).

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::process::Command;

/// What ptxas allocated for one entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Resources {
    /// Registers per thread.
    pub registers: u32,
    /// Static shared memory per block, bytes.
    pub shared_bytes: u32,
    /// Spill stores and loads, bytes.
    pub spill_bytes: u32,
}

/// Why ptxas gave no resources.
#[derive(Debug)]
pub enum PtxasError {
    /// It could not be started (not installed at that path).
    Spawn(std::io::Error),
    /// The temporary files could not be written.
    Io(std::io::Error),
    /// It rejected the PTX.
    Failed { log: String },
}

impl fmt::Display for PtxasError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PtxasError::Spawn(e) => write!(
                f,
                "could not run ptxas ({e}): `pip install nvidia-cuda-nvcc`, or set PTXAS"
            ),
            PtxasError::Io(e) => write!(f, "could not write ptxas's input: {e}"),
            PtxasError::Failed { log } => write!(f, "ptxas rejected the PTX:\n{log}"),
        }
    }
}

impl std::error::Error for PtxasError {}

/// Assembles `ptx` for `arch` (`sm_90`) with the ptxas at `ptxas` and reads
/// each entry's resources from its verbose log.
pub fn resources(
    ptxas: &Path,
    ptx: &str,
    arch: &str,
) -> Result<BTreeMap<String, Resources>, PtxasError> {
    // A folder per call: calls on other threads (tests) must not share files.
    static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("clustered-predict-{}-{call}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(PtxasError::Io)?;
    let (input, output) = (dir.join("kernels.ptx"), dir.join("kernels.cubin"));
    std::fs::write(&input, ptx).map_err(PtxasError::Io)?;
    let out = Command::new(ptxas)
        .arg(format!("-arch={arch}"))
        .arg("-v")
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .output()
        .map_err(PtxasError::Spawn);
    let _ = std::fs::remove_dir_all(&dir);
    let out = out?;
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() {
        return Err(PtxasError::Failed { log });
    }
    Ok(parse_log(&log))
}

/// Each entry's resources from a `ptxas -v` log.
pub fn parse_log(log: &str) -> BTreeMap<String, Resources> {
    let mut entries = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            current = rest.split('\'').next().map(str::to_string);
            continue;
        }
        if line.contains("Function properties for") {
            // A .func's properties follow: not the entry's.
            let name = line.split("Function properties for ").nth(1).map(str::trim);
            if name != current.as_deref() {
                current = None;
            }
            continue;
        }
        let Some(name) = &current else { continue };
        let entry: &mut Resources = entries.entry(name.clone()).or_default();
        let words: Vec<&str> = line.split_whitespace().collect();
        let before = |word: &str| -> Option<u32> {
            let i = words.iter().position(|w| w.starts_with(word))?;
            words.get(i.checked_sub(1)?)?.parse().ok()
        };
        if line.contains("spill stores") {
            entry.spill_bytes = line
                .split(',')
                .filter(|part| part.contains("spill"))
                .filter_map(|part| part.split_whitespace().next()?.parse::<u32>().ok())
                .sum();
        }
        if let Some(r) = before("registers") {
            entry.registers = r;
        }
        if line.contains("smem") {
            if let Some(s) = before("bytes") {
                entry.shared_bytes = s;
            }
        }
    }
    entries
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_log() {
        let log = "ptxas info    : Compiling entry function 'sgemm_tiled' for 'sm_90'\n\
ptxas info    : Function properties for sgemm_tiled\n\
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem, 380 bytes cmem[0]\n\
ptxas info    : Compiling entry function 'copy' for 'sm_90'\n\
ptxas info    : Function properties for copy\n\
    0 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n\
ptxas info    : Used 12 registers, 364 bytes cmem[0]\n";
        let r = parse_log(log);
        assert_eq!(
            r["sgemm_tiled"],
            Resources {
                registers: 40,
                shared_bytes: 2048,
                spill_bytes: 0
            }
        );
        assert_eq!(
            r["copy"],
            Resources {
                registers: 12,
                shared_bytes: 0,
                spill_bytes: 12
            }
        );
    }
}
