//! The launch contract between a clustered kernel and the host.
//!
//! Defined once, here, in a crate that compiles for both sides, so the layout
//! cannot drift. A clustered kernel takes a [`ClusterLaunch`] by value as its
//! last parameter, and its PTX carries a [`KernelContract`] (a global named
//! `__clustered_contract_<kernel>`) that the host reads and checks before every launch.
//! Bump [`ABI_VERSION`] on any change to these types.

use crate::mapping::{grid_size, Delinearize, FastDiv, Grid, Indexing, MappingError, Partition};

/// The version of the launch contract. 3: the agents' scratch ends with
/// marks of drained clusters and their count ([`scratch_words`]); 4: the
/// contract records a claimed tail; 5: the contract records either tail
/// ([`KernelContract::tail`]), and the launch a loop's blocks and where
/// its tail starts ([`ClusterLaunch::looping_blocks`]).
pub const ABI_VERSION: u32 = 5;

/// "CLST": marks a contract global, so a stray symbol is never mistaken for one.
pub const CONTRACT_MAGIC: u32 = u32::from_le_bytes(*b"CLST");

pub use clustered_abi::{
    access, ptx, Binding, BoundsError, IndexingKind, LaunchBounds, OptionError, Options,
    ScheduleOption, Tail, BASELINE_LINK_PREFIX, CONTRACT_PREFIX, LAUNCH_BOUNDS_PREFIX,
};

/// The indexing kinds as stored in a contract.
pub mod indexing_kind {
    use super::IndexingKind;
    /// [`IndexingKind::RowMajor`].
    pub const ROW_MAJOR: u32 = IndexingKind::RowMajor as u32;
    /// [`IndexingKind::ColumnMajor`].
    pub const COLUMN_MAJOR: u32 = IndexingKind::ColumnMajor as u32;
    /// [`IndexingKind::Tile`].
    pub const TILE: u32 = IndexingKind::Tile as u32;
    /// [`IndexingKind::Custom`].
    pub const CUSTOM: u32 = IndexingKind::Custom as u32;
    /// [`IndexingKind::ColumnTile`].
    pub const COLUMN_TILE: u32 = IndexingKind::ColumnTile as u32;
    /// [`IndexingKind::Sawtooth`].
    pub const SAWTOOTH: u32 = IndexingKind::Sawtooth as u32;
}

/// What a clustered kernel tells the host about itself, fixed at compile time.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelContract {
    /// [`CONTRACT_MAGIC`].
    pub magic: u32,
    /// [`ABI_VERSION`] of the runtime the kernel was built with.
    pub abi_version: u32,
    /// A [`Binding`] as `u32`.
    pub binding: u32,
    /// One of [`indexing_kind`].
    pub indexing: u32,
    /// Tile width and height for [`indexing_kind::TILE`], else 0.
    pub tile: [u32; 2],
    /// Agents: tasks claimed per atomic.
    pub chunk: u32,
    /// Agents: default ACTIVE agents per SM from the attribute (0: all).
    pub default_active: u32,
    /// Size of [`ClusterLaunch`] as the kernel sees it.
    pub launch_size: u32,
    /// Stride: blocks launched per resident block slot (0 or 1: one wave).
    pub waves: u32,
    /// Stride: where the loop's last rounds go, a [`Tail`] as `u32` (0: each
    /// block runs its own share to the end).
    pub tail: u32,
}

impl KernelContract {
    /// The contract of a kernel with these options.
    pub const fn new(
        binding: Binding,
        indexing: u32,
        tile: [u32; 2],
        chunk: u32,
        default_active: u32,
    ) -> Self {
        KernelContract {
            magic: CONTRACT_MAGIC,
            abi_version: ABI_VERSION,
            binding: binding as u32,
            indexing,
            tile,
            chunk,
            default_active,
            launch_size: core::mem::size_of::<ClusterLaunch>() as u32,
            waves: 1,
            tail: 0,
        }
    }

    /// The same contract launching `waves` blocks per resident block slot
    /// (`binding = stride`): blocks that finish early are replaced by the
    /// hardware, which evens out warps that the scheduler favours.
    pub const fn with_waves(mut self, waves: u32) -> Self {
        self.waves = waves;
        self
    }

    /// The same contract for a grid-stride loop whose last rounds go to
    /// `tail`: claimed (`run::strided_then_claimed`; the launch is the same,
    /// what runs per block is not, and the predictor counts its claims) or
    /// run as blocks of their own (`run::strided_then_blocks`; the host
    /// launches them after the looping blocks).
    pub const fn with_tail(mut self, tail: Tail) -> Self {
        self.tail = tail as u32;
        self
    }

    /// Where this contract's grid-stride loop puts its last rounds.
    pub const fn tail(&self) -> Option<Tail> {
        Tail::from_u32(self.tail)
    }

    /// The options this contract records, for [`Options::violations`]
    /// (defaults read as "not set"; `prefetch` is not recorded), or `None`
    /// where a binding or tail is not one of ours.
    pub fn options(&self) -> Option<Options> {
        Some(Options {
            binding: Binding::from_u32(self.binding)?,
            active: (self.default_active != 0).then_some(self.default_active),
            chunk: (self.chunk != 1).then_some(self.chunk),
            prefetch: false,
            prefetch_distance: None,
            waves: (self.waves != 1).then_some(self.waves),
            // A value no tail has is no contract `#[clustered]` made.
            tail: match self.tail {
                0 => None,
                value => Some(Tail::from_u32(value)?),
            },
        })
    }

    /// The indexing this contract fixes, or `None` for a custom one.
    pub fn indexing(&self) -> Option<Indexing> {
        match self.indexing {
            indexing_kind::ROW_MAJOR => Some(Indexing::RowMajor),
            indexing_kind::COLUMN_MAJOR => Some(Indexing::ColumnMajor),
            indexing_kind::TILE => Some(Indexing::Tile {
                width: self.tile[0],
                height: self.tile[1],
            }),
            indexing_kind::COLUMN_TILE => Some(Indexing::ColumnTile {
                width: self.tile[0],
                height: self.tile[1],
            }),
            indexing_kind::SAWTOOTH => Some(Indexing::Sawtooth {
                width: self.tile[0],
                height: self.tile[1],
            }),
            _ => None,
        }
    }
}

/// Words of scratch memory per launch: an arrival counter per SM slot, a
/// task counter per cluster, a bit per cluster set once an agent found it
/// drained, and the count of those bits
/// (`schedule::TaskCounters::mark_drained`). Zeroed by the host before
/// every launch.
pub const fn scratch_words(sm_slots: u32, clusters: u32) -> usize {
    sm_slots as usize + clusters as usize + clusters.div_ceil(32) as usize + 1
}

/// Whether [`ClusterLaunch`] is its fields' bytes and nothing else: six
/// `u32`s, a `Partition` (four `u32`s), a `FastDiv` (`u32`, `u32` padding
/// field, `u64`), a `Delinearize` (eight `u32`s, six `FastDiv`s) and a `u64`.
const NO_PADDING: bool = {
    use crate::mapping::{Delinearize, FastDiv, Partition};
    use core::mem::size_of;
    size_of::<FastDiv>() == 16
        && size_of::<Partition>() == 16
        && size_of::<Delinearize>() == 8 * 4 + 6 * size_of::<FastDiv>()
        && size_of::<ClusterLaunch>()
            == 6 * 4 + size_of::<Partition>() + size_of::<FastDiv>() + size_of::<Delinearize>() + 8
};

/// The extra kernel parameter of a clustered kernel, passed by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClusterLaunch {
    /// [`ABI_VERSION`]; the kernel traps on a mismatch.
    pub abi_version: u32,
    /// Agents: how many agents per SM run tasks (ACTIVE); the others exit.
    pub active_agents: u32,
    /// Agents: arrival counters in `scratch[..sm_slots]`, indexed by SM id
    /// modulo `sm_slots`.
    pub sm_slots: u32,
    /// Agents: tasks per claim when the host sized claims to the work
    /// (fewer tasks than `chunk` x working agents); 0 or above the
    /// contract's `chunk`: the contract's.
    pub claim_chunk: u32,
    /// Stride with `tail = blocks`: the blocks that loop over the first
    /// [`ClusterLaunch::tail_start`] tasks; each block after them runs one
    /// task of the tail. 0 for every other schedule.
    pub looping_blocks: u32,
    /// Stride with `tail = blocks`: the first task of the tail (the host's
    /// `schedule::tail_start`), else 0.
    pub tail_start: u32,
    /// The original grid cut into clusters.
    pub partition: Partition,
    /// `M`, for the round-robin binding's `u / M`.
    pub clusters: FastDiv,
    /// `v -> (x, y, z)` in the original grid.
    pub delinearize: Delinearize,
    /// Agents: [`scratch_words`] zeroed `u32`s, private to this launch.
    pub scratch: u64,
}

impl ClusterLaunch {
    /// Launch parameters of the kernel whose contract is `contract`, for
    /// `grid` numbered by `indexing` and cut into `clusters` clusters.
    /// `indexing` is the contract's ([`KernelContract::indexing`]), or one of
    /// its kind with another tile (a raster's band): the kernel is compiled
    /// for its kind ([`Delinearize::cta_as`]) and would run another's CTAs
    /// wrongly, so another kind is [`MappingError::WrongKind`]. A custom
    /// indexing maps its CTAs itself and takes any.
    pub fn new(
        contract: &KernelContract,
        indexing: Indexing,
        grid: Grid,
        clusters: u32,
    ) -> Result<Self, MappingError> {
        if contract.indexing != indexing_kind::CUSTOM && contract.indexing != indexing.kind() {
            return Err(MappingError::WrongKind {
                contract: contract.indexing,
                launch: indexing.kind(),
            });
        }
        let delinearize = Delinearize::new(indexing, grid)?;
        let total = grid_size(grid).ok_or(MappingError::GridTooLarge)?;
        let partition = Partition::new(total, clusters).ok_or(MappingError::NoClusters)?;
        Ok(ClusterLaunch {
            abi_version: ABI_VERSION,
            active_agents: 0,
            sm_slots: 0,
            claim_chunk: 0,
            looping_blocks: 0,
            tail_start: 0,
            partition,
            clusters: FastDiv::new(clusters).ok_or(MappingError::NoClusters)?,
            delinearize,
            scratch: 0,
        })
    }

    /// The tasks per claim for a kernel whose contract says `chunk`.
    #[inline(always)]
    pub fn claim_chunk(&self, chunk: u32) -> u32 {
        if self.claim_chunk != 0 && self.claim_chunk < chunk {
            self.claim_chunk
        } else {
            chunk
        }
    }

    /// The parameter's bytes, as the kernel receives them (little-endian,
    /// `repr(C)`): for tools that read what the kernel reads from its
    /// `.param` space (the time predictor folds the scheduler's branches
    /// with them).
    pub fn to_bytes(&self) -> [u8; core::mem::size_of::<ClusterLaunch>()] {
        // SAFETY: every field is an integer or an array or struct of them
        // with explicit padding fields (`FastDiv::_pad`), so all bytes are
        // initialized; NO_PADDING checks that at compile time.
        const { assert!(NO_PADDING) };
        unsafe {
            core::mem::transmute::<ClusterLaunch, [u8; core::mem::size_of::<ClusterLaunch>()]>(
                *self,
            )
        }
    }

    /// Sets the agents' fields: ACTIVE per SM and the scratch buffer of
    /// `scratch_words(sm_slots, clusters)` zeroed words.
    pub fn with_agents(mut self, active_agents: u32, sm_slots: u32, scratch: u64) -> Self {
        self.active_agents = active_agents;
        self.sm_slots = sm_slots;
        self.scratch = scratch;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mapping::Indexing;

    /// The bytes are the fields at their `repr(C)` offsets: what a tool
    /// reading `[param+offset]` in the PTX finds there.
    #[test]
    fn the_parameters_bytes_are_its_fields_at_their_offsets() {
        use core::mem::offset_of;
        let tile = Indexing::Tile {
            width: 1,
            height: 8,
        };
        let contract = KernelContract::new(Binding::Agents, indexing_kind::TILE, [1, 8], 4, 0);
        let launch = ClusterLaunch::new(&contract, tile, [64, 32, 1], 132)
            .unwrap()
            .with_agents(3, 132, 0x1122_3344_5566_7788);
        let bytes = launch.to_bytes();
        let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        assert_eq!(word(offset_of!(ClusterLaunch, abi_version)), ABI_VERSION);
        assert_eq!(word(offset_of!(ClusterLaunch, active_agents)), 3);
        assert_eq!(word(offset_of!(ClusterLaunch, partition)), 64 * 32);
        let scratch = offset_of!(ClusterLaunch, scratch);
        assert_eq!(
            u64::from_le_bytes(bytes[scratch..scratch + 8].try_into().unwrap()),
            0x1122_3344_5566_7788
        );
        // The indexing kind leads the Delinearize: 2, tiles.
        assert_eq!(word(offset_of!(ClusterLaunch, delinearize)), 2);
    }

    /// A launch maps CTAs with its contract's indexing kind, whatever the
    /// tile: the kernel is compiled for that kind.
    #[test]
    fn a_launch_takes_its_indexing_kind_from_the_contract() {
        let tile = |height| Indexing::Tile { width: 1, height };
        let tiled = KernelContract::new(Binding::Redirect, indexing_kind::TILE, [1, 8], 1, 0);
        let grid = [64, 32, 1];
        // A raster's band: the same kind, another tile.
        assert!(ClusterLaunch::new(&tiled, tile(4), grid, 132).is_ok());
        for other in [
            Indexing::RowMajor,
            Indexing::ColumnMajor,
            Indexing::ColumnTile {
                width: 4,
                height: 1,
            },
            Indexing::Sawtooth {
                width: 1,
                height: 8,
            },
        ] {
            assert_eq!(
                ClusterLaunch::new(&tiled, other, grid, 132),
                Err(MappingError::WrongKind {
                    contract: indexing_kind::TILE,
                    launch: other.kind(),
                }),
                "{other:?}"
            );
        }
        let custom = KernelContract::new(Binding::Redirect, indexing_kind::CUSTOM, [0, 0], 1, 0);
        assert!(ClusterLaunch::new(&custom, Indexing::RowMajor, grid, 132).is_ok());
    }
}
