/* SPDX-License-Identifier: BSD-3-Clause */
/* Launching one task's kernel on its stream, as its plan says (core/plan.c): the one-shot LL
 * kernel, the one hop over the point-to-point FIFOs, the ring or the tree (device/colls.cuh) with
 * the plan's protocol and channels; and the order of launches on the comm's streams. gpu/engine.c
 * calls gpu_launch_task for every task of a group. */
#include <string.h>
#include "core/plan_choose.h"
#include "util/check.h"
#include "util/dtype.h"
#include "util/param.h"
#include "gpu/gpu.h"
#include "gpu/peers.h"

static ncclResult_t launch_result(struct ncclComm* comm, struct task* t, cudaError_t e) {
  if (e == cudaSuccess) return ncclSuccess;
  (void)cudaGetLastError();
  if (t->launch_event != NULL) {
    WARN("%s #%llu on rank %d: the kernel launch with config->launchCompletionEvent failed: %s "
         "(CUDA takes for a launch-completion event one of this GPU made with "
         "cudaEventDisableTiming, and no interprocess event)",
         coll_name(t->coll), (unsigned long long)t->seq, comm->rank, cudaGetErrorString(e));
    return e == cudaErrorInvalidValue || e == cudaErrorInvalidResourceHandle
               ? ncclInvalidUsage
               : ncclUnhandledCudaError;
  }
  WARN("%s #%llu on rank %d: the kernel launch failed: %s", coll_name(t->coll),
       (unsigned long long)t->seq, comm->rank, cudaGetErrorString(e));
  return ncclUnhandledCudaError;
}

/* The kernels' name of a collective (device/dev.h). */
static int dev_coll_of(enum coll_kind c) {
  switch (c) {
  case COLL_ALLREDUCE:
    return DEV_ALLREDUCE;
  case COLL_BROADCAST:
    return DEV_BROADCAST;
  case COLL_REDUCE:
    return DEV_REDUCE;
  case COLL_ALLGATHER:
    return DEV_ALLGATHER;
  default:
    return DEV_REDUCESCATTER;
  }
}

static ncclResult_t launch_oneshot(struct ncclComm* comm, struct gpu_comm* g, struct task* t) {
  struct dev_launch_ex ex;
  struct dev_oneshot_args a;
  memset(&a, 0, sizeof a);
  size_t bytes = t->count * dtype_size(t->dtype);
  a.in = t->sendbuff;
  a.out = t->recvbuff;
  a.count = t->count;
  a.rank = comm->rank;
  a.nranks = comm->nranks;
  a.nblocks = (int)((bytes + DEV_LL_BLOCK_DATA - 1) / DEV_LL_BLOCK_DATA);
  if (a.nblocks < 1) a.nblocks = 1;
  a.grid = t->plan.nchannels;    /* the plan's: as many as parts, within the comm's limits */
  a.coll = dev_coll_of(t->coll); /* AllReduce, AllGather or ReduceScatter (gpu/caps.c) */
  a.dtype = (int)t->dtype;
  a.op = t->op.kind;
  if (a.coll == DEV_ALLGATHER) { /* moved as bytes */
    a.dtype = (int)ncclUint8;
    a.op = RED_SUM;
    a.count = bytes;
  }
  memcpy(a.scalar, t->op.scalar, sizeof a.scalar);
  a.device_scalar = t->op.device_scalar;
  a.seq = g->ll_seq;
  a.ctl = gpu_ctl(g, t->seq, t->seq, t->stream);
  a.peer_ll = g->peer_ll_dev;
  return launch_result(comm, t, dev_oneshot_launch(&a, t->stream, gpu_launch_of(t, &ex)));
}

static int reduces(enum coll_kind c) {
  return c == COLL_ALLREDUCE || c == COLL_REDUCE || c == COLL_REDUCESCATTER;
}

/* The kernel's view of a task's elements: its type and operator, or bytes summed as uint8 (an
 * operation that moves data without reducing it). */
static void elements_of(const struct task* t, size_t es, int* dtype, int* op,
                        unsigned char scalar[8], const void** device_scalar, size_t* count) {
  if (reduces(t->coll)) {
    *dtype = (int)t->dtype;
    *op = t->op.kind;
    memcpy(scalar, t->op.scalar, 8);
    *device_scalar = t->op.device_scalar;
    *count = t->count;
  } else { /* moved as bytes */
    *dtype = (int)ncclUint8;
    *op = RED_SUM;
    *count = t->count * es;
  }
}

/* The one hop (device/onehop.cu) over the point-to-point FIFOs' channel 0: every collective but
 * the point-to-point ones, its elements as the ring's. */
static ncclResult_t launch_onehop(struct ncclComm* comm, struct gpu_comm* g, struct task* t) {
  struct dev_launch_ex ex;
  struct dev_onehop_args a;
  memset(&a, 0, sizeof a);
  a.in = t->sendbuff;
  a.out = t->recvbuff;
  a.coll = dev_coll_of(t->coll);
  a.root = t->root;
  a.rank = comm->rank;
  a.nranks = comm->nranks;
  a.doubling = gpu_task_doubles(t);
  elements_of(t, dtype_size(t->dtype), &a.dtype, &a.op, a.scalar, &a.device_scalar, &a.count);
  a.nch = g->p2p_nch;
  a.nslots = g->p2p_nslots;
  a.slot_bytes = g->p2p_slot_bytes;
  a.steps = g->p2p_steps;
  a.peers = g->peer_dev;
  a.ctl = gpu_ctl(g, t->seq, t->seq, t->stream);
  return launch_result(comm, t, dev_onehop_launch(&a, t->stream, gpu_launch_of(t, &ex)));
}

/* The ring of every collective (device/colls.cuh) with the plan's protocol. LL128 where its lines
 * are not safe (gpu_check_ll128) publishes its steps by the tail, as through host memory. */
static ncclResult_t launch_ring(struct ncclComm* comm, struct gpu_comm* g, struct task* t) {
  struct dev_launch_ex ex;
  struct dev_ring_args a;
  memset(&a, 0, sizeof a);
  size_t es = dtype_size(t->dtype);
  int n = comm->nranks;
  a.in = t->sendbuff;
  a.out = t->recvbuff;
  a.count = t->count;
  a.root = comm->ring_pos[t->root];
  a.pos = g->my_ring_pos;
  a.order = g->ring_order_dev;
  a.nranks = n;
  a.coll = dev_coll_of(t->coll);
  elements_of(t, es, &a.dtype, &a.op, a.scalar, &a.device_scalar, &a.count);
  a.nchannels = t->plan.nchannels; /* core/plan.c */
  a.nslots = g->nslots;
  a.slot_bytes = g->slot_bytes;
  a.steps = g->steps;
  a.recv_by_tail = g->host_fifos || g->net_prev;
  a.send_by_tail = g->host_fifos || g->net_next;
  a.recv_delta = g->net_prev ? gpu_slot_delta(&g->fifo_mem) : 0;
  a.send_delta = g->net_next ? gpu_slot_delta(&g->ring_mirror) : 0;
  a.proto = (int)t->plan.proto;
  if (a.proto == DEV_PROTO_LL128 && !g->ll128_lines) a.recv_by_tail = a.send_by_tail = 1;
  a.ctl = gpu_ctl(g, t->seq, t->seq, t->stream);
  for (int c = 0; c < a.nchannels && n > 1; c++) {
    a.ch[c].recv_fifo = g->fifo_mem.ptr + (size_t)c * g->fifo_bytes;
    a.ch[c].send_fifo = g->next_fifo + (size_t)c * g->fifo_bytes;
  }
  return launch_result(comm, t, dev_ring_launch(&a, t->stream, gpu_launch_of(t, &ex)));
}

/* Tree collectives (AllReduce, Broadcast, Reduce; device/colls.cuh) over the point-to-point
 * FIFOs: the double binary tree of algo/tree.h on the comm's ring positions (the ranks of a host
 * neighbours), rooted at rank 0 for AllReduce. Channels: the plan's, at most the point-to-point
 * channels over the trees (each tree of a channel has its own; across hosts the channels a
 * network peer has, MONEL_NET_P2P_CHANNELS), at most the comm's block limit over 2 x trees. */
int gpu_tree_channels(const struct ncclComm* comm, const struct gpu_comm* g) {
  int ch = comm->nranks == 1 ? 1 : gpu_net_any(comm) ? g->p2p_net_nch : g->p2p_nch;
  int blocks = g->cta.max / 2; /* two trees need 4 blocks: a comm bound to fewer has one tree */
  return ch < blocks ? ch : blocks < 1 ? 1 : blocks;
}

static ncclResult_t launch_tree(struct ncclComm* comm, struct gpu_comm* g, struct task* t) {
  int n = comm->nranks;
  struct dev_launch_ex ex;
  struct dev_tree_args a;
  memset(&a, 0, sizeof a);
  size_t es = dtype_size(t->dtype);
  a.in = t->sendbuff;
  a.out = t->recvbuff;
  a.count = t->count;
  a.nranks = n;
  a.coll = dev_coll_of(t->coll); /* AllReduce, Broadcast or Reduce */
  elements_of(t, es, &a.dtype, &a.op, a.scalar, &a.device_scalar, &a.count);
  int root = t->coll == COLL_ALLREDUCE ? 0 : t->root;
  for (int k = 0; k < TREE_COUNT; k++)
    a.node[k] = tree_node_in_order(comm->rank, n, root, k, comm->ring_order, comm->ring_pos);
  int lim = gpu_tree_channels(comm, g);
  a.ntrees = gpu_tree_count(lim);
  int nch = t->plan.nchannels;
  if (nch > lim / a.ntrees) nch = lim / a.ntrees;
  if (nch > g->cta.max / (2 * a.ntrees)) nch = g->cta.max / (2 * a.ntrees);
  a.nchannels = nch < 1 ? 1 : nch;
  a.proto = (int)t->plan.proto;
  a.p2p_nch = g->p2p_nch;
  a.nslots = g->p2p_nslots;
  a.slot_bytes = g->p2p_slot_bytes;
  a.fifo_bytes = dev_fifo_bytes(g->p2p_nslots, g->p2p_slot_bytes);
  a.all_by_tail = a.proto == DEV_PROTO_LL128 && !g->ll128_lines; /* LL128 by the tail */
  a.steps = g->p2p_steps;
  a.peers = g->peer_dev;
  a.ctl = gpu_ctl(g, t->seq, t->seq, t->stream);
  return launch_result(comm, t, dev_tree_launch(&a, t->stream, gpu_launch_of(t, &ex)));
}

/* The kernels of a comm share its FIFOs and step counters, so they must run one after the other
 * even when the user puts them on different streams (as NCCL orders them): a kernel on another
 * stream than the comm's previous kernel first waits for that stream. Both streams must be
 * outside stream capture or in the same capture; between an eager stream and a captured one no
 * order can be expressed, and the user orders graph launches against other work. A previous
 * stream that no longer exists (destroyed since) is skipped. */
ncclResult_t gpu_order_after_last(struct gpu_comm* g, cudaStream_t s) {
  int had = g->has_last;
  cudaStream_t last = g->last_stream;
  g->last_stream = s, g->has_last = 1;
  if (!had || last == s) return ncclSuccess;
  enum cudaStreamCaptureStatus cs_last, cs_now;
  unsigned long long id_last = 0, id_now = 0;
  if (cudaStreamGetCaptureInfo(last, &cs_last, &id_last, NULL, NULL, NULL, NULL) != cudaSuccess) {
    (void)cudaGetLastError();
    return ncclSuccess;
  }
  CUDACHECK(cudaStreamGetCaptureInfo(s, &cs_now, &id_now, NULL, NULL, NULL, NULL));
  int same = (cs_last == cudaStreamCaptureStatusNone && cs_now == cudaStreamCaptureStatusNone) ||
             (cs_last == cudaStreamCaptureStatusActive && cs_now == cudaStreamCaptureStatusActive &&
              id_last == id_now);
  if (!same) return ncclSuccess;
  CUDACHECK(cudaEventRecord(g->order_ev, last));
  CUDACHECK(cudaStreamWaitEvent(s, g->order_ev, 0));
  return ncclSuccess;
}

/* The plan's pair (core/plan.c), among those gpu/caps.c says have launch code. */
ncclResult_t gpu_launch_task(struct ncclComm* comm, struct gpu_comm* g, struct task* t) {
  if (t->count == 0) return gpu_launch_event_record(t); /* no kernel */
  NCCLCHECK(gpu_order_after_last(g, t->stream));
  enum algo_id a = t->plan.algo;
  enum proto_id p = t->plan.proto;
  if (a == ALGO_ONESHOT && p == PROTO_LL) return launch_oneshot(comm, g, t);
  if ((a == ALGO_ONESHOT || a == ALGO_RECDOUBLING) && p == PROTO_SIMPLE)
    return launch_onehop(comm, g, t);
  if (a == ALGO_RING) return launch_ring(comm, g, t);
  if (a == ALGO_TREE &&
      (t->coll == COLL_ALLREDUCE || t->coll == COLL_BROADCAST || t->coll == COLL_REDUCE))
    return launch_tree(comm, g, t);
  WARN(
      "%s #%llu on rank %d: the plan chose %s/%s, which this build of the GPU engine cannot launch",
      coll_name(t->coll), (unsigned long long)t->seq, comm->rank, algo_name(a), proto_name(p));
  return ncclInternalError;
}
