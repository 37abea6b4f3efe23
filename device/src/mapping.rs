//! The CTA mapping math of locality-aware clustering (DESIGN.md section 2).
//!
//! Terms: the original grid has `|V|` CTAs, each with a linear id `v` given by
//! an [`Indexing`]; clusters `C_0 .. C_{M-1}` (normally one per SM); the
//! partition puts CTA `v` at position `w` of cluster `i`.
//!
//! Everything here runs on the host (unit tested, and used to fill the launch
//! parameters) and on the device, where it must cost no integer division:
//! divisors known at launch are [`FastDiv`]s built on the host.

use crate::abi::indexing_kind::{COLUMN_MAJOR, COLUMN_TILE, CUSTOM, ROW_MAJOR, SAWTOOTH, TILE};

/// Division by a divisor fixed at launch, by multiply-high (no `div`).
///
/// For `n, d < 2^32`: with `m = ceil(2^64 / d)`, `n / d == (n * m) >> 64`
/// (the error term `n * (m*d - 2^64) / (d * 2^64)` is below `2^-32 <= 1/d`, so
/// it never carries into the next integer). `d == 1` stores `m = 0` and
/// returns `n`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FastDiv {
    divisor: u32,
    _pad: u32,
    multiplier: u64,
}

impl FastDiv {
    /// `None` for a zero divisor.
    pub const fn new(divisor: u32) -> Option<Self> {
        if divisor == 0 {
            return None;
        }
        let multiplier = if divisor == 1 {
            0
        } else {
            // ceil(2^64 / d), computed as floor((2^64 - 1) / d) + 1: equal for
            // every d > 1 (a power of two divides 2^64; others do not).
            (u64::MAX / divisor as u64) + 1
        };
        Some(FastDiv {
            divisor,
            _pad: 0,
            multiplier,
        })
    }

    /// The divisor it divides by.
    #[inline(always)]
    pub const fn divisor(self) -> u32 {
        self.divisor
    }

    /// `n / d`.
    #[inline(always)]
    pub const fn div(self, n: u32) -> u32 {
        if self.multiplier == 0 {
            n
        } else {
            ((n as u128 * self.multiplier as u128) >> 64) as u32
        }
    }

    /// `(n / d, n % d)`.
    #[inline(always)]
    pub const fn div_rem(self, n: u32) -> (u32, u32) {
        let quotient = self.div(n);
        (quotient, n - quotient * self.divisor)
    }
}

/// The balanced contiguous partition of `total` CTAs into `clusters` clusters
/// (DESIGN.md section 2): with `q = total / M` and `r = total % M`, cluster `i`
/// holds `q + 1` CTAs if `i < r`, else `q`, and starts at `i*q + min(i, r)`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Partition {
    /// `|V|`.
    pub total: u32,
    /// `M`.
    pub clusters: u32,
    /// `q = |V| / M`.
    pub base_len: u32,
    /// `r = |V| % M`: the first `r` clusters hold one extra CTA.
    pub longer: u32,
}

impl Partition {
    /// `None` when `clusters == 0`.
    pub const fn new(total: u32, clusters: u32) -> Option<Self> {
        if clusters == 0 {
            return None;
        }
        Some(Partition {
            total,
            clusters,
            base_len: total / clusters,
            longer: total % clusters,
        })
    }

    /// `n_i`: how many CTAs cluster `i` holds.
    #[inline(always)]
    pub const fn cluster_len(&self, cluster: u32) -> u32 {
        self.base_len + (cluster < self.longer) as u32
    }

    /// Clusters with at least one CTA: `M`, or `r` when `|V| < M`.
    #[inline(always)]
    pub const fn clusters_with_tasks(&self) -> u32 {
        if self.base_len == 0 {
            self.longer
        } else {
            self.clusters
        }
    }

    /// `s_i = i*q + min(i, r)`: the first linear id of cluster `i`.
    #[inline(always)]
    pub const fn cluster_start(&self, cluster: u32) -> u32 {
        let extra = if cluster < self.longer {
            cluster
        } else {
            self.longer
        };
        cluster * self.base_len + extra
    }

    /// The inverse partition `f^-1(w, i) = s_i + w`.
    #[inline(always)]
    pub const fn join(&self, position: u32, cluster: u32) -> u32 {
        self.cluster_start(cluster) + position
    }

    /// The partition `f(v) = (w, i)`. Host-side (it divides).
    pub const fn split(&self, linear: u32) -> (u32, u32) {
        let long_part = self.longer as u64 * (self.base_len as u64 + 1);
        let cluster = if (linear as u64) < long_part {
            linear / (self.base_len + 1)
        } else {
            // linear >= r*(q+1) implies q > 0 here.
            self.longer + (linear - long_part as u32) / self.base_len
        };
        (linear - self.cluster_start(cluster), cluster)
    }
}

/// Round-robin binding (the paper's redirection): block `u` of the new kernel
/// runs position `w = u / M` of cluster `i = u % M`. A bijection onto the
/// partition's `(w, i)` pairs: for `u < q*M`, `w < q`; the last `r` blocks get
/// `w = q` in clusters `i < r`, the extra CTAs of exactly those clusters.
#[inline(always)]
pub const fn round_robin(block: u32, clusters: FastDiv) -> (u32, u32) {
    clusters.div_rem(block)
}

/// The order in which a kernel's CTAs are numbered, i.e. which CTAs are
/// neighbours in `v` and so land in the same cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Indexing {
    /// `v = (z*Gy + y)*Gx + x`: grid rows stay together (Y-partitioning).
    RowMajor,
    /// `v = (z*Gx + x)*Gy + y`: grid columns stay together (X-partitioning).
    ColumnMajor,
    /// Tiles of `width x height` CTAs, enumerated row-major, CTAs row-major
    /// inside a tile; edge tiles may be narrower or shorter. With a tile as
    /// wide as the grid this is the grouped raster.
    Tile {
        /// CTAs per tile along x.
        width: u32,
        /// CTAs per tile along y.
        height: u32,
    },
    /// [`Indexing::Tile`] turned by a quarter: tiles of `width x height`
    /// CTAs enumerated down the grid first (column-major), CTAs column-major
    /// inside a tile. `column_tile(G, 1)` is the grouped raster along y
    /// (CUTLASS's raster order along the other axis).
    ColumnTile {
        /// CTAs per tile along x.
        width: u32,
        /// CTAs per tile along y.
        height: u32,
    },
    /// [`Indexing::Tile`] with the odd bands of tiles mirrored along x
    /// (Sawtooth order): band 0 runs left to right, band 1 right to left,
    /// so each band starts at the columns the last one ended on, whose
    /// shared operand is still in L2. `sawtooth(1, G)` is the grouped raster
    /// along x, reversing on alternate passes.
    Sawtooth {
        /// CTAs per tile along x.
        width: u32,
        /// CTAs per tile along y.
        height: u32,
    },
}

/// A grid's dimensions in CTAs.
pub type Grid = [u32; 3];

/// `|V|` of a grid, or `None` when it does not fit in `u32`.
pub const fn grid_size(grid: Grid) -> Option<u32> {
    let total = grid[0] as u64 * grid[1] as u64 * grid[2] as u64;
    if total > u32::MAX as u64 {
        None
    } else {
        Some(total as u32)
    }
}

impl Indexing {
    /// Its kind, one of [`crate::abi::indexing_kind`]: what a generated
    /// entry is compiled for ([`Delinearize::cta_as`]).
    pub const fn kind(self) -> u32 {
        match self {
            Indexing::RowMajor => ROW_MAJOR,
            Indexing::ColumnMajor => COLUMN_MAJOR,
            Indexing::Tile { .. } => TILE,
            Indexing::ColumnTile { .. } => COLUMN_TILE,
            Indexing::Sawtooth { .. } => SAWTOOTH,
        }
    }

    /// `v` of the CTA at `(x, y, z)`. Host-side reference of [`Delinearize`].
    pub fn linearize(self, grid: Grid, cta: [u32; 3]) -> u32 {
        let [gx, gy, _] = grid;
        let [x, y, z] = cta;
        let plane = gx * gy;
        match self {
            Indexing::RowMajor => z * plane + y * gx + x,
            Indexing::ColumnMajor => z * plane + x * gy + y,
            Indexing::ColumnTile { width, height } => {
                // The row-major tiles of the transposed grid.
                let transposed = Indexing::Tile {
                    width: height,
                    height: width,
                };
                transposed.linearize([gy, gx, grid[2]], [y, x, z])
            }
            Indexing::Sawtooth { width, height } => {
                // Odd bands are the tiles of the mirrored band.
                let x = if (y / height) % 2 == 1 { gx - 1 - x } else { x };
                Indexing::Tile { width, height }.linearize(grid, [x, y, z])
            }
            Indexing::Tile { width, height } => {
                let band = y / height;
                let band_height = height.min(gy - band * height);
                let tile = x / width;
                let tile_width = width.min(gx - tile * width);
                z * plane
                    + band * gx * height
                    + tile * width * band_height
                    + (y - band * height) * tile_width
                    + (x - tile * width)
            }
        }
    }
}

/// `v -> (x, y, z)` for one [`Indexing`] of one grid, with every divisor
/// prepared on the host so the device does only multiplies and adds.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delinearize {
    /// The indexing's `abi::indexing_kind` (the contract's numbering):
    /// row-major, column-major, tiles, column tiles (`tile`, the edges and
    /// the divisors are the transposed grid's, and `cta` swaps x and y
    /// back) or Sawtooth (tiles with odd bands mirrored along x).
    kind: u32,
    grid: [u32; 3],
    tile: [u32; 2],
    /// The height of the last band of tiles, and the width of the last tile of
    /// a band (the edges), `1..=tile`.
    last_band_height: u32,
    last_tile_width: u32,
    /// `Gx*Gy` (one z plane).
    plane: FastDiv,
    /// Row-major: `Gx`; column-major: `Gy`; tiles: `Gx * tile height` (a band).
    major: FastDiv,
    /// Tiles: `width * height`, `width * last_band_height`, `width`,
    /// `last_tile_width`.
    tile_area: FastDiv,
    last_band_tile_area: FastDiv,
    tile_width: FastDiv,
    edge_tile_width: FastDiv,
}

/// Why an indexing cannot be prepared for a grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MappingError {
    /// A grid dimension is zero.
    EmptyGrid,
    /// The grid has more than `u32::MAX` CTAs.
    GridTooLarge,
    /// A tile dimension is zero.
    EmptyTile,
    /// Zero clusters.
    NoClusters,
    /// A launch's indexing is not of the kind its kernel was compiled for
    /// (both one of [`crate::abi::indexing_kind`]).
    WrongKind {
        /// The kernel's, from its contract.
        contract: u32,
        /// The launch's.
        launch: u32,
    },
}

impl core::fmt::Display for MappingError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            MappingError::EmptyGrid => "the grid has a zero dimension",
            MappingError::GridTooLarge => "the grid has more than 2^32 - 1 CTAs",
            MappingError::EmptyTile => "a tile dimension is zero",
            MappingError::NoClusters => "zero clusters",
            MappingError::WrongKind { contract, launch } => {
                return write!(
                    f,
                    "the kernel was compiled for indexing kind {contract} but the launch \
                     maps CTAs with kind {launch}: take the indexing from the kernel's \
                     contract (KernelContract::indexing), changing only its tile"
                )
            }
        })
    }
}

impl Delinearize {
    /// `v -> CTA` for `indexing` of `grid` (an empty grid, or a tile of zero
    /// width or height, is an error).
    pub fn new(indexing: Indexing, grid: Grid) -> Result<Self, MappingError> {
        if grid.contains(&0) {
            return Err(MappingError::EmptyGrid);
        }
        grid_size(grid).ok_or(MappingError::GridTooLarge)?;
        let [gx, gy, _] = match indexing {
            Indexing::ColumnTile { .. } => [grid[1], grid[0], grid[2]],
            _ => grid,
        };
        let fast = |d: u32| FastDiv::new(d).expect("non-zero by construction");
        let (kind, tile) = match indexing {
            Indexing::RowMajor => (ROW_MAJOR, [gx, 1]),
            Indexing::ColumnMajor => (COLUMN_MAJOR, [1, gy]),
            Indexing::Tile { width, height }
            | Indexing::Sawtooth { width, height }
            | Indexing::ColumnTile {
                height: width,
                width: height,
            } => {
                if width == 0 || height == 0 {
                    return Err(MappingError::EmptyTile);
                }
                (indexing.kind(), [width.min(gx), height.min(gy)])
            }
        };
        let [width, height] = tile;
        let last_band_height = gy - (gy - 1) / height * height;
        let last_tile_width = gx - (gx - 1) / width * width;
        let major = match kind {
            ROW_MAJOR => gx,
            COLUMN_MAJOR => gy,
            _ => gx * height,
        };
        Ok(Delinearize {
            kind,
            grid,
            tile,
            last_band_height,
            last_tile_width,
            plane: fast(gx * gy),
            major: fast(major),
            tile_area: fast(width * height),
            last_band_tile_area: fast(width * last_band_height),
            tile_width: fast(width),
            edge_tile_width: fast(last_tile_width),
        })
    }

    /// The original grid.
    #[inline(always)]
    pub const fn grid(&self) -> Grid {
        self.grid
    }

    /// `(x, y, z)` of the CTA with linear id `v < |V|`.
    #[inline(always)]
    pub fn cta(&self, linear: u32) -> [u32; 3] {
        let (z, in_plane) = self.plane.div_rem(linear);
        match self.kind {
            ROW_MAJOR => {
                let (y, x) = self.major.div_rem(in_plane);
                [x, y, z]
            }
            COLUMN_MAJOR => {
                let (x, y) = self.major.div_rem(in_plane);
                [x, y, z]
            }
            _ => {
                let [width, height] = self.tile;
                // Column tiles work on the transposed grid.
                let [gx, gy] = if self.kind == COLUMN_TILE {
                    [self.grid[1], self.grid[0]]
                } else {
                    [self.grid[0], self.grid[1]]
                };
                let (band, in_band) = self.major.div_rem(in_plane);
                let band_y = band * height;
                let last_band = band_y + height > gy;
                let area = if last_band {
                    self.last_band_tile_area
                } else {
                    self.tile_area
                };
                let (tile, in_tile) = area.div_rem(in_band);
                let tile_x = tile * width;
                let last_tile = tile_x + width > gx;
                let row_width = if last_tile {
                    self.edge_tile_width
                } else {
                    self.tile_width
                };
                let (dy, dx) = row_width.div_rem(in_tile);
                let (x, y) = (tile_x + dx, band_y + dy);
                match self.kind {
                    COLUMN_TILE => [y, x, z],
                    // Sawtooth: odd bands run right to left.
                    SAWTOOTH if band % 2 == 1 => [gx - 1 - x, y, z],
                    _ => [x, y, z],
                }
            }
        }
    }

    /// [`Delinearize::cta`] for a mapping whose indexing is known to be
    /// `INDEXING` (one of `abi::indexing_kind`, not custom) when the kernel
    /// is compiled, as a generated entry's is: the branches on the other
    /// kinds fold away (SASS, `scripts/sass-diff.py`: Jacobi 5's raster
    /// 175 -> 132 instructions, a 5x5 convolution's redirection 358 -> 276,
    /// and ATAX's redirected rows 424 -> 144, where ptxas had copied the
    /// body into both arms of the kind branch). A copy with the kind
    /// replaced ([`Delinearize::as_kind`]), not [`Delinearize::cta`] split
    /// at the kind: split, the grid-stride loops' set-up left the uniform
    /// datapath (vector add's loop 20 -> 25 registers).
    #[inline(always)]
    pub fn cta_as<const INDEXING: u32>(&self, linear: u32) -> [u32; 3] {
        const { assert!(INDEXING != CUSTOM, "a custom indexing maps its CTAs itself") };
        self.as_kind::<INDEXING>().cta(linear)
    }

    /// This mapping, known to be of kind `INDEXING` (one of
    /// `abi::indexing_kind`) when the kernel is compiled: every match on the
    /// kind in [`Delinearize::cta`], [`Delinearize::advance`] and
    /// [`Delinearize::step`] folds to its one arm. The task loops step
    /// their CTAs through it. The host built this mapping from the same
    /// contract; off the GPU this checks that it did. A custom indexing
    /// takes any mapping (`ClusterLaunch::new`) and maps its tasks itself:
    /// for `CUSTOM` this is the mapping as launched.
    #[inline(always)]
    pub fn as_kind<const INDEXING: u32>(&self) -> Delinearize {
        if INDEXING == CUSTOM {
            return *self;
        }
        #[cfg(not(target_arch = "nvptx64"))]
        assert!(
            self.kind == INDEXING,
            "an entry compiled for indexing kind {INDEXING} launched with a mapping of kind {}: \
             build its ClusterLaunch from the entry's contract (KernelContract::indexing)",
            self.kind
        );
        Delinearize {
            kind: INDEXING,
            ..*self
        }
    }

    /// The CTA of `linear`, given `index`, the CTA of `linear - 1`: one
    /// increment with carries for the row- and column-major orders (no
    /// division: the agents step through a chunk with it), a full
    /// delinearization for tiles.
    #[inline(always)]
    pub fn step(&self, index: [u32; 3], linear: u32) -> [u32; 3] {
        let one = if self.kind == ROW_MAJOR {
            [1, 0, 0]
        } else {
            [0, 1, 0]
        };
        self.advance(index, one, linear)
    }

    /// The CTA of `linear`, given `index`, the CTA of `linear - by`, and
    /// `split = self.cta(by)`: additions with carries for the row- and
    /// column-major orders (the grid-stride loop steps by the launched
    /// blocks with it), a full [`Delinearize::cta`] for tiles.
    #[inline(always)]
    pub fn advance(&self, index: [u32; 3], split: [u32; 3], linear: u32) -> [u32; 3] {
        let [x, y, z] = index;
        let [dx, dy, dz] = split;
        let [gx, gy, _] = self.grid;
        match self.kind {
            ROW_MAJOR => {
                let (x, y, z) = add_with_carries((x, y, z), (dx, dy, dz), gx, gy);
                [x, y, z]
            }
            COLUMN_MAJOR => {
                let (y, x, z) = add_with_carries((y, x, z), (dy, dx, dz), gy, gx);
                [x, y, z]
            }
            _ => self.cta(linear),
        }
    }
}

/// `(fast, slow, z) + (d_fast, d_slow, d_z)` in an order where `fast` varies
/// fastest, with `fast < fast_len`, `d_fast <= fast_len` and likewise for
/// `slow`, so one subtraction per coordinate carries.
#[inline(always)]
fn add_with_carries(
    (fast, slow, z): (u32, u32, u32),
    (d_fast, d_slow, d_z): (u32, u32, u32),
    fast_len: u32,
    slow_len: u32,
) -> (u32, u32, u32) {
    let (mut fast, mut slow, mut z) = (fast + d_fast, slow + d_slow, z + d_z);
    if fast >= fast_len {
        fast -= fast_len;
        slow += 1;
    }
    if slow >= slow_len {
        slow -= slow_len;
        z += 1;
    }
    (fast, slow, z)
}

/// A `custom(..)` indexing: the linear id `v` -> the CTA it runs.
pub type CustomIndexing = fn(u32, Grid) -> [u32; 3];

/// How a `custom(..)` indexing fails to be a bijection of `[0, |V|)` onto
/// the grid's CTAs: some CTA would run twice and another never.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexingError {
    /// Linear id `v` maps to `cta`, which is not in the grid.
    OutsideGrid {
        /// The linear id.
        v: u32,
        /// The CTA it maps to.
        cta: [u32; 3],
    },
    /// Linear ids `first` and `second` both map to `cta`.
    Collision {
        /// The lower linear id.
        first: u32,
        /// The higher one.
        second: u32,
        /// The CTA both map to.
        cta: [u32; 3],
    },
}

impl core::fmt::Display for IndexingError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            IndexingError::OutsideGrid { v, cta } => write!(
                f,
                "the custom indexing maps linear id {v} to CTA {cta:?}, outside the grid"
            ),
            IndexingError::Collision { first, second, cta } => write!(
                f,
                "the custom indexing maps linear ids {first} and {second} both to CTA {cta:?}, \
                 so that CTA would run twice and another never"
            ),
        }?;
        f.write_str(": it must map 0..|V| one-to-one onto the grid (every CTA exactly once)")
    }
}

/// Grids up to this many CTAs have their custom indexing checked at every
/// plan (a bitset of 8 MiB at most); larger ones in debug builds only.
pub const CHECKED_INDEXING_CTAS: u64 = 1 << 26;

/// Checks that `indexing` maps `[0, |V|)` one-to-one onto `grid`'s CTAs,
/// naming the first two linear ids that collide.
#[cfg(not(target_arch = "nvptx64"))]
pub fn check_custom_indexing(indexing: CustomIndexing, grid: Grid) -> Result<(), IndexingError> {
    let Some(total) = grid_size(grid) else {
        return Ok(()); // the plan refuses such a grid anyway
    };
    let [gx, gy, gz] = grid;
    let row_major = |[x, y, z]: [u32; 3]| (z as u64 * gy as u64 + y as u64) * gx as u64 + x as u64;
    let mut seen = vec![0u64; (total as usize).div_ceil(64)];
    for v in 0..total {
        let cta = indexing(v, grid);
        if cta[0] >= gx || cta[1] >= gy || cta[2] >= gz {
            return Err(IndexingError::OutsideGrid { v, cta });
        }
        let id = row_major(cta) as usize;
        let (word, bit) = (id / 64, 1u64 << (id % 64));
        if seen[word] & bit != 0 {
            let first = (0..v)
                .find(|&u| indexing(u, grid) == cta)
                .expect("an earlier id mapped there");
            return Err(IndexingError::Collision {
                first,
                second: v,
                cta,
            });
        }
        seen[word] |= bit;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Small grids (edges in every dimension) in every kind of order.
    fn small_mappings() -> impl Iterator<Item = (Delinearize, u32)> {
        let grids = [
            [1, 1, 1],
            [5, 1, 1],
            [3, 4, 1],
            [4, 3, 2],
            [1, 7, 3],
            [2, 2, 5],
        ];
        let tile = Indexing::Tile {
            width: 2,
            height: 3,
        };
        let column_tile = Indexing::ColumnTile {
            width: 3,
            height: 2,
        };
        let sawtooth = Indexing::Sawtooth {
            width: 2,
            height: 3,
        };
        grids.into_iter().flat_map(move |grid| {
            [
                Indexing::RowMajor,
                Indexing::ColumnMajor,
                tile,
                column_tile,
                sawtooth,
            ]
            .map(|indexing| {
                let total = grid.iter().product::<u32>();
                (Delinearize::new(indexing, grid).unwrap(), total)
            })
        })
    }

    #[test]
    fn stepping_visits_the_same_ctas_as_delinearizing() {
        for (d, total) in small_mappings() {
            let mut index = d.cta(0);
            for v in 1..total {
                index = d.step(index, v);
                assert_eq!(index, d.cta(v), "{d:?} v = {v}");
            }
        }
    }

    #[test]
    fn a_kind_known_at_compile_time_maps_as_the_kind_read_at_run_time() {
        for (d, total) in small_mappings() {
            for v in 0..total {
                let known = match d.kind {
                    ROW_MAJOR => d.cta_as::<ROW_MAJOR>(v),
                    COLUMN_MAJOR => d.cta_as::<COLUMN_MAJOR>(v),
                    TILE => d.cta_as::<TILE>(v),
                    COLUMN_TILE => d.cta_as::<COLUMN_TILE>(v),
                    _ => d.cta_as::<SAWTOOTH>(v),
                };
                assert_eq!(known, d.cta(v), "{d:?} v = {v}");
            }
        }
    }

    #[test]
    #[should_panic(expected = "launched with a mapping of kind 0")]
    fn a_mapping_of_another_kind_is_refused_off_the_gpu() {
        let rows = Delinearize::new(Indexing::RowMajor, [4, 4, 1]).unwrap();
        rows.cta_as::<{ crate::abi::indexing_kind::TILE }>(3);
    }

    #[test]
    fn advancing_visits_the_same_ctas_as_delinearizing() {
        for (d, total) in small_mappings() {
            for by in 1..total + 3 {
                let split = d.cta(by);
                for start in 0..by.min(total) {
                    let mut index = d.cta(start);
                    for v in (start + by..total).step_by(by as usize) {
                        index = d.advance(index, split, v);
                        assert_eq!(index, d.cta(v), "{d:?} by {by} v = {v}");
                    }
                }
            }
        }
    }

    /// A small deterministic generator, so property tests need no crate and
    /// every failure reproduces.
    struct SplitMix(u64);
    impl SplitMix {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
        fn below(&mut self, bound: u32) -> u32 {
            (self.next() % bound as u64) as u32
        }
        /// Mostly small values, sometimes large ones: edges live at both ends.
        fn size(&mut self, max: u32) -> u32 {
            match self.below(4) {
                0 => 1 + self.below(4),
                1 => 1 + self.below(64),
                _ => 1 + self.below(max),
            }
        }
    }

    #[test]
    fn fast_div_matches_division_on_edges_and_random_values() {
        let mut rng = SplitMix(1);
        let mut divisors = vec![
            1,
            2,
            3,
            5,
            7,
            132,
            641,
            1 << 16,
            (1 << 31) - 1,
            1 << 31,
            u32::MAX - 1,
            u32::MAX,
        ];
        divisors.extend((0..2000).map(|_| 1 + rng.below(u32::MAX)));
        divisors.extend((0..2000).map(|_| 1 + rng.below(5000)));
        for d in divisors {
            let fast = FastDiv::new(d).unwrap();
            let mut numerators = vec![
                0,
                1,
                d - 1,
                d,
                d.wrapping_add(1),
                u32::MAX,
                u32::MAX - 1,
                u32::MAX / d * d,
            ];
            numerators.extend((0..200).map(|_| rng.next() as u32));
            for n in numerators {
                assert_eq!(fast.div_rem(n), (n / d, n % d), "{n} / {d}");
            }
        }
        assert_eq!(FastDiv::new(0), None);
    }

    #[test]
    fn paper_worked_example() {
        // |V| = 6 (a 3x2 grid), M = 2: q = 3, r = 0.
        let p = Partition::new(6, 2).unwrap();
        assert_eq!((p.base_len, p.longer), (3, 0));
        let v = Indexing::RowMajor.linearize([3, 2, 1], [0, 1, 0]);
        assert_eq!(v, 3);
        assert_eq!(p.split(v), (0, 1));
        assert_eq!(p.join(2, 1), 5);
    }

    /// With fewer CTAs than clusters (ATAX's column pass: 64 CTAs, 132
    /// SMs) every cluster holds at most one CTA and redirection sends block
    /// `u` to CTA `u`: it cannot change which SM runs which CTA, so a speed
    /// difference from the baseline there is the entry's code, not the
    /// placement (docs/BENCHMARKS.md, "Automatic choice").
    #[test]
    fn redirection_of_fewer_ctas_than_clusters_is_the_identity() {
        for (total, clusters) in [(64, 132), (1, 132), (131, 132), (132, 132)] {
            let p = Partition::new(total, clusters).unwrap();
            let fast = FastDiv::new(clusters).unwrap();
            for u in 0..total {
                let (w, i) = round_robin(u, fast);
                assert_eq!(p.join(w, i), u, "{total} CTAs, {clusters} clusters");
            }
        }
        // One more CTA than clusters and it is not.
        let p = Partition::new(133, 132).unwrap();
        let fast = FastDiv::new(132).unwrap();
        assert_ne!(p.join(round_robin(1, fast).0, round_robin(1, fast).1), 1);
    }

    fn check_partition(total: u32, clusters: u32) {
        let p = Partition::new(total, clusters).unwrap();
        let lens: Vec<u32> = (0..clusters).map(|i| p.cluster_len(i)).collect();
        assert_eq!(lens.iter().map(|&n| n as u64).sum::<u64>(), total as u64);
        let (min, max) = (lens.iter().min().unwrap(), lens.iter().max().unwrap());
        assert!(
            max - min <= 1,
            "unbalanced: {total} CTAs in {clusters} clusters"
        );
        // f and f^-1 are inverse bijections; clusters are contiguous.
        let mut expected_start = 0;
        for i in 0..clusters {
            assert_eq!(p.cluster_start(i), expected_start);
            expected_start += p.cluster_len(i);
        }
        for v in 0..total {
            let (w, i) = p.split(v);
            assert!(
                i < clusters && w < p.cluster_len(i),
                "f({v}) = ({w}, {i}) out of range"
            );
            assert_eq!(p.join(w, i), v);
        }
        // Round-robin binding: a bijection from new blocks onto (w, i) pairs.
        let fast = FastDiv::new(clusters).unwrap();
        let mut seen = vec![false; total as usize];
        for u in 0..total {
            let (w, i) = round_robin(u, fast);
            assert!(w < p.cluster_len(i), "RR({u}) = ({w}, {i}) is not a CTA");
            let v = p.join(w, i) as usize;
            assert!(!seen[v], "RR maps two blocks to CTA {v}");
            seen[v] = true;
        }
    }

    #[test]
    fn partition_edge_cases() {
        check_partition(6, 2); // the paper's example
        check_partition(5, 132); // |V| < M: some clusters are empty
        check_partition(0, 3); // nothing to run
        check_partition(1, 1);
        check_partition(1, 132);
        check_partition(1000, 1); // M = 1
        check_partition(1000, 132); // |V| % M != 0
        check_partition(132 * 7, 132);
    }

    #[test]
    fn partition_properties_on_random_shapes() {
        let mut rng = SplitMix(2);
        for _ in 0..400 {
            check_partition(rng.size(20_000), rng.size(300));
        }
    }

    #[test]
    fn partition_near_u32_max_does_not_overflow() {
        for (total, clusters) in [
            (u32::MAX, 132),
            (u32::MAX, 1),
            (u32::MAX, u32::MAX),
            (1 << 31, 7),
            (u32::MAX - 5, 1 << 20),
        ] {
            let p = Partition::new(total, clusters).unwrap();
            for v in [0, 1, total / 2, total - 2, total - 1] {
                let (w, i) = p.split(v);
                assert!(w < p.cluster_len(i));
                assert_eq!(p.join(w, i), v);
            }
            let last = clusters - 1;
            assert_eq!(
                p.cluster_start(last) as u64 + p.cluster_len(last) as u64,
                total as u64
            );
            let fast = FastDiv::new(clusters).unwrap();
            let (w, i) = round_robin(total - 1, fast);
            assert_eq!(p.join(w, i) as u64, p.cluster_start(i) as u64 + w as u64);
        }
    }

    fn check_indexing(indexing: Indexing, grid: Grid) {
        let total = grid_size(grid).unwrap();
        let d = Delinearize::new(indexing, grid).unwrap();
        let mut seen = vec![false; total as usize];
        for v in 0..total {
            let cta = d.cta(v);
            assert!(
                cta.iter().zip(grid).all(|(c, g)| *c < g),
                "{indexing:?} {grid:?}: v={v} -> {cta:?}"
            );
            assert_eq!(
                indexing.linearize(grid, cta),
                v,
                "{indexing:?} {grid:?}: v={v} -> {cta:?}"
            );
            let flat = ((cta[2] * grid[1] + cta[1]) * grid[0] + cta[0]) as usize;
            assert!(!seen[flat], "{indexing:?} {grid:?}: CTA {cta:?} twice");
            seen[flat] = true;
        }
    }

    #[test]
    fn indexing_orders() {
        // Row-major is the hardware's own order.
        let d = Delinearize::new(Indexing::RowMajor, [3, 2, 1]).unwrap();
        assert_eq!(
            (0..6).map(|v| d.cta(v)).collect::<Vec<_>>(),
            [
                [0, 0, 0],
                [1, 0, 0],
                [2, 0, 0],
                [0, 1, 0],
                [1, 1, 0],
                [2, 1, 0]
            ]
        );
        let d = Delinearize::new(Indexing::ColumnMajor, [3, 2, 1]).unwrap();
        assert_eq!(
            (0..6).map(|v| d.cta(v)).collect::<Vec<_>>(),
            [
                [0, 0, 0],
                [0, 1, 0],
                [1, 0, 0],
                [1, 1, 0],
                [2, 0, 0],
                [2, 1, 0]
            ]
        );
        // 2x2 tiles of a 3x3 grid: a full tile, the narrow edge tile, then the
        // short last band.
        let d = Delinearize::new(
            Indexing::Tile {
                width: 2,
                height: 2,
            },
            [3, 3, 1],
        )
        .unwrap();
        assert_eq!(
            (0..9).map(|v| d.cta(v)).collect::<Vec<_>>(),
            [
                [0, 0, 0],
                [1, 0, 0],
                [0, 1, 0],
                [1, 1, 0],
                [2, 0, 0],
                [2, 1, 0],
                [0, 2, 0],
                [1, 2, 0],
                [2, 2, 0]
            ]
        );
    }

    /// Column tiles are tiles turned by a quarter: `column_tile(2, 1)`, the
    /// raster along y with groups of 2 columns, goes down the first two
    /// columns row by row, then down the last column.
    #[test]
    fn column_tiles_go_down_the_grid_first() {
        let d = Delinearize::new(
            Indexing::ColumnTile {
                width: 2,
                height: 1,
            },
            [3, 2, 1],
        )
        .unwrap();
        assert_eq!(
            (0..6).map(|v| d.cta(v)).collect::<Vec<_>>(),
            [
                [0, 0, 0],
                [1, 0, 0],
                [0, 1, 0],
                [1, 1, 0],
                [2, 0, 0],
                [2, 1, 0]
            ]
        );
    }

    /// Sawtooth order: `sawtooth(1, 2)` on a 3 x 4 grid walks the first
    /// band of two rows left to right, column by column, and the second
    /// right to left, starting under the column the first ended on.
    #[test]
    fn sawtooth_walks_every_other_band_backwards() {
        let d = Delinearize::new(
            Indexing::Sawtooth {
                width: 1,
                height: 2,
            },
            [3, 4, 1],
        )
        .unwrap();
        assert_eq!(
            (0..12).map(|v| d.cta(v)).collect::<Vec<_>>(),
            [
                [0, 0, 0],
                [0, 1, 0],
                [1, 0, 0],
                [1, 1, 0],
                [2, 0, 0],
                [2, 1, 0],
                [2, 2, 0],
                [2, 3, 0],
                [1, 2, 0],
                [1, 3, 0],
                [0, 2, 0],
                [0, 3, 0]
            ]
        );
    }

    #[test]
    fn indexing_is_a_bijection_on_random_grids() {
        let mut rng = SplitMix(3);
        for _ in 0..300 {
            let grid = [
                rng.size(90),
                rng.size(40),
                if rng.below(3) == 0 { rng.size(5) } else { 1 },
            ];
            let (width, height) = (rng.size(12), rng.size(12));
            let tile = Indexing::Tile { width, height };
            let column_tile = Indexing::ColumnTile { width, height };
            let sawtooth = Indexing::Sawtooth { width, height };
            for indexing in [
                Indexing::RowMajor,
                Indexing::ColumnMajor,
                tile,
                column_tile,
                sawtooth,
            ] {
                check_indexing(indexing, grid);
            }
        }
    }

    #[test]
    fn large_grids_delinearize_without_overflow() {
        // 2^31 CTAs in one row, and a 3D grid just under 2^32.
        for (indexing, grid) in [
            (Indexing::RowMajor, [1 << 31, 1, 1]),
            (Indexing::ColumnMajor, [65535, 65535, 1]),
            (
                Indexing::Tile {
                    width: 16,
                    height: 3,
                },
                [65535, 65535, 1],
            ),
            (
                Indexing::Tile {
                    width: 7,
                    height: 5,
                },
                [1 << 16, 1 << 8, 255],
            ),
            (
                Indexing::ColumnTile {
                    width: 5,
                    height: 7,
                },
                [1 << 8, 1 << 16, 255],
            ),
        ] {
            let total = grid_size(grid).unwrap();
            let d = Delinearize::new(indexing, grid).unwrap();
            for v in [0, 1, total / 3, total - 2, total - 1] {
                assert_eq!(
                    indexing.linearize(grid, d.cta(v)),
                    v,
                    "{indexing:?} {grid:?} v={v}"
                );
            }
        }
    }

    #[test]
    fn bad_shapes_are_errors() {
        assert_eq!(
            Delinearize::new(Indexing::RowMajor, [0, 1, 1]),
            Err(MappingError::EmptyGrid)
        );
        assert_eq!(
            Delinearize::new(Indexing::RowMajor, [1 << 20, 1 << 12, 1]),
            Err(MappingError::GridTooLarge)
        );
        assert_eq!(
            Delinearize::new(
                Indexing::Tile {
                    width: 0,
                    height: 2
                },
                [4, 4, 1]
            ),
            Err(MappingError::EmptyTile)
        );
        assert_eq!(Partition::new(10, 0), None);
    }
}

#[cfg(test)]
mod custom_indexing_tests {
    use super::*;

    fn transpose(v: u32, [_, gy, _]: Grid) -> [u32; 3] {
        [v / gy, v % gy, 0]
    }
    fn collides(v: u32, [gx, _, _]: Grid) -> [u32; 3] {
        [(v % gx) / 2 * 2, v / gx, 0]
    }
    fn overflows(v: u32, [gx, _, _]: Grid) -> [u32; 3] {
        [v % gx + 1, v / gx, 0]
    }

    #[test]
    fn a_permutation_passes_and_mistakes_name_two_ids() {
        assert_eq!(check_custom_indexing(transpose, [7, 5, 1]), Ok(()));
        assert_eq!(
            check_custom_indexing(collides, [4, 3, 1]),
            Err(IndexingError::Collision {
                first: 0,
                second: 1,
                cta: [0, 0, 0]
            })
        );
        assert_eq!(
            check_custom_indexing(overflows, [4, 3, 1]),
            Err(IndexingError::OutsideGrid {
                v: 3,
                cta: [4, 0, 0]
            })
        );
        let message = check_custom_indexing(collides, [4, 3, 1])
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("0 and 1") && message.contains("one-to-one"),
            "{message}"
        );
    }
}
