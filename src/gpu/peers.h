/* SPDX-License-Identifier: BSD-3-Clause */
/* Which peers a task's kernel reaches through the point-to-point FIFOs: the pairs the CUDA engine
 * connects at their first use across the network (MONEL_P2P_CONNECT=lazy, gpu/net.c). Free of
 * CUDA, so that the unit tests run it on any machine.
 *
 * The rule both ends of a pair rely on: for one operation, peer p is in rank r's set exactly
 * when r is in p's (Send/Recv by their matching calls; AlltoAll(v), Gather, Scatter, the tree and
 * the one hop by construction), so the two ranks connect the pair at the same operation and
 * never wait for each other in two different places. tests/unit/test_gpu_peers.c checks it. */
#ifndef MONEL_GPU_PEERS_H
#define MONEL_GPU_PEERS_H
#include "core/task.h"
#include "util/dtype.h"

/* What the rule reads of the comm; ranks < 32 (the engine's point-to-point FIFOs exist up to
 * DEV_MAX_PEERS ranks). ntrees: the trees a tree launch uses (gpu_tree_count). */
struct gpu_peers_in {
  int rank, nranks;
  const int* ring_order; /* comm->ring_order: position -> rank */
  const int* ring_pos;   /* comm->ring_pos: rank -> position */
  int ntrees;
  int doubling;      /* from how many ranks the one hop doubles (0: never) */
  int doubling_pow2; /* ... on powers of two only (MONEL_NET_ONEHOP_DOUBLING left to Monel) */
  size_t slot_bytes; /* of the point-to-point FIFOs */
};

/* 1 when the one hop runs by recursive doubling (algo/doubling.h, device/onehop.cu): on at least
 * `from` ranks (0: never) and 2, AllReduce (on a power of two where pow2_only: the other counts
 * take 2 more hops), and AllGather where the ranks are a power of two and half of the output fits
 * a slot (its last round's message). Its peers are then the schedule's, not every rank. */
static inline int gpu_onehop_doubles(const struct task* t, int nranks, int from, int pow2_only,
                                     size_t slot_bytes) {
  int pow2 = (nranks & (nranks - 1)) == 0;
  if (from <= 0 || nranks < from || nranks < 2 || (pow2_only && !pow2) ||
      t->plan.algo != ALGO_ONESHOT || t->plan.proto != PROTO_SIMPLE)
    return 0;
  if (t->coll == COLL_ALLREDUCE) return 1;
  return t->coll == COLL_ALLGATHER && pow2 &&
         (size_t)(nranks / 2) * t->count * dtype_size(t->dtype) <= slot_bytes;
}

/* Trees a tree launch uses when each peer has `channels` point-to-point channels for it: two
 * when each tree gets a channel of its own, else one (tree 0 carries everything). */
static inline int gpu_tree_count(int channels) {
  return channels >= 2 ? 2 : 1;
}

/* Bit p: the task's kernel (as core's plan launches it: gpu/launch.c, gpu/p2p.c) moves data with
 * peer p through the point-to-point FIFOs. The messages of Send/Recv, AlltoAll(v), Gather and
 * Scatter (core/task.c, zero-byte ones left out), the parent and children of each tree of a Tree
 * plan, every peer for the one hop (OneShot/Simple; for Broadcast and Reduce the root's every
 * peer, another rank's the root; the schedule's peers where AllReduce doubles); nothing for the
 * ring and the one-shot LL kernel, nor for an empty collective. Never the rank itself. */
unsigned gpu_task_peers(const struct task* t, const struct gpu_peers_in* in);

/* 1 when the task's kernel reaches its peers (gpu_task_peers) through point-to-point channel 0
 * alone (the one hop): a network peer first met by such a task gets that channel alone, the
 * others when a task that uses them comes. The same on every rank for one operation. */
int gpu_task_channel0(const struct task* t);

#endif
