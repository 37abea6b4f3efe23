//! The build's PTX check on the suite's real PTX: it passes the suite, and it
//! names the entry point when a block-index read or a barrier in a clustered
//! kernel is not the scheduler's (here made by editing the PTX text, since a
//! kernels crate with such a kernel would not build).

use clustered_builder::ptx_check::{check, publishing_warp_pools, ProblemKind};

/// The lines of entry `name`'s body, as a range of line numbers.
fn entry_lines(ptx: &str, name: &str) -> std::ops::Range<usize> {
    let lines: Vec<&str> = ptx.lines().collect();
    let header = format!(".entry {name}(");
    let start = lines
        .iter()
        .position(|l| l.contains(&header))
        .unwrap_or_else(|| panic!("no entry {name}"));
    let end = start + lines[start..].iter().position(|l| *l == "}").unwrap();
    start..end
}

fn edit_entry(ptx: &str, name: &str, edit: impl Fn(&str) -> String) -> String {
    let range = entry_lines(ptx, name);
    ptx.lines()
        .enumerate()
        .map(|(i, l)| {
            if range.contains(&i) {
                edit(l)
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_suites_ptx_passes_and_every_schedule_is_checked() {
    assert_eq!(check(clustered_suite::PTX), vec![]);
    let contracts = clustered_suite::PTX
        .matches(".b8 __clustered_contract_")
        .count();
    assert!(contracts > 100, "only {contracts} clustered kernels found");
}

#[test]
fn an_untagged_block_index_read_is_named_with_its_entry() {
    let ptx = edit_entry(clustered_suite::PTX, "ragged_sum_stride", |l| {
        l.replace("// clustered:scheduler", "")
    });
    let problems = check(&ptx);
    assert!(!problems.is_empty());
    assert!(problems
        .iter()
        .all(|p| p.entry == "ragged_sum_stride" && p.kind == ProblemKind::HardwareBlockIndex));
}

/// The task pools' kernels are checked too: with the pool's own reads
/// untagged, every read in `pool_demo` is named as a pool's.
#[test]
fn an_untagged_block_index_read_in_a_pool_kernel_is_named() {
    let ptx = edit_entry(clustered_suite::PTX, "pool_demo", |l| {
        l.replace("// clustered:scheduler", "")
    });
    let problems = check(&ptx);
    assert!(!problems.is_empty());
    assert!(problems
        .iter()
        .all(|p| p.entry == "pool_demo" && p.kind == ProblemKind::PoolHardwareBlockIndex));
}

#[test]
fn a_barrier_the_macro_did_not_write_is_named() {
    let ptx = edit_entry(clustered_suite::PTX, "ragged_sum_agents", |l| {
        if l.trim_start().starts_with("ret;") {
            format!("\tbarrier.sync 0;\n{l}")
        } else {
            l.to_string()
        }
    });
    let problems = check(&ptx);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].kind, ProblemKind::UnrewrittenBarrier);
    assert_eq!(problems[0].entry, "ragged_sum_agents");
}

/// `sync_threads()` is the non-aligned `barrier.sync 0`: LLVM duplicated the
/// call into both branches of an `if` in Rodinia's hotspot and pathfinder,
/// and with the aligned `bar.sync 0` the warps that split there hung on the
/// H100. The build's check names an aligned barrier in any kernel, a baseline
/// included.
#[test]
fn an_aligned_barrier_is_named_even_in_a_baseline() {
    assert!(clustered_suite::PTX.contains("barrier.sync 0;"));
    let ptx = edit_entry(clustered_suite::PTX, "hotspot", |l| {
        l.replace("barrier.sync 0;", "bar.sync 0;")
    });
    let problems = check(&ptx);
    assert!(!problems.is_empty());
    assert!(problems
        .iter()
        .all(|p| p.function == "hotspot" && p.kind == ProblemKind::AlignedBarrier));
}

/// `F32x4` moves as one 16-byte access: LLVM copies a 16-byte struct as two
/// 8-byte halves unless `memory::load`/`store` keep it whole, and two
/// halves keep half the bytes in flight.
#[test]
fn a_quad_copy_moves_sixteen_bytes_per_access() {
    let lines: Vec<&str> = clustered_suite::PTX.lines().collect();
    let body = &lines[entry_lines(clustered_suite::PTX, "copy_quads")];
    let count = |op: &str| {
        body.iter()
            .filter(|l| l.trim_start().starts_with(op))
            .count()
    };
    assert_eq!(
        count("ld.global.v2.b64") + count("ld.global.v4."),
        1,
        "{body:#?}"
    );
    assert_eq!(
        count("st.global.v2.b64") + count("st.global.v4."),
        1,
        "{body:#?}"
    );
    assert_eq!(
        count("ld.global.b64") + count("st.global.b64"),
        0,
        "{body:#?}"
    );
}

/// The stores and reductions at GPU scope that a pool kernel's blocks make
/// to tell another block something (a task's `done` count, a gate's
/// signal, the publisher's own count) that are not preceded, on some path
/// of the entry's control flow since its last barrier, by a fence: each as
/// (its block's label, the instruction). A task's writes reach another
/// block only through such a fence (`abi::pool`, "Publication", "Gates");
/// without it the publisher may report a task before its writes are
/// visible, which no run of `pool_gpu` showed (docs/BENCHMARKS.md, "The
/// fence in place").
fn unfenced_publications(ptx: &str, entry: &str) -> (usize, Vec<(String, String)>) {
    use clustered_predict::ptx::{Instruction, Module};
    let module = Module::parse(ptx).expect("the suite's PTX parses");
    let function = module.function(entry).expect("the entry is in the PTX");
    let blocks = &function.blocks;
    let target = |label: &str| function.block_of_label(label);
    // Successors: a branch's target (an indirect one's table, which the
    // parser keeps as the statement before it), and the next block unless
    // the block ends in an unguarded branch, `ret` or `exit`.
    let successors: Vec<Vec<usize>> = (0..blocks.len())
        .map(|i| {
            let Some(last) = blocks[i].instructions.last() else {
                return vec![i + 1];
            };
            let mut next: Vec<usize> = match last.op() {
                "bra" => last.branch_target().and_then(target).into_iter().collect(),
                "brx" => blocks[i]
                    .instructions
                    .iter()
                    .filter(|s| s.opcode.starts_with("$L_brx"))
                    .flat_map(|s| s.operands.iter())
                    .flat_map(|o| o.split_whitespace())
                    .filter_map(target)
                    .collect(),
                _ => Vec::new(),
            };
            let ends = matches!(last.op(), "bra" | "brx" | "ret" | "exit") && last.guard.is_none();
            if !ends {
                next.push(i + 1);
            }
            next.retain(|&s| s < blocks.len());
            assert!(
                last.op() != "brx" || next.len() > 1,
                "{entry}: an indirect branch's targets were not found"
            );
            next
        })
        .collect();
    let publishes =
        |s: &Instruction| matches!(s.op(), "st" | "red") && s.has("relaxed") && s.has("gpu");
    // Whether a fence came after the last barrier on every path to a
    // block's start (must-analysis: false at the entry, true until shown
    // otherwise elsewhere).
    let mut fenced_in = vec![true; blocks.len()];
    fenced_in[0] = false;
    let walk = |i: usize, fenced: bool, out: &mut Vec<(String, String)>| {
        let mut fenced = fenced;
        for s in &blocks[i].instructions {
            match s.op() {
                "fence" | "membar" => fenced = true,
                "bar" | "barrier" => fenced = false,
                _ if publishes(s) && !fenced => out.push((
                    blocks[i].label.clone().unwrap_or_default(),
                    format!("{} {}", s.opcode, s.operands.join(", ")),
                )),
                _ => {}
            }
        }
        fenced
    };
    loop {
        let mut changed = false;
        for i in 0..blocks.len() {
            let out = walk(i, fenced_in[i], &mut Vec::new());
            for &s in &successors[i] {
                if fenced_in[s] && !out {
                    fenced_in[s] = false;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    let mut unfenced = Vec::new();
    for (i, &fenced) in fenced_in.iter().enumerate() {
        walk(i, fenced, &mut unfenced);
    }
    let checked = blocks
        .iter()
        .flat_map(|b| &b.instructions)
        .filter(|s| publishes(s))
        .count();
    (checked, unfenced)
}

/// Every pool kernel publishes a task, signals a gate and counts what it
/// published only after a fence (on every path, since the last barrier);
/// with the worker's fence taken out of `pool_demo`'s PTX, the check names
/// the stores it no longer covers.
#[test]
fn pool_kernels_publish_only_behind_a_fence() {
    for entry in ["pool_demo", "pool_generated", "pool_empty", "pool_barriers"] {
        let (checked, unfenced) = unfenced_publications(clustered_suite::PTX, entry);
        println!("{entry}: {checked} publications, each behind a fence");
        assert!(checked >= 3, "{entry}: only {checked} publications found");
        assert_eq!(unfenced, vec![], "{entry}: publications without a fence");
    }
    let marked = clustered_device::abi::ptx::RELEASE_FENCE_GPU_MARKED;
    let without = edit_entry(clustered_suite::PTX, "pool_demo", |l| {
        if l.contains(marked) {
            String::new()
        } else {
            l.to_string()
        }
    });
    let (_, unfenced) = unfenced_publications(&without, "pool_demo");
    println!("pool_demo without its release fence: {unfenced:?}");
    assert!(
        unfenced
            .iter()
            .any(|(_, s)| s.starts_with("st.relaxed.gpu"))
            && unfenced
                .iter()
                .any(|(_, s)| s.starts_with("red.relaxed.gpu")),
        "the worker's count and signal, unfenced, were not named: {unfenced:?}"
    );
}

/// The suite's pool kernels whose tasks wait only at their CTA's barriers
/// and read the block's size only from their CTA, and only those, get a
/// publishing warp (`clustered_abi::pool`, "A publishing warp"): marked
/// in the PTX the suite loads, and unmarked once a task of theirs waits at
/// a plain barrier. `pool_generated`'s `ragged_sum` returns early: its
/// task protocol's barrier counts the task's threads (`clustered:pool`),
/// and the schedules' protocol, which counts every thread, does not mark.
#[test]
fn only_pools_whose_tasks_never_wait_at_a_barrier_get_a_publishing_warp() {
    let mut pools = publishing_warp_pools(clustered_suite::PTX);
    pools.sort();
    assert_eq!(
        pools,
        [
            "pool_barriers",
            "pool_demo",
            "pool_empty",
            "pool_generated",
            "pool_tables"
        ]
    );
    for pool in &pools {
        let mark = format!(
            "{}{pool} = 1;",
            clustered_device::pool::PUBLISHING_WARP_PREFIX
        );
        assert!(
            clustered_suite::PTX.contains(&mark),
            "{mark} not in the loaded PTX"
        );
    }
    // A task's `sync_threads()`, as an untagged barrier in the entry.
    let waits = edit_entry(clustered_suite::PTX, "pool_demo", |l| {
        if l.contains("// clustered:pool") {
            format!("{l}\n\tbarrier.sync 0;")
        } else {
            l.to_string()
        }
    });
    let mut left = publishing_warp_pools(&waits);
    left.sort();
    assert_eq!(
        left,
        [
            "pool_barriers",
            "pool_empty",
            "pool_generated",
            "pool_tables"
        ]
    );
    // The pool task protocol's vote (in a function of its own, called from
    // the entry) tagged as a schedule's, whose vote counts every thread.
    let votes: Vec<String> = clustered_suite::PTX
        .lines()
        .map(|l| {
            if l.contains("barrier.red") {
                l.replace("// clustered:pool", "// clustered:task")
            } else {
                l.to_string()
            }
        })
        .collect();
    let mut left = publishing_warp_pools(&votes.join("\n"));
    left.sort();
    assert_eq!(
        left,
        ["pool_barriers", "pool_demo", "pool_empty", "pool_tables"]
    );
}
