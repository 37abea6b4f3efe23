//! What ptxas's schedule does to a kernel, read from its SASS
//! (`cuobjdump -sass`): PTX is not SASS, and the same PTX loop can keep a
//! dozen loads in flight in one entry and four in another.

use std::collections::BTreeMap;

/// One SASS instruction: its address and its text (`LDG.E R4, desc[..]`,
/// without the `;`).
pub type Instruction = (u32, String);

/// Each function of a `cuobjdump -sass` listing, its instructions in order.
pub fn functions(listing: &str) -> BTreeMap<String, Vec<Instruction>> {
    let mut functions: BTreeMap<String, Vec<Instruction>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in listing.lines() {
        if let Some(name) = line.split("Function : ").nth(1) {
            current = Some(name.trim().to_string());
            continue;
        }
        let (Some(name), Some(code)) = (&current, line.split("*/").nth(1)) else {
            continue;
        };
        let address = line
            .split("/*")
            .nth(1)
            .and_then(|a| a.split("*/").next())
            .and_then(|a| u32::from_str_radix(a.trim(), 16).ok());
        let text = code.split(';').next().unwrap_or("").trim();
        if let (Some(address), false) = (address, text.is_empty()) {
            functions
                .entry(name.clone())
                .or_default()
                .push((address, text.to_string()));
        }
    }
    functions
}

/// A SASS instruction's opcode and operands, past its guard:
/// `@P0 LDG.E.128 R4, desc[UR4][R2.64] ;` gives `LDG.E.128` and
/// `R4, desc[UR4][R2.64] ;`; `NOP;` gives `NOP` and nothing.
pub fn parts(text: &str) -> (&str, &str) {
    let text = text.trim();
    let unguarded = match text.split_once(' ') {
        Some((guard, rest)) if guard.starts_with('@') => rest.trim_start(),
        _ => text,
    };
    let (opcode, operands) = unguarded.split_once(' ').unwrap_or((unguarded, ""));
    (opcode.trim_end_matches(';'), operands.trim_start())
}

/// A SASS instruction's opcode, past its guard ([`parts`]).
pub fn opcode(text: &str) -> &str {
    parts(text).0
}

/// The global loads the hot loop keeps in flight: in the loop (a backward
/// branch's range) whose own instructions (those of no loop nested in it)
/// hold the most `LDG`s, the most loads issued and not yet read, walking
/// those instructions once in order. 0 without a loop. Own instructions,
/// not the innermost loop: an agent's task loop holds its body's loads and,
/// nested in it, the claim's spin on a ticket (conv5x5's agents: 25 loads
/// against the spin's one).
///
/// What the schedule of a body costs when its instructions stay the same:
/// the agents' copy of naive SGEMM has the baseline's loads and FMAs, but
/// ptxas, short of registers beside the loop's state, reads each load soon
/// after issuing it (4 in flight against the baseline's 12; 0.19x of its
/// time on an H100).
pub fn loads_in_flight(sass: &[Instruction]) -> u32 {
    walk_loads(sass).most
}

/// The fewest loads the hot loop (as for [`loads_in_flight`]) has issued
/// and not yet read when it first reads one of them, over its rounds (a
/// round: loads issued, then the first read of one): how many of a step's
/// loads wait together in its worst round. 0 without a loop or loads.
///
/// What a loop's count of loads in flight does not show: the float
/// Jacobi 7 walk's unrolled loop kept 5 in flight in one step and issued
/// the other step's x-neighbours only after reading its first load (3 then
/// 2; docs/BENCHMARKS.md, "The walk's pointers, stepped by one offset").
pub fn fewest_loads_together(sass: &[Instruction]) -> u32 {
    walk_loads(sass).rounds.into_iter().min().unwrap_or(0)
}

/// The loops of a function: each backward branch's range, from its target
/// to the branch.
fn loops(sass: &[Instruction]) -> Vec<(u32, u32)> {
    let branch_target = |text: &str| -> Option<u32> {
        let target = text.split("BRA ").nth(1)?.split([' ', ';']).next()?;
        u32::from_str_radix(target.trim_start_matches("0x"), 16).ok()
    };
    sass.iter()
        .filter_map(|(at, text)| Some((branch_target(text)?, *at)))
        .filter(|(target, at)| target < at)
        .collect()
}

/// Whether loop `inner` lies within loop `outer` and is not it (loops as
/// [`loops`] gives them).
fn nested(inner: (u32, u32), outer: (u32, u32)) -> bool {
    inner != outer && outer.0 <= inner.0 && inner.1 <= outer.1
}

/// An opcode's base, without its modifiers: `LDS.64` gives `LDS`.
fn base(opcode: &str) -> &str {
    opcode.split('.').next().unwrap_or("")
}

/// An innermost loop's shape: what it issues and how much of it at once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopShape {
    /// Counts of the opcodes asked for (see [`innermost_loops`]).
    pub ops: BTreeMap<String, u32>,
    /// The most loads (global, generic or shared) issued and not yet read,
    /// walking the loop once in order.
    pub loads_in_flight: u32,
}

/// The innermost loops of a function (backward branches' ranges that hold
/// no other), in address order, each as counts of the opcodes in `ops`
/// (base opcodes: `LDS.64` counts as `LDS`) and the loads it keeps in
/// flight. A global load or store counts as a generic one (`LDG` as `LD`,
/// `STG` as `ST`): a pool task's pointers come from its payload, where
/// ptxas cannot tell their space.
///
/// How two entries that inline one body compare the body's schedule: the
/// same PTX loop compiled to 36 shared loads in one (each coordinate on
/// its own, 7 in flight in `pool_demo`, 11 in the launch) and to 20 in
/// another (the coordinates in 8-byte pairs, one pair in flight at a time:
/// the loop took twice as long; docs/BENCHMARKS.md, "The k-means assign's
/// loads, unguarded").
pub fn innermost_loops(sass: &[Instruction], ops: &[&str]) -> Vec<LoopShape> {
    let loops = loops(sass);
    let mut innermost: Vec<(u32, u32)> = loops
        .iter()
        .copied()
        .filter(|&outer| !loops.iter().any(|&inner| nested(inner, outer)))
        .collect();
    innermost.sort_unstable();
    innermost.dedup();
    innermost
        .into_iter()
        .map(|(start, end)| {
            let body = || {
                sass.iter()
                    .filter(move |(at, _)| (start..=end).contains(at))
            };
            let mut counts = BTreeMap::new();
            for (_, text) in body() {
                let op = match base(opcode(text)) {
                    "LDG" => "LD",
                    "STG" => "ST",
                    op => op,
                };
                if ops.contains(&op) {
                    *counts.entry(op.to_string()).or_default() += 1;
                }
            }
            let is_load = |op: &str| ["LDG", "LD", "LDS"].contains(&base(op));
            LoopShape {
                ops: counts,
                loads_in_flight: pending_loads(body(), is_load).most,
            }
        })
        .collect()
}

/// The hot loop's loads walked once in order: the most pending at once,
/// and the pending count at each round's first read.
#[derive(Default)]
struct LoadWalk {
    most: u32,
    rounds: Vec<u32>,
}

fn walk_loads(sass: &[Instruction]) -> LoadWalk {
    let loops = loops(sass);
    // The instructions of loop `(start, end)` that no loop nested in it
    // holds.
    let own = |(start, end): (u32, u32)| {
        let inner_loops: Vec<(u32, u32)> = loops
            .iter()
            .copied()
            .filter(|&inner| nested(inner, (start, end)))
            .collect();
        sass.iter().filter(move |(at, _)| {
            (start..=end).contains(at) && !inner_loops.iter().any(|&(s, e)| (s..=e).contains(at))
        })
    };
    let loads = |range| own(range).filter(|(_, t)| t.contains("LDG")).count();
    // The most loads; of loops with as many, the shortest (the innermost).
    let Some(&hot) = loops
        .iter()
        .max_by_key(|&&(start, end)| (loads((start, end)), std::cmp::Reverse(end - start)))
    else {
        return LoadWalk::default();
    };
    pending_loads(own(hot), |opcode| opcode.starts_with("LDG"))
}

/// Walks `instructions` once in order, counting the loads (opcodes that
/// `is_load` accepts) issued and not yet read: the most at once, and the
/// count at each round's first read.
fn pending_loads<'a>(
    instructions: impl Iterator<Item = &'a Instruction>,
    is_load: impl Fn(&str) -> bool,
) -> LoadWalk {
    // Registers by number: `R14`, and a wide load's `R14` covers R14..R17.
    let registers = |text: &str| -> Vec<u32> {
        text.split(|c: char| !c.is_ascii_alphanumeric())
            .filter_map(|w| w.strip_prefix('R')?.parse().ok())
            .collect()
    };
    // The loads issued and not yet read, each by the registers it writes.
    let mut pending: Vec<std::ops::Range<u32>> = Vec::new();
    let mut walk = LoadWalk::default();
    // Loads issued since the last round ended.
    let mut issued = 0;
    for (_, text) in instructions {
        let (opcode, operands) = parts(text);
        let (written, read) = if is_load(opcode) {
            let (dest, address) = operands.split_once(',').unwrap_or((operands, ""));
            (registers(dest).first().copied(), registers(address))
        } else {
            (None, registers(operands))
        };
        // Reading any register of a load waits for all of it.
        let waits = |load: &std::ops::Range<u32>| read.iter().any(|r| load.contains(r));
        if issued > 0 && pending.iter().any(waits) {
            walk.rounds.push(pending.len() as u32);
            issued = 0;
        }
        pending.retain(|load| !waits(load));
        if let Some(first) = written {
            let width = if opcode.contains(".128") {
                4
            } else if opcode.contains(".64") {
                2
            } else {
                1
            };
            pending.push(first..first + width);
            walk.most = walk.most.max(pending.len() as u32);
            issued += 1;
        }
    }
    walk
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instruction_splits_past_its_guard() {
        assert_eq!(
            parts("@!P1 LDG.E.128 R4, desc[UR4][R2.64] ;"),
            ("LDG.E.128", "R4, desc[UR4][R2.64] ;")
        );
        assert_eq!(parts("  CCTL.IVALL ;"), ("CCTL.IVALL", ";"));
        assert_eq!(parts("NOP;"), ("NOP", ""));
        assert_eq!(opcode("@P0 MEMBAR.ALL.GPU ;"), "MEMBAR.ALL.GPU");
    }

    fn sass(lines: &[&str]) -> Vec<Instruction> {
        lines
            .iter()
            .enumerate()
            .map(|(i, l)| (16 * i as u32, l.to_string()))
            .collect()
    }

    #[test]
    fn innermost_loops_count_their_own_opcodes() {
        let listing = sass(&[
            "MOV R1, RZ",
            "LDG.E R4, desc[UR4][R2.64]",
            "@!P1 LDS.64 R6, [R3]",
            "FADD R1, R4, R6",
            "@P0 BRA 0x10",
            "STG.E desc[UR4][R2.64], R1",
            "@P1 BRA 0x0",
            "LDS R8, [R3]",
            "FADD R1, R8, R1",
            "@P2 BRA 0x70",
            "EXIT",
        ]);
        let shape = |pairs: &[(&str, u32)], loads_in_flight| LoopShape {
            ops: pairs.iter().map(|&(op, n)| (op.to_string(), n)).collect(),
            loads_in_flight,
        };
        // The outer loop (0x0..0x60) holds the first: not innermost. A
        // global load counts as a generic one; BRA is not asked for. The
        // first loop's two loads are both pending at its FADD.
        assert_eq!(
            innermost_loops(&listing, &["LD", "LDS", "FADD", "ST"]),
            [
                shape(&[("LD", 1), ("LDS", 1), ("FADD", 1)], 2),
                shape(&[("LDS", 1), ("FADD", 1)], 1),
            ]
        );
        assert!(innermost_loops(&sass(&["FADD R1, R1, R1", "EXIT"]), &["FADD"]).is_empty());
    }

    #[test]
    fn counts_the_loads_the_hot_loop_keeps_in_flight() {
        let batched = sass(&[
            "MOV R1, RZ",
            "LDG.E R4, desc[UR4][R2.64]",
            "@P1 LDG.E.64 R6, desc[UR4][R2.64+0x4]",
            "FFMA R1, R4, R6, R1",
            "FFMA R1, R4, R7, R1",
            "@P0 BRA 0x10",
            "EXIT",
        ]);
        // R4, then the wide load into R6 and R7: two loads pending.
        assert_eq!(loads_in_flight(&batched), 2);
        let interleaved = sass(&[
            "MOV R1, RZ",
            "LDG.E R4, desc[UR4][R2.64]",
            "FFMA R1, R4, R4, R1",
            "LDG.E R6, desc[UR4][R2.64+0x4]",
            "FFMA R1, R6, R6, R1",
            "@P0 BRA 0x10",
            "EXIT",
        ]);
        assert_eq!(loads_in_flight(&interleaved), 1);
        // An outer loop around the batched one is not the hot loop.
        let mut nested = batched.clone();
        nested.insert(6, (0x58, "@P1 BRA 0x0".to_string()));
        assert_eq!(loads_in_flight(&nested), 2);
        // A task loop around its body's loads and a spin on a ticket (one
        // strong load, read at once): the task loop is the hot one.
        let claimed = sass(&[
            "LDG.E.STRONG.GPU R9, desc[UR4][R8.64]",
            "ISETP.NE.AND P2, PT, R9, RZ, PT",
            "@P2 BRA 0x0",
            "LDG.E R4, desc[UR4][R2.64]",
            "LDG.E R5, desc[UR4][R2.64+0x4]",
            "FADD R1, R4, R5",
            "@P0 BRA 0x0",
            "EXIT",
        ]);
        assert_eq!(loads_in_flight(&claimed), 2);
        // A 16-byte load is one load, read when any of its registers is.
        let wide = sass(&[
            "LDG.E.128 R8, desc[UR4][R2.64]",
            "LDG.E R4, desc[UR4][R2.64+0x10]",
            "FADD R1, R10, R1",
            "FADD R1, R4, R1",
            "@P0 BRA 0x0",
            "EXIT",
        ]);
        assert_eq!(loads_in_flight(&wide), 2);
        assert_eq!(fewest_loads_together(&wide), 2);
        // No loop: 0.
        assert_eq!(
            loads_in_flight(&sass(&["LDG.E R4, desc[UR4][R2.64]", "EXIT"])),
            0
        );
    }

    /// Two steps of a walk, unrolled: the first reads its first load before
    /// issuing the rest (3, then 2), the second issues all five first.
    #[test]
    fn counts_the_fewest_loads_a_round_issues_together() {
        let split = sass(&[
            "LDG.E R10, desc[UR4][R2.64]",
            "LDG.E R11, desc[UR4][R4.64]",
            "LDG.E R12, desc[UR4][R6.64]",
            "FADD R1, R10, R0",
            "LDG.E R13, desc[UR4][R8.64+0x4]",
            "LDG.E R14, desc[UR4][R8.64+-0x4]",
            "FADD R1, R11, R1",
            "FADD R1, R12, R1",
            "FADD R1, R13, R1",
            "FADD R1, R14, R1",
            "LDG.E R10, desc[UR4][R2.64]",
            "LDG.E R11, desc[UR4][R4.64]",
            "LDG.E R12, desc[UR4][R6.64]",
            "LDG.E R13, desc[UR4][R8.64+0x4]",
            "LDG.E R14, desc[UR4][R8.64+-0x4]",
            "FADD R1, R10, R1",
            "FADD R1, R11, R1",
            "FADD R1, R12, R1",
            "FADD R1, R13, R1",
            "FADD R1, R14, R1",
            "@P0 BRA 0x0",
            "EXIT",
        ]);
        assert_eq!(loads_in_flight(&split), 5);
        // Rounds of 3, then 4 (R11, R12 still pending and two more), then 5.
        assert_eq!(fewest_loads_together(&split), 3);
        let together: Vec<Instruction> = split
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != 3)
            .map(|(_, x)| x.clone())
            .collect();
        assert_eq!(fewest_loads_together(&together), 5);
        assert_eq!(fewest_loads_together(&sass(&["EXIT"])), 0);
    }

    #[test]
    fn reads_a_listing() {
        let listing = "\tcode for sm_90\n\t\tFunction : copy\n\
        /*0000*/                   LDC R1, c[0x0][0x28] ;           /* 0x00000a00ff017b82 */\n\
                                                                     /* 0x000fe20000000800 */\n\
        /*0010*/                   LDG.E R4, desc[UR4][R2.64] ;     /* 0x0000000402047981 */\n\
\t\tFunction : other\n\
        /*0000*/                   EXIT ;                           /* 0x000000000000794d */\n";
        let f = functions(listing);
        assert_eq!(
            f["copy"],
            vec![
                (0, "LDC R1, c[0x0][0x28]".to_string()),
                (0x10, "LDG.E R4, desc[UR4][R2.64]".to_string())
            ]
        );
        assert_eq!(f["other"], vec![(0, "EXIT".to_string())]);
    }
}
