/* SPDX-License-Identifier: BSD-3-Clause */
/* The functions of the NCCL 2.28.9 API, as X-macro lists shared by the ABI
 * tests. Each name X stands for ncclX and pncclX. Keep in step with
 * include/nccl.h and include/monel.h; check_exports.sh finds the same lists by
 * parsing the headers, so a name missing here still cannot go unexported. */
#ifndef MONEL_TESTS_ABI_FUNCTIONS_H
#define MONEL_TESTS_ABI_FUNCTIONS_H

// clang-format off

/* Declared by NCCL's nccl.h. */
#define ABI_NCCL_FUNCTIONS(X) \
  X(MemAlloc)                 \
  X(MemFree)                  \
  X(GetVersion)               \
  X(GetUniqueId)              \
  X(CommInitRankConfig)       \
  X(CommInitRank)             \
  X(CommInitAll)              \
  X(CommInitRankScalable)     \
  X(CommFinalize)             \
  X(CommDestroy)              \
  X(CommAbort)                \
  X(CommRevoke)               \
  X(CommSplit)                \
  X(CommShrink)               \
  X(GetErrorString)           \
  X(GetLastError)             \
  X(ResetDebugInit)           \
  X(CommGetAsyncError)        \
  X(CommCount)                \
  X(CommCuDevice)             \
  X(CommUserRank)             \
  X(CommRegister)             \
  X(CommDeregister)           \
  X(CommWindowRegister)       \
  X(CommWindowDeregister)     \
  X(RedOpCreatePreMulSum)     \
  X(RedOpDestroy)             \
  X(Reduce)                   \
  X(Bcast)                    \
  X(Broadcast)                \
  X(AllReduce)                \
  X(ReduceScatter)            \
  X(AllGather)                \
  X(AlltoAll)                 \
  X(Gather)                   \
  X(Scatter)                  \
  X(Send)                     \
  X(Recv)                     \
  X(GroupStart)               \
  X(GroupEnd)                 \
  X(GroupSimulateEnd)

/* Added to nccl.h in 2.29-2.32. */
#define ABI_NCCL232_FUNCTIONS(X) \
  X(CommGetUniqueId)            \
  X(CommGrow)                   \
  X(CommSuspend)                \
  X(CommResume)                 \
  X(CommMemStats)               \
  X(WinGetUserPtr)              \
  X(AllReduceConfig)            \
  X(BroadcastConfig)            \
  X(ReduceConfig)               \
  X(AllGatherConfig)            \
  X(ReduceScatterConfig)        \
  X(AlltoAllConfig)             \
  X(GatherConfig)               \
  X(ScatterConfig)              \
  X(PutSignal)                  \
  X(Signal)                     \
  X(WaitSignal)                 \
  X(SetEncryption)              \
  X(ParamBind)                  \
  X(ParamGetI8)                 \
  X(ParamGetI16)                \
  X(ParamGetI32)                \
  X(ParamGetI64)                \
  X(ParamGetU8)                 \
  X(ParamGetU16)                \
  X(ParamGetU32)                \
  X(ParamGetU64)                \
  X(ParamGetStr)                \
  X(ParamGet)                   \
  X(ParamGetParameter)          \
  X(ParamGetAllParameterKeys)   \
  X(ParamDumpAll)

/* Host functions of the 2.32 device API (nccl_device/host.h), with their host type. */
#define ABI_HOST232_FUNCTIONS(X)                                                                  \
  X(CommQueryProperties, ncclResult_t (*)(ncclComm_t, ncclCommProperties_t*))                     \
  X(GetLsaMultimemDevicePointer, ncclResult_t (*)(ncclWindow_t, size_t, void**))                  \
  X(GetMultimemDevicePointer, ncclResult_t (*)(ncclWindow_t, size_t, ncclMultimemHandle_t, void**)) \
  X(GetLsaDevicePointer, ncclResult_t (*)(ncclWindow_t, size_t, int, void**))                     \
  X(GetPeerDevicePointer, ncclResult_t (*)(ncclWindow_t, size_t, int, void**))                    \
  X(GetMultimemDeviceLeInfo, ncclResult_t (*)(ncclWindow_t, size_t, ncclCftLeId*, size_t*))       \
  X(GetCftDeviceLeInfo,                                                                           \
    ncclResult_t (*)(ncclWindow_t, size_t, int, ncclTeam_t, ncclCftLeId*, size_t*))               \
  X(GetPeerDeviceLeInfo, ncclResult_t (*)(ncclWindow_t, size_t, int, ncclCftLeId*, size_t*))      \
  X(TeamCft, ncclTeam_t (*)(ncclComm_t, ncclCftTeamMode_t))                                       \
  X(TeamCftMultimem, ncclTeam_t (*)(ncclComm_t))

/* Host side of the device API, declared by NCCL's nccl_device headers. Those
 * overloaded for device code in C++ are in the second list, with the type of
 * the host function. */
#define ABI_DEVICE_FUNCTIONS(X)  \
  X(DevCommCreate)               \
  X(DevCommDestroy)              \
  X(LsaBarrierCreateRequirement) \
  X(GinBarrierCreateRequirement) \
  X(LLA2ACalcSlots)              \
  X(LLA2ACreateRequirement)
#define ABI_DEVICE_OVERLOADED_FUNCTIONS(X)                 \
  X(TeamWorld, ncclTeam_t (*)(ncclComm_t))                 \
  X(TeamLsa, ncclTeam_t (*)(ncclComm_t))                   \
  X(TeamRail, ncclTeam_t (*)(ncclComm_t))                  \
  X(TeamRankToWorld, int (*)(ncclComm_t, ncclTeam_t, int)) \
  X(TeamRankToLsa, int (*)(ncclComm_t, ncclTeam_t, int))

/* Monel's additions (monel.h). */
#define ABI_MONEL_FUNCTIONS(X) \
  X(AlltoAllv)                 \
  X(MonelGetVersionString)     \
  X(MonelCommGetEngine)

// clang-format on

#endif
