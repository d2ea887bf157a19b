/* SPDX-License-Identifier: BSD-3-Clause */
/* Alpha-beta estimates per collective and algorithm, from the figures of one row of an engine's
 * table (core/plan.h; the rows say where their figures were measured):
 *   steps * alpha + bytes_moved_per_rank / bandwidth + pipeline fill.
 * Ring: 2(n-1) steps for AllReduce (n-1 for the others), each link carrying 2(n-1)/n of the
 * buffer. Tree (algo/tree.h): 2h steps for AllReduce (h for Broadcast and Reduce) with
 * h = floor(log2(n-1)) + 1, an inner node moving the whole buffer up and down. Both pipelines
 * fill with one chunk per step before the bandwidth term applies. One-shot (algo/oneshot.h): one
 * step, (n-1) copies of the buffer per rank. Two-shot (algo/twoshot.h): two steps, the ring's
 * volume, every piece through one copy.
 * The factors below shape the algorithms; the rows' alpha and bandwidth scale them. */
#include <math.h>
#include "algo/tree.h"
#include "core/algo.h"
#include "core/tune.h"
#include "util/dtype.h"

/* One-shot moves (n-1) copies of the buffer, each written by the sender and folded by the
 * receiver. */
#define ONESHOT_COPY_FACTOR 1.75
/* An inner tree node folds two children and feeds two: measured 1.4x the ring's time per byte
 * on 4 ranks from 128 KB up; 1.5 keeps the ring for every size where the tree lost. */
#define TREE_COPY_FACTOR 1.5
/* Two-shot pieces go through one FIFO copy each, unpipelined: 2.05x the ring's time per byte
 * moved puts the crossover to the ring at 32-64 KB on 4 ranks and 128-256 KB on 8, as measured
 * on a 16-core Xeon host. */
#define TWOSHOT_COPY_FACTOR 2.05

static double min_d(double a, double b) {
  return a < b ? a : b;
}

struct figures {
  double alpha_us; /* per step */
  double gbps;     /* per rank, GB/s */
  double chunk;    /* bytes a step moves once a pipeline runs */
};

static double ring_us(const struct figures* f, enum coll_kind coll, double n, double bytes) {
  double steps = 0, moved = 0, piece = 0;
  switch (coll) {
  case COLL_ALLREDUCE:
    steps = 2 * (n - 1), moved = 2 * (n - 1) / n * bytes, piece = min_d(bytes / n, f->chunk);
    break;
  case COLL_REDUCESCATTER:
  case COLL_ALLGATHER:
    steps = n - 1, moved = (n - 1) * bytes, piece = min_d(bytes, f->chunk);
    break;
  case COLL_BROADCAST:
  case COLL_REDUCE:
    steps = n - 1, moved = bytes, piece = min_d(bytes, f->chunk);
    break;
  case COLL_ALLTOALL:
  case COLL_GATHER:
  case COLL_SCATTER:
    steps = n - 1, moved = (n - 1) * bytes;
    break;
  default:
    steps = 1, moved = bytes;
    break;
  }
  double fill = steps > 1 ? (steps - 1) * piece : 0;
  return steps * f->alpha_us + (moved + fill) / (f->gbps * 1e3);
}

static double tree_us(const struct figures* f, enum coll_kind coll, double n, double bytes) {
  double h = tree_height((int)n), steps = coll == COLL_ALLREDUCE ? 2 * h : h;
  double moved = TREE_COPY_FACTOR * (coll == COLL_ALLREDUCE ? 2 * bytes : bytes);
  double fill = (steps - 1) * min_d(bytes / 2, f->chunk);
  return steps * f->alpha_us + (moved + fill) / (f->gbps * 1e3);
}

/* Every rank sends the buffer to every other and folds all n of them: one step. The n - 1
 * readers of one buffer contend: each further rank adds a quarter to the time per byte (on the
 * 16-core host, the one-shot's time per byte was 1.6x the model's on 4 ranks and 3x on 8). */
static double oneshot_us(const struct figures* f, double n, double bytes) {
  double contention = 1 + (n - 2) / 4;
  return f->alpha_us + ONESHOT_COPY_FACTOR * contention * (n - 1) * bytes / (f->gbps * 1e3);
}

/* Pieces to every peer and back: two steps, 2(n-1)/n of the buffer each way per rank. */
static double twoshot_us(const struct figures* f, double n, double bytes) {
  return 2 * f->alpha_us + TWOSHOT_COPY_FACTOR * 2 * (n - 1) / n * bytes / (f->gbps * 1e3);
}

/* log2(p) rounds (p the largest power of two <= n; AllReduce takes 2 more where n is not one),
 * each a trip with one peer: AllReduce moves the whole buffer every round, AllGather doubles
 * what it moves, (n-1) x bytes in all. */
static double doubling_us(const struct figures* f, enum coll_kind coll, double n, double bytes) {
  int p = 1, rounds = 0;
  while (2 * p <= (int)n) p *= 2, rounds++;
  if (coll == COLL_ALLGATHER) return rounds * f->alpha_us + (n - 1) * bytes / (f->gbps * 1e3);
  if (p != (int)n) rounds += 2;
  return rounds * (f->alpha_us + bytes / (f->gbps * 1e3));
}

double tune_row_us(const struct plan_row* row, enum coll_kind coll, int nranks, double bytes) {
  struct figures f = {row->alpha_us, row->gbps > 0 ? row->gbps : 1, (double)row->pipe_bytes};
  double n = nranks;
  if (f.chunk <= 0) f.chunk = 1 << 16;
  if (nranks <= 1) return bytes / (f.gbps * 1e3);
  switch (row->algo) {
  case ALGO_TREE:
    return tree_us(&f, coll, n, bytes);
  case ALGO_ONESHOT:
    return oneshot_us(&f, n, bytes);
  case ALGO_TWOSHOT:
    return twoshot_us(&f, n, bytes);
  case ALGO_RECDOUBLING:
    return doubling_us(&f, coll, n, bytes);
  default:
    return ring_us(&f, coll, n, bytes);
  }
}

/* Thread blocks of a GPU kernel (tune_blocks). A block streams its share of the data through a
 * FIFO at about in->block_gbps, so ceil(link / block) blocks fill the link; fewer blocks leave
 * bandwidth unused, more only take SMs from the user's kernels. A block also needs enough data
 * (in->block_bytes) to hide its per-step latency: a small transfer gets one block per that many
 * bytes. The efficiency policy takes half of that (at least one). The limits come last. */
int tune_blocks(const struct tune_blocks_in* in) {
  double link = in->link_gbps > 0 ? in->link_gbps : 1;
  double per_block = in->block_gbps > 0 ? in->block_gbps : 1;
  double fill = ceil(link / per_block);
  double by_size = in->block_bytes > 0 ? ceil(in->bytes / in->block_bytes) : fill;
  double want = min_d(fill, by_size);
  if (in->efficiency) want = ceil(want / 2);
  int lo = in->min > 0 ? in->min : 1, hi = in->max > 0 ? in->max : TUNE_MAX_BLOCKS;
  if (hi > TUNE_MAX_BLOCKS) hi = TUNE_MAX_BLOCKS;
  if (lo > hi) lo = hi;
  if (want < lo) return lo;
  if (want > hi) return hi;
  return (int)want;
}

static int clamp_blocks(int64_t v) {
  return v < 1 ? 1 : v > TUNE_MAX_BLOCKS ? TUNE_MAX_BLOCKS : (int)v;
}

/* As NCCL does, an environment variable wins over the config field, which wins over the
 * older NCCL_MIN/MAX_NCHANNELS; a minimum above the maximum is lowered to it. */
struct tune_cta_limits tune_cta_limits(int64_t env_min, int64_t env_max, const ncclConfig_t* cfg,
                                       int64_t nch_min, int64_t nch_max) {
  struct tune_cta_limits l = {1, TUNE_MAX_BLOCKS, NCCL_CTA_POLICY_DEFAULT};
  if (env_max > 0)
    l.max = clamp_blocks(env_max);
  else if (cfg != NULL && cfg->maxCTAs != NCCL_CONFIG_UNDEF_INT && cfg->maxCTAs > 0)
    l.max = clamp_blocks(cfg->maxCTAs);
  else if (nch_max > 0)
    l.max = clamp_blocks(nch_max);
  if (env_min > 0)
    l.min = clamp_blocks(env_min);
  else if (cfg != NULL && cfg->minCTAs != NCCL_CONFIG_UNDEF_INT && cfg->minCTAs > 0)
    l.min = clamp_blocks(cfg->minCTAs);
  else if (nch_min > 0)
    l.min = clamp_blocks(nch_min);
  if (l.min > l.max) l.min = l.max;
  if (cfg != NULL && cfg->CTAPolicy != NCCL_CONFIG_UNDEF_INT) l.policy = cfg->CTAPolicy;
  return l;
}

int tune_ce_wanted(const struct tune_ce_in* in) {
  if (in->mode == TUNE_CE_OFF || (!in->usable && !in->forced)) return 0;
  int always = in->forced || in->mode == TUNE_CE_ALL;
  if (in->bytes == 0) return !in->captured && always;
  /* Rounds of the staging protocol; a comm of one rank copies to itself in one. */
  size_t rounds = in->usable && in->region > 0 ? (in->bytes + in->region - 1) / in->region : 1;
  if (rounds > (in->captured ? 1 : in->max_rounds)) return 0;
  return always || in->bytes >= in->min_bytes;
}
