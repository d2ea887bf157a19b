/* SPDX-License-Identifier: BSD-3-Clause */
/* Ring Broadcast: the root's buffer flows down the ring, one chunk per step, every rank storing
 * it and passing it on (a pipeline: chunk k+1 leaves the root while chunk k is still travelling).
 *
 *   root=1:  r1 --> r2 --> r3 --> r0          position p = (rank - root) mod n
 *            p0     p1     p2     p3
 *
 * Worked step (4 ranks, root 1, one chunk): r1 copies its input to its output and sends it
 * (VERB_COPY_SEND); r2 and r3 receive, store and forward (VERB_RECV_COPY_SEND); r0, last in the
 * chain, only receives (VERB_RECV).
 *
 * Cost: with the buffer cut in k chunks, (n - 1 + k - 1) steps of alpha + bytes/k * beta each;
 * for large buffers about alpha*(n+k) + bytes*beta (each link carries the buffer once).
 * Preconditions: n >= 1, 0 <= root < n; every rank cuts the buffer into the same chunks. The
 * verb is the same for every chunk: ring_broadcast_verb(rank, nranks, root), with my ring position
 * and the root's (see ring.h). */
#ifndef MONEL_ALGO_RING_BROADCAST_H
#define MONEL_ALGO_RING_BROADCAST_H
#include "algo/ring.h"

ALGO_HD static inline enum verb ring_broadcast_verb(int rank, int nranks, int root) {
  int p = ring_mod(rank - root, nranks);
  if (nranks == 1) return VERB_COPY;
  if (p == 0) return VERB_COPY_SEND;
  if (p == nranks - 1) return VERB_RECV;
  return VERB_RECV_COPY_SEND;
}

#endif
