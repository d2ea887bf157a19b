/* SPDX-License-Identifier: BSD-3-Clause */
/* Ring Reduce: a chain that starts just after the root and ends at the root; each rank adds its
 * input to the partial result it receives and passes it on; the root stores the final value.
 *
 *   root=1:  r2 --> r3 --> r0 --> r1          position p = (rank - root - 1) mod n
 *            p0     p1     p2     p3 (root)
 *
 * Worked step (4 ranks, root 1, one chunk): r2 sends pre(x2) (VERB_SEND); r3 receives it, adds
 * pre(x3) and sends (VERB_RECV_REDUCE_SEND); r0 the same; r1 receives, adds pre(x1), applies the
 * operator's post step (AVG divides) and stores the result (VERB_RECV_REDUCE_COPY).
 *
 * Cost: like the ring Broadcast, (n - 1 + k - 1) steps for k chunks, plus one reduction of the
 * chunk per step; each link carries the buffer once.
 * Preconditions: n >= 1, 0 <= root < n; same chunking on every rank. The verb is the same for
 * every chunk: ring_reduce_verb(rank, nranks, root), with my ring position and the root's (see
 * ring.h). */
#ifndef MONEL_ALGO_RING_REDUCE_H
#define MONEL_ALGO_RING_REDUCE_H
#include "algo/ring.h"

ALGO_HD static inline enum verb ring_reduce_verb(int rank, int nranks, int root) {
  int p = ring_mod(rank - root - 1, nranks);
  if (nranks == 1) return VERB_COPY;
  if (p == 0) return VERB_SEND;
  if (p == nranks - 1) return VERB_RECV_REDUCE_COPY;
  return VERB_RECV_REDUCE_SEND;
}

#endif
