/* GPU connections across hosts (NET connections): which ring hops and point-to-point peers go
 * over the network, the ring order that crosses hosts as rarely as possible, and their setup at
 * comm init. The ring order itself is the comm's (core/comm.c, topo_ring_order). The data path is
 * the proxy's (proxy/fifo_net.h): the kernels only see FIFOs whose counters are in pinned host
 * memory, the receiver's own and the sender's mirror of it.
 *
 * Where their slots live (fifo_net_gdr, MONEL_NET_GDR): after the counters in the same pinned
 * host memory (staged), or, when the network's device reads and writes GPU memory (GPUDirect
 * RDMA), in device memory: each host block of FIFOs gets a device block of the same size and
 * layout (gpu_mem.dslots), whose slot areas the NIC reads and writes; the kernels find a slot
 * at the FIFO's address + its offset + the block's slot delta (dev.h). Each rank decides for its
 * own FIFOs: the two ends of a connection need not agree.
 *
 * A connection between ranks r and s is a NET connection when their hosts differ, or for every
 * pair when NCCL_P2P_DISABLE=1 and NCCL_SHM_DISABLE=1 (NCCL's way to force the network on one
 * host). Every rank decides alike, from the host table and the (same) environment.
 *
 * Setup: each receiver listens once per connection and sends the handles to its sender over the
 * bootstrap (one message per peer); then every rank connects and accepts in one non-blocking loop
 * (fifo_net_establish) and hands its connections to the proxy thread. Connection ids (tags): ring
 * channel c is c, point-to-point channel c is DEV_MAX_CHANNELS + c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "boot/boot.h"
#include "boot/tags.h"
#include "util/check.h"
#include "util/param.h"
#include "gpu/gpu.h"
#include "proxy/proxy.h"

int gpu_net_is(const struct ncclComm* comm, int peer) {
  if (peer == comm->rank) return 0;
  if (comm->peers[peer].host_hash != comm->peers[comm->rank].host_hash) return 1;
  return param_int(PARAM_P2P_DISABLE) == 1 && param_int(PARAM_SHM_DISABLE) == 1;
}

int gpu_net_any(const struct ncclComm* comm) {
  for (int r = 0; r < comm->nranks; r++)
    for (int s = r + 1; s < comm->nranks; s++) {
      if (comm->peers[r].host_hash != comm->peers[s].host_hash) return 1;
      if (param_int(PARAM_P2P_DISABLE) == 1 && param_int(PARAM_SHM_DISABLE) == 1) return 1;
    }
  return 0;
}

ncclResult_t gpu_ring_order(struct ncclComm* comm, struct gpu_comm* g) {
  int n = comm->nranks, identity = 1;
  const int* order = comm->ring_order;
  for (int p = 0; p < n; p++) identity &= order[p] == p;
  g->my_ring_pos = comm->ring_pos[comm->rank];
  g->ring_next = order[(g->my_ring_pos + 1) % n];
  g->ring_prev = order[(g->my_ring_pos + n - 1) % n];
  g->net_next = gpu_net_is(comm, g->ring_next);
  g->net_prev = gpu_net_is(comm, g->ring_prev);
  if (!identity) {
    size_t bytes = sizeof(int) * (size_t)n;
    CUDACHECK(cudaMalloc((void**)&g->ring_order_dev, bytes));
    CUDACHECK(cudaMemcpy(g->ring_order_dev, order, bytes, cudaMemcpyHostToDevice));
    g->dev_bytes += bytes;
  }
  INFO(LOG_INIT | LOG_NET, "comm %p rank %d: ring position %d of %d, next rank %d%s, previous %d%s",
       (void*)comm, comm->rank, g->my_ring_pos, n, g->ring_next, g->net_next ? " (network)" : "",
       g->ring_prev, g->net_prev ? " (network)" : "");
  return ncclSuccess;
}

ncclResult_t gpu_host_fifo_alloc(struct gpu_comm* g, size_t len, struct gpu_mem* m) {
  void* h = NULL;
  memset(m, 0, sizeof *m);
  m->len = len;
  m->host = 1;
  CUDACHECK(cudaHostAlloc(&h, len, cudaHostAllocPortable | cudaHostAllocMapped));
  memset(h, 0, len);
  m->hptr = h;
  CUDACHECK(cudaHostGetDevicePointer((void**)&m->ptr, h, 0));
  (void)g;
  return ncclSuccess;
}

int64_t gpu_slot_delta(const struct gpu_mem* m) {
  return m->dslots != NULL ? (int64_t)((uintptr_t)m->dslots - (uintptr_t)m->ptr) : 0;
}

void gpu_p2p_slot_deltas(const struct gpu_comm* g, int64_t delta[DEV_MAX_PEERS]) {
  for (int r = 0; r < DEV_MAX_PEERS; r++)
    delta[r] = g->p2p_net >> r & 1 ? gpu_slot_delta(&g->p2p_net_mem[r]) : 0;
}

/* The FIFOs of one kind of connection with one peer: channel k's at byte at + k * fifo_bytes of
 * block m. */
struct fifo_run {
  const struct gpu_mem* m;
  size_t at, fifo_bytes;
  int nslots;
  size_t slot_bytes;
  const char* kind;
};

static struct fifo_run ring_run(const struct gpu_comm* g, const struct gpu_mem* m) {
  return (struct fifo_run){m, 0, g->fifo_bytes, g->nslots, g->slot_bytes, "ring"};
}

/* Peer r's point-to-point FIFOs: mine for it (the receive side), or my mirror of its. */
static struct fifo_run p2p_run(const struct gpu_comm* g, int r, int mirror) {
  size_t fifo = dev_fifo_bytes(g->p2p_nslots, g->p2p_slot_bytes);
  return (struct fifo_run){&g->p2p_net_mem[r],
                           mirror ? fifo * (size_t)g->p2p_net_nch : 0,
                           fifo,
                           g->p2p_nslots,
                           g->p2p_slot_bytes,
                           "point-to-point"};
}

/* A connection's spec: channel k of run f; its slots in the device twin of the block if any. */
static void spec(struct fifo_net_spec* s, const struct ncclComm* comm, int is_send,
                 const struct fifo_run* f, int k, int peer, int tag) {
  size_t at = f->at + (size_t)k * f->fifo_bytes;
  memset(s, 0, sizeof *s);
  s->is_send = is_send;
  s->fifo = (char*)f->m->hptr + at;
  s->slots = f->m->dslots != NULL ? f->m->dslots + at + DEV_FIFO_HEADER : NULL;
  s->nslots = f->nslots;
  s->slot_bytes = f->slot_bytes;
  s->peer = peer;
  s->tag = tag;
  snprintf(s->desc, sizeof s->desc, "rank %d's %s channel %d %s rank %d (host %s)", comm->rank,
           f->kind, k, is_send ? "to" : "from", peer, comm->peers[peer].host);
}

/* Listens for every connection I receive on from peer r; handles[] gets their handles in the
 * order the peer expects (ring channels first). *k: next connection index of the set. */
static ncclResult_t listen_from(struct ncclComm* comm, struct gpu_comm* g, int r, char* handles,
                                int* nh, int* k) {
  struct fifo_net_spec s;
  struct fifo_run ring = ring_run(g, &g->fifo_mem), p2p = p2p_run(g, r, 0);
  *nh = 0;
  if (g->net_prev && r == g->ring_prev)
    for (int c = 0; c < g->nchannels_max; c++) {
      spec(&s, comm, 0, &ring, c, r, c);
      NCCLCHECK(fifo_net_listen(g->net, (*k)++, &s, handles + (size_t)(*nh)++ * NET_HANDLE_BYTES));
    }
  if (g->p2p_net >> r & 1)
    for (int c = 0; c < g->p2p_net_nch; c++) {
      spec(&s, comm, 0, &p2p, c, r, DEV_MAX_CHANNELS + c);
      NCCLCHECK(fifo_net_listen(g->net, (*k)++, &s, handles + (size_t)(*nh)++ * NET_HANDLE_BYTES));
    }
  return ncclSuccess;
}

/* Takes the handles peer r sent for every connection I send on to it. */
static ncclResult_t connect_to(struct ncclComm* comm, struct gpu_comm* g, int r,
                               const char* handles, int* k) {
  struct fifo_net_spec s;
  struct fifo_run ring = ring_run(g, &g->ring_mirror), p2p = p2p_run(g, r, 1);
  int h = 0;
  if (g->net_next && r == g->ring_next)
    for (int c = 0; c < g->nchannels_max; c++) {
      spec(&s, comm, 1, &ring, c, r, c);
      NCCLCHECK(fifo_net_peer_handle(g->net, (*k)++, &s, handles + (size_t)h++ * NET_HANDLE_BYTES));
    }
  if (g->p2p_net >> r & 1)
    for (int c = 0; c < g->p2p_net_nch; c++) {
      spec(&s, comm, 1, &p2p, c, r, DEV_MAX_CHANNELS + c);
      NCCLCHECK(fifo_net_peer_handle(g->net, (*k)++, &s, handles + (size_t)h++ * NET_HANDLE_BYTES));
    }
  return ncclSuccess;
}

/* Connections I send on to r (== those r receives on from me). */
static int sends_to(const struct gpu_comm* g, int r) {
  return (g->net_next && r == g->ring_next ? g->nchannels_max : 0) +
         (g->p2p_net >> r & 1 ? g->p2p_net_nch : 0);
}

static int recvs_from(const struct gpu_comm* g, int r) {
  return (g->net_prev && r == g->ring_prev ? g->nchannels_max : 0) +
         (g->p2p_net >> r & 1 ? g->p2p_net_nch : 0);
}

/* The proxy found a broken connection: the comm fails, naming the peer and the last operation. */
static void net_failed(void* arg, int peer, const char* sentence) {
  struct ncclComm* comm = arg;
  struct gpu_comm* g = comm->engine_state;
  uint64_t last = __atomic_load_n(&g->last_op, __ATOMIC_RELAXED);
  const struct peer_info* p = &comm->peers[peer];
  if (last == 0)
    comm_fail(comm, ncclRemoteError, "%s (peer pid %d), before any operation", sentence, p->pid);
  else
    comm_fail(comm, ncclRemoteError, "%s (peer pid %d), during %s #%llu or an operation before it",
              sentence, p->pid, coll_name((enum coll_kind)(last & 0xff)),
              (unsigned long long)(last >> 8));
}

static ncclResult_t exchange(struct ncclComm* comm, struct gpu_comm* g, char* buf) {
  int n = comm->nranks, k = 0;
  for (int r = 0; r < n; r++) {
    int nh = 0;
    if (recvs_from(g, r) == 0) continue;
    NCCLCHECK(listen_from(comm, g, r, buf, &nh, &k));
    NCCLCHECK(boot_send(comm->boot, r, BOOT_TAG_GPU_NET, buf, (size_t)nh * NET_HANDLE_BYTES));
  }
  for (int r = 0; r < n; r++) {
    int ns = sends_to(g, r);
    if (ns == 0) continue;
    NCCLCHECK(boot_recv(comm->boot, r, BOOT_TAG_GPU_NET, buf, (size_t)ns * NET_HANDLE_BYTES));
    NCCLCHECK(connect_to(comm, g, r, buf, &k));
  }
  return ncclSuccess;
}

/* A device block laid out as m, for the slots of its network FIFOs (GPUDirect RDMA). */
static ncclResult_t slots_on_device(struct gpu_comm* g, struct gpu_mem* m) {
  if (m->ptr == NULL || m->dslots != NULL) return ncclSuccess;
  CUDACHECK(cudaMalloc((void**)&m->dslots, m->len));
  CUDACHECK(cudaMemset(m->dslots, 0, m->len));
  g->dev_bytes += m->len;
  return ncclSuccess;
}

/* Where my network FIFOs' slots go (fifo_net_gdr), and their device blocks if on the GPU. */
static ncclResult_t place_slots(struct ncclComm* comm, struct gpu_comm* g, const struct net* net,
                                int dev) {
  const char* why = "";
  NCCLCHECK(fifo_net_gdr(net, dev, &g->net_gdr, &why));
  INFO(LOG_INIT | LOG_NET,
       "comm %p rank %d GPU network FIFOs: counters in pinned host memory, "
       "data slots %s",
       (void*)comm, comm->rank, why);
  if (!g->net_gdr) return ncclSuccess;
  if (g->net_prev) NCCLCHECK(slots_on_device(g, &g->fifo_mem));
  if (g->net_next) NCCLCHECK(slots_on_device(g, &g->ring_mirror));
  for (int r = 0; r < comm->nranks && r < DEV_MAX_PEERS; r++)
    if (g->p2p_net >> r & 1) NCCLCHECK(slots_on_device(g, &g->p2p_net_mem[r]));
  return ncclSuccess;
}

/* The proxy thread makes this comm's GPU current before it moves its connections: a network
 * that copies GPU memory with CUDA calls of its own (UCX's cuda_copy) makes them there. */
static void proxy_on_device(void* arg) {
  if (cudaSetDevice(*(const int*)arg) != cudaSuccess) (void)cudaGetLastError();
}

ncclResult_t gpu_net_connect(struct ncclComm* comm, struct gpu_comm* g) {
  int n = comm->nranks, nconns = 0, most = 0, dev = 0;
  const struct net* net = NULL;
  ncclResult_t res = ncclSuccess;
  char* buf = NULL;
  for (int r = 0; r < n; r++) {
    nconns += sends_to(g, r) + recvs_from(g, r);
    if (recvs_from(g, r) > most) most = recvs_from(g, r);
    if (sends_to(g, r) > most) most = sends_to(g, r);
  }
  if (nconns == 0) return ncclSuccess;
  NCCLCHECK(net_get(&net, &dev));
  NCCLCHECK(place_slots(comm, g, net, dev));
  NCCLCHECK(fifo_net_create(net, dev, boot_key(comm->boot), nconns, &g->net));
  buf = malloc((size_t)most * NET_HANDLE_BYTES);
  if (buf == NULL) {
    WARN("out of host memory for %d network handles", most);
    return ncclSystemError;
  }
  NCCLCHECKGOTO(exchange(comm, g, buf), res, out);
  NCCLCHECKGOTO(fifo_net_establish(g->net, (int)param_int(PARAM_BOOT_TIMEOUT)), res, out);
  NCCLCHECKGOTO(proxy_acquire(comm), res, out);
  g->proxy_held = 1;
  fifo_net_on_thread(g->net, proxy_on_device, &comm->cuda_dev, comm->cuda_dev);
  NCCLCHECKGOTO(fifo_net_start(g->net, net_failed, comm), res, out);
  INFO(LOG_INIT | LOG_NET, "comm %p rank %d GPU network connections: %d over %s, slots in %s",
       (void*)comm, comm->rank, nconns, net->name,
       g->net_gdr ? "GPU memory (GDRDMA)" : "pinned host memory");
out:
  free(buf);
  return res;
}

/* Waits (bounded) until the proxy sent every step my kernels posted on a network connection:
 * they are done, but their last slots may still be on their way. */
static void drain(struct ncclComm* comm, struct gpu_comm* g) {
  if (g->net == NULL || fifo_net_failed(g->net) || comm_aborted(comm) ||
      __atomic_load_n(&comm->failed, __ATOMIC_ACQUIRE))
    return;
  if (fifo_net_drain(g->net, (int)param_int(PARAM_BOOT_TIMEOUT)) != ncclSuccess)
    WARN("rank %d: the last steps of its network connections were not sent before the "
         "communicator was freed; a peer may miss them",
         comm->rank);
}

void gpu_net_free(struct ncclComm* comm, struct gpu_comm* g, int kernels_over) {
  if (kernels_over) drain(comm, g);
  fifo_net_free(g->net);
  g->net = NULL;
  if (g->proxy_held) proxy_release(comm);
  g->proxy_held = 0;
  if (kernels_over) {
    gpu_shared_free(&g->ring_mirror);
    for (int r = 0; r < DEV_MAX_PEERS; r++) gpu_shared_free(&g->p2p_net_mem[r]);
    if (g->ring_order_dev) (void)cudaFree(g->ring_order_dev);
    g->ring_order_dev = NULL;
  }
}
