/* SPDX-License-Identifier: BSD-3-Clause */
/* NCCL-compatible logging. The level, subsystems and file are read once (log_init) from the
 * params table; log_reset() forgets them so the next line re-reads (ncclResetDebugInit). */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "util/log.h"
#include "util/param.h"

int log_level_cached = -1;
static unsigned long subsys_mask = LOG_INIT | LOG_BOOTSTRAP | LOG_ENV;
static FILE* log_file;
static char host[64];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int thread_dev = -1;
static __thread char last_error[1024];
static char global_error[1024];

static const struct {
  const char* name;
  unsigned long bit;
} subsys_names[] = {{"INIT", LOG_INIT},
                    {"COLL", LOG_COLL},
                    {"P2P", LOG_P2P},
                    {"SHM", LOG_SHM},
                    {"NET", LOG_NET},
                    {"GRAPH", LOG_GRAPH},
                    {"TUNING", LOG_TUNING},
                    {"ENV", LOG_ENV},
                    {"ALLOC", LOG_ALLOC},
                    {"CALL", LOG_CALL},
                    {"PROXY", LOG_PROXY},
                    {"NVLS", LOG_NVLS},
                    {"BOOTSTRAP", LOG_BOOTSTRAP},
                    {"REG", LOG_REG},
                    {"PROFILE", LOG_PROFILE},
                    {"RAS", LOG_RAS},
                    {"ALL", (unsigned long)LOG_ALL}};

static int parse_level(const char* s) {
  if (!s[0]) return LOG_NONE;
  if (!strcasecmp(s, "VERSION")) return LOG_VERSION;
  if (!strcasecmp(s, "WARN")) return LOG_WARN;
  if (!strcasecmp(s, "INFO")) return LOG_INFO;
  if (!strcasecmp(s, "ABORT")) return LOG_ABORT;
  if (!strcasecmp(s, "TRACE")) return LOG_TRACE;
  return LOG_NONE;
}

static unsigned long parse_subsys(const char* s) {
  int invert = s[0] == '^';
  unsigned long mask = 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", s + invert);
  char* save = NULL;
  for (char* tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
    for (size_t i = 0; i < sizeof subsys_names / sizeof subsys_names[0]; i++)
      if (!strcasecmp(tok, subsys_names[i].name)) mask |= subsys_names[i].bit;
  return invert ? ~mask : mask;
}

static FILE* open_file(const char* pattern) {
  char path[512];
  size_t o = 0;
  for (const char* p = pattern; *p && o + 64 < sizeof path; p++) {
    if (p[0] == '%' && p[1] == 'h')
      o += snprintf(path + o, sizeof path - o, "%s", host), p++;
    else if (p[0] == '%' && p[1] == 'p')
      o += snprintf(path + o, sizeof path - o, "%d", getpid()), p++;
    else
      path[o++] = *p;
  }
  path[o] = '\0';
  FILE* f = fopen(path, "w");
  if (f) setvbuf(f, NULL, _IOLBF, 0);
  return f ? f : stdout;
}

void log_init(void) {
  pthread_mutex_lock(&lock);
  if (log_level_cached < 0) {
    gethostname(host, sizeof host - 1);
    char* dot = strchr(host, '.');
    if (dot) *dot = '\0';
    int level = parse_level(param_str(PARAM_DEBUG));
    subsys_mask = parse_subsys(param_str(PARAM_DEBUG_SUBSYS));
    const char* file = param_str(PARAM_DEBUG_FILE);
    log_file = (file[0] && level > LOG_NONE) ? open_file(file) : stdout;
    __atomic_store_n(&log_level_cached, level, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&lock);
}

void log_reset(void) {
  pthread_mutex_lock(&lock);
  if (log_file && log_file != stdout) fclose(log_file);
  log_file = NULL;
  param_reload();
  __atomic_store_n(&log_level_cached, -1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&lock);
}

void log_set_device(int dev) {
  thread_dev = dev;
}

void log_set_last_error(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&lock);
  memcpy(global_error, last_error, sizeof global_error);
  pthread_mutex_unlock(&lock);
}

const char* log_last_error(void) {
  return last_error[0] ? last_error : global_error;
}

void log_emit(int level, unsigned long subsys, const char* file, int line, const char* fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (level == LOG_WARN) log_set_last_error("%s", msg);
  if (LOG_LEVEL() < 0) log_init();
  if (LOG_LEVEL() < level) return;
  if (level >= LOG_INFO && !(subsys & subsys_mask)) return;
  const char* tag = level == LOG_WARN ? "WARN" : level == LOG_INFO ? "INFO" : "TRACE";
  long tid = syscall(SYS_gettid);
  char dev[16] = "";
  if (thread_dev >= 0) snprintf(dev, sizeof dev, " [%d]", thread_dev);
  pthread_mutex_lock(&lock);
  FILE* out = log_file ? log_file : stdout;
  if (level == LOG_WARN)
    fprintf(out, "\n%s:%d:%ld%s NCCL WARN %s\n", host, getpid(), tid, dev, msg);
  else if (level == LOG_TRACE)
    fprintf(out, "%s:%d:%ld%s NCCL TRACE %s:%d %s\n", host, getpid(), tid, dev, file, line, msg);
  else
    fprintf(out, "%s:%d:%ld%s NCCL %s %s\n", host, getpid(), tid, dev, tag, msg);
  fflush(out);
  pthread_mutex_unlock(&lock);
}
