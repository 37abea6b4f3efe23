//! How fast the cache model takes warp instructions: the CPU backend calls
//! `warp_access` tens of millions of times per run, so this is the figure
//! that bounds a simulation's speed.
//!
//! `cargo run --release -p clustered-sim --example cache_throughput [FILTER]`
//! (FILTER: run only the patterns whose name contains it).

use std::time::Instant;

use clustered_sim::{format_table, AccessKind, CacheModel, DeviceProfile, LaneAccess};

/// Instructions per pattern.
const INSTRUCTIONS: u64 = 10_000_000;

/// 32 lanes of `f32` loads, `stride` elements apart, from `base`.
fn warp(base: u64, stride: u64, lanes: &mut [LaneAccess; 32]) {
    for (lane, access) in lanes.iter_mut().enumerate() {
        *access = LaneAccess {
            address: base + lane as u64 * stride * 4,
            bytes: 4,
        };
    }
}

/// Runs `INSTRUCTIONS` instructions whose base address `base_of(i)` gives;
/// returns nanoseconds per instruction and the L1 hit rate.
fn run(stride: u64, base_of: impl Fn(u64) -> u64) -> (f64, f64) {
    let profile = DeviceProfile::h100_sxm().scaled(8).expect("8 <= 132 SMs");
    let mut model = CacheModel::new(&profile);
    let mut lanes = [LaneAccess {
        address: 0,
        bytes: 4,
    }; 32];
    let start = Instant::now();
    for instruction in 0..INSTRUCTIONS {
        warp(base_of(instruction), stride, &mut lanes);
        let sm = (instruction % 8) as u32;
        let task = (instruction / 256) as u32;
        model.warp_access(sm, task, AccessKind::Load, &lanes);
    }
    let nanoseconds = start.elapsed().as_nanos() as f64 / INSTRUCTIONS as f64;
    (nanoseconds, model.stats().l1_hit_rate())
}

/// A stream of warp loads: 32 lanes `stride` elements apart, the
/// instruction `i` starting at `base_of(i)`.
struct Pattern {
    name: &'static str,
    stride: u64,
    base_of: fn(u64) -> u64,
}

const PATTERNS: [Pattern; 4] = [
    Pattern {
        name: "coalesced stream",
        stride: 1,
        base_of: |i| i * 128,
    },
    Pattern {
        name: "coalesced, 1 MiB reused",
        stride: 1,
        base_of: |i| (i % 8192) * 128,
    },
    Pattern {
        name: "column walk (stride 4 KiB)",
        stride: 1024,
        base_of: |i| (i % 4096) * 4,
    },
    Pattern {
        name: "coalesced, random lines",
        stride: 1,
        base_of: |i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40 << 7,
    },
];

fn main() {
    let filter = std::env::args().nth(1).unwrap_or_default();
    let mut rows = Vec::new();
    for pattern in PATTERNS
        .iter()
        .filter(|pattern| pattern.name.contains(&filter))
    {
        let (nanoseconds, hit_rate) = run(pattern.stride, pattern.base_of);
        rows.push(vec![
            pattern.name.to_string(),
            format!("{nanoseconds:.1}"),
            format!("{:.1}%", 100.0 * hit_rate),
        ]);
    }
    print!(
        "{}",
        format_table(
            &["pattern (10M warp loads, 8 SMs)", "ns/instr", "L1 hit"],
            &rows
        )
    );
}
