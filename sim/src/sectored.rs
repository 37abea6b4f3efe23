//! One sectored, set-associative LRU cache array: the building block of both
//! the per-SM L1s and the L2 in [`crate::cache`].
//!
//! Storage is flat and structure-of-arrays (one `Vec` per field, way `w` of
//! set `s` at index `s * ways + w`) so that a lookup scans a few contiguous
//! tags and nothing is allocated after construction.

use crate::profile::CacheGeometry;

/// How a line address picks its set.
///
/// With a plain modulo, addresses a multiple of `sets * line_bytes` apart
/// share one set: a walk down a matrix column whose row pitch is a power of
/// two then keeps `ways` lines of a cache that could hold thousands. Real
/// GPUs hash the set index (the functions are unpublished), and so do we by
/// default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SetIndexing {
    /// set = line mod sets. Kept for comparison and tests.
    Modulo,
    /// set = (line mod sets + hash(line div sets)) mod sets: each aligned
    /// group of `sets` consecutive lines is spread over all sets exactly once
    /// (rotated by a pseudo-random offset per group), so contiguous data
    /// fills the cache as evenly as with a modulo, while lines that a modulo
    /// would pile into one set (same `line mod sets`, different groups) land
    /// in unrelated sets.
    #[default]
    Hashed,
}

/// Maps line addresses to set numbers.
#[derive(Clone, Copy, Debug)]
struct SetIndexer {
    sets: u64,
    /// `log2(sets)` when `sets` is a power of two: shifts instead of divisions.
    sets_log2: Option<u32>,
    indexing: SetIndexing,
}

impl SetIndexer {
    fn new(sets: u64, indexing: SetIndexing) -> Self {
        debug_assert!(sets > 0);
        Self {
            sets,
            sets_log2: sets.is_power_of_two().then(|| sets.trailing_zeros()),
            indexing,
        }
    }

    /// The set of `line` (a line number: address / line_bytes).
    #[inline]
    fn set_of(&self, line: u64) -> usize {
        let (group, index) = match self.sets_log2 {
            Some(log2) => (line >> log2, line & (self.sets - 1)),
            None => (line / self.sets, line % self.sets),
        };
        let set = match self.indexing {
            SetIndexing::Modulo => index,
            SetIndexing::Hashed => {
                let rotated = index + scale_to(mix(group), self.sets);
                if rotated >= self.sets {
                    rotated - self.sets
                } else {
                    rotated
                }
            }
        };
        set as usize
    }
}

/// MurmurHash3's 64-bit finalizer: every input bit flips each output bit with
/// probability about 1/2.
#[inline]
fn mix(mut value: u64) -> u64 {
    value ^= value >> 33;
    value = value.wrapping_mul(0xff51_afd7_ed55_8ccd);
    value ^= value >> 33;
    value = value.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    value ^ (value >> 33)
}

/// Maps a 64-bit hash onto `0..range` without a division (multiply-high).
#[inline]
fn scale_to(hash: u64, range: u64) -> u64 {
    ((u128::from(hash) * u128::from(range)) >> 64) as u64
}

/// Tag of a way that holds no line (no line number reaches it: line numbers
/// are addresses divided by at least 2).
const NO_LINE: u64 = u64::MAX;

/// Where a line sits after [`SectoredCache::find_or_allocate`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slot {
    /// Index of the way (across all sets).
    pub way: usize,
    /// Sectors of the line already present (0 if the line was just allocated).
    pub present: u8,
    /// Dirty sectors of the line that the allocation evicted.
    pub evicted_dirty: u8,
}

/// A sectored, set-associative cache with LRU replacement. It tracks which
/// sectors are present and dirty; it holds no data.
#[derive(Clone, Debug)]
pub(crate) struct SectoredCache {
    indexer: SetIndexer,
    ways: usize,
    /// Line number held by each way, or [`NO_LINE`]. A line is in at most one
    /// way of its set: a way is allocated only after a lookup missed.
    tags: Vec<u64>,
    /// Present sectors of each way, one bit per sector.
    valid: Vec<u8>,
    /// Dirty sectors of each way (a subset of `valid`).
    dirty: Vec<u8>,
    /// Time of each way's last use, from `clock`; 0 marks a way free to take
    /// before any line in use (never used, or all its sectors invalidated).
    last_use: Vec<u64>,
    clock: u64,
}

impl SectoredCache {
    /// An empty cache of `geometry` (which must be valid, see
    /// [`CacheGeometry::validate`]).
    pub fn new(geometry: &CacheGeometry, indexing: SetIndexing) -> Self {
        let sets = geometry.sets();
        let ways = geometry.ways as usize;
        let slots = sets as usize * ways;
        Self {
            indexer: SetIndexer::new(sets, indexing),
            ways,
            tags: vec![NO_LINE; slots],
            valid: vec![0; slots],
            dirty: vec![0; slots],
            last_use: vec![0; slots],
            clock: 0,
        }
    }

    /// The ways of `line`'s set, as an index range.
    #[inline]
    fn set_range(&self, line: u64) -> std::ops::Range<usize> {
        let first = self.indexer.set_of(line) * self.ways;
        first..first + self.ways
    }

    /// The way holding `line`, if any.
    #[inline]
    pub fn find(&self, line: u64) -> Option<usize> {
        let range = self.set_range(line);
        let start = range.start;
        self.tags[range]
            .iter()
            .position(|&tag| tag == line)
            .map(|way| start + way)
    }

    /// The way holding `line`; if none, the least recently used way of its set
    /// is emptied and given to `line`. Does not mark the way used: callers
    /// [`Self::fill`] it.
    #[inline]
    pub fn find_or_allocate(&mut self, line: u64) -> Slot {
        let range = self.set_range(line);
        let start = range.start;
        // One pass finds the line or, failing that, the least recently used
        // way (the first on ties, so free ways, at time 0, go in order).
        let tags = &self.tags[range.clone()];
        let last_use = &self.last_use[range];
        let mut victim = 0;
        for (way, (&tag, &time)) in tags.iter().zip(last_use).enumerate() {
            if tag == line {
                return Slot {
                    way: start + way,
                    present: self.valid[start + way],
                    evicted_dirty: 0,
                };
            }
            if time < last_use[victim] {
                victim = way;
            }
        }
        let victim = start + victim;
        let evicted_dirty = self.dirty[victim];
        self.tags[victim] = line;
        self.valid[victim] = 0;
        self.dirty[victim] = 0;
        Slot {
            way: victim,
            present: 0,
            evicted_dirty,
        }
    }

    /// Marks `sectors` of `way` present and the way most recently used.
    #[inline]
    pub fn fill(&mut self, way: usize, sectors: u8) {
        self.valid[way] |= sectors;
        self.clock += 1;
        self.last_use[way] = self.clock;
    }

    /// Marks `sectors` of `way` dirty (they must be present).
    #[inline]
    pub fn mark_dirty(&mut self, way: usize, sectors: u8) {
        debug_assert_eq!(self.valid[way] & sectors, sectors);
        self.dirty[way] |= sectors;
    }

    /// Drops `sectors` of `line` if present (without writing them back). A
    /// line left with no sector becomes the first candidate for replacement.
    #[inline]
    pub fn invalidate(&mut self, line: u64, sectors: u8) {
        if let Some(way) = self.find(line) {
            self.valid[way] &= !sectors;
            self.dirty[way] &= !sectors;
            if self.valid[way] == 0 {
                self.last_use[way] = 0;
            }
        }
    }

    /// Present sectors of `line` (0 if absent).
    pub fn present(&self, line: u64) -> u8 {
        self.find(line).map_or(0, |way| self.valid[way])
    }

    /// Cleans every dirty sector and returns how many there were.
    pub fn clean_all(&mut self) -> u64 {
        let dirty: u64 = self.dirty.iter().map(|&d| u64::from(d.count_ones())).sum();
        self.dirty.fill(0);
        dirty
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modulo_is_line_mod_sets() {
        let indexer = SetIndexer::new(64, SetIndexing::Modulo);
        assert_eq!(indexer.set_of(5), 5);
        assert_eq!(indexer.set_of(64 + 5), 5);
        let odd = SetIndexer::new(78, SetIndexing::Modulo);
        assert_eq!(odd.set_of(78 * 3 + 7), 7);
    }

    #[test]
    fn hashing_spreads_each_aligned_group_over_all_sets() {
        for sets in [64_u64, 78, 1552] {
            let indexer = SetIndexer::new(sets, SetIndexing::Hashed);
            for group in [0_u64, 1, 2, 1000] {
                let mut seen = vec![false; sets as usize];
                for line in group * sets..(group + 1) * sets {
                    let set = indexer.set_of(line);
                    assert!(!seen[set], "sets {sets}, line {line}: set {set} twice");
                    seen[set] = true;
                }
            }
        }
    }

    #[test]
    fn hashing_breaks_up_set_sized_strides() {
        let sets = 64;
        let indexer = SetIndexer::new(sets, SetIndexing::Hashed);
        let mut used: Vec<usize> = (0..sets)
            .map(|group| indexer.set_of(group * sets))
            .collect();
        used.sort_unstable();
        used.dedup();
        // 64 lines thrown at random into 64 sets occupy about 64 * (1 - 1/e)
        // = 40 of them; a modulo would use 1.
        assert!(used.len() > 30, "only {} sets used", used.len());
    }

    #[test]
    fn lru_victim_and_dirty_eviction() {
        let mut cache = SectoredCache::new(&CacheGeometry::with_sets(1, 2), SetIndexing::Modulo);
        let a = cache.find_or_allocate(10);
        assert_eq!(a.present, 0);
        cache.fill(a.way, 0b0011);
        cache.mark_dirty(a.way, 0b0001);
        let b = cache.find_or_allocate(11);
        assert_ne!(a.way, b.way);
        cache.fill(b.way, 0b1000);
        // 10 is now least recently used: 12 evicts it and its dirty sector.
        let c = cache.find_or_allocate(12);
        assert_eq!(c.way, a.way);
        assert_eq!(c.evicted_dirty, 0b0001);
        assert_eq!(cache.present(10), 0);
        assert_eq!(cache.present(11), 0b1000);
    }

    #[test]
    fn invalidated_line_is_replaced_first() {
        let mut cache = SectoredCache::new(&CacheGeometry::with_sets(1, 2), SetIndexing::Modulo);
        for line in [1, 2] {
            let slot = cache.find_or_allocate(line);
            cache.fill(slot.way, 1);
        }
        cache.invalidate(2, 1);
        // 1 is least recently used, but 2 holds nothing: 3 takes 2's way.
        cache.find_or_allocate(3);
        assert_eq!(cache.present(1), 1);
    }

    #[test]
    fn clean_all_counts_each_dirty_sector_once() {
        let mut cache = SectoredCache::new(&CacheGeometry::with_sets(2, 2), SetIndexing::Modulo);
        let slot = cache.find_or_allocate(4);
        cache.fill(slot.way, 0b1111);
        cache.mark_dirty(slot.way, 0b0101);
        assert_eq!(cache.clean_all(), 2);
        assert_eq!(cache.clean_all(), 0);
        assert_eq!(cache.present(4), 0b1111);
    }
}
