/* SPDX-License-Identifier: BSD-3-Clause */
/* core/plan.c: NCCL_PROTO's grammar (NCCL's names, "^", per-collective lists, refusals), and the
 * plan's choices from the engines' tables: the GPU engine keeps its paths (one-shot LL within its
 * crossover and the LL buffers' capacity, one hop across the network within its crossover and a
 * slot, the ring otherwise), NCCL_ALGO / NCCL_PROTO are obeyed or refused with a sentence (never a
 * silent ring), the CPU engine refuses LL and LL128, the channels follow the block model. */
#include <string.h>
#include "core/plan_choose.h"
#include "cpu/cpu.h"
#include "gpu/caps.h"
#include "harness.h"

#define ALL_PROTOS ((1u << PROTO_COUNT) - 1)
#define ALL_ALGOS  ((1u << ALGO_COUNT) - 1)

static unsigned bit(int i) {
  return 1u << i;
}

TEST(proto_parse_names_and_exclusion) {
  unsigned m[COLL_COUNT];
  char err[256] = "";
  CHECK_RES(proto_parse("", m, err, sizeof err), ncclSuccess);
  CHECK_EQ(m[COLL_ALLREDUCE], ALL_PROTOS);
  CHECK_RES(proto_parse("LL128", m, err, sizeof err), ncclSuccess);
  CHECK_EQ(m[COLL_ALLREDUCE], bit(PROTO_LL128));
  CHECK_EQ(m[COLL_BROADCAST], bit(PROTO_LL128));
  CHECK_RES(proto_parse(" simple , ll ", m, err, sizeof err), ncclSuccess);
  CHECK_EQ(m[COLL_REDUCE], bit(PROTO_SIMPLE) | bit(PROTO_LL));
  CHECK_RES(proto_parse("^LL", m, err, sizeof err), ncclSuccess);
  CHECK_EQ(m[COLL_ALLGATHER], bit(PROTO_SIMPLE) | bit(PROTO_LL128));
  CHECK_RES(proto_parse("^ll,LL128", m, err, sizeof err), ncclSuccess);
  CHECK_EQ(m[COLL_ALLGATHER], bit(PROTO_SIMPLE));
}

TEST(proto_parse_per_collective) {
  unsigned m[COLL_COUNT];
  char err[256] = "";
  CHECK_RES(proto_parse("allreduce:LL;Broadcast:^simple", m, err, sizeof err), ncclSuccess);
  CHECK_EQ(m[COLL_ALLREDUCE], bit(PROTO_LL));
  CHECK_EQ(m[COLL_BROADCAST], bit(PROTO_LL) | bit(PROTO_LL128));
  CHECK_EQ(m[COLL_REDUCE], ALL_PROTOS); /* not named: every protocol */
  CHECK_RES(proto_parse("Simple;allgather:LL", m, err, sizeof err), ncclSuccess);
  CHECK_EQ(m[COLL_ALLGATHER], bit(PROTO_LL));
  CHECK_EQ(m[COLL_REDUCESCATTER], bit(PROTO_SIMPLE)); /* the default segment */
}

TEST(proto_parse_refusals) {
  unsigned m[COLL_COUNT];
  char err[256] = "";
  CHECK_RES(proto_parse("LL256", m, err, sizeof err), ncclInvalidUsage);
  CHECK(strstr(err, "\"LL256\" is not a protocol (the names are LL, LL128 and Simple") != NULL);
  CHECK_RES(proto_parse("sendrecv:LL", m, err, sizeof err), ncclInvalidUsage);
  CHECK(strstr(err, "\"sendrecv\" is not a collective NCCL_PROTO can name") != NULL);
  CHECK_RES(proto_parse("Simple,Ring", m, err, sizeof err), ncclInvalidUsage);
  CHECK(strstr(err, "\"Ring\" is not a protocol") != NULL);
}

TEST(algo_parse_shares_the_grammar) {
  unsigned m[COLL_COUNT];
  char err[256] = "";
  CHECK_RES(algo_parse("^tree;reduce:TREE", m, err, sizeof err), ncclSuccess);
  CHECK_EQ(m[COLL_ALLREDUCE], ALL_ALGOS & ~bit(ALGO_TREE));
  CHECK_EQ(m[COLL_REDUCE], bit(ALGO_TREE));
  CHECK_RES(algo_parse("LL", m, err, sizeof err), ncclInvalidUsage);
  CHECK(strstr(err, "\"LL\" is not an algorithm") != NULL);
}

/* --- the plan on the GPU engine's table --------------------------------------------------- */

static struct gpu_fit_in fit_state;

static struct plan_fit fit_gpu(const struct ncclComm* comm, const struct task* t,
                               const struct plan_row* row) {
  (void)comm;
  return gpu_fit(&fit_state, t, row);
}

static struct plan_comm gpu_pc(enum plan_path path) {
  struct plan_comm pc;
  memset(&pc, 0, sizeof pc);
  pc.path = path;
  pc.cta_min = 1, pc.cta_max = 64, pc.nchannels_max = 64, pc.p2p_channels = 8;
  pc.link_gbps = path == PLAN_PATH_PEER ? 450 : 24, pc.block_gbps = 7;
  pc.channel_bytes = 128 << 10;
  return pc;
}

/* Defaults: MONEL_ONESHOT_MAX 3 MB, LL buffers 512 KB, MONEL_NET_ONEHOP_MAX 32 KB a peer, 512 KB
 * slots, recursive doubling from 8 ranks on powers of two. */
static void gpu_state(int nranks, int ll_ok, int onehop_ok) {
  struct gpu_fit_in s = {nranks,   ll_ok, 512 << 10, 3 << 20, onehop_ok, 512 << 10,
                         32 << 10, 8,     1,         1,       ll_ok};
  fit_state = s;
}

struct choice {
  ncclResult_t res;
  struct plan_op op;
  char err[1024];
};

static struct choice decide(const struct plan_row* rows, int nrows, const struct plan_comm* pc,
                            int nranks, enum coll_kind coll, size_t bytes, const char* algo,
                            const char* proto, int gpu) {
  struct choice c;
  unsigned am[COLL_COUNT], pm[COLL_COUNT];
  char err[256];
  memset(&c, 0, sizeof c);
  CHECK_RES(algo_parse(algo, am, err, sizeof err), ncclSuccess);
  CHECK_RES(proto_parse(proto, pm, err, sizeof err), ncclSuccess);
  struct plan_in in = {rows,
                       nrows,
                       pc,
                       nranks,
                       am[coll],
                       pm[coll],
                       algo,
                       proto,
                       gpu ? "gpu" : "cpu",
                       gpu ? fit_gpu : NULL,
                       NULL,
                       0,
                       0};
  struct task t;
  memset(&t, 0, sizeof t);
  t.coll = coll, t.count = bytes, t.dtype = ncclUint8;
  c.res = plan_decide(&in, &t, &c.op, c.err, sizeof c.err);
  return c;
}

static struct choice gpu(enum plan_path path, int nranks, enum coll_kind coll, size_t bytes,
                         const char* algo, const char* proto) {
  struct plan_comm pc = gpu_pc(path);
  return decide(gpu_caps, GPU_NCAPS, &pc, nranks, coll, bytes, algo, proto, 1);
}

#define CHECK_PAIR(c, a, p)                                                                        \
  do {                                                                                             \
    struct choice c_ = (c);                                                                        \
    CHECK_RES(c_.res, ncclSuccess);                                                                \
    CHECK_EQ(c_.op.algo, (a));                                                                     \
    CHECK_EQ(c_.op.proto, (p));                                                                    \
  } while (0)

/* The one-shot LL kernel within its crossover (MONEL_ONESHOT_MAX over n-1 peers) and its buffers'
 * 512 KB; the ring beyond; NCCL_PROTO=LL lifts the crossover, not the capacity. */
TEST(gpu_oneshot_ll_on_nvlink) {
  gpu_state(2, 1, 0);
  CHECK_PAIR(gpu(PLAN_PATH_PEER, 2, COLL_ALLREDUCE, 8, "", ""), ALGO_ONESHOT, PROTO_LL);
  CHECK_PAIR(gpu(PLAN_PATH_PEER, 2, COLL_ALLREDUCE, 512 << 10, "", ""), ALGO_ONESHOT, PROTO_LL);
  CHECK_PAIR(gpu(PLAN_PATH_PEER, 2, COLL_ALLREDUCE, (512 << 10) + 1, "", ""), ALGO_RING,
             PROTO_SIMPLE);
  CHECK_PAIR(gpu(PLAN_PATH_PEER, 2, COLL_ALLGATHER, 100, "", ""), ALGO_ONESHOT, PROTO_LL);
  CHECK_PAIR(gpu(PLAN_PATH_PEER, 2, COLL_REDUCESCATTER, 100, "", ""), ALGO_ONESHOT, PROTO_LL);
  CHECK_PAIR(gpu(PLAN_PATH_PEER, 2, COLL_BROADCAST, 100, "", ""), ALGO_RING, PROTO_SIMPLE);
  gpu_state(16, 1, 0); /* 15 x 256 KB exceeds MONEL_ONESHOT_MAX */
  CHECK_PAIR(gpu(PLAN_PATH_PEER, 16, COLL_ALLREDUCE, 256 << 10, "", ""), ALGO_RING, PROTO_SIMPLE);
  CHECK_PAIR(gpu(PLAN_PATH_PEER, 16, COLL_ALLREDUCE, 209715, "", ""), ALGO_ONESHOT, PROTO_LL);
  CHECK_PAIR(gpu(PLAN_PATH_PEER, 16, COLL_ALLREDUCE, 209716, "", ""), ALGO_RING, PROTO_SIMPLE);
  /* NCCL_ALGO=OneShot NCCL_PROTO=LL: no limit but the buffers' (NCCL_PROTO=LL alone also
   * allows the ring and the tree with LL) */
  CHECK_PAIR(gpu(PLAN_PATH_PEER, 16, COLL_ALLREDUCE, 256 << 10, "allreduce:oneshot", "LL"),
             ALGO_ONESHOT, PROTO_LL);
  /* NCCL_PROTO=Simple, ^LL, NCCL_ALGO=Ring: the ring */
  gpu_state(2, 1, 0);
  CHECK_PAIR(gpu(PLAN_PATH_PEER, 2, COLL_ALLREDUCE, 8, "", "Simple"), ALGO_RING, PROTO_SIMPLE);
  CHECK_PAIR(gpu(PLAN_PATH_PEER, 2, COLL_ALLREDUCE, 8, "", "^LL"), ALGO_RING, PROTO_SIMPLE);
  CHECK_PAIR(gpu(PLAN_PATH_PEER, 2, COLL_ALLREDUCE, 8, "Ring", ""), ALGO_RING, PROTO_SIMPLE);
  /* Without peer access the LL buffers are not mapped */
  gpu_state(2, 0, 0);
  CHECK_PAIR(gpu(PLAN_PATH_SHM, 2, COLL_ALLREDUCE, 8, "", ""), ALGO_RING, PROTO_SIMPLE);
}

TEST(gpu_onehop_across_the_network) {
  gpu_state(2, 0, 1);
  CHECK_PAIR(gpu(PLAN_PATH_NET, 2, COLL_ALLREDUCE, 8, "", ""), ALGO_ONESHOT, PROTO_SIMPLE);
  CHECK_PAIR(gpu(PLAN_PATH_NET, 2, COLL_ALLREDUCE, 32 << 10, "", ""), ALGO_ONESHOT, PROTO_SIMPLE);
  CHECK_PAIR(gpu(PLAN_PATH_NET, 2, COLL_ALLREDUCE, (32 << 10) + 1, "", ""), ALGO_RING,
             PROTO_SIMPLE);
  /* The bound is per peer: 32 KB to each of 7 peers still in one hop (by doubling on 8) */
  gpu_state(8, 0, 1);
  CHECK_PAIR(gpu(PLAN_PATH_NET, 8, COLL_ALLREDUCE, 32 << 10, "", ""), ALGO_RECDOUBLING,
             PROTO_SIMPLE);
  CHECK_PAIR(gpu(PLAN_PATH_NET, 8, COLL_ALLREDUCE, (32 << 10) + 1, "", ""), ALGO_RING,
             PROTO_SIMPLE);
  /* Every collective, by the bytes of its count argument (a rank's piece for AllGather and
   * ReduceScatter), half the bound but for AllReduce, and not without a network peer */
  const enum coll_kind colls[] = {COLL_ALLGATHER, COLL_REDUCESCATTER, COLL_REDUCE};
  gpu_state(5, 0, 1);
  for (int i = 0; i < 3; i++) {
    CHECK_PAIR(gpu(PLAN_PATH_NET, 5, colls[i], 16 << 10, "", ""), ALGO_ONESHOT, PROTO_SIMPLE);
    CHECK_PAIR(gpu(PLAN_PATH_NET, 5, colls[i], (16 << 10) + 1, "", ""), ALGO_RING, PROTO_SIMPLE);
    CHECK_PAIR(gpu(PLAN_PATH_NET, 5, colls[i], 8, "Ring", ""), ALGO_RING, PROTO_SIMPLE);
    CHECK_PAIR(gpu(PLAN_PATH_SHM, 5, colls[i], 8, "", ""), ALGO_RING, PROTO_SIMPLE);
  }
  CHECK_PAIR(gpu(PLAN_PATH_NET, 5, COLL_REDUCE, 8, "allreduce:ring", ""), ALGO_ONESHOT,
             PROTO_SIMPLE);
  CHECK_PAIR(gpu(PLAN_PATH_NET, 5, COLL_REDUCE, 8, "reduce:ring", ""), ALGO_RING, PROTO_SIMPLE);
  /* Broadcast: the ring unless NCCL_ALGO leaves the one hop alone */
  CHECK_PAIR(gpu(PLAN_PATH_NET, 5, COLL_BROADCAST, 8, "", ""), ALGO_RING, PROTO_SIMPLE);
  CHECK_PAIR(gpu(PLAN_PATH_NET, 5, COLL_BROADCAST, 8 << 10, "broadcast:oneshot", ""), ALGO_ONESHOT,
             PROTO_SIMPLE);
  gpu_state(2, 0, 0); /* off */
  CHECK_PAIR(gpu(PLAN_PATH_NET, 2, COLL_ALLREDUCE, 8, "", ""), ALGO_RING, PROTO_SIMPLE);
  /* Forced beyond its crossover (NCCL_ALGO=OneShot): it runs while the buffer fits a slot */
  gpu_state(2, 0, 1);
  CHECK_PAIR(gpu(PLAN_PATH_NET, 2, COLL_ALLREDUCE, 256 << 10, "allreduce:oneshot", ""),
             ALGO_ONESHOT, PROTO_SIMPLE);
  struct choice c = gpu(PLAN_PATH_NET, 2, COLL_ALLREDUCE, (512 << 10) + 1, "allreduce:oneshot", "");
  CHECK_RES(c.res, ncclInvalidUsage);
  CHECK(strstr(c.err, "OneShot/Simple must fit one point-to-point slot") != NULL);
}

/* Tree and the LL / LL128 rings run when NCCL_ALGO / NCCL_PROTO ask for them; their estimated
 * figures never replace a measured path by default; the plan refuses what cannot run here. */
TEST(gpu_forced_tree_and_protocols) {
  gpu_state(4, 1, 0);
  for (int path = 0; path < PLAN_PATH_COUNT; path++) {
    enum plan_path pt = (enum plan_path)path;
    const enum coll_kind tree_colls[] = {COLL_ALLREDUCE, COLL_BROADCAST, COLL_REDUCE};
    for (int i = 0; i < 3; i++) {
      CHECK_PAIR(gpu(pt, 4, tree_colls[i], 1 << 20, "Tree", "Simple"), ALGO_TREE, PROTO_SIMPLE);
      CHECK_PAIR(gpu(pt, 4, tree_colls[i], 1 << 20, "Tree", "LL"), ALGO_TREE, PROTO_LL);
      CHECK_PAIR(gpu(pt, 4, tree_colls[i], 1 << 20, "Tree", "LL128"), ALGO_TREE, PROTO_LL128);
    }
    for (int c = 0; c < COLL_COUNT; c++) {
      if (!algo_coll_is_tunable((enum coll_kind)c)) continue;
      CHECK_PAIR(gpu(pt, 4, (enum coll_kind)c, 3 << 20, "Ring", "LL"), ALGO_RING, PROTO_LL);
      CHECK_PAIR(gpu(pt, 4, (enum coll_kind)c, 3 << 20, "Ring", "LL128"), ALGO_RING, PROTO_LL128);
    }
  }
  /* Unset: the measured paths on one host (ring, Simple, beyond the one-shot) */
  CHECK_PAIR(gpu(PLAN_PATH_PEER, 4, COLL_ALLREDUCE, 1 << 20, "", ""), ALGO_RING, PROTO_SIMPLE);
  CHECK_PAIR(gpu(PLAN_PATH_PEER, 8, COLL_ALLREDUCE, 64 << 20, "", ""), ALGO_RING, PROTO_SIMPLE);
  CHECK_PAIR(gpu(PLAN_PATH_SHM, 8, COLL_BROADCAST, 64 << 20, "", ""), ALGO_RING, PROTO_SIMPLE);
  /* NCCL_PROTO=LL beyond the one-shot's buffers: the ring or the tree with LL */
  struct choice c = gpu(PLAN_PATH_PEER, 2, COLL_ALLREDUCE, 1 << 20, "", "LL");
  CHECK_RES(c.res, ncclSuccess);
  CHECK_EQ(c.op.proto, PROTO_LL);
  CHECK(c.op.algo == ALGO_RING || c.op.algo == ALGO_TREE);
  /* LL128 where its lines are not safe (no NVLink): only when asked */
  gpu_state(4, 0, 0);
  CHECK_PAIR(gpu(PLAN_PATH_PEER, 4, COLL_ALLREDUCE, 64 << 20, "", "LL128,Simple"), ALGO_RING,
             PROTO_SIMPLE);
  CHECK_PAIR(gpu(PLAN_PATH_PEER, 4, COLL_ALLREDUCE, 64 << 20, "", "LL128"), ALGO_RING, PROTO_LL128);
  /* Broadcast has no OneShot; AllGather no tree */
  c = gpu(PLAN_PATH_PEER, 4, COLL_ALLGATHER, 1 << 20, "Tree", "");
  CHECK_RES(c.res, ncclInvalidUsage);
  CHECK(strstr(c.err, "NCCL_ALGO=\"Tree\" leaves no algorithm for AllGather: Monel's gpu engine "
                      "runs it with") != NULL);
  /* Point-to-point FIFOs not mapped to every peer: no tree, and the plan says why */
  gpu_state(4, 0, 0);
  fit_state.tree_ok = 0;
  c = gpu(PLAN_PATH_SHM, 4, COLL_ALLREDUCE, 1 << 20, "Tree", "");
  CHECK_RES(c.res, ncclInvalidUsage);
  CHECK(strstr(c.err, "Tree/Simple needs point-to-point FIFOs to every peer") != NULL);
  CHECK_PAIR(gpu(PLAN_PATH_SHM, 4, COLL_ALLREDUCE, 1 << 30, "", ""), ALGO_RING, PROTO_SIMPLE);
}

/* Every algorithm at 17, 24, 32 and 64 ranks (3, 4 and 8 hosts of 8 GPUs): forced, each runs
 * (the tree with every protocol, the ring with every protocol, the one-shot LL within a host, the
 * one hop across hosts); by default the one-shot and the one hop for 8 B, the ring between, and
 * across hosts the tree for 128 MB, whose 2 log2(n) steps grow slower than the ring's 2(n-1).
 * The per-peer crossovers scale: MONEL_ONESHOT_MAX over n - 1 peers, MONEL_NET_ONEHOP_MAX a
 * peer. */
TEST(gpu_every_algorithm_at_any_rank_count) {
  const int ns[] = {17, 24, 32, 64};
  const enum coll_kind tree_colls[] = {COLL_ALLREDUCE, COLL_BROADCAST, COLL_REDUCE};
  for (int i = 0; i < 4; i++) {
    int n = ns[i];
    gpu_state(n, 0, 1);
    for (int k = 0; k < 3; k++) {
      CHECK_PAIR(gpu(PLAN_PATH_NET, n, tree_colls[k], 1 << 20, "Tree", "Simple"), ALGO_TREE,
                 PROTO_SIMPLE);
      CHECK_PAIR(gpu(PLAN_PATH_NET, n, tree_colls[k], 1 << 20, "Tree", "LL"), ALGO_TREE, PROTO_LL);
      CHECK_PAIR(gpu(PLAN_PATH_NET, n, tree_colls[k], 1 << 20, "Tree", "LL128"), ALGO_TREE,
                 PROTO_LL128);
    }
    for (int c = 0; c < COLL_COUNT; c++) {
      if (!algo_coll_is_tunable((enum coll_kind)c)) continue;
      CHECK_PAIR(gpu(PLAN_PATH_NET, n, (enum coll_kind)c, 3 << 20, "Ring", "Simple"), ALGO_RING,
                 PROTO_SIMPLE);
      CHECK_PAIR(gpu(PLAN_PATH_NET, n, (enum coll_kind)c, 3 << 20, "Ring", "LL"), ALGO_RING,
                 PROTO_LL);
      CHECK_PAIR(gpu(PLAN_PATH_NET, n, (enum coll_kind)c, 3 << 20, "Ring", "LL128"), ALGO_RING,
                 PROTO_LL128);
      CHECK_PAIR(gpu(PLAN_PATH_NET, n, (enum coll_kind)c, 8, "OneShot", ""), ALGO_ONESHOT,
                 PROTO_SIMPLE);
    }
    /* Defaults across hosts: the one hop, RecDoubling in its place on a power of two from 8 */
    int one = (n & (n - 1)) == 0 && n >= 8 ? ALGO_RECDOUBLING : ALGO_ONESHOT;
    CHECK_PAIR(gpu(PLAN_PATH_NET, n, COLL_ALLREDUCE, 8, "", ""), one, PROTO_SIMPLE);
    CHECK_PAIR(gpu(PLAN_PATH_NET, n, COLL_ALLREDUCE, 32 << 10, "", ""), one, PROTO_SIMPLE);
    CHECK_PAIR(gpu(PLAN_PATH_NET, n, COLL_ALLREDUCE, (32 << 10) + 1, "", ""), ALGO_RING,
               PROTO_SIMPLE);
    CHECK_PAIR(gpu(PLAN_PATH_NET, n, COLL_ALLREDUCE, 128 << 20, "", ""), ALGO_TREE, PROTO_SIMPLE);
    /* Within a host with peer access: the one-shot LL up to MONEL_ONESHOT_MAX over n - 1 peers */
    gpu_state(n, 1, 0);
    size_t per = (size_t)(3 << 20) / (size_t)(n - 1);
    CHECK_PAIR(gpu(PLAN_PATH_PEER, n, COLL_ALLREDUCE, 8, "", ""), ALGO_ONESHOT, PROTO_LL);
    CHECK_PAIR(gpu(PLAN_PATH_PEER, n, COLL_ALLREDUCE, per, "", ""), ALGO_ONESHOT, PROTO_LL);
    CHECK_PAIR(gpu(PLAN_PATH_PEER, n, COLL_ALLREDUCE, per + 1, "", ""), ALGO_RING, PROTO_SIMPLE);
    CHECK_PAIR(gpu(PLAN_PATH_PEER, n, COLL_ALLGATHER, 64, "OneShot", "LL"), ALGO_ONESHOT, PROTO_LL);
    for (int k = 0; k < 3; k++)
      CHECK_PAIR(gpu(PLAN_PATH_PEER, n, tree_colls[k], 1 << 20, "Tree", "Simple"), ALGO_TREE,
                 PROTO_SIMPLE);
  }
}

/* Across hosts, by default: the one hop, then the ring, and the tree for a large AllReduce where
 * it was measured faster (docs/PERFORMANCE.md: 128 MB on 2, 4 and 8 hosts; 16 MB on 4). */
TEST(gpu_tree_across_hosts) {
  const int ns[] = {2, 4, 8};
  for (int i = 0; i < 3; i++) {
    int n = ns[i];
    gpu_state(n, 0, 1);
    CHECK_PAIR(gpu(PLAN_PATH_NET, n, COLL_ALLREDUCE, 8, "", ""),
               n == 8 ? ALGO_RECDOUBLING : ALGO_ONESHOT, PROTO_SIMPLE);
    CHECK_PAIR(gpu(PLAN_PATH_NET, n, COLL_ALLREDUCE, 256 << 10, "", ""), ALGO_RING, PROTO_SIMPLE);
    CHECK_PAIR(gpu(PLAN_PATH_NET, n, COLL_ALLREDUCE, 2 << 20, "", ""), ALGO_RING, PROTO_SIMPLE);
    CHECK_PAIR(gpu(PLAN_PATH_NET, n, COLL_ALLREDUCE, 128 << 20, "", ""), ALGO_TREE, PROTO_SIMPLE);
    /* Broadcast and Reduce by the tree were not measured: the ring */
    CHECK_PAIR(gpu(PLAN_PATH_NET, n, COLL_BROADCAST, 128 << 20, "", ""), ALGO_RING, PROTO_SIMPLE);
    CHECK_PAIR(gpu(PLAN_PATH_NET, n, COLL_REDUCE, 128 << 20, "", ""), ALGO_RING, PROTO_SIMPLE);
    /* NCCL_ALGO=Ring keeps the ring */
    CHECK_PAIR(gpu(PLAN_PATH_NET, n, COLL_ALLREDUCE, 128 << 20, "Ring", ""), ALGO_RING,
               PROTO_SIMPLE);
  }
  gpu_state(4, 0, 1);
  CHECK_PAIR(gpu(PLAN_PATH_NET, 4, COLL_ALLREDUCE, 32 << 20, "", ""), ALGO_TREE, PROTO_SIMPLE);
  /* The tree's channels: the block model's, as the ring's (launch_tree clamps them) */
  CHECK(gpu(PLAN_PATH_NET, 4, COLL_ALLREDUCE, 128 << 20, "", "").op.nchannels >= 1);
}

/* The ring's blocks: the block model (tune_blocks) with a quarter of MONEL_CHANNEL_BYTES for
 * Broadcast and Reduce and n pieces for AllGather; the one-shot's: one per 8 KB part. */
TEST(gpu_channels) {
  gpu_state(2, 1, 0);
  CHECK_EQ(gpu(PLAN_PATH_PEER, 2, COLL_ALLREDUCE, 1 << 20, "Ring", "").op.nchannels, 8);
  CHECK_EQ(gpu(PLAN_PATH_PEER, 2, COLL_ALLREDUCE, 1 << 30, "Ring", "").op.nchannels, 64);
  CHECK_EQ(gpu(PLAN_PATH_PEER, 2, COLL_BROADCAST, 1 << 20, "", "").op.nchannels, 32);
  CHECK_EQ(gpu(PLAN_PATH_PEER, 2, COLL_ALLGATHER, 1 << 20, "", "").op.nchannels, 16);
  CHECK_EQ(gpu(PLAN_PATH_PEER, 2, COLL_ALLREDUCE, 8, "", "").op.nchannels, 1);
  CHECK_EQ(gpu(PLAN_PATH_PEER, 2, COLL_ALLREDUCE, 100 << 10, "", "").op.nchannels, 13);
  CHECK_EQ(gpu(PLAN_PATH_PEER, 2, COLL_ALLREDUCE, 100 << 10, "", "").op.chunk_bytes, 8192);
  struct plan_comm pc = gpu_pc(PLAN_PATH_SHM);
  pc.cta_max = 4, pc.nchannels_max = 4; /* NCCL_MAX_CTAS=4 */
  gpu_state(2, 1, 0);
  CHECK_EQ(decide(gpu_caps, GPU_NCAPS, &pc, 2, COLL_ALLREDUCE, 1 << 20, "", "", 1).op.nchannels, 4);
  gpu_state(2, 0, 1);
  CHECK_EQ(gpu(PLAN_PATH_NET, 2, COLL_ALLREDUCE, 8, "", "").op.nchannels, 8); /* p2p channels */
}

/* --- the plan on the CPU engine's table --------------------------------------------------- */

static struct choice cpu(enum plan_path path, int nranks, enum coll_kind coll, size_t bytes,
                         const char* algo, const char* proto) {
  struct plan_comm pc;
  memset(&pc, 0, sizeof pc);
  pc.path = path, pc.p2p_channels = 1;
  return decide(cpu_caps, CPU_NCAPS, &pc, nranks, coll, bytes, algo, proto, 0);
}

TEST(cpu_forced_pairs) {
  const enum algo_id algos[] = {ALGO_RING, ALGO_TREE, ALGO_ONESHOT, ALGO_TWOSHOT};
  const char* names[] = {"ring", "Tree", "ONESHOT", "twoShot"};
  for (int p = 0; p < 2; p++)
    for (int a = 0; a < 4; a++)
      for (size_t bytes = 1; bytes < (1u << 28); bytes *= 37) {
        enum plan_path path = p ? PLAN_PATH_NET : PLAN_PATH_SHM;
        struct choice c = cpu(path, 5, COLL_ALLREDUCE, bytes, names[a], "Simple");
        CHECK_PAIR(c, algos[a], PROTO_SIMPLE);
        CHECK_EQ(c.op.nchannels, 1);
        CHECK(c.op.est_us > 0);
      }
  CHECK_PAIR(cpu(PLAN_PATH_SHM, 3, COLL_BROADCAST, 100, "tree", ""), ALGO_TREE, PROTO_SIMPLE);
  CHECK_PAIR(cpu(PLAN_PATH_SHM, 3, COLL_REDUCE, 100, "ring", ""), ALGO_RING, PROTO_SIMPLE);
  CHECK_PAIR(cpu(PLAN_PATH_SHM, 3, COLL_ALLGATHER, 100, "", ""), ALGO_RING, PROTO_SIMPLE);
  /* The cost model: a tiny AllReduce on 8 ranks does not take the ring (14 steps); a large one
   * on 2 ranks does. */
  CHECK(cpu(PLAN_PATH_SHM, 8, COLL_ALLREDUCE, 4, "", "").op.algo != ALGO_RING);
  CHECK_PAIR(cpu(PLAN_PATH_SHM, 2, COLL_ALLREDUCE, 64 << 20, "", ""), ALGO_RING, PROTO_SIMPLE);
}

TEST(cpu_refuses_ll_and_ll128) {
  struct choice c = cpu(PLAN_PATH_SHM, 4, COLL_ALLREDUCE, 64, "", "LL");
  CHECK_RES(c.res, ncclInvalidUsage);
  CHECK(strstr(c.err,
               "NCCL_PROTO=\"LL\" leaves no protocol for AllReduce: Monel's cpu engine "
               "runs it as Ring/Simple, Tree/Simple, OneShot/Simple, TwoShot/Simple") != NULL);
  c = cpu(PLAN_PATH_NET, 4, COLL_ALLGATHER, 64, "ring", "^Simple");
  CHECK_RES(c.res, ncclInvalidUsage);
  CHECK(strstr(c.err, "with the algorithms NCCL_ALGO=\"ring\" allows: Monel's cpu engine runs it "
                      "as Ring/Simple") != NULL);
  /* per collective: LL for Broadcast only leaves AllReduce alone */
  CHECK_PAIR(cpu(PLAN_PATH_SHM, 4, COLL_ALLREDUCE, 64, "", "broadcast:LL"),
             cpu(PLAN_PATH_SHM, 4, COLL_ALLREDUCE, 64, "", "").op.algo, PROTO_SIMPLE);
  CHECK_RES(cpu(PLAN_PATH_SHM, 4, COLL_BROADCAST, 64, "", "broadcast:LL").res, ncclInvalidUsage);
}

/* Point-to-point operations are outside NCCL_ALGO and NCCL_PROTO (NCCL's lists cannot name
 * them): Simple on the engine's point-to-point channels, whatever the lists say. */
TEST(p2p_is_outside_the_lists) {
  struct choice c = cpu(PLAN_PATH_SHM, 4, COLL_SEND, 64, "tree", "LL");
  CHECK_PAIR(c, ALGO_RING, PROTO_SIMPLE);
  gpu_state(4, 1, 0);
  c = gpu(PLAN_PATH_PEER, 4, COLL_ALLTOALL, 64, "", "LL128");
  CHECK_PAIR(c, ALGO_RING, PROTO_SIMPLE);
  CHECK_EQ(c.op.nchannels, 8);
}

/* Every row says where its figures come from. */
TEST(rows_name_their_source) {
  for (int i = 0; i < CPU_NCAPS; i++)
    CHECK(cpu_caps[i].source != NULL && strlen(cpu_caps[i].source) > 8);
  for (int i = 0; i < GPU_NCAPS; i++)
    CHECK(gpu_caps[i].source != NULL && strlen(gpu_caps[i].source) > 8);
}

/* plan_algos: the algorithms of an engine's table for a collective on the comm's path, the list
 * that ncclAllGatherConfig and the others check algSelection against. */
static unsigned algos_of(const struct plan_row* caps, int ncaps, enum plan_path path,
                         enum coll_kind coll) {
  struct engine e = {.name = "test", .caps = caps, .ncaps = ncaps};
  struct ncclComm comm;
  memset(&comm, 0, sizeof comm);
  comm.engine = &e;
  comm.plan.path = path;
  return plan_algos(&comm, coll);
}

TEST(algorithms_from_the_engine_tables) {
  unsigned ring = bit(ALGO_RING), tree = bit(ALGO_TREE), one = bit(ALGO_ONESHOT);
  CHECK_EQ(algos_of(cpu_caps, CPU_NCAPS, PLAN_PATH_SHM, COLL_ALLREDUCE),
           ring | tree | one | bit(ALGO_TWOSHOT));
  CHECK_EQ(algos_of(cpu_caps, CPU_NCAPS, PLAN_PATH_NET, COLL_BROADCAST), ring | tree);
  CHECK_EQ(algos_of(cpu_caps, CPU_NCAPS, PLAN_PATH_SHM, COLL_ALLGATHER), ring);
  /* the GPU engine runs AllGather in one shot (LL, peer memory) and in one hop (the network) */
  CHECK_EQ(algos_of(gpu_caps, GPU_NCAPS, PLAN_PATH_PEER, COLL_ALLGATHER), ring | one);
  CHECK_EQ(algos_of(gpu_caps, GPU_NCAPS, PLAN_PATH_NET, COLL_ALLGATHER),
           ring | one | bit(ALGO_RECDOUBLING));
  CHECK_EQ(algos_of(gpu_caps, GPU_NCAPS, PLAN_PATH_PEER, COLL_BROADCAST), ring | tree);
  CHECK_EQ(algos_of(gpu_caps, GPU_NCAPS, PLAN_PATH_NET, COLL_BROADCAST), ring | tree | one);
  CHECK_EQ(algos_of(gpu_caps, GPU_NCAPS, PLAN_PATH_NET, COLL_SEND), 0);
  CHECK_EQ(algos_of(cpu_caps, CPU_NCAPS, PLAN_PATH_SHM, COLL_ALLTOALL), 0);
}

/* Recursive doubling takes the one hop's place where it applies (8 ranks across hosts, powers of
 * two, AllReduce and AllGather) and nowhere else; the one hop (every peer at once) still runs
 * there when NCCL_ALGO asks for OneShot; RecDoubling asked where it does not apply is refused
 * with the reason. */
TEST(recdoubling_replaces_the_one_hop_where_it_applies) {
  gpu_state(8, 0, 1);
  CHECK_PAIR(gpu(PLAN_PATH_NET, 8, COLL_ALLREDUCE, 8, "", ""), ALGO_RECDOUBLING, PROTO_SIMPLE);
  CHECK_PAIR(gpu(PLAN_PATH_NET, 8, COLL_ALLGATHER, 8, "", ""), ALGO_RECDOUBLING, PROTO_SIMPLE);
  CHECK_PAIR(gpu(PLAN_PATH_NET, 8, COLL_REDUCESCATTER, 8, "", ""), ALGO_ONESHOT, PROTO_SIMPLE);
  CHECK_PAIR(gpu(PLAN_PATH_NET, 8, COLL_ALLREDUCE, 8, "allreduce:oneshot", ""), ALGO_ONESHOT,
             PROTO_SIMPLE);
  CHECK_PAIR(gpu(PLAN_PATH_NET, 8, COLL_ALLREDUCE, 1 << 20, "", ""), ALGO_RING, PROTO_SIMPLE);
  gpu_state(6, 0, 1);
  CHECK_PAIR(gpu(PLAN_PATH_NET, 6, COLL_ALLREDUCE, 8, "", ""), ALGO_ONESHOT, PROTO_SIMPLE);
  gpu_state(12, 0, 1);
  CHECK_PAIR(gpu(PLAN_PATH_NET, 12, COLL_ALLREDUCE, 8, "", ""), ALGO_ONESHOT, PROTO_SIMPLE);
  struct choice c = gpu(PLAN_PATH_NET, 12, COLL_ALLREDUCE, 8, "allreduce:recdoubling", "");
  CHECK_RES(c.res, ncclInvalidUsage);
  CHECK(strstr(c.err, "RecDoubling/Simple runs on a power of two ranks") != NULL);
  gpu_state(4, 0, 1);
  CHECK_PAIR(gpu(PLAN_PATH_NET, 4, COLL_ALLREDUCE, 8, "", ""), ALGO_ONESHOT, PROTO_SIMPLE);
  c = gpu(PLAN_PATH_NET, 4, COLL_ALLREDUCE, 8, "allreduce:recdoubling", "");
  CHECK_RES(c.res, ncclInvalidUsage);
  CHECK(strstr(c.err, "runs from MONEL_NET_ONEHOP_DOUBLING ranks on") != NULL);
}
