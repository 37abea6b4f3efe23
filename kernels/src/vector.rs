//! Streaming kernels.

use clustered_device::cta::Cta;
use clustered_device::math::fma;
use clustered_device::memory::{prefetch_l2, F32x4};
use clustered_device::shared::dynamic_shared_memory;
use clustered_device::thread::{block_dim_x, block_idx_x, index_1d, sync_threads, thread_idx_x};
use clustered_device::unroll::unroll;
use clustered_device::{clustered, constant_table};

/// `c[i] = a[i] + b[i]` for `i < n`, one element per thread.
///
/// Variants: agents claiming 8 CTAs with `a`, `b` past L1; redirection;
/// persistent CTAs claiming chunks of 8 or 4; grid-stride loops, plain,
/// prefetching the next task's inputs into L2 (one or two tasks ahead; and
/// with the hook the macro writes, `_stride_prefetch_auto`, also under
/// persistent claims of 4, `_persistent_prefetch_auto`), and in 4 waves of
/// blocks. Prefetching is what wins on the H200 (1.16-1.19x;
/// 1.01x on the H100): DRAM-bound, each warp keeps only its two loads in
/// flight otherwise (docs/BENCHMARKS.md, docs/ncu-why-h100.txt).
#[clustered(auto)]
#[clustered(name = vector_add_agents, binding = agents, chunk = 8, bypass(a, b))]
#[clustered(name = vector_add_redirect, binding = redirect)]
#[clustered(name = vector_add_persistent, binding = persistent, chunk = 8)]
#[clustered(name = vector_add_persistent4, binding = persistent, chunk = 4)]
#[clustered(name = vector_add_stride, binding = stride)]
#[clustered(name = vector_add_stride_prefetch, binding = stride, prefetch = prefetch_next_inputs)]
#[clustered(name = vector_add_stride_prefetch_waves4, binding = stride, waves = 4, prefetch = prefetch_next_inputs)]
#[clustered(name = vector_add_stride_prefetch2, binding = stride, prefetch = prefetch_next_inputs, prefetch_distance = 2)]
#[clustered(name = vector_add_stride_prefetch_auto, binding = stride, prefetch = auto)]
#[clustered(name = vector_add_persistent_prefetch_auto, binding = persistent, chunk = 4, prefetch = auto)]
pub unsafe fn vector_add(a: *const f32, b: *const f32, c: *mut f32, n: u32) {
    let i = index_1d();
    if i < n {
        let i = i as usize;
        *c.add(i) = *a.add(i) + *b.add(i);
    }
}

/// `c[i] += a[i]` for `i < n`: a kernel that reads what it writes, so a
/// second launch on the same buffers shows (the tuned launch's test: the
/// caller's buffers must see exactly one launch).
#[clustered(name = accumulate_stride, binding = stride)]
#[clustered(name = accumulate_agents, binding = agents, chunk = 4)]
#[clustered(name = accumulate_redirect, binding = redirect)]
pub unsafe fn accumulate(a: *const f32, c: *mut f32, n: u32) {
    let i = index_1d();
    if i < n {
        let i = i as usize;
        *c.add(i) += *a.add(i);
    }
}

/// `output[i] = input[i]` for `i < n`, one element per thread: the memory
/// roofline that the bench measures each run against (what a kernel that
/// reads and writes each byte once can reach).
#[clustered_device::kernel]
pub unsafe fn copy(input: *const f32, output: *mut f32, n: u32) {
    let i = index_1d();
    if i < n {
        let i = i as usize;
        *output.add(i) = *input.add(i);
    }
}

/// [`copy`] four floats per thread, as a CUDA programmer writes a copy
/// (`float4`): `quads` = n / 4, both buffers 16-byte aligned (device
/// allocations are). One float per thread keeps too few bytes in flight to
/// fill DRAM's pipe on an H200; this is the bench's memory roofline.
#[clustered_device::kernel]
pub unsafe fn copy_quads(input: *const f32, output: *mut f32, quads: u32) {
    let i = index_1d();
    if i < quads {
        let i = i as usize;
        *output.cast::<F32x4>().add(i) = *input.cast::<F32x4>().add(i);
    }
}

/// Prefetch hook of `vector_add_stride_prefetch`: starts bringing the next
/// task's `a` and `b` lines into L2 before this task's loads wait, so more
/// DRAM requests are in flight per warp than its two loads.
#[inline(always)]
unsafe fn prefetch_next_inputs(next: Cta, a: *const f32, b: *const f32, _c: *mut f32, n: u32) {
    let i = next.index_1d();
    if i < n {
        prefetch_l2(a.add(i as usize));
        prefetch_l2(b.add(i as usize));
    }
}

/// Reverses each block's slice of `input` into `output` through dynamic
/// shared memory (`block_dim_x` floats per block): a kernel whose tasks share
/// memory inside the CTA, so agents must separate consecutive tasks; and
/// whose reorder and redirect schedules hand the mapped block index over in
/// shared memory too (`run::mapped_once`), beside the body's.
#[clustered(name = reverse_in_blocks_raster, binding = reorder, indexing = tile(2, 1))]
#[clustered(name = reverse_in_blocks_redirect, binding = redirect)]
#[clustered(name = reverse_in_blocks_agents, binding = agents, chunk = 3)]
#[clustered(name = reverse_in_blocks_stride, binding = stride)]
#[clustered(name = reverse_in_blocks_stride_tail, binding = stride, tail = claims)]
#[clustered(name = reverse_in_blocks_stride_tail_blocks, binding = stride, tail = blocks)]
pub unsafe fn reverse_in_blocks(input: *const f32, output: *mut f32, n: u32) {
    let staging = dynamic_shared_memory::<f32>();
    let (t, width) = (thread_idx_x(), block_dim_x());
    let i = index_1d();
    staging.write(t, if i < n { *input.add(i as usize) } else { 0.0 });
    sync_threads();
    let from = block_idx_x() * width + (width - 1 - t);
    if i < n && from < n {
        *output.add(i as usize) = staging.read(width - 1 - t);
    }
}

/// `sums[i]`: row `i` of `input` (`len` floats a row) added in order,
/// through [`unroll::<4>`](clustered_device::unroll::unroll), so that every
/// schedule runs the depth helper's runs of 4 and, when `len % 4 != 0`, its
/// remainder (`suite/tests/cpu_backend.rs`).
#[clustered(name = row_sums_redirect, binding = redirect, indexing = column_major)]
#[clustered(name = row_sums_agents, binding = agents, chunk = 3)]
#[clustered(name = row_sums_persistent, binding = persistent, indexing = column_major, chunk = 2)]
#[clustered(name = row_sums_stride, binding = stride)]
#[clustered(name = row_sums_stride_tail, binding = stride, tail = claims)]
#[clustered(name = row_sums_stride_tail_blocks, binding = stride, tail = blocks)]
pub unsafe fn row_sums(input: *const f32, sums: *mut f32, rows: u32, len: u32) {
    let i = index_1d();
    if i < rows {
        let row = input.add(i as usize * len as usize);
        let mut sum = 0.0f32;
        unroll::<4>(len, |k| sum += *row.add(k as usize));
        *sums.add(i as usize) = sum;
    }
}

constant_table! {
    /// The coefficients of [`polynomial`](fn@polynomial), lowest degree
    /// first: the host writes them before a launch.
    pub COEFFICIENTS: [f32; 64]
}

/// `y[i] = c[0] + c[1] x + ... + c[degree - 1] x^(degree - 1)` for `x =
/// x[i]`, by Horner's rule from the highest coefficient down (`fma` each
/// step), the coefficients read from [`COEFFICIENTS`] in constant memory:
/// every thread of a warp reads the same one, what the constant cache
/// serves in one request. `degree` at most 64 (the table's length).
#[clustered(name = polynomial_agents, binding = agents, chunk = 2)]
#[clustered(name = polynomial_stride, binding = stride)]
pub unsafe fn polynomial(x: *const f32, y: *mut f32, n: u32, degree: u32) {
    let i = index_1d();
    if i < n {
        let x_i = *x.add(i as usize);
        let mut value = 0.0f32;
        let mut k = degree.min(COEFFICIENTS.len());
        while k > 0 {
            k -= 1;
            value = fma(value, x_i, COEFFICIENTS.read(k));
        }
        *y.add(i as usize) = value;
    }
}

/// [`polynomial`](fn@polynomial) with its coefficients in global memory
/// (`coefficients`, at least `degree` floats; every thread reads the same
/// one, through L1): what a table costs without a `constant_table!`
/// (`suite/examples/constant_tables.rs` times them side by side).
#[clustered_device::kernel]
pub unsafe fn polynomial_global(
    x: *const f32,
    y: *mut f32,
    n: u32,
    degree: u32,
    coefficients: *const f32,
) {
    let i = index_1d();
    if i < n {
        let x_i = *x.add(i as usize);
        let mut value = 0.0f32;
        let mut k = degree;
        while k > 0 {
            k -= 1;
            value = fma(value, x_i, *coefficients.add(k as usize));
        }
        *y.add(i as usize) = value;
    }
}

/// `y[i] = COEFFICIENTS[indices[i] % 64]`: a constant table read at each
/// thread's own index, which the constant cache serves one address at a
/// time (what the macros warn about when they can see the index; here it
/// is loaded, so they cannot).
#[clustered_device::kernel]
pub unsafe fn lookup_constant(indices: *const u32, y: *mut f32, n: u32) {
    let i = index_1d();
    if i < n {
        *y.add(i as usize) = COEFFICIENTS.read(*indices.add(i as usize) % COEFFICIENTS.len());
    }
}

/// [`lookup_constant`](fn@lookup_constant) from a table in global memory
/// (`table`, 64 floats).
#[clustered_device::kernel]
pub unsafe fn lookup_global(indices: *const u32, y: *mut f32, n: u32, table: *const f32) {
    let i = index_1d();
    if i < n {
        *y.add(i as usize) = *table.add((*indices.add(i as usize) % COEFFICIENTS.len()) as usize);
    }
}

/// Coefficients of the fixed-degree polynomials below.
pub const HORNER_TERMS: u32 = 16;

/// [`polynomial`](fn@polynomial) of degree [`HORNER_TERMS`], fixed, from
/// [`COEFFICIENTS`]: the loop unrolls, every index is known, and ptxas
/// folds each read into its FMA (`c[0x3][imm]`).
#[clustered_device::kernel]
pub unsafe fn horner_constant(x: *const f32, y: *mut f32, n: u32) {
    let i = index_1d();
    if i < n {
        let x_i = *x.add(i as usize);
        let mut value = 0.0f32;
        for k in (0..HORNER_TERMS).rev() {
            value = fma(value, x_i, COEFFICIENTS.read(k));
        }
        *y.add(i as usize) = value;
    }
}

/// [`horner_constant`](fn@horner_constant) with the coefficients in
/// global memory (`coefficients`, [`HORNER_TERMS`] floats).
#[clustered_device::kernel]
pub unsafe fn horner_global(x: *const f32, y: *mut f32, n: u32, coefficients: *const f32) {
    let i = index_1d();
    if i < n {
        let x_i = *x.add(i as usize);
        let mut value = 0.0f32;
        for k in (0..HORNER_TERMS).rev() {
            value = fma(value, x_i, *coefficients.add(k as usize));
        }
        *y.add(i as usize) = value;
    }
}

/// [`horner_constant`](fn@horner_constant) with the coefficients passed by
/// value, as kernel parameters (which also live in the constant bank).
#[clustered_device::kernel]
pub unsafe fn horner_parameters(
    x: *const f32,
    y: *mut f32,
    n: u32,
    coefficients: [f32; HORNER_TERMS as usize],
) {
    let i = index_1d();
    if i < n {
        let x_i = *x.add(i as usize);
        let mut value = 0.0f32;
        for k in (0..HORNER_TERMS as usize).rev() {
            value = fma(value, x_i, coefficients[k]);
        }
        *y.add(i as usize) = value;
    }
}

constant_table! {
    /// 16-byte records, the coefficients of the cubics of
    /// [`cubic_records`](fn@cubic_records): one `ld.const.v4` each (two
    /// `LDC.64` in SASS).
    pub CUBICS: [F32x4; 16]
}

/// `y[i] = c0 + c1 x + c2 x^2 + c3 x^3` for `x = x[i]`, Horner's rule with
/// `fma`, the coefficients record `i / 32 % 16` of [`CUBICS`] (one record a
/// warp: what the constant cache serves in one request).
#[clustered_device::kernel]
pub unsafe fn cubic_records(x: *const f32, y: *mut f32, n: u32) {
    let i = index_1d();
    if i < n {
        let F32x4([c0, c1, c2, c3]) = CUBICS.read(i / 32 % CUBICS.len());
        let x_i = *x.add(i as usize);
        *y.add(i as usize) = fma(fma(fma(c3, x_i, c2), x_i, c1), x_i, c0);
    }
}
