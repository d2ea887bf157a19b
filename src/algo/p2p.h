/* SPDX-License-Identifier: BSD-3-Clause */
/* Point-to-point patterns: AlltoAll(v), Gather and Scatter as lists of sends and receives that
 * the engine's progress loop runs together.
 *
 *   pairwise exchange (AlltoAll, 4 ranks):  step s: rank i sends to i+s, receives from i-s
 *   s=0: self copy   s=1: 0->1 1->2 2->3 3->0   s=2: 0->2 1->3 2->0 3->1   s=3: 0->3 ...
 *
 * Worked step (4 ranks, rank 1, s = 2): send block 3 of the input to rank 3, receive block 3
 * of the output from rank 3. Gather: at step s the root receives from root+s and rank root+s
 * sends to it; Scatter is the reverse.
 *
 * Cost: pairwise AlltoAll takes n - 1 steps of alpha + bytes/n * beta when the steps run one
 * after the other; the engine runs them all at once, so it is bound by each rank's total
 * traffic, (n-1)/n * bytes. Gather/Scatter: (n-1) * count bytes through the root.
 * Preconditions: n >= 1; every rank lists its operations in the order of the steps, so several
 * messages between one pair are matched in order. */
#ifndef MONEL_ALGO_P2P_H
#define MONEL_ALGO_P2P_H
#include "algo/ring.h"

ALGO_HD static inline int p2p_pairwise_send_peer(int rank, int nranks, int s) {
  return ring_mod(rank + s, nranks);
}
ALGO_HD static inline int p2p_pairwise_recv_peer(int rank, int nranks, int s) {
  return ring_mod(rank - s, nranks);
}
/* Gather/Scatter: the non-root rank served at step s (1 <= s < n). */
ALGO_HD static inline int p2p_rooted_peer(int root, int nranks, int s) {
  return ring_mod(root + s, nranks);
}

#endif
