/* SPDX-License-Identifier: BSD-3-Clause */
/* The nccl*Config collectives: the plain collectives with per-call options (ncclCollConfig_t).
 * The options are checked here and travel in the task: algSelection becomes the task's
 * algo_mask (core/algo.c picks among those by the cost model), minCTAs/maxCTAs/CTAPolicy narrow
 * the comm's thread-block limits for this call (GPU engine; NCCL_CTA_POLICY_ZERO moves it to the
 * copy engines), launchCompletionEvent is recorded when the GPU engine launches the call. */
#include <stddef.h>
#include <string.h>
#include "api/api.h"
#include "core/algo.h"
#include "core/comm.h"
#include "core/plan_choose.h"
#include "core/tune.h"
#include "util/check.h"
#include "util/param.h"

#define EXT_MAX 4096 /* a longer ext list is taken for a loop */

static int undef(int v) {
  return v == NCCL_CONFIG_UNDEF_INT;
}

static ncclResult_t check_ext(const ncclConfigExt_t* e, const char* fn) {
  for (int n = 0; e != NULL; e = e->next, n++) {
    if (n == EXT_MAX) {
      WARN("%s: config->ext has more than %d options; the list must end with next = NULL", fn,
           EXT_MAX);
      return ncclInvalidArgument;
    }
    for (const ncclConfigExt_t* d = e->next; d != NULL && n < EXT_MAX; d = d->next, n++) {
      if (d->key.vendorId == e->key.vendorId && d->key.optionId == e->key.optionId) {
        WARN("%s: config->ext holds key (vendor %d, option %d) twice; each key may appear once", fn,
             e->key.vendorId, e->key.optionId);
        return ncclInvalidArgument;
      }
    }
  }
  return ncclSuccess; /* Monel defines no vendor option: every key is ignored */
}

static ncclResult_t check_ctas(ncclComm_t comm, const ncclCollConfig_t* c, struct task* o,
                               const char* fn) {
  struct tune_cta_limits l =
      tune_cta_limits(param_int(PARAM_MIN_CTAS), param_int(PARAM_MAX_CTAS), &comm->config,
                      param_int(PARAM_MIN_NCHANNELS), param_int(PARAM_MAX_NCHANNELS));
  if (!undef(c->minCTAs) && (c->minCTAs < 1 || c->minCTAs > l.max)) {
    WARN("%s: config->minCTAs is %d; it must be within 1..%d (the comm's maxCTAs)", fn, c->minCTAs,
         l.max);
    return ncclInvalidArgument;
  }
  if (!undef(c->maxCTAs) && (c->maxCTAs < 1 || c->maxCTAs > l.max)) {
    WARN("%s: config->maxCTAs is %d; it must be within 1..%d (the comm's maxCTAs)", fn, c->maxCTAs,
         l.max);
    return ncclInvalidArgument;
  }
  if (!undef(c->minCTAs) && !undef(c->maxCTAs) && c->minCTAs > c->maxCTAs) {
    WARN("%s: config->minCTAs (%d) is larger than config->maxCTAs (%d)", fn, c->minCTAs,
         c->maxCTAs);
    return ncclInvalidArgument;
  }
  if (!undef(c->nvlsCTAs) && c->nvlsCTAs < 1) {
    WARN("%s: config->nvlsCTAs is %d; it must be at least 1", fn, c->nvlsCTAs);
    return ncclInvalidArgument;
  }
  if (!undef(c->cgaClusterSize) && (c->cgaClusterSize < 0 || c->cgaClusterSize > 8)) {
    WARN("%s: config->cgaClusterSize is %d; it must be within 0..8", fn, c->cgaClusterSize);
    return ncclInvalidArgument;
  }
  int known = NCCL_CTA_POLICY_EFFICIENCY | NCCL_CTA_POLICY_ZERO;
  if (!undef(c->CTAPolicy) && (c->CTAPolicy < 0 || (c->CTAPolicy & ~known))) {
    WARN("%s: config->CTAPolicy is 0x%x; it must be a combination of NCCL_CTA_POLICY_* bits", fn,
         (unsigned)c->CTAPolicy);
    return ncclInvalidArgument;
  }
  if (!undef(c->minCTAs)) o->cta_min = c->minCTAs;
  if (!undef(c->maxCTAs)) o->cta_max = c->maxCTAs;
  if (!undef(c->CTAPolicy)) o->cta_policy = c->CTAPolicy + 1;
  return ncclSuccess;
}

/* algSelection (NCCL_ALGO's syntax) -> o->algo_mask. Collectives without a choice of algorithm
 * (AlltoAll, Gather, Scatter) ignore it. */
static ncclResult_t check_algo(ncclComm_t comm, enum coll_kind coll, const ncclCollConfig_t* c,
                               struct task* o, const char* fn) {
  unsigned allowed[COLL_COUNT];
  char err[256];
  unsigned avail = plan_algos(comm, coll);
  if (c->algSelection == NULL || c->algSelection[0] == '\0' || avail == 0) return ncclSuccess;
  if (algo_parse(c->algSelection, allowed, err, sizeof err) != ncclSuccess) {
    WARN("%s: config->algSelection \"%s\" does not parse: %s", fn, c->algSelection, err);
    return ncclInvalidArgument;
  }
  unsigned mask = allowed[coll] & avail;
  if (mask != 0) {
    o->algo_mask = mask;
    return ncclSuccess;
  }
  if (c->forceAlgSelection != 0) {
    WARN("%s: config->algSelection \"%s\" leaves %s on rank %d no algorithm Monel has; choose "
         "one it runs (see NCCL_ALGO in docs/params.md) or set forceAlgSelection = 0 to let the "
         "library pick",
         fn, c->algSelection, coll_name(coll), comm->rank);
    return ncclInvalidArgument;
  }
  return ncclSuccess; /* not forced: the usual choice */
}

/* The options of `user` as a task template; NULL config: none. */
static ncclResult_t parse(ncclComm_t comm, enum coll_kind coll, const ncclCollConfig_t* user,
                          struct task* o, const char* fn) {
  ncclCollConfig_t c = NCCL_COLLCONFIG_INITIALIZER;
  memset(o, 0, sizeof *o);
  if (user == NULL) return ncclSuccess;
  NCCLCHECK(api_check_usable(comm, fn));
  if (user->magic != NCCL_API_MAGIC || user->size < offsetof(ncclCollConfig_t, minCTAs)) {
    WARN("%s: config was not initialized with NCCL_COLLCONFIG_INITIALIZER (magic 0x%x, size %zu)",
         fn, user->magic, user->size);
    return ncclInvalidArgument;
  }
  /* Fields newer than the caller's struct keep their defaults. */
  memcpy(&c, user, user->size < sizeof c ? user->size : sizeof c);
  NCCLCHECK(check_ext(c.ext, fn));
  NCCLCHECK(check_ctas(comm, &c, o, fn));
  NCCLCHECK(check_algo(comm, coll, &c, o, fn));
  if (c.launchCompletionEvent != NULL && !comm->engine->enqueue_only) {
    /* The CPU engine uses no GPU: the call runs on host threads and is over when it (or its
     * group) returns; there is no launch on a stream for an event to mark. */
    WARN("%s: config->launchCompletionEvent is set, but comm %p runs on Monel's CPU engine, "
         "which launches nothing on a CUDA stream (the call is complete when it, or its group, "
         "returns); leave it NULL",
         fn, (void*)comm);
    return ncclInvalidUsage;
  }
  o->launch_event = c.launchCompletionEvent; /* the GPU engine checks it (gpu/task_check.c) */
  o->user_tag = c.userProfilerTag; /* handed to a v7 profiler plugin as is (core/profiler.c) */
  return ncclSuccess;
}

static ncclResult_t run(enum coll_kind coll, const void* s, void* r, size_t count,
                        ncclDataType_t dt, ncclRedOp_t op, int root, ncclComm_t comm,
                        cudaStream_t stream, const ncclCollConfig_t* config, const char* fn) {
  struct task o;
  NCCLCHECK(parse(comm, coll, config, &o, fn));
  return api_enqueue(coll, s, r, count, dt, op, root, comm, stream, fn, &o);
}

NCCL_API(ncclResult_t, ncclAllReduceConfig, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
         const ncclCollConfig_t* config) {
  return run(COLL_ALLREDUCE, sendbuff, recvbuff, count, datatype, op, 0, comm, stream, config,
             "ncclAllReduceConfig");
}

NCCL_API(ncclResult_t, ncclBroadcastConfig, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream,
         const ncclCollConfig_t* config) {
  return run(COLL_BROADCAST, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream,
             config, "ncclBroadcastConfig");
}

NCCL_API(ncclResult_t, ncclReduceConfig, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream,
         const ncclCollConfig_t* config) {
  return run(COLL_REDUCE, sendbuff, recvbuff, count, datatype, op, root, comm, stream, config,
             "ncclReduceConfig");
}

NCCL_API(ncclResult_t, ncclAllGatherConfig, const void* sendbuff, void* recvbuff, size_t sendcount,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream,
         const ncclCollConfig_t* config) {
  return run(COLL_ALLGATHER, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0, comm, stream,
             config, "ncclAllGatherConfig");
}

NCCL_API(ncclResult_t, ncclReduceScatterConfig, const void* sendbuff, void* recvbuff,
         size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
         cudaStream_t stream, const ncclCollConfig_t* config) {
  return run(COLL_REDUCESCATTER, sendbuff, recvbuff, recvcount, datatype, op, 0, comm, stream,
             config, "ncclReduceScatterConfig");
}

NCCL_API(ncclResult_t, ncclAlltoAllConfig, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream,
         const ncclCollConfig_t* config) {
  return run(COLL_ALLTOALL, sendbuff, recvbuff, count, datatype, ncclSum, 0, comm, stream, config,
             "ncclAlltoAllConfig");
}

NCCL_API(ncclResult_t, ncclGatherConfig, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream,
         const ncclCollConfig_t* config) {
  return run(COLL_GATHER, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream, config,
             "ncclGatherConfig");
}

NCCL_API(ncclResult_t, ncclScatterConfig, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream,
         const ncclCollConfig_t* config) {
  return run(COLL_SCATTER, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream, config,
             "ncclScatterConfig");
}
