// Probe (issue 15, session 52): does a publishing warp take a task's
// release fence off a pool worker's path? docs/BENCHMARKS.md, "A warp that
// publishes", has what it measured. On the GPU machine:
//
//   nvcc -arch=sm_90 -O3 -o pubwarp scripts/probes/pool-publishing-warp.cu && ./pubwarp 4096
//
// One block emulates a worker running a chain of empty tasks: per task its
// 128 threads store a word (the task's writes), meet at a barrier, and the
// task is published: status and result into mapped host memory, a
// GPU-scope release fence, the done count in device memory.
//   mode 0: thread 0 publishes each task (protocol 7, `device/src/pool.rs`);
//   mode 1: thread 0 hands the task to a fifth warp through shared memory
//           (st.release.cta / ld.acquire.cta), whose first thread publishes
//           every task ended since its last look under one fence (protocol 8);
//   mode 2: mode 0 without the fence (not a protocol: the floor);
//   mode 3: mode 1 without the fence (what the polling alone costs).
// Every mode checks that the done count reached the task count.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1);} } while (0)

__device__ __forceinline__ void bar_compute() { asm volatile("bar.sync 1, 128;" ::: "memory"); }
__device__ __forceinline__ void fence_release_gpu() { asm volatile("fence.release.gpu;" ::: "memory"); }
__device__ __forceinline__ void st_relaxed_gpu(unsigned *p, unsigned v) { asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory"); }
__device__ __forceinline__ void st_relaxed_sys(unsigned *p, unsigned v) { asm volatile("st.relaxed.sys.global.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory"); }
__device__ __forceinline__ void st_release_cta_shared(unsigned *p, unsigned v) {
  unsigned a = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("st.release.cta.shared.u32 [%0], %1;" :: "r"(a), "r"(v) : "memory"); }
__device__ __forceinline__ unsigned ld_acquire_cta_shared(unsigned *p) {
  unsigned a = (unsigned)__cvta_generic_to_shared(p), v;
  asm volatile("ld.acquire.cta.shared.u32 %0, [%1];" : "=r"(v) : "r"(a) : "memory"); return v; }
__device__ __forceinline__ unsigned ld_relaxed_cta_shared(unsigned *p) {
  unsigned a = (unsigned)__cvta_generic_to_shared(p), v;
  asm volatile("ld.relaxed.cta.shared.u32 %0, [%1];" : "=r"(v) : "r"(a) : "memory"); return v; }

__global__ void chain(int mode, unsigned rounds, unsigned *scratch, unsigned *done,
                      unsigned *host, unsigned long long *out) {
  __shared__ unsigned ended, status[2];
  unsigned t = threadIdx.x;
  if (t == 0) ended = 0;
  __syncthreads();
  bool publisher = (mode == 1 || mode == 3) && t >= 128;
  if (publisher) {
    if (t != 128) return;  // one lane publishes
    unsigned seen = 0, fences = 0;
    unsigned long long begin = clock64();
    while (seen != rounds) {
      unsigned e = ld_acquire_cta_shared(&ended);
      if (e == seen) continue;
      st_relaxed_sys(host, status[0]);
      st_relaxed_sys(host + 1, e);
      if (mode == 1) fence_release_gpu();
      st_relaxed_gpu(done, e);
      seen = e;
      fences++;
    }
    out[2] = clock64() - begin;
    out[3] = fences;
    return;
  }
  unsigned long long begin = clock64();
  for (unsigned r = 0; r < rounds; r++) {
    volatile unsigned *s = scratch;
    s[t] = r ^ t;          // the task's writes
    bar_compute();         // the task's end barrier
    if (t == 0) {
      if (mode == 1 || mode == 3) {
        status[0] = r;
        st_release_cta_shared(&ended, r + 1);
      } else {
        st_relaxed_sys(host, r);
        st_relaxed_sys(host + 1, r + 1);
        if (mode == 0) fence_release_gpu();
        st_relaxed_gpu(done, r + 1);
      }
    }
  }
  if (t == 0) { out[0] = clock64() - begin; out[1] = rounds; }
}

int main(int argc, char **argv) {
  unsigned rounds = argc > 1 ? atoi(argv[1]) : 4096;
  cudaDeviceProp p; CK(cudaGetDeviceProperties(&p, 0));
  printf("device: %s, %d SMs\n", p.name, p.multiProcessorCount);
  unsigned *scratch, *done, *host, *hostd; unsigned long long *out;
  CK(cudaMalloc(&scratch, 4096)); CK(cudaMalloc(&done, 4)); CK(cudaMalloc(&out, 64));
  CK(cudaHostAlloc(&host, 64, cudaHostAllocMapped)); CK(cudaHostGetDevicePointer(&hostd, host, 0));
  const char *names[] = {"thread 0 fences (today)", "a publishing warp fences", "no fence (floor, not a protocol)", "publishing warp, no fence"};
  for (int rep = 0; rep < 3; rep++)
  for (int mode = 0; mode < 4; mode++) {
    std::vector<double> per; std::vector<double> pub; double fences = 0;
    for (int run = 0; run < 5; run++) {
      CK(cudaMemset(out, 0, 64)); CK(cudaMemset(done, 0, 4));
      int threads = (mode == 1 || mode == 3) ? 160 : 128;
      chain<<<1, threads>>>(mode, rounds, scratch, done, hostd, out);
      CK(cudaDeviceSynchronize());
      unsigned long long o[4]; CK(cudaMemcpy(o, out, 32, cudaMemcpyDeviceToHost));
      unsigned d; CK(cudaMemcpy(&d, done, 4, cudaMemcpyDeviceToHost));
      if (d != rounds || o[1] != rounds) { printf("mode %d: done %u of %u: WRONG\n", mode, d, rounds); return 1; }
      per.push_back((double)o[0] / rounds);
      if (o[3]) { pub.push_back((double)o[2] / rounds); fences += o[3]; }
    }
    std::sort(per.begin(), per.end()); std::sort(pub.begin(), pub.end());
    printf("round %d, %-34s: %7.1f cycles a task (median of 5; %.1f..%.1f)", rep, names[mode], per[2], per[0], per[4]);
    if (!pub.empty()) printf("; publisher to the last task %.1f cycles a task, %.2f tasks a fence", pub[2], rounds * 5.0 / fences);
    printf("\n");
  }
  return 0;
}
