/* SPDX-License-Identifier: BSD-3-Clause */
/* A test env plugin, built once per version (ENV_VERSION 1 or 2). It answers
 * TEST_ENV_SUPPLY="NAME=VALUE"'s NAME with VALUE, which the environment does not have, and every
 * other name from the environment; test_plugin_count tells what Monel called. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "abi.h"

static atomic_int inits, finals, gets, supplied, version_ok;
static char name_buf[128], value_buf[256];

static void setup(void) {
  const char* s = getenv("TEST_ENV_SUPPLY");
  const char* eq = s ? strchr(s, '=') : NULL;
  if (eq == NULL || (size_t)(eq - s) >= sizeof name_buf) return;
  memcpy(name_buf, s, (size_t)(eq - s));
  strncpy(value_buf, eq + 1, sizeof value_buf - 1);
}

static result_t init_common(uint8_t major, uint8_t minor, uint8_t patch, const char* suffix) {
  inits++;
  /* NCCL passes its own version as bytes and its suffix, "" by default, never NULL */
  if (major == 2 && minor == 32 && patch == 3 && suffix != NULL && suffix[0] == '\0') version_ok++;
  setup();
  return getenv("TEST_ENV_FAIL_INIT") ? 3 : 0;
}

static const char* get_env(const char* name) {
  gets++;
  if (name_buf[0] && strcmp(name, name_buf) == 0) {
    supplied++;
    return value_buf;
  }
  return getenv(name);
}

static result_t finalize(void) {
  finals++;
  return 0;
}

int test_plugin_count(const char* what) {
  return strcmp(what, "init") == 0       ? inits
         : strcmp(what, "finalize") == 0 ? finals
         : strcmp(what, "get") == 0      ? gets
         : strcmp(what, "supplied") == 0 ? supplied
         : strcmp(what, "version") == 0  ? version_ok
                                         : -1;
}

#if ENV_VERSION == 1
static result_t init_v1(uint8_t major, uint8_t minor, uint8_t patch, const char* suffix) {
  return init_common(major, minor, patch, suffix);
}
const env_v1_t ncclEnvPlugin_v1 = {"TestEnv-v1", init_v1, finalize, get_env};
#else
static result_t init_v2(uint8_t major, uint8_t minor, uint8_t patch, const char* suffix,
                        logger_t log) {
  if (log) log(3, 0x80, __FILE__, __LINE__, "TestEnv-v2: init from the test plugin");
  return init_common(major, minor, patch, suffix);
}
const env_v2_t ncclEnvPlugin_v2 = {"TestEnv-v2", init_v2, finalize, get_env};
#endif
