//! Stacks of the simulated threads: one memory mapping per CTA, carved into
//! one stack per thread, each with a guard page below it.
//!
//! A thread that outgrows its stack touches its guard page: rustc probes
//! every page of a frame larger than a page (stack probes), so even a large
//! local array reaches the guard before anything below it. The fault is a
//! `SIGSEGV` that [`super::trap`] turns into [`CpuError::StackOverflow`]
//! (where it cannot, the process dies of the signal; memory is never
//! silently overwritten).
//!
//! Guard pages are installed with `MADV_GUARD_INSTALL` (Linux 6.13), which
//! costs no kernel memory mapping, else with `mprotect`, which splits the
//! mapping: two mappings per thread, so Linux's default limit of 65530
//! mappings holds about 32 000 simulated threads (16 full Hopper SMs). Past
//! it, [`Slab::take`] reports an error instead of crashing.
//!
//! [`CpuError::StackOverflow`]: super::CpuError::StackOverflow

use std::io;
use std::ptr;

use corosensei::stack::{Stack, StackPointer, STACK_ALIGNMENT};

/// The smallest usable stack: the runtime's own frames need a few KiB.
const MIN_STACK_BYTES: usize = 16 * 1024;

/// `MADV_GUARD_INSTALL` from linux/mman.h (not in `libc` yet).
#[cfg(target_os = "linux")]
const MADV_GUARD_INSTALL: libc::c_int = 102;

/// The stacks of one CTA's threads.
pub struct Slab {
    memory: *mut u8,
    size: usize,
    /// What `new` was asked for, to match pooled slabs.
    requested: usize,
    /// One slot: a guard page, then the usable stack.
    slot: usize,
    guard: usize,
    count: usize,
}

/// Stacks kept for later runs on the same host thread. Counted in stacks,
/// since each may cost two kernel mappings.
const POOL_STACKS: usize = 16 * 1024;

thread_local! {
    static POOL: std::cell::RefCell<Vec<Slab>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(page)
        .ok()
        .filter(|p| p.is_power_of_two())
        .unwrap_or(4096)
}

impl Slab {
    /// Stacks for `count` threads of `stack_bytes`: taken from this host
    /// thread's pool of earlier runs' slabs if one fits, else new. When the
    /// system refuses more mappings, the pool is emptied and the
    /// allocation tried once more.
    pub fn take(count: usize, stack_bytes: usize) -> Result<Slab, String> {
        let reused = POOL.with(|pool| {
            let mut pool = pool.borrow_mut();
            let fit = pool
                .iter()
                .position(|s| s.count == count && s.requested == stack_bytes)?;
            Some(pool.swap_remove(fit))
        });
        if let Some(slab) = reused {
            return Ok(slab);
        }
        Slab::new(count, stack_bytes).or_else(|_| {
            POOL.with(|pool| pool.borrow_mut().clear());
            Slab::new(count, stack_bytes)
        })
    }

    /// Gives the slab back to this host thread's pool. A stack overflow
    /// leaves the slab intact (the guard page stopped it), so any slab may
    /// be reused.
    pub fn give_back(self) {
        POOL.with(|pool| {
            let mut pool = pool.borrow_mut();
            let pooled: usize = pool.iter().map(|s| s.count).sum();
            if pooled + self.count <= POOL_STACKS {
                pool.push(self);
            }
        });
    }

    /// `count` stacks of `requested` bytes (rounded up to whole pages, at
    /// least [`MIN_STACK_BYTES`]), each above a guard page.
    pub fn new(count: usize, requested: usize) -> Result<Slab, String> {
        let guard = page_size();
        let usable = requested.max(MIN_STACK_BYTES).next_multiple_of(guard);
        let too_big = || format!("{count} stacks of {requested} bytes do not fit in memory");
        let slot = usable.checked_add(guard).ok_or_else(too_big)?;
        let size = slot.checked_mul(count.max(1)).ok_or_else(too_big)?;
        // SAFETY: a fresh private anonymous mapping; NORESERVE because the
        // OS backs only the pages a thread touches (a few KiB of each).
        let memory = unsafe {
            libc::mmap(
                ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if memory == libc::MAP_FAILED {
            return Err(format!(
                "no memory for {count} stacks of {usable} bytes: {}",
                io::Error::last_os_error()
            ));
        }
        let slab = Slab {
            memory: memory.cast(),
            size,
            requested,
            slot,
            guard,
            count,
        };
        slab.install_guards()?;
        Ok(slab)
    }

    fn install_guards(&self) -> Result<(), String> {
        #[cfg(target_os = "linux")]
        let mut light = true;
        for index in 0..self.count {
            let page = self.limit(index) as *mut libc::c_void;
            #[cfg(target_os = "linux")]
            if light {
                // SAFETY: the page lies in this slab's mapping.
                if unsafe { libc::madvise(page, self.guard, MADV_GUARD_INSTALL) } == 0 {
                    continue;
                }
                // An older kernel: the first try fails, and all use mprotect.
                light = false;
            }
            // SAFETY: the page lies in this slab's mapping; no thread uses
            // the slab yet.
            if unsafe { libc::mprotect(page, self.guard, libc::PROT_NONE) } != 0 {
                return Err(format!(
                    "cannot protect the guard page of simulated thread stack {index} ({}): \
                     each thread's stack costs two memory mappings on this kernel, and \
                     vm.max_map_count limits them",
                    io::Error::last_os_error()
                ));
            }
        }
        Ok(())
    }

    /// The lowest address of slot `index`: its guard page.
    fn limit(&self, index: usize) -> usize {
        self.memory as usize + index * self.slot
    }

    /// Thread `index`'s guard page: where an overflow of its stack faults.
    pub fn guard(&self, index: usize) -> std::ops::Range<usize> {
        let low = self.limit(index);
        low..low + self.guard
    }

    /// Usable bytes per stack.
    #[cfg(test)]
    fn usable(&self) -> usize {
        self.slot - self.guard
    }

    /// A handle on stack `index` for a coroutine.
    ///
    /// # Safety
    /// The slab must outlive the coroutine, and one stack serves one
    /// coroutine at a time.
    pub unsafe fn stack(&self, index: usize) -> SlabStack {
        assert!(index < self.count);
        let limit = self.limit(index);
        SlabStack {
            limit: StackPointer::new(limit).expect("non-null"),
            base: StackPointer::new(limit + self.slot).expect("non-null"),
        }
    }
}

impl Drop for Slab {
    fn drop(&mut self) {
        // SAFETY: mapped in `new` with this size; no coroutine uses it now.
        unsafe { libc::munmap(self.memory.cast(), self.size) };
    }
}

/// One thread's stack in a [`Slab`].
pub struct SlabStack {
    base: StackPointer,
    limit: StackPointer,
}

// SAFETY: base and limit are page aligned (more than STACK_ALIGNMENT), the
// stack holds at least MIN_STACK_BYTES above a guard page, and `limit`
// includes the guard page, as corosensei requires.
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
    fn stacks_are_disjoint_and_sit_above_their_guards() {
        let slab = Slab::new(3, 10_000).unwrap();
        assert!(slab.usable() >= MIN_STACK_BYTES);
        let stacks: Vec<SlabStack> = (0..3).map(|i| unsafe { slab.stack(i) }).collect();
        for (index, pair) in stacks.windows(2).enumerate() {
            assert!(pair[0].base() <= pair[1].limit());
            // Stack i's top is stack i + 1's guard page.
            assert_eq!(pair[0].base().get(), slab.guard(index + 1).start);
        }
        for (index, stack) in stacks.iter().enumerate() {
            assert_eq!(slab.guard(index).start, stack.limit().get());
            // The usable part is writable.
            let top = (stack.base().get() - 8) as *mut u64;
            let bottom = slab.guard(index).end as *mut u64;
            unsafe {
                top.write(1);
                bottom.write(2);
            }
        }
    }
}
