/* SPDX-License-Identifier: BSD-3-Clause */
/* Checks of a GPU task's buffers, stream and per-call options at enqueue, so that a wrong pointer
 * gets ncclInvalidArgument and a sentence instead of a kernel fault or a hang: host memory CUDA
 * does not know, memory of another GPU, a stream of another GPU; an option the engine cannot
 * honour, ncclInvalidUsage. The last few pointers that passed are remembered per comm, so a loop
 * over the same buffers asks CUDA once. */
#include <stdio.h>
#include "util/check.h"
#include "gpu/gpu.h"

static int known_good(struct gpu_comm* g, const void* p) {
  for (int i = 0; i < GPU_GOOD_PTRS; i++)
    if (g->good_ptrs[i] == p) return 1;
  return 0;
}

static ncclResult_t check_ptr(struct ncclComm* comm, struct gpu_comm* g, const void* p,
                              const char* what, const char* fn) {
  if (p == NULL || known_good(g, p)) return ncclSuccess;
  struct cudaPointerAttributes at;
  cudaError_t e = cudaPointerGetAttributes(&at, p);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    at.type = cudaMemoryTypeUnregistered;
  }
  if (at.type == cudaMemoryTypeUnregistered) {
    WARN("%s: %s %p is host memory that CUDA does not know (not from cudaMalloc, "
         "cudaMallocHost or cudaHostRegister): comm %p runs on GPU %d and needs device memory",
         fn, what, p, (void*)comm, comm->cuda_dev);
    return ncclInvalidArgument;
  }
  if (at.type == cudaMemoryTypeDevice && at.device != comm->cuda_dev) {
    WARN("%s: %s %p is memory of GPU %d, but comm %p (rank %d) runs on GPU %d: pass a buffer "
         "of that GPU",
         fn, what, p, at.device, (void*)comm, comm->rank, comm->cuda_dev);
    return ncclInvalidArgument;
  }
  g->good_ptrs[g->good_next] = p;
  g->good_next = (g->good_next + 1) % GPU_GOOD_PTRS;
  return ncclSuccess;
}

static ncclResult_t check_stream(struct ncclComm* comm, struct gpu_comm* g, cudaStream_t s,
                                 const char* fn) {
  /* The legacy and per-thread default streams belong to the current device. */
  if (s == NULL || s == cudaStreamLegacy || s == cudaStreamPerThread || s == g->good_stream)
    return ncclSuccess;
  /* A stream being captured may not be asked for its device (that would end the capture). */
  enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  cudaError_t e = cudaStreamIsCapturing(s, &cs);
  if (e == cudaSuccess && cs != cudaStreamCaptureStatusNone) return ncclSuccess;
  int dev = -1;
  if (e == cudaSuccess) e = cudaStreamGetDevice(s, &dev);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    WARN("%s: stream %p is not a valid CUDA stream (%s)", fn, (void*)s, cudaGetErrorString(e));
    return ncclInvalidArgument;
  }
  if (dev != comm->cuda_dev) {
    WARN("%s: stream %p belongs to GPU %d, but comm %p (rank %d) runs on GPU %d: pass a stream "
         "of that GPU",
         fn, (void*)s, dev, (void*)comm, comm->rank, comm->cuda_dev);
    return ncclInvalidArgument;
  }
  g->good_stream = s;
  return ncclSuccess;
}

/* Per-call options of the nccl*Config calls the engine must be able to honour: a launch-completion
 * event (the driver's), and NCCL_CTA_POLICY_ZERO on a collective the copy-engine path runs (it
 * moves data without reducing it). */
static ncclResult_t check_options(struct ncclComm* comm, const struct task* t, const char* fn) {
  if (t->launch_event != NULL) NCCLCHECK(gpu_launch_events_ok(fn));
  if (gpu_ce_zero(t) && !gpu_ce_runs(t->coll)) {
    WARN("%s: config->CTAPolicy has NCCL_CTA_POLICY_ZERO, but %s needs thread blocks to reduce "
         "(the copy-engine path of rank %d runs AllGather, Broadcast, AlltoAll, Gather and "
         "Scatter); drop NCCL_CTA_POLICY_ZERO for this call",
         fn, coll_name(t->coll), comm->rank);
    return ncclInvalidUsage;
  }
  return ncclSuccess;
}

ncclResult_t gpu_check_task(struct ncclComm* comm, const struct task* t, const char* fn) {
  struct gpu_comm* g = comm->engine_state;
  if (g == NULL) return ncclSuccess;
  if (t->launch_event != NULL || t->cta_policy) NCCLCHECK(check_options(comm, t, fn));
  NCCLCHECK(check_stream(comm, g, t->stream, fn));
  int any = t->count > 0 || t->vrows != NULL;
  if (any && task_reads_send(t->coll, comm->rank, t->root))
    NCCLCHECK(check_ptr(comm, g, t->sendbuff, "sendbuff", fn));
  if (any && task_writes_recv(t->coll, comm->rank, t->root))
    NCCLCHECK(check_ptr(comm, g, t->recvbuff, "recvbuff", fn));
  return ncclSuccess;
}
