/* SPDX-License-Identifier: BSD-3-Clause */
/* The device side of the exact-check matrix: fill a rank's input and check its buffers on the GPU
 * with the formulas of matrix.h, so that a case with 64M elements costs a few kernel passes and
 * one small copy to the host. */
#include <cuda_runtime.h>
#include "matrix.h"

#define THREADS    256
#define MAX_BLOCKS 2048

static unsigned blocks_for(size_t len) {
  size_t b = (len + THREADS - 1) / THREADS;
  if (b < 1) b = 1;
  return (unsigned)(b > MAX_BLOCKS ? MAX_BLOCKS : b);
}

__global__ void fill_kernel(struct mx_case c, int rank, void* base, size_t len, void* scalar) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x; j < len; j += stride)
    mx_store(base, c.dt, j, mx_input(&c, rank, j));
  if (scalar && blockIdx.x == 0 && threadIdx.x == 0)
    mx_store(scalar, c.dt, 0, mx_encode(c.dt, mx_scalar()));
}

struct regions {
  struct mx_region r[MX_MAXREGIONS];
};

/* Block row y checks region y; each thread counts its own mismatches, then adds them once. */
__global__ void check_kernel(struct mx_case c, int rank, struct regions regs,
                             struct mx_result* res) {
  struct mx_region g = regs.r[0]; /* picked this way, the region stays in registers */
  for (int k = 1; k < MX_MAXREGIONS; k++)
    if (k == (int)blockIdx.y) g = regs.r[k];
  size_t stride = (size_t)gridDim.x * blockDim.x;
  unsigned long long bad = 0, first = 0;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < g.len; i += stride) {
    if (mx_load(g.base, c.dt, i) != mx_expect(&c, rank, g.kind, i)) {
      if (bad == 0) first = i;
      bad++;
    }
  }
  if (bad) {
    atomicAdd(&res[blockIdx.y].bad, bad);
    atomicMax(&res[blockIdx.y].first, ~first); /* the largest ~i is the smallest i */
  }
}

__global__ void flip_kernel(unsigned char* p) {
  *p ^= 0x5a;
}

extern "C" int mx_dev_fill(const struct mx_case* c, int rank, void* base, size_t len, void* scalar,
                           cudaStream_t stream) {
  if (len == 0 && scalar == NULL) return cudaSuccess;
  fill_kernel<<<blocks_for(len), THREADS, 0, stream>>>(*c, rank, base, len, scalar);
  return cudaGetLastError();
}

extern "C" int mx_dev_check(const struct mx_case* c, int rank, const struct mx_region* regions,
                            int nregions, struct mx_result* res, cudaStream_t stream) {
  struct regions regs;
  size_t longest = 0;
  if (nregions <= 0 || nregions > MX_MAXREGIONS) return cudaErrorInvalidValue;
  for (int i = 0; i < nregions; i++) {
    regs.r[i] = regions[i];
    if (regions[i].len > longest) longest = regions[i].len;
  }
  if (longest == 0) return cudaSuccess;
  dim3 grid(blocks_for(longest), (unsigned)nregions);
  check_kernel<<<grid, THREADS, 0, stream>>>(*c, rank, regs, res);
  return cudaGetLastError();
}

extern "C" int mx_dev_flip(void* byte, cudaStream_t stream) {
  flip_kernel<<<1, 1, 0, stream>>>((unsigned char*)byte);
  return cudaGetLastError();
}
