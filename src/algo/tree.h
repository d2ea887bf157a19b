/* SPDX-License-Identifier: BSD-3-Clause */
/* Double binary tree: AllReduce, Broadcast and Reduce over two binary trees that share their
 * root, each tree carrying half of the buffer, pipelined in chunks.
 *
 * Positions. The operation's root (the `root` argument; rank 0 for AllReduce) sits at position
 * 0 of both trees. The other m = n-1 ranks fill positions 1..m of an in-order binary tree:
 * position x whose lowest set bit is b has children x-b/2 and x+b/2 (the odd positions are the
 * leaves; a child past m is replaced by its own left descendant that exists); the top of that
 * tree is the highest power of two <= m, and it hangs below position 0. With v = (rank - root)
 * mod n, tree t puts rank v (1..m) at position 1 + (v - 1 + t) mod m: one step of rotation
 * flips the parity of a position, so a rank that is a leaf of one tree works inside the other
 * (all ranks when m is even, all but one when m is odd) and the two halves load every rank
 * about equally.
 *
 *   n = 8, root 0:  tree 0           tree 1
 *                     0                0
 *                     4                3
 *                  2     6          1     5
 *                 1 3   5 7        7 2   4 6
 *
 * Verbs per chunk (prim.h), on the connections to the parent and to the children:
 *   up (Reduce, first half of AllReduce): leaf VERB_SEND to the parent; inner node
 *     VERB_RECV_REDUCE_SEND (receive from every child, add its input, send to the parent); root
 *     VERB_RECV_REDUCE_COPY (Reduce) or VERB_RECV_REDUCE_COPY_SEND (AllReduce: store the final
 *     chunk and send it down at once).
 *   down (Broadcast, second half of AllReduce): root VERB_COPY_SEND (Broadcast only), inner node
 *     VERB_RECV_COPY_SEND (receive from the parent, store, send to every child), leaf VERB_RECV.
 * Up and down move independently (an engine progresses both streams of both trees at once), so
 * every (tree, parent-child link) needs its own connection.
 *
 * Worked step (AllReduce, 8 ranks, rank 2, one chunk of each half): in tree 0 rank 2 receives
 * the partial sums of ranks 1 and 3, adds its input and sends the sum to rank 4; later it
 * receives the final chunk from rank 4, stores it and sends it to ranks 1 and 3. In tree 1 it is
 * a leaf: it sends its input chunk to rank 1 and later receives the final chunk from rank 1.
 * Rank 0 receives from rank 4 (tree 0) and rank 3 (tree 1), adds its input, stores the result
 * and sends it straight back.
 *
 * Cost: height h = floor(log2(n-1)) + 1 links. AllReduce with k chunks per half:
 * (2h + k - 1) steps of alpha + bytes/(2k) * beta each, i.e. about 2h*alpha + bytes*beta per
 * link, an inner node moving twice the buffer (ring: 2(n-1) steps, 2(n-1)/n * bytes).
 * Broadcast and Reduce: (h + k - 1) steps, bytes*beta per link.
 * Preconditions: n >= 1, 0 <= root < n; every rank splits the buffer between the trees and cuts
 * the chunks the same way. Pure functions of (rank, nranks, root, tree); C and CUDA. */
#ifndef MONEL_ALGO_TREE_H
#define MONEL_ALGO_TREE_H
#include <stddef.h>
#include "algo/prim.h"

#define TREE_COUNT 2

struct tree_node {
  int parent;   /* comm rank, -1 at the root */
  int nchild;   /* 0, 1 or 2 */
  int child[2]; /* comm ranks */
};

/* Highest power of two <= m (m >= 1). */
ALGO_HD static inline int tree_top(int m) {
  int p = 1;
  while (p <= m / 2) p *= 2;
  return p;
}

/* Parent position of position x (1..m); 0 for the top. */
ALGO_HD static inline int tree_pos_parent(int x, int m) {
  if (x == tree_top(m)) return 0;
  int p = x;
  for (;;) {
    int b = p & -p;
    p = (p & (2 * b)) ? p - b : p + b;
    if (p <= m) return p;
  }
}

/* Child positions of position x (0..m); returns how many. */
ALGO_HD static inline int tree_pos_children(int x, int m, int c[2]) {
  if (m < 1) return 0;
  if (x == 0) {
    c[0] = tree_top(m);
    return 1;
  }
  int b = x & -x, k = 0;
  if (b == 1) return 0;
  c[k++] = x - b / 2;
  if (x + 1 <= m) {
    int h = b / 2;
    while (x + h > m) h /= 2;
    c[k++] = x + h;
  }
  return k;
}

ALGO_HD static inline int tree_pos_of(int rank, int nranks, int root, int t) {
  int m = nranks - 1, v = ((rank - root) % nranks + nranks) % nranks;
  return v == 0 ? 0 : 1 + (v - 1 + t) % m;
}

ALGO_HD static inline int tree_rank_at(int pos, int nranks, int root, int t) {
  int m = nranks - 1;
  int v = pos == 0 ? 0 : 1 + ((pos - 1 - t) % m + m) % m;
  return (v + root) % nranks;
}

ALGO_HD static inline struct tree_node tree_node_of(int rank, int nranks, int root, int t) {
  struct tree_node nd = {-1, 0, {-1, -1}};
  int m = nranks - 1, pos = tree_pos_of(rank, nranks, root, t), c[2];
  if (nranks == 1) return nd;
  if (pos != 0) nd.parent = tree_rank_at(tree_pos_parent(pos, m), nranks, root, t);
  nd.nchild = tree_pos_children(pos, m, c);
  for (int i = 0; i < nd.nchild; i++) nd.child[i] = tree_rank_at(c[i], nranks, root, t);
  return nd;
}

/* tree_node_of built on ring positions instead of ranks: order[p] is the rank at position p and
 * pos[r] the position of rank r (core's comm->ring_order and ring_pos, whose hosts are runs of
 * neighbouring positions). An in-order tree keeps a run of positions together (it is cut from
 * the rest at O(log n) links), so the trees cross between hosts O(hosts * log n) times instead of
 * on nearly every link when hosts interleave. Nodes are named by rank; with the identity order
 * this is tree_node_of. */
ALGO_HD static inline struct tree_node tree_node_in_order(int rank, int nranks, int root, int t,
                                                          const int* order, const int* pos) {
  struct tree_node nd = tree_node_of(pos[rank], nranks, pos[root], t);
  if (nd.parent >= 0) nd.parent = order[nd.parent];
  for (int i = 0; i < nd.nchild; i++) nd.child[i] = order[nd.child[i]];
  return nd;
}

/* Links from the root to the deepest leaf. */
ALGO_HD static inline int tree_height(int nranks) {
  int h = 0;
  for (int m = nranks - 1; m > 0; m /= 2) h++;
  return h;
}

/* The up verb of a node (Reduce, AllReduce); VERB_COPY on a single rank. */
ALGO_HD static inline enum verb tree_up_verb(const struct tree_node* nd, int allreduce) {
  if (nd->parent < 0 && nd->nchild == 0) return VERB_COPY;
  if (nd->parent < 0) return allreduce ? VERB_RECV_REDUCE_COPY_SEND : VERB_RECV_REDUCE_COPY;
  return nd->nchild ? VERB_RECV_REDUCE_SEND : VERB_SEND;
}

/* The down verb of a node (Broadcast, AllReduce); VERB_NONE for the AllReduce root, whose up
 * verb already sent the result down. */
ALGO_HD static inline enum verb tree_down_verb(const struct tree_node* nd, int allreduce) {
  if (nd->parent < 0 && nd->nchild == 0) return allreduce ? VERB_NONE : VERB_COPY;
  if (nd->parent < 0) return allreduce ? VERB_NONE : VERB_COPY_SEND;
  return nd->nchild ? VERB_RECV_COPY_SEND : VERB_RECV;
}

/* The schedule's offsets. Part k of nparts of a buffer of count elements, cut at multiples of
 * align elements: [*lo, *hi) (empty parts at the end when count is small). A tree collective
 * gives tree t and channel c part t * nchannels + c, on every rank alike. */
ALGO_HD static inline void tree_part(size_t count, int nparts, int k, size_t align, size_t* lo,
                                     size_t* hi) {
  size_t per = (count + (size_t)nparts - 1) / (size_t)nparts;
  per = (per + align - 1) / align * align;
  size_t a = (size_t)k * per;
  *lo = a < count ? a : count;
  *hi = *lo + per < count ? *lo + per : count;
}

#define TREE_PIPELINE 8 /* steps a part is cut into, so that the levels work at once */

/* Elements per step of a part of len elements: len / TREE_PIPELINE rounded up to align, at
 * least min_elems, at most max_elems (what one step of the protocol carries). */
ALGO_HD static inline size_t tree_chunk(size_t len, size_t min_elems, size_t max_elems,
                                        size_t align) {
  size_t c = (len + TREE_PIPELINE - 1) / TREE_PIPELINE;
  c = (c + align - 1) / align * align;
  if (c < min_elems) c = min_elems;
  if (c > max_elems) c = max_elems / align * align;
  return c ? c : 1;
}

#endif
