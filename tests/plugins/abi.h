/* SPDX-License-Identifier: BSD-3-Clause */
/* The plugin ABIs as NCCL's documentation states them, written for the test plugins apart from
 * Monel's own headers, so that a layout mistake in either shows. */
#ifndef MONEL_TESTS_PLUGINS_ABI_H
#define MONEL_TESTS_PLUGINS_ABI_H
#include <stddef.h>
#include <stdint.h>

typedef int result_t; /* ncclResult_t: 0 success, 3 internal error */
typedef void (*logger_t)(int level, unsigned long flags, const char* file, int line,
                         const char* fmt, ...);

/* env */
typedef struct {
  const char* name;
  result_t (*init)(uint8_t major, uint8_t minor, uint8_t patch, const char* suffix);
  result_t (*finalize)(void);
  const char* (*getEnv)(const char* name);
} env_v1_t;
typedef struct {
  const char* name;
  result_t (*init)(uint8_t major, uint8_t minor, uint8_t patch, const char* suffix, logger_t log);
  result_t (*finalize)(void);
  const char* (*getEnv)(const char* name);
} env_v2_t;

/* tuner */
typedef struct {
  int nNvlDomains, minRanksPerNvlDomain, maxRanksPerNvlDomain;
} nvl_v5_t;
typedef struct {
  const char* name;
  result_t (*init)(size_t nRanks, size_t nNodes, logger_t log, void** ctx);
  result_t (*getCollInfo)(void* ctx, int collType, size_t nBytes, int collNetSupport,
                          int nvlsSupport, int numPipeOps, int* algorithm, int* protocol,
                          int* nChannels);
  result_t (*destroy)(void* ctx);
} tuner_v2_t;
typedef struct {
  const char* name;
  result_t (*init)(size_t nRanks, size_t nNodes, logger_t log, void** ctx);
  result_t (*getCollInfo)(void* ctx, int collType, size_t nBytes, int numPipeOps,
                          float** collCostTable, int numAlgo, int numProto, int* nChannels);
  result_t (*destroy)(void* ctx);
} tuner_v3_t;
typedef struct {
  const char* name;
  result_t (*init)(size_t nRanks, size_t nNodes, logger_t log, void** ctx);
  result_t (*getCollInfo)(void* ctx, int collType, size_t nBytes, int numPipeOps,
                          float** collCostTable, int numAlgo, int numProto, int regBuff,
                          int* nChannels);
  result_t (*destroy)(void* ctx);
} tuner_v4_t;
typedef struct {
  const char* name;
  result_t (*init)(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, logger_t log,
                   nvl_v5_t* nvl, void* constants);
  result_t (*getCollInfo)(void* ctx, int collType, size_t nBytes, int numPipeOps,
                          float** collCostTable, int numAlgo, int numProto, int regBuff,
                          int* nChannels);
  result_t (*finalize)(void* ctx);
} tuner_v5_t;
typedef struct {
  const char* name;
  result_t (*init)(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, logger_t log,
                   nvl_v5_t* nvl, void* constants);
  result_t (*getCollInfo)(void* ctx, int collType, size_t nBytes, int numPipeOps,
                          float** collCostTable, int numAlgo, int numProto, int regBuff,
                          int* nChannels);
  result_t (*finalize)(void* ctx);
  result_t (*getChunkSize)(void* ctx, int collType, size_t nBytes, int algorithm, int protocol,
                           int nChannels, size_t* chunkSize);
} tuner_v6_t; /* v7: the same table, a larger constants struct */
#define CONSTS_V5_BYTES 1152
#define CONSTS_V7_BYTES 1272

#endif
