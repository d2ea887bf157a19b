/* The CUDA engine's capability and cost table (core/plan.h) and its fit.
 *
 * Rows for every pair the engine is meant to run: the one-shot LL kernel (device/oneshot.cu)
 * within a host with peer access, the one-hop AllReduce across hosts (device/onehop.cu,
 * OneShot/Simple over the point-to-point FIFOs), the ring with Simple for every collective, and
 * for AllReduce the ring and the tree with Simple, LL and LL128 (LL128 only over peer memory,
 * where 128-byte stores of a warp arrive whole, as NCCL restricts it). gpu_fit says which of them
 * have launch code in this build (has_kernel): the others are refused with that sentence when
 * NCCL_ALGO / NCCL_PROTO leave only them, and never chosen by the cost model. The copy engine
 * (gpu/ce.c, tune_ce_wanted) and the point-to-point FIFOs are chosen by the engine outside this
 * table: NCCL_ALGO and NCCL_PROTO do not name them.
 *
 * Figures (per-step latency us, per-rank bandwidth GB/s) and where they come from: */
#include "gpu/caps.h"
#include "core/algo.h"
#include "util/dtype.h"

#define AR    (1u << COLL_ALLREDUCE)
#define AR_RS (AR | 1u << COLL_ALLGATHER | 1u << COLL_REDUCESCATTER)
#define ALL   (AR_RS | 1u << COLL_BROADCAST | 1u << COLL_REDUCE)
#define PEER  (1u << PLAN_PATH_PEER)
#define SHM   (1u << PLAN_PATH_SHM)
#define NET   (1u << PLAN_PATH_NET)
#define MB    (1u << 20)

/* docs/PERFORMANCE.md, "Every GPU collective on 4 H200": one-shot 5.3 us at 8 B, 23.5 us at
 * 512 KB (3 peers); the ring 342 GB/s per rank at 512 MB and 13.9 us at 128 KB in 6 steps. */
#define H200_ONESHOT "4 H200, AllReduce -t 4 -g 1 (PERFORMANCE.md): 5.3 us at 8 B, 23.5 at 512 KB"
#define H200_RING    "4 H200, AllReduce -t 4 -g 1 (PERFORMANCE.md): 342 GB/s at 512 MB"
/* docs/PERFORMANCE.md, "On a quiet machine (2 H200 as two hosts)": 45.7 us at 8 B in two network
 * steps, 9.07 GB/s at 128 MB; the one hop: 30.0-38.9 us at 8 B on 2 hosts (H100, MPS). */
#define NET_RING   "2 H200 as 2 hosts over TCP (PERFORMANCE.md): 45.7 us at 8 B, 9.07 GB/s"
#define NET_ONEHOP "1 H100, 2 ranks as 2 hosts under MPS: 30.0-38.9 us at 8 B (estimate of GB/s)"
#define EST        "estimate, not measured"

const struct plan_row gpu_caps[GPU_NCAPS] = {
    /* In table order: a row with a measured crossover (one-shot, one hop) comes first. */
    {AR_RS, ALGO_ONESHOT, PROTO_LL, PEER, 5.0, 220, PLAN_CH_PARTS, GPU_LL_PART_BYTES, MB,
     H200_ONESHOT},
    {AR, ALGO_ONESHOT, PROTO_SIMPLE, NET, 30, 9.1, PLAN_CH_FIXED, 0, MB, NET_ONEHOP},
    /* Ring, Simple: every collective. */
    {ALL, ALGO_RING, PROTO_SIMPLE, PEER, 2.0, 340, PLAN_CH_BLOCKS, 0, MB, H200_RING},
    {ALL, ALGO_RING, PROTO_SIMPLE, SHM, 3.0, 24, PLAN_CH_BLOCKS, 0, MB,
     EST " (24 GB/s: the block model's host-memory link, MONEL_LINK_GBPS)"},
    {ALL, ALGO_RING, PROTO_SIMPLE, NET, 20, 9.1, PLAN_CH_BLOCKS, 0, MB, NET_RING},
    /* AllReduce: ring and tree with LL (half the bandwidth: 8 data bytes per 16-byte line) and
     * LL128 (120 of 128 bytes), lower latency per step (no fence between data and flag). */
    {AR, ALGO_RING, PROTO_LL, PEER, 1.0, 170, PLAN_CH_BLOCKS, 0, MB, EST},
    {AR, ALGO_RING, PROTO_LL128, PEER, 1.5, 320, PLAN_CH_BLOCKS, 0, MB, EST},
    {AR, ALGO_RING, PROTO_LL, SHM, 2.0, 12, PLAN_CH_BLOCKS, 0, MB, EST},
    {AR, ALGO_RING, PROTO_LL, NET, 10, 4.5, PLAN_CH_BLOCKS, 0, MB, EST},
    {AR, ALGO_TREE, PROTO_SIMPLE, PEER, 2.0, 340, PLAN_CH_BLOCKS, 0, MB, EST},
    {AR, ALGO_TREE, PROTO_LL, PEER, 1.0, 170, PLAN_CH_BLOCKS, 0, MB, EST},
    {AR, ALGO_TREE, PROTO_LL128, PEER, 1.5, 320, PLAN_CH_BLOCKS, 0, MB, EST},
    {AR, ALGO_TREE, PROTO_SIMPLE, SHM, 3.0, 24, PLAN_CH_BLOCKS, 0, MB, EST},
    {AR, ALGO_TREE, PROTO_LL, SHM, 2.0, 12, PLAN_CH_BLOCKS, 0, MB, EST},
    {AR, ALGO_TREE, PROTO_SIMPLE, NET, 20, 9.1, PLAN_CH_BLOCKS, 0, MB, EST},
    {AR, ALGO_TREE, PROTO_LL, NET, 10, 4.5, PLAN_CH_BLOCKS, 0, MB, EST},
    /* No LL128 through host memory or the network: the order of its 128-byte stores is not
     * ensured there. */
};

/* The pairs whose launch code exists (engine.c launch_task). The device layer adds its pairs
 * here as their kernels land. */
static int has_kernel(enum algo_id a, enum proto_id p) {
  return (a == ALGO_RING && p == PROTO_SIMPLE) || (a == ALGO_ONESHOT && p == PROTO_LL) ||
         (a == ALGO_ONESHOT && p == PROTO_SIMPLE);
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
  } else if (row->algo == ALGO_ONESHOT && row->proto == PROTO_LL) {
    f.crossover = 1, f.crossover_bytes = per_peer(in->oneshot_max, in->nranks);
    if (!in->ll_ok)
      f.runs = 0, f.why = "needs every GPU of the comm to map every other's memory (peer access)";
    else if (bytes > in->ll_cap)
      f.runs = 0, f.why = "holds at most 512 KB per rank";
  } else if (row->algo == ALGO_ONESHOT) {
    f.crossover = 1, f.crossover_bytes = per_peer(in->onehop_max, in->nranks);
    if (!in->onehop_ok)
      f.runs = 0, f.why = "is off (MONEL_NET_ONEHOP_MAX=0, or a peer's FIFOs are not mapped)";
    else if (bytes > in->p2p_slot_bytes)
      f.runs = 0, f.why = "must fit one point-to-point slot (NCCL_P2P_NVL_CHUNKSIZE)";
  }
  return f;
}
