//! Launch bounds: CUDA's `__launch_bounds__(maxThreadsPerBlock,
//! minBlocksPerMultiprocessor)`, written `#[launch_bounds(max_threads = T,
//! min_blocks_per_sm = B)]` on a kernel.
//!
//! They are a promise to ptxas about how the kernel is launched, which sets
//! the registers it may give a thread: without them ptxas keeps about 32
//! registers a thread so that a full SM of blocks fits, and a kernel with
//! fewer blocks than SMs then has few loads in flight (ATAX's column pass:
//! 64 blocks of 256 threads, 16 loads in flight per thread at 32 registers,
//! 32 at 80, 2.3x faster on an H100; docs/BENCHMARKS.md).
//!
//! `rustc` has no attribute for the PTX directives, so the macro stores the
//! bounds in a global, `__clustered_bounds_<entry>`, for the kernel and each
//! of its schedules, and `clustered-builder` writes `.maxntid T, 1, 1` and
//! `.minnctapersm B` into each entry of the PTX it builds.

use core::fmt;

/// Prefix of the global that holds an entry's [`LaunchBounds`]:
/// `__clustered_bounds_<entry>`.
pub const LAUNCH_BOUNDS_PREFIX: &str = "__clustered_bounds_";

/// A kernel's launch bounds, as the PTX global holds them.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaunchBounds {
    /// The most threads a block may have (`.maxntid`); a launch with more
    /// is refused.
    pub max_threads: u32,
    /// The fewest blocks of `max_threads` that must fit on one SM
    /// (`.minnctapersm`): ptxas keeps the registers a thread below
    /// `registers per SM / (min_blocks_per_sm * max_threads)`. 0: not given,
    /// ptxas chooses.
    pub min_blocks_per_sm: u32,
}

/// Why [`LaunchBounds::new`] refuses its arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoundsError {
    /// `max_threads` is 0 or over [`LaunchBounds::MAX_THREADS`].
    MaxThreads(u32),
    /// `min_blocks_per_sm` is over [`LaunchBounds::MAX_BLOCKS_PER_SM`].
    MinBlocks(u32),
    /// `min_blocks_per_sm` blocks of `max_threads` are more threads than
    /// an SM holds ([`LaunchBounds::MAX_THREADS_PER_SM`]): ptxas would
    /// budget registers for a residency no GPU reaches.
    OverAnSm {
        /// `max_threads`.
        max_threads: u32,
        /// `min_blocks_per_sm`.
        min_blocks_per_sm: u32,
    },
}

impl fmt::Display for BoundsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            BoundsError::MaxThreads(n) => write!(
                f,
                "`max_threads = {n}`: a block has 1 to {} threads",
                LaunchBounds::MAX_THREADS
            ),
            BoundsError::MinBlocks(n) => write!(
                f,
                "`min_blocks_per_sm = {n}`: an SM keeps at most {} blocks",
                LaunchBounds::MAX_BLOCKS_PER_SM
            ),
            BoundsError::OverAnSm {
                max_threads,
                min_blocks_per_sm,
            } => write!(
                f,
                "`min_blocks_per_sm = {min_blocks_per_sm}` blocks of `max_threads = {max_threads}` \
                 are {} threads, and an SM holds at most {}: ask for at most {} blocks",
                u64::from(min_blocks_per_sm) * u64::from(max_threads),
                LaunchBounds::MAX_THREADS_PER_SM,
                LaunchBounds::MAX_THREADS_PER_SM / max_threads
            ),
        }
    }
}

impl LaunchBounds {
    /// The most threads a block of any current GPU has.
    pub const MAX_THREADS: u32 = 1024;
    /// The most blocks any current GPU keeps on one SM (32 on sm_90).
    pub const MAX_BLOCKS_PER_SM: u32 = 32;
    /// The most threads any current GPU keeps on one SM (2048 on sm_90).
    pub const MAX_THREADS_PER_SM: u32 = 2048;

    /// Bounds of `max_threads` (1 to [`MAX_THREADS`](Self::MAX_THREADS))
    /// and `min_blocks_per_sm` (0, not given, to
    /// [`MAX_BLOCKS_PER_SM`](Self::MAX_BLOCKS_PER_SM)).
    pub const fn new(max_threads: u32, min_blocks_per_sm: u32) -> Result<Self, BoundsError> {
        if max_threads == 0 || max_threads > Self::MAX_THREADS {
            return Err(BoundsError::MaxThreads(max_threads));
        }
        if min_blocks_per_sm > Self::MAX_BLOCKS_PER_SM {
            return Err(BoundsError::MinBlocks(min_blocks_per_sm));
        }
        if min_blocks_per_sm as u64 * max_threads as u64 > Self::MAX_THREADS_PER_SM as u64 {
            return Err(BoundsError::OverAnSm {
                max_threads,
                min_blocks_per_sm,
            });
        }
        Ok(LaunchBounds {
            max_threads,
            min_blocks_per_sm,
        })
    }

    /// [`new`](Self::new) where it must hold at compile time: the macro's
    /// globals, whose arguments may be constants it cannot read. A refusal
    /// is a compile error ("evaluation of constant value failed") that
    /// names the rule.
    pub const fn checked(max_threads: u32, min_blocks_per_sm: u32) -> Self {
        match Self::new(max_threads, min_blocks_per_sm) {
            Ok(bounds) => bounds,
            Err(BoundsError::MaxThreads(_)) => {
                panic!("#[launch_bounds]: `max_threads` must be 1 to 1024")
            }
            Err(BoundsError::MinBlocks(_)) => {
                panic!("#[launch_bounds]: `min_blocks_per_sm` must be at most 32")
            }
            Err(BoundsError::OverAnSm { .. }) => panic!(
                "#[launch_bounds]: `min_blocks_per_sm` x `max_threads` must be at most 2048 threads, what an SM holds"
            ),
        }
    }

    /// The global's bytes as the PTX initialises it (little-endian `u32`s).
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        let word = |i: usize| -> Option<u32> {
            Some(u32::from_le_bytes(
                bytes.get(4 * i..4 * i + 4)?.try_into().ok()?,
            ))
        };
        if bytes.len() != core::mem::size_of::<Self>() {
            return None;
        }
        Self::new(word(0)?, word(1)?).ok()
    }
}

impl fmt::Display for LaunchBounds {
    /// The PTX performance directives, one per line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, ".maxntid {}, 1, 1", self.max_threads)?;
        if self.min_blocks_per_sm > 0 {
            write!(f, "\n.minnctapersm {}", self.min_blocks_per_sm)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::format;

    #[test]
    fn refuses_what_no_gpu_launches() {
        assert_eq!(LaunchBounds::new(0, 1), Err(BoundsError::MaxThreads(0)));
        assert_eq!(
            LaunchBounds::new(1025, 1),
            Err(BoundsError::MaxThreads(1025))
        );
        assert_eq!(LaunchBounds::new(256, 33), Err(BoundsError::MinBlocks(33)));
        assert_eq!(
            LaunchBounds::new(1024, 4),
            Err(BoundsError::OverAnSm {
                max_threads: 1024,
                min_blocks_per_sm: 4
            })
        );
        assert!(LaunchBounds::new(1024, 2).is_ok());
        assert!(LaunchBounds::new(64, 32).is_ok());
        assert!(LaunchBounds::new(1, 0).is_ok());
    }

    #[test]
    fn reads_the_globals_bytes() {
        let bytes = [0, 1, 0, 0, 2, 0, 0, 0];
        assert_eq!(
            LaunchBounds::from_bytes(&bytes),
            Some(LaunchBounds {
                max_threads: 256,
                min_blocks_per_sm: 2
            })
        );
        assert_eq!(LaunchBounds::from_bytes(&bytes[..4]), None);
        assert_eq!(LaunchBounds::from_bytes(&[0; 8]), None, "0 threads");
    }

    #[test]
    fn writes_the_ptx_directives() {
        let bounds = LaunchBounds::new(256, 1).unwrap();
        assert_eq!(
            format!("{bounds}").as_str(),
            ".maxntid 256, 1, 1\n.minnctapersm 1"
        );
        let bounds = LaunchBounds::new(128, 0).unwrap();
        assert_eq!(format!("{bounds}").as_str(), ".maxntid 128, 1, 1");
    }
}
