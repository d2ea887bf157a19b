/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * abi_facts.c - writes a table of ABI facts about one nccl.h.
 *
 * The same text is compiled four times: against NVIDIA's header
 * (ABI_SIDE_NVIDIA) or Monel's (ABI_SIDE_MONEL), as C or as C++ (abi_facts.cc).
 * abi_header.c then compares the tables entry by entry. The two headers never
 * meet in one translation unit.
 *
 * Fact names: "enum.X", "const.X", "size.T", "off.T.f", "init.*" are produced
 * in both languages; names starting with "cxx." only in C++ (typeid names of
 * types and signatures); names starting with "dev." concern the host side of
 * the device API (NVIDIA keeps those types in C++-only headers).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#if defined(ABI_SIDE_NVIDIA)
/* NCCL 2.32 declares ncclResetDebugInit only for Linux builds, which define this. */
#ifndef NCCL_OS_LINUX
#define NCCL_OS_LINUX 1
#endif
#include <nccl.h>
#if defined(MONEL_NCCL_H)
#error "the NVIDIA side found Monel's nccl.h: its include path must hold only NVIDIA's headers"
#endif
#if defined(__cplusplus) && defined(__has_include) && NCCL_VERSION_CODE < 22900
#if __has_include(<nccl_device/impl/comm__types.h>)
#include <nccl_device/impl/comm__types.h>
#define ABI_HAVE_DEVICE_TYPES 1
#endif
#endif
/* From 2.29 on, NVIDIA's device-API structs changed shape; Monel, which has no device API, keeps
 * those of 2.28, so only the types the 2.32 host functions use are compared (ABI_HAVE_HOST232). */
#if defined(__cplusplus) && defined(__has_include) && NCCL_VERSION_CODE >= 23200
#if __has_include(<nccl_device/host.h>)
#include <nccl_device.h>
#define ABI_HAVE_HOST232 1
#endif
#endif
#elif defined(ABI_SIDE_MONEL)
#include "nccl.h"
#include "monel.h"
#if !defined(MONEL_NCCL_H)
#error "the Monel side found another nccl.h: put Monel's include directory first"
#endif
#define ABI_HAVE_DEVICE_TYPES 1
#ifdef __cplusplus
#define ABI_HAVE_HOST232 1
#endif
#else
#error "define ABI_SIDE_NVIDIA or ABI_SIDE_MONEL"
#endif

#include "abi_facts.h"
#include "abi_functions.h"

#ifdef __cplusplus
#include <type_traits>
#include <typeinfo>
#define ABI_ALIGNOF(T) alignof(T)
#define ABI_LANG       cxx
#else
#define ABI_ALIGNOF(T) _Alignof(T)
#define ABI_LANG       c
#endif

#if defined(ABI_SIDE_NVIDIA)
#define ABI_SIDE nvidia
#else
#define ABI_SIDE monel
#endif
#define ABI_CAT3(a, b, c) a##_##b##_##c
#define ABI_NAME(a, b, c) ABI_CAT3(a, b, c)
#define ABI_FACTS_FN      ABI_NAME(abi_facts, ABI_SIDE, ABI_LANG)

#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif

static void emit_int(abi_emit_fn emit, void* ctx, const char* name, long long v) {
  char buf[32];
  snprintf(buf, sizeof buf, "%lld", v);
  emit(ctx, name, buf);
}

static void emit_float(abi_emit_fn emit, void* ctx, const char* name, double v) {
  char buf[64];
  snprintf(buf, sizeof buf, "%a", v);
  emit(ctx, name, buf);
}

static void emit_bytes(abi_emit_fn emit, void* ctx, const char* name, const void* p, size_t n) {
  char buf[512];
  const unsigned char* b = (const unsigned char*)p;
  size_t i;
  buf[0] = '\0';
  for (i = 0; i < n && 2 * i + 2 < sizeof buf; i++) snprintf(buf + 2 * i, 3, "%02x", b[i]);
  emit(ctx, name, buf);
}

#define NUM(name, expr) emit_int(emit, ctx, name, (long long)(expr))
#define ENUMV(e)        NUM("enum." #e, e)
#define CONSTV(m)       NUM("const." #m, m)
#define LAYOUT(pre, T)                                                                             \
  do {                                                                                             \
    NUM(pre "size." #T, sizeof(T));                                                                \
    NUM(pre "align." #T, ABI_ALIGNOF(T));                                                          \
  } while (0)
#define FIELD(pre, T, f)                                                                           \
  do {                                                                                             \
    NUM(pre "off." #T "." #f, offsetof(T, f));                                                     \
    NUM(pre "fsize." #T "." #f, sizeof(((T*)0)->f));                                               \
    CXX_FIELD_TYPE(pre, T, f);                                                                     \
  } while (0)

#ifdef __cplusplus
#define TNAME(pre, T) emit(ctx, pre "cxx.type." #T, typeid(T).name())
#define CXX_FIELD_TYPE(pre, T, f)                                                                  \
  emit(ctx, pre "cxx.ftype." #T "." #f, typeid(decltype(((T*)0)->f)).name())
#define CTYPE(m)    emit(ctx, "cxx.ctype." #m, typeid(m).name())
#define ENUMSIGN(T) NUM("cxx.enumsigned." #T, std::is_signed<std::underlying_type<T>::type>::value)
#else
#define TNAME(pre, T)             ((void)0)
#define CXX_FIELD_TYPE(pre, T, f) ((void)0)
#define CTYPE(m)                  ((void)0)
#define ENUMSIGN(T)               ((void)0)
#endif

static void version_facts(abi_emit_fn emit, void* ctx) {
  CONSTV(NCCL_MAJOR);
  CONSTV(NCCL_MINOR);
  CONSTV(NCCL_PATCH);
  emit(ctx, "const.NCCL_SUFFIX", NCCL_SUFFIX);
  CONSTV(NCCL_VERSION_CODE);
  NUM("macro.NCCL_VERSION(1,2,3)", NCCL_VERSION(1, 2, 3));
  NUM("macro.NCCL_VERSION(2,8,4)", NCCL_VERSION(2, 8, 4));
  NUM("macro.NCCL_VERSION(2,9,0)", NCCL_VERSION(2, 9, 0));
  NUM("macro.NCCL_VERSION(2,28,9)", NCCL_VERSION(2, 28, 9));
  NUM("macro.NCCL_VERSION(3,0,0)", NCCL_VERSION(3, 0, 0));
  NUM("macro.NCCL_VERSION(2,8,99)", NCCL_VERSION(2, 8, 99));
  CTYPE(NCCL_VERSION_CODE);
  CTYPE(NCCL_VERSION(2, 28, 9));
  CTYPE(NCCL_SUFFIX);
}

static void constant_facts(abi_emit_fn emit, void* ctx) {
  NUM("const.NCCL_COMM_NULL", (NCCL_COMM_NULL) == NULL);
  CONSTV(NCCL_UNIQUE_ID_BYTES);
  CONSTV(NCCL_CONFIG_UNDEF_INT);
  NUM("const.NCCL_CONFIG_UNDEF_PTR", (NCCL_CONFIG_UNDEF_PTR) == NULL);
  CONSTV(NCCL_SPLIT_NOCOLOR);
  emit_float(emit, ctx, "const.NCCL_UNDEF_FLOAT", NCCL_UNDEF_FLOAT);
  CONSTV(NCCL_WIN_DEFAULT);
  CONSTV(NCCL_WIN_COLL_SYMMETRIC);
  CONSTV(NCCL_WIN_REQUIRED_ALIGNMENT);
  CONSTV(NCCL_CTA_POLICY_DEFAULT);
  CONSTV(NCCL_CTA_POLICY_EFFICIENCY);
  CONSTV(NCCL_CTA_POLICY_ZERO);
  CONSTV(NCCL_SHRINK_DEFAULT);
  CONSTV(NCCL_SHRINK_ABORT);
  CONSTV(NCCL_REVOKE_DEFAULT);
  CTYPE(NCCL_UNIQUE_ID_BYTES);
  CTYPE(NCCL_CONFIG_UNDEF_INT);
  CTYPE(NCCL_SPLIT_NOCOLOR);
  CTYPE(NCCL_UNDEF_FLOAT);
  CTYPE(NCCL_WIN_DEFAULT);
  CTYPE(NCCL_WIN_COLL_SYMMETRIC);
  CTYPE(NCCL_WIN_REQUIRED_ALIGNMENT);
  CTYPE(NCCL_CTA_POLICY_DEFAULT);
  CTYPE(NCCL_CTA_POLICY_EFFICIENCY);
  CTYPE(NCCL_CTA_POLICY_ZERO);
  CTYPE(NCCL_SHRINK_DEFAULT);
  CTYPE(NCCL_SHRINK_ABORT);
  CTYPE(NCCL_REVOKE_DEFAULT);
}

static void enum_facts(abi_emit_fn emit, void* ctx) {
  ENUMV(ncclSuccess);
  ENUMV(ncclUnhandledCudaError);
  ENUMV(ncclSystemError);
  ENUMV(ncclInternalError);
  ENUMV(ncclInvalidArgument);
  ENUMV(ncclInvalidUsage);
  ENUMV(ncclRemoteError);
  ENUMV(ncclInProgress);
  ENUMV(ncclNumResults);

  ENUMV(ncclNumOps_dummy);
  ENUMV(ncclSum);
  ENUMV(ncclProd);
  ENUMV(ncclMax);
  ENUMV(ncclMin);
  ENUMV(ncclAvg);
  ENUMV(ncclNumOps);
  ENUMV(ncclMaxRedOp);

  ENUMV(ncclInt8);
  ENUMV(ncclChar);
  ENUMV(ncclUint8);
  ENUMV(ncclInt32);
  ENUMV(ncclInt);
  ENUMV(ncclUint32);
  ENUMV(ncclInt64);
  ENUMV(ncclUint64);
  ENUMV(ncclFloat16);
  ENUMV(ncclHalf);
  ENUMV(ncclFloat32);
  ENUMV(ncclFloat);
  ENUMV(ncclFloat64);
  ENUMV(ncclDouble);
  ENUMV(ncclBfloat16);
  ENUMV(ncclFloat8e4m3);
  ENUMV(ncclFloat8e5m2);
  ENUMV(ncclNumTypes);

  ENUMV(ncclScalarDevice);
  ENUMV(ncclScalarHostImmediate);

  ENUMSIGN(ncclResult_t);
  ENUMSIGN(ncclRedOp_dummy_t);
  ENUMSIGN(ncclRedOp_t);
  ENUMSIGN(ncclDataType_t);
  ENUMSIGN(ncclScalarResidence_t);
}

static void type_facts(abi_emit_fn emit, void* ctx) {
  LAYOUT("", ncclComm_t);
  LAYOUT("", ncclWindow_t);
  LAYOUT("", cudaStream_t);
  LAYOUT("", ncclUniqueId);
  FIELD("", ncclUniqueId, internal);
  LAYOUT("", ncclResult_t);
  LAYOUT("", ncclRedOp_dummy_t);
  LAYOUT("", ncclRedOp_t);
  LAYOUT("", ncclDataType_t);
  LAYOUT("", ncclScalarResidence_t);
  TNAME("", ncclComm_t);
  TNAME("", ncclWindow_t);
  TNAME("", cudaStream_t);
  TNAME("", ncclUniqueId);
  TNAME("", ncclResult_t);
  TNAME("", ncclRedOp_dummy_t);
  TNAME("", ncclRedOp_t);
  TNAME("", ncclDataType_t);
  TNAME("", ncclScalarResidence_t);
  TNAME("", ncclConfig_t);
  TNAME("", ncclSimInfo_t);
}

static void config_facts(abi_emit_fn emit, void* ctx) {
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;

  LAYOUT("", ncclConfig_t);
  FIELD("", ncclConfig_t, size);
  FIELD("", ncclConfig_t, magic);
  FIELD("", ncclConfig_t, version);
  FIELD("", ncclConfig_t, blocking);
  FIELD("", ncclConfig_t, cgaClusterSize);
  FIELD("", ncclConfig_t, minCTAs);
  FIELD("", ncclConfig_t, maxCTAs);
  FIELD("", ncclConfig_t, netName);
  FIELD("", ncclConfig_t, splitShare);
  FIELD("", ncclConfig_t, trafficClass);
  FIELD("", ncclConfig_t, commName);
  FIELD("", ncclConfig_t, collnetEnable);
  FIELD("", ncclConfig_t, CTAPolicy);
  FIELD("", ncclConfig_t, shrinkShare);
  FIELD("", ncclConfig_t, nvlsCTAs);
  FIELD("", ncclConfig_t, nChannelsPerNetPeer);
  FIELD("", ncclConfig_t, nvlinkCentricSched);

  NUM("init.config.size", cfg.size);
  NUM("init.config.magic", cfg.magic);
  NUM("init.config.version", cfg.version);
  NUM("init.config.blocking", cfg.blocking);
  NUM("init.config.cgaClusterSize", cfg.cgaClusterSize);
  NUM("init.config.minCTAs", cfg.minCTAs);
  NUM("init.config.maxCTAs", cfg.maxCTAs);
  NUM("init.config.netName", (uintptr_t)cfg.netName);
  NUM("init.config.splitShare", cfg.splitShare);
  NUM("init.config.trafficClass", cfg.trafficClass);
  NUM("init.config.commName", (uintptr_t)cfg.commName);
  NUM("init.config.collnetEnable", cfg.collnetEnable);
  NUM("init.config.CTAPolicy", cfg.CTAPolicy);
  NUM("init.config.shrinkShare", cfg.shrinkShare);
  NUM("init.config.nvlsCTAs", cfg.nvlsCTAs);
  NUM("init.config.nChannelsPerNetPeer", cfg.nChannelsPerNetPeer);
  NUM("init.config.nvlinkCentricSched", cfg.nvlinkCentricSched);
  /* ncclConfig_t has no padding, so its bytes are fully determined. */
  emit_bytes(emit, ctx, "init.config.bytes", &cfg, sizeof cfg);
}

static void siminfo_facts(abi_emit_fn emit, void* ctx) {
  ncclSimInfo_t si = NCCL_SIM_INFO_INITIALIZER;

  LAYOUT("", ncclSimInfo_t);
  FIELD("", ncclSimInfo_t, size);
  FIELD("", ncclSimInfo_t, magic);
  FIELD("", ncclSimInfo_t, version);
  FIELD("", ncclSimInfo_t, estimatedTime);
  NUM("init.siminfo.size", si.size);
  NUM("init.siminfo.magic", si.magic);
  NUM("init.siminfo.version", si.version);
  emit_float(emit, ctx, "init.siminfo.estimatedTime", si.estimatedTime);
}

#ifdef ABI_HAVE_DEVICE_TYPES
static void device_facts(abi_emit_fn emit, void* ctx) {
  LAYOUT("dev.", ncclTeam_t);
  FIELD("dev.", ncclTeam_t, nRanks);
  FIELD("dev.", ncclTeam_t, rank);
  FIELD("dev.", ncclTeam_t, stride);

  LAYOUT("dev.", struct ncclWindow_vidmem);
  FIELD("dev.", struct ncclWindow_vidmem, winHost);
  FIELD("dev.", struct ncclWindow_vidmem, lsaFlatBase);
  FIELD("dev.", struct ncclWindow_vidmem, lsaRank);
  FIELD("dev.", struct ncclWindow_vidmem, worldRank);
  FIELD("dev.", struct ncclWindow_vidmem, stride4G);
  FIELD("dev.", struct ncclWindow_vidmem, mcOffset4K);
  FIELD("dev.", struct ncclWindow_vidmem, ginOffset4K);
  FIELD("dev.", struct ncclWindow_vidmem, ginWins);

  LAYOUT("dev.", ncclMultimemHandle_t);
  FIELD("dev.", ncclMultimemHandle_t, mcBasePtr);
  LAYOUT("dev.", ncclLsaBarrierHandle_t);
  FIELD("dev.", ncclLsaBarrierHandle_t, bufHandle);
  FIELD("dev.", ncclLsaBarrierHandle_t, nBarriers);
  LAYOUT("dev.", ncclGinBarrierHandle_t);
  FIELD("dev.", ncclGinBarrierHandle_t, signal0);
  FIELD("dev.", ncclGinBarrierHandle_t, bufHandle);
  LAYOUT("dev.", ncclLLA2AHandle_t);
  FIELD("dev.", ncclLLA2AHandle_t, bufHandle);
  FIELD("dev.", ncclLLA2AHandle_t, nSlots);
  LAYOUT("dev.", ncclDevResourceHandle_t);
  LAYOUT("dev.", ncclGinSignal_t);
  LAYOUT("dev.", ncclGinCounter_t);

  LAYOUT("dev.", ncclDevComm_t);
  FIELD("dev.", ncclDevComm_t, rank);
  FIELD("dev.", ncclDevComm_t, nRanks);
  FIELD("dev.", ncclDevComm_t, nRanks_rcp32);
  FIELD("dev.", ncclDevComm_t, lsaRank);
  FIELD("dev.", ncclDevComm_t, lsaSize);
  FIELD("dev.", ncclDevComm_t, lsaSize_rcp32);
  FIELD("dev.", ncclDevComm_t, windowTable);
  FIELD("dev.", ncclDevComm_t, resourceWindow);
  FIELD("dev.", ncclDevComm_t, resourceWindow_inlined);
  FIELD("dev.", ncclDevComm_t, lsaMultimem);
  FIELD("dev.", ncclDevComm_t, lsaBarrier);
  FIELD("dev.", ncclDevComm_t, railGinBarrier);
  FIELD("dev.", ncclDevComm_t, ginContextCount);
  FIELD("dev.", ncclDevComm_t, ginTypes);
  FIELD("dev.", ncclDevComm_t, ginHandles);
  FIELD("dev.", ncclDevComm_t, ginSignalBase);
  FIELD("dev.", ncclDevComm_t, ginSignalCount);
  FIELD("dev.", ncclDevComm_t, ginCounterBase);
  FIELD("dev.", ncclDevComm_t, ginCounterCount);
  FIELD("dev.", ncclDevComm_t, ginSignalShadows);

  LAYOUT("dev.", ncclDevResourceRequirements_t);
  FIELD("dev.", ncclDevResourceRequirements_t, next);
  FIELD("dev.", ncclDevResourceRequirements_t, bufferSize);
  FIELD("dev.", ncclDevResourceRequirements_t, bufferAlign);
  FIELD("dev.", ncclDevResourceRequirements_t, outBufferHandle);
  FIELD("dev.", ncclDevResourceRequirements_t, ginSignalCount);
  FIELD("dev.", ncclDevResourceRequirements_t, ginCounterCount);
  FIELD("dev.", ncclDevResourceRequirements_t, outGinSignalStart);
  FIELD("dev.", ncclDevResourceRequirements_t, outGinCounterStart);

  LAYOUT("dev.", ncclTeamRequirements_t);
  FIELD("dev.", ncclTeamRequirements_t, next);
  FIELD("dev.", ncclTeamRequirements_t, team);
  FIELD("dev.", ncclTeamRequirements_t, multimem);
  FIELD("dev.", ncclTeamRequirements_t, outMultimemHandle);

  LAYOUT("dev.", ncclDevCommRequirements_t);
  FIELD("dev.", ncclDevCommRequirements_t, resourceRequirementsList);
  FIELD("dev.", ncclDevCommRequirements_t, teamRequirementsList);
  FIELD("dev.", ncclDevCommRequirements_t, lsaMultimem);
  FIELD("dev.", ncclDevCommRequirements_t, barrierCount);
  FIELD("dev.", ncclDevCommRequirements_t, lsaBarrierCount);
  FIELD("dev.", ncclDevCommRequirements_t, railGinBarrierCount);
  FIELD("dev.", ncclDevCommRequirements_t, lsaLLA2ABlockCount);
  FIELD("dev.", ncclDevCommRequirements_t, lsaLLA2ASlotCount);
  FIELD("dev.", ncclDevCommRequirements_t, ginForceEnable);
  FIELD("dev.", ncclDevCommRequirements_t, ginContextCount);
  FIELD("dev.", ncclDevCommRequirements_t, ginSignalCount);
  FIELD("dev.", ncclDevCommRequirements_t, ginCounterCount);

  TNAME("dev.", ncclTeam_t);
  TNAME("dev.", ncclDevComm_t);
  TNAME("dev.", ncclDevCommRequirements_t);
  TNAME("dev.", ncclDevResourceRequirements_t);
  TNAME("dev.", ncclTeamRequirements_t);
  TNAME("dev.", ncclLsaBarrierHandle_t);
  TNAME("dev.", ncclGinBarrierHandle_t);
  TNAME("dev.", ncclLLA2AHandle_t);
  TNAME("dev.", ncclMultimemHandle_t);
  TNAME("dev.", ncclDevResourceHandle_t);
}
#endif

#if NCCL_VERSION_CODE >= 23200
/* What 2.29-2.32 added to nccl.h. */
static void facts_232(abi_emit_fn emit, void* ctx) {
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  ncclCollConfig_t cc = NCCL_COLLCONFIG_INITIALIZER;
  ncclEncryptionConfig_t ec = NCCL_ENCRYPTION_CONFIG_INITIALIZER;

  ENUMV(ncclTimeout);
  CONSTV(NCCL_API_MAGIC);
  CONSTV(NCCL_WIN_STRICT_ORDERING);
  CONSTV(NCCL_WIN_GIN_ONLY);
  CONSTV(NCCL_WIN_CFT_COUNTED);
  CONSTV(NCCL_SUSPEND_MEM);
  CTYPE(NCCL_API_MAGIC);
  CTYPE(NCCL_SUSPEND_MEM);
  ENUMV(ncclHostCftDefault);
  ENUMV(ncclHostCftEnable);
  ENUMV(ncclHostCftDisable);
  ENUMV(ncclHostCftFallback);
  ENUMV(ncclNvlsHostModeDefault);
  ENUMV(ncclNvlsHostModeEnable);
  ENUMV(ncclNvlsHostModeDisableTransport);
  ENUMV(ncclNvlsHostModeDisableSymmetricMultimem);
  ENUMV(ncclNvlsHostModeDisable);
  ENUMV(ncclStatGpuMemSuspend);
  ENUMV(ncclStatGpuMemSuspended);
  ENUMV(ncclStatGpuMemPersist);
  ENUMV(ncclStatGpuMemTotal);
  ENUMV(NCCL_ENCRYPTION_MODE_NONE);
  ENUMV(NCCL_ENCRYPTION_MODE_PSK);
  LAYOUT("", ncclHostCftMode_t);
  LAYOUT("", ncclNvlsHostMode_t);
  LAYOUT("", ncclCommMemStat_t);
  LAYOUT("", ncclEncryptionMode_t);
  LAYOUT("", cudaEvent_t);
  LAYOUT("", ncclParamHandle_t);
  ENUMSIGN(ncclHostCftMode_t);
  ENUMSIGN(ncclNvlsHostMode_t);
  ENUMSIGN(ncclCommMemStat_t);
  TNAME("", ncclCollConfig_t);
  TNAME("", ncclConfigExt_t);
  TNAME("", ncclEncryptionConfig_t);
  TNAME("", ncclWaitSignalDesc_t);
  TNAME("", ncclParamHandle_t);
  TNAME("", cudaEvent_t);

  FIELD("", ncclConfig_t, graphUsageMode);
  FIELD("", ncclConfig_t, numRmaCtx);
  FIELD("", ncclConfig_t, maxP2pPeers);
  FIELD("", ncclConfig_t, graphStreamOrdering);
  FIELD("", ncclConfig_t, launchOrderImplicit);
  FIELD("", ncclConfig_t, numRmaSig);
  FIELD("", ncclConfig_t, rmaEagerInit);
  FIELD("", ncclConfig_t, hostCftMode);
  FIELD("", ncclConfig_t, nvlsHostMode);
  NUM("init.config.graphUsageMode", cfg.graphUsageMode);
  NUM("init.config.numRmaCtx", cfg.numRmaCtx);
  NUM("init.config.maxP2pPeers", cfg.maxP2pPeers);
  NUM("init.config.graphStreamOrdering", cfg.graphStreamOrdering);
  NUM("init.config.launchOrderImplicit", cfg.launchOrderImplicit);
  NUM("init.config.numRmaSig", cfg.numRmaSig);
  NUM("init.config.rmaEagerInit", cfg.rmaEagerInit);
  NUM("init.config.hostCftMode", cfg.hostCftMode);
  NUM("init.config.nvlsHostMode", cfg.nvlsHostMode);

  LAYOUT("", ncclConfigExt_t);
  FIELD("", ncclConfigExt_t, next);
  FIELD("", ncclConfigExt_t, key);
  FIELD("", ncclConfigExt_t, key.vendorId);
  FIELD("", ncclConfigExt_t, key.optionId);
  FIELD("", ncclConfigExt_t, val);
  FIELD("", ncclConfigExt_t, val.i);
  FIELD("", ncclConfigExt_t, val.s);
  FIELD("", ncclConfigExt_t, val.raw);

  LAYOUT("", ncclCollConfig_t);
  FIELD("", ncclCollConfig_t, size);
  FIELD("", ncclCollConfig_t, magic);
  FIELD("", ncclCollConfig_t, version);
  FIELD("", ncclCollConfig_t, ext);
  FIELD("", ncclCollConfig_t, minCTAs);
  FIELD("", ncclCollConfig_t, maxCTAs);
  FIELD("", ncclCollConfig_t, nvlsCTAs);
  FIELD("", ncclCollConfig_t, cgaClusterSize);
  FIELD("", ncclCollConfig_t, algSelection);
  FIELD("", ncclCollConfig_t, forceAlgSelection);
  FIELD("", ncclCollConfig_t, CTAPolicy);
  FIELD("", ncclCollConfig_t, userProfilerTag);
  FIELD("", ncclCollConfig_t, launchCompletionEvent);
  NUM("init.collconfig.size", cc.size);
  NUM("init.collconfig.magic", cc.magic);
  NUM("init.collconfig.version", cc.version);
  NUM("init.collconfig.ext", (uintptr_t)cc.ext);
  NUM("init.collconfig.minCTAs", cc.minCTAs);
  NUM("init.collconfig.maxCTAs", cc.maxCTAs);
  NUM("init.collconfig.nvlsCTAs", cc.nvlsCTAs);
  NUM("init.collconfig.cgaClusterSize", cc.cgaClusterSize);
  NUM("init.collconfig.algSelection", (uintptr_t)cc.algSelection);
  NUM("init.collconfig.forceAlgSelection", cc.forceAlgSelection);
  NUM("init.collconfig.CTAPolicy", cc.CTAPolicy);
  NUM("init.collconfig.userProfilerTag", (long long)cc.userProfilerTag);
  NUM("init.collconfig.launchCompletionEvent", (uintptr_t)cc.launchCompletionEvent);

  LAYOUT("", ncclEncryptionConfig_t);
  FIELD("", ncclEncryptionConfig_t, size);
  FIELD("", ncclEncryptionConfig_t, magic);
  FIELD("", ncclEncryptionConfig_t, version);
  FIELD("", ncclEncryptionConfig_t, mode);
  FIELD("", ncclEncryptionConfig_t, psk);
  NUM("init.encryption.size", ec.size);
  NUM("init.encryption.magic", ec.magic);
  NUM("init.encryption.version", ec.version);
  NUM("init.encryption.mode", ec.mode);
  NUM("init.encryption.psk", (uintptr_t)ec.psk);

  LAYOUT("", ncclWaitSignalDesc_t);
  FIELD("", ncclWaitSignalDesc_t, opCnt);
  FIELD("", ncclWaitSignalDesc_t, peer);
  FIELD("", ncclWaitSignalDesc_t, sigIdx);
  FIELD("", ncclWaitSignalDesc_t, ctx);
}
#endif

#ifdef ABI_HAVE_HOST232
/* The 2.32 host functions of the device API and the types they take. */
static void host232_facts(abi_emit_fn emit, void* ctx) {
  ncclCommProperties_t pr = NCCL_COMM_PROPERTIES_INITIALIZER;
  LAYOUT("h232.", ncclCommProperties_t);
  FIELD("h232.", ncclCommProperties_t, size);
  FIELD("h232.", ncclCommProperties_t, magic);
  FIELD("h232.", ncclCommProperties_t, version);
  FIELD("h232.", ncclCommProperties_t, rank);
  FIELD("h232.", ncclCommProperties_t, nRanks);
  FIELD("h232.", ncclCommProperties_t, cudaDev);
  FIELD("h232.", ncclCommProperties_t, nvmlDev);
  FIELD("h232.", ncclCommProperties_t, deviceApiSupport);
  FIELD("h232.", ncclCommProperties_t, multimemSupport);
  FIELD("h232.", ncclCommProperties_t, ginType);
  FIELD("h232.", ncclCommProperties_t, nLsaTeams);
  FIELD("h232.", ncclCommProperties_t, hostRmaSupport);
  FIELD("h232.", ncclCommProperties_t, railedGinType);
  FIELD("h232.", ncclCommProperties_t, commHash);
  FIELD("h232.", ncclCommProperties_t, ginMinStride);
  FIELD("h232.", ncclCommProperties_t, ginConnectionType);
  FIELD("h232.", ncclCommProperties_t, ginSupport);
  FIELD("h232.", ncclCommProperties_t, devCommRuntimeVersionSize);
  FIELD("h232.", ncclCommProperties_t, cftSupport);
  FIELD("h232.", ncclCommProperties_t, cftMulticastSupport);
  FIELD("h232.", ncclCommProperties_t, cftCountedSupport);
  NUM("h232.init.props.size", pr.size);
  NUM("h232.init.props.magic", pr.magic);
  NUM("h232.init.props.version", pr.version);
  LAYOUT("h232.", ncclCftLeId);
  LAYOUT("h232.", ncclGinType_t);
  LAYOUT("h232.", ncclGinConnectionType_t);
  LAYOUT("h232.", ncclCftTeamMode_t);
  NUM("h232.enum.NCCL_GIN_TYPE_NONE", NCCL_GIN_TYPE_NONE);
  NUM("h232.enum.NCCL_GIN_TYPE_PROXY", NCCL_GIN_TYPE_PROXY);
  NUM("h232.enum.NCCL_GIN_TYPE_GDAKI", NCCL_GIN_TYPE_GDAKI);
  NUM("h232.enum.NCCL_GIN_TYPE_GPI", NCCL_GIN_TYPE_GPI);
  NUM("h232.enum.NCCL_GIN_TYPE_EFA_GDA", NCCL_GIN_TYPE_EFA_GDA);
  NUM("h232.enum.NCCL_GIN_MAX_TYPES", NCCL_GIN_MAX_TYPES);
  NUM("h232.enum.NCCL_GIN_CONNECTION_NONE", NCCL_GIN_CONNECTION_NONE);
  NUM("h232.enum.NCCL_GIN_CONNECTION_FULL", NCCL_GIN_CONNECTION_FULL);
  NUM("h232.enum.NCCL_GIN_CONNECTION_RAIL", NCCL_GIN_CONNECTION_RAIL);
  NUM("h232.enum.NCCL_GIN_CONNECTION_CUSTOM_STRIDE", NCCL_GIN_CONNECTION_CUSTOM_STRIDE);
  NUM("h232.enum.NCCL_CFT_TEAM_FLAT", NCCL_CFT_TEAM_FLAT);
  NUM("h232.enum.NCCL_CFT_TEAM_HIER_MULTIMEM", NCCL_CFT_TEAM_HIER_MULTIMEM);
  NUM("h232.enum.NCCL_CFT_TEAM_HIER_LSA", NCCL_CFT_TEAM_HIER_LSA);
  NUM("h232.enum.NCCL_CFT_NONE", NCCL_CFT_NONE);
  NUM("h232.enum.NCCL_CFT", NCCL_CFT);
  NUM("h232.enum.NCCL_CFT_MULTIMEM", NCCL_CFT_MULTIMEM);
#define SIG_H232(n, type)                                                                          \
  emit(ctx, "h232.cxx.sig.nccl" #n, typeid(static_cast<type>(&nccl##n)).name());
  ABI_HOST232_FUNCTIONS(SIG_H232)
#undef SIG_H232
}
#endif
#ifdef __cplusplus
/* The typeid name of a function type spells every parameter and the result,
 * including struct tags, so equal names mean equal C++ signatures. */
static void signature_facts(abi_emit_fn emit, void* ctx) {
#define SIG_PAIR(n)                                                                                \
  emit(ctx, "cxx.sig.nccl" #n, typeid(nccl##n).name());                                            \
  emit(ctx, "cxx.sig.pnccl" #n, typeid(pnccl##n).name());
  ABI_NCCL_FUNCTIONS(SIG_PAIR)
#if NCCL_VERSION_CODE >= 23200
  ABI_NCCL232_FUNCTIONS(SIG_PAIR)
#endif
#undef SIG_PAIR
#ifdef ABI_HAVE_DEVICE_TYPES
#define SIG_ONE(n) emit(ctx, "dev.cxx.sig.nccl" #n, typeid(nccl##n).name());
  ABI_DEVICE_FUNCTIONS(SIG_ONE)
#undef SIG_ONE
  /* NVIDIA overloads these for device code; the cast picks the host one and
   * compiles only if a declaration of exactly that type exists. */
#define SIG_CAST(n, type)                                                                          \
  emit(ctx, "dev.cxx.sig.nccl" #n, typeid(static_cast<type>(&nccl##n)).name());
  ABI_DEVICE_OVERLOADED_FUNCTIONS(SIG_CAST)
#undef SIG_CAST
#endif
}
#endif

void ABI_FACTS_FN(abi_emit_fn emit, void* ctx) {
  version_facts(emit, ctx);
  constant_facts(emit, ctx);
  enum_facts(emit, ctx);
  type_facts(emit, ctx);
  config_facts(emit, ctx);
  siminfo_facts(emit, ctx);
#ifdef ABI_HAVE_DEVICE_TYPES
  device_facts(emit, ctx);
#endif
#if NCCL_VERSION_CODE >= 23200
  facts_232(emit, ctx);
#endif
#ifdef ABI_HAVE_HOST232
  host232_facts(emit, ctx);
#endif
#ifdef __cplusplus
  signature_facts(emit, ctx);
#endif
}
