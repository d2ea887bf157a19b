/* SPDX-License-Identifier: BSD-3-Clause */
/* Ring ReduceScatter: chunk c of the input (the part that the rank at ring position c keeps; the
 * engine reads it at that rank's place in the input) travels around the ring collecting every
 * rank's contribution and ends at position c. `rank` is my position (see ring.h).
 *
 *   r0 -> r1 -> r2 -> r3 -> r0
 *   step s: rank i works on chunk (i - s - 1) mod n; the last step lands chunk i on rank i
 *
 * Worked step (4 ranks, rank 1): step 0 sends pre(c0) (VERB_SEND); step 1 receives c3 (from r0:
 * r0's own), adds its c3 and sends (VERB_RECV_REDUCE_SEND); step 2 the same for c2; step 3
 * receives c1 holding the other three contributions, adds its own, applies the post step and
 * stores it in its output (VERB_RECV_REDUCE_COPY).
 *
 * Cost: n - 1 steps of alpha per block, (n-1)/n * total input bytes over each link
 * (bandwidth-optimal), plus one reduction of a chunk per step.
 * Preconditions: n >= 1; same blocks and chunking on every rank. In place when
 * recvbuff == sendbuff + rank*recvcount: chunk `rank` of the input is read only by the last
 * step, which writes the result over it. */
#ifndef MONEL_ALGO_RING_REDUCESCATTER_H
#define MONEL_ALGO_RING_REDUCESCATTER_H
#include "algo/ring.h"

ALGO_HD static inline int ring_reducescatter_nsteps(int nranks) {
  return nranks;
}

ALGO_HD static inline struct step ring_reducescatter_step(int rank, int nranks, int s) {
  struct step st;
  st.chunk = ring_mod(rank - s - 1, nranks);
  if (nranks == 1)
    st.verb = VERB_COPY;
  else if (s == 0)
    st.verb = VERB_SEND;
  else if (s < nranks - 1)
    st.verb = VERB_RECV_REDUCE_SEND;
  else
    st.verb = VERB_RECV_REDUCE_COPY;
  return st;
}

#endif
