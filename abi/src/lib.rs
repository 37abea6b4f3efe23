//! The one definition of what `#[clustered]`, the device runtime and the host
//! agree on: the [`Binding`]s, the [`IndexingKind`]s, and which schedule
//! options go with which binding ([`Options::violations`]).
//!
//! The macro turns each violation into a compile error at the option's span;
//! the host runs the same check on every contract it reads from a module, so
//! a contract that the macro would have refused is refused at launch too.
//! [`access`] holds what the macro learns about a kernel's memory accesses.
//! `no_std` and dependency-free: it builds for nvptx64, the host and the
//! proc-macro alike.
//!
//! [`bounds`] are a kernel's launch bounds (`#[launch_bounds]`), which
//! the builder writes into its PTX.
//!
//! [`pool`] is the task pool's protocol: the slot that the host and a
//! resident block share, and who writes which word in which order.
//!
//! [`ptx`] names what the host may rewrite in a module's PTX at load.
#![warn(missing_docs)]
#![no_std]

use core::fmt;

pub mod access;
pub mod bounds;
pub mod pool;
pub mod ptx;

pub use bounds::{BoundsError, LaunchBounds, LAUNCH_BOUNDS_PREFIX};

/// Prefix of a schedule's contract global: `#[clustered]` emits
/// `__clustered_contract_<schedule>` (the device runtime's `KernelContract`),
/// which the host reads before a launch and the builder's PTX checks
/// read for the schedule's binding.
pub const CONTRACT_PREFIX: &str = "__clustered_contract_";

/// Prefix of the symbol that links a schedule to the kernel it was made
/// from: `#[clustered]` emits `__clustered_baseline_<schedule>`, the bytes
/// of the kernel's name, beside each schedule's contract; the host reads it
/// from the PTX text to keep the schedule at its kernel's occupancy.
pub const BASELINE_LINK_PREFIX: &str = "__clustered_baseline_";

/// How the new kernel's CTAs choose the original CTAs they run.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Binding {
    /// Same grid, CTAs run in the order of the chosen indexing (with tiles:
    /// the grouped raster).
    Reorder = 0,
    /// The paper's redirection: same grid, block `u` runs position `u / M` of
    /// cluster `u % M` (assumes round-robin dispatch).
    Redirect = 1,
    /// The paper's SM binding: persistent agents on each SM claim the tasks
    /// of the cluster of their SM, then steal.
    Agents = 2,
    /// Persistent CTAs without SM binding: all claim chunks, in the
    /// indexing's order, from one queue (one cluster).
    Persistent = 3,
    /// Persistent CTAs without claims: agent `a` of `A` runs tasks `a`,
    /// `a + A`, ... (the grid-stride loop).
    Stride = 4,
}

impl Binding {
    /// Every binding, in the order of their numbers.
    pub const ALL: [Binding; 5] = [
        Binding::Reorder,
        Binding::Redirect,
        Binding::Agents,
        Binding::Persistent,
        Binding::Stride,
    ];

    /// The name written in the attribute (`binding = agents`).
    pub const fn name(self) -> &'static str {
        match self {
            Binding::Reorder => "reorder",
            Binding::Redirect => "redirect",
            Binding::Agents => "agents",
            Binding::Persistent => "persistent",
            Binding::Stride => "stride",
        }
    }

    /// The binding written `name` in the attribute.
    pub fn from_name(name: &str) -> Option<Self> {
        Binding::ALL.into_iter().find(|b| b.name() == name)
    }

    /// The binding stored as `value` in a contract.
    pub const fn from_u32(value: u32) -> Option<Self> {
        match value {
            0 => Some(Binding::Reorder),
            1 => Some(Binding::Redirect),
            2 => Some(Binding::Agents),
            3 => Some(Binding::Persistent),
            4 => Some(Binding::Stride),
            _ => None,
        }
    }

    /// Launched as persistent CTAs that loop over tasks (a grid of its own,
    /// sized from the occupancy; scratch memory for agents): agents,
    /// persistent and stride. Such a CTA knows its next task.
    pub const fn is_persistent(self) -> bool {
        matches!(
            self,
            Binding::Agents | Binding::Persistent | Binding::Stride
        )
    }

    /// Claims tasks with atomics, so `chunk` and `active` apply: agents and
    /// persistent.
    pub const fn claims_tasks(self) -> bool {
        matches!(self, Binding::Agents | Binding::Persistent)
    }

    /// Cuts the grid into one cluster per SM (or `clusters`): redirect and
    /// agents. The others run one queue.
    pub const fn clusters_by_sm(self) -> bool {
        matches!(self, Binding::Redirect | Binding::Agents)
    }
}

impl fmt::Display for Binding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The indexing kinds as stored in a contract.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IndexingKind {
    /// `v = (z*Gy + y)*Gx + x`.
    RowMajor = 0,
    /// `v = (z*Gx + x)*Gy + y`.
    ColumnMajor = 1,
    /// Tiles of `width x height` CTAs (stored in the contract).
    Tile = 2,
    /// A user's bijection, compiled into the kernel.
    Custom = 3,
    /// Tiles of `width x height` CTAs enumerated down the grid first
    /// (column-major), CTAs column-major inside a tile: the raster along y.
    ColumnTile = 4,
    /// [`IndexingKind::Tile`] with every other band of tiles walked right to
    /// left (Sawtooth order): a band starts where the last one ended.
    Sawtooth = 5,
}

impl IndexingKind {
    /// The kind stored as `value` in a contract.
    pub const fn from_u32(value: u32) -> Option<Self> {
        match value {
            0 => Some(IndexingKind::RowMajor),
            1 => Some(IndexingKind::ColumnMajor),
            2 => Some(IndexingKind::Tile),
            3 => Some(IndexingKind::Custom),
            4 => Some(IndexingKind::ColumnTile),
            5 => Some(IndexingKind::Sawtooth),
            _ => None,
        }
    }

    /// The name written in the attribute (`indexing = row_major`).
    pub const fn name(self) -> &'static str {
        match self {
            IndexingKind::RowMajor => "row_major",
            IndexingKind::ColumnMajor => "column_major",
            IndexingKind::Tile => "tile",
            IndexingKind::Custom => "custom",
            IndexingKind::ColumnTile => "column_tile",
            IndexingKind::Sawtooth => "sawtooth",
        }
    }
}

/// Where the last rounds of a grid-stride loop go (`tail = ..`). Without
/// one, each block runs its own share to the end, and a loop of equal
/// shares waits for the block the warp schedulers served least.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tail {
    /// `tail = claims`: the looping blocks claim the last rounds from one
    /// counter, in claims sized by factoring (`run::strided_then_claimed`).
    Claims = 1,
    /// `tail = blocks`: the last rounds are blocks of one task each, which
    /// the hardware dispatches as the looping blocks leave
    /// (`run::strided_then_blocks`): no claims, no counter.
    Blocks = 2,
}

impl Tail {
    /// Every tail, in the order of their numbers.
    pub const ALL: [Tail; 2] = [Tail::Claims, Tail::Blocks];

    /// The name written in the attribute (`tail = claims`).
    pub const fn name(self) -> &'static str {
        match self {
            Tail::Claims => "claims",
            Tail::Blocks => "blocks",
        }
    }

    /// The tail written `name` in the attribute.
    pub fn from_name(name: &str) -> Option<Self> {
        Tail::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The tail stored as `value` in a contract (0: none).
    pub const fn from_u32(value: u32) -> Option<Self> {
        match value {
            1 => Some(Tail::Claims),
            2 => Some(Tail::Blocks),
            _ => None,
        }
    }
}

/// A schedule option that only some bindings take.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScheduleOption {
    /// `active = N`: default ACTIVE agents per SM.
    Active,
    /// `chunk = N`: tasks claimed per atomic.
    Chunk,
    /// `prefetch = hook`: called with the next task's CTA.
    Prefetch,
    /// `waves = N`: blocks per resident slot of a grid-stride loop.
    Waves,
    /// `prefetch_distance = N`: how many tasks ahead the hook looks.
    PrefetchDistance,
    /// `tail = claims` or `tail = blocks`: where a grid-stride loop's last
    /// rounds go.
    Tail,
}

impl ScheduleOption {
    /// The option's name in the attribute.
    pub const fn name(self) -> &'static str {
        match self {
            ScheduleOption::Active => "active",
            ScheduleOption::Chunk => "chunk",
            ScheduleOption::Prefetch => "prefetch",
            ScheduleOption::PrefetchDistance => "prefetch_distance",
            ScheduleOption::Waves => "waves",
            ScheduleOption::Tail => "tail",
        }
    }

    /// Whether a schedule with `binding` may set this option.
    pub const fn applies_to(self, binding: Binding) -> bool {
        match self {
            ScheduleOption::Active | ScheduleOption::Chunk => binding.claims_tasks(),
            // Only a persistent CTA knows the task it runs next.
            ScheduleOption::Prefetch => binding.is_persistent(),
            ScheduleOption::PrefetchDistance | ScheduleOption::Waves | ScheduleOption::Tail => {
                matches!(binding, Binding::Stride)
            }
        }
    }

    /// The bindings that take it, in words (for messages).
    pub const fn bindings(self) -> &'static str {
        match self {
            ScheduleOption::Active | ScheduleOption::Chunk => "`agents` or `persistent`",
            ScheduleOption::Prefetch => "`agents`, `persistent` or `stride`",
            ScheduleOption::PrefetchDistance | ScheduleOption::Waves | ScheduleOption::Tail => {
                "`stride`"
            }
        }
    }
}

/// Why a combination of schedule options is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionError {
    /// `option` does not apply to `binding`.
    WrongBinding {
        /// The option given.
        option: ScheduleOption,
        /// The schedule's binding.
        binding: Binding,
    },
    /// A claiming binding calls `prefetch` with the next task of the same
    /// chunk, so it needs `chunk >= 2`.
    PrefetchNeedsChunk,
    /// `prefetch_distance` without a `prefetch` hook.
    DistanceNeedsPrefetch,
    /// A count that must be at least 1 is 0.
    Zero {
        /// The option.
        option: ScheduleOption,
    },
}

impl OptionError {
    /// The option the error is about (where the macro points).
    pub const fn option(self) -> ScheduleOption {
        match self {
            OptionError::WrongBinding { option, .. } | OptionError::Zero { option } => option,
            OptionError::PrefetchNeedsChunk => ScheduleOption::Prefetch,
            OptionError::DistanceNeedsPrefetch => ScheduleOption::PrefetchDistance,
        }
    }
}

impl fmt::Display for OptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            OptionError::WrongBinding { option, binding } => write!(
                f,
                "`{}` applies to `binding = {}`, not `binding = {}`",
                option.name(),
                option.bindings(),
                binding.name()
            ),
            OptionError::PrefetchNeedsChunk => f.write_str(
                "`prefetch` is called with the next task of the same chunk: it needs `chunk = 2` or more",
            ),
            OptionError::DistanceNeedsPrefetch => {
                f.write_str("`prefetch_distance` needs a `prefetch` hook")
            }
            OptionError::Zero { option } => write!(f, "`{}` must be at least 1", option.name()),
        }
    }
}

/// A schedule's options, as far as their validity goes: `None` (or `false`)
/// where the schedule does not set one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// `binding = ..`.
    pub binding: Binding,
    /// `active = N`.
    pub active: Option<u32>,
    /// `chunk = N`.
    pub chunk: Option<u32>,
    /// `prefetch = hook` is given.
    pub prefetch: bool,
    /// `prefetch_distance = N`.
    pub prefetch_distance: Option<u32>,
    /// `waves = N`.
    pub waves: Option<u32>,
    /// `tail = ..`.
    pub tail: Option<Tail>,
}

impl Options {
    /// A schedule of `binding` with no option set.
    pub const fn new(binding: Binding) -> Self {
        Options {
            binding,
            active: None,
            chunk: None,
            prefetch: false,
            prefetch_distance: None,
            waves: None,
            tail: None,
        }
    }

    /// Every rule these options break, in the order of
    /// [`ScheduleOption`]'s variants. Empty: the schedule is valid.
    pub fn violations(&self) -> impl Iterator<Item = OptionError> {
        let binding = self.binding;
        let given = [
            (ScheduleOption::Active, self.active),
            (ScheduleOption::Chunk, self.chunk),
            (ScheduleOption::Prefetch, self.prefetch.then_some(1)),
            (ScheduleOption::Waves, self.waves),
            (ScheduleOption::PrefetchDistance, self.prefetch_distance),
            (ScheduleOption::Tail, self.tail.map(|t| t as u32)),
        ];
        let chunk = self.chunk.unwrap_or(1);
        let prefetch = self.prefetch;
        given.into_iter().filter_map(move |(option, value)| {
            let value = value?;
            if value == 0 {
                Some(OptionError::Zero { option })
            } else if !option.applies_to(binding) {
                Some(OptionError::WrongBinding { option, binding })
            } else if option == ScheduleOption::Prefetch && binding.claims_tasks() && chunk < 2 {
                Some(OptionError::PrefetchNeedsChunk)
            } else if option == ScheduleOption::PrefetchDistance && !prefetch {
                Some(OptionError::DistanceNeedsPrefetch)
            } else {
                None
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first(options: Options) -> Option<OptionError> {
        options.violations().next()
    }

    #[test]
    fn names_round_trip() {
        for binding in Binding::ALL {
            assert_eq!(Binding::from_name(binding.name()), Some(binding));
            assert_eq!(Binding::from_u32(binding as u32), Some(binding));
        }
        assert_eq!(Binding::from_name("agent"), None);
        assert_eq!(Binding::from_u32(5), None);
        for kind in 0..6 {
            assert_eq!(IndexingKind::from_u32(kind).map(|k| k as u32), Some(kind));
        }
        assert_eq!(IndexingKind::from_u32(6), None);
    }

    #[test]
    fn persistent_and_claiming_bindings_differ_by_stride() {
        assert!(Binding::Stride.is_persistent() && !Binding::Stride.claims_tasks());
        assert!(Binding::Agents.is_persistent() && Binding::Agents.claims_tasks());
        assert!(!Binding::Redirect.is_persistent());
    }

    #[test]
    fn options_go_with_their_bindings() {
        let with = |binding| Options::new(binding);
        assert_eq!(first(with(Binding::Agents)), None);
        let active_on_reorder = Options {
            active: Some(2),
            ..with(Binding::Reorder)
        };
        assert_eq!(
            first(active_on_reorder),
            Some(OptionError::WrongBinding {
                option: ScheduleOption::Active,
                binding: Binding::Reorder
            })
        );
        let chunk_on_stride = Options {
            chunk: Some(4),
            ..with(Binding::Stride)
        };
        assert!(first(chunk_on_stride).is_some());
        let waves_on_agents = Options {
            waves: Some(2),
            ..with(Binding::Agents)
        };
        assert!(first(waves_on_agents).is_some());
        let prefetch = |binding, chunk| Options {
            prefetch: true,
            chunk,
            ..with(binding)
        };
        assert_eq!(first(prefetch(Binding::Stride, None)), None);
        assert_eq!(
            first(prefetch(Binding::Persistent, None)),
            Some(OptionError::PrefetchNeedsChunk)
        );
        assert_eq!(first(prefetch(Binding::Persistent, Some(2))), None);
        assert!(first(prefetch(Binding::Redirect, None)).is_some());
        let distance = Options {
            prefetch_distance: Some(2),
            ..with(Binding::Stride)
        };
        assert_eq!(first(distance), Some(OptionError::DistanceNeedsPrefetch));
        let zero = Options {
            chunk: Some(0),
            ..with(Binding::Agents)
        };
        assert_eq!(
            first(zero),
            Some(OptionError::Zero {
                option: ScheduleOption::Chunk
            })
        );
    }
}
