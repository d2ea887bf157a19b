/* SPDX-License-Identifier: BSD-3-Clause */
/* algo/tree.h and core/algo.c: the two trees are trees (every rank but the root has one parent
 * that lists it as a child, the root is the operation's root, depth within tree_height) for
 * every rank count to 300 and every root; the trees are complementary (at most one rank is a
 * leaf of both); the verbs per role; NCCL_ALGO parsing, accepted and rejected forms; the trees
 * on ring positions (tree_node_in_order) are trees and cross hosts less than those on ranks. */
#include <string.h>
#include "algo/tree.h"
#include "topo/ring_order.h"
#include "core/algo.h"
#include "harness.h"

static int depth_of(int rank, int n, int root, int t) {
  int d = 0;
  for (int r = rank; tree_node_of(r, n, root, t).parent >= 0 && d <= n; d++)
    r = tree_node_of(r, n, root, t).parent;
  return d;
}

TEST(trees_are_trees) {
  for (int n = 1; n <= 300; n++)
    for (int root = 0; root < n; root += (n > 40 ? 7 : 1))
      for (int t = 0; t < TREE_COUNT; t++) {
        int parents[300] = {0};
        for (int r = 0; r < n; r++) {
          struct tree_node nd = tree_node_of(r, n, root, t);
          CHECK_EQ(tree_rank_at(tree_pos_of(r, n, root, t), n, root, t), r);
          CHECK_EQ(nd.parent < 0, r == root);
          CHECK(nd.nchild >= 0 && nd.nchild <= 2);
          for (int i = 0; i < nd.nchild; i++) {
            CHECK_EQ(tree_node_of(nd.child[i], n, root, t).parent, r);
            parents[nd.child[i]]++;
          }
          CHECK(depth_of(r, n, root, t) <= tree_height(n));
        }
        for (int r = 0; r < n; r++) CHECK_EQ(parents[r], r != root);
      }
}

TEST(trees_are_complementary) {
  for (int n = 3; n <= 300; n++) {
    int both = 0;
    for (int r = 1; r < n; r++)
      both += tree_node_of(r, n, 0, 0).nchild == 0 && tree_node_of(r, n, 0, 1).nchild == 0;
    CHECK(both <= (n % 2 == 0 ? 1 : 0));
  }
}

TEST(tree_height_is_logarithmic) {
  CHECK_EQ(tree_height(1), 0);
  CHECK_EQ(tree_height(2), 1);
  CHECK_EQ(tree_height(3), 2);
  CHECK_EQ(tree_height(4), 2);
  CHECK_EQ(tree_height(8), 3);
  CHECK_EQ(tree_height(9), 4);
  CHECK_EQ(tree_height(1024), 10);
}

TEST(verbs_by_role) {
  struct tree_node root = {-1, 1, {3, -1}}, mid = {0, 2, {1, 2}}, leaf = {2, 0, {-1, -1}};
  struct tree_node alone = {-1, 0, {-1, -1}};
  CHECK_EQ(tree_up_verb(&root, 1), VERB_RECV_REDUCE_COPY_SEND);
  CHECK_EQ(tree_up_verb(&root, 0), VERB_RECV_REDUCE_COPY);
  CHECK_EQ(tree_up_verb(&mid, 1), VERB_RECV_REDUCE_SEND);
  CHECK_EQ(tree_up_verb(&leaf, 1), VERB_SEND);
  CHECK_EQ(tree_up_verb(&alone, 1), VERB_COPY);
  CHECK_EQ(tree_down_verb(&root, 1), VERB_NONE);
  CHECK_EQ(tree_down_verb(&root, 0), VERB_COPY_SEND);
  CHECK_EQ(tree_down_verb(&mid, 0), VERB_RECV_COPY_SEND);
  CHECK_EQ(tree_down_verb(&leaf, 0), VERB_RECV);
}

/* The schedule's offsets: the parts tile [0, count) in order, start at multiples of the
 * alignment, and every step of a part is a whole number of aligned elements but the last. */
TEST(parts_and_chunks_tile_the_buffer) {
  const size_t counts[] = {0, 1, 2, 15, 16, 17, 1023, 4096, 1048579, 16777219};
  for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
    for (int nparts = 1; nparts <= 16; nparts++)
      for (size_t align = 1; align <= 16; align *= 2) {
        size_t count = counts[ci], next = 0;
        for (int k = 0; k < nparts; k++) {
          size_t lo, hi;
          tree_part(count, nparts, k, align, &lo, &hi);
          CHECK_EQ(lo, next);
          CHECK(lo <= hi && hi <= count);
          CHECK(lo == count || lo % align == 0);
          size_t c = tree_chunk(hi - lo, 4096 / align, 32768 / align, align);
          CHECK(c >= 1 && c <= 32768 / align && c % align == 0);
          next = hi;
        }
        CHECK_EQ(next, count);
      }
  /* about TREE_PIPELINE steps per part where the bounds allow */
  CHECK_EQ(tree_chunk(8 << 20, 1024, 1 << 20, 4), (size_t)(1 << 20));
  CHECK_EQ(tree_chunk(1 << 20, 1024, 1 << 20, 4), (size_t)(1 << 17));
  CHECK_EQ(tree_chunk(100, 1024, 1 << 20, 4), (size_t)1024);
}

static unsigned bit(enum algo_id a) {
  return 1u << a;
}

TEST(parse_accepts_nccl_forms) {
  unsigned m[COLL_COUNT];
  char err[256];
  unsigned all = (1u << ALGO_COUNT) - 1;
  CHECK_RES(algo_parse("", m, err, sizeof err), ncclSuccess);
  CHECK_EQ(m[COLL_ALLREDUCE], all);
  CHECK_RES(algo_parse("Ring,Tree", m, err, sizeof err), ncclSuccess);
  CHECK_EQ(m[COLL_BROADCAST], bit(ALGO_RING) | bit(ALGO_TREE));
  CHECK_RES(algo_parse(" ring , TREE ,oneshot", m, err, sizeof err), ncclSuccess);
  CHECK_EQ(m[COLL_ALLREDUCE], bit(ALGO_RING) | bit(ALGO_TREE) | bit(ALGO_ONESHOT));
  CHECK_EQ(m[COLL_REDUCE], bit(ALGO_RING) | bit(ALGO_TREE) | bit(ALGO_ONESHOT));
  CHECK_RES(algo_parse("TwoShot,oneshot", m, err, sizeof err), ncclSuccess);
  CHECK_EQ(m[COLL_ALLREDUCE], bit(ALGO_ONESHOT) | bit(ALGO_TWOSHOT));
  CHECK_RES(algo_parse("^Tree", m, err, sizeof err), ncclSuccess);
  CHECK_EQ(m[COLL_ALLREDUCE], all & ~bit(ALGO_TREE));
  CHECK_RES(algo_parse("allreduce:tree;Broadcast:ring", m, err, sizeof err), ncclSuccess);
  CHECK_EQ(m[COLL_ALLREDUCE], bit(ALGO_TREE));
  CHECK_EQ(m[COLL_BROADCAST], bit(ALGO_RING));
  CHECK_EQ(m[COLL_ALLGATHER], all);
  CHECK_RES(algo_parse("ring;allreduce:^ring", m, err, sizeof err), ncclSuccess);
  CHECK_EQ(m[COLL_ALLREDUCE], all & ~bit(ALGO_RING));
  CHECK_EQ(m[COLL_REDUCE], bit(ALGO_RING));
  CHECK_RES(algo_parse("NVLS,nvlstree,PAT,CollnetDirect,collnetchain", m, err, sizeof err),
            ncclSuccess);
  CHECK_EQ(m[COLL_ALLREDUCE] & (bit(ALGO_RING) | bit(ALGO_TREE)), 0);
}

TEST(parse_rejects_unknown_names) {
  unsigned m[COLL_COUNT];
  char err[256] = "";
  CHECK_RES(algo_parse("Ring,Hypercube", m, err, sizeof err), ncclInvalidUsage);
  CHECK(strstr(err, "\"Hypercube\" is not an algorithm") != NULL);
  CHECK_RES(algo_parse("alltoall:ring", m, err, sizeof err), ncclInvalidUsage);
  CHECK(strstr(err, "\"alltoall\" is not a collective") != NULL);
  CHECK_RES(algo_parse("allreduce:tree;bogus", m, err, sizeof err), ncclInvalidUsage);
}

/* Links of tree t (rooted at root) whose two ranks are on different hosts. */
static int tree_cross_links(int n, int root, int t, const uint64_t* h, const int* order,
                            const int* pos) {
  int links = 0;
  for (int r = 0; r < n; r++) {
    struct tree_node nd =
        order ? tree_node_in_order(r, n, root, t, order, pos) : tree_node_of(r, n, root, t);
    links += nd.parent >= 0 && h[nd.parent] != h[r];
  }
  return links;
}

/* The trees on ring positions are trees of ranks with the operation's root on top, for orders of
 * many host layouts, and cross hosts far less than the trees on ranks when hosts interleave. */
TEST(trees_in_ring_order) {
  uint64_t h[64];
  int order[64], pos[64];
  for (int hosts = 1; hosts <= 8; hosts++)
    for (int n = 1; n <= 64; n++) {
      for (int r = 0; r < n; r++) h[r] = 1000 + (uint64_t)(r % hosts);
      topo_ring_order(n, h, order);
      for (int p = 0; p < n; p++) pos[order[p]] = p;
      for (int root = 0; root < n; root += 3)
        for (int t = 0; t < TREE_COUNT; t++) {
          int parents[64] = {0};
          for (int r = 0; r < n; r++) {
            struct tree_node nd = tree_node_in_order(r, n, root, t, order, pos);
            CHECK_EQ(nd.parent < 0, r == root);
            for (int i = 0; i < nd.nchild; i++) {
              CHECK_EQ(tree_node_in_order(nd.child[i], n, root, t, order, pos).parent, r);
              parents[nd.child[i]]++;
            }
          }
          for (int r = 0; r < n; r++) CHECK_EQ(parents[r], r != root);
          int by_pos = tree_cross_links(n, root, t, h, order, pos);
          int by_rank = tree_cross_links(n, root, t, h, NULL, NULL);
          if (hosts == 1) CHECK_EQ(by_pos, 0);
          /* a host's run of positions is cut from the rest of an in-order tree at most at
           * (height + 1) links per run boundary */
          CHECK(by_pos <= hosts * (tree_height(n) + 1));
          /* never much worse (tiny comms of one-rank hosts differ by a link or two), and
           * better once hosts hold a few ranks each */
          CHECK(by_pos <= by_rank + 2);
          if (hosts > 1 && n >= 16 && n >= 4 * hosts) CHECK(by_pos < by_rank);
          if (n == 64 && hosts == 4 && root == 0) CHECK(4 * by_pos < by_rank);
        }
    }
}
