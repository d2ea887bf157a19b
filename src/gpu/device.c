/* SPDX-License-Identifier: BSD-3-Clause */
/* The device hooks of the CUDA engine (members of gpu_engine, called by core/): which GPU the
 * calling thread uses, how many there are, and ncclMemAlloc/ncclMemFree on device memory. With no
 * driver or no GPU every hook says "none" and the library runs its CPU engine. */
#include <cuda_runtime_api.h>
#include "util/check.h"
#include "gpu/gpu.h"

int gpu_device_count(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

int gpu_device_of_busid(const char* busid) {
  int dev = -1;
  if (gpu_device_count() <= 0) return -1;
  if (cudaDeviceGetByPCIBusId(&dev, busid) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return dev;
}

int gpu_current_device(void) {
  if (gpu_device_count() <= 0) return -1;
  int dev = -1;
  if (cudaGetDevice(&dev) != cudaSuccess) return -1;
  return dev;
}

ncclResult_t gpu_mem_alloc(void** ptr, size_t size, int* handled) {
  *handled = 0;
  if (gpu_device_count() <= 0) return ncclSuccess;
  *handled = 1;
  void* p = NULL;
  cudaError_t e = cudaMalloc(&p, size ? size : 1);
  if (e != cudaSuccess) {
    WARN("ncclMemAlloc: cudaMalloc of %zu bytes failed: %s", size, cudaGetErrorString(e));
    return ncclUnhandledCudaError;
  }
  *ptr = p;
  return ncclSuccess;
}

ncclResult_t gpu_mem_free(void* ptr, int* handled) {
  *handled = 0;
  if (ptr == NULL || gpu_device_count() <= 0) return ncclSuccess;
  struct cudaPointerAttributes attr;
  if (cudaPointerGetAttributes(&attr, ptr) != cudaSuccess) {
    (void)cudaGetLastError();
    return ncclSuccess;
  }
  if (attr.type != cudaMemoryTypeDevice) return ncclSuccess;
  *handled = 1;
  cudaError_t e = cudaFree(ptr);
  if (e != cudaSuccess) {
    WARN("ncclMemFree: cudaFree(%p) failed: %s", ptr, cudaGetErrorString(e));
    return ncclUnhandledCudaError;
  }
  return ncclSuccess;
}
