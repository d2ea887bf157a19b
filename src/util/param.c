/* SPDX-License-Identifier: BSD-3-Clause */
/* The parameter table: read each variable once, parse it, serve it. Reads go through the env
 * plugin (util/env_plugin.h) once it is loaded, as NCCL's do, except NCCL_ENV_PLUGIN itself and
 * the logging variables: the logger is needed while the plugin loads, so those come from the
 * environment (NCCL reads them there too until its plugin is initialized). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "util/env_plugin.h"
#include "util/log.h"
#include "util/param.h"

#define INT_DEFI(def) ((int64_t)(def))
#define STR_DEFI(def) 0
#define INT_DEFS(def) NULL
#define STR_DEFS(def) (def)

static const struct param_info table[PARAM_COUNT] = {
#define PARAM(id, name, kind, def, doc)                                                            \
  {name, PARAM_##kind, kind##_DEFI(def), kind##_DEFS(def), doc},
#include "util/params.def"
#undef PARAM
};

struct value {
  int set;
  int64_t i;
  const char* s;
};
static struct value values[PARAM_COUNT];
static pthread_once_t raw_once = PTHREAD_ONCE_INIT, plugin_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int loading_plugin; /* this thread runs the plugin's load: raw values serve it */
static int plugin_ready;            /* reads go through env_plugin_get */

static const char* raw_getenv(const char* name) {
  return getenv(name);
}

static int is_raw(int id) {
  return id == PARAM_DEBUG || id == PARAM_DEBUG_SUBSYS || id == PARAM_DEBUG_FILE ||
         id == PARAM_ENV_PLUGIN;
}

static void load_with(int plugin) {
  for (int id = 0; id < PARAM_COUNT; id++) {
    const struct param_info* p = &table[id];
    if (plugin && is_raw(id)) continue;
    const char* env = plugin ? env_plugin_get(p->name) : getenv(p->name);
    struct value v = {
        .set = env != NULL && env[0] != '\0', .i = p->def_int, .s = p->def_str ? p->def_str : ""};
    if (v.set) {
      if (p->kind == PARAM_INT) {
        char* end = NULL;
        long long x = strtoll(env, &end, 0);
        if (end == env || *end != '\0')
          WARN("%s=\"%s\" is not an integer; using the default %lld", p->name, env,
               (long long)p->def_int);
        else
          v.i = x;
      } else {
        v.s = strdup(env);
      }
    }
    /* The plugin's first pass replaces the environment's strings before any reader outside the
     * loading thread saw them (they wait for it), so those are freed; param_reload keeps old
     * strings, which a reader may still hold. */
    if (plugin && !plugin_ready && values[id].set && p->kind == PARAM_STR)
      free((char*)values[id].s);
    values[id] = v;
  }
}

static void load_raw(void) {
  load_with(0);
}

static void load_plugin(void) {
  loading_plugin = 1;
  const char* spec = getenv("NCCL_ENV_PLUGIN");
  env_plugin_start(spec, raw_getenv);
  if (env_plugin_active()) {
    pthread_mutex_lock(&lock);
    load_with(1); /* a value the plugin gives is copied: its pointer lives until the next read */
    plugin_ready = 1;
    pthread_mutex_unlock(&lock);
  }
  loading_plugin = 0;
}

static void ensure(int id) {
  pthread_once(&raw_once, load_raw);
  if (!is_raw(id) && !loading_plugin) pthread_once(&plugin_once, load_plugin);
}

int64_t param_int(enum param_id id) {
  ensure(id);
  return values[id].i;
}
const char* param_str(enum param_id id) {
  ensure(id);
  return values[id].s;
}
int param_is_set(enum param_id id) {
  ensure(id);
  return values[id].set;
}
ncclResult_t param_env_status(void) {
  ensure(PARAM_COUNT);
  return env_plugin_status();
}
const struct param_info* param_info(enum param_id id) {
  return &table[id];
}

void param_reload(void) {
  ensure(PARAM_COUNT);
  pthread_mutex_lock(&lock);
  load_with(0); /* the old strings stay valid: a reader may still hold them */
  if (plugin_ready) load_with(1);
  pthread_mutex_unlock(&lock);
}
