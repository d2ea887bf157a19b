/* Host-memory side of ncclMemAlloc: page-aligned, zeroed. The CUDA engine takes over when the
 * calling thread has a GPU, unless MONEL_ENGINE=cpu (whose comms move host memory only). */
#include <stdlib.h>
#include <string.h>
#include "util/check.h"
#include "core/mem.h"
#include "core/engine.h"

ncclResult_t mem_alloc(void** ptr, size_t size) {
#ifdef MONEL_HAVE_CUDA
  int handled = 0;
  ncclResult_t r = engine_gpu_allowed() ? gpu_engine.mem_alloc(ptr, size, &handled) : ncclSuccess;
  if (handled) return r;
#endif
  void* p = NULL;
  size_t n = size ? (size + 4095) & ~(size_t)4095 : 4096;
  if (posix_memalign(&p, 4096, n) != 0) {
    WARN("ncclMemAlloc: out of host memory allocating %zu bytes", size);
    return ncclSystemError;
  }
  memset(p, 0, n);
  *ptr = p;
  return ncclSuccess;
}

ncclResult_t mem_free(void* ptr) {
#ifdef MONEL_HAVE_CUDA
  int handled = 0;
  ncclResult_t r = gpu_engine.mem_free(ptr, &handled);
  if (handled) return r;
#endif
  free(ptr);
  return ncclSuccess;
}
