/* SPDX-License-Identifier: BSD-3-Clause */
/* Exported functions: version, unique id, communicator creation and life cycle, queries. */
#include <stdlib.h>
#include <string.h>
#include "api/api.h"
#include "util/check.h"
#include "core/comm.h"
#include "core/group.h"
#include "core/version.h"
#include "core/engine.h"
#include "core/node_topo.h"

NCCL_API(ncclResult_t, ncclGetVersion, int* version) {
  if (version == NULL) {
    WARN("ncclGetVersion: version is NULL");
    return ncclInvalidArgument;
  }
  version_banner();
  *version = VERSION_NCCL_CODE; /* core/version.h: the API implemented in full */
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclGetUniqueId, ncclUniqueId* uniqueId) {
  NCCLCHECK(api_check_ptr(uniqueId, "uniqueId", "ncclGetUniqueId"));
  version_banner();
  return comm_id_create(uniqueId);
}

static ncclResult_t init_rank(ncclComm_t* newcomm, int nranks, const ncclUniqueId* id, int rank,
                              const ncclConfig_t* config, const char* fn) {
  NCCLCHECK(api_check_ptr(newcomm, "newcomm", fn));
  *newcomm = NULL;
  if (nranks < 1) {
    WARN("%s: nranks is %d; it must be at least 1", fn, nranks);
    return ncclInvalidArgument;
  }
  NCCLCHECK(api_check_rank(rank, nranks, "rank", fn));
  version_banner();
  int dev = engine_default_device();
  if (group_depth() > 0) {
    NCCLCHECK(comm_begin(newcomm, nranks, id, rank, config, dev));
    return group_add_init(*newcomm);
  }
  return comm_create(newcomm, nranks, id, rank, config, dev);
}

NCCL_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t* comm, int nranks, ncclUniqueId commId,
         int rank, ncclConfig_t* config) {
  return init_rank(comm, nranks, &commId, rank, config, "ncclCommInitRankConfig");
}

NCCL_API(ncclResult_t, ncclCommInitRank, ncclComm_t* comm, int nranks, ncclUniqueId commId,
         int rank) {
  return init_rank(comm, nranks, &commId, rank, NULL, "ncclCommInitRank");
}

NCCL_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t* newcomm, int nranks, int myrank,
         int nId, ncclUniqueId* commIds, ncclConfig_t* config) {
  const char* fn = "ncclCommInitRankScalable";
  NCCLCHECK(api_check_ptr(commIds, "commIds", fn));
  if (nId < 1) {
    WARN("%s: nId is %d; pass at least one unique id", fn, nId);
    return ncclInvalidArgument;
  }
  /* Every rank is given the same ids; the first one carries the rendezvous. */
  return init_rank(newcomm, nranks, &commIds[0], myrank, config, fn);
}

NCCL_API(ncclResult_t, ncclCommInitAll, ncclComm_t* comms, int ndev, const int* devlist) {
  const char* fn = "ncclCommInitAll";
  NCCLCHECK(api_check_ptr(comms, "comms", fn));
  if (ndev < 1) {
    WARN("%s: ndev is %d; it must be at least 1", fn, ndev);
    return ncclInvalidArgument;
  }
  /* As NCCL: the first ndev GPUs, or devlist's, each one this process sees (Monel also lets
   * entries repeat a GPU). Without GPUs every rank runs on the CPU engine and devlist is unused. */
  int ngpus = engine_gpu_count();
  if (ngpus > 0 && devlist == NULL && ndev > ngpus) {
    WARN("%s: ndev is %d but this process sees %d GPU%s: pass at most %d, or a devlist (ranks may "
         "share a GPU)",
         fn, ndev, ngpus, ngpus == 1 ? "" : "s", ngpus);
    return ncclInvalidArgument;
  }
  for (int i = 0; ngpus > 0 && devlist != NULL && i < ndev; i++)
    if (devlist[i] < 0 || devlist[i] >= ngpus) {
      WARN("%s: devlist[%d] is %d; this process sees GPUs 0 to %d", fn, i, devlist[i], ngpus - 1);
      return ncclInvalidArgument;
    }
  version_banner();
  ncclUniqueId id;
  NCCLCHECK(comm_id_create_local(&id, ndev));
  ncclResult_t res = ncclSuccess;
  NCCLCHECK(group_start());
  for (int i = 0; i < ndev; i++) {
    int dev = ngpus == 0 ? -1 : devlist ? devlist[i] : i;
    comms[i] = NULL;
    res = comm_begin(&comms[i], ndev, &id, i, NULL, dev);
    if (res != ncclSuccess) break;
    group_add_init(comms[i]);
  }
  ncclResult_t end = group_end();
  if (res == ncclSuccess) res = end;
  if (res != ncclSuccess)
    for (int i = 0; i < ndev; i++) {
      comm_free(comms[i]);
      comms[i] = NULL;
    }
  return res;
}

NCCL_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm) {
  NCCLCHECK(comm_check(comm, "ncclCommFinalize", 0));
  ncclResult_t res = comm_finalize(comm);
  return res;
}

NCCL_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm) {
  if (comm == NULL) return ncclSuccess;
  NCCLCHECK(comm_check(comm, "ncclCommDestroy", 1));
  group_drop_comm(comm);
  comm_free(comm);
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommAbort, ncclComm_t comm) {
  if (comm == NULL) return ncclSuccess;
  NCCLCHECK(comm_check(comm, "ncclCommAbort", 1));
  group_drop_comm(comm);
  comm_abort(comm);
  comm_free(comm);
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommRevoke, ncclComm_t comm, int revokeFlags) {
  NCCLCHECK(comm_check(comm, "ncclCommRevoke", 1));
  if (revokeFlags != NCCL_REVOKE_DEFAULT) {
    WARN("ncclCommRevoke: revokeFlags 0x%x is unknown; pass NCCL_REVOKE_DEFAULT", revokeFlags);
    return ncclInvalidArgument;
  }
  comm_abort(comm);
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
         ncclConfig_t* config) {
  NCCLCHECK(comm_check(comm, "ncclCommSplit", 0));
  NCCLCHECK(api_check_ptr(newcomm, "newcomm", "ncclCommSplit"));
  if (group_depth() > 0) return comm_split_deferred(comm, color, key, newcomm, config);
  return comm_split(comm, color, key, newcomm, config);
}

NCCL_API(ncclResult_t, ncclCommShrink, ncclComm_t comm, int* excludeRanksList,
         int excludeRanksCount, ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  NCCLCHECK(comm_check(comm, "ncclCommShrink", 0));
  NCCLCHECK(api_check_ptr(newcomm, "newcomm", "ncclCommShrink"));
  if (excludeRanksCount < 0 || (excludeRanksCount > 0 && excludeRanksList == NULL)) {
    WARN("ncclCommShrink: excludeRanksCount is %d with list %p", excludeRanksCount,
         (void*)excludeRanksList);
    return ncclInvalidArgument;
  }
  return comm_shrink(comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags);
}

NCCL_API(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t* asyncError) {
  NCCLCHECK(comm_check(comm, "ncclCommGetAsyncError", 1));
  NCCLCHECK(api_check_ptr(asyncError, "asyncError", "ncclCommGetAsyncError"));
  *asyncError = __atomic_load_n(&comm->async_error, __ATOMIC_ACQUIRE);
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count) {
  NCCLCHECK(comm_check(comm, "ncclCommCount", 0));
  NCCLCHECK(api_check_ptr(count, "count", "ncclCommCount"));
  *count = comm->nranks;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int* device) {
  NCCLCHECK(comm_check(comm, "ncclCommCuDevice", 0));
  NCCLCHECK(api_check_ptr(device, "device", "ncclCommCuDevice"));
  *device = comm->cuda_dev;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int* rank) {
  NCCLCHECK(comm_check(comm, "ncclCommUserRank", 0));
  NCCLCHECK(api_check_ptr(rank, "rank", "ncclCommUserRank"));
  *rank = comm->rank;
  return ncclSuccess;
}

NCCL_API(const char*, ncclGetErrorString, ncclResult_t result) {
  switch (result) {
  case ncclSuccess:
    return "no error";
  case ncclUnhandledCudaError:
    return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
  case ncclSystemError:
    return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
  case ncclInternalError:
    return "internal error - please report this issue to the Monel developers";
  case ncclInvalidArgument:
    return "invalid argument (run with NCCL_DEBUG=WARN for details)";
  case ncclInvalidUsage:
    return "invalid usage (run with NCCL_DEBUG=WARN for details)";
  case ncclRemoteError:
    return "remote process exited or there was a network error";
  case ncclInProgress:
    return "NCCL operation in progress";
  case ncclTimeout:
    return "operation timed out";
  default:
    return "unknown result code";
  }
}

NCCL_API(const char*, ncclGetLastError, ncclComm_t comm) {
  /* A comm that failed on its own (a dead peer found while the user was elsewhere) says why. */
  if (comm_is_live(comm) && __atomic_load_n(&comm->failed, __ATOMIC_ACQUIRE)) return comm->fail_msg;
  return log_last_error();
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
NCCL_API(void, ncclResetDebugInit, void) {
  log_reset();
}
#pragma GCC diagnostic pop

NCCL_API(ncclResult_t, ncclMonelGetVersionString, const char** version) {
  NCCLCHECK(api_check_ptr(version, "version", "ncclMonelGetVersionString"));
  *version = version_string();
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclMonelCommGetEngine, ncclComm_t comm, const char** name) {
  NCCLCHECK(comm_check(comm, "ncclMonelCommGetEngine", 0));
  NCCLCHECK(api_check_ptr(name, "name", "ncclMonelCommGetEngine"));
  *name = comm->engine->name;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclMonelTopoInfo, char* buf, size_t len) {
  NCCLCHECK(api_check_ptr(buf, "buf", "ncclMonelTopoInfo"));
  if (len == 0) {
    WARN("ncclMonelTopoInfo: len is 0; pass the size of buf");
    return ncclInvalidArgument;
  }
  return node_topo_lines(buf, len, engine_gpu_of_busid);
}
