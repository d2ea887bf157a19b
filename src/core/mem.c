/* SPDX-License-Identifier: BSD-3-Clause */
/* Host-memory side of ncclMemAlloc: page-aligned, zeroed. The CUDA engine takes over when the
 * calling thread has a GPU, unless MONEL_ENGINE=cpu (whose comms move host memory only).
 *
 * Host memory is a shared-memory segment (os/shm.h) whose handle stays open until ncclMemFree, so
 * that another process of the host can map it later: a window registered on such memory gives
 * peers of other processes a pointer to it (api/window.c). Where a segment cannot be made (no
 * memfd), the memory is plain process memory, which only threads of this process can reach. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "util/check.h"
#include "core/mem.h"
#include "core/engine.h"

struct mem_block {
  struct mem_block* next;
  char* ptr;
  size_t len;
  char name[OS_SHM_NAME]; /* "": process memory */
};
static pthread_mutex_t blocks_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mem_block* blocks;

static ncclResult_t host_alloc(void** ptr, size_t size) {
  size_t n = size ? (size + 4095) & ~(size_t)4095 : 4096;
  struct mem_block* b = calloc(1, sizeof *b);
  if (b == NULL) goto oom;
  void* p = NULL;
  if (os_shm_create(n, b->name, &p) != ncclSuccess) {
    b->name[0] = '\0';
    INFO(LOG_ALLOC,
         "ncclMemAlloc: %zu bytes of process memory (no shared segment): peers of "
         "other processes cannot map it",
         n);
    if (posix_memalign(&p, 4096, n) != 0) goto oom;
    memset(p, 0, n);
  }
  b->ptr = p, b->len = n;
  pthread_mutex_lock(&blocks_lock);
  b->next = blocks, blocks = b;
  pthread_mutex_unlock(&blocks_lock);
  *ptr = p;
  return ncclSuccess;
oom:
  free(b);
  WARN("ncclMemAlloc: out of host memory allocating %zu bytes", size);
  return ncclSystemError;
}

ncclResult_t mem_alloc(void** ptr, size_t size) {
#ifdef MONEL_HAVE_CUDA
  int handled = 0;
  ncclResult_t r = engine_gpu_allowed() ? gpu_engine.mem_alloc(ptr, size, &handled) : ncclSuccess;
  if (handled) return r;
#endif
  return host_alloc(ptr, size);
}

ncclResult_t mem_free(void* ptr) {
#ifdef MONEL_HAVE_CUDA
  int handled = 0;
  ncclResult_t r = gpu_engine.mem_free(ptr, &handled);
  if (handled) return r;
#endif
  if (ptr == NULL) return ncclSuccess;
  struct mem_block* b = NULL;
  pthread_mutex_lock(&blocks_lock);
  for (struct mem_block** pb = &blocks; *pb; pb = &(*pb)->next) {
    if ((*pb)->ptr == ptr) {
      b = *pb;
      *pb = b->next;
      break;
    }
  }
  pthread_mutex_unlock(&blocks_lock);
  if (b == NULL) {
    WARN("ncclMemFree: %p was not allocated by ncclMemAlloc", ptr);
    return ncclInvalidArgument;
  }
  if (b->name[0]) {
    os_shm_unlink(b->name);
    os_shm_unmap(b->ptr, b->len);
  } else {
    free(b->ptr);
  }
  free(b);
  return ncclSuccess;
}

int mem_shared_find(const void* p, size_t len, struct mem_shared* out) {
  int found = 0;
  const char* c = p;
  pthread_mutex_lock(&blocks_lock);
  for (struct mem_block* b = blocks; b && !found; b = b->next) {
    if (b->name[0] == '\0' || c < b->ptr || c > b->ptr + b->len ||
        len > b->len - (size_t)(c - b->ptr))
      continue;
    memcpy(out->name, b->name, OS_SHM_NAME);
    out->len = b->len;
    out->offset = (size_t)(c - b->ptr);
    found = 1;
  }
  pthread_mutex_unlock(&blocks_lock);
  return found;
}
