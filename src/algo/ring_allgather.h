/* SPDX-License-Identifier: BSD-3-Clause */
/* Ring AllGather: each rank's block travels once around the ring; every rank stores each block
 * as it passes. Chunk c is the contribution of the rank at ring position c (`rank` is my position,
 * see ring.h): the engine puts it at that rank's place in the output.
 *
 *   r0 -> r1 -> r2 -> r3 -> r0
 *   step 0: ri sends ci (its own), steps 1..n-2: receive c(i-s), store, forward; step n-1: store
 *
 * Worked step (4 ranks, rank 1): step 0 copies its input to output chunk 1 and sends it
 * (VERB_COPY_SEND); step 1 receives c0 from r0, stores and forwards it; step 2 receives c3,
 * stores and forwards; step 3 receives c2 and stores it (VERB_RECV).
 *
 * Cost: n - 1 steps of alpha per block, (n-1)/n * total output bytes over each link
 * (bandwidth-optimal).
 * Preconditions: n >= 1; every rank runs the same blocks with the same chunking. In place when
 * sendbuff == recvbuff + rank*count: the copy of the own chunk is then skipped. */
#ifndef MONEL_ALGO_RING_ALLGATHER_H
#define MONEL_ALGO_RING_ALLGATHER_H
#include "algo/ring.h"

ALGO_HD static inline int ring_allgather_nsteps(int nranks) {
  return nranks == 1 ? 1 : nranks;
}

ALGO_HD static inline struct step ring_allgather_step(int rank, int nranks, int s) {
  struct step st;
  st.chunk = ring_mod(rank - s, nranks);
  if (nranks == 1)
    st.verb = VERB_COPY;
  else if (s == 0)
    st.verb = VERB_COPY_SEND;
  else if (s < nranks - 1)
    st.verb = VERB_RECV_COPY_SEND;
  else
    st.verb = VERB_RECV;
  return st;
}

#endif
