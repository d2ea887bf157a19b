/* SPDX-License-Identifier: BSD-3-Clause */
/* ncclMemAlloc/ncclMemFree: device memory peers can map (CUDA engine) or page-aligned host memory
 * (no GPU), in a shared-memory segment that other processes of the host can map. */
#ifndef MONEL_CORE_MEM_H
#define MONEL_CORE_MEM_H
#include <stddef.h>
#include "nccl.h"
#include "os/shm.h"
ncclResult_t mem_alloc(void** ptr, size_t size);
ncclResult_t mem_free(void* ptr);

/* The shared segment that holds [p, p+len): its handle (os_shm_open), its length and where p
 * lies in it. */
struct mem_shared {
  char name[OS_SHM_NAME];
  size_t len, offset;
};
/* 1 and *out when [p, p+len) lies in host memory of ncclMemAlloc that is a shared segment. */
int mem_shared_find(const void* p, size_t len, struct mem_shared* out);
#endif
