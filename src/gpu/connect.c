/* Connections of the CUDA engine, made once at init through the bootstrap: the ring (each rank
 * maps the FIFOs of the next rank) and the one-shot LL buffers (each rank maps every peer's
 * buffer). Peer memory is reached by peer access within a process and by CUDA IPC across
 * processes. */
#include <stdlib.h>
#include <string.h>
#include "boot/boot.h"
#include "core/check.h"
#include "core/param.h"
#include "gpu/gpu.h"

#define TAG_FIFO 0x47464600 /* "GFF": my FIFO descriptor, sent to the previous rank */

struct mem_desc {
  int pid;
  int dev;
  void* ptr;              /* valid in the same process */
  cudaIpcMemHandle_t ipc; /* valid in another process */
  int ok;                 /* LL: this rank mapped every peer's buffer */
};

static int same_process(const struct ncclComm* comm, int peer) {
  const struct peer_info *me = &comm->peers[comm->rank], *p = &comm->peers[peer];
  return me->host_hash == p->host_hash && me->pid == p->pid;
}

/* Can this rank write into the next rank's GPU memory? Says why not. */
static ncclResult_t check_next(struct ncclComm* comm, int next) {
  const struct peer_info *me = &comm->peers[comm->rank], *p = &comm->peers[next];
  if (me->host_hash != p->host_hash) {
    WARN("rank %d (host %s) and rank %d (host %s) are on different hosts: the GPU engine connects "
         "GPUs of one host only so far (set MONEL_ENGINE=cpu to use the CPU engine)",
         comm->rank, me->host, next, p->host);
    return ncclInvalidUsage;
  }
  if (param_int(PARAM_P2P_DISABLE) == 1) {
    WARN("NCCL_P2P_DISABLE=1: the GPU engine moves data between GPUs with peer access only and "
         "has no host-memory path yet; unset NCCL_P2P_DISABLE (or set MONEL_ENGINE=cpu)");
    return ncclInvalidUsage;
  }
  if (p->cuda_dev == me->cuda_dev) return ncclSuccess;
  int can = 0;
  CUDACHECK(cudaDeviceCanAccessPeer(&can, me->cuda_dev, p->cuda_dev));
  if (!can) {
    WARN("rank %d (GPU %d) cannot access the memory of rank %d (GPU %d): the GPU engine needs "
         "peer access (NVLink or PCIe P2P) between neighbouring GPUs so far",
         comm->rank, me->cuda_dev, next, p->cuda_dev);
    return ncclInvalidUsage;
  }
  return ncclSuccess;
}

/* Map a peer's memory from its descriptor: *ptr and *ipc, or an error (no WARN). */
static cudaError_t map_peer(struct ncclComm* comm, int peer, const struct mem_desc* d, char** ptr,
                            int* ipc) {
  *ptr = NULL, *ipc = 0;
  if (same_process(comm, peer)) {
    if (d->dev != comm->cuda_dev) {
      int can = 0;
      cudaError_t e = cudaDeviceCanAccessPeer(&can, comm->cuda_dev, d->dev);
      if (e != cudaSuccess) return e;
      if (!can) return cudaErrorPeerAccessUnsupported;
      e = cudaDeviceEnablePeerAccess(d->dev, 0);
      if (e == cudaErrorPeerAccessAlreadyEnabled)
        (void)cudaGetLastError();
      else if (e != cudaSuccess)
        return e;
    }
    *ptr = d->ptr;
    return cudaSuccess;
  }
  void* p = NULL;
  cudaError_t e = cudaIpcOpenMemHandle(&p, d->ipc, cudaIpcMemLazyEnablePeerAccess);
  if (e != cudaSuccess) return e;
  *ptr = p, *ipc = 1;
  return cudaSuccess;
}

static void describe(struct ncclComm* comm, void* ptr, int need_ipc, struct mem_desc* d) {
  memset(d, 0, sizeof *d);
  d->pid = comm->peers[comm->rank].pid;
  d->dev = comm->cuda_dev;
  d->ptr = ptr;
  if (need_ipc && cudaIpcGetMemHandle(&d->ipc, ptr) != cudaSuccess) (void)cudaGetLastError();
}

ncclResult_t gpu_connect_ring(struct ncclComm* comm, struct gpu_comm* g) {
  int n = comm->nranks, next = (comm->rank + 1) % n, prev = (comm->rank + n - 1) % n;
  struct mem_desc mine, theirs;
  describe(comm, g->fifo, !same_process(comm, prev), &mine);
  NCCLCHECK(check_next(comm, next));
  NCCLCHECK(boot_send(comm->boot, prev, TAG_FIFO, &mine, sizeof mine));
  NCCLCHECK(boot_recv(comm->boot, next, TAG_FIFO, &theirs, sizeof theirs));
  cudaError_t e = map_peer(comm, next, &theirs, &g->next_fifo, &g->next_ipc);
  if (e != cudaSuccess) {
    WARN("rank %d cannot map the FIFOs of rank %d (GPU %d): %s", comm->rank, next, theirs.dev,
         cudaGetErrorString(e));
    return ncclUnhandledCudaError;
  }
  INFO(LOG_INIT | LOG_P2P,
       "comm %p rank %d GPU ring: send to rank %d (GPU %d) via %s, %d channels x "
       "%d slots x %zu bytes",
       (void*)comm, comm->rank, next, theirs.dev, g->next_ipc ? "CUDA IPC" : "peer access",
       g->nchannels_max, g->nslots, g->slot_bytes);
  return ncclSuccess;
}

/* Exchange a buffer of every rank through the bootstrap and map each peer's: peer[r] is rank r's
 * buffer as I address it (mine at [rank]), bit r of *ipc set when CUDA IPC opened it. *all_ok:
 * whether every rank mapped every peer (collective; never fails for lack of peer access). */
static ncclResult_t map_all(struct ncclComm* comm, char* mine, char** peer, unsigned* ipc,
                            int* all_ok) {
  int n = comm->nranks, me = comm->rank, need_ipc = 0, ok = 1;
  ncclResult_t res = ncclSuccess;
  struct mem_desc* all = NULL;
  *all_ok = 0;
  if (n < 2 || n > DEV_MAX_PEERS) return ncclSuccess;
  NCCLCALLOC(all, n);
  for (int r = 0; r < n; r++) need_ipc |= !same_process(comm, r);
  describe(comm, mine, need_ipc, &all[me]);
  NCCLCHECKGOTO(boot_allgather(comm->boot, all, sizeof *all), res, out);
  for (int r = 0; r < n; r++) {
    if (r == me) {
      peer[r] = mine;
      continue;
    }
    int opened = 0;
    if (comm->peers[r].host_hash != comm->peers[me].host_hash ||
        param_int(PARAM_P2P_DISABLE) == 1 ||
        map_peer(comm, r, &all[r], &peer[r], &opened) != cudaSuccess) {
      (void)cudaGetLastError();
      ok = 0;
      break;
    }
    if (opened) *ipc |= 1u << r;
  }
  memset(all, 0, sizeof *all * n);
  all[me].ok = ok;
  NCCLCHECKGOTO(boot_allgather(comm->boot, all, sizeof *all), res, out);
  *all_ok = 1;
  for (int r = 0; r < n; r++) *all_ok &= all[r].ok;
out:
  free(all);
  return res;
}

ncclResult_t gpu_connect_ll(struct ncclComm* comm, struct gpu_comm* g) {
  NCCLCHECK(map_all(comm, g->ll, g->peer_ll, &g->peer_ll_ipc, &g->ll_ok));
  INFO(LOG_INIT | LOG_P2P, "comm %p rank %d GPU one-shot LL AllReduce: %s", (void*)comm, comm->rank,
       g->ll_ok ? "every peer mapped" : "off (a pair of GPUs has no peer access)");
  return ncclSuccess;
}

ncclResult_t gpu_connect_p2p(struct ncclComm* comm, struct gpu_comm* g) {
  NCCLCHECK(map_all(comm, g->p2p_fifo, g->peer_p2p, &g->peer_p2p_ipc, &g->p2p_ok));
  INFO(LOG_INIT | LOG_P2P, "comm %p rank %d GPU point-to-point: %s, %d channels per peer",
       (void*)comm, comm->rank,
       g->p2p_ok ? "every peer mapped" : "off (a pair of GPUs has no peer access)", g->p2p_nch);
  return ncclSuccess;
}

void gpu_disconnect(struct gpu_comm* g) {
  if (g->next_ipc && g->next_fifo) (void)cudaIpcCloseMemHandle(g->next_fifo);
  g->next_fifo = NULL;
  for (int r = 0; r < DEV_MAX_PEERS; r++)
    if ((g->peer_ll_ipc >> r) & 1) (void)cudaIpcCloseMemHandle(g->peer_ll[r]);
  g->peer_ll_ipc = 0;
  memset(g->peer_ll, 0, sizeof g->peer_ll);
  for (int r = 0; r < DEV_MAX_PEERS; r++)
    if ((g->peer_p2p_ipc >> r) & 1) (void)cudaIpcCloseMemHandle(g->peer_p2p[r]);
  g->peer_p2p_ipc = 0;
  memset(g->peer_p2p, 0, sizeof g->peer_p2p);
}
