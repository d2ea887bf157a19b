/* SPDX-License-Identifier: BSD-3-Clause */
/* Tuner plugins (core/tuner.h). What each version receives follows NCCL's adapters: v2 gets the
 * CollNet/NVLS support flags read from the table and answers with one pair, which becomes a 0.0
 * entry; v3 gets the table without regBuff; v4 with it; v5+ also the comm's id, NVL domains and
 * the cost constants; v6+ may give the chunk size. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/tuner.h"
#include "transport/net.h"
#include "util/check.h"
#include "util/param.h"
#include "util/plugin_lib.h"

static const char* const symbols[] = {"ncclTunerPlugin_v7", "ncclTunerPlugin_v6",
                                      "ncclTunerPlugin_v5", "ncclTunerPlugin_v4",
                                      "ncclTunerPlugin_v3", "ncclTunerPlugin_v2"};

/* The process's plugin: found once, kept for the life of the process (NCCL in practice keeps it
 * too); a failure to find one is remembered. */
static struct {
  pthread_mutex_t lock;
  int tried;
  void* lib;
  int version; /* 0: none */
  const void* table;
  char used[600];
} plug = {.lock = PTHREAD_MUTEX_INITIALIZER};

struct tuner_comm {
  void* ctx;
  double base_lat[TUNER_NALGO][TUNER_NPROTO]; /* < 0: Monel's own */
};

static const char* plug_name(void) {
  const char* n = ((const struct tuner_v2*)plug.table)->name;
  return n ? n : "(unnamed)";
}

static int find_symbol(void* lib) {
  for (int i = 0; i < 6; i++) {
    const void* t = dlsym(lib, symbols[i]);
    if (t != NULL) {
      plug.table = t;
      return 7 - i;
    }
  }
  return 0;
}

/* The library by NCCL's rules, then the net plugin's; logs what it found or why nothing. */
static void load(void) {
  const char* spec = param_str(PARAM_TUNER_PLUGIN);
  char why[1200];
  plug.tried = 1;
  if (plugin_lib_is_none(spec)) {
    INFO(LOG_INIT | LOG_TUNING, "TUNER/Plugin: NCCL_TUNER_PLUGIN=none: no tuner plugin");
    return;
  }
  int from_net = 0;
  void* lib = plugin_lib_find(spec, "libnccl-tuner.so", "libnccl-tuner-", net_plugin_lib(),
                              plug.used, sizeof plug.used, why, sizeof why, &from_net);
  if (lib == NULL) {
    INFO(LOG_INIT | LOG_TUNING, "TUNER/Plugin: no tuner plugin loaded (%s); Monel's own plan", why);
    return;
  }
  plug.version = find_symbol(lib);
  if (plug.version == 0) {
    if (from_net)
      INFO(LOG_INIT | LOG_TUNING,
           "TUNER/Plugin: no tuner plugin loaded (%s; the net plugin %s has no tuner); Monel's "
           "own plan",
           why, plug.used);
    else
      INFO(LOG_INIT | LOG_TUNING,
           "TUNER/Plugin: %s exports none of ncclTunerPlugin_v7..v2: unsupported, ignored; "
           "Monel's own plan",
           plug.used);
    dlclose(lib);
    return;
  }
  plug.lib = lib;
  INFO(LOG_INIT | LOG_TUNING, "TUNER/Plugin: loaded %s (%s%s, version v%d)", plug_name(), plug.used,
       from_net ? ", inside the net plugin" : "", plug.version);
}

/* nNodes and the ranks per node, from the peers' host identities. */
static void shape(const struct ncclComm* comm, int* nnodes, int* min_rpn, int* max_rpn) {
  int n = comm->nranks, hosts = 0, lo = n, hi = 0;
  for (int r = 0; r < n; r++) {
    int first = 1, count = 0;
    for (int q = 0; q < n; q++) {
      if (comm->peers[q].host_hash != comm->peers[r].host_hash) continue;
      if (q < r) first = 0;
      count++;
    }
    if (!first) continue;
    hosts++;
    lo = count < lo ? count : lo;
    hi = count > hi ? count : hi;
  }
  *nnodes = hosts, *min_rpn = lo, *max_rpn = hi;
}

/* The constants NCCL would fill, in Monel's terms: base latencies are the per-step latency of
 * the engine's rows for the comm's path (the one figure of Monel's model a plugin's edit can
 * reach); hardware latencies 0 (folded into the rows' figure); bandwidth rows the engine's
 * per-rank bandwidth in every compute-capability and scale cell. */
static void consts_fill(const struct ncclComm* comm, double* base, double* bws, int nbw) {
  for (int i = 0; i < TUNER_NALGO * TUNER_NPROTO; i++) base[i] = 0;
  for (int i = 0; i < comm->engine->ncaps; i++) {
    const struct plan_row* r = &comm->engine->caps[i];
    if (!(r->paths >> comm->plan.path & 1u) || r->algo >= TUNER_NALGO) continue;
    base[r->algo * TUNER_NPROTO + r->proto] = r->alpha_us;
    for (int k = 0; k < nbw; k++) bws[k] = r->gbps;
  }
}

static ncclResult_t call_init(struct ncclComm* comm, struct tuner_comm* tc) {
  int nnodes, lo, hi;
  shape(comm, &nnodes, &lo, &hi);
  if (plug.version <= 4) {
    const struct tuner_v2* p = plug.table;
    return p->init((size_t)comm->nranks, (size_t)nnodes, plugin_lib_log, &tc->ctx);
  }
  const struct tuner_v7* p = plug.table;
  struct tuner_nvl_v5 nvl = {nnodes, lo, hi};
  struct tuner_consts_v7 c7;
  struct tuner_consts_v5 c5;
  double* base = plug.version == 7 ? &c7.base_lat[0][0] : &c5.base_lat[0][0];
  memset(&c7, 0, sizeof c7);
  memset(&c5, 0, sizeof c5);
  if (plug.version == 7)
    consts_fill(comm, base, &c7.ll_max_bw[0][0], 5 * 5 * 3);
  else
    consts_fill(comm, base, &c5.ll_max_bw[0][0], 5 * 4 * 3);
  double before[TUNER_NALGO * TUNER_NPROTO];
  memcpy(before, base, sizeof before);
  void* consts = plug.version == 7 ? (void*)&c7 : (void*)&c5;
  ncclResult_t res = p->init(&tc->ctx, comm->comm_hash, (size_t)comm->nranks, (size_t)nnodes,
                             plugin_lib_log, &nvl, consts);
  for (int i = 0; i < TUNER_NALGO * TUNER_NPROTO; i++)
    (&tc->base_lat[0][0])[i] = base[i] != before[i] && base[i] >= 0 ? base[i] : -1;
  return res;
}

ncclResult_t tuner_comm_init(struct ncclComm* comm) {
  ncclResult_t res = ncclSuccess;
  struct tuner_comm* tc = NULL;
  pthread_mutex_lock(&plug.lock);
  if (!plug.tried) load();
  pthread_mutex_unlock(&plug.lock);
  if (plug.version == 0) goto out;
  NCCLCALLOC(tc, 1);
  for (int i = 0; i < TUNER_NALGO * TUNER_NPROTO; i++) (&tc->base_lat[0][0])[i] = -1;
  res = call_init(comm, tc);
  if (res != ncclSuccess) {
    WARN("the tuner plugin %s (%s) failed to initialize comm %p rank %d (error %d): fix the "
         "plugin or set NCCL_TUNER_PLUGIN=none",
         plug_name(), plug.used, (void*)comm, comm->rank, (int)res);
    free(tc);
    goto out;
  }
  comm->tuner = tc;
  if (comm->rank == 0)
    INFO(LOG_INIT | LOG_TUNING, "TUNER/Plugin: %s v%d tunes comm %p (%d ranks)", plug_name(),
         plug.version, (void*)comm, comm->nranks);
out:
  return res;
}

void tuner_comm_free(struct ncclComm* comm) {
  struct tuner_comm* tc = comm->tuner;
  if (tc == NULL) return;
  const struct tuner_v2* p = plug.table; /* destroy and finalize share their offset */
  ncclResult_t res = p->destroy(tc->ctx);
  if (res != ncclSuccess)
    WARN("the tuner plugin %s failed to finalize comm %p rank %d (error %d)", plug_name(),
         (void*)comm, comm->rank, (int)res);
  free(tc);
  comm->tuner = NULL;
}

const char* tuner_name(const struct ncclComm* comm) {
  return comm->tuner ? plug_name() : NULL;
}

/* NCCL's function ids: Broadcast 0, Reduce 1, AllGather 2, ReduceScatter 3, AllReduce 4. */
static int nccl_func(enum coll_kind c) {
  return c == COLL_BROADCAST       ? 0
         : c == COLL_REDUCE        ? 1
         : c == COLL_ALLGATHER     ? 2
         : c == COLL_REDUCESCATTER ? 3
                                   : 4;
}

/* A v2 plugin names one pair; NCCL makes it the cheapest entry, unless it cannot run. */
static ncclResult_t call_v2(const struct tuner_comm* tc, int func, size_t bytes, int pipe_ops,
                            float table[TUNER_NALGO][TUNER_NPROTO], int* nchannels) {
  const struct tuner_v2* p = plug.table;
  int algo = -1, proto = -1;
  int nvls = table[4][2] != TUNER_IGNORE || table[5][2] != TUNER_IGNORE;
  int collnet = table[3][2] != TUNER_IGNORE;
  NCCLCHECK(
      p->get_coll_info(tc->ctx, func, bytes, collnet, nvls, pipe_ops, &algo, &proto, nchannels));
  if (algo >= 0 && algo < TUNER_NALGO && proto >= 0 && proto < TUNER_NPROTO &&
      table[algo][proto] != TUNER_IGNORE)
    table[algo][proto] = 0.0f;
  return ncclSuccess;
}

ncclResult_t tuner_coll_info(const struct ncclComm* comm, enum coll_kind coll, size_t bytes,
                             int pipe_ops, float table[TUNER_NALGO][TUNER_NPROTO], int* nchannels) {
  const struct tuner_comm* tc = comm->tuner;
  int func = nccl_func(coll);
  ncclResult_t res;
  *nchannels = 0;
  if (plug.version == 2) {
    res = call_v2(tc, func, bytes, pipe_ops, table, nchannels);
  } else if (plug.version == 3) {
    const struct tuner_v3* p = plug.table;
    res = p->get_coll_info(tc->ctx, func, bytes, pipe_ops, (float**)table, TUNER_NALGO,
                           TUNER_NPROTO, nchannels);
  } else {
    const struct tuner_v4* p = plug.table; /* v4-v7 share getCollInfo */
    res = p->get_coll_info(tc->ctx, func, bytes, pipe_ops, (float**)table, TUNER_NALGO,
                           TUNER_NPROTO, 0, nchannels);
  }
  if (res != ncclSuccess)
    WARN("the tuner plugin %s failed in getCollInfo for %s of %zu bytes on rank %d (error %d): "
         "the operation fails, as in NCCL; fix the plugin or set NCCL_TUNER_PLUGIN=none",
         plug_name(), coll_name(coll), bytes, comm->rank, (int)res);
  return res;
}

ncclResult_t tuner_chunk_size(const struct ncclComm* comm, enum coll_kind coll, size_t bytes,
                              int algo, int proto, int nchannels, size_t* chunk) {
  const struct tuner_comm* tc = comm->tuner;
  if (plug.version < 6) return ncclSuccess;
  const struct tuner_v7* p = plug.table;
  if (p->get_chunk_size == NULL) return ncclSuccess;
  ncclResult_t res =
      p->get_chunk_size(tc->ctx, nccl_func(coll), bytes, algo, proto, nchannels, chunk);
  if (res != ncclSuccess)
    WARN("the tuner plugin %s failed in getChunkSize for %s of %zu bytes on rank %d (error %d): "
         "the operation fails, as in NCCL",
         plug_name(), coll_name(coll), bytes, comm->rank, (int)res);
  return res;
}

double tuner_base_latency(const struct ncclComm* comm, int algo, int proto) {
  const struct tuner_comm* tc = comm->tuner;
  if (tc == NULL || algo < 0 || algo >= TUNER_NALGO || proto < 0 || proto >= TUNER_NPROTO)
    return -1;
  return tc->base_lat[algo][proto];
}
