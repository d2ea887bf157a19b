/* SPDX-License-Identifier: BSD-3-Clause */
/* Exported functions: reduction op handles, memory, registration, windows, group simulation and
 * the host side of NCCL's device API. */
#include <stdlib.h>
#include <string.h>
#include "api/api.h"
#include "util/check.h"
#include "core/comm.h"
#include "core/group.h"
#include "core/mem.h"
#include "core/redop.h"

NCCL_API(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t* op, void* scalar,
         ncclDataType_t datatype, ncclScalarResidence_t residence, ncclComm_t comm) {
  const char* fn = "ncclRedOpCreatePreMulSum";
  NCCLCHECK(comm_check(comm, fn, 0));
  NCCLCHECK(api_check_ptr(op, "op", fn));
  NCCLCHECK(api_check_ptr(scalar, "scalar", fn));
  NCCLCHECK(api_check_dtype(datatype, fn));
  return redop_create_premulsum(comm, op, scalar, datatype, residence);
}

NCCL_API(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t op, ncclComm_t comm) {
  NCCLCHECK(comm_check(comm, "ncclRedOpDestroy", 0));
  return redop_destroy(comm, op);
}

NCCL_API(ncclResult_t, ncclMemAlloc, void** ptr, size_t size) {
  NCCLCHECK(api_check_ptr(ptr, "ptr", "ncclMemAlloc"));
  return mem_alloc(ptr, size);
}

NCCL_API(ncclResult_t, ncclMemFree, void* ptr) {
  if (ptr == NULL) return ncclSuccess;
  return mem_free(ptr);
}

/* Registration: Monel records the range; engines may use it later to skip copies. */
struct reg_handle {
  struct ncclComm* comm;
  void* buff;
  size_t size;
};

NCCL_API(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void* buff, size_t size,
         void** handle) {
  NCCLCHECK(comm_check(comm, "ncclCommRegister", 0));
  NCCLCHECK(api_check_ptr(handle, "handle", "ncclCommRegister"));
  struct reg_handle* h = NULL;
  NCCLCALLOC(h, 1);
  *h = (struct reg_handle){comm, buff, size};
  *handle = h;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void* handle) {
  NCCLCHECK(comm_check(comm, "ncclCommDeregister", 0));
  struct reg_handle* h = handle;
  if (h == NULL || h->comm != comm) {
    WARN("ncclCommDeregister: handle %p was not registered on comm %p", handle, (void*)comm);
    return ncclInvalidArgument;
  }
  free(h);
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t* simInfo) {
  NCCLCHECK(api_check_ptr(simInfo, "simInfo", "ncclGroupSimulateEnd"));
  if (simInfo->magic != 0x74685283u) {
    WARN("ncclGroupSimulateEnd: simInfo was not initialized with NCCL_SIM_INFO_INITIALIZER");
    return ncclInvalidArgument;
  }
  float us = 0;
  NCCLCHECK(group_simulate_end(&us));
  simInfo->estimatedTime = us;
  return ncclSuccess;
}

/* ---- host side of the device API: Monel has no device-side API yet ---- */
static ncclResult_t no_device_api(const char* fn) {
  WARN("%s: Monel does not support NCCL's device API (ncclDevComm) yet; use the host API "
       "collectives",
       fn);
  return ncclInvalidUsage;
}

NCCL_API(ncclResult_t, ncclDevCommCreate, ncclComm_t comm, const ncclDevCommRequirements_t* reqs,
         ncclDevComm_t* outDevComm) {
  return no_device_api("ncclDevCommCreate");
}

NCCL_API(ncclResult_t, ncclDevCommDestroy, ncclComm_t comm, const ncclDevComm_t* devComm) {
  return no_device_api("ncclDevCommDestroy");
}

static ncclTeam_t team(ncclComm_t comm, int stride_world) {
  ncclTeam_t t = {1, 0, 1};
  if (comm_check(comm, "ncclTeam", 0) != ncclSuccess) return t;
  if (stride_world) return (ncclTeam_t){1, 0, comm->nranks};
  return (ncclTeam_t){comm->nranks, comm->rank, 1};
}

/* Every rank of a comm is in its world team; Monel reports one load/store domain. */
NCCL_API(ncclTeam_t, ncclTeamWorld, ncclComm_t comm) {
  return team(comm, 0);
}
NCCL_API(ncclTeam_t, ncclTeamLsa, ncclComm_t comm) {
  return team(comm, 0);
}
NCCL_API(ncclTeam_t, ncclTeamRail, ncclComm_t comm) {
  return team(comm, 1);
}

NCCL_API(int, ncclTeamRankToWorld, ncclComm_t comm, ncclTeam_t t, int rank) {
  if (comm_check(comm, "ncclTeamRankToWorld", 0) != ncclSuccess) return -1;
  return comm->rank + (rank - t.rank) * t.stride;
}

NCCL_API(int, ncclTeamRankToLsa, ncclComm_t comm, ncclTeam_t t, int rank) {
  if (comm_check(comm, "ncclTeamRankToLsa", 0) != ncclSuccess) return -1;
  return comm->rank + (rank - t.rank) * t.stride;
}

NCCL_API(ncclResult_t, ncclLsaBarrierCreateRequirement, ncclTeam_t t, int nBarriers,
         ncclLsaBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq) {
  return no_device_api("ncclLsaBarrierCreateRequirement");
}

NCCL_API(ncclResult_t, ncclGinBarrierCreateRequirement, ncclComm_t comm, ncclTeam_t t,
         int nBarriers, ncclGinBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq) {
  return no_device_api("ncclGinBarrierCreateRequirement");
}

NCCL_API(int, ncclLLA2ACalcSlots, int maxElts, int maxEltSize) {
  /* One 16-byte slot carries 8 bytes of payload in the low-latency format. */
  if (maxElts <= 0 || maxEltSize <= 0) return 0;
  long long bytes = (long long)maxElts * maxEltSize;
  return (int)((bytes + 7) / 8);
}

NCCL_API(ncclResult_t, ncclLLA2ACreateRequirement, int nBlocks, int nSlots,
         ncclLLA2AHandle_t* outHandle, ncclDevResourceRequirements_t* outReq) {
  return no_device_api("ncclLLA2ACreateRequirement");
}
