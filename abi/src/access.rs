//! What `#[clustered]` learns about a kernel's global memory accesses, and
//! what that says about its locality (the paper's front half, section 10 of
//! docs/DESIGN.md).
//!
//! The macro reads each load and store through a pointer parameter (or a
//! pointer derived from one) and writes its element offset as a sum of
//! [`Term`]s over the block and thread indices, loop counters, parameters and
//! named constants, where it is affine; where it is not (a loaded value, a
//! division, a call), it says why. Every kernel's typed handle carries the
//! result (`my_kernel::ACCESSES`). From it, [`sharing`] tells which CTAs read
//! the same data, [`classify`] gives the paper's five locality classes, and
//! [`proposals`] the schedules worth measuring (`#[clustered(auto)]`).
//!
//! Symbols whose values are known only at launch (parameters, block sizes)
//! stay unknown at compile time: the answers then rest on which symbols a
//! form contains, never on their values. Given values ([`Values`]), the same
//! functions also see cache-line sharing.

use crate::{Binding, IndexingKind};

/// A grid or block axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Axis {
    /// `x`.
    X,
    /// `y`.
    Y,
    /// `z`.
    Z,
}

impl Axis {
    /// The axes, in order.
    pub const ALL: [Axis; 3] = [Axis::X, Axis::Y, Axis::Z];

    /// `0`, `1`, `2`.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// `"x"`, `"y"`, `"z"`.
    pub const fn name(self) -> &'static str {
        match self {
            Axis::X => "x",
            Axis::Y => "y",
            Axis::Z => "z",
        }
    }
}

/// A symbol of an index form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Sym<'a> {
    /// `block_idx_*()`: the CTA's coordinate.
    Block(Axis),
    /// `thread_idx_*()`.
    Thread(Axis),
    /// `block_dim_*()`.
    BlockDim(Axis),
    /// `grid_dim_*()`.
    GridDim(Axis),
    /// A scalar parameter of the kernel, by name.
    Param(&'a str),
    /// A named constant and its value (rustc evaluates it where the kernel
    /// is compiled; the macro, which sees only tokens, does not know it).
    Const(&'a str, i64),
    /// How far a loop has gone: a `for` counter, or the sum of a `while`
    /// loop's updates of a variable (see [`Loop`]).
    Loop(&'a str),
}

impl Sym<'_> {
    /// The CTA axis this symbol is, if it is one.
    pub const fn block_axis(self) -> Option<Axis> {
        match self {
            Sym::Block(axis) => Some(axis),
            _ => None,
        }
    }
}

/// `coefficient * factors[0] * factors[1] * ..`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Term<'a> {
    /// The constant factor.
    pub coefficient: i64,
    /// The symbols multiplied, sorted; empty for a constant.
    pub factors: &'a [Sym<'a>],
}

impl Term<'_> {
    /// Whether `sym` is one of the factors.
    pub fn has(&self, sym: Sym<'_>) -> bool {
        self.factors.contains(&sym)
    }

    /// Whether any factor is a CTA coordinate.
    pub fn has_block(&self) -> bool {
        self.factors.iter().any(|f| f.block_axis().is_some())
    }

    /// Its value, or `None` when a symbol has none.
    pub fn value(&self, values: &dyn Values) -> Option<i64> {
        self.factors
            .iter()
            .try_fold(self.coefficient, |product, f| {
                product.checked_mul(values.value(*f)?)
            })
    }
}

/// What an access does to memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// `*p`, `p.read()`.
    Load,
    /// `*p = v`, `p.write(v)`.
    Store,
    /// `*p += v` and other compound assignments.
    Update,
}

impl Direction {
    /// `"load"`, `"store"`, `"update"`.
    pub const fn name(self) -> &'static str {
        match self {
            Direction::Load => "load",
            Direction::Store => "store",
            Direction::Update => "update",
        }
    }
}

/// The element offset of an access from its pointer parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Index<'a> {
    /// The sum of these terms.
    Affine(&'a [Term<'a>]),
    /// Not an affine form.
    Opaque {
        /// Why (e.g. "a value loaded from memory").
        why: &'a str,
        /// Which CTA coordinates the address depends on, through any
        /// chain of locals (an over-approximation).
        block_axes: [bool; 3],
        /// Whether it depends on a value loaded from memory.
        data: bool,
    },
}

/// A loop around accesses, as far as the macro can read its bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loop<'a> {
    /// The name of its [`Sym::Loop`].
    pub counter: &'a str,
    /// The counter's trip count, as terms (`end - start` over `step`, where
    /// the three are read from `for c in start..end` or from `while c < end`
    /// with `c += step`); `None` where the bounds are not affine.
    pub trips: Option<&'a [Term<'a>]>,
    /// How far [`Sym::Loop`] moves per trip (`1` for a `for` counter, the
    /// step of a `while` loop).
    pub step: Option<&'a [Term<'a>]>,
}

/// One load or store through a pointer parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access<'a> {
    /// The pointer parameter it goes through.
    pub pointer: &'a str,
    /// `size_of` the parameter's element type.
    pub elem_bytes: u32,
    /// Load, store or update.
    pub direction: Direction,
    /// The element offset.
    pub index: Index<'a>,
    /// The counters of the loops around it, outermost first.
    pub loops: &'a [&'a str],
    /// Its line in the kernel's source file.
    pub line: u32,
    /// Its source text.
    pub source: &'a str,
}

/// What the macro learned about one kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Accesses<'a> {
    /// The kernel's parameters' names, in order (a [`Sym::Param`] is one).
    pub parameters: &'a [&'a str],
    /// Every access, in source order.
    pub accesses: &'a [Access<'a>],
    /// The loops that accesses name.
    pub loops: &'a [Loop<'a>],
    /// Whether the kernel reads `block_idx_x()`, `_y()`, `_z()` at all: an
    /// axis it never reads is one its grid does not split work along.
    pub block_axes: [bool; 3],
    /// Whether it uses shared memory (`shared_array!`).
    pub uses_shared_memory: bool,
    /// Code in the body that the analysis does not read and that names a
    /// pointer parameter: its loads and stores are not in `accesses`.
    pub unseen: &'a [Unseen<'a>],
}

/// A closure, a macro call or a macro definition in a kernel's body that
/// names pointer parameters: the analysis does not read into it, so what
/// it loads and stores is missing from [`Accesses::accesses`] (and from
/// the proposals and the prefetch hook built from them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unseen<'a> {
    /// What it is: "a closure", "a macro call `name!`", "a macro definition".
    pub what: &'a str,
    /// Its line in the kernel's source file.
    pub line: u32,
    /// The pointer parameters it names.
    pub pointers: &'a [&'a str],
}

/// Values of symbols at a launch (or none, at compile time).
pub trait Values {
    /// `sym`'s value, if known.
    fn value(&self, sym: Sym<'_>) -> Option<i64>;
}

/// Compile time: no values (the macro sees a constant's name, not its value).
#[derive(Clone, Copy, Debug, Default)]
pub struct Unknown;

impl Values for Unknown {
    fn value(&self, _: Sym<'_>) -> Option<i64> {
        None
    }
}

/// How much CTAs next to each other along one grid axis share through one
/// access, from the least to the most.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reuse {
    /// Nothing the analysis can see.
    None,
    /// Neighbours touch the same cache lines, not the same elements.
    Lines,
    /// Neighbours read some of the same elements (a stencil's halo).
    Halo,
    /// Every CTA along the axis reads the same elements (the index does
    /// not depend on the CTA's coordinate on it).
    All,
}

impl Reuse {
    /// `"none"`, `"lines"`, `"halo"`, `"all"`.
    pub const fn name(self) -> &'static str {
        match self {
            Reuse::None => "none",
            Reuse::Lines => "lines",
            Reuse::Halo => "halo",
            Reuse::All => "all",
        }
    }
}

/// The paper's locality classes (Li et al., ASPLOS 2017, section 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    /// The algorithm makes CTAs read the same elements (matrix products'
    /// rows and columns, stencil halos): clustering helps most.
    Algorithm,
    /// Neighbouring CTAs split cache lines: clustering helps.
    CacheLine,
    /// Reuse depends on the data (an index loaded from memory).
    Data,
    /// Several CTAs write (or update) the same data.
    Write,
    /// Each CTA reads or writes its own data once.
    Streaming,
}

impl Class {
    /// The class's name as the paper writes it.
    pub const fn name(self) -> &'static str {
        match self {
            Class::Algorithm => "algorithm-related",
            Class::CacheLine => "cache-line-related",
            Class::Data => "data-related",
            Class::Write => "write-related",
            Class::Streaming => "streaming",
        }
    }
}

/// A 128-byte L1/L2 cache line.
pub const LINE_BYTES: i64 = 128;

/// How much CTAs share through `access` along each grid axis, given what
/// `values` knows, with `all` the kernel's accesses (a halo is two accesses
/// of one pointer whose offsets differ by a few elements).
pub fn sharing(access: &Access<'_>, all: &Accesses<'_>, values: &dyn Values) -> [Reuse; 3] {
    let mut reuse = [Reuse::None; 3];
    let terms = match access.index {
        Index::Affine(terms) => terms,
        // Not affine, but what it depends on is known: the paper's
        // dependence test (an address without a CTA coordinate is the same
        // for every CTA along that axis).
        Index::Opaque {
            block_axes,
            data: false,
            ..
        } => {
            for axis in Axis::ALL {
                if all.block_axes[axis.index()] && !block_axes[axis.index()] {
                    reuse[axis.index()] = Reuse::All;
                }
            }
            return reuse;
        }
        Index::Opaque { data: true, .. } => return reuse,
    };
    for axis in Axis::ALL {
        if !all.block_axes[axis.index()] {
            continue;
        }
        let block = Sym::Block(axis);
        // The CTA's stride along `axis` in bytes: the terms with the block
        // coordinate, without it.
        let mut depends = false;
        let mut stride_bytes = Some(0i64);
        for term in terms.iter().filter(|t| t.has(block)) {
            depends = true;
            stride_bytes = stride_bytes
                .zip(stride_without(term, block, values))
                .map(|(sum, stride)| sum + stride * i64::from(access.elem_bytes));
        }
        reuse[axis.index()] = if !depends {
            Reuse::All
        } else if halo_along(access, terms, all, axis, values) {
            Reuse::Halo
        } else if matches!(stride_bytes, Some(s) if s.abs() < LINE_BYTES)
            || (stride_bytes.is_none() && probably_splits_lines(terms, block))
        {
            Reuse::Lines
        } else {
            Reuse::None
        };
    }
    reuse
}

/// Without values: whether neighbours along `block`'s axis probably split
/// cache lines. They do when the CTA's stride is made of block sizes and
/// constants only (small) while lanes of a warp are a parameter apart (each
/// lane on its own row): a naive transpose's stores, whose CTAs along y
/// write the rest of each other's lines.
fn probably_splits_lines(terms: &[Term<'_>], block: Sym<'_>) -> bool {
    let small = |f: &Sym<'_>| matches!(f, Sym::BlockDim(_) | Sym::Const(..)) || *f == block;
    let stride_small = terms
        .iter()
        .filter(|t| t.has(block))
        .all(|t| t.factors.iter().all(small));
    let lanes_apart = terms.iter().any(|t| {
        t.has(Sym::Thread(Axis::X)) && t.factors.iter().any(|f| matches!(f, Sym::Param(_)))
    });
    stride_small && lanes_apart
}

/// `term`'s value with `block` taken out (the CTA stride it contributes).
fn stride_without(term: &Term<'_>, block: Sym<'_>, values: &dyn Values) -> Option<i64> {
    let mut skipped = false;
    term.factors
        .iter()
        .try_fold(term.coefficient, |product, f| {
            if *f == block && !skipped {
                skipped = true;
                Some(product)
            } else {
                product.checked_mul(values.value(*f)?)
            }
        })
}

/// Whether another load of the same pointer has the same form up to terms
/// with neither a CTA coordinate nor a thread index in them, that differ by
/// less than the CTA's extent along `axis`: a stencil's neighbours. Without
/// values, "a few" is: the difference is constants and parameters, the CTA's
/// stride along `axis` has a block size or constant factor more.
fn halo_along(
    access: &Access<'_>,
    terms: &[Term<'_>],
    all: &Accesses<'_>,
    axis: Axis,
    values: &dyn Values,
) -> bool {
    let block = Sym::Block(axis);
    let positional = |t: &Term<'_>| {
        t.has_block()
            || t.factors
                .iter()
                .any(|f| matches!(f, Sym::Thread(_) | Sym::Loop(_)))
    };
    let lane = lane_step(terms);
    all.accesses.iter().any(|other| {
        let Index::Affine(other_terms) = other.index else {
            return false;
        };
        if other.pointer != access.pointer || core::ptr::eq(other, access) {
            return false;
        }
        // Same positional part...
        let same = |a: &[Term<'_>], b: &[Term<'_>]| {
            a.iter()
                .filter(|t| positional(t))
                .all(|t| b.iter().any(|u| u == t))
        };
        if !(same(terms, other_terms) && same(other_terms, terms)) {
            return false;
        }
        // ... different offsets, whose symbols divide the stride along `axis`.
        let offsets = |a: &[Term<'_>]| a.iter().filter(|t| !positional(t)).count();
        // Fields of each lane's own record, not a neighbour's: the two
        // offsets less than a lane's step apart.
        let offset = |a: &[Term<'_>]| {
            a.iter()
                .filter(|t| !positional(t))
                .try_fold(0i64, |sum, t| sum.checked_add(t.value(values)?))
        };
        if let (Some(step), Some(a), Some(b)) = (lane, offset(terms), offset(other_terms)) {
            if a.abs_diff(b) < step.unsigned_abs() {
                return false;
            }
        }
        let differs = terms
            .iter()
            .filter(|t| !positional(t))
            .any(|t| !other_terms.contains(t))
            || offsets(terms) != offsets(other_terms);
        differs
            && terms
                .iter()
                .chain(other_terms)
                .filter(|t| !(positional(t) || terms.contains(t) && other_terms.contains(t)))
                .all(|offset| {
                    terms.iter().filter(|t| t.has(block)).any(|stride| {
                        offset.factors.iter().all(|f| stride.has(*f))
                            && match (offset.value(values), stride_without(stride, block, values)) {
                                (Some(o), Some(s)) => o.abs() < s.abs(),
                                _ => offset.factors.len() < stride.factors.len(),
                            }
                    })
                })
    })
}

/// How many elements apart the lanes' accesses are where an index reads
/// records field by field: `c * (block * block_dim + thread)` along one
/// axis (its one thread term `c * thread`, every CTA term a multiple of
/// `c` with that axis' block size in it), `c > 1`. A CTA then covers `c *
/// block_dim` elements, and a constant offset below `c` is another field
/// of each lane's own record (nn_euclid's `lat_long[2 i]` and `[2 i +
/// 1]`): no neighbour's element. `None` for any other form.
fn lane_step(terms: &[Term<'_>]) -> Option<i64> {
    let mut threads = terms
        .iter()
        .filter(|t| t.factors.iter().any(|f| matches!(f, Sym::Thread(_))));
    let lane = threads.next()?;
    let [Sym::Thread(axis)] = lane.factors else {
        return None;
    };
    let step = lane.coefficient.abs();
    let records = step > 1
        && threads.next().is_none()
        && terms
            .iter()
            .filter(|t| t.has_block())
            .all(|t| t.has(Sym::BlockDim(*axis)) && t.coefficient % step == 0);
    records.then_some(step)
}

/// The paper's class of `access`.
pub fn classify(access: &Access<'_>, all: &Accesses<'_>, values: &dyn Values) -> Class {
    if let Index::Opaque { data: true, .. } = access.index {
        return Class::Data;
    }
    let reuse = sharing(access, all, values);
    let most = reuse.iter().copied().max().unwrap_or(Reuse::None);
    match access.direction {
        Direction::Store | Direction::Update if most == Reuse::All => Class::Write,
        Direction::Store | Direction::Update => Class::Streaming,
        Direction::Load => match most {
            Reuse::All | Reuse::Halo => Class::Algorithm,
            Reuse::Lines => Class::CacheLine,
            Reuse::None => Class::Streaming,
        },
    }
}

/// A schedule worth measuring, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proposal {
    /// How CTAs are bound.
    pub binding: Binding,
    /// The order they are cut from.
    pub indexing: IndexingKind,
    /// Tile width and height (tiles only).
    pub tile: (u32, u32),
    /// `waves` of a stride schedule.
    pub waves: Option<u32>,
    /// `tail = ..` on a stride schedule.
    pub tail: Option<crate::Tail>,
    /// A name suffix: `<kernel>_auto_<tag>`.
    pub tag: &'static str,
    /// Why.
    pub why: &'static str,
}

const fn raster(g: u32, tag: &'static str) -> Proposal {
    Proposal {
        binding: Binding::Reorder,
        indexing: IndexingKind::ColumnTile,
        tile: (g, 1),
        waves: None,
        tail: None,
        tag,
        why: "CTAs share data across the grid: a raster along y keeps the CTAs that share it in L2 together (won all four raster kernels on the H100)",
    }
}

/// Schedules for kernels whose CTAs share data, on a 2-D grid: rasters along
/// y of 4, 8 and 32 grid columns (the widths that won on the H100:
/// docs/BENCHMARKS.md) and agents over 4x4 tiles (the register-blocked
/// SGEMM's winner).
pub const SHARED_2D: [Proposal; 4] = [
    raster(4, "raster_y4"),
    raster(8, "raster_y8"),
    raster(32, "raster_y32"),
    Proposal {
        binding: Binding::Agents,
        indexing: IndexingKind::Tile,
        tile: (4, 4),
        waves: None,
        tail: None,
        tag: "agents_tile4",
        why: "CTAs share data within 4x4 tiles of the grid: agents run a tile on one SM, through its L1",
    },
];

/// Schedules for kernels whose memory is streamed or shared only with the
/// next CTA: grid-stride loops keep loads in flight across CTAs (won Jacobi
/// and Black-Scholes on the H100), as one wave, four, one whose last
/// rounds are claimed (the SDK's Black-Scholes 0.91x -> 0.99x of its kernel
/// on an H200, the staged convolution 0.81x -> 0.93x, where others lose:
/// docs/BENCHMARKS.md, "The grid-stride loop's tail, claimed"), or one
/// whose last rounds are blocks of their own (where claims cost: Jacobi 5's
/// walk 0.85x -> 0.99x, bpnn's weights 0.68x -> 0.89x on an H100, where
/// Black-Scholes and hotspot lose to claims: "A grid-stride loop's tail as
/// blocks"); redirection spreads a cluster's CTAs
/// over the SMs. (It won ATAX's column pass, 1.69x on the H100, but there
/// 64 CTAs in 132 clusters make it the identity mapping: what won is the
/// code ptxas made of the redirect entry, a loop unrolled 4x deeper than
/// the baseline's. docs/BENCHMARKS.md, "Automatic choice".)
pub const STREAMING: [Proposal; 5] = [
    Proposal {
        binding: Binding::Stride,
        indexing: IndexingKind::RowMajor,
        tile: (1, 1),
        waves: None,
        tail: None,
        tag: "stride",
        why: "little reuse between CTAs: a grid-stride loop over resident CTAs streams with fewer launches and keeps the next CTA's loads close",
    },
    Proposal {
        binding: Binding::Stride,
        indexing: IndexingKind::RowMajor,
        tile: (1, 1),
        waves: Some(4),
        tail: None,
        tag: "stride_waves4",
        why: "as `stride`, with four blocks per resident slot: more loads in flight",
    },
    Proposal {
        binding: Binding::Stride,
        indexing: IndexingKind::RowMajor,
        tile: (1, 1),
        waves: None,
        tail: Some(crate::Tail::Claims),
        tag: "stride_tail",
        why: "as `stride`, its last rounds claimed: the blocks that are free take them (a loop of equal shares waits for its slowest block)",
    },
    Proposal {
        binding: Binding::Stride,
        indexing: IndexingKind::RowMajor,
        tile: (1, 1),
        waves: None,
        tail: Some(crate::Tail::Blocks),
        tag: "stride_tail_blocks",
        why: "as `stride`, its last rounds as blocks of one task, dispatched by the hardware as slots free: a balanced tail without claims",
    },
    Proposal {
        binding: Binding::Redirect,
        indexing: IndexingKind::RowMajor,
        tile: (1, 1),
        waves: None,
        tail: None,
        tag: "redirect",
        why: "streams: the paper's round-robin redirection spreads each cluster's CTAs over the SMs",
    },
];

/// At most this many schedules besides the baseline (builds stay fast).
pub const MAX_PROPOSALS: usize = SHARED_2D.len() + STREAMING.len();

/// The schedules the analysis proposes for a kernel, best guess first (the
/// baseline is not among them: it is always measured).
///
/// - Loads shared by every CTA along an axis, or a halo, or stores whose
///   neighbours complete each other's cache lines, on a grid of two or more
///   axes: the rasters and agents of [`SHARED_2D`].
/// - Anything else that the analysis can read (streams, and a 1-D grid's
///   broadcast vector), and a halo: the grid-stride loops and redirection
///   of [`STREAMING`].
/// - Nothing for a kernel whose every load is opaque (data-related): the
///   analysis cannot say, so the tuner keeps the baseline.
pub fn proposals(all: &Accesses<'_>, values: &dyn Values) -> impl Iterator<Item = Proposal> {
    let mut most = [Reuse::None; 3];
    let mut readable = false;
    for access in all.accesses {
        let reuse = sharing(access, all, values);
        if access.direction != Direction::Load {
            // Stores count where neighbours complete each other's lines.
            for (m, r) in most.iter_mut().zip(reuse) {
                if r == Reuse::Lines {
                    *m = (*m).max(Reuse::Halo);
                }
            }
            continue;
        }
        if !matches!(access.index, Index::Opaque { data: true, .. }) {
            readable = true;
        }
        for (m, r) in most.iter_mut().zip(reuse) {
            *m = (*m).max(r);
        }
    }
    let axes = all.block_axes.iter().filter(|used| **used).count();
    let shares = most.iter().any(|r| *r >= Reuse::Halo);
    let halo = most.contains(&Reuse::Halo);
    let two_d = shares && axes >= 2;
    let stream = readable && (!two_d || halo);
    SHARED_2D
        .into_iter()
        .filter(move |_| two_d)
        .chain(STREAMING.into_iter().filter(move |_| stream))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BX: Sym<'static> = Sym::Block(Axis::X);
    const BY: Sym<'static> = Sym::Block(Axis::Y);
    const TX: Sym<'static> = Sym::Thread(Axis::X);
    const TY: Sym<'static> = Sym::Thread(Axis::Y);
    const N: Sym<'static> = Sym::Param("n");
    const K: Sym<'static> = Sym::Loop("k");
    const T: Sym<'static> = Sym::Const("TILE", 32);

    const fn load(pointer: &'static str, terms: &'static [Term<'static>]) -> Access<'static> {
        Access {
            pointer,
            elem_bytes: 4,
            direction: Direction::Load,
            index: Index::Affine(terms),
            loops: &[],
            line: 1,
            source: "",
        }
    }

    fn kernel(accesses: &'static [Access<'static>]) -> Accesses<'static> {
        Accesses {
            parameters: &[],
            accesses,
            loops: &[],
            block_axes: [true, true, false],
            uses_shared_memory: false,
            unseen: &[],
        }
    }

    /// Naive SGEMM: `a[(by*T + ty)*n + k]`, `b[k*n + bx*T + tx]`.
    static SGEMM: [Access<'static>; 2] = [
        load(
            "a",
            &[
                Term {
                    coefficient: 1,
                    factors: &[BY, N, T],
                },
                Term {
                    coefficient: 1,
                    factors: &[TY, N],
                },
                Term {
                    coefficient: 1,
                    factors: &[K],
                },
            ],
        ),
        load(
            "b",
            &[
                Term {
                    coefficient: 1,
                    factors: &[K, N],
                },
                Term {
                    coefficient: 1,
                    factors: &[BX, T],
                },
                Term {
                    coefficient: 1,
                    factors: &[TX],
                },
            ],
        ),
    ];

    #[test]
    fn a_row_is_shared_along_x_and_a_column_along_y() {
        let all = kernel(&SGEMM);
        assert_eq!(
            sharing(&SGEMM[0], &all, &Unknown),
            [Reuse::All, Reuse::None, Reuse::None]
        );
        assert_eq!(
            sharing(&SGEMM[1], &all, &Unknown),
            [Reuse::None, Reuse::All, Reuse::None]
        );
        assert_eq!(classify(&SGEMM[0], &all, &Unknown), Class::Algorithm);
        let tags: [&str; 4] =
            core::array::from_fn(|i| proposals(&all, &Unknown).nth(i).unwrap().tag);
        assert_eq!(
            tags,
            ["raster_y4", "raster_y8", "raster_y32", "agents_tile4"]
        );
        assert_eq!(proposals(&all, &Unknown).count(), 4);
    }

    /// Vector add: `a[bx*bdx + tx]` on a 1-D grid.
    static VECTOR: [Access<'static>; 1] = [load(
        "a",
        &[
            Term {
                coefficient: 1,
                factors: &[BX, Sym::BlockDim(Axis::X)],
            },
            Term {
                coefficient: 1,
                factors: &[TX],
            },
        ],
    )];

    struct Launch;
    impl Values for Launch {
        fn value(&self, sym: Sym<'_>) -> Option<i64> {
            match sym {
                Sym::BlockDim(Axis::X) => Some(16),
                Sym::Block(_) | Sym::Thread(_) => Some(1),
                Sym::Const(_, value) => Some(value),
                _ => None,
            }
        }
    }

    #[test]
    fn a_stream_is_streaming_until_blocks_split_lines() {
        let mut all = kernel(&VECTOR);
        all.block_axes = [true, false, false];
        assert_eq!(classify(&VECTOR[0], &all, &Unknown), Class::Streaming);
        let tags: [&str; 2] =
            core::array::from_fn(|i| proposals(&all, &Unknown).nth(i).unwrap().tag);
        assert_eq!(tags, ["stride", "stride_waves4"]);
        // 16 threads of 4 bytes: 64-byte CTAs, two to a line.
        assert_eq!(sharing(&VECTOR[0], &all, &Launch)[0], Reuse::Lines);
        assert_eq!(classify(&VECTOR[0], &all, &Launch), Class::CacheLine);
    }

    /// Jacobi: `u[(by*T + ty)*n + bx*T + tx + d]` for `d` in `-n, -1, 1, n`.
    static JACOBI: [Access<'static>; 2] = [
        load(
            "u",
            &[
                Term {
                    coefficient: 1,
                    factors: &[BY, N, T],
                },
                Term {
                    coefficient: 1,
                    factors: &[TY, N],
                },
                Term {
                    coefficient: 1,
                    factors: &[BX, T],
                },
                Term {
                    coefficient: 1,
                    factors: &[TX],
                },
                Term {
                    coefficient: -1,
                    factors: &[N],
                },
            ],
        ),
        load(
            "u",
            &[
                Term {
                    coefficient: 1,
                    factors: &[BY, N, T],
                },
                Term {
                    coefficient: 1,
                    factors: &[TY, N],
                },
                Term {
                    coefficient: 1,
                    factors: &[BX, T],
                },
                Term {
                    coefficient: 1,
                    factors: &[TX],
                },
                Term {
                    coefficient: 1,
                    factors: &[N],
                },
            ],
        ),
    ];

    /// Records of two fields read field by field, as nn_euclid reads its
    /// points: `p[2*(bx*bdx + tx) + f]` for the offsets `f` given.
    const RECORD: Term<'static> = Term {
        coefficient: 2,
        factors: &[BX, Sym::BlockDim(Axis::X)],
    };
    const LANE: Term<'static> = Term {
        coefficient: 2,
        factors: &[TX],
    };
    const fn field(offset: i64) -> Term<'static> {
        Term {
            coefficient: offset,
            factors: &[],
        }
    }
    static FIELDS: [Access<'static>; 2] = [
        load("p", &[RECORD, LANE]),
        load("p", &[RECORD, LANE, field(1)]),
    ];
    /// The same records, each lane reading its own field 1 and its left
    /// neighbour's: `p[2*(bx*bdx + tx) + 1]` and `p[2*(bx*bdx + tx) - 1]`.
    static NEIGHBOURS: [Access<'static>; 2] = [
        load("p", &[RECORD, LANE, field(1)]),
        load("p", &[RECORD, LANE, field(-1)]),
    ];

    #[test]
    fn fields_of_a_lane_s_own_record_are_no_halo() {
        let mut all = kernel(&FIELDS);
        all.block_axes = [true, false, false];
        for access in &FIELDS {
            assert_eq!(sharing(access, &all, &Unknown)[0], Reuse::None);
            assert_eq!(classify(access, &all, &Unknown), Class::Streaming);
        }
        // Two elements apart: the first lane reads the previous CTA's last
        // record.
        let mut all = kernel(&NEIGHBOURS);
        all.block_axes = [true, false, false];
        assert_eq!(sharing(&NEIGHBOURS[1], &all, &Unknown)[0], Reuse::Halo);
    }

    #[test]
    fn a_stencil_shares_its_halo_along_the_axis_it_offsets() {
        let all = kernel(&JACOBI);
        let reuse = sharing(&JACOBI[0], &all, &Unknown);
        assert_eq!(reuse[1], Reuse::Halo, "rows above and below: along y");
        assert_eq!(
            reuse[0],
            Reuse::None,
            "`n` does not divide x's stride `TILE`"
        );
        assert_eq!(classify(&JACOBI[0], &all, &Unknown), Class::Algorithm);
        // Shares a halo on a 2-D grid: rasters and agents, and streams.
        assert_eq!(proposals(&all, &Unknown).count(), 9);
    }

    /// ATAX's row pass: `a[(bx*bdx + tx)*ny + j]`, `x[j]` on a 1-D grid.
    static ROWS: [Access<'static>; 2] = [
        load(
            "a",
            &[
                Term {
                    coefficient: 1,
                    factors: &[BX, Sym::BlockDim(Axis::X), Sym::Param("ny")],
                },
                Term {
                    coefficient: 1,
                    factors: &[TX, Sym::Param("ny")],
                },
                Term {
                    coefficient: 1,
                    factors: &[Sym::Loop("j")],
                },
            ],
        ),
        load(
            "x",
            &[Term {
                coefficient: 1,
                factors: &[Sym::Loop("j")],
            }],
        ),
    ];

    #[test]
    fn a_broadcast_vector_on_a_one_d_grid_gets_the_stream_schedules() {
        let mut all = kernel(&ROWS);
        all.block_axes = [true, false, false];
        assert_eq!(classify(&ROWS[1], &all, &Unknown), Class::Algorithm);
        let tags: [&str; 5] =
            core::array::from_fn(|i| proposals(&all, &Unknown).nth(i).unwrap().tag);
        assert_eq!(
            tags,
            [
                "stride",
                "stride_waves4",
                "stride_tail",
                "stride_tail_blocks",
                "redirect"
            ]
        );
        assert_eq!(proposals(&all, &Unknown).count(), 5);
    }

    #[test]
    fn opaque_loads_are_data_related_and_shared_stores_write_related() {
        let gather = Access {
            index: Index::Opaque {
                why: "a value loaded from memory",
                block_axes: [true, false, false],
                data: true,
            },
            ..load("x", &[])
        };
        let sum = Access {
            direction: Direction::Update,
            ..load(
                "total",
                &[Term {
                    coefficient: 1,
                    factors: &[TX],
                }],
            )
        };
        let accesses = [gather, sum];
        let all = Accesses {
            parameters: &[],
            accesses: &accesses,
            loops: &[],
            block_axes: [true, false, false],
            uses_shared_memory: false,
            unseen: &[],
        };
        assert_eq!(classify(&gather, &all, &Unknown), Class::Data);
        assert_eq!(classify(&sum, &all, &Unknown), Class::Write);
        assert_eq!(
            proposals(&all, &Unknown).count(),
            0,
            "nothing readable: baseline only"
        );
    }
}
