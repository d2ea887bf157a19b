/* ncclMemAlloc/ncclMemFree: device memory peers can map (CUDA engine) or page-aligned host memory
 * (no GPU). */
#ifndef MONEL_CORE_MEM_H
#define MONEL_CORE_MEM_H
#include <stddef.h>
#include "nccl.h"
ncclResult_t mem_alloc(void** ptr, size_t size);
ncclResult_t mem_free(void* ptr);
#endif
