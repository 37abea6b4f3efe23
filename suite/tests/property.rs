//! A seeded property test of the schedules on the CPU backend: random cases
//! (grids of 1, 2 and 3 dimensions that blocks do not divide, from one CTA to
//! a few hundred; blocks of 32 to 256 threads, not only multiples of 32;
//! launch options; machines with every dispatcher, starved SMs, sparse SM
//! ids and shuffled lane orders), each running every schedule of one kernel
//! and checking that it computes what the baseline computes, and runs every
//! CTA exactly once.
//!
//! The kernels (`kernels/src/property.rs`, and `coverage`) have tail guards
//! and early exits before shared-memory work and barriers; their results
//! depend on the block's coordinates and count each CTA's runs.
//!
//! Each case comes from its own seed: by default the seeds
//! `0..DEFAULT_CASES` and [`REGRESSION_SEEDS`]. `PROPERTY_SEED=s` runs the
//! seeds `s..s + PROPERTY_CASES` instead (`PROPERTY_CASES` defaults to 1
//! then), to replay a failure or explore further; `PROPERTY_CASES=n` alone
//! runs `0..n`. Every failure prints its seed and the whole case.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

use clustered_device::mapping::Indexing;
use clustered_suite::host::cpu::{launch_entry, CpuLaunch, Dispatch, Machine, NoObserver};
use clustered_suite::host::{
    ActivePolicy, Binding, ClusterOptions, Entry, KernelContract, KernelFn, RasterGroup,
};
use kernels::coverage::coverage;
use kernels::property::{segment_scan, tile_exchange, MAX_THREADS};

/// Cases of a default run: about 60 s in the debug profile on 2 shared cores.
const DEFAULT_CASES: u64 = 300;

/// Seeds that once found a bug, run in every default run (none yet).
const REGRESSION_SEEDS: &[u64] = &[];

/// A step of splitmix64: all the randomness the test needs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `low..=high`.
    fn range(&mut self, low: u32, high: u32) -> u32 {
        assert!(low <= high, "{low}..={high}");
        low + (self.next() % (u64::from(high - low) + 1)) as u32
    }

    /// True with probability `1 / n`.
    fn one_in(&mut self, n: u32) -> bool {
        self.range(1, n) == 1
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.range(0, items.len() as u32 - 1) as usize]
    }
}

/// The kernel a case runs, with its data's shape.
#[derive(Clone, Debug)]
enum Work {
    /// `coverage`: each CTA counts its runs and records its `%smid`.
    Coverage,
    /// `tile_exchange` over `depth` (the grid's z) images of `width` x
    /// `height`.
    Tile { width: u32, height: u32 },
    /// `segment_scan` over `n` elements, with threads `cut..` of CTA
    /// `ragged` leaving early.
    Scan { n: u32, ragged: u32, cut: u32 },
}

/// One generated case: everything a run depends on.
#[derive(Clone, Debug)]
struct Case {
    seed: u64,
    work: Work,
    /// The ORIGINAL launch (grid, block, MAX resident blocks per SM).
    launch: CpuLaunch,
    machine: Machine,
    options: ClusterOptions,
    /// The seed of the inputs.
    data: u64,
}

/// Block sizes, weighted towards the common ones; not all multiples of 32.
const THREADS: &[u32] = &[32, 48, 64, 96, 100, 128, 160, 192, 250, 256];

impl Case {
    fn generate(seed: u64) -> Case {
        let mut rng = Rng(seed);
        let work = rng.range(0, 2);
        // CTAs: one, a few, dozens, or a few hundred (with smaller blocks,
        // to keep the CTA threads of a case bounded).
        let (ctas, max_threads) = match rng.range(0, 19) {
            0..=2 => (1, MAX_THREADS),
            3..=11 => (rng.range(2, 12), MAX_THREADS),
            12..=17 => (rng.range(13, 60), 128),
            _ => (rng.range(100, 300), 64),
        };
        let grid = match rng.range(1, 3) {
            1 => [ctas, 1, 1],
            2 => {
                let x = rng.range(1, ctas);
                [x, ctas.div_ceil(x), 1]
            }
            _ => {
                let x = rng.range(1, ctas.min(8));
                let y = rng.range(1, ctas.div_ceil(x).min(8));
                [x, y, ctas.div_ceil(x * y)]
            }
        };
        let total = grid.iter().product::<u32>();
        let threads: Vec<u32> = THREADS
            .iter()
            .copied()
            .filter(|&t| t <= max_threads)
            .collect();
        let (block, work) = match work {
            0 => ([rng.pick(&threads), 1, 1], Work::Coverage),
            1 => {
                // Any 2D shape of 32..=max_threads threads, narrow or wide.
                let x = rng.pick(&[1, 2, 3, 4, 5, 8, 12, 16, 32, 48, 64]);
                let y = rng.range(32u32.div_ceil(x), max_threads / x);
                // Mostly ragged on both axes; sometimes exact.
                let mut extent = |blocks: u32, size: u32| {
                    if rng.one_in(5) {
                        blocks * size
                    } else {
                        rng.range((blocks - 1) * size + 1, blocks * size)
                    }
                };
                let (width, height) = (extent(grid[0], x), extent(grid[1], y));
                ([x, y, 1], Work::Tile { width, height })
            }
            _ => {
                let width = rng.pick(&threads);
                // The tail in the last CTA, sometimes the last two (the last
                // CTA then returns whole, before any barrier).
                let low = total.saturating_sub(2) * width + 1;
                let n = if rng.one_in(5) {
                    total * width
                } else {
                    rng.range(low, total * width)
                };
                let ragged = if rng.one_in(4) {
                    u32::MAX
                } else {
                    rng.range(0, total - 1)
                };
                let cut = rng.range(0, width);
                ([width, 1, 1], Work::Scan { n, ragged, cut })
            }
        };
        let resident = rng.range(1, 4);
        // segment_scan's scan buffer: a word per thread.
        let dynamic_shared_bytes = match work {
            Work::Scan { .. } => 4 * block[0],
            _ => 0,
        };
        let launch = CpuLaunch {
            grid,
            block,
            dynamic_shared_bytes,
            resident_blocks: resident,
        };
        let machine = random_machine(&mut rng);
        let options = random_options(&mut rng, total, resident, machine.sm_count());
        Case {
            seed,
            work,
            launch,
            machine,
            options,
            data: rng.next(),
        }
    }

    fn ctas(&self) -> u32 {
        self.launch.grid.iter().product()
    }

    /// The options a schedule of `contract` runs with: a grid-stride loop
    /// cannot be throttled and only a raster has a band (typed errors, tested
    /// in cpu_backend.rs), so those run with the kernel's ACTIVE and band.
    fn options_for(&self, contract: Option<&KernelContract>) -> ClusterOptions {
        let binding = contract.and_then(|c| Binding::from_u32(c.binding));
        let raster = matches!(
            contract.and_then(KernelContract::indexing),
            Some(
                Indexing::Tile { width: 1, .. }
                    | Indexing::Sawtooth { width: 1, .. }
                    | Indexing::ColumnTile { height: 1, .. }
            )
        );
        let mut options = self.options.clone();
        if !raster {
            options.raster_group = None;
        }
        if binding == Some(Binding::Stride)
            && matches!(
                options.active,
                ActivePolicy::Fixed(_) | ActivePolicy::Fraction(_)
            )
        {
            options.active = ActivePolicy::FromKernel;
        }
        options
    }
}

fn random_machine(rng: &mut Rng) -> Machine {
    // Now and then more SMs than most grids have CTAs.
    let sms = if rng.one_in(20) {
        rng.pick(&[16, 33])
    } else {
        rng.pick(&[1, 2, 2, 3, 4, 4, 5, 8])
    };
    let dispatch = match rng.range(0, 2) {
        0 => Dispatch::RoundRobin,
        1 => Dispatch::ObservedHopper,
        _ => Dispatch::Random(rng.next()),
    };
    let mut machine = Machine::new(sms).with_dispatch(dispatch);
    if rng.one_in(3) {
        // Distinct ids spread over 8 times the SM count, shuffled.
        let mut ids: Vec<u32> = (0..sms * 8).collect();
        for i in (1..ids.len()).rev() {
            ids.swap(i, rng.range(0, i as u32) as usize);
        }
        ids.truncate(sms as usize);
        machine = machine.with_sm_ids(ids);
    }
    if sms > 1 && rng.one_in(3) {
        // Some SMs (never all) busy for a while or for ever.
        for _ in 0..rng.range(1, sms - 1) {
            let sm = rng.range(0, sms - 1);
            let tick = if rng.one_in(2) {
                u64::MAX
            } else {
                u64::from(rng.range(1, 400))
            };
            machine = machine.starve(sm, tick);
        }
        if machine.available_from.iter().all(|&t| t == u64::MAX) {
            machine = machine.starve(0, 0);
        }
    }
    if rng.one_in(2) {
        machine = machine.interleave(rng.next());
    }
    machine.warp_burst = rng.pick(&[1, 2, 8, 8]);
    machine
}

fn random_options(rng: &mut Rng, ctas: u32, resident: u32, sms: u32) -> ClusterOptions {
    let mut options = ClusterOptions::default();
    if rng.one_in(4) {
        options.clusters = Some(rng.range(1, ctas.max(sms)));
    }
    if rng.one_in(4) {
        options.agents_per_sm = Some(rng.range(1, resident));
    }
    if rng.one_in(4) {
        let resident = options.agents_per_sm.unwrap_or(resident) * sms;
        options.total_agents = Some(rng.range(1, resident.max(ctas)));
    }
    if rng.one_in(3) {
        // Any band for the raster schedules, dividing the grid or not.
        options.raster_group = Some(if rng.one_in(3) {
            RasterGroup::FromOccupancy
        } else {
            RasterGroup::Ctas(rng.range(1, 9))
        });
    }
    options.active = match rng.range(0, 5) {
        0..=2 => ActivePolicy::FromKernel,
        3 => ActivePolicy::All,
        4 => ActivePolicy::Fixed(rng.range(1, resident)),
        _ => ActivePolicy::Fraction(0.5),
    };
    options
}

/// `count` words from `seed`.
fn words(seed: u64, count: u32) -> Vec<u32> {
    let mut rng = Rng(seed);
    (0..count).map(|_| rng.next() as u32).collect()
}

/// What `tile_exchange` computes, written plainly.
fn tile_reference(case: &Case, width: u32, height: u32, input: &[u32]) -> Vec<u32> {
    let [gx, gy, gz] = case.launch.grid;
    let [dx, dy, _] = case.launch.block;
    let mut output = vec![0u32; input.len()];
    for (bz, by, bx) in
        (0..gz).flat_map(|z| (0..gy).flat_map(move |y| (0..gx).map(move |x| (z, y, x))))
    {
        let live_x = dx.min(width - bx * dx);
        let live_y = dy.min(height - by * dy);
        let at = |tx: u32, ty: u32| ((bz * height + by * dy + ty) * width + bx * dx + tx) as usize;
        let mixed = |tx: u32, ty: u32| {
            input[at(tx, ty)].rotate_left(5) ^ input[at(live_x - 1 - tx, (ty + 1) % live_y)]
        };
        let coordinates = bx.wrapping_mul(0x9e37_79b9) ^ (by << 12) ^ (bz << 24);
        for ty in 0..live_y {
            for tx in 0..live_x {
                let other = mixed((tx + 1) % live_x, (ty + live_y - 1) % live_y);
                output[at(tx, ty)] = mixed(tx, ty).wrapping_add(other) ^ coordinates;
            }
        }
    }
    output
}

/// What `segment_scan` computes, written plainly: (output, sums), with
/// `fill` in the outputs of threads that leave early.
fn scan_reference(
    case: &Case,
    n: u32,
    ragged: u32,
    cut: u32,
    input: &[u32],
    fill: u32,
) -> (Vec<u32>, Vec<u32>) {
    let width = case.launch.block[0];
    let mut output = vec![fill; n as usize];
    let mut sums = vec![0u32; case.ctas() as usize];
    for cta in 0..case.ctas() {
        let start = cta * width;
        let limit = if cta == ragged { cut } else { width };
        let live = limit.min(n.saturating_sub(start));
        let mut sum = 0u32;
        for t in 0..live {
            let i = (start + t) as usize;
            sum = sum.wrapping_add(input[i]);
            output[i] = sum ^ cta.wrapping_mul(0x85eb_ca6b);
        }
        sums[cta as usize] = sum;
    }
    (output, sums)
}

/// Where two buffers first differ, and how many words do.
fn compare(name: &str, got: &[u32], expected: &[u32]) -> Result<(), String> {
    if got == expected {
        return Ok(());
    }
    let wrong: Vec<usize> = (0..got.len()).filter(|&i| got[i] != expected[i]).collect();
    let first = wrong[0];
    Err(format!(
        "`{name}` differs in {} of {} words; first at [{first}]: {:#x}, expected {:#x}",
        wrong.len(),
        got.len(),
        got[first],
        expected[first]
    ))
}

fn exactly_once(runs: &[u32]) -> Result<(), String> {
    match runs.iter().position(|&r| r != 1) {
        None => Ok(()),
        Some(v) => Err(format!(
            "CTA {v} (row-major) ran {} times; {} of {} CTAs did not run exactly once",
            runs[v],
            runs.iter().filter(|&&r| r != 1).count(),
            runs.len()
        )),
    }
}

/// Every entry of `K`: the baseline first, then the schedules.
fn entries<K: KernelFn>(kernel: Entry<K>, schedules: &'static [Entry<K>]) -> Vec<Entry<K>> {
    std::iter::once(kernel)
        .chain(schedules.iter().copied())
        .collect()
}

/// Runs `case` under every entry of its kernel; the names of the entries
/// that ran, or what went wrong first.
fn check(case: &Case) -> Result<Vec<&'static str>, (String, String)> {
    let mut ran = Vec::new();
    // A failure names its entry and the options it ran with.
    let fail = |entry: &dyn std::fmt::Debug, options: &ClusterOptions, what: String| {
        (
            format!("{entry:?}"),
            format!("{what}\n  options of this entry: {options:?}"),
        )
    };
    match case.work {
        Work::Coverage => {
            let n = case.ctas() as usize;
            for entry in entries(coverage::KERNEL, coverage::SCHEDULES) {
                let options = case.options_for(entry.contract());
                let (mut runs, mut sms) = (vec![0u32; n], vec![u32::MAX; n]);
                // SAFETY: the kernel indexes both buffers by its CTA's id.
                unsafe {
                    launch_entry(
                        entry,
                        &case.machine,
                        case.launch,
                        &options,
                        &mut NoObserver,
                        (&mut runs, &mut sms),
                    )
                }
                .map_err(|e| fail(&entry, &options, e.to_string()))?;
                exactly_once(&runs).map_err(|e| fail(&entry, &options, e))?;
                if let Some(sm) = sms.iter().find(|sm| !case.machine.sm_ids.contains(sm)) {
                    return Err(fail(
                        &entry,
                        &options,
                        format!("%smid {sm} is not an SM of the machine"),
                    ));
                }
                ran.push(entry.name());
            }
        }
        Work::Tile { width, height } => {
            let depth = case.launch.grid[2];
            let input = words(case.data, width * height * depth);
            let expected = tile_reference(case, width, height, &input);
            for entry in entries(tile_exchange::KERNEL, tile_exchange::SCHEDULES) {
                let options = case.options_for(entry.contract());
                let mut output = vec![0xdead_beef; input.len()];
                let mut runs = vec![0u32; case.ctas() as usize];
                // SAFETY: the tail guard keeps every access inside the
                // image, which the buffers hold; `runs` holds a word per CTA.
                unsafe {
                    launch_entry(
                        entry,
                        &case.machine,
                        case.launch,
                        &options,
                        &mut NoObserver,
                        (&input, &mut output, &mut runs, width, height),
                    )
                }
                .map_err(|e| fail(&entry, &options, e.to_string()))?;
                exactly_once(&runs).map_err(|e| fail(&entry, &options, e))?;
                compare("output", &output, &expected).map_err(|e| fail(&entry, &options, e))?;
                ran.push(entry.name());
            }
        }
        Work::Scan { n, ragged, cut } => {
            const FILL: u32 = 0xdead_beef;
            let input = words(case.data, n);
            let (expected, expected_sums) = scan_reference(case, n, ragged, cut, &input, FILL);
            for entry in entries(segment_scan::KERNEL, segment_scan::SCHEDULES) {
                let options = case.options_for(entry.contract());
                let mut output = vec![FILL; n as usize];
                let mut sums = vec![0u32; case.ctas() as usize];
                // SAFETY: the tail guard keeps every access below n; `sums`
                // holds a word per CTA.
                unsafe {
                    launch_entry(
                        entry,
                        &case.machine,
                        case.launch,
                        &options,
                        &mut NoObserver,
                        (&input, &mut output, &mut sums, n, ragged, cut),
                    )
                }
                .map_err(|e| fail(&entry, &options, e.to_string()))?;
                // A CTA run twice adds its total twice; one never run, not at all.
                compare("sums", &sums, &expected_sums).map_err(|e| fail(&entry, &options, e))?;
                compare("output", &output, &expected).map_err(|e| fail(&entry, &options, e))?;
                ran.push(entry.name());
            }
        }
    }
    Ok(ran)
}

/// The seeds to run: from the environment, or the default list.
fn seeds() -> (Vec<u64>, bool) {
    let var = |name: &str| {
        std::env::var(name).ok().map(|value| {
            value
                .trim()
                .parse::<u64>()
                .unwrap_or_else(|e| panic!("{name}={value:?} is not a u64: {e}"))
        })
    };
    match (var("PROPERTY_SEED"), var("PROPERTY_CASES")) {
        (Some(seed), cases) => (
            (seed..seed.saturating_add(cases.unwrap_or(1))).collect(),
            false,
        ),
        (None, Some(cases)) => ((0..cases).collect(), false),
        (None, None) => (
            (0..DEFAULT_CASES)
                .chain(REGRESSION_SEEDS.iter().copied())
                .collect(),
            true,
        ),
    }
}

/// What the default run's cases covered; checked so that a change to the
/// generator cannot quietly stop testing something.
#[derive(Default)]
struct Covered {
    entries: BTreeSet<&'static str>,
    features: BTreeSet<&'static str>,
}

impl Covered {
    fn add(&mut self, case: &Case, entries: Vec<&'static str>) {
        self.entries.extend(entries);
        let grid = case.launch.grid;
        let block = case.launch.block;
        let machine = &case.machine;
        let tail_on_both_axes = match case.work {
            Work::Tile { width, height } => {
                !width.is_multiple_of(block[0]) && !height.is_multiple_of(block[1])
            }
            _ => false,
        };
        let early_exits = match case.work {
            Work::Scan { ragged, cut, .. } => ragged < case.ctas() && cut < block[0],
            _ => false,
        };
        let features = [
            ("1D grid", grid[1] == 1 && grid[2] == 1),
            ("2D grid", grid[1] > 1 && grid[2] == 1),
            ("3D grid", grid[2] > 1),
            ("one CTA", case.ctas() == 1),
            ("hundreds of CTAs", case.ctas() >= 100),
            ("2D block", block[1] > 1),
            (
                "block not a multiple of 32",
                !(block[0] * block[1]).is_multiple_of(32),
            ),
            ("block of 256", block[0] * block[1] == 256),
            ("tail on both axes", tail_on_both_axes),
            ("early exits in a CTA", early_exits),
            ("round-robin", machine.dispatch == Dispatch::RoundRobin),
            (
                "observed Hopper",
                machine.dispatch == Dispatch::ObservedHopper,
            ),
            (
                "random dispatch",
                matches!(machine.dispatch, Dispatch::Random(_)),
            ),
            ("sparse SM ids", machine.sm_id_bound > machine.sm_count()),
            (
                "SM starved for ever",
                machine.available_from.contains(&u64::MAX),
            ),
            (
                "SM starved a while",
                machine
                    .available_from
                    .iter()
                    .any(|&t| t > 0 && t < u64::MAX),
            ),
            ("interleaved lanes", machine.interleave.is_some()),
            ("clusters", case.options.clusters.is_some()),
            ("agents per SM", case.options.agents_per_sm.is_some()),
            ("total agents", case.options.total_agents.is_some()),
            (
                "fixed ACTIVE",
                matches!(case.options.active, ActivePolicy::Fixed(_)),
            ),
            (
                "ACTIVE fraction",
                matches!(case.options.active, ActivePolicy::Fraction(_)),
            ),
        ];
        for (name, present) in features {
            if present {
                self.features.insert(name);
            }
        }
    }
}

#[test]
fn every_schedule_matches_its_baseline_and_runs_every_cta_once_on_random_cases() {
    let (seeds, default_run) = seeds();
    let start = Instant::now();
    let mut covered = Covered::default();
    let mut failures = String::new();
    let mut failed = 0;
    for &seed in &seeds {
        let case = Case::generate(seed);
        // A panic is a failure of this case too (the API must not panic).
        let result = catch_unwind(AssertUnwindSafe(|| check(&case))).unwrap_or_else(|panic| {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Err(("the test itself".into(), format!("panicked: {message}")))
        });
        match result {
            Ok(entries) => covered.add(&case, entries),
            Err((entry, what)) => {
                failed += 1;
                if failed <= 10 {
                    let _ = writeln!(
                        failures,
                        "seed {}: {entry}: {what}\n  case: {case:?}\n  replay: PROPERTY_SEED={} cargo test --test property\n",
                        case.seed, case.seed
                    );
                }
            }
        }
    }
    eprintln!(
        "{} cases in {:.1} s",
        seeds.len(),
        start.elapsed().as_secs_f64()
    );
    assert!(
        failed == 0,
        "{failed} of {} cases failed (the first 10 below)\n{failures}",
        seeds.len()
    );
    if default_run {
        let all: BTreeSet<&str> = entries(coverage::KERNEL, coverage::SCHEDULES)
            .iter()
            .map(|e| e.name())
            .chain(
                entries(tile_exchange::KERNEL, tile_exchange::SCHEDULES)
                    .iter()
                    .map(|e| e.name()),
            )
            .chain(
                entries(segment_scan::KERNEL, segment_scan::SCHEDULES)
                    .iter()
                    .map(|e| e.name()),
            )
            .collect();
        let missing: Vec<_> = all.difference(&covered.entries).collect();
        assert!(missing.is_empty(), "entries no case ran: {missing:?}");
        const FEATURES: usize = 22;
        assert_eq!(
            covered.features.len(),
            FEATURES,
            "the cases covered only {:?}",
            covered.features
        );
    }
}
