/* SPDX-License-Identifier: BSD-3-Clause */
/* The plan: for every operation of a group, one place in core (core/plan.c) decides the
 * algorithm, the protocol, the channels (thread blocks on the GPU) and the chunk size, from the
 * engine's capability and cost table (struct engine.caps). NCCL_ALGO / NCCL_PROTO restrict the
 * candidates or the operation is refused (ncclInvalidUsage with a sentence); they are never
 * silently replaced. Engines execute a task's plan (task.plan); they do not choose.
 *
 * This header holds the types only (core/task.h includes it); the functions are in
 * core/plan_choose.h. */
#ifndef MONEL_CORE_PLAN_H
#define MONEL_CORE_PLAN_H
#include <stddef.h>

/* NCCL's algorithm numbering first (NCCL_ALGO_TREE = 0, RING = 1, ...), then Monel's own. */
enum algo_id {
  ALGO_TREE,
  ALGO_RING,
  ALGO_COLLNET_DIRECT,
  ALGO_COLLNET_CHAIN,
  ALGO_NVLS,
  ALGO_NVLS_TREE,
  ALGO_PAT,
  ALGO_ONESHOT, /* Monel's own (algo/oneshot.h): AllReduce of small buffers in one step */
  ALGO_TWOSHOT, /* Monel's own (algo/twoshot.h): AllReduce in two steps, pieces straight to peers */
  ALGO_RECDOUBLING, /* Monel's own (algo/doubling.h): log2(n) rounds, each with one peer */
  ALGO_COUNT
};

/* NCCL's protocol numbering (NCCL_PROTO_LL = 0, LL128 = 1, SIMPLE = 2). */
enum proto_id { PROTO_LL, PROTO_LL128, PROTO_SIMPLE, PROTO_COUNT };

struct plan_op {
  enum algo_id algo;   /* ALGO_RING, ALGO_TREE, ALGO_ONESHOT, ... */
  enum proto_id proto; /* how a slot is laid out, waited on and published */
  int nchannels;       /* channels (GPU: thread blocks per peer path); >= 1 */
  size_t chunk_bytes;  /* bytes one step of the schedule moves per channel; 0: the engine's own */
  double est_us;       /* the cost model's prediction for the chosen pair */
  int tuned;           /* a tuner plugin: 1 it kept Monel's choice, 2 it chose the pair */
};

/* The slowest kind of link between two ranks of a comm: the figures of a table row apply to one
 * of them. */
enum plan_path {
  PLAN_PATH_PEER, /* GPU memory of a peer GPU (NVLink or PCIe peer access, CUDA IPC) */
  PLAN_PATH_SHM,  /* host memory shared by the ranks of a host */
  PLAN_PATH_NET,  /* a network connection between hosts (or forced on one host) */
  PLAN_PATH_COUNT
};

/* How the plan sizes the channels of a row's operation. */
enum plan_channels {
  PLAN_CH_ONE,    /* one (the CPU engine: the calling thread) */
  PLAN_CH_BLOCKS, /* the fewest thread blocks that fill the link (tune_blocks, core/tune.h) */
  PLAN_CH_PARTS,  /* one block per chunk_bytes of the buffer, within the comm's limits */
  PLAN_CH_FIXED   /* the comm's point-to-point channels per peer (plan_comm.p2p_channels) */
};

/* One row of an engine's capability and cost table: the engine runs algorithm x protocol for
 * the collectives in colls (bit 1 << COLL_*) on the paths in paths (bit 1 << PLAN_PATH_*), at
 * alpha_us per step and gbps per rank (the cost model in core/tune.c applies its algorithm's
 * step count and volume). source says where the figures were measured ("estimate, not
 * measured" when they were not). */
struct plan_row {
  unsigned colls;
  enum algo_id algo;
  enum proto_id proto;
  unsigned paths;
  double alpha_us;
  double gbps;
  enum plan_channels channels;
  size_t chunk_bytes; /* PLAN_CH_PARTS: bytes per block; else what plan_op.chunk_bytes gets */
  size_t pipe_bytes;  /* the model's pipeline piece (its fill term); 0: 64 KB */
  const char* source;
};

/* What an engine tells the plan about a comm at comm_init (struct ncclComm.plan). */
struct plan_comm {
  enum plan_path path;  /* the comm's slowest link */
  int cta_min, cta_max; /* thread blocks per kernel (tune_cta_limits) */
  int cta_efficiency;   /* config.CTAPolicy = NCCL_CTA_POLICY_EFFICIENCY */
  int nchannels_max;    /* channels with FIFOs (PLAN_CH_BLOCKS' upper bound) */
  int p2p_channels;     /* PLAN_CH_FIXED */
  double link_gbps;     /* the block model's figures (core/tune.h) */
  double block_gbps;
  size_t channel_bytes; /* MONEL_CHANNEL_BYTES (MONEL_NET_CHANNEL_BYTES across the network) */
  int printed;          /* the TUNING table was logged */
};

/* What an engine says about running one row for one task on this comm now (struct engine
 * plan_fit): runs = 0 when it cannot (its buffers are not connected, the buffer exceeds what the
 * path holds: hard limits); crossover: crossover_bytes is a measured crossover, below which this
 * row is taken before the cost model is asked, and above which it is left unless
 * NCCL_ALGO/NCCL_PROTO leave nothing else (crossover_bytes 0: only then). */
struct plan_fit {
  int runs;
  int crossover; /* crossover_bytes applies */
  size_t crossover_bytes;
  const char* why; /* runs = 0: a sentence fragment saying why (for the refusal) */
};

#endif
