/* SPDX-License-Identifier: BSD-3-Clause */
/* NCCL's env plugin (ncclEnvPlugin_v2, _v1): a library that answers every variable read in place
 * of the process environment. Only util/param.c calls these. */
#ifndef MONEL_UTIL_ENV_PLUGIN_H
#define MONEL_UTIL_ENV_PLUGIN_H
#include "nccl.h"

typedef const char* (*env_getter)(const char* name);

/* Loads the plugin NCCL_ENV_PLUGIN names (spec: its value from the real environment, NULL when
 * unset; libnccl-env.so by default; "none": none), calls its init and registers its finalize at
 * exit. Without a plugin reads go to raw. Returns the init's error (NCCL returns it from comm
 * creation; the plugin's getEnv stays in use all the same). Once per process. */
ncclResult_t env_plugin_start(const char* spec, env_getter raw);

/* The value of name from the plugin, else from raw; NULL: unset. */
const char* env_plugin_get(const char* name);

/* 1 when a plugin answers reads. */
int env_plugin_active(void);

/* The result env_plugin_start returned (ncclSuccess before it ran). */
ncclResult_t env_plugin_status(void);

#endif
