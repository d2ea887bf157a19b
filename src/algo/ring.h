/* SPDX-License-Identifier: BSD-3-Clause */
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
#include <stddef.h>
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

/* AllReduce cuts the buffer in blocks of nranks chunks: from an element with rem elements left,
 * a chunk is rem / nranks rounded up to a multiple of `align` elements, at most max_chunk (one
 * FIFO slot), and the block is nranks chunks or what is left. Both engines cut alike. */
struct ring_block {
  size_t chunk, len; /* elements */
};

ALGO_HD static inline struct ring_block ring_allreduce_block(size_t rem, int nranks, size_t align,
                                                             size_t max_chunk) {
  struct ring_block b;
  b.chunk = (rem + nranks - 1) / nranks;
  b.chunk = (b.chunk + align - 1) / align * align;
  if (b.chunk > max_chunk) b.chunk = max_chunk;
  b.len = b.chunk * (size_t)nranks < rem ? b.chunk * (size_t)nranks : rem;
  return b;
}

/* Chunk c of block b: *first is its first element (from the block's start); returns its length
 * (0 for a chunk past the end of a short last block). */
ALGO_HD static inline size_t ring_block_chunk(struct ring_block b, int c, size_t* first) {
  *first = (size_t)c * b.chunk;
  if (*first >= b.len) return 0;
  return b.len - *first < b.chunk ? b.len - *first : b.chunk;
}

/* AllGather (output) and ReduceScatter (input): where chunk c of a step lies, `off` into the part
 * of the rank at ring position c, parts of `part` units each. order: position -> rank (NULL:
 * the identity). */
ALGO_HD static inline size_t ring_part_offset(const int* order, int c, size_t part, size_t off) {
  return (size_t)(order ? order[c] : c) * part + off;
}

#endif
