/* SPDX-License-Identifier: BSD-3-Clause */
/* Recursive doubling AllReduce, for small buffers across hosts: in round k every rank exchanges
 * its whole current value with the rank whose number differs in bit k, and both fold the two
 * values lower rank first, so after log2(n) rounds every rank holds the same bits of the whole
 * reduction. Where n is not a power of two, the p = 2^floor(log2 n) lowest ranks run the rounds;
 * each rank r >= p (an "extra") first hands its input to r - p, which folds it in, and gets the
 * result back at the end.
 *
 *   4 ranks:  round 0: r0 <-> r1, r2 <-> r3      values x0+x1, x0+x1, x2+x3, x2+x3
 *             round 1: r0 <-> r2, r1 <-> r3      every rank (x0+x1)+(x2+x3)
 *   3 ranks:  r2 -> r0 (r0: x0+x2); round 0: r0 <-> r1 (both (x0+x2)+x1); r0 -> r2 (copy)
 *
 * Worked step (6 ranks, rank 1; p = 4, extras 4 and 5): receive x5 from rank 5, value
 * v = x1+x5; round 0 with rank 0 (which holds x0+x4): v = (x0+x4)+(x1+x5); round 1 with rank 3
 * (which holds x2+x3, rank 3 having no extra): v = ((x0+x4)+(x1+x5))+(x2+x3); send v to rank 5.
 *
 * Cost: log2(p) rounds of alpha (2 more where n is not a power of two), each moving the whole
 * buffer to one peer: log2(p) x bytes sent per rank where the one hop sends (n-1) x bytes, and
 * one message per round where the one hop's proxy moves n-1 at once. It wins over the one hop
 * where a message's cost on the host (the proxies' system calls, shared cores) outweighs a
 * round's trip; over the ring while the buffer is small (the ring moves 2(n-1)/n x bytes).
 * Preconditions: n >= 2. A value is "raw" (an input the operator's pre step, PREMULSUM's factor,
 * has not touched) only before its first fold; the fold applies pre to raw values and the
 * operator's post step (AVG's division) in the last round only. */
#ifndef MONEL_ALGO_DOUBLING_H
#define MONEL_ALGO_DOUBLING_H
#include "algo/prim.h"

/* What a rank does in one hop of the schedule with one peer. */
enum doubling_kind {
  DOUBLING_GIVE,     /* an extra: send my raw input to peer, then receive the result (copy) */
  DOUBLING_FOLD_IN,  /* receive the extra's raw input: value = pre(mine) op pre(theirs) */
  DOUBLING_EXCHANGE, /* send my value, receive theirs: value = lower op upper (by rank) */
  DOUBLING_HAND_BACK /* send the result to my extra */
};

struct doubling_hop {
  int kind; /* enum doubling_kind */
  int peer;
  int mine_raw, theirs_raw; /* the values folded are inputs (pre not yet applied) */
  int mine_lower;           /* my value goes first in the fold */
  int last;                 /* the fold that makes the result (post applies) */
};

/* p: the largest power of two <= n (n >= 1). */
ALGO_HD static inline int doubling_pow2(int n) {
  int p = 1;
  while (p <= n / 2) p *= 2;
  return p;
}

ALGO_HD static inline int doubling_rounds(int n) {
  int k = 0;
  for (int p = doubling_pow2(n); p > 1; p /= 2) k++;
  return k;
}

/* Hops of rank in the schedule: 1 for an extra, rounds + 2 for a rank with an extra, rounds for
 * the others (0 when n < 2). */
ALGO_HD static inline int doubling_nhops(int rank, int n) {
  if (n < 2) return 0;
  int p = doubling_pow2(n), extras = n - p;
  if (rank >= p) return 1;
  return doubling_rounds(n) + (rank < extras ? 2 : 0);
}

ALGO_HD static inline struct doubling_hop doubling_hop_of(int rank, int n, int h) {
  int p = doubling_pow2(n), extras = n - p, rounds = doubling_rounds(n);
  struct doubling_hop d = {DOUBLING_EXCHANGE, -1, 0, 0, 1, 0};
  if (rank >= p) {
    d.kind = DOUBLING_GIVE, d.peer = rank - p, d.mine_raw = 1;
    return d;
  }
  int folded = rank < extras; /* a rank with an extra starts with a fold-in */
  if (folded && h == 0) {
    d.kind = DOUBLING_FOLD_IN, d.peer = rank + p, d.mine_raw = d.theirs_raw = 1;
    return d;
  }
  if (folded && h == rounds + 1) {
    d.kind = DOUBLING_HAND_BACK, d.peer = rank + p;
    return d;
  }
  int k = h - folded;
  d.peer = rank ^ (1 << k);
  d.mine_raw = k == 0 && !folded;
  d.theirs_raw = k == 0 && d.peer >= extras;
  d.mine_lower = rank < d.peer;
  d.last = k == rounds - 1;
  return d;
}

/* Whether the hop sends my value to its peer, and whether it receives one from it. */
ALGO_HD static inline int doubling_sends(int kind) {
  return kind != DOUBLING_FOLD_IN;
}
ALGO_HD static inline int doubling_receives(int kind) {
  return kind != DOUBLING_HAND_BACK;
}

/* AllGather by recursive doubling, n a power of two: in round k (2^k < n) rank r sends its block,
 * the 2^k pieces from rank r & ~(2^k - 1) on (its own piece in round 0), to rank r ^ 2^k and
 * receives that rank's block, which lies next to it; after log2(n) rounds every rank holds every
 * piece in rank order. The last round moves n/2 pieces in one message. */
ALGO_HD static inline int doubling_gather_first(int rank, int k) {
  return rank & ~((1 << k) - 1);
}

#endif
