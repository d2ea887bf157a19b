/* SPDX-License-Identifier: BSD-3-Clause */
/* Profiler plugins (core/profiler.h). Monel's events, in NCCL's order for one group on one comm:
 *   GroupApi start, state 23            at the group's first operation (API thread)
 *   CollApi/P2pApi start, stop          per operation, around its enqueue
 *   GroupApi state 24                   the group's end begins (planning, the tuner follow)
 *   Group start, Coll/P2p start         per task, before the engine runs them
 *   Coll/P2p stop, Group stop           after the run
 *   GroupApi stop
 * Between the Coll/P2p start and stop, the CPU engine reports its network transfers (cpu/prof.c):
 * ProxyOp per (operation, peer, direction) across the network, ProxyStep per slot under it, and
 * under a step the NetPlugin events an external net plugin reports through its callback (from
 * the proxy thread, inside the plugin's isend/irecv/test).
 * The CPU engine runs the tasks inside that window, so a stop means the operation is complete.
 * Older plugins get what NCCL's adapters give them: no API events before v5 (Coll and P2p then
 * have the Group as parent), string descriptors from v2, ids in v1. */
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/profiler.h"
#include "core/profiler_abi.h"
#include "transport/net.h"
#include "util/check.h"
#include "util/dtype.h"
#include "util/param.h"
#include "util/plugin_lib.h"

static const char* const symbols[] = {"ncclProfiler_v7", "ncclProfiler_v6", "ncclProfiler_v5",
                                      "ncclProfiler_v4", "ncclProfiler_v3", "ncclProfiler_v2",
                                      "ncclProfiler_v1"};

/* The process's plugin: loaded by the first comm, closed when the last one using it goes (a
 * later comm then loads it afresh); a library that was not found is not looked for again. */
static struct {
  pthread_mutex_t lock;
  int tried, users, version;
  void* lib;
  const struct prof_table* t;
  char used[600];
} plug = {.lock = PTHREAD_MUTEX_INITIALIZER};
static int mask_word; /* NCCL's one activation mask: every init gets its address */

struct profiler_comm {
  void* ctx;
  int version;
  const struct prof_table* t;
  void* group_api;  /* the open GroupApi event of the group being built */
  void* group;      /* the open Group event of the run */
  int group_mask;   /* the snapshot of the group's first operation */
  int group_open;   /* the GroupApi event was started (its handle may be NULL) */
  uint64_t seq[16]; /* Coll events so far per NCCL function id */
};

#define BELOW_KERNEL (PROF_PROXY_OP | PROF_PROXY_STEP | PROF_KERNEL_CH | PROF_NET_PLUGIN)
#define CE_BITS      0x7000

static int wants(int mask, int type, int version) {
  int any;
  switch (type) {
  case PROF_GROUP_API:
    any = PROF_GROUP_API | PROF_COLL_API | PROF_P2P_API | PROF_KERNEL_LAUNCH | PROF_GROUP |
          PROF_COLL | PROF_P2P | BELOW_KERNEL | CE_BITS;
    break;
  case PROF_COLL_API:
    any = PROF_COLL_API | PROF_COLL | BELOW_KERNEL | CE_BITS;
    break;
  case PROF_P2P_API:
    any = PROF_P2P_API | PROF_P2P | BELOW_KERNEL;
    break;
  case PROF_GROUP:
    any = PROF_GROUP | PROF_COLL | PROF_P2P | BELOW_KERNEL;
    break;
  case PROF_PROXY_OP:
    any = PROF_PROXY_OP | PROF_PROXY_STEP | PROF_NET_PLUGIN;
    break;
  case PROF_PROXY_STEP:
    any = PROF_PROXY_STEP | PROF_NET_PLUGIN;
    break;
  case PROF_NET_PLUGIN:
    any = PROF_NET_PLUGIN;
    break;
  default:
    any = type | BELOW_KERNEL;
  }
  if (version < 5 && (type & (PROF_GROUP_API | PROF_COLL_API | PROF_P2P_API))) return 0;
  return (mask & any) != 0;
}

static const char* plug_name(void) {
  return plug.t->name ? plug.t->name : "(unnamed)";
}

/* Steps 1-2 of NCCL's search, then the net plugin's library; the result is logged. */
static void load(void) {
  const char* spec = param_str(PARAM_PROFILER_PLUGIN);
  char why[1200];
  plug.tried = 1;
  if (plugin_lib_is_none(spec)) {
    INFO(LOG_INIT | LOG_PROFILE, "PROFILER/Plugin: NCCL_PROFILER_PLUGIN=none: no profiler");
    return;
  }
  int from_net = 0;
  void* lib = plugin_lib_find(spec, "libnccl-profiler.so", "libnccl-profiler-", net_plugin_lib(),
                              plug.used, sizeof plug.used, why, sizeof why, &from_net);
  if (lib == NULL) {
    INFO(LOG_INIT | LOG_PROFILE, "PROFILER/Plugin: no profiler plugin loaded (%s)", why);
    return;
  }
  for (int i = 0; i < 7 && plug.version == 0; i++)
    if ((plug.t = dlsym(lib, symbols[i])) != NULL) plug.version = 7 - i;
  if (plug.version == 0) {
    INFO(LOG_INIT | LOG_PROFILE, "PROFILER/Plugin: %s %s", plug.used,
         from_net ? "(the net plugin) has no profiler"
                  : "exports none of ncclProfiler_v7..v1: "
                    "unsupported, ignored");
    dlclose(lib);
    return;
  }
  plug.lib = lib;
  INFO(LOG_INIT | LOG_PROFILE, "PROFILER/Plugin: loaded %s (%s%s, version v%d)", plug_name(),
       plug.used, from_net ? ", inside the net plugin" : "", plug.version);
}

static ncclResult_t net_event(void** event, int type, void* phandle, int64_t id, void* data);

/* Drops one comm's reference; the last one closes the library. Called with plug.lock held. */
static void unref(void) {
  if (--plug.users > 0) return;
  net_set_profiler(NULL);
  __atomic_store_n(&plug.t, NULL, __ATOMIC_RELEASE); /* net_event reads it */
  dlclose(plug.lib);
  plug.lib = NULL, plug.version = 0, plug.tried = 0;
}

static int count_hosts(const struct ncclComm* comm) {
  int hosts = 0;
  for (int r = 0; r < comm->nranks; r++) {
    int first = 1;
    for (int q = 0; q < r && first; q++)
      first = comm->peers[q].host_hash != comm->peers[r].host_hash;
    hosts += first;
  }
  return hosts;
}

static ncclResult_t call_init(struct ncclComm* comm, struct profiler_comm* pc) {
  const char* name = comm->comm_name[0] ? comm->comm_name : NULL; /* lives until finalize */
  if (pc->version <= 3) return ((prof_init_v1)pc->t->init)(&pc->ctx, &mask_word);
  if (pc->version == 4)
    return ((prof_init_v4)pc->t->init)(&pc->ctx, &mask_word, name, comm->comm_hash,
                                       count_hosts(comm), comm->nranks, comm->rank, plugin_lib_log);
  return ((prof_init_v5)pc->t->init)(&pc->ctx, comm->comm_hash, &mask_word, name, count_hosts(comm),
                                     comm->nranks, comm->rank, plugin_lib_log);
}

void profiler_comm_init(struct ncclComm* comm) {
  struct profiler_comm* pc = NULL;
  pthread_mutex_lock(&plug.lock);
  if (!plug.tried) load();
  if (plug.version == 0 || (pc = calloc(1, sizeof *pc)) == NULL) goto out;
  if (plug.users++ == 0 && plug.version >= 3) net_set_profiler(net_event);
  pc->version = plug.version, pc->t = plug.t;
  ncclResult_t res = call_init(comm, pc);
  if (res != ncclSuccess) {
    INFO(LOG_INIT | LOG_PROFILE,
         "PROFILER/Plugin: %s init failed for comm %p rank %d (error %d); continue without "
         "profiler",
         plug_name(), (void*)comm, comm->rank, (int)res);
    unref();
    free(pc);
    goto out;
  }
  comm->prof = pc;
  if (comm->rank == 0)
    INFO(LOG_INIT | LOG_PROFILE, "PROFILER/Plugin: %s v%d profiles comm %p (%d ranks), mask 0x%x",
         plug_name(), pc->version, (void*)comm, comm->nranks,
         __atomic_load_n(&mask_word, __ATOMIC_RELAXED));
out:
  pthread_mutex_unlock(&plug.lock);
}

void profiler_comm_free(struct ncclComm* comm) {
  struct profiler_comm* pc = comm->prof;
  if (pc == NULL) return;
  profiler_group_drop(comm);
  if (pc->ctx) pc->t->finalize(pc->ctx); /* NCCL ignores its result */
  pthread_mutex_lock(&plug.lock);
  unref();
  pthread_mutex_unlock(&plug.lock);
  free(pc);
  comm->prof = NULL;
}

/* ---- descriptors ---------------------------------------------------------------------------- */

/* One event in Monel's terms; start() writes the descriptor of the plugin's version. */
struct ev {
  int type;
  void* parent;
  int depth;    /* GroupApi */
  int func;     /* NCCL's function id */
  size_t count; /* CollApi/P2pApi: the user's; Coll: bytes for AllGather, Broadcast */
  int dtype;    /* ncclDataType_t */
  int root, peer, nch, algo, proto;
  uint64_t seq, tag;
  const void* sendbuff;
  void* recvbuff;
  void* parent_group;
};

static const char* const func_names[] = {"Broadcast", "Reduce",   "AllGather", "ReduceScatter",
                                         "AllReduce", "SendRecv", "Send",      "Recv",
                                         "AlltoAll",  "Scatter",  "Gather"};
/* NCCL has no string for Uint8 ("Unknown"), so neither does Monel. */
static const char* const dtype_names[] = {"ncclInt8",     "Unknown",        "ncclInt32",
                                          "ncclUint32",   "ncclInt64",      "ncclUint64",
                                          "ncclFloat16",  "ncclFloat32",    "ncclFloat64",
                                          "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
/* NCCL's algorithm strings, then Monel's own (no NCCL id: v1 plugins get PAT, as NCCL maps an
 * unknown string). */
static const char* const algo_names[] = {
    "TREE",      "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS",
    "NVLS_TREE", "PAT",  "ONESHOT",        "TWOSHOT",       "REC_DOUBLING"};
static const char* const proto_names[] = {"LL", "LL128", "SIMPLE"};

#define NAME_OF(tab, i, other)                                                                     \
  ((i) >= 0 && (size_t)(i) < sizeof tab / sizeof tab[0] ? tab[i] : (other))

static int func_of(enum coll_kind c) {
  static const int ids[COLL_COUNT] = {
      [COLL_ALLREDUCE] = 4,     [COLL_BROADCAST] = 0, [COLL_REDUCE] = 1,    [COLL_ALLGATHER] = 2,
      [COLL_REDUCESCATTER] = 3, [COLL_ALLTOALL] = 8,  [COLL_ALLTOALLV] = 8, [COLL_GATHER] = 10,
      [COLL_SCATTER] = 9,       [COLL_SEND] = 6,      [COLL_RECV] = 7};
  return ids[c];
}

static void* start_v5(const struct profiler_comm* pc, const struct ev* e, int rank) {
  struct prof_descr_v7 d;
  void* h = NULL;
  memset(&d, 0, sizeof d);
  d.type = (uint64_t)e->type, d.parent = e->parent;
  const char* func = NAME_OF(func_names, e->func, "Invalid");
  const char* dtype = NAME_OF(dtype_names, e->dtype, "Unknown");
  switch (e->type) {
  case PROF_GROUP_API:
    d.group_api.depth = e->depth;
    break;
  case PROF_COLL_API:
    d.coll_api.func = func, d.coll_api.count = e->count, d.coll_api.dtype = dtype;
    d.coll_api.root = e->root, d.coll_api.user_tag = e->tag;
    break;
  case PROF_P2P_API:
    d.p2p_api.func = func, d.p2p_api.count = e->count, d.p2p_api.dtype = dtype;
    d.p2p_api.user_tag = e->tag;
    break;
  case PROF_COLL:
    d.rank = rank;
    d.coll.seq = e->seq, d.coll.func = func, d.coll.sendbuff = e->sendbuff;
    d.coll.recvbuff = e->recvbuff, d.coll.count = e->count, d.coll.root = e->root;
    d.coll.dtype = dtype, d.coll.nch = (uint8_t)e->nch;
    d.coll.algo = NAME_OF(algo_names, e->algo, "Unknown");
    d.coll.proto = NAME_OF(proto_names, e->proto, "Unknown");
    d.coll.parent_group = e->parent_group, d.coll.user_tag = e->tag;
    break;
  case PROF_P2P:
    d.rank = rank;
    d.p2p.func = func, d.p2p.buff = e->recvbuff, d.p2p.dtype = dtype, d.p2p.count = e->count;
    d.p2p.peer = e->peer, d.p2p.nch = (uint8_t)e->nch, d.p2p.parent_group = e->parent_group;
    d.p2p.user_tag = e->tag;
    break;
  }
  pc->t->start_event(pc->ctx, &h, &d);
  return h;
}

static void* start_v4(const struct profiler_comm* pc, const struct ev* e, int rank) {
  struct prof_descr_v4 d;
  void* h = NULL;
  memset(&d, 0, sizeof d);
  d.type = (uint8_t)e->type, d.parent = e->parent;
  const char* func = NAME_OF(func_names, e->func, "Invalid");
  const char* dtype = NAME_OF(dtype_names, e->dtype, "Unknown");
  if (e->type == PROF_COLL) {
    d.rank = rank;
    d.coll.seq = e->seq, d.coll.func = func, d.coll.sendbuff = e->sendbuff;
    d.coll.recvbuff = e->recvbuff, d.coll.count = e->count, d.coll.root = e->root;
    d.coll.dtype = dtype, d.coll.nch = (uint8_t)e->nch;
    d.coll.algo = NAME_OF(algo_names, e->algo, "Unknown");
    d.coll.proto = NAME_OF(proto_names, e->proto, "Unknown");
  } else if (e->type == PROF_P2P) {
    d.rank = rank;
    d.p2p.func = func, d.p2p.buff = e->recvbuff, d.p2p.dtype = dtype, d.p2p.count = e->count;
    d.p2p.peer = e->peer; /* NCCL's adapter leaves nChannels 0 */
  }
  pc->t->start_event(pc->ctx, &h, &d);
  return h;
}

/* v2 and v3 share their members up to the coll's datatype; v3 has no trafficBytes. */
static void* start_v2(const struct profiler_comm* pc, const struct ev* e, int rank) {
  union {
    struct prof_descr_v2 v2;
    struct prof_descr_v3 v3;
  } d;
  void* h = NULL;
  memset(&d, 0, sizeof d);
  d.v2.type = (uint8_t)e->type, d.v2.parent = e->parent;
  const char* func = NAME_OF(func_names, e->func, "Invalid");
  const char* dtype = NAME_OF(dtype_names, e->dtype, "Unknown");
  const char* algo = NAME_OF(algo_names, e->algo, "Unknown");
  const char* proto = NAME_OF(proto_names, e->proto, "Unknown");
  if (e->type == PROF_COLL) {
    d.v2.rank = rank;
    d.v2.coll.seq = e->seq, d.v2.coll.func = func, d.v2.coll.sendbuff = e->sendbuff;
    d.v2.coll.recvbuff = e->recvbuff, d.v2.coll.count = e->count, d.v2.coll.root = e->root;
    d.v2.coll.dtype = dtype;
    if (pc->version == 2)
      d.v2.coll.nch = (uint8_t)e->nch, d.v2.coll.algo = algo, d.v2.coll.proto = proto;
    else
      d.v3.coll.nch = (uint8_t)e->nch, d.v3.coll.algo = algo, d.v3.coll.proto = proto;
  } else if (e->type == PROF_P2P) {
    d.v2.rank = rank;
    d.v2.p2p.func = func, d.v2.p2p.buff = e->recvbuff, d.v2.p2p.dtype = dtype;
    d.v2.p2p.count = e->count, d.v2.p2p.peer = e->peer;
  }
  pc->t->start_event(pc->ctx, &h, &d);
  return h;
}

/* v1 takes ids; a datatype NCCL has no string for (Uint8) becomes Float64, as NCCL parses it. */
static void* start_v1(const struct profiler_comm* pc, const struct ev* e, int rank) {
  struct prof_descr_v1 d;
  void* h = NULL;
  memset(&d, 0, sizeof d);
  d.type = (uint8_t)e->type, d.parent = e->parent;
  uint8_t dtype = e->dtype == ncclUint8 || e->dtype < 0 || e->dtype > ncclFloat8e5m2
                      ? (uint8_t)ncclFloat64
                      : (uint8_t)e->dtype;
  if (e->type == PROF_COLL) {
    d.rank = rank;
    d.coll.seq = e->seq, d.coll.func = (uint8_t)e->func, d.coll.sendbuff = e->sendbuff;
    d.coll.recvbuff = e->recvbuff, d.coll.count = e->count, d.coll.root = e->root;
    d.coll.dtype = dtype, d.coll.nch = (uint8_t)e->nch;
    d.coll.algo = (uint8_t)(e->algo >= 0 && e->algo < 7 ? e->algo : 6);
    d.coll.proto = (uint8_t)(e->proto >= 0 && e->proto < 3 ? e->proto : 2);
  } else if (e->type == PROF_P2P) {
    d.rank = rank;
    d.p2p.func = (uint8_t)e->func, d.p2p.buff = e->recvbuff, d.p2p.dtype = dtype;
    d.p2p.count = e->count, d.p2p.peer = e->peer;
  }
  pc->t->start_event(pc->ctx, &h, &d);
  return h;
}

static void* start(const struct ncclComm* comm, const struct ev* e) {
  const struct profiler_comm* pc = comm->prof;
  return pc->version >= 5   ? start_v5(pc, e, comm->rank)
         : pc->version == 4 ? start_v4(pc, e, comm->rank)
         : pc->version >= 2 ? start_v2(pc, e, comm->rank)
                            : start_v1(pc, e, comm->rank);
}

/* A NULL handle from startEvent suppresses its stop and states, as in NCCL. */
static void stop(const struct profiler_comm* pc, void* h) {
  if (h) pc->t->stop_event(h);
}
static void record(const struct profiler_comm* pc, void* h, int state) {
  if (h && pc->version >= 5) pc->t->record_state(h, state, NULL);
}

/* ---- the group machinery's hooks ------------------------------------------------------------ */

static int is_p2p(enum coll_kind c) {
  return c == COLL_SEND || c == COLL_RECV;
}

void profiler_enqueue(struct ncclComm* comm, struct task* t, int depth) {
  struct profiler_comm* pc = comm->prof;
  if (pc == NULL) return;
  t->prof_mask = __atomic_load_n(&mask_word, __ATOMIC_RELAXED);
  t->prof_api = t->prof_ev = NULL;
  if (!pc->group_open) {
    pc->group_open = 1, pc->group_mask = t->prof_mask, pc->group_api = NULL;
    if (wants(pc->group_mask, PROF_GROUP_API, pc->version)) {
      struct ev g = {.type = PROF_GROUP_API, .depth = depth + 1};
      pc->group_api = start(comm, &g);
      record(pc, pc->group_api, PROF_STATE_GROUP_START_API_STOP);
    }
  }
  int type = is_p2p(t->coll) ? PROF_P2P_API : PROF_COLL_API;
  if (!wants(t->prof_mask, type, pc->version)) return;
  struct ev e = {.type = type,
                 .parent = pc->group_api,
                 .func = func_of(t->coll),
                 .count = t->count,
                 .dtype = (int)t->dtype,
                 .root = t->root,
                 .tag = t->user_tag};
  t->prof_api = start(comm, &e);
  stop(pc, t->prof_api); /* the enqueue is done; the handle stays the Coll's parent */
}

void profiler_group_end_begins(struct ncclComm* comm) {
  struct profiler_comm* pc = comm->prof;
  if (pc && pc->group_open) record(pc, pc->group_api, PROF_STATE_GROUP_END_API_START);
}

/* The Coll/P2p event of one task; NCCL reports AllGather and Broadcast in bytes of ncclInt8. */
static void task_start(struct ncclComm* comm, struct profiler_comm* pc, struct task* t) {
  int p2p = is_p2p(t->coll), type = p2p ? PROF_P2P : PROF_COLL;
  t->prof_ev = NULL;
  if (!wants(t->prof_mask, type, pc->version)) return;
  struct ev e = {.type = type,
                 .parent = pc->version >= 5 ? t->prof_api : pc->group,
                 .func = func_of(t->coll),
                 .count = t->count,
                 .dtype = (int)t->dtype,
                 .root = t->root,
                 .peer = t->root,
                 .nch = t->plan.nchannels,
                 .algo = (int)t->plan.algo,
                 .proto = (int)t->plan.proto,
                 .tag = t->user_tag,
                 .sendbuff = t->sendbuff,
                 .recvbuff = t->recvbuff,
                 .parent_group = pc->group};
  if (p2p && t->coll == COLL_SEND) e.recvbuff = (void*)t->sendbuff;
  if (t->coll == COLL_ALLGATHER || t->coll == COLL_BROADCAST) {
    e.count = t->count * dtype_size(t->dtype);
    e.dtype = ncclInt8;
  }
  if (!p2p) e.seq = pc->seq[e.func & 15]++;
  t->prof_ev = start(comm, &e);
}

void profiler_run_begin(struct ncclComm* comm, struct task* tasks, int ntasks) {
  struct profiler_comm* pc = comm->prof;
  if (pc == NULL) return;
  pc->group = NULL;
  int mask = pc->group_open ? pc->group_mask : (ntasks ? tasks[0].prof_mask : 0);
  if (wants(mask, PROF_GROUP, pc->version)) {
    struct ev g = {.type = PROF_GROUP};
    pc->group = start(comm, &g);
  }
  for (int i = 0; i < ntasks; i++) task_start(comm, pc, &tasks[i]);
}

void profiler_run_end(struct ncclComm* comm, struct task* tasks, int ntasks) {
  struct profiler_comm* pc = comm->prof;
  if (pc == NULL) return;
  for (int i = 0; i < ntasks; i++) {
    stop(pc, tasks[i].prof_ev);
    tasks[i].prof_ev = NULL;
  }
  stop(pc, pc->group);
  pc->group = NULL;
  profiler_group_drop(comm);
}

void profiler_group_drop(struct ncclComm* comm) {
  struct profiler_comm* pc = comm->prof;
  if (pc == NULL || !pc->group_open) return;
  stop(pc, pc->group_api);
  pc->group_api = NULL, pc->group_open = 0;
}

/* ---- the network side of an operation (engines) --------------------------------------------- */

int profiler_proxy_on(const struct ncclComm* comm, const struct task* t) {
  const struct profiler_comm* pc = comm->prof;
  return pc != NULL && t->prof_ev != NULL && wants(t->prof_mask, PROF_PROXY_OP, pc->version);
}

/* ProxyOp and ProxyStep descriptors: the v1-v4 header (a byte for the type) or the v5+ one,
 * then the same members at offset 24. */
static void* start_proxy(const struct ncclComm* comm, int type, void* parent,
                         const struct prof_proxy_op* op, int step) {
  const struct profiler_comm* pc = comm->prof;
  union {
    struct prof_descr_v2 v2; /* the largest before v5 */
    struct prof_descr_v4 v4;
    struct prof_descr_v7 v7;
  } d;
  void* h = NULL;
  memset(&d, 0, sizeof d);
  if (pc->version >= 5) {
    d.v7.type = (uint64_t)type, d.v7.parent = parent, d.v7.rank = comm->rank;
    if (op)
      d.v7.proxy_op = *op;
    else
      d.v7.proxy_step.step = step;
  } else {
    d.v4.type = (uint8_t)type, d.v4.parent = parent, d.v4.rank = comm->rank;
    if (op)
      d.v4.proxy_op = *op;
    else
      d.v4.proxy_step.step = step;
  }
  pc->t->start_event(pc->ctx, &h, &d);
  return h;
}

void* profiler_proxy_op_start(const struct ncclComm* comm, const struct task* t, int is_send,
                              int peer, int channel, int nsteps, size_t chunk) {
  struct prof_proxy_op op = {.pid = (int)getpid(),
                             .channel = (uint8_t)channel,
                             .peer = peer,
                             .nsteps = nsteps,
                             .chunk = (int)chunk,
                             .is_send = is_send};
  return start_proxy(comm, PROF_PROXY_OP, t->prof_ev, &op, 0);
}

void* profiler_proxy_step_start(const struct ncclComm* comm, const struct task* t, void* op,
                                int step) {
  const struct profiler_comm* pc = comm->prof;
  if (op == NULL || !wants(t->prof_mask, PROF_PROXY_STEP, pc->version)) return NULL;
  return start_proxy(comm, PROF_PROXY_STEP, op, NULL, step);
}

void profiler_proxy_state(const struct ncclComm* comm, void* step, int state, size_t bytes) {
  const struct profiler_comm* pc = comm->prof;
  struct prof_state_args a = {pc->version >= 4 ? bytes : 0, 0};
  if (step) pc->t->record_state(step, state, &a);
}

void profiler_proxy_stop(const struct ncclComm* comm, void* h) {
  stop(comm->prof, h);
}

/* ---- a net plugin's events (NetPlugin) ------------------------------------------------------ */

int profiler_net_on(const struct ncclComm* comm, const struct task* t) {
  const struct profiler_comm* pc = comm->prof;
  return pc != NULL && pc->version >= 3 && wants(t->prof_mask, PROF_NET_PLUGIN, pc->version);
}

static void* start_net(const struct profiler_step_ref* ref, int64_t id, void* data) {
  const struct profiler_comm* pc = ref->comm->prof;
  union {
    struct prof_descr_v4 v4; /* v3 has the same header and member */
    struct prof_descr_v7 v7;
  } d;
  void* h = NULL;
  memset(&d, 0, sizeof d);
  if (pc->version >= 5) {
    d.v7.type = PROF_NET_PLUGIN, d.v7.parent = ref->step, d.v7.rank = ref->comm->rank;
    d.v7.net_plugin = (struct prof_net_plugin){id, data};
  } else {
    d.v4.type = PROF_NET_PLUGIN, d.v4.parent = ref->step, d.v4.rank = ref->comm->rank;
    d.v4.net_plugin = (struct prof_net_plugin){id, data};
  }
  pc->t->start_event(pc->ctx, &h, &d);
  return h;
}

/* The net plugin's callback (net.h). Only steps whose task asks for NetPlugin events get a
 * handle (cpu/prof.c), so the mask is not read again here. Updates and stops come with the
 * event only: the process's plugin table serves them (it outlives every event, which ends
 * before its step). */
static ncclResult_t net_event(void** event, int type, void* phandle, int64_t id, void* data) {
  const struct profiler_step_ref* ref = phandle;
  if (type == NET_EV_START) {
    *event = ref != NULL && ref->step != NULL && ref->comm->prof != NULL ? start_net(ref, id, data)
                                                                         : NULL;
    return ncclSuccess;
  }
  const struct prof_table* t = __atomic_load_n(&plug.t, __ATOMIC_ACQUIRE);
  if (*event == NULL || t == NULL) return ncclSuccess;
  if ((type == NET_EV_UPDATE || type == NET_EV_UPDATE_STOP) && plug.version >= 4) {
    struct prof_net_args a = {data};
    t->record_state(*event, PROF_STATE_NET_PLUGIN_UPDATE, &a);
  }
  if (type == NET_EV_STOP || type == NET_EV_UPDATE_STOP) t->stop_event(*event);
  return ncclSuccess;
}
