/* SPDX-License-Identifier: BSD-3-Clause */
/* Connections of the CUDA engine, made at init through the bootstrap: the ring (each rank maps the
 * FIFOs of the next rank), the one-shot LL buffers and the point-to-point FIFOs (each rank maps
 * every peer's on its host). Connections to another host (gpu/net.c) are not mapped: the kernels
 * fill a mirror in host memory that the proxy sends (its slots in device memory with GPUDirect
 * RDMA); a point-to-point peer's are made at its first use (MONEL_P2P_CONNECT).
 *
 * Where FIFOs live: on the receiving GPU, reached by peer access within a process and by CUDA IPC
 * across processes; or, when NCCL_P2P_DISABLE=1 or a pair of GPUs of the comm has no peer access,
 * in pinned host memory that every GPU of the comm maps (cudaHostAlloc within a process, a
 * memfd segment, os/shm.h, registered with CUDA across processes). The choice is the same on every
 * rank. The one-shot LL buffers are used only with peer access. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "boot/boot.h"
#include "boot/tags.h"
#include "core/node_topo.h"
#include "util/check.h"
#include "util/param.h"
#include "gpu/gpu.h"
#include "os/shm.h"

struct mem_desc {
  int pid;
  int dev;
  int host;               /* pinned host memory (see gpu_mem) */
  void* ptr;              /* valid in the same process */
  size_t len;             /* host memory: bytes of the segment */
  char shm[OS_SHM_NAME];  /* host memory shared across processes: the segment's name */
  cudaIpcMemHandle_t ipc; /* device memory, valid in another process */
  int ok;                 /* map_all: this rank mapped every peer's buffer */
};

static int same_process(const struct ncclComm* comm, int peer) {
  return gpu_same_process(comm, comm->rank, peer);
}

static int all_same_process(const struct ncclComm* comm) {
  for (int r = 0; r < comm->nranks; r++)
    if (!same_process(comm, r)) return 0;
  return 1;
}

/* NCCL_P2P_LEVEL, when set: peer access between two GPUs only up to that path type of the
 * topology (core/node_topo.h). Unset, CUDA's answer stands: a topology without NVML's NVLink
 * facts would take NVLink pairs for PCIe ones. */
static int level_allows(int a, int b) {
  char ba[32], bb[32];
  const struct topo_system* s = NULL;
  int ga = -1, gb = -1;
  if (!param_is_set(PARAM_P2P_LEVEL)) return 1;
  if (cudaDeviceGetPCIBusId(ba, sizeof ba, a) != cudaSuccess ||
      cudaDeviceGetPCIBusId(bb, sizeof bb, b) != cudaSuccess) {
    (void)cudaGetLastError();
    return 1;
  }
  if (node_topo_gpu(ba, a, &ga) != ncclSuccess || node_topo_gpu(bb, b, &gb) != ncclSuccess ||
      node_topo_get(&s) != ncclSuccess)
    return 1;
  return topo_p2p_ok(s, ga, gb);
}

ncclResult_t gpu_choose_host_fifos(struct ncclComm* comm, struct gpu_comm* g) {
  int n = comm->nranks, me = comm->rank, *want = NULL;
  ncclResult_t res = ncclSuccess;
  NCCLCALLOC(want, n);
  want[me] = param_int(PARAM_P2P_DISABLE) == 1;
  for (int r = 0; r < n && !want[me]; r++) {
    const struct peer_info* p = &comm->peers[r];
    if (p->host_hash != comm->peers[me].host_hash || p->cuda_dev == comm->cuda_dev) continue;
    int can = 0;
    if (cudaDeviceCanAccessPeer(&can, comm->cuda_dev, p->cuda_dev) != cudaSuccess) {
      (void)cudaGetLastError();
      can = 0;
    }
    want[me] = !can || !level_allows(comm->cuda_dev, p->cuda_dev);
  }
  NCCLCHECKGOTO(boot_allgather(comm->boot, want, sizeof *want), res, out);
  g->host_fifos = 0;
  for (int r = 0; r < n; r++) g->host_fifos |= want[r];
  if (g->host_fifos)
    INFO(LOG_INIT | LOG_P2P, "comm %p rank %d: GPU FIFOs in pinned host memory (%s)", (void*)comm,
         me,
         param_int(PARAM_P2P_DISABLE) == 1 ? "NCCL_P2P_DISABLE=1"
                                           : "a pair of GPUs has no peer access, or its path is "
                                             "beyond NCCL_P2P_LEVEL");
out:
  free(want);
  return res;
}

ncclResult_t gpu_shared_alloc(struct ncclComm* comm, struct gpu_comm* g, size_t len, int host,
                              struct gpu_mem* m) {
  memset(m, 0, sizeof *m);
  m->len = len;
  m->host = host;
  if (!host) {
    CUDACHECK(cudaMalloc((void**)&m->ptr, len));
    CUDACHECK(cudaMemset(m->ptr, 0, len));
    g->dev_bytes += len;
    return ncclSuccess;
  }
  void* h = NULL;
  if (all_same_process(comm)) {
    CUDACHECK(cudaHostAlloc(&h, len, cudaHostAllocPortable | cudaHostAllocMapped));
    memset(h, 0, len);
  } else {
    NCCLCHECK(os_shm_create(len, m->shm, &h));
    m->map = h;
    CUDACHECK(cudaHostRegister(h, len, cudaHostRegisterPortable | cudaHostRegisterMapped));
  }
  m->hptr = h;
  CUDACHECK(cudaHostGetDevicePointer((void**)&m->ptr, h, 0));
  return ncclSuccess;
}

void gpu_shared_free(struct gpu_mem* m) {
  if (m->ptr == NULL && m->map == NULL) return;
  if (m->dslots != NULL) (void)cudaFree(m->dslots);
  if (!m->host) {
    (void)cudaFree(m->ptr);
  } else if (m->map == NULL) {
    (void)cudaFreeHost(m->hptr);
  } else {
    (void)cudaHostUnregister(m->map);
    os_shm_unmap(m->map, m->len);
    os_shm_unlink(m->shm);
  }
  (void)cudaGetLastError();
  memset(m, 0, sizeof *m);
}

void gpu_shared_unlink(struct gpu_mem* m) {
  os_shm_unlink(m->shm);
  m->shm[0] = 0;
}

/* gpu.h: gpu_ipc_open */
struct ipc_open {
  cudaIpcMemHandle_t handle;
  void* ptr;
  int refs;
  struct ipc_open* next;
};
static pthread_mutex_t ipc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ipc_open* ipc_opens;

cudaError_t gpu_ipc_open(const cudaIpcMemHandle_t* h, void** ptr) {
  cudaError_t e = cudaSuccess;
  pthread_mutex_lock(&ipc_lock);
  struct ipc_open* o = ipc_opens;
  while (o != NULL && memcmp(&o->handle, h, sizeof *h) != 0) o = o->next;
  if (o != NULL) {
    o->refs++;
  } else if ((o = calloc(1, sizeof *o)) == NULL) {
    e = cudaErrorMemoryAllocation;
  } else if ((e = cudaIpcOpenMemHandle(&o->ptr, *h, cudaIpcMemLazyEnablePeerAccess)) !=
             cudaSuccess) {
    free(o);
    o = NULL;
  } else {
    o->handle = *h, o->refs = 1, o->next = ipc_opens;
    ipc_opens = o;
  }
  if (o != NULL) *ptr = o->ptr;
  pthread_mutex_unlock(&ipc_lock);
  return e;
}

void gpu_ipc_close(void* ptr) {
  pthread_mutex_lock(&ipc_lock);
  for (struct ipc_open** at = &ipc_opens; *at != NULL; at = &(*at)->next) {
    struct ipc_open* o = *at;
    if (o->ptr != ptr) continue;
    if (--o->refs == 0) {
      (void)cudaIpcCloseMemHandle(ptr);
      *at = o->next;
      free(o);
    }
    break;
  }
  pthread_mutex_unlock(&ipc_lock);
}

/* Remember a peer mapping for gpu_disconnect (the list grows with the peers mapped). */
static cudaError_t remember(struct gpu_comm* g, int kind, void* host, size_t len, char* dev) {
  if (g->nmaps == g->maps_cap) {
    int cap = g->maps_cap ? 2 * g->maps_cap : 16;
    struct gpu_peer_map* m = realloc(g->maps, (size_t)cap * sizeof *m);
    if (m == NULL) return cudaErrorMemoryAllocation;
    g->maps = m, g->maps_cap = cap;
  }
  g->maps[g->nmaps++] = (struct gpu_peer_map){kind, host, len, dev};
  return cudaSuccess;
}

/* Map a peer's memory from its descriptor into *ptr, or an error (no WARN). */
static cudaError_t map_peer(struct ncclComm* comm, struct gpu_comm* g, int peer,
                            const struct mem_desc* d, char** ptr) {
  *ptr = NULL;
  if (d->host) {
    if (same_process(comm, peer)) { /* portable pinned memory: one address everywhere */
      *ptr = d->ptr;
      return cudaSuccess;
    }
    void* h = NULL;
    if (os_shm_open(d->shm, d->len, &h) != ncclSuccess) return cudaErrorMapBufferObjectFailed;
    cudaError_t e = cudaHostRegister(h, d->len, cudaHostRegisterPortable | cudaHostRegisterMapped);
    if (e == cudaSuccess) e = cudaHostGetDevicePointer((void**)ptr, h, 0);
    if (e == cudaSuccess) e = remember(g, GPU_MAP_SHM, h, d->len, *ptr);
    if (e != cudaSuccess) os_shm_unmap(h, d->len);
    return e;
  }
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
  cudaError_t e = gpu_ipc_open(&d->ipc, &p);
  if (e != cudaSuccess) return e;
  *ptr = p;
  e = remember(g, GPU_MAP_IPC, NULL, 0, p);
  if (e != cudaSuccess) gpu_ipc_close(p);
  return e;
}

static void describe(struct ncclComm* comm, const struct gpu_mem* m, int need_ipc,
                     struct mem_desc* d) {
  memset(d, 0, sizeof *d);
  d->pid = comm->peers[comm->rank].pid;
  d->dev = comm->cuda_dev;
  d->host = m->host;
  d->ptr = m->ptr;
  d->len = m->len;
  memcpy(d->shm, m->shm, sizeof d->shm);
  if (!m->host && need_ipc && cudaIpcGetMemHandle(&d->ipc, m->ptr) != cudaSuccess)
    (void)cudaGetLastError();
}

static const char* how(const struct ncclComm* comm, int peer, const struct mem_desc* d) {
  if (d->host) return "pinned host memory";
  return same_process(comm, peer) ? "peer access" : "CUDA IPC";
}

ncclResult_t gpu_connect_ring(struct ncclComm* comm, struct gpu_comm* g) {
  int next = g->ring_next, prev = g->ring_prev;
  struct mem_desc mine, theirs;
  if (!g->net_prev) {
    describe(comm, &g->fifo_mem, !same_process(comm, prev), &mine);
    NCCLCHECK(boot_send(comm->boot, prev, BOOT_TAG_GPU_FIFO, &mine, sizeof mine));
  }
  if (g->net_next) { /* my kernels fill a mirror; the proxy sends it (gpu/net.c) */
    NCCLCHECK(gpu_host_fifo_alloc(g, g->fifo_bytes * (size_t)g->nchannels_max, &g->ring_mirror));
    g->next_fifo = g->ring_mirror.ptr;
    INFO(LOG_INIT | LOG_NET,
         "comm %p rank %d GPU ring: send to rank %d (host %s) over the network, %d channels x "
         "%d slots x %zu bytes",
         (void*)comm, comm->rank, next, comm->peers[next].host, g->nchannels_max, g->nslots,
         g->slot_bytes);
    return ncclSuccess;
  }
  NCCLCHECK(boot_recv(comm->boot, next, BOOT_TAG_GPU_FIFO, &theirs, sizeof theirs));
  cudaError_t e = map_peer(comm, g, next, &theirs, &g->next_fifo);
  if (e != cudaSuccess) {
    WARN("rank %d cannot map the FIFOs of rank %d (GPU %d, %s): %s", comm->rank, next, theirs.dev,
         how(comm, next, &theirs), cudaGetErrorString(e));
    return ncclUnhandledCudaError;
  }
  INFO(LOG_INIT | LOG_P2P,
       "comm %p rank %d GPU ring: send to rank %d (GPU %d) via %s, %d channels x "
       "%d slots x %zu bytes",
       (void*)comm, comm->rank, next, theirs.dev, how(comm, next, &theirs), g->nchannels_max,
       g->nslots, g->slot_bytes);
  return ncclSuccess;
}

/* Exchange a buffer of every rank through the bootstrap and map each peer's: peer[r] is rank r's
 * buffer as I address it (mine at [rank]). *all_ok: whether every rank mapped every peer
 * (collective; never fails for lack of peer access). Device memory needs peer access. With
 * skip_net, peers over the network (gpu_net_is) are left NULL and count as mapped. */
static ncclResult_t map_all(struct ncclComm* comm, struct gpu_comm* g, const struct gpu_mem* mine,
                            char** peer, int skip_net, int* all_ok) {
  int n = comm->nranks, me = comm->rank, need_ipc = 0, ok = 1;
  ncclResult_t res = ncclSuccess;
  struct mem_desc* all = NULL;
  *all_ok = 0;
  if (n < 2) return ncclSuccess;
  NCCLCALLOC(all, n);
  for (int r = 0; r < n; r++) need_ipc |= !same_process(comm, r);
  describe(comm, mine, need_ipc, &all[me]);
  NCCLCHECKGOTO(boot_allgather(comm->boot, all, sizeof *all), res, out);
  for (int r = 0; r < n; r++) {
    if (r == me) {
      peer[r] = mine->ptr;
      continue;
    }
    if (skip_net && gpu_net_is(comm, r)) continue;
    cudaError_t e = cudaSuccess;
    if (comm->peers[r].host_hash != comm->peers[me].host_hash ||
        (!all[r].host && param_int(PARAM_P2P_DISABLE) == 1) ||
        (e = map_peer(comm, g, r, &all[r], &peer[r])) != cudaSuccess) {
      if (e != cudaSuccess)
        INFO(LOG_INIT | LOG_P2P, "comm %p rank %d cannot map a buffer of rank %d (GPU %d, %s): %s",
             (void*)comm, me, r, all[r].dev, how(comm, r, &all[r]), cudaGetErrorString(e));
      (void)cudaGetLastError();
      ok = 0;
      break;
    }
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

/* The one-shot kernel reads every rank's LL buffer from a table in device memory (dev.h). */
ncclResult_t gpu_connect_ll(struct ncclComm* comm, struct gpu_comm* g) {
  size_t bytes = sizeof(char*) * (size_t)comm->nranks;
  NCCLCHECK(map_all(comm, g, &g->ll_mem, g->peer_ll, 0, &g->ll_ok));
  if (g->ll_ok) {
    CUDACHECK(cudaMalloc((void**)&g->peer_ll_dev, bytes));
    CUDACHECK(cudaMemcpy(g->peer_ll_dev, g->peer_ll, bytes, cudaMemcpyHostToDevice));
    g->dev_bytes += bytes;
  }
  INFO(LOG_INIT | LOG_P2P, "comm %p rank %d GPU one-shot LL AllReduce: %s", (void*)comm, comm->rank,
       g->ll_ok ? "every peer mapped" : "off (a pair of GPUs has no peer access)");
  return ncclSuccess;
}

/* Peers of this host share FIFOs [source][channel] in p2p_mem, the sources being the ranks of
 * the host (p2p_local: the same index on every rank of it), mapped here; a peer over the network
 * gets FIFOs [channel < p2p_net_nch] of its own in my pinned host memory, and a mirror of its FIFOs
 * for me, made with its connections (gpu/net.c: at init with MONEL_P2P_CONNECT=eager, else at
 * the first group that uses it); its messages use no other channel (gpu/p2p.c). Each peer of
 * the host gets its entry of the kernels' peer table here. */
ncclResult_t gpu_connect_p2p(struct ncclComm* comm, struct gpu_comm* g) {
  int me = comm->rank, nnet = 0;
  size_t fifo = dev_fifo_bytes(g->p2p_nslots, g->p2p_slot_bytes);
  size_t mine = fifo * (size_t)g->p2p_nch;
  NCCLCHECK(map_all(comm, g, &g->p2p_mem, g->peer_p2p, 1, &g->p2p_ok));
  for (int r = 0; r < comm->nranks; r++) {
    struct dev_peer* e = &g->peer_tab[r];
    if (r != me && gpu_net_is(comm, r)) {
      g->p2p_flags[r] |= GPU_PEER_NET;
      g->p2p_net_todo++; /* until gpu/net.c connects every channel with it */
      nnet++;
      continue;
    }
    e->recv_fifo = g->p2p_mem.ptr + (size_t)g->p2p_local[r] * mine;
    e->send_fifo = g->peer_p2p[r] ? g->peer_p2p[r] + (size_t)g->p2p_local[me] * mine : NULL;
    e->slot_delta = 0;
    e->recv_hostmem = e->send_by_tail = g->host_fifos;
    g->p2p_flags[r] |= GPU_PEER_LIVE;
  }
  NCCLCHECK(gpu_peer_publish_all(g, comm->nranks));
  INFO(LOG_INIT | LOG_P2P,
       "comm %p rank %d GPU point-to-point: %s, %d channels per peer%s, %d peers over the network "
       "(%d channels each, connected %s)",
       (void*)comm, comm->rank, g->p2p_ok ? "every peer mapped" : "off (a peer cannot be mapped)",
       g->p2p_nch, g->host_fifos ? " through pinned host memory" : "", nnet, g->p2p_net_nch,
       g->p2p_eager ? "at init" : "at first use");
  return ncclSuccess;
}

/* LL128's lines are safe where a warp's 128-byte store reaches the reader whole: the same GPU,
 * or a peer GPU over NVLink, taken here as a pair with native atomics (cudaDevP2PAttr
 * NativeAtomicSupported, which PCIe peers lack). Every rank checks its peers on this host
 * (network peers and host-memory FIFOs publish every step by the tail anyway) and the verdicts
 * are combined, so both ends of a connection lay LL128 out alike (collective). */
ncclResult_t gpu_check_ll128(struct ncclComm* comm, struct gpu_comm* g) {
  struct bus {
    char id[32];
    int ok;
  }* all = NULL;
  int n = comm->nranks, me = comm->rank, ok = 1;
  ncclResult_t res = ncclSuccess;
  g->ll128_lines = 0;
  NCCLCALLOC(all, n);
  if (cudaDeviceGetPCIBusId(all[me].id, sizeof all[me].id, comm->cuda_dev) != cudaSuccess) ok = 0;
  NCCLCHECKGOTO(boot_allgather(comm->boot, all, sizeof *all), res, out);
  for (int r = 0; r < n && ok; r++) {
    if (r == me || gpu_net_is(comm, r) || strcmp(all[r].id, all[me].id) == 0) continue;
    int dev = -1, atomics = 0;
    if (cudaDeviceGetByPCIBusId(&dev, all[r].id) != cudaSuccess ||
        cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, comm->cuda_dev,
                                  dev) != cudaSuccess ||
        !atomics)
      ok = 0;
  }
  (void)cudaGetLastError();
  for (int r = 0; r < n; r++) memset(all[r].id, 0, sizeof all[r].id);
  all[me].ok = ok;
  NCCLCHECKGOTO(boot_allgather(comm->boot, all, sizeof *all), res, out);
  g->ll128_lines = 1;
  for (int r = 0; r < n; r++) g->ll128_lines &= all[r].ok;
  INFO(LOG_INIT | LOG_P2P, "comm %p rank %d GPU LL128: %s", (void*)comm, comm->rank,
       g->ll128_lines ? "lines in GPU memory (the same GPU or NVLink)"
                      : "every step published by the tail (a pair of GPUs without NVLink)");
out:
  free(all);
  return res;
}

ncclResult_t gpu_connect_ce(struct ncclComm* comm, struct gpu_comm* g) {
  return map_all(comm, g, &g->ce_mem, g->peer_ce, 0, &g->ce_ok);
}

void gpu_disconnect(struct gpu_comm* g) {
  for (int i = 0; i < g->nmaps; i++) {
    struct gpu_peer_map* m = &g->maps[i];
    if (m->kind == GPU_MAP_IPC) {
      gpu_ipc_close(m->dev);
    } else {
      (void)cudaHostUnregister(m->host);
      os_shm_unmap(m->host, m->len);
    }
  }
  (void)cudaGetLastError();
  g->nmaps = 0;
  free(g->maps);
  g->maps = NULL, g->maps_cap = 0;
  g->next_fifo = NULL;
  size_t n = (size_t)g->nranks;
  if (g->peer_tab)
    for (size_t r = 0; r < n; r++) g->peer_tab[r].send_fifo = NULL;
  if (g->peer_ll) memset(g->peer_ll, 0, n * sizeof *g->peer_ll);
  if (g->peer_p2p) memset(g->peer_p2p, 0, n * sizeof *g->peer_p2p);
  if (g->peer_ce) memset(g->peer_ce, 0, n * sizeof *g->peer_ce);
}
