/* SPDX-License-Identifier: BSD-3-Clause */
/* Communicator life cycle: create (bootstrap, peer exchange, engine), split, shrink, finalize,
 * abort, free; and the registry that lets the API reject destroyed or foreign comm pointers. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "boot/boot.h"
#include "util/check.h"
#include "core/comm.h"
#include "core/node_topo.h"
#include "core/plan_choose.h"
#include "core/profiler.h"
#include "core/tuner.h"
#include "util/param.h"
#include "core/watch.h"
#include "topo/host.h"
#include "topo/ring_order.h"

/* ---- registry of live comms ---- */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ncclComm** reg;
static int reg_len, reg_cap;
static uint64_t reg_gen; /* atomic: bumped whenever a comm leaves the registry */
/* The comm this thread last found in the registry, and reg_gen then: while reg_gen has not
 * moved, it is still there (an operation's check takes no lock). */
static __thread struct {
  struct ncclComm* comm;
  uint64_t gen;
} reg_seen;

static ncclResult_t reg_add(struct ncclComm* c) {
  pthread_mutex_lock(&reg_lock);
  if (reg_len == reg_cap) {
    int cap = reg_cap ? 2 * reg_cap : 64;
    struct ncclComm** n = realloc(reg, cap * sizeof(*n));
    if (!n) {
      pthread_mutex_unlock(&reg_lock);
      return ncclSystemError;
    }
    reg = n, reg_cap = cap;
  }
  reg[reg_len++] = c;
  pthread_mutex_unlock(&reg_lock);
  return ncclSuccess;
}

static void reg_remove(struct ncclComm* c) {
  pthread_mutex_lock(&reg_lock);
  for (int i = 0; i < reg_len; i++)
    if (reg[i] == c) {
      reg[i] = reg[--reg_len];
      __atomic_add_fetch(&reg_gen, 1, __ATOMIC_RELEASE);
      break;
    }
  pthread_mutex_unlock(&reg_lock);
}

int comm_is_live(struct ncclComm* comm) {
  if (comm == NULL) return 0;
  uint64_t gen = __atomic_load_n(&reg_gen, __ATOMIC_ACQUIRE);
  int found = reg_seen.comm == comm && reg_seen.gen == gen;
  if (!found) {
    pthread_mutex_lock(&reg_lock);
    for (int i = 0; i < reg_len && !found; i++) found = reg[i] == comm;
    gen = reg_gen;
    pthread_mutex_unlock(&reg_lock);
    if (found) reg_seen.comm = comm, reg_seen.gen = gen;
  }
  return found && comm->magic == COMM_MAGIC;
}

ncclResult_t comm_check(struct ncclComm* comm, const char* fn, int allow_pending) {
  if (comm == NULL) {
    WARN("%s: comm is NULL: pass a communicator made by ncclCommInitRank or ncclCommInitAll", fn);
    return ncclInvalidArgument;
  }
  if (!comm_is_live(comm)) {
    WARN("%s: comm %p is not a live communicator (it was destroyed, or never created)", fn,
         (void*)comm);
    return ncclInvalidArgument;
  }
  if (!allow_pending && __atomic_load_n(&comm->async_error, __ATOMIC_ACQUIRE) == ncclInProgress) {
    WARN("%s: comm %p is still initializing: poll ncclCommGetAsyncError until it is not "
         "ncclInProgress",
         fn, (void*)comm);
    return ncclInvalidUsage;
  }
  return ncclSuccess;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

static const struct engine* pick_engine(int cuda_dev) {
  const char* want = param_str(PARAM_ENGINE);
#ifdef MONEL_HAVE_CUDA
  if (strcmp(want, "cpu") != 0 && cuda_dev >= 0) return &gpu_engine;
#else
  (void)cuda_dev;
#endif
  if (strcmp(want, "gpu") == 0) return NULL;
  return &cpu_engine;
}

/* The ring order of the comm, alike on every rank (from the peers' host hashes); rank 0 logs it
 * once. */
static ncclResult_t ring_setup(struct ncclComm* comm) {
  int n = comm->nranks;
  uint64_t* hash = NULL;
  NCCLCALLOC(comm->ring_order, n);
  NCCLCALLOC(comm->ring_pos, n);
  NCCLCALLOC(hash, n);
  for (int r = 0; r < n; r++) hash[r] = comm->peers[r].host_hash;
  topo_ring_order(n, hash, comm->ring_order);
  for (int p = 0; p < n; p++) comm->ring_pos[comm->ring_order[p]] = p;
  if (comm->rank == 0 && LOG_ENABLED(LOG_INFO)) {
    char line[1024];
    size_t o = 0;
    for (int p = 0; p < n && o < sizeof line - 16; p++)
      o += (size_t)snprintf(line + o, sizeof line - o, "%s%d", p ? " " : "", comm->ring_order[p]);
    if (o >= sizeof line - 16) snprintf(line + o, sizeof line - o, " ...");
    INFO(LOG_INIT, "comm %p nranks %d ring order %s (%d host crossings)", (void*)comm, n, line,
         topo_ring_crossings(n, hash, comm->ring_order));
  }
  free(hash);
  return ncclSuccess;
}

/* Every rank of a comm must run the same engine (their connections differ). A rank without a GPU
 * among GPU ranks, or MONEL_ENGINE set on some ranks only: every rank fails alike, naming one. */
static ncclResult_t same_engine(const struct ncclComm* comm) {
  const struct peer_info* p = comm->peers;
  for (int r = 1; r < comm->nranks; r++) {
    if (strncmp(p[r].engine, p[0].engine, sizeof p[0].engine) == 0) continue;
    const struct peer_info* g = strcmp(p[0].engine, "gpu") == 0 ? &p[0] : &p[r];
    const struct peer_info* c = g == &p[0] ? &p[r] : &p[0];
    WARN("rank %d (host %s, pid %d) would run on the %.8s engine and rank %d (host %s, pid %d) on "
         "the %.8s engine: every rank of a communicator must use the same one. A rank runs on the "
         "CPU engine when it sees no GPU (CUDA_VISIBLE_DEVICES, a device index past the GPU count) "
         "or MONEL_ENGINE=cpu is set; rank %d is on GPU %d",
         c->rank, c->host, c->pid, c->engine, g->rank, g->host, g->pid, g->engine, g->rank,
         g->cuda_dev);
    return ncclInvalidUsage;
  }
  return ncclSuccess;
}

/* The part of init that talks to peers: runs inline or on the nonblocking init thread. */
static ncclResult_t connect_peers(struct ncclComm* comm, const ncclUniqueId* id) {
  ncclResult_t res = ncclSuccess;
  double t0 = now_s();
  NCCLCHECK(boot_init(id, comm->rank, comm->nranks, &comm->boot));
  double t1 = now_s();
  NCCLCALLOC(comm->peers, comm->nranks);
  struct peer_info* me = &comm->peers[comm->rank];
  me->host_hash = topo_host_hash();
  me->machine_hash = topo_machine_hash();
  me->pid = getpid();
  me->cuda_dev = comm->cuda_dev;
  me->rank = comm->rank;
  topo_host_name(me->host, sizeof me->host);
  snprintf(me->engine, sizeof me->engine, "%s", comm->engine->name);
  NCCLCHECK(boot_allgather(comm->boot, comm->peers, sizeof(struct peer_info)));
  NCCLCHECK(same_engine(comm));
  comm->comm_hash = topo_hash(id->internal, sizeof id->internal);
  NCCLCHECK(ring_setup(comm));
  node_topo_dump(comm->rank); /* NCCL_TOPO_DUMP_FILE */
  NCCLCHECK(comm->engine->comm_init(comm));
  NCCLCHECK(tuner_comm_init(comm)); /* after the engine: the constants come from its table */
  profiler_comm_init(comm);         /* a profiler that fails is dropped, the comm is not */
  plan_log_table(comm);             /* NCCL_DEBUG_SUBSYS=TUNING: the table the plan chooses from */
  NCCLCHECK(watch_start(comm));
  double t2 = now_s();
  INFO(LOG_INIT,
       "comm %p rank %d nrank %d dev %d engine %s commId 0x%llx%s%s - Init COMPLETE in %.3f s, "
       "device memory %.1f MB",
       (void*)comm, comm->rank, comm->nranks, comm->cuda_dev, comm->engine->name,
       (unsigned long long)comm->comm_hash, comm->engine_info[0] ? " " : "", comm->engine_info,
       t2 - t0, comm->engine_dev_bytes / 1048576.0);
  INFO(LOG_INIT, "Init timings: rank %d nranks %d total %.3f s (bootstrap %.3f, connect %.3f)",
       comm->rank, comm->nranks, t2 - t0, t1 - t0, t2 - t1);
  return res;
}

ncclResult_t comm_begin(struct ncclComm** out, int nranks, const ncclUniqueId* id, int rank,
                        const ncclConfig_t* config, int cuda_dev) {
  ncclResult_t res = ncclSuccess;
  struct ncclComm* comm = NULL;
  NCCLCHECK(param_env_status());
  NCCLCALLOC(comm, 1);
  pthread_mutex_init(&comm->lock, NULL);
  comm->magic = COMM_MAGIC;
  comm->rank = rank;
  comm->nranks = nranks;
  comm->cuda_dev = cuda_dev;
  comm->init_id = *id;
  comm->async_error = ncclInProgress;
  NCCLCHECKGOTO(comm_config_parse(config, &comm->config), res, fail);
  if (config && config->commName)
    snprintf(comm->comm_name, sizeof comm->comm_name, "%s", config->commName);
  comm->config.commName = comm->comm_name[0] ? comm->comm_name : NULL;
  comm->blocking = comm->config.blocking;
  comm->boot_local = boot_id_is_local(id);
  comm->engine = pick_engine(cuda_dev);
  if (comm->engine == NULL) {
    WARN("MONEL_ENGINE=gpu but this build of Monel has no CUDA engine or rank %d has no GPU", rank);
    res = ncclInvalidUsage;
    goto fail;
  }
  NCCLCHECKGOTO(reg_add(comm), res, fail);
  *out = comm;
  return ncclSuccess;
fail:
  comm_free(comm);
  return res;
}

ncclResult_t comm_connect(struct ncclComm* comm) {
  ncclResult_t res = connect_peers(comm, &comm->init_id);
  __atomic_store_n(&comm->async_error, res, __ATOMIC_RELEASE);
  return res;
}

static void* init_thread_main(void* arg) {
  comm_connect(arg);
  return NULL;
}

ncclResult_t comm_create(struct ncclComm** out, int nranks, const ncclUniqueId* id, int rank,
                         const ncclConfig_t* config, int cuda_dev) {
  struct ncclComm* comm = NULL;
  NCCLCHECK(comm_begin(&comm, nranks, id, rank, config, cuda_dev));
  if (comm->blocking) {
    ncclResult_t res = comm_connect(comm);
    if (res != ncclSuccess) {
      comm_free(comm);
      return res;
    }
    *out = comm;
    return ncclSuccess;
  }
  if (pthread_create(&comm->init_thread, NULL, init_thread_main, comm) != 0) {
    WARN("could not start the thread of a nonblocking init");
    comm_free(comm);
    return ncclSystemError;
  }
  comm->init_thread_live = 1;
  *out = comm;
  return ncclInProgress;
}

/* Join the nonblocking init thread, if any. */
static void join_init(struct ncclComm* comm) {
  if (comm->init_thread_live) {
    pthread_join(comm->init_thread, NULL);
    comm->init_thread_live = 0;
  }
}

ncclResult_t comm_finalize(struct ncclComm* comm) {
  join_init(comm);
  if (comm->boot && !comm_aborted(comm)) NCCLCHECK(boot_barrier(comm->boot));
  return ncclSuccess;
}

void comm_abort(struct ncclComm* comm) {
  __atomic_store_n(&comm->abort_flag, 1, __ATOMIC_RELEASE);
  if (comm->boot) boot_abort(comm->boot);
  if (comm->engine && comm->engine->abort) comm->engine->abort(comm);
}

void comm_fail(struct ncclComm* comm, ncclResult_t res, const char* fmt, ...) {
  int expected = 0;
  if (!__atomic_compare_exchange_n(&comm->failing, &expected, 1, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE))
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(comm->fail_msg, sizeof comm->fail_msg, fmt, ap);
  va_end(ap);
  __atomic_store_n(&comm->failed, 1, __ATOMIC_RELEASE); /* fail_msg is complete */
  WARN("%s", comm->fail_msg);
  ncclResult_t prev = ncclSuccess;
  __atomic_compare_exchange_n(&comm->async_error, &prev, res, 0, __ATOMIC_ACQ_REL,
                              __ATOMIC_ACQUIRE);
  if (comm->engine && comm->engine->abort) comm->engine->abort(comm);
}

void comm_free(struct ncclComm* comm) {
  if (comm == NULL) return;
  join_init(comm);
  reg_remove(comm);
  watch_stop(comm);
  tuner_comm_free(comm);
  profiler_comm_free(comm);
  if (comm->engine && comm->engine->comm_free) comm->engine->comm_free(comm);
  comm_ext_free(comm); /* after the engine: its kernels may read what one-sided calls kept */
  boot_free(comm->boot);
  free(comm->peers);
  free(comm->ring_order);
  free(comm->ring_pos);
  free(comm->tasks);
  pthread_mutex_destroy(&comm->lock);
  comm->magic = 0;
  free(comm);
}

ncclResult_t comm_id_create(ncclUniqueId* id) {
  NCCLCHECK(param_env_status()); /* a failed env plugin fails these calls, as in NCCL */
  return boot_id_create(id);
}

ncclResult_t comm_id_create_local(ncclUniqueId* id, int nranks) {
  return boot_id_create_local(id, nranks);
}
