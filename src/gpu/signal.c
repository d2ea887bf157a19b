/* SPDX-License-Identifier: BSD-3-Clause */
/* What the one-sided calls (api/onesided.c) need of the GPU engine: a wait for a stream and a
 * copy in stream order (struct engine's stream_wait and copy), and the direct signals (its
 * signal_direct, signal_raise and signal_wait). Each rank's signal words, ENGINE_SIGNAL_SLOTS
 * 32-bit words per source rank ([source][slot]), lie at the end of its point-to-point FIFO block
 * (p2p_mem, g->sig_off: GPU memory, or pinned host memory with NCCL_P2P_DISABLE=1), which every
 * peer of its host maps already (connect.c).
 *
 * Rank r signals peer p on slot k by writing the number of signals it has raised on (p, k) so
 * far into p's word [r][k], with a stream memory operation: it runs once everything before it on
 * the stream has completed, behind a memory fence (CU_STREAM_WRITE_VALUE_DEFAULT), so the copy of
 * a put into p's window is visible first. p waits with a stream memory operation on its own word
 * [r][k] until it holds at least the signals p has consumed there plus those it asks for (a
 * cyclic comparison: the counts may wrap). Only r writes the word, so no atomic is needed, no
 * kernel runs, nothing waits on the host, and neither rank ever waits for the other to take a
 * message: two ranks that put to each other before they wait cannot block each other, which the
 * point-to-point FIFOs (2 slots per peer and channel) could not promise.
 *
 * The counts live on the host, so a signal or wait captured in a CUDA graph would replay the
 * same value: capture is refused. Pairs across the network and drivers without stream memory
 * operations take the host route of api/onesided.c (signal_direct says 0 on both ranks of such a
 * pair alike), which waits for the stream on the host: refused in capture as well. */
#include <cuda.h>
#include <pthread.h>
#include <stdint.h>
#include "util/check.h"
#include "gpu/gpu.h"

typedef CUresult (*value32_fn)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
static value32_fn wait32, write32;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void) {
  wait32 = (value32_fn)gpu_driver_fn("cuStreamWaitValue32");
  write32 = (value32_fn)gpu_driver_fn("cuStreamWriteValue32");
}

size_t gpu_signal_bytes(int nranks) {
  return (size_t)nranks * ENGINE_SIGNAL_SLOTS * sizeof(uint32_t);
}

int gpu_signal_direct(const struct ncclComm* comm, int peer) {
  const struct gpu_comm* g = comm->engine_state;
  pthread_once(&once, load);
  return g != NULL && wait32 != NULL && write32 != NULL && g->sig_counts != NULL && g->p2p_ok &&
         peer != comm->rank && peer >= 0 && peer < comm->nranks &&
         !(g->p2p_flags[peer] & GPU_PEER_NET) && g->peer_p2p[peer] != NULL;
}

static ncclResult_t not_captured(const struct ncclComm* comm, cudaStream_t s, const char* fn) {
  if (!gpu_capturing(s)) return ncclSuccess;
  WARN("%s: rank %d's stream is being captured into a CUDA graph; one-sided calls between GPUs "
       "of a host are stream memory operations with counts kept on the host, which a replay "
       "would repeat unchanged: call them outside capture",
       fn, comm->rank);
  return ncclInvalidUsage;
}

static ncclResult_t checked(CUresult r, const struct ncclComm* comm, int peer, const char* what) {
  if (r == CUDA_SUCCESS) return ncclSuccess;
  WARN("%s on rank %d (peer %d): cuStream%sValue32 failed with CUDA driver error %d",
       what[0] == 'W' ? "ncclWaitSignal" : "ncclPutSignal/ncclSignal", comm->rank, peer, what,
       (int)r);
  return ncclUnhandledCudaError;
}

ncclResult_t gpu_signal_raise(struct ncclComm* comm, int peer, int slot, cudaStream_t stream) {
  struct gpu_comm* g = comm->engine_state;
  NCCLCHECK(not_captured(comm, stream, "ncclPutSignal/ncclSignal"));
  uint32_t* sent = &g->sig_counts[(size_t)peer * ENGINE_SIGNAL_SLOTS + slot];
  char* word = g->peer_p2p[peer] + g->sig_off +
               ((size_t)comm->rank * ENGINE_SIGNAL_SLOTS + slot) * sizeof(uint32_t);
  NCCLCHECK(checked(write32((CUstream)stream, (CUdeviceptr)(uintptr_t)word, *sent + 1,
                            CU_STREAM_WRITE_VALUE_DEFAULT),
                    comm, peer, "Write"));
  (*sent)++;
  return ncclSuccess;
}

ncclResult_t gpu_signal_wait(struct ncclComm* comm, int peer, int slot, int count,
                             cudaStream_t stream) {
  struct gpu_comm* g = comm->engine_state;
  NCCLCHECK(not_captured(comm, stream, "ncclWaitSignal"));
  if (count == 0) return ncclSuccess;
  uint32_t* want =
      &g->sig_counts[((size_t)comm->nranks + (size_t)peer) * ENGINE_SIGNAL_SLOTS + slot];
  char* word =
      g->p2p_mem.ptr + g->sig_off + ((size_t)peer * ENGINE_SIGNAL_SLOTS + slot) * sizeof(uint32_t);
  uint32_t target = *want + (uint32_t)count;
  NCCLCHECK(checked(
      wait32((CUstream)stream, (CUdeviceptr)(uintptr_t)word, target, CU_STREAM_WAIT_VALUE_GEQ),
      comm, peer, "Wait"));
  *want = target;
  return ncclSuccess;
}

ncclResult_t gpu_stream_wait(cudaStream_t stream, const char* fn) {
  if (gpu_capturing(stream)) {
    WARN("%s: the stream is being captured into a CUDA graph; this one-sided call waits for the "
         "stream on the host (a peer on another host, or without stream memory operations): "
         "call it outside capture",
         fn);
    return ncclInvalidUsage;
  }
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
