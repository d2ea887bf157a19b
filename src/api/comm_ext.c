/* SPDX-License-Identifier: BSD-3-Clause */
/* Exported communicator calls of NCCL 2.29-2.32: grow, suspend/resume and memory statistics,
 * properties, and socket encryption. */
#include <string.h>
#include "api/api.h"
#include "core/comm.h"
#include "core/comm_ext.h"
#include "core/group.h"
#include "util/check.h"
#include "util/log.h"

NCCL_API(ncclResult_t, ncclCommGetUniqueId, ncclComm_t comm, ncclUniqueId* uniqueId) {
  const char* fn = "ncclCommGetUniqueId";
  NCCLCHECK(api_check_usable(comm, fn));
  NCCLCHECK(api_check_ptr(uniqueId, "uniqueId", fn));
  return comm_grow_id(comm, uniqueId);
}

NCCL_API(ncclResult_t, ncclCommGrow, ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId,
         int rank, ncclComm_t* newcomm, ncclConfig_t* config) {
  const char* fn = "ncclCommGrow";
  NCCLCHECK(api_check_ptr(newcomm, "newcomm", fn));
  *newcomm = NULL;
  if (comm == NULL) { /* a rank joining the grown comm */
    if (uniqueId == NULL) {
      WARN("%s: a new rank (comm NULL) must pass the uniqueId the root made with "
           "ncclCommGetUniqueId",
           fn);
      return ncclInvalidArgument;
    }
    if (rank < 0 || rank >= nRanks) {
      WARN("%s: a new rank (comm NULL) must pass its rank in the grown comm, within [0, %d); got "
           "%d",
           fn, nRanks, rank);
      return ncclInvalidArgument;
    }
    return pncclCommInitRankConfig(newcomm, nRanks, *uniqueId, rank, config);
  }
  NCCLCHECK(api_check_usable(comm, fn));
  if (rank != -1) {
    WARN("%s: a rank of the existing comm keeps its number and must pass rank = -1, got %d", fn,
         rank);
    return ncclInvalidArgument;
  }
  if (nRanks <= comm->nranks) {
    WARN("%s: nRanks is %d; growing a comm of %d ranks needs more than %d", fn, nRanks,
         comm->nranks, comm->nranks);
    return ncclInvalidArgument;
  }
  if (group_depth() > 0) {
    WARN("%s: cannot be called inside ncclGroupStart/ncclGroupEnd on Monel; call it outside a "
         "group",
         fn);
    return ncclInvalidUsage;
  }
  return comm_grow(comm, nRanks, uniqueId, newcomm, config ? config : &comm->config);
}

NCCL_API(ncclResult_t, ncclCommSuspend, ncclComm_t comm, int flags) {
  const char* fn = "ncclCommSuspend";
  NCCLCHECK(comm_check(comm, fn, 0));
  if (flags & ~NCCL_SUSPEND_MEM) {
    WARN("%s: flags 0x%x has unknown bits; the only flag is NCCL_SUSPEND_MEM", fn, (unsigned)flags);
    return ncclInvalidArgument;
  }
  if (group_depth() > 0) {
    WARN("%s: cannot be called inside ncclGroupStart/ncclGroupEnd", fn);
    return ncclInvalidUsage;
  }
  return comm_suspend(comm, flags);
}

NCCL_API(ncclResult_t, ncclCommResume, ncclComm_t comm) {
  const char* fn = "ncclCommResume";
  NCCLCHECK(comm_check(comm, fn, 0));
  if (group_depth() > 0) {
    WARN("%s: cannot be called inside ncclGroupStart/ncclGroupEnd", fn);
    return ncclInvalidUsage;
  }
  return comm_resume(comm);
}

/* Everything the engine holds for the comm can be suspended; Monel keeps nothing else in device
 * memory for a comm. */
NCCL_API(ncclResult_t, ncclCommMemStats, ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value) {
  const char* fn = "ncclCommMemStats";
  NCCLCHECK(comm_check(comm, fn, 0));
  NCCLCHECK(api_check_ptr(value, "value", fn));
  switch (stat) {
  case ncclStatGpuMemSuspend:
  case ncclStatGpuMemTotal:
    *value = comm->engine_dev_bytes;
    return ncclSuccess;
  case ncclStatGpuMemSuspended:
    *value = comm->suspended ? 1 : 0;
    return ncclSuccess;
  case ncclStatGpuMemPersist:
    *value = 0;
    return ncclSuccess;
  }
  WARN("%s: stat %d is not a value of ncclCommMemStat_t", fn, (int)stat);
  return ncclInvalidArgument;
}

NCCL_API(ncclResult_t, ncclCommQueryProperties, ncclComm_t comm, ncclCommProperties_t* props) {
  const char* fn = "ncclCommQueryProperties";
  NCCLCHECK(comm_check(comm, fn, 0));
  NCCLCHECK(api_check_ptr(props, "props", fn));
  if (props->magic != NCCL_API_MAGIC || props->size < offsetof(ncclCommProperties_t, rank)) {
    WARN("%s: props was not initialized with NCCL_COMM_PROPERTIES_INITIALIZER (magic 0x%x, size "
         "%zu)",
         fn, props->magic, props->size);
    return ncclInvalidArgument;
  }
  ncclCommProperties_t p;
  memset(&p, 0, sizeof p);
  p.size = props->size < sizeof p ? props->size : sizeof p;
  p.magic = NCCL_API_MAGIC;
  p.version = props->version;
  p.rank = comm->rank;
  p.nRanks = comm->nranks;
  p.cudaDev = comm->cuda_dev;
  p.nvmlDev = comm->cuda_dev; /* Monel does not renumber devices through NVML */
  p.deviceApiSupport = false; /* ncclDevCommCreate refuses */
  p.multimemSupport = false;  /* multicast memory stays off */
  p.ginType = NCCL_GIN_TYPE_NONE;
  p.nLsaTeams = 1;
  p.hostRmaSupport = true; /* ncclPutSignal & co, on both engines */
  p.railedGinType = NCCL_GIN_TYPE_NONE;
  p.commHash = comm->comm_hash;
  p.ginMinStride = 0;
  p.ginConnectionType = NCCL_GIN_CONNECTION_NONE;
  p.devCommRuntimeVersionSize = 0;
  /* Only the caller's part of the struct is written (an older, smaller one too). */
  memcpy(props, &p, p.size);
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclSetEncryption, const ncclEncryptionConfig_t* config) {
  const char* fn = "ncclSetEncryption";
  NCCLCHECK(api_check_ptr(config, "config", fn));
  if (config->magic != NCCL_API_MAGIC || config->size < offsetof(ncclEncryptionConfig_t, mode)) {
    WARN("%s: config was not initialized with NCCL_ENCRYPTION_CONFIG_INITIALIZER", fn);
    return ncclInvalidArgument;
  }
  int mode = config->size >= offsetof(ncclEncryptionConfig_t, psk) ? config->mode : 0;
  if (mode == NCCL_ENCRYPTION_MODE_NONE) return ncclSuccess; /* plain text: what Monel does */
  if (mode != NCCL_ENCRYPTION_MODE_PSK) {
    WARN("%s: mode %d is not a value of ncclEncryptionMode_t", fn, mode);
    return ncclInvalidArgument;
  }
  WARN("%s: Monel cannot encrypt its TCP sockets (no TLS support is built in); use a network that "
       "is private to the job, or NVIDIA's NCCL, when encryption is required",
       fn);
  return ncclInvalidUsage;
}

/* NCCL's library exports this older name of ncclResetDebugInit (no header declares it). */
NCCL_API(void, ncclResetDebugInitInternal, void) {
  log_reset();
}
