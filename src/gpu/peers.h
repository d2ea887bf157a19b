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
#include <stdint.h>
#include <string.h>
#include "core/task.h"
#include "util/dtype.h"

/* A set of ranks of any comm size: rank r is bit r % 64 of word r / 64; gpu_set_words(n) words
 * hold ranks 0 .. n-1. */
static inline size_t gpu_set_words(int nranks) {
  return ((size_t)(nranks > 0 ? nranks : 0) + 63) / 64;
}
static inline void gpu_set_clear(uint64_t* s, int nranks) {
  memset(s, 0, gpu_set_words(nranks) * sizeof *s);
}
static inline void gpu_set_add(uint64_t* s, int r) {
  s[r / 64] |= (uint64_t)1 << (r % 64);
}
static inline int gpu_set_has(const uint64_t* s, int r) {
  return s != NULL && (int)(s[r / 64] >> (r % 64) & 1);
}
static inline int gpu_set_empty(const uint64_t* s, int nranks) {
  for (size_t w = 0; w < gpu_set_words(nranks); w++)
    if (s[w]) return 0;
  return 1;
}

/* What the rule reads of the comm (any number of ranks). ntrees: the trees a tree launch uses
 * (gpu_tree_count). */
struct gpu_peers_in {
  int rank, nranks;
  const int* ring_order; /* comm->ring_order: position -> rank */
  const int* ring_pos;   /* comm->ring_pos: rank -> position */
  int ntrees;
};

/* 1 when recursive doubling (RecDoubling/Simple: algo/doubling.h, run by device/onehop.cu over
 * the point-to-point FIFOs) takes the one hop's place for a collective of `bytes` (the count
 * argument's) on nranks ranks: on at least `from` ranks (0: never) and 2, AllReduce (on a power
 * of two where pow2_only: the other counts take 2 more hops), and AllGather where the ranks are a
 * power of two and half of the output fits a slot (its last round's message). Its peers are the
 * schedule's, not every rank. */
static inline int gpu_doubling_applies(enum coll_kind coll, size_t bytes, int nranks, int from,
                                       int pow2_only, size_t slot_bytes) {
  int pow2 = (nranks & (nranks - 1)) == 0;
  if (from <= 0 || nranks < from || nranks < 2 || (pow2_only && !pow2)) return 0;
  if (coll == COLL_ALLREDUCE) return 1;
  return coll == COLL_ALLGATHER && pow2 && (size_t)(nranks / 2) * bytes <= slot_bytes;
}

/* Why gpu_doubling_applies said no, as a sentence fragment (the plan's refusal). */
static inline const char* gpu_doubling_why(enum coll_kind coll, int nranks, int from,
                                           int pow2_only) {
  int pow2 = (nranks & (nranks - 1)) == 0;
  if (from <= 0) return "is off (MONEL_NET_ONEHOP_DOUBLING=0)";
  if (nranks < from) return "runs from MONEL_NET_ONEHOP_DOUBLING ranks on";
  if (pow2_only && !pow2) return "runs on a power of two ranks (MONEL_NET_ONEHOP_DOUBLING unset)";
  if (coll == COLL_ALLGATHER && !pow2) return "runs AllGather on a power of two ranks only";
  if (coll == COLL_ALLGATHER) return "needs half of AllGather's output to fit a slot";
  return "runs AllReduce and AllGather only";
}

/* 1 when the task's plan is recursive doubling (the one hop's kernel then runs its schedule). */
static inline int gpu_task_doubles(const struct task* t) {
  return t->plan.algo == ALGO_RECDOUBLING && t->plan.proto == PROTO_SIMPLE;
}

/* Trees a tree launch uses when each peer has `channels` point-to-point channels for it: two
 * when each tree gets a channel of its own, else one (tree 0 carries everything). */
static inline int gpu_tree_count(int channels) {
  return channels >= 2 ? 2 : 1;
}

/* Adds to `set` (gpu_set_words(nranks) words) every peer the task's kernel (as core's plan
 * launches it: gpu/launch.c, gpu/p2p.c) moves data with through the point-to-point FIFOs: the
 * messages of Send/Recv, AlltoAll(v), Gather and Scatter (core/task.c, zero-byte ones left out),
 * the parent and children of each tree of a Tree plan, every peer for the one hop
 * (OneShot/Simple; for Broadcast and Reduce the root's every peer, another rank's the root;
 * RecDoubling: the schedule's peers); nothing for the ring and the one-shot LL kernel, nor for an
 * empty collective. Never the rank itself. */
void gpu_task_peers(const struct task* t, const struct gpu_peers_in* in, uint64_t* set);

/* 1 when the task's kernel reaches its peers (gpu_task_peers) through point-to-point channel 0
 * alone (the one hop): a network peer first met by such a task gets that channel alone, the
 * others when a task that uses them comes. The same on every rank for one operation. */
int gpu_task_channel0(const struct task* t);

#endif
