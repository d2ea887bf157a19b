/* SPDX-License-Identifier: BSD-3-Clause */
/* Which peers a task's kernel reaches through the point-to-point FIFOs: see peers.h. */
#include "gpu/peers.h"
#include "algo/doubling.h"
#include "algo/tree.h"

static ncclResult_t add_peer(void* ctx, const struct task* t, char* buf, size_t bytes, int peer,
                             int is_send) {
  (void)t, (void)buf, (void)bytes, (void)is_send;
  *(unsigned*)ctx |= 1u << peer;
  return ncclSuccess;
}

static unsigned tree_peers(const struct task* t, const struct gpu_peers_in* in) {
  unsigned m = 0;
  int root = t->coll == COLL_ALLREDUCE ? 0 : t->root;
  for (int k = 0; k < in->ntrees && k < TREE_COUNT; k++) {
    struct tree_node nd =
        tree_node_in_order(in->rank, in->nranks, root, k, in->ring_order, in->ring_pos);
    if (nd.parent >= 0) m |= 1u << nd.parent;
    for (int c = 0; c < nd.nchild; c++) m |= 1u << nd.child[c];
  }
  return m;
}

int gpu_task_channel0(const struct task* t) {
  return !task_is_p2p(t->coll) && t->plan.proto == PROTO_SIMPLE &&
         (t->plan.algo == ALGO_ONESHOT || t->plan.algo == ALGO_RECDOUBLING);
}

unsigned gpu_task_peers(const struct task* t, const struct gpu_peers_in* in) {
  unsigned m = 0, self = 1u << in->rank;
  if (in->nranks < 2 || in->nranks > 32) return 0;
  if (task_is_p2p(t->coll)) {
    (void)task_messages(t, in->rank, in->nranks, add_peer, &m);
  } else if (t->count == 0) {
    return 0;
  } else if (gpu_task_doubles(t)) {
    if (t->coll == COLL_ALLGATHER) /* a power of two: the ranks one bit away */
      for (int b = 1; b < in->nranks; b *= 2) m |= 1u << (in->rank ^ b);
    else
      for (int h = 0; h < doubling_nhops(in->rank, in->nranks); h++)
        m |= 1u << doubling_hop_of(in->rank, in->nranks, h).peer;
  } else if (t->plan.algo == ALGO_ONESHOT && t->plan.proto == PROTO_SIMPLE) {
    /* device/onehop.cu: the root and every other rank for Broadcast and Reduce, else all. */
    int rooted = t->coll == COLL_BROADCAST || t->coll == COLL_REDUCE;
    if (rooted && in->rank != t->root)
      m = 1u << t->root;
    else
      m = in->nranks == 32 ? ~0u : (1u << in->nranks) - 1;
  } else if (t->plan.algo == ALGO_TREE &&
             (t->coll == COLL_ALLREDUCE || t->coll == COLL_BROADCAST || t->coll == COLL_REDUCE)) {
    m = tree_peers(t, in);
  }
  return m & ~self;
}
