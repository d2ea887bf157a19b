/* SPDX-License-Identifier: BSD-3-Clause */
/* The env plugin (util/env_plugin.h). Its getEnv may be called from any thread at once, as
 * NCCL's is; the pointer it returns is copied by param.c before the next read of that name. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include "util/env_plugin.h"
#include "util/log.h"
#include "util/plugin_lib.h"

typedef void (*nccl_logger)(int level, unsigned long flags, const char* file, int line,
                            const char* fmt, ...);

/* The two ABIs: same size and member offsets; v2's init also takes the logger. */
struct env_v1 {
  const char* name;
  ncclResult_t (*init)(uint8_t major, uint8_t minor, uint8_t patch, const char* suffix);
  ncclResult_t (*finalize)(void);
  const char* (*get_env)(const char* name);
};
struct env_v2 {
  const char* name;
  ncclResult_t (*init)(uint8_t major, uint8_t minor, uint8_t patch, const char* suffix,
                       nccl_logger log);
  ncclResult_t (*finalize)(void);
  const char* (*get_env)(const char* name);
};

static struct {
  void* lib;
  const char* (*get_env)(const char* name); /* NULL: raw */
  ncclResult_t (*finalize)(void);
  env_getter raw;
  ncclResult_t status;
} env;

static void at_exit(void) {
  if (env.finalize) env.finalize();
  env.get_env = NULL;
  if (env.lib) dlclose(env.lib);
  env.lib = NULL;
}

/* The symbol, newest first; 0 when the library has neither. */
static int find(void* lib, const void** table) {
  if ((*table = dlsym(lib, "ncclEnvPlugin_v2")) != NULL) return 2;
  if ((*table = dlsym(lib, "ncclEnvPlugin_v1")) != NULL) return 1;
  return 0;
}

ncclResult_t env_plugin_start(const char* spec, env_getter raw) {
  char used[600], why[1200];
  const void* table = NULL;
  ncclResult_t res = ncclSuccess;
  env.raw = raw;
  if (plugin_lib_is_none(spec)) {
    INFO(LOG_INIT | LOG_ENV,
         "ENV/Plugin: NCCL_ENV_PLUGIN=none: variables come from the environment");
    goto out;
  }
  void* lib =
      plugin_lib_open(spec, "libnccl-env.so", "libnccl-env-", used, sizeof used, why, sizeof why);
  if (lib == NULL) {
    INFO(LOG_INIT | LOG_ENV, "ENV/Plugin: none loaded (%s); variables come from the environment",
         why);
    goto out;
  }
  int version = find(lib, &table);
  if (version == 0) {
    INFO(LOG_INIT | LOG_ENV,
         "ENV/Plugin: %s exports neither ncclEnvPlugin_v2 nor ncclEnvPlugin_v1: unsupported, "
         "ignored; variables come from the environment",
         used);
    dlclose(lib);
    goto out;
  }
  env.lib = lib;
  if (version == 2) {
    const struct env_v2* p = table;
    res = p->init(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, NCCL_SUFFIX, plugin_lib_log);
    env.get_env = p->get_env, env.finalize = p->finalize;
  } else {
    const struct env_v1* p = table;
    res = p->init(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, NCCL_SUFFIX);
    env.get_env = p->get_env, env.finalize = p->finalize;
  }
  const char* name = ((const struct env_v1*)table)->name;
  if (res != ncclSuccess) {
    /* As NCCL does: the error reaches comm creation, the plugin still answers reads, and its
     * finalize is not called. */
    WARN("ENV/Plugin: %s (%s, v%d) failed to initialize (error %d): communicator creation "
         "returns that error; fix the plugin or set NCCL_ENV_PLUGIN=none",
         name ? name : "?", used, version, (int)res);
    env.finalize = NULL;
    env.status = res;
  } else {
    INFO(LOG_INIT | LOG_ENV,
         "ENV/Plugin: loaded %s (%s, version v%d): every variable comes from it", name ? name : "?",
         used, version);
  }
  atexit(at_exit);
out:
  return res;
}

const char* env_plugin_get(const char* name) {
  const char* (*get)(const char*) = __atomic_load_n(&env.get_env, __ATOMIC_ACQUIRE);
  if (get) return get(name);
  return env.raw ? env.raw(name) : NULL;
}

int env_plugin_active(void) {
  return __atomic_load_n(&env.get_env, __ATOMIC_ACQUIRE) != NULL;
}

ncclResult_t env_plugin_status(void) {
  return env.status;
}
