/* Small blocks of pinned host memory for control messages the GPU engine sends and receives on
 * the user's streams (the headers of one-sided puts, api/onesided.c), and the stream calls that
 * code needs. Plain C: callers need no CUDA headers. Built with the CUDA engine only. */
#ifndef MONEL_GPU_HOST_SLOTS_H
#define MONEL_GPU_HOST_SLOTS_H
#include <stddef.h>
#include "nccl.h"

#define GPU_SLOT_BYTES 64

/* A free slot of GPU_SLOT_BYTES pinned bytes; NULL (with a WARN) when none can be had. */
void* gpu_slot_get(void);
/* Gives the slot back once `stream` has run everything queued on it so far (at once if that
 * cannot be arranged, e.g. the stream is gone). */
void gpu_slot_put_after(void* slot, cudaStream_t stream);
/* Gives the slot back now. */
void gpu_slot_put(void* slot);
/* Waits until the stream ran everything queued on it. */
ncclResult_t gpu_stream_wait(cudaStream_t stream, const char* fn);
/* dst = src, bytes, in stream order (device or pinned memory). */
ncclResult_t gpu_copy_async(void* dst, const void* src, size_t bytes, cudaStream_t stream,
                            const char* fn);

#endif
