//! The reuse measure's memory: for every sector ever loaded, which original
//! CTA loaded it last.
//!
//! A hash map from sector to CTA would cost a hash and a probe per sector and
//! about 16 bytes per entry. GPU kernels load dense arrays, so sectors come in
//! runs: the history keeps one `u32` per sector in pages of
//! [`PAGE_SECTORS`] consecutive sectors (32 KiB of data per 4 KiB page),
//! found through a small open-addressing table of page numbers, with the last
//! page used remembered (consecutive sectors nearly always share a page).
//! The price is paid by sparse access: a kernel touching one sector per
//! 32 KiB still costs a 4 KiB page per touched page.

/// Sectors per page (a power of two).
const PAGE_SECTORS: usize = 1024;
const PAGE_SHIFT: u32 = PAGE_SECTORS.trailing_zeros();

/// What a group of loaded sectors had been loaded by before.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Reuse {
    /// Sectors some CTA had loaded before.
    pub reused: u64,
    /// Of those, sectors whose last load was by another CTA.
    pub cross_task: u64,
}

/// Last loading CTA of every loaded sector.
#[derive(Clone, Debug)]
pub(crate) struct SectorHistory {
    pages: PageTable,
    /// `task + 1` of the last load of each sector, page after page; 0 = never
    /// loaded (so that new pages are zeroed memory).
    last_task: Vec<u32>,
    /// Page number and first index in `last_task` of the page used last.
    recent: Option<(u64, usize)>,
}

impl SectorHistory {
    pub fn new() -> Self {
        Self {
            pages: PageTable::with_capacity(1024),
            last_task: Vec::new(),
            recent: None,
        }
    }

    /// Records that `task` loads the sectors `first_sector + bit` for each bit
    /// set in `mask` (the sectors of one line, which never straddle a page),
    /// and says who loaded them before. `task` must be below `u32::MAX`.
    #[inline]
    pub fn record_loads(&mut self, first_sector: u64, mask: u8, task: u32) -> Reuse {
        debug_assert!(task < u32::MAX, "task ids must be below u32::MAX");
        debug_assert!(
            (first_sector as usize % PAGE_SECTORS) + 8 - mask.leading_zeros() as usize
                <= PAGE_SECTORS,
            "the sectors of one line share a page"
        );
        let base = self.page_start(first_sector >> PAGE_SHIFT)
            + (first_sector as usize & (PAGE_SECTORS - 1));
        let mut reuse = Reuse::default();
        let mut bits = mask;
        while bits != 0 {
            let index = base + bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let previous = std::mem::replace(&mut self.last_task[index], task + 1);
            reuse.reused += u64::from(previous != 0);
            reuse.cross_task += u64::from(previous != 0 && previous != task + 1);
        }
        reuse
    }

    /// Index in `last_task` where `page` starts, creating the page if new.
    #[inline]
    fn page_start(&mut self, page: u64) -> usize {
        if let Some((recent_page, start)) = self.recent {
            if recent_page == page {
                return start;
            }
        }
        let next_start = self.last_task.len();
        let start = self.pages.get_or_insert(page, next_start);
        if start == next_start {
            self.last_task.resize(next_start + PAGE_SECTORS, 0);
        }
        self.recent = Some((page, start));
        start
    }
}

/// Key of an empty entry (page numbers are sector numbers shifted right, so
/// they never reach it).
const EMPTY: u64 = u64::MAX;

/// Open-addressing (linear probing) map from page number to the page's start
/// index, kept at most half full.
#[derive(Clone, Debug)]
struct PageTable {
    keys: Vec<u64>,
    starts: Vec<usize>,
    len: usize,
}

impl PageTable {
    fn with_capacity(capacity: usize) -> Self {
        let capacity = capacity.next_power_of_two();
        Self {
            keys: vec![EMPTY; capacity],
            starts: vec![0; capacity],
            len: 0,
        }
    }

    /// The start of `page`, or `start` after inserting it.
    fn get_or_insert(&mut self, page: u64, start: usize) -> usize {
        if 2 * (self.len + 1) > self.keys.len() {
            self.grow();
        }
        let slot = self.slot_of(page);
        if self.keys[slot] == page {
            return self.starts[slot];
        }
        self.keys[slot] = page;
        self.starts[slot] = start;
        self.len += 1;
        start
    }

    /// The slot holding `page`, or the empty slot where it belongs.
    fn slot_of(&self, page: u64) -> usize {
        let mask = self.keys.len() - 1;
        // Fibonacci hashing: the top bits of a multiplication by 2^64 / phi.
        let mut slot = (page.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as usize & mask;
        while self.keys[slot] != page && self.keys[slot] != EMPTY {
            slot = (slot + 1) & mask;
        }
        slot
    }

    fn grow(&mut self) {
        let old = std::mem::replace(self, Self::with_capacity(2 * self.keys.len()));
        for (&page, &start) in old.keys.iter().zip(&old.starts) {
            if page != EMPTY {
                let slot = self.slot_of(page);
                self.keys[slot] = page;
                self.starts[slot] = start;
                self.len += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Who loaded `sector` before `task` loads it now: "never", "same" or
    /// "other".
    fn load(history: &mut SectorHistory, sector: u64, task: u32) -> &'static str {
        let line = sector & !7;
        match history.record_loads(line, 1 << (sector - line), task) {
            Reuse { reused: 0, .. } => "never",
            Reuse { cross_task: 0, .. } => "same",
            _ => "other",
        }
    }

    #[test]
    fn first_same_and_other_task() {
        let mut history = SectorHistory::new();
        assert_eq!(load(&mut history, 7, 0), "never");
        assert_eq!(load(&mut history, 7, 0), "same");
        assert_eq!(load(&mut history, 7, 3), "other");
        assert_eq!(load(&mut history, 7, 3), "same");
        assert_eq!(load(&mut history, 8, 3), "never");
    }

    #[test]
    fn a_line_mask_counts_each_sector() {
        let mut history = SectorHistory::new();
        assert_eq!(history.record_loads(16, 0b0110, 1), Reuse::default());
        let reuse = history.record_loads(16, 0b1111, 2);
        assert_eq!(
            reuse,
            Reuse {
                reused: 2,
                cross_task: 2
            }
        );
        let reuse = history.record_loads(16, 0b1011, 2);
        assert_eq!(
            reuse,
            Reuse {
                reused: 3,
                cross_task: 0
            }
        );
    }

    #[test]
    fn many_scattered_pages_stay_distinct() {
        let mut history = SectorHistory::new();
        // 5000 pages far apart force the page table to grow several times.
        let sectors: Vec<u64> = (0..5000_u64)
            .map(|i| i * 7919 * PAGE_SECTORS as u64 + i % 1000)
            .collect();
        for (task, &sector) in sectors.iter().enumerate() {
            assert_eq!(load(&mut history, sector, task as u32), "never");
        }
        for (task, &sector) in sectors.iter().enumerate() {
            assert_eq!(load(&mut history, sector, task as u32), "same");
            assert_eq!(load(&mut history, sector + 1, task as u32), "never");
        }
        assert_eq!(history.last_task.len(), 5000 * PAGE_SECTORS);
    }
}
