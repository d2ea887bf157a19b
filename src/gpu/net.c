/* GPU connections across hosts (NET connections): which ring hops and point-to-point peers go
 * over the network, the ring order that crosses hosts as rarely as possible, and their setup: the
 * ring's at comm init, a point-to-point peer's at the first group that uses it (or at init with
 * MONEL_P2P_CONNECT=eager). The ring order itself is the comm's (core/comm.c, topo_ring_order).
 * The data path is the proxy's (proxy/fifo_net.h): the kernels only see FIFOs in pinned host
 * memory, the receiver's own and the sender's mirror of it.
 *
 * A connection between ranks r and s is a NET connection when their hosts differ, or for every
 * pair when NCCL_P2P_DISABLE=1 and NCCL_SHM_DISABLE=1 (NCCL's way to force the network on one
 * host). Every rank decides alike, from the host table and the (same) environment.
 *
 * Setup: each receiver listens once per connection and sends the handles to its sender over the
 * bootstrap (one message per peer); then every rank connects and accepts in one non-blocking loop
 * (fifo_net_establish) and hands its connections to the proxy thread, whose set grows with each
 * later setup (see exchange for why two ranks never wait for each other in it). Connection ids
 * (tags): ring channel c is c, point-to-point channel c is DEV_MAX_CHANNELS + c.
 *
 * A peer's point-to-point FIFOs at their first use: gpu/engine.c gathers the network peers a
 * group's kernels will reach (gpu/peers.h: both ranks of a pair name each other at the same
 * operation), connects those not connected yet before it enqueues anything, and only then fills
 * the kernels' arguments from the peer table, so every launch, eager or captured in a CUDA graph,
 * names FIFOs that exist. The step counters of a pair (device memory, zero since init) and its
 * new FIFOs (zeroed) start together at step 0 on both ends. */
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

/* A connection's spec: FIFO k of nch at base (host address). */
static void spec(struct fifo_net_spec* s, const struct ncclComm* comm, int is_send, char* base,
                 size_t fifo_bytes, int k, int nslots, size_t slot_bytes, int peer, int tag,
                 const char* kind) {
  memset(s, 0, sizeof *s);
  s->is_send = is_send;
  s->fifo = base + (size_t)k * fifo_bytes;
  s->nslots = nslots;
  s->slot_bytes = slot_bytes;
  s->peer = peer;
  s->tag = tag;
  snprintf(s->desc, sizeof s->desc, "rank %d's %s channel %d %s rank %d (host %s)", comm->rank,
           kind, k, is_send ? "to" : "from", peer, comm->peers[peer].host);
}

static size_t p2p_fifo_bytes(const struct gpu_comm* g) {
  return dev_fifo_bytes(g->p2p_nslots, g->p2p_slot_bytes);
}

/* The connections of one setup: the ring's hops over the network (at init) and the
 * point-to-point channels with the peers of the mask `p2p`. */
struct sel {
  int ring;
  unsigned p2p;
};

/* Listens for every connection of the setup I receive on from peer r; handles[] gets their
 * handles in the order the peer expects (ring channels first). *k: next connection of the set. */
static ncclResult_t listen_from(struct ncclComm* comm, struct gpu_comm* g, const struct sel* w,
                                int r, char* handles, int* nh, int* k) {
  struct fifo_net_spec s;
  *nh = 0;
  if (w->ring && g->net_prev && r == g->ring_prev)
    for (int c = 0; c < g->nchannels_max; c++) {
      spec(&s, comm, 0, g->fifo_mem.hptr, g->fifo_bytes, c, g->nslots, g->slot_bytes, r, c, "ring");
      NCCLCHECK(fifo_net_listen(g->net, (*k)++, &s, handles + (size_t)(*nh)++ * NET_HANDLE_BYTES));
    }
  if (w->p2p >> r & 1)
    for (int c = 0; c < g->p2p_net_nch; c++) {
      spec(&s, comm, 0, g->p2p_net_recv[r].hptr, p2p_fifo_bytes(g), c, g->p2p_nslots,
           g->p2p_slot_bytes, r, DEV_MAX_CHANNELS + c, "point-to-point");
      NCCLCHECK(fifo_net_listen(g->net, (*k)++, &s, handles + (size_t)(*nh)++ * NET_HANDLE_BYTES));
    }
  return ncclSuccess;
}

/* Takes the handles peer r sent for every connection of the setup I send on to it. */
static ncclResult_t connect_to(struct ncclComm* comm, struct gpu_comm* g, const struct sel* w,
                               int r, const char* handles, int* k) {
  struct fifo_net_spec s;
  int h = 0;
  if (w->ring && g->net_next && r == g->ring_next)
    for (int c = 0; c < g->nchannels_max; c++) {
      spec(&s, comm, 1, g->ring_mirror.hptr, g->fifo_bytes, c, g->nslots, g->slot_bytes, r, c,
           "ring");
      NCCLCHECK(fifo_net_peer_handle(g->net, (*k)++, &s, handles + (size_t)h++ * NET_HANDLE_BYTES));
    }
  if (w->p2p >> r & 1)
    for (int c = 0; c < g->p2p_net_nch; c++) {
      spec(&s, comm, 1, g->p2p_net_mirror[r].hptr, p2p_fifo_bytes(g), c, g->p2p_nslots,
           g->p2p_slot_bytes, r, DEV_MAX_CHANNELS + c, "point-to-point");
      NCCLCHECK(fifo_net_peer_handle(g->net, (*k)++, &s, handles + (size_t)h++ * NET_HANDLE_BYTES));
    }
  return ncclSuccess;
}

/* Connections of the setup I send on to r (== those r receives on from me). */
static int sends_to(const struct gpu_comm* g, const struct sel* w, int r) {
  return (w->ring && g->net_next && r == g->ring_next ? g->nchannels_max : 0) +
         (w->p2p >> r & 1 ? g->p2p_net_nch : 0);
}

static int recvs_from(const struct gpu_comm* g, const struct sel* w, int r) {
  return (w->ring && g->net_prev && r == g->ring_prev ? g->nchannels_max : 0) +
         (w->p2p >> r & 1 ? g->p2p_net_nch : 0);
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

/* The order of a setup, the same on both ends of every pair: first, to every peer in rank order,
 * the handles of the connections I receive on from it (the bootstrap buffers a send: this never
 * waits); then, from every peer in rank order, the handles of those I send on to it (this waits
 * only for the peer's first step, which never waits); fifo_net_establish then connects and
 * accepts all of them in one loop. So ranks that each reach a setup naming the others complete
 * together, whatever the sets each names beyond them. k: the first connection of the set. */
static ncclResult_t exchange(struct ncclComm* comm, struct gpu_comm* g, const struct sel* w,
                             int tag, char* buf, int k) {
  int n = comm->nranks;
  for (int r = 0; r < n; r++) {
    int nh = 0;
    if (recvs_from(g, w, r) == 0) continue;
    NCCLCHECK(listen_from(comm, g, w, r, buf, &nh, &k));
    NCCLCHECK(boot_send(comm->boot, r, tag, buf, (size_t)nh * NET_HANDLE_BYTES));
  }
  for (int r = 0; r < n; r++) {
    int ns = sends_to(g, w, r);
    if (ns == 0) continue;
    NCCLCHECK(boot_recv(comm->boot, r, tag, buf, (size_t)ns * NET_HANDLE_BYTES));
    NCCLCHECK(connect_to(comm, g, w, r, buf, &k));
  }
  return ncclSuccess;
}

/* The FIFOs of the point-to-point channels with network peer r: mine that r fills, and my mirror
 * of r's (kept if a failed setup made them before). */
static ncclResult_t p2p_fifos(struct gpu_comm* g, int r) {
  size_t bytes = p2p_fifo_bytes(g) * (size_t)g->p2p_net_nch;
  if (g->p2p_net_recv[r].ptr == NULL) NCCLCHECK(gpu_host_fifo_alloc(g, bytes, &g->p2p_net_recv[r]));
  if (g->p2p_net_mirror[r].ptr == NULL)
    NCCLCHECK(gpu_host_fifo_alloc(g, bytes, &g->p2p_net_mirror[r]));
  return ncclSuccess;
}

/* Peer r's connections are up: the kernels' table of peers (gpu/p2p.c, gpu/launch.c copy it into
 * each launch's arguments) names its FIFOs from the next launch on. */
static void p2p_publish(struct gpu_comm* g, int r) {
  g->p2p_recv[r] = g->p2p_net_recv[r].ptr;
  g->p2p_send[r] = g->p2p_net_mirror[r].ptr;
  g->p2p_sysmem |= 1u << r;
  g->p2p_live |= 1u << r;
}

/* Makes the connections of the setup w and hands them to the proxy thread: they join the comm's
 * set, which is started if it was not. *made: how many. */
static ncclResult_t setup(struct ncclComm* comm, struct gpu_comm* g, const struct sel* w, int tag,
                          int* made) {
  int n = comm->nranks, nconns = 0, most = 0, first = 0, dev = 0;
  ncclResult_t res = ncclSuccess;
  char* buf = NULL;
  *made = 0;
  for (int r = 0; r < n; r++) {
    nconns += sends_to(g, w, r) + recvs_from(g, w, r);
    if (recvs_from(g, w, r) > most) most = recvs_from(g, w, r);
    if (sends_to(g, w, r) > most) most = sends_to(g, w, r);
  }
  if (nconns == 0) return ncclSuccess;
  for (int r = 0; r < n; r++)
    if (w->p2p >> r & 1) NCCLCHECK(p2p_fifos(g, r));
  if (g->net == NULL) {
    NCCLCHECK(net_get(&g->net_ops, &dev));
    NCCLCHECK(fifo_net_create(g->net_ops, dev, boot_key(comm->boot), 0, &g->net));
  }
  NCCLCHECK(fifo_net_add(g->net, nconns, &first));
  buf = malloc((size_t)most * NET_HANDLE_BYTES);
  if (buf == NULL) {
    WARN("out of host memory for %d network handles", most);
    return ncclSystemError;
  }
  NCCLCHECKGOTO(exchange(comm, g, w, tag, buf, first), res, out);
  NCCLCHECKGOTO(fifo_net_establish(g->net, (int)param_int(PARAM_BOOT_TIMEOUT), &comm->abort_flag),
                res, out);
  if (!g->proxy_held) {
    NCCLCHECKGOTO(proxy_acquire(comm), res, out);
    g->proxy_held = 1;
    NCCLCHECKGOTO(fifo_net_start(g->net, net_failed, comm), res, out);
  }
  for (int r = 0; r < n; r++)
    if (w->p2p >> r & 1) p2p_publish(g, r);
  g->net_conns += nconns;
  *made = nconns;
out:
  free(buf);
  return res;
}

int gpu_p2p_eager(void) {
  const char* v = param_str(PARAM_P2P_CONNECT);
  if (strcmp(v, "eager") == 0) return 1;
  if (strcmp(v, "lazy") != 0 && v[0] != '\0')
    WARN("MONEL_P2P_CONNECT=%s is neither lazy nor eager: lazy (the default) is used", v);
  return 0;
}

ncclResult_t gpu_net_connect(struct ncclComm* comm, struct gpu_comm* g) {
  struct sel w = {1, g->p2p_eager ? g->p2p_net : 0};
  int made = 0;
  NCCLCHECK(setup(comm, g, &w, BOOT_TAG_GPU_NET, &made));
  if (made)
    INFO(LOG_INIT | LOG_NET, "comm %p rank %d GPU network connections: %d over %s", (void*)comm,
         comm->rank, made, g->net_ops->name);
  return ncclSuccess;
}

/* "1 3 4" from a mask of ranks. */
static void rank_list(unsigned m, char* out, size_t len) {
  size_t at = 0;
  out[0] = '\0';
  for (int r = 0; r < 32 && at < len; r++)
    if (m >> r & 1) at += (size_t)snprintf(out + at, len - at, at ? " %d" : "%d", r);
}

ncclResult_t gpu_net_connect_peers(struct ncclComm* comm, struct gpu_comm* g, unsigned peers) {
  struct sel w = {0, peers & g->p2p_net & ~g->p2p_live};
  int made = 0;
  char list[160];
  if (w.p2p == 0) return ncclSuccess;
  if (g->net_setup_res != ncclSuccess) {
    WARN("rank %d: an earlier setup of network connections failed, so no more are made on this "
         "communicator: abort it",
         comm->rank);
    return g->net_setup_res;
  }
  /* Host memory is allocated here, maybe while the caller captures a stream into a graph: such
   * calls are safe for the capture (the graph reads the memory only when it runs), so this thread
   * tells CUDA to allow them. */
  enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  CUDACHECK(cudaThreadExchangeStreamCaptureMode(&mode));
  ncclResult_t res = setup(comm, g, &w, BOOT_TAG_GPU_NET_P2P, &made);
  (void)cudaThreadExchangeStreamCaptureMode(&mode);
  if (res != ncclSuccess) g->net_setup_res = res;
  NCCLCHECK(res);
  rank_list(w.p2p, list, sizeof list);
  INFO(
      LOG_INIT | LOG_NET,
      "comm %p rank %d GPU point-to-point connected at first use: rank %s over %s, %d more network "
      "connections (%d in all)",
      (void*)comm, comm->rank, list, g->net_ops->name, made, g->net_conns);
  return ncclSuccess;
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
    for (int r = 0; r < DEV_MAX_PEERS; r++) {
      gpu_shared_free(&g->p2p_net_mirror[r]);
      gpu_shared_free(&g->p2p_net_recv[r]);
    }
    if (g->ring_order_dev) (void)cudaFree(g->ring_order_dev);
    g->ring_order_dev = NULL;
  }
}
