/* SPDX-License-Identifier: BSD-3-Clause */
/* The plan (core/plan.h): NCCL_PROTO parsing, the choice of (algorithm, protocol, channels,
 * chunk) for every task of a group from the engine's table, and the TUNING log.
 *
 * The choice for one collective task (plan_decide):
 *   1. the engine's rows for the collective on the comm's path (comm->plan.path);
 *   2. those whose algorithm NCCL_ALGO allows, then whose protocol NCCL_PROTO allows: an empty
 *      set is refused with a sentence naming the variable that emptied it;
 *   3. those the engine can run for this task now (engine->plan_fit: buffers connected, hard size
 *      limits): an empty set is refused, saying why each could not run;
 *   4. a row with a measured crossover (plan_fit.crossover) is taken while the buffer is
 *      within it, the first in table order; else the cost model (core/tune.c, the row's figures)
 *      picks the cheapest row among those within their crossover (the first on a tie), or among
 *      all when every one is beyond its crossover (NCCL_ALGO/NCCL_PROTO left only those);
 *   5. channels and chunk from the row (enum plan_channels) and the comm's limits;
 *   6. with a tuner plugin (core/tuner.h): the rows that fit become NCCL's cost table
 *      ([algorithm][protocol] in NCCL's ids, microseconds, -1.0 where Monel cannot run the pair
 *      here; Monel's own OneShot and TwoShot have no id and are not in it). A table the plugin
 *      leaves as it was keeps Monel's choice; otherwise its cheapest entry, as NCCL picks it,
 *      is run, or refused with a sentence when Monel does not run that pair here. Its channel
 *      count replaces the row's within what the engine has; its chunk size is the plan's.
 * Point-to-point, AlltoAll(v), Gather and Scatter are outside NCCL_ALGO and NCCL_PROTO (NCCL's
 * lists cannot name them): their plan is Simple on the engine's point-to-point channels. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "core/plan_choose.h"
#include "core/tune.h"
#include "core/tuner.h"
#include "util/check.h"
#include "util/dtype.h"
#include "util/param.h"

static const char* const proto_names[PROTO_COUNT] = {"LL", "LL128", "Simple"};

const char* proto_name(enum proto_id p) {
  return (unsigned)p < PROTO_COUNT ? proto_names[p] : "unknown";
}

ncclResult_t proto_parse(const char* s, unsigned allowed[COLL_COUNT], char* err, size_t errlen) {
  static const struct algo_names nm = {"NCCL_PROTO", "a protocol", proto_names, PROTO_COUNT};
  return algo_list_parse(&nm, s, allowed, err, errlen);
}

/* NCCL_ALGO and NCCL_PROTO, parsed once per process. */
static struct {
  pthread_once_t once;
  ncclResult_t algo_res, proto_res;
  unsigned algos[COLL_COUNT], protos[COLL_COUNT];
  char algo_err[256], proto_err[256];
  unsigned char logged[COLL_COUNT][64]; /* (coll, log2 of bytes) already logged at INFO */
} cfg = {PTHREAD_ONCE_INIT};

static void load(void) {
  cfg.algo_res = algo_parse(param_str(PARAM_ALGO), cfg.algos, cfg.algo_err, sizeof cfg.algo_err);
  cfg.proto_res =
      proto_parse(param_str(PARAM_PROTO), cfg.protos, cfg.proto_err, sizeof cfg.proto_err);
}

int proto_allowed_any(enum proto_id p) {
  pthread_once(&cfg.once, load);
  if (cfg.proto_res != ncclSuccess) return 1; /* the plan refuses with the sentence */
  for (int c = 0; c < COLL_COUNT; c++)
    if (algo_coll_is_tunable((enum coll_kind)c) && (cfg.protos[c] >> p & 1u)) return 1;
  return 0;
}

static int row_applies(const struct plan_row* r, enum coll_kind coll, enum plan_path path) {
  return (r->colls >> coll & 1u) && (r->paths >> path & 1u);
}

unsigned plan_algos(const struct ncclComm* comm, enum coll_kind coll) {
  unsigned m = 0;
  if (!algo_coll_is_tunable(coll)) return 0;
  for (int i = 0; i < comm->engine->ncaps; i++)
    if (row_applies(&comm->engine->caps[i], coll, comm->plan.path))
      m |= 1u << comm->engine->caps[i].algo;
  return m;
}

/* "Ring/Simple, Tree/LL" for the rows of mask (bit i: rows[i]); algos_only: "Ring, Tree". */
static void row_words(const struct plan_in* in, uint64_t mask, int algos_only, char* out,
                      size_t len) {
  unsigned seen = 0;
  out[0] = '\0';
  for (int i = 0; i < in->nrows && i < 64; i++) {
    if (!(mask >> i & 1u)) continue;
    const struct plan_row* r = &in->rows[i];
    if (algos_only && (seen >> r->algo & 1u)) continue;
    seen |= 1u << r->algo;
    size_t at = strlen(out);
    if (algos_only)
      snprintf(out + at, len - at, "%s%s", at ? ", " : "", algo_name(r->algo));
    else
      snprintf(out + at, len - at, "%s%s/%s", at ? ", " : "", algo_name(r->algo),
               proto_name(r->proto));
  }
}

static const char* path_words(enum plan_path p) {
  return p == PLAN_PATH_PEER  ? "GPU peer memory"
         : p == PLAN_PATH_SHM ? "host shared memory"
                              : "the network";
}

static int ceil_div(size_t a, size_t b) {
  size_t q = b ? (a + b - 1) / b : 1;
  return q > 1u << 20 ? 1 << 20 : (int)q;
}

static int channels(const struct plan_row* r, const struct plan_comm* pc, enum coll_kind coll,
                    int nranks, size_t bytes) {
  switch (r->channels) {
  case PLAN_CH_BLOCKS: {
    /* A ring of AllGather or ReduceScatter moves n pieces; Broadcast and Reduce forward every
     * chunk n - 1 times, so they gain more from parallel chunks: one block per quarter of
     * MONEL_CHANNEL_BYTES (Broadcast of 128 KB-1 MB on 4 GPUs was measured faster so). */
    double total = (double)bytes, per = (double)pc->channel_bytes;
    if (coll == COLL_ALLGATHER || coll == COLL_REDUCESCATTER) total *= nranks;
    if (coll == COLL_BROADCAST || coll == COLL_REDUCE) per /= 4;
    if (per < 4096) per = 4096;
    struct tune_blocks_in b = {total,       pc->link_gbps,     pc->block_gbps,    per,
                               pc->cta_min, pc->nchannels_max, pc->cta_efficiency};
    return tune_blocks(&b);
  }
  case PLAN_CH_PARTS: {
    /* As many blocks as parts, within the comm's limits (a block takes several parts in turn). */
    int parts = ceil_div(bytes, r->chunk_bytes), grid;
    if (parts < 1) parts = 1;
    grid = parts;
    if (pc->cta_efficiency) grid = (grid + 1) / 2;
    if (grid < pc->cta_min) grid = pc->cta_min < parts ? pc->cta_min : parts;
    if (pc->cta_max > 0 && grid > pc->cta_max) grid = pc->cta_max;
    return grid;
  }
  case PLAN_CH_FIXED:
    return pc->p2p_channels > 0 ? pc->p2p_channels : 1;
  default:
    return 1;
  }
}

/* Steps 1 and 2: the candidate rows, or the refusal. */
static ncclResult_t candidates(const struct plan_in* in, enum coll_kind coll, uint64_t* out,
                               char* err, size_t errlen) {
  uint64_t declared = 0, by_algo = 0, by_proto = 0;
  for (int i = 0; i < in->nrows && i < 64; i++) {
    const struct plan_row* r = &in->rows[i];
    if (!row_applies(r, coll, in->pc->path)) continue;
    declared |= 1ull << i;
    if (!(in->algos >> r->algo & 1u)) continue;
    by_algo |= 1ull << i;
    if (in->protos >> r->proto & 1u) by_proto |= 1ull << i;
  }
  char has[256];
  if (declared == 0) {
    snprintf(err, errlen, "the %s engine has no way to run %s over %s", in->engine, coll_name(coll),
             path_words(in->pc->path));
    return ncclInternalError;
  }
  if (by_algo == 0) {
    row_words(in, declared, 1, has, sizeof has);
    snprintf(err, errlen,
             "NCCL_ALGO=\"%s\" leaves no algorithm for %s: Monel's %s engine runs it with %s only; "
             "allow one of them, or restrict other collectives only (e.g. \"allreduce:tree\")",
             in->algo_env, coll_name(coll), in->engine, has);
    return ncclInvalidUsage;
  }
  if (by_proto == 0) {
    const struct plan_row* first = NULL;
    for (int i = 0; i < in->nrows && i < 64 && first == NULL; i++)
      if (by_algo >> i & 1u) first = &in->rows[i];
    row_words(in, by_algo, 0, has, sizeof has);
    snprintf(err, errlen,
             "NCCL_PROTO=\"%s\" leaves no protocol for %s%s%s%s: Monel's %s engine runs it as %s "
             "there; allow one of those protocols (for this collective alone: \"%s:%s\")",
             in->proto_env, coll_name(coll),
             in->algo_env[0] ? " with the algorithms NCCL_ALGO=\"" : "", in->algo_env,
             in->algo_env[0] ? "\" allows" : "", in->engine, has, algo_coll_key(coll),
             proto_name(first->proto));
    return ncclInvalidUsage;
  }
  *out = by_proto;
  return ncclSuccess;
}

/* A row's predicted time, with the base latency a tuner plugin set in its constants. */
static double row_us(const struct plan_in* in, const struct plan_row* r, enum coll_kind coll,
                     double bytes) {
  double base = in->tune ? tuner_base_latency(in->comm, r->algo, r->proto) : -1;
  if (base < 0) return tune_row_us(r, coll, in->nranks, bytes);
  struct plan_row c = *r;
  c.alpha_us = base;
  return tune_row_us(&c, coll, in->nranks, bytes);
}

/* NCCL's pick in a cost table: the smallest entry that is not negative, the first on a tie in
 * (algorithm, protocol) order; 0 when none is left. */
static int table_pick(float table[TUNER_NALGO][TUNER_NPROTO], int* algo, int* proto) {
  int found = 0;
  for (int a = 0; a < TUNER_NALGO; a++)
    for (int p = 0; p < TUNER_NPROTO; p++)
      if (table[a][p] >= 0 && (!found || table[a][p] < table[*algo][*proto]))
        found = 1, *algo = a, *proto = p;
  return found;
}

/* Step 6: the tuner plugin's answer; *best becomes the row it chose (unchanged when it kept
 * the table). */
static ncclResult_t tuned_row(const struct plan_in* in, const struct task* t, uint64_t fits,
                              int* best, int* nch, int* tuned, char* err, size_t errlen) {
  enum coll_kind coll = t->coll;
  size_t bytes = t->count * dtype_size(t->dtype);
  float table[TUNER_NALGO][TUNER_NPROTO], before[TUNER_NALGO][TUNER_NPROTO];
  int at[TUNER_NALGO][TUNER_NPROTO], a = 0, p = 0;
  for (a = 0; a < TUNER_NALGO; a++)
    for (p = 0; p < TUNER_NPROTO; p++) table[a][p] = TUNER_IGNORE, at[a][p] = -1;
  for (int i = 0; i < in->nrows && i < 64; i++) {
    const struct plan_row* r = &in->rows[i];
    if (!(fits >> i & 1u) || r->algo >= TUNER_NALGO) continue;
    float us = (float)row_us(in, r, coll, (double)bytes);
    if (at[r->algo][r->proto] < 0 || us < table[r->algo][r->proto])
      table[r->algo][r->proto] = us, at[r->algo][r->proto] = i;
  }
  memcpy(before, table, sizeof before);
  /* NCCL counts AllGather and ReduceScatter by the whole output (input) */
  size_t nbytes = coll == COLL_ALLGATHER || coll == COLL_REDUCESCATTER ? bytes * in->nranks : bytes;
  NCCLCHECK(
      tuner_coll_info(in->comm, coll, nbytes, in->pipe_ops > 0 ? in->pipe_ops : 1, table, nch));
  *tuned = 1;
  if (memcmp(before, table, sizeof table) == 0) return ncclSuccess;
  if (!table_pick(table, &a, &p)) {
    snprintf(err, errlen,
             "the tuner plugin %s marked every entry of the cost table of %s of %zu bytes -1: "
             "nothing is left to run it with; fix the plugin's rules",
             tuner_name(in->comm), coll_name(coll), nbytes);
    return in->algo_env[0] || in->proto_env[0] ? ncclInvalidUsage : ncclInternalError;
  }
  if (at[a][p] < 0) {
    char runs[256];
    uint64_t mask = 0;
    for (int i = 0; i < in->nrows && i < 64; i++) mask |= (uint64_t)((fits >> i & 1u) != 0) << i;
    row_words(in, mask, 0, runs, sizeof runs);
    snprintf(err, errlen,
             "the tuner plugin %s chose %s/%s for %s of %zu bytes, which Monel's %s engine does "
             "not run here (it runs %s); change the plugin's rules or set NCCL_TUNER_PLUGIN=none",
             tuner_name(in->comm), algo_name((enum algo_id)a), proto_name((enum proto_id)p),
             coll_name(coll), nbytes, in->engine, runs);
    return ncclInvalidUsage;
  }
  *best = at[a][p];
  *tuned = 2;
  return ncclSuccess;
}

/* The plugin's channel count, within what the row's engine has. */
static int tuned_channels(const struct plan_row* r, const struct plan_comm* pc, int nch) {
  int cap = r->channels == PLAN_CH_ONE     ? 1
            : r->channels == PLAN_CH_FIXED ? (pc->p2p_channels > 0 ? pc->p2p_channels : 1)
            : pc->cta_max > 0              ? pc->cta_max
                                           : pc->nchannels_max;
  if (cap < 1) cap = 1;
  return nch < cap ? nch : cap;
}

ncclResult_t plan_decide(const struct plan_in* in, const struct task* t, struct plan_op* out,
                         char* err, size_t errlen) {
  enum coll_kind coll = t->coll;
  size_t bytes = t->count * dtype_size(t->dtype);
  memset(out, 0, sizeof *out);
  out->algo = ALGO_RING, out->proto = PROTO_SIMPLE, out->nchannels = 1;
  if (!algo_coll_is_tunable(coll)) {
    out->nchannels = in->pc->p2p_channels > 0 ? in->pc->p2p_channels : 1;
    return ncclSuccess;
  }
  uint64_t cand = 0, fits = 0, within = 0;
  NCCLCHECK(candidates(in, coll, &cand, err, errlen));
  struct plan_fit fit[64];
  char why[512] = "";
  for (int i = 0; i < in->nrows && i < 64; i++) {
    if (!(cand >> i & 1u)) continue;
    fit[i] = in->fit ? in->fit(in->comm, t, &in->rows[i]) : (struct plan_fit){1, 0, 0, NULL};
    if (!fit[i].runs) {
      size_t at = strlen(why);
      snprintf(why + at, sizeof why - at, "%s%s/%s %s", at ? "; " : "", algo_name(in->rows[i].algo),
               proto_name(in->rows[i].proto), fit[i].why ? fit[i].why : "cannot run it here");
      continue;
    }
    fits |= 1ull << i;
    if (!fit[i].crossover || (fit[i].crossover_bytes > 0 && bytes <= fit[i].crossover_bytes))
      within |= 1ull << i;
  }
  if (fits == 0) {
    char asked[320] = "";
    if (in->algo_env[0]) snprintf(asked, sizeof asked, " NCCL_ALGO=\"%s\"", in->algo_env);
    if (in->proto_env[0])
      snprintf(asked + strlen(asked), sizeof asked - strlen(asked), "%s NCCL_PROTO=\"%s\"",
               asked[0] ? " and" : "", in->proto_env);
    snprintf(err, errlen,
             "%s of %zu bytes cannot run on the %s engine%s%s: %s; allow another algorithm or "
             "protocol",
             coll_name(coll), bytes, in->engine, asked[0] ? " as" : "", asked, why);
    return ncclInvalidUsage;
  }
  int best = -1, locked = 0;
  double best_us = 0;
  for (int i = 0; i < in->nrows && i < 64 && best < 0; i++)
    if ((within >> i & 1u) && fit[i].crossover) best = i, locked = 1; /* measured */
  uint64_t pool = within ? within : fits;
  for (int i = 0; i < in->nrows && i < 64; i++) {
    if (!(pool >> i & 1u)) continue;
    double us = row_us(in, &in->rows[i], coll, (double)bytes);
    if (best == i) best_us = us;
    if (!locked && (best < 0 || us < best_us)) best = i, best_us = us;
  }
  int nch = 0;
  if (in->tune) NCCLCHECK(tuned_row(in, t, fits, &best, &nch, &out->tuned, err, errlen));
  const struct plan_row* r = &in->rows[best];
  out->algo = r->algo;
  out->proto = r->proto;
  out->nchannels =
      nch > 0 ? tuned_channels(r, in->pc, nch) : channels(r, in->pc, coll, in->nranks, bytes);
  out->chunk_bytes = r->chunk_bytes;
  out->est_us = row_us(in, r, coll, (double)bytes);
  if (in->tune && r->algo < TUNER_NALGO) { /* Monel's own algorithms have no NCCL id */
    size_t nbytes =
        coll == COLL_ALLGATHER || coll == COLL_REDUCESCATTER ? bytes * in->nranks : bytes;
    NCCLCHECK(tuner_chunk_size(in->comm, coll, nbytes, r->algo, r->proto, out->nchannels,
                               &out->chunk_bytes));
  }
  return ncclSuccess;
}

static int size_class(size_t bytes) {
  int k = 0;
  while (bytes > 1 && k < 63) bytes >>= 1, k++;
  return k;
}

static void fill_in(struct plan_in* in, const struct ncclComm* comm, enum coll_kind coll) {
  memset(in, 0, sizeof *in);
  in->rows = comm->engine->caps;
  in->nrows = comm->engine->ncaps;
  in->pc = &comm->plan;
  in->nranks = comm->nranks;
  in->algos = cfg.algos[coll];
  in->protos = cfg.protos[coll];
  in->algo_env = param_str(PARAM_ALGO);
  in->proto_env = param_str(PARAM_PROTO);
  in->engine = comm->engine->name;
  in->fit = comm->engine->plan_fit;
  in->comm = comm;
}

/* The options of one call (ncclCollConfig_t through api/coll_config.c): its algorithm selection
 * replaces NCCL_ALGO, its block limits and policy narrow the comm's. */
static void per_call_options(struct plan_in* in, struct plan_comm* pc, const struct task* t) {
  if (t->algo_mask) {
    in->algos = t->algo_mask;
    in->algo_env = "(the call's algorithm selection)";
  }
  *pc = *in->pc;
  struct tune_cta_limits l = {pc->cta_min, pc->cta_max > 0 ? pc->cta_max : pc->nchannels_max,
                              pc->cta_efficiency ? NCCL_CTA_POLICY_EFFICIENCY : 0};
  l = tune_task_cta(l, t);
  pc->cta_min = l.min;
  pc->cta_max = l.max;
  if (pc->nchannels_max > l.max) pc->nchannels_max = l.max;
  pc->cta_efficiency = (l.policy & NCCL_CTA_POLICY_EFFICIENCY) != 0;
  in->pc = pc;
}

/* A call's own options (the nccl*Config calls: task algo_mask, cta_*) replace NCCL_ALGO and
 * narrow the comm's block limits for it alone; such a plan is not cached. */
static int per_call_of(const struct task* t) {
  return t->algo_mask || t->cta_min || t->cta_max || t->cta_policy;
}

/* A task that plan_tasks did not find in the comm's cache (comm->plan_last). */
static ncclResult_t plan_one(struct ncclComm* comm, struct task* t, int pipe_ops) {
  pthread_once(&cfg.once, load);
  size_t bytes = t->count * dtype_size(t->dtype);
  int tunable = algo_coll_is_tunable(t->coll);
  int per_call = per_call_of(t);
  const char* var = cfg.algo_res != ncclSuccess ? "NCCL_ALGO" : "NCCL_PROTO";
  if (tunable && ((cfg.algo_res != ncclSuccess && !t->algo_mask) || cfg.proto_res != ncclSuccess)) {
    WARN("%s #%llu on rank %d: %s=\"%s\" cannot be used: %s", coll_name(t->coll),
         (unsigned long long)t->seq, comm->rank, var,
         param_str(cfg.algo_res != ncclSuccess ? PARAM_ALGO : PARAM_PROTO),
         cfg.algo_res != ncclSuccess ? cfg.algo_err : cfg.proto_err);
    return ncclInvalidUsage;
  }
  struct plan_in in;
  char err[1024];
  struct plan_comm pc;
  fill_in(&in, comm, t->coll);
  in.tune = comm->tuner != NULL;
  in.pipe_ops = pipe_ops;
  if (per_call) per_call_options(&in, &pc, t);
  ncclResult_t res = plan_decide(&in, t, &t->plan, err, sizeof err);
  if (res != ncclSuccess) {
    WARN("%s #%llu on rank %d: %s", coll_name(t->coll), (unsigned long long)t->seq, comm->rank,
         err);
    return res;
  }
  if (!per_call && !in.tune) { /* a tuner is asked for every operation, as NCCL asks it */
    comm->plan_last[t->coll].key = bytes + 1;
    comm->plan_last[t->coll].op = t->plan;
  }
  int k = size_class(bytes);
  if (tunable && LOG_ENABLED(LOG_INFO) &&
      !__atomic_exchange_n(&cfg.logged[t->coll][k], 1, __ATOMIC_RELAXED))
    INFO(LOG_TUNING,
         "%s of %zu bytes (sizes 2^%d..2^%d) on %d ranks: %s/%s, %d channel%s, estimated %.1f "
         "us%s%s%s",
         coll_name(t->coll), bytes, k, k + 1, comm->nranks, algo_name(t->plan.algo),
         proto_name(t->plan.proto), t->plan.nchannels, t->plan.nchannels == 1 ? "" : "s",
         t->plan.est_us, t->plan.tuned ? ", tuner plugin " : "",
         t->plan.tuned ? tuner_name(comm) : "",
         t->plan.tuned == 2 ? " chose it"
         : t->plan.tuned    ? " kept Monel's choice"
                            : "");
  return ncclSuccess;
}

/* Every operation comes here: a task of the size and collective of the comm's previous one
 * takes its plan without a call (plan_one and plan_log_table load NCCL_ALGO/NCCL_PROTO). */
ncclResult_t plan_tasks(struct ncclComm* comm, struct task* tasks, int ntasks) {
  if (!comm->plan.printed) plan_log_table(comm);
  int colls = 0; /* the tuner's numPipeOps: the group's collectives (NCCL divides by channels) */
  for (int i = 0; i < ntasks; i++) colls += algo_coll_is_tunable(tasks[i].coll);
  for (int i = 0; i < ntasks; i++) {
    struct task* t = &tasks[i];
    if (comm->plan_last[t->coll].key == t->count * dtype_size(t->dtype) + 1 && !per_call_of(t))
      t->plan = comm->plan_last[t->coll].op;
    else
      NCCLCHECK(plan_one(comm, t, colls));
  }
  return ncclSuccess;
}

double plan_estimate_us(struct ncclComm* comm, const struct task* t) {
  pthread_once(&cfg.once, load);
  struct plan_in in;
  struct plan_op op;
  char err[1024];
  double bytes = (double)t->count * dtype_size(t->dtype);
  fill_in(&in, comm, t->coll);
  if (algo_coll_is_tunable(t->coll) && cfg.algo_res == ncclSuccess &&
      cfg.proto_res == ncclSuccess && plan_decide(&in, t, &op, err, sizeof err) == ncclSuccess)
    return op.est_us;
  /* Point-to-point and refused operations: the ring's figures of the comm's path. */
  for (int i = 0; i < in.nrows; i++)
    if (in.rows[i].paths >> comm->plan.path & 1u) {
      struct plan_row r = in.rows[i];
      r.algo = ALGO_RING;
      return tune_row_us(&r, t->coll, comm->nranks, bytes);
    }
  return 0;
}

/* One line per collective: every row of the comm's path with its figures and its predicted time
 * at 8 B, 1 MB and 128 MB; "off" marks rows NCCL_ALGO or NCCL_PROTO exclude. */
void plan_log_table(struct ncclComm* comm) {
  comm->plan.printed = 1;
  pthread_once(&cfg.once, load);
  if (comm->rank != 0 || !LOG_ENABLED(LOG_INFO)) return;
  const struct engine* e = comm->engine;
  INFO(LOG_TUNING,
       "comm %p nranks %d engine %s path %s: algorithm/protocol per-step latency (us), bandwidth "
       "(GB/s), predicted us at 8 B / 1 MB / 128 MB; off: excluded by NCCL_ALGO or NCCL_PROTO",
       (void*)comm, comm->nranks, e->name, path_words(comm->plan.path));
  static const enum coll_kind colls[] = {COLL_ALLREDUCE, COLL_BROADCAST, COLL_REDUCE,
                                         COLL_ALLGATHER, COLL_REDUCESCATTER};
  for (size_t c = 0; c < sizeof colls / sizeof colls[0]; c++) {
    char line[1024] = "";
    for (int i = 0; i < e->ncaps; i++) {
      const struct plan_row* r = &e->caps[i];
      if (!row_applies(r, colls[c], comm->plan.path)) continue;
      int on = cfg.algo_res == ncclSuccess && cfg.proto_res == ncclSuccess &&
               (cfg.algos[colls[c]] >> r->algo & 1u) && (cfg.protos[colls[c]] >> r->proto & 1u);
      size_t at = strlen(line);
      snprintf(line + at, sizeof line - at, "%s%s/%s %.2f %.1f %.1f/%.1f/%.0f%s", at ? " | " : "",
               algo_name(r->algo), proto_name(r->proto), r->alpha_us, r->gbps,
               tune_row_us(r, colls[c], comm->nranks, 8),
               tune_row_us(r, colls[c], comm->nranks, 1 << 20),
               tune_row_us(r, colls[c], comm->nranks, 128 << 20), on ? "" : " off");
    }
    INFO(LOG_TUNING, "  %-13s %s", coll_name(colls[c]), line);
  }
  /* where each row's figures come from, once per source */
  for (int i = 0; i < e->ncaps; i++) {
    const struct plan_row* r = &e->caps[i];
    int seen = 0;
    if (!(r->paths >> comm->plan.path & 1u)) continue;
    for (int j = 0; j < i && !seen; j++)
      seen = (e->caps[j].paths >> comm->plan.path & 1u) && e->caps[j].source == r->source;
    if (seen) continue;
    char rows[256] = "";
    for (int j = i; j < e->ncaps; j++) {
      const struct plan_row* q = &e->caps[j];
      if (!(q->paths >> comm->plan.path & 1u) || q->source != r->source) continue;
      size_t at = strlen(rows);
      snprintf(rows + at, sizeof rows - at, "%s%s/%s", at ? ", " : "", algo_name(q->algo),
               proto_name(q->proto));
    }
    INFO(LOG_TUNING, "  figures of %s: %s", rows, r->source);
  }
}
