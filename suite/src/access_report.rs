//! The static locality report (issue 13, seed 004): for one suite kernel,
//! what the access analysis of `#[clustered]` read in its body (each global
//! access's affine form and the paper's class), what that predicts at the
//! workload's launch (sectors per request, per-CTA footprint, reuse, L1 and
//! L2 hit rates), the schedules it proposes and why, and optionally the
//! simulator's numbers for the same launch. `examples/access.rs` prints it
//! for the suite; `tests/access_report.rs` pins it in a snapshot.

use serde::Serialize;

use crate::host::cpu::Dispatch;
use crate::sim::access::{estimate, sharing_text, Direction, StaticEstimate, StaticLaunch};
use crate::sim::{format_table, DeviceProfile};
use crate::simulate::simulate;
use crate::suite::{Arg, Workload};

/// Warp requests enumerated per kernel at most (about a second each).
pub const BUDGET: u64 = 20_000_000;

/// A kernel's report, as JSON.
#[derive(Serialize)]
pub struct Report {
    pub kernel: &'static str,
    pub problem: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub ctas_enumerated: u64,
    pub accesses: Vec<AccessRow>,
    /// Closures and macros in the body that name pointer parameters,
    /// which the analysis did not read: accesses missing above.
    pub unseen: Vec<UnseenRow>,
    pub predicted: Rates,
    pub simulated: Option<Rates>,
    /// What the analysis proposes with this launch's values.
    pub proposals: Vec<ProposalRow>,
    /// What `#[clustered(auto)]` generated at compile time (no values
    /// known), the baseline first: the tuned launch's candidates.
    pub auto_family: Vec<&'static str>,
}

#[derive(Serialize)]
pub struct AccessRow {
    pub line: u32,
    pub source: String,
    pub direction: &'static str,
    pub form: String,
    pub class: &'static str,
    pub sharing: String,
    pub sectors_per_request: f64,
    pub footprint_bytes: u64,
}

#[derive(Serialize)]
pub struct UnseenRow {
    pub line: u32,
    pub what: &'static str,
    pub pointers: Vec<&'static str>,
}

#[derive(Serialize, Clone, Copy)]
pub struct Rates {
    /// Load sector accesses that an infinite cache would hit.
    pub reuse: f64,
    /// Of those, the share another CTA loaded last.
    pub cross_cta_share: f64,
    pub l1_hit: f64,
    pub l2_hit: f64,
}

#[derive(Serialize)]
pub struct ProposalRow {
    pub schedule: String,
    pub why: &'static str,
}

/// L1 and L2 hit rates from the infinite-cache counts and the caches'
/// sizes: reuse within a CTA hits L1 while the CTAs resident on an SM fit
/// in it; the rest of the reuse hits L2 while the CTAs in flight fit in it.
/// Stores go to L2 and count as misses there (as the simulator counts
/// write allocations).
pub fn rates(e: &StaticEstimate, profile: &DeviceProfile, resident: u32) -> Rates {
    let loads = e.load_sectors.max(1) as f64;
    let intra = e.reused_sectors.saturating_sub(e.cross_cta_reused_sectors) as f64;
    let footprint: u64 = e
        .accesses
        .iter()
        .filter(|a| a.direction == Direction::Load)
        .map(|a| a.footprint_bytes)
        .sum();
    let fits =
        |cache: u64, ctas: u64| (cache as f64 / (footprint.max(1) * ctas.max(1)) as f64).min(1.0);
    let l1_hits = intra * fits(profile.l1.bytes, u64::from(resident));
    let in_flight = u64::from(resident) * u64::from(profile.sm_count);
    let l2_hits = (e.reused_sectors as f64 - l1_hits).max(0.0) * fits(profile.l2.bytes, in_flight);
    let stores: u64 = e
        .accesses
        .iter()
        .filter(|a| a.direction != Direction::Load)
        .map(|a| a.sectors)
        .sum();
    Rates {
        reuse: e.reuse(),
        cross_cta_share: if e.reused_sectors == 0 {
            0.0
        } else {
            e.cross_cta_reused_sectors as f64 / e.reused_sectors as f64
        },
        l1_hit: l1_hits / loads,
        l2_hit: l2_hits / ((loads - l1_hits) + stores as f64).max(1.0),
    }
}

/// `workload`'s report on `profile` (`None`: the kernel has no access
/// analysis); with `validate`, the baseline also runs on the locality
/// simulator (CPU backend) for the same launch.
pub fn report(
    workload: &Workload,
    profile: &DeviceProfile,
    validate: bool,
) -> Result<Option<Report>, String> {
    let baseline = &workload.variants[0];
    let Some(accesses) = baseline.accesses else {
        return Ok(None);
    };
    // Integer parameters by name, from the workload's arguments.
    let scalars: Vec<(&str, i64)> = accesses
        .parameters
        .iter()
        .zip(&workload.args)
        .filter_map(|(name, arg)| match arg {
            Arg::U32(v) => Some((*name, i64::from(*v))),
            _ => None,
        })
        .collect();
    let shape = workload.shape;
    let (grid, block) = (shape.grid, shape.block);
    let launch = StaticLaunch {
        grid,
        block,
        scalars: &scalars,
    };
    let e = estimate(accesses, &launch, BUDGET);
    let resident =
        profile.resident_blocks(shape.block_threads() as u32, shape.dynamic_shared_bytes);
    let predicted = rates(&e, profile, resident);
    let simulated = if validate {
        let sim = simulate(workload, baseline, profile, Dispatch::RoundRobin)
            .map_err(|err| format!("{}: {err}", workload.name))?;
        let s = sim.stats;
        Some(Rates {
            reuse: s.reuse_share(),
            cross_cta_share: s.cross_cta_reuse_share(),
            l1_hit: s.l1_hit_rate(),
            l2_hit: s.l2_hit_rate(),
        })
    } else {
        None
    };
    Ok(Some(Report {
        kernel: workload.name,
        problem: workload.problem.clone(),
        grid,
        block,
        ctas_enumerated: e.ctas_enumerated,
        accesses: e
            .accesses
            .iter()
            .map(|a| AccessRow {
                line: a.line,
                source: a.source.clone(),
                direction: a.direction.name(),
                form: a.form.clone(),
                class: a.class.name(),
                sharing: sharing_text(a.sharing, accesses),
                sectors_per_request: a.sectors_per_request,
                footprint_bytes: a.footprint_bytes,
            })
            .collect(),
        unseen: accesses
            .unseen
            .iter()
            .map(|u| UnseenRow {
                line: u.line,
                what: u.what,
                pointers: u.pointers.to_vec(),
            })
            .collect(),
        predicted,
        simulated,
        proposals: e
            .proposals
            .iter()
            .map(|p| ProposalRow {
                schedule: format!("{}_auto_{}", workload.variants[0].kernel, p.tag),
                why: p.why,
            })
            .collect(),
        auto_family: baseline
            .auto_family
            .map(|family| family())
            .unwrap_or_default(),
    }))
}

/// The report as text, as `examples/access.rs` prints it.
pub fn render(report: &Report) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n{} ({}), grid {:?}, block {:?}{}",
        report.kernel,
        report.problem,
        report.grid,
        report.block,
        if report.ctas_enumerated < report.grid.iter().map(|&g| u64::from(g)).product() {
            format!(", first {} CTAs enumerated", report.ctas_enumerated)
        } else {
            String::new()
        }
    );
    let rows: Vec<Vec<String>> = report
        .accesses
        .iter()
        .map(|a| {
            vec![
                a.line.to_string(),
                a.direction.into(),
                // One line, however the source was wrapped.
                a.source
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
                    .chars()
                    .take(40)
                    .collect(),
                a.form.clone(),
                a.class.into(),
                a.sharing.clone(),
                format!("{:.1}", a.sectors_per_request),
                format!("{}", a.footprint_bytes),
            ]
        })
        .collect();
    let _ = writeln!(
        out,
        "{}",
        format_table(
            &[
                "line",
                "",
                "access",
                "affine form (elements)",
                "class",
                "CTAs share",
                "sectors/req",
                "bytes/CTA"
            ],
            &rows
        )
    );
    for u in &report.unseen {
        let _ = writeln!(
            out,
            "not read: {} at line {} names {}: its loads and stores are not above",
            u.what,
            u.line,
            u.pointers
                .iter()
                .map(|p| format!("`{p}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let rate = |r: &Rates| {
        format!(
            "reuse {:.1}% (cross-CTA {:.1}% of it), L1 hit {:.1}%, L2 hit {:.1}%",
            100.0 * r.reuse,
            100.0 * r.cross_cta_share,
            100.0 * r.l1_hit,
            100.0 * r.l2_hit
        )
    };
    let _ = writeln!(out, "predicted: {}", rate(&report.predicted));
    if let Some(simulated) = &report.simulated {
        let _ = writeln!(out, "simulated: {}", rate(simulated));
    }
    if report.proposals.is_empty() {
        let why = if report.unseen.is_empty() {
            "nothing the analysis can exploit"
        } else {
            "nothing the analysis can exploit in what it read"
        };
        let _ = writeln!(out, "proposes: the baseline only ({why})");
    }
    for p in &report.proposals {
        let _ = writeln!(out, "proposes {}: {}", p.schedule, p.why);
    }
    let _ = writeln!(
        out,
        "#[clustered(auto)] built (compile time): {}",
        report.auto_family.join(", ")
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_names_what_the_analysis_did_not_read() {
        let rates = Rates {
            reuse: 0.0,
            cross_cta_share: 0.0,
            l1_hit: 0.0,
            l2_hit: 0.0,
        };
        let mut report = Report {
            kernel: "k",
            problem: "64".into(),
            grid: [1, 1, 1],
            block: [64, 1, 1],
            ctas_enumerated: 1,
            accesses: Vec::new(),
            unseen: vec![UnseenRow {
                line: 7,
                what: "a closure",
                pointers: vec!["input", "out"],
            }],
            predicted: rates,
            simulated: None,
            proposals: Vec::new(),
            auto_family: vec!["k"],
        };
        let text = render(&report);
        assert!(
            text.contains(
                "not read: a closure at line 7 names `input`, `out`: its loads and stores are not above"
            ),
            "{text}"
        );
        assert!(
            text.contains("the baseline only (nothing the analysis can exploit in what it read)")
        );
        report.unseen.clear();
        let text = render(&report);
        assert!(!text.contains("not read"));
        assert!(text.contains("the baseline only (nothing the analysis can exploit)\n"));
    }
}
