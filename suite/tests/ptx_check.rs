//! The build's PTX check on the suite's real PTX: it passes the suite, and it
//! names the entry point when a block-index read or a barrier in a clustered
//! kernel is not the scheduler's (here made by editing the PTX text, since a
//! kernels crate with such a kernel would not build).

use clustered_builder::ptx_check::{check, ProblemKind};

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
