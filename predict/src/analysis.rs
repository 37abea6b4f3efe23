//! Control flow of one function under one launch: which blocks run, in
//! which loops, how many times.
//!
//! - The CFG's dominators give natural loops (a back edge is a branch to a
//!   block that dominates it).
//! - Uniform branches (on parameters and launch dimensions only) are folded
//!   with the launch's values, so code for other parameter values counts
//!   zero. Blocks that only trap or panic are cold.
//! - A loop's trip count comes from its single exiting compare when one side
//!   is an induction variable (`add r, r, step`) and the other evaluates
//!   from parameters, constants and launch dimensions, with a representative
//!   thread (the middle CTA and thread) where a bound depends on the thread.
//!   The variable may be stepped through a copy (`add x, y, 8` with
//!   `mov y, x` in the loop), and a remainder loop whose counter enters at
//!   its exit value runs zero times (LLVM's rotated form guards it).
//!   Otherwise it is [`Trips::Assumed`], saying why.

use std::collections::HashMap;

use crate::ptx::{Function, Instruction, Module};

/// The launch that the counts are for.
#[derive(Clone, Debug, PartialEq)]
pub struct LaunchContext {
    /// Grid (CTAs) as launched.
    pub grid: [u32; 3],
    /// Block (threads) as launched.
    pub block: [u32; 3],
    /// Blocks per thread block cluster as launched (`[1, 1, 1]`: none).
    pub cluster: [u32; 3],
    /// Parameter values by parameter index.
    pub params: Vec<ParamValue>,
    /// Original tasks (CTAs of the kernel as written) per launched CTA: 1 for
    /// a plain launch; more for persistent schedules whose task loop claims
    /// work with atomics (its trip count is not in the PTX).
    pub tasks_per_block: f64,
    /// Tasks a persistent CTA takes per claim (the agents' chunk): 1 for
    /// one task per claim or a plain launch.
    pub tasks_per_claim: f64,
    /// A schedule whose CTAs loop over tasks (agents, persistent,
    /// grid-stride): its outermost uncounted loop is the task loop, even
    /// with one task or fewer per CTA.
    pub persistent: bool,
    /// The count of loops whose bound is data (a row's length read from
    /// memory), as a run of the kernel measured it ([`crate::unknown_trips`]
    /// solves it from a simulation's loads); `None`: assumed 1.
    pub unknown_trips: Option<f64>,
}

/// What the predictor knows of one kernel parameter.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamValue {
    /// A pointer, or a value the caller does not know.
    Unknown,
    /// A scalar.
    Scalar(u64),
    /// A struct passed by value, as its bytes (`ld.param` at an offset
    /// reads them little-endian): the clustered launch parameter, whose
    /// indexing kind and divisors decide the scheduler's branches.
    Bytes(Vec<u8>),
}

impl ParamValue {
    /// `bytes` bytes at `offset`, as an unsigned little-endian integer.
    fn read(&self, offset: usize, bytes: usize) -> Option<u64> {
        match self {
            ParamValue::Unknown => None,
            ParamValue::Scalar(v) => (offset == 0).then_some(*v),
            ParamValue::Bytes(b) => {
                let field = b.get(offset..offset.checked_add(bytes)?)?;
                Some(
                    field
                        .iter()
                        .rev()
                        .fold(0u64, |v, &byte| (v << 8) | u64::from(byte)),
                )
            }
        }
    }
}

/// A loop's trip count.
#[derive(Clone, Debug, PartialEq)]
pub enum Trips {
    /// From the exit compare and the launch's values.
    Known(u64),
    /// Not derivable; the count used and why.
    Assumed { trips: f64, why: Assumption },
}

/// Why a loop's trip count was assumed, not derived: decided once where the
/// analysis gives up, matched where a later step refines the count, and
/// worded once for the breakdown ([`Assumption::why`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Assumption {
    /// No exit under the launch's values: an agent's or a persistent CTA's
    /// loop (1, until the task loop is found).
    NoExit,
    /// More than one exit: a search or a claim loop (1).
    Search,
    /// The exit does not compare an induction variable with a value known
    /// from the launch (1, or the simulated run's count).
    Unknown,
    /// The exit compare never ends for the launch's values (1).
    NonTerminating,
    /// A persistent launch's claim loop: tasks per block over tasks per
    /// claim.
    ClaimLoop,
    /// The tasks of one claim: the schedule's chunk.
    ClaimTasks,
    /// A persistent launch's task loop: tasks per block.
    TaskLoop,
    /// The exit compares with data: the count that makes the simulated
    /// run's loads per task.
    DataBound,
}

impl Assumption {
    /// The reason, as the breakdown prints it.
    pub const fn why(self) -> &'static str {
        match self {
            Assumption::NoExit => "no exit under the launch's values (an agent's or a persistent CTA's loop); assumed 1",
            Assumption::Search => "more than one exit (a search or a claim loop); assumed 1",
            Assumption::Unknown => "the exit does not compare an induction variable with a value known from the launch; assumed 1",
            Assumption::NonTerminating => "the exit compare does not terminate for the launch's values; assumed 1",
            Assumption::ClaimLoop => "the claim loop of a persistent launch: its count comes from atomics; assumed the launch's original CTAs per launched CTA over the tasks per claim",
            Assumption::ClaimTasks => "the tasks of one claim: assumed the schedule's chunk",
            Assumption::TaskLoop => "the task loop of a persistent launch: its count comes from atomics or the schedule's parameter; assumed the launch's original CTAs per launched CTA",
            Assumption::DataBound => "the exit compares with data (not the launch's values); assumed the count that makes the simulated run's loads per task",
        }
    }
}

impl core::fmt::Display for Assumption {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.why())
    }
}

impl Trips {
    /// The count used.
    pub fn value(&self) -> f64 {
        match self {
            Trips::Known(n) => *n as f64,
            Trips::Assumed { trips, .. } => *trips,
        }
    }

    /// Assumed for the reason `why`.
    fn assumed_because(&self, why: Assumption) -> bool {
        matches!(self, Trips::Assumed { why: reason, .. } if *reason == why)
    }
}

/// A natural loop.
#[derive(Clone, Debug, PartialEq)]
pub struct Loop {
    /// The header block's index and label.
    pub header: usize,
    pub label: String,
    /// Its blocks (header included).
    pub blocks: Vec<usize>,
    /// Loops that contain it.
    pub depth: usize,
    pub trips: Trips,
}

/// A function's blocks and how often each runs per thread (per warp: the
/// same, warps run in lockstep along the hot path).
#[derive(Clone, Debug)]
pub struct FlowAnalysis {
    pub loops: Vec<Loop>,
    /// Executions of each block (0 for unreachable or cold blocks).
    pub executions: Vec<f64>,
}

/// The special registers the launch decides (none of the names is a prefix
/// of another: matched with `starts_with`, `.x` and the like after them).
const SPECIAL: &[&str] = &[
    "%tid",
    "%ntid",
    "%ctaid",
    "%nctaid",
    "%cluster_nctarank",
    "%cluster_ctarank",
    "%cluster_nctaid",
    "%cluster_ctaid",
];

struct Cfg {
    successors: Vec<Vec<usize>>,
    predecessors: Vec<Vec<usize>>,
}

fn cfg(function: &Function, folded: &HashMap<usize, bool>) -> Cfg {
    let n = function.blocks.len();
    let mut successors = vec![Vec::new(); n];
    for (i, block) in function.blocks.iter().enumerate() {
        let last = block.instructions.last();
        let fall = (i + 1 < n).then_some(i + 1);
        match last.map(|l| (l.op(), l)) {
            Some(("ret" | "exit" | "trap", _)) => {}
            Some(("bra", branch)) => {
                let target = branch
                    .branch_target()
                    .and_then(|t| function.block_of_label(t));
                match (&branch.guard, folded.get(&i)) {
                    (None, _) => successors[i].extend(target),
                    (Some(_), Some(true)) => successors[i].extend(target),
                    (Some(_), Some(false)) => successors[i].extend(fall),
                    (Some(_), None) => {
                        successors[i].extend(target);
                        successors[i].extend(fall);
                    }
                }
            }
            Some(("brx", _)) => {
                // An indexed branch: its table's labels are not parsed;
                // treat it as falling through (rare: switch tables).
                successors[i].extend(fall);
            }
            _ => successors[i].extend(fall),
        }
        successors[i].dedup();
    }
    let mut predecessors = vec![Vec::new(); n];
    for (i, s) in successors.iter().enumerate() {
        for &t in s {
            predecessors[t].push(i);
        }
    }
    Cfg {
        successors,
        predecessors,
    }
}

fn reachable(cfg: &Cfg) -> Vec<bool> {
    let mut seen = vec![false; cfg.successors.len()];
    let mut stack = vec![0usize];
    while let Some(b) = stack.pop() {
        if b >= seen.len() || seen[b] {
            continue;
        }
        seen[b] = true;
        stack.extend(cfg.successors[b].iter().copied());
    }
    seen
}

/// Immediate dominators (Cooper, Harvey and Kennedy's iterative algorithm
/// over reverse postorder); `None` for unreachable blocks and the entry.
fn immediate_dominators(cfg: &Cfg, live: &[bool]) -> Vec<Option<usize>> {
    let n = cfg.successors.len();
    let mut order = Vec::new();
    let mut visited = vec![false; n];
    // Iterative postorder.
    let mut stack = vec![(0usize, 0usize)];
    visited[0] = true;
    while let Some((b, next)) = stack.pop() {
        if let Some(&s) = cfg.successors[b].get(next) {
            stack.push((b, next + 1));
            if !visited[s] {
                visited[s] = true;
                stack.push((s, 0));
            }
        } else {
            order.push(b);
        }
    }
    order.reverse();
    let mut rank = vec![usize::MAX; n];
    for (r, &b) in order.iter().enumerate() {
        rank[b] = r;
    }
    let mut idom: Vec<Option<usize>> = vec![None; n];
    idom[0] = Some(0);
    let mut changed = true;
    while changed {
        changed = false;
        for &b in order.iter().skip(1) {
            let mut new: Option<usize> = None;
            for &p in &cfg.predecessors[b] {
                if !live[p] || idom[p].is_none() {
                    continue;
                }
                new = Some(match new {
                    None => p,
                    Some(mut a) => {
                        let mut c = p;
                        while a != c {
                            while rank[a] > rank[c] {
                                a = idom[a].unwrap_or(0);
                            }
                            while rank[c] > rank[a] {
                                c = idom[c].unwrap_or(0);
                            }
                        }
                        a
                    }
                });
            }
            if new.is_some() && idom[b] != new {
                idom[b] = new;
                changed = true;
            }
        }
    }
    idom[0] = None;
    idom
}

fn dominates(idom: &[Option<usize>], a: usize, mut b: usize) -> bool {
    loop {
        if a == b {
            return true;
        }
        match idom[b] {
            Some(p) if p != b => b = p,
            _ => return false,
        }
    }
}

/// Evaluates integer registers and predicates from a function's text.
struct Evaluator<'a> {
    function: &'a Function,
    context: &'a LaunchContext,
    idom: &'a [Option<usize>],
    /// Only parameters, constants and launch dimensions: no thread or CTA
    /// index (for folding branches that every thread takes alike). Also
    /// only registers with one definition: a loop-carried register has its
    /// first iteration's value on the first path found, not its value.
    uniform: bool,
    definitions: HashMap<&'a str, u32>,
    /// Which blocks reach which and each register's defining blocks, to
    /// see a definition that reaches a use around its dominators (a counter
    /// stepped in an earlier loop); `None`: dominators only (the uniform
    /// evaluator, which takes no register with two definitions anyway).
    flow: Option<(Reach, HashMap<&'a str, Vec<usize>>)>,
}

/// The blocks defining each register.
fn defining_blocks(function: &Function) -> HashMap<&str, Vec<usize>> {
    let mut blocks: HashMap<&str, Vec<usize>> = HashMap::new();
    for (b, block) in function.blocks.iter().enumerate() {
        for i in &block.instructions {
            if let Some(d) = i.destination() {
                let list = blocks.entry(d).or_default();
                if list.last() != Some(&b) {
                    list.push(b);
                }
            }
        }
    }
    blocks
}

/// Which blocks a path of one or more CFG edges leads to from each block,
/// found once per function rather than by a walk per query (the answers
/// are the same: `predict --all` printed the same bytes; its time is
/// ptxas's either way).
struct Reach(Vec<Vec<bool>>);

impl Reach {
    fn of(graph: &Cfg) -> Reach {
        let n = graph.successors.len();
        let rows = (0..n)
            .map(|from| {
                let mut seen = vec![false; n];
                let mut stack = graph.successors[from].clone();
                while let Some(b) = stack.pop() {
                    if !std::mem::replace(&mut seen[b], true) {
                        stack.extend(graph.successors[b].iter().copied());
                    }
                }
                seen
            })
            .collect();
        Reach(rows)
    }

    /// Whether a path of at least one edge leads from `from` to `to`
    /// (`reaches(b, b)`: `b` is on a cycle).
    fn reaches(&self, from: usize, to: usize) -> bool {
        self.0[from][to]
    }
}

fn definitions(function: &Function) -> HashMap<&str, u32> {
    let mut counts = HashMap::new();
    for block in &function.blocks {
        for i in &block.instructions {
            if let Some(d) = i.destination() {
                *counts.entry(d).or_insert(0) += 1;
            }
        }
    }
    counts
}

impl Evaluator<'_> {
    fn foldable(&self, register: &str) -> bool {
        !self.uniform || self.definitions.get(register).copied().unwrap_or(0) <= 1
    }

    /// The instruction defining `register` that reaches instruction `index`
    /// of `block`: in the block before it, else in its dominators. `None`
    /// where another definition, in a block between that dominator and the
    /// use, reaches the use too (the register's value there depends on the
    /// path: a counter that an earlier loop stepped enters the next loop at
    /// its exit value, not at the value it had before that loop).
    fn reaching_def(&self, register: &str, block: usize, index: usize) -> Option<(usize, usize)> {
        let mut b = block;
        let mut end = index;
        loop {
            let instructions = &self.function.blocks[b].instructions;
            for i in (0..end.min(instructions.len())).rev() {
                if instructions[i].destination() == Some(register) {
                    return Some((b, i));
                }
            }
            let up = self.idom[b]?;
            if let Some((reach, defining)) = &self.flow {
                // In `b` itself only a definition after the use can reach
                // it, and only around a cycle (none came before it: the
                // scan above): `reaches(b, b)` says both.
                let around = defining.get(register).is_some_and(|blocks| {
                    blocks
                        .iter()
                        .any(|&x| x != up && dominates(self.idom, up, x) && reach.reaches(x, b))
                });
                if around {
                    return None;
                }
            }
            b = up;
            end = usize::MAX;
        }
    }

    fn operand(&self, operand: &str, block: usize, index: usize, depth: u32) -> Option<i128> {
        let operand = operand.trim();
        if let Some(value) = immediate(operand) {
            return Some(value);
        }
        if let Some(special) = SPECIAL.iter().find(|s| operand.starts_with(**s)) {
            let axis = match operand.rsplit('.').next() {
                Some("y") => 1,
                Some("z") => 2,
                _ => 0,
            };
            let (grid, block_dim) = (self.context.grid[axis], self.context.block[axis]);
            let cluster = self.context.cluster[axis];
            let cluster_blocks: u32 = self.context.cluster.iter().product();
            return match *special {
                "%ntid" => Some(block_dim.into()),
                "%nctaid" => Some(grid.into()),
                "%cluster_nctaid" => Some(cluster.into()),
                "%cluster_nctarank" => Some(cluster_blocks.into()),
                _ if self.uniform => None,
                // The representative thread: the middle of the grid (and
                // of its cluster).
                "%ctaid" => Some((grid / 2).into()),
                "%cluster_ctaid" => Some((cluster / 2).into()),
                "%cluster_ctarank" => Some((cluster_blocks / 2).into()),
                _ => Some((block_dim / 2).into()),
            };
        }
        if !operand.starts_with('%') || depth > 24 || !self.foldable(operand) {
            return None;
        }
        let (b, i) = self.reaching_def(operand, block, index)?;
        self.instruction(&self.function.blocks[b].instructions[i], b, i, depth + 1)
    }

    fn instruction(
        &self,
        inst: &Instruction,
        block: usize,
        index: usize,
        depth: u32,
    ) -> Option<i128> {
        if inst.guard.is_some() {
            return None;
        }
        let ops = &inst.operands;
        let arg = |k: usize| self.operand(ops.get(k)?, block, index, depth);
        let (bits, signed) = width(&inst.opcode);
        let wrapped = |v: i128| Some(wrap(v, bits, signed));
        match inst.op() {
            "mov" => arg(1).and_then(wrapped),
            "ld" if inst.has("param") => {
                // `[name]` or `[name+offset]`; a vector load is not folded.
                if inst.opcode.contains(".v") {
                    return None;
                }
                let address = ops.get(1)?.trim_matches(|c| c == '[' || c == ']');
                let (name, offset) = match address.split_once('+') {
                    Some((name, offset)) => (name, offset.trim().parse().ok()?),
                    None => (address, 0),
                };
                let param = self
                    .function
                    .params
                    .iter()
                    .position(|p| p.name == name.trim())?;
                let value = self
                    .context
                    .params
                    .get(param)?
                    .read(offset, bits.div_ceil(8) as usize)?;
                wrapped(value as i128)
            }
            "cvt" | "cvta" if !inst.opcode.contains(".f") => arg(1).and_then(wrapped),
            "add" => wrapped(arg(1)? + arg(2)?),
            "sub" => wrapped(arg(1)? - arg(2)?),
            "neg" => wrapped(-arg(1)?),
            "mul" if inst.has("wide") => Some(wrap(arg(1)? * arg(2)?, bits * 2, signed)),
            "mul" if inst.has("hi") => wrapped((arg(1)? * arg(2)?) >> bits),
            "mul" => wrapped(arg(1)? * arg(2)?),
            "mad" if inst.has("lo") => wrapped(arg(1)? * arg(2)? + arg(3)?),
            "shl" => wrapped(arg(1)?.checked_shl(arg(2)?.try_into().ok()?)?),
            "shr" => wrapped(arg(1)? >> arg(2)?.clamp(0, 127)),
            "and" => wrapped(arg(1)? & arg(2)?),
            "or" => wrapped(arg(1)? | arg(2)?),
            "xor" => wrapped(arg(1)? ^ arg(2)?),
            "not" => wrapped(!arg(1)?),
            "min" => wrapped(arg(1)?.min(arg(2)?)),
            "max" => wrapped(arg(1)?.max(arg(2)?)),
            "div" if !inst.opcode.contains(".f") => wrapped(arg(1)?.checked_div(arg(2)?)?),
            "rem" => wrapped(arg(1)?.checked_rem(arg(2)?)?),
            "selp" => {
                let p = self.predicate(ops.get(3)?, block, index, depth)?;
                if p {
                    arg(1).and_then(wrapped)
                } else {
                    arg(2).and_then(wrapped)
                }
            }
            _ => None,
        }
    }

    /// A predicate register's value reaching instruction `index` of `block`.
    fn predicate(&self, register: &str, block: usize, index: usize, depth: u32) -> Option<bool> {
        let register = register.trim();
        if let Some(v) = immediate(register) {
            return Some(v != 0);
        }
        if depth > 24 || !self.foldable(register) {
            return None;
        }
        let (b, i) = self.reaching_def(register, block, index)?;
        let inst = &self.function.blocks[b].instructions[i];
        if inst.guard.is_some() {
            return None;
        }
        let ops = &inst.operands;
        let p = |k: usize| self.predicate(ops.get(k)?, b, i, depth + 1);
        match inst.op() {
            "setp" => {
                let a = self.operand(ops.get(1)?, b, i, depth + 1)?;
                let c = self.operand(ops.get(2)?, b, i, depth + 1)?;
                compare(&inst.opcode, a, c)
            }
            "mov" => p(1),
            "not" => p(1).map(|v| !v),
            "and" => Some(p(1)? && p(2)?),
            "or" => Some(p(1)? || p(2)?),
            "xor" => Some(p(1)? ^ p(2)?),
            _ => None,
        }
    }
}

fn immediate(operand: &str) -> Option<i128> {
    if let Some(hex) = operand.strip_prefix("0x") {
        return i128::from_str_radix(hex, 16).ok();
    }
    if let Some(hex) = operand.strip_prefix("-0x") {
        return i128::from_str_radix(hex, 16).ok().map(|v| -v);
    }
    if operand.starts_with("0f") || operand.starts_with("0d") {
        return None; // floating-point bits: not an integer bound
    }
    operand.parse().ok()
}

/// Bits and signedness of an opcode's type (`u32`, `s64`, `b32`...).
fn width(opcode: &str) -> (u32, bool) {
    for part in opcode.split('.').rev() {
        let (signed, digits) = match part.as_bytes().first() {
            Some(b's') => (true, &part[1..]),
            Some(b'u' | b'b') => (false, &part[1..]),
            _ => continue,
        };
        if let Ok(bits) = digits.parse::<u32>() {
            return (bits, signed);
        }
    }
    (64, false)
}

fn wrap(value: i128, bits: u32, signed: bool) -> i128 {
    if bits >= 128 {
        return value;
    }
    let modulus = 1i128 << bits;
    let v = value.rem_euclid(modulus);
    if signed && v >= modulus / 2 {
        v - modulus
    } else {
        v
    }
}

/// `setp.<cmp>.<type>` of two integers.
fn compare(opcode: &str, a: i128, b: i128) -> Option<bool> {
    let (bits, signed) = width(opcode);
    let (a, b) = (wrap(a, bits, signed), wrap(b, bits, signed));
    let cmp = opcode.split('.').nth(1)?;
    Some(match cmp {
        "eq" => a == b,
        "ne" => a != b,
        "lt" | "lo" => a < b,
        "le" | "ls" => a <= b,
        "gt" | "hi" => a > b,
        "ge" | "hs" => a >= b,
        _ => return None,
    })
}

/// Whether a block is cold: it traps or calls a panic.
fn cold(function: &Function, block: usize) -> bool {
    function.blocks[block]
        .instructions
        .iter()
        .any(|i| i.op() == "trap" || i.callee().is_some_and(|c| c.contains("panic")))
}

/// Analyses `function` (of `module`) under `context`.
pub fn analyse(function: &Function, context: &LaunchContext) -> FlowAnalysis {
    let n = function.blocks.len();
    if n == 0 {
        return FlowAnalysis {
            loops: Vec::new(),
            executions: Vec::new(),
        };
    }
    // First pass: dominators of the unfolded CFG, to evaluate predicates.
    let plain = cfg(function, &HashMap::new());
    let live = reachable(&plain);
    let idom = immediate_dominators(&plain, &live);
    let uniform = Evaluator {
        function,
        context,
        idom: &idom,
        uniform: true,
        definitions: definitions(function),
        flow: None,
    };
    let mut folded = HashMap::new();
    for (b, block) in function.blocks.iter().enumerate() {
        if let Some(last) = block.instructions.last() {
            if let (Some((p, negated)), "bra") = (&last.guard, last.op()) {
                let index = block.instructions.len() - 1;
                if let Some(value) = uniform.predicate(p, b, index, 0) {
                    folded.insert(b, value != *negated);
                }
            }
        }
    }
    let graph = cfg(function, &folded);
    let mut live = reachable(&graph);
    // Cold blocks, and what only they reach, do not run.
    for (b, l) in live.iter_mut().enumerate() {
        if cold(function, b) {
            *l = false;
        }
    }
    let idom = immediate_dominators(&graph, &live);
    let representative = Evaluator {
        function,
        context,
        idom: &idom,
        uniform: false,
        definitions: HashMap::new(),
        flow: Some((Reach::of(&graph), defining_blocks(function))),
    };

    // Natural loops, merged by header.
    let mut bodies: Vec<(usize, Vec<bool>)> = Vec::new();
    for u in 0..n {
        if !live[u] {
            continue;
        }
        for &h in &graph.successors[u] {
            if !live[h] || !dominates(&idom, h, u) {
                continue;
            }
            let index = match bodies.iter().position(|(header, _)| *header == h) {
                Some(i) => i,
                None => {
                    let mut body = vec![false; n];
                    body[h] = true;
                    bodies.push((h, body));
                    bodies.len() - 1
                }
            };
            let body = &mut bodies[index].1;
            let mut stack = vec![u];
            while let Some(b) = stack.pop() {
                if body[b] || !live[b] {
                    continue;
                }
                body[b] = true;
                stack.extend(graph.predecessors[b].iter().copied());
            }
        }
    }
    let count = |body: &Vec<bool>| body.iter().filter(|&&x| x).count();
    let mut loops: Vec<Loop> = bodies
        .iter()
        .map(|(h, body)| {
            let depth = bodies
                .iter()
                .filter(|(h2, other)| h2 != h && other[*h] && count(other) > count(body))
                .count();
            Loop {
                header: *h,
                label: function.blocks[*h]
                    .label
                    .clone()
                    .unwrap_or_else(|| format!("block {h}")),
                blocks: (0..n).filter(|&b| body[b]).collect(),
                depth,
                trips: trip_count(&representative, &graph, body, *h),
            }
        })
        .collect();
    // The outermost loop without a derivable count in a persistent launch
    // is its task loop: it runs the launch's tasks per block.
    // Only one: the largest such loop (a scheduler may have several loops
    // at the outer level, one of which runs the tasks).
    let task_loop = loops
        .iter()
        .enumerate()
        .filter(|(_, l)| l.depth == 0 && matches!(l.trips, Trips::Assumed { .. }))
        .max_by_key(|(_, l)| l.blocks.len())
        .map(|(i, _)| i);
    if let (Some(i), true) = (
        task_loop,
        context.persistent || context.tasks_per_block > 1.0,
    ) {
        // With fewer tasks than CTAs, the busiest CTA runs one.
        let tasks = context.tasks_per_block.max(1.0);
        // Claims of other than one task: the chunk loop inside the task
        // loop (an uncounted loop directly in it) runs the claim's tasks, and
        // the claim code around it (atomics, the scheduler's barriers, the
        // steal loops) runs once per claim, not once per task. Found
        // whatever the launch leaves a claim (a chunk of 8 where a block has
        // one task, a claimed tail's runs that outnumber its tasks): left
        // uncounted it would take the data-bounded loops' count.
        let chunk = context.tasks_per_claim.min(tasks);
        let outer = loops[i].blocks.clone();
        // A loop of several exits beside it is the claim's search (steal
        // loops, a ticket's retries), not its tasks, however many blocks
        // the search's branches take.
        let chunk_loop = (context.tasks_per_claim != 1.0)
            .then(|| {
                loops
                    .iter()
                    .enumerate()
                    .filter(|(_, l)| {
                        l.depth == loops[i].depth + 1
                            && outer.contains(&l.header)
                            && matches!(l.trips, Trips::Assumed { .. })
                    })
                    .max_by_key(|(_, l)| {
                        (!l.trips.assumed_because(Assumption::Search), l.blocks.len())
                    })
                    .map(|(j, _)| j)
            })
            .flatten();
        match chunk_loop {
            Some(j) => {
                loops[i].trips = Trips::Assumed {
                    trips: tasks / chunk,
                    why: Assumption::ClaimLoop,
                };
                loops[j].trips = Trips::Assumed {
                    trips: chunk,
                    why: Assumption::ClaimTasks,
                };
            }
            None => {
                loops[i].trips = Trips::Assumed {
                    trips: tasks,
                    why: Assumption::TaskLoop,
                };
            }
        }
    }
    // Loops bounded by data: the count a run measured, where there is one.
    if let Some(trips) = context.unknown_trips {
        for l in &mut loops {
            if l.trips.assumed_because(Assumption::Unknown) {
                l.trips = Trips::Assumed {
                    trips,
                    why: Assumption::DataBound,
                };
            }
        }
    }
    let first_thread = first_thread_blocks(
        function,
        context.block,
        &uniform.definitions,
        &graph,
        &idom,
        &live,
    );
    let warps = f64::from(context.block.iter().product::<u32>().div_ceil(32).max(1));
    let executions = (0..n)
        .map(|b| {
            if !live[b] {
                return 0.0;
            }
            let runs: f64 = loops
                .iter()
                .filter(|l| l.blocks.contains(&b))
                .map(|l| l.trips.value())
                .product();
            // One warp of the block runs them: per warp, a share of a run.
            if first_thread[b] {
                runs / warps
            } else {
                runs
            }
        })
        .collect();
    loops.sort_by_key(|l| l.header);
    FlowAnalysis { loops, executions }
}

/// Blocks that only the block's first thread runs: those dominated by the
/// edge of a branch on `%tid == 0` (the indices of every dimension of the
/// block that has more than one thread, or'ed together) that the first
/// thread takes, where that edge is its target's only way in. A generated
/// kernel maps its CTA (`mapped_once`) and claims its tasks this way, and
/// so do kernels that write a block's result from one thread; they run
/// once a block, not once a warp (ncu on an H100: a redirection issues
/// 19-25 instructions a warp more than its kernel, where its mapping alone
/// is about 45 SASS instructions; docs/BENCHMARKS.md, "a warp's life").
fn first_thread_blocks(
    function: &Function,
    block_dim: [u32; 3],
    counts: &HashMap<&str, u32>,
    graph: &Cfg,
    idom: &[Option<usize>],
    live: &[bool],
) -> Vec<bool> {
    let n = function.blocks.len();
    let mut defined: HashMap<&str, &crate::ptx::Instruction> = HashMap::new();
    for block in &function.blocks {
        for i in &block.instructions {
            if let Some(d) = i.destination().filter(|d| counts.get(d) == Some(&1)) {
                defined.insert(d, i);
            }
        }
    }
    // A register that is zero in exactly the threads whose indices along
    // the dimensions of `mask` (bit 0 for x) are zero: a thread index, or
    // thread indices or'ed together (depth-bounded: cheap, and no cycle).
    fn thread_index(
        register: &str,
        defined: &HashMap<&str, &crate::ptx::Instruction>,
        depth: u32,
    ) -> Option<u8> {
        let i = defined.get(register).filter(|_| depth < 8)?;
        let sources = &i.operands[1..];
        match (i.op(), sources) {
            ("mov", [index]) => match index.as_str() {
                "%tid.x" => Some(1),
                "%tid.y" => Some(2),
                "%tid.z" => Some(4),
                _ => None,
            },
            ("or", [_, ..]) => sources.iter().try_fold(0, |mask, s| {
                Some(mask | thread_index(s, defined, depth + 1)?)
            }),
            _ => None,
        }
    }
    // Only the first thread where every dimension the block has is tested
    // (`%tid.x == 0` in a block of 32 x 8 is a thread in each warp).
    let dimensions = block_dim
        .iter()
        .enumerate()
        .filter(|(_, &d)| d > 1)
        .fold(0u8, |mask, (d, _)| mask | 1 << d);
    let mut first = vec![false; n];
    for (b, block) in function.blocks.iter().enumerate() {
        let Some(last) = block.instructions.last() else {
            continue;
        };
        let (Some((predicate, negated)), Some(target)) = (&last.guard, last.branch_target()) else {
            continue;
        };
        let Some(setp) = defined.get(predicate.as_str()) else {
            continue;
        };
        let equal = match (setp.op(), setp.has("eq"), setp.has("ne")) {
            ("setp", true, _) => true,
            ("setp", _, true) => false,
            _ => continue,
        };
        let tested = match setp.operands.get(1..3) {
            Some([a, zero]) | Some([zero, a]) if zero == "0" => a,
            _ => continue,
        };
        if thread_index(tested, &defined, 0).is_none_or(|m| m & dimensions != dimensions) {
            continue;
        }
        // The branch is taken when the predicate differs from `negated`; the
        // first thread's predicate is `equal`.
        let taken = function.block_of_label(target);
        let fall = (b + 1 < n).then_some(b + 1);
        let edge = if equal != *negated { taken } else { fall };
        let Some(t) = edge.filter(|&t| live[t] && graph.predecessors[t] == [b]) else {
            continue;
        };
        for (d, f) in first.iter_mut().enumerate() {
            if live[d] && dominates(idom, t, d) {
                *f = true;
            }
        }
    }
    first
}

const UNKNOWN: Trips = Trips::Assumed {
    trips: 1.0,
    why: Assumption::Unknown,
};

fn trip_count(eval: &Evaluator<'_>, graph: &Cfg, body: &[bool], header: usize) -> Trips {
    let function = eval.function;
    // Exiting branches: a block of the loop with a successor outside it.
    let exits: Vec<usize> = (0..body.len())
        .filter(|&b| body[b] && graph.successors[b].iter().any(|&s| !body[s]))
        .collect();
    let exit = match exits[..] {
        [exit] => exit,
        [] => {
            return Trips::Assumed {
                trips: 1.0,
                why: Assumption::NoExit,
            }
        }
        _ => {
            return Trips::Assumed {
                trips: 1.0,
                why: Assumption::Search,
            }
        }
    };
    let instructions = &function.blocks[exit].instructions;
    let Some(branch) = instructions.last().filter(|i| i.op() == "bra") else {
        return UNKNOWN;
    };
    let Some((predicate, negated)) = &branch.guard else {
        return UNKNOWN;
    };
    let taken_leaves = branch
        .branch_target()
        .and_then(|t| function.block_of_label(t))
        .is_some_and(|t| !body[t]);
    // The loop leaves where the predicate's value is `leave_on`.
    let leave_on = taken_leaves != *negated;
    exit_trips(
        eval,
        body,
        header,
        predicate,
        (exit, instructions.len() - 1),
        leave_on,
    )
}

/// The trips of a loop that leaves at the first iteration where
/// `predicate` (read at `at`) is `leave_on`: solved where it is a compare
/// of an induction variable with a value from the launch, or, for `or` of
/// two predicates that leaves when true, the first to leave of those it can
/// solve (an upper bound if the other could leave sooner; the shape of
/// Rust's `a..=b` range: `i == b`, or `i > b` for an empty range).
fn exit_trips(
    eval: &Evaluator<'_>,
    body: &[bool],
    header: usize,
    predicate: &str,
    at: (usize, usize),
    leave_on: bool,
) -> Trips {
    let function = eval.function;
    let Some((sb, si)) = eval.reaching_def(predicate, at.0, at.1) else {
        return UNKNOWN;
    };
    let setp = &function.blocks[sb].instructions[si];
    if setp.op() == "or" && setp.has("pred") && leave_on && setp.guard.is_none() {
        let first = setp.operands[1..]
            .iter()
            .take(2)
            .filter_map(
                |p| match exit_trips(eval, body, header, p, (sb, si), true) {
                    Trips::Known(k) => Some(k),
                    _ => None,
                },
            )
            .min();
        return first.map_or(UNKNOWN, Trips::Known);
    }
    if setp.op() != "setp" || setp.operands.len() < 3 || setp.opcode.contains(".f") {
        return UNKNOWN;
    }
    // Which side is the induction variable?
    let in_loop_defs = |register: &str| -> Vec<(usize, usize)> {
        (0..body.len())
            .filter(|&b| body[b])
            .flat_map(|b| {
                function.blocks[b]
                    .instructions
                    .iter()
                    .enumerate()
                    .filter(move |(_, i)| i.destination() == Some(register))
                    .map(move |(i, _)| (b, i))
            })
            .collect()
    };
    let mut induction = None;
    let mut bound = None;
    for (side, operand) in setp.operands[1..3].iter().enumerate() {
        let defs = if operand.starts_with('%') {
            in_loop_defs(operand)
        } else {
            Vec::new()
        };
        match defs[..] {
            [] => bound = Some((side, eval.operand(operand, sb, si, 0))),
            [(db, di)] => {
                let mut def = &function.blocks[db].instructions[di];
                let (mut db, mut di) = (db, di);
                // `selp v, end, v + 1, v == end`: a step that saturates at
                // the end (Rust's `a..=b`): before the end, the step.
                if def.op() == "selp" && def.guard.is_none() {
                    let stepped = def.operands.get(2).map(|r| in_loop_defs(r));
                    let Some([(sb2, si2)]) = stepped.as_deref() else {
                        return UNKNOWN;
                    };
                    (db, di) = (*sb2, *si2);
                    def = &function.blocks[db].instructions[di];
                    if def.operands.get(1) != Some(operand) {
                        return UNKNOWN;
                    }
                }
                // `mov v, w` with `w = v + step` in the loop: the step,
                // through a move LLVM does not look into (the device
                // runtime's `unroll` counts its runs so, to keep LLVM from
                // unrolling them again). `v` changes at the move.
                let mut moved_at = None;
                if def.op() == "mov" && def.guard.is_none() {
                    let stepped = def
                        .operands
                        .get(1)
                        .filter(|r| r.starts_with('%'))
                        .map(|r| in_loop_defs(r));
                    let Some([(sb2, si2)]) = stepped.as_deref() else {
                        return UNKNOWN;
                    };
                    moved_at = Some((db, di));
                    (db, di) = (*sb2, *si2);
                    def = &function.blocks[db].instructions[di];
                    if def.operands.get(1) != Some(operand) {
                        return UNKNOWN;
                    }
                }
                if !matches!(def.op(), "add" | "sub") || def.guard.is_some() {
                    return UNKNOWN;
                }
                let Some(source) = def.operands.get(1) else {
                    return UNKNOWN;
                };
                // The register stepped: the variable itself, or a copy of
                // it (`add x, y, 8` ... `mov y, x`: LLVM keeps the
                // incremented value and the carried one in two registers).
                let copied = if source == operand {
                    None
                } else {
                    let copies = in_loop_defs(source);
                    let all_copies = !copies.is_empty()
                        && copies.iter().all(|&(cb, ci)| {
                            let c = &function.blocks[cb].instructions[ci];
                            c.op() == "mov"
                                && c.guard.is_none()
                                && c.operands.get(1) == Some(operand)
                        });
                    if !all_copies {
                        return UNKNOWN;
                    }
                    // Does the copy come before the step in an iteration?
                    let (cb, ci) = copies[0];
                    let first = (cb == db && ci < di) || (cb != db && dominates(eval.idom, cb, db));
                    Some(first)
                };
                let Some(step) = def.operands.get(2).and_then(|s| eval.operand(s, db, di, 0))
                else {
                    return UNKNOWN;
                };
                let step = if def.op() == "sub" { -step } else { step };
                // The value entering the loop: reaching the header from its
                // immediate dominator. Through a copy made after the step,
                // the first iteration steps the copy's entering value.
                let Some(entering) = eval.idom[header] else {
                    return UNKNOWN;
                };
                let carried = match copied {
                    Some(false) => source.as_str(),
                    _ => operand.as_str(),
                };
                let Some(init) = eval.operand(carried, entering, usize::MAX, 0) else {
                    return UNKNOWN;
                };
                // Compared after the step when the step comes first on the
                // way to the compare.
                let (vb, vi) = moved_at.unwrap_or((db, di));
                let after = (vb == sb && vi < si) || (vb != sb && dominates(eval.idom, vb, sb));
                induction = Some((side, init, step, after));
            }
            _ => return UNKNOWN,
        }
    }
    let (Some((iv_side, init, step, after)), Some((_, Some(limit)))) = (induction, bound) else {
        return UNKNOWN;
    };
    if step == 0 {
        return UNKNOWN;
    }
    // The loop leaves at the first k where the predicate says so.
    let leaves = |k: i128| -> Option<bool> {
        let v = init + step * (k + i128::from(after));
        let (a, b) = if iv_side == 0 { (v, limit) } else { (limit, v) };
        Some(compare(&setp.opcode, a, b)? == leave_on)
    };
    let cmp = setp.opcode.split('.').nth(1).unwrap_or("");
    let k = if matches!(cmp, "eq" | "ne") {
        // Leaves at equality (or inequality): solve init + step (k + after) = limit.
        match leaves(0) {
            Some(true) => Some(0),
            Some(false) => {
                let distance = limit - init - step * i128::from(after);
                match (distance % step == 0, distance / step) {
                    (true, k) if k >= 0 => Some(k),
                    // The counter enters at its exit value (a remainder
                    // loop `n % 8` with n a multiple of 8): LLVM's rotated
                    // form guards the loop with the same compare before
                    // it, so it does not run.
                    (true, -1) if after => return Trips::Known(0),
                    _ => None,
                }
            }
            None => None,
        }
    } else {
        // Ordered compares: monotone in k; binary search the first exit.
        // Up to where the variable would wrap around its width.
        let (bits, _) = width(&setp.opcode);
        let cap: i128 = ((1i128 << bits.min(64)) / step.abs() - 2).clamp(1, 1 << 34);
        match (leaves(0), leaves(cap)) {
            (Some(true), _) => Some(0),
            (Some(false), Some(true)) => {
                let (mut lo, mut hi) = (0i128, cap);
                while hi - lo > 1 {
                    let mid = (lo + hi) / 2;
                    if leaves(mid) == Some(true) {
                        hi = mid;
                    } else {
                        lo = mid;
                    }
                }
                Some(hi)
            }
            _ => None,
        }
    };
    match k.and_then(|k| u64::try_from(k + 1).ok()) {
        Some(trips) => Trips::Known(trips),
        None => Trips::Assumed {
            trips: 1.0,
            why: Assumption::NonTerminating,
        },
    }
}

/// Per-thread dynamic instructions of each block of `function`, with the
/// calls it makes expanded (their own loops analysed without parameters).
pub fn callees<'m>(module: &'m Module, function: &Function) -> Vec<(&'m Function, usize)> {
    let mut found = Vec::new();
    for (b, block) in function.blocks.iter().enumerate() {
        for i in &block.instructions {
            if let Some(callee) = i.callee().and_then(|c| module.function(c)) {
                if !callee.name.contains("panic") {
                    found.push((callee, b));
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptx::Module;

    fn context(params: Vec<Option<u64>>) -> LaunchContext {
        LaunchContext {
            grid: [64, 1, 1],
            block: [256, 1, 1],
            cluster: [1, 1, 1],
            params: params
                .into_iter()
                .map(|p| p.map_or(ParamValue::Unknown, ParamValue::Scalar))
                .collect(),
            tasks_per_block: 1.0,
            tasks_per_claim: 1.0,
            persistent: false,
            unknown_trips: None,
        }
    }

    const COUNTED: &str = r#"
.visible .entry k(
	.param .u32 k_param_0
)
{
	ld.param.b32 	%r1, [k_param_0];
	and.b32 	%r5, %r1, -4;
	mov.b32 	%r2, 0;
$L__BB0_1:
	fma.rn.f32 %f2, %f1, %f1, %f2;
	add.s32 	%r2, %r2, 4;
	setp.lt.u32 	%p1, %r2, %r5;
	@%p1 bra 	$L__BB0_1;
	ret;
}
"#;

    #[test]
    fn trip_count_from_a_parameter() {
        let module = Module::parse(COUNTED).unwrap();
        let k = module.function("k").unwrap();
        let flow = analyse(k, &context(vec![Some(1000)]));
        assert_eq!(flow.loops.len(), 1);
        assert_eq!(flow.loops[0].trips, Trips::Known(250));
        assert_eq!(flow.executions[1], 250.0);
        // Unknown parameter: assumed, and said so.
        let flow = analyse(k, &context(vec![None]));
        assert!(matches!(flow.loops[0].trips, Trips::Assumed { .. }));
    }

    /// A CTA mapped once (`run::mapped_once`, as in a redirection's PTX):
    /// the first thread maps it, the others skip to the barrier.
    const MAPPED_ONCE: &str = r#"
.visible .entry k(
	.param .u32 k_param_0
)
{
	mov.u32 	%r6, %tid.x;
	mov.u32 	%r9, %tid.y;
	mov.u32 	%r10, %tid.z;
	or.b32 	%r11, %r9, %r10;
	or.b32 	%r12, %r11, %r6;
	setp.eq.b32 	%p2, %r12, 0;
	@%p2 bra 	$L__BB0_3;
	add.s32 	%r45, %r19, 4;
	bra.uni 	$L__BB0_4;
$L__BB0_3:
	mul.lo.s32 	%r20, %r6, 3;
	st.shared.u32 	[%r19], %r20;
$L__BB0_4:
	bar.sync 	1;
	ld.shared.u32 	%r36, [%r19];
	ret;
}
"#;

    #[test]
    fn blocks_of_the_first_thread_run_once_a_block() {
        let module = Module::parse(MAPPED_ONCE).unwrap();
        let k = module.function("k").unwrap();
        // 256 threads: 8 warps, one of which maps the CTA.
        let flow = analyse(k, &context(vec![None]));
        assert_eq!(flow.executions, [1.0, 1.0, 1.0 / 8.0, 1.0]);
        // The same branch the other way round (`setp.ne`, the first thread
        // falls through), and a negated guard: the same block.
        for (from, to) in [("setp.eq.b32", "setp.ne.b32"), ("@%p2 bra", "@!%p2 bra")] {
            let text = MAPPED_ONCE.replace(from, to);
            let module = Module::parse(&text).unwrap();
            let flow = analyse(module.function("k").unwrap(), &context(vec![None]));
            assert_eq!(flow.executions, [1.0, 1.0 / 8.0, 1.0, 1.0], "{to}");
        }
        // `%tid.x` alone: the first thread of a block of 256 x 1, a thread
        // of every warp in a block of 32 x 8.
        let flat = LaunchContext {
            block: [32, 8, 1],
            ..context(vec![None])
        };
        let x_only = MAPPED_ONCE.replace("or.b32 	%r12, %r11, %r6;", "mov.u32 	%r12, %tid.x;");
        let module_x = Module::parse(&x_only).unwrap();
        let k_x = module_x.function("k").unwrap();
        let flow = analyse(k_x, &context(vec![None]));
        assert_eq!(flow.executions, [1.0, 1.0, 1.0 / 8.0, 1.0]);
        assert_eq!(analyse(k_x, &flat).executions, [1.0; 4]);
        let tested = MAPPED_ONCE.replace("or.b32 	%r11, %r9, %r10;", "mov.u32 	%r11, %tid.y;");
        let module_xy = Module::parse(&tested).unwrap();
        let flow = analyse(module_xy.function("k").unwrap(), &flat);
        assert_eq!(flow.executions, [1.0, 1.0, 1.0 / 8.0, 1.0]);
        // A branch on another register than the thread's index: every warp.
        let text = MAPPED_ONCE.replace("or.b32 	%r12, %r11, %r6;", "add.s32 	%r12, %r11, %r6;");
        let module = Module::parse(&text).unwrap();
        let flow = analyse(module.function("k").unwrap(), &context(vec![None]));
        assert_eq!(flow.executions, [1.0; 4]);
    }

    /// A loop over the blocks of the thread block cluster (a DSMEM kernel
    /// storing into each), behind a branch on the cluster's size.
    const OVER_THE_CLUSTER: &str = r#"
.visible .entry k(
	.param .u32 k_param_0
)
{
	mov.u32 	%r1, %cluster_nctaid.x;
	mov.u32 	%r9, %cluster_nctarank;
	setp.eq.b32 	%p2, %r9, 1;
	@%p2 bra 	$L__BB0_3;
	mov.b32 	%r2, 0;
$L__BB0_1:
	st.shared::cluster.f32 [%r3], %f1;
	add.s32 	%r2, %r2, 1;
	setp.lt.u32 	%p1, %r2, %r1;
	@%p1 bra 	$L__BB0_1;
$L__BB0_3:
	ret;
}
"#;

    #[test]
    fn the_cluster_s_size_is_a_launch_dimension() {
        let module = Module::parse(OVER_THE_CLUSTER).unwrap();
        let k = module.function("k").unwrap();
        let in_clusters = |cluster| LaunchContext {
            cluster,
            ..context(vec![None])
        };
        let flow = analyse(k, &in_clusters([4, 2, 1]));
        assert_eq!(flow.loops[0].trips, Trips::Known(4));
        assert_eq!(flow.executions, [1.0, 1.0, 4.0, 1.0]);
        // A cluster of one: the branch on its rank count skips the loop.
        let flow = analyse(k, &in_clusters([1, 1, 1]));
        assert_eq!(flow.executions, [1.0, 0.0, 0.0, 1.0]);
    }

    /// LLVM's rotated, unrolled form: a counter counting down to zero.
    const DOWN: &str = r#"
.visible .entry k(
	.param .u32 k_param_0
)
{
	ld.param.b32 	%r6, [k_param_0];
	add.s32 	%r14, %r6, -8;
	shr.u32 	%r15, %r14, 3;
	add.s32 	%r3, %r15, 1;
	and.b32 	%r91, %r3, 1073741822;
$L__BB0_4:
	fma.rn.f32 %f2, %f1, %f1, %f2;
	add.s32 	%r91, %r91, -2;
	setp.eq.b32 	%p4, %r91, 0;
	@%p4 bra 	$L__BB0_5;
	bra.uni 	$L__BB0_4;
$L__BB0_5:
	ret;
}
"#;

    #[test]
    fn trip_count_of_a_countdown() {
        let module = Module::parse(DOWN).unwrap();
        let flow = analyse(module.function("k").unwrap(), &context(vec![Some(8192)]));
        // ((8192 - 8) >> 3) + 1 = 1024, & ~1 = 1024, by 2: 512.
        assert_eq!(flow.loops[0].trips, Trips::Known(512));
    }

    /// sgemm_register's k loop: the incremented value in a second register,
    /// copied back to the carried one at the latch (`add x, y, 8` then
    /// `mov y, x`).
    const COPY_AFTER: &str = r#"
.visible .entry k(
	.param .u32 k_param_0
)
{
	ld.param.b32 	%r12, [k_param_0];
	mov.b32 	%r810, 0;
$L__BB0_2:
	fma.rn.f32 %f2, %f1, %f1, %f2;
	add.s32 	%r11, %r810, 8;
	setp.lt.u32 	%p2, %r11, %r12;
	mov.b32 	%r810, %r11;
	@%p2 bra 	$L__BB0_2;
	ret;
}
"#;

    /// kmeans_assign's cluster loop: the carried value copied first, the
    /// step on the copy, the compare in a latch laid out before the header.
    const COPY_BEFORE: &str = r#"
.visible .entry k(
	.param .u32 k_param_0
)
{
	ld.param.b32 	%r9, [k_param_0];
	mov.b32 	%r117, 0;
	bra.uni 	$L__BB0_3;
$L__BB0_15:
	add.s32 	%r117, %r6, 1;
	setp.eq.b32 	%p11, %r117, %r9;
	@%p11 bra 	$L__BB0_7;
$L__BB0_3:
	mov.b32 	%r6, %r117;
	fma.rn.f32 %f2, %f1, %f1, %f2;
	bra.uni 	$L__BB0_15;
$L__BB0_7:
	ret;
}
"#;

    /// `clustered_device::unroll`'s loop of whole runs (naive SGEMM's k
    /// loop, 8 steps a run): the step through a move in inline `asm`, which
    /// LLVM does not look into, compared with the steps of whole runs.
    const MOVED: &str = r#"
.visible .entry k(
	.param .u32 k_param_0
)
{
	ld.param.b32 	%r6, [k_param_0];
	and.b32 	%r3, %r6, -8;
	mov.b32 	%r66, 0;
$L__BB0_2:
	fma.rn.f32 %f2, %f1, %f1, %f2;
	add.s32 	%r37, %r66, 8;
	// begin inline asm
	mov.b32 %r66, %r37;
	// end inline asm
	setp.lt.u32 	%p2, %r66, %r3;
	@%p2 bra 	$L__BB0_2;
	ret;
}
"#;

    #[test]
    fn trip_count_through_a_move() {
        let module = Module::parse(MOVED).unwrap();
        let flow = analyse(module.function("k").unwrap(), &context(vec![Some(8195)]));
        // 8195 & -8 = 8192: 1024 runs of 8.
        assert_eq!(flow.loops[0].trips, Trips::Known(1024));
    }

    #[test]
    fn trip_count_through_a_copy() {
        let module = Module::parse(COPY_AFTER).unwrap();
        let flow = analyse(module.function("k").unwrap(), &context(vec![Some(4096)]));
        assert_eq!(flow.loops[0].trips, Trips::Known(512));
        let module = Module::parse(COPY_BEFORE).unwrap();
        let flow = analyse(module.function("k").unwrap(), &context(vec![Some(100)]));
        assert_eq!(flow.loops.len(), 1);
        assert_eq!(flow.loops[0].trips, Trips::Known(100));
    }

    /// `for i in 1..=n` as LLVM lowers Rust's inclusive range (the
    /// backprop port's reduction): the counter saturates at `n` through a
    /// `selp`, and the loop leaves when it was `n` or (an empty range) is
    /// past it.
    const INCLUSIVE: &str = r#"
.visible .entry k(
	.param .u32 k_param_0
)
{
	ld.param.b32 	%r9, [k_param_0];
	mov.b32 	%r41, 1;
	bra.uni 	$L__BB0_3;
$L__BB0_5:
	setp.eq.b32 	%p2, %r41, %r9;
	add.s32 	%r26, %r41, 1;
	selp.b32 	%r41, %r9, %r26, %p2;
	setp.gt.u32 	%p4, %r41, %r9;
	or.pred 	%p5, %p2, %p4;
	@%p5 bra 	$L__BB0_6;
$L__BB0_3:
	fma.rn.f32 %f2, %f1, %f1, %f2;
	bra.uni 	$L__BB0_5;
$L__BB0_6:
	ret;
}
"#;

    #[test]
    fn an_inclusive_range_runs_from_its_start_to_its_end() {
        let module = Module::parse(INCLUSIVE).unwrap();
        let k = module.function("k").unwrap();
        for n in [1u64, 4, 100] {
            let flow = analyse(k, &context(vec![Some(n)]));
            assert_eq!(flow.loops[0].trips, Trips::Known(n), "1..={n}");
        }
        // Without the end's value: not counted.
        let flow = analyse(k, &context(vec![None]));
        assert!(matches!(flow.loops[0].trips, Trips::Assumed { .. }));
    }

    /// The remainder loop of an unrolled-by-8 loop: `n & 7` counted down
    /// to zero, behind LLVM's guard; with n a multiple of 8 it does not run.
    const REMAINDER: &str = r#"
.visible .entry k(
	.param .u32 k_param_0
)
{
	ld.param.b32 	%r9, [k_param_0];
	and.b32 	%r97, %r9, 7;
	setp.eq.b32 	%p7, %r97, 0;
	@%p7 bra 	$L__BB0_11;
$L__BB0_10:
	fma.rn.f32 %f2, %f1, %f1, %f2;
	add.s32 	%r97, %r97, -1;
	setp.ne.b32 	%p8, %r97, 0;
	@%p8 bra 	$L__BB0_10;
$L__BB0_11:
	ret;
}
"#;

    #[test]
    fn a_remainder_loop_entered_at_its_exit_value_runs_zero_times() {
        let module = Module::parse(REMAINDER).unwrap();
        let k = module.function("k").unwrap();
        let flow = analyse(k, &context(vec![Some(2048)]));
        assert_eq!(flow.loops[0].trips, Trips::Known(0));
        assert_eq!(flow.executions[1], 0.0);
        let flow = analyse(k, &context(vec![Some(2051)]));
        assert_eq!(flow.loops[0].trips, Trips::Known(3));
    }

    /// A loop stepping `%r1` by 16 to `n`, then a remainder loop stepping
    /// it by 1 to `n`: the second loop's counter enters at the first one's
    /// exit value, not at the 0 it had before the first loop (which counted
    /// ATAX's remainder loop 4096 times where it runs none).
    const STEPPED_BEFORE: &str = r#"
.visible .entry k(
	.param .u32 k_param_0
)
{
	ld.param.b32 	%r9, [k_param_0];
	mov.b32 	%r1, 0;
$L__BB0_1:
	fma.rn.f32 %f2, %f1, %f1, %f2;
	add.s32 	%r1, %r1, 16;
	setp.lt.u32 	%p1, %r1, %r9;
	@%p1 bra 	$L__BB0_1;
	setp.ge.u32 	%p2, %r1, %r9;
	@%p2 bra 	$L__BB0_3;
$L__BB0_2:
	fma.rn.f32 %f2, %f1, %f1, %f2;
	add.s32 	%r1, %r1, 1;
	setp.lt.u32 	%p3, %r1, %r9;
	@%p3 bra 	$L__BB0_2;
$L__BB0_3:
	ret;
}
"#;

    #[test]
    fn a_counter_stepped_by_an_earlier_loop_is_not_taken_at_its_start() {
        let module = Module::parse(STEPPED_BEFORE).unwrap();
        let k = module.function("k").unwrap();
        let flow = analyse(k, &context(vec![Some(2048)]));
        let first = flow.loops.iter().find(|l| l.label == "$L__BB0_1").unwrap();
        assert_eq!(first.trips, Trips::Known(128));
        let remainder = flow.loops.iter().find(|l| l.label == "$L__BB0_2").unwrap();
        // Its entering value depends on the path: not counted, and said so.
        assert!(
            matches!(remainder.trips, Trips::Assumed { .. }),
            "{:?}",
            remainder.trips
        );
    }

    /// A persistent CTA's claim loop: an atomic claims a chunk, the chunk
    /// loop (its count from shared memory) runs the tasks.
    const CLAIMS: &str = r#"
.visible .entry k(
	.param .u64 k_param_0,
	.param .u32 k_param_1
)
{
	ld.param.b64 	%rd1, [k_param_0];
	ld.param.b32 	%r1, [k_param_1];
$L__BB0_7:
	atom.relaxed.gpu.global.inc.u32 %r2, [%rd1], %r1;
	bar.sync 1;
	ld.shared.u32 %r151, [%r9];
	setp.ge.u32 	%p1, %r2, %r1;
	@%p1 bra 	$L__BB0_36;
	max.u32 	%r157, %r151, 1;
$L__BB0_28:
	fma.rn.f32 %f2, %f1, %f1, %f2;
	add.s32 	%r157, %r157, -1;
	setp.eq.b32 	%p42, %r157, 0;
	@%p42 bra 	$L__BB0_7;
	bra.uni 	$L__BB0_28;
$L__BB0_36:
	ret;
}
"#;

    /// A launch of 64 tasks a block claimed 8 at a time, for the claim
    /// fixtures' two parameters.
    fn claims_of_eight() -> LaunchContext {
        let mut launch = context(vec![None, None]);
        launch.tasks_per_block = 64.0;
        launch.tasks_per_claim = 8.0;
        launch
    }

    #[test]
    fn claim_code_runs_once_per_chunk() {
        let module = Module::parse(CLAIMS).unwrap();
        let k = module.function("k").unwrap();
        let mut launch = claims_of_eight();
        let flow = analyse(k, &launch);
        // Blocks: entry, claim, chunk-loop preheader, chunk body, latch, exit.
        let claim = k.block_of_label("$L__BB0_7").unwrap();
        let body = k.block_of_label("$L__BB0_28").unwrap();
        assert_eq!(flow.executions[claim], 8.0);
        assert_eq!(flow.executions[body], 64.0);
        // One task per claim: the claim code runs per task.
        launch.tasks_per_claim = 1.0;
        let flow = analyse(k, &launch);
        assert_eq!(flow.executions[claim], 64.0);
        // A claimed tail with one task a block in three runs (its strided
        // round, a claim, the empty claim): the claim code runs three
        // times, the body once, and the run loop keeps the launch's count
        // where a data-bounded loop takes the measured one.
        launch.tasks_per_block = 1.0;
        launch.tasks_per_claim = 1.0 / 3.0;
        launch.persistent = true;
        launch.unknown_trips = Some(5.0);
        let flow = analyse(k, &launch);
        assert!(
            (flow.executions[claim] - 3.0).abs() < 1e-9,
            "{:?}",
            flow.executions
        );
        assert!(
            (flow.executions[body] - 1.0).abs() < 1e-9,
            "{:?}",
            flow.executions
        );
        // Chunks of 8 where a block has one task (the simulated size): one
        // claim, one task, and the chunk loop still the launch's to count.
        launch.tasks_per_claim = 8.0;
        let flow = analyse(k, &launch);
        assert!(
            (flow.executions[body] - 1.0).abs() < 1e-9,
            "{:?}",
            flow.executions
        );
        launch.unknown_trips = None;
        launch.tasks_per_claim = 1.0;
        // Fewer tasks than CTAs: still the task loop (said so), run once.
        launch.tasks_per_block = 0.5;
        let flow = analyse(k, &launch);
        let task = flow.loops.iter().find(|l| l.header == claim).unwrap();
        assert!(
            matches!(task.trips, Trips::Assumed { trips, why: Assumption::TaskLoop } if trips == 1.0),
            "{:?}",
            task.trips
        );
    }

    /// A claim whose search (a loop of two exits: found a cluster, or none
    /// left) takes more blocks than the loop that runs the claimed tasks, as
    /// the macro's claim path is laid out since the mapping is compiled per
    /// indexing kind.
    const CLAIM_SEARCH: &str = r#"
.visible .entry k(
	.param .u64 k_param_0,
	.param .u32 k_param_1
)
{
	ld.param.b64 	%rd1, [k_param_0];
	ld.param.b32 	%r1, [k_param_1];
$L__BB0_7:
	mov.b32 	%r5, 0;
$L__BB0_10:
	atom.relaxed.gpu.global.inc.u32 %r2, [%rd1], %r1;
	setp.lt.u32 	%p1, %r2, %r1;
	@%p1 bra 	$L__BB0_12;
	add.s32 	%r5, %r5, 1;
	setp.eq.b32 	%p2, %r5, %r1;
	@%p2 bra 	$L__BB0_36;
	bra.uni 	$L__BB0_11;
$L__BB0_11:
	ld.relaxed.gpu.global.u32 %r6, [%rd1];
	atom.relaxed.gpu.global.or.b32 %r7, [%rd1], %r6;
	bra.uni 	$L__BB0_10;
$L__BB0_12:
	bar.sync 1;
	ld.shared.u32 %r151, [%r9];
	max.u32 	%r157, %r151, 1;
$L__BB0_28:
	fma.rn.f32 %f2, %f1, %f1, %f2;
	add.s32 	%r157, %r157, -1;
	setp.eq.b32 	%p42, %r157, 0;
	@%p42 bra 	$L__BB0_7;
	bra.uni 	$L__BB0_28;
$L__BB0_36:
	ret;
}
"#;

    #[test]
    fn the_tasks_of_a_claim_are_not_its_search() {
        let module = Module::parse(CLAIM_SEARCH).unwrap();
        let k = module.function("k").unwrap();
        let flow = analyse(k, &claims_of_eight());
        let trips = |label: &str| {
            let header = k.block_of_label(label).unwrap();
            flow.loops
                .iter()
                .find(|l| l.header == header)
                .unwrap()
                .trips
                .value()
        };
        assert_eq!(trips("$L__BB0_7"), 8.0, "{:?}", flow.loops);
        assert_eq!(trips("$L__BB0_10"), 1.0, "{:?}", flow.loops);
        assert_eq!(trips("$L__BB0_28"), 8.0, "{:?}", flow.loops);
        let body = k.block_of_label("$L__BB0_28").unwrap();
        assert_eq!(flow.executions[body], 64.0);
    }

    /// A branch on a parameter folds: the other side does not run.
    const FOLD: &str = r#"
.visible .entry k(
	.param .u32 k_param_0
)
{
	ld.param.b32 	%r1, [k_param_0];
	setp.ne.b32 	%p1, %r1, 2;
	@%p1 bra 	$L__BB0_2;
	add.s32 	%r2, %r1, 1;
	ret;
$L__BB0_2:
	add.s32 	%r3, %r1, 2;
	ret;
}
"#;

    #[test]
    fn uniform_branches_fold() {
        let module = Module::parse(FOLD).unwrap();
        let k = module.function("k").unwrap();
        let flow = analyse(k, &context(vec![Some(2)]));
        assert_eq!(flow.executions, [1.0, 1.0, 0.0]);
        let flow = analyse(k, &context(vec![Some(5)]));
        assert_eq!(flow.executions, [1.0, 0.0, 1.0]);
        let flow = analyse(k, &context(vec![None]));
        assert_eq!(flow.executions, [1.0, 1.0, 1.0]);
    }

    /// `FOLD` with its parameter a field of a struct passed by value: the
    /// scheduler's switch on the indexing kind, read at an offset (a `u64`
    /// whose low half is the kind).
    fn fold_field() -> String {
        let folded = FOLD
            .replace(".param .u32 k_param_0", ".param .align 8 .b8 k_param_0[24]")
            .replace(
                "ld.param.b32 \t%r1, [k_param_0];",
                "ld.param.b64 \t%rd1, [k_param_0+16];\n\tcvt.u32.u64 \t%r1, %rd1;",
            );
        assert!(folded.contains("[k_param_0+16]"), "FOLD changed: {folded}");
        folded
    }

    #[test]
    fn branches_on_a_struct_parameters_field_fold() {
        let module = Module::parse(&fold_field()).unwrap();
        let k = module.function("k").unwrap();
        let with_kind = |kind: u64| {
            let mut bytes = vec![0xAB; 16];
            bytes.extend((kind | 7 << 32).to_le_bytes());
            LaunchContext {
                params: vec![ParamValue::Bytes(bytes)],
                ..context(vec![])
            }
        };
        assert_eq!(analyse(k, &with_kind(2)).executions, [1.0, 1.0, 0.0]);
        assert_eq!(analyse(k, &with_kind(5)).executions, [1.0, 0.0, 1.0]);
        // Bytes that end before the field: not folded.
        let short = LaunchContext {
            params: vec![ParamValue::Bytes(vec![0; 20])],
            ..context(vec![])
        };
        assert_eq!(analyse(k, &short).executions, [1.0, 1.0, 1.0]);
    }
}
