//! Static locality (seed 004): what a kernel's accesses, as the macro read
//! them (`<kernel>::ACCESSES`), say about its cache behaviour at one launch,
//! without running it.
//!
//! For each access it evaluates the affine form at every thread of a CTA
//! and every trip of the loops its form names, CTA after CTA in the
//! baseline's row-major order, and counts 32-byte sectors as the simulator
//! does: a warp's request touches each sector once; a sector access is
//! *reused* when any access before it touched the sector (an infinite
//! cache would hit), *cross-CTA* when the last one to touch it was another
//! CTA (the paper's inter-CTA reuse, figure 3).
//!
//! Assumptions, each a source of disagreement with the simulator:
//! - every access runs on every thread (conditions such as `if i < n` are
//!   not read), and opaque accesses are left out (their addresses depend on
//!   data);
//! - loops the form does not name repeat its sectors (each repeat reused);
//!   an unknown trip count counts as one trip;
//! - CTAs run one after the other, so cross-CTA reuse is what an infinite
//!   cache would see in launch order, not the interleaving of waves;
//! - where the grid is too large to enumerate within the budget, the first
//!   CTAs in row-major order stand for all (the counts are scaled).

use std::collections::HashMap;

pub use clustered_device::abi::access::Direction;
use clustered_device::abi::access::{
    classify, proposals, sharing, Access, Accesses, Axis, Class, Index, Proposal, Reuse, Sym,
    Values,
};

/// Sector size of L1 and L2, bytes.
const SECTOR: i64 = 32;

/// The launch the estimate is for.
#[derive(Clone, Debug)]
pub struct StaticLaunch<'a> {
    /// Grid, in CTAs.
    pub grid: [u32; 3],
    /// Block, in threads.
    pub block: [u32; 3],
    /// Integer parameters by name.
    pub scalars: &'a [(&'a str, i64)],
}

impl Values for StaticLaunch<'_> {
    fn value(&self, sym: Sym<'_>) -> Option<i64> {
        match sym {
            Sym::BlockDim(axis) => Some(i64::from(self.block[axis.index()])),
            Sym::GridDim(axis) => Some(i64::from(self.grid[axis.index()])),
            Sym::Param(name) => self
                .scalars
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| *v),
            Sym::Const(_, value) => Some(value),
            Sym::Block(_) | Sym::Thread(_) | Sym::Loop(_) => None,
        }
    }
}

/// One access's estimate.
#[derive(Clone, Debug)]
pub struct AccessEstimate {
    /// Its source text.
    pub source: String,
    /// Its line in the kernel's file.
    pub line: u32,
    /// The pointer parameter it goes through.
    pub pointer: String,
    /// Load, store or update.
    pub direction: Direction,
    /// The affine form, or why there is none.
    pub form: String,
    /// The paper's class, at this launch.
    pub class: Class,
    /// How much neighbouring CTAs share through it along x, y, z.
    pub sharing: [Reuse; 3],
    /// Sectors per warp request (4 for a coalesced warp of 4-byte words).
    pub sectors_per_request: f64,
    /// Bytes one CTA touches through it (distinct sectors x 32).
    pub footprint_bytes: u64,
    /// Sector accesses (scaled to the grid).
    pub sectors: u64,
    /// Of those, sectors some access touched before.
    pub reused: u64,
    /// Of those, sectors another CTA touched last.
    pub cross_cta: u64,
}

/// The estimate for a kernel at one launch.
#[derive(Clone, Debug)]
pub struct StaticEstimate {
    /// Each access, in source order.
    pub accesses: Vec<AccessEstimate>,
    /// Load sector accesses over all loads (scaled to the grid).
    pub load_sectors: u64,
    /// Of those, the ones an infinite cache would hit.
    pub reused_sectors: u64,
    /// Of those, the ones another CTA loaded last.
    pub cross_cta_reused_sectors: u64,
    /// CTAs enumerated (the first in row-major order).
    pub ctas_enumerated: u64,
    /// CTAs in the grid.
    pub ctas: u64,
    /// What the analysis proposes at this launch, and why.
    pub proposals: Vec<Proposal>,
}

impl StaticEstimate {
    /// Reused over all load sectors.
    pub fn reuse(&self) -> f64 {
        ratio(self.reused_sectors, self.load_sectors)
    }

    /// Cross-CTA reused over all load sectors.
    pub fn cross_cta_reuse(&self) -> f64 {
        ratio(self.cross_cta_reused_sectors, self.load_sectors)
    }
}

fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// An index form compiled for one launch: `constant + Σ coefficient * var`.
struct Linear {
    constant: i64,
    /// (variable, coefficient), variables: 0-2 block, 3-5 thread, 6.. loops.
    terms: Vec<(usize, i64)>,
}

fn linear(
    terms: &[clustered_device::abi::access::Term<'_>],
    launch: &StaticLaunch<'_>,
    loops: &[&str],
) -> Option<Linear> {
    let mut out = Linear {
        constant: 0,
        terms: Vec::new(),
    };
    for term in terms {
        let mut coefficient = term.coefficient;
        let mut var = None;
        for f in term.factors {
            let slot = match *f {
                Sym::Block(axis) => Some(axis.index()),
                Sym::Thread(axis) => Some(3 + axis.index()),
                Sym::Loop(name) => Some(6 + loops.iter().position(|l| *l == name)?),
                other => {
                    coefficient = coefficient.checked_mul(launch.value(other)?)?;
                    None
                }
            };
            if let Some(slot) = slot {
                if var.replace(slot).is_some() {
                    return None;
                }
            }
        }
        match var {
            Some(v) => out.terms.push((v, coefficient)),
            None => out.constant = out.constant.checked_add(coefficient)?,
        }
    }
    Some(out)
}

/// A loop's trips at this launch (1 where unknown).
fn trips(all: &Accesses<'_>, counter: &str, launch: &StaticLaunch<'_>) -> u64 {
    let Some(lp) = all.loops.iter().find(|l| l.counter == counter) else {
        return 1;
    };
    let sum = |terms: &[clustered_device::abi::access::Term<'_>]| {
        terms
            .iter()
            .try_fold(0i64, |s, t| s.checked_add(t.value(launch)?))
    };
    let span = lp.trips.and_then(sum);
    let step = lp.step.and_then(sum).filter(|s| *s > 0);
    match (span, step) {
        (Some(span), Some(step)) if span > 0 => (span as u64).div_ceil(step as u64),
        (Some(span), None) if span > 0 => span as u64,
        _ => 1,
    }
}

/// Estimates `all` at `launch`, evaluating at most about `budget` warp
/// requests (the first CTAs in row-major order stand for the rest).
pub fn estimate(all: &Accesses<'_>, launch: &StaticLaunch<'_>, budget: u64) -> StaticEstimate {
    let ctas = launch.grid.iter().map(|&g| u64::from(g)).product::<u64>();
    let threads = launch.block.iter().map(|&b| u64::from(b)).product::<u64>();
    let warps = threads.div_ceil(32);
    // Per CTA: each access's named loops' trips times its warps.
    let per_cta: u64 = all
        .accesses
        .iter()
        .map(|a| {
            a.loops
                .iter()
                .filter(|l| names_loop(a, l))
                .map(|l| trips(all, l, launch))
                .product::<u64>()
                * warps
        })
        .sum::<u64>()
        .max(1);
    let enumerated = (budget / per_cta).clamp(1, ctas.max(1));
    let scale = ctas as f64 / enumerated as f64;

    // Sector -> the CTA that last touched it, per pointer.
    let mut last: HashMap<(usize, i64), u64> = HashMap::new();
    let mut estimates: Vec<AccessEstimate> = all
        .accesses
        .iter()
        .map(|a| AccessEstimate {
            source: a.source.to_string(),
            line: a.line,
            pointer: a.pointer.to_string(),
            direction: a.direction,
            form: form(a),
            class: classify(a, all, launch),
            sharing: sharing(a, all, launch),
            sectors_per_request: 0.0,
            footprint_bytes: 0,
            sectors: 0,
            reused: 0,
            cross_cta: 0,
        })
        .collect();
    let pointers: Vec<&str> = {
        let mut p: Vec<&str> = all.accesses.iter().map(|a| a.pointer).collect();
        p.dedup();
        p
    };
    let compiled: Vec<Option<(Linear, Vec<u64>, u64)>> = all
        .accesses
        .iter()
        .map(|a| {
            let Index::Affine(terms) = a.index else {
                return None;
            };
            let named: Vec<&str> = a
                .loops
                .iter()
                .copied()
                .filter(|l| names_loop(a, l))
                .collect();
            let repeats: u64 = a
                .loops
                .iter()
                .filter(|l| !names_loop(a, l))
                .map(|l| trips(all, l, launch))
                .product();
            let ranges = named.iter().map(|l| trips(all, l, launch)).collect();
            Some((linear(terms, launch, &named)?, ranges, repeats))
        })
        .collect();
    let [bx, by, _] = launch.grid.map(u64::from);
    let [tx, ty, _] = launch.block.map(u64::from);
    let mut first_cta_sectors = vec![0u64; all.accesses.len()];
    for cta in 0..enumerated {
        let block = [cta % bx, (cta / bx) % by, cta / (bx * by)];
        for (i, (access, compiled)) in all.accesses.iter().zip(&compiled).enumerate() {
            let Some((linear, ranges, repeats)) = compiled else {
                continue;
            };
            let pointer = pointers
                .iter()
                .position(|p| *p == access.pointer)
                .unwrap_or(0);
            let elem = i64::from(access.elem_bytes.max(1));
            let estimate = &mut estimates[i];
            let mut cta_sectors: HashMap<i64, ()> = HashMap::new();
            let mut vars = [0i64; 16];
            for (slot, b) in block.iter().enumerate() {
                vars[slot] = *b as i64;
            }
            let iterations: u64 = ranges.iter().product();
            let mut warp_sectors: Vec<i64> = Vec::with_capacity(32);
            for it in 0..iterations {
                let mut rest = it;
                for (l, range) in ranges.iter().enumerate().rev() {
                    if 6 + l < vars.len() {
                        vars[6 + l] = (rest % range) as i64;
                    }
                    rest /= range;
                }
                for warp in 0..warps {
                    warp_sectors.clear();
                    for lane in 0..32 {
                        let t = warp * 32 + lane;
                        if t >= threads {
                            break;
                        }
                        vars[3] = (t % tx) as i64;
                        vars[4] = ((t / tx) % ty) as i64;
                        vars[5] = (t / (tx * ty)) as i64;
                        let index = linear.terms.iter().fold(linear.constant, |s, &(v, c)| {
                            s.wrapping_add(c.wrapping_mul(vars[v]))
                        });
                        let sector = (index.wrapping_mul(elem)).div_euclid(SECTOR);
                        if !warp_sectors.contains(&sector) {
                            warp_sectors.push(sector);
                        }
                    }
                    for &sector in &warp_sectors {
                        estimate.sectors += repeats;
                        estimate.reused += repeats - 1;
                        cta_sectors.insert(sector, ());
                        if let Some(previous) = last.insert((pointer, sector), cta) {
                            estimate.reused += 1;
                            if previous != cta {
                                estimate.cross_cta += 1;
                            }
                        }
                    }
                    if cta == 0 {
                        first_cta_sectors[i] += warp_sectors.len() as u64;
                    }
                }
            }
            if cta == 0 {
                estimate.footprint_bytes = cta_sectors.len() as u64 * SECTOR as u64;
                let requests = iterations * warps;
                estimate.sectors_per_request = first_cta_sectors[i] as f64 / requests.max(1) as f64;
            }
        }
    }
    let scaled = |v: u64| (v as f64 * scale).round() as u64;
    for e in &mut estimates {
        e.sectors = scaled(e.sectors);
        e.reused = scaled(e.reused);
        e.cross_cta = scaled(e.cross_cta);
    }
    let loads = || estimates.iter().filter(|e| e.direction == Direction::Load);
    StaticEstimate {
        load_sectors: loads().map(|e| e.sectors).sum(),
        reused_sectors: loads().map(|e| e.reused).sum(),
        cross_cta_reused_sectors: loads().map(|e| e.cross_cta).sum(),
        ctas_enumerated: enumerated,
        ctas,
        proposals: proposals(all, launch).collect(),
        accesses: estimates,
    }
}

/// Whether `access`'s form names the loop `counter`.
fn names_loop(access: &Access<'_>, counter: &str) -> bool {
    match access.index {
        Index::Affine(terms) => terms
            .iter()
            .any(|t| t.factors.contains(&Sym::Loop(counter))),
        Index::Opaque { .. } => false,
    }
}

/// The form as text: `by*n*TILE + ty*n + k`.
pub fn form(access: &Access<'_>) -> String {
    let terms = match access.index {
        Index::Affine(terms) => terms,
        Index::Opaque {
            why,
            block_axes,
            data,
        } => {
            let on: Vec<&str> = Axis::ALL
                .iter()
                .filter(|a| block_axes[a.index()])
                .map(|a| a.name())
                .collect();
            return format!(
                "not affine ({why}); depends on {}{}",
                if on.is_empty() {
                    "no CTA coordinate".to_string()
                } else {
                    format!("b{}", on.join(", b"))
                },
                if data { " and memory" } else { "" }
            );
        }
    };
    if terms.is_empty() {
        return "0".into();
    }
    let mut out = String::new();
    for (i, term) in terms.iter().enumerate() {
        let negative = term.coefficient < 0;
        if i > 0 {
            out.push_str(if negative { " - " } else { " + " });
        } else if negative {
            out.push('-');
        }
        let mut parts: Vec<String> = term.factors.iter().map(sym_name).collect();
        if term.coefficient.unsigned_abs() != 1 || parts.is_empty() {
            parts.insert(0, term.coefficient.unsigned_abs().to_string());
        }
        out.push_str(&parts.join("*"));
    }
    out
}

fn sym_name(sym: &Sym<'_>) -> String {
    match *sym {
        Sym::Block(a) => format!("b{}", a.name()),
        Sym::Thread(a) => format!("t{}", a.name()),
        Sym::BlockDim(a) => format!("bd{}", a.name()),
        Sym::GridDim(a) => format!("gd{}", a.name()),
        Sym::Param(p) | Sym::Loop(p) => p.to_string(),
        Sym::Const(p, _) => p.to_string(),
    }
}

/// `[x, y, z]` sharing as `x: all, y: none`.
pub fn sharing_text(sharing: [Reuse; 3], all: &Accesses<'_>) -> String {
    Axis::ALL
        .iter()
        .filter(|a| all.block_axes[a.index()])
        .map(|a| format!("{}: {}", a.name(), sharing[a.index()].name()))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clustered_device::abi::access::{Loop, Term};

    const BY: Sym<'static> = Sym::Block(Axis::Y);
    const TY: Sym<'static> = Sym::Thread(Axis::Y);
    const N: Sym<'static> = Sym::Param("n");
    const K: Sym<'static> = Sym::Loop("k");
    const T: Sym<'static> = Sym::Const("TILE", 16);

    /// A naive SGEMM of 16x16 CTAs: `a[(by*16+ty)*n + k]`.
    static A: [Access<'static>; 1] = [Access {
        pointer: "a",
        elem_bytes: 4,
        direction: Direction::Load,
        index: Index::Affine(&[
            Term {
                coefficient: 1,
                factors: &[BY, N, T],
            },
            Term {
                coefficient: 1,
                factors: &[TY, N],
            },
            Term {
                coefficient: 1,
                factors: &[K],
            },
        ]),
        loops: &["k"],
        line: 1,
        source: "*a.add(at(row, n, k))",
    }];
    static LOOPS: [Loop<'static>; 1] = [Loop {
        counter: "k",
        trips: Some(&[Term {
            coefficient: 1,
            factors: &[N],
        }]),
        step: Some(&[Term {
            coefficient: 1,
            factors: &[],
        }]),
    }];

    #[test]
    fn a_row_read_by_every_cta_of_a_grid_row_is_reused_across_ctas() {
        let all = Accesses {
            parameters: &["a", "n"],
            accesses: &A,
            loops: &LOOPS,
            block_axes: [true, true, false],
            uses_shared_memory: false,
            unseen: &[],
        };
        let scalars = [("n", 64)];
        let launch = StaticLaunch {
            grid: [4, 4, 1],
            block: [16, 16, 1],
            scalars: &scalars,
        };
        let e = estimate(&all, &launch, u64::MAX);
        assert_eq!(e.ctas_enumerated, 16);
        // Each warp (two rows of 16 threads, same k) reads 2 sectors... of
        // one word each: a broadcast within a row.
        let a = &e.accesses[0];
        assert_eq!(a.sectors_per_request, 2.0);
        // One CTA: 16 rows of 64 floats = 16 * 256 bytes.
        assert_eq!(a.footprint_bytes, 16 * 256);
        // 16 CTAs x 8 warps x 64 trips x 2 sectors.
        assert_eq!(e.load_sectors, 16 * 8 * 64 * 2);
        // Distinct sectors: 64 rows x 8 sectors; the rest is reused.
        assert_eq!(e.reused_sectors, e.load_sectors - 64 * 8);
        // Another CTA loaded each sector last only at a CTA's first touch
        // of it: 3 CTAs per grid row after the first, 16 rows x 8 sectors.
        assert_eq!(e.cross_cta_reused_sectors, 4 * 3 * 16 * 8);
        assert_eq!(a.class, Class::Algorithm);
        assert_eq!(form(&A[0]), "by*n*TILE + ty*n + k");
    }

    #[test]
    fn a_budget_enumerates_a_prefix_and_scales() {
        let all = Accesses {
            parameters: &["a", "n"],
            accesses: &A,
            loops: &LOOPS,
            block_axes: [true, true, false],
            uses_shared_memory: false,
            unseen: &[],
        };
        let scalars = [("n", 64)];
        let launch = StaticLaunch {
            grid: [4, 4, 1],
            block: [16, 16, 1],
            scalars: &scalars,
        };
        let full = estimate(&all, &launch, u64::MAX);
        let part = estimate(&all, &launch, 8 * 64 * 8);
        assert_eq!(part.ctas_enumerated, 8);
        assert_eq!(part.load_sectors, full.load_sectors);
    }
}
