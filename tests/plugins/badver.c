/* SPDX-License-Identifier: BSD-3-Clause */
/* A library with plugin symbols of versions Monel does not accept (NCCL does not either): each
 * must be refused as unsupported. NOSYM builds the same file with no plugin symbol at all. */
#include "abi.h"
#ifndef NOSYM
static const char* never(const char* n) {
  (void)n;
  return "wrong";
}
const env_v1_t ncclEnvPlugin_v3 = {"WrongEnv", NULL, NULL, never};
const tuner_v2_t ncclTunerPlugin_v1 = {"WrongTuner", NULL, NULL, NULL};
const struct {
  const char* name;
  void* fn[5];
} ncclProfiler_v8 = {"WrongProfiler", {0}};
#endif
int test_plugin_marker = 1;
