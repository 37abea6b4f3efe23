//! The cache model: per-SM L1s and one shared L2, fed one warp instruction at
//! a time by the CPU execution backend.
//!
//! Why a model and not a measurement: CTA clustering moves CTAs that share
//! data onto one SM so that the data is found in that SM's L1 (and stays in
//! L2 while it is reused). Whether a schedule does that is a question about
//! which sector is requested from where, in which order; a sector-level model
//! answers it for any schedule, without a GPU, reproducibly.
//!
//! # What one call means
//!
//! [`CacheModel::warp_access`] is one warp-level global memory instruction.
//! The addresses of its active lanes are coalesced into 32-byte sectors of
//! 128-byte lines: each distinct sector counts once per instruction, and a
//! lane's access that straddles sectors touches each of them. Sectors of one
//! line go through the caches together, as the hardware's requests do.
//!
//! # Semantics
//!
//! - **L1**, one per SM: sectored (a tag per 128-byte line, a valid bit per
//!   32-byte sector), set-associative, LRU. Nothing keeps the L1s coherent,
//!   as on the GPU.
//!   - [`AccessKind::Load`]: each sector is an L1 lookup; a missing sector is
//!     requested from L2 and allocated in L1 (a missing line takes the least
//!     recently used way of its set).
//!   - [`AccessKind::Store`]: write-through, no allocation in L1. A sector
//!     already in the issuing SM's L1 is updated there and stays present. No
//!     L1 lookup is counted.
//!   - [`AccessKind::Atomic`]: performed at L2; the sector is invalidated in
//!     the issuing SM's L1.
//!   - [`AccessKind::LoadBypassL1`] (`ld.global.cg`): goes to L2 without
//!     touching L1.
//!   - [`AccessKind::PrefetchL1`]: missing sectors are filled into L1 (and so
//!     requested from L2, filling it too); present ones are only marked
//!     recently used. Not counted as L1 lookups.
//!   - [`AccessKind::PrefetchL2`]: fills L2 only.
//! - **L2**, shared by all SMs: sectored, set-associative, LRU, write-back
//!   with write-allocate.
//!   - A read (L1 load miss, bypass load, prefetch) of a missing sector
//!     fetches it from DRAM ([`CacheStats::l2_sector_misses`]).
//!   - A store allocates the sector and marks it dirty without a DRAM read
//!     ([`CacheStats::l2_write_allocations`]), even when it writes only part
//!     of the sector (the L2 keeps byte masks for partial writes; a read that
//!     a partial sector may cost at eviction, with ECC for instance, is not
//!     modelled).
//!   - An atomic is a read-modify-write: a missing sector is fetched, and the
//!     sector becomes dirty.
//!   - Evicting a line writes its dirty sectors to DRAM
//!     ([`CacheStats::dram_write_sectors`]); [`CacheModel::flush`] writes the
//!     rest at the end of a run.
//!
//!   So every sector sent to L2 is exactly one of: a hit, a miss or a write
//!   allocation (`l1_to_l2_sectors == l2_sector_hits + l2_sector_misses +
//!   l2_write_allocations`).
//! - **Set index**: hashed by default ([`SetIndexing::Hashed`]): a plain
//!   modulo piles power-of-two strides into one set, which the GPU's hashed
//!   indexing does not; see [`SetIndexing`].
//! - **Reuse measure**, independent of cache sizes: a load sector (both load
//!   kinds; not stores, atomics or prefetches, which are not the kernel's
//!   reads) is *reused* if any CTA loaded it before (an infinite cache would
//!   hit), and *cross-CTA reused* if the last CTA to load it was another
//!   original CTA than the one loading it now: the share the paper calls
//!   inter-CTA reuse (Li et al., ASPLOS 2017, figure 3). The CTA is the
//!   *original* CTA whose code issued the load, not the agent that ran it.
//!
//! Not modelled: timing, bandwidth, MSHRs and in-flight misses (a miss fills
//! at once), the two L2 partitions of H100, sector promotion to 64 bytes on
//! DRAM reads, texture and constant caches, L1 write-back of local memory.

use crate::profile::{DeviceProfile, ProfileError};
use crate::reuse::SectorHistory;
use crate::sectored::SectoredCache;
pub use crate::sectored::SetIndexing;

/// The CPU backend's description of a warp instruction's accesses: the
/// model takes them as the backend reports them.
pub use clustered_device::cpu::{AccessKind, LaneAccess};

/// Counters of a run; see the module doc for what each event means.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CacheStats {
    /// Warp instructions seen (all kinds).
    pub instructions: u64,
    /// Of those, loads ([`AccessKind::Load`] and
    /// [`AccessKind::LoadBypassL1`]).
    pub load_instructions: u64,
    /// Load sectors looked up in L1 ([`AccessKind::Load`] only).
    pub l1_sector_lookups: u64,
    /// Lines (tags) those lookups are in, per instruction: an L1 looks up
    /// one line per clock, so a load whose lanes are in 32 lines takes 32
    /// clocks however few sectors each.
    pub l1_line_lookups: u64,
    /// Of those, sectors found in L1.
    pub l1_sector_hits: u64,
    /// Sectors requested from L2 by the SMs: L1 load misses, bypass loads,
    /// stores, atomics, and prefetches that miss.
    pub l1_to_l2_sectors: u64,
    /// Requested sectors found in L2.
    pub l2_sector_hits: u64,
    /// Of `l1_to_l2_sectors`, the prefetches' (both kinds): requests that
    /// bring sectors into the caches and return nothing to a register, so
    /// the SM neither waits for them nor receives their bytes.
    pub l2_prefetch_sectors: u64,
    /// Of those, the ones found in L2 (counted in `l2_sector_hits` too).
    pub l2_prefetch_sector_hits: u64,
    /// Read sectors fetched from DRAM (reads and atomics that missed in L2).
    pub l2_sector_misses: u64,
    /// Stored sectors that missed in L2 and were allocated without a DRAM read.
    pub l2_write_allocations: u64,
    /// Stored sectors that their instruction writes only in part (fewer
    /// bytes than the sector's): the L2 merges each into its sector, which
    /// costs it several times a whole sector's write (a naive transpose's
    /// stores; `calibrate` measures the rate). Lanes storing the same bytes
    /// count each time, so such a sector may count as whole.
    pub l2_partial_store_sectors: u64,
    /// Dirty sectors written back to DRAM: on L2 eviction, and by
    /// [`CacheModel::flush`].
    pub dram_write_sectors: u64,
    /// Load sector accesses (both load kinds), the reuse measure's population.
    pub load_sectors: u64,
    /// Load sector accesses whose sector some CTA loaded before (an infinite
    /// cache would hit).
    pub reused_sectors: u64,
    /// Of those, the ones whose previous load came from a different original
    /// CTA (the paper's inter-CTA reuse, figure 3).
    pub cross_cta_reused_sectors: u64,
}

/// `part / whole`, or 0.0 when `whole` is 0.
fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

impl CacheStats {
    /// L1 sector hits per L1 sector lookup (0.0 without lookups).
    pub fn l1_hit_rate(&self) -> f64 {
        ratio(self.l1_sector_hits, self.l1_sector_lookups)
    }

    /// L2 sector hits per sector requested from L2 (0.0 without requests).
    /// Write allocations count as requests that did not hit.
    pub fn l2_hit_rate(&self) -> f64 {
        ratio(self.l2_sector_hits, self.l1_to_l2_sectors)
    }

    /// Share of the reused load sectors whose previous load came from another
    /// CTA (0.0 without reuse).
    pub fn cross_cta_reuse_share(&self) -> f64 {
        ratio(self.cross_cta_reused_sectors, self.reused_sectors)
    }

    /// Share of load sector accesses that are reuses (0.0 without loads).
    pub fn reuse_share(&self) -> f64 {
        ratio(self.reused_sectors, self.load_sectors)
    }

    /// Sectors moved between L2 and DRAM, both ways.
    pub fn dram_sectors(&self) -> u64 {
        self.l2_sector_misses + self.dram_write_sectors
    }

    /// The counts since `earlier` (a snapshot of the same model), for
    /// per-kernel or per-phase figures.
    pub fn since(&self, earlier: &CacheStats) -> CacheStats {
        CacheStats {
            instructions: self.instructions - earlier.instructions,
            load_instructions: self.load_instructions - earlier.load_instructions,
            l1_sector_lookups: self.l1_sector_lookups - earlier.l1_sector_lookups,
            l1_line_lookups: self.l1_line_lookups - earlier.l1_line_lookups,
            l1_sector_hits: self.l1_sector_hits - earlier.l1_sector_hits,
            l1_to_l2_sectors: self.l1_to_l2_sectors - earlier.l1_to_l2_sectors,
            l2_sector_hits: self.l2_sector_hits - earlier.l2_sector_hits,
            l2_prefetch_sectors: self.l2_prefetch_sectors - earlier.l2_prefetch_sectors,
            l2_prefetch_sector_hits: self.l2_prefetch_sector_hits - earlier.l2_prefetch_sector_hits,
            l2_sector_misses: self.l2_sector_misses - earlier.l2_sector_misses,
            l2_write_allocations: self.l2_write_allocations - earlier.l2_write_allocations,
            l2_partial_store_sectors: self.l2_partial_store_sectors
                - earlier.l2_partial_store_sectors,
            dram_write_sectors: self.dram_write_sectors - earlier.dram_write_sectors,
            load_sectors: self.load_sectors - earlier.load_sectors,
            reused_sectors: self.reused_sectors - earlier.reused_sectors,
            cross_cta_reused_sectors: self.cross_cta_reused_sectors
                - earlier.cross_cta_reused_sectors,
        }
    }
}

/// Per-SM L1s, one shared L2 and the reuse measure. See the module doc.
///
/// Not thread-safe by design (no locks on the hot path): a backend that
/// simulates SMs on several threads serializes its calls.
#[derive(Clone, Debug)]
pub struct CacheModel {
    l1: Vec<SectoredCache>,
    l2: SectoredCache,
    history: SectorHistory,
    stats: CacheStats,
    /// log2 of the sector size.
    sector_shift: u32,
    /// log2 of the sectors per line.
    sectors_per_line_shift: u32,
    /// Sector numbers of the current instruction, reused from call to call.
    sectors: Vec<u64>,
    /// A store's (sector, bytes written) per lane, reused likewise.
    written: Vec<(u64, u64)>,
}

impl CacheModel {
    /// `profile.sm_count` simulated SMs, each with its own L1 of
    /// `profile.l1`, and one L2 of `profile.l2`, used as given (pass a
    /// [`DeviceProfile::scaled`] profile for a small simulation); hashed set
    /// indices.
    ///
    /// # Panics
    ///
    /// If the profile has no SM or a geometry the model cannot simulate; see
    /// [`Self::try_new`] for the error instead.
    pub fn new(profile: &DeviceProfile) -> Self {
        Self::try_new(profile, SetIndexing::default())
            .unwrap_or_else(|error| panic!("{}: {error}", profile.name))
    }

    /// Like [`Self::new`] with a choice of set indexing, and an error for an
    /// unusable profile: no SM, an invalid geometry (see
    /// [`crate::CacheGeometry::validate`]), or L1 and L2 lines or sectors of
    /// different sizes.
    pub fn try_new(profile: &DeviceProfile, indexing: SetIndexing) -> Result<Self, ProfileError> {
        if profile.sm_count == 0 {
            return Err(ProfileError::NoSms);
        }
        profile.l1.validate("L1")?;
        profile.l2.validate("L2")?;
        if (profile.l1.line_bytes, profile.l1.sector_bytes)
            != (profile.l2.line_bytes, profile.l2.sector_bytes)
        {
            return Err(ProfileError::InvalidGeometry {
                cache: "L1/L2",
                reason: "L1 and L2 must have the same line and sector sizes",
            });
        }
        let l1 = SectoredCache::new(&profile.l1, indexing);
        Ok(Self {
            l1: vec![l1; profile.sm_count as usize],
            l2: SectoredCache::new(&profile.l2, indexing),
            history: SectorHistory::new(),
            stats: CacheStats::default(),
            sector_shift: profile.l1.sector_bytes.trailing_zeros(),
            sectors_per_line_shift: profile.l1.sectors_per_line().trailing_zeros(),
            sectors: Vec::with_capacity(64),
            written: Vec::with_capacity(64),
        })
    }

    /// Number of simulated SMs.
    pub fn sm_count(&self) -> u32 {
        self.l1.len() as u32
    }

    /// One warp instruction of kind `kind` issued on SM `sm` by code of the
    /// original CTA `task` (its linear id, below `u32::MAX`), touching the
    /// active lanes' `lanes` (1 to 32 entries).
    ///
    /// # Panics
    ///
    /// If `sm >= self.sm_count()`.
    pub fn warp_access(&mut self, sm: u32, task: u32, kind: AccessKind, lanes: &[LaneAccess]) {
        assert!(
            (sm as usize) < self.l1.len(),
            "SM {sm} out of range: the model has {} SMs",
            self.l1.len()
        );
        self.stats.instructions += 1;
        match kind {
            AccessKind::Load | AccessKind::LoadBypassL1 => self.stats.load_instructions += 1,
            AccessKind::Store => self.stats.l2_partial_store_sectors += self.partial_sectors(lanes),
            _ => {}
        }
        self.collect_sectors(lanes);
        // Borrow the scratch list out of `self` while the caches change.
        let sectors = std::mem::take(&mut self.sectors);
        for (line, mask) in lines_of(&sectors, self.sectors_per_line_shift) {
            self.line_access(sm as usize, task, kind, line, mask);
        }
        self.sectors = sectors;
    }

    /// Counts the L2's remaining dirty sectors as written to DRAM and cleans
    /// them (they stay cached). Calling it again writes nothing more.
    pub fn flush(&mut self) {
        self.stats.dram_write_sectors += self.l2.clean_all();
    }

    /// The counters so far.
    pub fn stats(&self) -> CacheStats {
        self.stats
    }

    /// Whether the sector holding `address` is in SM `sm`'s L1 (without
    /// touching it: no counter or recency changes). Panics if `sm` is out of
    /// range.
    pub fn in_l1(&self, sm: u32, address: u64) -> bool {
        let (line, bit) = self.line_and_bit(address);
        self.l1[sm as usize].present(line) & bit != 0
    }

    /// Whether the sector holding `address` is in L2 (without touching it).
    pub fn in_l2(&self, address: u64) -> bool {
        let (line, bit) = self.line_and_bit(address);
        self.l2.present(line) & bit != 0
    }

    /// The line of `address` and its sector's bit in the line's mask.
    fn line_and_bit(&self, address: u64) -> (u64, u8) {
        let sector = address >> self.sector_shift;
        let sector_bits = (1 << self.sectors_per_line_shift) - 1;
        (
            sector >> self.sectors_per_line_shift,
            1 << (sector & sector_bits),
        )
    }

    /// The sectors `lanes` write fewer bytes of than the sector holds.
    fn partial_sectors(&mut self, lanes: &[LaneAccess]) -> u64 {
        let shift = self.sector_shift;
        let size = 1u64 << shift;
        let written = &mut self.written;
        written.clear();
        for lane in lanes.iter().filter(|lane| lane.bytes > 0) {
            let end = lane.address.saturating_add(u64::from(lane.bytes));
            for sector in lane.address >> shift..=(end - 1) >> shift {
                let from = lane.address.max(sector << shift);
                let to = end.min((sector + 1) << shift);
                written.push((sector, to - from));
            }
        }
        written.sort_unstable_by_key(|&(sector, _)| sector);
        let mut partial = 0;
        let mut rest = &written[..];
        while let Some(&(sector, _)) = rest.first() {
            let n = rest.iter().take_while(|w| w.0 == sector).count();
            let bytes: u64 = rest[..n].iter().map(|w| w.1).sum();
            partial += u64::from(bytes < size);
            rest = &rest[n..];
        }
        partial
    }

    /// Fills `self.sectors` with the distinct sector numbers of `lanes`, in
    /// increasing order.
    fn collect_sectors(&mut self, lanes: &[LaneAccess]) {
        let shift = self.sector_shift;
        let sectors = &mut self.sectors;
        sectors.clear();
        // The last sector pushed: coalesced lanes repeat it, and are skipped.
        // No sector number reaches u64::MAX (addresses are shifted right).
        let mut previous = u64::MAX;
        for lane in lanes.iter().filter(|lane| lane.bytes > 0) {
            let first = lane.address >> shift;
            let last = lane.address.saturating_add(u64::from(lane.bytes) - 1) >> shift;
            if first == previous && last == previous {
                continue;
            }
            for sector in first..=last {
                if sector != previous {
                    sectors.push(sector);
                    previous = sector;
                }
            }
        }
        if !sectors.is_sorted() {
            sectors.sort_unstable();
            sectors.dedup();
        }
    }

    /// The sectors `mask` of `line`, for one instruction of `kind`.
    fn line_access(&mut self, sm: usize, task: u32, kind: AccessKind, line: u64, mask: u8) {
        match kind {
            AccessKind::Load => {
                self.record_loads(task, line, mask);
                self.stats.l1_sector_lookups += count(mask);
                self.stats.l1_line_lookups += 1;
                let missing = self.fill_l1(sm, line, mask);
                self.stats.l1_sector_hits += count(mask & !missing);
                self.l2_read(line, missing);
            }
            AccessKind::LoadBypassL1 => {
                self.record_loads(task, line, mask);
                self.l2_read(line, mask);
            }
            AccessKind::Store => self.l2_write(line, mask),
            AccessKind::Atomic => {
                self.l1[sm].invalidate(line, mask);
                self.l2_atomic(line, mask);
            }
            AccessKind::PrefetchL1 => {
                let missing = self.fill_l1(sm, line, mask);
                self.l2_prefetch(line, missing);
            }
            AccessKind::PrefetchL2 => self.l2_prefetch(line, mask),
        }
    }

    /// Updates the reuse measure for loads of `mask` in `line` by `task`.
    fn record_loads(&mut self, task: u32, line: u64, mask: u8) {
        self.stats.load_sectors += count(mask);
        let first_sector = line << self.sectors_per_line_shift;
        let reuse = self.history.record_loads(first_sector, mask, task);
        self.stats.reused_sectors += reuse.reused;
        self.stats.cross_cta_reused_sectors += reuse.cross_task;
    }

    /// Brings sectors `mask` of `line` into SM `sm`'s L1 and marks the line
    /// recently used; returns the sectors that were missing.
    fn fill_l1(&mut self, sm: usize, line: u64, mask: u8) -> u8 {
        let l1 = &mut self.l1[sm];
        let slot = l1.find_or_allocate(line);
        l1.fill(slot.way, mask);
        mask & !slot.present
    }

    /// Finds or allocates `line` in L2 for a request of `mask`, counting the
    /// request and any write-back of an evicted line; returns the way and the
    /// requested sectors that were missing.
    fn l2_request(&mut self, line: u64, mask: u8) -> (usize, u8) {
        self.stats.l1_to_l2_sectors += count(mask);
        let slot = self.l2.find_or_allocate(line);
        self.stats.dram_write_sectors += count(slot.evicted_dirty);
        self.stats.l2_sector_hits += count(mask & slot.present);
        self.l2.fill(slot.way, mask);
        (slot.way, mask & !slot.present)
    }

    /// Reads sectors `mask` of `line` through L2 (missing ones from DRAM);
    /// returns the ones that missed.
    fn l2_read(&mut self, line: u64, mask: u8) -> u8 {
        if mask == 0 {
            return 0;
        }
        let (_, missing) = self.l2_request(line, mask);
        self.stats.l2_sector_misses += count(missing);
        missing
    }

    /// A prefetch's read of sectors `mask` of `line` through L2, counted
    /// apart as well ([`CacheStats::l2_prefetch_sectors`]).
    fn l2_prefetch(&mut self, line: u64, mask: u8) {
        let missing = self.l2_read(line, mask);
        self.stats.l2_prefetch_sectors += count(mask);
        self.stats.l2_prefetch_sector_hits += count(mask & !missing);
    }

    /// Writes sectors `mask` of `line` into L2 (write-allocate, no fetch).
    fn l2_write(&mut self, line: u64, mask: u8) {
        let (way, missing) = self.l2_request(line, mask);
        self.stats.l2_write_allocations += count(missing);
        self.l2.mark_dirty(way, mask);
    }

    /// Read-modify-writes sectors `mask` of `line` in L2.
    fn l2_atomic(&mut self, line: u64, mask: u8) {
        let (way, missing) = self.l2_request(line, mask);
        self.stats.l2_sector_misses += count(missing);
        self.l2.mark_dirty(way, mask);
    }
}

/// Number of sectors in `mask`. A table: the baseline x86-64 target has no
/// population count instruction, and this runs several times per line.
#[inline]
fn count(mask: u8) -> u64 {
    const COUNTS: [u8; 256] = {
        let mut counts = [0; 256];
        let mut mask = 0;
        while mask < 256 {
            counts[mask] = (mask as u8).count_ones() as u8;
            mask += 1;
        }
        counts
    };
    u64::from(COUNTS[mask as usize])
}

/// Groups increasing sector numbers by line: `(line, mask of its sectors)`.
fn lines_of(sectors: &[u64], sectors_per_line_shift: u32) -> impl Iterator<Item = (u64, u8)> + '_ {
    let sector_bits = (1_u64 << sectors_per_line_shift) - 1;
    let mut rest = sectors;
    std::iter::from_fn(move || {
        let (&first, _) = rest.split_first()?;
        let line = first >> sectors_per_line_shift;
        let in_line = rest
            .iter()
            .take_while(|&&sector| sector >> sectors_per_line_shift == line)
            .count();
        let mask = rest[..in_line]
            .iter()
            .fold(0_u8, |mask, &sector| mask | 1 << (sector & sector_bits));
        rest = &rest[in_line..];
        Some((line, mask))
    })
}

/// The model as the CPU backend's observer: pass `&mut model` where a run
/// takes an `Observer`, and read [`CacheModel::stats`] after. Its SM count
/// must be at least the machine's (`DeviceProfile::scaled(n)` with
/// `Machine::new(n)`).
impl clustered_device::cpu::Observer for CacheModel {
    fn warp_access(&mut self, sm: u32, task: u32, kind: AccessKind, lanes: &[LaneAccess]) {
        CacheModel::warp_access(self, sm, task, kind, lanes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_of_groups_and_masks() {
        let groups: Vec<(u64, u8)> = lines_of(&[0, 1, 3, 4, 9], 2).collect();
        assert_eq!(groups, vec![(0, 0b1011), (1, 0b0001), (2, 0b0010)]);
        assert_eq!(lines_of(&[], 2).count(), 0);
    }
}
