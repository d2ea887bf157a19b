/* SPDX-License-Identifier: BSD-3-Clause */
/* The cost model: predicted time of an operation from its size, the rank count and the figures
 * of a row of the engine's table (alpha-beta), for the plan (core/plan.c); and the GPU engine's
 * thread-block and copy-engine models. */
#ifndef MONEL_CORE_TUNE_H
#define MONEL_CORE_TUNE_H
#include "core/algo.h"
#include "core/comm.h"
/* Predicted microseconds of collective coll of `bytes` (the count argument's bytes) on nranks
 * ranks with the figures of one table row and its algorithm's step count and volume. Pure. */
double tune_row_us(const struct plan_row* row, enum coll_kind coll, int nranks, double bytes);

/* Thread blocks of one GPU kernel: the fewest that reach the link's bandwidth for `bytes`
 * (tune.c explains the model), within [min, max] (0: no limit below TUNE_MAX_BLOCKS). The
 * figures are parameters (MONEL_LINK_GBPS, MONEL_BLOCK_GBPS, MONEL_CHANNEL_BYTES) because they
 * depend on the GPU and the link: they must be measured. Pure; unit-tested. */
#define TUNE_MAX_BLOCKS 64
struct tune_blocks_in {
  double bytes;       /* what the kernel moves over its busiest link */
  double link_gbps;   /* that link's bandwidth per direction, GB/s (a share of it per peer) */
  double block_gbps;  /* what one block moves, GB/s */
  double block_bytes; /* bytes a block must have to be worth its own */
  int min, max;       /* the comm's limits (tune_cta_limits) */
  int efficiency;     /* config.CTAPolicy = NCCL_CTA_POLICY_EFFICIENCY: half the blocks */
};
int tune_blocks(const struct tune_blocks_in* in);

/* A comm's block limits and policy from NCCL_MIN_CTAS / NCCL_MAX_CTAS (env_*, <= 0: unset),
 * config.minCTAs / maxCTAs / CTAPolicy (cfg may be NULL) and NCCL_MIN/MAX_NCHANNELS (nch_*). */
struct tune_cta_limits {
  int min, max; /* 1 <= min <= max <= TUNE_MAX_BLOCKS */
  int policy;   /* NCCL_CTA_POLICY_* */
};
struct tune_cta_limits tune_cta_limits(int64_t env_min, int64_t env_max, const ncclConfig_t* cfg,
                                       int64_t nch_min, int64_t nch_max);
/* The limits of one operation: the comm's, narrowed by the call's own (task cta_*, set by the
 * nccl*Config calls; 0 keeps the comm's). */
static inline struct tune_cta_limits tune_task_cta(struct tune_cta_limits l, const struct task* t) {
  if (t->cta_max > 0 && t->cta_max < l.max) l.max = t->cta_max;
  if (t->cta_min > 0) l.min = t->cta_min < l.max ? t->cta_min : l.max;
  if (t->cta_policy) l.policy = t->cta_policy - 1;
  return l;
}
/* Whether one operation takes the GPU copy-engine path (gpu/ce.c), from what every rank knows
 * alike. Pure; unit-tested. */
enum tune_ce_mode { TUNE_CE_OFF, TUNE_CE_TUNED, TUNE_CE_ALL }; /* TUNED: from min_bytes up */
struct tune_ce_in {
  enum tune_ce_mode mode;
  int forced;        /* MONEL_COPY_ENGINE=1 */
  int usable;        /* the comm's path is set up (else a forced one fails in gpu_ce_run) */
  size_t bytes;      /* per peer, known alike on every rank; 0: not known alike (Send/Recv) */
  size_t region;     /* staging bytes per pair and round; 0: one rank, nothing staged */
  int captured;      /* the stream is being captured into a CUDA graph */
  size_t max_rounds; /* rounds allowed outside a graph (inside: one) */
  size_t min_bytes;  /* MONEL_CE_MIN_BYTES */
};
int tune_ce_wanted(const struct tune_ce_in* in);
#endif
