//! The cache model's semantics, one behaviour per test, through the public
//! API only. Tiny geometries make every eviction predictable.

use clustered_sim::{
    AccessKind, CacheGeometry, CacheModel, CacheStats, DeviceProfile, LaneAccess, SetIndexing,
};

const LINE: u64 = 128;
const SECTOR: u64 = 32;

/// A profile with `sms` SMs and the given caches (other figures: H100's).
fn profile(sms: u32, l1: CacheGeometry, l2: CacheGeometry) -> DeviceProfile {
    DeviceProfile {
        name: "tiny".to_string(),
        sm_count: sms,
        l1,
        l2,
        ..DeviceProfile::h100_sxm()
    }
}

/// Two SMs, L1s of 4 sets x 4 ways (2 KiB), L2 of 64 sets x 4 ways (32 KiB).
fn small_model() -> CacheModel {
    CacheModel::new(&profile(
        2,
        CacheGeometry::with_sets(4, 4),
        CacheGeometry::with_sets(64, 4),
    ))
}

/// One lane per address, `bytes` each.
fn lanes(addresses: impl IntoIterator<Item = u64>, bytes: u32) -> Vec<LaneAccess> {
    addresses
        .into_iter()
        .map(|address| LaneAccess { address, bytes })
        .collect()
}

/// 32 lanes reading `f32`s `stride` elements apart from `base`.
fn warp_f32(base: u64, stride: u64) -> Vec<LaneAccess> {
    lanes((0..32).map(|lane| base + lane * stride * 4), 4)
}

/// A warp reading the whole line at `address` (4 sectors).
fn whole_line(address: u64) -> Vec<LaneAccess> {
    warp_f32(address, 1)
}

/// A single lane reading 4 bytes at `address` (one sector).
fn one_sector(address: u64) -> Vec<LaneAccess> {
    lanes([address], 4)
}

/// The counters that one access changes.
fn delta(
    model: &mut CacheModel,
    sm: u32,
    task: u32,
    kind: AccessKind,
    lanes: &[LaneAccess],
) -> CacheStats {
    let before = model.stats();
    model.warp_access(sm, task, kind, lanes);
    model.stats().since(&before)
}

/// Every sector sent to L2 is a hit, a miss or a write allocation.
fn assert_l2_accounting(stats: &CacheStats) {
    assert_eq!(
        stats.l1_to_l2_sectors,
        stats.l2_sector_hits + stats.l2_sector_misses + stats.l2_write_allocations,
        "{stats:?}"
    );
}

#[test]
fn consecutive_f32s_coalesce_into_the_four_sectors_of_one_line() {
    // An L1 of a single one-way set holds one line: all four sectors present
    // afterwards proves they belong to one line.
    let mut model = CacheModel::new(&profile(
        1,
        CacheGeometry::with_sets(1, 1),
        CacheGeometry::with_sets(64, 4),
    ));
    let step = delta(&mut model, 0, 0, AccessKind::Load, &warp_f32(4096, 1));
    assert_eq!(step.instructions, 1);
    assert_eq!(step.l1_sector_lookups, 4);
    assert_eq!(step.l1_to_l2_sectors, 4);
    assert_eq!(step.l2_sector_misses, 4);
    for sector in 0..4 {
        assert!(model.in_l1(0, 4096 + sector * SECTOR));
    }
    assert!(!model.in_l1(0, 4096 + LINE));
}

#[test]
fn f32s_a_line_apart_touch_32_lines() {
    let mut model = CacheModel::new(&profile(
        1,
        CacheGeometry::with_sets(1, 1),
        CacheGeometry::with_sets(64, 4),
    ));
    let step = delta(&mut model, 0, 0, AccessKind::Load, &warp_f32(0, 32));
    assert_eq!(step.l1_sector_lookups, 32);
    assert_eq!(step.l2_sector_misses, 32);
    // The one-line L1 kept only one of the 32 lines.
    let present = (0..32).filter(|&line| model.in_l1(0, line * LINE)).count();
    assert_eq!(present, 1);
}

#[test]
fn lanes_in_any_order_and_repeats_count_each_sector_once() {
    let mut model = small_model();
    let mut shuffled = warp_f32(0, 1);
    shuffled.reverse();
    shuffled.swap(3, 17);
    assert_eq!(
        delta(&mut model, 0, 0, AccessKind::Load, &shuffled).l1_sector_lookups,
        4
    );
    let same = lanes([LINE * 8; 32], 4);
    assert_eq!(
        delta(&mut model, 0, 0, AccessKind::Load, &same).l1_sector_lookups,
        1
    );
}

#[test]
fn an_access_straddling_sectors_touches_each() {
    let mut model = small_model();
    // 16 bytes from byte 24 cover sectors 0 and 1.
    let step = delta(&mut model, 0, 0, AccessKind::Load, &lanes([24], 16));
    assert_eq!(step.l1_sector_lookups, 2);
    // 8 bytes from byte 124 straddle two lines.
    let step = delta(
        &mut model,
        0,
        0,
        AccessKind::Load,
        &lanes([LINE * 4 + 124], 8),
    );
    assert_eq!(step.l1_sector_lookups, 2);
    assert!(model.in_l1(0, LINE * 4 + 96) && model.in_l1(0, LINE * 5));
}

#[test]
fn empty_lanes_count_only_the_instruction() {
    let mut model = small_model();
    let step = delta(&mut model, 0, 0, AccessKind::Load, &lanes([64], 0));
    assert_eq!(
        step,
        CacheStats {
            instructions: 1,
            load_instructions: 1,
            ..CacheStats::default()
        }
    );
}

#[test]
fn a_strided_load_looks_up_a_line_per_lane_a_coalesced_one_line() {
    let mut model = small_model();
    let coalesced = delta(&mut model, 0, 0, AccessKind::Load, &whole_line(0));
    assert_eq!(
        (
            coalesced.load_instructions,
            coalesced.l1_sector_lookups,
            coalesced.l1_line_lookups
        ),
        (1, 4, 1)
    );
    // 32 lanes a line apart: 32 sectors in 32 lines, hit or miss alike.
    let strided = delta(&mut model, 0, 0, AccessKind::Load, &warp_f32(0, 32));
    assert_eq!(
        (strided.l1_sector_lookups, strided.l1_line_lookups),
        (32, 32)
    );
    let again = delta(&mut model, 1, 0, AccessKind::Load, &warp_f32(4, 32));
    assert_eq!(again.l1_line_lookups, 32);
    // A bypassing load is a load, but looks nothing up in L1.
    let bypass = delta(&mut model, 0, 0, AccessKind::LoadBypassL1, &warp_f32(0, 32));
    assert_eq!((bypass.load_instructions, bypass.l1_line_lookups), (1, 0));
}

#[test]
fn stores_that_fill_a_sector_in_part_are_counted_per_sector() {
    let mut model = small_model();
    // A coalesced store fills its four sectors: none partial.
    let whole = delta(&mut model, 0, 0, AccessKind::Store, &whole_line(0));
    assert_eq!(
        (whole.l2_partial_store_sectors, whole.load_instructions),
        (0, 0)
    );
    // A transpose's store: 32 lanes, 32 lines, 4 of each sector's 32 bytes.
    let scattered = delta(&mut model, 0, 0, AccessKind::Store, &warp_f32(0, 32));
    assert_eq!(scattered.l2_partial_store_sectors, 32);
    // Eight lanes filling one sector, two more in the next: one partial.
    let mixed = delta(
        &mut model,
        0,
        0,
        AccessKind::Store,
        &lanes((0..10).map(|i| 4 * LINE + i * 4), 4),
    );
    assert_eq!(mixed.l2_partial_store_sectors, 1);
    // One lane's 8 bytes across a sector boundary: both sectors partial.
    let straddle = delta(&mut model, 0, 0, AccessKind::Store, &lanes([SECTOR - 4], 8));
    assert_eq!(straddle.l2_partial_store_sectors, 2);
    // Loads and atomics are not stores.
    let load = delta(&mut model, 0, 0, AccessKind::Load, &warp_f32(0, 32));
    let atomic = delta(&mut model, 0, 0, AccessKind::Atomic, &warp_f32(0, 32));
    assert_eq!(
        (
            load.l2_partial_store_sectors,
            atomic.l2_partial_store_sectors
        ),
        (0, 0)
    );
}

#[test]
fn l1_hits_after_a_miss() {
    let mut model = small_model();
    let first = delta(&mut model, 0, 0, AccessKind::Load, &whole_line(0));
    assert_eq!((first.l1_sector_hits, first.l1_to_l2_sectors), (0, 4));
    let second = delta(&mut model, 0, 0, AccessKind::Load, &whole_line(0));
    assert_eq!((second.l1_sector_hits, second.l1_to_l2_sectors), (4, 0));
    assert_eq!(model.stats().l1_hit_rate(), 0.5);
    // A sector miss in a present line: the line's other sectors still hit.
    let partial = delta(
        &mut model,
        0,
        0,
        AccessKind::Load,
        &lanes([LINE, LINE + 32], 4),
    );
    assert_eq!(partial.l1_sector_hits, 0);
    let more = delta(
        &mut model,
        0,
        0,
        AccessKind::Load,
        &lanes([LINE, LINE + 64], 4),
    );
    assert_eq!((more.l1_sector_hits, more.l1_to_l2_sectors), (1, 1));
}

#[test]
fn lru_evicts_the_least_recently_used_of_ways_plus_one_lines() {
    // One set of 4 ways: lines 0..4 fill it, 0 is used again, 4 evicts 1.
    let mut model = CacheModel::new(&profile(
        1,
        CacheGeometry::with_sets(1, 4),
        CacheGeometry::with_sets(64, 4),
    ));
    let load = |model: &mut CacheModel, line: u64| {
        delta(model, 0, 0, AccessKind::Load, &one_sector(line * LINE)).l1_sector_hits
    };
    for line in 0..4 {
        assert_eq!(load(&mut model, line), 0);
    }
    assert_eq!(load(&mut model, 0), 1);
    assert_eq!(load(&mut model, 4), 0);
    assert!(!model.in_l1(0, LINE));
    // 0, 2, 3 and 4 remain (checking them evicts nothing) ...
    for line in [0, 2, 3, 4] {
        assert_eq!(load(&mut model, line), 1, "line {line}");
    }
    // ... and 1 misses, evicting 0, now the least recently used.
    assert_eq!(load(&mut model, 1), 0);
    assert!(!model.in_l1(0, 0));
    assert!(model.in_l1(0, 2 * LINE));
}

#[test]
fn bypass_loads_do_not_fill_l1() {
    let mut model = small_model();
    let step = delta(&mut model, 0, 0, AccessKind::LoadBypassL1, &whole_line(0));
    assert_eq!(step.l1_sector_lookups, 0);
    assert_eq!(step.l1_to_l2_sectors, 4);
    assert_eq!(step.load_sectors, 4);
    assert!(!model.in_l1(0, 0));
    assert!(model.in_l2(0));
    let load = delta(&mut model, 0, 0, AccessKind::Load, &whole_line(0));
    assert_eq!((load.l1_sector_hits, load.l2_sector_hits), (0, 4));
}

#[test]
fn stores_allocate_in_l2_without_a_dram_read_but_not_in_l1() {
    let mut model = small_model();
    let store = delta(&mut model, 0, 0, AccessKind::Store, &whole_line(0));
    assert_eq!(store.l1_sector_lookups, 0);
    assert_eq!(store.l1_to_l2_sectors, 4);
    assert_eq!(store.l2_write_allocations, 4);
    assert_eq!(store.l2_sector_misses, 0);
    assert!(!model.in_l1(0, 0));
    assert!(model.in_l2(0));
    let load = delta(&mut model, 0, 0, AccessKind::Load, &whole_line(0));
    assert_eq!(
        (
            load.l1_sector_hits,
            load.l2_sector_hits,
            load.l2_sector_misses
        ),
        (0, 4, 0)
    );
}

#[test]
fn a_store_to_a_sector_in_l1_keeps_it_there() {
    let mut model = small_model();
    model.warp_access(0, 0, AccessKind::Load, &whole_line(0));
    let store = delta(&mut model, 0, 0, AccessKind::Store, &one_sector(0));
    // Write-through: the store reaches L2, where the sector is.
    assert_eq!((store.l1_to_l2_sectors, store.l2_sector_hits), (1, 1));
    assert!(model.in_l1(0, 0));
    assert_eq!(
        delta(&mut model, 0, 0, AccessKind::Load, &whole_line(0)).l1_sector_hits,
        4
    );
}

#[test]
fn atomics_go_to_l2_and_invalidate_the_l1_sector() {
    let mut model = small_model();
    model.warp_access(0, 0, AccessKind::Load, &whole_line(0));
    let atomic = delta(&mut model, 0, 0, AccessKind::Atomic, &one_sector(SECTOR));
    assert_eq!((atomic.l1_to_l2_sectors, atomic.l2_sector_hits), (1, 1));
    assert!(!model.in_l1(0, SECTOR));
    assert!(model.in_l1(0, 0) && model.in_l1(0, 2 * SECTOR));
    let load = delta(&mut model, 0, 0, AccessKind::Load, &whole_line(0));
    assert_eq!((load.l1_sector_hits, load.l1_to_l2_sectors), (3, 1));
    // An atomic on a sector absent from L2 reads it from DRAM first.
    let cold = delta(&mut model, 1, 0, AccessKind::Atomic, &one_sector(LINE * 40));
    assert_eq!(cold.l2_sector_misses, 1);
    // Both atomics left their sector dirty.
    model.flush();
    assert_eq!(model.stats().dram_write_sectors, 2);
}

#[test]
fn prefetches_fill_without_counting_lookups() {
    let mut model = small_model();
    let to_l1 = delta(&mut model, 0, 0, AccessKind::PrefetchL1, &whole_line(0));
    assert_eq!(
        (
            to_l1.l1_sector_lookups,
            to_l1.l1_to_l2_sectors,
            to_l1.load_sectors
        ),
        (0, 4, 0)
    );
    assert!(model.in_l1(0, 0) && model.in_l2(0));
    // Prefetching what L1 has sends nothing to L2.
    let again = delta(&mut model, 0, 0, AccessKind::PrefetchL1, &whole_line(0));
    assert_eq!(again.l1_to_l2_sectors, 0);
    assert_eq!(
        delta(&mut model, 0, 0, AccessKind::Load, &whole_line(0)).l1_sector_hits,
        4
    );

    let to_l2 = delta(&mut model, 0, 0, AccessKind::PrefetchL2, &whole_line(LINE));
    assert_eq!((to_l2.l1_to_l2_sectors, to_l2.l2_sector_misses), (4, 4));
    assert!(!model.in_l1(0, LINE) && model.in_l2(LINE));
    let load = delta(&mut model, 0, 0, AccessKind::Load, &whole_line(LINE));
    assert_eq!((load.l1_sector_hits, load.l2_sector_hits), (0, 4));
    // Prefetches are counted apart, loads not: the time model leaves the
    // prefetches out of what the SMs wait for.
    assert_eq!(
        (to_l1.l2_prefetch_sectors, to_l2.l2_prefetch_sectors),
        (4, 4)
    );
    assert_eq!(load.l2_prefetch_sectors, 0);
    let warm = delta(&mut model, 1, 0, AccessKind::PrefetchL2, &whole_line(LINE));
    assert_eq!(
        (warm.l2_prefetch_sectors, warm.l2_prefetch_sector_hits),
        (4, 4)
    );
    assert_eq!(to_l2.l2_prefetch_sector_hits, 0);
}

/// Reads `lines` lines from 0 through L2 only, twice; returns the second
/// pass's L2 hits.
fn second_pass_l2_hits(model: &mut CacheModel, lines: u64) -> u64 {
    for line in 0..lines {
        model.warp_access(0, 0, AccessKind::LoadBypassL1, &whole_line(line * LINE));
    }
    let before = model.stats();
    for line in 0..lines {
        model.warp_access(0, 0, AccessKind::LoadBypassL1, &whole_line(line * LINE));
    }
    model.stats().since(&before).l2_sector_hits
}

#[test]
fn l2_hits_when_the_working_set_fits_and_misses_when_it_does_not() {
    // L2 of small_model: 64 sets x 4 ways = 256 lines.
    let fits = second_pass_l2_hits(&mut small_model(), 256);
    assert_eq!(fits, 256 * 4);
    let half = second_pass_l2_hits(&mut small_model(), 128);
    assert_eq!(half, 128 * 4);
    // Twice the capacity, read cyclically: LRU keeps nothing useful.
    let too_big = second_pass_l2_hits(&mut small_model(), 512);
    assert_eq!(too_big, 0);
    let mut model = small_model();
    second_pass_l2_hits(&mut model, 512);
    assert_eq!(model.stats().l2_hit_rate(), 0.0);
}

#[test]
fn each_sm_has_its_own_l1_and_all_share_the_l2() {
    let mut model = small_model();
    model.warp_access(0, 0, AccessKind::Load, &whole_line(0));
    let other_sm = delta(&mut model, 1, 1, AccessKind::Load, &whole_line(0));
    assert_eq!(other_sm.l1_sector_hits, 0);
    assert_eq!((other_sm.l2_sector_hits, other_sm.l2_sector_misses), (4, 0));
    assert!(model.in_l1(0, 0) && model.in_l1(1, 0));
    let same_sm = delta(&mut model, 0, 2, AccessKind::Load, &whole_line(0));
    assert_eq!(same_sm.l1_sector_hits, 4);
}

#[test]
#[should_panic(expected = "SM 2 out of range")]
fn an_sm_beyond_the_profile_panics() {
    small_model().warp_access(2, 0, AccessKind::Load, &whole_line(0));
}

#[test]
fn reuse_by_another_cta_is_cross_cta() {
    let mut model = small_model();
    // Different SMs: the reuse measure does not depend on where CTAs ran.
    model.warp_access(0, 0, AccessKind::Load, &whole_line(0));
    model.warp_access(1, 1, AccessKind::Load, &whole_line(0));
    let stats = model.stats();
    assert_eq!((stats.load_sectors, stats.reused_sectors), (8, 4));
    assert_eq!(stats.reuse_share(), 0.5);
    assert_eq!(stats.cross_cta_reuse_share(), 1.0);
    // The same CTA reading again: reuse, but not across CTAs.
    model.warp_access(1, 1, AccessKind::LoadBypassL1, &whole_line(0));
    let stats = model.stats();
    assert_eq!(
        (stats.reused_sectors, stats.cross_cta_reused_sectors),
        (8, 4)
    );
    assert_eq!(stats.cross_cta_reuse_share(), 0.5);
    // Stores, atomics and prefetches are not loads.
    model.warp_access(0, 5, AccessKind::Store, &whole_line(0));
    model.warp_access(0, 5, AccessKind::PrefetchL1, &whole_line(0));
    assert_eq!(model.stats().load_sectors, 12);
}

#[test]
fn dirty_sectors_are_written_back_once() {
    // An L2 of one set of one way: a second line evicts the first.
    let mut model = CacheModel::new(&profile(
        1,
        CacheGeometry::with_sets(1, 1),
        CacheGeometry::with_sets(1, 1),
    ));
    model.warp_access(0, 0, AccessKind::Store, &lanes([0, 64], 4));
    assert_eq!(model.stats().dram_write_sectors, 0);
    model.warp_access(0, 0, AccessKind::Load, &one_sector(LINE));
    assert_eq!(model.stats().dram_write_sectors, 2);
    model.warp_access(0, 0, AccessKind::Store, &whole_line(LINE));
    model.flush();
    assert_eq!(model.stats().dram_write_sectors, 2 + 4);
    model.flush();
    assert_eq!(model.stats().dram_write_sectors, 2 + 4);
    // Flushed sectors stay cached, clean: evicting them writes nothing.
    model.warp_access(0, 0, AccessKind::Load, &one_sector(0));
    assert_eq!(model.stats().dram_write_sectors, 2 + 4);
    assert_eq!(
        model.stats().dram_sectors(),
        model.stats().l2_sector_misses + 6
    );
}

/// Walks down a column of `f32`s whose rows are `pitch` bytes apart, one
/// sector per row, `rows` rows, twice on SM 0; returns the second pass's L1
/// hit rate.
fn column_walk_hit_rate(indexing: SetIndexing, pitch: u64, rows: u64) -> f64 {
    // L1: 64 sets x 4 ways = 256 lines. L2 large enough to stay out of it.
    let mut model = CacheModel::try_new(
        &profile(
            1,
            CacheGeometry::with_sets(64, 4),
            CacheGeometry::with_sets(4096, 16),
        ),
        indexing,
    )
    .unwrap();
    let walk = |model: &mut CacheModel| {
        for row in 0..rows {
            model.warp_access(0, 0, AccessKind::Load, &one_sector(row * pitch));
        }
    };
    walk(&mut model);
    let before = model.stats();
    walk(&mut model);
    model.stats().since(&before).l1_hit_rate()
}

#[test]
fn hashed_set_index_stops_power_of_two_strides_from_thrashing() {
    // 64 rows 8 KiB apart: 64 lines, a quarter of the L1. A modulo puts all
    // of them in one 4-way set.
    assert_eq!(column_walk_hit_rate(SetIndexing::Modulo, 8192, 64), 0.0);
    let hashed = column_walk_hit_rate(SetIndexing::Hashed, 8192, 64);
    assert!(hashed >= 0.9, "hashed hit rate {hashed}");
    // Contiguous data that exactly fills the L1 fits with either indexing.
    for indexing in [SetIndexing::Modulo, SetIndexing::Hashed] {
        assert_eq!(
            column_walk_hit_rate(indexing, LINE, 256),
            1.0,
            "{indexing:?}"
        );
    }
}

#[test]
fn counters_stay_consistent_on_a_mixed_workload_on_a_scaled_h100() {
    let profile = DeviceProfile::h100_sxm().scaled(4).unwrap();
    let mut model = CacheModel::new(&profile);
    assert_eq!(model.sm_count(), 4);
    let kinds = [
        AccessKind::Load,
        AccessKind::LoadBypassL1,
        AccessKind::Store,
        AccessKind::Atomic,
        AccessKind::PrefetchL1,
        AccessKind::PrefetchL2,
    ];
    // A deterministic pseudo-random mix over 16 MiB (more than the scaled L2).
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for instruction in 0..20_000_u32 {
        let base = next() % (16 << 20);
        let stride = [1, 2, 32, 1024][next() as usize % 4];
        let kind = kinds[next() as usize % kinds.len()];
        let sm = instruction % 4;
        model.warp_access(sm, instruction / 64, kind, &warp_f32(base & !3, stride));
    }
    model.flush();
    let stats = model.stats();
    assert_eq!(stats.instructions, 20_000);
    assert_l2_accounting(&stats);
    assert!(stats.l1_sector_hits <= stats.l1_sector_lookups);
    assert!(stats.cross_cta_reused_sectors <= stats.reused_sectors);
    assert!(stats.reused_sectors <= stats.load_sectors);
    assert!(stats.l2_sector_hits > 0 && stats.l2_sector_misses > 0);
    assert!(stats.dram_write_sectors > 0);
}

/// The model is the CPU backend's observer itself: a run that reads 32
/// consecutive floats per warp reaches it as one line of four sectors per
/// warp, with no adapter in between.
#[test]
fn the_model_observes_a_cpu_backend_run_directly() {
    use clustered_device::cpu::{run, CpuLaunch, Machine};
    use clustered_device::memory::load;
    use clustered_device::thread::index_1d;
    #[repr(align(128))]
    struct Lines([f32; 256]);
    let data = Box::new(Lines([1.0; 256]));
    let base = data.0.as_ptr() as usize;
    let kernel = || {
        let i = index_1d() as usize;
        // SAFETY: 256 threads, 256 floats.
        let _ = unsafe { load((base as *const f32).add(i)) };
    };
    let launch = CpuLaunch {
        grid: [2, 1, 1],
        block: [128, 1, 1],
        dynamic_shared_bytes: 0,
        resident_blocks: 1,
    };
    let mut model = small_model();
    run(&Machine::new(2), &launch, &mut model, &kernel).unwrap();
    let stats = model.stats();
    // 8 warps, each the 4 sectors of one line, all cold.
    assert_eq!(
        (stats.instructions, stats.load_sectors),
        (8, 32),
        "{stats:?}"
    );
    assert_eq!(stats.l1_to_l2_sectors, 32, "{stats:?}");
}
