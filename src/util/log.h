/* SPDX-License-Identifier: BSD-3-Clause */
/* NCCL-compatible logging: NCCL_DEBUG, NCCL_DEBUG_SUBSYS, NCCL_DEBUG_FILE.
 * Line prefix "host:pid:tid [dev] NCCL INFO ...". WARN also records the text as the thread's
 * last error (ncclGetLastError). Nothing is printed at INFO on hot paths. */
#ifndef MONEL_UTIL_LOG_H
#define MONEL_UTIL_LOG_H
#include <stdint.h>

enum log_level {
  LOG_NONE = 0,
  LOG_VERSION = 1,
  LOG_WARN = 2,
  LOG_INFO = 3,
  LOG_ABORT = 4,
  LOG_TRACE = 5
};

/* Subsystem bits, NCCL's names: INIT COLL P2P SHM NET GRAPH TUNING ENV ALLOC CALL PROXY NVLS
 * BOOTSTRAP REG PROFILE RAS ALL. */
enum log_subsys {
  LOG_INIT = 1 << 0,
  LOG_COLL = 1 << 1,
  LOG_P2P = 1 << 2,
  LOG_SHM = 1 << 3,
  LOG_NET = 1 << 4,
  LOG_GRAPH = 1 << 5,
  LOG_TUNING = 1 << 6,
  LOG_ENV = 1 << 7,
  LOG_ALLOC = 1 << 8,
  LOG_CALL = 1 << 9,
  LOG_PROXY = 1 << 10,
  LOG_NVLS = 1 << 11,
  LOG_BOOTSTRAP = 1 << 12,
  LOG_REG = 1 << 13,
  LOG_PROFILE = 1 << 14,
  LOG_RAS = 1 << 15,
  LOG_ALL = ~0
};

extern int log_level_cached; /* -1 until log_init ran */
void log_init(void);
void log_reset(void);
void log_emit(int level, unsigned long subsys, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* The device a thread reports in its prefix (-1: none). */
void log_set_device(int dev);
/* Last error text of this thread, and of a comm (see core/comm.h). */
const char* log_last_error(void);
void log_set_last_error(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

#define LOG_LEVEL()      (__atomic_load_n(&log_level_cached, __ATOMIC_ACQUIRE))
#define LOG_ENABLED(lvl) ((LOG_LEVEL() < 0 ? (log_init(), 0) : 0), LOG_LEVEL() >= (lvl))
#define WARN(...)        log_emit(LOG_WARN, LOG_ALL, __FILE__, __LINE__, __VA_ARGS__)
#define INFO(sub, ...)                                                                             \
  do {                                                                                             \
    if (LOG_ENABLED(LOG_INFO)) log_emit(LOG_INFO, (sub), __FILE__, __LINE__, __VA_ARGS__);         \
  } while (0)
#define TRACE(sub, ...)                                                                            \
  do {                                                                                             \
    if (LOG_ENABLED(LOG_TRACE)) log_emit(LOG_TRACE, (sub), __FILE__, __LINE__, __VA_ARGS__);       \
  } while (0)

#endif
