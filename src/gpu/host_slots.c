/* Pinned host slots for control messages on streams (gpu/host_slots.h). Slots come from chunks
 * of cudaMallocHost memory that live until the process ends; a slot is taken by setting its flag
 * and given back by clearing it, from the host or from a host function on a stream. */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdlib.h>
#include "gpu/host_slots.h"
#include "util/check.h"

#define SLOTS_PER_CHUNK 256

struct chunk {
  struct chunk* next;
  char* mem; /* SLOTS_PER_CHUNK * GPU_SLOT_BYTES pinned bytes */
  int busy[SLOTS_PER_CHUNK];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct chunk* chunks;

static void* take_free(void) {
  for (struct chunk* c = chunks; c; c = c->next)
    for (int i = 0; i < SLOTS_PER_CHUNK; i++)
      if (!__atomic_load_n(&c->busy[i], __ATOMIC_ACQUIRE)) {
        c->busy[i] = 1;
        return c->mem + (size_t)i * GPU_SLOT_BYTES;
      }
  return NULL;
}

void* gpu_slot_get(void) {
  pthread_mutex_lock(&lock);
  void* slot = take_free();
  pthread_mutex_unlock(&lock);
  if (slot) return slot;
  /* A new chunk, allocated without the lock (host functions on streams take it). */
  struct chunk* c = calloc(1, sizeof *c);
  if (c == NULL ||
      cudaMallocHost((void**)&c->mem, SLOTS_PER_CHUNK * GPU_SLOT_BYTES) != cudaSuccess) {
    (void)cudaGetLastError();
    free(c);
    WARN("out of pinned host memory for a control message (%d bytes)", GPU_SLOT_BYTES);
    return NULL;
  }
  c->busy[0] = 1;
  pthread_mutex_lock(&lock);
  c->next = chunks;
  chunks = c;
  pthread_mutex_unlock(&lock);
  return c->mem;
}

void gpu_slot_put(void* slot) {
  if (slot == NULL) return;
  pthread_mutex_lock(&lock);
  for (struct chunk* c = chunks; c; c = c->next) {
    char* p = slot;
    if (p >= c->mem && p < c->mem + SLOTS_PER_CHUNK * GPU_SLOT_BYTES) {
      __atomic_store_n(&c->busy[(p - c->mem) / GPU_SLOT_BYTES], 0, __ATOMIC_RELEASE);
      break;
    }
  }
  pthread_mutex_unlock(&lock);
}

static void CUDART_CB put_cb(void* slot) {
  gpu_slot_put(slot);
}

void gpu_slot_put_after(void* slot, cudaStream_t stream) {
  if (slot == NULL) return;
  if (cudaLaunchHostFunc(stream, put_cb, slot) != cudaSuccess) {
    (void)cudaGetLastError();
    gpu_slot_put(slot);
  }
}

ncclResult_t gpu_stream_wait(cudaStream_t stream, const char* fn) {
  cudaError_t e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess) {
    WARN("%s: waiting for the stream failed: %s", fn, cudaGetErrorString(e));
    return ncclUnhandledCudaError;
  }
  return ncclSuccess;
}

ncclResult_t gpu_copy_async(void* dst, const void* src, size_t bytes, cudaStream_t stream,
                            const char* fn) {
  cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream);
  if (e != cudaSuccess) {
    WARN("%s: copying %zu bytes failed: %s", fn, bytes, cudaGetErrorString(e));
    return ncclUnhandledCudaError;
  }
  return ncclSuccess;
}
