/* SPDX-License-Identifier: BSD-3-Clause */
/* The CUDA engine's capability and cost table (core/plan.h) and its fit.
 *
 * Rows for every pair the engine runs: the one-shot LL kernel (device/oneshot.cu) within a host
 * with peer access, the one hop across hosts for every collective (device/onehop.cu,
 * OneShot/Simple over the point-to-point FIFOs), the ring with Simple, LL and LL128 for every ring
 * collective, and the double binary tree with Simple, LL and LL128 for AllReduce, Broadcast and
 * Reduce (device/colls.cuh, over the point-to-point FIFOs). LL128 uses its 128-byte lines only
 * where gpu_check_ll128 found every pair of GPUs the same GPU or NVLink-connected; elsewhere (host
 * memory, the network, PCIe) its steps are published by the tail, correct but with no gain over
 * Simple, so there it runs only when asked for.
 *
 * The default choice (NCCL_ALGO / NCCL_PROTO unset) takes only pairs whose figures were
 * measured: one-shot LL, the one hop, the ring with Simple, and across hosts the tree with
 * Simple for AllReduce. The other pairs' figures are estimates: gpu_fit marks them as taken only
 * when NCCL_ALGO / NCCL_PROTO leave nothing else (plan_fit crossover with 0 bytes), so that an
 * estimate never replaces a measured path. The copy engine (gpu/ce.c, tune_ce_wanted) and the
 * point-to-point FIFOs are chosen by the engine outside this table: NCCL_ALGO and NCCL_PROTO do
 * not name them.
 *
 * Each row's figures (per-step latency, per-rank bandwidth) and where they were measured are in
 * its provenance string (plan_row.source); the reasoning is here, the numbers only there. Every
 * row holds at any rank count: the kernels reach their peers through the comm's peer table
 * (device/dev.h dev_peer), so nothing caps the ranks. How a row's time grows with n ranks is the
 * model's (core/tune.c tune_row_us), from the row's per-step latency and bandwidth: the ring
 * 2(n-1) steps for AllReduce and n-1 for the others, the tree 2 log2(n) steps of a pipeline, the
 * one-shot and the one hop one step whose bytes grow with n - 1, recursive doubling log2(n)
 * steps. Beyond the rank counts a row was measured at, the model extrapolates it. Two bounds
 * come from the GPU, not from a rank limit: the one-shot's buffer per rank holds nranks x
 * DEV_LL_MAX_BYTES of lines (memory), and the one hop keeps every peer's state in the block's
 * shared memory (engine.c onehop_fits). The tree's latency across hosts stands for its fixed
 * part (2h network trips of the whole pipeline at depth h), not for one trip; its bandwidth is in
 * the model's units (an inner node moves 1.5 x 2 x the buffer, core/tune.c), set so that its
 * crossover with the ring lands where the tree was measured faster. The one hop's bound is per
 * peer (its steps stay one where the ring's grow with the ranks); from 8 ranks AllReduce and
 * AllGather double (gpu/peers.h), with the same bound. */
#include "gpu/caps.h"
#include "gpu/peers.h"
#include "core/algo.h"
#include "util/dtype.h"

#define AR    (1u << COLL_ALLREDUCE)
#define AR_RS (AR | 1u << COLL_ALLGATHER | 1u << COLL_REDUCESCATTER)
#define ALL   (AR_RS | 1u << COLL_BROADCAST | 1u << COLL_REDUCE)
#define TREE  (AR | 1u << COLL_BROADCAST | 1u << COLL_REDUCE)
#define PEER  (1u << PLAN_PATH_PEER)
#define SHM   (1u << PLAN_PATH_SHM)
#define NET   (1u << PLAN_PATH_NET)
#define MB    (1u << 20)

#define AT_212 "docs/PERFORMANCE.md at 212cdd8"
#define H200_ONESHOT                                                                               \
  "4 H200, AllReduce -t 4 -g 1 (" AT_212 ", 'Every GPU collective on 4 H200'): 5.3 us at 8 B, "    \
  "23.5 us at 512 KB (3 peers)"
#define H200_RING                                                                                  \
  "4 H200, AllReduce -t 4 -g 1 (" AT_212 "): 342 GB/s per rank at 512 MB, 13.9 us at 128 KB in 6 " \
  "steps"
#define NET_RING                                                                                   \
  "2 H200 as 2 hosts over TCP (" AT_212 ", 'On a quiet machine'): 45.7 us at 8 B in two network "  \
  "steps, 9.07 GB/s at 128 MB"
#define NET_ONEHOP                                                                                 \
  "1 H100/H200, n ranks as n hosts under MPS (" AT_212 ", 'The one hop of every collective', "     \
  "medians of 4 rounds): 30.0-38.9 us at 8 B on 2 hosts; AllGather and ReduceScatter on 4 hosts "  \
  "49-61 us against the ring's 62-75 up to 8 KB a peer, 180-190 against 148-152 at 64 KB; "        \
  "AllReduce on 8 hosts 235 us against the ring's 374 at 32 KB a peer, 1738 against 571 at 256 "   \
  "KB; by recursive doubling 138.0-142.5 us at 32 KB, 680 against the ring's 507 at 256 KB "       \
  "('Recursive doubling across hosts'); Broadcast 15.4-18.0 against the ring's 16.2-19.2 us up "   \
  "to 4 KB, 29.6 against 22.1 at 32 KB; GB/s an estimate"
#define NET_TREE                                                                                   \
  "1 H100, n ranks as n hosts under MPS (" AT_212 ", 'Tree and protocols across hosts', "          \
  "AllReduce, medians of 5 rounds, 8 point-to-point channels per network peer): 2 MB took 1.13 "   \
  "ms on 2 hosts, 2.05 on 4, 2.7 on 8; tree against ring bus bandwidth at 128 MB 11.55/7.62 "      \
  "GB/s on 2 hosts, 4.60/4.11 on 4, 2.11/1.97 on 8; 16 MB 1.03x, 1.12x, 0.97x; 2 MB 0.36x on 2 "   \
  "hosts; with 2 channels per peer a third less bandwidth on 4 hosts"
#define EST "estimate, not measured (taken only when NCCL_ALGO/NCCL_PROTO ask)"

const struct plan_row gpu_caps[GPU_NCAPS] = {
    /* In table order: a row with a measured crossover (one-shot, one hop) comes first. */
    {AR_RS, ALGO_ONESHOT, PROTO_LL, PEER, 5.0, 220, PLAN_CH_PARTS, GPU_LL_PART_BYTES, MB,
     H200_ONESHOT},
    {ALL, ALGO_ONESHOT, PROTO_SIMPLE, NET, 30, 9.1, PLAN_CH_FIXED, 0, MB, NET_ONEHOP},
    /* From MONEL_NET_ONEHOP_DOUBLING ranks it takes the one hop's place (gpu/peers.h). */
    {AR | 1u << COLL_ALLGATHER, ALGO_RECDOUBLING, PROTO_SIMPLE, NET, 30, 9.1, PLAN_CH_FIXED, 0, MB,
     NET_ONEHOP},
    /* Ring, Simple: every collective. */
    {ALL, ALGO_RING, PROTO_SIMPLE, PEER, 2.0, 340, PLAN_CH_BLOCKS, 0, MB, H200_RING},
    {ALL, ALGO_RING, PROTO_SIMPLE, SHM, 3.0, 24, PLAN_CH_BLOCKS, 0, MB,
     EST " (24 GB/s: the block model's host-memory link, MONEL_LINK_GBPS)"},
    {ALL, ALGO_RING, PROTO_SIMPLE, NET, 20, 9.1, PLAN_CH_BLOCKS, 0, MB, NET_RING},
    /* Tree, Simple, across hosts: measured for AllReduce (gpu_fit leaves Broadcast and Reduce
     * to the ring unless asked). */
    {TREE, ALGO_TREE, PROTO_SIMPLE, NET, 500, 30, PLAN_CH_BLOCKS, 0, MB, NET_TREE},
    /* The ring with LL (half the bandwidth: 8 data bytes per 16-byte line) and LL128 (120 of 128
     * bytes), lower latency per step where their lines are used (no fence between data and
     * flag); by the tail (host memory, network) as Simple's. */
    {ALL, ALGO_RING, PROTO_LL, PEER, 1.0, 170, PLAN_CH_BLOCKS, 0, MB, EST},
    {ALL, ALGO_RING, PROTO_LL128, PEER, 1.5, 320, PLAN_CH_BLOCKS, 0, MB, EST},
    {ALL, ALGO_RING, PROTO_LL, SHM, 2.0, 12, PLAN_CH_BLOCKS, 0, MB, EST},
    {ALL, ALGO_RING, PROTO_LL, NET, 20, 4.5, PLAN_CH_BLOCKS, 0, MB, EST},
    {ALL, ALGO_RING, PROTO_LL128, SHM | NET, 20, 8.5, PLAN_CH_BLOCKS, 0, MB, EST " (by the tail)"},
    /* The tree elsewhere and with the other protocols. */
    {TREE, ALGO_TREE, PROTO_SIMPLE, PEER, 2.0, 340, PLAN_CH_BLOCKS, 0, MB, EST},
    {TREE, ALGO_TREE, PROTO_LL, PEER, 1.0, 170, PLAN_CH_BLOCKS, 0, MB, EST},
    {TREE, ALGO_TREE, PROTO_LL128, PEER, 1.5, 320, PLAN_CH_BLOCKS, 0, MB, EST},
    {TREE, ALGO_TREE, PROTO_SIMPLE, SHM, 3.0, 24, PLAN_CH_BLOCKS, 0, MB, EST},
    {TREE, ALGO_TREE, PROTO_LL, SHM, 2.0, 12, PLAN_CH_BLOCKS, 0, MB, EST},
    {TREE, ALGO_TREE, PROTO_LL, NET, 500, 15, PLAN_CH_BLOCKS, 0, MB, EST},
    {TREE, ALGO_TREE, PROTO_LL128, SHM | NET, 500, 28, PLAN_CH_BLOCKS, 0, MB, EST " (by the tail)"},
};

/* The pairs whose launch code exists (launch.c gpu_launch_task): OneShot with LL (one-shot) and
 * Simple (one hop), the ring with every protocol, the tree with every protocol for AllReduce,
 * Broadcast and Reduce (the rows' collectives). */
static int has_kernel(enum algo_id a, enum proto_id p) {
  return a == ALGO_RING || a == ALGO_TREE || a == ALGO_ONESHOT ||
         (a == ALGO_RECDOUBLING && p == PROTO_SIMPLE);
}

/* Figures measured for this row and collective (the default choice may take it). */
static int measured(const struct plan_row* row, enum coll_kind coll) {
  if (row->algo == ALGO_ONESHOT || row->algo == ALGO_RECDOUBLING) return 1;
  if (row->algo == ALGO_RING && row->proto == PROTO_SIMPLE) return 1;
  return row->algo == ALGO_TREE && row->proto == PROTO_SIMPLE && row->paths == NET &&
         coll == COLL_ALLREDUCE;
}

static size_t per_peer(size_t total, int nranks) {
  return nranks > 1 ? total / (size_t)(nranks - 1) : total;
}

struct plan_fit gpu_fit(const struct gpu_fit_in* in, const struct task* t,
                        const struct plan_row* row) {
  struct plan_fit f = {1, 0, 0, NULL};
  size_t bytes = t->count * dtype_size(t->dtype);
  if (!has_kernel(row->algo, row->proto)) {
    f.runs = 0, f.why = "has no kernel in this build yet";
  } else if (row->algo == ALGO_TREE && !in->tree_ok) {
    f.runs = 0, f.why = "needs point-to-point FIFOs to every peer (a pair of GPUs of a host "
                        "without peer access: set NCCL_P2P_DISABLE=1)";
  } else if (row->algo == ALGO_RING || row->algo == ALGO_TREE) {
    /* Estimated rows, and LL128 by the tail where its lines are not safe: only when asked. */
    if (!measured(row, t->coll) || (row->proto == PROTO_LL128 && !in->ll128_lines))
      f.crossover = 1, f.crossover_bytes = 0;
  } else if (row->algo == ALGO_ONESHOT && row->proto == PROTO_LL) {
    f.crossover = 1, f.crossover_bytes = per_peer(in->oneshot_max, in->nranks);
    if (!in->ll_ok)
      f.runs = 0, f.why = "needs every GPU of the comm to map every other's memory (peer access)";
    else if (bytes > in->ll_cap)
      f.runs = 0, f.why = "holds at most 512 KB per rank";
  } else if (row->algo == ALGO_ONESHOT || row->algo == ALGO_RECDOUBLING) {
    /* A rank's message to one peer up to MONEL_NET_ONEHOP_MAX for AllReduce, half of it for
     * AllGather, ReduceScatter and Reduce, whose rings take n-1 network steps where AllReduce's
     * takes 2(n-1): the ring's steps grow with the ranks, the one hop's stay one, so the bound is
     * per peer (NET_ONEHOP). Broadcast only when asked: its root sends every peer's copy itself,
     * and back to back the ring's pipeline went faster from 8 B to 2 MB on 4 hosts. */
    size_t bound = t->coll == COLL_ALLREDUCE ? in->onehop_max : in->onehop_max / 2;
    int doubles = gpu_doubling_applies(t->coll, t->count * dtype_size(t->dtype), in->nranks,
                                       in->doubling, in->doubling_pow2, in->p2p_slot_bytes);
    f.crossover = 1, f.crossover_bytes = t->coll == COLL_BROADCAST ? 0 : bound;
    /* Where doubling applies it takes the one hop's crossover; the one hop (every peer at once)
     * then runs only when asked, and doubling nowhere else. */
    if (row->algo == ALGO_ONESHOT && doubles) f.crossover_bytes = 0;
    if (row->algo == ALGO_RECDOUBLING && !doubles)
      f.runs = 0, f.why = gpu_doubling_why(t->coll, in->nranks, in->doubling, in->doubling_pow2);
    else if (!in->onehop_ok)
      f.runs = 0, f.why = "is off (MONEL_NET_ONEHOP_MAX=0, or a peer's FIFOs are not mapped)";
    else if (bytes > in->p2p_slot_bytes)
      f.runs = 0, f.why = "must fit one point-to-point slot (NCCL_P2P_NVL_CHUNKSIZE)";
  }
  return f;
}
