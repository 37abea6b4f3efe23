//! The task pool's protocol (CAGTP, issue 15), version 2: each resident
//! block owns a ring of [`RING_ENTRIES`] [`Slot`]s in page-locked host
//! memory that the GPU reads through its mapping. Block `b`'s ring is
//! `slots[b * RING_ENTRIES .. (b + 1) * RING_ENTRIES]`.
//!
//! Defined once, here, so the host, the device runtime and the CPU backend
//! agree on every offset. Bump [`POOL_ABI_VERSION`] on any change.
//!
//! # The ring
//!
//! A block serves its entries in order, `r % RING_ENTRIES` for
//! `r = 0, 1, 2, ...`: it waits for entry `r` to be READY (or EXIT), runs
//! it, publishes FINISHED, and moves on to entry `r + 1` at once. The host
//! fills a ring in the same order and collects FINISHED entries in that
//! order, so while a block runs one task the host can already have put the
//! next ones behind it: a block with queued work never waits for a round
//! trip through the host (version 1 had one slot per block, and a block
//! idled from its FINISHED until the host's next READY reached it).
//! An entry is reused only after the host collected it (back to IDLE), so
//! at most `RING_ENTRIES` tasks of a block are in flight.
//!
//! Because a block runs its ring in order with a CTA barrier between tasks,
//! a task put behind another task in the *same* ring sees that task's
//! writes (same block: every CTA of the earlier task ran on these threads,
//! and the barrier orders their writes before the next task's reads) without
//! the host in between: the host uses that for dependencies.
//!
//! # States and who writes them (per entry)
//!
//! ```text
//!   host: payload, kind, ctas        device: RUNNING (optional, informative)
//!   host ──────────────► READY ──────────────► RUNNING ──┐
//!    ▲  (release store)        (acquire load)            │ device: status, result,
//!    │                                                   ▼ then FINISHED (release)
//!   IDLE ◄───────────────────────────────────────── FINISHED
//!         host: acquire load of FINISHED, reads status/result, stores IDLE
//!
//!   host, into the entry the block reads next, when it is IDLE and no
//!   task of the block is in flight: EXIT (release) ──► the block leaves
//! ```
//!
//! - The **host** owns an entry in [`IDLE`] and [`FINISHED`]: it writes
//!   `kind`, `ctas` and `payload` with plain stores, then `state = READY`
//!   with a release store, so the payload is visible before the flag.
//!   It reads `status` and `result` only after an acquire load saw
//!   `FINISHED`, then stores `IDLE` (no other party reads it until the host
//!   itself publishes the entry again: relaxed).
//! - The **device** owns an entry in [`READY`] and [`RUNNING`]: one thread
//!   of the block polls `state` of the entry it serves next with
//!   `ld.acquire.sys` and `nanosleep` back-off; after it saw `READY`, the
//!   block reads the payload (`ld.relaxed.sys`, so no stale L1 line of an
//!   earlier task is used), may store `RUNNING` (relaxed: it only tells the
//!   host's timeout diagnostics that the task started), runs the task's
//!   CTAs, meets at a CTA barrier, and the polling thread stores `status`,
//!   `result` and then `state = FINISHED` with `st.release.sys`: the barrier
//!   orders every thread's writes of the task before the release, which
//!   makes them visible to the host's acquire.
//! - [`EXIT`] is written by the host only into an entry it owns (IDLE), and
//!   only into the entry the block reads next, once every task of the ring
//!   was collected: a block never skips a task, and never waits on an entry
//!   the host will not write. The host cannot take back a READY entry (it
//!   belongs to the device), so a task in a ring always runs.

/// The version of the pool protocol (the slot layout, the ring and the
/// states). 2: a ring of [`RING_ENTRIES`] slots per block (1: one slot).
pub const POOL_ABI_VERSION: u32 = 2;

/// Entries in each block's ring. A power of two (the device wraps with a
/// mask). 8 is meant to cover a host round trip with short tasks queued
/// behind the running one. `pool_overhead 20000` on an H100: a chain of
/// empty tasks 2.4-2.5 us per task with rings of 8, 9.0-9.8 us at
/// `PoolConfig::depth(1)` (docs/BENCHMARKS.md, "The task pool").
pub const RING_ENTRIES: usize = 8;

/// The host owns the slot; no task in it.
pub const IDLE: u32 = 0;
/// A task waits in the slot: the device owns it.
pub const READY: u32 = 1;
/// The block took the task and runs it (informative: the device owns the
/// slot from READY on).
pub const RUNNING: u32 = 2;
/// The task ran; `status` and `result` are valid: the host owns the slot.
pub const FINISHED: u32 = 3;
/// The block leaves its serve loop (and the kernel ends when all have).
pub const EXIT: u32 = 4;

/// The task ran to its end.
pub const STATUS_OK: u32 = 0;
/// The task named a kind the kernel does not serve: nothing ran.
pub const STATUS_UNKNOWN_KIND: u32 = 1;
/// The task asked for zero CTAs: nothing ran.
pub const STATUS_EMPTY_GRID: u32 = 2;

/// Bytes of a task's arguments, copied into the slot.
pub const PAYLOAD_BYTES: usize = 64;
/// [`PAYLOAD_BYTES`] in 32-bit words.
pub const PAYLOAD_WORDS: usize = PAYLOAD_BYTES / 4;
/// Words of a slot that a block reads when it takes a task: the header
/// (`state`, `kind`, `ctas`, `status`) and the payload, 32 bytes on.
pub const SLOT_WORDS: usize = 32;
/// Where the payload starts, in words.
pub const PAYLOAD_OFFSET_WORDS: usize = 8;

/// One entry of a resident block's ring. 128 bytes and 128-byte aligned:
/// one entry per cache line (and PCIe read), so blocks, entries and the
/// host never share one.
#[repr(C, align(128))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    /// [`IDLE`], [`READY`], [`RUNNING`], [`FINISHED`] or [`EXIT`].
    pub state: u32,
    /// Which task body the kernel runs: `0..kinds` of the pool kernel.
    pub kind: u32,
    /// The task's own grid: CTAs the resident block runs one after the
    /// other, with virtual block indices `0..ctas`.
    pub ctas: u32,
    /// Written by the device with FINISHED: one of the `STATUS_` codes.
    pub status: u32,
    /// Written by the device with FINISHED: what the body returned
    /// (thread 0 of the block's value after the task's last CTA).
    pub result: u64,
    /// Kept zero: room for the header to grow without moving the payload.
    pub reserved: [u32; 2],
    /// The task's arguments (a `#[repr(C)]` struct of up to 64 bytes).
    pub payload: [u32; PAYLOAD_WORDS],
    /// Pads the slot to its 128-byte line.
    pub padding: [u32; 8],
}

impl Slot {
    /// An idle slot.
    pub const IDLE: Slot = Slot {
        state: IDLE,
        kind: 0,
        ctas: 0,
        status: 0,
        result: 0,
        reserved: [0; 2],
        payload: [0; PAYLOAD_WORDS],
        padding: [0; 8],
    };
}

impl Default for Slot {
    fn default() -> Self {
        Slot::IDLE
    }
}

/// The name of a slot state, for messages.
pub const fn state_name(state: u32) -> &'static str {
    match state {
        IDLE => "IDLE",
        READY => "READY",
        RUNNING => "RUNNING",
        FINISHED => "FINISHED",
        EXIT => "EXIT",
        _ => "(not a state)",
    }
}

// The layout both sides rely on.
const _: () = {
    assert!(core::mem::size_of::<Slot>() == 128);
    assert!(core::mem::align_of::<Slot>() == 128);
    assert!(core::mem::offset_of!(Slot, state) == 0);
    assert!(core::mem::offset_of!(Slot, kind) == 4);
    assert!(core::mem::offset_of!(Slot, ctas) == 8);
    assert!(core::mem::offset_of!(Slot, status) == 12);
    assert!(core::mem::offset_of!(Slot, result) == 16);
    assert!(core::mem::offset_of!(Slot, payload) == PAYLOAD_OFFSET_WORDS * 4);
    assert!(PAYLOAD_OFFSET_WORDS + PAYLOAD_WORDS <= SLOT_WORDS);
    assert!(RING_ENTRIES.is_power_of_two());
};
