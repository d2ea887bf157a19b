/* SPDX-License-Identifier: BSD-3-Clause */
/* Two-shot AllReduce, for buffers too large for one shot and too small to fill a ring: the buffer
 * is cut in n pieces; every rank sends piece p of its input straight to rank p, folds the n
 * copies of its own piece in rank order, then sends the folded piece straight to every rank.
 *
 *   4 ranks, pieces A B C D:
 *     shot 1 (reduce-scatter):  r0 -> r1: x0.B   r0 -> r2: x0.C   r0 -> r3: x0.D   (all at once)
 *                               r1 folds B = x0.B + x1.B + x2.B + x3.B, r2 folds C, ...
 *     shot 2 (all-gather):      r1 -> r0 r2 r3: B   r2 -> r3 r0 r1: C   ...
 *
 * Worked step (4 ranks, rank 2, 4000 floats): pieces are elements [1000p, 1000(p+1)). Shot 1:
 * send x2[3000, 4000) to rank 3, x2[0, 1000) to rank 0, x2[1000, 2000) to rank 1; fold
 * x0[2000, 3000) + x1[...] + x2[...] + x3[...] in that order into out[2000, 3000) (post step
 * with the last). Shot 2: send out[2000, 3000) to ranks 3, 0, 1; receive piece p from rank p
 * into out. Every piece is folded once, in rank order, so every rank holds the same bits, and
 * they are the bits of the one-shot (algo/oneshot.h).
 *
 * Cost: two steps of alpha + 2(n-1)/n * bytes * beta sent and as many received per rank, plus
 * (n-1)/n reductions of the buffer: the ring's volume with two latencies instead of 2(n-1),
 * and 1/n of the one-shot's per-rank volume. A buffer larger than n FIFO slots goes in rounds.
 * Preconditions: n >= 1; every rank has the same count (so the same pieces and rounds). */
#ifndef MONEL_ALGO_TWOSHOT_H
#define MONEL_ALGO_TWOSHOT_H
#include <stddef.h>
#include "algo/ring.h"

/* Piece p of a round of `count` elements: [*lo, *hi), sizes differing by at most one. */
ALGO_HD static inline void twoshot_piece(size_t count, int nranks, int p, size_t* lo, size_t* hi) {
  *lo = count * (size_t)p / (size_t)nranks;
  *hi = count * (size_t)(p + 1) / (size_t)nranks;
}

/* The peer a rank sends to at its s-th send of a shot (1 <= s < n): everyone starts at its
 * right-hand neighbour, so no rank is the first target of all. */
ALGO_HD static inline int twoshot_peer(int rank, int nranks, int s) {
  return ring_mod(rank + s, nranks);
}

#endif
