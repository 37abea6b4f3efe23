//! A GPU's memory-system figures: cache geometries and the per-SM limits that
//! decide how many CTAs (thread blocks) run on one SM at once.
//!
//! The simulator runs a kernel on a handful of simulated SMs on the CPU, so a
//! profile describes a real GPU ([`DeviceProfile::h100_sxm`],
//! [`DeviceProfile::h200`]) and can be shrunk to fewer SMs with
//! [`DeviceProfile::scaled`], which keeps every per-SM figure and the L2 bytes
//! per SM.
//!
//! # Where the figures come from
//!
//! Published by NVIDIA (the "NVIDIA H100 Tensor Core GPU Architecture"
//! whitepaper, and the CUDA C++ Programming Guide, table "Technical
//! Specifications per Compute Capability", column 9.0, and its section on
//! compute capability 9.0 shared memory):
//! - 132 SMs on H100 SXM5 (whitepaper);
//! - 50 MB of L2 on H100 SXM5 (whitepaper), which `cudaDeviceProp::l2CacheSize`
//!   reports as 52 428 800 bytes;
//! - 256 KB of combined L1 data cache and shared memory per SM (whitepaper);
//! - up to 228 KB of shared memory per SM, 227 KB per block, the missing 1 KB
//!   per block being reserved for the system (`reservedSharedMemPerBlock`),
//!   and the shared memory carve-outs 0, 8, 16, 32, 64, 100, 132, 164, 196 and
//!   228 KB (programming guide);
//! - 2048 threads, 32 resident blocks and 64 warps per SM, 1024 threads per
//!   block (programming guide, compute capability 9.0);
//! - 128-byte cache lines made of four 32-byte sectors, the unit in which L1
//!   and L2 move data (CUDA Best Practices Guide, Nsight Compute's memory
//!   tables).
//!
//! From NVIDIA's tools rather than its documents:
//! - H200: the same GH100 chip with 132 SMs; its L2 is reported by
//!   `cudaDeviceProp::l2CacheSize` as 62 914 560 bytes (60 MiB);
//! - shared memory is allocated per block in units of 128 bytes on compute
//!   capability 8.x and 9.0 (the CUDA occupancy calculator, `cuda_occupancy.h`).
//!
//! **Not published: our assumptions.**
//! - *L1 data capacity.* The L1 gets what the shared memory carve-out leaves
//!   of the 256 KB, and the driver picks the carve-out per kernel, unseen. The
//!   profiles assume the 100 KB carve-out ([`DEFAULT_SHARED_CARVEOUT_BYTES`]),
//!   a middle one of the published steps that fits the shared tiles of the
//!   suite's kernels: 256 - 100 = 156 KB of L1, exactly 78 sets of 16 ways of
//!   128 bytes. A caller that knows its kernel's shared memory picks another
//!   with [`DeviceProfile::with_shared_carveout`].
//! - *L1 associativity and replacement.* Unpublished. Third-party
//!   microbenchmarks (Accel-Sim's `l1_assoc`) find only 4 sets since Kepler,
//!   that is, a nearly fully associative L1. We model 16 ways with a hashed
//!   set index (see `SetIndexing` in the cache module), which behaves close to
//!   fully associative for the strided patterns of GPU kernels while a lookup
//!   stays a scan of 16 tags; replacement is LRU.
//! - *L2 associativity and replacement.* Unpublished; we take 16 ways, LRU,
//!   hashed set index.
//! - *L2 partitions.* H100's L2 is two partitions, each caching for the SMs of
//!   the GPCs wired to it, with data crossing between them at a cost. We model
//!   one unified L2 of the total size.
//! - *Registers* do not limit [`DeviceProfile::resident_blocks`]: the
//!   simulator has no register counts.

use std::fmt;

/// One kibibyte, the "KB" of NVIDIA's documents.
const KIB: u32 = 1024;

/// Threads per warp on every NVIDIA GPU so far.
pub const WARP_SIZE: u32 = 32;

/// The shared memory carve-out the profiles assume (see the module doc): 100 KB,
/// leaving 156 KB of the 256 KB to the L1 data cache.
pub const DEFAULT_SHARED_CARVEOUT_BYTES: u32 = 100 * KIB;

/// Shared memory carve-outs that compute capability 9.0 supports, in bytes
/// (CUDA C++ Programming Guide, compute capability 9.0, shared memory).
pub const SHARED_CARVEOUTS_BYTES: [u32; 10] = [
    0,
    8 * KIB,
    16 * KIB,
    32 * KIB,
    64 * KIB,
    100 * KIB,
    132 * KIB,
    164 * KIB,
    196 * KIB,
    228 * KIB,
];

/// Geometry of one cache.
///
/// The cache holds `bytes / (line_bytes * ways)` sets (rounded down: a
/// partial set is no set); each set holds `ways` lines of `line_bytes`, each
/// line split into sectors of `sector_bytes` that are filled one by one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CacheGeometry {
    /// Capacity in bytes.
    pub bytes: u64,
    /// Bytes per line, the unit of a tag: 128 on NVIDIA GPUs.
    pub line_bytes: u32,
    /// Bytes per sector, the unit of a fill: 32 on NVIDIA GPUs.
    pub sector_bytes: u32,
    /// Lines per set (associativity).
    pub ways: u32,
}

impl CacheGeometry {
    /// Line size of NVIDIA's L1 and L2.
    pub const LINE_BYTES: u32 = 128;
    /// Sector size of NVIDIA's L1 and L2.
    pub const SECTOR_BYTES: u32 = 32;
    /// The most sectors a line may have (the model keeps one byte of sector
    /// bits per line).
    pub const MAX_SECTORS_PER_LINE: u32 = 8;

    /// A cache of `sets` sets of `ways` 128-byte lines of 32-byte sectors.
    pub fn with_sets(sets: u64, ways: u32) -> Self {
        let line_bytes = Self::LINE_BYTES;
        Self {
            bytes: sets * u64::from(line_bytes) * u64::from(ways),
            line_bytes,
            sector_bytes: Self::SECTOR_BYTES,
            ways,
        }
    }

    /// The largest cache of whole sets of `ways` 128-byte lines that fits in
    /// `bytes`.
    pub fn whole_sets_within(bytes: u64, ways: u32) -> Self {
        let set_bytes = u64::from(Self::LINE_BYTES) * u64::from(ways.max(1));
        Self::with_sets(bytes / set_bytes, ways)
    }

    /// Bytes of one set: `line_bytes * ways`.
    pub fn set_bytes(&self) -> u64 {
        u64::from(self.line_bytes) * u64::from(self.ways)
    }

    /// Number of sets (whole sets only).
    pub fn sets(&self) -> u64 {
        match self.set_bytes() {
            0 => 0,
            set_bytes => self.bytes / set_bytes,
        }
    }

    /// Sectors per line.
    pub fn sectors_per_line(&self) -> u32 {
        match self.sector_bytes {
            0 => 0,
            sector_bytes => self.line_bytes / sector_bytes,
        }
    }

    /// Checks what the cache model relies on: power-of-two line and sector
    /// sizes, sectors of at least 2 bytes, at most [`Self::MAX_SECTORS_PER_LINE`] sectors per line, at
    /// least one way and one whole set. `cache` names the cache in the error.
    pub fn validate(&self, cache: &'static str) -> Result<(), ProfileError> {
        let invalid = |reason| Err(ProfileError::InvalidGeometry { cache, reason });
        if !self.line_bytes.is_power_of_two() || !self.sector_bytes.is_power_of_two() {
            return invalid("line and sector sizes must be powers of two");
        }
        if self.sector_bytes < 2 {
            // Sector and line numbers must stay below u64::MAX, a sentinel.
            return invalid("sectors of at least 2 bytes");
        }
        if self.sector_bytes > self.line_bytes {
            return invalid("a sector cannot be larger than a line");
        }
        if self.sectors_per_line() > Self::MAX_SECTORS_PER_LINE {
            return invalid("at most 8 sectors per line");
        }
        if self.ways == 0 {
            return invalid("at least one way");
        }
        if self.sets() == 0 {
            return invalid("smaller than one set (line_bytes * ways)");
        }
        Ok(())
    }
}

/// Why a profile could not be derived, or a geometry is unusable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProfileError {
    /// [`DeviceProfile::scaled`] to 0 SMs.
    NoSms,
    /// [`DeviceProfile::scaled`] to more SMs than the GPU has.
    TooManySms {
        /// SMs asked for.
        requested: u32,
        /// SMs the GPU has.
        available: u32,
    },
    /// [`DeviceProfile::with_shared_carveout`] with more shared memory than an
    /// SM offers.
    CarveoutTooLarge {
        /// Bytes asked for.
        requested: u32,
        /// Most shared bytes per SM.
        available: u32,
    },
    /// A cache geometry the model cannot simulate.
    InvalidGeometry {
        /// Which cache ("L1", "L2", ...).
        cache: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
}

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoSms => write!(f, "a simulated GPU needs at least one SM"),
            Self::TooManySms { requested, available } => write!(
                f,
                "cannot scale to {requested} SMs: the GPU has only {available}"
            ),
            Self::CarveoutTooLarge { requested, available } => write!(
                f,
                "a shared memory carve-out of {requested} bytes exceeds the {available} bytes an SM offers"
            ),
            Self::InvalidGeometry { cache, reason } => {
                write!(f, "invalid {cache} geometry: {reason}")
            }
        }
    }
}

impl std::error::Error for ProfileError {}

/// A GPU's memory-system figures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceProfile {
    /// Human-readable name, such as "H100 SXM".
    pub name: String,
    /// Number of SMs.
    pub sm_count: u32,
    /// The L1 data cache of one SM (each SM has its own).
    pub l1: CacheGeometry,
    /// The L2, shared by all SMs.
    pub l2: CacheGeometry,
    /// Most resident threads per SM.
    pub max_threads_per_sm: u32,
    /// Most resident blocks per SM.
    pub max_blocks_per_sm: u32,
    /// Most shared memory per SM, in bytes (the largest carve-out).
    pub shared_bytes_per_sm: u32,
    /// Most shared memory one block may use, in bytes.
    pub max_shared_bytes_per_block: u32,
    /// Most threads per block.
    pub max_threads_per_block: u32,
    /// Bytes of the combined L1 data cache and shared memory per SM, split by
    /// the carve-out.
    pub combined_l1_shared_bytes_per_sm: u32,
    /// Shared memory the system reserves for every resident block, in bytes.
    pub reserved_shared_bytes_per_block: u32,
    /// Unit in which shared memory is allocated to a block, in bytes.
    pub shared_allocation_bytes: u32,
}

/// Names accepted by [`DeviceProfile::by_name`].
const PROFILE_NAMES: [&str; 3] = ["h100", "h100-sxm", "h200"];

/// Associativity the profiles assume for L1 and L2 (unpublished; see the
/// module doc).
const ASSUMED_WAYS: u32 = 16;

impl DeviceProfile {
    /// NVIDIA H100 SXM5 (compute capability 9.0). See the module doc for the
    /// source of each figure and for which are assumptions.
    pub fn h100_sxm() -> Self {
        let combined = 256 * KIB;
        Self {
            name: "H100 SXM".to_string(),
            sm_count: 132,
            l1: CacheGeometry::whole_sets_within(
                u64::from(combined - DEFAULT_SHARED_CARVEOUT_BYTES),
                ASSUMED_WAYS,
            ),
            l2: CacheGeometry::whole_sets_within(52_428_800, ASSUMED_WAYS),
            max_threads_per_sm: 2048,
            max_blocks_per_sm: 32,
            shared_bytes_per_sm: 228 * KIB,
            max_shared_bytes_per_block: 227 * KIB,
            max_threads_per_block: 1024,
            combined_l1_shared_bytes_per_sm: combined,
            reserved_shared_bytes_per_block: KIB,
            shared_allocation_bytes: 128,
        }
    }

    /// NVIDIA H200: the H100 SXM's SMs with a 60 MiB L2 (62 914 560 bytes as
    /// `cudaDeviceProp` reports it).
    pub fn h200() -> Self {
        Self {
            name: "H200".to_string(),
            l2: CacheGeometry::whole_sets_within(62_914_560, ASSUMED_WAYS),
            ..Self::h100_sxm()
        }
    }

    /// The profile called `name` (one of [`Self::names`], any case), or
    /// `None`.
    pub fn by_name(name: &str) -> Option<Self> {
        match name.trim().to_ascii_lowercase().as_str() {
            "h100" | "h100-sxm" => Some(Self::h100_sxm()),
            "h200" => Some(Self::h200()),
            _ => None,
        }
    }

    /// The names [`Self::by_name`] accepts.
    pub fn names() -> &'static [&'static str] {
        &PROFILE_NAMES
    }

    /// The same GPU with `sms` SMs, for a simulation sized for a CPU.
    ///
    /// Per-SM figures (L1, limits) stay; the L2 shrinks by `sms / sm_count`
    /// so that the L2 bytes per SM stay the same, rounded to the nearest whole
    /// set (at least one). The name gets the suffix " (scaled to N SMs)".
    /// `sms == sm_count` returns the profile unchanged.
    pub fn scaled(&self, sms: u32) -> Result<Self, ProfileError> {
        if sms == 0 {
            return Err(ProfileError::NoSms);
        }
        if sms > self.sm_count {
            return Err(ProfileError::TooManySms {
                requested: sms,
                available: self.sm_count,
            });
        }
        if sms == self.sm_count {
            return Ok(self.clone());
        }
        let full_sets = self.l2.sets();
        let total_sms = u64::from(self.sm_count);
        // Round half up: (a * b + c / 2) / c, in integers.
        let sets = (2 * full_sets * u64::from(sms) + total_sms) / (2 * total_sms);
        let l2 = CacheGeometry {
            bytes: sets.max(1) * self.l2.set_bytes(),
            ..self.l2
        };
        let base_name = match self.name.find(" (scaled to ") {
            Some(end) => &self.name[..end],
            None => &self.name,
        };
        Ok(Self {
            name: format!("{base_name} (scaled to {sms} SMs)"),
            sm_count: sms,
            l2,
            ..self.clone()
        })
    }

    /// The same GPU with `carveout_bytes` of each SM's combined 256 KB given
    /// to shared memory: the L1 gets the rest, rounded down to whole sets of
    /// the same associativity. The hardware supports only the steps in
    /// [`SHARED_CARVEOUTS_BYTES`]; others are accepted for experiments.
    pub fn with_shared_carveout(&self, carveout_bytes: u32) -> Result<Self, ProfileError> {
        if carveout_bytes > self.shared_bytes_per_sm {
            return Err(ProfileError::CarveoutTooLarge {
                requested: carveout_bytes,
                available: self.shared_bytes_per_sm,
            });
        }
        let l1_bytes = u64::from(self.combined_l1_shared_bytes_per_sm - carveout_bytes);
        let sets = l1_bytes / self.l1.set_bytes().max(1);
        Ok(Self {
            l1: CacheGeometry {
                bytes: sets * self.l1.set_bytes(),
                ..self.l1
            },
            ..self.clone()
        })
    }

    /// Resident CTAs per SM for a block of `threads` threads using
    /// `shared_bytes` of shared memory (static plus dynamic): the least of the
    /// thread limit (threads rounded up to whole warps), the block limit and
    /// the shared memory limit (each block also takes the system's reserved
    /// shared memory, rounded up to the allocation unit). 0 if such a block
    /// cannot run at all (no threads, too many threads or too much shared
    /// memory for one block). Registers are not modelled.
    pub fn resident_blocks(&self, threads: u32, shared_bytes: u32) -> u32 {
        if threads == 0
            || threads > self.max_threads_per_block
            || shared_bytes > self.max_shared_bytes_per_block
        {
            return 0;
        }
        let threads_per_block = threads.div_ceil(WARP_SIZE) * WARP_SIZE;
        let by_threads = self.max_threads_per_sm / threads_per_block;
        let allocated = round_up(
            shared_bytes + self.reserved_shared_bytes_per_block,
            self.shared_allocation_bytes,
        );
        let by_shared = match allocated {
            0 => u32::MAX,
            allocated => self.shared_bytes_per_sm / allocated,
        };
        by_threads.min(self.max_blocks_per_sm).min(by_shared)
    }
}

/// `value` rounded up to a multiple of `unit` (`unit` 0 means no rounding).
fn round_up(value: u32, unit: u32) -> u32 {
    match unit {
        0 => value,
        unit => value.div_ceil(unit) * unit,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn h100_figures() {
        let h100 = DeviceProfile::h100_sxm();
        assert_eq!(h100.sm_count, 132);
        assert_eq!(h100.l2.bytes, 52_428_800);
        assert_eq!(h100.l2.sets(), 25_600);
        assert_eq!(h100.l1.bytes, 156 * 1024);
        assert_eq!(h100.l1.sets(), 78);
        assert_eq!(h100.l1.sectors_per_line(), 4);
        assert!(h100.l1.validate("L1").is_ok());
        assert!(h100.l2.validate("L2").is_ok());
    }

    #[test]
    fn h200_differs_only_in_l2_and_name() {
        let h200 = DeviceProfile::h200();
        assert_eq!(h200.l2.bytes, 62_914_560);
        let h100 = DeviceProfile::h100_sxm();
        assert_eq!(
            DeviceProfile {
                name: h100.name.clone(),
                l2: h100.l2,
                ..h200
            },
            h100
        );
    }

    #[test]
    fn names_resolve_in_any_case() {
        for name in DeviceProfile::names() {
            assert!(DeviceProfile::by_name(name).is_some(), "{name}");
            assert!(
                DeviceProfile::by_name(&name.to_uppercase()).is_some(),
                "{name}"
            );
        }
        assert_eq!(DeviceProfile::by_name("H100-SXM").unwrap().name, "H100 SXM");
        assert_eq!(DeviceProfile::by_name("h200").unwrap().name, "H200");
        assert!(DeviceProfile::by_name("a100").is_none());
    }

    #[test]
    fn scaled_keeps_l2_bytes_per_sm_in_whole_sets() {
        let h100 = DeviceProfile::h100_sxm();
        let small = h100.scaled(8).unwrap();
        // 25 600 sets * 8 / 132 = 1551.5..., rounded to 1552 sets of 2 KiB.
        assert_eq!(small.l2.sets(), 1552);
        assert_eq!(small.l2.bytes, 1552 * 2048);
        assert_eq!(small.l2.bytes % small.l2.set_bytes(), 0);
        assert_eq!(small.sm_count, 8);
        assert_eq!(small.l1, h100.l1);
        assert_eq!(small.max_threads_per_sm, h100.max_threads_per_sm);
        assert_eq!(small.name, "H100 SXM (scaled to 8 SMs)");
        // Scaling again keeps one suffix.
        assert_eq!(small.scaled(2).unwrap().name, "H100 SXM (scaled to 2 SMs)");
        // 25 600 / 132 = 193.9 sets: one SM gets 194.
        assert_eq!(h100.scaled(1).unwrap().l2.sets(), 194);
        assert_eq!(h100.scaled(132).unwrap(), h100);
        // H200: 30 720 * 8 / 132 = 1861.8 -> 1862.
        assert_eq!(DeviceProfile::h200().scaled(8).unwrap().l2.sets(), 1862);
    }

    #[test]
    fn scaled_rejects_zero_and_too_many_sms() {
        let h100 = DeviceProfile::h100_sxm();
        assert_eq!(h100.scaled(0), Err(ProfileError::NoSms));
        assert_eq!(
            h100.scaled(133),
            Err(ProfileError::TooManySms {
                requested: 133,
                available: 132
            })
        );
        assert!(h100.scaled(133).unwrap_err().to_string().contains("133"));
    }

    #[test]
    fn carveout_sets_the_l1_size() {
        let h100 = DeviceProfile::h100_sxm();
        assert_eq!(
            h100.with_shared_carveout(228 * 1024).unwrap().l1.bytes,
            28 * 1024
        );
        assert_eq!(h100.with_shared_carveout(0).unwrap().l1.bytes, 256 * 1024);
        // 256 - 8 = 248 KB is 124 whole sets; 1000 bytes more rounds down.
        assert_eq!(
            h100.with_shared_carveout(8 * 1024 + 1000)
                .unwrap()
                .l1
                .sets(),
            123
        );
        assert!(matches!(
            h100.with_shared_carveout(229 * 1024),
            Err(ProfileError::CarveoutTooLarge { .. })
        ));
        for carveout in SHARED_CARVEOUTS_BYTES {
            let l1 = h100.with_shared_carveout(carveout).unwrap().l1;
            assert_eq!(l1.bytes, u64::from(256 * 1024 - carveout), "{carveout}");
        }
    }

    #[test]
    fn resident_blocks_by_threads() {
        let h100 = DeviceProfile::h100_sxm();
        assert_eq!(h100.resident_blocks(256, 0), 8);
        assert_eq!(h100.resident_blocks(1024, 0), 2);
        // 100 threads take 4 warps: 2048 / 128 = 16.
        assert_eq!(h100.resident_blocks(100, 0), 16);
        // 2048 / 32 = 64 blocks, but at most 32 per SM.
        assert_eq!(h100.resident_blocks(32, 0), 32);
        assert_eq!(h100.resident_blocks(0, 0), 0);
        assert_eq!(h100.resident_blocks(1025, 0), 0);
    }

    #[test]
    fn resident_blocks_by_shared_memory() {
        let h100 = DeviceProfile::h100_sxm();
        // 48 KB + 1 KB reserved: 228 / 49 = 4.
        assert_eq!(h100.resident_blocks(128, 48 * 1024), 4);
        // 76 KB alone would fit 3 times in 228 KB; with the 1 KB reserved
        // per block (77 KB each) only 2 fit.
        assert_eq!(h100.resident_blocks(128, 76 * 1024), 2);
        // 1 byte + 1 KB reserved is allocated as 1152 bytes: 202 blocks
        // would fit, so the thread limit rules.
        assert_eq!(h100.resident_blocks(128, 1), 16);
        assert_eq!(h100.resident_blocks(32, 7 * 1024), 28);
        assert_eq!(h100.resident_blocks(128, 227 * 1024), 1);
        assert_eq!(h100.resident_blocks(128, 227 * 1024 + 1), 0);
    }

    #[test]
    fn geometry_validation() {
        let good = CacheGeometry::with_sets(4, 2);
        assert!(good.validate("L1").is_ok());
        let bad_sector = CacheGeometry {
            sector_bytes: 48,
            ..good
        };
        assert!(bad_sector.validate("L1").is_err());
        let too_many_sectors = CacheGeometry {
            sector_bytes: 8,
            ..good
        };
        assert!(too_many_sectors.validate("L1").is_err());
        let no_ways = CacheGeometry { ways: 0, ..good };
        assert!(no_ways.validate("L1").is_err());
        let no_set = CacheGeometry { bytes: 255, ..good };
        assert_eq!(
            no_set.validate("L2"),
            Err(ProfileError::InvalidGeometry {
                cache: "L2",
                reason: "smaller than one set (line_bytes * ways)"
            })
        );
    }
}
