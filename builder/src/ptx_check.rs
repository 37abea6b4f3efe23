//! Checks of a kernels crate's PTX that the macro cannot make on syntax.
//!
//! `#[clustered]` rewrites what it sees in a kernel's body: block-index reads,
//! barriers, shared memory. A helper function, a function pointer, a renamed
//! import or an opaque macro hides them, and in a persistent schedule such a
//! read would see the persistent block, not the task's CTA: a wrong result.
//! The PTX shows every instruction, so the build checks each clustered entry
//! point and every function it calls:
//!
//! - `%ctaid` and `%nctaid` are read only by the scheduler, whose reads are
//!   inline PTX tagged `// clustered:scheduler` (`device/src/run.rs`);
//! - in a persistent schedule (agents, persistent, stride) whose body can
//!   return early, a CTA barrier is either the scheduler's or the task
//!   barrier (tagged `// clustered:task`) that the macro writes for the
//!   body's `sync_threads()`: a plain `bar.sync` came from code the macro did
//!   not rewrite, and would wait for threads that left their task; a body
//!   without early returns is separated by a plain barrier
//!   (`// clustered:separate`) and keeps its barriers as written;
//! - a persistent schedule without a task barrier (the macro saw no barrier
//!   and no shared memory in the body) touches no shared memory but the
//!   scheduler's, since nothing separates one task's shared data from the
//!   next task's.
//!
//! A task pool's kernel (an entry that serves a ring with
//! `clustered_device::pool::serve`, known by its mailbox in shared memory)
//! runs each task's CTAs on a resident block, so the same first rule holds
//! for it: `%ctaid` and `%nctaid` are read only by the pool itself (and by
//! `pool::resident_block()`), through the tagged registers.
//!
//! And in every function of the module, clustered or not: no CTA barrier is
//! `.aligned` (`bar.sync`, what `core::arch::nvptx::_syncthreads` emits)
//! unless the runtime tagged it. LLVM may copy a barrier call into both arms
//! of a branch, and an aligned barrier that one warp reaches at two
//! instructions never releases (Rodinia's hotspot hung so on the H100);
//! `sync_threads()` is the non-aligned `barrier.sync 0`.
//!
//! Each problem names the entry point, the function and the PTX line, and
//! says what to change in the source.

use std::collections::{BTreeSet, HashMap};
use std::fmt;

// Where the generated contracts live: `__clustered_contract_<entry>`.
use clustered_abi::CONTRACT_PREFIX;

/// Tags the device runtime puts on its inline PTX.
const SCHEDULER_TAG: &str = "// clustered:scheduler";
const TASK_TAG: &str = "// clustered:task";
const SEPARATE_TAG: &str = "// clustered:separate";
/// The task pool's own barriers (`device/src/pool.rs`).
const POOL_TAG: &str = "// clustered:pool";
/// The agents' claim ticket, the scheduler's own shared memory.
const SCHEDULER_SHARED_PREFIX: &str = "clustered_ticket";
/// A task pool's mailbox (`device/src/pool.rs`): an entry that uses it
/// serves a pool.
const POOL_MAILBOX_PREFIX: &str = "clustered_pool_mailbox";

/// One thing wrong with a clustered entry point's PTX.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The clustered kernel (its PTX entry).
    pub entry: String,
    /// The PTX function the instruction is in: the entry or a function it calls.
    pub function: String,
    /// The offending PTX line, trimmed.
    pub line: String,
    /// What is wrong with it.
    pub kind: ProblemKind,
}

/// What kind of problem a [`Problem`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProblemKind {
    /// A read of `%ctaid`/`%nctaid` that is not the scheduler's.
    HardwareBlockIndex,
    /// A read of `%ctaid`/`%nctaid` in a task pool's kernel that is not the
    /// pool's own.
    PoolHardwareBlockIndex,
    /// A CTA barrier in a persistent schedule that the macro did not rewrite.
    UnrewrittenBarrier,
    /// Shared memory in a persistent schedule whose tasks are not separated.
    UnseparatedSharedMemory,
    /// An `.aligned` CTA barrier that the runtime did not write (any kernel).
    AlignedBarrier,
    /// A thread block cluster's register, barrier or shared memory in a
    /// scheduled entry.
    ThreadBlockCluster,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Problem {
            entry,
            function,
            line,
            kind,
        } = self;
        let what = if *kind == ProblemKind::PoolHardwareBlockIndex {
            "task pool kernel"
        } else {
            "clustered kernel"
        };
        let place = if function == entry {
            format!("{what} `{entry}`")
        } else {
            format!("{what} `{entry}` (in `{function}`, which it calls)")
        };
        match kind {
            ProblemKind::HardwareBlockIndex => write!(
                f,
                "{place} reads the hardware block index or grid size (`{line}`): in a clustered \
                 schedule that is the persistent block's, not the task's CTA. #[clustered] rewrites \
                 `block_idx_*()`, `grid_dim_*()` and `index_1d/2d()` only where the kernel body calls \
                 them; read them in the body and pass the values to helpers \
                 (`let bx = block_idx_x(); helper(bx)`), or pass the task's `Cta`"
            ),
            ProblemKind::PoolHardwareBlockIndex => write!(
                f,
                "{place} reads the hardware block index or grid size (`{line}`): a task runs its \
                 CTAs on a resident block of the pool, whose index is not the task's CTA. \
                 `#[kernel]` rewrites `block_idx_*()`, `grid_dim_*()` and `index_1d/2d()` only \
                 where the kernel body calls them; read them in the body and pass the values to \
                 helpers (`let bx = block_idx_x(); helper(bx)`), or pass the task's `Cta` \
                 (`pool::resident_block()` is the resident block's index, for diagnostics)"
            ),
            ProblemKind::UnrewrittenBarrier => write!(
                f,
                "{place} waits at a barrier that #[clustered] did not see (`{line}`): in a \
                 persistent schedule a thread whose task ended early must still take part in the \
                 body's barriers, which works only for `sync_threads()` called in the kernel body. \
                 Call `sync_threads()` in the body instead of in a helper, or use `binding = \
                 reorder` or `redirect`"
            ),
            ProblemKind::UnseparatedSharedMemory => write!(
                f,
                "{place} uses shared memory or a barrier that #[clustered] did not see (`{line}`): \
                 its tasks run one after another in a persistent block, and without a barrier \
                 between them a fast warp overwrites shared data that a slow one still reads. \
                 Declare the `shared_array!` (or call `sync_threads()`) in the kernel body so the \
                 macro separates the tasks, or use `binding = reorder` or `redirect`"
            ),
            ProblemKind::ThreadBlockCluster => write!(
                f,
                "{place} uses a thread block cluster (`{line}`): a schedule moves tasks between \
                 blocks, so the blocks of one hardware cluster do not run the tiles this code \
                 expects beside each other, and a persistent block may wait at a cluster barrier \
                 that its neighbours never reach. Use `clustered::cluster` only in a plain \
                 `#[kernel]` (launched with `LaunchConfig::with_block_cluster`), or schedule the \
                 kernel without it and set `ClusterOptions::block_cluster`"
            ),
            ProblemKind::AlignedBarrier => write!(
                f,
                "`{function}` waits at an aligned barrier (`{line}`): the compiler may copy a \
                 barrier into both arms of a branch, and a warp that splits across the copies \
                 never gets past it (the kernel hangs). Call `clustered::thread::sync_threads()` \
                 (`barrier.sync 0`, not aligned) instead of `core::arch::nvptx::_syncthreads()` \
                 or `bar.sync` in inline PTX"
            ),
        }
    }
}

/// A function of the PTX module: its name and its lines.
struct Function<'a> {
    lines: Vec<&'a str>,
}

/// The PTX module, cut into functions.
struct Module<'a> {
    functions: HashMap<&'a str, Function<'a>>,
    /// The `.entry` functions, in the module's order.
    entries: Vec<&'a str>,
    /// Module-scope `.shared` symbols.
    shared: Vec<&'a str>,
    /// Contract globals: entry name -> binding.
    contracts: Vec<(&'a str, Option<u32>)>,
}

/// The code of `line`, without a trailing `//` comment.
pub(crate) fn code(line: &str) -> &str {
    line.split("//").next().unwrap_or("")
}

/// The name declared by a `.entry`/`.func` header line, e.g.
/// `.visible .entry k(` or `.func  (.param .b32 func_retval0) helper(`.
pub(crate) fn function_name(header: &str) -> Option<&str> {
    let code = code(header);
    if !(code.contains(".entry") || code.contains(".func")) {
        return None;
    }
    // The name is the identifier right before the parameter list's `(`, or
    // the last word when the parameters start on the next line.
    let before = match code.rfind('(') {
        Some(open) if !code[..open].trim_end().ends_with(".func") => &code[..open],
        _ => code,
    };
    before
        .split(|c: char| c.is_whitespace() || c == ')')
        .rfind(|w| !w.is_empty())
        .filter(|w| !w.starts_with('.'))
}

/// The bytes a global is initialised with:
/// `.global .align 4 .b8 name[8] = {0, 1, 0, 0, 1};`, the bytes that LLVM
/// leaves out at the end being zeros.
pub(crate) fn global_bytes(line: &str) -> Option<Vec<u8>> {
    let (declaration, initialiser) = line.split_once('{')?;
    let size: usize = declaration
        .split_once('[')?
        .1
        .split(']')
        .next()?
        .parse()
        .ok()?;
    let mut bytes: Vec<u8> = initialiser
        .split('}')
        .next()?
        .split(',')
        .map(|b| b.trim().parse().ok())
        .collect::<Option<_>>()?;
    if bytes.len() > size {
        return None;
    }
    bytes.resize(size, 0);
    Some(bytes)
}

/// The name after `prefix` in a module-scope global's line
/// (`.global .align 4 .b8 <prefix><name>[44] = {..};`), if the line
/// declares one.
pub(crate) fn global_named<'a>(line: &'a str, prefix: &str) -> Option<&'a str> {
    let code = code(line);
    let at = code.find(prefix)?;
    if !code.contains(".global") {
        return None;
    }
    let rest = &code[at + prefix.len()..];
    rest.split(['[', ' ', ';']).next()
}

/// A contract global's binding: the third little-endian `u32` of
/// `.global .align 4 .b8 __clustered_contract_k[44] = {67, 76, ...};`.
fn contract_binding(line: &str) -> Option<u32> {
    let bytes = global_bytes(line)?;
    let word = bytes.get(8..12)?;
    Some(u32::from_le_bytes(word.try_into().ok()?))
}

fn parse(ptx: &str) -> Module<'_> {
    let mut functions = HashMap::new();
    let mut entries = Vec::new();
    let mut shared = Vec::new();
    let mut contracts = Vec::new();
    let mut current: Option<(&str, Vec<&str>)> = None;
    let mut depth = 0usize;
    let mut entered = false;
    for line in ptx.lines() {
        let trimmed = line.trim();
        if current.is_none() {
            if let Some(name) = function_name(trimmed) {
                if code(trimmed).contains(".entry") {
                    entries.push(name);
                }
                current = Some((name, Vec::new()));
                depth = 0;
                entered = false;
            } else if code(trimmed).contains(".shared") && depth == 0 {
                if let Some(name) = code(trimmed)
                    .split(|c: char| c.is_whitespace() || c == '[' || c == ';')
                    .filter(|w| w.starts_with(|c: char| c.is_alphabetic() || c == '_' || c == '$'))
                    .find(|w| {
                        w.chars()
                            .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
                    })
                {
                    shared.push(name);
                }
            } else if let Some(entry) = global_named(trimmed, CONTRACT_PREFIX) {
                contracts.push((entry, contract_binding(trimmed)));
            }
            if current.is_none() {
                continue;
            }
        }
        // A declaration without a body (`.extern .func f(...);`) ends at
        // its `;` before any `{`.
        if !entered && code(trimmed).trim_end().ends_with(';') {
            current = None;
            continue;
        }
        let (_, lines) = current.as_mut().expect("inside a function");
        lines.push(trimmed);
        for c in code(trimmed).chars() {
            match c {
                '{' => {
                    depth += 1;
                    entered = true;
                }
                '}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        if entered && depth == 0 {
            let (name, lines) = current.take().expect("inside a function");
            functions.insert(name, Function { lines });
        }
    }
    Module {
        functions,
        entries,
        shared,
        contracts,
    }
}

/// Functions `name` calls, directly or not, itself included.
fn reachable<'a>(module: &Module<'a>, name: &'a str) -> BTreeSet<&'a str> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![name];
    while let Some(name) = stack.pop() {
        if !seen.insert(name) {
            continue;
        }
        let Some(function) = module.functions.get(name) else {
            continue;
        };
        for line in &function.lines {
            let code = code(line);
            if !code.trim_start().starts_with("call") && !code.contains(" call") {
                continue;
            }
            for word in code.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$')) {
                if let Some((&callee, _)) = module.functions.get_key_value(word) {
                    stack.push(callee);
                }
            }
        }
    }
    seen
}

/// Is this a CTA-wide barrier instruction (`bar.sync`, `barrier.red`, ...),
/// not a warp's (`bar.warp.sync`) or a cluster's?
fn is_cta_barrier(code: &str) -> bool {
    let mnemonic = mnemonic(code);
    (mnemonic.starts_with("bar.") || mnemonic.starts_with("barrier."))
        && !mnemonic.starts_with("bar.warp")
        && !mnemonic.contains(".cluster")
}

/// Is this a CTA barrier that every thread of a warp must reach at the same
/// instruction: `bar.*` (always aligned) or `barrier.*.aligned`?
fn is_aligned_cta_barrier(code: &str) -> bool {
    is_cta_barrier(code) && {
        let mnemonic = mnemonic(code);
        mnemonic.starts_with("bar.") || mnemonic.contains(".aligned")
    }
}

/// Does this instruction use a thread block cluster: its special registers
/// (`%cluster_ctarank`, `%clusterid`, ...), its barrier, an address mapped
/// into it (`mapa`) or its shared window (`ld.shared::cluster`)?
fn uses_block_cluster(code: &str) -> bool {
    const REGISTERS: [&str; 7] = [
        "%cluster_ctarank",
        "%cluster_nctarank",
        "%cluster_ctaid",
        "%cluster_nctaid",
        "%clusterid",
        "%nclusterid",
        "%is_explicit_cluster",
    ];
    let mnemonic = mnemonic(code);
    code.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '%'))
        .any(|word| REGISTERS.contains(&word))
        || mnemonic.starts_with("barrier.cluster")
        || mnemonic.starts_with("mapa")
        || mnemonic.contains("::cluster")
}

/// The instruction's mnemonic, past a guard (`@%p1 bar.sync 0;`).
fn mnemonic(code: &str) -> &str {
    let op = code.trim_start().trim_start_matches(['@', '!']);
    let op = op
        .split_once(char::is_whitespace)
        .filter(|(guard, _)| guard.starts_with('%'))
        .map_or(op, |(_, rest)| rest.trim_start());
    op.split_whitespace().next().unwrap_or("")
}

/// Does `code` name `symbol` as a whole word?
fn mentions(code: &str, symbol: &str) -> bool {
    code.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .any(|w| w == symbol)
}

/// Bindings whose blocks run tasks in a loop (`abi::Binding`: agents,
/// persistent, stride).
fn is_persistent(binding: u32) -> bool {
    matches!(binding, 2..=4)
}

/// Every line of `entry` and of the functions it calls, with the function
/// it is in.
fn entry_lines<'a>(module: &Module<'a>, entry: &'a str) -> Vec<(&'a str, &'a str)> {
    let functions = reachable(module, entry);
    let lines = |f: &'a str| module.functions[f].lines.iter().map(move |&line| (f, line));
    functions.into_iter().flat_map(lines).collect()
}

/// Does this instruction read the hardware block index or grid size?
fn reads_block_index(code: &str) -> bool {
    code.contains("%ctaid") || code.contains("%nctaid")
}

/// Task pool kernels (entries that use a pool's mailbox), each with every
/// line of it and of the functions it calls.
fn pool_entries<'a>(module: &Module<'a>) -> Vec<(&'a str, Vec<(&'a str, &'a str)>)> {
    let mailboxes: Vec<&str> = module
        .shared
        .iter()
        .copied()
        .filter(|s| s.starts_with(POOL_MAILBOX_PREFIX))
        .collect();
    let mut pools = Vec::new();
    for &entry in &module.entries {
        if !module.functions.contains_key(entry)
            || module.contracts.iter().any(|&(e, _)| e == entry)
        {
            continue; // a declaration, or a clustered schedule (checked above)
        }
        let reached = entry_lines(module, entry);
        if reached
            .iter()
            .any(|&(_, line)| mailboxes.iter().any(|m| mentions(code(line), m)))
        {
            pools.push((entry, reached));
        }
    }
    pools
}

/// Task pool kernels whose tasks may run beside a publishing warp
/// (`clustered_abi::pool`, "A publishing warp"): every CTA barrier they
/// reach is tagged as the pool's (the worker's own, and a task's
/// `Cta::sync_threads`, which `task_pool!` makes of a body's
/// `sync_threads()`), each counting the task's threads only, and only
/// the runtime reads the block's size (`%ntid`, tagged), which counts that
/// warp (a pool task's protocol, for a body that returns early, votes on
/// such a barrier too). A plain `sync_threads()` (a hand-written body's, a
/// helper's, a schedule's task protocol) would wait for a warp that never
/// comes to it, and a plain `block_dim_x()` would count it; such a kernel
/// runs with thread 0 publishing, as before.
pub fn publishing_warp_pools(ptx: &str) -> Vec<String> {
    let module = parse(ptx);
    pool_entries(&module)
        .into_iter()
        .filter(|(_, lines)| {
            lines.iter().all(|&(_, line)| {
                let code = code(line);
                let barrier_ok = !is_cta_barrier(code) || line.contains(POOL_TAG);
                let size_ok = !code.contains("%ntid") || line.contains(SCHEDULER_TAG);
                barrier_ok && size_ok
            })
        })
        .map(|(entry, _)| entry.to_string())
        .collect()
}

/// `ptx` with a global `__clustered_pool_warp_<entry>` for each of
/// [`publishing_warp_pools`], after the module's `.address_size`: the
/// host launches those with a publishing warp
/// (`clustered_abi::pool::PUBLISHING_WARP_PREFIX`).
pub fn mark_publishing_warp_pools(ptx: &str) -> String {
    use clustered_abi::pool::PUBLISHING_WARP_PREFIX;
    let pools = publishing_warp_pools(ptx);
    let mut text = String::with_capacity(ptx.len() + 64 * pools.len());
    let mut marked = pools.is_empty();
    for line in ptx.split_inclusive('\n') {
        text.push_str(line);
        if !marked && line.trim_start().starts_with(".address_size") {
            if !line.ends_with('\n') {
                text.push('\n');
            }
            for entry in &pools {
                text.push_str(&format!(
                    ".visible .global .align 4 .u32 {PUBLISHING_WARP_PREFIX}{entry} = 1;\n"
                ));
            }
            marked = true;
        }
    }
    text
}

/// Task pool kernels: every read of the hardware block index or grid size
/// is the pool's own (tagged).
fn check_pools(module: &Module<'_>, problems: &mut Vec<Problem>) {
    for (entry, reached) in pool_entries(module) {
        for &(function, line) in &reached {
            let code = code(line);
            if reads_block_index(code) && !line.contains(SCHEDULER_TAG) {
                problems.push(Problem {
                    entry: entry.to_string(),
                    function: function.to_string(),
                    line: line.to_string(),
                    kind: ProblemKind::PoolHardwareBlockIndex,
                });
            }
        }
    }
}

/// Every problem in the clustered entry points of `ptx`.
pub fn check(ptx: &str) -> Vec<Problem> {
    let module = parse(ptx);
    let mut problems = Vec::new();
    for &(entry, binding) in &module.contracts {
        if !module.functions.contains_key(entry) {
            continue;
        }
        let reached = entry_lines(&module, entry);
        let lines = || reached.iter().copied();
        let mut report = |function: &str, line: &str, kind| {
            problems.push(Problem {
                entry: entry.to_string(),
                function: function.to_string(),
                line: line.to_string(),
                kind,
            })
        };
        // The task protocol (early returns) or a plain separation barrier.
        let protocol = lines().any(|(_, line)| line.contains(TASK_TAG));
        let separated = protocol || lines().any(|(_, line)| line.contains(SEPARATE_TAG));
        let persistent = binding.is_some_and(is_persistent);
        for (function, line) in lines() {
            let code = code(line);
            let tagged = [SCHEDULER_TAG, TASK_TAG, SEPARATE_TAG]
                .iter()
                .any(|tag| line.contains(tag));
            if reads_block_index(code) && !tagged {
                report(function, line, ProblemKind::HardwareBlockIndex);
            }
            if uses_block_cluster(code) {
                report(function, line, ProblemKind::ThreadBlockCluster);
            }
            if !persistent || tagged {
                continue;
            }
            if is_cta_barrier(code) {
                if separated && !protocol {
                    // No early returns: every thread reaches the body's own
                    // barriers, whoever calls them.
                    continue;
                }
                let kind = if separated {
                    ProblemKind::UnrewrittenBarrier
                } else {
                    ProblemKind::UnseparatedSharedMemory
                };
                report(function, line, kind);
            } else if !separated
                && module
                    .shared
                    .iter()
                    .filter(|s| !s.starts_with(SCHEDULER_SHARED_PREFIX))
                    .any(|s| mentions(code, s))
            {
                report(function, line, ProblemKind::UnseparatedSharedMemory);
            }
        }
    }
    check_pools(&module, &mut problems);
    let mut functions: Vec<_> = module.functions.iter().collect();
    functions.sort_by_key(|(name, _)| *name);
    for (name, function) in functions {
        for line in &function.lines {
            let tagged = [SCHEDULER_TAG, TASK_TAG, SEPARATE_TAG]
                .iter()
                .any(|tag| line.contains(tag));
            if !tagged && is_aligned_cta_barrier(code(line)) {
                problems.push(Problem {
                    entry: name.to_string(),
                    function: name.to_string(),
                    line: line.to_string(),
                    kind: ProblemKind::AlignedBarrier,
                });
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A contract global for `entry` with `binding`.
    fn contract(entry: &str, binding: u8) -> String {
        format!(
            ".global .align 4 .b8 __clustered_contract_{entry}[44] = {{67, 76, 83, 84, 2, 0, 0, 0, {binding}, 0, 0, 0, 0, 0, 0, 0}};\n"
        )
    }

    const HELPER: &str = "
.func  (.param .b32 func_retval0) helper(
	.param .b32 helper_param_0
)
{
	.reg .b32 	%r<3>;
	mov.u32 	%r1, %ctaid.x;
	st.param.b32 	[func_retval0], %r1;
	ret;
}
";

    fn entry(name: &str, body: &str) -> String {
        format!(".visible .entry {name}(\n\t.param .u64 {name}_param_0\n)\n{{\n\t.reg .b32 \t%r<9>;\n{body}\n\tret;\n\n}}\n")
    }

    #[test]
    fn scheduler_reads_pass_and_a_helpers_read_is_named() {
        let ok = entry(
            "k_stride",
            "mov.u32 %r1, %ctaid.x; // clustered:scheduler\n\tadd.s32 %r2, %r1, 1;",
        );
        let ptx = format!("{}{ok}", contract("k_stride", 4));
        assert_eq!(check(&ptx), vec![]);

        let bad = entry(
            "k_agents",
            "\t{ // callseq 0, 0\n\tcall.uni (retval0), helper, (param0);\n\t} // callseq 0",
        );
        let ptx = format!("{HELPER}{}{bad}", contract("k_agents", 2));
        let problems = check(&ptx);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].entry, "k_agents");
        assert_eq!(problems[0].function, "helper");
        assert_eq!(problems[0].kind, ProblemKind::HardwareBlockIndex);
        assert!(problems[0]
            .to_string()
            .contains("let bx = block_idx_x(); helper(bx)"));
    }

    #[test]
    fn thread_block_clusters_only_outside_schedules() {
        let body = "mov.u32 %r1, %cluster_ctarank;\n\tmapa.shared::cluster.u32 %r2, %r3, %r1;\n\t\
                    ld.shared::cluster.f32 %f1, [%r2];\n\tbarrier.cluster.arrive;\n\tbarrier.cluster.wait;";
        // A plain kernel may use them all.
        assert_eq!(check(&entry("k", body)), vec![]);
        // Every schedule may not: each instruction is named.
        for binding in [0, 1, 2, 4] {
            let ptx = format!("{}{}", contract("k_sched", binding), entry("k_sched", body));
            let problems = check(&ptx);
            assert_eq!(problems.len(), 5, "binding {binding}: {problems:?}");
            assert!(problems
                .iter()
                .all(|p| p.kind == ProblemKind::ThreadBlockCluster));
            assert!(problems[3].line.contains("barrier.cluster.arrive"));
            assert!(problems[0]
                .to_string()
                .contains("ClusterOptions::block_cluster"));
        }
    }

    #[test]
    fn baselines_may_read_the_block_index() {
        let ptx = format!("{HELPER}{}", entry("k", "mov.u32 %r1, %ctaid.y;"));
        assert_eq!(check(&ptx), vec![]);
    }

    #[test]
    fn barriers_in_persistent_schedules_must_be_the_macros() {
        let task = "barrier.red.and.pred %clustered_all, 0, %clustered_in; // clustered:task";
        let rewritten = entry(
            "k_agents",
            &format!("{task}\n\tbar.sync 1; // clustered:scheduler"),
        );
        assert_eq!(
            check(&format!("{}{rewritten}", contract("k_agents", 2))),
            vec![]
        );

        let helper_barrier = entry("k_agents", &format!("{task}\n\t@%p1 barrier.sync 0;"));
        let problems = check(&format!("{}{helper_barrier}", contract("k_agents", 2)));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].kind, ProblemKind::UnrewrittenBarrier);

        // Without a task barrier, any barrier means hidden sharing.
        let hidden = entry("k_stride", "barrier.sync 0;\n\tbar.warp.sync -1;");
        let problems = check(&format!("{}{hidden}", contract("k_stride", 4)));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].kind, ProblemKind::UnseparatedSharedMemory);

        // A body without early returns is separated by a plain barrier; its
        // own barriers, a helper's included, are reached by every thread.
        let separated = entry(
            "k_stride",
            "barrier.sync 0;\n\tbar.sync 2; // clustered:separate",
        );
        assert_eq!(
            check(&format!("{}{separated}", contract("k_stride", 4))),
            vec![]
        );

        // Reorder and redirect run one task per block: barriers are the body's.
        let reorder = entry("k_reorder", "barrier.sync 0;");
        assert_eq!(
            check(&format!("{}{reorder}", contract("k_reorder", 0))),
            vec![]
        );
    }

    #[test]
    fn aligned_barriers_are_named_in_any_kernel() {
        // A baseline (no contract) and a helper it calls: both named.
        let helper = ".func h()\n{\n\tbar.sync 0;\n\tret;\n}\n";
        let ptx = format!(
            "{helper}{}",
            entry(
                "k",
                "barrier.sync 0;\n\t@%p1 barrier.sync.aligned 0;\n\tbar.warp.sync -1;\n\tcall.uni h, ();"
            )
        );
        let problems = check(&ptx);
        let named: Vec<(&str, &str)> = problems
            .iter()
            .map(|p| (p.function.as_str(), p.line.as_str()))
            .collect();
        assert_eq!(
            named,
            [("h", "bar.sync 0;"), ("k", "@%p1 barrier.sync.aligned 0;")]
        );
        assert!(problems
            .iter()
            .all(|p| p.kind == ProblemKind::AlignedBarrier));
        assert!(problems[0].to_string().contains("sync_threads()"));
        // The runtime's own, tagged, pass.
        let tagged = entry("k", "bar.sync 1; // clustered:scheduler");
        assert_eq!(check(&tagged), vec![]);
    }

    #[test]
    fn hidden_shared_memory_without_separation_is_named() {
        let module = ".shared .align 16 .b8 tile_12_5_9[4096];\n.shared .align 16 .b8 clustered_ticket_3_4[16];\n";
        let uses_tile = entry(
            "k_stride",
            "mov.u32 %r1, tile_12_5_9;\n\tld.shared.f32 %f1, [%r1];",
        );
        let problems = check(&format!("{module}{}{uses_tile}", contract("k_stride", 4)));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].kind, ProblemKind::UnseparatedSharedMemory);

        let uses_ticket = entry("k_agents", "mov.u32 %r1, clustered_ticket_3_4;");
        assert_eq!(
            check(&format!("{module}{}{uses_ticket}", contract("k_agents", 2))),
            vec![]
        );
    }

    #[test]
    fn declarations_without_a_body_are_skipped() {
        let ptx = format!(
            ".extern .func  (.param .b32 func_retval0) vprintf\n(\n\t.param .b64 vprintf_param_0\n)\n;\n{}{}",
            contract("k_agents", 2),
            entry("k_agents", "mov.u32 %r1, %ctaid.x;")
        );
        let problems = check(&ptx);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].function, "k_agents");
    }

    #[test]
    fn reads_contract_bindings_and_function_names() {
        assert_eq!(contract_binding(&contract("k", 3)), Some(3));
        assert_eq!(
            function_name(".visible .entry vector_add("),
            Some("vector_add")
        );
        assert_eq!(
            function_name(".func  (.param .b32 func_retval0) helper("),
            Some("helper")
        );
        assert_eq!(function_name(".func helper_2()"), Some("helper_2"));
        assert_eq!(function_name("mov.u32 %r1, %r2;"), None);
    }

    /// A pool kernel: an entry that uses the mailbox, and `body`.
    fn pool_entry(body: &str) -> String {
        format!(
            ".shared .align 16 .b8 clustered_pool_mailbox_1_2_3[64];\n\
             .visible .entry pool(\n\t.param .u64 pool_param_0\n)\n{{\n\
             \tmov.u32 %r9, clustered_pool_mailbox_1_2_3;\n\
             \tmov.u32 %r1, %ctaid.x; // clustered:scheduler\n{body}\n\tret;\n}}\n"
        )
    }

    #[test]
    fn a_pool_kernel_reads_the_block_index_only_through_the_pool() {
        let clean = pool_entry("\tadd.s32 %r2, %r1, 1;");
        assert_eq!(check(&clean), []);
        // A task body's helper that reads the hardware register.
        let hidden = format!(
            "{HELPER}{}",
            pool_entry("\t{ call.uni (retval0), helper, (param0); }")
        );
        let problems = check(&hidden);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].kind, ProblemKind::PoolHardwareBlockIndex);
        assert_eq!(
            (problems[0].entry.as_str(), problems[0].function.as_str()),
            ("pool", "helper")
        );
        let message = problems[0].to_string();
        assert!(
            message.contains("task pool kernel `pool` (in `helper`"),
            "{message}"
        );
        assert!(message.contains("pass the task's `Cta`"), "{message}");
        // The grid size too, in the entry itself.
        let grid = pool_entry("\tmov.u32 %r3, %nctaid.x;");
        assert_eq!(check(&grid).len(), 1);
        // A kernel that is not a pool may read it.
        let plain = ".visible .entry k()\n{\n\tmov.u32 %r1, %ctaid.x;\n\tret;\n}\n";
        assert_eq!(check(plain), []);
    }

    /// A pool kernel may have a publishing warp only where every barrier it
    /// reaches is the pool's own and only the pool reads the block's size;
    /// a barrier or `%ntid` read in the entry or in a helper it calls (a
    /// task's `sync_threads()`, `block_dim_x()`) keeps it off, and the
    /// kernels that may get a global the host finds after `.address_size`.
    #[test]
    fn a_pool_gets_a_publishing_warp_only_if_its_tasks_never_wait_for_it() {
        let own = "\tbarrier.sync 1, %r4; // clustered:pool\n\tmov.u32 %r5, %ntid.x; // clustered:scheduler";
        assert_eq!(publishing_warp_pools(&pool_entry(own)), ["pool"]);
        for task in [
            "\tbarrier.sync 0;",
            "\tbar.sync 0;",
            "\tbarrier.red.and.pred %p1, 2, %p2; // clustered:task",
            "\tbar.sync 1; // clustered:scheduler",
            "\tmov.u32 %r6, %ntid.x;",
        ] {
            let ptx = pool_entry(&format!("{own}\n{task}"));
            assert_eq!(publishing_warp_pools(&ptx), Vec::<String>::new(), "{task}");
        }
        let helper = ".func helper()\n{\n\tbarrier.sync 0;\n\tret;\n}\n";
        let called = format!("{helper}{}", pool_entry("\t{ call.uni helper, (); }"));
        assert_eq!(publishing_warp_pools(&called), Vec::<String>::new());
        // Not a pool: never marked, whatever it does.
        assert_eq!(
            publishing_warp_pools(".visible .entry k()\n{\n\tret;\n}\n"),
            Vec::<String>::new()
        );

        let module = format!(
            ".version 7.8\n.target sm_90\n.address_size 64\n\n{}",
            pool_entry(own)
        );
        let marked = mark_publishing_warp_pools(&module);
        assert!(
            marked.contains(".address_size 64\n.visible .global .align 4 .u32 __clustered_pool_warp_pool = 1;\n"),
            "{marked}"
        );
        assert_eq!(
            marked.replace(
                ".visible .global .align 4 .u32 __clustered_pool_warp_pool = 1;\n",
                ""
            ),
            module
        );
        let unmarked = format!(
            ".version 7.8\n.address_size 64\n{}",
            pool_entry("\tbarrier.sync 0;")
        );
        assert_eq!(mark_publishing_warp_pools(&unmarked), unmarked);
    }
}
