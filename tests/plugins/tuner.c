/* SPDX-License-Identifier: BSD-3-Clause */
/* A test tuner plugin, built once per version (TUNER_VERSION 2..7). TEST_TUNER_RULE =
 * "func,min,max,algo,proto,channels" forces (algo, proto) for NCCL function id func when
 * min <= nBytes <= max, and sets nChannels when channels > 0; TEST_TUNER_FORCE=1 forces it even
 * where the table says -1 (the library must refuse); TEST_TUNER_TREE_LATENCY (v5+) sets the
 * Tree/Simple base latency in the cost constants; TEST_TUNER_CHUNK (v6+) is getChunkSize's answer
 * for every collective. test_plugin_count tells what was called
 * and whether every argument had NCCL's shape. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "abi.h"

static atomic_int inits, finals, calls[8], chunks, bad, forced;
static int rule_func = -1, rule_algo, rule_proto, rule_channels, rule_force;
static size_t rule_min, rule_max;

static void setup(void) {
  const char* r = getenv("TEST_TUNER_RULE");
  if (r && sscanf(r, "%d,%zu,%zu,%d,%d,%d", &rule_func, &rule_min, &rule_max, &rule_algo,
                  &rule_proto, &rule_channels) != 6)
    rule_func = -1;
  rule_force = getenv("TEST_TUNER_FORCE") != NULL;
}

static int in_rule(int func, size_t bytes) {
  return func == rule_func && bytes >= rule_min && bytes <= rule_max;
}

int test_plugin_count(const char* what) {
  if (strncmp(what, "calls", 5) == 0) return calls[atoi(what + 5) & 7];
  return strcmp(what, "init") == 0       ? inits
         : strcmp(what, "finalize") == 0 ? finals
         : strcmp(what, "chunk") == 0    ? chunks
         : strcmp(what, "bad") == 0      ? bad
         : strcmp(what, "forced") == 0   ? forced
                                         : -1;
}

struct ctx {
  size_t nranks;
};

static result_t start(size_t nranks, size_t nnodes, void** ctx) {
  struct ctx* c = calloc(1, sizeof *c);
  if (nranks < 1 || nnodes < 1 || nnodes > nranks) bad++;
  c->nranks = nranks;
  *ctx = c;
  inits++;
  setup();
  return 0;
}

static result_t stop(void* ctx) {
  if (ctx == NULL) bad++;
  free(ctx);
  finals++;
  return 0;
}

#if TUNER_VERSION > 2
/* The table: 7 x 3, each entry -1.0 or a time >= 0; nChannels preset 0. */
static void check_table(int func, float (*t)[3], int na, int np, int* nch) {
  if (func < 0 || func > 4 || na != 7 || np != 3 || *nch != 0) bad++;
  for (int a = 0; a < 7; a++)
    for (int p = 0; p < 3; p++)
      if (!(t[a][p] == -1.0f || t[a][p] >= 0)) bad++;
}

static result_t table_info(void* ctx, int func, size_t bytes, int pipe, float** table, int na,
                           int np, int* nch) {
  float(*t)[3] = (float(*)[3])table;
  if (ctx == NULL || pipe < 1) bad++;
  check_table(func, t, na, np, nch);
  calls[func & 7]++;
  if (in_rule(func, bytes) && (t[rule_algo][rule_proto] != -1.0f || rule_force)) {
    t[rule_algo][rule_proto] = 0.0f;
    if (rule_channels > 0) *nch = rule_channels;
    forced++;
  }
  return 0;
}
#endif

#if TUNER_VERSION == 2
static result_t init(size_t nranks, size_t nnodes, logger_t log, void** ctx) {
  if (log == NULL) bad++;
  return start(nranks, nnodes, ctx);
}
static result_t info(void* ctx, int func, size_t bytes, int collnet, int nvls, int pipe, int* algo,
                     int* proto, int* nch) {
  if (ctx == NULL || pipe < 1 || collnet || nvls || *nch != 0) bad++;
  calls[func & 7]++;
  if (in_rule(func, bytes)) {
    *algo = rule_algo, *proto = rule_proto, forced++;
    if (rule_channels > 0) *nch = rule_channels;
  }
  return 0;
}
const tuner_v2_t ncclTunerPlugin_v2 = {"TestTuner-v2", init, info, stop};
#elif TUNER_VERSION <= 4
static result_t init(size_t nranks, size_t nnodes, logger_t log, void** ctx) {
  if (log == NULL) bad++;
  return start(nranks, nnodes, ctx);
}
#if TUNER_VERSION == 3
static result_t info(void* ctx, int func, size_t bytes, int pipe, float** table, int na, int np,
                     int* nch) {
  return table_info(ctx, func, bytes, pipe, table, na, np, nch);
}
const tuner_v3_t ncclTunerPlugin_v3 = {"TestTuner-v3", init, info, stop};
#else
static result_t info(void* ctx, int func, size_t bytes, int pipe, float** table, int na, int np,
                     int reg, int* nch) {
  if (reg != 0 && reg != 1) bad++;
  return table_info(ctx, func, bytes, pipe, table, na, np, nch);
}
const tuner_v4_t ncclTunerPlugin_v4 = {"TestTuner-v4", init, info, stop};
#endif
#else
static result_t init(void** ctx, uint64_t id, size_t nranks, size_t nnodes, logger_t log,
                     nvl_v5_t* nvl, void* consts) {
  /* the whole constants struct must be writable: touch its last byte */
  size_t size = TUNER_VERSION == 7 ? CONSTS_V7_BYTES : CONSTS_V5_BYTES;
  if (log == NULL || nvl == NULL || consts == NULL || id == 0) return 3;
  ((volatile char*)consts)[size - 1] = ((volatile char*)consts)[size - 1];
  /* TEST_TUNER_TREE_LATENCY: baseLatencies[TREE][SIMPLE], the first table of the constants */
  const char* lat = getenv("TEST_TUNER_TREE_LATENCY");
  if (lat) ((double*)consts)[0 * 3 + 2] = atof(lat);
  if (nvl->nNvlDomains != (int)nnodes || nvl->minRanksPerNvlDomain < 1 ||
      nvl->maxRanksPerNvlDomain < nvl->minRanksPerNvlDomain)
    bad++;
  return start(nranks, nnodes, ctx);
}
static result_t info(void* ctx, int func, size_t bytes, int pipe, float** table, int na, int np,
                     int reg, int* nch) {
  if (reg != 0 && reg != 1) bad++;
  return table_info(ctx, func, bytes, pipe, table, na, np, nch);
}
#if TUNER_VERSION == 5
const tuner_v5_t ncclTunerPlugin_v5 = {"TestTuner-v5", init, info, stop};
#else
static result_t chunk(void* ctx, int func, size_t bytes, int algo, int proto, int nch,
                      size_t* size) {
  if (ctx == NULL || func < 0 || func > 4 || algo < 0 || algo > 6 || proto < 0 || proto > 2 ||
      nch < 1 || size == NULL)
    bad++;
  (void)bytes;
  const char* want = getenv("TEST_TUNER_CHUNK");
  if (want != NULL && size != NULL) *size = (size_t)atoll(want);
  chunks++;
  return 0;
}
#if TUNER_VERSION == 6
const tuner_v6_t ncclTunerPlugin_v6 = {"TestTuner-v6", init, info, stop, chunk};
#else
const tuner_v6_t ncclTunerPlugin_v7 = {"TestTuner-v7", init, info, stop, chunk};
#endif
#endif
#endif
