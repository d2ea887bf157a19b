/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * compile_test.c - nccl.h and monel.h as a client sees them.
 *
 * Built by tests/abi/run as C11 and as C++11, with and without CUDA headers
 * (MONEL_NO_CUDA_HEADERS), with -Wall -Wextra -Werror. It does not link
 * against the library: it only checks what the headers declare, at compile
 * time (twins have identical types, cudaStream_t is CUDA's pointer type, LP64
 * sizes) and at run time (the initializer macros' values).
 * COMPILE_TEST_CUDA_FIRST includes cuda_runtime.h before the headers, to prove
 * that the CUDA-less declaration of cudaStream_t agrees with CUDA's.
 */
#ifdef COMPILE_TEST_CUDA_FIRST
#include <cuda_runtime.h>
#endif
#include "monel.h"
#include "monel.h" /* include guards */
#include "nccl.h"

#include <stdio.h>
#include <string.h>

#include "abi_functions.h"

#ifdef __cplusplus
#include <type_traits>
#define SAME_TYPE(a, b)         std::is_same<decltype(a), decltype(b)>::value
#define STATIC_CHECK(cond, msg) static_assert(cond, msg)
STATIC_CHECK((std::is_same<cudaStream_t, struct CUstream_st*>::value), "cudaStream_t");
#else
#define SAME_TYPE(a, b)         _Generic(&(a), __typeof__(&(b)) : 1, default : 0)
#define STATIC_CHECK(cond, msg) _Static_assert(cond, msg)
STATIC_CHECK(_Generic((cudaStream_t)0, struct CUstream_st* : 1, default : 0), "cudaStream_t");
#endif

/* Every ncclX has a pncclX of the very same type. Naming ncclResetDebugInit
 * here is deliberate, hence the pragma. */
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
#define TWIN(n)        STATIC_CHECK(SAME_TYPE(nccl##n, pnccl##n), "pnccl" #n " differs from nccl" #n);
#define TWIN2(n, type) TWIN(n)
ABI_NCCL_FUNCTIONS(TWIN)
ABI_DEVICE_FUNCTIONS(TWIN)
ABI_NCCL232_FUNCTIONS(TWIN)
ABI_HOST232_FUNCTIONS(TWIN2)
ABI_DEVICE_OVERLOADED_FUNCTIONS(TWIN2)
ABI_MONEL_FUNCTIONS(TWIN)
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

STATIC_CHECK(sizeof(ncclUniqueId) == NCCL_UNIQUE_ID_BYTES, "ncclUniqueId");
STATIC_CHECK(sizeof(ncclRedOp_t) == sizeof(int), "ncclRedOp_t is int-sized");
STATIC_CHECK(sizeof(ncclDataType_t) == sizeof(int), "ncclDataType_t is int-sized");
STATIC_CHECK(sizeof(ncclResult_t) == sizeof(int), "ncclResult_t is int-sized");
#if defined(__LP64__)
STATIC_CHECK(sizeof(ncclConfig_t) == 120, "ncclConfig_t size");
STATIC_CHECK(offsetof(ncclConfig_t, nvlinkCentricSched) == 76, "ncclConfig_t 2.28 last field");
STATIC_CHECK(offsetof(ncclConfig_t, nvlsHostMode) == 112, "ncclConfig_t last field");
STATIC_CHECK(sizeof(ncclCollConfig_t) == 72, "ncclCollConfig_t size");
STATIC_CHECK(sizeof(ncclConfigExt_t) == 24, "ncclConfigExt_t size");
STATIC_CHECK(sizeof(ncclWaitSignalDesc_t) == 16, "ncclWaitSignalDesc_t size");
STATIC_CHECK(sizeof(ncclEncryptionConfig_t) == 32, "ncclEncryptionConfig_t size");
STATIC_CHECK(sizeof(ncclCommProperties_t) == 152, "ncclCommProperties_t size");
STATIC_CHECK(sizeof(ncclSimInfo_t) == 24, "ncclSimInfo_t size");
STATIC_CHECK(sizeof(ncclDevComm_t) == 200, "ncclDevComm size");
STATIC_CHECK(sizeof(ncclDevCommRequirements_t) == 56, "ncclDevCommRequirements size");
#endif

static int failures;

static void expect(int ok, const char* what) {
  if (!ok) {
    printf("compile_test: wrong value: %s\n", what);
    failures++;
  }
}

int main(void) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  ncclUniqueId id;
  ncclComm_t comm = NCCL_COMM_NULL;
  const char* monel_version = NULL;

  memset(&id, 0, sizeof id);
  ncclCollConfig_t cc = NCCL_COLLCONFIG_INITIALIZER;
  ncclEncryptionConfig_t enc = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
  ncclCommProperties_t props = NCCL_COMM_PROPERTIES_INITIALIZER;
  expect(NCCL_VERSION_CODE == 23203, "NCCL_VERSION_CODE");
  expect(ncclTimeout == 8 && ncclNumResults == 9, "ncclTimeout");
  expect(cc.size == sizeof cc && cc.magic == NCCL_API_MAGIC && cc.forceAlgSelection == 1 &&
             cc.minCTAs == NCCL_CONFIG_UNDEF_INT && cc.launchCompletionEvent == NULL,
         "collconfig initializer");
  expect(enc.size == sizeof enc && enc.mode == NCCL_ENCRYPTION_MODE_NONE && enc.psk == NULL,
         "encryption initializer");
  expect(props.size == sizeof props && props.version == NCCL_VERSION_CODE, "props initializer");
  expect(config.nvlsHostMode == NCCL_CONFIG_UNDEF_INT, "config.nvlsHostMode");
  expect(NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH) == NCCL_VERSION_CODE, "NCCL_VERSION");
  expect(NCCL_VERSION(2, 8, 4) == 2804, "NCCL_VERSION(2,8,4)");
  expect(strcmp(NCCL_SUFFIX, "") == 0, "NCCL_SUFFIX");
  expect(config.size == sizeof(ncclConfig_t), "config.size");
  expect(config.magic == 0xcafebeef, "config.magic");
  expect(config.version == NCCL_VERSION_CODE, "config.version");
  expect(config.blocking == NCCL_CONFIG_UNDEF_INT, "config.blocking");
  expect(config.netName == NULL && config.commName == NULL, "config strings");
  expect(config.nvlinkCentricSched == NCCL_CONFIG_UNDEF_INT, "config.nvlinkCentricSched");
  expect(sim.size == sizeof(ncclSimInfo_t), "sim.size");
  expect(sim.magic == 0x74685283, "sim.magic");
  expect(sim.version == NCCL_VERSION_CODE, "sim.version");
  expect(sim.estimatedTime == NCCL_UNDEF_FLOAT, "sim.estimatedTime");
  expect(comm == NULL, "NCCL_COMM_NULL");
  expect(ncclMaxRedOp == 0x7fffffff, "ncclMaxRedOp");
  expect(MONEL_VERSION_CODE ==
             MONEL_VERSION_MAJOR * 10000 + MONEL_VERSION_MINOR * 100 + MONEL_VERSION_PATCH,
         "MONEL_VERSION_CODE");
  (void)monel_version;
  printf("compile_test (%s, %s CUDA headers): %s\n",
#ifdef __cplusplus
         "C++",
#else
         "C",
#endif
#ifdef MONEL_NCCL_HAVE_CUDA_HEADERS
         "with",
#else
         "without",
#endif
         failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
