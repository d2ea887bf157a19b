/* SPDX-License-Identifier: BSD-3-Clause */
/* The kernels' peer table (device/dev.h struct dev_peer) and the per-peer host arrays of a
 * gpu_comm, all sized by the comm's nranks at init: nothing about peers has a fixed size.
 *
 * The table lives in device memory, one entry per rank, and every launch that reaches peers
 * through the point-to-point FIFOs (the tree, the point-to-point kernel, the one hop) carries a
 * pointer to it instead of copies of its entries. Entry r is written once, when the pair is
 * connected (gpu_connect_p2p at init, gpu/net.c at the peer's first use across the network),
 * before any launch that names r is enqueued, and never changes after: a running kernel reads
 * only entries of peers it was launched with, so a write to another entry cannot race with it,
 * and a graph captured after the write replays with the same entry. The write goes on the comm's
 * ctl_stream, which waits for no kernel, and is waited for before the caller enqueues. */
#include <stdlib.h>
#include <string.h>
#include "util/check.h"
#include "gpu/gpu.h"
#include "gpu/peers.h"

ncclResult_t gpu_peer_table_alloc(struct ncclComm* comm, struct gpu_comm* g) {
  size_t n = (size_t)comm->nranks;
  g->nranks = comm->nranks;
  NCCLCALLOC(g->peer_tab, n);
  NCCLCALLOC(g->p2p_flags, n);
  NCCLCALLOC(g->p2p_local, n);
  NCCLCALLOC(g->p2p_net_mem, n);
  NCCLCALLOC(g->peer_ll, n);
  NCCLCALLOC(g->peer_p2p, n);
  NCCLCALLOC(g->peer_ce, n);
  NCCLCALLOC(g->want_all, gpu_set_words(comm->nranks));
  NCCLCALLOC(g->want0, gpu_set_words(comm->nranks));
  CUDACHECK(cudaMalloc((void**)&g->peer_dev, n * sizeof *g->peer_dev));
  CUDACHECK(cudaMemset(g->peer_dev, 0, n * sizeof *g->peer_dev));
  g->dev_bytes += n * sizeof *g->peer_dev;
  return ncclSuccess;
}

/* Copies entries [lo, hi) of peer_tab to the device (relaxed for a capture in progress: the
 * copy is not part of it, and the graph reads the table only when it runs). */
static ncclResult_t publish(struct gpu_comm* g, int lo, int hi) {
  if (hi <= lo) return ncclSuccess;
  enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  CUDACHECK(cudaThreadExchangeStreamCaptureMode(&mode));
  cudaError_t e =
      cudaMemcpyAsync(g->peer_dev + lo, g->peer_tab + lo, (size_t)(hi - lo) * sizeof *g->peer_tab,
                      cudaMemcpyHostToDevice, g->ctl_stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(g->ctl_stream);
  (void)cudaThreadExchangeStreamCaptureMode(&mode);
  if (e != cudaSuccess) {
    WARN("writing the GPU peer table (ranks %d to %d) failed: %s", lo, hi - 1,
         cudaGetErrorString(e));
    return ncclUnhandledCudaError;
  }
  return ncclSuccess;
}

ncclResult_t gpu_peer_publish(struct gpu_comm* g, int r) {
  return publish(g, r, r + 1);
}

ncclResult_t gpu_peer_publish_all(struct gpu_comm* g, int nranks) {
  return publish(g, 0, nranks);
}

void gpu_peer_table_free(struct gpu_comm* g, int kernels_over) {
  if (kernels_over && g->peer_dev) (void)cudaFree(g->peer_dev);
  if (kernels_over && g->peer_ll_dev) (void)cudaFree(g->peer_ll_dev);
  (void)cudaGetLastError();
  g->peer_dev = NULL, g->peer_ll_dev = NULL;
  free(g->peer_tab), free(g->p2p_flags), free(g->p2p_local), free(g->p2p_net_mem);
  free(g->peer_ll), free(g->peer_p2p), free(g->peer_ce), free(g->want_all), free(g->want0);
  g->peer_tab = NULL, g->p2p_flags = NULL, g->p2p_local = NULL, g->p2p_net_mem = NULL;
  g->peer_ll = g->peer_p2p = g->peer_ce = NULL;
  g->want_all = g->want0 = NULL;
}
