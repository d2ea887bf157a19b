/* SPDX-License-Identifier: BSD-3-Clause */
/* The CUDA engine: connects the ring, the one-shot buffers and the point-to-point FIFOs at init
 * (gpu/connect.c), then enqueues one kernel per operation on the user's stream. run() never
 * allocates device memory and never synchronises, so a CUDA graph may capture it; it waits for
 * peers only at the first use of a network peer's point-to-point FIFOs (MONEL_P2P_CONNECT=lazy,
 * the default: gpu/net.c), which it connects before it enqueues anything, and then says so
 * (struct engine's run_waits), so that a group of several comms runs them side by side.
 *
 * Choice per operation: core's plan (core/plan.c, t->plan) from this engine's table
 * (gpu/caps.c); the engine executes it and never replaces it. The pairs with launch code:
 * OneShot/LL (device/oneshot.cu, within a host with peer access), OneShot/Simple (the one hop
 * across hosts, device/onehop.cu), Ring with Simple, LL or LL128 for every ring collective and
 * Tree with Simple, LL or LL128 for AllReduce, Broadcast and Reduce (device/colls.cuh, over the
 * point-to-point FIFOs). LL128 uses its lines only where gpu_check_ll128 found them safe;
 * elsewhere its steps are published by the tail.
 *
 * Across hosts (gpu/net.c) the ring follows topo_ring_order() (one crossing per host), each hop to
 * another host is a network connection driven by the proxy thread; the tree's network edges are
 * point-to-point connections; a graph captures the same launches as an eager run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>
#include "boot/boot.h"
#include "core/algo.h"
#include "core/node_topo.h"
#include "core/plan_choose.h"
#include "util/check.h"
#include "util/param.h"
#include "core/watch_report.h"
#include "gpu/caps.h"
#include "gpu/gpu.h"
#include "gpu/peers.h"
#include "proxy/proxy.h"
#include "topo/host.h"
#include "util/dtype.h"

#define NSLOTS 8

static void plan_figures(struct ncclComm* comm, const struct gpu_comm* g);

/* cudaMalloc + cudaMemset to zero, counted in g->dev_bytes. */
static ncclResult_t dev_zalloc(struct gpu_comm* g, void** p, size_t bytes) {
  CUDACHECK(cudaMalloc(p, bytes));
  CUDACHECK(cudaMemset(*p, 0, bytes));
  g->dev_bytes += bytes;
  return ncclSuccess;
}

/* The block model's link figure from the topology: the GPU's NVLinks at their nominal rate where
 * NVML or NCCL_TOPO_FILE knows them; else *gbps stays (the figure of an H100/H200's 18 links). */
static ncclResult_t nvlink_gbps(const struct ncclComm* comm, double* gbps) {
  char busid[32];
  double v = 0.0;
  if (cudaDeviceGetPCIBusId(busid, sizeof busid, comm->cuda_dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return ncclSuccess;
  }
  NCCLCHECK(node_topo_nvlink_gbps(busid, comm->cuda_dev, &v));
  if (v > 0.0) *gbps = v;
  return ncclSuccess;
}

/* Sizes of the FIFOs and channels, the protocols allowed, where the FIFOs live, the ring and the
 * cost model's link speeds. */
static ncclResult_t choose_sizes(struct ncclComm* comm, struct gpu_comm* g) {
  g->cta = tune_cta_limits(param_int(PARAM_MIN_CTAS), param_int(PARAM_MAX_CTAS), &comm->config,
                           param_int(PARAM_MIN_NCHANNELS), param_int(PARAM_MAX_NCHANNELS));
  NCCLCHECK(gpu_bound_blocks(comm, g));  /* ranks that share a GPU */
  NCCLCHECK(gpu_siblings_join(comm, g)); /* ranks of this process free their buffers together */
  int nch = g->cta.max < DEV_MAX_CHANNELS ? g->cta.max : DEV_MAX_CHANNELS; /* FIFOs to allocate */
  /* Each channel across hosts is a network connection: a few carry what the network can. */
  if (gpu_net_any(comm) && nch > param_int(PARAM_NET_NCHANNELS))
    nch = (int)param_int(PARAM_NET_NCHANNELS);
  if (nch < 1) nch = 1;
  int64_t buff = param_int(PARAM_BUFFSIZE);
  if (buff < NSLOTS * 4096) buff = NSLOTS * 4096;
  g->nchannels_max = nch;
  g->nslots = NSLOTS;
  g->slot_bytes = ((size_t)buff / NSLOTS) & ~(size_t)127;
  g->fifo_bytes = dev_fifo_bytes(g->nslots, g->slot_bytes);
  g->p2p_eager = gpu_p2p_eager();
  if (comm->nranks > 1) NCCLCHECK(gpu_choose_host_fifos(comm, g));
  NCCLCHECK(gpu_ring_order(comm, g));
  int64_t link = param_int(PARAM_LINK_GBPS), blk = param_int(PARAM_BLOCK_GBPS);
  g->link_gbps = link > 0 ? (double)link : g->host_fifos ? 24.0 : 450.0;
  if (link <= 0 && !g->host_fifos) NCCLCHECK(nvlink_gbps(comm, &g->link_gbps));
  g->block_gbps = blk > 0 ? (double)blk : 7.0;
  return ncclSuccess;
}

/* The one-shot LL buffers: within one host whose GPUs reach each other's memory (gpu_connect_ll
 * maps them; across hosts the one-shot kernel has no use). The same on every rank. */
static int ll_buffers(const struct ncclComm* comm, const struct gpu_comm* g) {
  return !g->host_fifos && !gpu_net_any(comm);
}

/* The ranks whose point-to-point FIFOs live in my p2p_mem, those of my host (mine included),
 * numbered in rank order into p2p_local (-1 for a network peer): every rank of the host numbers
 * them alike, so a sender finds its FIFOs at its own index in the receiver's block. */
static int local_ranks(const struct ncclComm* comm, struct gpu_comm* g) {
  int k = 0;
  for (int r = 0; r < comm->nranks; r++)
    g->p2p_local[r] = r == comm->rank || !gpu_net_is(comm, r) ? k++ : -1;
  return k;
}

/* My ring FIFOs and step counters; with `multi`, the one-shot LL buffer and the point-to-point
 * FIFOs, those of my host's ranks (one rank alone only sends to itself: no FIFO, p2p_ok). */
static ncclResult_t alloc_buffers(struct ncclComm* comm, struct gpu_comm* g, int multi) {
  int n = comm->nranks, nch = g->nchannels_max;
  size_t total = n > 1 ? g->fifo_bytes * (size_t)nch : 256;
  if (g->net_prev && !g->host_fifos) /* only my GPU and the proxy touch it */
    NCCLCHECK(gpu_host_fifo_alloc(g, total, &g->fifo_mem));
  else
    NCCLCHECK(gpu_shared_alloc(comm, g, total, g->host_fifos, &g->fifo_mem));
  NCCLCHECK(dev_zalloc(g, (void**)&g->steps, sizeof(uint64_t) * DEV_STEP_WORDS * DEV_MAX_CHANNELS));
  g->p2p_nch = gpu_p2p_channels(nch);
  /* A network peer gets the channels the network can feed: each is a connection each way. */
  int64_t net_nch = param_int(PARAM_NET_P2P_CHANNELS);
  g->p2p_net_nch = net_nch < 1 ? 1 : net_nch < g->p2p_nch ? (int)net_nch : g->p2p_nch;
  if (!multi) {
    g->p2p_ok = 1;
    return ncclSuccess;
  }
  if (ll_buffers(comm, g))
    NCCLCHECK(gpu_shared_alloc(comm, g, dev_ll_buffer_bytes(n), 0, &g->ll_mem));
  NCCLCHECK(dev_zalloc(g, (void**)&g->ll_seq, sizeof(uint32_t) * DEV_LL_MAX_BLOCKS));
  int64_t slot = param_int(PARAM_P2P_CHUNKSIZE), ns = param_int(PARAM_P2P_SLOTS);
  g->p2p_slot_bytes = slot < 4096         ? 4096
                      : slot > (16 << 20) ? (16 << 20)
                                          : (size_t)slot & ~(size_t)127;
  g->p2p_nslots = ns < 2 ? 2 : ns > 64 ? 64 : (int)ns;
  size_t nfifo = (size_t)local_ranks(comm, g) * g->p2p_nch;
  size_t fifo = dev_fifo_bytes(g->p2p_nslots, g->p2p_slot_bytes);
  /* The block ends with the direct signals' words (signal.c). */
  size_t sig = gpu_signal_bytes(n);
  g->sig_off = nfifo * fifo;
  NCCLCALLOC(g->sig_counts, 2 * (size_t)n * ENGINE_SIGNAL_SLOTS);
  NCCLCHECK(gpu_shared_alloc(comm, g, nfifo * fifo + sig, g->host_fifos, &g->p2p_mem));
  /* The step counters are per (peer, channel) of every peer, near or across the network: the
   * kernels index them by rank (dev.h DEV_STEP_WORDS). */
  size_t nsteps = (size_t)n * (size_t)g->p2p_nch * DEV_STEP_WORDS;
  NCCLCHECK(dev_zalloc(g, (void**)&g->p2p_steps, nsteps * sizeof(uint64_t)));
  return ncclSuccess;
}

/* The host's view of the kernels: the abort flag they read, the counters they write, the stream
 * and events that order launches. */
static ncclResult_t alloc_control(struct gpu_comm* g) {
  CUDACHECK(cudaHostAlloc((void**)&g->ctl_host, 64, cudaHostAllocMapped | cudaHostAllocPortable));
  memset(g->ctl_host, 0, 64);
  void* abort_dev = NULL;
  CUDACHECK(cudaHostGetDevicePointer(&abort_dev, g->ctl_host, 0));
  g->ctl.abort = (const volatile uint32_t*)abort_dev;
  NCCLCHECK(dev_zalloc(g, (void**)&g->ctl.ctr, sizeof(unsigned long long) * DEV_CTR_WORDS));
  CUDACHECK(cudaMallocHost((void**)&g->ctr_host, sizeof(unsigned long long) * DEV_CTR_WORDS));
  memset(g->ctr_host, 0, sizeof(unsigned long long) * DEV_CTR_WORDS);
  CUDACHECK(cudaStreamCreateWithFlags(&g->ctl_stream, cudaStreamNonBlocking));
  CUDACHECK(cudaEventCreateWithFlags(&g->join_ev, cudaEventDisableTiming));
  CUDACHECK(cudaEventCreateWithFlags(&g->order_ev, cudaEventDisableTiming));
  return ncclSuccess;
}

/* Load the kernels the plan may launch on this comm now, so that no launch loads one (graph
 * capture): by default the ring with Simple, and the tree with Simple across hosts (the pairs the
 * plan takes unasked, gpu/caps.c); when NCCL_ALGO or NCCL_PROTO is set, the ring with every
 * protocol NCCL_PROTO allows for some collective and, with the point-to-point FIFOs (`multi`),
 * the tree when NCCL_ALGO allows it for AllReduce, Broadcast or Reduce. */
static ncclResult_t preload_kernels(struct ncclComm* comm, int multi) {
  int asked = param_str(PARAM_ALGO)[0] != '\0' || param_str(PARAM_PROTO)[0] != '\0';
  int tree = multi && (asked || gpu_net_any(comm)) &&
             (algo_allowed(COLL_ALLREDUCE, ALGO_TREE) || algo_allowed(COLL_BROADCAST, ALGO_TREE) ||
              algo_allowed(COLL_REDUCE, ALGO_TREE));
  int protos[PROTO_COUNT];
  for (int pr = 0; pr < PROTO_COUNT; pr++)
    protos[pr] = pr == PROTO_SIMPLE || (asked && proto_allowed_any((enum proto_id)pr));
  for (int dt = 0; dt < ncclNumTypes; dt++)
    for (int op = RED_SUM; op <= RED_PREMULSUM; op++) {
      for (int pr = 0; pr < PROTO_COUNT; pr++) {
        if (!protos[pr]) continue;
        CUDACHECK(dev_ring_preload(pr, dt, op));
        if (tree) CUDACHECK(dev_tree_preload(pr, dt, op));
      }
      if (multi) CUDACHECK(dev_oneshot_preload(dt, op));
    }
  CUDACHECK(dev_p2p_preload());
  return ncclSuccess;
}

/* From how many ranks the one hop doubles (gpu/peers.h): MONEL_NET_ONEHOP_DOUBLING where set (on
 * any rank count), else from the CPUs each of the comm's ranks on this machine has
 * (topo_doubling_from), on powers of two only (*pow2_only). */
static int doubling_from(const struct ncclComm* comm, int* pow2_only) {
  int64_t v = param_int(PARAM_NET_ONEHOP_DOUBLING);
  *pow2_only = v < 0;
  if (v >= 0) return (int)v;
  return topo_doubling_from(topo_cpus(), gpu_machine_ranks(comm));
}

/* The one hop's block holds every peer's state in shared memory (dev.h dev_onehop_smem): the
 * GPU's most per block bounds the ranks it serves (thousands); beyond, the plan has the ring and
 * the tree. */
static int onehop_fits(const struct ncclComm* comm) {
  int most = 0;
  if (cudaDeviceGetAttribute(&most, cudaDevAttrMaxSharedMemoryPerBlockOptin, comm->cuda_dev) !=
      cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  if (dev_onehop_smem(comm->nranks) <= (size_t)most) return 1;
  INFO(LOG_INIT | LOG_NET,
       "comm %p rank %d: no one hop: %d ranks' state needs %zu bytes of shared memory, more than "
       "the %d a block of this GPU may have",
       (void*)comm, comm->rank, comm->nranks, dev_onehop_smem(comm->nranks), most);
  return 0;
}

/* Connect the ring, the LL buffers, the point-to-point FIFOs, the network and the copy engine
 * (collective: every rank in the same order); then the names of my host segments can go. */
static ncclResult_t connect_peers(struct ncclComm* comm, struct gpu_comm* g, int multi) {
  int n = comm->nranks;
  if (n > 1) NCCLCHECK(gpu_connect_ring(comm, g));
  if (multi) {
    if (ll_buffers(comm, g)) NCCLCHECK(gpu_connect_ll(comm, g));
    NCCLCHECK(gpu_connect_p2p(comm, g));
  }
  if (n > 1) NCCLCHECK(gpu_net_connect(comm, g));
  if (n > 1) NCCLCHECK(gpu_check_ll128(comm, g));
  /* NCCL_ALGO and NCCL_PROTO are the plan's to apply, per collective. */
  g->onehop_ok = multi && g->p2p_ok && gpu_net_any(comm) && param_int(PARAM_NET_ONEHOP_MAX) > 0 &&
                 onehop_fits(comm);
  g->onehop_doubling = doubling_from(comm, &g->onehop_doubling_pow2);
  if (g->onehop_ok) {
    for (int dt = 0; dt < ncclNumTypes; dt++)
      for (int op = RED_SUM; op <= RED_PREMULSUM; op++) CUDACHECK(dev_onehop_preload(dt, op));
    INFO(LOG_INIT | LOG_NET,
         "comm %p rank %d: collectives in one hop while a rank's message to one peer is at most "
         "%lld bytes for AllReduce, half of it for the others (Broadcast when NCCL_ALGO asks); "
         "AllReduce and AllGather (on a power of two) by RecDoubling from %d ranks%s (0: "
         "never; %d CPUs for %d ranks on this machine)",
         (void*)comm, comm->rank, (long long)param_int(PARAM_NET_ONEHOP_MAX), g->onehop_doubling,
         g->onehop_doubling_pow2 ? " on a power of two" : "", topo_cpus(), gpu_machine_ranks(comm));
  }
  NCCLCHECK(gpu_ce_setup(comm, g));
  if (g->host_fifos) {
    /* Every peer has mapped my host segments: their names can go. */
    int dummy = 0, *all = NULL;
    NCCLCALLOC(all, n);
    ncclResult_t res = boot_allgather(comm->boot, all, sizeof dummy);
    free(all);
    NCCLCHECK(res);
    gpu_shared_unlink(&g->fifo_mem);
    gpu_shared_unlink(&g->p2p_mem);
  }
  return ncclSuccess;
}

static ncclResult_t init_on_device(struct ncclComm* comm, struct gpu_comm* g) {
  CUDACHECK(cudaSetDevice(comm->cuda_dev));
  CUDACHECK(cudaFree(NULL)); /* the context exists before the memory is measured */
  size_t free0 = 0, free1 = 0, total_b = 0;
  CUDACHECK(cudaMemGetInfo(&free0, &total_b));
  int multi = comm->nranks > 1; /* one-shot and p2p buffers */
  NCCLCHECK(gpu_peer_table_alloc(comm, g));
  NCCLCHECK(choose_sizes(comm, g));
  NCCLCHECK(alloc_buffers(comm, g, multi));
  NCCLCHECK(alloc_control(g));
  CUDACHECK(cudaDeviceSynchronize());
  NCCLCHECK(preload_kernels(comm, multi));
  NCCLCHECK(connect_peers(comm, g, multi));
  INFO(
      LOG_INIT | LOG_TUNING,
      "comm %p rank %d GPU blocks: %d to %d per kernel, policy %d, model %.0f GB/s link, %.0f GB/s "
      "per block",
      (void*)comm, comm->rank, g->cta.min, g->cta.max, g->cta.policy, g->link_gbps, g->block_gbps);
  plan_figures(comm, g);
  CUDACHECK(cudaMemGetInfo(&free1, &total_b));
  comm->engine_dev_bytes = g->dev_bytes;
  /* What this comm's init took from the GPU: its buffers and the kernels it loaded (another
   * thread initialising on the same GPU at the same time is counted too). */
  snprintf(comm->engine_info, sizeof comm->engine_info, "GPU memory taken %.0f MB",
           free0 > free1 ? (double)(free0 - free1) / 1048576.0 : 0.0);
  return ncclSuccess;
}

static ncclResult_t gpu_comm_init(struct ncclComm* comm) {
  struct gpu_comm* g = NULL;
  NCCLCALLOC(g, 1);
  comm->engine_state = g;
  int saved = -1;
  if (cudaGetDevice(&saved) != cudaSuccess) saved = -1;
  ncclResult_t res = init_on_device(comm, g);
  if (saved >= 0) cudaSetDevice(saved);
  return res;
}

/* What the plan (core/plan.c) needs of this comm: its path and the block model's limits and
 * figures (ring channels: the fewest blocks that fill the link, one per MONEL_CHANNEL_BYTES below
 * that, MONEL_NET_CHANNEL_BYTES across the network, within the comm's limits; core/plan.c
 * channels()). */
static void plan_figures(struct ncclComm* comm, const struct gpu_comm* g) {
  struct plan_comm* pc = &comm->plan;
  pc->path = gpu_net_any(comm) ? PLAN_PATH_NET : g->host_fifos ? PLAN_PATH_SHM : PLAN_PATH_PEER;
  pc->cta_min = g->cta.min;
  pc->cta_max = g->cta.max;
  pc->cta_efficiency = g->cta.policy == NCCL_CTA_POLICY_EFFICIENCY;
  pc->nchannels_max = g->nchannels_max;
  pc->p2p_channels = g->p2p_nch;
  pc->link_gbps = g->link_gbps;
  pc->block_gbps = g->block_gbps;
  pc->channel_bytes =
      (size_t)param_int(pc->path == PLAN_PATH_NET ? PARAM_NET_CHANNEL_BYTES : PARAM_CHANNEL_BYTES);
}

_Static_assert(GPU_LL_PART_BYTES == DEV_LL_BLOCK_DATA, "gpu/caps.h: one-shot LL part size");
_Static_assert(GPU_NCAPS <= 64, "core/plan.c takes at most 64 rows");
_Static_assert(sizeof(struct dev_p2p_args) <= 4096,
               "device/dev.h: kernel parameters of CUDA < 12.1");
_Static_assert((int)DEV_PROTO_LL == (int)PROTO_LL && (int)DEV_PROTO_LL128 == (int)PROTO_LL128 &&
                   (int)DEV_PROTO_SIMPLE == (int)PROTO_SIMPLE,
               "device/dev.h numbers the protocols as core/plan.h");

/* The tree's point-to-point FIFOs reach every peer (launch_tree). */
static int tree_fifos(const struct ncclComm* comm, const struct gpu_comm* g) {
  return comm->nranks == 1 || g->p2p_ok;
}

/* The engine's plan_fit (gpu/caps.c has the rules). */
static struct plan_fit gpu_plan_fit(const struct ncclComm* comm, const struct task* t,
                                    const struct plan_row* row) {
  const struct gpu_comm* g = comm->engine_state;
  struct gpu_fit_in in = {comm->nranks,
                          g->ll_ok,
                          DEV_LL_MAX_BYTES,
                          (size_t)param_int(PARAM_ONESHOT_MAX),
                          g->onehop_ok,
                          g->p2p_slot_bytes,
                          (size_t)param_int(PARAM_NET_ONEHOP_MAX),
                          g->onehop_doubling,
                          g->onehop_doubling_pow2,
                          tree_fifos(comm, g),
                          g->ll128_lines};
  return gpu_fit(&in, t, row);
}

/* The network peers whose point-to-point FIFOs the group's kernels reach and that are not
 * connected yet (gpu/peers.h; none with MONEL_P2P_CONNECT=eager, which connected them at init):
 * into g->want_all those reached through all channels, into g->want0 those reached through
 * channel 0 alone (the one hop) that have no channel yet. Returns whether any is to connect. A
 * comm is used by one thread at a time, so the scratch sets are this call's. */
static int peers_to_connect(const struct ncclComm* comm, struct gpu_comm* g,
                            const struct task* tasks, int ntasks) {
  int n = comm->nranks, any = 0;
  if (g->p2p_net_todo == 0 || !g->p2p_ok) return 0;
  struct gpu_peers_in in = {comm->rank, n, comm->ring_order, comm->ring_pos,
                            gpu_tree_count(gpu_tree_channels(comm, g))};
  gpu_set_clear(g->want_all, n);
  gpu_set_clear(g->want0, n);
  for (int i = 0; i < ntasks; i++)
    gpu_task_peers(&tasks[i], &in, gpu_task_channel0(&tasks[i]) ? g->want0 : g->want_all);
  for (int r = 0; r < n; r++) {
    int f = g->p2p_flags[r], todo = (f & GPU_PEER_NET) && !(f & GPU_PEER_LIVE);
    int all = todo && gpu_set_has(g->want_all, r);
    int zero = todo && !all && !(f & GPU_PEER_FIRST) && gpu_set_has(g->want0, r);
    uint64_t bit = (uint64_t)1 << (r % 64);
    if (!all) g->want_all[r / 64] &= ~bit;
    if (!zero) g->want0[r / 64] &= ~bit;
    any |= all || zero;
  }
  return any;
}

/* The engine's run_waits: run() will first connect peers, waiting for them. */
static int gpu_run_waits(const struct ncclComm* comm, const struct task* tasks, int ntasks) {
  struct gpu_comm* g = comm->engine_state;
  return g != NULL && peers_to_connect(comm, g, tasks, ntasks);
}

/* First the connections the group's kernels need and do not have (the first use of a network
 * peer, gpu/net.c), before anything is enqueued. Then collectives run in the order they were
 * posted, AlltoAll(v), Gather and Scatter among them; the Send/Recv of a group run together after
 * them, as the CPU engine runs them, so every rank orders the kernels of a group alike. */
static ncclResult_t gpu_run(struct ncclComm* comm, struct task* tasks, int ntasks) {
  struct gpu_comm* g = comm->engine_state;
  int saved = -1;
  if (cudaGetDevice(&saved) != cudaSuccess) saved = -1;
  if (saved != comm->cuda_dev) CUDACHECK(cudaSetDevice(comm->cuda_dev));
  ncclResult_t res = peers_to_connect(comm, g, tasks, ntasks)
                         ? gpu_net_connect_peers(comm, g, g->want_all, g->want0)
                         : ncclSuccess;
  if (g->net_conns > 0) proxy_expect_gpu_work(); /* the proxy may sleep after a long idle spell */
  struct task* p2p[64];
  struct task** sr = p2p;
  int nsr = 0, ce = 0;
  for (int i = 0; i < ntasks && res == ncclSuccess; i++) {
    struct task* t = &tasks[i];
    switch (t->coll) {
    case COLL_SEND:
    case COLL_RECV:
      if (nsr == 64 && sr == p2p) {
        sr = malloc(sizeof *sr * (size_t)ntasks);
        if (sr == NULL) {
          res = ncclSystemError;
          break;
        }
        memcpy(sr, p2p, sizeof p2p);
      }
      sr[nsr++] = t;
      break;
    case COLL_ALLTOALL:
    case COLL_ALLTOALLV:
    case COLL_GATHER:
    case COLL_SCATTER:
      res = gpu_ce_wanted(comm, g, &t, 1, &ce);
      if (res == ncclSuccess) res = ce ? gpu_ce_run(comm, &t, 1) : gpu_p2p_run(comm, &t, 1);
      break;
    case COLL_ALLGATHER:
    case COLL_BROADCAST:
      if (t->count > 0 && (res = gpu_ce_wanted(comm, g, &t, 1, &ce)) == ncclSuccess && ce) {
        res = gpu_ce_run(comm, &t, 1);
        break;
      }
      if (res != ncclSuccess) break;
      /* fall through */
    default:
      res = gpu_launch_task(comm, g, t);
    }
    __atomic_store_n(&g->last_op, t->seq << 8 | (uint64_t)t->coll, __ATOMIC_RELAXED);
  }
  if (res == ncclSuccess && nsr > 0) res = gpu_ce_wanted(comm, g, sr, nsr, &ce);
  if (res == ncclSuccess && nsr > 0)
    res = ce ? gpu_ce_run(comm, sr, nsr) : gpu_p2p_run(comm, sr, nsr);
  if (sr != p2p) free(sr);
  if (saved >= 0 && saved != comm->cuda_dev) cudaSetDevice(saved);
  return res;
}

struct dev_ctl gpu_ctl(struct gpu_comm* g, uint64_t done_seq, uint64_t issued_seq, cudaStream_t s) {
  struct dev_ctl c = g->ctl;
  c.seq = done_seq;
  if (!gpu_capturing(s)) __atomic_store_n(&g->eager_seq, issued_seq, __ATOMIC_RELEASE);
  return c;
}

/* Refreshes ctr_seen from the device counters: takes the copy in flight if it is complete and
 * starts the next one on ctl_stream (which waits for no kernel). wait: until a fresh copy is in.
 * The caller's current device is the comm's. */
static void poll_counters(struct gpu_comm* g, int wait) {
  size_t bytes = sizeof(unsigned long long) * DEV_CTR_WORDS;
  for (int round = 0; round < 1 + wait; round++) {
    if (g->ctr_copying) {
      cudaError_t e = wait ? cudaStreamSynchronize(g->ctl_stream) : cudaStreamQuery(g->ctl_stream);
      if (e == cudaErrorNotReady) return;
      (void)cudaGetLastError();
      g->ctr_copying = 0;
      if (e == cudaSuccess) memcpy(g->ctr_seen, g->ctr_host, bytes);
    }
    if (cudaMemcpyAsync(g->ctr_host, g->ctl.ctr, bytes, cudaMemcpyDeviceToHost, g->ctl_stream) ==
        cudaSuccess)
      g->ctr_copying = 1;
    else
      (void)cudaGetLastError();
  }
}

/* The abort word: every wait of the comm's kernels, running or queued, gives up (dev.h). Any
 * thread, any time after init. */
static void gpu_abort(struct ncclComm* comm) {
  struct gpu_comm* g = comm->engine_state;
  if (g == NULL || g->ctl_host == NULL) return;
  __atomic_store_n((uint32_t*)g->ctl_host, 1, __ATOMIC_RELEASE);
}

/* Pending: an eager launch not reported done, or a block running (a graph replay too): then
 * done < issued. */
static void progress_seen(struct gpu_comm* g, uint64_t* issued, uint64_t* done) {
  uint64_t eager = __atomic_load_n(&g->eager_seq, __ATOMIC_ACQUIRE);
  int running = g->ctr_seen[DEV_CTR_STARTED] > g->ctr_seen[DEV_CTR_FINISHED];
  watch_progress_from(eager, g->ctr_seen[DEV_CTR_DONE_SEQ], running, issued, done);
}

/* The watch thread's view of the comm's progress: at most one copy behind, or (fresh) from a
 * copy made now. Its calls (a copy and a query on the comm's own control stream) are relaxed
 * for stream capture: while a thread of the application captures a graph in the global mode
 * (PyTorch's default), they would otherwise invalidate that capture. */
static void gpu_progress(struct ncclComm* comm, int fresh, uint64_t* issued, uint64_t* done) {
  struct gpu_comm* g = comm->engine_state;
  *issued = *done = 0;
  if (g == NULL || g->ctl_stream == NULL || cudaSetDevice(comm->cuda_dev) != cudaSuccess) return;
  enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  if (cudaThreadExchangeStreamCaptureMode(&mode) != cudaSuccess) {
    (void)cudaGetLastError();
    return;
  }
  poll_counters(g, fresh);
  progress_seen(g, issued, done);
  (void)cudaThreadExchangeStreamCaptureMode(&mode);
}

/* Waits until the comm's kernels are over (the last eager launch reported done and no block
 * runs): unbounded for a healthy comm; for an aborted or failed one (whose kernels leave their
 * waits) at most GPU_DRAIN_S, so that abort returns even if something else holds its stream.
 * Only the comm's own counters are watched, never the device or a user stream (other comms may
 * be stuck; the user may have destroyed the stream). Returns 1 if they are over. */
#define GPU_DRAIN_S 1.5
static int drain(struct ncclComm* comm, struct gpu_comm* g) {
  if (g->ctl_stream == NULL) return 1;
  int bounded = comm_aborted(comm) || __atomic_load_n(&comm->failed, __ATOMIC_ACQUIRE);
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    uint64_t issued = 0, done = 0;
    if (bounded) gpu_ce_release(g);
    poll_counters(g, 1);
    progress_seen(g, &issued, &done);
    if (done >= issued) return 1;
    clock_gettime(CLOCK_MONOTONIC, &t);
    if (bounded &&
        (double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec) > GPU_DRAIN_S)
      return 0;
    sched_yield();
  }
}

/* The buffers of a comm that peers write into, and what is left of g (see gpu_comm_free). */
static void release_buffers(struct gpu_comm* g, int dev, int over) {
  int saved = -1;
  if (cudaGetDevice(&saved) != cudaSuccess) saved = -1;
  int current = cudaSetDevice(dev) == cudaSuccess;
  if (current && over) {
    gpu_ce_free(g);
    gpu_shared_free(&g->fifo_mem);
    gpu_shared_free(&g->ll_mem);
    gpu_shared_free(&g->p2p_mem);
    if (g->steps) (void)cudaFree(g->steps);
    if (g->ll_seq) (void)cudaFree(g->ll_seq);
    if (g->p2p_steps) (void)cudaFree(g->p2p_steps);
    gpu_net_free_buffers(g);
    if (g->ctl.ctr) (void)cudaFree(g->ctl.ctr);
    if (g->ctl_host) (void)cudaFreeHost(g->ctl_host);
    if (g->ctr_host) (void)cudaFreeHost(g->ctr_host);
  }
  gpu_peer_table_free(g, current && over);
  (void)cudaGetLastError();
  if (saved >= 0) cudaSetDevice(saved);
  free(g->msgs);
  free(g->ce_msgs);
  free(g->sig_counts);
  free(g);
}

static void gpu_comm_free(struct ncclComm* comm) {
  struct gpu_comm* g = comm->engine_state;
  if (g == NULL) return;
  int saved = -1, over = 0;
  if (cudaGetDevice(&saved) != cudaSuccess) saved = -1;
  if (cudaSetDevice(comm->cuda_dev) == cudaSuccess) {
    /* Our kernels must be done before our buffers go. Kernels of an aborted comm leave their
     * waits; if they still run after GPU_DRAIN_S (their stream holds other work that does not
     * finish), the buffers are left to them. Peers' kernels may still write into them: those of
     * this process are waited for (siblings.c), those of others hold their own mappings. */
    over = drain(comm, g);
    if (!over)
      WARN("comm %p rank %d: its kernels were still running %.1f s after the abort; its GPU "
           "buffers are not freed",
           (void*)comm, comm->rank, GPU_DRAIN_S);
    gpu_net_free(comm, g, over);
    gpu_disconnect(g);
    gpu_shared_unlink(&g->fifo_mem); /* a failed init may not have dropped the names yet */
    gpu_shared_unlink(&g->p2p_mem);
    if (g->ctl_stream) (void)cudaStreamDestroy(g->ctl_stream);
    if (g->join_ev) (void)cudaEventDestroy(g->join_ev);
    if (g->order_ev) (void)cudaEventDestroy(g->order_ev);
    (void)cudaGetLastError();
  }
  if (saved >= 0) cudaSetDevice(saved);
  comm->engine_state = NULL;
  if (!gpu_siblings_leave(g, comm->cuda_dev, over, release_buffers))
    release_buffers(g, comm->cuda_dev, over);
}

const struct engine gpu_engine = {
    .name = "gpu",
    .caps = gpu_caps,
    .ncaps = GPU_NCAPS,
    .plan_fit = gpu_plan_fit,
    .enqueue_only = 1,
    .run_waits = gpu_run_waits,
    .comm_init = gpu_comm_init,
    .run = gpu_run,
    .abort = gpu_abort,
    .progress = gpu_progress,
    .check_task = gpu_check_task,
    .comm_free = gpu_comm_free,
    .device_count = gpu_device_count,
    .current_device = gpu_current_device,
    .device_of_busid = gpu_device_of_busid,
    .mem_alloc = gpu_mem_alloc,
    .mem_free = gpu_mem_free,
    .stream_wait = gpu_stream_wait,
    .copy = gpu_copy_async,
    .signal_direct = gpu_signal_direct,
    .signal_raise = gpu_signal_raise,
    .signal_wait = gpu_signal_wait,
    .prepare_needed = gpu_ce_prepare_needed,
    .prepare = gpu_ce_prepare,
    .win_export = gpu_win_export,
    .win_import = gpu_win_import,
    .win_unmap = gpu_win_unmap,
};
