/* SPDX-License-Identifier: BSD-3-Clause */
/* gpu/peers.c: the peers a task's kernel reaches through the GPU engine's point-to-point FIFOs,
 * which the engine connects across the network at their first use (MONEL_P2P_CONNECT=lazy).
 *  - Each kind of task names the peers its kernel exchanges with: Send/Recv their peer, AlltoAll
 *    every other rank (AlltoAllv those with a non-zero count either way), Gather/Scatter the root
 *    or, at the root, every other rank, the tree its parents and children, the one hop everyone;
 *    the ring, the one-shot LL kernel and empty operations none; never the rank itself.
 *  - Both ends agree: for one operation, p is in r's set exactly when r is in p's, for every
 *    rank count to 17 and 24, 32 and 64, every root, both tree counts and ring orders that
 *    interleave hosts; and for groups of Send/Recv built from random matched pairs. So the two
 *    ranks of a pair connect it at the same operation.
 *  - Sets of more than 64 ranks span several words: every word is filled, none beyond the last. */
#include <stdlib.h>
#include <string.h>
#include "algo/doubling.h"
#include "algo/tree.h"
#include "gpu/peers.h"
#include "harness.h"

#define MAXN 64           /* the masks below are one word; sets_of_many_words goes beyond */
static char buf[1 << 16]; /* the tasks' buffers: offsets into it stay inside */

struct comm_view {
  int n;
  int order[MAXN], pos[MAXN];
};

/* The identity order, or a permutation of the positions (a ring that interleaves hosts). */
static void view_init(struct comm_view* v, int n, unsigned seed) {
  v->n = n;
  for (int p = 0; p < n; p++) v->order[p] = p;
  for (int p = n - 1; seed && p > 0; p--) {
    seed = seed * 1103515245u + 12345u;
    int q = (int)((seed >> 8) % (unsigned)(p + 1)), x = v->order[p];
    v->order[p] = v->order[q];
    v->order[q] = x;
  }
  for (int p = 0; p < n; p++) v->pos[v->order[p]] = p;
}

static int doubling, pow2_only; /* as the comm decided (0: never) */

#define B(r) ((uint64_t)1 << (r))

/* The one hop's task as the plan runs it (gpu/caps.c): RecDoubling where doubling applies. */
static uint64_t peers_of(const struct comm_view* v, const struct task* t, int rank, int ntrees) {
  struct gpu_peers_in in = {rank, v->n, v->order, v->pos, ntrees};
  struct task p = *t;
  uint64_t set[1] = {0};
  if (p.plan.algo == ALGO_ONESHOT && p.plan.proto == PROTO_SIMPLE &&
      gpu_doubling_applies(p.coll, p.count * dtype_size(p.dtype), v->n, doubling, pow2_only,
                           1 << 19))
    p.plan.algo = ALGO_RECDOUBLING;
  gpu_task_peers(&p, &in, set);
  return set[0];
}

/* The rank counts of the sweeps: every count to 17, then the sizes of 3, 4 and 8 hosts of 8. */
static const int counts[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 24, 32, 64};
#define NCOUNTS ((int)(sizeof counts / sizeof counts[0]))

static struct task make(enum coll_kind c, size_t count, int root) {
  struct task t;
  memset(&t, 0, sizeof t);
  t.coll = c;
  t.count = count;
  t.root = root;
  t.dtype = ncclInt8;
  t.sendbuff = buf;
  t.recvbuff = buf + sizeof buf / 2;
  t.plan.algo = ALGO_RING;
  t.plan.proto = PROTO_SIMPLE;
  return t;
}

static struct task planned(enum coll_kind c, int root, enum algo_id a, enum proto_id p) {
  struct task t = make(c, 64, root);
  t.plan.algo = a;
  t.plan.proto = p;
  return t;
}

static uint64_t all_but(int n, int rank) {
  return (n == 64 ? ~(uint64_t)0 : B(n) - 1) & ~B(rank);
}

TEST(send_and_recv_name_their_peer) {
  struct comm_view v;
  view_init(&v, 8, 0);
  struct task s = make(COLL_SEND, 10, 3), r = make(COLL_RECV, 10, 5);
  CHECK_EQ(peers_of(&v, &s, 0, 2), B(3));
  CHECK_EQ(peers_of(&v, &r, 0, 2), B(5));
  s.count = 0; /* nothing to move: no connection */
  CHECK_EQ(peers_of(&v, &s, 0, 2), 0);
  s = make(COLL_SEND, 10, 4); /* to myself: a copy */
  CHECK_EQ(peers_of(&v, &s, 4, 2), 0);
}

TEST(alltoall_and_rooted_collectives) {
  for (int i = 0; i < NCOUNTS; i++) {
    int n = counts[i];
    struct comm_view v;
    view_init(&v, n, 0);
    for (int me = 0; me < n; me++) {
      struct task a = make(COLL_ALLTOALL, 4, 0);
      CHECK_EQ(peers_of(&v, &a, me, 2), n < 2 ? 0 : all_but(n, me));
      for (int root = 0; root < n; root++) {
        struct task g = make(COLL_GATHER, 4, root), sc = make(COLL_SCATTER, 4, root);
        uint64_t want = n < 2 ? 0 : me == root ? all_but(n, me) : B(root);
        CHECK_EQ(peers_of(&v, &g, me, 2), want);
        CHECK_EQ(peers_of(&v, &sc, me, 2), want);
      }
    }
  }
  /* AlltoAllv: only the peers with a count either way (rows: sendcounts, sdispls, recvcounts,
   * rdispls). */
  struct comm_view v;
  view_init(&v, 6, 0);
  size_t rows[4 * 6];
  memset(rows, 0, sizeof rows);
  rows[1] = 3;         /* send 3 to rank 1 */
  rows[2 * 6 + 4] = 2; /* receive 2 from rank 4 */
  rows[5] = 1;         /* send 1 to myself (rank 5) */
  rows[2 * 6 + 5] = 1; /* and receive it */
  struct task av = make(COLL_ALLTOALLV, 0, 0);
  av.vrows = rows;
  CHECK_EQ(peers_of(&v, &av, 5, 2), B(1) | B(4));
}

TEST(collectives_by_their_plan) {
  struct comm_view v;
  view_init(&v, 8, 0);
  struct task ring = planned(COLL_ALLREDUCE, 0, ALGO_RING, PROTO_SIMPLE);
  struct task ll = planned(COLL_ALLREDUCE, 0, ALGO_ONESHOT, PROTO_LL);
  struct task hop = planned(COLL_ALLREDUCE, 0, ALGO_ONESHOT, PROTO_SIMPLE);
  struct task tree = planned(COLL_ALLREDUCE, 0, ALGO_TREE, PROTO_SIMPLE);
  struct task ag_tree = planned(COLL_ALLGATHER, 0, ALGO_TREE, PROTO_SIMPLE); /* no tree kernel */
  for (int me = 0; me < 8; me++) {
    CHECK_EQ(peers_of(&v, &ring, me, 2), 0);
    CHECK_EQ(peers_of(&v, &ll, me, 2), 0);
    CHECK_EQ(peers_of(&v, &hop, me, 2), all_but(8, me));
    CHECK_EQ(peers_of(&v, &ag_tree, me, 2), 0);
    for (int nt = 1; nt <= 2; nt++) {
      uint64_t want = 0;
      for (int k = 0; k < nt; k++) {
        struct tree_node nd = tree_node_of(me, 8, 0, k);
        if (nd.parent >= 0) want |= B(nd.parent);
        for (int c = 0; c < nd.nchild; c++) want |= B(nd.child[c]);
      }
      CHECK_EQ(peers_of(&v, &tree, me, nt), want);
      CHECK(want != 0);
    }
  }
  hop.count = 0;
  tree.count = 0;
  CHECK_EQ(peers_of(&v, &hop, 1, 2), 0);
  CHECK_EQ(peers_of(&v, &tree, 1, 2), 0);
  CHECK_EQ(gpu_tree_count(1), 1);
  CHECK_EQ(gpu_tree_count(2), 2);
  CHECK_EQ(gpu_tree_count(8), 2);
}

/* The one hop of every collective: AllReduce, AllGather and ReduceScatter reach every peer; the
 * root of Broadcast and Reduce every peer, another rank the root alone. */
TEST(the_one_hop_of_every_collective) {
  struct comm_view v;
  view_init(&v, 6, 0);
  const enum coll_kind all[] = {COLL_ALLREDUCE, COLL_ALLGATHER, COLL_REDUCESCATTER};
  for (int c = 0; c < 3; c++) {
    struct task t = planned(all[c], 0, ALGO_ONESHOT, PROTO_SIMPLE);
    for (int me = 0; me < 6; me++) CHECK_EQ(peers_of(&v, &t, me, 2), all_but(6, me));
  }
  const enum coll_kind rooted[] = {COLL_BROADCAST, COLL_REDUCE};
  for (int c = 0; c < 2; c++)
    for (int root = 0; root < 6; root++) {
      struct task t = planned(rooted[c], root, ALGO_ONESHOT, PROTO_SIMPLE);
      for (int me = 0; me < 6; me++)
        CHECK_EQ(peers_of(&v, &t, me, 2), me == root ? all_but(6, me) : B(root));
      t.count = 0;
      CHECK_EQ(peers_of(&v, &t, root, 2), 0);
    }
}

/* The one hop by recursive doubling from a number of ranks: AllReduce's schedule's peers (8
 * ranks: the ranks one bit away; 6: ranks 4 and 5 their partners 0 and 1 alone; with the
 * default, from 8 on powers of two, every peer on 6 and 12 ranks); AllGather's on a power of two
 * while half its output fits a slot; the other collectives' one hop unchanged. */
static int applies(const struct task* t, int n, int from, int pow2, size_t slot) {
  return gpu_doubling_applies(t->coll, t->count * dtype_size(t->dtype), n, from, pow2, slot);
}

TEST(allreduce_doubling_reaches_the_schedules_peers) {
  doubling = 2;
  struct comm_view v;
  view_init(&v, 8, 0);
  struct task t = planned(COLL_ALLREDUCE, 0, ALGO_ONESHOT, PROTO_SIMPLE);
  for (int me = 0; me < 8; me++)
    CHECK_EQ(peers_of(&v, &t, me, 2), B(me ^ 1) | B(me ^ 2) | B(me ^ 4));
  view_init(&v, 6, 0);
  CHECK_EQ(peers_of(&v, &t, 4, 2), B(0));
  CHECK_EQ(peers_of(&v, &t, 5, 2), B(1));
  CHECK_EQ(peers_of(&v, &t, 0, 2), B(1) | B(2) | B(4));
  CHECK_EQ(peers_of(&v, &t, 3, 2), B(2) | B(1));
  view_init(&v, 2, 0);
  CHECK_EQ(peers_of(&v, &t, 0, 2), B(1));
  doubling = 8, pow2_only = 1; /* the default: from 8 ranks on powers of two */
  view_init(&v, 6, 0);
  CHECK_EQ(peers_of(&v, &t, 4, 2), all_but(6, 4));
  view_init(&v, 12, 0);
  CHECK_EQ(peers_of(&v, &t, 4, 2), all_but(12, 4));
  view_init(&v, 8, 0);
  CHECK_EQ(peers_of(&v, &t, 5, 2), B(4) | B(7) | B(1));
  doubling = 2, pow2_only = 0;
  /* AllGather: on a power of two, the ranks one bit away; on 6 ranks every peer at once */
  struct task ag = planned(COLL_ALLGATHER, 0, ALGO_ONESHOT, PROTO_SIMPLE);
  view_init(&v, 8, 0);
  for (int me = 0; me < 8; me++)
    CHECK_EQ(peers_of(&v, &ag, me, 2), B(me ^ 1) | B(me ^ 2) | B(me ^ 4));
  view_init(&v, 6, 0);
  CHECK_EQ(peers_of(&v, &ag, 0, 2), all_but(6, 0));
  struct task ring = planned(COLL_ALLREDUCE, 0, ALGO_RING, PROTO_SIMPLE);
  CHECK_EQ(peers_of(&v, &ring, 0, 2), 0);
  CHECK_EQ(applies(&t, 6, 3, 0, 1 << 19), 1);
  CHECK_EQ(applies(&t, 6, 3, 1, 1 << 19), 0);
  CHECK_EQ(applies(&t, 8, 8, 1, 1 << 19), 1);
  CHECK_EQ(applies(&t, 6, 6, 0, 1 << 19), 1);
  CHECK_EQ(applies(&t, 6, 7, 0, 1 << 19), 0);
  CHECK_EQ(applies(&t, 2, 1, 0, 1 << 19), 1);
  CHECK_EQ(applies(&t, 1, 1, 0, 1 << 19), 0);
  CHECK_EQ(applies(&t, 6, 0, 0, 1 << 19), 0);
  CHECK_EQ(applies(&ag, 6, 3, 0, 1 << 19), 0);
  CHECK_EQ(applies(&ag, 8, 8, 1, 1 << 19), 1);
  ag.count = (1 << 19) / 4 + 1; /* half of the output (4 pieces) is more than a slot */
  CHECK_EQ(applies(&ag, 8, 8, 0, 1 << 19), 0);
  struct task rs = planned(COLL_REDUCESCATTER, 0, ALGO_ONESHOT, PROTO_SIMPLE);
  CHECK_EQ(applies(&rs, 8, 3, 0, 1 << 19), 0);
  doubling = 0;
  CHECK_EQ(peers_of(&v, &t, 4, 2), all_but(6, 4));
}

/* The one hop alone reaches its peers through channel 0 only: a network peer it meets first gets
 * that channel alone. Every other kind of task needs all of a peer's channels. */
TEST(channel0_only_for_the_one_hop) {
  const enum coll_kind colls[] = {COLL_ALLREDUCE, COLL_ALLGATHER, COLL_REDUCESCATTER,
                                  COLL_BROADCAST, COLL_REDUCE};
  for (int c = 0; c < 5; c++) {
    struct task hop = planned(colls[c], 0, ALGO_ONESHOT, PROTO_SIMPLE);
    CHECK_EQ(gpu_task_channel0(&hop), 1);
  }
  struct task ll = planned(COLL_ALLREDUCE, 0, ALGO_ONESHOT, PROTO_LL);
  CHECK_EQ(gpu_task_channel0(&ll), 0);
  enum algo_id algos[] = {ALGO_RING, ALGO_TREE};
  for (int a = 0; a < 2; a++) {
    struct task t = planned(COLL_ALLREDUCE, 0, algos[a], PROTO_SIMPLE);
    CHECK_EQ(gpu_task_channel0(&t), 0);
  }
  enum coll_kind p2p[] = {COLL_SEND, COLL_RECV, COLL_ALLTOALL, COLL_GATHER, COLL_SCATTER};
  for (int c = 0; c < 5; c++) {
    struct task t = planned(p2p[c], 0, ALGO_ONESHOT, PROTO_SIMPLE);
    CHECK_EQ(gpu_task_channel0(&t), 0);
  }
}

/* p in peers(r) exactly when r in peers(p), for every rank pair of one operation. */
static void check_agree(const struct comm_view* v, const struct task* t, int ntrees) {
  uint64_t m[MAXN];
  for (int r = 0; r < v->n; r++) m[r] = peers_of(v, t, r, ntrees);
  for (int r = 0; r < v->n; r++) {
    CHECK_EQ(m[r] >> r & 1, 0);
    for (int p = 0; p < v->n; p++)
      if ((m[r] >> p & 1) != (m[p] >> r & 1)) {
        fprintf(stderr, "%s root %d, %d ranks, %d trees: rank %d %s rank %d, not the reverse\n",
                coll_name(t->coll), t->root, v->n, ntrees, r,
                m[r] >> p & 1 ? "names" : "leaves out", p);
        CHECK(0);
      }
  }
}

TEST(both_ends_of_a_pair_agree) {
  const enum coll_kind rooted[] = {COLL_ALLREDUCE, COLL_BROADCAST, COLL_REDUCE};
  for (int i = 1; i < NCOUNTS; i++)
    for (unsigned seed = 0; seed < 4; seed++) {
      int n = counts[i];
      struct comm_view v;
      view_init(&v, n, seed * 7919u);
      struct task a = make(COLL_ALLTOALL, 4, 0);
      struct task hop = planned(COLL_ALLREDUCE, 0, ALGO_ONESHOT, PROTO_SIMPLE);
      check_agree(&v, &a, 2);
      check_agree(&v, &hop, 2);
      struct task ag = planned(COLL_ALLGATHER, 0, ALGO_ONESHOT, PROTO_SIMPLE);
      doubling = 3;
      check_agree(&v, &hop, 2);
      check_agree(&v, &ag, 2);
      doubling = 0;
      for (int root = 0; root<n; root += n> 17 ? 7 : 1) { /* some roots of the large ones */
        struct task g = make(COLL_GATHER, 4, root), sc = make(COLL_SCATTER, 4, root);
        check_agree(&v, &g, 2);
        check_agree(&v, &sc, 2);
        for (int c = 0; c < 3; c++) {
          for (int nt = 1; nt <= 2; nt++) {
            struct task t = planned(rooted[c], root, ALGO_TREE, PROTO_SIMPLE);
            check_agree(&v, &t, nt);
          }
          struct task h = planned(rooted[c], root, ALGO_ONESHOT, PROTO_SIMPLE);
          check_agree(&v, &h, 2);
        }
      }
    }
}

/* Groups of Send/Recv from random matched pairs (a sends to b, b receives from a): the union of
 * a rank's tasks names b exactly when b's names it. */
TEST(matched_send_recv_groups_agree) {
  unsigned seed = 12345u;
  for (int round = 0; round < 200; round++) {
    int n = counts[1 + round % (NCOUNTS - 1)];
    struct comm_view v;
    view_init(&v, n, 0);
    uint64_t m[MAXN] = {0};
    int npairs = 1 + round % 9;
    for (int k = 0; k < npairs; k++) {
      seed = seed * 1103515245u + 12345u;
      int a = (int)((seed >> 8) % (unsigned)n), b = (int)((seed >> 20) % (unsigned)n);
      struct task s = make(COLL_SEND, 1 + k, b), r = make(COLL_RECV, 1 + k, a);
      m[a] |= peers_of(&v, &s, a, 2);
      m[b] |= peers_of(&v, &r, b, 2);
    }
    for (int r = 0; r < n; r++)
      for (int p = 0; p < n; p++) CHECK_EQ(m[r] >> p & 1, m[p] >> r & 1);
  }
}

/* 130 ranks: a set of three words. AlltoAll and the one hop name every rank but me, in every
 * word; Send to rank 129 sets only the last word's bit 1; the tree's parent and children are the
 * algorithm's; gpu_set_* read back what was put. */
TEST(sets_of_many_words) {
  enum { N = 130 };
  static int order[N], pos[N];
  for (int r = 0; r < N; r++) order[r] = pos[r] = r;
  CHECK_EQ(gpu_set_words(N), 3);
  CHECK_EQ(gpu_set_words(64), 1);
  CHECK_EQ(gpu_set_words(65), 2);
  uint64_t set[3];
  for (int me = 0; me < N; me += 43) {
    struct gpu_peers_in in = {me, N, order, pos, 2, 0, 0, 1 << 19};
    struct task a = make(COLL_ALLTOALL, 4, 0);
    struct task hop = planned(COLL_ALLREDUCE, 0, ALGO_ONESHOT, PROTO_SIMPLE);
    struct task* ts[] = {&a, &hop};
    for (int k = 0; k < 2; k++) {
      gpu_set_clear(set, N);
      gpu_task_peers(ts[k], &in, set);
      for (int r = 0; r < N; r++) CHECK_EQ(gpu_set_has(set, r), r != me);
      CHECK_EQ(set[2] >> 2, 0); /* nothing beyond rank 129 */
    }
    struct task s = make(COLL_SEND, 10, 129);
    gpu_set_clear(set, N);
    gpu_task_peers(&s, &in, set);
    CHECK_EQ(set[0], 0);
    CHECK_EQ(set[1], 0);
    CHECK_EQ(set[2], me == 129 ? 0 : B(1));
    struct task tree = planned(COLL_ALLREDUCE, 0, ALGO_TREE, PROTO_SIMPLE);
    gpu_set_clear(set, N);
    gpu_task_peers(&tree, &in, set);
    int named = 0, want = 0;
    for (int k = 0; k < 2; k++) {
      struct tree_node nd = tree_node_of(me, N, 0, k);
      if (nd.parent >= 0) CHECK(gpu_set_has(set, nd.parent));
      for (int c = 0; c < nd.nchild; c++) CHECK(gpu_set_has(set, nd.child[c]));
    }
    for (int r = 0; r < N; r++) named += gpu_set_has(set, r);
    for (int r = 0; r < N; r++) {
      int linked = 0;
      for (int k = 0; k < 2; k++) {
        struct tree_node nd = tree_node_of(me, N, 0, k);
        linked |= nd.parent == r;
        for (int c = 0; c < nd.nchild; c++) linked |= nd.child[c] == r;
      }
      want += linked;
    }
    CHECK_EQ(named, want);
    CHECK(!gpu_set_empty(set, N));
  }
}
