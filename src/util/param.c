/* The parameter table: read each variable once, parse it, serve it. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
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
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void load(void) {
  for (int id = 0; id < PARAM_COUNT; id++) {
    const struct param_info* p = &table[id];
    const char* env = getenv(p->name);
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
    values[id] = v;
  }
}

static void ensure(void) {
  pthread_once(&once, load);
}

int64_t param_int(enum param_id id) {
  ensure();
  return values[id].i;
}
const char* param_str(enum param_id id) {
  ensure();
  return values[id].s;
}
int param_is_set(enum param_id id) {
  ensure();
  return values[id].set;
}
const struct param_info* param_info(enum param_id id) {
  return &table[id];
}

void param_reload(void) {
  ensure();
  pthread_mutex_lock(&lock);
  load(); /* the old strings stay valid: a reader may still hold them */
  pthread_mutex_unlock(&lock);
}
