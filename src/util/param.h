/* SPDX-License-Identifier: BSD-3-Clause */
/* The parameter table (util/params.def) and its accessors. Values are read from the environment
 * once per process, through the env plugin when one is loaded (param_reload() re-reads them).
 * Nothing else in src/ calls getenv. */
#ifndef MONEL_UTIL_PARAM_H
#define MONEL_UTIL_PARAM_H
#include <stdint.h>
#include "nccl.h"

enum param_kind { PARAM_INT, PARAM_STR };
enum param_id {
#define PARAM(id, name, kind, def, doc) PARAM_##id,
#include "util/params.def"
#undef PARAM
  PARAM_COUNT
};

struct param_info {
  const char* name;
  enum param_kind kind;
  int64_t def_int;
  const char* def_str;
  const char* doc;
};

int64_t param_int(enum param_id id);
const char* param_str(enum param_id id); /* never NULL; "" when unset and no default */
int param_is_set(enum param_id id);      /* set in the environment */
const struct param_info* param_info(enum param_id id);
void param_reload(void);
/* The env plugin's init result (util/env_plugin.h): comm creation and ncclGetUniqueId return it. */
ncclResult_t param_env_status(void);

#endif
