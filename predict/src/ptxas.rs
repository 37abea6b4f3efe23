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
    /// The stack frame, bytes (`None` where the log did not say): 0 means
    /// ptxas kept every local array of the PTX in registers.
    pub stack_bytes: Option<u32>,
    /// The global loads its hot loop keeps in flight per thread, from the
    /// SASS ([`crate::sass::loads_in_flight`]; `None` without `cuobjdump`):
    /// what the registers ptxas gave it let it issue before reading one.
    pub loads_in_flight: Option<u32>,
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
    let sass = out
        .as_ref()
        .is_ok_and(|out| out.status.success())
        .then(|| disassemble(ptxas, &output))
        .flatten();
    let _ = std::fs::remove_dir_all(&dir);
    let out = out?;
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() {
        return Err(PtxasError::Failed { log });
    }
    let mut entries = parse_log(&log);
    if let Some(sass) = sass {
        for (name, instructions) in crate::sass::functions(&sass) {
            if let Some(entry) = entries.get_mut(&name) {
                entry.loads_in_flight = Some(crate::sass::loads_in_flight(&instructions));
            }
        }
    }
    Ok(entries)
}

/// The SASS of `cubin` from the `cuobjdump` beside `ptxas` (the CUDA
/// toolkit and its PyPI packages install both in one folder) or at
/// `$CUOBJDUMP`; `None` without one.
fn disassemble(ptxas: &Path, cubin: &Path) -> Option<String> {
    let tool = std::env::var_os("CUOBJDUMP")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            ptxas.with_file_name(format!("cuobjdump{}", std::env::consts::EXE_SUFFIX))
        });
    let out = Command::new(tool).arg("-sass").arg(cubin).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
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
        if line.contains("bytes stack frame") {
            entry.stack_bytes = words.first().and_then(|w| w.parse().ok());
        }
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
    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n\
ptxas info    : Used 12 registers, 364 bytes cmem[0]\n";
        let r = parse_log(log);
        assert_eq!(
            r["sgemm_tiled"],
            Resources {
                registers: 40,
                shared_bytes: 2048,
                spill_bytes: 0,
                stack_bytes: Some(0),
                loads_in_flight: None,
            }
        );
        assert_eq!(
            r["copy"],
            Resources {
                registers: 12,
                shared_bytes: 0,
                spill_bytes: 12,
                stack_bytes: Some(16),
                loads_in_flight: None,
            }
        );
    }
}
