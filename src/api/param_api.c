/* SPDX-License-Identifier: BSD-3-Clause */
/* The parameter API (ncclParamBind, ncclParamGet*, ...) over Monel's one parameter table
 * (util/params.def): every key is the name of an environment variable Monel reads, NCCL's
 * (NCCL_*) and Monel's own (MONEL_*); NCCL's names are also accepted without "NCCL_". Values
 * are what the library uses: the environment's, else the default. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api/api.h"
#include "util/check.h"
#include "util/log.h"
#include "util/param.h"

struct ncclParamHandle {
  int id;
};

static struct ncclParamHandle handles[PARAM_COUNT];
static const char* keys[PARAM_COUNT];
static pthread_once_t once = PTHREAD_ONCE_INIT;
static __thread char str_buf[32];   /* ncclParamGetStr of an integer */
static __thread char value_buf[32]; /* ncclParamGetParameter of an integer */

static void setup(void) {
  for (int i = 0; i < PARAM_COUNT; i++) {
    handles[i].id = i;
    keys[i] = param_info((enum param_id)i)->name;
  }
}

static int find(const char* key) {
  pthread_once(&once, setup);
  for (int i = 0; i < PARAM_COUNT; i++) {
    const char* n = keys[i];
    if (strcmp(n, key) == 0 || (strncmp(n, "NCCL_", 5) == 0 && strcmp(n + 5, key) == 0)) return i;
  }
  return -1;
}

NCCL_API(ncclResult_t, ncclParamBind, ncclParamHandle_t* out, const char* key) {
  const char* fn = "ncclParamBind";
  NCCLCHECK(api_check_ptr(out, "out", fn));
  NCCLCHECK(api_check_ptr(key, "key", fn));
  int i = find(key);
  if (i < 0) {
    WARN("%s: no parameter is named \"%s\"; ncclParamGetAllParameterKeys lists them", fn, key);
    return ncclInvalidArgument;
  }
  *out = &handles[i];
  return ncclSuccess;
}

static ncclResult_t check_handle(ncclParamHandle_t h, const void* out, const char* fn) {
  NCCLCHECK(api_check_ptr(out, "out", fn));
  if (h < handles || h >= handles + PARAM_COUNT) {
    WARN("%s: handle %p was not made by ncclParamBind", fn, (void*)h);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

/* The value as a 64-bit integer: an integer parameter, or a text one that holds a number. */
static ncclResult_t as_int(ncclParamHandle_t h, int64_t* v, const char* fn) {
  const struct param_info* pi = param_info((enum param_id)h->id);
  if (pi->kind == PARAM_INT) {
    *v = param_int((enum param_id)h->id);
    return ncclSuccess;
  }
  const char* s = param_str((enum param_id)h->id);
  char* end = NULL;
  errno = 0;
  long long x = strtoll(s, &end, 0);
  if (s[0] == '\0' || *end != '\0' || errno != 0) {
    WARN("%s: %s is \"%s\", not a number; read it with ncclParamGetStr", fn, pi->name, s);
    return ncclInvalidArgument;
  }
  *v = x;
  return ncclSuccess;
}

static ncclResult_t out_of_range(ncclParamHandle_t h, int64_t v, const char* type, const char* fn) {
  WARN("%s: %s is %lld, which does not fit %s", fn, param_info((enum param_id)h->id)->name,
       (long long)v, type);
  return ncclInvalidArgument;
}

#define GET_SIGNED(NAME, T, LO, HI)                                                                \
  NCCL_API(ncclResult_t, NAME, ncclParamHandle_t h, T* out) {                                      \
    int64_t v = 0;                                                                                 \
    NCCLCHECK(check_handle(h, out, #NAME));                                                        \
    NCCLCHECK(as_int(h, &v, #NAME));                                                               \
    if (v < (LO) || v > (HI)) return out_of_range(h, v, #T, #NAME);                                \
    *out = (T)v;                                                                                   \
    return ncclSuccess;                                                                            \
  }
#define GET_UNSIGNED(NAME, T, HI)                                                                  \
  NCCL_API(ncclResult_t, NAME, ncclParamHandle_t h, T* out) {                                      \
    int64_t v = 0;                                                                                 \
    NCCLCHECK(check_handle(h, out, #NAME));                                                        \
    NCCLCHECK(as_int(h, &v, #NAME));                                                               \
    if (v < 0 || (uint64_t)v > (uint64_t)(HI)) return out_of_range(h, v, #T, #NAME);               \
    *out = (T)v;                                                                                   \
    return ncclSuccess;                                                                            \
  }

GET_SIGNED(ncclParamGetI8, int8_t, INT8_MIN, INT8_MAX)
GET_SIGNED(ncclParamGetI16, int16_t, INT16_MIN, INT16_MAX)
GET_SIGNED(ncclParamGetI32, int32_t, INT32_MIN, INT32_MAX)
GET_SIGNED(ncclParamGetI64, int64_t, INT64_MIN, INT64_MAX)
GET_UNSIGNED(ncclParamGetU8, uint8_t, UINT8_MAX)
GET_UNSIGNED(ncclParamGetU16, uint16_t, UINT16_MAX)
GET_UNSIGNED(ncclParamGetU32, uint32_t, UINT32_MAX)
GET_UNSIGNED(ncclParamGetU64, uint64_t, INT64_MAX)

/* The value as text; integers are written into buf. */
static const char* text(int id, char* buf, size_t len) {
  if (param_info((enum param_id)id)->kind == PARAM_STR) return param_str((enum param_id)id);
  snprintf(buf, len, "%" PRId64, param_int((enum param_id)id));
  return buf;
}

NCCL_API(ncclResult_t, ncclParamGetStr, ncclParamHandle_t h, const char** out) {
  NCCLCHECK(check_handle(h, out, "ncclParamGetStr"));
  *out = text(h->id, str_buf, sizeof str_buf);
  return ncclSuccess;
}

/* Raw bytes: an integer parameter as its int64_t, a text one as its characters and NUL. */
NCCL_API(ncclResult_t, ncclParamGet, ncclParamHandle_t h, void* out, int maxLen, int* len) {
  const char* fn = "ncclParamGet";
  NCCLCHECK(check_handle(h, out, fn));
  NCCLCHECK(api_check_ptr(len, "len", fn));
  int64_t v = 0;
  const void* src = &v;
  size_t n = sizeof v;
  if (param_info((enum param_id)h->id)->kind == PARAM_INT) {
    v = param_int((enum param_id)h->id);
  } else {
    src = param_str((enum param_id)h->id);
    n = strlen(src) + 1;
  }
  *len = (int)n;
  if (maxLen < 0 || (size_t)maxLen < n) {
    WARN("%s: %s needs %zu bytes, maxLen is %d", fn, param_info((enum param_id)h->id)->name, n,
         maxLen);
    return ncclInvalidArgument;
  }
  memcpy(out, src, n);
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclParamGetParameter, const char* key, const char** value, int* valueLen) {
  const char* fn = "ncclParamGetParameter";
  NCCLCHECK(api_check_ptr(key, "key", fn));
  NCCLCHECK(api_check_ptr(value, "value", fn));
  NCCLCHECK(api_check_ptr(valueLen, "valueLen", fn));
  int i = find(key);
  if (i < 0) {
    WARN("%s: no parameter is named \"%s\"; ncclParamGetAllParameterKeys lists them", fn, key);
    return ncclInvalidArgument;
  }
  *value = text(i, value_buf, sizeof value_buf);
  *valueLen = (int)strlen(*value);
  return ncclSuccess;
}

/* Every parameter of Monel is documented (docs/params.md), so the list is always complete. */
NCCL_API(ncclResult_t, ncclParamGetAllParameterKeys, const char*** table, int* tableLen) {
  NCCLCHECK(api_check_ptr(table, "table", "ncclParamGetAllParameterKeys"));
  NCCLCHECK(api_check_ptr(tableLen, "tableLen", "ncclParamGetAllParameterKeys"));
  pthread_once(&once, setup);
  *table = keys;
  *tableLen = PARAM_COUNT;
  return ncclSuccess;
}

NCCL_API(void, ncclParamDumpAll, void) {
  char buf[32];
  for (int i = 0; i < PARAM_COUNT; i++) {
    const struct param_info* pi = param_info((enum param_id)i);
    INFO(LOG_ENV, "%s = %s%s", pi->name, text(i, buf, sizeof buf),
         param_is_set((enum param_id)i) ? " (set)" : " (default)");
  }
}
