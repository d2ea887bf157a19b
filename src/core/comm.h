/* SPDX-License-Identifier: BSD-3-Clause */
/* The communicator object. Fields are written during init (by one thread) and then read-only,
 * except the atomics noted. */
#ifndef MONEL_CORE_COMM_H
#define MONEL_CORE_COMM_H
#include <pthread.h>
#include <stdint.h>
#include "nccl.h"
#include "core/engine.h"
#include "core/task.h"
#include "topo/host.h"

#define COMM_MAGIC      0x4d6f6e656c436f6dULL /* "MonelCom" */
#define COMM_MAX_REDOPS 64

struct watch;
struct tuner_comm;
struct profiler_comm;

struct redop_slot {
  int used;
  ncclDataType_t dtype;
  struct red_op op;
  const void* device_scalar; /* ncclScalarDevice: read when the op runs */
};

struct ncclComm {
  uint64_t magic;
  int rank, nranks, cuda_dev;
  size_t engine_dev_bytes; /* device memory the engine allocated for this comm */
  char engine_info[96];    /* the engine's summary for the Init COMPLETE line */
  int blocking;
  int boot_local;           /* the bootstrap is in-process (threads of one process) */
  int abort_flag;           /* atomic: set by ncclCommAbort */
  ncclResult_t async_error; /* atomic: ncclInProgress while a nonblocking init runs */
  char fail_msg[512];       /* the sentence of the first failure comm_fail recorded */
  int failing;              /* atomic: comm_fail claimed the comm (first caller only) */
  int failed;               /* atomic: set once fail_msg is complete */
  uint64_t seq;             /* operations enqueued so far */
  uint64_t comm_hash;       /* names the comm in logs */
  struct boot* boot;
  struct watch* watch;     /* core/watch.c */
  struct peer_info* peers; /* nranks entries */
  /* The ring every engine runs its ring algorithms on (topo_ring_order: the ranks of a host are
   * neighbours); the identity when every rank is on one host. nranks entries each. */
  int* ring_order; /* ring position -> rank */
  int* ring_pos;   /* rank -> ring position */
  const struct engine* engine;
  void* engine_state;
  struct plan_comm plan;      /* what the engine told the plan at comm_init (core/plan.h) */
  struct tuner_comm* tuner;   /* the tuner plugin's context for this comm (core/tuner.h), or NULL */
  struct profiler_comm* prof; /* the profiler plugin's (core/profiler.h), or NULL */
  /* The plan's last answer per collective (core/plan.c): repeated operations of one size skip
   * the cost model. key: the bytes + 1; 0 while there is none. */
  struct {
    size_t key;
    struct plan_op op;
  } plan_last[COLL_COUNT];
  ncclConfig_t config;
  char comm_name[128];
  ncclUniqueId init_id;
  pthread_t init_thread;
  int init_thread_live;
  pthread_mutex_t lock; /* redops, finalize */
  struct redop_slot redops[COMM_MAX_REDOPS];
  /* NCCL 2.29+ communicator state (core/comm_ext.h) */
  int grow_id_pending; /* ncclCommGetUniqueId made grow_id; no ncclCommGrow used it yet */
  ncclUniqueId grow_id;
  int suspended;             /* ncclCommSuspend(NCCL_SUSPEND_MEM): the engine state is freed */
  int window_seq;            /* windows registered so far (under lock): the id of the next one */
  struct onesided* onesided; /* signals that arrived ahead of their ncclWaitSignal */
  /* group bookkeeping (owned by the thread that runs the group) */
  struct task* tasks;
  int ntasks, tasks_cap;
  int in_group;
};

/* Validate a comm pointer from the user: NULL, destroyed or unknown pointers are rejected with
 * ncclInvalidArgument and a sentence naming `fn`. A comm still initialising gives ncclInvalidUsage
 * unless allow_pending. */
ncclResult_t comm_check(struct ncclComm* comm, const char* fn, int allow_pending);
/* 1 if comm is a live communicator (quiet: no log line). */
int comm_is_live(struct ncclComm* comm);
/* A unique id for ncclGetUniqueId (its rendezvous: NCCL_COMM_ID or a root in this process), and
 * one for the nranks ranks of ncclCommInitAll, whose bootstrap stays inside this process. */
ncclResult_t comm_id_create(ncclUniqueId* id);
ncclResult_t comm_id_create_local(ncclUniqueId* id, int nranks);
/* comm_begin allocates and registers a comm (async_error = ncclInProgress); comm_connect runs
 * the bootstrap and engine setup and stores the result in async_error. comm_create does both:
 * inline for a blocking comm, on a thread for a nonblocking one (returning ncclInProgress). */
ncclResult_t comm_begin(struct ncclComm** out, int nranks, const ncclUniqueId* id, int rank,
                        const ncclConfig_t* config, int cuda_dev);
ncclResult_t comm_connect(struct ncclComm* comm);
ncclResult_t comm_create(struct ncclComm** out, int nranks, const ncclUniqueId* id, int rank,
                         const ncclConfig_t* config, int cuda_dev);
ncclResult_t comm_split(struct ncclComm* parent, int color, int key, struct ncclComm** out,
                        const ncclConfig_t* config);
ncclResult_t comm_split_deferred(struct ncclComm* parent, int color, int key, struct ncclComm** out,
                                 const ncclConfig_t* config);
ncclResult_t comm_shrink(struct ncclComm* parent, const int* exclude, int nexclude,
                         struct ncclComm** out, const ncclConfig_t* config, int flags);
ncclResult_t comm_finalize(struct ncclComm* comm);
void comm_abort(struct ncclComm* comm);
/* A failure the comm cannot recover from, found by any thread (a dead peer, a broken connection,
 * a kernel error): the first call WARNs `fmt`, keeps it for ncclGetLastError(comm), sets the
 * comm's asynchronous error to `res` and makes its pending and future operations stop (the
 * engine's abort: kernels leave their waits). Later calls are ignored. */
void comm_fail(struct ncclComm* comm, ncclResult_t res, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
void comm_free(struct ncclComm* comm);
/* Frees the windows and one-sided state of the comm (core/comm_ext.c). */
void comm_ext_free(struct ncclComm* comm);
ncclResult_t comm_config_parse(const ncclConfig_t* user, ncclConfig_t* out);

/* Errors: remember the cause on the comm too (ncclGetLastError(comm)). */
static inline int comm_aborted(const struct ncclComm* comm) {
  return __atomic_load_n(&comm->abort_flag, __ATOMIC_ACQUIRE);
}

#endif
