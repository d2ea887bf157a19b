// Costs of the GPU-side pieces of one FIFO step through pinned host memory, on this GPU:
// a read of host memory, a system fence after a store to host memory, a step as the ring's
// Simple protocol makes it, and the gap between back-to-back kernel launches.
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>
#define CK(x)                                                                                      \
  do {                                                                                             \
    cudaError_t e = (x);                                                                           \
    if (e) {                                                                                       \
      printf("%s: %s\n", #x, cudaGetErrorString(e));                                               \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)
__device__ static inline uint64_t gt() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__global__ void k_read(const uint64_t* h, int n, uint64_t* res) {
  if (threadIdx.x) return;
  uint64_t s = 0, t0 = gt();
  for (int i = 0; i < n; i++) s += __ldcv(h + (i & 7) * 8);
  res[0] = gt() - t0;
  res[1] = s;
}
__global__ void k_fence(uint64_t* h, int n, uint64_t* res, int sys) {
  if (threadIdx.x) return;
  uint64_t t0 = gt();
  for (int i = 0; i < n; i++) {
    *(volatile uint64_t*)(h + (i & 7) * 8) = i;
    if (sys)
      __threadfence_system();
    else
      __threadfence();
  }
  res[0] = gt() - t0;
}
// one step as prim_step (Simple, host memory both ways): want, tail poll, fence, read 8 bytes,
// store them to the output and the send slot, size, fence by every thread, tail, fence, head.
__global__ void k_step(uint64_t* rf, uint64_t* sf, uint64_t* out, int n, uint64_t* res) {
  __shared__ int dummy;
  uint64_t t0 = gt();
  for (int i = 0; i < n; i++) {
    if (threadIdx.x == 0) {
      *(volatile uint64_t*)(rf + 0) = i + 1; // want
      while (*(volatile uint64_t*)(rf + 8) < 1) {
      } // tail (already there)
      __threadfence_system();
      dummy = 0;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      uint64_t v = __ldcv(rf + 64);
      out[0] = v;
      *(volatile uint64_t*)(sf + 64) = v;
      *(volatile uint64_t*)(sf + 16) = 8;
    }
    __threadfence_system();
    __syncthreads();
    if (threadIdx.x == 0) {
      *(volatile uint64_t*)(sf + 8) = i + 1;
      __threadfence();
      *(volatile uint64_t*)(rf + 24) = i + 1;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) res[0] = gt() - t0;
}
// variants: mode 0 every thread fences (as prim_step), 1 barrier then thread 0 fences,
// 2 as 1 and the tail read with ld.acquire.sys instead of a fence after it
__global__ void k_step2(uint64_t* rf, uint64_t* sf, uint64_t* out, int n, uint64_t* res, int mode) {
  uint64_t t0 = gt();
  for (int i = 0; i < n; i++) {
    if (threadIdx.x == 0) {
      *(volatile uint64_t*)(rf + 0) = i + 1;
      if (mode == 2) {
        uint64_t v;
        do {
          asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(rf + 8) : "memory");
        } while (v < 1);
      } else {
        while (*(volatile uint64_t*)(rf + 8) < 1) {
        }
        __threadfence_system();
      }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      uint64_t v = __ldcv(rf + 64);
      out[0] = v;
      *(volatile uint64_t*)(sf + 64) = v;
      *(volatile uint64_t*)(sf + 16) = 8;
    }
    if (mode == 0) __threadfence_system();
    __syncthreads();
    if (threadIdx.x == 0) {
      if (mode) __threadfence_system();
      *(volatile uint64_t*)(sf + 8) = i + 1;
      __threadfence();
      *(volatile uint64_t*)(rf + 24) = i + 1;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) res[0] = gt() - t0;
}
__global__ void k_fence_all(int n, uint64_t* res) {
  uint64_t t0 = gt();
  for (int i = 0; i < n; i++) {
    __threadfence_system();
    __syncthreads();
  }
  if (threadIdx.x == 0) res[0] = gt() - t0;
}
// the Simple step (as prim_step, mode 0) with thread 0 timing each part: want+tail poll,
// fence after it, barrier, move (read host, store out and send slot, size), fence by all +
// barrier, tail + device fence + head, last barrier
__global__ void k_parts(uint64_t* rf, uint64_t* sf, uint64_t* out, int n, uint64_t* res) {
  uint64_t acc[7] = {0, 0, 0, 0, 0, 0, 0};
  for (int i = 0; i < n; i++) {
    uint64_t t[8];
    t[0] = gt();
    if (threadIdx.x == 0) {
      *(volatile uint64_t*)(rf + 0) = i + 1;
      while (*(volatile uint64_t*)(rf + 8) < 1) {
      }
    }
    t[1] = gt();
    if (threadIdx.x == 0) __threadfence_system();
    t[2] = gt();
    __syncthreads();
    t[3] = gt();
    if (threadIdx.x == 0) {
      uint64_t v = __ldcv(rf + 64);
      out[0] = v;
      *(volatile uint64_t*)(sf + 64) = v;
      *(volatile uint64_t*)(sf + 16) = 8;
    }
    t[4] = gt();
    __threadfence_system();
    __syncthreads();
    t[5] = gt();
    if (threadIdx.x == 0) {
      *(volatile uint64_t*)(sf + 8) = i + 1;
      __threadfence();
      *(volatile uint64_t*)(rf + 24) = i + 1;
    }
    t[6] = gt();
    __syncthreads();
    t[7] = gt();
    for (int k = 0; k < 7; k++) acc[k] += t[k + 1] - t[k];
  }
  if (threadIdx.x == 0)
    for (int k = 0; k < 7; k++) res[k] = acc[k];
}
// a small kernel as a step would be: lets its successor launch (PDL), waits for its
// predecessor, then a read of host memory, a store to it and a system fence
__global__ void k_small(uint64_t* h, int pdl) {
  if (pdl) {
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
  }
  if (threadIdx.x == 0) {
    uint64_t v = __ldcv(h + 64);
    *(volatile uint64_t*)(h + 72) = v + 1;
    __threadfence_system();
  }
  __syncthreads();
}
__global__ void k_empty(unsigned long long* ctr) {
  if (threadIdx.x == 0 && ctr) atomicAdd(ctr, 1ull);
}
int main() {
  uint64_t *h, *hd, *h2, *h2d, *res, *out;
  unsigned long long* ctr;
  CK(cudaHostAlloc(&h, 4096, cudaHostAllocMapped));
  CK(cudaHostGetDevicePointer(&hd, h, 0));
  CK(cudaHostAlloc(&h2, 4096, cudaHostAllocMapped));
  CK(cudaHostGetDevicePointer(&h2d, h2, 0));
  for (int i = 0; i < 512; i++) h[i] = h2[i] = 1;
  CK(cudaMallocManaged(&res, 64));
  CK(cudaMalloc(&out, 64));
  CK(cudaMalloc(&ctr, 64));
  const int N = 2000;
  for (int rep = 0; rep < 3; rep++) {
    k_read<<<1, 32>>>(hd, N, res);
    CK(cudaDeviceSynchronize());
    double rd = res[0] / (double)N;
    k_fence<<<1, 32>>>(hd, N, res, 1);
    CK(cudaDeviceSynchronize());
    double fs = res[0] / (double)N;
    k_fence<<<1, 32>>>(hd, N, res, 0);
    CK(cudaDeviceSynchronize());
    double fd = res[0] / (double)N;
    k_step<<<1, 512>>>(hd, h2d, out, N, res);
    CK(cudaDeviceSynchronize());
    double st = res[0] / (double)N;
    printf("host read %.0f ns; store to host + system fence %.0f ns; + device fence %.0f ns; one "
           "Simple step (512 threads) %.0f ns\n",
           rd, fs, fd, st);
    double v[3], fa[2];
    for (int m = 0; m < 3; m++) {
      k_step2<<<1, 512>>>(hd, h2d, out, N, res, m);
      CK(cudaDeviceSynchronize());
      v[m] = res[0] / (double)N;
    }
    k_fence_all<<<1, 512>>>(N, res);
    CK(cudaDeviceSynchronize());
    fa[0] = res[0] / (double)N;
    k_fence_all<<<1, 32>>>(N, res);
    CK(cudaDeviceSynchronize());
    fa[1] = res[0] / (double)N;
    k_parts<<<1, 512>>>(hd, h2d, out, N, res);
    CK(cudaDeviceSynchronize());
    printf("parts (ns): want+tail %.0f, fence %.0f, barrier %.0f, move %.0f, fence all+barrier "
           "%.0f, tail+fence+head %.0f, barrier %.0f\n",
           res[0] / (double)N, res[1] / (double)N, res[2] / (double)N, res[3] / (double)N,
           res[4] / (double)N, res[5] / (double)N, res[6] / (double)N);
    printf(
        "step: every thread fences %.0f ns; thread 0 after the barrier %.0f ns; and the tail by "
        "ld.acquire.sys %.0f ns; system fence + barrier, 512 threads %.0f ns, 32 threads %.0f ns\n",
        v[0], v[1], v[2], fa[0], fa[1]);
  }
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  for (int th : {32, 512})
    for (int useCtr : {0, 1})
      for (int rep = 0; rep < 2; rep++) {
        for (int i = 0; i < 100; i++) k_empty<<<1, th, 0, s>>>(useCtr ? ctr : nullptr);
        CK(cudaEventRecord(a, s));
        for (int i = 0; i < N; i++) k_empty<<<1, th, 0, s>>>(useCtr ? ctr : nullptr);
        CK(cudaEventRecord(b, s));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        printf("back-to-back launches, %d threads%s: %.2f us each\n", th,
               useCtr ? ", one atomic" : "", ms * 1000 / N);
      }
  for (int pdl : {0, 1, 0, 1}) {
    cudaLaunchAttribute at;
    at.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(1);
    cfg.blockDim = dim3(512);
    cfg.stream = s;
    cfg.attrs = &at;
    cfg.numAttrs = pdl;
    for (int i = 0; i < 100; i++) CK(cudaLaunchKernelEx(&cfg, k_small, hd, pdl));
    CK(cudaEventRecord(a, s));
    for (int i = 0; i < N; i++) CK(cudaLaunchKernelEx(&cfg, k_small, hd, pdl));
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    printf("back-to-back small kernels (host read, store, system fence)%s: %.2f us each\n",
           pdl ? ", programmatic dependent launch" : "", ms * 1000 / N);
  }
  return 0;
}
