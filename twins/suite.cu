// CUDA C++ twins of the suite's baseline kernels (kernels/src/*.rs).
//
// Purpose: measure the Rust baselines (rustc's NVPTX backend) against nvcc
// on the same algorithm, aiming at "within 5%". Each twin is the plain
// kernel as a careful CUDA programmer would write it, and nothing more:
//
// - Same name plus `_twin`, `extern "C"`, same parameters in the same order
//   with the same types (u32 -> unsigned int, f32 -> float, *const f32 ->
//   const float *), same launch shape, same bounds checks, same order of
//   floating-point operations.
// - Indices as CUDA programmers write them: `int`, whose overflow is
//   undefined, so nvcc widens a loop's addresses into 64-bit pointer steps.
//   (Literal `unsigned` translations of the u32 Rust were as slow as the
//   Rust, 0.2-5% off, and hid that both lost to this: issue 14. The Rust
//   kernels now index in usize, `clustered::index::at`.)
// - `fmaf` exactly where the Rust kernel calls `fma`; everything else is a
//   separate multiply and add: scripts/build-twins.sh compiles with
//   `-fmad=false`, because rustc never contracts `a * b + c` and nvcc does by
//   default. With that (and no fast-math: IEEE division, denormals kept) a
//   twin computes the same bits as its Rust kernel and as the CPU reference
//   (suite/src/reference.rs).
// - No `__restrict__`: rustc gives LLVM no aliasing facts about raw
//   pointers, so the Rust kernels can neither use the read-only path
//   (`ld.global.nc`) nor move loads across stores. A restrict-qualified twin
//   would measure what nvcc is told, not how well it compiles; the twins are
//   told the same as rustc. (A `__restrict__` twin is a one-word experiment
//   for later.)
// - `__launch_bounds__` exactly where the Rust kernel has `#[launch_bounds]`,
//   no vector types (nvcc makes the same 16-byte shared loads of the
//   register-tiled SGEMM that its Rust kernel spells `F32x4`), no
//   unrolling beyond what the Rust source spells out or LLVM does anyway:
//   `#pragma unroll` only on the fixed-size register loops of
//   `sgemm_register_twin`, which LLVM unrolls fully in the Rust kernel.
// - Shared arrays are 16-byte aligned, as `shared_array!` declares them.
//
// The scheduler-test kernels `coverage` and `spin` (they record %smid and
// spin on the clock) have no twins: there is nothing to compare.

#include <cfloat>

// ---------------------------------------------------------------- vector.rs

extern "C" __global__ void vector_add_twin(const float *a, const float *b, float *c,
                                           unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}

// ----------------------------------------------------------------- sgemm.rs

#define TILE 32u

extern "C" __global__ void sgemm_tiled_twin(const float *a, const float *b, float *c,
                                            unsigned int n) {
    __shared__ __align__(16) float tile_a[TILE * TILE];
    __shared__ __align__(16) float tile_b[TILE * TILE];
    unsigned int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    int N = n;
    float sum = 0.0f;
    for (int k0 = 0; k0 < N; k0 += TILE) {
        tile_a[ty * TILE + tx] = a[row * N + k0 + (int)tx];
        tile_b[ty * TILE + tx] = b[(k0 + (int)ty) * N + col];
        __syncthreads();
        for (unsigned int k = 0; k < TILE; ++k) {
            sum = fmaf(tile_a[ty * TILE + k], tile_b[k * TILE + tx], sum);
        }
        __syncthreads();
    }
    c[row * N + col] = sum;
}

// ----------------------------------------------------------- sgemm_naive.rs

extern "C" __global__ void sgemm_naive_twin(const float *a, const float *b, float *c,
                                            unsigned int n) {
    int row = blockIdx.y * 16 + threadIdx.y;
    int col = blockIdx.x * 16 + threadIdx.x;
    int N = n;
    float sum = 0.0f;
    for (int k = 0; k < N; ++k) {
        sum = fmaf(a[row * N + k], b[k * N + col], sum);
    }
    c[row * N + col] = sum;
}

// -------------------------------------------------------- sgemm_register.rs

#define BM 128u
#define BN 128u
#define BK 8u
#define A_STRIDE (BM + 4u)

// One k of the shared tiles: 8 values of A, 8 of B, 64 fmaf.
__device__ __forceinline__ void multiply_k(float (&acc)[8][8], const float *a_rows,
                                           const float *b_columns, unsigned int k) {
    float av[8], bv[8];
#pragma unroll
    for (unsigned int i = 0; i < 4; ++i) {
        av[i] = a_rows[k * A_STRIDE + i];
        av[i + 4] = a_rows[k * A_STRIDE + 64 + i];
        bv[i] = b_columns[k * BN + i];
        bv[i + 4] = b_columns[k * BN + 64 + i];
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }
    }
}

extern "C" __global__ void __launch_bounds__(256, 2) sgemm_register_twin(const float *a, const float *b, float *c,
                                               unsigned int n) {
    __shared__ __align__(16) float a_tile[BK * A_STRIDE];
    __shared__ __align__(16) float b_tile[BK * BN];
    unsigned int t = threadIdx.x;
    unsigned int row0 = blockIdx.y * BM;
    unsigned int col0 = blockIdx.x * BN;
    unsigned int a_row = t / 2, a_col = t % 2 * 4;
    unsigned int b_row = t / 32, b_col = t % 32;
    unsigned int a_from = (row0 + a_row) * n + a_col;
    unsigned int b_from = b_row * n + col0 + b_col;
    unsigned int tx = t % 16, ty = t / 16;
    const float *a_rows = a_tile + ty * 4;
    const float *b_columns = b_tile + tx * 4;

    float a_next[4], b_next[4];
#pragma unroll
    for (unsigned int j = 0; j < 4; ++j) {
        a_next[j] = a[a_from + j];
        b_next[j] = b[b_from + 32 * j];
    }
    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            acc[i][j] = 0.0f;
        }
    }
    unsigned int k0 = 0;
    while (k0 < n) {
#pragma unroll
        for (unsigned int j = 0; j < 4; ++j) {
            a_tile[(a_col + j) * A_STRIDE + a_row] = a_next[j];
            b_tile[b_row * BN + b_col + 32 * j] = b_next[j];
        }
        __syncthreads();
        unsigned int k1 = k0 + BK;
        unsigned int k_next = k1 < n ? k1 : k0;
#pragma unroll
        for (unsigned int j = 0; j < 4; ++j) {
            a_next[j] = a[a_from + k_next + j];
            b_next[j] = b[b_from + k_next * n + 32 * j];
        }
        multiply_k(acc, a_rows, b_columns, 0);
        multiply_k(acc, a_rows, b_columns, 1);
        multiply_k(acc, a_rows, b_columns, 2);
        multiply_k(acc, a_rows, b_columns, 3);
        multiply_k(acc, a_rows, b_columns, 4);
        multiply_k(acc, a_rows, b_columns, 5);
        multiply_k(acc, a_rows, b_columns, 6);
        multiply_k(acc, a_rows, b_columns, 7);
        __syncthreads();
        k0 = k1;
    }
#pragma unroll
    for (unsigned int i = 0; i < 8; ++i) {
        unsigned int row = row0 + (i / 4) * 64 + ty * 4 + i % 4;
#pragma unroll
        for (unsigned int j = 0; j < 8; ++j) {
            unsigned int col = col0 + (j / 4) * 64 + tx * 4 + j % 4;
            c[row * n + col] = acc[i][j];
        }
    }
}

// ------------------------------------------------------------------ conv.rs

// The filter by value, like the Rust kernel's `[f32; 25]`: in the
// parameters' constant bank, as `__constant__` weights would be.
struct Filter5x5 {
    float w[25];
};

extern "C" __global__ void conv5x5_twin(const float *input, Filter5x5 filter, float *output,
                                        unsigned int width, unsigned int height) {
    int x = blockIdx.x * 16 + threadIdx.x;
    int y = blockIdx.y * 16 + threadIdx.y;
    int w = width, h = height;
    if (x < w && y < h) {
        float sum = 0.0f;
        for (int dy = 0; dy < 5; ++dy) {
            int yy = y + dy - 2;
            for (int dx = 0; dx < 5; ++dx) {
                int xx = x + dx - 2;
                float value = (yy >= 0 && yy < h && xx >= 0 && xx < w) ? input[yy * w + xx] : 0.0f;
                sum = fmaf(value, filter.w[dy * 5 + dx], sum);
            }
        }
        output[y * w + x] = sum;
    }
}

// `value`, computed here: a register move nvcc must leave in place, as the
// device runtime's `memory::settled`.
__device__ __forceinline__ float settled(float value) {
    asm volatile("mov.b32 %0, %0;" : "+f"(value));
    return value;
}

// The same convolution staged in shared memory, as conv5x5_tiled: 32 x 32
// outputs per block of 32 x 8 threads, 4 rows per thread, the 36 x 36 tile
// loaded once, by rows; each output's 25 FMAs in the same order. Written as
// the Rust is since session 48: the first 4 rows of threads stage a fifth
// row first, then every thread its 4 rows with 8 loads in flight before the
// stores, and each sum passes through a volatile register move before the
// stores' tests (nvcc, like LLVM, would sink the FMAs under them). On an
// H100 0.843 ms against the Rust's 0.844; the literal loop over rows it
// replaces ran 0.905 (docs/BENCHMARKS.md, session 48's section, "... three
// twins as the Rust is written ...").
extern "C" __global__ void conv5x5_tiled_twin(const float *input, Filter5x5 filter, float *output,
                                              unsigned int width, unsigned int height) {
    __shared__ float tile[36 * 36];
    unsigned int tx = threadIdx.x, ty = threadIdx.y;
    unsigned int x0 = blockIdx.x * 32, y0 = blockIdx.y * 32;
    // Column tx of rows ty, ty + 8, .., and on the first 4 lanes the halo
    // column tx + 32; xx wraps below zero, so one unsigned test checks both ends.
    unsigned int xx = x0 + tx - 2;
    bool halo_lane = tx < 4, inside = xx < width, halo_inside = halo_lane && xx + 32 < width;
    const float *column = input + ((long long)(x0 + tx) - 2);
    unsigned int first_row = ty;
    if (ty < 4) {
        unsigned int yy = y0 + ty - 2;
        const float *line = column + (size_t)yy * width;
        bool row_inside = yy < height;
        float value = row_inside && inside ? *line : 0.0f;
        float halo = row_inside && halo_inside ? line[32] : 0.0f;
        tile[ty * 36 + tx] = value;
        if (halo_lane) tile[ty * 36 + tx + 32] = halo;
        first_row += 8;
    }
    float values[4], halos[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        unsigned int yy = y0 + first_row + i * 8 - 2;
        const float *line = column + (size_t)yy * width;
        bool row_inside = yy < height;
        values[i] = row_inside && inside ? *line : 0.0f;
        halos[i] = row_inside && halo_inside ? line[32] : 0.0f;
    }
    unsigned int at = first_row * 36 + tx;
#pragma unroll
    for (int i = 0; i < 4; ++i) tile[at + i * 8 * 36] = values[i];
    if (halo_lane) {
#pragma unroll
        for (int i = 0; i < 4; ++i) tile[at + i * 8 * 36 + 32] = halos[i];
    }
    __syncthreads();
    unsigned int first = ty * 4, base = first * 36 + tx;
    float sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int dy = 0; dy < 5; ++dy) {
#pragma unroll
        for (int dx = 0; dx < 5; ++dx) {
            float weight = filter.w[dy * 5 + dx];
#pragma unroll
            for (int r = 0; r < 4; ++r) sum[r] = fmaf(tile[base + (r + dy) * 36 + dx], weight, sum[r]);
        }
    }
#pragma unroll
    for (int r = 0; r < 4; ++r) sum[r] = settled(sum[r]);
    unsigned int x = x0 + tx;
    float *out = output + (size_t)(y0 + first) * width + x;
#pragma unroll
    for (int r = 0; r < 4; ++r) {
        if (x < width && y0 + first + r < height) *out = sum[r];
        out += width;
    }
}

// ---------------------------------------------------------------- kmeans.rs

extern "C" __global__ void kmeans_assign_twin(const float *points, const float *centroids,
                                              unsigned int *membership, unsigned int npoints,
                                              unsigned int nfeatures, unsigned int nclusters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int nf = nfeatures, nc = nclusters;
    if (i < (int)npoints) {
        unsigned int best = 0;
        float best_distance = FLT_MAX;
        for (int c = 0; c < nc; ++c) {
            float distance = 0.0f;
            for (int f = 0; f < nf; ++f) {
                float d = points[i * nf + f] - centroids[c * nf + f];
                distance = fmaf(d, d, distance);
            }
            if (distance < best_distance) {
                best_distance = distance;
                best = c;
            }
        }
        membership[i] = best;
    }
}

// ------------------------------------------------------------------ syrk.rs

extern "C" __global__ void syrk_twin(const float *a, float *c, float alpha, float beta,
                                     unsigned int n, unsigned int m) {
    int i = blockIdx.y * 16 + threadIdx.y;
    int j = blockIdx.x * 16 + threadIdx.x;
    int N = n, M = m;
    if (i < N && j < N) {
        float sum = 0.0f;
        for (int k = 0; k < M; ++k) {
            sum = fmaf(a[i * M + k], a[j * M + k], sum);
        }
        int at = i * N + j;
        c[at] = fmaf(alpha, sum, beta * c[at]);
    }
}

// ------------------------------------------------------------------ atax.rs
// Both passes run 64 blocks for 132 SMs, so an expert bounds them to one
// block per SM and lets ptxas spend registers on loads in flight: the row
// pass 2.28 -> 2.20 ms, the column pass, unrolled 32 deep like the Rust
// rounds, 1.06 -> 0.51 ms (H100; docs/BENCHMARKS.md, "Launch bounds").
// The Rust column pass has the same #[launch_bounds]; its row pass gained
// nothing from them (2.21 ms either way) and has none.

extern "C" __global__ void __launch_bounds__(256, 1) atax_rows_twin(const float *a, const float *x, float *tmp,
                                          unsigned int nx, unsigned int ny) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int NX = nx, NY = ny;
    if (i < NX) {
        float sum = 0.0f;
        for (int j = 0; j < NY; ++j) {
            sum = fmaf(a[i * NY + j], x[j], sum);
        }
        tmp[i] = sum;
    }
}

// The row pass with a block of 256 per row, as a GEMV is written by hand:
// coalesced loads, 8 per thread in flight, a tree through shared memory; the
// same order as atax_rows_gemv (kernels/src/atax.rs).
extern "C" __global__ void atax_rows_gemv_twin(const float *a, const float *x, float *tmp,
                                               unsigned int nx, unsigned int ny) {
    __shared__ float partial[256];
    unsigned int row = blockIdx.x, t = threadIdx.x;
    if (row >= nx) return;
    const float *a_row = a + (size_t)row * ny;
    float sum = 0.0f;
    int j = t, NY = ny;
    for (; j + 7 * 256 < NY; j += 8 * 256) {
        float v[8];
#pragma unroll
        for (int u = 0; u < 8; ++u) v[u] = a_row[j + u * 256];
#pragma unroll
        for (int u = 0; u < 8; ++u) sum = fmaf(v[u], x[j + u * 256], sum);
    }
    for (; j < NY; j += 256) sum = fmaf(a_row[j], x[j], sum);
    partial[t] = sum;
    __syncthreads();
    for (unsigned int s = 128; s > 0; s /= 2) {
        if (t < s) partial[t] = partial[t] + partial[t + s];
        __syncthreads();
    }
    if (t == 0) tmp[row] = partial[0];
}

// The column pass as a transposed GEMV is written by hand: 32 warps split
// the rows, four columns per lane in one float4 load, 8 rows in flight, a
// tree over the warps through shared memory; the same order as
// atax_columns_gemv (kernels/src/atax.rs).
extern "C" __global__ void __launch_bounds__(1024, 1) atax_columns_gemv_twin(
    const float *a, const float *tmp, float *y, unsigned int nx, unsigned int ny) {
    __shared__ float partial[4 * 1024];
    unsigned int lane = threadIdx.x, group = threadIdx.y, t = 32 * group + lane;
    unsigned int column = blockIdx.x * 128 + 4 * lane;
    float sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (column < ny) {
        size_t NY = ny;
        int NX = nx, i = group;
        for (; i + 7 * 32 < NX; i += 8 * 32) {
            float4 v[8];
#pragma unroll
            for (int u = 0; u < 8; ++u) v[u] = *(const float4 *)(a + (size_t)(i + u * 32) * NY + column);
#pragma unroll
            for (int u = 0; u < 8; ++u) {
                float w = tmp[i + u * 32];
                sum[0] = fmaf(v[u].x, w, sum[0]);
                sum[1] = fmaf(v[u].y, w, sum[1]);
                sum[2] = fmaf(v[u].z, w, sum[2]);
                sum[3] = fmaf(v[u].w, w, sum[3]);
            }
        }
        for (; i < NX; i += 32) {
            float4 v = *(const float4 *)(a + (size_t)i * NY + column);
            float w = tmp[i];
            sum[0] = fmaf(v.x, w, sum[0]);
            sum[1] = fmaf(v.y, w, sum[1]);
            sum[2] = fmaf(v.z, w, sum[2]);
            sum[3] = fmaf(v.w, w, sum[3]);
        }
    }
#pragma unroll
    for (int k = 0; k < 4; ++k) partial[k * 1024 + t] = sum[k];
    __syncthreads();
    for (unsigned int s = 16; s > 0; s /= 2) {
        if (group < s) {
#pragma unroll
            for (int k = 0; k < 4; ++k)
                partial[k * 1024 + t] = partial[k * 1024 + t] + partial[k * 1024 + t + 32 * s];
        }
        __syncthreads();
    }
    if (group == 0 && column < ny)
        *(float4 *)(y + column) = make_float4(partial[lane], partial[1024 + lane],
                                              partial[2048 + lane], partial[3072 + lane]);
}

extern "C" __global__ void __launch_bounds__(256, 1) atax_columns_twin(
    const float *a, const float *tmp, float *y, unsigned int nx, unsigned int ny) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int NX = nx, NY = ny;
    if (j < NY) {
        float sum = 0.0f;
#pragma unroll 32
        for (int i = 0; i < NX; ++i) {
            sum = fmaf(a[i * NY + j], tmp[i], sum);
        }
        y[j] = sum;
    }
}

// ------------------------------------------------ math.rs, black_scholes.rs
// kernels/src/math/functions.rs, operation for operation (same literals).

__device__ __forceinline__ float suite_abs(float x) {
    return __uint_as_float(__float_as_uint(x) & 0x7fffffffu);
}

__device__ __forceinline__ float suite_exp(float x) {
    const float LOG2_E = 1.44269504088896340736f;
    const float LN2_HI = 6.9314575e-1f;
    const float LN2_LO = 1.4286068e-6f;
    const float SHIFT = 12582912.0f;
    x = x > 88.8f ? 88.8f : (x < -104.0f ? -104.0f : x);  // Rust's clamp: keeps NaN
    float shifted = fmaf(x, LOG2_E, SHIFT);
    float k = shifted - SHIFT;
    float r = fmaf(-k, LN2_HI, x);
    r = fmaf(-k, LN2_LO, r);
    float p = 1.984127e-4f;
    p = fmaf(p, r, 1.3888889e-3f);
    p = fmaf(p, r, 8.333334e-3f);
    p = fmaf(p, r, 4.1666668e-2f);
    p = fmaf(p, r, 1.6666667e-1f);
    p = fmaf(p, r, 0.5f);
    p = fmaf(p, r, 1.0f);
    p = fmaf(p, r, 1.0f);
    int ki = (int)__float_as_uint(shifted) - (int)__float_as_uint(SHIFT);
    int half = ki >> 1;
    float first = __uint_as_float((unsigned int)(half + 127) << 23);
    float second = __uint_as_float((unsigned int)(ki - half + 127) << 23);
    return p * first * second;
}

__device__ __forceinline__ float suite_ln(float x) {
    const float LN2_HI = 6.931381e-1f;
    const float LN2_LO = 9.058001e-6f;
    const float LG1 = 0.6666666f;
    const float LG2 = 0.40000972f;
    const float LG3 = 0.28498787f;
    const float LG4 = 0.24279079f;
    unsigned int bits = __float_as_uint(x) + (0x3f800000u - 0x3f3504f3u);
    int k = (int)(bits >> 23) - 0x7f;
    float f = __uint_as_float((bits & 0x007fffffu) + 0x3f3504f3u) - 1.0f;
    float s = f / (2.0f + f);
    float z = s * s;
    float w = z * z;
    float t1 = w * fmaf(w, LG4, LG2);
    float t2 = z * fmaf(w, LG3, LG1);
    float r = t2 + t1;
    float half_f2 = 0.5f * f * f;
    float dk = (float)k;
    return s * (half_f2 + r) + dk * LN2_LO - half_f2 + f + dk * LN2_HI;
}

__device__ __forceinline__ float suite_sqrt(float x) {
    float half = 0.5f * x;
    float y = __uint_as_float(0x5f375a86u - (__float_as_uint(x) >> 1));
    y = y * fmaf(-half * y, y, 1.5f);
    y = y * fmaf(-half * y, y, 1.5f);
    float s = x * y;
    float residual = fmaf(-s, s, x);
    return fmaf(residual, 0.5f * y, s);
}

__device__ __forceinline__ float suite_cnd(float d) {
    const float A1 = 0.31938153f;
    const float A2 = -0.35656378f;
    const float A3 = 1.7814779f;
    const float A4 = -1.8212559f;
    const float A5 = 1.3302745f;
    const float RSQRT_2PI = 0.3989423f;
    float k = 1.0f / fmaf(0.2316419f, suite_abs(d), 1.0f);
    float poly = k * fmaf(k, fmaf(k, fmaf(k, fmaf(k, A5, A4), A3), A2), A1);
    float tail = RSQRT_2PI * suite_exp(-0.5f * d * d) * poly;
    return d > 0.0f ? 1.0f - tail : tail;
}

extern "C" __global__ void black_scholes_twin(float *call, float *put, const float *price,
                                              const float *strike, const float *years,
                                              float riskfree, float volatility, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float s = price[i];
        float x = strike[i];
        float t = years[i];
        float sqrt_t = suite_sqrt(t);
        float d1 = (suite_ln(s / x) + (riskfree + 0.5f * volatility * volatility) * t) /
                   (volatility * sqrt_t);
        float d2 = d1 - volatility * sqrt_t;
        float cnd_d1 = suite_cnd(d1);
        float cnd_d2 = suite_cnd(d2);
        float discount = suite_exp(-riskfree * t);
        call[i] = s * cnd_d1 - x * discount * cnd_d2;
        put[i] = x * discount * (1.0f - cnd_d2) - s * (1.0f - cnd_d1);
    }
}

// The CUDA SDK sample's Black-Scholes (BlackScholes_kernel.cuh): the same
// formulas with the fast intrinsics (__fdividef, __logf, __expf, rsqrtf),
// the polynomial in the Rust kernel's fmaf Horner form.

__device__ __forceinline__ float sdk_cnd(float d) {
    const float A1 = 0.31938153f;
    const float A2 = -0.35656378f;
    const float A3 = 1.7814779f;
    const float A4 = -1.8212559f;
    const float A5 = 1.3302745f;
    const float RSQRT_2PI = 0.3989423f;
    float k = __fdividef(1.0f, fmaf(0.2316419f, fabsf(d), 1.0f));
    float poly = k * fmaf(k, fmaf(k, fmaf(k, fmaf(k, A5, A4), A3), A2), A1);
    float tail = RSQRT_2PI * __expf(-0.5f * d * d) * poly;
    return d > 0.0f ? 1.0f - tail : tail;
}

extern "C" __global__ void black_scholes_fast_twin(float *call, float *put, const float *price,
                                                   const float *strike, const float *years,
                                                   float riskfree, float volatility,
                                                   unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float s = price[i];
        float x = strike[i];
        float t = years[i];
        float sqrt_t = __fdividef(1.0f, rsqrtf(t));
        float d1 = __fdividef(__logf(s / x) + (riskfree + 0.5f * volatility * volatility) * t,
                              volatility * sqrt_t);
        float d2 = d1 - volatility * sqrt_t;
        float cnd_d1 = sdk_cnd(d1);
        float cnd_d2 = sdk_cnd(d2);
        float discount = __expf(-riskfree * t);
        call[i] = s * cnd_d1 - x * discount * cnd_d2;
        put[i] = x * discount * (1.0f - cnd_d2) - s * (1.0f - cnd_d1);
    }
}

// ------------------------------------------------------------- transpose.rs

extern "C" __global__ void transpose_naive_twin(const float *input, float *output,
                                                unsigned int width, unsigned int height) {
    unsigned int x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height) {
        output[x * height + y] = input[y * width + x];
    }
}

// The transpose through a 32 x 33 shared tile, as transpose_tiled (the
// CUDA samples' "coalesced, no bank conflicts" kernel): block 32 x 8.
extern "C" __global__ void transpose_tiled_twin(const float *input, float *output,
                                                unsigned int width, unsigned int height) {
    __shared__ float tile[32][33];
    unsigned int x0 = blockIdx.x * 32, y0 = blockIdx.y * 32;
    unsigned int x = x0 + threadIdx.x;
    for (unsigned int row = threadIdx.y; row < 32; row += 8) {
        unsigned int y = y0 + row;
        if (x < width && y < height) tile[row][threadIdx.x] = input[(size_t)y * width + x];
    }
    __syncthreads();
    unsigned int y = y0 + threadIdx.x;
    for (unsigned int column = threadIdx.y; column < 32; column += 8) {
        unsigned int xc = x0 + column;
        if (xc < width && y < height) output[(size_t)xc * height + y] = tile[threadIdx.x][column];
    }
}

// --------------------------------------------------------------- jacobi5.rs

extern "C" __global__ void jacobi5_twin(const float *input, float *output, unsigned int width,
                                        unsigned int height) {
    unsigned int x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height) {
        unsigned int at = y * width + x;
        float c = input[at];
        float value;
        if (x == 0 || y == 0 || x == width - 1 || y == height - 1) {
            value = c;
        } else {
            float n = input[at - width];
            float s = input[at + width];
            float e = input[at + 1];
            float w = input[at - 1];
            value = 0.2f * (c + n + s + e + w);
        }
        output[at] = value;
    }
}

// --------------------------------------------------------------- jacobi7.rs

extern "C" __global__ void jacobi7_3d_twin(const float *input, float *output, unsigned int nx,
                                           unsigned int ny, unsigned int nz, float c0,
                                           float c1) {
    unsigned int x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int y = blockIdx.y * blockDim.y + threadIdx.y;
    unsigned int z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x < nx && y < ny && z < nz) {
        unsigned int plane = nx * ny;
        unsigned int at = (z * ny + y) * nx + x;
        bool border = x == 0 || y == 0 || z == 0 || x == nx - 1 || y == ny - 1 || z == nz - 1;
        float centre = input[at];
        float value;
        if (border) {
            value = centre;
        } else {
            float z_up = input[at + plane];
            float z_down = input[at - plane];
            float y_up = input[at + nx];
            float y_down = input[at - nx];
            float x_up = input[at + 1];
            float x_down = input[at - 1];
            value = c1 * (z_up + z_down + y_up + y_down + x_up + x_down) - c0 * centre;
        }
        output[at] = value;
    }
}

// Each thread walks `rows` rows down its column, the points above, at and
// below it in registers (jacobi5.rs, jacobi5_march); pointers step by a row.
extern "C" __global__ void jacobi5_march_twin(const float *input, float *output,
                                              unsigned int width, unsigned int height,
                                              unsigned int rows) {
    unsigned int x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int y0 = blockIdx.y * rows;
    if (x < width && y0 < height) {
        unsigned int y_end = min(y0 + rows, height);
        size_t row = width;
        bool edge = x == 0 || x == width - 1;
        size_t first = (size_t)y0 * row + x;
        const float *from = input + first;
        float *to = output + first;
        float north = y0 > 0 ? from[-(ptrdiff_t)row] : 0.0f;
        float centre = *from;
        for (unsigned int y = y0; y < y_end; ++y) {
            float south = y + 1 < height ? from[row] : 0.0f;
            if (edge || y == 0 || y == height - 1) {
                *to = centre;
            } else {
                float e = from[1];
                float w = from[-1];
                *to = 0.2f * (centre + north + south + e + w);
            }
            north = centre;
            centre = south;
            from += row;
            to += row;
        }
    }
}

// jacobi5_march_twin with four columns per thread as float4 (jacobi5.rs,
// jacobi5_march4): the row below one 16-byte load, the quad's outer
// neighbours single floats; width a multiple of 4. Not the Rust kernel's
// two rows a step: written so, nvcc's loop took 1.652-1.653 ms against this
// one's 1.604-1.615 (H100, docs/BENCHMARKS.md), so the twin keeps the faster
// C++.
extern "C" __global__ void jacobi5_march4_twin(const float *input, float *output,
                                               unsigned int width, unsigned int height,
                                               unsigned int rows) {
    unsigned int x = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
    unsigned int y0 = blockIdx.y * rows;
    if (x < width && y0 < height) {
        unsigned int y_end = min(y0 + rows, height);
        size_t row = width;
        bool first_column = x == 0, last_column = x + 4 == width;
        size_t first = (size_t)y0 * row + x;
        const float *from = input + first;
        float *to = output + first;
        float4 north = y0 > 0 ? *(const float4 *)(from - row) : make_float4(0, 0, 0, 0);
        float4 centre = *(const float4 *)from;
        for (unsigned int y = y0; y < y_end; ++y) {
            float4 south = y + 1 < height ? *(const float4 *)(from + row) : make_float4(0, 0, 0, 0);
            float4 value = centre;
            if (y != 0 && y != height - 1) {
                float w = from[-1];
                float e = from[4];
                value.x = first_column ? centre.x
                                       : 0.2f * (centre.x + north.x + south.x + centre.y + w);
                value.y = 0.2f * (centre.y + north.y + south.y + centre.z + centre.x);
                value.z = 0.2f * (centre.z + north.z + south.z + centre.w + centre.y);
                value.w = last_column ? centre.w
                                      : 0.2f * (centre.w + north.w + south.w + e + centre.z);
            }
            *(float4 *)to = value;
            north = centre;
            centre = south;
            from += row;
            to += row;
        }
    }
}

// Each thread walks `planes` z-planes, the points below, at and above it in
// registers (jacobi7.rs, jacobi7_3d_march); pointers step by a plane.
extern "C" __global__ void jacobi7_3d_march_twin(const float *input, float *output,
                                                 unsigned int nx, unsigned int ny,
                                                 unsigned int nz, float c0, float c1,
                                                 unsigned int planes) {
    unsigned int x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int y = blockIdx.y * blockDim.y + threadIdx.y;
    unsigned int z0 = blockIdx.z * planes;
    if (x < nx && y < ny && z0 < nz) {
        unsigned int z_end = min(z0 + planes, nz);
        size_t row = nx, plane = (size_t)nx * ny;
        bool edge = x == 0 || y == 0 || x == nx - 1 || y == ny - 1;
        size_t first = ((size_t)z0 * ny + y) * row + x;
        const float *from = input + first;
        float *to = output + first;
        float below = z0 > 0 ? from[-(ptrdiff_t)plane] : 0.0f;
        float centre = *from;
        for (unsigned int z = z0; z < z_end; ++z) {
            float above = z + 1 < nz ? from[plane] : 0.0f;
            if (edge || z == 0 || z == nz - 1) {
                *to = centre;
            } else {
                float y_up = from[row];
                float y_down = from[-(ptrdiff_t)row];
                float x_up = from[1];
                float x_down = from[-1];
                *to = c1 * (above + below + y_up + y_down + x_up + x_down) - c0 * centre;
            }
            below = centre;
            centre = above;
            from += plane;
            to += plane;
        }
    }
}

// jacobi7_3d_march_twin with four x-columns per thread as float4
// (jacobi7.rs, jacobi7_3d_march4); nx a multiple of 4. As the Rust kernel,
// two planes a step with all their loads before either store (0.401-0.402
// ms on an H100 against 0.404-0.405 for a plane a step: docs/BENCHMARKS.md,
// "The quad walks two steps at a time").
__device__ __forceinline__ float4 jacobi7_quad(float4 b, float4 c, float4 a, float4 yu, float4 yd,
                                               float xu, float xd, bool first_edge,
                                               bool edge_row, bool last_edge, float c0,
                                               float c1) {
    float4 v = c;
    if (!first_edge) v.x = c1 * (a.x + b.x + yu.x + yd.x + c.y + xd) - c0 * c.x;
    if (!edge_row) {
        v.y = c1 * (a.y + b.y + yu.y + yd.y + c.z + c.x) - c0 * c.y;
        v.z = c1 * (a.z + b.z + yu.z + yd.z + c.w + c.y) - c0 * c.z;
    }
    if (!last_edge) v.w = c1 * (a.w + b.w + yu.w + yd.w + xu + c.z) - c0 * c.w;
    return v;
}

// Launch bounds as the Rust kernel's (four blocks of 256 an SM): 64
// registers, 0.277-0.280 ms on an H200 against 0.282-0.288 at ptxas's own
// 48 and five blocks (docs/BENCHMARKS.md, "Launch bounds at the occupancy
// a kernel has").
extern "C" __global__ void __launch_bounds__(256, 4) jacobi7_3d_march4_twin(const float *input,
                                                  float *output, unsigned int nx,
                                                  unsigned int ny, unsigned int nz, float c0,
                                                  float c1, unsigned int planes) {
    unsigned int x = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
    unsigned int y = blockIdx.y * blockDim.y + threadIdx.y;
    unsigned int z0 = blockIdx.z * planes;
    if (x < nx && y < ny && z0 < nz) {
        unsigned int z_end = min(z0 + planes, nz);
        size_t row = nx, plane = (size_t)nx * ny;
        bool edge_row = y == 0 || y == ny - 1;
        bool first_edge = edge_row || x == 0, last_edge = edge_row || x + 4 == nx;
        size_t first = ((size_t)z0 * ny + y) * row + x;
        const float *from = input + first;
        float *to = output + first;
        float4 below = z0 > 0 ? *(const float4 *)(from - plane) : make_float4(0, 0, 0, 0);
        float4 centre = *(const float4 *)from;
        unsigned int z = z0;
        if (z == 0) {
            *(float4 *)to = centre;
            below = centre;
            centre = nz > 1 ? *(const float4 *)(from + plane) : make_float4(0, 0, 0, 0);
            from += plane;
            to += plane;
            z = 1;
        }
        unsigned int walk_end = z_end == nz ? nz - 1 : z_end;
        for (; z + 1 < walk_end; z += 2) {
            float4 above = *(const float4 *)(from + plane);
            float4 yu = *(const float4 *)(from + row), yd = *(const float4 *)(from - row);
            float xu = from[4], xd = from[-1];
            const float *next = from + plane;
            float4 above2 = *(const float4 *)(next + plane);
            float4 yu2 = *(const float4 *)(next + row), yd2 = *(const float4 *)(next - row);
            float xu2 = next[4], xd2 = next[-1];
            *(float4 *)to = jacobi7_quad(below, centre, above, yu, yd, xu, xd, first_edge,
                                         edge_row, last_edge, c0, c1);
            *(float4 *)(to + plane) = jacobi7_quad(centre, above, above2, yu2, yd2, xu2, xd2,
                                                   first_edge, edge_row, last_edge, c0, c1);
            below = above;
            centre = above2;
            from += 2 * plane;
            to += 2 * plane;
        }
        if (z < walk_end) {
            float4 above = *(const float4 *)(from + plane);
            float4 yu = *(const float4 *)(from + row), yd = *(const float4 *)(from - row);
            *(float4 *)to = jacobi7_quad(below, centre, above, yu, yd, from[4], from[-1],
                                         first_edge, edge_row, last_edge, c0, c1);
            centre = above;
            to += plane;
            ++z;
        }
        if (z < z_end) *(float4 *)to = centre;
    }
}
