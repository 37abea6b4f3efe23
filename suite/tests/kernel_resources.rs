//! Assembles the suite's PTX with ptxas for sm_90 and compares, per kernel,
//! every clustered variant with its baseline: registers, spills, and the
//! instructions of the body (loads, stores, FP math). No GPU needed.
//!
//! The body's instructions are counted in the PTX (what rustc emits for the
//! schedule), not in the SASS: ptxas unrolls the same loop differently once it
//! sits in a different entry (a rotated loop latch was unrolled 4x more in
//! every schedule of the naive SGEMM), which changes static SASS counts
//! without changing the body. The SASS is still checked for what ptxas adds:
//! spills, generic loads and stores, warp-aggregated atomics, registers, and
//! how the hot loop is scheduled: the global loads it keeps in flight.
//!
//! ptxas and cuobjdump come from the PyPI packages `nvidia-cuda-nvcc` and
//! `nvidia-cuda-cuobjdump` (`.ci/run` installs them). Without them the test
//! skips with a message, except under CI (`CI` set), where it fails.

use std::collections::BTreeMap;

use clustered_predict::sass::{self, fewest_loads_together, innermost_loops, loads_in_flight};
use clustered_suite::host::cuda_tool;
use std::path::PathBuf;
use std::process::Command;

/// Registers per thread that still allow full occupancy on Hopper (64K
/// registers per SM / 2048 threads). A reorder or redirect schedule may use
/// up to this many, or its baseline's count if higher, and
/// [`MAPPED_INDEX_REGISTERS`] more. Persistent schedules
/// (agents, persistent) keep the agent loop's state live across the body and
/// may need more: that costs occupancy, which is printed here and measured by
/// the bench (whose tuner then does not pick them), not a failure.
const FULL_OCCUPANCY_REGISTERS: u32 = 32;

/// Registers a reorder or redirect schedule may add to its baseline's for
/// the CTA index it runs as. One thread maps it and every warp reads it from
/// shared memory (`run::mapped_once`), so it lives in vector registers where
/// the baseline's block index stays in uniform ones: the quad walks'
/// rasters took 8 more (jacobi5_march4's 40 -> 48, one block an SM fewer)
/// and ran no slower on an H200, against 12-26% gained by the rasters of
/// light kernels (docs/BENCHMARKS.md, "The CTA mapped once a block").
const MAPPED_INDEX_REGISTERS: u32 = 8;

/// PTX instructions of a kernel's body that a schedule must keep as they are.
const PTX_BODY_OPS: &[&str] = &[
    "fma.rn.f32",
    "add.f32",
    "sub.f32",
    "mul.f32",
    "div.rn.f32",
    "ld.global",
    "st.global",
];

/// Counts of [`PTX_BODY_OPS`] in each `.entry` of `ptx`.
fn ptx_body_ops(ptx: &str) -> BTreeMap<String, BTreeMap<&'static str, u32>> {
    let mut entries = BTreeMap::new();
    let mut current: Option<(String, BTreeMap<&'static str, u32>)> = None;
    for line in ptx.lines() {
        // A `.func` (an out-of-line device function, e.g. libm's `sinf`)
        // ends the entry before it: its body is not that entry's.
        if line.starts_with(".func") || line.contains(" .func ") {
            if let Some((name, ops)) = current.take() {
                entries.insert(name, ops);
            }
            continue;
        }
        if let Some(rest) = line.split(".entry ").nth(1) {
            if let Some((name, ops)) = current.take() {
                entries.insert(name, ops);
            }
            let name = rest
                .split(|c: char| c == '(' || c.is_whitespace())
                .next()
                .unwrap_or("");
            current = Some((name.to_string(), BTreeMap::new()));
            continue;
        }
        if let Some((_, ops)) = current.as_mut() {
            let opcode = line
                .split_whitespace()
                .find(|word| !word.starts_with('@'))
                .unwrap_or("");
            for op in PTX_BODY_OPS {
                if opcode.starts_with(op) {
                    *ops.entry(*op).or_default() += 1;
                }
            }
        }
    }
    if let Some((name, ops)) = current {
        entries.insert(name, ops);
    }
    entries
}

#[derive(Debug, Default, Clone)]
struct Resources {
    registers: u32,
    spill_bytes: u32,
    shared_bytes: u32,
    /// Counts of the body's instructions by opcode (FFMA, LDG, LDS, ...).
    body_ops: BTreeMap<String, u32>,
    /// The kernel's SASS instructions, in order.
    sass: Vec<sass::Instruction>,
}

const BODY_OPS: &[&str] = &[
    "FFMA", "FADD", "FMUL", "LDG", "STG", "LDS", "STS", "LD", "ST", "SHFL", "VOTE", "ATOMG", "REDG",
];

fn assemble(text: &str, ptxas: &PathBuf, cuobjdump: &PathBuf) -> BTreeMap<String, Resources> {
    // Tests run in parallel: a folder per call.
    static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("clustered-ptx-{}-{call}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (ptx, cubin) = (dir.join("kernels.ptx"), dir.join("kernels.cubin"));
    std::fs::write(&ptx, text).unwrap();
    let out = Command::new(ptxas)
        .args(["-arch=sm_90", "-v"])
        .arg(&ptx)
        .arg("-o")
        .arg(&cubin)
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "ptxas failed on the suite's PTX:\n{log}"
    );

    let mut kernels: BTreeMap<String, Resources> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            current = rest.split('\'').next().map(str::to_string);
        } else if line.contains("Function properties for") && !line.contains("entry") {
            if let Some(rest) = line.split("Function properties for ").nth(1) {
                if !kernels.contains_key(rest.trim()) && current.as_deref() != Some(rest.trim()) {
                    current = None; // a .func: not a kernel
                }
            }
        } else if let Some(name) = &current {
            let entry = kernels.entry(name.clone()).or_default();
            let number_before = |word: &str| -> Option<u32> {
                let words: Vec<&str> = line.split_whitespace().collect();
                words
                    .iter()
                    .position(|w| w.starts_with(word))
                    .and_then(|i| words.get(i.checked_sub(1)?)?.parse().ok())
            };
            if line.contains("spill stores") {
                // "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"
                entry.spill_bytes = line
                    .split(',')
                    .filter(|part| part.contains("spill"))
                    .filter_map(|part| part.split_whitespace().next()?.parse::<u32>().ok())
                    .sum();
            }
            if let Some(r) = number_before("registers") {
                entry.registers = r;
            }
            if let Some(s) = number_before("bytes").filter(|_| line.contains("smem")) {
                entry.shared_bytes = s;
            }
        }
    }

    let sass = Command::new(cuobjdump)
        .arg("-sass")
        .arg(&cubin)
        .output()
        .unwrap();
    assert!(
        sass.status.success(),
        "cuobjdump failed: {}",
        String::from_utf8_lossy(&sass.stderr)
    );
    for (name, instructions) in sass::functions(&String::from_utf8_lossy(&sass.stdout)) {
        let Some(kernel) = kernels.get_mut(&name) else {
            continue;
        };
        for (_, text) in &instructions {
            let op = base(sass::opcode(text));
            if BODY_OPS.contains(&op) {
                *kernel.body_ops.entry(op.to_string()).or_default() += 1;
            }
        }
        kernel.sass = instructions;
    }
    let _ = std::fs::remove_dir_all(&dir);
    kernels
}

/// An opcode without its modifiers: `LDG.E.128` -> `LDG`.
fn base(opcode: &str) -> &str {
    opcode.split('.').next().unwrap_or("")
}

/// The suite's PTX as built, assembled once for all the tests here (each
/// assembly of the whole suite takes ptxas 10-20 s).
fn suite(ptxas: &PathBuf, cuobjdump: &PathBuf) -> &'static BTreeMap<String, Resources> {
    static SUITE: std::sync::OnceLock<BTreeMap<String, Resources>> = std::sync::OnceLock::new();
    SUITE.get_or_init(|| assemble(clustered_suite::PTX, ptxas, cuobjdump))
}

/// ptxas and cuobjdump, or `None` after saying why the test skips (a
/// failure under CI).
fn tools() -> Option<(PathBuf, PathBuf)> {
    let (Some(ptxas), Some(cuobjdump)) = (cuda_tool("ptxas"), cuda_tool("cuobjdump")) else {
        let message = "ptxas/cuobjdump not found: `pip install nvidia-cuda-nvcc nvidia-cuda-cuobjdump`, or set PTXAS and CUOBJDUMP";
        if std::env::var_os("CI").is_some() {
            panic!("{message}");
        }
        eprintln!("skipped: {message}");
        return None;
    };
    Some((ptxas, cuobjdump))
}

#[test]
fn clustered_variants_cost_what_their_baseline_costs() {
    let Some((ptxas, cuobjdump)) = tools() else {
        return;
    };
    let kernels = suite(&ptxas, &cuobjdump);
    assert!(
        kernels.len() >= 10,
        "expected the whole suite, got {:?}",
        kernels.keys()
    );

    println!(
        "{:<28} {:>5} {:>6} {:>6} {:>9}  body instructions",
        "kernel", "regs", "spill", "smem", "in flight"
    );
    for (name, r) in kernels {
        println!(
            "{name:<28} {:>5} {:>6} {:>6} {:>9}  {:?}",
            r.registers,
            r.spill_bytes,
            r.shared_bytes,
            loads_in_flight(&r.sass),
            r.body_ops
        );
    }

    // Each contract global's kernel, and its binding (the contract's third
    // u32, from the global's byte initializer), in one pass over the PTX.
    let bindings: BTreeMap<&str, Option<u32>> = clustered_suite::PTX
        .lines()
        .filter_map(|line| {
            let rest = line.split("__clustered_contract_").nth(1)?;
            let (name, init) = rest.split_once('[')?;
            let bytes: Vec<&str> = init
                .split(['{', '}'])
                .nth(1)?
                .split(',')
                .map(str::trim)
                .collect();
            Some((name, contract_binding(&bytes)))
        })
        .collect();
    let contracts: Vec<&str> = bindings.keys().copied().collect();
    // Agents, persistent and grid-stride loops: a loop over tasks may keep
    // loop-invariant values in registers (conv5x5's 25 filter taps, a
    // parameter, stay in registers across its grid-stride loop: 38
    // registers). Their occupancy cost is printed, and timed by the bench.
    let persistent: Vec<&str> = bindings
        .iter()
        .filter(|(_, binding)| matches!(binding, Some(2..=4)))
        .map(|(name, _)| *name)
        .collect();
    let ptx_ops = ptx_body_ops(clustered_suite::PTX);
    let mut failures = Vec::new();
    let mut occupancy_costs = Vec::new();
    let mut compared = 0;
    for (name, variant) in kernels {
        if !contracts.contains(&name.as_str()) {
            continue;
        }
        // The baseline: the longest non-clustered kernel name that prefixes this one.
        let Some((base_name, base)) = kernels
            .iter()
            .filter(|(b, _)| !contracts.contains(&b.as_str()) && name.starts_with(&format!("{b}_")))
            .max_by_key(|(b, _)| b.len())
        else {
            failures.push(format!("{name}: no baseline kernel found"));
            continue;
        };
        compared += 1;
        if variant.spill_bytes > base.spill_bytes {
            failures.push(format!(
                "{name}: spills {} bytes, {base_name} {}",
                variant.spill_bytes, base.spill_bytes
            ));
        }
        let persistent_loop = persistent.contains(&name.as_str());
        let index = if persistent_loop {
            0
        } else {
            MAPPED_INDEX_REGISTERS
        };
        let allowed = base.registers.max(FULL_OCCUPANCY_REGISTERS) + index;
        if variant.registers > allowed {
            let message = format!(
                "{name}: {} registers, {base_name} {} (allowed {allowed})",
                variant.registers, base.registers
            );
            if persistent_loop {
                occupancy_costs.push(message);
            } else {
                failures.push(message);
            }
        }
        // The body's loads, stores and FP math, as rustc emitted them: no
        // more than the baseline's. (Fewer happens: LLVM duplicated a load
        // into both arms of a branch in one baseline; the outputs are
        // compared bit for bit elsewhere.)
        let (base_ptx, variant_ptx) = (&ptx_ops[base_name], &ptx_ops[name]);
        for op in PTX_BODY_OPS {
            let (b, v) = (
                base_ptx.get(op).copied().unwrap_or(0),
                variant_ptx.get(op).copied().unwrap_or(0),
            );
            if v > b {
                failures.push(format!("{name}: {v} {op} in its PTX, {base_name} has {b}"));
            }
        }
        // ptxas warp-aggregates a one-thread `atom.add` (a SHFL/VOTE waits on
        // the result, DESIGN.md section 7); the claims use `atom.inc` so that
        // a schedule adds no cross-lane traffic. Generic LD/ST are the slow
        // path a lost address space takes.
        for (op, why) in [
            ("SHFL", "a warp-aggregated atomic?"),
            ("VOTE", "a warp-aggregated atomic?"),
            ("LD", "generic loads: the slow path"),
            ("ST", "generic stores: the slow path"),
        ] {
            let v = variant.body_ops.get(op).copied().unwrap_or(0);
            let b = base.body_ops.get(op).copied().unwrap_or(0);
            if v > b {
                failures.push(format!("{name}: {v} {op}, {base_name} has {b} ({why})"));
            }
        }
        // The same body, scheduled as well: the hot loop keeps at least half
        // the baseline's loads in flight. Not all of them: ptxas allocates
        // each entry on its own (parboil_stencil's schedules get 32
        // registers and 2 loads in flight where the baseline takes 40 and 4;
        // ATAX's redirect 14 against 18). Half is a loop that reads each load
        // as it issues it. A persistent loop's state competes with the body
        // for registers; what that costs is printed (and timed by the bench).
        let (b, v) = (loads_in_flight(&base.sass), loads_in_flight(&variant.sass));
        if v < b {
            let message =
                format!("{name}: its hot loop keeps {v} global loads in flight, {base_name}'s {b}");
            if persistent_loop {
                occupancy_costs.push(message);
            } else if 2 * v < b {
                failures.push(message);
            }
        }
    }
    assert!(compared >= 8, "compared only {compared} variants");
    if !occupancy_costs.is_empty() {
        println!(
            "persistent schedules that cost occupancy or loads in flight (measured by the bench):\n{}",
            occupancy_costs.join("\n")
        );
    }
    assert!(
        failures.is_empty(),
        "clustered variants cost more than their baselines:\n{}",
        failures.join("\n")
    );
}

/// `#[launch_bounds]` reaches ptxas: every entry that has the bounds'
/// global carries `.maxntid` before its body, and ATAX's column pass,
/// bounded to one block per SM, keeps a whole round of its loads in flight
/// (32 of `A`, beside `tmp`'s), which the same PTX without the directives
/// does not: ptxas then keeps 32 registers and reads loads among the rest.
#[test]
fn launch_bounds_reach_ptxas() {
    let Some((ptxas, cuobjdump)) = tools() else {
        return;
    };
    let ptx = clustered_suite::PTX;
    // The bounds the macro left, as the builder reads them.
    let bounded = clustered_builder::bounds::declared(ptx).expect("readable bounds");
    let names: Vec<&str> = bounded.iter().map(|b| b.0).collect();
    assert!(
        names.contains(&"atax_columns") && names.contains(&"atax_columns_agents"),
        "the column pass and its schedules have bounds: {names:?}"
    );
    for (entry, bounds) in &bounded {
        let header = ptx
            .find(&format!(".entry {entry}("))
            .unwrap_or_else(|| panic!("no .entry {entry}"));
        let body = header + ptx[header..].find("\n{").expect("a body");
        // `LaunchBounds` displays as the directives.
        let directives = format!("\n{bounds}\n");
        assert!(
            ptx[header..body + 1].contains(&directives),
            "{entry}: not the launch bounds {directives:?} before its body:\n{}",
            &ptx[header..body]
        );
    }

    let unbounded: String = ptx
        .lines()
        .filter(|line| !line.starts_with(".maxntid") && !line.starts_with(".minnctapersm"))
        .map(|line| format!("{line}\n"))
        .collect();
    let with = &assemble(ptx, &ptxas, &cuobjdump)["atax_columns"];
    let without = &assemble(&unbounded, &ptxas, &cuobjdump)["atax_columns"];
    let (in_flight, before) = (loads_in_flight(&with.sass), loads_in_flight(&without.sass));
    println!(
        "atax_columns: {} registers, {in_flight} loads in flight; without its bounds {} and {before}",
        with.registers, without.registers
    );
    assert_eq!(with.spill_bytes, 0, "no spills");
    assert!(
        in_flight >= 32 && in_flight > before,
        "a round of 32 loads in flight with the bounds ({in_flight}), more than without ({before})"
    );
}

/// `thread::index_1d`/`index_2d` read the block size before the block
/// index, so ptxas reads the index per thread (`S2R`) and the size through
/// the uniform constant path (`ULDC`), as nvcc's `blockIdx.x * blockDim.x`
/// gets; the other order (`S2UR` of the index) made Jacobi 5 and 7 2.2% and
/// 1.3% slower than their nvcc twins on an H200 (docs/BENCHMARKS.md, "The
/// prologue's order").
#[test]
fn the_index_getters_get_nvccs_prologue() {
    let Some((ptxas, cuobjdump)) = tools() else {
        return;
    };
    let kernels = suite(&ptxas, &cuobjdump);
    for name in ["jacobi5", "jacobi7_3d"] {
        let sass: Vec<&str> = kernels[name].sass.iter().map(|(_, t)| t.as_str()).collect();
        for axis in ["SR_CTAID.X", "SR_CTAID.Y"] {
            let reads: Vec<&&str> = sass.iter().filter(|t| t.contains(axis)).collect();
            assert!(
                !reads.is_empty() && reads.iter().all(|t| sass::opcode(t) == "S2R"),
                "{name} reads {axis} as {reads:?}, not with S2R: is the block index read before the block size again?"
            );
        }
        assert!(
            sass.iter()
                .any(|t| sass::opcode(t) == "ULDC" && t.contains("c[0x0][0x0]")),
            "{name} does not load the block size (c[0x0][0x0]) through ULDC"
        );
    }
}

/// The hand-written layouts beside the paper's kernels keep in their SASS
/// what makes them fast (docs/BENCHMARKS.md, session 14, H100): no local
/// memory (the convolution's tile loads batched into an array once kept
/// addresses on the stack and ran 3.2 ms against 0.94), the transpose's
/// four loads issued before its first shared store (a load-then-store loop
/// kept one in flight: 1.23x its nvcc twin's time), the GEMV's round of
/// eight loads in flight, and the float Jacobi 7 walk's five neighbours of
/// each step issued before it reads one (with a pointer per neighbour
/// stepped across the loop, 3 and then 2: 1.04x its twin's time on an
/// H200, docs/BENCHMARKS.md "The walk's pointers, stepped by one offset").
#[test]
fn hand_written_layouts_keep_their_loads_in_flight() {
    let Some((ptxas, cuobjdump)) = tools() else {
        return;
    };
    let kernels = suite(&ptxas, &cuobjdump);
    fn opcode(text: &str) -> &str {
        base(sass::opcode(text))
    }
    for name in ["atax_rows_gemv", "conv5x5_tiled", "transpose_tiled"] {
        let kernel = &kernels[name];
        let local: Vec<&String> = kernel
            .sass
            .iter()
            .map(|(_, text)| text)
            .filter(|text| matches!(opcode(text), "LDL" | "STL"))
            .collect();
        assert!(local.is_empty(), "{name} uses local memory: {local:?}");
        assert_eq!(kernel.spill_bytes, 0, "{name} spills");
    }
    let transpose = &kernels["transpose_tiled"].sass;
    let first_store = transpose
        .iter()
        .position(|(_, text)| opcode(text) == "STS")
        .expect("transpose_tiled stores to shared memory");
    let loads_first = transpose[..first_store]
        .iter()
        .filter(|(_, text)| opcode(text) == "LDG")
        .count();
    let gemv = loads_in_flight(&kernels["atax_rows_gemv"].sass);
    let walk = fewest_loads_together(&kernels["jacobi7_3d_march"].sass);
    let quads = fewest_loads_together(&kernels["jacobi7_3d_march4"].sass);
    println!("transpose_tiled: {loads_first} loads before its first shared store; atax_rows_gemv: {gemv} loads in flight; jacobi7_3d_march: {walk} loads issued together at the fewest; jacobi7_3d_march4: {quads}");
    assert!(
        loads_first >= 4,
        "transpose_tiled issues {loads_first} loads before its first shared store, not 4"
    );
    assert!(
        gemv >= 8,
        "atax_rows_gemv keeps {gemv} loads in flight, not 8"
    );
    assert!(
        walk >= 5,
        "jacobi7_3d_march reads a load of a step before issuing the rest ({walk} together, not its 5 neighbours): its pointers are stepped apart again?"
    );
    assert!(
        quads >= 10,
        "jacobi7_3d_march4 reads a load of a step before issuing the rest ({quads} together, not its two planes' 10): did it lose its launch bounds?"
    );
}

/// Pool bodies keep their launches' inner loops: each innermost loop with
/// float math of `kmeans_assign_launch` and `kmeans_update_launch` (its
/// loads, stores and float math by opcode) is one of `pool_demo`'s, which
/// inlines the same bodies beside its dispatch and its other kinds, and
/// each of the kernel `polynomial`'s is one of its generated pool's
/// (`pool_tables`). The loads each keeps in flight are printed, not held
/// to the launch's: the assign's loop keeps 11 in the launch and 7 in the
/// pool with the same instructions, and no run has timed the launch's
/// loop alone (the pool's took 4.8 us a CTA on an H100 in session 54,
/// e0779a8's guarded 89-instruction loop 3.0).
/// The assign's loop once compiled, from the same PTX, to 20 shared loads
/// in the pool (16 of them a point's coordinates as one 8-byte pair, one
/// pair in flight at a time) against the launch's 36, and that loop took
/// 6.1 us a CTA instead of 3.0 on an H100
/// (docs/BENCHMARKS.md, "The k-means assign's loads, unguarded"). SGEMM64
/// is not held to its launch: ptxas unrolls its k loop whole in the pool
/// and 4 deep in the launch, and the pool's ran faster.
#[test]
fn pool_bodies_keep_their_launches_inner_loops() {
    let Some((ptxas, cuobjdump)) = tools() else {
        return;
    };
    let kernels = suite(&ptxas, &cuobjdump);
    for (launch, pool) in [
        ("kmeans_assign_launch", "pool_demo"),
        ("kmeans_update_launch", "pool_demo"),
        ("polynomial", "pool_tables"),
    ] {
        let pool_loops = innermost_loops(&kernels[pool].sass, BODY_OPS);
        // Loops that compute: not a barrier's slow path.
        let loops: Vec<_> = innermost_loops(&kernels[launch].sass, BODY_OPS)
            .into_iter()
            .filter(|l| {
                ["FFMA", "FADD", "FMUL"]
                    .iter()
                    .any(|op| l.ops.contains_key(*op))
            })
            .collect();
        assert!(!loops.is_empty(), "{launch} has no loop");
        for l in loops {
            let like = pool_loops.iter().find(|p| p.ops == l.ops);
            let Some(like) = like else {
                panic!(
                    "{pool} has no loop like {launch}'s {l:?}: the body is scheduled differently inside the pool (its loops: {pool_loops:?})"
                );
            };
            println!(
                "{launch}: {:?}, loads in flight {} in the launch, {} in {pool}",
                l.ops, l.loads_in_flight, like.loads_in_flight
            );
        }
    }
}

/// What `Gpu::load_module` does for a schedule whose registers cost its
/// kernel's occupancy, done here with ptxas for an H100: the module with a
/// capped copy of each such schedule assembles, its own entries compile as
/// before, every copy fits its cap, and the cap takes effect (no more
/// spills) on some of the suite's schedules.
#[test]
fn schedules_over_their_kernels_occupancy_fit_it_when_capped() {
    use clustered_suite::host::{
        capped_name, plan_register_caps, ptx_baseline_links, ptx_with_register_caps, CapOutcome,
    };
    let Some((ptxas, cuobjdump)) = tools() else {
        return;
    };
    let h100 = clustered_suite::host::RegisterFile::from(
        &clustered_suite::host::DeviceProperties::h100_sxm(),
    );
    let kernels = suite(&ptxas, &cuobjdump);
    let links = ptx_baseline_links(clustered_suite::PTX);
    assert!(
        links.len() > 100,
        "only {} schedules linked to their kernels",
        links.len()
    );
    let caps = plan_register_caps(clustered_suite::PTX, &h100, |name| {
        Ok::<_, std::convert::Infallible>(kernels.get(name).map(|k| k.registers))
    })
    .unwrap_or_else(|never| match never {});
    assert!(!caps.is_empty(), "no schedule of the suite costs occupancy");
    let wanted: Vec<(&str, u32)> = caps.iter().map(|c| (c.entry.as_str(), c.cap)).collect();
    let text = ptx_with_register_caps(clustered_suite::PTX, &wanted)
        .expect("the suite's entries can be cut out");
    let capped = assemble(&text, &ptxas, &cuobjdump);
    let mut applied = 0;
    for c in &caps {
        let (entry, baseline, cap) = (c.entry.as_str(), c.baseline.as_str(), c.cap);
        let (before, after) = (&kernels[entry], &capped[&capped_name(entry)]);
        assert_eq!(
            (capped[entry].registers, capped[entry].spill_bytes),
            (before.registers, before.spill_bytes),
            "{entry}: compiled otherwise beside its capped copy"
        );
        assert!(
            after.registers <= cap,
            "{entry}: {} registers under .maxnreg {cap}",
            after.registers
        );
        let used =
            CapOutcome::judge(after.registers, before.spill_bytes, after.spill_bytes).is_applied();
        applied += used as u32;
        println!(
            "{entry}: {} registers ({baseline} {}) -> {} (.maxnreg {cap}), spills {} -> {} bytes: {}",
            before.registers,
            kernels[baseline].registers,
            after.registers,
            before.spill_bytes,
            after.spill_bytes,
            if used { "capped" } else { "kept as it was" }
        );
    }
    assert_eq!(
        capped.len(),
        kernels.len() + caps.len(),
        "the module, and a copy of each capped entry"
    );
    assert!(applied > 0, "no cap fitted without spills");
}

/// The binding of a contract from the bytes of its PTX initializer
/// (`KernelContract`: magic, ABI version, binding, ... as little-endian u32).
fn contract_binding(bytes: &[&str]) -> Option<u32> {
    let field: Vec<u8> = bytes
        .get(8..12)?
        .iter()
        .map(|b| b.parse().ok())
        .collect::<Option<_>>()?;
    Some(u32::from_le_bytes(field.try_into().ok()?))
}

/// What `Gpu::load_module` does on a driver that compiles PTX ISA 8.6
/// (`ptx_with_release_fences`): the pool kernels' marked fences become
/// `fence.release.gpu` and the module assembles at ISA 8.6; each marked
/// fence loses the L1 invalidation (`CCTL.IVALL`) its acquire half brought,
/// and nothing else changes: every other entry's SASS is the same, and a
/// marked entry keeps every other instruction (ptxas may order them
/// otherwise).
#[test]
fn release_fences_drop_only_the_l1_invalidation() {
    use clustered_device::abi::ptx::RELEASE_FENCE_GPU_MARKED as mark;
    use clustered_suite::host::{ptx_entry_texts, ptx_with_release_fences};
    let Some((ptxas, cuobjdump)) = tools() else {
        return;
    };
    let marks: BTreeMap<&str, usize> = ptx_entry_texts(clustered_suite::PTX)
        .expect("the suite's entries can be cut out")
        .into_iter()
        .map(|(name, text)| (name, text.matches(mark).count()))
        .filter(|&(_, n)| n > 0)
        .collect();
    assert!(
        marks.contains_key("pool_demo") && marks.contains_key("pool_generated"),
        "the pool kernels' fences are not marked: {marks:?}"
    );
    assert_eq!(
        marks.values().sum::<usize>(),
        clustered_suite::PTX.matches(mark).count(),
        "a marked fence outside every entry"
    );
    let fenced =
        ptx_with_release_fences(clustered_suite::PTX, 12080).expect("the suite's PTX has marks");
    assert!(fenced.contains("\n.version 8.6\n") && !fenced.contains(mark));
    let (before, after) = (
        suite(&ptxas, &cuobjdump),
        assemble(&fenced, &ptxas, &cuobjdump),
    );
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>()
    );
    fn opcodes(k: &Resources) -> Vec<&str> {
        k.sass.iter().map(|(_, text)| sass::opcode(text)).collect()
    }
    // What a marked entry keeps: its memory, synchronisation and control
    // instructions but the invalidations, in any order (ptxas may reorder
    // them). Not its arithmetic: the fenced PTX's newer `.version` lets
    // ptxas pick other integer instructions for the same values (the
    // constant-table pool: an IMAD.U32 and a LEA became an IMAD and a MOV).
    fn rest<'a>(ops: &[&'a str]) -> Vec<&'a str> {
        const KEPT: [&str; 12] = [
            "LD",
            "ST",
            "RED",
            "ATOM",
            "MEMBAR",
            "FENCE",
            "BAR",
            "ERRBAR",
            "CGAERRBAR",
            "NANOSLEEP",
            "EXIT",
            "BRA",
        ];
        let mut rest: Vec<&str> = ops
            .iter()
            .copied()
            .filter(|&op| op != "CCTL.IVALL" && KEPT.iter().any(|k| op.starts_with(k)))
            .collect();
        rest.sort_unstable();
        rest
    }
    for (name, was) in before {
        let Some(&n) = marks.get(name.as_str()) else {
            assert!(
                was.sass == after[name].sass,
                "{name}: no marked fence, yet its SASS changed"
            );
            continue;
        };
        let (was, is) = (opcodes(was), opcodes(&after[name]));
        let invalidations = |ops: &[&str]| ops.iter().filter(|&&op| op == "CCTL.IVALL").count();
        assert_eq!(
            invalidations(&was) - invalidations(&is),
            n,
            "{name}: {n} marked fence(s), L1 invalidations {} -> {}",
            invalidations(&was),
            invalidations(&is)
        );
        assert_eq!(rest(&was), rest(&is), "{name}: other instructions changed");
        println!(
            "{name}: {n} release fence(s), L1 invalidations {} -> {}",
            invalidations(&was),
            invalidations(&is)
        );
    }
}
