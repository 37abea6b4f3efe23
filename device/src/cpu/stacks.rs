//! Stacks of the simulated threads: one allocation per CTA, carved into one
//! stack per thread.
//!
//! One `mmap` per thread stack (corosensei's `DefaultStack`) costs two kernel
//! memory mappings each (stack and guard page); a simulated Hopper SM holds
//! 2048 threads, so 16 SMs would pass Linux's default limit of 65530
//! mappings. A slab is one allocation, lazily backed by the OS, whatever the
//! thread count.
//!
//! Instead of a guard page per thread, the lowest [`CANARY_BYTES`] of every
//! stack are a zone the thread must not reach. Each time it hands control
//! back to the scheduler, its stack pointer is checked against the zone
//! ([`Slab::in_canary_zone`]), so an overflow is caught at the next
//! suspension, before another thread runs on the damaged memory; and when it
//! ends, the zone's known pattern is checked ([`Slab::overflowed`]) for
//! excursions that returned before a suspension. Either stops the run with
//! an error. The slab's lowest
//! stack additionally sits above a whole unused stack, so an overflow of the
//! last thread does not leave the allocation before it is seen.

use std::alloc::{alloc, dealloc, Layout};

use corosensei::stack::{Stack, StackPointer, STACK_ALIGNMENT};

/// The guarded zone at the bottom of each stack.
pub const CANARY_BYTES: usize = 4096;

const CANARY: u64 = 0xdead_57ac_dead_57ac;

/// The stacks of one CTA's threads.
pub struct Slab {
    memory: *mut u8,
    layout: Layout,
    /// What `new` was asked for, to match pooled slabs.
    requested: usize,
    stack_bytes: usize,
    count: usize,
}

/// Slabs kept for later runs on the same host thread: enough for the
/// resident CTAs of a 16-SM simulation, not more.
const POOL_LIMIT: usize = 16 * 32;

thread_local! {
    static POOL: std::cell::RefCell<Vec<Slab>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Slab {
    /// Stacks for `count` threads of `stack_bytes`: taken from this host
    /// thread's pool of earlier runs' slabs if one fits, else new.
    pub fn take(count: usize, stack_bytes: usize) -> Option<Slab> {
        let reused = POOL.with(|pool| {
            let mut pool = pool.borrow_mut();
            let fit = pool
                .iter()
                .position(|s| s.count == count && s.requested == stack_bytes)?;
            Some(pool.swap_remove(fit))
        });
        reused.or_else(|| Slab::new(count, stack_bytes))
    }

    /// Gives the slab back to this host thread's pool. Its canaries are
    /// intact: a run with an overflow leaks its slab instead.
    pub fn give_back(self) {
        POOL.with(|pool| {
            let mut pool = pool.borrow_mut();
            if pool.len() < POOL_LIMIT {
                pool.push(self);
            }
        });
    }

    /// `count` stacks of `stack_bytes` (rounded up to 4 KiB, at least twice
    /// the canary), each with its canary set. `None` if the host is out of
    /// memory.
    pub fn new(count: usize, requested: usize) -> Option<Slab> {
        let stack_bytes = requested.max(2 * CANARY_BYTES).next_multiple_of(4096);
        // One spare stack below the first: room for an overflow to land in.
        let size = stack_bytes.checked_mul(count + 1)?;
        let layout = Layout::from_size_align(size, 4096).ok()?;
        // SAFETY: non-zero size. The OS backs pages as they are touched: the
        // canary and the top of each stack, a few KiB per thread.
        let memory = unsafe { alloc(layout) };
        if memory.is_null() {
            return None;
        }
        let slab = Slab {
            memory,
            layout,
            requested,
            stack_bytes,
            count,
        };
        for index in 0..count {
            slab.reset_canary(index);
        }
        Some(slab)
    }

    /// The lowest byte of stack `index` (stack 0 lies above the spare one).
    fn bottom(&self, index: usize) -> *mut u64 {
        // SAFETY: inside the allocation for index < count.
        unsafe { self.memory.add((index + 1) * self.stack_bytes) }.cast()
    }

    fn reset_canary(&self, index: usize) {
        let words = CANARY_BYTES / 8;
        // SAFETY: the canary zone lies inside stack `index`.
        unsafe { std::slice::from_raw_parts_mut(self.bottom(index), words).fill(CANARY) };
    }

    /// Whether `stack_pointer`, an address on thread `index`'s stack, lies
    /// in (or below) its canary zone.
    pub fn in_canary_zone(&self, index: usize, stack_pointer: usize) -> bool {
        stack_pointer < self.bottom(index) as usize + CANARY_BYTES
    }

    /// Whether thread `index` wrote into its canary zone. A stack grows
    /// down into the zone from its top, so the top 32 words are checked, and
    /// every 32nd word below for frames that skipped them.
    pub fn overflowed(&self, index: usize) -> bool {
        let words = CANARY_BYTES / 8;
        // SAFETY: the canary zone lies inside stack `index`.
        let zone = unsafe { std::slice::from_raw_parts(self.bottom(index), words) };
        let (sparse, top) = zone.split_at(words - 32);
        top.iter()
            .chain(sparse.iter().step_by(32))
            .any(|&w| w != CANARY)
    }

    /// A handle on stack `index` for a coroutine.
    ///
    /// # Safety
    /// The slab must outlive the coroutine, and one stack serves one
    /// coroutine at a time.
    pub unsafe fn stack(&self, index: usize) -> SlabStack {
        assert!(index < self.count);
        let limit = self.bottom(index) as usize;
        SlabStack {
            limit: StackPointer::new(limit).expect("non-null"),
            base: StackPointer::new(limit + self.stack_bytes).expect("non-null"),
        }
    }
}

impl Drop for Slab {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.memory, self.layout) }
    }
}

/// One thread's stack in a [`Slab`].
pub struct SlabStack {
    base: StackPointer,
    limit: StackPointer,
}

// SAFETY: base and limit are 4 KiB aligned (more than STACK_ALIGNMENT), the
// stack holds at least 8 KiB. In place of the guard page corosensei asks for,
// the scheduler checks the canary after every switch back (module doc).
unsafe impl Stack for SlabStack {
    fn base(&self) -> StackPointer {
        debug_assert!(self.base.get().is_multiple_of(STACK_ALIGNMENT));
        self.base
    }

    fn limit(&self) -> StackPointer {
        self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stacks_are_disjoint_and_canaries_start_intact() {
        let slab = Slab::new(3, 10_000).unwrap();
        let stacks: Vec<SlabStack> = (0..3).map(|i| unsafe { slab.stack(i) }).collect();
        for pair in stacks.windows(2) {
            assert!(pair[0].base() <= pair[1].limit());
        }
        assert!((0..3).all(|i| !slab.overflowed(i)));
        // A write at the top of the zone (where an overflow starts) is seen.
        unsafe { slab.bottom(1).add(CANARY_BYTES / 8 - 1).write(0) };
        assert!(slab.overflowed(1));
        assert!(!slab.overflowed(0) && !slab.overflowed(2));
    }
}
