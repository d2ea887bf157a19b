/* SPDX-License-Identifier: BSD-3-Clause */
/* Opening an optional plugin library as NCCL finds its tuner, profiler and env plugins, and the
 * logger NCCL hands every plugin. Failures are not errors: the caller logs `why` at INFO. */
#ifndef MONEL_UTIL_PLUGIN_LIB_H
#define MONEL_UTIL_PLUGIN_LIB_H
#include <stddef.h>

/* spec: the variable's value ("" when unset: def is tried). A value that is not found and has no
 * '/' and is not of the form lib*.so is tried again as <prefix><value>.so; a case-insensitive
 * prefix of "STATIC_PLUGIN" opens the program itself. On success returns the handle and the name
 * that opened it in `used`; on failure NULL and the names tried, or dlerror's text, in `why`. */
void* plugin_lib_open(const char* spec, const char* def, const char* prefix, char* used,
                      size_t used_len, char* why, size_t why_len);

/* plugin_lib_open, then (when that finds nothing and fallback is not NULL) the library fallback
 * names, as NCCL looks for a tuner or profiler inside the net plugin's library; *from_fallback
 * says which opened it. */
void* plugin_lib_find(const char* spec, const char* def, const char* prefix, const char* fallback,
                      char* used, size_t used_len, char* why, size_t why_len, int* from_fallback);

/* 1 when spec is "none" in any case (no plugin of that kind, no fallback). */
int plugin_lib_is_none(const char* spec);

/* NCCL's logger for plugins: void (*)(ncclDebugLogLevel, unsigned long flags, const char* file,
 * int line, const char* fmt, ...), honouring NCCL_DEBUG and NCCL_DEBUG_SUBSYS. */
void plugin_lib_log(int level, unsigned long subsys, const char* file, int line, const char* fmt,
                    ...) __attribute__((format(printf, 5, 6)));

#endif
