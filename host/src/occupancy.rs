//! Keeping a schedule at its kernel's occupancy.
//!
//! A schedule's entry is its kernel's body inside a task loop, and the loop's
//! state can push ptxas past a register count where fewer warps fit on an
//! SM: Black-Scholes' grid-stride loop takes 35 registers where the kernel
//! takes 21, and at 35 (allocated as 40) an H100 SM holds 48 warps instead
//! of 64. Memory-bound bodies lose what those warps kept in flight (hotspot's
//! grid-stride loop ran at 0.92x of its kernel; capped at 32 registers,
//! where ptxas spilled nothing, 0.99x: docs/BENCHMARKS.md, "Schedules at
//! their kernel's occupancy").
//!
//! So when a module is loaded, each schedule linked to its kernel
//! ([`BASELINE_LINK_PREFIX`]) whose registers allow fewer warps per SM than
//! the kernel's gets a copy, in the same module, capped with `.maxnreg` at
//! the most registers that keep the kernel's warps, and the copy is used
//! only if ptxas fitted it without spilling more than before; otherwise the
//! schedule keeps its own code. Every decision is kept ([`RegisterCap`]).
//!
//! A launch uses the capped copy only where its grid needs the warps
//! ([`cap_needed`]): a grid that the schedule's own code holds in one wave
//! has no more blocks for an SM than that code keeps, and the cap would only
//! take registers from the body (ATAX's column pass, 64 blocks under launch
//! bounds: its grid-stride loop at 0.86x of the kernel capped, 0.99x not).

use std::fmt;

use clustered_device::abi::BASELINE_LINK_PREFIX;

use crate::module::ptx_identifier;
use crate::DeviceProperties;

/// Registers are allocated per warp in units of this many (sm_70 and later,
/// the CUDA occupancy calculator's "register allocation unit size").
const REGISTER_UNIT: u32 = 256;
/// Warps are given registers in groups of this many (one per scheduler;
/// the calculator's "warp allocation granularity").
const WARP_GROUP: u32 = 4;
/// The most registers a thread may have (`.maxnreg`'s upper bound).
const MAX_REGISTERS: u32 = 255;

/// What the register rule needs to know of a GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegisterFile {
    /// 32-bit registers per SM.
    pub registers_per_sm: u32,
    /// Most warps resident on an SM.
    pub max_warps_per_sm: u32,
    /// Threads per warp.
    pub warp_size: u32,
}

impl From<&DeviceProperties> for RegisterFile {
    fn from(device: &DeviceProperties) -> Self {
        RegisterFile {
            registers_per_sm: device.max_registers_per_sm,
            max_warps_per_sm: device.max_warps_per_sm,
            warp_size: device.warp_size,
        }
    }
}

/// Warps per SM that `registers` per thread allow (other limits aside).
pub fn warps_by_registers(registers: u32, device: &RegisterFile) -> u32 {
    let max_warps = device.max_warps_per_sm;
    if registers == 0 {
        return max_warps;
    }
    let per_warp = (registers * device.warp_size).div_ceil(REGISTER_UNIT) * REGISTER_UNIT;
    let warps = device.registers_per_sm / per_warp / WARP_GROUP * WARP_GROUP;
    warps.min(max_warps)
}

/// The most registers per thread that still allow as many warps per SM as
/// `registers` do: 32 for any kernel of 32 or fewer on an H100.
pub fn registers_keeping_warps(registers: u32, device: &RegisterFile) -> u32 {
    let warps = warps_by_registers(registers, device);
    (registers.max(1)..=MAX_REGISTERS)
        .take_while(|&r| warps_by_registers(r, device) >= warps)
        .last()
        .unwrap_or(registers)
}

/// The `.maxnreg` for a schedule of `registers` per thread made from a kernel
/// of `baseline_registers`: `None` when the schedule fits as many warps per
/// SM as its kernel, else the most registers that do.
pub fn register_cap(registers: u32, baseline_registers: u32, device: &RegisterFile) -> Option<u32> {
    (warps_by_registers(registers, device) < warps_by_registers(baseline_registers, device))
        .then(|| registers_keeping_warps(baseline_registers, device))
}

/// Whether a launch of `blocks` original CTAs needs a schedule's capped
/// copy: `false` when its own code, `blocks_per_sm` of which fit an SM,
/// holds the whole grid at once on `sm_count` SMs (the kernel itself
/// would then have no more blocks on an SM either).
pub fn cap_needed(blocks: u64, blocks_per_sm: u32, sm_count: u32) -> bool {
    blocks_per_sm == 0 || blocks > u64::from(blocks_per_sm) * u64::from(sm_count)
}

/// A schedule whose registers fit fewer warps per SM than its kernel's, and
/// the `.maxnreg` that would keep the kernel's warps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedCap {
    /// The schedule's entry.
    pub entry: String,
    /// The kernel it was made from.
    pub baseline: String,
    /// The kernel's registers per thread.
    pub baseline_registers: u32,
    /// The schedule's registers as ptxas chose them.
    pub registers: u32,
    /// The `.maxnreg` to compile it again with.
    pub cap: u32,
}

/// The schedules of `ptx` (linked to their kernels: [`ptx_baseline_links`])
/// that lose warps to their registers on `device`, each with its cap;
/// `registers(entry)` gives an entry's registers per thread, `None` for one
/// that was not compiled (such links are skipped). What the loader and the
/// tools that stand in for it (the predictor, `kernel_resources`) decide
/// from: one rule.
pub fn plan_register_caps<E>(
    ptx: &str,
    device: &RegisterFile,
    mut registers: impl FnMut(&str) -> Result<Option<u32>, E>,
) -> Result<Vec<PlannedCap>, E> {
    let mut planned = Vec::new();
    for (entry, baseline) in ptx_baseline_links(ptx) {
        let (Some(own), Some(kernel)) = (registers(&entry)?, registers(&baseline)?) else {
            continue;
        };
        if let Some(cap) = register_cap(own, kernel, device) {
            planned.push(PlannedCap {
                entry,
                baseline,
                baseline_registers: kernel,
                registers: own,
                cap,
            });
        }
    }
    Ok(planned)
}

/// What loading did about one schedule whose registers cost warps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegisterCap {
    /// The schedule, its kernel, their registers and the `.maxnreg` it was
    /// compiled again with.
    pub plan: PlannedCap,
    /// What came of it.
    pub outcome: CapOutcome,
}

impl RegisterCap {
    /// Whether the capped copy runs in the schedule's place.
    pub fn applied(&self) -> bool {
        self.outcome.is_applied()
    }
}

/// Whether a [`RegisterCap`] is in use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CapOutcome {
    /// The capped code runs: `registers` per thread, no more local memory
    /// (spills) than before.
    Applied {
        /// Registers per thread of the capped code.
        registers: u32,
    },
    /// ptxas needed more local memory (spills) under the cap: the
    /// schedule keeps its own code.
    Spills {
        /// Local bytes per thread without the cap.
        before: u32,
        /// Local bytes per thread with it.
        after: u32,
    },
    /// Compiling the capped copy failed (the driver's message): the schedule
    /// keeps its own code.
    NotCompiled(String),
}

impl CapOutcome {
    /// Whether the capped copy is used.
    pub fn is_applied(&self) -> bool {
        matches!(self, CapOutcome::Applied { .. })
    }

    /// Whether a capped copy is used: only where it needs no more local
    /// memory (spills) per thread than the schedule's own code.
    pub fn judge(registers: u32, local_before: u32, local_after: u32) -> Self {
        if local_after > local_before {
            CapOutcome::Spills {
                before: local_before,
                after: local_after,
            }
        } else {
            CapOutcome::Applied { registers }
        }
    }
}

impl fmt::Display for RegisterCap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let RegisterCap {
            plan:
                PlannedCap {
                    entry,
                    baseline,
                    baseline_registers,
                    registers,
                    cap,
                },
            outcome,
        } = self;
        write!(
            f,
            "{entry}: {registers} registers ({baseline}: {baseline_registers}); .maxnreg {cap}: "
        )?;
        match outcome {
            CapOutcome::Applied { registers } => write!(f, "{registers} registers, no spills"),
            CapOutcome::Spills { before, after } => write!(
                f,
                "not used, local memory {before} -> {after} bytes per thread (spills)"
            ),
            CapOutcome::NotCompiled(error) => write!(f, "not used, did not compile: {error}"),
        }
    }
}

/// The schedules of PTX text linked to the kernels they were made from:
/// `(schedule, kernel)`, read from `.global` byte arrays named
/// [`BASELINE_LINK_PREFIX`]`<schedule>` whose bytes spell the kernel's name.
pub fn ptx_baseline_links(ptx: &str) -> Vec<(String, String)> {
    let mut links = Vec::new();
    for line in ptx.lines() {
        let Some(at) = line.find(BASELINE_LINK_PREFIX) else {
            continue;
        };
        if !line.contains(".global") {
            continue;
        }
        let rest = &line[at + BASELINE_LINK_PREFIX.len()..];
        let schedule = ptx_identifier(rest).to_string();
        let bytes = line
            .split_once('{')
            .and_then(|(_, rest)| rest.split_once('}'))
            .and_then(|(list, _)| {
                list.split(',')
                    .map(|b| b.trim().parse::<u8>().ok())
                    .collect::<Option<Vec<u8>>>()
            });
        if let Some(kernel) = bytes.and_then(|b| String::from_utf8(b).ok()) {
            if !schedule.is_empty() && !kernel.is_empty() {
                links.push((schedule, kernel));
            }
        }
    }
    links
}

/// What a capped copy of entry `name` is called in the module
/// [`ptx_with_register_caps`] writes.
pub fn capped_name(name: &str) -> String {
    format!("{name}{CAPPED_SUFFIX}")
}

/// Suffix of a capped copy's name (`capped_name`).
const CAPPED_SUFFIX: &str = "__clustered_capped";

/// PTX text with, after everything it had, a copy of each `.entry` named in
/// `caps`, renamed ([`capped_name`], its parameters too) and given
/// `.maxnreg` between its parameter list and its body. One module, so the
/// copies share the module's globals with the entries they copy (a second
/// module would have globals of its own, and a kernel that keeps state in
/// one, or reads one the host wrote, would see another). `None` if an
/// entry's extent cannot be read or a copy's name is taken.
pub fn ptx_with_register_caps(ptx: &str, caps: &[(&str, u32)]) -> Option<String> {
    let mut copies = String::new();
    for (name, entry) in ptx_entry_texts(ptx)? {
        if let Some(&(_, cap)) = caps.iter().find(|(n, _)| *n == name) {
            let copy = capped_name(name);
            if ptx.contains(&format!(".entry {copy}(")) {
                return None;
            }
            let params_end = entry.find(')')? + 1;
            let renamed = |text: &str| {
                text.replacen(&format!(".entry {name}("), &format!(".entry {copy}("), 1)
                    .replace(&format!("{name}_param_"), &format!("{copy}_param_"))
            };
            copies.push('\n');
            copies.push_str(&renamed(&entry[..params_end]));
            copies.push_str(&format!("\n.maxnreg {cap}"));
            copies.push_str(&renamed(&entry[params_end..]));
        }
    }
    Some(format!("{ptx}{copies}"))
}

/// Each `.entry` definition of `ptx` in order: its name and its text, from
/// the start of its line through the `}` that closes its body. `None` if an
/// entry's extent or name cannot be read.
pub fn ptx_entry_texts(ptx: &str) -> Option<Vec<(&str, &str)>> {
    let mut entries = Vec::new();
    let mut rest = ptx;
    while let Some(start) = next_entry(rest) {
        let entry_text = &rest[start..];
        let end = entry_end(entry_text)?;
        let entry = &entry_text[..end];
        entries.push((entry_name(entry)?, entry));
        rest = &entry_text[end..];
    }
    Some(entries)
}

/// Where the next `.entry` definition starts: the start of its line (with
/// `.visible` or `.weak` before it).
fn next_entry(ptx: &str) -> Option<usize> {
    let mut offset = 0;
    for line in ptx.split_inclusive('\n') {
        let code = line.split("//").next().unwrap_or("");
        let mut words = code.split_whitespace();
        let mut word = words.next();
        if matches!(word, Some(".visible" | ".weak")) {
            word = words.next();
        }
        if word == Some(".entry") {
            return Some(offset);
        }
        offset += line.len();
    }
    None
}

/// The length of the entry definition at the start of `text`: through the
/// `}` that closes its body, and the line's end after it.
fn entry_end(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut entered = false;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let code = line.split("//").next().unwrap_or("");
        for c in code.chars() {
            match c {
                '{' => {
                    depth += 1;
                    entered = true;
                }
                '}' => depth = depth.checked_sub(1)?,
                _ => {}
            }
        }
        offset += line.len();
        if entered && depth == 0 {
            return Some(offset);
        }
    }
    None
}

/// The name of the entry whose definition `text` starts with.
fn entry_name(text: &str) -> Option<&str> {
    let at = text.find(".entry")? + ".entry".len();
    let name = ptx_identifier(text[at..].trim_start());
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ATAX's column pass: 64 blocks, its grid-stride loop at 92 registers
    /// (2 blocks of 256 an SM) where the kernel has 80 (3).
    #[test]
    fn a_grid_held_in_one_wave_needs_no_cap() {
        assert!(!cap_needed(64, 2, 132));
        assert!(!cap_needed(264, 2, 132), "exactly one wave");
        assert!(cap_needed(265, 2, 132));
        assert!(cap_needed(1 << 20, 2, 132), "a big grid keeps the warps");
        assert!(
            cap_needed(1, 0, 132),
            "does not fit at all: the cap is all there is"
        );
    }

    #[test]
    fn an_h100_keeps_64_warps_up_to_32_registers() {
        let h100 = RegisterFile::from(&DeviceProperties::h100_sxm());
        assert_eq!(warps_by_registers(21, &h100), 64);
        assert_eq!(warps_by_registers(32, &h100), 64);
        // 33 registers are allocated as 40: 65536 / 1280 = 51, in groups of 4.
        assert_eq!(warps_by_registers(33, &h100), 48);
        assert_eq!(warps_by_registers(40, &h100), 48);
        assert_eq!(warps_by_registers(48, &h100), 40);
        assert_eq!(warps_by_registers(255, &h100), 8);
        assert_eq!(registers_keeping_warps(21, &h100), 32);
        assert_eq!(registers_keeping_warps(32, &h100), 32);
        assert_eq!(registers_keeping_warps(35, &h100), 40);
        // 56 registers allow 36 warps, 57-64 allow 32.
        assert_eq!(warps_by_registers(56, &h100), 36);
        assert_eq!(registers_keeping_warps(50, &h100), 56);
        assert_eq!(registers_keeping_warps(255, &h100), 255);
        assert_eq!(register_cap(35, 21, &h100), Some(32));
        assert_eq!(register_cap(32, 21, &h100), None);
        assert_eq!(register_cap(55, 32, &h100), Some(32));
        // More registers than the kernel, as many warps: no cap.
        assert_eq!(register_cap(40, 36, &h100), None);
    }

    const PTX: &str = "\
.version 7.8
.target sm_90
.address_size 64

.visible .global .align 1 .b8 __clustered_baseline_k_stride[1] = {107};
.visible .global .align 1 .b8 __clustered_baseline_k_agents[1] = {107};
.shared .align 16 .b8 tile[64];

.func helper(.param .b32 x)
{
\tret;
}

\t// .globl\tk
.visible .entry k(
\t.param .u64 .ptr .align 1 k_param_0
)
{
\tret;
}

.visible .entry k_stride(
\t.param .u64 .ptr .align 1 k_stride_param_0,
\t.param .align 8 .b8 k_stride_param_1[184]
)
{
\t{ .reg .pred p; // a scoped block, as inline PTX writes one
\tsetp.ne.u32 p, 1, 0; }
\tret;
}
.visible .entry k_agents(
\t.param .u64 .ptr .align 1 k_agents_param_0
)
{
\tret;
}
";

    #[test]
    fn links_name_each_schedule_and_its_kernel() {
        assert_eq!(
            ptx_baseline_links(PTX),
            [
                ("k_stride".to_string(), "k".to_string()),
                ("k_agents".to_string(), "k".to_string())
            ]
        );
    }

    #[test]
    fn only_schedules_that_lose_warps_are_planned_and_a_cap_that_spills_is_not_used() {
        let h100 = RegisterFile::from(&DeviceProperties::h100_sxm());
        let registers = |name: &str| {
            Ok::<_, ()>(match name {
                "k" => Some(21),
                "k_stride" => Some(35),
                "k_agents" => Some(32),
                _ => None,
            })
        };
        let planned = plan_register_caps(PTX, &h100, registers).unwrap();
        assert_eq!(
            planned,
            [PlannedCap {
                entry: "k_stride".to_string(),
                baseline: "k".to_string(),
                baseline_registers: 21,
                registers: 35,
                cap: 32,
            }]
        );
        // An entry the module does not have: its link is skipped.
        let missing =
            plan_register_caps(PTX, &h100, |name| Ok::<_, ()>((name != "k").then_some(40)));
        assert_eq!(missing, Ok(Vec::new()));
        assert_eq!(
            CapOutcome::judge(32, 0, 0),
            CapOutcome::Applied { registers: 32 }
        );
        assert_eq!(
            CapOutcome::judge(32, 8, 8),
            CapOutcome::Applied { registers: 32 }
        );
        assert_eq!(
            CapOutcome::judge(32, 0, 16),
            CapOutcome::Spills {
                before: 0,
                after: 16
            }
        );
    }

    #[test]
    fn capped_copies_follow_the_module_renamed_with_their_cap() {
        let capped = ptx_with_register_caps(PTX, &[("k_stride", 32)]).unwrap();
        assert!(
            capped.starts_with(PTX),
            "the module as it was, then the copies"
        );
        let copy = &capped[PTX.len()..];
        assert!(copy.contains(
            ".visible .entry k_stride__clustered_capped(\n\t.param .u64 .ptr .align 1 k_stride__clustered_capped_param_0,"
        ), "{copy}");
        assert!(
            copy.contains("k_stride__clustered_capped_param_1[184]\n)\n.maxnreg 32\n{"),
            "{copy}"
        );
        assert!(
            copy.contains("setp.ne.u32 p, 1, 0; }\n\tret;\n}\n"),
            "{copy}"
        );
        assert!(
            !copy.contains(".entry k_agents") && !copy.contains(".entry k("),
            "{copy}"
        );
        assert_eq!(capped_name("k_stride"), "k_stride__clustered_capped");
        // A copy's name already taken, or an entry whose body never closes:
        // no copy.
        let taken = format!("{PTX}.visible .entry k_stride__clustered_capped(\n)\n{{\n}}\n");
        assert_eq!(ptx_with_register_caps(&taken, &[("k_stride", 32)]), None);
        assert_eq!(
            ptx_with_register_caps("\n.visible .entry k(\n)\n{\n", &[]),
            None
        );
    }
}
