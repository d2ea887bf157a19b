/* SPDX-License-Identifier: BSD-3-Clause */
/* Finding a plugin library by NCCL's rules (util/plugin_lib.h). */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "util/log.h"
#include "util/plugin_lib.h"

int plugin_lib_is_none(const char* spec) {
  return spec != NULL && strcasecmp(spec, "none") == 0;
}

/* NCCL treats any case-insensitive prefix of this word as "the program itself". */
static int is_static(const char* spec) {
  static const char word[] = "STATIC_PLUGIN";
  size_t n = strlen(spec);
  return n > 0 && n < sizeof word && strncasecmp(spec, word, n) == 0;
}

/* dlerror's text, or "Could not find: names" when the loader found no file. */
static void note(char* why, size_t len, const char* names) {
  const char* e = dlerror();
  if (e == NULL || strstr(e, "No such file") != NULL)
    snprintf(why, len, "Could not find: %s", names);
  else
    snprintf(why, len, "%s", e);
}

void* plugin_lib_open(const char* spec, const char* def, const char* prefix, char* used,
                      size_t used_len, char* why, size_t why_len) {
  const char* name = spec != NULL && spec[0] != '\0' ? spec : def;
  void* lib = NULL;
  char second[512] = "";
  if (is_static(name)) {
    snprintf(used, used_len, "%s (the program itself)", name);
    return dlopen(NULL, RTLD_NOW | RTLD_LOCAL);
  }
  snprintf(used, used_len, "%s", name);
  lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (lib != NULL) return lib;
  size_t n = strlen(name);
  int full = strncmp(name, "lib", 3) == 0 && n > 3 && strcmp(name + n - 3, ".so") == 0;
  if (strchr(name, '/') != NULL || full) {
    note(why, why_len, name);
    return NULL;
  }
  char both[1100];
  snprintf(second, sizeof second, "%s%s.so", prefix, name);
  snprintf(both, sizeof both, "%s %s", name, second);
  (void)dlerror();
  lib = dlopen(second, RTLD_NOW | RTLD_LOCAL);
  if (lib != NULL) {
    snprintf(used, used_len, "%s", second);
    return lib;
  }
  note(why, why_len, both);
  return NULL;
}

void* plugin_lib_find(const char* spec, const char* def, const char* prefix, const char* fallback,
                      char* used, size_t used_len, char* why, size_t why_len, int* from_fallback) {
  void* lib = plugin_lib_open(spec, def, prefix, used, used_len, why, why_len);
  *from_fallback = 0;
  if (lib != NULL || fallback == NULL) return lib;
  snprintf(used, used_len, "%s", fallback);
  *from_fallback = 1;
  return dlopen(used, RTLD_NOW | RTLD_LOCAL);
}

void plugin_lib_log(int level, unsigned long subsys, const char* file, int line, const char* fmt,
                    ...) {
  /* NCCL's ABORT is an error the plugin reports; VERSION lines are informative */
  int lvl = level == LOG_ABORT ? LOG_WARN : level == LOG_VERSION ? LOG_INFO : level;
  if (lvl <= LOG_NONE || lvl > LOG_TRACE || (lvl != LOG_WARN && !LOG_ENABLED(lvl))) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  log_emit(lvl, subsys, file, line, "%s", msg);
}
