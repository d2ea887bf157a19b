/* Ring AllReduce: reduce-scatter around the ring, then all-gather around it.
 *
 *   r0 -> r1 -> r2 -> r3 -> r0     data of each block cut in nranks chunks c0..c3
 *
 * Worked step (4 ranks, rank 1): step 0 sends c1; steps 1-2 receive c0 then c3 from rank 0, add
 * their own and pass them on; step 3 receives c2 (now holding the sum of three ranks), adds its
 * own, stores the final c2 and sends it; steps 4-5 receive final c1 then c0, store and forward;
 * step 6 receives final c3 and stores it.
 *
 * Cost: 2(n-1) steps of alpha, 2(n-1)/n * bytes over each link (bandwidth-optimal).
 * Preconditions: n >= 1; every rank runs the same number of blocks with the same chunking.
 * Steps are a pure function of (rank, nranks, step); compiles as C and CUDA.
 * Ring positions: in every ring*.h schedule, `rank` (and `root`) are positions in the comm's ring
 * order (topo/ring_order.h), r0..r3 above the ranks at positions 0..3; the engine connects to the
 * ranks at the next and previous positions. Here chunks only cut the buffer, so they need no
 * map. */
#ifndef MONEL_ALGO_RING_H
#define MONEL_ALGO_RING_H
#include "algo/prim.h"

ALGO_HD static inline int ring_mod(int a, int n) {
  return ((a % n) + n) % n;
}
ALGO_HD static inline int ring_next(int rank, int nranks) {
  return (rank + 1) % nranks;
}
ALGO_HD static inline int ring_prev(int rank, int nranks) {
  return (rank + nranks - 1) % nranks;
}

ALGO_HD static inline int ring_allreduce_nsteps(int nranks) {
  return nranks == 1 ? 1 : 2 * nranks - 1;
}

ALGO_HD static inline struct step ring_allreduce_step(int rank, int nranks, int s) {
  struct step st;
  if (nranks == 1) {
    st.verb = VERB_COPY, st.chunk = 0;
  } else if (s == 0) {
    st.verb = VERB_SEND, st.chunk = rank;
  } else if (s < nranks - 1) {
    st.verb = VERB_RECV_REDUCE_SEND, st.chunk = ring_mod(rank - s, nranks);
  } else if (s == nranks - 1) {
    st.verb = VERB_RECV_REDUCE_COPY_SEND, st.chunk = ring_mod(rank + 1, nranks);
  } else if (s < 2 * nranks - 2) {
    st.verb = VERB_RECV_COPY_SEND, st.chunk = ring_mod(rank + 1 - (s - nranks + 1), nranks);
  } else {
    st.verb = VERB_RECV, st.chunk = ring_mod(rank + 2, nranks);
  }
  return st;
}

#endif
