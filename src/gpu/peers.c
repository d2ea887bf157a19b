/* SPDX-License-Identifier: BSD-3-Clause */
/* Which peers a task's kernel reaches through the point-to-point FIFOs: see peers.h. */
#include "gpu/peers.h"
#include "algo/doubling.h"
#include "algo/tree.h"

struct collect {
  uint64_t* set;
  int me;
};

static void add(struct collect* c, int peer) {
  if (peer != c->me) gpu_set_add(c->set, peer);
}

static ncclResult_t add_peer(void* ctx, const struct task* t, char* buf, size_t bytes, int peer,
                             int is_send) {
  (void)t, (void)buf, (void)bytes, (void)is_send;
  add(ctx, peer);
  return ncclSuccess;
}

static void tree_peers(const struct task* t, const struct gpu_peers_in* in, struct collect* c) {
  int root = t->coll == COLL_ALLREDUCE ? 0 : t->root;
  for (int k = 0; k < in->ntrees && k < TREE_COUNT; k++) {
    struct tree_node nd =
        tree_node_in_order(in->rank, in->nranks, root, k, in->ring_order, in->ring_pos);
    if (nd.parent >= 0) add(c, nd.parent);
    for (int i = 0; i < nd.nchild; i++) add(c, nd.child[i]);
  }
}

int gpu_task_channel0(const struct task* t) {
  return !task_is_p2p(t->coll) && t->plan.proto == PROTO_SIMPLE &&
         (t->plan.algo == ALGO_ONESHOT || t->plan.algo == ALGO_RECDOUBLING);
}

void gpu_task_peers(const struct task* t, const struct gpu_peers_in* in, uint64_t* set) {
  struct collect c = {set, in->rank};
  int n = in->nranks;
  if (n < 2) return;
  if (task_is_p2p(t->coll)) {
    (void)task_messages(t, in->rank, n, add_peer, &c);
  } else if (t->count == 0) {
    return;
  } else if (gpu_task_doubles(t)) {
    if (t->coll == COLL_ALLGATHER) /* a power of two: the ranks one bit away */
      for (int b = 1; b < n; b *= 2) add(&c, in->rank ^ b);
    else
      for (int h = 0; h < doubling_nhops(in->rank, n); h++)
        add(&c, doubling_hop_of(in->rank, n, h).peer);
  } else if (t->plan.algo == ALGO_ONESHOT && t->plan.proto == PROTO_SIMPLE) {
    /* device/onehop.cu: the root and every other rank for Broadcast and Reduce, else all. */
    int rooted = t->coll == COLL_BROADCAST || t->coll == COLL_REDUCE;
    if (rooted && in->rank != t->root)
      add(&c, t->root);
    else
      for (int r = 0; r < n; r++) add(&c, r);
  } else if (t->plan.algo == ALGO_TREE &&
             (t->coll == COLL_ALLREDUCE || t->coll == COLL_BROADCAST || t->coll == COLL_REDUCE)) {
    tree_peers(t, in, &c);
  }
}
