/* SPDX-License-Identifier: BSD-3-Clause */
/* One-shot AllReduce, for small buffers: every rank sends its whole input to every other rank at
 * once, then reduces the n inputs itself, always in rank order, so that every rank computes the
 * same bits.
 *
 *   4 ranks:  r0 -> r1 r2 r3    r1 -> r2 r3 r0    r2 -> r3 r0 r1    r3 -> r0 r1 r2
 *             then on every rank: out = post(pre(x0) + pre(x1) + pre(x2) + pre(x3))
 *
 * Worked step (4 ranks, rank 2): send x2 to ranks 3, 0 and 1 (peer = rank + s, s = 1..3); fold
 * x0 and x1 as they arrive from ranks 0 and 1, then its own x2, then x3 from rank 3, and apply
 * the operator's post step (AVG divides) with the last one.
 *
 * Cost: one step of alpha (all messages are in flight together) + (n-1) * bytes * beta sent and
 * as many received per rank, plus n-1 reductions of the buffer. It has the latency of a single
 * message, and wins while (n-1) copies of the buffer cost less than the 2h steps of the tree or
 * the 2(n-1) of the ring. A buffer larger than a FIFO slot goes in rounds of one slot.
 * Preconditions: n >= 1; every rank has the same count and cuts the rounds the same way. */
#ifndef MONEL_ALGO_ONESHOT_H
#define MONEL_ALGO_ONESHOT_H
#include "algo/ring.h"

/* The peer a rank sends to at step s (1 <= s < n). */
ALGO_HD static inline int oneshot_send_peer(int rank, int nranks, int s) {
  return ring_mod(rank + s, nranks);
}

/* The input folded in at position i (0 <= i < n): rank order on every rank. */
ALGO_HD static inline int oneshot_fold_rank(int i) {
  return i;
}

#endif
