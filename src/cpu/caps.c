/* SPDX-License-Identifier: BSD-3-Clause */
/* The CPU engine's capability and cost table (core/plan.h). It runs one protocol, Simple: a
 * slot's sequence number is stored after its data with a release store, and a receiver that
 * sees it with an acquire load sees the data. LL and LL128 put a flag beside every 8 or 120 bytes
 * of data so that a GPU can skip a memory fence between data and flag; host memory has no such
 * fence to skip (a store-release is an ordinary store on x86 and one barrier on Arm), and a small
 * message already travels in the slot's cell, one cache line with its sequence number, which is
 * what LL buys a GPU. So NCCL_PROTO without Simple is refused on this engine (core/plan.c says
 * so), never run as Simple under another name.
 *
 * Figures: per-step latency and per-rank bandwidth, fitted to all_reduce_perf on 2 and 4
 * processes of a 64-core Xeon host (FITTED; one-shot as fast as the ring at 8 KB, twice as slow
 * at 32 KB); core/tune.c shapes them per algorithm
 * (its factors say where they were measured). The network path (TCP between hosts, or
 * NCCL_SHM_DISABLE=1) has no figures of its own yet: estimate, not measured, the host-memory
 * ones with a TCP round trip through the progress thread per step (NET_EST); but its one-shot
 * moves each peer's whole buffer as one message, unpipelined, and was measured against the ring
 * on 2 hosts (NET_ONE): with the estimate's bandwidth the model tied them where the ring was
 * already faster, so its bandwidth is halved. */
#include "core/algo.h"
#include "cpu/cpu.h"

#define ALL_COLLS                                                                                  \
  (1u << COLL_ALLREDUCE | 1u << COLL_BROADCAST | 1u << COLL_REDUCE | 1u << COLL_ALLGATHER |        \
   1u << COLL_REDUCESCATTER)
#define ROOTED_AR (1u << COLL_ALLREDUCE | 1u << COLL_BROADCAST | 1u << COLL_REDUCE)
#define AR        (1u << COLL_ALLREDUCE)
#define SHM       (1u << PLAN_PATH_SHM)
#define NET       (1u << PLAN_PATH_NET)
#define FITTED    "fitted to all_reduce_perf, 4 processes of a 64-core Xeon (core/tune.c)"
#define NET_EST   "estimate, not measured (host-memory bandwidth, 20 us per TCP step)"
#define NET_ONE                                                                                    \
  "estimate, its bandwidth halved; against the ring on 2 hosts (network namespaces joined by "     \
  "veth pairs, Socket, a 2-core machine; NET_AB_SIDES=\"Socket Socket,NCCL_ALGO=allreduce:ring\" " \
  "tools/bench/net-ab, medians of 5 rounds): 0.45-0.56x the ring's time up to 4 KB, 0.85x at 32 "  \
  "KB, 1.30x at 256 KB"

/* Ring first: on a tie the cost model keeps the earlier row. */
const struct plan_row cpu_caps[CPU_NCAPS] = {
    {ALL_COLLS, ALGO_RING, PROTO_SIMPLE, SHM, 0.4, 6.7, PLAN_CH_ONE, 0, 1 << 16, FITTED},
    {ROOTED_AR, ALGO_TREE, PROTO_SIMPLE, SHM, 0.4, 6.7, PLAN_CH_ONE, 0, 1 << 16, FITTED},
    {AR, ALGO_ONESHOT, PROTO_SIMPLE, SHM, 0.4, 6.7, PLAN_CH_ONE, 0, 1 << 16, FITTED},
    {AR, ALGO_TWOSHOT, PROTO_SIMPLE, SHM, 0.4, 6.7, PLAN_CH_ONE, 0, 1 << 16, FITTED},
    {ALL_COLLS, ALGO_RING, PROTO_SIMPLE, NET, 20, 6.7, PLAN_CH_ONE, 0, 1 << 16, NET_EST},
    {ROOTED_AR, ALGO_TREE, PROTO_SIMPLE, NET, 20, 6.7, PLAN_CH_ONE, 0, 1 << 16, NET_EST},
    {AR, ALGO_ONESHOT, PROTO_SIMPLE, NET, 20, 3.35, PLAN_CH_ONE, 0, 1 << 16, NET_ONE},
    {AR, ALGO_TWOSHOT, PROTO_SIMPLE, NET, 20, 6.7, PLAN_CH_ONE, 0, 1 << 16, NET_EST},
};
