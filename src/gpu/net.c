/* SPDX-License-Identifier: BSD-3-Clause */
/* GPU connections across hosts (NET connections): which ring hops and point-to-point peers go
 * over the network, the ring order that crosses hosts as rarely as possible, and their setup: the
 * ring's at comm init, a point-to-point peer's at the first group that uses it (or at init with
 * MONEL_P2P_CONNECT=eager). The ring order itself is the comm's (core/comm.c, topo_ring_order).
 * The data path is the proxy's (proxy/fifo_net.h): the kernels only see FIFOs whose counters are
 * in pinned host memory, the receiver's own and the sender's mirror of it.
 *
 * Where their slots live (fifo_net_gdr, MONEL_NET_GDR, decided when the comm's first network
 * connections are made): after the counters in the same pinned host memory (staged), or, when
 * the network's device reads and writes GPU memory (GPUDirect RDMA), in device memory: each host
 * block of FIFOs gets a device block of the same size and layout (gpu_mem.dslots), made with the
 * connections that use it and freed with it, whose slot areas the NIC reads and writes; the
 * kernels find a slot at the FIFO's address + its offset + the block's slot delta (dev.h). Each
 * rank decides for its own FIFOs: the two ends of a connection need not agree.
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
#include "core/node_topo.h"
#include "util/check.h"
#include "util/param.h"
#include "gpu/gpu.h"
#include "gpu/peers.h"
#include "proxy/proxy.h"
#include "transport/net.h"

int gpu_net_is(const struct ncclComm* comm, int peer) {
  if (peer == comm->rank) return 0;
  if (comm->peers[peer].host_hash != comm->peers[comm->rank].host_hash) return 1;
  return param_int(PARAM_P2P_DISABLE) == 1 && param_int(PARAM_SHM_DISABLE) == 1;
}

int gpu_machine_ranks(const struct ncclComm* comm) {
  int here = 0;
  for (int r = 0; r < comm->nranks; r++)
    here += comm->peers[r].machine_hash == comm->peers[comm->rank].machine_hash;
  return here;
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

/* Bytes of a network peer's point-to-point FIFOs of one direction: its block (p2p_net_mem) holds
 * mine for it, then my mirror of its. */
static size_t p2p_half(const struct gpu_comm* g) {
  return dev_fifo_bytes(g->p2p_nslots, g->p2p_slot_bytes) * (size_t)g->p2p_net_nch;
}

/* Peer r's point-to-point FIFOs: mine for it (the receive side), or my mirror of its. */
static struct fifo_run p2p_run(const struct gpu_comm* g, int r, int mirror) {
  return (struct fifo_run){&g->p2p_net_mem[r],
                           mirror ? p2p_half(g) : 0,
                           dev_fifo_bytes(g->p2p_nslots, g->p2p_slot_bytes),
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
  const struct gpu_comm* g = comm->engine_state;
  s->peer = peer;
  s->tag = tag;
  s->dev = g->net_ndevs > 0 ? g->net_devs[k % g->net_ndevs] : 0;
  snprintf(s->desc, sizeof s->desc, "rank %d's %s channel %d %s rank %d (host %s)", comm->rank,
           f->kind, k, is_send ? "to" : "from", peer, comm->peers[peer].host);
}

/* The connections of one setup: the ring's hops over the network (at init), the point-to-point
 * channels with the peers of the set `p2p` (those not connected yet: all, or all but channel 0
 * for a peer with GPU_PEER_FIRST) and channel 0 alone with those of the set `p2p0` (the one
 * hop's). A NULL set is empty. */
struct sel {
  int ring;
  const uint64_t *p2p, *p2p0;
};

/* The point-to-point channels [*lo, *hi) of the setup w with peer r: the same on both ends, whose
 * GPU_PEER_FIRST flags agree (set by the same earlier setup). */
static void p2p_range(const struct gpu_comm* g, const struct sel* w, int r, int* lo, int* hi) {
  *lo = *hi = 0;
  if (gpu_set_has(w->p2p, r)) {
    *lo = (g->p2p_flags[r] & GPU_PEER_FIRST) != 0;
    *hi = g->p2p_net_nch;
  } else if (gpu_set_has(w->p2p0, r)) {
    *hi = 1;
  }
}

/* Listens for every connection of the setup I receive on from peer r; handles[] gets their
 * handles in the order the peer expects (ring channels first). *k: next connection of the set. */
static ncclResult_t listen_from(struct ncclComm* comm, struct gpu_comm* g, const struct sel* w,
                                int r, char* handles, int* nh, int* k) {
  struct fifo_net_spec s;
  struct fifo_run ring = ring_run(g, &g->fifo_mem), p2p = p2p_run(g, r, 0);
  int lo, hi;
  *nh = 0;
  if (w->ring && g->net_prev && r == g->ring_prev)
    for (int c = 0; c < g->nchannels_max; c++) {
      spec(&s, comm, 0, &ring, c, r, c);
      NCCLCHECK(fifo_net_listen(g->net, (*k)++, &s, handles + (size_t)(*nh)++ * NET_HANDLE_BYTES));
    }
  p2p_range(g, w, r, &lo, &hi);
  for (int c = lo; c < hi; c++) {
    spec(&s, comm, 0, &p2p, c, r, DEV_MAX_CHANNELS + c);
    NCCLCHECK(fifo_net_listen(g->net, (*k)++, &s, handles + (size_t)(*nh)++ * NET_HANDLE_BYTES));
  }
  return ncclSuccess;
}

/* Takes the handles peer r sent for every connection of the setup I send on to it. */
static ncclResult_t connect_to(struct ncclComm* comm, struct gpu_comm* g, const struct sel* w,
                               int r, const char* handles, int* k) {
  struct fifo_net_spec s;
  struct fifo_run ring = ring_run(g, &g->ring_mirror), p2p = p2p_run(g, r, 1);
  int h = 0, lo, hi;
  if (w->ring && g->net_next && r == g->ring_next)
    for (int c = 0; c < g->nchannels_max; c++) {
      spec(&s, comm, 1, &ring, c, r, c);
      NCCLCHECK(fifo_net_peer_handle(g->net, (*k)++, &s, handles + (size_t)h++ * NET_HANDLE_BYTES));
    }
  p2p_range(g, w, r, &lo, &hi);
  for (int c = lo; c < hi; c++) {
    spec(&s, comm, 1, &p2p, c, r, DEV_MAX_CHANNELS + c);
    NCCLCHECK(fifo_net_peer_handle(g->net, (*k)++, &s, handles + (size_t)h++ * NET_HANDLE_BYTES));
  }
  return ncclSuccess;
}

static int p2p_count(const struct gpu_comm* g, const struct sel* w, int r) {
  int lo, hi;
  p2p_range(g, w, r, &lo, &hi);
  return hi - lo;
}

/* Connections of the setup I send on to r (== those r receives on from me). */
static int sends_to(const struct gpu_comm* g, const struct sel* w, int r) {
  return (w->ring && g->net_next && r == g->ring_next ? g->nchannels_max : 0) + p2p_count(g, w, r);
}

static int recvs_from(const struct gpu_comm* g, const struct sel* w, int r) {
  return (w->ring && g->net_prev && r == g->ring_prev ? g->nchannels_max : 0) + p2p_count(g, w, r);
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

/* A device block laid out as m, for the slots of its network FIFOs (GPUDirect RDMA; kept if a
 * failed setup made it before). Zeroed on ctl_stream, which waits for no kernel: a first use may
 * come while another stream is captured into a graph, which the legacy stream would join. */
static ncclResult_t slots_on_device(struct gpu_comm* g, struct gpu_mem* m) {
  if (m->ptr == NULL || m->dslots != NULL) return ncclSuccess;
  CUDACHECK(cudaMalloc((void**)&m->dslots, m->len));
  g->dev_bytes += m->len;
  CUDACHECK(cudaMemsetAsync(m->dslots, 0, m->len, g->ctl_stream));
  CUDACHECK(cudaStreamSynchronize(g->ctl_stream));
  return ncclSuccess;
}

/* The proxy thread makes this comm's GPU current before it moves its connections: a network
 * that copies GPU memory with CUDA calls of its own (UCX's cuda_copy) makes them there. Its
 * capture mode is relaxed, so that those calls stay allowed while a thread of the application
 * captures a CUDA graph in the global mode (the default of cudaStreamBeginCapture), which would
 * otherwise refuse them and leave the comm's kernels waiting. */
static void proxy_on_device(void* arg) {
  if (cudaSetDevice(*(const int*)arg) != cudaSuccess) (void)cudaGetLastError();
  enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  if (cudaThreadExchangeStreamCaptureMode(&mode) != cudaSuccess) (void)cudaGetLastError();
}

/* The network devices nearest this comm's GPU, which its channels rotate over (core/node_topo.h:
 * the same rule on every host, so GPU i of each host takes the same rail); without a bus id, the
 * network's own choice. */
static ncclResult_t topo_devs(const struct ncclComm* comm, struct gpu_comm* g, int dev) {
  char busid[32], list[256] = "";
  free(g->net_devs);
  g->net_devs = NULL;
  g->net_ndevs = 0;
  if (cudaDeviceGetPCIBusId(busid, sizeof busid, comm->cuda_dev) != cudaSuccess) {
    (void)cudaGetLastError();
    g->net_devs = calloc(1, sizeof *g->net_devs);
    if (g->net_devs == NULL) return ncclSystemError;
    g->net_devs[0] = dev;
    g->net_ndevs = 1;
    return ncclSuccess;
  }
  NCCLCHECK(node_topo_net_devs(busid, comm->cuda_dev, &g->net_devs, &g->net_ndevs));
  for (int i = 0, at = 0; i < g->net_ndevs && at < (int)sizeof list - 12; i++)
    at += snprintf(list + at, sizeof list - (size_t)at, "%s%d", i ? "," : "", g->net_devs[i]);
  INFO(LOG_INIT | LOG_NET, "comm %p rank %d GPU %d (%s): channels use network device(s) %s",
       (void*)comm, comm->rank, comm->cuda_dev, busid, list);
  return ncclSuccess;
}

/* GPUDirect RDMA for the slots of every device the channels use, or for none. With
 * MONEL_NET_GDR=auto the topology has its say too: the path to each device within
 * NCCL_NET_GDR_LEVEL. */
static ncclResult_t gdr_all(const struct ncclComm* comm, struct gpu_comm* g, const char** why) {
  char busid[32];
  int have = cudaDeviceGetPCIBusId(busid, sizeof busid, comm->cuda_dev) == cudaSuccess;
  if (!have) (void)cudaGetLastError();
  g->net_gdr = 1;
  for (int i = 0; i < g->net_ndevs && g->net_gdr; i++) {
    int ok = 1, type = -1;
    NCCLCHECK(fifo_net_gdr(g->net_ops, g->net_devs[i], &g->net_gdr, why));
    if (!g->net_gdr || !have || strcmp(param_str(PARAM_NET_GDR), "auto") != 0) continue;
    NCCLCHECK(node_topo_path_gdr(busid, comm->cuda_dev, g->net_devs[i], &ok, &type));
    if (!ok) {
      g->net_gdr = 0;
      *why = "staged through pinned host memory: the path from the GPU to a network device it "
             "uses is beyond NCCL_NET_GDR_LEVEL";
    }
  }
  return ncclSuccess;
}

/* The network and where my network FIFOs' slots go (fifo_net_gdr), for the comm's first network
 * connections; the proxy thread will make this comm's GPU current before it moves them. */
static ncclResult_t create_set(struct ncclComm* comm, struct gpu_comm* g) {
  const char* why = "";
  int dev = 0;
  /* The ranks on this machine share its cores with every rank's proxy and TCP helpers: the
   * built-in TCP network sizes its helpers from their count (net_machine_ranks). */
  net_machine_ranks(gpu_machine_ranks(comm));
  NCCLCHECK(net_get(&g->net_ops, &dev));
  NCCLCHECK(topo_devs(comm, g, dev));
  NCCLCHECK(gdr_all(comm, g, &why));
  INFO(LOG_INIT | LOG_NET,
       "comm %p rank %d GPU network FIFOs: counters in pinned host memory, "
       "data slots %s",
       (void*)comm, comm->rank, why);
  NCCLCHECK(fifo_net_create(g->net_ops, boot_key(comm->boot), 0, &g->net));
  fifo_net_on_thread(g->net, proxy_on_device, &comm->cuda_dev, comm->cuda_dev);
  return ncclSuccess;
}

/* The FIFOs of the setup w: the point-to-point block of each of its network peers r (mine that r
 * fills, then my mirror of r's: one block, kept if a failed setup made it before), and the
 * device blocks of their slots and of the ring's where they live on the GPU. */
static ncclResult_t setup_fifos(struct ncclComm* comm, struct gpu_comm* g, const struct sel* w) {
  for (int r = 0; r < comm->nranks; r++) {
    if (!gpu_set_has(w->p2p, r) && !gpu_set_has(w->p2p0, r)) continue;
    if (g->p2p_net_mem[r].ptr == NULL)
      NCCLCHECK(gpu_host_fifo_alloc(g, 2 * p2p_half(g), &g->p2p_net_mem[r]));
    if (g->net_gdr) NCCLCHECK(slots_on_device(g, &g->p2p_net_mem[r]));
  }
  if (g->net_gdr && w->ring && g->net_prev) NCCLCHECK(slots_on_device(g, &g->fifo_mem));
  if (g->net_gdr && w->ring && g->net_next) NCCLCHECK(slots_on_device(g, &g->ring_mirror));
  return ncclSuccess;
}

/* Peer r's connections are up (all, or channel 0 alone): the kernels' peer table (dev.h
 * dev_peer, which every launch points to) names its FIFOs and their slot delta from the next
 * launch on. The entry is the same for channel 0 alone and for all channels (one block), so a
 * kernel that runs on it while the rest are connected reads no changed entry. */
static ncclResult_t p2p_publish(struct gpu_comm* g, int r, int all) {
  const struct gpu_mem* m = &g->p2p_net_mem[r];
  struct dev_peer* e = &g->peer_tab[r];
  unsigned char* f = &g->p2p_flags[r];
  e->recv_fifo = m->ptr;
  e->send_fifo = m->ptr + p2p_half(g);
  e->slot_delta = gpu_slot_delta(m);
  e->recv_hostmem = e->send_by_tail = 1;
  if (all) {
    g->p2p_net_todo -= !(*f & GPU_PEER_LIVE);
    *f = (unsigned char)((*f | GPU_PEER_LIVE) & ~GPU_PEER_FIRST);
  } else {
    *f |= GPU_PEER_FIRST;
  }
  return gpu_peer_publish(g, r);
}

/* Makes the connections of the setup w and hands them to the proxy thread: they join the comm's
 * set, which is created and started if it was not. *made: how many. */
static ncclResult_t setup(struct ncclComm* comm, struct gpu_comm* g, const struct sel* w, int tag,
                          int* made) {
  int n = comm->nranks, nconns = 0, most = 0, first = 0;
  ncclResult_t res = ncclSuccess;
  char* buf = NULL;
  *made = 0;
  for (int r = 0; r < n; r++) {
    nconns += sends_to(g, w, r) + recvs_from(g, w, r);
    if (recvs_from(g, w, r) > most) most = recvs_from(g, w, r);
    if (sends_to(g, w, r) > most) most = sends_to(g, w, r);
  }
  if (nconns == 0) return ncclSuccess;
  if (g->net == NULL) NCCLCHECK(create_set(comm, g));
  NCCLCHECK(setup_fifos(comm, g, w));
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
    if (gpu_set_has(w->p2p, r) || gpu_set_has(w->p2p0, r))
      NCCLCHECKGOTO(p2p_publish(g, r, gpu_set_has(w->p2p, r)), res, out);
  g->net_conns += nconns;
  *made = nconns;
out:
  free(buf);
  return res;
}

static const char* slots_where(const struct gpu_comm* g) {
  return g->net_gdr ? "GPU memory (GDRDMA)" : "pinned host memory";
}

int gpu_p2p_eager(void) {
  const char* v = param_str(PARAM_P2P_CONNECT);
  if (strcmp(v, "eager") == 0) return 1;
  if (strcmp(v, "lazy") != 0 && v[0] != '\0')
    WARN("MONEL_P2P_CONNECT=%s is neither lazy nor eager: lazy (the default) is used", v);
  return 0;
}

ncclResult_t gpu_net_connect(struct ncclComm* comm, struct gpu_comm* g) {
  struct sel w = {1, NULL, NULL};
  int made = 0;
  if (g->p2p_eager && g->want_all != NULL) { /* every network peer's */
    gpu_set_clear(g->want_all, comm->nranks);
    for (int r = 0; r < comm->nranks; r++)
      if (g->p2p_flags[r] & GPU_PEER_NET) gpu_set_add(g->want_all, r);
    w.p2p = g->want_all;
  }
  NCCLCHECK(setup(comm, g, &w, BOOT_TAG_GPU_NET, &made));
  if (made)
    INFO(LOG_INIT | LOG_NET, "comm %p rank %d GPU network connections: %d over %s, slots in %s",
         (void*)comm, comm->rank, made, g->net_ops->name, slots_where(g));
  return ncclSuccess;
}

/* "1 3 4" from the ranks of sets a and b (NULL: empty), "... and k more" past len. */
static void rank_list(const uint64_t* a, const uint64_t* b, int n, char* out, size_t len) {
  size_t at = 0;
  int more = 0;
  out[0] = '\0';
  for (int r = 0; r < n; r++) {
    if (!gpu_set_has(a, r) && !gpu_set_has(b, r)) continue;
    if (at + 24 < len)
      at += (size_t)snprintf(out + at, len - at, at ? " %d" : "%d", r);
    else
      more++;
  }
  if (more) snprintf(out + at, len - at, " and %d more", more);
}

ncclResult_t gpu_net_connect_peers(struct ncclComm* comm, struct gpu_comm* g, uint64_t* peers,
                                   uint64_t* channel0) {
  struct sel w = {0, peers, channel0};
  int made = 0, any = 0;
  char list[160], list0[160];
  for (int r = 0; r < comm->nranks; r++) { /* network peers without all their channels */
    int f = g->p2p_flags[r], open = (f & GPU_PEER_NET) && !(f & GPU_PEER_LIVE);
    int all = open && gpu_set_has(peers, r), zero = open && !all && !(f & GPU_PEER_FIRST);
    if (gpu_set_has(peers, r) && !all) peers[r / 64] &= ~((uint64_t)1 << (r % 64));
    if (gpu_set_has(channel0, r) && !zero) channel0[r / 64] &= ~((uint64_t)1 << (r % 64));
    any |= all || gpu_set_has(channel0, r);
  }
  if (!any) return ncclSuccess;
  if (g->net_setup_res != ncclSuccess) {
    WARN("rank %d: an earlier setup of network connections failed, so no more are made on this "
         "communicator: abort it",
         comm->rank);
    return g->net_setup_res;
  }
  /* Host memory (and with GPUDirect RDMA device memory, zeroed on a stream of its own) is
   * allocated here, maybe while the caller captures a stream into a graph: such calls are safe
   * for the capture (the graph reads the memory only when it runs), so this thread tells CUDA to
   * allow them. */
  enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  CUDACHECK(cudaThreadExchangeStreamCaptureMode(&mode));
  ncclResult_t res = setup(comm, g, &w, BOOT_TAG_GPU_NET_P2P, &made);
  (void)cudaThreadExchangeStreamCaptureMode(&mode);
  if (res != ncclSuccess) g->net_setup_res = res;
  NCCLCHECK(res);
  comm->engine_dev_bytes = g->dev_bytes; /* device slots (GPUDirect RDMA) */
  rank_list(w.p2p, w.p2p0, comm->nranks, list, sizeof list);
  rank_list(w.p2p0, NULL, comm->nranks, list0, sizeof list0);
  INFO(LOG_INIT | LOG_NET,
       "comm %p rank %d GPU point-to-point connected at first use: rank %s over %s, %d more "
       "network connections (%d in all)%s%s%s, slots in %s",
       (void*)comm, comm->rank, list, g->net_ops->name, made, g->net_conns,
       list0[0] ? ", channel 0 alone with rank " : "", list0, list0[0] ? " (the one hop)" : "",
       slots_where(g));
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
  free(g->net_devs);
  g->net_devs = NULL;
  g->net_ndevs = 0;
  if (g->proxy_held) proxy_release(comm);
  g->proxy_held = 0;
}

void gpu_net_free_buffers(struct gpu_comm* g) {
  gpu_shared_free(&g->ring_mirror);
  for (int r = 0; g->p2p_net_mem != NULL && r < g->nranks; r++) gpu_shared_free(&g->p2p_net_mem[r]);
  if (g->ring_order_dev) (void)cudaFree(g->ring_order_dev);
  g->ring_order_dev = NULL;
}
