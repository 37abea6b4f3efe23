// Run on the GPU machine: nvcc -arch=sm_90 -o /tmp/probe prefetch_invalid_address.cu && /tmp/probe && compute-sanitizer /tmp/probe
// (H100, driver 580.159.04, 2026-11-25: "no error" for every offset, 0 sanitizer errors.)
// Does prefetch.global.L2 of an address outside every allocation fault?
#include <cstdio>
#include <cstdint>
__global__ void probe(const float* p, long long offset, float* out) {
  const float* q = p + offset;
  asm volatile("prefetch.global.L2 [%0];" :: "l"(q));
  out[threadIdx.x] = p[threadIdx.x];
}
int main() {
  float *p, *out;
  cudaMalloc(&p, 1 << 20); cudaMalloc(&out, 1 << 12);
  long long offsets[] = {0, (1 << 18) + 1, 1 << 24, -(1LL << 30), 1LL << 40, -(long long)((uintptr_t)p / 4)};
  for (long long o : offsets) {
    probe<<<1, 32>>>(p, o, out);
    cudaError_t e = cudaDeviceSynchronize();
    printf("offset %lld elements: %s\n", o, cudaGetErrorString(e));
    if (e != cudaSuccess) return 1;
  }
  return 0;
}
